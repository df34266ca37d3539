//! Scenario-specific checkers, over the same `sim::history::History` as `sim::check`'s.

mod rediscovery;

pub use rediscovery::CoordinatorRediscovery;
