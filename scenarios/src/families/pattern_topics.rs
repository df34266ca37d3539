//! **Family: pattern topics** — a group subscribed to a pattern while the cluster's topics
//! change under it: a matching topic grows partitions, a new matching topic appears, a
//! subscribed topic is deleted, and a topic that does not match is there all along.
//!
//! **Interleavings aimed at.** A pattern subscription is re-evaluated on every metadata
//! refresh (`metadata.max.age.ms` 1 s here), so each change lands in the middle of whatever
//! the group is doing: classic members rejoin when the matched topics or their partition
//! counts change (the leader assigns from metadata that may already be stale), KIP-848 members
//! send the new topic list in their heartbeat and the coordinator refreshes its subscription
//! metadata; a deleted topic's partitions must be given up while the commit before the
//! revocation fails for them (KAFKA-16224's mechanism), and a member joining late sees a
//! different topic set than the first ones did. Per seed: the protocol, the classic assignor
//! and session timeout, the commit policy, when each change happens, when the third member
//! joins, the listeners' slowness, a panicking listener call and the network latency.
//!
//! **Invariants.** The full set ([`super::full_checks`]; records of the deleted topic are owed
//! to nobody), plus: every partition of a matching topic created or grown is owned by some
//! member within 15 s of the last change, and none of the non-matching topic ever is
//! ([`PatternCoverage`]); the deleted topic's partitions are given up within 15 s
//! ([`RevocationFinishes`]).
//!
//! **Why our design should hold.** Both membership managers match the pattern again against
//! the latest metadata on every round of the background task
//! (`internals/membership/mod.rs`, `match_pattern_subscription`; the KIP-848 one did not
//! before this family found it) and rejoin (classic) or send the new topics with the next
//! heartbeat (KIP-848) when the set changes; the classic leader tracks the partition counts of
//! the topics it assigned and rejoins when one changes, as Java's `ConsumerCoordinator` does.

use sim::fault::Fault;

use super::{
    between, coin, draw_listener, draw_listener_panic, full_checks, knob_rng, latency_until,
    GroupKnobs, BROKERS, GROUP, KIP848_HEARTBEAT_MS, KIP848_SESSION_MS,
};
use crate::app::AppBehaviour;
use crate::checks::{PatternCoverage, RevocationFinishes};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-pattern-topics";

const SALT: u64 = 0x0070_6174_7465;
const PATTERN: &str = "t-.*";
/// Grows from 4 to 6 partitions.
const GROWN: &str = "t-a";
const GROWN_TO: i32 = 6;
/// Deleted.
const DOOMED: &str = "t-b";
/// Created during the run.
const CREATED: &str = "t-c";
const CREATED_PARTITIONS: i32 = 3;
/// Never matches the pattern.
const OTHER: &str = "x";
const MEMBERS: usize = 3;
const COVERAGE_WITHIN_MS: u64 = 15_000;
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 50_000;
const RUN_MS: u64 = 75_000;

