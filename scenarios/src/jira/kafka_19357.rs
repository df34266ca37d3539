//! **KAFKA-19357** — "AsyncConsumer#close hangs as commitAsync never completes when coordinator
//! is missing" (PR #19914, 4.1).
//!
//! **Interleaving.** The application commits asynchronously after every poll. The group
//! coordinator goes away (here: every coordinator request answered `NOT_COORDINATOR`, every
//! FindCoordinator `COORDINATOR_NOT_AVAILABLE`), so the consumer marks it unknown and the
//! commits made from then on wait for a coordinator. The application calls `close(5 s)`.
//! Upstream, `close` set the closing flag, which stops coordinator lookups, then waited for the
//! pending `commitAsync` futures — which only a coordinator could complete — so `close` blocked
//! for its whole timeout (and the commits' callbacks never ran).
//!
//! **Symptom upstream.** `close(timeout)` always took the full timeout during a coordinator
//! outage; shutdown hooks and rolling restarts stalled; commit callbacks were never invoked.
//!
//! **Invariants.** `close(d)` returns within d plus callback time plus 50 ms
//! ([`BlockingBounds`](sim::check::BlockingBounds), `CloseOvershoot`); every `commitAsync`
//! requested before `close` has its callback run by the time `close` returns, as a failure if
//! need be ([`AsyncCommitsBeforeClose`]); plus the standard set.
//!
//! **Our design.** `Consumer::close` (consumer/src/consumer.rs) bounds every step by one
//! deadline and sends `CommitOnClose` before awaiting async commits; on it the commit request
//! manager (`internals/commit_request_manager.rs`) fails the commits that wait for an unknown
//! coordinator instead of keeping them for a lookup that will not come, and the background
//! task's close reaps whatever is left (`internals/network_thread.rs`). Every completion handle
//! carries a deadline (`internals/completion.rs`).
//!
//! **Plan.** Two members in separate groups, one per protocol (KIP-848 `g`, classic `h`), so
//! both membership paths close during the outage. The outage starts 1.5–3 s (seeded) before the
//! run ends and is never healed: `close` runs inside it.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, OwnershipMode};
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::AsyncCommitsBeforeClose;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-19357";

const RUN_MS: u64 = 12_000;
const CLOSE_TIMEOUT_MS: u64 = 5_000;

/// API keys and error codes of the outage.
const OFFSET_COMMIT: i16 = 8;
const FIND_COORDINATOR: i16 = 10;
const HEARTBEAT: i16 = 12;
const CONSUMER_GROUP_HEARTBEAT: i16 = 68;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 100,
        processing_ms_per_record: 1,
        commit: CommitPolicy::AsyncEachPoll,
        close_timeout_ms: CLOSE_TIMEOUT_MS,
    }
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "close() during a coordinator outage with commitAsync pending: returns within its timeout, every async callback run",
    )
    .brokers(3)
    .topic("t", 4)
    .offsets_partitions(1)
    .subscribing_consumer(
        "c0",
        &[
            ("group.id", "g"),
            ("group.protocol", "consumer"),
            ("enable.auto.commit", "false"),
        ],
        &["t"],
        app(),
    )
    .subscribing_consumer(
        "c1",
        &[
            ("group.id", "h"),
            ("group.protocol", "classic"),
            ("enable.auto.commit", "false"),
        ],
        &["t"],
        app(),
    )
    .producer("p0", "t", 20, RUN_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

/// Every coordinator request fails from a seeded time before the close, until the end.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_9357);
    let outage_ms = RUN_MS - 1_500 - rng.below_inclusive(1_500);
    let rule = |api_key, code| {
        (
            outage_ms,
            Fault::Response(ResponseRule {
                api_key,
                broker: None,
                trigger: Trigger::UntilCleared,
                action: ResponseAction::Error(code),
            }),
        )
    };
    PlannedFaults {
        plan: vec![
            rule(FIND_COORDINATOR, COORDINATOR_NOT_AVAILABLE),
            rule(OFFSET_COMMIT, NOT_COORDINATOR),
            rule(HEARTBEAT, NOT_COORDINATOR),
            rule(CONSUMER_GROUP_HEARTBEAT, NOT_COORDINATOR),
        ],
        healed_at_ms: RUN_MS,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(AsyncCommitsBeforeClose::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outage_starts_before_the_close_and_never_heals() {
        for seed in 0..50 {
            let planned = plan(seed);
            assert_eq!(planned.plan.len(), 4);
            let start = planned.plan[0].0;
            assert!(
                (RUN_MS - 3_000..=RUN_MS - 1_500).contains(&start),
                "seed {seed}"
            );
            assert!(planned.plan.iter().all(|(at, f)| *at == start
                && matches!(
                    f,
                    Fault::Response(ResponseRule {
                        trigger: Trigger::UntilCleared,
                        ..
                    })
                )));
            assert!(!planned
                .plan
                .iter()
                .any(|(_, f)| matches!(f, Fault::ClearResponses { .. })));
        }
    }

    #[test]
    fn one_member_per_protocol_commits_async() {
        let s = scenario();
        let protocols: Vec<&str> = s
            .subjects
            .iter()
            .map(|m| {
                m.properties
                    .iter()
                    .find(|(k, _)| k == "group.protocol")
                    .map_or("", |(_, v)| v.as_str())
            })
            .collect();
        assert_eq!(protocols, ["consumer", "classic"]);
        assert_ne!(s.subjects[0].group_id(), s.subjects[1].group_id());
        assert!(s
            .subjects
            .iter()
            .all(|m| m.app.commit == CommitPolicy::AsyncEachPoll
                && m.app.close_timeout_ms == CLOSE_TIMEOUT_MS));
    }
}
