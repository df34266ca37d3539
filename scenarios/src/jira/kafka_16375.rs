//! **KAFKA-16375** — "Fix for rejoin while reconciling" (3.8.0).
//!
//! **Interleaving.** A KIP-848 member is reconciling a new target assignment: it has asked the
//! application to run `onPartitionsRevoked` and waits for it. Meanwhile a heartbeat response
//! says `FENCED_MEMBER_EPOCH`: the member is fenced, gives up its partitions
//! (`onPartitionsLost`) and rejoins with epoch 0. Upstream the reconciliation in flight did not
//! notice: when the revoke callback finally completed it carried on — assigned the *old*
//! target's partitions and acknowledged with the stale epoch — over the state of the new
//! membership. The fix added `rejoinedWhileReconciliationInProgress`, checked after each
//! asynchronous stage.
//!
//! **Symptom upstream.** The rejoined member applied an assignment from its previous epoch:
//! it could fetch partitions now owned by another member (double consumption) or miss ones the
//! new epoch gave it until the next rebalance.
//!
//! **Invariants.** No partition owned by two members at once ([`ExclusiveOwnership`] in the
//! standard set), revocations precede reassignment and callbacks pair up (standard set), the
//! group settles and consumes everything after the fault ([`Liveness`]).
//!
//! **Our design.** Reconciliation (`internals/membership/consumer/reconcile.rs`) is tagged with
//! the member epoch and the target it started from; every callback completion is checked
//! against the membership's current state before the next stage runs, and fencing
//! (`internals/membership/consumer/mod.rs`) abandons the reconciliation in flight. The
//! application-side assignment view only changes through the callbacks the background side
//! asks for (`Consumer::run_rebalance_callback`, consumer/src/consumer.rs).
//!
//! **Plan.** Group `g` (KIP-848): `c0` at 0 s, `c1` joins at 3 s, so `c0` must revoke; its
//! `onPartitionsRevoked` takes 10 s. From 9 s to 14.5 s (one heartbeat interval and a half)
//! every ConsumerGroupHeartbeat is answered `FENCED_MEMBER_EPOCH`, so `c0` is fenced while its
//! revoke callback runs (its target arrives by 8.5 s; the callback lasts past 13 s). The seed
//! draws a network latency and shifts the fencing window by up to 500 ms. The fencing is
//! injected, so the coordinator still knows both members at their epochs and refuses their
//! epoch-0 rejoins (Kafka's `throwIfConsumerGroupMemberEpochIsInvalid`) until their sessions
//! expire (45 s): the run lasts 85 s and liveness is judged 60 s after the heal.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::UntilClose;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "kafka-16375";

const CONSUMER_GROUP_HEARTBEAT: i16 = 68;
const FENCED_MEMBER_EPOCH: i16 = 110;
const REVOKE_MS: u64 = 10_000;
const FENCE_FROM_MS: u64 = 9_000;
const FENCE_FOR_MS: u64 = 5_500;
const RUN_MS: u64 = 85_000;

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 100,
        processing_ms_per_record: 1,
        commit: CommitPolicy::AsyncEachPoll,
        close_timeout_ms: 5_000,
    }
}

const PROPERTIES: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("group.protocol", "consumer"),
    ("enable.auto.commit", "false"),
];

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "FENCED_MEMBER_EPOCH while onPartitionsRevoked runs: the stale reconciliation must not be applied",
    )
    .brokers(3)
    .topic("t", 4)
    .offsets_partitions(1)
    .subscribing_consumer("c0", PROPERTIES, &["t"], app())
    .listener(ListenerBehaviour {
        revoked_ms: REVOKE_MS,
        ..ListenerBehaviour::default()
    })
    .subscribing_consumer("c1", PROPERTIES, &["t"], app())
    .start_at(3_000)
    .producer("p0", "t", 20, 40_000)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

/// Every heartbeat is fenced for a window inside c0's revocation.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_6375);
    let max_ms = 2 + rng.below_inclusive(30);
    let from_ms = FENCE_FROM_MS + rng.below_inclusive(500);
    let until_ms = from_ms + FENCE_FOR_MS;
    PlannedFaults {
        plan: vec![
            (0, Fault::Latency { min_ms: 1, max_ms }),
            (
                from_ms,
                Fault::Response(ResponseRule {
                    api_key: CONSUMER_GROUP_HEARTBEAT,
                    broker: None,
                    trigger: Trigger::UntilCleared,
                    action: ResponseAction::Error(FENCED_MEMBER_EPOCH),
                }),
            ),
            (
                until_ms,
                Fault::ClearResponses {
                    api_key: Some(CONSUMER_GROUP_HEARTBEAT),
                },
            ),
        ],
        healed_at_ms: until_ms,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows).with(UntilClose {
        inner: Liveness {
            within_ms: 60_000,
            stable_for_ms: 5_000,
            ..Liveness::default()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fencing_window_falls_inside_the_revocation() {
        let s = scenario();
        let joined_ms = s.subjects[1].start_ms;
        // c0's next heartbeat after the join (≤ 5 s interval) brings the revocation.
        let latest_revoke_start_ms = joined_ms + 5_500;
        for seed in 0..50 {
            let planned = plan(seed);
            let (from_ms, _) = planned.plan[1];
            let (until_ms, _) = planned.plan[2];
            assert!(from_ms >= latest_revoke_start_ms, "seed {seed}");
            assert!(joined_ms + REVOKE_MS >= from_ms + 3_500, "seed {seed}");
            assert!(until_ms - from_ms > 5_000, "covers a heartbeat interval");
            assert_eq!(planned.healed_at_ms, until_ms);
        }
    }
}
