//! The embedded consumer protocol the coordinator has to read once classic and consumer members
//! share a group (Java's `ConsumerProtocol`): a classic member's JoinGroup metadata is a
//! version-prefixed `ConsumerProtocolSubscription` (topics, owned partitions, rack), and its
//! SyncGroup assignment a version-prefixed `ConsumerProtocolAssignment`.
//!
//! A plain classic group never looks inside these bytes; a mixed group must, because the server
//! assignor computes the classic members' assignments (`deserializeSubscription`,
//! `prepareAssignment`, `ConsumerGroup.fromClassicGroup`, `ClassicGroup.fromConsumerGroup`).

use std::collections::BTreeSet;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::{
    ConsumerProtocolAssignment, TopicPartition as AssignedTopicPartition,
};
use kafka_protocol::messages::consumer_protocol_subscription::ConsumerProtocolSubscription;
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use crate::group::consumer::assignment::{self, Assignment};
use crate::group::consumer::topics::TopicsImage;

/// The newest `ConsumerProtocol` version; newer ones are read as this one (Java's
/// `checkSubscriptionVersion`: later versions only append fields).
pub const CONSUMER_PROTOCOL_LATEST_VERSION: i16 = 3;

/// `ConsumerProtocol.PROTOCOL_TYPE`.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// The bytes are not a consumer protocol message (Kafka's `SchemaException`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedConsumerProtocol;

/// What the coordinator needs from a classic member's subscription.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DecodedSubscription {
    /// Subscribed topic names.
    pub topics: BTreeSet<String>,
    /// Owned partitions by topic name (empty for eager assignors, which revoke before joining).
    pub owned_partitions: Vec<(String, Vec<i32>)>,
    /// The client's rack (v3+).
    pub rack_id: Option<String>,
}

impl DecodedSubscription {
    /// The owned partitions as a heartbeat would report them: by topic id, topics unknown to
    /// `topics` dropped (Kafka's `Utils.toTopicPartitions`).
    pub fn owned_by_topic_id(
        &self,
        topics: &TopicsImage,
    ) -> Vec<kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions> {
        self.owned_partitions
            .iter()
            .filter_map(|(name, partitions)| {
                let topic = topics.topic(name)?;
                Some(
                    kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions::default()
                        .with_topic_id(topic.id)
                        .with_partitions(partitions.clone()),
                )
            })
            .collect()
    }
}

/// The version prefix of a consumer protocol message (`ConsumerProtocol.deserializeVersion`).
pub fn version(bytes: &[u8]) -> Result<i16, MalformedConsumerProtocol> {
    let mut buf = bytes;
    if buf.remaining() < 2 {
        return Err(MalformedConsumerProtocol);
    }
    Ok(buf.get_i16())
}

/// `ConsumerProtocol.deserializeConsumerProtocolSubscription`. The counts inside are checked
/// against the bytes present before the generated decoder (which reserves what a count
/// announces) runs, so hostile metadata cannot make the coordinator allocate gigabytes.
pub fn decode_subscription(bytes: &[u8]) -> Result<DecodedSubscription, MalformedConsumerProtocol> {
    let version = checked_version(bytes)?;
    let mut body = &bytes[2..];
    check_subscription_shape(body, version).ok_or(MalformedConsumerProtocol)?;
    let subscription = ConsumerProtocolSubscription::decode(&mut body, version)
        .map_err(|_| MalformedConsumerProtocol)?;
    Ok(DecodedSubscription {
        topics: subscription.topics.iter().map(|t| t.to_string()).collect(),
        owned_partitions: subscription
            .owned_partitions
            .iter()
            .map(|tp| (tp.topic.0.to_string(), tp.partitions.clone()))
            .collect(),
        rack_id: subscription.rack_id.map(|r| r.to_string()),
    })
}

/// `ConsumerProtocol.deserializeConsumerProtocolAssignment`, by topic id: partitions of topics
/// unknown to `topics` are dropped (`toTopicPartitionMap`).
pub fn decode_assignment(
    bytes: &[u8],
    topics: &TopicsImage,
) -> Result<Assignment, MalformedConsumerProtocol> {
    let version = checked_version(bytes)?;
    let mut body = &bytes[2..];
    check_assignment_shape(body).ok_or(MalformedConsumerProtocol)?;
    let decoded = ConsumerProtocolAssignment::decode(&mut body, version)
        .map_err(|_| MalformedConsumerProtocol)?;
    let mut assigned = Assignment::new();
    for tp in &decoded.assigned_partitions {
        if let Some(topic) = topics.topic(&tp.topic.0) {
            for &partition in &tp.partitions {
                assignment::insert(&mut assigned, topic.id, partition);
            }
        }
    }
    Ok(assigned)
}

/// Whether an assignment carries user data (a custom assignor's): the server assignors cannot
/// carry it, so Kafka refuses to upgrade such a group.
pub fn has_user_data(bytes: &[u8]) -> Result<bool, MalformedConsumerProtocol> {
    let version = checked_version(bytes)?;
    let mut body = &bytes[2..];
    check_assignment_shape(body).ok_or(MalformedConsumerProtocol)?;
    let decoded = ConsumerProtocolAssignment::decode(&mut body, version)
        .map_err(|_| MalformedConsumerProtocol)?;
    Ok(decoded.user_data.is_some_and(|d| !d.is_empty()))
}

