//! **KAFKA-18641** — "AsyncKafkaConsumer could lose records with auto offset commit" (PR #18737,
//! 4.0.0); the async re-incarnation of KAFKA-2942 (classic, 0.9.0.1).
//!
//! **Interleaving.** Auto-commit on a short interval; the application processes each batch
//! slowly after `poll` returns it. The AsyncKafkaConsumer's auto-commit ran on the network
//! thread and committed `subscriptions.allConsumed()` whenever its timer fired, while the
//! application thread advanced those positions in `collectFetch` as it *built* the batch it was
//! about to return. A commit firing between the position update and the application finishing
//! the batch covered records the application had not processed.
//!
//! **Symptom upstream.** At-least-once broken: a consumer that crashed (or was fenced) mid-batch
//! resumed, or let the next owner resume, after records it never processed — silent loss.
//!
//! **Invariant.** Every automatic commit ≤ 1 + the last offset of records returned by a poll
//! that has since been followed by another poll or by close ([`AutoCommitBound`], judged on the
//! `OffsetCommit`s the coordinator received); plus the standard set and liveness with every
//! record committed after production stops.
//!
//! **Our design.** `Consumer::poll` (consumer/src/consumer.rs) snapshots the positions of the
//! records handed out *so far* and sends them with the `Poll` application event before it
//! returns anything new; the commit request manager (`internals/commit_request_manager.rs`)
//! auto-commits only the latest snapshot, never positions it reads itself, and the revocation
//! commit uses the same snapshot. Positions are advanced only for records `poll` returns
//! (`internals/fetch_buffer.rs`).
//!
//! **Plan.** Per protocol, a group of two auto-committing members (KIP-848 `g`, classic `h`):
//! `auto.commit.interval.ms=50`, `max.poll.records=10`, 15–30 ms of processing per record, so
//! several auto-commits fire while each batch is processed; the second member joins at 5 s so
//! revocation commits happen too. A seeded network latency.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::{AutoCommitBound, UntilClose};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-18641";

const PRODUCE_UNTIL_MS: u64 = 10_000;
const RUN_MS: u64 = 26_000;

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 100,
        processing_ms_per_record: 15,
        commit: CommitPolicy::Auto,
        close_timeout_ms: 5_000,
    }
}

fn properties(group: &'static str, protocol: &'static str) -> [(&'static str, &'static str); 5] {
    [
        ("group.id", group),
        ("group.protocol", protocol),
        ("enable.auto.commit", "true"),
        ("auto.commit.interval.ms", "50"),
        ("max.poll.records", "10"),
    ]
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "auto-commit every 50ms while batches are processed slowly: never commit past records the application moved past",
    )
    .brokers(3)
    .topic("t", 4)
    .offsets_partitions(1)
    .subscribing_consumer("c0", &properties("g", "consumer"), &["t"], app())
    .subscribing_consumer("c1", &properties("g", "consumer"), &["t"], app())
    .start_at(5_000)
    .subscribing_consumer("c2", &properties("h", "classic"), &["t"], app())
    .subscribing_consumer("c3", &properties("h", "classic"), &["t"], app())
    .start_at(5_000)
    .producer("p0", "t", 25, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

/// A seeded network latency from the start.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_8641);
    let max_ms = 2 + rng.below_inclusive(30);
    PlannedFaults {
        plan: vec![(0, Fault::Latency { min_ms: 1, max_ms })],
        healed_at_ms: 0,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(AutoCommitBound::default())
        .with(UntilClose {
            inner: Liveness {
                within_ms: 20_000,
                stable_for_ms: 5_000,
                require_committed: true,
                ..Liveness::default()
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_auto_commits_fit_in_one_batch() {
        let s = scenario();
        for m in &s.subjects {
            assert_eq!(m.app.commit, CommitPolicy::Auto);
            let batch_ms = 10 * m.app.processing_ms_per_record;
            assert!(
                batch_ms >= 3 * 50,
                "a 10-record batch outlasts three intervals"
            );
        }
        assert!((s.checks)().names().contains(&"auto-commit-bound"));
    }

    #[test]
    fn latency_is_drawn_per_seed_within_bounds() {
        for seed in 0..50 {
            let planned = plan(seed);
            let [(0, Fault::Latency { min_ms: 1, max_ms })] = planned.plan.as_slice() else {
                panic!("seed {seed}");
            };
            assert!((2..=32).contains(max_ms));
        }
    }
}
