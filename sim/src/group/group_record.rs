//! Group metadata records: how a shard writes group membership into its `__consumer_offsets`
//! partition so that the coordinator elected after a move or a restart rebuilds every group, as
//! Kafka's `GroupCoordinatorRecordHelpers` / `GroupMetadataManager.replay` do.
//!
//! Keys carry Kafka's record type in their version field, exactly as Kafka's keys do:
//! `2` GroupMetadataKey (classic groups), `3` ConsumerGroupMetadataKey, `4`
//! ConsumerGroupPartitionMetadataKey, `5` ConsumerGroupMemberMetadataKey, `6`
//! ConsumerGroupTargetAssignmentMetadataKey, `7` ConsumerGroupTargetAssignmentMemberKey, `8`
//! ConsumerGroupCurrentMemberAssignmentKey. A key is `type i16, group (i16 length + UTF-8)`,
//! followed for the per-member types by the member id.
//!
//! Values: the classic `GroupMetadataValue` is written in Kafka's version-3 layout (non-flexible:
//! `protocolType, generation, protocol?, leader?, currentStateTimestamp, [memberId,
//! groupInstanceId?, clientId, clientHost, rebalanceTimeout, sessionTimeout, subscription,
//! assignment]`), byte for byte what Kafka 3.x wrote. The consumer-group values keep Kafka's
//! fields and order in a non-flexible encoding of our own (version `0`); Kafka's are flexible
//! (tagged fields), which nothing here needs. A tombstone (no value) deletes the key.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use uuid::Uuid;

use super::consumer::group::SubscribedTopic;
use super::consumer::member::ClassicMemberMetadata;
use super::consumer::{Assignment, MemberState};

/// Kafka's record type numbers (the key version).
pub mod record_type {
    /// `GroupMetadataKey`: a classic group.
    pub const GROUP_METADATA: i16 = 2;
    /// `ConsumerGroupMetadataKey`: the group epoch.
    pub const CONSUMER_GROUP_METADATA: i16 = 3;
    /// `ConsumerGroupPartitionMetadataKey`: the subscribed topics' metadata.
    pub const CONSUMER_GROUP_PARTITION_METADATA: i16 = 4;
    /// `ConsumerGroupMemberMetadataKey`: a member's subscription.
    pub const CONSUMER_GROUP_MEMBER_METADATA: i16 = 5;
    /// `ConsumerGroupTargetAssignmentMetadataKey`: the target assignment epoch.
    pub const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: i16 = 6;
    /// `ConsumerGroupTargetAssignmentMemberKey`: a member's target assignment.
    pub const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: i16 = 7;
    /// `ConsumerGroupCurrentMemberAssignmentKey`: a member's epochs and current assignment.
    pub const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: i16 = 8;
}

const GROUP_METADATA_VALUE_VERSION: i16 = 3;
const CONSUMER_VALUE_VERSION: i16 = 0;

/// A group record's key: its type, the group and, for per-member types, the member.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GroupRecordKey {
    /// One of [`record_type`].
    pub record_type: i16,
    /// The group id.
    pub group_id: String,
    /// The member id of per-member records (types 5, 7, 8).
    pub member_id: Option<String>,
}

impl GroupRecordKey {
    /// A group-level key.
    pub fn group(record_type: i16, group_id: &str) -> Self {
        Self {
            record_type,
            group_id: group_id.to_owned(),
            member_id: None,
        }
    }

    /// A per-member key.
    pub fn member(record_type: i16, group_id: &str, member_id: &str) -> Self {
        Self {
            record_type,
            group_id: group_id.to_owned(),
            member_id: Some(member_id.to_owned()),
        }
    }

    fn has_member(record_type: i16) -> bool {
        matches!(
            record_type,
            record_type::CONSUMER_GROUP_MEMBER_METADATA
                | record_type::CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER
                | record_type::CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT
        )
    }

    /// The key bytes.
    pub fn encode(&self) -> Bytes {
        let mut buf = BytesMut::new();
        buf.put_i16(self.record_type);
        put_string(&mut buf, &self.group_id);
        if let Some(member_id) = &self.member_id {
            put_string(&mut buf, member_id);
        }
        buf.freeze()
    }

