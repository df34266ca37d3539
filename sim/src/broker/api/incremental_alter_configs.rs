//! IncrementalAlterConfigs (44): SET, DELETE, APPEND and SUBTRACT on a topic's configs, as
//! Kafka's controller applies them (`ConfigurationControlManager.incrementalAlterConfigResource`);
//! the checks are in [`super::config_alter`].
//!
//! APPEND and SUBTRACT work on LIST configs only (INVALID_CONFIG "Can't APPEND to key … because
//! its type is not LIST."), starting from the topic's value or else the default, splitting the
//! operand on commas; APPEND skips elements already present. Deleting a config the topic does
//! not set changes nothing, so it is not checked (Kafka writes no record for it), even for a
//! name Kafka does not know. Results come in request order, as Kafka reassembles them.
//!
//! Difference: an operation id other than 0–3 is INVALID_REQUEST here; Kafka's controller
//! fails on it with an internal error.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::*;

use super::config_alter::{alter_each, alter_topic, current_topic_configs, preprocess};
use super::config_resource::ApiError;
use crate::broker::dispatch::RequestCtx;
use crate::controller::ClusterState;
use crate::topic_config::{definition, is_list};

const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let validate_only = request.validate_only;
    let responses = alter_each(
        ctx,
        &request.resources,
        |r| (r.resource_type, r.resource_name.as_str()),
        |state, node_id, resource| alter(state, node_id, resource, validate_only),
        answer,
    );
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

fn alter(
    state: &mut ClusterState,
    node_id: i32,
    resource: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), ApiError> {
    let name = resource.resource_name.as_str();
    let configs: Vec<(&str, bool)> = resource
        .configs
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.config_operation != DELETE && c.value.is_none(),
            )
        })
        .collect();
    preprocess(resource.resource_type, name, node_id, &configs)?;
    let mut wanted = current_topic_configs(state, name);
    for config in &resource.configs {
        let key = config.name.as_str();
        let operand = config.value.as_ref().map_or("", |v| v.as_str());
        match config.config_operation {
            SET => {
                wanted.insert(key.to_owned(), operand.to_owned());
            }
            DELETE => {
                wanted.remove(key);
            }
            op @ (APPEND | SUBTRACT) => {
                let verb = if op == APPEND { "APPEND" } else { "SUBTRACT" };
                if !is_list(key) {
                    return Err(ApiError::new(
                        ResponseError::InvalidConfig,
                        format!("Can't {verb} to key {key} because its type is not LIST."),
                    ));
                }
                let mut parts = list_parts(&wanted, key);
                for element in operand.split(',') {
                    if op == APPEND {
                        if !parts.iter().any(|p| p == element) {
                            parts.push(element.to_owned());
                        }
                    } else if let Some(at) = parts.iter().position(|p| p == element) {
                        parts.remove(at);
                    }
                }
                wanted.insert(key.to_owned(), parts.join(","));
            }
            other => {
                return Err(ApiError::new(
                    ResponseError::InvalidRequest,
                    format!("Unknown config operation {other} for {key}"),
                ))
            }
        }
    }
    alter_topic(state, name, wanted, validate_only)
}

/// `getParts`: the topic's value or else the default, as a list.
fn list_parts(configs: &BTreeMap<String, String>, key: &str) -> Vec<String> {
    let value = configs
        .get(key)
        .map(String::as_str)
        .or_else(|| definition(key).map(|d| d.default))
        .unwrap_or("");
    if value.is_empty() {
        return Vec::new();
    }
    value.split(',').map(|p| p.trim().to_owned()).collect()
}

fn answer(
    resource: &AlterConfigsResource,
    error: Option<ApiError>,
) -> AlterConfigsResourceResponse {
    let response = AlterConfigsResourceResponse::default()
        .with_resource_type(resource.resource_type)
        .with_resource_name(resource.resource_name.clone());
    match error {
        Some(error) => response
            .with_error_code(error.code())
            .with_error_message(error.message()),
        // Kafka's controller answers success with `ApiError.NONE`'s null message.
        None => response.with_error_message(None),
    }
}

/// `IncrementalAlterConfigsRequest.getErrorResponse`: `code` for every resource.
pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &IncrementalAlterConfigsRequest,
    code: i16,
) -> IncrementalAlterConfigsResponse {
    IncrementalAlterConfigsResponse::default().with_responses(
        request
            .resources
            .iter()
            .map(|r| answer(r, None).with_error_code(code))
            .collect(),
    )
}
