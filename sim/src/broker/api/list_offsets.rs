//! ListOffsets (2): earliest (-2), latest (-1), max timestamp (-3), earliest local (-4), by
//! timestamp; `read_committed` answers "latest" with the last stable offset.

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::*;

use super::leader_partition;
use crate::broker::dispatch::RequestCtx;
use crate::log::PartitionLog;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const EARLIEST_PENDING_UPLOAD: i64 = -5;
const LATEST_TIERED: i64 = -6;

pub(crate) async fn handle(
    ctx: &RequestCtx<'_>,
    request: ListOffsetsRequest,
) -> ListOffsetsResponse {
    let version = ctx.version;
    let read_committed = version >= 2 && request.isolation_level == 1;
    let state = ctx.broker.controller.read();
    // Kafka answers a partition named more than once with one INVALID_REQUEST entry: its
    // ReplicaManager.fetchOffset keys the answers by partition.
    let mut occurrences: BTreeMap<(&str, i32), usize> = BTreeMap::new();
    for topic in &request.topics {
        for p in &topic.partitions {
            *occurrences
                .entry((topic.name.0.as_str(), p.partition_index))
                .or_default() += 1;
        }
    }
    let mut answered = BTreeSet::new();
    let topics = request
        .topics
        .iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .filter(|p| answered.insert((topic.name.0.as_str(), p.partition_index)))
                .map(|p| {
                    if occurrences[&(topic.name.0.as_str(), p.partition_index)] > 1 {
                        return ListOffsetsPartitionResponse::default()
                            .with_partition_index(p.partition_index)
                            .with_error_code(ResponseError::InvalidRequest.code())
                            .with_timestamp(-1)
                            .with_offset(-1);
                    }
                    let epoch = if version >= 4 {
                        p.current_leader_epoch
                    } else {
                        -1
                    };
                    let response = ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index);
                    match leader_partition(
                        &state,
                        ctx.broker.node_id,
                        topic.name.0.as_str(),
                        p.partition_index,
                        epoch,
                    ) {
                        Err(error) => response
                            .with_error_code(error.code())
                            .with_timestamp(-1)
                            .with_offset(-1),
                        Ok(part) => {
                            let (timestamp, offset) =
                                lookup(&part.log, p.timestamp, read_committed);
                            let mut response =
                                response.with_timestamp(timestamp).with_offset(offset);
                            if version >= 4 {
                                response = response.with_leader_epoch(if offset >= 0 {
                                    part.leader_epoch
                                } else {
                                    -1
                                });
                            }
                            response
                        }
                    }
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

/// (timestamp, offset) for one query; (-1, -1) when no record matches.
fn lookup(log: &PartitionLog, query: i64, read_committed: bool) -> (i64, i64) {
    let upper = if read_committed {
        log.last_stable_offset()
    } else {
        log.high_watermark()
    };
    match query {
        LATEST => (-1, upper),
        EARLIEST | EARLIEST_LOCAL => (-1, log.log_start_offset()),
        MAX_TIMESTAMP => log.max_timestamp(upper).map_or((-1, -1), |(o, t)| (t, o)),
        // No tiered storage: nothing is pending upload, and the "tiered" end is the start.
        EARLIEST_PENDING_UPLOAD => (-1, -1),
        LATEST_TIERED => (-1, log.log_start_offset() - 1),
        timestamp => log
            .offset_for_timestamp(timestamp, upper)
            .map_or((-1, -1), |(o, t)| (t, o)),
    }
}

pub(crate) fn error_response(
    _ctx: &RequestCtx<'_>,
    request: &ListOffsetsRequest,
    code: i16,
) -> ListOffsetsResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| {
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(code)
                        .with_timestamp(-1)
                        .with_offset(-1)
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}
