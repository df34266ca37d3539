//! AlterConfigs (33), the legacy whole-resource form: the configs sent become the topic's
//! configs, and every config it set before but not now goes back to its default, as Kafka's
//! `ConfigurationControlManager.legacyAlterConfigResource` does. The checks are in
//! [`super::config_alter`]; results come in request order.

use std::collections::BTreeMap;

use kafka_protocol::messages::alter_configs_request::AlterConfigsResource;
use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::*;

use super::config_alter::{alter_each, alter_topic, preprocess};
use super::config_resource::ApiError;
use crate::broker::dispatch::RequestCtx;
use crate::controller::ClusterState;

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let validate_only = request.validate_only;
    let responses = alter_each(
        ctx,
        &request.resources,
        |r| (r.resource_type, r.resource_name.as_str()),
        |state, node_id, resource| alter(state, node_id, resource, validate_only),
        answer,
    );
    AlterConfigsResponse::default().with_responses(responses)
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
        .map(|c| (c.name.as_str(), c.value.is_none()))
        .collect();
    preprocess(resource.resource_type, name, node_id, &configs)?;
    let wanted: BTreeMap<String, String> = resource
        .configs
        .iter()
        .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
        .collect();
    alter_topic(state, name, wanted, validate_only)
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

/// `AlterConfigsRequest.getErrorResponse`: `code` for every resource.
pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &AlterConfigsRequest,
    code: i16,
) -> AlterConfigsResponse {
    AlterConfigsResponse::default().with_responses(
        request
            .resources
            .iter()
            .map(|r| answer(r, None).with_error_code(code))
            .collect(),
    )
}
