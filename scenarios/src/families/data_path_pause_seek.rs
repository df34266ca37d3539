//! **Family: data path — pause/resume and seeks with fetches in flight** (the project's own,
//! issue #27; no Jira), under each way the application takes records: `poll`, `recv` and
//! `stream`.
//!
//! **Interleavings aimed at.** The brokers hold a share of Fetch answers for a while, so the
//! application's `pause`, `resume` and `seek` land while a fetch of that partition is in
//! flight, while its records sit in the fetch buffer, or (under `recv`/`stream`) while the
//! consumer holds records of it that the application has not taken yet. Seeks go back, to the
//! beginning, to the end, and forward within the log. Per seed: the protocol and commit policy,
//! the drive mode, one or two members, the held share and hold time of Fetch answers, the
//! pauses (partition, when, how long) and the seeks (partition, when, where).
//!
//! **Invariants** ([`data_path_checks`] and [`UserSeekWins`]): every acked record delivered
//! once and in order per partition, except what a seek forward skipped and what a seek back
//! re-delivers; once `position` returns after a seek it is where the seek pointed and the next
//! record comes from there. A pause loses nothing: what the consumer held or buffered for the
//! paused partition comes after the resume (issue #27, bug 2). Plus the group invariants.
//!
//! **Why our design should hold.** A fetch answer is applied only to the fetch state it was
//! sent for: a seek or a pause in between makes it stale and it is dropped (Java's
//! `FetchCollector` checks `isFetchable` and the position); records `recv` holds for a paused
//! partition stay held, since the position is already past them.

use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};
use sim::history::Tp;

use super::data_path::{apply_members, data_path_checks, draw_drive};
use super::{between, coin, draw_listener, group_builder, knob_rng, pick, GroupKnobs, TOPIC};
use crate::app::{DriveMode, SeekTo, UserPause, UserSeek};
use crate::checks::UserSeekWins;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-data-path-pause-seek";

const SALT: u64 = 0x7061_7573_6565;
const FETCH: i16 = 1;
const PARTITIONS: i32 = 3;
const MEMBERS: usize = 2;
const PRODUCE_EVERY_MS: u64 = 20;
const ACTIONS_FROM_MS: u64 = 4_000;
const ACTIONS_UNTIL_MS: u64 = 12_000;
const PRODUCE_UNTIL_MS: u64 = 14_000;
const RUN_MS: u64 = 22_000;

/// One seed's draw.
#[derive(Debug, Clone, PartialEq)]
pub struct PauseSeek {
    pub group: GroupKnobs,
    pub drive: DriveMode,
    pub members: usize,
    pub listeners: Vec<ListenerBehaviour>,
    /// Share of Fetch answers held, and for how long.
    pub hold_p: f64,
    pub hold_ms: u64,
    pub pauses: Vec<UserPause>,
    pub seeks: Vec<UserSeek>,
}

pub fn draw(seed: u64) -> PauseSeek {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let drive = draw_drive(&mut rng);
    let members = if coin(&mut rng) { 1 } else { MEMBERS };
    let listeners = (0..MEMBERS).map(|_| draw_listener(&mut rng, 300)).collect();
    let mut pauses = Vec::new();
    for _ in 0..between(&mut rng, 1, 4) {
        pauses.push(UserPause {
            at_ms: between(&mut rng, ACTIONS_FROM_MS, ACTIONS_UNTIL_MS),
            partitions: vec![Tp::new(TOPIC, pick(&mut rng, &[0, 1, 2]))],
            for_ms: between(&mut rng, 100, 2_500),
        });
    }
    pauses.sort_by_key(|p| p.at_ms);
    let mut seeks = Vec::new();
    for _ in 0..between(&mut rng, 1, 4) {
        let at_ms = between(&mut rng, ACTIONS_FROM_MS, ACTIONS_UNTIL_MS);
        // Offsets the log has by then (a record every 20 ms over three partitions).
        let written = (at_ms / PRODUCE_EVERY_MS / PARTITIONS as u64) as i64;
        let to = match rng.below_inclusive(4) {
            0 => SeekTo::Beginning,
            1 => SeekTo::End,
            2 => SeekTo::Offset {
                offset: written / 2,
                leader_epoch: None,
            },
            3 => SeekTo::Offset {
                offset: (written - 5).max(0),
                leader_epoch: None,
            },
            _ => SeekTo::Offset {
                offset: (written - 40).max(0),
                leader_epoch: Some(0),
            },
        };
        seeks.push(UserSeek {
            at_ms,
            tp: Tp::new(TOPIC, pick(&mut rng, &[0, 1, 2])),
            to,
            position: true,
        });
    }
    seeks.sort_by_key(|s| s.at_ms);
    PauseSeek {
        group,
        drive,
        members,
        listeners,
        hold_p: pick(&mut rng, &[0.2, 0.5]),
        hold_ms: between(&mut rng, 50, 700),
        pauses,
        seeks,
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
        "earliest",
    );
    for spec in members {
        // Every member tries them; only the owner of the partition at the time can.
        spec.pauses = d.pauses.clone();
        spec.seeks = d.seeks.clone();
    }
}

fn plan(seed: u64) -> PlannedFaults {
    let d = draw(seed);
    let hold = Fault::Response(ResponseRule {
        api_key: FETCH,
        broker: None,
        trigger: Trigger::Probability(d.hold_p),
        action: ResponseAction::Hold {
            delay_ms: d.hold_ms,
        },
    });
    PlannedFaults {
        plan: vec![
            (0, hold),
            (
                ACTIONS_UNTIL_MS + 2_500,
                Fault::ClearResponses {
                    api_key: Some(FETCH),
                },
            ),
        ],
        healed_at_ms: ACTIONS_UNTIL_MS + 2_500,
    }
}

fn checks() -> sim::check::CheckerSet {
    data_path_checks().with(UserSeekWins)
}

pub fn scenario() -> Scenario {
    group_builder(NAME, "pause/resume and seeks while fetches are in flight, with poll, recv or stream: nothing lost or repeated beyond what the seeks ask for", PARTITIONS, MEMBERS, &[TOPIC])
        .producer("p0", TOPIC, PRODUCE_EVERY_MS, PRODUCE_UNTIL_MS)
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
    fn the_seeds_cover_every_drive_and_kind_of_seek() {
        let draws: Vec<PauseSeek> = (0..100).map(draw).collect();
        for drive in [DriveMode::Poll, DriveMode::Recv, DriveMode::Stream] {
            assert!(draws.iter().any(|d| d.drive == drive));
        }
        assert!(draws
            .iter()
            .any(|d| d.seeks.iter().any(|s| s.to == SeekTo::End)));
        assert!(draws
            .iter()
            .any(|d| d.seeks.iter().any(|s| s.to == SeekTo::Beginning)));
        for d in &draws {
            assert!(!d.pauses.is_empty() && !d.seeks.is_empty());
            assert!(d
                .pauses
                .iter()
                .all(|p| p.at_ms + p.for_ms <= ACTIONS_UNTIL_MS + 2_500));
        }
    }
}
