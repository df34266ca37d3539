//! **Family: data path — an unclean leader election truncates what the consumer read** (the
//! project's own, issue #27; KIP-101, KIP-320). An out-of-sync replica becomes leader
//! (`unclean.leader.election.enable`): its log is a prefix of the old leader's, so records the
//! consumer has already read — acknowledged ones — are gone, and new records take their
//! offsets with the new leader epoch.
//!
//! **Interleavings aimed at.** The election lands while the consumer's position is past the new
//! log end: its next fetch carries `last_fetched_epoch` of the old epoch (the broker answers with
//! a diverging epoch), or its metadata shows the new epoch first and it validates the position
//! with OffsetForLeaderEpoch; records of the lost tail may still sit in its buffer or be held by
//! `recv`/`stream`. Per seed: the protocol and commit policy, `auto.offset.reset` (earliest,
//! latest, none), how the application takes records, one or two elections (partition, time,
//! how many records lost).
//!
//! **Invariants** ([`data_path_checks`]): the records lost with the old leader's tail are
//! excused (the `truncated` fact), a stale read of them included; every record acked after the
//! election — at the reused offsets — is delivered once and in order, whatever the policy (Java
//! moves the position to the divergence point under earliest and latest alike); under `none`
//! `poll` fails with LOG_TRUNCATION, `position()` still answers the position it had (checked),
//! and the application seeks to the beginning. Plus the group invariants.
//!
//! **Why our design should hold.** The consumer validates its position when the leader epoch
//! changes and handles a Fetch diverging-epoch answer the same way (issue #27, bug 4): the
//! position moves to the end offset of the last epoch both logs share, or, with `none`,
//! `Error::LogTruncation` is raised and the position kept.

use sim::fault::Fault;

use super::data_path::{data_path_checks, draw_drive, ResetPolicy};
use super::{
    between, draw_listener, knob_rng, latency_until, pick, GroupKnobs, BROKERS, GROUP,
    KIP848_HEARTBEAT_MS, KIP848_SESSION_MS, TOPIC,
};
use crate::app::{AppBehaviour, DriveMode, SeekTo};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-data-path-unclean-election";

const SALT: u64 = 0x756e_636c_6e21;
const PARTITIONS: i32 = 2;
const PRODUCE_UNTIL_MS: u64 = 16_000;
const RUN_MS: u64 = 24_000;

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncleanElection {
    pub group: GroupKnobs,
    pub policy: ResetPolicy,
    pub drive: DriveMode,
    pub listener: ListenerBehaviour,
    /// (at_ms, partition, records lost).
    pub elections: Vec<(u64, i32, i64)>,
    pub latency_max_ms: u64,
}

pub fn draw(seed: u64) -> UncleanElection {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let policy = pick(
        &mut rng,
        &[
            ResetPolicy::Earliest,
            ResetPolicy::Latest,
            ResetPolicy::None,
        ],
    );
    let drive = draw_drive(&mut rng);
    let listener = draw_listener(&mut rng, 300);
    let mut elections = Vec::new();
    let mut at_ms = between(&mut rng, 6_000, 9_000);
    for _ in 0..between(&mut rng, 1, 2) {
        elections.push((
            at_ms,
            pick(&mut rng, &[0, 1]),
            pick(&mut rng, &[1, 3, 10, 40]),
        ));
        at_ms += between(&mut rng, 2_000, 4_000);
    }
    UncleanElection {
        group,
        policy,
        drive,
        listener,
        elections,
        latency_max_ms: between(&mut rng, 1, 20),
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let d = draw(seed);
    for spec in &mut scenario.subjects {
        d.group.apply(spec);
        super::set(spec, "auto.offset.reset", d.policy.name());
        super::set(spec, "metadata.max.age.ms", "2000");
        spec.listener = d.listener;
        spec.drive = d.drive;
        spec.on_reset_error = (d.policy == ResetPolicy::None).then_some(SeekTo::Beginning);
    }
}

fn plan(seed: u64) -> PlannedFaults {
    let d = draw(seed);
    let healed_at_ms = d.elections.last().map_or(0, |(at, ..)| *at) + 1_000;
    let mut planned = latency_until(d.latency_max_ms, healed_at_ms);
    for (at_ms, partition, lost_records) in &d.elections {
        planned.plan.push((
            *at_ms,
            Fault::UncleanLeaderElection {
                topic: TOPIC.to_owned(),
                partition: *partition,
                lost_records: *lost_records,
            },
        ));
    }
    planned.plan.sort_by_key(|(at_ms, _)| *at_ms);
    planned
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "an unclean leader election truncates records the consumer read, under earliest, latest and none, poll/recv/stream: only the lost tail missing, the new records at the reused offsets delivered, the position kept under none",
    )
    .brokers(BROKERS as usize)
    .topic(TOPIC, PARTITIONS)
    .offsets_partitions(1)
    .kip848_timeouts_ms(KIP848_HEARTBEAT_MS, KIP848_SESSION_MS)
    .subscribing_consumer("c0", &[("group.id", GROUP)], &[TOPIC], AppBehaviour::default())
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

    #[test]
    fn the_seeds_cover_every_policy_and_the_elections_end_before_production() {
        let draws: Vec<UncleanElection> = (0..100).map(draw).collect();
        for policy in [
            ResetPolicy::Earliest,
            ResetPolicy::Latest,
            ResetPolicy::None,
        ] {
            assert!(draws.iter().any(|d| d.policy == policy), "{policy:?}");
        }
        for d in &draws {
            assert!(d
                .elections
                .iter()
                .all(|(at, ..)| *at + 2_000 < PRODUCE_UNTIL_MS));
        }
    }
}
