//! The ConsumerProtocol wire format: the bytes of a member's subscription (JoinGroup protocol
//! metadata) and of its assignment (SyncGroup), each prefixed by an i16 version.
//!
//! The message bodies are `kafka-protocol`'s generated `ConsumerProtocolSubscription` and
//! `ConsumerProtocolAssignment`; this module adds Java's `ConsumerProtocol` framing and rules: the
//! version prefix, topics sorted on encode, owned partitions grouped by topic, and a version newer
//! than we know read as the newest we know (the schema promises that new versions only append
//! fields).
//!
//! The bytes come from other members via the broker, so decoding trusts nothing: a structural
//! pass first checks every length and array count against the bytes actually present, and only
//! then does the generated decoder run. (Its arrays reserve their announced count up front, so an
//! unchecked count of two billion would attempt a huge allocation from a few bytes of input.)

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::{
    ConsumerProtocolAssignment, TopicPartition as AssignmentTopicPartition,
};
use kafka_protocol::messages::consumer_protocol_subscription::{
    ConsumerProtocolSubscription, TopicPartition as SubscriptionTopicPartition,
};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::error::{ConsumerProtocolError, ConsumerProtocolMessage};
use super::{Assignment, Subscription, TopicPartition};

/// One topic's partitions, sharing one allocation of its name: a decoded name is not copied
/// per partition, so the decoded form stays within a small multiple of the bytes it came from
/// (a long name and many partitions would otherwise cost name × partitions bytes; found by the
/// `consumer_protocol` fuzz target in the sticky user data, which decodes the same way).
fn partitions_of<'a>(
    topic: &str,
    partitions: &'a [i32],
) -> impl Iterator<Item = TopicPartition> + 'a {
    let topic: Arc<str> = Arc::from(topic);
    partitions
        .iter()
        .map(move |&p| TopicPartition::new(Arc::clone(&topic), p))
}

/// The newest ConsumerProtocol version (subscription and assignment share it): v3 added the rack.
pub const CONSUMER_PROTOCOL_VERSION: i16 = 3;

/// The JoinGroup `protocol_type` of consumer groups.
pub const PROTOCOL_TYPE: &str = "consumer";

/// Encodes `subscription` at `version` (clamped to [`CONSUMER_PROTOCOL_VERSION`]), version prefix
/// included. Fields the version lacks are dropped, as Java drops them.
pub fn encode_subscription(
    subscription: &Subscription,
    version: i16,
) -> Result<Bytes, ConsumerProtocolError> {
    let message = ConsumerProtocolMessage::Subscription;
    let version = check_version(message, version)?;
    let mut topics = subscription.topics.clone();
    topics.sort();
    let mut owned: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in &subscription.owned_partitions {
        owned.entry(&tp.topic).or_default().push(tp.partition);
    }
    let owned_partitions = owned
        .into_iter()
        .map(|(topic, mut partitions)| {
            partitions.sort_unstable();
            SubscriptionTopicPartition::default()
                .with_topic(topic_name(topic))
                .with_partitions(partitions)
        })
        .collect();
    let body = ConsumerProtocolSubscription::default()
        .with_topics(topics.into_iter().map(StrBytes::from_string).collect())
        .with_user_data(subscription.user_data.clone())
        .with_owned_partitions(owned_partitions)
        .with_generation_id(
            subscription
                .generation_id
                .unwrap_or(super::DEFAULT_GENERATION),
        )
        .with_rack_id(subscription.rack_id.clone().map(StrBytes::from_string));
    encode_body(message, version, &body)
}

/// Decodes a version-prefixed subscription. `group_instance_id` is left `None`: it travels in
/// the JoinGroup response, not in these bytes.
pub fn decode_subscription(bytes: &Bytes) -> Result<Subscription, ConsumerProtocolError> {
    let message = ConsumerProtocolMessage::Subscription;
    let (version, mut body) = split_version(message, bytes)?;
    Walker::new(message, version, &body).subscription()?;
    let data: ConsumerProtocolSubscription = decode_body(message, version, &mut body)?;
    Ok(Subscription {
        topics: data.topics.iter().map(|t| t.to_string()).collect(),
        user_data: data.user_data,
        owned_partitions: data
            .owned_partitions
            .iter()
            .flat_map(|tp| partitions_of(tp.topic.as_str(), &tp.partitions))
            .collect(),
        generation_id: (data.generation_id >= 0).then_some(data.generation_id),
        rack_id: data
            .rack_id
            .filter(|r| !r.is_empty())
            .map(|r| r.to_string()),
        group_instance_id: None,
    })
}

