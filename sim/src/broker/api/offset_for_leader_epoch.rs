//! OffsetForLeaderEpoch (23): the end offset of a leader epoch, so a consumer can detect that
//! the log it read was truncated by a leader change (KIP-320).

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::*;

use super::leader_partition;
use crate::broker::dispatch::RequestCtx;

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let state = ctx.broker.controller.read();
    let topics = request
        .topics
        .iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let response = EpochEndOffset::default().with_partition(p.partition);
                    match leader_partition(
                        &state,
                        ctx.broker.node_id,
                        topic.topic.0.as_str(),
                        p.partition,
                        p.current_leader_epoch,
                    ) {
                        Err(error) => response
                            .with_error_code(error.code())
                            .with_leader_epoch(-1)
                            .with_end_offset(-1),
                        Ok(part) => {
                            let (epoch, end_offset) = part.log.end_offset_for_epoch(p.leader_epoch);
                            response
                                .with_leader_epoch(epoch)
                                .with_end_offset(end_offset)
                        }
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(topic.topic.clone())
                .with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &OffsetForLeaderEpochRequest,
    code: i16,
) -> OffsetForLeaderEpochResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    EpochEndOffset::default()
                        .with_partition(p.partition)
                        .with_error_code(code)
                        .with_leader_epoch(-1)
                        .with_end_offset(-1)
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(t.topic.clone())
                .with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}
