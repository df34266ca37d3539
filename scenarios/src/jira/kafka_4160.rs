//! **KAFKA-4160** — "Ensure rebalance listener not called with coordinator lock". Lived on
//! trunk during 0.10.1's development, between KIP-62's heartbeat thread (40b1dd3f495) and the
//! fix (f197ad49970), which shipped in 0.10.1.0. Modelled as [`LegacyVersion::Kip62Trunk`]:
//! the rest of the model is 3.1.0's, only the listener runs holding the coordinator monitor.
//!
//! **Interleaving.** `ensureActiveGroup` was `synchronized` on the coordinator, so
//! `onJoinComplete` ran the application's `onPartitionsAssigned` holding the monitor. (1) The
//! listener does blocking work longer than `session.timeout.ms` (here: 12 s against a 10 s
//! session). (2) The heartbeat thread needs the monitor for every iteration: no heartbeat
//! leaves, and the coordinator expires the member's session. (3) The group rebalances without
//! it and hands its partitions to the other member — while the expelled member, once its
//! listener returns, still believes it owns them and consumes them until a heartbeat tells it
//! `UNKNOWN_MEMBER_ID`.
//!
//! **Symptom upstream.** Heartbeat starvation: members expelled during slow rebalance
//! callbacks, extra rebalances, two members consuming the same partitions for a while.
//!
//! **Invariant.** Heartbeats go on while callbacks run: a member nothing cuts off, polling
//! within `max.poll.interval.ms`, is never told it lost its partitions ([`NoSpuriousLoss`]).
//! Plus the standard set (which tolerates the expelled member's overlap with the new owner:
//! a fenced zombie's window ends with `lost`).
//!
//! **Plan.** No broker fault: the first member's `onPartitionsAssigned` takes 12 s; the second
//! member joins at a seeded 6–9 s, while the first is inside that callback.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, OwnershipMode};

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::NoSpuriousLoss;
use crate::legacy::LegacyVersion;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "kafka-4160";

/// The slow `onPartitionsAssigned`, longer than the session.
const ASSIGNED_CALLBACK_MS: u64 = 12_000;
const PRODUCE_UNTIL_MS: u64 = 30_000;
const RUN_MS: u64 = 40_000;

const PROPERTIES: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("enable.auto.commit", "false"),
    ("session.timeout.ms", "10000"),
    ("heartbeat.interval.ms", "1000"),
    ("max.poll.interval.ms", "60000"),
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
        "onPartitionsAssigned blocks longer than the session: heartbeats must go on, the member must not be expelled",
    )
    .brokers(3)
    .topic("t", 4)
    .offsets_partitions(1)
    .subscribing_consumer("c0", PROPERTIES, &["t"], app())
    .listener(ListenerBehaviour {
        assigned_ms: ASSIGNED_CALLBACK_MS,
        ..ListenerBehaviour::default()
    })
    .subscribing_consumer("c1", PROPERTIES, &["t"], app())
    .start_at(JOINER_START_MS)
    .producer("p0", "t", 20, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .legacy_version(LegacyVersion::Kip62Trunk)
    .build()
}

/// When the second member joins; the seed draws the network latency instead, which moves
/// the first member's join and so the whole interleaving.
const JOINER_START_MS: u64 = 7_000;

/// A seeded network latency from the start: no fault beyond the slow listener.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0000_4160);
    let max_ms = 5 + rng.below_inclusive(45);
    PlannedFaults {
        plan: vec![(0, sim::fault::Fault::Latency { min_ms: 1, max_ms })],
        healed_at_ms: 0,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows).with(NoSpuriousLoss::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listener_outlasts_the_session() {
        let s = scenario();
        let session_ms: u64 = s.subjects[0]
            .properties
            .iter()
            .find(|(k, _)| k == "session.timeout.ms")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap();
        assert!(s.subjects[0].listener.assigned_ms > session_ms);
        assert_eq!(s.subjects[1].listener, ListenerBehaviour::default());
        assert_eq!(s.legacy_version, LegacyVersion::Kip62Trunk);
        for seed in 0..20 {
            let planned = plan(seed);
            let [(0, sim::fault::Fault::Latency { max_ms, .. })] = planned.plan.as_slice() else {
                panic!("seed {seed}");
            };
            assert!((5..=50).contains(max_ms));
        }
    }
}
