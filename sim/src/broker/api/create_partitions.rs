//! CreatePartitions (37): grows a topic's partition count.

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::create_topics::topic_error_code;
use crate::broker::dispatch::RequestCtx;
use crate::controller::TopicError;

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let results = ctx.broker.controller.update(|state| {
        request
            .topics
            .iter()
            .map(|topic| {
                let assignment = topic.assignments.as_ref().map(|a| {
                    a.iter()
                        .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
                        .collect()
                });
                let name = topic.name.0.as_str();
                let result = if request.validate_only {
                    match state.topics.get(name) {
                        None => Err(TopicError::UnknownTopic),
                        Some(t) if topic.count <= t.partitions.len() as i32 => {
                            Err(TopicError::InvalidPartitions)
                        }
                        Some(_) => Ok(()),
                    }
                } else {
                    state.create_partitions(name, topic.count, assignment)
                };
                let out = CreatePartitionsTopicResult::default().with_name(topic.name.clone());
                match result {
                    Ok(()) => out,
                    // Kafka's controller gives a missing topic no message.
                    Err(TopicError::UnknownTopic) => {
                        out.with_error_code(topic_error_code(TopicError::UnknownTopic).code())
                    }
                    Err(error) => {
                        let error = topic_error_code(error);
                        out.with_error_code(error.code())
                            .with_error_message(Some(StrBytes::from_string(error.to_string())))
                    }
                }
            })
            .collect()
    });
    CreatePartitionsResponse::default().with_results(results)
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &CreatePartitionsRequest,
    code: i16,
) -> CreatePartitionsResponse {
    let results = request
        .topics
        .iter()
        .map(|t| {
            CreatePartitionsTopicResult::default()
                .with_name(t.name.clone())
                .with_error_code(code)
        })
        .collect();
    CreatePartitionsResponse::default().with_results(results)
}
