//! The values and messages below are what Kafka 4.1.1's `LogConfig.validate` answered for the
//! same input.

use super::*;

fn refused(name: &str, value: &str) -> String {
    normalize(name, value).unwrap_err().0
}

#[test]
fn table_is_sorted_and_defaults_pass_their_own_checks() {
    let names: Vec<&str> = TOPIC_CONFIGS.iter().map(|d| d.name).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    for def in &TOPIC_CONFIGS {
        assert_eq!(
            normalize(def.name, def.default).as_deref(),
            Ok(def.default),
            "{}",
            def.name
        );
    }
}

#[test]
fn values_are_normalized_as_kafka_describes_them() {
    assert_eq!(normalize("retention.ms", " 100 ").unwrap(), "100");
    assert_eq!(normalize("preallocate", "TRUE").unwrap(), "true");
    assert_eq!(
        normalize("cleanup.policy", "compact, delete").unwrap(),
        "compact,delete"
    );
    assert_eq!(normalize("cleanup.policy", "").unwrap(), "");
    assert_eq!(
        normalize("leader.replication.throttled.replicas", "0:1, 1:2").unwrap(),
        "0:1,1:2"
    );
    assert_eq!(
        normalize("leader.replication.throttled.replicas", "*").unwrap(),
        "*"
    );
    assert_eq!(normalize("retention.bytes", "-7").unwrap(), "-7");
    assert_eq!(normalize("min.cleanable.dirty.ratio", "1").unwrap(), "1.0");
}

#[test]
fn bad_values_get_kafkas_messages() {
    assert_eq!(refused("nope", "1"), "Unknown topic config name: nope");
    assert_eq!(
        refused("retention.ms", "abc"),
        "Invalid value abc for configuration retention.ms: Not a number of type LONG"
    );
    assert_eq!(
        refused("retention.ms", "-5"),
        "Invalid value -5 for configuration retention.ms: Value must be at least -1"
    );
    assert_eq!(
        refused("retention.ms", "99999999999999999999"),
        "Invalid value 99999999999999999999 for configuration retention.ms: Not a number of type LONG"
    );
    assert_eq!(
        refused("segment.bytes", "1.5"),
        "Invalid value 1.5 for configuration segment.bytes: Not a number of type INT"
    );
    assert_eq!(
        refused("cleanup.policy", "Compact"),
        "Invalid value Compact for configuration cleanup.policy: String must be one of: compact, delete"
    );
    assert_eq!(
        refused("cleanup.policy", ","),
        "Invalid value  for configuration cleanup.policy: String must be one of: compact, delete"
    );
    assert_eq!(
        refused("message.timestamp.type", "logappendtime"),
        "Invalid value logappendtime for configuration message.timestamp.type: String must be \
         one of: CreateTime, LogAppendTime"
    );
    assert_eq!(
        refused("min.cleanable.dirty.ratio", "1e1"),
        "Invalid value 10.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"
    );
    assert_eq!(
        refused("preallocate", "maybe"),
        "Invalid value maybe for configuration preallocate: Expected value to be either true or false"
    );
    assert_eq!(
        refused("compression.gzip.level", "10"),
        "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 and 9 \
         or equal to -1"
    );
    assert_eq!(
        refused("compression.zstd.level", "99"),
        "Invalid value 99 for configuration compression.zstd.level: Value must be no more than 22"
    );
    assert!(
        refused("leader.replication.throttled.replicas", "foo").starts_with(
            "Invalid value [foo] for configuration leader.replication.throttled.replicas: \
         leader.replication.throttled.replicas must be the literal '*'"
        )
    );
}

#[test]
fn describe_reports_sources_and_synonyms_as_kafka_does() {
    let mut overrides = BTreeMap::new();
    overrides.insert("retention.ms".to_owned(), "3600000".to_owned());
    overrides.insert("cleanup.policy".to_owned(), "compact".to_owned());
    let described = describe_topic(&overrides);
    assert_eq!(described.len(), TOPIC_CONFIGS.len());
    let get = |name: &str| described.iter().find(|d| d.name == name).unwrap().clone();
    let retention = get("retention.ms");
    assert_eq!(retention.value.as_deref(), Some("3600000"));
    assert_eq!(retention.source, ConfigSource::DynamicTopicConfig);
    assert_eq!(
        retention.synonyms.len(),
        1,
        "log.retention.ms has no default"
    );
    let cleanup = get("cleanup.policy");
    assert_eq!(
        cleanup.synonyms,
        vec![
            (
                "cleanup.policy".to_owned(),
                Some("compact".to_owned()),
                ConfigSource::DynamicTopicConfig
            ),
            (
                "log.cleanup.policy".to_owned(),
                Some("delete".to_owned()),
                ConfigSource::DefaultConfig
            ),
        ]
    );
    let segment_ms = get("segment.ms");
    assert_eq!(segment_ms.source, ConfigSource::DefaultConfig);
    assert!(segment_ms.synonyms.is_empty());
    assert_eq!(
        get("min.insync.replicas").source,
        ConfigSource::DynamicDefaultBrokerConfig
    );
    assert!(!honoured(&overrides).delete_policy);
    assert!(honoured(&BTreeMap::new()).delete_policy);
}
