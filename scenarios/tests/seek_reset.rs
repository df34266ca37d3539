//! `seek-reset` (KAFKA-7703, the project's issue #24), in simulation mode: user seeks race held
//! ListOffsets / OffsetFetch / OffsetForLeaderEpoch answers; the last seek decides the position.
#![cfg(madsim)]

use scenarios::families::Protocol;
use scenarios::own::seek_reset::{self, Mode};
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;
use sim::history::{Entry, Event};

/// The seeks the checker judged: a `Seek` (position returned) after a `user seek` note.
fn judged_seeks(entries: &[Entry]) -> usize {
    let mut noted = false;
    let mut judged = 0;
    for e in entries.iter().filter(|e| e.subject == "c0") {
        match &e.event {
            Event::Note { text } if text.starts_with("user seek ") => noted = true,
            Event::Seek { .. } if noted => {
                judged += 1;
                noted = false;
            }
            _ => {}
        }
    }
    judged
}

/// The first seed of each mode.
fn seeds_per_mode() -> Vec<(Mode, u64)> {
    [
        Mode::AssignWithoutGroup,
        Mode::AssignWithGroup,
        Mode::Subscribe(Protocol::Classic),
        Mode::Subscribe(Protocol::Consumer),
    ]
    .into_iter()
    .map(|mode| {
        let seed = (0..).find(|s| seek_reset::draw(*s).mode == mode).unwrap();
        (mode, seed)
    })
    .collect()
}

#[test]
fn our_consumer_lets_the_last_seek_win_in_every_mode() {
    for (mode, seed) in seeds_per_mode() {
        let result = run_in_runtime(seek_reset::scenario, seed, SubjectKind::Consumer).unwrap();
        assert!(
            result.report.is_ok(),
            "{mode:?} seed {seed}:\n{}",
            result.report
        );
        let judged = judged_seeks(result.history.entries());
        assert!(
            judged >= 2,
            "{mode:?} seed {seed}: only {judged} seeks judged"
        );
    }
}

#[test]
fn a_seek_to_end_during_the_first_reset_resolves_to_the_log_end() {
    // The run: assign without a group, the first poll's EARLIEST lookup held, the
    // application seeks to the end meanwhile. The position is past every record acked before
    // the seek, and records are delivered from there, not from 0.
    let seed = (0..)
        .find(|s| {
            let d = seek_reset::draw(*s);
            d.mode == Mode::AssignWithoutGroup
                && d.hold_p >= 1.0
                && d.seeks.first().is_some_and(|s| {
                    s.position && s.to == scenarios::app::SeekTo::End && s.at_ms < d.hold_ms[0]
                })
        })
        .unwrap();
    let result = run_in_runtime(seek_reset::scenario, seed, SubjectKind::Consumer).unwrap();
    assert!(result.report.is_ok(), "seed {seed}:\n{}", result.report);
    let c0: Vec<&Entry> = result
        .history
        .entries()
        .iter()
        .filter(|e| e.subject == "c0")
        .collect();
    let (tp, position) = c0
        .iter()
        .find_map(|e| match &e.event {
            Event::Seek { tp, offset } => Some((tp.clone(), *offset)),
            _ => None,
        })
        .expect("the first seek resolved");
    assert!(
        position > 0,
        "seed {seed}: seek_to_end resolved to {position}"
    );
    let first = c0.iter().find_map(|e| match &e.event {
        Event::Delivered { tp: t, offset, .. } if *t == tp => Some(*offset),
        _ => None,
    });
    assert_eq!(first, Some(position), "seed {seed}");
}

#[test]
fn the_legacy_model_cannot_seek_so_nothing_is_judged() {
    // Kafka 3.1's model has no ListOffsets and no seek (its reset is offset 0 in place): the
    // pre-2.3 behaviour cannot be shown with it. Its subject refuses every seek. (The model
    // needs a group.id: a seed assigning with a group.)
    let seed = (0..)
        .find(|s| seek_reset::draw(*s).mode == Mode::AssignWithGroup)
        .unwrap();
    let result = run_in_runtime(seek_reset::scenario, seed, SubjectKind::Legacy).unwrap();
    let entries = result.history.entries();
    assert_eq!(judged_seeks(entries), 0);
    assert!(entries.iter().any(|e| matches!(&e.event,
        Event::Note { text } if text.starts_with("seek refused"))));
}
