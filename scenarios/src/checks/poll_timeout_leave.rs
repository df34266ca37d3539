//! Poll timeout leaves: *a dynamic group member whose application stays out of `poll` longer
//! than `max.poll.interval.ms` leaves the group when that timer expires*, so that the group
//! reassigns its partitions. This is Kafka's documented contract for the setting ("If poll()
//! is not called before expiration of this timeout, then the consumer is considered failed and
//! the group will rebalance in order to reassign the partitions to another member",
//! `ConsumerConfig.MAX_POLL_INTERVAL_MS_DOC`), and what Java's consumers do: the new consumer's
//! `AbstractHeartbeatRequestManager.poll` checks `pollTimer.isExpired()` on every network-thread
//! wake-up (the timer's remaining time bounds how long that thread sleeps) and calls
//! `transitionToSendingLeaveGroup`; the classic `AbstractCoordinator.HeartbeatThread` calls
//! `maybeLeaveGroup("consumer poll timeout has expired")` within `retry.backoff.ms` of the
//! expiry. The complement of `NoLeaveInPoll` (KAFKA-16243: no leave while inside `poll`).
//!
//! Judged per subject whose runner note (`poll-timer …`, recorded where this checker runs)
//! names a dynamic group member: for every stretch from a `PollEnd` to the next `PollStart`
//! (the application out of `poll`) that began while the member was in its group (its latest
//! group answer was a success, after its latest `Leave` / `Expelled`), the timer expires at
//! `PollEnd + max.poll.interval.ms`, moved later by the time the member's process was paused
//! in the stretch (a frozen process runs no timer check; the coordinator expels it after its
//! session instead, which also counts). If the application is still out of `poll`
//! [`PollTimeoutLeaves::LEAVE_SLACK_MS`] after that, a `Leave` (seen at the coordinator) or
//! an `Expelled` must have happened in the stretch by then. Only scenarios whose coordinator
//! stays reachable use it: a member cut off from its coordinator cannot deliver a leave.

use std::collections::BTreeMap;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History};

/// The runner's note of a subject's poll timer, recorded where this checker runs.
const NOTE_PREFIX: &str = "poll-timer ";

#[derive(Clone, Debug, Default)]
pub struct PollTimeoutLeaves {}

/// A subject's poll timer, as its configuration sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollTimer {
    pub max_poll_interval_ms: u64,
    /// Dynamic: a group member without `group.instance.id` (static members keep their place
    /// until the session times out, by design).
    pub dynamic_member: bool,
}

impl PollTimer {
    /// The timer of a subject configured with `pairs`, when it is a group member (Kafka's
    /// default `max.poll.interval.ms` is 300000).
    pub fn of(pairs: &[(String, String)]) -> Option<Self> {
        let value = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        value("group.id")?;
        Some(Self {
            max_poll_interval_ms: value("max.poll.interval.ms")
                .and_then(|v| v.parse().ok())
                .unwrap_or(300_000),
            dynamic_member: value("group.instance.id").is_none(),
        })
    }

    /// As a history note.
    pub fn note(&self) -> Event {
        Event::Note {
            text: format!(
                "{NOTE_PREFIX}max.poll.interval.ms={} dynamic={}",
                self.max_poll_interval_ms, self.dynamic_member
            ),
        }
    }

    fn parse(text: &str) -> Option<Self> {
        let rest = text.strip_prefix(NOTE_PREFIX)?;
        let (interval, dynamic) = rest.split_once(' ')?;
        Some(Self {
            max_poll_interval_ms: interval
                .strip_prefix("max.poll.interval.ms=")?
                .parse()
                .ok()?,
            dynamic_member: dynamic.strip_prefix("dynamic=")?.parse().ok()?,
        })
    }
}

impl PollTimeoutLeaves {
    pub const NAME: &'static str = "poll-timeout-leaves";

    /// How long after the timer expires the leave may reach the coordinator: Java's network
    /// thread acts on its wake-up at the expiry and sends the leave at once; it may queue
    /// behind one group request already in flight on the coordinator connection (the
    /// coordinator answers a connection's requests in order), so two round trips at the
    /// zombie family's largest link latency (30 ms each way: 120 ms) plus scheduling.
    /// Measured: at most 19 ms after the expiry (counted from `PollEnd`, so most leaves come
    /// before it) over the 26 stalls of `family-zombie` seeds 0..40.
    pub const LEAVE_SLACK_MS: u64 = 150;
}

