//! **KAFKA-10134** — high CPU and no heartbeats during rebalance (#8834, #8934, #9354). A
//! regression of KAFKA-8421 ("still return data during rebalance") in 2.5.0, fixed in 2.5.1 /
//! 2.6.0. Modelled as [`LegacyVersion::V2_5_0`]: 2.5.0's `poll`, which runs
//! `updateAssignmentMetadataIfNeeded` with a zero timer.
//!
//! **Interleaving.** A stable, idle member (nothing left to fetch). (1) The coordinator goes
//! away: heartbeats are answered `NOT_COORDINATOR`, the member marks it unknown, and
//! FindCoordinator answers `COORDINATOR_NOT_AVAILABLE` for a while. (2) The heartbeat thread
//! can only look for the coordinator, so no heartbeat is sent and the heartbeat timer expires:
//! `timeToNextPoll` is zero. (3) `poll` looks for the coordinator with a zero timer (it never
//! waits for the lookup), then `pollForFetches` with a zero timeout, and loops until its own
//! timeout: a tight loop for as long as the coordinator is gone. 3.1.0 waits for coordinator
//! discovery within the poll's timer instead, and the same plan does not make it spin.
//!
//! **Symptom upstream.** A consumer at 100 % CPU while the coordinator is unavailable.
//! (KAFKA-10134's other half — no heartbeats while waiting for SyncGroup, so a slow leader
//! expired the followers' sessions — is not replayed here.)
//!
//! **Invariant.** The application thread is not woken inside `poll` more than a bound per
//! virtual second ([`AppWakeups`]), plus the standard set.
//!
//! **Plan.** The producer stops at 6 s. From a seeded 8–10 s, for 5 s (half the session),
//! Heartbeat is answered `NOT_COORDINATOR` and FindCoordinator `COORDINATOR_NOT_AVAILABLE`.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, OwnershipMode};
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::AppWakeups;
use crate::legacy::LegacyVersion;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-10134";

const FIND_COORDINATOR: i16 = 10;
const HEARTBEAT: i16 = 12;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;
/// How long the coordinator stays unavailable: half the session.
const UNAVAILABLE_FOR_MS: u64 = 5_000;
const PRODUCE_UNTIL_MS: u64 = 6_000;
const RUN_MS: u64 = 25_000;
/// As in `kafka_14729`: ten times what a waiting poll loop needs, well under a spinning one.
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
        "the coordinator is unavailable for 5 s while the member is idle (2.5.0): poll must wait, not spin",
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
            processing_ms_per_record: 2,
            commit: CommitPolicy::AsyncEachPoll,
            close_timeout_ms: 5_000,
        },
    )
    .producer("p0", "t", 50, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .legacy_version(LegacyVersion::V2_5_0)
    .build()
}

fn until_cleared(api_key: i16, error: i16) -> Fault {
    Fault::Response(ResponseRule {
        api_key,
        broker: None,
        trigger: Trigger::UntilCleared,
        action: ResponseAction::Error(error),
    })
}

/// The coordinator unavailable for [`UNAVAILABLE_FOR_MS`] from a seeded 8–10 s.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_0134);
    let from_ms = 8_000 + rng.below_inclusive(2_000);
    let healed_at_ms = from_ms + UNAVAILABLE_FOR_MS;
    PlannedFaults {
        plan: vec![
            (from_ms, until_cleared(HEARTBEAT, NOT_COORDINATOR)),
            (
                from_ms,
                until_cleared(FIND_COORDINATOR, COORDINATOR_NOT_AVAILABLE),
            ),
            (healed_at_ms, Fault::ClearResponses { api_key: None }),
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
    fn the_coordinator_is_gone_for_half_a_session_after_production_stops() {
        for seed in 0..50 {
            let planned = plan(seed);
            let [(from, _), (same, _), (to, Fault::ClearResponses { api_key: None })] =
                planned.plan.as_slice()
            else {
                panic!("seed {seed}: {:?}", planned.plan);
            };
            assert_eq!(from, same);
            assert!((8_000..=10_000).contains(from), "seed {seed}");
            assert_eq!(to - from, UNAVAILABLE_FOR_MS);
            assert!(*from > PRODUCE_UNTIL_MS);
        }
        assert_ne!(plan(1), plan(2));
    }

    #[test]
    fn the_scenario_judges_wakeups_on_the_2_5_0_model() {
        let s = scenario();
        assert_eq!(s.legacy_version, LegacyVersion::V2_5_0);
        assert!((s.checks)().names().contains(&AppWakeups::NAME));
    }
}
