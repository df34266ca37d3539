//! DeleteTopics (20): by name (v0–5 `topic_names`, v6 `topics`) or by id (v6).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::create_topics::{topic_error_code, UNKNOWN_TOPIC_MESSAGE};
use crate::broker::dispatch::RequestCtx;

/// (name, id) of each topic the request names.
fn targets(version: i16, request: &DeleteTopicsRequest) -> Vec<(Option<TopicName>, Uuid)> {
    if version >= 6 {
        request
            .topics
            .iter()
            .map(|t| (t.name.clone(), t.topic_id))
            .collect()
    } else {
        request
            .topic_names
            .iter()
            .map(|n| (Some(n.clone()), Uuid::nil()))
            .collect()
    }
}

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let version = ctx.version;
    let responses = ctx.broker.controller.update(|state| {
        targets(version, &request)
            .into_iter()
            .map(|(name, topic_id)| {
                let resolved = match &name {
                    Some(name) => Ok(name.0.to_string()),
                    None => state
                        .topic_by_id(topic_id)
                        .map(|t| t.name.clone())
                        .ok_or(ResponseError::UnknownTopicId),
                };
                let result = resolved.and_then(|n| {
                    state
                        .delete_topic(&n)
                        .map(|id| (n, id))
                        .map_err(topic_error_code)
                });
                let mut out = DeletableTopicResult::default();
                match result {
                    Ok((n, id)) => {
                        out = out.with_name(Some(TopicName(StrBytes::from_string(n))));
                        if version >= 6 {
                            out = out.with_topic_id(id);
                        }
                    }
                    Err(error) => {
                        out = out.with_name(name).with_error_code(error.code());
                        if version >= 6 {
                            out = out.with_topic_id(topic_id);
                        }
                        if version >= 5 {
                            let message = if error == ResponseError::UnknownTopicOrPartition {
                                UNKNOWN_TOPIC_MESSAGE.to_owned()
                            } else {
                                error.to_string()
                            };
                            out = out.with_error_message(Some(StrBytes::from_string(message)));
                        }
                    }
                }
                out
            })
            .collect()
    });
    DeleteTopicsResponse::default().with_responses(responses)
}

pub(crate) fn error_response(
    ctx: &RequestCtx<'_>,
    request: &DeleteTopicsRequest,
    code: i16,
) -> DeleteTopicsResponse {
    let responses = targets(ctx.version, request)
        .into_iter()
        .map(|(name, topic_id)| {
            let out = DeletableTopicResult::default()
                .with_name(name)
                .with_error_code(code);
            if ctx.version >= 6 {
                out.with_topic_id(topic_id)
            } else {
                out
            }
        })
        .collect();
    DeleteTopicsResponse::default().with_responses(responses)
}