    /// Decodes a group record key; `None` for offset commit keys and anything unknown.
    pub fn decode(mut key: &[u8]) -> Option<Self> {
        if key.remaining() < 2 {
            return None;
        }
        let record_type = key.get_i16();
        if !(record_type::GROUP_METADATA..=record_type::CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT)
            .contains(&record_type)
        {
            return None;
        }
        let group_id = get_string(&mut key)?;
        let member_id = if Self::has_member(record_type) {
            Some(get_string(&mut key)?)
        } else {
            None
        };
        key.is_empty().then_some(Self {
            record_type,
            group_id,
            member_id,
        })
    }
}

/// One member in a classic group's `GroupMetadataValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMemberValue {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// The member's metadata for the selected protocol.
    pub subscription: Bytes,
    pub assignment: Bytes,
}

/// A classic group as Kafka persists it (`GroupMetadataValue`): no state, no pending members;
/// a group with members is loaded Stable, one without Empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicGroupValue {
    /// "" when the group has none.
    pub protocol_type: String,
    pub generation_id: i32,
    pub protocol_name: Option<String>,
    pub leader_id: Option<String>,
    pub current_state_timestamp_ms: i64,
    pub members: Vec<ClassicMemberValue>,
}

impl ClassicGroupValue {
    /// The value bytes (Kafka's v3 layout).
    pub fn encode(&self) -> Bytes {
        let mut buf = BytesMut::new();
        buf.put_i16(GROUP_METADATA_VALUE_VERSION);
        put_string(&mut buf, &self.protocol_type);
        buf.put_i32(self.generation_id);
        put_nullable_string(&mut buf, self.protocol_name.as_deref());
        put_nullable_string(&mut buf, self.leader_id.as_deref());
        buf.put_i64(self.current_state_timestamp_ms);
        put_len(&mut buf, self.members.len());
        for m in &self.members {
            put_string(&mut buf, &m.member_id);
            put_nullable_string(&mut buf, m.group_instance_id.as_deref());
            put_string(&mut buf, &m.client_id);
            put_string(&mut buf, &m.client_host);
            buf.put_i32(m.rebalance_timeout_ms);
            buf.put_i32(m.session_timeout_ms);
            put_bytes(&mut buf, &m.subscription);
            put_bytes(&mut buf, &m.assignment);
        }
        buf.freeze()
    }

    /// Decodes a v3 value; `None` for anything else.
    pub fn decode(mut value: &[u8]) -> Option<Self> {
        let buf = &mut value;
        if get_i16(buf)? != GROUP_METADATA_VALUE_VERSION {
            return None;
        }
        let protocol_type = get_string(buf)?;
        let generation_id = get_i32(buf)?;
        let protocol_name = get_nullable_string(buf)?;
        let leader_id = get_nullable_string(buf)?;
        let current_state_timestamp_ms = get_i64(buf)?;
        let count = get_len(buf)?;
        let mut members = Vec::with_capacity(count.min(1024));
        for _ in 0..count {
            members.push(ClassicMemberValue {
                member_id: get_string(buf)?,
                group_instance_id: get_nullable_string(buf)?,
                client_id: get_string(buf)?,
                client_host: get_string(buf)?,
                rebalance_timeout_ms: get_i32(buf)?,
                session_timeout_ms: get_i32(buf)?,
                subscription: get_bytes(buf)?,
                assignment: get_bytes(buf)?,
            });
        }
        buf.is_empty().then_some(Self {
            protocol_type,
            generation_id,
            protocol_name,
            leader_id,
            current_state_timestamp_ms,
            members,
        })
    }
}

/// `ConsumerGroupMemberMetadataValue`: a member's subscription and client details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMemberMetadataValue {
    pub rack_id: Option<String>,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: BTreeSet<String>,
    pub subscribed_topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    /// `ClassicMemberMetadata`: present for members that use the classic protocol.
    pub classic: Option<ClassicMemberMetadata>,
}

/// `ConsumerGroupCurrentMemberAssignmentValue`: where a member is in reconciling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerCurrentAssignmentValue {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub assigned_partitions: Assignment,
    pub partitions_pending_revocation: Assignment,
    /// `AssignmentEpochs` (KIP-1251): the epoch each owned partition was assigned at.
    pub assignment_epochs: BTreeMap<(Uuid, i32), i32>,
}

