//! DescribeConfigs, IncrementalAlterConfigs and AlterConfigs on a broker: Kafka's answers for
//! topics and brokers, the round trip of a change, and the errors of each check.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::test_support::{answer, TestBroker};
use super::{alter_configs, describe_configs, incremental_alter_configs};

const TOPIC: i8 = 2;
const BROKER: i8 = 4;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_owned())
}

fn describe(tb: &TestBroker, resources: &[(i8, &str)]) -> DescribeConfigsResponse {
    let request = DescribeConfigsRequest::default()
        .with_include_synonyms(true)
        .with_resources(
            resources
                .iter()
                .map(|(t, n)| {
                    DescribeConfigsResource::default()
                        .with_resource_type(*t)
                        .with_resource_name(s(n))
                        .with_configuration_keys(None)
                })
                .collect(),
        );
    answer(describe_configs::handle(&tb.ctx(4), request))
}

/// (value, source) of config `name` of the topic.
fn topic_config(tb: &TestBroker, topic: &str, name: &str) -> (Option<String>, i8) {
    let described = describe(tb, &[(TOPIC, topic)]);
    let result = &described.results[0];
    assert_eq!(result.error_code, 0, "{result:?}");
    let config = result
        .configs
        .iter()
        .find(|c| c.name.as_str() == name)
        .unwrap_or_else(|| panic!("no {name}"));
    (
        config.value.as_ref().map(|v| v.to_string()),
        config.config_source,
    )
}

/// (name, operation, value) of one config change.
type Change<'a> = (&'a str, i8, Option<&'a str>);

