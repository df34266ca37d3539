//! The `sticky` assignor (Java's `StickyAssignor`): the eager variant of the sticky algorithm
//! (see `abstract_sticky`).
//!
//! An eager member revokes everything before it joins, so its subscription's owned partitions
//! are empty; instead it sends what it owned, and in which generation, in its subscription user
//! data, and the leader reads ownership from there, always in preference to the subscription's
//! own fields.
//!
//! User data layout (Kafka's `STICKY_ASSIGNOR_USER_DATA_V1`), big-endian:
//! `previous_assignment: [topic: string(i16 length), partitions: [i32]]`, `generation: i32`.
//! Version 0 lacks the generation; a decoder tries v1, then v0, then gives up on the member's
//! history rather than failing the rebalance.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use super::abstract_sticky::{self, MemberData};
use super::{
    into_group_assignment, Assignment, AssignorError, ClusterMetadata, ConsumerPartitionAssignor,
    GroupAssignment, GroupSubscription, Subscription, TopicPartition, DEFAULT_GENERATION,
};

/// The `sticky` assignor. Its state is the member's own last assignment, which it reports in
/// the next subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StickyAssignor {
    member_assignment: Option<Vec<TopicPartition>>,
    generation: i32,
}

impl Default for StickyAssignor {
    fn default() -> Self {
        Self {
            member_assignment: None,
            generation: DEFAULT_GENERATION,
        }
    }
}

impl StickyAssignor {
    /// Its protocol name.
    pub const NAME: &'static str = "sticky";

    /// Encodes `partitions` owned in `generation` as v1 user data. Fails only if a topic name is
    /// longer than an i16 length allows.
    pub fn encode_user_data(partitions: &[TopicPartition], generation: i32) -> Option<Bytes> {
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in partitions {
            by_topic.entry(&tp.topic).or_default().push(tp.partition);
        }
        let mut buf = BytesMut::new();
        buf.put_i32(i32::try_from(by_topic.len()).ok()?);
        for (topic, partitions) in by_topic {
            buf.put_i16(i16::try_from(topic.len()).ok()?);
            buf.put_slice(topic.as_bytes());
            buf.put_i32(i32::try_from(partitions.len()).ok()?);
            for p in partitions {
                buf.put_i32(p);
            }
        }
        buf.put_i32(generation);
        Some(buf.freeze())
    }

    /// Decodes user data as v1, else v0; data that is neither yields no partitions and the
    /// default generation, as in Java.
    pub fn decode_user_data(bytes: &[u8]) -> MemberData {
        let mut v1 = UserDataReader(bytes);
        if let Some(partitions) = v1.previous_assignment() {
            if let Some(generation) = v1.i32() {
                return MemberData {
                    partitions,
                    generation: Some(generation),
                };
            }
        }
        match UserDataReader(bytes).previous_assignment() {
            Some(partitions) => MemberData {
                partitions,
                generation: None,
            },
            None => MemberData {
                partitions: Vec::new(),
                generation: Some(DEFAULT_GENERATION),
            },
        }
    }

    /// What the member owned: always from its user data (an eager member's owned partitions are
    /// empty by the time it joins).
    pub fn member_data(subscription: &Subscription) -> MemberData {
        match &subscription.user_data {
            Some(data) if !data.is_empty() => Self::decode_user_data(data),
            _ => MemberData::default(),
        }
    }
}

/// A bounds-checked reader over sticky user data; `None` on any shortfall.
struct UserDataReader<'a>(&'a [u8]);

impl UserDataReader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }

    fn i32(&mut self) -> Option<i32> {
        let b = self.take(4)?;
        Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An array count, refused if the remaining bytes cannot hold that many `min_bytes` elements
    /// (so a corrupt count cannot drive a large allocation).
    fn count(&mut self, min_bytes: usize) -> Option<usize> {
        let n = usize::try_from(self.i32()?).ok()?;
        (n.saturating_mul(min_bytes) <= self.0.len()).then_some(n)
    }

    fn previous_assignment(&mut self) -> Option<Vec<TopicPartition>> {
        let topics = self.count(6)?;
        let mut partitions = Vec::new();
        for _ in 0..topics {
            let b = self.take(2)?;
            let len = usize::try_from(i16::from_be_bytes([b[0], b[1]])).ok()?;
            // Java decodes with replacement characters rather than failing. One allocation of
            // the name for all its partitions (`protocol::partitions_of`).
            let topic: Arc<str> = Arc::from(String::from_utf8_lossy(self.take(len)?));
            let count = self.count(4)?;
            partitions.reserve(count);
            for _ in 0..count {
                partitions.push(TopicPartition::new(Arc::clone(&topic), self.i32()?));
            }
        }
        Some(partitions)
    }
}

impl ConsumerPartitionAssignor for StickyAssignor {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn subscription_user_data(&self, _topics: &BTreeSet<String>) -> Option<Bytes> {
        let partitions = self.member_assignment.as_ref()?;
        Self::encode_user_data(partitions, self.generation)
    }

    fn assign(
        &self,
        cluster: &ClusterMetadata,
        subscriptions: &GroupSubscription,
    ) -> Result<GroupAssignment, AssignorError> {
        let result =
            abstract_sticky::assign(Self::NAME, cluster, subscriptions, Self::member_data)?;
        Ok(into_group_assignment(result.assignment))
    }

    fn on_assignment(&mut self, assignment: &Assignment, generation: i32) {
        self.member_assignment = Some(assignment.partitions.clone());
        self.generation = generation;
    }
}
