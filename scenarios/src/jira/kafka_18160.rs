//! **KAFKA-18160** — "Interrupting or waking up onPartitionsAssigned in AsyncConsumer can cause
//! the ConsumerRebalanceListenerCallbackCompletedEvent to be skipped" (PR #18089, 4.0.0); classic
//! analogue KAFKA-5611 "AbstractCoordinator should handle wakeup raised from onJoinComplete".
//!
//! **Interleaving.** The network thread asks the application thread to run
//! `onPartitionsAssigned` (callback-needed) and waits for the callback-completed event before
//! enabling the new partitions and acknowledging. While the callback runs, another thread calls
//! `wakeup()`. Upstream, `ConsumerRebalanceListenerInvoker` rethrew the `WakeupException` raised
//! by the callback's next blocking call before the completed event was enqueued: reconciliation
//! waited forever.
//!
//! **Symptom upstream.** The member stayed RECONCILING with the new partitions assigned but
//! "awaiting callback", so never fetchable; it kept heartbeating without acknowledging until the
//! broker fenced it after the rebalance timeout — a stall of `max.poll.interval.ms` per rebalance.
//!
//! **Invariants.** Every newly assigned partition becomes fetchable: all records are consumed
//! and the group is stable within a bound ([`Liveness`]); no member is fenced for it
//! ([`NoPartitionsLost`]); rebalance callbacks pair up ([`CallbackHandshake`] and
//! `RevokeBeforeReassign` in the standard set).
//!
//! **Our design.** `Consumer::run_rebalance_callback` (consumer/src/consumer.rs) creates a
//! `CallbackCompletion` guard (`rebalance.rs`) *before* invoking the listener; the guard answers
//! the background side exactly once when dropped — after the callback returns, throws, panics
//! (`CatchUnwind`) or is cancelled with the caller's future — so a wakeup can only make the next
//! blocking call fail, never swallow the completion. The membership manager
//! (`internals/membership/`) enables the partitions on that completion.
//!
//! **Plan.** Per protocol, three members join one group at 0, 3 and 6 s (KIP-848 `g`, classic
//! `h`); each `onPartitionsAssigned` takes 40 ms and a `wakeup()` lands halfway through it. The
//! seed draws a network latency.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::{NoPartitionsLost, UntilClose};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "kafka-18160";

const JOIN_EVERY_MS: u64 = 3_000;
const PRODUCE_UNTIL_MS: u64 = 12_000;
const RUN_MS: u64 = 25_000;

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 100,
        processing_ms_per_record: 1,
        commit: CommitPolicy::AsyncEachPoll,
        close_timeout_ms: 5_000,
    }
}

fn listener() -> ListenerBehaviour {
    ListenerBehaviour {
        assigned_ms: 40,
        wakeup_in_assigned: true,
        ..ListenerBehaviour::default()
    }
}

pub fn scenario() -> Scenario {
    let mut builder = Scenario::builder(
        NAME,
        "wakeup() while onPartitionsAssigned runs, three members joining: every assigned partition becomes fetchable",
    )
    .brokers(3)
    .topic("t", 6)
    .offsets_partitions(1);
    for (group, protocol, names) in [
        ("g", "consumer", ["c0", "c1", "c2"]),
        ("h", "classic", ["c3", "c4", "c5"]),
    ] {
        for (i, name) in names.into_iter().enumerate() {
            builder = builder
                .subscribing_consumer(
                    name,
                    &[
                        ("group.id", group),
                        ("group.protocol", protocol),
                        ("enable.auto.commit", "false"),
                    ],
                    &["t"],
                    app(),
                )
                .listener(listener())
                .start_at(i as u64 * JOIN_EVERY_MS);
        }
    }
    builder
        .producer("p0", "t", 20, PRODUCE_UNTIL_MS)
        .faults(FaultSource::Fixed(plan))
        .run_ms(RUN_MS)
        .checks(checks)
        .build()
}

/// A seeded network latency from the start.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_8160);
    let max_ms = 2 + rng.below_inclusive(30);
    PlannedFaults {
        plan: vec![(0, Fault::Latency { min_ms: 1, max_ms })],
        healed_at_ms: 0,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(NoPartitionsLost::default())
        .with(UntilClose {
            inner: Liveness {
                within_ms: 20_000,
                stable_for_ms: 5_000,
                ..Liveness::default()
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_member_wakes_up_inside_its_assigned_callback() {
        let s = scenario();
        assert_eq!(s.subjects.len(), 6);
        for m in &s.subjects {
            assert!(m.listener.wakeup_in_assigned);
            assert!(m.listener.assigned_ms > 0);
        }
        let starts: Vec<u64> = s.subjects.iter().map(|m| m.start_ms).collect();
        assert_eq!(starts, [0, 3_000, 6_000, 0, 3_000, 6_000]);
        const {
            assert!(
                2 * JOIN_EVERY_MS + 5_000 < PRODUCE_UNTIL_MS,
                "records arrive after the last join"
            )
        };
    }
}