/// Encodes `assignment` at `version` (clamped to [`CONSUMER_PROTOCOL_VERSION`]), version prefix
/// included. Partitions are grouped by topic in order of each topic's first appearance, as Java
/// groups them.
pub fn encode_assignment(
    assignment: &Assignment,
    version: i16,
) -> Result<Bytes, ConsumerProtocolError> {
    let message = ConsumerProtocolMessage::Assignment;
    let version = check_version(message, version)?;
    let mut grouped: Vec<AssignmentTopicPartition> = Vec::new();
    for tp in &assignment.partitions {
        match grouped.iter_mut().find(|g| **g.topic == *tp.topic) {
            Some(group) => group.partitions.push(tp.partition),
            None => grouped.push(
                AssignmentTopicPartition::default()
                    .with_topic(topic_name(&tp.topic))
                    .with_partitions(vec![tp.partition]),
            ),
        }
    }
    let body = ConsumerProtocolAssignment::default()
        .with_assigned_partitions(grouped)
        .with_user_data(assignment.user_data.clone());
    encode_body(message, version, &body)
}

/// Decodes a version-prefixed assignment.
pub fn decode_assignment(bytes: &Bytes) -> Result<Assignment, ConsumerProtocolError> {
    let message = ConsumerProtocolMessage::Assignment;
    let (version, mut body) = split_version(message, bytes)?;
    Walker::new(message, version, &body).assignment()?;
    let data: ConsumerProtocolAssignment = decode_body(message, version, &mut body)?;
    Ok(Assignment {
        partitions: data
            .assigned_partitions
            .iter()
            .flat_map(|tp| partitions_of(tp.topic.as_str(), &tp.partitions))
            .collect(),
        user_data: data.user_data,
    })
}

fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

/// Java's `checkSubscriptionVersion`/`checkAssignmentVersion`: negative versions are errors,
/// versions newer than ours are read (or written) as ours.
fn check_version(
    message: ConsumerProtocolMessage,
    version: i16,
) -> Result<i16, ConsumerProtocolError> {
    if version < 0 {
        return Err(ConsumerProtocolError::UnsupportedVersion { message, version });
    }
    Ok(version.min(CONSUMER_PROTOCOL_VERSION))
}

fn split_version(
    message: ConsumerProtocolMessage,
    bytes: &Bytes,
) -> Result<(i16, Bytes), ConsumerProtocolError> {
    match bytes.get(..2) {
        Some(&[hi, lo]) => {
            let version = check_version(message, i16::from_be_bytes([hi, lo]))?;
            Ok((version, bytes.slice(2..)))
        }
        _ => Err(ConsumerProtocolError::ShortHeader {
            message,
            len: bytes.len(),
        }),
    }
}

/// Decodes a body already validated by the [`Walker`]; the generated decoder's error, should it
/// still find one, becomes `Malformed`.
fn decode_body<M: Decodable>(
    message: ConsumerProtocolMessage,
    version: i16,
    body: &mut Bytes,
) -> Result<M, ConsumerProtocolError> {
    M::decode(body, version).map_err(|e| ConsumerProtocolError::Malformed {
        message,
        version,
        detail: format!("{e:#}"),
    })
}

fn encode_body<M: Encodable>(
    message: ConsumerProtocolMessage,
    version: i16,
    body: &M,
) -> Result<Bytes, ConsumerProtocolError> {
    let mut buf = BytesMut::new();
    buf.put_i16(version);
    body.encode(&mut buf, version)
        .map_err(|e| ConsumerProtocolError::Encode {
            message,
            version,
            detail: format!("{e:#}"),
        })?;
    Ok(buf.freeze())
}