/// A decoded group record value, by key type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupRecordValue {
    /// `GroupMetadataValue`.
    Classic(ClassicGroupValue),
    /// `ConsumerGroupMetadataValue.epoch`.
    GroupEpoch(i32),
    /// `ConsumerGroupPartitionMetadataValue`: subscribed topics by name.
    PartitionMetadata(BTreeMap<String, SubscribedTopic>),
    /// `ConsumerGroupMemberMetadataValue`.
    MemberMetadata(ConsumerMemberMetadataValue),
    /// `ConsumerGroupTargetAssignmentMetadataValue`: `assignmentEpoch` and (Kafka 4.4)
    /// `assignmentTimestamp`, when it was computed (`None`: not known).
    AssignmentMetadata {
        /// The group epoch the target assignment was computed for.
        epoch: i32,
        /// When it was computed, in the cluster's virtual milliseconds.
        timestamp_ms: Option<u64>,
    },
    /// `ConsumerGroupTargetAssignmentMemberValue`.
    TargetAssignment(Assignment),
    /// `ConsumerGroupCurrentMemberAssignmentValue`.
    CurrentAssignment(ConsumerCurrentAssignmentValue),
}

impl GroupRecordValue {
    /// The value bytes.
    pub fn encode(&self) -> Bytes {
        if let Self::Classic(value) = self {
            return value.encode();
        }
        let mut buf = BytesMut::new();
        buf.put_i16(CONSUMER_VALUE_VERSION);
        match self {
            Self::Classic(_) => unreachable!("encoded above"),
            Self::GroupEpoch(epoch) => buf.put_i32(*epoch),
            Self::AssignmentMetadata {
                epoch,
                timestamp_ms,
            } => {
                buf.put_i32(*epoch);
                buf.put_i64(timestamp_ms.map_or(-1, |ms| i64::try_from(ms).unwrap_or(i64::MAX)));
            }
            Self::PartitionMetadata(topics) => {
                put_len(&mut buf, topics.len());
                for (name, topic) in topics {
                    buf.put_slice(topic.id.as_bytes());
                    put_string(&mut buf, name);
                    buf.put_i32(topic.partition_count);
                }
            }
            Self::MemberMetadata(m) => {
                put_nullable_string(&mut buf, m.rack_id.as_deref());
                put_nullable_string(&mut buf, m.instance_id.as_deref());
                put_string(&mut buf, &m.client_id);
                put_string(&mut buf, &m.client_host);
                put_len(&mut buf, m.subscribed_topic_names.len());
                for name in &m.subscribed_topic_names {
                    put_string(&mut buf, name);
                }
                put_nullable_string(&mut buf, m.subscribed_topic_regex.as_deref());
                buf.put_i32(m.rebalance_timeout_ms);
                put_nullable_string(&mut buf, m.server_assignor.as_deref());
                put_classic_member_metadata(&mut buf, m.classic.as_ref());
            }
            Self::TargetAssignment(assignment) => put_assignment(&mut buf, assignment),
            Self::CurrentAssignment(c) => {
                buf.put_i32(c.member_epoch);
                buf.put_i32(c.previous_member_epoch);
                buf.put_i8(member_state_code(c.state));
                put_assignment(&mut buf, &c.assigned_partitions);
                put_assignment(&mut buf, &c.partitions_pending_revocation);
                put_len(&mut buf, c.assignment_epochs.len());
                for ((topic_id, partition), epoch) in &c.assignment_epochs {
                    buf.put_slice(topic_id.as_bytes());
                    buf.put_i32(*partition);
                    buf.put_i32(*epoch);
                }
            }
        }
        buf.freeze()
    }

