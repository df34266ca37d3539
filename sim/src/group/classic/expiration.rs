//! Which offsets of a classic group may expire (`ClassicGroup.offsetExpirationCondition` and
//! `isSubscribedToTopic`), for the shard's periodic offset cleanup.
//!
//! Kafka computes the subscribed topics at each new generation (`computeSubscribedTopics`);
//! here they are decoded from the members when asked, which gives the same set: members'
//! metadata only changes through a rebalance, which starts a new generation.

use std::collections::BTreeSet;

use super::group::ClassicGroup;
use super::state::ClassicGroupState;
use crate::group::migration::consumer_protocol;
use crate::group::offsets_retention::OffsetExpirationCondition;

/// `ConsumerProtocol.PROTOCOL_TYPE`.
const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

impl ClassicGroup {
    /// `offsetExpirationCondition`:
    /// - a simple group (no protocol type): each offset from its commit;
    /// - Empty: every offset from when the group became Empty;
    /// - Stable with the consumer protocol and known subscriptions: unsubscribed topics' offsets
    ///   from their commit;
    /// - otherwise (a rebalance in flight, other protocol types with members): none expire.
    pub fn offset_expiration_condition(&self) -> Option<OffsetExpirationCondition> {
        if self.protocol_type.is_none() {
            return Some(OffsetExpirationCondition::CommitTimestamp);
        }
        if self.is_in(ClassicGroupState::Empty) {
            return Some(OffsetExpirationCondition::StateTimestamp(
                self.current_state_timestamp_ms,
            ));
        }
        if self.uses_consumer_group_protocol()
            && self.subscribed_topics().is_some()
            && self.is_in(ClassicGroupState::Stable)
        {
            return Some(OffsetExpirationCondition::CommitTimestamp);
        }
        None
    }

    /// `isSubscribedToTopic`: with unknown subscriptions a consumer-protocol group keeps its
    /// offsets (assumed subscribed) and any other group lets them go.
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        match self.subscribed_topics() {
            Some(topics) => topics.contains(topic),
            None => self.uses_consumer_group_protocol(),
        }
    }

    /// `usesConsumerGroupProtocol`: the protocol type is `consumer`.
    pub fn uses_consumer_group_protocol(&self) -> bool {
        self.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
    }

    /// `computeSubscribedTopics`: the union of the members' subscriptions (each member's
    /// metadata for the selected protocol read as a ConsumerProtocolSubscription); `None` for
    /// other protocol types, before a protocol is selected, or if a subscription is malformed.
    fn subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if !self.uses_consumer_group_protocol() {
            return None;
        }
        if self.members.is_empty() {
            return Some(BTreeSet::new());
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for member in self.members.values() {
            let decoded =
                consumer_protocol::decode_subscription(&member.metadata(protocol)).ok()?;
            topics.extend(decoded.topics);
        }
        Some(topics)
    }
}
