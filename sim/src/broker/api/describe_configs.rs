//! DescribeConfigs (32): a topic's configs (Kafka's names, defaults, sources and synonyms, and
//! what was set on the topic), and a broker's, as `ConfigHelper.describeConfigs` answers.
//!
//! Per resource, as Kafka:
//! - TOPIC: an illegal name is INVALID_TOPIC_EXCEPTION, an unknown topic
//!   UNKNOWN_TOPIC_OR_PARTITION (no message); otherwise every topic config
//!   ([`crate::topic_config`]).
//! - BROKER: the empty name is the cluster-wide dynamic defaults (`min.insync.replicas=1`, as a
//!   Kafka 4.x KRaft cluster holds); this broker's id is its configs (below); a non-integer
//!   name or another broker's id is INVALID_REQUEST with Kafka's messages.
//! - a type id Kafka does not know fails the whole request: every resource gets
//!   INVALID_REQUEST ("Unexpected resource type UNKNOWN for resource …"), as the exception
//!   Kafka throws while authorizing turns into the request's error response.
//!
//! Simplified: broker loggers, client metrics and group configs are not modelled
//! (INVALID_REQUEST saying so); a broker describes the configs behind the cluster settings and
//! the broker side of every topic config, not Kafka's ~330; documentation is never included.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::broker_configs::broker_entries;
use super::config_resource::{not_modelled, validate_topic, ApiError, ResourceType};
use crate::broker::dispatch::RequestCtx;
use crate::controller::ClusterState;
use crate::topic_config::{describe_topic, DescribedConfig};

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    if let Some(unknown) = request
        .resources
        .iter()
        .find(|r| ResourceType::from_id(r.resource_type) == ResourceType::Unknown)
    {
        let error = ApiError::new(
            ResponseError::InvalidRequest,
            format!(
                "Unexpected resource type UNKNOWN for resource {}",
                unknown.resource_name.as_str()
            ),
        );
        return failed_everywhere(&request, error.code(), error.message());
    }
    let state = ctx.broker.controller.read();
    let results = request
        .resources
        .iter()
        .map(|resource| {
            let result = DescribeConfigsResult::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            match describe(&state, ctx.broker.node_id, resource) {
                Ok(configs) => result.with_configs(
                    configs
                        .into_iter()
                        .filter(|c| wanted(resource, &c.name))
                        .map(|c| entry(c, request.include_synonyms))
                        .collect(),
                ),
                Err(error) => result
                    .with_error_code(error.code())
                    .with_error_message(error.message()),
            }
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

fn describe(
    state: &ClusterState,
    node_id: i32,
    resource: &describe_configs_request::DescribeConfigsResource,
) -> Result<Vec<DescribedConfig>, ApiError> {
    let name = resource.resource_name.as_str();
    match ResourceType::from_id(resource.resource_type) {
        ResourceType::Topic => {
            validate_topic(name)?;
            let topic = state
                .topics
                .get(name)
                .ok_or(ApiError::bare(ResponseError::UnknownTopicOrPartition))?;
            Ok(describe_topic(&topic.configs))
        }
        ResourceType::Broker => broker_entries(state, node_id, name),
        ResourceType::BrokerLogger => Err(not_modelled("Broker loggers")),
        ResourceType::ClientMetrics => Err(not_modelled("Client metrics subscriptions")),
        ResourceType::Group => Err(not_modelled("Group configs")),
        ResourceType::Unknown => Err(ApiError::new(
            ResponseError::InvalidRequest,
            "Unsupported resource type: UNKNOWN",
        )),
    }
}

/// `configurationKeys`: null or empty asks for every config.
fn wanted(resource: &describe_configs_request::DescribeConfigsResource, name: &str) -> bool {
    match &resource.configuration_keys {
        Some(keys) if !keys.is_empty() => keys.iter().any(|k| k.as_str() == name),
        _ => true,
    }
}

fn entry(config: DescribedConfig, include_synonyms: bool) -> DescribeConfigsResourceResult {
    let synonyms = if include_synonyms {
        config
            .synonyms
            .into_iter()
            .map(|(name, value, source)| {
                DescribeConfigsSynonym::default()
                    .with_name(StrBytes::from_string(name))
                    .with_value(value.map(StrBytes::from_string))
                    .with_source(source as i8)
            })
            .collect()
    } else {
        Vec::new()
    };
    DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(config.name))
        .with_value(config.value.map(StrBytes::from_string))
        .with_read_only(config.read_only)
        .with_config_source(config.source as i8)
        .with_is_sensitive(false)
        .with_synonyms(synonyms)
        .with_config_type(config.kind as i8)
        .with_documentation(None)
}

fn failed_everywhere(
    request: &DescribeConfigsRequest,
    code: i16,
    message: Option<StrBytes>,
) -> DescribeConfigsResponse {
    DescribeConfigsResponse::default().with_results(
        request
            .resources
            .iter()
            .map(|r| {
                DescribeConfigsResult::default()
                    .with_error_code(code)
                    .with_error_message(message.clone())
                    .with_resource_type(r.resource_type)
                    .with_resource_name(r.resource_name.clone())
            })
            .collect(),
    )
}

/// `DescribeConfigsRequest.getErrorResponse`: `code` for every resource.
pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &DescribeConfigsRequest,
    code: i16,
) -> DescribeConfigsResponse {
    failed_everywhere(request, code, None)
}