    /// Decodes the value of a record whose key has type `record_type`.
    pub fn decode(record_type: i16, mut value: &[u8]) -> Option<Self> {
        if record_type == record_type::GROUP_METADATA {
            return ClassicGroupValue::decode(value).map(Self::Classic);
        }
        let buf = &mut value;
        if get_i16(buf)? != CONSUMER_VALUE_VERSION {
            return None;
        }
        let decoded = match record_type {
            record_type::CONSUMER_GROUP_METADATA => Self::GroupEpoch(get_i32(buf)?),
            record_type::CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA => {
                let epoch = get_i32(buf)?;
                let timestamp_ms = u64::try_from(get_i64(buf)?).ok();
                Self::AssignmentMetadata {
                    epoch,
                    timestamp_ms,
                }
            }
            record_type::CONSUMER_GROUP_PARTITION_METADATA => {
                let mut topics = BTreeMap::new();
                for _ in 0..get_len(buf)? {
                    let id = get_uuid(buf)?;
                    let name = get_string(buf)?;
                    let partition_count = get_i32(buf)?;
                    topics.insert(
                        name,
                        SubscribedTopic {
                            id,
                            partition_count,
                        },
                    );
                }
                Self::PartitionMetadata(topics)
            }
            record_type::CONSUMER_GROUP_MEMBER_METADATA => {
                let rack_id = get_nullable_string(buf)?;
                let instance_id = get_nullable_string(buf)?;
                let client_id = get_string(buf)?;
                let client_host = get_string(buf)?;
                let mut subscribed_topic_names = BTreeSet::new();
                for _ in 0..get_len(buf)? {
                    subscribed_topic_names.insert(get_string(buf)?);
                }
                Self::MemberMetadata(ConsumerMemberMetadataValue {
                    rack_id,
                    instance_id,
                    client_id,
                    client_host,
                    subscribed_topic_names,
                    subscribed_topic_regex: get_nullable_string(buf)?,
                    rebalance_timeout_ms: get_i32(buf)?,
                    server_assignor: get_nullable_string(buf)?,
                    classic: get_classic_member_metadata(buf)?,
                })
            }
            record_type::CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER => {
                Self::TargetAssignment(get_assignment(buf)?)
            }
            record_type::CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT => {
                Self::CurrentAssignment(ConsumerCurrentAssignmentValue {
                    member_epoch: get_i32(buf)?,
                    previous_member_epoch: get_i32(buf)?,
                    state: member_state_from_code(get_i8(buf)?)?,
                    assigned_partitions: get_assignment(buf)?,
                    partitions_pending_revocation: get_assignment(buf)?,
                    assignment_epochs: get_assignment_epochs(buf)?,
                })
            }
            _ => return None,
        };
        buf.is_empty().then_some(decoded)
    }
}

/// A presence byte, then the session timeout and the (name, metadata) protocols.
fn put_classic_member_metadata(buf: &mut BytesMut, classic: Option<&ClassicMemberMetadata>) {
    let Some(classic) = classic else {
        buf.put_i8(0);
        return;
    };
    buf.put_i8(1);
    buf.put_i32(classic.session_timeout_ms);
    put_len(buf, classic.supported_protocols.len());
    for (name, metadata) in &classic.supported_protocols {
        put_string(buf, name);
        put_bytes(buf, metadata);
    }
}

fn get_classic_member_metadata(buf: &mut &[u8]) -> Option<Option<ClassicMemberMetadata>> {
    if get_i8(buf)? == 0 {
        return Some(None);
    }
    let session_timeout_ms = get_i32(buf)?;
    let count = get_len(buf)?;
    let mut supported_protocols = Vec::new();
    for _ in 0..count {
        supported_protocols.push((get_string(buf)?, get_bytes(buf)?));
    }
    Some(Some(ClassicMemberMetadata {
        session_timeout_ms,
        supported_protocols,
    }))
}

/// Kafka's `MemberState.value()` codes.
fn member_state_code(state: MemberState) -> i8 {
    match state {
        MemberState::Stable => 1,
        MemberState::UnrevokedPartitions => 2,
        MemberState::UnreleasedPartitions => 3,
    }
}

fn member_state_from_code(code: i8) -> Option<MemberState> {
    match code {
        1 => Some(MemberState::Stable),
        2 => Some(MemberState::UnrevokedPartitions),
        3 => Some(MemberState::UnreleasedPartitions),
        _ => None,
    }
}

fn put_len(buf: &mut BytesMut, len: usize) {
    buf.put_i32(i32::try_from(len).unwrap_or(i32::MAX));
}

fn put_string(buf: &mut BytesMut, s: &str) {
    // Ids and names are far below i16::MAX bytes; clamp rather than wrap.
    let bytes = &s.as_bytes()[..s.len().min(i16::MAX as usize)];
    buf.put_i16(bytes.len() as i16);
    buf.put_slice(bytes);
}

