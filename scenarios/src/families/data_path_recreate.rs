//! **Family: data path — a subscribed topic deleted and created again** (the project's own,
//! issue #27; no Jira). The group consumes a topic that is deleted while it consumes and
//! created again with the same name a few seconds later (a redeployment, a topic reset by an
//! operator); records are produced to the new topic from then on.
//!
//! **Interleavings aimed at.** The deletion lands while fetches of the topic are in flight and
//! records of it are buffered or held by `recv`/`stream`; the group notices the topic gone
//! (classic: the leader's metadata snapshot; KIP-848: the coordinator) and then notices it back
//! — with a new topic id, offsets from 0, and no committed offsets (the coordinator removed
//! them with the topic). Per seed: the protocol and commit policy, `auto.offset.reset`
//! (earliest, latest), how the application takes records, one or two members, the metadata
//! age, when the topic is deleted, how long it stays away, and its new partition count.
//!
//! **Invariants** ([`data_path_checks`]): every record acked to the new topic is delivered once
//! and in order (under `latest`, after the one reset that the re-creation made due, from where
//! it landed); records of the deleted topic are excused only because it was deleted (the
//! `topic-deleted` fact); no record is delivered as another incarnation's (each delivered value
//! is the one acked at that partition and offset). Plus the group invariants.
//!
//! **Why our design should hold.** The classic leader keeps a metadata snapshot of every
//! subscribed topic, also those missing, and rejoins when it changes (issue #27, bug 1); the
//! coordinator removes the committed offsets of a deleted topic as Kafka does
//! (`sim/src/group/shard/deleted_topics.rs`), so the re-created partitions start by the reset
//! policy, not at an offset of the old log.

use sim::fault::Fault;

use super::data_path::{apply_members, data_path_checks, draw_drive, ResetPolicy};
use super::{
    between, coin, draw_listener, group_builder, knob_rng, latency_until, pick, GroupKnobs, TOPIC,
};
use crate::app::DriveMode;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-data-path-recreate";

const SALT: u64 = 0x7265_6372_6561;
const PARTITIONS: i32 = 2;
const MEMBERS: usize = 2;
const PRODUCE_UNTIL_MS: u64 = 18_000;
const RUN_MS: u64 = 30_000;

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recreate {
    pub group: GroupKnobs,
    pub policy: ResetPolicy,
    pub drive: DriveMode,
    pub members: usize,
    pub listeners: Vec<ListenerBehaviour>,
    pub metadata_max_age_ms: u64,
    pub delete_ms: u64,
    pub away_ms: u64,
    pub new_partitions: i32,
    pub latency_max_ms: u64,
}

pub fn draw(seed: u64) -> Recreate {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let policy = pick(&mut rng, &[ResetPolicy::Earliest, ResetPolicy::Latest]);
    let drive = draw_drive(&mut rng);
    let members = if coin(&mut rng) { 1 } else { MEMBERS };
    let listeners = (0..MEMBERS).map(|_| draw_listener(&mut rng, 300)).collect();
    Recreate {
        group,
        policy,
        drive,
        members,
        listeners,
        metadata_max_age_ms: pick(&mut rng, &[1_000, 3_000]),
        delete_ms: between(&mut rng, 5_000, 9_000),
        away_ms: between(&mut rng, 3_000, 6_000),
        new_partitions: pick(&mut rng, &[PARTITIONS, PARTITIONS + 1]),
        latency_max_ms: between(&mut rng, 1, 20),
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let d = draw(seed);
    let members = apply_members(
        scenario,
        d.members,
        &d.group,
        &d.listeners,
        d.drive,
        d.policy.name(),
    );
    for spec in members {
        super::set(
            spec,
            "metadata.max.age.ms",
            &d.metadata_max_age_ms.to_string(),
        );
    }
}

fn plan(seed: u64) -> PlannedFaults {
    let d = draw(seed);
    let created_ms = d.delete_ms + d.away_ms;
    let mut planned = latency_until(d.latency_max_ms, created_ms + 1);
    planned.plan.push((
        d.delete_ms,
        Fault::DeleteTopic {
            topic: TOPIC.to_owned(),
        },
    ));
    planned.plan.push((
        created_ms,
        Fault::CreateTopic {
            topic: TOPIC.to_owned(),
            partitions: d.new_partitions,
        },
    ));
    planned.plan.sort_by_key(|(at_ms, _)| *at_ms);
    planned
}

pub fn scenario() -> Scenario {
    group_builder(NAME, "a subscribed topic deleted and created again, earliest or latest, poll/recv/stream: the new topic's records delivered once in order, nothing of the old one taken for the new", PARTITIONS, MEMBERS, &[TOPIC])
        .producer("p0", TOPIC, 20, PRODUCE_UNTIL_MS)
        .faults(FaultSource::Fixed(plan))
        .run_ms(RUN_MS)
        .checks(data_path_checks)
        .vary(vary)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::Protocol;

    #[test]
    fn the_topic_comes_back_before_production_ends() {
        let draws: Vec<Recreate> = (0..200).map(draw).collect();
        for d in &draws {
            assert!(d.delete_ms + d.away_ms + 3_000 < PRODUCE_UNTIL_MS);
        }
        for protocol in [Protocol::Classic, Protocol::Consumer] {
            for policy in [ResetPolicy::Earliest, ResetPolicy::Latest] {
                assert!(draws
                    .iter()
                    .any(|d| d.group.protocol == protocol && d.policy == policy));
            }
        }
    }
}
