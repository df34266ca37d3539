//! **Family: data path — DeleteRecords moves the log start past the position** (the project's
//! own, issue #27; no Jira). The group consumes while DeleteRecords (retention, an operator)
//! moves a partition's log start, under each `auto.offset.reset`.
//!
//! **Interleavings aimed at.** The application pauses a partition for a while (fetches of it
//! may be in flight; `recv`/`stream` may hold its records), records pile up behind its
//! position, and the log start moves: past the position (the next fetch answers
//! OFFSET_OUT_OF_RANGE), to just below it (no reset is due), or past the high watermark
//! (capped there). Then it resumes. Per seed: the protocol and commit policy, the reset policy
//! (earliest, latest, none), how the application takes records (`poll`, `recv`, `stream`), one
//! or two members, one to three deletions (partition, time, how far), and the pauses around
//! them.
//!
//! **Invariants** ([`data_path_checks`]): every acked record is delivered once and in order
//! unless a documented event explains it — under `earliest` only the deleted records are
//! missing (the position moves to the new log start); under `latest` also what the one due
//! reset jumped over; under `none` nothing moves by itself: `poll` fails with
//! OFFSET_OUT_OF_RANGE naming the position, `position()` still answers it (checked), and the
//! application seeks to the beginning. Plus the group invariants.
//!
//! **Why our design should hold.** The fetch manager turns OFFSET_OUT_OF_RANGE into a reset by
//! the policy (Java's `handleOffsetOutOfRange`); with `none` it keeps the position and raises
//! the typed error again on each poll until the application seeks (issue #27, bug 3). Records
//! `recv` holds for a paused partition stay held (bug 2).

use sim::fault::Fault;
use sim::history::Tp;

use super::data_path::{apply_members, data_path_checks, draw_drive, ResetPolicy};
use super::{
    between, coin, draw_listener, group_builder, knob_rng, latency_until, pick, GroupKnobs, TOPIC,
};
use crate::app::{DriveMode, SeekTo, UserPause};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-data-path-delete-records";

const SALT: u64 = 0x6465_6c72_6563;
const PARTITIONS: i32 = 2;
const MEMBERS: usize = 2;
/// One record every this many ms, round-robin over the partitions.
const PRODUCE_EVERY_MS: u64 = 20;
const PRODUCE_UNTIL_MS: u64 = 16_000;
const RUN_MS: u64 = 24_000;

/// One DeleteRecords and the pause that lets records pile up before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletion {
    pub at_ms: u64,
    pub partition: i32,
    /// How far below the log end (as produced by `at_ms`) the new log start lands; negative:
    /// past the log end (capped at the high watermark).
    pub below_end: i64,
    /// The application pauses the partition this long before the deletion…
    pub paused_before_ms: u64,
    /// …and resumes it this long after.
    pub resumed_after_ms: u64,
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteRecords {
    pub group: GroupKnobs,
    pub policy: ResetPolicy,
    pub drive: DriveMode,
    pub members: usize,
    pub listeners: Vec<ListenerBehaviour>,
    pub deletions: Vec<Deletion>,
    pub latency_max_ms: u64,
}

pub fn draw(seed: u64) -> DeleteRecords {
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
    let members = if coin(&mut rng) { 1 } else { MEMBERS };
    let listeners = (0..MEMBERS).map(|_| draw_listener(&mut rng, 300)).collect();
    let mut deletions = Vec::new();
    let mut at_ms = between(&mut rng, 6_000, 8_000);
    for _ in 0..between(&mut rng, 1, 3) {
        deletions.push(Deletion {
            at_ms,
            partition: pick(&mut rng, &[0, 1]),
            below_end: pick(&mut rng, &[-20, 0, 5, 20, 60, 200]),
            paused_before_ms: between(&mut rng, 0, 2_500),
            resumed_after_ms: between(&mut rng, 0, 1_000),
        });
        at_ms += between(&mut rng, 2_500, 3_500);
    }
    DeleteRecords {
        group,
        policy,
        drive,
        members,
        listeners,
        deletions,
        latency_max_ms: between(&mut rng, 1, 20),
    }
}

/// The log end of a partition by `at_ms`, as the producer writes it (round-robin from 0).
fn log_end_by(at_ms: u64, partition: i32) -> i64 {
    let written = at_ms / PRODUCE_EVERY_MS + 1;
    let p = partition as u64;
    let per = PARTITIONS as u64;
    (written / per + u64::from(written % per > p)) as i64
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
        super::set(spec, "metadata.max.age.ms", "2000");
        // Under `none` the application decides: from the beginning, after every reset error.
        spec.on_reset_error = (d.policy == ResetPolicy::None).then_some(SeekTo::Beginning);
        spec.pauses = d
            .deletions
            .iter()
            .filter(|del| del.paused_before_ms > 0)
            .map(|del| UserPause {
                at_ms: del.at_ms - del.paused_before_ms,
                partitions: vec![Tp::new(TOPIC, del.partition)],
                for_ms: del.paused_before_ms + del.resumed_after_ms,
            })
            .collect();
    }
}

fn plan(seed: u64) -> PlannedFaults {
    let d = draw(seed);
    let healed_at_ms = d.deletions.last().map_or(0, |del| del.at_ms) + 1_500;
    let mut planned = latency_until(d.latency_max_ms, healed_at_ms);
    for del in &d.deletions {
        let before_offset = (log_end_by(del.at_ms, del.partition) - del.below_end).max(0);
        planned.plan.push((
            del.at_ms,
            Fault::DeleteRecords {
                topic: TOPIC.to_owned(),
                partition: del.partition,
                before_offset,
            },
        ));
    }
    planned.plan.sort_by_key(|(at_ms, _)| *at_ms);
    planned
}

pub fn scenario() -> Scenario {
    group_builder(NAME, "DeleteRecords moves the log start past the position under earliest, latest and none, with poll, recv or stream: only deleted (or reset-skipped) records missing, the position kept under none", PARTITIONS, MEMBERS, &[TOPIC])
        .producer("p0", TOPIC, PRODUCE_EVERY_MS, PRODUCE_UNTIL_MS)
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
    fn the_seeds_cover_every_policy_drive_and_protocol() {
        let draws: Vec<DeleteRecords> = (0..200).map(draw).collect();
        for policy in [
            ResetPolicy::Earliest,
            ResetPolicy::Latest,
            ResetPolicy::None,
        ] {
            for drive in [DriveMode::Poll, DriveMode::Recv, DriveMode::Stream] {
                assert!(
                    draws.iter().any(|d| d.policy == policy && d.drive == drive),
                    "{policy:?} {drive:?}"
                );
            }
        }
        for protocol in [Protocol::Classic, Protocol::Consumer] {
            assert!(draws.iter().any(|d| d.group.protocol == protocol));
        }
        for d in &draws {
            let last = d.deletions.last().unwrap();
            assert!(last.at_ms + last.resumed_after_ms < PRODUCE_UNTIL_MS);
            assert!(d
                .deletions
                .iter()
                .all(|del| del.paused_before_ms < del.at_ms));
        }
    }

    #[test]
    fn the_log_end_model_matches_round_robin() {
        // Records 0..=5 by 100 ms: partition 0 gets 0, 2, 4; partition 1 gets 1, 3, 5.
        assert_eq!(log_end_by(100, 0), 3);
        assert_eq!(log_end_by(100, 1), 3);
        assert_eq!(log_end_by(80, 0), 3);
        assert_eq!(log_end_by(80, 1), 2);
    }
}
