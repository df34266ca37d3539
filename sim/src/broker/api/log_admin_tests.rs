//! DeleteRecords (the log start moves, and Fetch and ListOffsets see it) and DescribeCluster.

use bytes::Bytes;
use kafka_consumer::records::{NewRecord, RecordBatchBuilder};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::test_support::{answer, TestBroker};
use super::{delete_records, describe_cluster, list_offsets};

fn records(count: usize) -> Bytes {
    let mut builder = RecordBatchBuilder::new(0);
    for _ in 0..count {
        builder
            .append(&NewRecord {
                timestamp_ms: 1_000,
                key: None,
                value: Some(b"v"),
                headers: &[],
            })
            .unwrap();
    }
    builder.build().unwrap()
}

fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

/// (partition, low watermark, error) for each partition answered, in answer order.
fn delete(tb: &TestBroker, deletions: &[(&str, i32, i64)]) -> Vec<(String, i32, i64, i16)> {
    let request = DeleteRecordsRequest::default().with_topics(
        deletions
            .iter()
            .map(|(t, p, o)| {
                DeleteRecordsTopic::default()
                    .with_name(name(t))
                    .with_partitions(vec![DeleteRecordsPartition::default()
                        .with_partition_index(*p)
                        .with_offset(*o)])
            })
            .collect(),
    );
    answer(delete_records::handle(&tb.ctx(2), request))
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.name.0.to_string(),
                    p.partition_index,
                    p.low_watermark,
                    p.error_code,
                )
            })
        })
        .collect()
}

fn earliest(tb: &TestBroker, topic: &str) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(topic))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(-2)])]);
    let response = answer(list_offsets::handle(&tb.ctx(7), request));
    response.topics[0].partitions[0].offset
}

#[test]
fn delete_records_moves_the_log_start_and_refuses_what_kafka_refuses() {
    // Two brokers: partition 1 of "t" is led by broker 2, not by this one.
    let tb = TestBroker::new(2, &[("t", 2), ("compacted", 1)]);
    for (topic, count) in [("t", 5), ("t", 5), ("compacted", 3)] {
        tb.controller().append(topic, 0, records(count)).unwrap();
    }
    tb.controller().update(|s| {
        let configs = [("cleanup.policy".to_owned(), "compact".to_owned())].into();
        s.set_topic_configs("compacted", configs).unwrap();
    });

    assert_eq!(delete(&tb, &[("t", 0, 3)]), vec![("t".into(), 0, 3, 0)]);
    assert_eq!(earliest(&tb, "t"), 3);
    // At or below the start: no change, the start is the answer.
    assert_eq!(delete(&tb, &[("t", 0, 1)]), vec![("t".into(), 0, 3, 0)]);

    let out_of_range = ResponseError::OffsetOutOfRange.code();
    let answers = delete(
        &tb,
        &[
            ("t", 0, 11),
            ("t", 0, -5),
            ("t", 1, 0),
            ("t", 7, 0),
            ("missing", 0, 0),
            ("__consumer_offsets", 0, 0),
            ("compacted", 0, 1),
        ],
    );
    assert_eq!(
        answers,
        vec![
            // A partition named again replaces its earlier answer, as Kafka's map does.
            ("t".into(), 0, -1, out_of_range),
            ("t".into(), 1, -1, ResponseError::NotLeaderOrFollower.code()),
            (
                "t".into(),
                7,
                -1,
                ResponseError::UnknownTopicOrPartition.code()
            ),
            (
                "missing".into(),
                0,
                -1,
                ResponseError::UnknownTopicOrPartition.code()
            ),
            (
                "__consumer_offsets".into(),
                0,
                -1,
                ResponseError::InvalidTopicException.code()
            ),
            (
                "compacted".into(),
                0,
                -1,
                ResponseError::PolicyViolation.code()
            ),
        ]
    );
    // -1 is the high watermark: everything goes.
    assert_eq!(delete(&tb, &[("t", 0, -1)]), vec![("t".into(), 0, 10, 0)]);
    assert_eq!(earliest(&tb, "t"), 10);
    assert_eq!(
        tb.controller()
            .read()
            .partition("t", 0)
            .unwrap()
            .log
            .log_start_offset(),
        10
    );
}

#[test]
fn describe_cluster_lists_the_brokers_and_checks_the_endpoint_type() {
    let tb = TestBroker::new(3, &[]);
    tb.controller().update(|s| s.broker_stopped(3));
    let described = answer(describe_cluster::handle(
        &tb.ctx(2),
        DescribeClusterRequest::default().with_include_cluster_authorized_operations(true),
    ));
    assert_eq!(described.error_code, 0);
    assert_eq!(described.cluster_id.as_str(), "sim-cluster-0000000000");
    assert_eq!(described.controller_id, BrokerId(1));
    assert_eq!(described.endpoint_type, 1);
    let ids: Vec<i32> = described.brokers.iter().map(|b| b.broker_id.0).collect();
    assert_eq!(ids, vec![1, 2]);
    assert_eq!(described.cluster_authorized_operations, 8096);

    let with_fenced = answer(describe_cluster::handle(
        &tb.ctx(2),
        DescribeClusterRequest::default().with_include_fenced_brokers(true),
    ));
    let fenced: Vec<(i32, bool)> = with_fenced
        .brokers
        .iter()
        .map(|b| (b.broker_id.0, b.is_fenced))
        .collect();
    assert_eq!(fenced, vec![(1, false), (2, false), (3, true)]);
    assert_eq!(with_fenced.cluster_authorized_operations, i32::MIN);

    let controller = answer(describe_cluster::handle(
        &tb.ctx(1),
        DescribeClusterRequest::default().with_endpoint_type(2),
    ));
    assert_eq!(
        controller.error_code,
        ResponseError::MismatchedEndpointType.code()
    );
    let unknown = answer(describe_cluster::handle(
        &tb.ctx(1),
        DescribeClusterRequest::default().with_endpoint_type(9),
    ));
    assert_eq!(
        unknown.error_code,
        ResponseError::UnsupportedEndpointType.code()
    );
    assert_eq!(
        unknown.error_message.as_deref(),
        Some("Unsupported endpoint type 9")
    );
}
