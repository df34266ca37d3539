//! **KAFKA-2942** — "inadvertent auto-commit when pre-fetching can cause message loss" (PR #623,
//! commit 13e483adeee, fixed in 0.9.0.1). Modelled as [`LegacyVersion::V0_9_0_0`]: 0.9.0.0's
//! pipelining poll, the rest of the model being 3.1.0's. Its asynchronous re-incarnation is
//! KAFKA-18641 (`crate::jira::kafka_18641`).
//!
//! **Interleaving.** Auto-commit on a short interval, small batches processed slowly. In
//! 0.9.0.0 the auto-commit is a `DelayedTask` run by whichever `client.poll` finds it due.
//! (1) `KafkaConsumer.poll` takes a batch from `fetchedRecords()`, which moves the consumed
//! positions past it. (2) To pipeline, it sends the next fetches and calls `client.poll(0)` —
//! which runs the due auto-commit task: `commitOffsetsAsync(subscriptions.allConsumed())`
//! commits positions past the batch. (3) Only then is the batch returned to the application,
//! which has not processed any of it. 0.9.0.1 polls there with `quickPoll()`, which runs no
//! delayed task: a commit covers only batches the application has come back from.
//!
//! **Symptom upstream.** At-least-once broken: a consumer that crashes while processing the
//! batch restarts (or its partitions' next owner starts) after records it never processed —
//! silent message loss.
//!
//! **Invariant.** Every automatic commit ≤ 1 + the last offset of records returned by a poll
//! that has since been followed by another poll or by close ([`AutoCommitBound`]); plus the
//! standard set and liveness with every record committed after production stops.
//!
//! **Our design.** `Consumer::poll` (`consumer/src/consumer.rs`) hands the background task the
//! positions of the records returned *so far* with its `Poll` event, before it returns anything
//! new; the auto-commit of `internals/commit_request_manager.rs` commits only that snapshot,
//! never positions it reads itself (`internals/fetch_buffer.rs` advances positions only for
//! records `poll` returns).
//!
//! **Plan.** One member, `assign()` of every partition, `auto.commit.interval.ms=50`,
//! `max.poll.records=10`, 15–30 ms of processing per record. A seeded network latency.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::AutoCommitBound;
use crate::legacy::LegacyVersion;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-2942";

const PRODUCE_UNTIL_MS: u64 = 10_000;
const RUN_MS: u64 = 30_000;

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "auto-commit every 50ms, slow batches (0.9.0.0): never commit past records the application has not moved past",
    )
    .brokers(3)
    .topic("t", 4)
    .offsets_partitions(1)
    .assigning_consumer(
        "c0",
        &[
            ("group.id", "g"),
            ("enable.auto.commit", "true"),
            ("auto.commit.interval.ms", "50"),
            ("max.poll.records", "10"),
        ],
        "t",
        AppBehaviour {
            poll_timeout_ms: 100,
            processing_ms_per_record: 15,
            commit: CommitPolicy::Auto,
            close_timeout_ms: 5_000,
        },
    )
    .producer("p0", "t", 25, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .legacy_version(LegacyVersion::V0_9_0_0)
    .build()
}

/// A seeded network latency from the start.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0000_2942);
    let max_ms = 2 + rng.below_inclusive(30);
    PlannedFaults {
        plan: vec![(0, Fault::Latency { min_ms: 1, max_ms })],
        healed_at_ms: 0,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(AutoCommitBound::default())
        .with(Liveness {
            within_ms: 15_000,
            require_committed: true,
            ..Liveness::default()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scenario_auto_commits_often_on_0_9_0_0() {
        let s = scenario();
        assert_eq!(s.legacy_version, LegacyVersion::V0_9_0_0);
        assert_eq!(s.subjects[0].app.commit, CommitPolicy::Auto);
        assert!((s.checks)().names().contains(&"auto-commit-bound"));
        assert!(
            s.run_ms >= PRODUCE_UNTIL_MS + 15_000,
            "liveness can be judged"
        );
        for seed in 0..20 {
            let planned = plan(seed);
            let [(0, Fault::Latency { max_ms, .. })] = planned.plan.as_slice() else {
                panic!("seed {seed}");
            };
            assert!((2..=32).contains(max_ms));
        }
    }
}
