//! Listener errors surface: *a rebalance listener call that fails (throws, panics) makes the
//! `poll` that ran it fail* — Java's consumer goes on with the rebalance and rethrows the
//! listener's exception from `poll` (`ConsumerCoordinator.onJoinComplete`, and the async
//! consumer's `ConsumerRebalanceListenerInvoker` errors carried to the application thread), so
//! the application learns that its callback did not do its work (commit, seek, flush).
//!
//! Judged per subject: after a `CallbackEnd` with an error, the subject's next `PollEnd` must
//! carry an error. A callback run by `close` has no `poll` after it: that `close` must fail
//! instead — Java's `close` runs `runRebalanceCallbacksOnClose` under `swallow(…, firstException)`
//! and ends with `throw new KafkaException("Failed to close kafka consumer", firstException)`.
//! A process that crashes or restarts starts afresh.

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History};

#[derive(Clone, Debug, Default)]
pub struct ListenerErrorsSurface {}

impl Checker for ListenerErrorsSurface {
    fn name(&self) -> &'static str {
        "listener-errors-surface"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        for subject in history.subjects() {
            // The failed listener call not yet reported: when it ended and its error.
            let mut unreported: Option<(u64, String)> = None;
            // When the subject's `close` started, while it runs.
            let mut closing_since_ms: Option<u64> = None;
            for e in history.of_subject(subject) {
                match &e.event {
                    Event::CloseStart { .. } => closing_since_ms = Some(e.at_ms),
                    Event::CloseEnd { error } => {
                        let during_close = unreported
                            .as_ref()
                            .zip(closing_since_ms.take())
                            .is_some_and(|((failed_ms, _), start_ms)| *failed_ms >= start_ms);
                        if during_close {
                            if let (Some((failed_ms, failure)), None) = (unreported.take(), error) {
                                out.push(swallowed(subject, e.at_ms, failed_ms, &failure, "close"));
                            }
                        }
                    }
                    Event::CallbackEnd {
                        kind,
                        error: Some(error),
                        ..
                    } => unreported = Some((e.at_ms, format!("{kind:?}: {error}"))),
                    Event::MemberCrash | Event::MemberRestart => {
                        unreported = None;
                        closing_since_ms = None;
                    }
                    Event::PollEnd { error, .. } => {
                        if let (Some((failed_ms, failure)), None) = (unreported.take(), error) {
                            out.push(swallowed(subject, e.at_ms, failed_ms, &failure, "poll"));
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

/// `subject`'s listener failed at `failed_ms` and the `call` that ran it, ending at `at_ms`,
/// returned normally.
fn swallowed(subject: &str, at_ms: u64, failed_ms: u64, failure: &str, call: &str) -> Violation {
    Violation::new(
        ViolationKind::ListenerErrorSwallowed,
        at_ms,
        format!(
            "{subject}'s listener failed at {failed_ms}ms ({failure}) and the {call} that ran \
             it returned normally: the application is never told"
        ),
    )
    .subject(subject)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::history::CallbackKind;

    fn failed_callback() -> Event {
        Event::CallbackEnd {
            kind: CallbackKind::Assigned,
            partitions: Vec::new(),
            error: Some("planned listener panic".into()),
        }
    }

    fn end(error: Option<&str>) -> Event {
        Event::PollEnd {
            records: 0,
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn a_failed_callback_must_fail_its_poll() {
        let reported = History::from_events(vec![
            (10, "c0", failed_callback()),
            (
                12,
                "c0",
                end(Some("rebalance listener on_partitions_assigned failed")),
            ),
            (20, "c0", end(None)),
        ]);
        assert!(ListenerErrorsSurface::default()
            .violations(&reported)
            .is_empty());
        let swallowed =
            History::from_events(vec![(10, "c0", failed_callback()), (12, "c0", end(None))]);
        let v = ListenerErrorsSurface::default().violations(&swallowed);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::ListenerErrorSwallowed);
    }

    #[test]
    fn a_callback_failed_by_close_must_fail_close() {
        let close_end = |error: Option<&str>| Event::CloseEnd {
            error: error.map(str::to_owned),
        };
        let history = |error| {
            History::from_events(vec![
                (10, "c0", Event::CloseStart { timeout_ms: 5_000 }),
                (11, "c0", failed_callback()),
                (12, "c0", close_end(error)),
            ])
        };
        let reported = history(Some("rebalance listener on_partitions_revoked failed"));
        assert!(ListenerErrorsSurface::default()
            .violations(&reported)
            .is_empty());
        let v = ListenerErrorsSurface::default().violations(&history(None));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::ListenerErrorSwallowed);
        // A failure from before close (its poll not yet ended) is judged by polls, not close.
        let earlier = History::from_events(vec![
            (5, "c0", failed_callback()),
            (10, "c0", Event::CloseStart { timeout_ms: 5_000 }),
            (12, "c0", close_end(None)),
        ]);
        assert!(ListenerErrorsSurface::default()
            .violations(&earlier)
            .is_empty());
    }

    #[test]
    fn a_restarted_process_starts_afresh() {
        let h = History::from_events(vec![
            (10, "c0", Event::CloseStart { timeout_ms: 5_000 }),
            (11, "c0", failed_callback()),
            (12, "c0", Event::MemberRestart),
            (13, "c0", end(None)),
        ]);
        assert!(ListenerErrorsSurface::default().violations(&h).is_empty());
    }
}