/// Per subject: the group answer, leave or expulsion seen last (`true`: in the group).
fn in_group_after(event: &Event) -> Option<bool> {
    match event {
        Event::Response {
            api, error: None, ..
        } if matches!(
            api.as_str(),
            "ConsumerGroupHeartbeat" | "SyncGroup" | "Heartbeat" | "JoinGroup"
        ) =>
        {
            Some(true)
        }
        Event::Leave { .. } | Event::Expelled { .. } => Some(false),
        _ => None,
    }
}

impl Checker for PollTimeoutLeaves {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let pauses = super::process_pauses(history);
        let mut timers: BTreeMap<&str, PollTimer> = BTreeMap::new();
        let mut in_group: BTreeMap<&str, bool> = BTreeMap::new();
        // Per subject: when the application left `poll`, if it was in its group then.
        let mut out_since: BTreeMap<&str, u64> = BTreeMap::new();
        // Per subject: when it last left the group or was removed.
        let mut last_out: BTreeMap<&str, u64> = BTreeMap::new();
        let mut out = Vec::new();
        for e in history.entries() {
            let subject = e.subject.as_str();
            if let Some(now_in) = in_group_after(&e.event) {
                in_group.insert(subject, now_in);
                if !now_in {
                    last_out.insert(subject, e.at_ms);
                }
            }
            match &e.event {
                Event::Note { text } => {
                    if let Some(timer) = PollTimer::parse(text) {
                        timers.insert(subject, timer);
                    }
                }
                Event::PollEnd { .. } if in_group.get(subject) == Some(&true) => {
                    out_since.insert(subject, e.at_ms);
                }
                Event::PollStart { .. } | Event::CloseStart { .. } => {
                    if let Some(since) = out_since.remove(subject) {
                        out.extend(judge(
                            subject,
                            since,
                            e.at_ms,
                            timers.get(subject),
                            &pauses,
                            last_out.get(subject).copied(),
                        ));
                    }
                }
                Event::MemberCrash | Event::MemberRestart | Event::MemberStart { .. } => {
                    out_since.remove(subject);
                    in_group.remove(subject);
                }
                _ => {}
            }
        }
        out
    }
}

