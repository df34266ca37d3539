//! **KAFKA-16103** — "AsyncConsumer should await pending async commits on commitSync and
//! close" (3.8.0), the AsyncKafkaConsumer twin of KAFKA-10337 (`kafka_10337`, classic, 3.6.0).
//!
//! **Interleaving.** A KIP-848 member (`group.protocol=consumer`) commits asynchronously after
//! each poll and calls `commitSync(emptyMap)` every 500 ms as a barrier; a second member joins
//! at 4 s so commits also cross an epoch bump and a revocation. The async consumer hands
//! `commitAsync` to the network thread as an event; before the fix, `commitSync` with no
//! offsets returned at once and `close` only ran callbacks of commits that had *already*
//! completed, so the commit sent just before was still in flight: its callback ran later, or
//! never (after `close`).
//!
//! **Symptom upstream.** Applications flushing async commits with an empty `commitSync`
//! (Kafka Streams, Flink) or relying on `close` to report their last commits saw callbacks
//! missing or late; a last commit could be lost silently on shutdown.
//!
//! **Invariants.** When `commitSync` returns, every earlier `commitAsync`'s callback has run
//! ([`CommitCallbacksBeforeSync`]); when `close` returns, likewise
//! ([`AsyncCommitsBeforeClose`]); plus the standard Jepsen and group checkers.
//!
//! **Our design.** `Consumer::commit_sync` and `Consumer::close` (consumer/src/consumer.rs)
//! both go through `await_async_commits`, which waits on every queued async commit's completion
//! handle in order and runs their callbacks before the sync commit is even sent; completions are
//! one-shot handles the background task always resolves (`internals/completion.rs`), and close
//! first sends `CommitOnClose` so commits waiting for a coordinator fail instead of hanging.
//!
//! **Plan.** No broker fault is needed: the window is any round trip. The seed draws a network
//! latency (5 ms to 20–60 ms); the second member joins at 4 s.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::{AsyncCommitsBeforeClose, CommitCallbacksBeforeSync};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-16103";

const BARRIER_MS: u64 = 500;
const PROPERTIES: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("group.protocol", "consumer"),
    ("enable.auto.commit", "false"),
];

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 100,
        processing_ms_per_record: 1,
        commit: CommitPolicy::AsyncWithSyncBarrier {
            barrier_ms: BARRIER_MS,
        },
        close_timeout_ms: 5_000,
    }
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "KIP-848 member: commitAsync per poll, commitSync(empty) barrier and close must run every earlier async callback first",
    )
    .brokers(1)
    .topic("t", 4)
    .offsets_partitions(1)
    .subscribing_consumer("c0", PROPERTIES, &["t"], app())
    .subscribing_consumer("c1", PROPERTIES, &["t"], app())
    .start_at(4_000)
    .producer("p0", "t", 20, 9_000)
    .faults(FaultSource::Fixed(plan))
    .run_ms(10_000)
    .checks(checks)
    .build()
}

/// A seeded network latency from the start.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_6103);
    let max_ms = 20 + rng.below_inclusive(40);
    PlannedFaults {
        plan: vec![(0, Fault::Latency { min_ms: 5, max_ms })],
        healed_at_ms: 0,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(CommitCallbacksBeforeSync::default())
        .with(AsyncCommitsBeforeClose::default())
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
    }

    #[test]
    fn two_kip848_members_with_a_sync_barrier() {
        let s = scenario();
        assert_eq!(s.subjects.len(), 2);
        for m in &s.subjects {
            assert!(m
                .properties
                .contains(&("group.protocol".to_owned(), "consumer".to_owned())));
            assert_eq!(
                m.app.commit,
                CommitPolicy::AsyncWithSyncBarrier {
                    barrier_ms: BARRIER_MS
                }
            );
        }
        let names = (s.checks)().names();
        assert!(names.contains(&"commit-callback-order"));
        assert!(names.contains(&"async-commits-before-close"));
    }
}
