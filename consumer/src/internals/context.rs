//! What every request manager may read and change during one `poll` or `on_response` call.

use std::collections::BTreeSet;

use kafka_protocol::protocol::{Request, VersionRange};

use super::events::BackgroundEvent;
use super::fetch_buffer::FetchBuffer;
use super::membership::MemberIdentity;
use super::node_versions::{NodeVersions, VersionChoice};
use super::settings::ConsumerSettings;
use super::subscription_state::SubscriptionState;
use crate::error::Error;
use crate::network::{Broker, LeaderHint, Metadata};
use crate::rt::{Instant, SeededRng};

/// Side effects a manager asks of the loop, applied after the call returns so that no manager
/// holds another (each state has one owner).
#[derive(Debug, Default)]
pub(crate) struct Effects {
    /// Errors for the application (background events).
    pub errors: Vec<Error>,
    /// The coordinator must be considered unknown, for this reason.
    pub coordinator_unknown: Option<String>,
    /// Metadata must be refreshed.
    pub metadata_refresh: bool,
    /// The member must rejoin the group, for this reason (e.g. a commit saw
    /// REBALANCE_IN_PROGRESS).
    pub rejoin_requested: Option<String>,
    /// The group no longer knows the generation a request was sent with (ILLEGAL_GENERATION,
    /// UNKNOWN_MEMBER_ID): reset it if it is still current.
    pub generation_reset: Option<GenerationReset>,
    /// Other events for the application side (rebalance callbacks).
    pub background_events: Vec<BackgroundEvent>,
    /// A rebalance waits for an acknowledged poll ([`BackgroundEvent::PollRequested`]).
    pub poll_requested: bool,
    /// KIP-951: partitions' new leaders as a Fetch response named them, to apply to the
    /// metadata at once, with the addresses of those leaders.
    pub leader_hints: Vec<LeaderHint>,
    /// The `node_endpoints` that came with [`Self::leader_hints`].
    pub leader_endpoints: Vec<Broker>,
    /// Nodes a manager waits to build a request for: the loop connects them, and polls the
    /// managers again once connected.
    pub connect_nodes: BTreeSet<i32>,
    /// A cluster-wide request waits for a connected broker: the loop connects the least
    /// loaded one (as sending to `Target::LeastLoaded` would have).
    pub connect_least_loaded: bool,
}

/// A generation the coordinator refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GenerationReset {
    /// The generation the refused request carried.
    pub generation_id: i32,
    /// Keep the member id (ILLEGAL_GENERATION: the member is known, its generation is old;
    /// KAFKA-13419) or drop it (UNKNOWN_MEMBER_ID).
    pub keep_member_id: bool,
    /// Why.
    pub reason: String,
}

/// A manager's view of the world for one call.
pub(crate) struct ManagerContext<'a> {
    /// The loop's current time.
    pub now: Instant,
    /// The settings.
    pub settings: &'a ConsumerSettings,
    /// Assignment and fetch states.
    pub subscriptions: &'a mut SubscriptionState,
    /// Positions and fetched data.
    pub buffer: &'a FetchBuffer,
    /// Cluster metadata.
    pub metadata: &'a Metadata,
    /// The API versions each connected node negotiated.
    pub versions: &'a NodeVersions,
    /// The coordinator's connection id, while known.
    pub coordinator: Option<i32>,
    /// The group member's identity in subscribe mode (`None` in assign mode).
    pub member: Option<&'a MemberIdentity>,
    /// Counts Metadata responses applied so far: a manager that asked for a refresh knows it
    /// has one when this moves.
    pub metadata_version: u64,
    /// Jitter for backoffs.
    pub rng: &'a mut SeededRng,
    /// What the manager asks of the loop.
    pub effects: &'a mut Effects,
}

impl ManagerContext<'_> {
    /// Asks for a metadata refresh.
    pub fn request_metadata_refresh(&mut self) {
        self.effects.metadata_refresh = true;
    }

    /// Reports the coordinator unknown.
    pub fn mark_coordinator_unknown(&mut self, reason: impl Into<String>) {
        self.effects.coordinator_unknown = Some(reason.into());
    }

    /// The version of `R` within `ours` to build a request to `node_id` for, from that
    /// node's own ApiVersions; while it is not connected, asks the loop to connect it.
    pub fn version_for<R: Request>(&mut self, node_id: i32, ours: VersionRange) -> VersionChoice {
        let choice = self.versions.select::<R>(node_id, ours);
        if choice == VersionChoice::NotConnected {
            self.effects.connect_nodes.insert(node_id);
        }
        choice
    }

    /// Queues an error for the application.
    pub fn report(&mut self, error: Error) {
        self.effects.errors.push(error);
    }

    /// The partition leader's node id and epoch from metadata.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<(i32, i32)> {
        let p = self.metadata.partition(topic, partition)?;
        Some((p.leader_id?, p.leader_epoch))
    }
}

/// Test support: a context over owned parts.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Everything a [`ManagerContext`] borrows.
    pub struct Parts {
        pub now: Instant,
        pub settings: ConsumerSettings,
        pub subscriptions: SubscriptionState,
        pub buffer: FetchBuffer,
        pub metadata: Metadata,
        pub versions: NodeVersions,
        pub coordinator: Option<i32>,
        pub member: Option<MemberIdentity>,
        pub metadata_version: u64,
        pub rng: SeededRng,
        pub effects: Effects,
    }

    impl Parts {
        pub fn new(settings: ConsumerSettings) -> Self {
            Self {
                now: Instant::now(),
                settings,
                subscriptions: SubscriptionState::default(),
                buffer: FetchBuffer::default(),
                metadata: Metadata::default(),
                versions: NodeVersions::default(),
                coordinator: None,
                member: None,
                metadata_version: 0,
                rng: SeededRng::seed_from_u64(7),
                effects: Effects::default(),
            }
        }

        pub fn ctx(&mut self) -> ManagerContext<'_> {
            ManagerContext {
                now: self.now,
                settings: &self.settings,
                subscriptions: &mut self.subscriptions,
                buffer: &self.buffer,
                metadata: &self.metadata,
                versions: &self.versions,
                coordinator: self.coordinator,
                member: self.member.as_ref(),
                metadata_version: self.metadata_version,
                rng: &mut self.rng,
                effects: &mut self.effects,
            }
        }

        pub fn advance_ms(&mut self, ms: u64) {
            self.now += crate::rt::Duration::from_millis(ms);
        }
    }
}
