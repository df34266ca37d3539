//! **KAFKA-8104** — "Consumer cannot rejoin to the group after rebalancing" (PR #7460, commit
//! 00374c3ddf6, fixed in 2.4.0). Modelled as [`LegacyVersion::V2_3_0`]: 2.3.0's
//! `joinGroupIfNeeded` after the join future succeeded, the rest of the model being 3.1.0's.
//!
//! **Interleaving.** Two members; the second joins at 7 s and the first rejoins. (1) The first
//! member's `poll` sends JoinGroup; within the same `poll` the JoinGroup response writes the new
//! generation and the SyncGroup response completes the join future (the heartbeat thread is
//! enabled, its timers reset), but the poll's timer has run out before `joinGroupIfNeeded` looks
//! at the future again: `onJoinComplete` has not run. (2) The application, idle, goes off to
//! other work for longer than `max.poll.interval.ms`. (3) The heartbeat thread's poll timer
//! expires: `maybeLeaveGroup` sends LeaveGroup and resets the generation (`NO_GENERATION`,
//! protocol `null`). (4) The next `poll` finds the succeeded join future and calls
//! `onJoinComplete` with the cleared generation: `lookupAssignor(null)` throws
//! `IllegalStateException`. The join future is reset only after `onJoinComplete` returns, so
//! every later `poll` throws the same. 2.4.0 snapshots the generation and, if it was reset,
//! resets state and rejoins (3.1.0's path in the model).
//!
//! **Symptom upstream.** "Coordinator selected invalid assignment protocol: null" from every
//! `poll`; the member never rejoins until the process restarts ("reproduces in many
//! production environments"). Upstream's commit message has the application thread held up in
//! a commit ("initiates rejoin because of commit timeout"); here it is idle work, the same gap
//! between two polls.
//!
//! **Invariant.** A `poll` that throws is followed within a bound by one that does not
//! ([`PollRecovers`]); plus the standard set.
//!
//! **Our design.** The background task owns membership and reconciles an assignment only for
//! the member epoch it was received in; a poll-timer leave moves the member to a state from
//! which the next `poll` rejoins (`internals/membership/`); nothing the application thread
//! holds across polls refers to a generation the background task may have reset.
//!
//! **Plan.** No broker fault: a seeded network latency; the second member starts at 7 s; the
//! first member's application, the first time a `poll` returns nothing after 7 s, stalls for
//! 12 s against a 10 s `max.poll.interval.ms`.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::PollRecovers;
use crate::legacy::LegacyVersion;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-8104";

const JOINER_START_MS: u64 = 7_000;
/// The idle stall: longer than `max.poll.interval.ms`.
const STALL_MS: u64 = 12_000;
const PRODUCE_UNTIL_MS: u64 = 20_000;
const RUN_MS: u64 = 25_000;

const PROPERTIES: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("enable.auto.commit", "false"),
    ("session.timeout.ms", "10000"),
    ("heartbeat.interval.ms", "1000"),
    ("max.poll.interval.ms", "10000"),
    ("partition.assignment.strategy", "range"),
];

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 100,
        processing_ms_per_record: 2,
        commit: CommitPolicy::AsyncEachPoll,
        close_timeout_ms: 5_000,
    }
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "rebalance, then the idle application stalls past max.poll.interval (2.3.0): poll must not throw forever",
    )
    .brokers(3)
    .topic("t", 4)
    .offsets_partitions(1)
    .subscribing_consumer("c0", PROPERTIES, &["t"], app())
    .stall_when_idle(JOINER_START_MS, STALL_MS)
    .subscribing_consumer("c1", PROPERTIES, &["t"], app())
    .start_at(JOINER_START_MS)
    .producer("p0", "t", 20, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .legacy_version(LegacyVersion::V2_3_0)
    .build()
}

/// A seeded network latency from the start: no fault beyond the stall.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0000_8104);
    let max_ms = 2 + rng.below_inclusive(20);
    PlannedFaults {
        plan: vec![(0, Fault::Latency { min_ms: 1, max_ms })],
        healed_at_ms: 0,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(PollRecovers { bound_ms: 3_000 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stall_outlasts_the_poll_interval_and_ends_before_the_run() {
        let s = scenario();
        assert_eq!(s.legacy_version, LegacyVersion::V2_3_0);
        assert_eq!(
            s.subjects[0].stall_when_idle,
            Some((JOINER_START_MS, STALL_MS))
        );
        assert_eq!(s.subjects[1].stall_when_idle, None);
        const { assert!(STALL_MS > 10_000) };
        const { assert!(JOINER_START_MS + STALL_MS + 3_000 < RUN_MS) };
        assert!((s.checks)().names().contains(&"poll-recovers"));
        for seed in 0..20 {
            let planned = plan(seed);
            let [(0, Fault::Latency { max_ms, .. })] = planned.plan.as_slice() else {
                panic!("seed {seed}");
            };
            assert!((2..=22).contains(max_ms));
        }
    }
}
