//! CreateTopics (19): creates topics at once (our controller commits instantly), with Kafka's
//! defaults for -1 partitions / replication factor and its validation errors.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::broker::dispatch::RequestCtx;
use crate::controller::{validate_topic_name, TopicError};
use crate::topic_config::{self, InvalidConfig};
use kafka_consumer::topic_name::invalid_topic_reason;

pub(crate) fn topic_error_code(error: TopicError) -> ResponseError {
    match error {
        TopicError::AlreadyExists => ResponseError::TopicAlreadyExists,
        TopicError::InvalidName => ResponseError::InvalidTopicException,
        TopicError::InvalidPartitions => ResponseError::InvalidPartitions,
        TopicError::InvalidReplicationFactor => ResponseError::InvalidReplicationFactor,
        TopicError::InvalidReplicaAssignment => ResponseError::InvalidReplicaAssignment,
        TopicError::UnknownTopic => ResponseError::UnknownTopicOrPartition,
        TopicError::InvalidRequest => ResponseError::InvalidRequest,
        TopicError::InvalidConfig => ResponseError::InvalidConfig,
    }
}

/// Kafka's `Errors.UNKNOWN_TOPIC_OR_PARTITION.message()`, the message of a DeleteTopics answer
/// for a topic that does not exist (whatever its name).
pub(crate) const UNKNOWN_TOPIC_MESSAGE: &str = "This server does not host this topic-partition.";

/// The topic's configs, checked and normalized as Kafka's controller does before creating it
/// (`LogConfig.validate`: an unknown name or a bad value is INVALID_CONFIG).
fn topic_configs(
    topic: &create_topics_request::CreatableTopic,
) -> Result<BTreeMap<String, String>, InvalidConfig> {
    let mut configs = BTreeMap::new();
    for config in &topic.configs {
        let name = config.name.as_str();
        let value = config.value.as_ref().ok_or_else(|| {
            InvalidConfig(format!(
                "Null value not supported for topic configs: {name}"
            ))
        })?;
        configs.insert(name.to_owned(), topic_config::normalize(name, value)?);
    }
    Ok(configs)
}

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let version = ctx.version;
    let results = ctx.broker.controller.update(|state| {
        request
            .topics
            .iter()
            .map(|topic| {
                let partitions = if topic.num_partitions == -1 {
                    state.config.num_partitions
                } else {
                    topic.num_partitions
                };
                let rf = if topic.replication_factor == -1 {
                    state.config.default_replication_factor(state.brokers.len())
                } else {
                    topic.replication_factor
                };
                let assignment = (!topic.assignments.is_empty()).then(|| {
                    topic
                        .assignments
                        .iter()
                        .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
                        .collect()
                });
                let name = topic.name.0.as_str();
                // The name first, with or without `validate_only` (Kafka's controller runs
                // `Topic.validate` before anything else).
                let configs = topic_configs(topic);
                let checked = validate_topic_name(name)
                    .and_then(|()| configs.clone().map_err(|_| TopicError::InvalidConfig));
                let result = match checked {
                    Err(error) => Err(error),
                    Ok(_) if request.validate_only => {
                        if state.topics.contains_key(name) {
                            Err(TopicError::AlreadyExists)
                        } else {
                            Ok(Uuid::nil())
                        }
                    }
                    Ok(configs) => state
                        .create_topic(name, partitions, rf, assignment)
                        .and_then(|id| state.set_topic_configs(name, configs).map(|()| id)),
                };
                let mut out = CreatableTopicResult::default().with_name(topic.name.clone());
                match result {
                    Ok(topic_id) => {
                        if version >= 7 {
                            out = out.with_topic_id(topic_id);
                        }
                        if version >= 5 {
                            let created = state.topics.get(topic.name.0.as_str());
                            let partitions =
                                created.map_or(partitions, |t| t.partitions.len() as i32);
                            let rf = created
                                .and_then(|t| t.partitions.first())
                                .map_or(rf, |p| p.replicas.len() as i16);
                            out = out
                                .with_num_partitions(partitions)
                                .with_replication_factor(rf)
                                .with_configs(Some(Vec::new()));
                        }
                    }
                    Err(error) => {
                        let message = match invalid_topic_reason(name) {
                            // Kafka's message names the rule the name breaks.
                            Some(reason) if error == TopicError::InvalidName => {
                                format!("Topic name is invalid: {reason}")
                            }
                            _ if error == TopicError::InvalidConfig => configs
                                .err()
                                .map_or_else(|| topic_error_code(error).to_string(), |e| e.0),
                            _ => topic_error_code(error).to_string(),
                        };
                        let error = topic_error_code(error);
                        out = out.with_error_code(error.code());
                        if version >= 1 {
                            out = out.with_error_message(Some(StrBytes::from_string(message)));
                        }
                        if version >= 5 {
                            out = out
                                .with_num_partitions(-1)
                                .with_replication_factor(-1)
                                .with_configs(None);
                        }
                    }
                }
                out
            })
            .collect()
    });
    CreateTopicsResponse::default().with_topics(results)
}

pub(crate) fn error_response(
    ctx: &RequestCtx<'_>,
    request: &CreateTopicsRequest,
    code: i16,
) -> CreateTopicsResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let out = CreatableTopicResult::default()
                .with_name(t.name.clone())
                .with_error_code(code);
            if ctx.version >= 5 {
                out.with_num_partitions(-1)
                    .with_replication_factor(-1)
                    .with_configs(None)
            } else {
                out
            }
        })
        .collect();
    CreateTopicsResponse::default().with_topics(topics)
}