/// `ConsumerProtocol.serializeAssignment(toConsumerProtocolAssignment(..), version)`: the
/// partitions by topic name, at the version the member's own metadata was written in.
pub fn encode_assignment(
    assigned: &Assignment,
    topics: &TopicsImage,
    version: i16,
) -> Result<Bytes, MalformedConsumerProtocol> {
    if version < 0 {
        return Err(MalformedConsumerProtocol);
    }
    let version = version.min(CONSUMER_PROTOCOL_LATEST_VERSION);
    let assigned_partitions = assigned
        .iter()
        .filter_map(|(topic_id, partitions)| {
            let name = topics.name_of(*topic_id)?;
            Some(
                AssignedTopicPartition::default()
                    .with_topic(TopicName(StrBytes::from_string(name.to_owned())))
                    .with_partitions(partitions.iter().copied().collect()),
            )
        })
        .collect();
    let body = ConsumerProtocolAssignment::default().with_assigned_partitions(assigned_partitions);
    let mut buf = BytesMut::new();
    buf.put_i16(version);
    body.encode(&mut buf, version)
        .map_err(|_| MalformedConsumerProtocol)?;
    Ok(buf.freeze())
}

fn checked_version(bytes: &[u8]) -> Result<i16, MalformedConsumerProtocol> {
    let version = version(bytes)?;
    if version < 0 {
        return Err(MalformedConsumerProtocol);
    }
    Ok(version.min(CONSUMER_PROTOCOL_LATEST_VERSION))
}

/// Walks a subscription body checking every length and count against the bytes left.
fn check_subscription_shape(mut buf: &[u8], version: i16) -> Option<()> {
    let topics = count(&mut buf, 2)?;
    for _ in 0..topics {
        skip_string(&mut buf)?;
    }
    skip_bytes(&mut buf)?;
    if version >= 1 {
        let owned = count(&mut buf, 6)?;
        for _ in 0..owned {
            skip_string(&mut buf)?;
            let partitions = count(&mut buf, 4)?;
            advance(&mut buf, partitions * 4)?;
        }
    }
    Some(())
}

/// Walks an assignment body (the same layout in every version).
fn check_assignment_shape(mut buf: &[u8]) -> Option<()> {
    let topics = count(&mut buf, 6)?;
    for _ in 0..topics {
        skip_string(&mut buf)?;
        let partitions = count(&mut buf, 4)?;
        advance(&mut buf, partitions * 4)?;
    }
    Some(())
}

/// An i32 array count (-1 is null, read as empty) no larger than the elements of at least
/// `min_element_bytes` the remaining bytes could hold.
fn count(buf: &mut &[u8], min_element_bytes: usize) -> Option<usize> {
    if buf.remaining() < 4 {
        return None;
    }
    let n = buf.get_i32();
    if n < 0 {
        return Some(0);
    }
    let n = usize::try_from(n).ok()?;
    (n <= buf.remaining() / min_element_bytes).then_some(n)
}

fn skip_string(buf: &mut &[u8]) -> Option<()> {
    if buf.remaining() < 2 {
        return None;
    }
    let len = buf.get_i16();
    if len < 0 {
        return Some(());
    }
    advance(buf, usize::try_from(len).ok()?)
}

fn skip_bytes(buf: &mut &[u8]) -> Option<()> {
    if buf.remaining() < 4 {
        return None;
    }
    let len = buf.get_i32();
    if len < 0 {
        return Some(());
    }
    advance(buf, usize::try_from(len).ok()?)
}

fn advance(buf: &mut &[u8], n: usize) -> Option<()> {
    (buf.remaining() >= n).then(|| buf.advance(n))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use kafka_protocol::messages::consumer_protocol_subscription::TopicPartition;
    use uuid::Uuid;

    /// A v`version` subscription to `topics` owning `owned`.
    pub(crate) fn subscription(version: i16, topics: &[&str], owned: &[(&str, &[i32])]) -> Bytes {
        let body = ConsumerProtocolSubscription::default()
            .with_topics(
                topics
                    .iter()
                    .map(|t| StrBytes::from_string((*t).to_owned()))
                    .collect(),
            )
            .with_owned_partitions(
                owned
                    .iter()
                    .map(|(t, ps)| {
                        TopicPartition::default()
                            .with_topic(TopicName(StrBytes::from_string((*t).to_owned())))
                            .with_partitions(ps.to_vec())
                    })
                    .collect(),
            );
        let mut buf = BytesMut::new();
        buf.put_i16(version);
        body.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    #[test]
    fn subscription_and_assignment_round_trip_through_topic_ids() {
        let foo = Uuid::from_u128(1);
        let topics = TopicsImage::default().with_topic("foo", foo, 4);
        let decoded = decode_subscription(&subscription(3, &["foo"], &[("foo", &[1, 2])])).unwrap();
        assert_eq!(decoded.topics, BTreeSet::from(["foo".to_owned()]));
        let owned = decoded.owned_by_topic_id(&topics);
        assert_eq!(owned.len(), 1);
        assert_eq!(
            (owned[0].topic_id, owned[0].partitions.clone()),
            (foo, vec![1, 2])
        );

        let mut assigned = Assignment::new();
        assignment::insert(&mut assigned, foo, 3);
        let bytes = encode_assignment(&assigned, &topics, 1).unwrap();
        assert_eq!(version(&bytes), Ok(1));
        assert_eq!(decode_assignment(&bytes, &topics), Ok(assigned));
    }

    #[test]
    fn v0_has_no_owned_partitions_and_garbage_is_malformed() {
        let decoded = decode_subscription(&subscription(0, &["foo"], &[])).unwrap();
        assert!(decoded.owned_partitions.is_empty());
        assert_eq!(decode_subscription(b"sub"), Err(MalformedConsumerProtocol));
        // A huge topic count in a few bytes is refused before anything is allocated.
        let hostile = [0u8, 1, 0x7f, 0xff, 0xff, 0xff, 0, 0];
        assert_eq!(
            decode_subscription(&hostile),
            Err(MalformedConsumerProtocol)
        );
        assert_eq!(
            decode_subscription(&[0xff, 0xff]),
            Err(MalformedConsumerProtocol)
        );
    }
}
