//! **KAFKA-10337** — "await async commits in commitSync even if no offsets given" (#13678,
//! fixed in 3.6.0; its AsyncKafkaConsumer twin is KAFKA-16103). Present in 3.1.0, the model's
//! version.
//!
//! **Interleaving.** The application commits asynchronously after each poll and, as a barrier
//! (a checkpoint, a shutdown hook), calls `commitSync(Collections.emptyMap())` expecting every
//! earlier `commitAsync` callback to have run when it returns. 3.1.0's `commitOffsetsSync`
//! runs `invokeCompletedOffsetCommitCallbacks()` — only the callbacks of commits that have
//! *already completed* — and then `if (offsets.isEmpty()) return true;`: the `commitAsync` sent
//! just before is still in flight, so `commitSync` returns before its callback runs.
//!
//! **Symptom upstream.** Applications that used `commitSync()` with nothing new to commit as a
//! flush of pending async commits (Kafka Streams, Flink) saw it return while async commits
//! were still outstanding; their callbacks ran later, or never if the consumer was closed.
//!
//! **Invariant.** When `commitSync` returns, the callbacks of every earlier `commitAsync` have
//! run ([`CommitCallbacksBeforeSync`]).
//!
//! **Plan.** No broker fault is needed — the in-flight window is any network round trip — but
//! the seed draws a network latency (5 ms to 20–60 ms) so the window varies per seed.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::CommitCallbacksBeforeSync;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-10337";

const BARRIER_MS: u64 = 500;

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "commitAsync after each poll, commitSync(empty) as a barrier: earlier async callbacks must have run when it returns",
    )
    .brokers(1)
    .topic("t", 3)
    .offsets_partitions(1)
    .assigning_consumer(
        "c0",
        &[("group.id", "g"), ("enable.auto.commit", "false")],
        "t",
        AppBehaviour {
            poll_timeout_ms: 100,
            processing_ms_per_record: 1,
            commit: CommitPolicy::AsyncWithSyncBarrier {
                barrier_ms: BARRIER_MS,
            },
            close_timeout_ms: 5_000,
        },
    )
    .producer("p0", "t", 20, 8_000)
    .faults(FaultSource::Fixed(plan))
    .run_ms(10_000)
    .checks(checks)
    .build()
}

/// A seeded network latency from the start.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_0337);
    let max_ms = 20 + rng.below_inclusive(40);
    PlannedFaults {
        plan: vec![(0, Fault::Latency { min_ms: 5, max_ms })],
        healed_at_ms: 0,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(CommitCallbacksBeforeSync::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_drawn_per_seed_within_bounds() {
        for seed in 0..50 {
            let planned = plan(seed);
            let [(0, Fault::Latency { min_ms: 5, max_ms })] = planned.plan.as_slice() else {
                panic!("seed {seed}: {:?}", planned.plan);
            };
            assert!((20..=60).contains(max_ms), "seed {seed}");
        }
        assert!((0..10)
            .map(plan)
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| w[0] != w[1]));
    }

    #[test]
    fn the_application_uses_a_sync_barrier() {
        let s = scenario();
        assert_eq!(
            s.subjects[0].app.commit,
            CommitPolicy::AsyncWithSyncBarrier {
                barrier_ms: BARRIER_MS
            }
        );
        assert!((s.checks)().names().contains(&"commit-callback-order"));
    }
}
