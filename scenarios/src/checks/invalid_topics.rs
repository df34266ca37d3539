//! Invalid topics surface: *a subscription naming a topic Kafka does not allow (its
//! `Topic.validate`: 1–249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`) is reported to the
//! application, naming the topic* — our consumer refuses it in `subscribe`; Java's throws
//! `InvalidTopicException` from `poll` once Metadata answers INVALID_TOPIC_EXCEPTION. Either
//! way the application learns it, instead of polling nothing forever (issue #26).
//!
//! Judged per subject: after a `Subscribe` with an illegal name, before the subject's next
//! `Subscribe` (or the end), a `subscribe failed` note or a failed `PollEnd` must name it, or
//! carry INVALID_TOPIC_EXCEPTION (the subjects record a failed `poll` by its Kafka error name).

use kafka_consumer::topic_name::is_valid_topic_name;
use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History};

#[derive(Clone, Debug, Default)]
pub struct InvalidTopicsSurface {}

impl Checker for InvalidTopicsSurface {
    fn name(&self) -> &'static str {
        "invalid-topics-surface"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut out = Vec::new();
        for subject in history.subjects() {
            // The illegal names subscribed to and not yet reported, and when.
            let mut pending: Option<(u64, Vec<String>)> = None;
            let mut flush = |pending: &mut Option<(u64, Vec<String>)>| {
                if let Some((at_ms, topics)) = pending.take() {
                    out.push(
                        Violation::new(
                            ViolationKind::InvalidTopicAccepted,
                            at_ms,
                            format!(
                                "{subject} subscribed to {topics:?}, names Kafka does not \
                                 allow, and neither subscribe nor any poll after it failed \
                                 naming them"
                            ),
                        )
                        .subject(subject),
                    );
                }
            };
            for e in history.of_subject(subject) {
                let reported = match &e.event {
                    Event::Subscribe { topics } => {
                        flush(&mut pending);
                        let illegal: Vec<String> = topics
                            .iter()
                            .filter(|t| !is_valid_topic_name(t))
                            .cloned()
                            .collect();
                        pending = (!illegal.is_empty()).then_some((e.at_ms, illegal));
                        None
                    }
                    Event::Note { text } if text.starts_with("subscribe failed") => {
                        Some(text.as_str())
                    }
                    Event::PollEnd {
                        error: Some(error), ..
                    } => Some(error.as_str()),
                    _ => None,
                };
                if let (Some(text), Some((_, topics))) = (reported, &pending) {
                    if text.contains("INVALID_TOPIC_EXCEPTION")
                        || topics.iter().all(|t| text.contains(t.as_str()))
                    {
                        pending = None;
                    }
                }
            }
            flush(&mut pending);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(events: &[Event]) -> History {
        let entries: Vec<(u64, &str, Event)> = events
            .iter()
            .enumerate()
            .map(|(i, e)| (i as u64, "c0", e.clone()))
            .collect();
        History::from_events(entries)
    }

    fn subscribe(topic: &str) -> Event {
        Event::Subscribe {
            topics: vec![topic.to_owned()],
        }
    }

    fn note(text: &str) -> Event {
        Event::Note {
            text: text.to_owned(),
        }
    }

    fn poll_ok() -> Event {
        Event::PollEnd {
            records: 0,
            error: None,
        }
    }

    fn poll_error(text: &str) -> Event {
        Event::PollEnd {
            records: 0,
            error: Some(text.to_owned()),
        }
    }

    #[test]
    fn a_refused_subscribe_or_a_failed_poll_naming_the_topic_passes() {
        let checker = InvalidTopicsSurface::default();
        let refused = history(&[
            subscribe("bad!topic"),
            note("subscribe failed: invalid topics [bad!topic]: ..."),
            subscribe("t"),
        ]);
        assert!(checker.violations(&refused).is_empty());
        let from_poll = history(&[
            subscribe("bad!topic"),
            poll_ok(),
            poll_error("INVALID_TOPIC_EXCEPTION"),
        ]);
        assert!(checker.violations(&from_poll).is_empty());
        assert!(checker.violations(&history(&[subscribe("t")])).is_empty());
    }

    #[test]
    fn a_silently_accepted_illegal_name_is_a_violation() {
        let checker = InvalidTopicsSurface::default();
        for events in [
            vec![subscribe("bad!topic"), subscribe("t")],
            vec![subscribe("bad!topic")],
            // An error that does not name the topic does not tell the application.
            vec![
                subscribe("bad!topic"),
                poll_error("illegal state: not subscribed"),
            ],
        ] {
            let v = checker.violations(&history(&events));
            assert_eq!(v.len(), 1, "{events:?}");
            assert_eq!(v[0].kind, ViolationKind::InvalidTopicAccepted);
        }
    }
}
