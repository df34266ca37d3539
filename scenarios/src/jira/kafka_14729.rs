//! **KAFKA-14729** — "The kafakConsumer pollForFetches(timer) method takes up a lot of cpu due
//! to the abnormal exit of the heartbeat thread" (#13270, fixed in 3.5.0). Present in 3.1.0,
//! the model's version, through the code path the model has.
//!
//! **Interleaving.** A subscribed member with a slow application (it spends most of its time
//! processing records, outside `poll`), so the heartbeat thread's `client.pollNoWakeup()` is
//! what reads most heartbeat responses. (1) A heartbeat response arrives malformed:
//! `NetworkClient.parseResponse` throws a `SchemaException` out of `poll` on the heartbeat
//! thread, whose `catch (Throwable e)` records it in `failed` and ends the thread. (2) The
//! application's next `poll` reaches `pollHeartbeat`, which rethrows the failure once and sets
//! `heartbeatThread = null`; the application logs it and polls again, as most poll loops do.
//! (3) The member is still STABLE, so `timeToNextPoll` is the heartbeat timer's remaining time
//! — and nobody resets that timer any more: it stays expired, `pollForFetches` calls
//! `client.poll(0)`, and `poll` spins until the coordinator expires the silent member's session
//! and a later commit is refused (`UNKNOWN_MEMBER_ID`), which finally makes it rejoin and start
//! a new heartbeat thread.
//!
//! **Symptom upstream.** A consumer thread at 100 % CPU inside `pollForFetches`; heartbeats
//! stop, the member is expelled after `session.timeout.ms`.
//!
//! **Invariant.** The application thread is not woken inside `poll` more than a bound per
//! virtual second ([`AppWakeups`]: a wake-up is a return from a wait — for a response, a
//! deadline or the timeout), plus the standard set. (Upstream's fix rethrows the
//! heartbeat thread's failure from `timeToNextHeartbeat` too; in our consumer a response that
//! does not parse fails that one request and the background task goes on.)
//!
//! **Plan.** From a seeded time 4–7 s, every Heartbeat response is malformed for 3 s, then
//! healed: a few heartbeats fail on either subject, well within the 10 s session. The member
//! is never expelled upstream either: its successful offset commits count as heartbeats at
//! the coordinator, so the spin outlives the fault. A healthy poll loop here wakes about 20
//! times a virtual second (both subjects); the spinning one 450–1,000 times (the simulated
//! clock's millisecond granularity bounds it).

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, OwnershipMode};
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::AppWakeups;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-14729";

/// Kafka's API key of Heartbeat.
const HEARTBEAT: i16 = 12;
/// How long heartbeat responses stay malformed.
const MALFORMED_FOR_MS: u64 = 3_000;
const PRODUCE_UNTIL_MS: u64 = 20_000;
const RUN_MS: u64 = 30_000;
/// Ten times what a waiting poll loop needs here, half of what the spinning one does.
const MAX_WAKEUPS_PER_S: u64 = 200;

const PROPERTIES: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("enable.auto.commit", "false"),
    ("session.timeout.ms", "10000"),
    ("heartbeat.interval.ms", "1000"),
    ("max.poll.interval.ms", "30000"),
    ("partition.assignment.strategy", "range"),
];

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "malformed heartbeat responses kill the classic heartbeat thread: poll must not spin afterwards",
    )
    .brokers(3)
    .topic("t", 4)
    .offsets_partitions(1)
    .subscribing_consumer(
        "c0",
        PROPERTIES,
        &["t"],
        AppBehaviour {
            poll_timeout_ms: 100,
            processing_ms_per_record: 40,
            commit: CommitPolicy::AsyncEachPoll,
            close_timeout_ms: 5_000,
        },
    )
    .producer("p0", "t", 100, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

/// Heartbeat responses malformed for [`MALFORMED_FOR_MS`] from a seeded time.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_4729);
    let from_ms = 4_000 + rng.below_inclusive(3_000);
    let healed_at_ms = from_ms + MALFORMED_FOR_MS;
    PlannedFaults {
        plan: vec![
            (
                from_ms,
                Fault::Response(ResponseRule {
                    api_key: HEARTBEAT,
                    broker: None,
                    trigger: Trigger::UntilCleared,
                    action: ResponseAction::Malform,
                }),
            ),
            (
                healed_at_ms,
                Fault::ClearResponses {
                    api_key: Some(HEARTBEAT),
                },
            ),
        ],
        healed_at_ms,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows).with(AppWakeups {
        max_per_s: MAX_WAKEUPS_PER_S,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeat_responses_are_malformed_for_a_seeded_window() {
        for seed in 0..50 {
            let planned = plan(seed);
            let [(from, Fault::Response(rule)), (to, Fault::ClearResponses { api_key })] =
                planned.plan.as_slice()
            else {
                panic!("seed {seed}: {:?}", planned.plan);
            };
            assert!((4_000..=7_000).contains(from), "seed {seed}");
            assert_eq!(to - from, MALFORMED_FOR_MS);
            assert_eq!(rule.api_key, HEARTBEAT);
            assert_eq!(rule.action, ResponseAction::Malform);
            assert_eq!(*api_key, Some(HEARTBEAT));
            assert_eq!(planned.healed_at_ms, *to);
            assert!(
                *to + 10_000 < RUN_MS,
                "the run outlasts the session timeout"
            );
        }
        assert_ne!(plan(1), plan(2));
    }

    #[test]
    fn the_scenario_judges_wakeups() {
        let s = scenario();
        assert_eq!(s.subjects.len(), 1);
        assert!((s.checks)().names().contains(&AppWakeups::NAME));
    }
}
