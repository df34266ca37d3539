//! Topic-name legality, as Kafka's `org.apache.kafka.common.internals.Topic.validate` decides
//! it: 1 to 249 characters, each an ASCII letter or digit, `.`, `_` or `-`, and not `.` or
//! `..` (those would be directory names in a broker's log dir).
//!
//! The consumer checks names where the application hands them over (`subscribe`, `assign`), so
//! a name no broker can ever serve fails the call that introduced it instead of leaving the
//! consumer polling a topic that cannot exist. Java's consumer leaves that to the broker (its
//! `poll` throws `InvalidTopicException` once Metadata answers INVALID_TOPIC_EXCEPTION); a
//! broker's answer still surfaces from `poll` here too, for the names only the broker refuses
//! (e.g. TOPIC_AUTHORIZATION_FAILED).

use crate::error::Error;

/// Kafka's `Topic.MAX_NAME_LENGTH`: a partition's directory is `<topic>-<partition>`, and 249
/// leaves room for the partition suffix within a 255-byte file name.
pub const MAX_TOPIC_NAME_LENGTH: usize = 249;

/// Why `name` is not a legal topic name, in Kafka's words, or `None` when it is legal.
pub fn invalid_topic_reason(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the empty string is not allowed".to_owned());
    }
    if name == "." || name == ".." {
        return Some(format!("'{name}' is not allowed"));
    }
    // Only ASCII is legal, so counting chars (Java counts UTF-16 units) decides the same way
    // for every name that passes the character check below; counting chars keeps a long
    // non-ASCII name reported for its length first, as Kafka does.
    let length = name.chars().count();
    if length > MAX_TOPIC_NAME_LENGTH {
        return Some(format!(
            "the length of '{name}' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}"
        ));
    }
    let legal = name
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'));
    if !legal {
        return Some(format!(
            "'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' \
             and '-'"
        ));
    }
    None
}

/// Whether `name` is a legal topic name.
pub fn is_valid_topic_name(name: &str) -> bool {
    invalid_topic_reason(name).is_none()
}

/// `Ok` for a legal topic name, else [`Error::InvalidTopic`] naming it and saying why.
pub fn validate_topic_name(name: &str) -> Result<(), Error> {
    match invalid_topic_reason(name) {
        None => Ok(()),
        Some(reason) => Err(Error::InvalidTopic {
            topics: vec![name.to_owned()],
            reason,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_names() {
        let longest = "a".repeat(MAX_TOPIC_NAME_LENGTH);
        for name in [
            "orders",
            "a",
            "A.b_c-9",
            "...",
            "._-",
            "__consumer_offsets",
            &longest,
        ] {
            assert!(is_valid_topic_name(name), "{name:?}");
            assert!(validate_topic_name(name).is_ok(), "{name:?}");
        }
    }

    #[test]
    fn illegal_names_with_kafkas_reasons() {
        let too_long = "a".repeat(MAX_TOPIC_NAME_LENGTH + 1);
        let cases = [
            ("", "the empty string is not allowed".to_owned()),
            (".", "'.' is not allowed".to_owned()),
            ("..", "'..' is not allowed".to_owned()),
            (
                too_long.as_str(),
                format!("the length of '{too_long}' is longer than the max allowed length 249"),
            ),
            (
                "bad!topic",
                "'bad!topic' contains one or more characters other than ASCII alphanumerics, \
                 '.', '_' and '-'"
                    .to_owned(),
            ),
        ];
        for (name, reason) in cases {
            assert_eq!(invalid_topic_reason(name).as_deref(), Some(reason.as_str()));
            let Err(Error::InvalidTopic { topics, reason: r }) = validate_topic_name(name) else {
                panic!("{name:?} must be refused");
            };
            assert_eq!((topics, r), (vec![name.to_owned()], reason));
        }
        for name in [
            "with space",
            "tab\t",
            "slash/",
            "colon:",
            "é",
            "ü-topic",
            "a\0",
        ] {
            assert!(!is_valid_topic_name(name), "{name:?}");
        }
    }

    #[test]
    fn the_error_names_the_topic() {
        let error = validate_topic_name("bad!topic").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("bad!topic"), "{text}");
        assert!(!error.is_retriable());
    }
}
