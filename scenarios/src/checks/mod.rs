//! Scenario-specific checkers, over the same `sim::history::History` as `sim::check`'s.

mod barrier;
mod rediscovery;

pub use barrier::CommitCallbacksBeforeSync;
pub use rediscovery::CoordinatorRediscovery;
