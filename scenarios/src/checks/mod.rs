//! Scenario-specific checkers, over the same `sim::history::History` as `sim::check`'s.

mod barrier;
mod handover;
mod rediscovery;
pub mod wakeups;

pub use barrier::CommitCallbacksBeforeSync;
pub use handover::HandoverWithoutRedelivery;
pub use rediscovery::CoordinatorRediscovery;
pub use wakeups::AppWakeups;