/// The verdict on one stretch out of `poll`, `[from_ms, to_ms)`.
fn judge(
    subject: &str,
    from_ms: u64,
    to_ms: u64,
    timer: Option<&PollTimer>,
    pauses: &[(String, u64, u64)],
    last_out_ms: Option<u64>,
) -> Option<Violation> {
    let timer = timer.filter(|t| t.dynamic_member)?;
    let paused_ms: u64 = pauses
        .iter()
        .filter(|(s, ..)| s == subject)
        .map(|(_, a, b)| (*b).min(to_ms).saturating_sub((*a).max(from_ms)))
        .sum();
    let expires_ms = from_ms + timer.max_poll_interval_ms + paused_ms;
    let due_ms = expires_ms + PollTimeoutLeaves::LEAVE_SLACK_MS;
    if to_ms <= due_ms || last_out_ms.is_some_and(|at| from_ms <= at && at <= due_ms) {
        return None;
    }
    Some(
        Violation::new(
            ViolationKind::NoLeaveOnPollTimeout,
            due_ms,
            format!(
                "{subject}'s application left poll at {from_ms}ms and came back at {to_ms}ms; \
                 its max.poll.interval.ms ({}ms, +{paused_ms}ms its process was paused) expired \
                 at {expires_ms}ms, yet by {due_ms}ms the member had neither left the group nor \
                 been removed: its partitions stay with a consumer the application abandoned \
                 (Java leaves on the expired poll timer).",
                timer.max_poll_interval_ms
            ),
        )
        .subject(subject),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMER: PollTimer = PollTimer {
        max_poll_interval_ms: 4_000,
        dynamic_member: true,
    };

    fn joined(at_ms: u64) -> (u64, &'static str, Event) {
        (
            at_ms,
            "c0",
            Event::Response {
                api: "ConsumerGroupHeartbeat".to_owned(),
                correlation: 1,
                node: "coordinator".to_owned(),
                error: None,
                member_id: Some("m".to_owned()),
                generation: Some(1),
            },
        )
    }

    fn stalled(then: Vec<(u64, Event)>, timer: PollTimer) -> History {
        let mut events = vec![(0, "c0", timer.note()), joined(10)];
        events.push((
            1_000,
            "c0",
            Event::PollEnd {
                records: 3,
                error: None,
            },
        ));
        events.extend(then.into_iter().map(|(at, e)| (at, "c0", e)));
        events.push((9_000, "c0", Event::PollStart { timeout_ms: 100 }));
        History::from_events(events)
    }

    fn leave() -> Event {
        Event::Leave {
            reason: "heartbeat epoch -1".to_owned(),
        }
    }

    #[test]
    fn a_stall_past_the_timer_without_a_leave_fails() {
        let v = PollTimeoutLeaves::default().violations(&stalled(vec![], TIMER));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::NoLeaveOnPollTimeout);
        assert_eq!(v[0].at_ms, 5_150);
    }

    #[test]
    fn a_leave_at_the_expiry_or_an_expulsion_passes() {
        let ok = stalled(vec![(5_020, leave())], TIMER);
        assert!(PollTimeoutLeaves::default().violations(&ok).is_empty());
        let expelled = Event::Expelled {
            member_id: "m".to_owned(),
            reason: "session".to_owned(),
        };
        let ok = stalled(vec![(3_000, expelled)], TIMER);
        assert!(PollTimeoutLeaves::default().violations(&ok).is_empty());
    }

    #[test]
    fn a_leave_later_than_the_slack_fails() {
        let late = stalled(vec![(5_200, leave())], TIMER);
        assert_eq!(PollTimeoutLeaves::default().violations(&late).len(), 1);
    }

    #[test]
    fn pauses_move_the_expiry_and_static_members_are_not_judged() {
        let paused = Event::Note {
            text: "process paused 3000ms".to_owned(),
        };
        // Paused 2–5 s: the timer expires at 8 s, the leave at 8.1 s is in time.
        let ok = stalled(vec![(2_000, paused), (8_100, leave())], TIMER);
        assert!(PollTimeoutLeaves::default().violations(&ok).is_empty());
        let fixed = PollTimer {
            dynamic_member: false,
            ..TIMER
        };
        assert!(PollTimeoutLeaves::default()
            .violations(&stalled(vec![], fixed))
            .is_empty());
    }

    #[test]
    fn a_short_stretch_or_a_member_out_of_its_group_is_not_judged() {
        let history = History::from_events(vec![
            (0, "c0", TIMER.note()),
            joined(10),
            (
                1_000,
                "c0",
                Event::PollEnd {
                    records: 0,
                    error: None,
                },
            ),
            (4_000, "c0", Event::PollStart { timeout_ms: 100 }),
            (4_100, "c0", leave()),
            (
                4_200,
                "c0",
                Event::PollEnd {
                    records: 0,
                    error: None,
                },
            ),
            (20_000, "c0", Event::PollStart { timeout_ms: 100 }),
        ]);
        assert!(PollTimeoutLeaves::default().violations(&history).is_empty());
    }

    #[test]
    fn the_timer_comes_from_the_configuration() {
        let pairs = |extra: &[(&str, &str)]| -> Vec<(String, String)> {
            [("group.id", "g")]
                .iter()
                .chain(extra)
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let timer = PollTimer::of(&pairs(&[("max.poll.interval.ms", "4000")])).unwrap();
        assert_eq!(timer, TIMER);
        assert_eq!(PollTimer::parse(&note_text(timer)), Some(timer));
        let default = PollTimer::of(&pairs(&[("group.instance.id", "i")])).unwrap();
        assert_eq!(default.max_poll_interval_ms, 300_000);
        assert!(!default.dynamic_member);
        assert_eq!(PollTimer::of(&[]), None);
    }

    fn note_text(timer: PollTimer) -> String {
        match timer.note() {
            Event::Note { text } => text,
            _ => unreachable!(),
        }
    }
}
