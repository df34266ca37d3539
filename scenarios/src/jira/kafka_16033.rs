//! **KAFKA-16033** — "Commit retry logic fixes" and **KAFKA-16224** — "Fix handling of deleted
//! topic when auto-committing before revocation" (3.7–3.8), the AsyncKafkaConsumer's commit
//! before revocation.
//!
//! **Interleaving.** (16033) A member is told to revoke partitions; before
//! `onPartitionsRevoked` it auto-commits what it consumed. The epoch it commits with may already
//! be stale — the coordinator answers `STALE_MEMBER_EPOCH` — and the commit must be retried with
//! the *newest* epoch (re-reading the consumed offsets), not failed nor retried as is.
//! (16224) A subscribed topic is deleted: the coordinator's new target drops its partitions, the
//! member revokes them and its commit before revocation includes them; every answer is
//! `UNKNOWN_TOPIC_OR_PARTITION`, which upstream retried as a plain retriable error until the
//! rebalance timeout — the async twin of KAFKA-13310.
//!
//! **Symptom upstream.** 16224: the reconciliation (and every assignment change queued behind
//! it) stalled for `max.poll.interval.ms` after a topic deletion. 16033: revocation commits
//! failed on an epoch bump and progress was lost to the next owner.
//!
//! **Invariants.** The deleted topic's partitions are revoked within 8 s of the deletion
//! ([`RevocationFinishes`]); the group settles and consumes everything of the surviving topic
//! after the faults ([`Liveness`]); no auto-commit beyond what was processed
//! ([`AutoCommitBound`]); plus the standard set (committed offsets never regress).
//!
//! **Our design.** Reconciliation (`internals/membership/consumer/reconcile.rs`) runs commit →
//! revoke → assign, each stage bounded and re-checked; the commit before revocation lives in
//! the commit request manager (`internals/commit_request_manager.rs`,
//! `commit_before_revocation`): retried on `STALE_MEMBER_EPOCH` with the epoch the latest
//! heartbeat brought, bounded by the rebalance timeout, and its failure does not stop the
//! revocation; `UNKNOWN_TOPIC_OR_PARTITION` ends it at once (KAFKA-16224). Each attempt reads
//! the newest consumed positions when it is sent, so an interval auto-commit that went out
//! during the retry's backoff is never followed by an older retry (our own instance of the
//! bug, found by this scenario: `kafka-16033-consumer-seed-1`).
//!
//! **Plan.** Group `g` (KIP-848, `max.poll.interval.ms=20000`, auto-commit every 500 ms):
//! `c0` subscribes to `t` and `u` at 0 s, `c1` at 3 s. From 3 s to 9 s every OffsetCommit is
//! answered `STALE_MEMBER_EPOCH` (the revocation for `c1`'s join commits inside it). At a seeded
//! 12–14 s topic `u` is deleted and from then every OffsetCommit is answered
//! `UNKNOWN_TOPIC_OR_PARTITION` for 15 s (the sim's coordinator would accept offsets of a
//! deleted topic; Kafka's refuses them).

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::{AutoCommitBound, RevocationFinishes, UntilClose};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-16033";

const OFFSET_COMMIT: i16 = 8;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const STALE_MEMBER_EPOCH: i16 = 113;
const STALE_FROM_MS: u64 = 3_000;
const STALE_UNTIL_MS: u64 = 9_000;
const UNKNOWN_FOR_MS: u64 = 15_000;
const RUN_MS: u64 = 50_000;

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 100,
        processing_ms_per_record: 1,
        commit: CommitPolicy::Auto,
        close_timeout_ms: 5_000,
    }
}

const PROPERTIES: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("group.protocol", "consumer"),
    ("enable.auto.commit", "true"),
    ("auto.commit.interval.ms", "500"),
    ("max.poll.interval.ms", "20000"),
];

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "STALE_MEMBER_EPOCH on the commit before revocation, then a subscribed topic deleted: revocation still finishes",
    )
    .brokers(3)
    .topic("t", 4)
    .topic("u", 2)
    .offsets_partitions(1)
    .subscribing_consumer("c0", PROPERTIES, &["t", "u"], app())
    .subscribing_consumer("c1", PROPERTIES, &["t", "u"], app())
    .start_at(STALE_FROM_MS)
    .producer("p0", "t", 20, RUN_MS - 15_000)
    .producer("p1", "u", 20, 2_000)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

fn commit_error(code: i16) -> Fault {
    Fault::Response(ResponseRule {
        api_key: OFFSET_COMMIT,
        broker: None,
        trigger: Trigger::UntilCleared,
        action: ResponseAction::Error(code),
    })
}

/// The stale-epoch window, then the deletion with its commit errors.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_6033);
    let deleted_ms = 12_000 + rng.below_inclusive(2_000);
    let healed_at_ms = deleted_ms + UNKNOWN_FOR_MS;
    let clear = Fault::ClearResponses {
        api_key: Some(OFFSET_COMMIT),
    };
    PlannedFaults {
        plan: vec![
            (STALE_FROM_MS, commit_error(STALE_MEMBER_EPOCH)),
            (STALE_UNTIL_MS, clear.clone()),
            (
                deleted_ms,
                Fault::DeleteTopic {
                    topic: "u".to_owned(),
                },
            ),
            (deleted_ms, commit_error(UNKNOWN_TOPIC_OR_PARTITION)),
            (healed_at_ms, clear),
        ],
        healed_at_ms,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(RevocationFinishes { within_ms: 8_000 })
        .with(AutoCommitBound::default())
        .with(UntilClose {
            inner: Liveness {
                within_ms: 15_000,
                stable_for_ms: 5_000,
                ..Liveness::default()
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deletion_follows_the_stale_window_and_its_errors_outlast_the_bound() {
        for seed in 0..50 {
            let planned = plan(seed);
            let deleted_ms = planned
                .plan
                .iter()
                .find(|(_, f)| matches!(f, Fault::DeleteTopic { .. }))
                .map(|(at, _)| *at)
                .unwrap();
            assert!((12_000..=14_000).contains(&deleted_ms), "seed {seed}");
            assert!(deleted_ms > STALE_UNTIL_MS);
            const {
                assert!(
                    UNKNOWN_FOR_MS > 8_000,
                    "a retry-until-timeout consumer misses the bound"
                )
            };
            assert_eq!(planned.healed_at_ms, deleted_ms + UNKNOWN_FOR_MS);
            assert!(planned.healed_at_ms + 20_000 <= RUN_MS);
        }
    }

    #[test]
    fn both_members_subscribe_to_the_doomed_topic() {
        let s = scenario();
        assert!(s.subjects.iter().all(|m| m.subscribe == ["t", "u"]));
        assert!((s.checks)().names().contains(&"revocation-finishes"));
    }
}
