//! The data-path facts a run documents, as history notes: what the simulated cluster did to a
//! log (the log start moved, a topic was deleted or created, a leader's log was truncated) and
//! what an application was configured with or observed (its `auto.offset.reset`, its position
//! after a reset error). [`super::DataPathAccounting`] excuses a missing or re-delivered record
//! only with one of these, so each is written by the party that knows it — the fault runner
//! after the cluster applied the fault, the application loop after the consumer answered — and
//! carries the effect, not the request (a DeleteRecords past the high watermark moves the log
//! start only to the high watermark).
//!
//! Every note starts with [`PREFIX`]; [`DataEvent::parse`] reads back exactly what
//! [`DataEvent`]'s `Display` writes.

use std::fmt;

use sim::history::{Event, Tp};

/// What every data-path note starts with.
pub const PREFIX: &str = "data: ";

/// One documented data-path fact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataEvent {
    /// The log start offset of `tp` is now `offset` (DeleteRecords, retention): every record
    /// below it is gone.
    LogStart { tp: Tp, offset: i64 },
    /// `topic` and every record of it were deleted.
    TopicDeleted { topic: String },
    /// `topic` was created (again): its partitions' offsets start at 0.
    TopicCreated { topic: String },
    /// The leader of `tp` lost every record from `end_offset` on (an unclean leader election:
    /// the new leader's log is a prefix of the old one's).
    Truncated { tp: Tp, end_offset: i64 },
    /// The subject's `auto.offset.reset` (`earliest`, `latest`, `none`).
    ResetPolicy { policy: String },
    /// The subject's `isolation.level` (`read_committed`, `read_uncommitted`).
    Isolation { level: String },
    /// A transactional producer appended `value` at `tp`@`offset`: in the log, but not
    /// acknowledged until its transaction commits (the producer then records `ProduceAcked`);
    /// a transaction that aborts (or never ends) leaves it uncommitted.
    TxnWritten { tp: Tp, offset: i64, value: String },
    /// `poll` failed with a reset error (`OFFSET_OUT_OF_RANGE`, `LOG_TRUNCATION`) naming
    /// `error_offset` for `tp`, and `position(tp)` then answered `position`.
    PositionAfterError {
        tp: Tp,
        error: String,
        error_offset: i64,
        position: i64,
    },
}

impl fmt::Display for DataEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(PREFIX)?;
        match self {
            DataEvent::LogStart { tp, offset } => write!(f, "log-start {tp} {offset}"),
            DataEvent::TopicDeleted { topic } => write!(f, "topic-deleted {topic}"),
            DataEvent::TopicCreated { topic } => write!(f, "topic-created {topic}"),
            DataEvent::Truncated { tp, end_offset } => write!(f, "truncated {tp} {end_offset}"),
            DataEvent::ResetPolicy { policy } => write!(f, "auto.offset.reset {policy}"),
            DataEvent::Isolation { level } => write!(f, "isolation.level {level}"),
            DataEvent::TxnWritten { tp, offset, value } => {
                write!(f, "txn-written {tp} {offset} {value}")
            }
            DataEvent::PositionAfterError {
                tp,
                error,
                error_offset,
                position,
            } => write!(
                f,
                "position-after-error {tp} {error} {error_offset} {position}"
            ),
        }
    }
}

/// `t-0` (Kafka's rendering; topic names may contain `-`, the partition is after the last).
fn parse_tp(text: &str) -> Option<Tp> {
    let (topic, partition) = text.rsplit_once('-')?;
    Some(Tp::new(topic, partition.parse().ok()?))
}

impl DataEvent {
    /// The fact a note documents, if it is a data-path note.
    pub fn parse(text: &str) -> Option<Self> {
        let rest = text.strip_prefix(PREFIX)?;
        let words: Vec<&str> = rest.split_whitespace().collect();
        let event = match words.as_slice() {
            ["log-start", tp, offset] => DataEvent::LogStart {
                tp: parse_tp(tp)?,
                offset: offset.parse().ok()?,
            },
            ["topic-deleted", topic] => DataEvent::TopicDeleted {
                topic: (*topic).to_owned(),
            },
            ["topic-created", topic] => DataEvent::TopicCreated {
                topic: (*topic).to_owned(),
            },
            ["truncated", tp, end] => DataEvent::Truncated {
                tp: parse_tp(tp)?,
                end_offset: end.parse().ok()?,
            },
            ["auto.offset.reset", policy] => DataEvent::ResetPolicy {
                policy: (*policy).to_owned(),
            },
            ["isolation.level", level] => DataEvent::Isolation {
                level: (*level).to_owned(),
            },
            ["txn-written", tp, offset, value] => DataEvent::TxnWritten {
                tp: parse_tp(tp)?,
                offset: offset.parse().ok()?,
                value: (*value).to_owned(),
            },
            ["position-after-error", tp, error, error_offset, position] => {
                DataEvent::PositionAfterError {
                    tp: parse_tp(tp)?,
                    error: (*error).to_owned(),
                    error_offset: error_offset.parse().ok()?,
                    position: position.parse().ok()?,
                }
            }
            _ => return None,
        };
        Some(event)
    }

    /// The fact of a history event, if it is a data-path note.
    pub fn of(event: &Event) -> Option<Self> {
        match event {
            Event::Note { text } => Self::parse(text),
            _ => None,
        }
    }

    /// As a history event.
    pub fn note(&self) -> Event {
        Event::Note {
            text: self.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fact_reads_back_as_written() {
        let facts = [
            DataEvent::LogStart {
                tp: Tp::new("my-topic", 2),
                offset: 120,
            },
            DataEvent::TopicDeleted { topic: "t".into() },
            DataEvent::TopicCreated { topic: "t".into() },
            DataEvent::Truncated {
                tp: Tp::new("t", 0),
                end_offset: 7,
            },
            DataEvent::ResetPolicy {
                policy: "none".into(),
            },
            DataEvent::Isolation {
                level: "read_committed".into(),
            },
            DataEvent::TxnWritten {
                tp: Tp::new("t", 2),
                offset: 9,
                value: "t-2-tx1-4".into(),
            },
            DataEvent::PositionAfterError {
                tp: Tp::new("t", 1),
                error: "OFFSET_OUT_OF_RANGE".into(),
                error_offset: 40,
                position: 40,
            },
        ];
        for fact in facts {
            assert_eq!(DataEvent::of(&fact.note()), Some(fact.clone()), "{fact}");
        }
        assert_eq!(DataEvent::parse("data: log-start t-x 3"), None);
        assert_eq!(DataEvent::parse("log-start t-0 3"), None);
        assert_eq!(DataEvent::parse("data: log-start t-0 3 extra"), None);
    }
}