/// Whether the group's pattern matches `topic`.
fn matches_pattern(topic: &str) -> bool {
    topic.starts_with("t-")
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicChanges {
    pub group: GroupKnobs,
    pub grow_ms: u64,
    pub create_ms: u64,
    pub delete_ms: u64,
    /// Per member: start time and listener.
    pub members: Vec<(u64, ListenerBehaviour)>,
    pub latency_max_ms: u64,
    pub healed_at_ms: u64,
}

pub fn draw(seed: u64) -> TopicChanges {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let grow_ms = between(&mut rng, 8_000, 16_000);
    let create_ms = between(&mut rng, 8_000, 18_000);
    let delete_ms = between(&mut rng, 10_000, 20_000);
    let mut members = Vec::new();
    for i in 0..MEMBERS {
        let start = if i < 2 || coin(&mut rng) {
            0
        } else {
            between(&mut rng, 5_000, 22_000)
        };
        members.push((start, draw_listener(&mut rng, 1_500)));
    }
    if let Some((member, call)) = draw_listener_panic(seed, SALT, members.len()) {
        members[member].1.panic_on_call = Some(call);
    }
    let last = [grow_ms, create_ms, delete_ms]
        .into_iter()
        .chain(members.iter().map(|(start, _)| *start))
        .max()
        .unwrap_or(0);
    TopicChanges {
        group,
        grow_ms,
        create_ms,
        delete_ms,
        members,
        latency_max_ms: between(&mut rng, 2, 40),
        healed_at_ms: last + 1,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let changes = draw(seed);
    for (spec, (start, listener)) in scenario.subjects.iter_mut().zip(changes.members) {
        changes.group.apply(spec);
        super::set(spec, "metadata.max.age.ms", "1000");
        spec.subscribe = Vec::new();
        spec.subscribe_pattern = Some(PATTERN.to_owned());
        spec.start_ms = start;
        spec.listener = listener;
    }
}

fn plan(seed: u64) -> PlannedFaults {
    let changes = draw(seed);
    let mut planned = latency_until(changes.latency_max_ms, changes.healed_at_ms);
    planned.plan.extend([
        (
            changes.grow_ms,
            Fault::CreatePartitions {
                topic: GROWN.to_owned(),
                count: GROWN_TO,
            },
        ),
        (
            changes.create_ms,
            Fault::CreateTopic {
                topic: CREATED.to_owned(),
                partitions: CREATED_PARTITIONS,
            },
        ),
        (
            changes.delete_ms,
            Fault::DeleteTopic {
                topic: DOOMED.to_owned(),
            },
        ),
    ]);
    planned.plan.sort_by_key(|(at_ms, _)| *at_ms);
    planned
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS)
        .with(PatternCoverage {
            matches: matches_pattern,
            within_ms: COVERAGE_WITHIN_MS,
        })
        .with(RevocationFinishes {
            within_ms: COVERAGE_WITHIN_MS,
        })
}

pub fn scenario() -> Scenario {
    let mut builder = Scenario::builder(
        NAME,
        "a pattern subscription while a matching topic grows, a new one appears and one is deleted, either protocol: full checker set",
    )
    .brokers(BROKERS as usize)
    .topic(GROWN, 4)
    .topic(DOOMED, 3)
    .topic(OTHER, 2)
    .offsets_partitions(1)
    .kip848_timeouts_ms(KIP848_HEARTBEAT_MS, KIP848_SESSION_MS);
    for i in 0..MEMBERS {
        builder = builder.subscribing_consumer(
            &format!("c{i}"),
            &[("group.id", GROUP)],
            &[GROWN],
            AppBehaviour::default(),
        );
    }
    builder
        .producer("p0", GROWN, 20, PRODUCE_UNTIL_MS)
        .producer("p1", DOOMED, 20, PRODUCE_UNTIL_MS)
        .producer("p2", OTHER, 20, PRODUCE_UNTIL_MS)
        .producer("p3", CREATED, 20, PRODUCE_UNTIL_MS)
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
    fn every_change_happens_before_the_heal_and_leaves_time_to_settle() {
        let mut late_joiners = 0;
        for seed in 0..100 {
            let c = draw(seed);
            for at in [c.grow_ms, c.create_ms, c.delete_ms] {
                assert!(at < c.healed_at_ms, "seed {seed}");
            }
            late_joiners += usize::from(c.members.iter().any(|(start, _)| *start > 0));
            assert!(c.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS, "seed {seed}");
            assert!(c.healed_at_ms < PRODUCE_UNTIL_MS);
        }
        assert!(late_joiners > 30, "{late_joiners}");
        let s = scenario().for_seed(4);
        assert!(s
            .subjects
            .iter()
            .all(|m| m.subscribe_pattern.as_deref() == Some(PATTERN) && m.subscribe.is_empty()));
        assert!(matches_pattern(GROWN) && matches_pattern(CREATED) && !matches_pattern(OTHER));
    }
}
