//! The consumer's machinery, after Kafka's `consumer/internals`: the background task
//! ([`network_thread`]) that alone owns the network client and the request managers, the two
//! event channels between it and the application side ([`events`]), and the one structure both
//! sides share ([`fetch_buffer`]).
//!
//! Request managers are sans-IO state machines: `poll(ctx) -> PollResult { requests,
//! next_poll_at }` and `on_response(ctx, token, result)`. They never sleep or touch a socket,
//! so their tests drive them with a fake clock.

pub(crate) mod auth_failures;
pub(crate) mod background_failure;
pub(crate) mod commit_request_manager;
pub(crate) mod completed_fetch;
pub(crate) mod completion;
pub(crate) mod context;
pub(crate) mod coordinator_request_manager;
pub(crate) mod event_queue;
pub(crate) mod events;
pub(crate) mod fetch_buffer;
pub(crate) mod fetch_request_manager;
pub(crate) mod fetch_session;
pub(crate) mod held_records;
pub(crate) mod membership;
pub(crate) mod metrics;
pub(crate) mod metrics_snapshot;
pub(crate) mod network_thread;
pub(crate) mod node_versions;
pub(crate) mod offsets_request_manager;
pub(crate) mod request_state;
pub(crate) mod requests;
pub(crate) mod seek;
pub(crate) mod settings;
pub(crate) mod subscription_state;
pub(crate) mod telemetry;
pub(crate) mod topic_metadata_request_manager;

#[cfg(test)]
pub(crate) mod test_support;

pub use fetch_buffer::PartitionProgress;
