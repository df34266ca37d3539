//! Loop rate: *a consumer with nothing to do blocks; its loops turn at a rate the traffic
//! explains, not as fast as the CPU allows* (KAFKA-20426: `assign()` with a `group.id` made
//! the AsyncKafkaConsumer's `maximumTimeToWait()` 0, so `poll` never blocked; KAFKA-14729:
//! the same spin after the heartbeat thread died).
//!
//! The runner samples a subject's [`LoopCounters`] at most once per virtual second, after a
//! poll, as a `Note` in the form [`counters_note`] writes; this checker reads consecutive
//! samples and flags any stretch of at least `min_window_ms` whose rate exceeds the bound.
//! Virtual time makes a spin visible: a loop that never sleeps turns thousands of times per
//! virtual millisecond. Violations are reported as `PollOvershoot` (the poll-bounds family;
//! `sim::check` has no busy-loop kind of its own).

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History};

use crate::subject::LoopCounters;

const PREFIX: &str = "loop-counters ";

/// The history note that carries one sample.
pub fn counters_note(counters: LoopCounters) -> Event {
    Event::Note {
        text: format!(
            "{PREFIX}background={} poll={} group_requests={} lookup_requests={}",
            counters.background, counters.poll, counters.group_requests, counters.lookup_requests
        ),
    }
}

/// The sample in a note written by [`counters_note`].
pub(crate) fn parse(text: &str) -> Option<LoopCounters> {
    let rest = text.strip_prefix(PREFIX)?;
    let mut counters = LoopCounters::default();
    for word in rest.split_whitespace() {
        match word.split_once('=')? {
            ("background", n) => counters.background = n.parse().ok()?,
            ("poll", n) => counters.poll = n.parse().ok()?,
            ("group_requests", n) => counters.group_requests = n.parse().ok()?,
            ("lookup_requests", n) => counters.lookup_requests = n.parse().ok()?,
            _ => return None,
        }
    }
    Some(counters)
}

/// Two consecutive samples of one subject, `window_ms` apart.
pub(crate) struct Window<'h> {
    pub subject: &'h str,
    pub since_ms: u64,
    pub at_ms: u64,
    pub window_ms: u64,
    pub then: LoopCounters,
    pub now: LoopCounters,
}

impl Window<'_> {
    /// The rate per virtual second of a counter that grew by `delta` over the window.
    pub fn per_s(&self, delta: u64) -> u64 {
        delta * 1_000 / self.window_ms
    }
}

/// Every subject's consecutive samples at least `min_window_ms` apart (a closer sample is
/// merged into the next window), from `from_ms` on. A restarted process counts from zero
/// again, so its first sample starts a new window.
pub(crate) fn windows(history: &History, min_window_ms: u64, from_ms: u64) -> Vec<Window<'_>> {
    let mut out = Vec::new();
    for subject in history.subjects() {
        let mut from: Option<(u64, LoopCounters)> = None;
        for e in history.of_subject(subject) {
            let text = match &e.event {
                Event::MemberStart { .. } | Event::MemberRestart => {
                    from = None;
                    continue;
                }
                Event::Note { text } => text,
                _ => continue,
            };
            let Some(now) = parse(text) else {
                continue;
            };
            if e.at_ms < from_ms {
                continue;
            }
            let Some((since_ms, then)) = from else {
                from = Some((e.at_ms, now));
                continue;
            };
            let window_ms = e.at_ms - since_ms;
            if window_ms < min_window_ms {
                continue;
            }
            out.push(Window {
                subject,
                since_ms,
                at_ms: e.at_ms,
                window_ms,
                then,
                now,
            });
            from = Some((e.at_ms, now));
        }
    }
    out
}

#[derive(Clone, Debug)]
pub struct LoopRate {
    /// Most background-loop iterations per virtual second.
    pub max_background_per_s: u64,
    /// Most turns of `poll`'s wait per virtual second.
    pub max_poll_per_s: u64,
    /// Samples closer together than this are merged with the next (rates over tiny windows
    /// are noise: one fetch response is several iterations).
    pub min_window_ms: u64,
    /// Samples before this time are not judged (start-up: discovery, metadata, positions).
    pub from_ms: u64,
}

impl Checker for LoopRate {
    fn name(&self) -> &'static str {
        "loop-rate"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        for w in windows(history, self.min_window_ms, self.from_ms) {
            for (what, delta, max) in [
                (
                    "background-loop iterations",
                    w.now.background.saturating_sub(w.then.background),
                    self.max_background_per_s,
                ),
                (
                    "poll wakeups",
                    w.now.poll.saturating_sub(w.then.poll),
                    self.max_poll_per_s,
                ),
            ] {
                let per_s = w.per_s(delta);
                if per_s > max {
                    out.push(
                        Violation::new(
                            ViolationKind::PollOvershoot,
                            w.at_ms,
                            format!(
                                "{} made {delta} {what} in {}ms ({}–{}ms): {per_s}/s, more than \
                                 {max}/s: a consumer waiting for data must block, not spin \
                                 (KAFKA-20426)",
                                w.subject, w.window_ms, w.since_ms, w.at_ms
                            ),
                        )
                        .subject(w.subject),
                    );
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(background: u64, poll: u64) -> Event {
        counters_note(LoopCounters {
            background,
            poll,
            ..LoopCounters::default()
        })
    }

    fn check(events: Vec<(u64, Event)>) -> Vec<Violation> {
        let history = History::from_events(events.into_iter().map(|(t, e)| (t, "c0", e)));
        LoopRate {
            max_background_per_s: 100,
            max_poll_per_s: 50,
            min_window_ms: 1_000,
            from_ms: 1_000,
        }
        .violations(&history)
    }

    #[test]
    fn notes_round_trip() {
        let Event::Note { text } = sample(7, 9) else {
            unreachable!()
        };
        assert_eq!(
            parse(&text),
            Some(LoopCounters {
                background: 7,
                poll: 9,
                ..LoopCounters::default()
            })
        );
        assert_eq!(parse("loop-counters spin=3"), None);
        assert_eq!(parse("something else"), None);
    }

    #[test]
    fn a_spinning_poll_breaks_it() {
        let v = check(vec![
            (1_000, sample(10, 10)),
            (2_000, sample(60, 20)),
            (3_000, sample(100, 90_000)),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].at_ms, 3_000);
        assert!(v[0].explanation.contains("poll wakeups"), "{}", v[0]);
    }

    #[test]
    fn a_spinning_background_loop_breaks_it_and_start_up_is_excused() {
        let v = check(vec![
            (500, sample(0, 0)),
            (900, sample(5_000, 0)),
            (1_200, sample(5_010, 1)),
            (1_700, sample(5_020, 2)),
            (2_400, sample(9_000, 3)),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].explanation.contains("background"), "{}", v[0]);
    }

    #[test]
    fn a_quiet_consumer_passes() {
        assert!(check(vec![
            (1_000, sample(10, 1)),
            (2_000, sample(40, 3)),
            (3_500, sample(80, 5)),
        ])
        .is_empty());
    }
}
