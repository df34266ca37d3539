//! **The project's own: an illegal topic name, then recovery** (issue #26) — members first
//! subscribe to a topic name Kafka does not allow (`Topic.validate`: 1–249 characters of
//! `[a-zA-Z0-9._-]`, not `.` or `..`), alone or next to the real topic; the application must be
//! told, naming the topic, then `unsubscribe`s and subscribes to the real topic, and the group
//! must consume everything produced to it exactly as produced.
//!
//! **Interleaving aimed at.** The refused subscription and the `unsubscribe` happen while the
//! other member may already be in the group on the real topic (per seed: start times, who
//! subscribes to what illegal name, alone or mixed with the real topic), so the recovery's
//! join lands in the middle of the group's first rebalances, under network latency; both group
//! protocols, the classic assignors and both commit policies are drawn per seed. Before the
//! fix the consumer accepted the name and polled nothing forever; the simulated broker then
//! answered it with UNKNOWN_TOPIC_OR_PARTITION (Kafka: INVALID_TOPIC_EXCEPTION), so nothing
//! could have shown it.
//!
//! **Invariants.** [`InvalidTopicsSurface`]: the application learns of every illegal name it
//! subscribed to, from `subscribe` or a later `poll`, with the name in the error; and the full
//! family set ([`super::full_checks`]): nothing of the real topic lost, duplicated beyond the
//! at-least-once bound or out of order, exclusive ownership, and after the heal the group
//! settles, consumes and commits everything.
//!
//! **Why our design should hold.** `Consumer::subscribe` and `assign` validate every name
//! (`kafka_consumer::topic_name`) before anything reaches the background task, so a refused
//! subscription leaves no state behind and `unsubscribe` + `subscribe` starts clean; a topic
//! only the broker refuses (TOPIC_AUTHORIZATION_FAILED, INVALID_TOPIC_EXCEPTION) is raised
//! from `poll` once per metadata refresh (`topic_metadata_request_manager.rs`).

use super::{
    between, coin, draw_listener, full_checks, group_builder, knob_rng, latency_until, pick,
    GroupKnobs, TOPIC,
};
use crate::checks::InvalidTopicsSurface;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "invalid-topic";

const SALT: u64 = 0x0069_6e76_616c;
const PARTITIONS: i32 = 3;
const MEMBERS: usize = 2;
const WITHIN_MS: u64 = 15_000;
/// Production goes on well past the last join's rebalances (a cooperative second round waits
/// up to a heartbeat interval): an application that commits after each poll with records
/// commits its final positions only if records still arrive once the group is stable — commits
/// during a classic rebalance fail with REBALANCE_IN_PROGRESS, as in Kafka.
const PRODUCE_UNTIL_MS: u64 = 20_000;
const RUN_MS: u64 = 40_000;

/// Names Kafka refuses, one per rule of `Topic.validate`.
fn illegal_names() -> [String; 5] {
    [
        "bad!topic".to_owned(),
        "with space".to_owned(),
        ".".to_owned(),
        "..".to_owned(),
        "a".repeat(250),
    ]
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knobs {
    pub group: GroupKnobs,
    /// Per member: start time, the topics of its first (refused) subscription — `None` for a
    /// member that subscribes to the real topic straight away — and its listener.
    pub members: Vec<(u64, Option<Vec<String>>, ListenerBehaviour)>,
    pub latency_max_ms: u64,
    pub healed_at_ms: u64,
}

pub fn draw(seed: u64) -> Knobs {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let names = illegal_names();
    let mut members = Vec::new();
    for i in 0..MEMBERS {
        let start = if i == 0 {
            0
        } else {
            between(&mut rng, 0, 4_000)
        };
        // The first member always tries an illegal name; the second in half the seeds.
        let first = (i == 0 || coin(&mut rng)).then(|| {
            let illegal = names[pick(&mut rng, &[0, 1, 2, 3, 4])].clone();
            if coin(&mut rng) {
                vec![illegal]
            } else {
                vec![TOPIC.to_owned(), illegal]
            }
        });
        members.push((start, first, draw_listener(&mut rng, 500)));
    }
    let last_start = members.iter().map(|(start, ..)| *start).max().unwrap_or(0);
    Knobs {
        group,
        members,
        latency_max_ms: between(&mut rng, 2, 30),
        healed_at_ms: last_start + 1,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let knobs = draw(seed);
    for (spec, (start, first, listener)) in scenario.subjects.iter_mut().zip(knobs.members) {
        knobs.group.apply(spec);
        spec.start_ms = start;
        spec.subscribe_before = first;
        spec.listener = listener;
    }
}

fn plan(seed: u64) -> PlannedFaults {
    let knobs = draw(seed);
    latency_until(knobs.latency_max_ms, knobs.healed_at_ms)
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS).with(InvalidTopicsSurface::default())
}

pub fn scenario() -> Scenario {
    group_builder(NAME, "subscribe to an illegal topic name, be told, unsubscribe, subscribe to the real topic: the error names the topic and everything is consumed", PARTITIONS, MEMBERS, &[TOPIC])
        .producer("p0", TOPIC, 20, PRODUCE_UNTIL_MS)
        .faults(FaultSource::Fixed(plan))
        .run_ms(RUN_MS)
        .checks(checks)
        .vary(vary)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_consumer::topic_name::is_valid_topic_name;

    #[test]
    fn every_seed_tries_an_illegal_name_and_leaves_time_to_settle() {
        let mut mixed = 0;
        let mut both = 0;
        for seed in 0..100 {
            let k = draw(seed);
            let firsts: Vec<&Vec<String>> = k
                .members
                .iter()
                .filter_map(|(_, f, _)| f.as_ref())
                .collect();
            assert!(!firsts.is_empty(), "seed {seed}");
            for first in &firsts {
                assert!(first.iter().any(|t| !is_valid_topic_name(t)), "seed {seed}");
                mixed += usize::from(first.len() == 2);
            }
            both += usize::from(firsts.len() == 2);
            assert!(k.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS, "seed {seed}");
            assert!(k.healed_at_ms < PRODUCE_UNTIL_MS, "seed {seed}");
        }
        assert!(mixed > 20 && both > 20, "{mixed} {both}");
        for name in illegal_names() {
            assert!(!is_valid_topic_name(&name), "{name}");
        }
        let s = scenario().for_seed(3);
        assert!(s.subjects[0].subscribe_before.is_some());
        assert!(s.subjects.iter().all(|m| m.subscribe == [TOPIC]));
    }
}
