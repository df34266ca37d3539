//! What the data-path families share (issue #27): the checker set that judges the data path
//! by [`DataPathAccounting`] instead of the log-only-grows Jepsen checkers, and the per-seed
//! draws of how the application takes records and which reset policy it runs with.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, OwnershipMode};

use super::pick;
use crate::app::DriveMode;
use crate::checks::{
    AsyncCommitsBeforeClose, DataPathAccounting, ListenerErrorsSurface, ZombieCommitsRefused,
};

/// The checkers of a family whose logs shrink or restart (DeleteRecords, topic deletion,
/// truncation) and whose members reset by `auto.offset.reset`: the group invariants, zombie
/// commits refused, every async commit's callback by `close`, listener errors surfaced, and
/// [`DataPathAccounting`] — every acked record delivered once, in order, unless a documented
/// event explains it. The Jepsen lost-write, order and liveness checkers read any record the
/// group did not see as lost and cannot tell a deletion or a `latest` reset from a loss;
/// the accounting judges exactly those cases, from the events that explain them.
pub fn data_path_checks() -> CheckerSet {
    CheckerSet::group(OwnershipMode::Windows)
        .with(DataPathAccounting::default())
        .with(ZombieCommitsRefused::default())
        .with(AsyncCommitsBeforeClose::default())
        .with(ListenerErrorsSurface::default())
}

/// `poll`, `recv` or `stream`, a third of the seeds each.
pub fn draw_drive(rng: &mut SeededRng) -> DriveMode {
    pick(rng, &[DriveMode::Poll, DriveMode::Recv, DriveMode::Stream])
}

/// `auto.offset.reset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetPolicy {
    Earliest,
    Latest,
    /// No automatic reset: `poll` fails with a typed error and the application seeks.
    None,
}

impl ResetPolicy {
    pub fn name(self) -> &'static str {
        match self {
            ResetPolicy::Earliest => "earliest",
            ResetPolicy::Latest => "latest",
            ResetPolicy::None => "none",
        }
    }
}