fn put_nullable_string(buf: &mut BytesMut, s: Option<&str>) {
    match s {
        Some(s) => put_string(buf, s),
        None => buf.put_i16(-1),
    }
}

fn put_bytes(buf: &mut BytesMut, bytes: &[u8]) {
    put_len(buf, bytes.len());
    buf.put_slice(bytes);
}

fn put_assignment(buf: &mut BytesMut, assignment: &Assignment) {
    put_len(buf, assignment.len());
    for (topic_id, partitions) in assignment {
        buf.put_slice(topic_id.as_bytes());
        put_len(buf, partitions.len());
        for p in partitions {
            buf.put_i32(*p);
        }
    }
}

fn get_i8(buf: &mut &[u8]) -> Option<i8> {
    (buf.remaining() >= 1).then(|| buf.get_i8())
}

fn get_i16(buf: &mut &[u8]) -> Option<i16> {
    (buf.remaining() >= 2).then(|| buf.get_i16())
}

fn get_i32(buf: &mut &[u8]) -> Option<i32> {
    (buf.remaining() >= 4).then(|| buf.get_i32())
}

fn get_i64(buf: &mut &[u8]) -> Option<i64> {
    (buf.remaining() >= 8).then(|| buf.get_i64())
}

fn get_len(buf: &mut &[u8]) -> Option<usize> {
    usize::try_from(get_i32(buf)?).ok()
}

fn get_uuid(buf: &mut &[u8]) -> Option<Uuid> {
    if buf.remaining() < 16 {
        return None;
    }
    let mut bytes = [0u8; 16];
    buf.copy_to_slice(&mut bytes);
    Some(Uuid::from_bytes(bytes))
}

fn get_string(buf: &mut &[u8]) -> Option<String> {
    let len = usize::try_from(get_i16(buf)?).ok()?;
    if buf.remaining() < len {
        return None;
    }
    let s = std::str::from_utf8(&buf[..len]).ok()?.to_owned();
    buf.advance(len);
    Some(s)
}

fn get_nullable_string(buf: &mut &[u8]) -> Option<Option<String>> {
    let len = get_i16(buf)?;
    if len == -1 {
        return Some(None);
    }
    let len = usize::try_from(len).ok()?;
    if buf.remaining() < len {
        return None;
    }
    let s = std::str::from_utf8(&buf[..len]).ok()?.to_owned();
    buf.advance(len);
    Some(Some(s))
}

fn get_bytes(buf: &mut &[u8]) -> Option<Bytes> {
    let len = get_len(buf)?;
    if buf.remaining() < len {
        return None;
    }
    Some(buf.copy_to_bytes(len))
}

fn get_assignment_epochs(buf: &mut &[u8]) -> Option<BTreeMap<(Uuid, i32), i32>> {
    let mut epochs = BTreeMap::new();
    for _ in 0..get_len(buf)? {
        let topic_id = get_uuid(buf)?;
        let partition = get_i32(buf)?;
        epochs.insert((topic_id, partition), get_i32(buf)?);
    }
    Some(epochs)
}

