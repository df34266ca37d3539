//! The events of Kafka's `VerifiableConsumer`, one JSON object per stdout line, with the names,
//! keys, value types and key order of Java's (Jackson: `timestamp` and `name` first, then the
//! event's own properties). Kafka's system tests (`verifiable_consumer.py`) parse each line
//! with `json.loads` and dispatch on `name`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use kafka_consumer::consumer::Offsets;
use kafka_consumer::{ConsumerRecord, TopicPartition};

/// A JSON value, just what the events need.
pub enum Json {
    Str(String),
    Int(i64),
    Bool(bool),
    Null,
    Array(Vec<Json>),
    /// Keys in the order they are written.
    Object(Vec<(&'static str, Json)>),
}

impl Json {
    fn write(&self, out: &mut String) {
        match self {
            Json::Str(text) => write_string(text, out),
            Json::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Null => out.push_str("null"),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(fields) => {
                out.push('{');
                for (i, (key, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_string(key, out);
                    out.push(':');
                    value.write(out);
                }
                out.push('}');
            }
        }
    }

    /// The value as one line of JSON.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }
}

/// A JSON string literal: `"` and `\` escaped, control characters as `\uXXXX` (short forms
/// for the common ones), everything else as is (the output is UTF-8).
fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if c < ' ' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Wall-clock time, as Java's `System.currentTimeMillis()`: the contract's timestamps are
/// real time, and this binary runs on the real runtime only.
#[allow(clippy::disallowed_methods)]
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// An event: `timestamp` (ms since the epoch, when it was made) and `name`, then `fields`.
pub fn event(name: &str, fields: Vec<(&'static str, Json)>) -> Json {
    let mut all = vec![
        ("timestamp", Json::Int(now_ms())),
        ("name", Json::Str(name.to_owned())),
    ];
    all.extend(fields);
    Json::Object(all)
}

/// Writes `event` as one line and flushes, so a reader sees each event as it happens (stdout
/// is a pipe under the system tests).
pub fn print(event: &Json) {
    let mut stdout = std::io::stdout().lock();
    // A closed stdout (the reader went away) must not stop the consumer from closing cleanly.
    let _ = writeln!(stdout, "{}", event.render());
    let _ = stdout.flush();
}

fn partition(tp: &TopicPartition) -> Vec<(&'static str, Json)> {
    vec![
        ("topic", Json::Str(tp.topic.to_string())),
        ("partition", Json::Int(tp.partition.into())),
    ]
}

/// `partitions_assigned` / `partitions_revoked`: `{"partitions":[{"topic","partition"}]}`.
pub fn partitions(name: &str, partitions: &BTreeSet<TopicPartition>) -> Json {
    let list = partitions
        .iter()
        .map(|tp| Json::Object(partition(tp)))
        .collect();
    event(name, vec![("partitions", Json::Array(list))])
}

/// One partition's share of a poll in `records_consumed`.
pub struct RecordSetSummary {
    pub partition: TopicPartition,
    pub count: usize,
    pub min_offset: i64,
    pub max_offset: i64,
}

/// `records_consumed`: `count` is the whole poll's record count (Java's `records.count()`),
/// also when `--max-messages` cut the summaries short.
pub fn records_consumed(poll_count: usize, summaries: &[RecordSetSummary]) -> Json {
    let list = summaries
        .iter()
        .map(|s| {
            let mut fields = partition(&s.partition);
            fields.extend([
                ("count", Json::Int(count(s.count))),
                ("minOffset", Json::Int(s.min_offset)),
                ("maxOffset", Json::Int(s.max_offset)),
            ]);
            Json::Object(fields)
        })
        .collect();
    event(
        "records_consumed",
        vec![
            ("count", Json::Int(count(poll_count))),
            ("partitions", Json::Array(list)),
        ],
    )
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `record_data` (with `--verbose`): key and value as Java's `StringDeserializer` gives them
/// (UTF-8; null stays null).
pub fn record_data(record: &ConsumerRecord) -> Json {
    let text = |bytes: Option<&[u8]>| {
        bytes.map_or(Json::Null, |b| {
            Json::Str(String::from_utf8_lossy(b).into_owned())
        })
    };
    event(
        "record_data",
        vec![
            ("key", text(record.key.as_deref())),
            ("value", text(record.value.as_deref())),
            ("topic", Json::Str(record.topic.to_string())),
            ("partition", Json::Int(record.partition.into())),
            ("offset", Json::Int(record.offset)),
        ],
    )
}

/// `offsets_committed`: the offsets asked for, `error` only when the commit failed.
pub fn offsets_committed(offsets: &Offsets, error: Option<String>) -> Json {
    let list = offsets
        .iter()
        .map(|(tp, o)| {
            let mut fields = partition(tp);
            fields.push(("offset", Json::Int(o.offset)));
            Json::Object(fields)
        })
        .collect();
    let mut fields = vec![("offsets", Json::Array(list))];
    let success = error.is_none();
    if let Some(error) = error {
        fields.push(("error", Json::Str(error)));
    }
    fields.push(("success", Json::Bool(success)));
    event("offsets_committed", fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_json() {
        let value = Json::Object(vec![(
            "k",
            Json::Array(vec![
                Json::Str("a\"b\\c\nd\u{1}é".to_owned()),
                Json::Null,
                Json::Bool(false),
                Json::Int(-7),
            ]),
        )]);
        assert_eq!(
            value.render(),
            r#"{"k":["a\"b\\c\nd\u0001é",null,false,-7]}"#
        );
    }

    #[test]
    fn events_start_with_timestamp_and_name() {
        let line = offsets_committed(&Offsets::new(), Some("boom".to_owned())).render();
        assert!(line.starts_with(r#"{"timestamp":"#), "{line}");
        assert!(
            line.ends_with(
                r#","name":"offsets_committed","offsets":[],"error":"boom","success":false}"#
            ),
            "{line}"
        );
    }
}
