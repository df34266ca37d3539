//! **KAFKA-20426** — "Using both group.id and assign() causes a busy loop in
//! AsyncKafkaConsumer" (PR #22018, 2026).
//!
//! **Interleaving.** `group.id` set (so the group machinery exists) but partitions are
//! `assign()`ed: the membership manager stays UNSUBSCRIBED and heartbeats are skipped. The
//! heartbeat manager's interval was initialised to 0, so its `maximumTimeToWait()` returned 0;
//! the application thread bounds its wait in `pollForFetches` by that value, so `poll(1 s)` on a
//! topic with no new data never blocked: it re-sent poll events and re-checked the buffer in a
//! tight loop for the whole second, and the network thread was woken each time.
//!
//! **Symptom upstream.** One CPU core at 100% per idle consumer using `assign()` with a
//! `group.id` (Flink, Spark and most "manual assignment, committed offsets" applications).
//!
//! **Invariant.** On an idle assignment both loops block: turns of `poll`'s wait and of the
//! background loop stay under a rate the traffic explains ([`LoopRate`]: 100 poll wakeups and
//! 300 background iterations per virtual second, measured over ≥ 1 s windows; an idle member
//! makes a handful); plus the standard set and liveness of the records produced first.
//!
//! **Our design.** `Consumer::poll` (consumer/src/consumer.rs) waits on the fetch buffer, the
//! background-event channel, the caller's deadline and a keep-alive of half
//! `max.poll.interval.ms` — never on a manager's "time to wait", so a manager that has nothing
//! to do cannot make it spin. The background loop (`internals/network_thread.rs`) sleeps until
//! the earliest `next_poll_at` any manager returns; a manager with nothing scheduled (the
//! membership manager outside a group, `internals/membership/`) returns none rather than "now".
//! The counters are `SharedMetrics` (`internals/metrics.rs`), read through `Consumer::metrics`.
//!
//! **Plan.** Two assigning members with a `group.id` and auto-commit, one per protocol
//! (separate groups); records are produced for the first 3 s, then the topic is idle for 17 s
//! while the application polls with a 1 s timeout. The seed draws a network latency.

use kafka_consumer::rt::SeededRng;
use sim::check::{CheckerSet, KnownGaps, Liveness, OwnershipMode};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::LoopRate;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "kafka-20426";

const PRODUCE_UNTIL_MS: u64 = 3_000;
const RUN_MS: u64 = 20_000;

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 1_000,
        processing_ms_per_record: 1,
        commit: CommitPolicy::Auto,
        close_timeout_ms: 5_000,
    }
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "assign()+group.id, idle topic, poll(1s): the consumer blocks instead of busy-looping",
    )
    .brokers(3)
    .topic("t", 6)
    .offsets_partitions(1)
    .assigning_consumer(
        "c0",
        &[
            ("group.id", "g"),
            ("group.protocol", "consumer"),
            ("enable.auto.commit", "true"),
            ("auto.commit.interval.ms", "1000"),
        ],
        "t",
        app(),
    )
    .assigning_consumer(
        "c1",
        &[
            ("group.id", "h"),
            ("group.protocol", "classic"),
            ("enable.auto.commit", "true"),
            ("auto.commit.interval.ms", "1000"),
        ],
        "t",
        app(),
    )
    .producer("p0", "t", 20, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

/// A seeded network latency from the start.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0002_0426);
    let max_ms = 2 + rng.below_inclusive(30);
    PlannedFaults {
        plan: vec![(0, Fault::Latency { min_ms: 1, max_ms })],
        healed_at_ms: 0,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows)
        .with(Liveness {
            within_ms: 10_000,
            stable_for_ms: 5_000,
            ..Liveness::default()
        })
        .with(LoopRate {
            max_background_per_s: 300,
            max_poll_per_s: 100,
            min_window_ms: 1_000,
            from_ms: PRODUCE_UNTIL_MS + 1_000,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_drawn_per_seed_within_bounds() {
        for seed in 0..50 {
            let planned = plan(seed);
            let [(0, Fault::Latency { min_ms: 1, max_ms })] = planned.plan.as_slice() else {
                panic!("seed {seed}: {:?}", planned.plan);
            };
            assert!((2..=32).contains(max_ms), "seed {seed}");
        }
    }

    #[test]
    fn assigning_members_with_a_group_and_an_idle_stretch() {
        let s = scenario();
        assert!(s
            .subjects
            .iter()
            .all(|m| m.subscribe.is_empty() && m.assign.len() == 6 && !m.group_id().is_empty()));
        const { assert!(RUN_MS - PRODUCE_UNTIL_MS >= 10_000, "a long idle stretch") };
        assert!((s.checks)().names().contains(&"loop-rate"));
    }
}