/// The structural pass: walks a message body checking every length and count against the bytes
/// present, without allocating.
struct Walker<'a> {
    message: ConsumerProtocolMessage,
    version: i16,
    buf: &'a [u8],
    offset: usize,
}

impl<'a> Walker<'a> {
    fn new(message: ConsumerProtocolMessage, version: i16, buf: &'a [u8]) -> Self {
        Self {
            message,
            version,
            buf,
            offset: 0,
        }
    }

    fn subscription(mut self) -> Result<(), ConsumerProtocolError> {
        let topics = self.array_count("topics", 2)?;
        for _ in 0..topics {
            self.string("topics[]", false)?;
        }
        self.nullable_bytes("user_data")?;
        if self.version >= 1 {
            self.topic_partitions("owned_partitions")?;
        }
        if self.version >= 2 {
            self.take(4, "generation_id")?;
        }
        if self.version >= 3 {
            self.string("rack_id", true)?;
        }
        Ok(())
    }

    fn assignment(mut self) -> Result<(), ConsumerProtocolError> {
        self.topic_partitions("assigned_partitions")?;
        self.nullable_bytes("user_data")
    }

    /// `[]{topic: string, partitions: []int32}`; the smallest element is an empty topic name and
    /// an empty partition array: 2 + 4 bytes.
    fn topic_partitions(&mut self, field: &'static str) -> Result<(), ConsumerProtocolError> {
        let count = self.array_count(field, 6)?;
        for _ in 0..count {
            self.string(field, false)?;
            let partitions = self.array_count(field, 4)?;
            self.take(partitions * 4, field)?;
        }
        Ok(())
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.offset
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], ConsumerProtocolError> {
        if n > self.remaining() {
            return Err(ConsumerProtocolError::Truncated {
                message: self.message,
                version: self.version,
                field,
                offset: self.offset,
                needed: n,
                remaining: self.remaining(),
            });
        }
        let bytes = &self.buf[self.offset..self.offset + n];
        self.offset += n;
        Ok(bytes)
    }

    fn i16(&mut self, field: &'static str) -> Result<i16, ConsumerProtocolError> {
        let b = self.take(2, field)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, ConsumerProtocolError> {
        let b = self.take(4, field)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn invalid_length(&self, field: &'static str, length: i32, at: usize) -> ConsumerProtocolError {
        ConsumerProtocolError::InvalidLength {
            message: self.message,
            version: self.version,
            field,
            offset: at,
            length,
        }
    }

    fn string(&mut self, field: &'static str, nullable: bool) -> Result<(), ConsumerProtocolError> {
        let at = self.offset;
        let len = self.i16(field)?;
        match usize::try_from(len) {
            Ok(len) => self.take(len, field).map(drop),
            Err(_) if nullable && len == -1 => Ok(()),
            Err(_) => Err(self.invalid_length(field, len.into(), at)),
        }
    }

    fn nullable_bytes(&mut self, field: &'static str) -> Result<(), ConsumerProtocolError> {
        let at = self.offset;
        let len = self.i32(field)?;
        match usize::try_from(len) {
            Ok(len) => self.take(len, field).map(drop),
            Err(_) if len == -1 => Ok(()),
            Err(_) => Err(self.invalid_length(field, len, at)),
        }
    }

    /// A non-nullable array's count, checked against the bytes left assuming each element takes
    /// at least `min_element_bytes`.
    fn array_count(
        &mut self,
        field: &'static str,
        min_element_bytes: usize,
    ) -> Result<usize, ConsumerProtocolError> {
        let at = self.offset;
        let count = self.i32(field)?;
        let count = usize::try_from(count).map_err(|_| self.invalid_length(field, count, at))?;
        let needed = count.saturating_mul(min_element_bytes);
        if needed > self.remaining() {
            return Err(ConsumerProtocolError::Truncated {
                message: self.message,
                version: self.version,
                field,
                offset: self.offset,
                needed,
                remaining: self.remaining(),
            });
        }
        Ok(count)
    }
}