fn get_assignment(buf: &mut &[u8]) -> Option<Assignment> {
    let mut assignment = Assignment::new();
    for _ in 0..get_len(buf)? {
        let topic_id = get_uuid(buf)?;
        let mut partitions = BTreeSet::new();
        for _ in 0..get_len(buf)? {
            partitions.insert(get_i32(buf)?);
        }
        if !partitions.is_empty() {
            assignment.insert(topic_id, partitions);
        }
    }
    Some(assignment)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classic_value() -> ClassicGroupValue {
        ClassicGroupValue {
            protocol_type: "consumer".into(),
            generation_id: 4,
            protocol_name: Some("range".into()),
            leader_id: Some("m-1".into()),
            current_state_timestamp_ms: 1_234,
            members: vec![ClassicMemberValue {
                member_id: "m-1".into(),
                group_instance_id: Some("i-1".into()),
                client_id: "c".into(),
                client_host: "/10.0.0.1".into(),
                rebalance_timeout_ms: 60_000,
                session_timeout_ms: 10_000,
                subscription: Bytes::from_static(b"sub"),
                assignment: Bytes::from_static(b"asg"),
            }],
        }
    }

    #[test]
    fn keys_round_trip_and_offset_keys_are_not_group_keys() {
        let key = GroupRecordKey::member(record_type::CONSUMER_GROUP_MEMBER_METADATA, "g", "m");
        assert_eq!(GroupRecordKey::decode(&key.encode()), Some(key));
        let key = GroupRecordKey::group(record_type::GROUP_METADATA, "g-ü");
        assert_eq!(GroupRecordKey::decode(&key.encode()), Some(key));
        // An offset commit key (version 1) is not a group record.
        let (offset_key, _) = super::super::offset_record::OffsetRecord {
            group_id: "g".into(),
            topic: "t".into(),
            partition: 0,
            offset: crate::group::offsets::OffsetAndMetadata {
                committed_offset: 1,
                leader_epoch: None,
                metadata: String::new(),
                commit_timestamp_ms: 0,
                expire_timestamp_ms: None,
            },
        }
        .encode();
        assert_eq!(GroupRecordKey::decode(&offset_key), None);
    }

    #[test]
    fn classic_value_is_kafkas_v3_layout() {
        let value = classic_value();
        let bytes = value.encode();
        // version 3, then protocolType "consumer" as an i16-length string.
        assert_eq!(&bytes[..4], &[0, 3, 0, 8]);
        assert_eq!(&bytes[4..12], b"consumer");
        assert_eq!(ClassicGroupValue::decode(&bytes), Some(value));
        for cut in 0..bytes.len() {
            assert_eq!(ClassicGroupValue::decode(&bytes[..cut]), None, "cut {cut}");
        }
    }

    #[test]
    fn consumer_values_round_trip() {
        let topic = Uuid::from_u128(7);
        let assignment: Assignment = [(topic, BTreeSet::from([0, 2]))].into();
        let values = [
            (
                record_type::CONSUMER_GROUP_METADATA,
                GroupRecordValue::GroupEpoch(9),
            ),
            (
                record_type::CONSUMER_GROUP_PARTITION_METADATA,
                GroupRecordValue::PartitionMetadata(
                    [(
                        "orders".to_owned(),
                        SubscribedTopic {
                            id: topic,
                            partition_count: 3,
                        },
                    )]
                    .into(),
                ),
            ),
            (
                record_type::CONSUMER_GROUP_MEMBER_METADATA,
                GroupRecordValue::MemberMetadata(ConsumerMemberMetadataValue {
                    rack_id: None,
                    instance_id: Some("i".into()),
                    client_id: "c".into(),
                    client_host: "/h".into(),
                    subscribed_topic_names: ["orders".to_owned()].into(),
                    subscribed_topic_regex: Some("o.*".into()),
                    rebalance_timeout_ms: 300_000,
                    server_assignor: Some("range".into()),
                    classic: Some(ClassicMemberMetadata {
                        session_timeout_ms: 45_000,
                        supported_protocols: vec![("range".into(), Bytes::from_static(b"sub"))],
                    }),
                }),
            ),
            (
                record_type::CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
                GroupRecordValue::AssignmentMetadata {
                    epoch: 9,
                    timestamp_ms: Some(1_234),
                },
            ),
            (
                record_type::CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
                GroupRecordValue::AssignmentMetadata {
                    epoch: 1,
                    timestamp_ms: None,
                },
            ),
            (
                record_type::CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                GroupRecordValue::TargetAssignment(assignment.clone()),
            ),
            (
                record_type::CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                GroupRecordValue::CurrentAssignment(ConsumerCurrentAssignmentValue {
                    member_epoch: 9,
                    previous_member_epoch: 8,
                    state: MemberState::UnrevokedPartitions,
                    assigned_partitions: assignment.clone(),
                    partitions_pending_revocation: [(topic, BTreeSet::from([1]))].into(),
                    assignment_epochs: [((topic, 1), 7), ((topic, 2), 9)].into(),
                }),
            ),
        ];
        for (record_type, value) in values {
            let bytes = value.encode();
            assert_eq!(
                GroupRecordValue::decode(record_type, &bytes),
                Some(value.clone()),
                "type {record_type}"
            );
            assert_eq!(
                GroupRecordValue::decode(record_type, &bytes[..bytes.len() - 1]),
                None,
                "truncated type {record_type}"
            );
        }
    }
}
