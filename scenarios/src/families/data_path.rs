//! What the data-path families share (issue #27): the checker set that judges the data path
//! by [`DataPathAccounting`] instead of the log-only-grows Jepsen checkers, and the per-seed
//! draws of how the application takes records, which reset policy it runs with and how
//! partition leaders churn.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, OwnershipMode};
use sim::fault::Fault;

use super::{between, liveness_after_heal, pick, GroupKnobs, BROKERS, TOPIC};
use crate::app::DriveMode;
use crate::checks::{
    AsyncCommitsBeforeClose, DataPathAccounting, ListenerErrorsSurface, ZombieCommitsRefused,
};
use crate::scenario::{Scenario, SubjectSpec};
use crate::subject::ListenerBehaviour;

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

/// [`data_path_checks`] plus liveness after the heal (the group settles, consumes and commits
/// every acked record within `within_ms`), for families whose logs only grow but need not be
/// contiguous (compacted batches, transaction markers): Jepsen's `poll-skip` reads any offset
/// jumped over as a skipped record, while the accounting knows which offsets held one.
pub fn data_path_checks_with_liveness(within_ms: u64) -> CheckerSet {
    data_path_checks().with(liveness_after_heal(within_ms))
}

/// What every data-path family's `vary` starts with: keeps the first `members` subjects and
/// gives each the drawn group knobs, its listener, how it takes records and its
/// `auto.offset.reset`. Returns them for the family's own settings.
pub fn apply_members<'a>(
    scenario: &'a mut Scenario,
    members: usize,
    group: &GroupKnobs,
    listeners: &[ListenerBehaviour],
    drive: DriveMode,
    reset: &str,
) -> &'a mut [SubjectSpec] {
    scenario.subjects.truncate(members);
    for (spec, listener) in scenario.subjects.iter_mut().zip(listeners) {
        group.apply(spec);
        super::set(spec, "auto.offset.reset", reset);
        spec.listener = *listener;
        spec.drive = drive;
    }
    &mut scenario.subjects
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

/// Leader churn from `from_ms` until `until_ms`: one broker restart in `restart_one_in` faults
/// (its partitions elect the next in-sync replica), else a leader move of one of [`TOPIC`]'s
/// `partitions` (a preferred-leader election, a reassignment); `step_ms` apart, drawn in
/// `[step_ms.0, step_ms.1]`.
pub fn draw_churn(
    rng: &mut SeededRng,
    from_ms: u64,
    until_ms: u64,
    restart_one_in: u64,
    step_ms: (u64, u64),
    partitions: i32,
) -> Vec<(u64, Fault)> {
    let mut plan = Vec::new();
    let mut at_ms = from_ms;
    while at_ms < until_ms {
        let fault = if rng.below_inclusive(restart_one_in - 1) == 0 {
            Fault::RestartBroker {
                broker: between(rng, 1, BROKERS as u64) as i32,
            }
        } else {
            Fault::MoveLeader {
                topic: TOPIC.to_owned(),
                partition: between(rng, 0, partitions as u64 - 1) as i32,
                to: None,
            }
        };
        plan.push((at_ms, fault));
        at_ms += between(rng, step_ms.0, step_ms.1);
    }
    plan
}
