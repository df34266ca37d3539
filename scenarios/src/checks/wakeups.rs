//! Application-thread wake-ups: *inside `poll(d)` the application thread wakes for responses,
//! deadlines and its timeout — not in a loop*. KAFKA-14729: the classic consumer's heartbeat
//! thread died, `timeToNextPoll` stayed at zero (the heartbeat timer nobody reset any more) and
//! `pollForFetches` spun on `client.poll(0)`. KAFKA-10134: 2.5.0 ran coordinator discovery
//! with a zero timer inside `poll`, which spun for as long as the coordinator was gone.
//!
//! The runner counts how often the task calling `poll` is woken inside it (every poll of the
//! subject's `poll` future, the simulation's equivalent of a return from `selector.select`)
//! and, when a scenario asserts this checker, records each call's count as a note just before
//! its `PollEnd` ([`note`]). The checker sums the counts of the calls that end in each virtual
//! second and reports, per subject, the first second above the bound.

use std::collections::BTreeMap;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History};

/// The note's text before the count.
const NOTE_PREFIX: &str = "app-wakeups in poll: ";

/// The note the runner records for one `poll` call that was woken `wakeups` times.
pub fn note(wakeups: u64) -> Event {
    Event::Note {
        text: format!("{NOTE_PREFIX}{wakeups}"),
    }
}

fn parse(event: &Event) -> Option<u64> {
    match event {
        Event::Note { text } => text.strip_prefix(NOTE_PREFIX)?.parse().ok(),
        _ => None,
    }
}

#[derive(Clone, Debug)]
pub struct AppWakeups {
    /// The most wake-ups inside `poll` one virtual second may hold.
    pub max_per_s: u64,
}

impl AppWakeups {
    /// The checker's name; the runner records wake-up counts only for scenarios asserting it.
    pub const NAME: &'static str = "app-wakeups";
}

impl Checker for AppWakeups {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        for subject in history.subjects() {
            let mut per_second: BTreeMap<u64, u64> = BTreeMap::new();
            for e in history.of_subject(subject) {
                if let Some(n) = parse(&e.event) {
                    *per_second.entry(e.at_ms / 1_000).or_default() += n;
                }
            }
            let over: Vec<(u64, u64)> = per_second
                .into_iter()
                .filter(|(_, n)| *n > self.max_per_s)
                .collect();
            let Some(&(second, n)) = over.first() else {
                continue;
            };
            let peak = over.iter().map(|(_, n)| *n).max().unwrap_or(n);
            out.push(
                Violation::new(
                    ViolationKind::BusyLoop,
                    second * 1_000,
                    format!(
                        "{subject}'s application thread was woken {n} times inside poll() in \
                         the virtual second from {}ms (bound {}); {} second(s) over the bound, \
                         peak {peak}: a poll loop that never blocks (KAFKA-14729, KAFKA-10134)",
                        second * 1_000,
                        self.max_per_s,
                        over.len()
                    ),
                )
                .subject(subject),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(events: Vec<(u64, Event)>) -> Vec<Violation> {
        let history = History::from_events(events.into_iter().map(|(t, e)| (t, "c0", e)));
        AppWakeups { max_per_s: 100 }.violations(&history)
    }

    #[test]
    fn a_second_of_spinning_polls_breaks_it() {
        let v = check(vec![
            (500, note(3)),
            (2_100, note(60)),
            (2_200, note(60)),
            (3_100, note(500)),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::BusyLoop);
        assert_eq!(v[0].at_ms, 2_000);
        assert!(v[0].explanation.contains("peak 500"), "{}", v[0]);
    }

    #[test]
    fn polls_that_block_satisfy_it_and_other_notes_are_ignored() {
        assert!(check(vec![
            (100, note(2)),
            (200, note(90)),
            (1_100, note(100)),
            (
                1_200,
                Event::Note {
                    text: "app-wakeups in poll: many".into()
                }
            ),
            (
                1_300,
                Event::Note {
                    text: "joined".into()
                }
            ),
        ])
        .is_empty());
    }
}
