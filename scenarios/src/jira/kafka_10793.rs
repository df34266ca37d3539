//! **KAFKA-10793** — "Race condition in FindCoordinatorFuture permanently severs connection to
//! group coordinator" (PR #9671, commit 1ab5e392e7b, fixed in 2.6.2 / 2.7.1 / 2.8.0).
//! Modelled as [`LegacyVersion::V2_6_1`]: 2.6.1's FindCoordinator handling, the rest of the
//! model being 3.1.0's.
//!
//! **Interleaving.** Subscribe mode, so a heartbeat thread shares the client with the
//! application thread. In 2.6.1 `FindCoordinatorResponseHandler` clears `findCoordinatorFuture`
//! first thing, and nothing else clears it. (1) The whole cluster goes down: the coordinator's
//! connection closes, the coordinator is marked unknown, and every FindCoordinator goes to a
//! broker that refuses the connection. (2) The heartbeat thread, holding the coordinator's
//! monitor, finds no future stored and calls `lookupCoordinator()`: `client.send` queues the
//! request and wakes the application thread's client poll, which takes no monitor. (3) That
//! poll fails the request (connection refused) before the heartbeat thread has chained
//! `FindCoordinatorResponseHandler` on it; `compose` then runs the handler at once —
//! `clearFindCoordinatorFuture()` clears nothing, the composed future fails — and only then
//! does `lookupCoordinator` store it. (4) From here on `lookupCoordinator()` returns that
//! failed future forever: `ensureCoordinatorReady` sees it fail at once and only refreshes
//! metadata, the heartbeat thread sees it set and backs off, every `commitAsync` chained on it
//! fails at once. No FindCoordinator is ever sent again, also after the cluster is back.
//!
//! **Symptom upstream.** "A failed but non-null findCoordinatorFuture, causing the
//! AbstractCoordinator to wait endlessly on the request which it thinks is still in flight"
//! (the commit): the coordinator stays unknown forever and the consumer never rejoins — seen
//! in Kafka Streams soak tests with brokers bounced. 2.8.0 clears the future only in
//! `ensureCoordinatorReady` (after looking at its outcome) and in the heartbeat thread's next
//! iteration (3.1.0's path in the model).
//!
//! **Invariants.** (a) coordinator unknown ∧ commits pending ⇒ a FindCoordinator is sent
//! within a bound after the cluster is back ([`CoordinatorRediscovery`]); (b) the member
//! consumes and commits again: every acked record is committed within a bound after the heal
//! ([`Liveness`] with `require_committed`); plus the standard set.
//!
//! **Our design.** Coordinator discovery is level-triggered: each pass of the background
//! task's loop looks for the coordinator when it is unknown and someone needs it (with
//! backoff); there is no future to store or to clear, and no second thread to race with
//! (`consumer/src/internals/coordinator_request_manager.rs`).
//!
//! **Plan.** Fixed faults, seeded timing: every broker is killed at a seeded 4–7 s (a full
//! bounce) and restarted one by one 3–6 s later, within 400 ms of each other.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::{CoordinatorRediscovery, UntilClose};
use crate::legacy::LegacyVersion;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-10793";

const BROKERS: i32 = 3;
const PRODUCE_UNTIL_MS: u64 = 25_000;
const RUN_MS: u64 = 45_000;

const PROPERTIES: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("enable.auto.commit", "false"),
    ("session.timeout.ms", "10000"),
    ("heartbeat.interval.ms", "1000"),
    ("max.poll.interval.ms", "60000"),
    ("partition.assignment.strategy", "range"),
    ("reconnect.backoff.ms", "50"),
    ("reconnect.backoff.max.ms", "50"),
];

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "subscribe+commitAsync; the whole cluster bounces: the coordinator must be found again and commits must resume (2.6.1)",
    )
    .brokers(BROKERS as usize)
    .topic("t", 6)
    .offsets_partitions(1)
    .subscribing_consumer(
        "c0",
        PROPERTIES,
        &["t"],
        AppBehaviour {
            poll_timeout_ms: 100,
            processing_ms_per_record: 2,
            commit: CommitPolicy::AsyncEachPoll,
            close_timeout_ms: 5_000,
        },
    )
    .producer("p0", "t", 20, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .legacy_version(LegacyVersion::V2_6_1)
    .build()
}

/// Every broker killed at once, restarted one by one.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_0793);
    let down_ms = 4_000 + rng.below_inclusive(3_000);
    let up_ms = down_ms + 3_000 + rng.below_inclusive(3_000);
    let mut plan: Vec<(u64, Fault)> = (1..=BROKERS)
        .map(|broker| (down_ms, Fault::KillBroker { broker }))
        .collect();
    let mut healed_at_ms = up_ms;
    for broker in 1..=BROKERS {
        let at_ms = up_ms + rng.below_inclusive(400);
        healed_at_ms = healed_at_ms.max(at_ms);
        plan.push((at_ms, Fault::RestartBroker { broker }));
    }
    plan.sort_by_key(|(at_ms, _)| *at_ms);
    PlannedFaults { plan, healed_at_ms }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(UntilClose {
            inner: Liveness {
                within_ms: 12_000,
                stable_for_ms: 5_000,
                require_committed: true,
                ..Liveness::default()
            },
        })
        .with(CoordinatorRediscovery { bound_ms: 5_000 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_kills_every_broker_then_restarts_them() {
        for seed in 0..50 {
            let planned = plan(seed);
            let (kills, restarts) = planned.plan.split_at(BROKERS as usize);
            let down_ms = kills[0].0;
            assert!((4_000..=7_000).contains(&down_ms), "seed {seed}");
            for (i, (at_ms, fault)) in kills.iter().enumerate() {
                assert_eq!(*at_ms, down_ms);
                assert_eq!(
                    *fault,
                    Fault::KillBroker {
                        broker: i as i32 + 1
                    }
                );
            }
            let mut restarted: Vec<i32> = Vec::new();
            for (at_ms, fault) in restarts {
                assert!(
                    (down_ms + 3_000..=down_ms + 6_400).contains(at_ms),
                    "seed {seed}"
                );
                assert!(*at_ms <= planned.healed_at_ms);
                let Fault::RestartBroker { broker } = fault else {
                    panic!("seed {seed}: {fault:?}");
                };
                restarted.push(*broker);
            }
            restarted.sort_unstable();
            assert_eq!(restarted, (1..=BROKERS).collect::<Vec<_>>());
            assert!(planned.healed_at_ms + 12_000 < PRODUCE_UNTIL_MS + 10_000);
        }
        assert_ne!(plan(1), plan(2), "timing is drawn per seed");
    }

    #[test]
    fn the_scenario_subscribes_one_member_on_2_6_1() {
        let s = scenario();
        assert_eq!(s.legacy_version, LegacyVersion::V2_6_1);
        assert_eq!(s.subjects.len(), 1);
        assert_eq!(s.subjects[0].subscribe, vec!["t".to_owned()]);
        let names = (s.checks)().names();
        assert!(names.contains(&"coordinator-rediscovery"));
        assert!(names.contains(&"liveness"));
    }
}
