//! Fetch answers for a position the application has since left (KAFKA-7703 class): records
//! and OFFSET_OUT_OF_RANGE fetched at the old position never touch the sought one.

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{
    FetchableTopicResponse, PartitionData as WirePartition,
};
use uuid::Uuid;

use super::*;
use crate::internals::context::testing::Parts;
use crate::internals::events::SeekTarget;
use crate::internals::fetch_buffer::FetchPosition;
use crate::internals::seek::seek_partition;
use crate::internals::settings::ConsumerSettings;
use crate::internals::test_support::{all_versions, metadata};
use crate::records::{NewRecord, RecordBatchBuilder};
use crate::types::OffsetAndMetadata;

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

/// Partition 0 led by broker 1, fetching from offset 0, `auto.offset.reset=earliest`.
fn parts() -> Parts {
    let mut p = Parts::new(ConsumerSettings {
        auto_offset_reset: AutoOffsetReset::Earliest,
        ..ConsumerSettings::default()
    });
    p.versions = crate::internals::node_versions::NodeVersions::every_node(all_versions());
    p.metadata = metadata(&[(0, 1, 5)]);
    p.subscriptions
        .assign_from_user(&[tp(0)].into_iter().collect());
    p.buffer.set_assignment(&p.subscriptions.assigned());
    p.buffer.set_position(&tp(0), FetchPosition::new(0));
    p.subscriptions
        .set_fetch_state(&tp(0), FetchState::Fetching);
    p
}

fn seek(p: &mut Parts, target: SeekTarget) {
    seek_partition(&mut p.subscriptions, &p.buffer, &tp(0), &target, Some(5));
}

fn records(base: i64, n: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(base);
    for _ in 0..n {
        b.append(&NewRecord {
            timestamp_ms: 0,
            key: None,
            value: Some(b"v"),
            headers: &[],
        })
        .unwrap();
    }
    b.build().unwrap()
}

fn answer(code: i16, records: Option<Bytes>) -> Result<(ResponseBody, i16), NetworkError> {
    let partition = WirePartition::default()
        .with_partition_index(0)
        .with_error_code(code)
        .with_high_watermark(10)
        .with_records(records);
    let body = FetchResponse::default().with_responses(vec![FetchableTopicResponse::default()
        .with_topic_id(Uuid::from_u128(1))
        .with_partitions(vec![partition])]);
    Ok((ResponseBody::Fetch(body), 17))
}

#[test]
fn out_of_range_for_a_position_sought_away_keeps_the_seek() {
    let mut p = parts();
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    seek(&mut p, SeekTarget::Offset(OffsetAndMetadata::new(7)));
    let code = ResponseError::OffsetOutOfRange.code();
    m.on_response(&mut p.ctx(), r.requests[0].token, answer(code, None));
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::Fetching),
        "no reset: the out-of-range offset was the old one"
    );
    assert_eq!(p.buffer.position(&tp(0)).unwrap().0.offset, 7);
}

#[test]
fn out_of_range_after_seek_to_end_keeps_the_users_reset() {
    let mut p = parts();
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    seek(&mut p, SeekTarget::End);
    let id = p.subscriptions.fetch_state_id(&tp(0));
    let code = ResponseError::OffsetOutOfRange.code();
    m.on_response(&mut p.ctx(), r.requests[0].token, answer(code, None));
    assert_eq!(
        p.subscriptions.fetch_state(&tp(0)),
        Some(FetchState::AwaitingReset(AutoOffsetReset::Latest)),
        "not replaced by the policy's EARLIEST"
    );
    assert_eq!(
        p.subscriptions.fetch_state_id(&tp(0)),
        id,
        "the seek's lookup in flight stays current"
    );
}

#[test]
fn records_fetched_before_a_seek_or_a_pause_are_not_delivered() {
    let mut p = parts();
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    seek(&mut p, SeekTarget::Beginning);
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        answer(0, Some(records(0, 3))),
    );
    assert!(p.buffer.buffered_partitions().is_empty(), "seek: dropped");

    let mut p = parts();
    let mut m = FetchRequestManager::new(100, 1_000);
    let r = m.poll(&mut p.ctx());
    p.subscriptions.set_paused(&tp(0), true);
    p.buffer.drop_buffered(&tp(0));
    m.on_response(
        &mut p.ctx(),
        r.requests[0].token,
        answer(0, Some(records(0, 3))),
    );
    assert!(p.buffer.buffered_partitions().is_empty(), "pause: dropped");
    assert_eq!(
        p.buffer.position(&tp(0)).unwrap().0.offset,
        0,
        "position kept"
    );
}
