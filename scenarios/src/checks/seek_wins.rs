//! The user's last seek wins: *after `seek`, `seekToBeginning` or `seekToEnd` and a `position`
//! that returns, the position is where that seek points and the partition's next records
//! start there* — no answer to a lookup made before the seek (the automatic reset's
//! ListOffsets, an OffsetFetch, an OffsetForLeaderEpoch, an earlier seek's ListOffsets) may
//! decide it (KAFKA-7703; the project's issue #24).
//!
//! Judged from what the application saw: the runner notes each seek before making it
//! ([`crate::app::seek_note`]) and records the position it resolved to as `Seek`. A seek to an
//! offset must resolve to that offset (a truncation found by validation may move it lower —
//! not in the scenarios using this checker, whose logs are never truncated); to the beginning,
//! to offset 0 (their log start never moves); to the end, to at least every record acked
//! before the seek was made. The first record of the partition delivered after it must be at
//! the resolved position. A refused seek or a failed `position` is not judged.

use std::collections::BTreeMap;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History, Tp};

#[derive(Clone, Debug, Default)]
pub struct UserSeekWins;

/// A seek noted and not yet resolved: what it asked for, and the log ends acked by then.
struct Pending {
    asked: String,
    kind: Asked,
    acked_end: BTreeMap<Tp, i64>,
}

#[derive(Clone, Copy)]
enum Asked {
    Beginning,
    End,
    Offset(i64),
}

fn parse(text: &str) -> Option<Asked> {
    let rest = text.strip_prefix("user seek ")?;
    if rest.ends_with(" beginning") {
        Some(Asked::Beginning)
    } else if rest.ends_with(" end") {
        Some(Asked::End)
    } else {
        let (_, offset) = rest.rsplit_once(" offset ")?;
        offset.parse().ok().map(Asked::Offset)
    }
}

impl Checker for UserSeekWins {
    fn name(&self) -> &'static str {
        "user-seek-wins"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        let mut acked_end: BTreeMap<Tp, i64> = BTreeMap::new();
        let mut pending: BTreeMap<&str, Pending> = BTreeMap::new();
        // Where each subject's next record of a partition must be, after a resolved seek.
        let mut expected: BTreeMap<(&str, Tp), (i64, String)> = BTreeMap::new();
        for e in history.entries() {
            let subject = e.subject.as_str();
            match &e.event {
                Event::ProduceAcked { tp, offset, .. } => {
                    let end = acked_end.entry(tp.clone()).or_default();
                    *end = (*end).max(offset + 1);
                }
                Event::Note { text } => {
                    if let Some(kind) = parse(text) {
                        pending.insert(
                            subject,
                            Pending {
                                asked: text.clone(),
                                kind,
                                acked_end: acked_end.clone(),
                            },
                        );
                    } else if text.starts_with("seek refused")
                        || text.starts_with("position failed")
                    {
                        pending.remove(subject);
                    }
                }
                Event::Seek { tp, offset } => {
                    let Some(p) = pending.remove(subject) else {
                        continue;
                    };
                    let acked = p.acked_end.get(tp).copied().unwrap_or(0);
                    let wrong = match p.kind {
                        Asked::Beginning => (*offset != 0).then(|| "the log start, 0".to_owned()),
                        Asked::Offset(asked) => (*offset != asked).then(|| asked.to_string()),
                        Asked::End => (*offset < acked).then(|| {
                            format!("the log end, at least {acked} (acked before the seek)")
                        }),
                    };
                    if let Some(wanted) = wrong {
                        out.push(
                            Violation::new(
                                ViolationKind::SeekOverridden,
                                e.at_ms,
                                format!(
                                    "{subject}: `{}` resolved to position {offset}, expected \
                                     {wanted}: an answer to a lookup made before the seek \
                                     decided the position",
                                    p.asked
                                ),
                            )
                            .subject(subject),
                        );
                    }
                    expected.insert((subject, tp.clone()), (*offset, p.asked));
                }
                Event::Delivered { tp, offset, .. } => {
                    let Some((position, asked)) = expected.remove(&(subject, tp.clone())) else {
                        continue;
                    };
                    if *offset != position {
                        out.push(
                            Violation::new(
                                ViolationKind::SeekOverridden,
                                e.at_ms,
                                format!(
                                    "{subject}: after `{asked}` the position was {position}, \
                                     but the next record delivered was at {offset}: the \
                                     position moved after the seek resolved"
                                ),
                            )
                            .subject(subject),
                        );
                    }
                }
                // A new assignment decides positions anew.
                Event::Assignment { .. } | Event::ManualAssign { .. } => {
                    expected.retain(|(s, _), _| *s != subject);
                }
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp() -> Tp {
        Tp::new("t", 0)
    }

    fn acked(offset: i64) -> Event {
        Event::ProduceAcked {
            tp: tp(),
            offset,
            value: format!("v{offset}"),
        }
    }

    fn note(text: &str) -> Event {
        Event::Note {
            text: text.to_owned(),
        }
    }

    fn seek(offset: i64) -> Event {
        Event::Seek { tp: tp(), offset }
    }

    fn delivered(offset: i64) -> Event {
        Event::Delivered {
            tp: tp(),
            offset,
            value: String::new(),
        }
    }

    #[test]
    fn seek_to_end_resolved_below_the_acked_end_breaks_it() {
        // The run: 66 records acked, seek_to_end, position 0.
        let history = History::from_events(vec![
            (10, "p0", acked(65)),
            (20, "c0", note("user seek t-0 end")),
            (900, "c0", seek(0)),
        ]);
        let v = UserSeekWins.violations(&history);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::SeekOverridden);
        assert_eq!(v[0].at_ms, 900);
    }

    #[test]
    fn a_position_moved_after_the_seek_resolved_breaks_it() {
        let history = History::from_events(vec![
            (10, "p0", acked(9)),
            (20, "c0", note("user seek t-0 offset 4")),
            (30, "c0", seek(4)),
            (40, "c0", delivered(0)),
        ]);
        let v = UserSeekWins.violations(&history);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].at_ms, 40);
    }

    #[test]
    fn seeks_that_resolve_as_asked_satisfy_it() {
        let history = History::from_events(vec![
            (10, "p0", acked(9)),
            (20, "c0", note("user seek t-0 end")),
            (30, "p0", acked(10)),
            (40, "c0", seek(11)),
            (50, "c0", delivered(11)),
            (60, "c0", note("user seek t-0 beginning")),
            (70, "c0", seek(0)),
            (80, "c0", delivered(0)),
            (90, "c0", note("user seek t-0 offset 5")),
            (95, "c0", note("seek refused: IllegalState")),
            (99, "c0", seek(7)),
        ]);
        assert!(UserSeekWins.violations(&history).is_empty());
    }
}
