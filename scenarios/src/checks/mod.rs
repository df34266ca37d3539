//! Scenario-specific checkers, over the same `sim::history::History` as `sim::check`'s.

mod barrier;
mod handover;
mod no_loss;
mod rediscovery;
pub mod wakeups;

pub use barrier::CommitCallbacksBeforeSync;
pub use handover::HandoverWithoutRedelivery;
pub use no_loss::NoSpuriousLoss;
pub use rediscovery::CoordinatorRediscovery;
pub use wakeups::AppWakeups;
