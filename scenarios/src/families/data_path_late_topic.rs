//! **Family: data path — a subscribed topic created later** (the project's own, issue #27; no
//! Jira). The group subscribes by name to a topic that exists and to one that does not exist
//! yet — "subscribe before the topic exists", an everyday deployment order — and the topic is
//! created while the group consumes, with records produced to it from then on.
//!
//! **Interleavings aimed at.** Under the classic protocol the leader assigns from metadata
//! that lacks the late topic (it waits a bounded time for metadata of topics it has never
//! seen, then assigns without them); the topic's creation lands anywhere in the group's life:
//! before the first assignment, between rebalances, during a rebalance started by a member
//! joining late, or while the leader's metadata refresh (`metadata.max.age.ms` 1 or 3 s here)
//! is in flight. Under KIP-848 the coordinator notices the topic itself. Per seed: the
//! protocol, the classic assignor (all four), the session timeout, the commit policy, the
//! metadata age, when the topic is created and with how many partitions, when the last member
//! joins, the listeners' slowness and the network latency.
//!
//! **Invariants.** The full set ([`super::full_checks`]): in particular every acked record of
//! both topics is delivered, in order per partition, duplicates only within the
//! at-least-once bound; plus every partition of the late topic is owned by some member within
//! [`COVERAGE_WITHIN_MS`] of its creation ([`PatternCoverage`] with the subscribed names as
//! the predicate).
//!
//! **Why our design should hold.** The classic leader keeps a metadata snapshot of every topic
//! the group subscribes to — also those missing from the metadata — and rejoins when it
//! differs from the one it assigned from (Java's `assignmentSnapshot` / `metadataSnapshot` in
//! `ConsumerCoordinator.rejoinNeededOrPending`; `membership/classic/leader.rs`,
//! `metadata_snapshot`). Before that fix the leader only re-checked the topics it had
//! assigned, and the late topic was never consumed.

use sim::fault::Fault;

use super::{
    between, coin, draw_listener, full_checks, group_builder, knob_rng, latency_until, pick,
    GroupKnobs, Protocol, TOPIC,
};
use crate::checks::PatternCoverage;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-data-path-late-topic";

const SALT: u64 = 0x6c61_7465_746f;
/// The topic created during the run.
pub const LATE: &str = "late";
const TOPIC_PARTITIONS: i32 = 3;
const MEMBERS: usize = 3;
pub const COVERAGE_WITHIN_MS: u64 = 20_000;
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 45_000;
const RUN_MS: u64 = 70_000;

/// The group's subscription, as a predicate on topic names.
fn subscribed(topic: &str) -> bool {
    topic == TOPIC || topic == LATE
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateTopic {
    pub group: GroupKnobs,
    /// Classic `partition.assignment.strategy`, drawn from all four assignors.
    pub assignor: &'static str,
    pub metadata_max_age_ms: u64,
    pub create_ms: u64,
    pub late_partitions: i32,
    /// Per member: start time and listener.
    pub members: Vec<(u64, ListenerBehaviour)>,
    pub latency_max_ms: u64,
    pub healed_at_ms: u64,
}

pub fn draw(seed: u64) -> LateTopic {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let assignor = pick(
        &mut rng,
        &["range", "roundrobin", "sticky", "cooperative-sticky"],
    );
    let metadata_max_age_ms = pick(&mut rng, &[1_000, 3_000]);
    let create_ms = between(&mut rng, 2_000, 20_000);
    let late_partitions = pick(&mut rng, &[1, 2, 4]);
    let mut members = Vec::new();
    for i in 0..MEMBERS {
        let start = if i < 2 || coin(&mut rng) {
            0
        } else {
            between(&mut rng, 3_000, 22_000)
        };
        members.push((start, draw_listener(&mut rng, 1_000)));
    }
    let last = members
        .iter()
        .map(|(start, _)| *start)
        .chain([create_ms])
        .max()
        .unwrap_or(0);
    LateTopic {
        group,
        assignor,
        metadata_max_age_ms,
        create_ms,
        late_partitions,
        members,
        latency_max_ms: between(&mut rng, 2, 40),
        healed_at_ms: last + 1,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let late = draw(seed);
    for (spec, (start, listener)) in scenario.subjects.iter_mut().zip(late.members) {
        late.group.apply(spec);
        if late.group.protocol == Protocol::Classic {
            super::set(spec, "partition.assignment.strategy", late.assignor);
        }
        super::set(
            spec,
            "metadata.max.age.ms",
            &late.metadata_max_age_ms.to_string(),
        );
        spec.subscribe = vec![TOPIC.to_owned(), LATE.to_owned()];
        spec.start_ms = start;
        spec.listener = listener;
    }
}

fn plan(seed: u64) -> PlannedFaults {
    let late = draw(seed);
    let mut planned = latency_until(late.latency_max_ms, late.healed_at_ms);
    planned.plan.push((
        late.create_ms,
        Fault::CreateTopic {
            topic: LATE.to_owned(),
            partitions: late.late_partitions,
        },
    ));
    planned.plan.sort_by_key(|(at_ms, _)| *at_ms);
    planned
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS).with(PatternCoverage {
        matches: subscribed,
        within_ms: COVERAGE_WITHIN_MS,
    })
}

pub fn scenario() -> Scenario {
    group_builder(NAME, "a subscribed topic created after the group formed, either protocol, every classic assignor: every acked record delivered in order, the new partitions owned", TOPIC_PARTITIONS, MEMBERS, &[TOPIC, LATE])
        .producer("p0", TOPIC, 20, PRODUCE_UNTIL_MS)
        .producer("p1", LATE, 20, PRODUCE_UNTIL_MS)
        .faults(FaultSource::Fixed(plan))
        .run_ms(RUN_MS)
        .checks(checks)
        .vary(vary)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_topic_is_created_before_the_heal_and_leaves_time_to_settle() {
        let mut assignors = std::collections::BTreeSet::new();
        for seed in 0..100 {
            let l = draw(seed);
            assert!(l.create_ms < l.healed_at_ms, "seed {seed}");
            assert!(l.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS, "seed {seed}");
            assert!(l.healed_at_ms < PRODUCE_UNTIL_MS);
            assignors.insert(l.assignor);
        }
        assert_eq!(assignors.len(), 4, "every classic assignor is drawn");
        let s = scenario().for_seed(4);
        assert!(s
            .subjects
            .iter()
            .all(|m| m.subscribe == vec![TOPIC.to_owned(), LATE.to_owned()]));
    }
}
