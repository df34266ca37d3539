//! Request rate: *under errors that persist, a member's group and lookup requests back off;
//! they never go out once per round trip* (the project's own invariant, issue #18: a KIP-848
//! member fenced again on every rejoin sent ~70 heartbeats a virtual second until its session
//! expired).
//!
//! Reads the same samples as [`super::LoopRate`] (the runner's `loop-counters` notes, at most
//! one per virtual second, after a poll): the consumer counts every group membership or
//! coordinator discovery request (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! ConsumerGroupHeartbeat) and every lookup (Metadata, ListOffsets, OffsetForLeaderEpoch,
//! OffsetFetch) it sends. Any stretch of at least `min_window_ms` whose rate exceeds the bound
//! is a [`ViolationKind::RequestStorm`]. Fetches and commits are not judged: data and the
//! application pace them.

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::History;

use super::loop_rate::windows;

#[derive(Clone, Debug)]
pub struct RequestRate {
    /// Most group membership and coordinator discovery requests per virtual second.
    pub max_group_per_s: u64,
    /// Most metadata and offset lookup requests per virtual second.
    pub max_lookup_per_s: u64,
    /// Samples closer together than this are merged with the next: a rebalance is a short
    /// burst of requests that a one-second window would overrate.
    pub min_window_ms: u64,
}

impl Default for RequestRate {
    /// With a backoff from `retry.backoff.ms` = 100 ms, a member retries each kind of request
    /// at most ten times a second; heartbeats come once per interval (≥ 1 s in the families)
    /// and a rebalance is a handful of requests. Twenty per second over three seconds leaves
    /// room for a rebalance on top of retries and none for a storm.
    fn default() -> Self {
        Self {
            max_group_per_s: 20,
            max_lookup_per_s: 20,
            min_window_ms: 3_000,
        }
    }
}

impl Checker for RequestRate {
    fn name(&self) -> &'static str {
        "request-rate"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        for w in windows(history, self.min_window_ms, 0) {
            for (what, delta, max) in [
                (
                    "group requests",
                    w.now.group_requests.saturating_sub(w.then.group_requests),
                    self.max_group_per_s,
                ),
                (
                    "lookup requests",
                    w.now.lookup_requests.saturating_sub(w.then.lookup_requests),
                    self.max_lookup_per_s,
                ),
            ] {
                let per_s = w.per_s(delta);
                if per_s > max {
                    out.push(
                        Violation::new(
                            ViolationKind::RequestStorm,
                            w.at_ms,
                            format!(
                                "{} sent {delta} {what} in {}ms ({}–{}ms): {per_s}/s, more \
                                 than {max}/s: requests refused again and again must back off",
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
    use crate::checks::loop_rate::counters_note;
    use crate::subject::LoopCounters;
    use sim::history::Event;

    fn sample(group_requests: u64, lookup_requests: u64) -> Event {
        counters_note(LoopCounters {
            group_requests,
            lookup_requests,
            ..LoopCounters::default()
        })
    }

    fn check(events: Vec<(u64, Event)>) -> Vec<Violation> {
        let history = History::from_events(events.into_iter().map(|(t, e)| (t, "c0", e)));
        RequestRate::default().violations(&history)
    }

    /// The storm of issue #18: a fenced member rejoining once per round trip.
    #[test]
    fn a_heartbeat_per_round_trip_breaks_it() {
        let v = check(vec![
            (1_000, sample(5, 3)),
            (4_000, sample(215, 6)),
            (7_000, sample(225, 9)),
        ]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::RequestStorm);
        assert_eq!(v[0].at_ms, 4_000);
        assert!(v[0].explanation.contains("group requests"), "{}", v[0]);
    }

    #[test]
    fn lookups_retried_per_response_break_it() {
        let v = check(vec![(0, sample(0, 0)), (3_000, sample(4, 90))]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].explanation.contains("lookup requests"), "{}", v[0]);
    }

    #[test]
    fn backed_off_retries_and_a_rebalance_burst_pass_and_a_restart_counts_afresh() {
        let events = vec![
            (0, sample(0, 0)),
            // A rebalance: a dozen requests in one second, inside a quiet window.
            (1_000, sample(12, 4)),
            (3_000, sample(14, 6)),
            // Retries every 100–1 000 ms: under ten a second.
            (6_000, sample(40, 30)),
            (6_500, Event::MemberRestart),
            (7_000, sample(1, 1)),
            (10_000, sample(10, 5)),
        ];
        assert!(check(events).is_empty());
    }
}
