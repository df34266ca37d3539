//! What AlterConfigs and IncrementalAlterConfigs share: the broker's preprocessing of each
//! resource (`ConfigAdminManager.preprocess`) and the controller's change of a topic's configs
//! (`ConfigurationControlManager` with `ControllerConfigurationValidator`).
//!
//! Order of checks, as Kafka's: a resource named twice fails both of its entries; then per
//! resource a config named twice, a null value (other than a DELETE), and the resource type
//! (an unknown id, or a broker id other than this broker's) on the broker; then on the
//! controller the topic name, every resulting config (unknown names and bad values are
//! INVALID_CONFIG with `LogConfig.validate`'s messages), and last whether the topic exists.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;

use super::config_resource::{
    duplicate_keys, not_modelled, validate_broker_name, validate_topic, ApiError, ResourceType,
};
use crate::broker::dispatch::RequestCtx;
use crate::controller::ClusterState;
use crate::topic_config::normalize;

/// Alters each of `resources` in request order under one cluster-state update and answers
/// each: a resource named twice (same type and name, as `key` gives them) fails both of its
/// entries with "Each resource must appear at most once.", as Kafka answers; the others get
/// `alter`'s outcome.
pub(crate) fn alter_each<R, A>(
    ctx: &RequestCtx<'_>,
    resources: &[R],
    key: impl Fn(&R) -> (i8, &str),
    alter: impl Fn(&mut ClusterState, i32, &R) -> Result<(), ApiError>,
    answer: impl Fn(&R, Option<ApiError>) -> A,
) -> Vec<A> {
    let keys: Vec<(i8, &str)> = resources.iter().map(&key).collect();
    let node_id = ctx.broker.node_id;
    ctx.broker.controller.update(|state| {
        resources
            .iter()
            .zip(&keys)
            .map(|(resource, k)| {
                let twice = keys.iter().filter(|other| *other == k).count() > 1;
                let outcome = if twice {
                    Err(ApiError::new(
                        ResponseError::InvalidRequest,
                        "Each resource must appear at most once.",
                    ))
                } else {
                    alter(state, node_id, resource)
                };
                answer(resource, outcome.err())
            })
            .collect()
    })
}

/// `ConfigAdminManager.preprocess` for one resource: `configs` are the names with whether each
/// has a null value that its operation needs. Ok means a topic to hand to the controller.
pub(crate) fn preprocess(
    resource_type: i8,
    name: &str,
    node_id: i32,
    configs: &[(&str, bool)],
) -> Result<(), ApiError> {
    if let Some(error) = duplicate_keys(configs.iter().map(|(n, _)| *n)) {
        return Err(error);
    }
    let nulls: Vec<&str> = configs
        .iter()
        .filter(|(_, null)| *null)
        .map(|(n, _)| *n)
        .collect();
    if !nulls.is_empty() {
        return Err(ApiError::new(
            ResponseError::InvalidRequest,
            format!("Null value not supported for : {}", nulls.join(", ")),
        ));
    }
    match ResourceType::from_id(resource_type) {
        ResourceType::Topic => Ok(()),
        ResourceType::Broker => {
            validate_broker_name(name, node_id)?;
            Err(not_modelled("Dynamic broker configs"))
        }
        ResourceType::BrokerLogger => Err(not_modelled("Broker loggers")),
        ResourceType::ClientMetrics => Err(not_modelled("Client metrics subscriptions")),
        ResourceType::Group => Err(not_modelled("Group configs")),
        ResourceType::Unknown => Err(ApiError::new(
            ResponseError::InvalidRequest,
            format!("Unknown resource type {resource_type}"),
        )),
    }
}

/// The configs set on topic `name` now, to compute a change from (empty for a missing topic:
/// Kafka validates the change before it checks that the topic exists).
pub(crate) fn current_topic_configs(state: &ClusterState, name: &str) -> BTreeMap<String, String> {
    state
        .topics
        .get(name)
        .map(|t| t.configs.clone())
        .unwrap_or_default()
}

/// The controller's part: checks the topic name and the full set of configs `wanted` (values
/// as sent), then that the topic exists, and unless `validate_only` makes them the topic's.
pub(crate) fn alter_topic(
    state: &mut ClusterState,
    name: &str,
    wanted: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), ApiError> {
    if name.is_empty() {
        return Err(ApiError::new(
            ResponseError::InvalidRequest,
            "Default topic resources are not allowed.",
        ));
    }
    validate_topic(name)?;
    let mut configs = BTreeMap::new();
    for (key, value) in wanted {
        let normalized = normalize(&key, &value)
            .map_err(|e| ApiError::new(ResponseError::InvalidConfig, e.0))?;
        configs.insert(key, normalized);
    }
    if !state.topics.contains_key(name) {
        return Err(ApiError::new(
            ResponseError::UnknownTopicOrPartition,
            format!("The topic '{name}' does not exist."),
        ));
    }
    if !validate_only {
        state
            .set_topic_configs(name, configs)
            .map_err(|_| ApiError::bare(ResponseError::UnknownTopicOrPartition))?;
    }
    Ok(())
}