/// (error code, message) of each resource of an IncrementalAlterConfigs.
fn incremental(
    tb: &TestBroker,
    resources: &[(i8, &str, &[Change<'_>])],
) -> Vec<(i16, Option<String>)> {
    use kafka_protocol::messages::incremental_alter_configs_request::*;
    let request = IncrementalAlterConfigsRequest::default().with_resources(
        resources
            .iter()
            .map(|(t, n, configs)| {
                AlterConfigsResource::default()
                    .with_resource_type(*t)
                    .with_resource_name(s(n))
                    .with_configs(
                        configs
                            .iter()
                            .map(|(name, op, value)| {
                                AlterableConfig::default()
                                    .with_name(s(name))
                                    .with_config_operation(*op)
                                    .with_value(value.map(s))
                            })
                            .collect(),
                    )
            })
            .collect(),
    );
    answer(incremental_alter_configs::handle(&tb.ctx(1), request))
        .responses
        .iter()
        .map(|r| {
            (
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect()
}

fn legacy(tb: &TestBroker, topic: &str, configs: &[(&str, Option<&str>)]) -> (i16, Option<String>) {
    use kafka_protocol::messages::alter_configs_request::*;
    let request =
        AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(TOPIC)
            .with_resource_name(s(topic))
            .with_configs(
                configs
                    .iter()
                    .map(|(n, v)| {
                        AlterableConfig::default()
                            .with_name(s(n))
                            .with_value(v.map(s))
                    })
                    .collect(),
            )]);
    let response = answer(alter_configs::handle(&tb.ctx(2), request));
    let r = &response.responses[0];
    (
        r.error_code,
        r.error_message.as_ref().map(|m| m.to_string()),
    )
}

const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

#[test]
fn a_topic_describes_kafkas_defaults_until_a_change_round_trips() {
    let tb = TestBroker::new(1, &[("t", 1)]);
    assert_eq!(
        topic_config(&tb, "t", "retention.ms"),
        (Some("604800000".into()), 5)
    );
    assert_eq!(
        topic_config(&tb, "t", "cleanup.policy"),
        (Some("delete".into()), 5)
    );
    assert_eq!(
        topic_config(&tb, "t", "min.insync.replicas"),
        (Some("1".into()), 3)
    );

    let set = [
        ("retention.ms", SET, Some("3600000")),
        ("cleanup.policy", APPEND, Some("compact")),
    ];
    assert_eq!(incremental(&tb, &[(TOPIC, "t", &set)]), vec![(0, None)]);
    assert_eq!(
        topic_config(&tb, "t", "retention.ms"),
        (Some("3600000".into()), 1)
    );
    assert_eq!(
        topic_config(&tb, "t", "cleanup.policy"),
        (Some("delete,compact".into()), 1)
    );
    let remove = [("cleanup.policy", SUBTRACT, Some("delete"))];
    assert_eq!(incremental(&tb, &[(TOPIC, "t", &remove)]), vec![(0, None)]);
    assert_eq!(
        topic_config(&tb, "t", "cleanup.policy"),
        (Some("compact".into()), 1)
    );
    assert!(!tb.controller().read().topics["t"].honoured().delete_policy);

    // LogAppendTime is honoured by Produce (`TopicState::honoured`).
    let stamp = [
        ("message.timestamp.type", SET, Some("LogAppendTime")),
        ("retention.ms", DELETE, None),
    ];
    assert_eq!(incremental(&tb, &[(TOPIC, "t", &stamp)]), vec![(0, None)]);
    assert!(
        tb.controller().read().topics["t"]
            .honoured()
            .log_append_time
    );
    assert_eq!(
        topic_config(&tb, "t", "retention.ms"),
        (Some("604800000".into()), 5)
    );

    // The legacy form replaces everything: cleanup.policy and the timestamp type go back.
    assert_eq!(
        legacy(&tb, "t", &[("retention.bytes", Some("1000"))]),
        (0, None)
    );
    assert_eq!(
        topic_config(&tb, "t", "retention.bytes"),
        (Some("1000".into()), 1)
    );
    assert_eq!(
        topic_config(&tb, "t", "cleanup.policy"),
        (Some("delete".into()), 5)
    );
    assert!(
        !tb.controller().read().topics["t"]
            .honoured()
            .log_append_time
    );
}

#[test]
fn alter_errors_are_kafkas() {
    let tb = TestBroker::new(1, &[("t", 1)]);
    let invalid_config = ResponseError::InvalidConfig.code();
    let invalid_request = ResponseError::InvalidRequest.code();
    let unknown = [("no.such.config", SET, Some("1"))];
    let bad = [("retention.ms", SET, Some("abc"))];
    let fine = [("retention.ms", SET, Some("1"))];
    let not_list = [("retention.ms", APPEND, Some("1"))];
    let null = [("retention.ms", SET, None)];
    let twice = [
        ("retention.ms", SET, Some("1")),
        ("retention.ms", SET, Some("2")),
    ];
    let answers = incremental(
        &tb,
        &[
            (TOPIC, "t", &unknown),
            (TOPIC, "missing", &bad),
            (TOPIC, "missing2", &fine),
            (TOPIC, "t2", &not_list),
            (TOPIC, "t3", &null),
            (TOPIC, "t4", &twice),
            (TOPIC, "", &fine),
            (TOPIC, "bad name!", &fine),
            (BROKER, "7", &fine),
            (BROKER, "x", &fine),
            (BROKER, "1", &fine),
            (99, "r", &fine),
            (8, "1", &fine),
        ],
    );
    let expected: Vec<(i16, Option<String>)> = vec![
        (
            invalid_config,
            Some("Unknown topic config name: no.such.config".into()),
        ),
        (
            invalid_config,
            Some(
                "Invalid value abc for configuration retention.ms: Not a number of type LONG"
                    .into(),
            ),
        ),
        (
            ResponseError::UnknownTopicOrPartition.code(),
            Some("The topic 'missing2' does not exist.".into()),
        ),
        (
            invalid_config,
            Some("Can't APPEND to key retention.ms because its type is not LIST.".into()),
        ),
        (
            invalid_request,
            Some("Null value not supported for : retention.ms".into()),
        ),
        (
            invalid_request,
            Some("Error due to duplicate config keys".into()),
        ),
        (
            invalid_request,
            Some("Default topic resources are not allowed.".into()),
        ),
        (
            ResponseError::InvalidTopicException.code(),
            Some(
                "Topic name is invalid: 'bad name!' contains one or more characters other than \
                 ASCII alphanumerics, '.', '_' and '-'"
                    .into(),
            ),
        ),
        (
            invalid_request,
            Some("Unexpected broker id, expected 1, but received 7".into()),
        ),
        (
            invalid_request,
            Some("Node id must be an integer, but it is: x".into()),
        ),
        (
            invalid_request,
            Some("Dynamic broker configs are not modelled by the simulated broker".into()),
        ),
        (invalid_request, Some("Unknown resource type 99".into())),
        (
            invalid_request,
            Some("Broker loggers are not modelled by the simulated broker".into()),
        ),
    ];
    assert_eq!(answers, expected);
    // A resource named twice fails both times; nothing was applied anywhere.
    let answers = incremental(&tb, &[(TOPIC, "t", &fine), (TOPIC, "t", &fine)]);
    let twice = (
        invalid_request,
        Some("Each resource must appear at most once.".into()),
    );
    assert_eq!(answers, vec![twice.clone(), twice]);
    assert!(tb.controller().read().topics["t"].configs.is_empty());
    // Deleting what the topic does not set is no change, so even an unknown name passes.
    let delete_unknown = [("no.such.config", DELETE, None)];
    assert_eq!(
        incremental(&tb, &[(TOPIC, "t", &delete_unknown)]),
        vec![(0, None)]
    );
    // The legacy form checks the same way.
    assert_eq!(
        legacy(&tb, "t", &[("cleanup.policy", Some("Compact"))]),
        (
            invalid_config,
            Some(
                "Invalid value Compact for configuration cleanup.policy: String must be one of: \
                 compact, delete"
                    .into()
            )
        )
    );
    assert_eq!(
        legacy(&tb, "t", &[("retention.ms", None)]).1.as_deref(),
        Some("Null value not supported for : retention.ms")
    );
}

#[test]
fn validate_only_changes_nothing() {
    use kafka_protocol::messages::incremental_alter_configs_request::*;
    let tb = TestBroker::new(1, &[("t", 1)]);
    let request = IncrementalAlterConfigsRequest::default()
        .with_validate_only(true)
        .with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(TOPIC)
            .with_resource_name(s("t"))
            .with_configs(vec![AlterableConfig::default()
                .with_name(s("retention.ms"))
                .with_value(Some(s("5")))])]);
    let response = answer(incremental_alter_configs::handle(&tb.ctx(1), request));
    assert_eq!(response.responses[0].error_code, 0);
    assert_eq!(
        topic_config(&tb, "t", "retention.ms"),
        (Some("604800000".into()), 5)
    );
}

#[test]
fn describe_errors_and_brokers_are_kafkas() {
    let tb = TestBroker::new(2, &[("t", 1)]);
    let described = describe(
        &tb,
        &[
            (TOPIC, "missing"),
            (TOPIC, ""),
            (BROKER, "2"),
            (BROKER, "x"),
            (8, "1"),
        ],
    );
    let codes: Vec<(i16, Option<String>)> = described
        .results
        .iter()
        .map(|r| {
            (
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect();
    assert_eq!(
        codes,
        vec![
            (ResponseError::UnknownTopicOrPartition.code(), None),
            (
                ResponseError::InvalidTopicException.code(),
                Some("Topic name is invalid: the empty string is not allowed".into())
            ),
            (
                ResponseError::InvalidRequest.code(),
                Some("Unexpected broker id, expected 1 or empty string, but received 2".into())
            ),
            (
                ResponseError::InvalidRequest.code(),
                Some("Broker id must be an integer, but it is: x".into())
            ),
            (
                ResponseError::InvalidRequest.code(),
                Some("Broker loggers are not modelled by the simulated broker".into())
            ),
        ]
    );
    // An unknown resource type fails every resource of the request, as in Kafka.
    let described = describe(&tb, &[(TOPIC, "t"), (77, "x")]);
    assert!(described
        .results
        .iter()
        .all(|r| r.error_code == ResponseError::InvalidRequest.code()
            && r.error_message.as_deref()
                == Some("Unexpected resource type UNKNOWN for resource x")));

    // This broker: the cluster settings, with static sources where they differ from Kafka's
    // defaults (`auto.create.topics.enable` is off in the simulator).
    let described = describe(&tb, &[(BROKER, "1"), (BROKER, "")]);
    let broker = &described.results[0];
    assert_eq!(broker.error_code, 0);
    let get = |name: &str| {
        broker
            .configs
            .iter()
            .find(|c| c.name.as_str() == name)
            .unwrap()
    };
    assert_eq!(get("node.id").value.as_deref(), Some("1"));
    let auto_create = get("auto.create.topics.enable");
    assert_eq!(
        (auto_create.value.as_deref(), auto_create.config_source),
        (Some("false"), 4)
    );
    assert_eq!(auto_create.synonyms.len(), 2);
    assert!(auto_create.read_only);
    let retention = get("log.retention.hours");
    assert_eq!(
        (retention.value.as_deref(), retention.config_source),
        (Some("168"), 5)
    );
    assert!(get("log.retention.ms").value.is_none());
    let defaults = &described.results[1];
    assert_eq!(defaults.configs.len(), 1);
    assert_eq!(defaults.configs[0].name.as_str(), "min.insync.replicas");
    assert_eq!(defaults.configs[0].config_source, 3);

    // `configuration_keys` picks configs; without synonyms asked, none are listed.
    let request =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(TOPIC)
            .with_resource_name(s("t"))
            .with_configuration_keys(Some(vec![s("segment.bytes")]))]);
    let described = answer(describe_configs::handle(&tb.ctx(1), request));
    let configs = &described.results[0].configs;
    assert_eq!(configs.len(), 1);
    assert!(configs[0].synonyms.is_empty());
    assert_eq!(configs[0].value.as_deref(), Some("1073741824"));
}
