//! The scenario library: each scenario is a cluster, subjects, producers, a fault plan and the
//! checkers it asserts. Scenarios arrive with the scenario-library issue; [`registry`] is the
//! list the `cargo sim` CLI reads.

/// One registered scenario, as the CLI lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScenarioInfo {
    /// The name used on the command line, e.g. `kafka-13563`.
    pub name: &'static str,
    /// One line: the race it replays and the invariant it checks.
    pub summary: &'static str,
}

/// Every scenario the library knows, in CLI order.
pub fn registry() -> &'static [ScenarioInfo] {
    &[]
}
