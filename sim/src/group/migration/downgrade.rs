//! Consumer → classic: Kafka's `ClassicGroup.fromConsumerGroup`, used by `convertToClassicGroup`
//! when fencing leaves a consumer group with classic members only.

use bytes::Bytes;

use super::consumer_protocol::{encode_assignment, version};
use crate::group::classic::{ClassicGroup, ClassicGroupMember, MemberProtocol};
use crate::group::consumer::{DowngradedGroup, TopicsImage};

/// The classic group a consumer group becomes: Stable at the group epoch as generation, with
/// every remaining (classic) member, the protocol their votes select, and each member's target
/// assignment written in the consumer protocol version of its own metadata. The caller then
/// starts a rebalance so the members rejoin under a leader.
pub fn classic_group_from_consumer(
    downgraded: &DowngradedGroup,
    topics: &TopicsImage,
) -> ClassicGroup {
    let consumer = &downgraded.group;
    let mut group = ClassicGroup::stable(
        &consumer.group_id,
        consumer.group_epoch,
        super::CONSUMER_PROTOCOL_TYPE,
    );
    for member in consumer.members.values() {
        if downgraded.leaving_member_ids.contains(&member.member_id) {
            continue;
        }
        let Some(classic) = &member.classic else {
            continue;
        };
        group.add(ClassicGroupMember {
            member_id: member.member_id.clone(),
            group_instance_id: member.instance_id.clone(),
            client_id: member.client_id.clone(),
            client_host: member.client_host.clone(),
            rebalance_timeout_ms: member.rebalance_timeout_ms,
            session_timeout_ms: classic.session_timeout_ms,
            protocol_type: super::CONSUMER_PROTOCOL_TYPE.to_owned(),
            protocols: classic
                .supported_protocols
                .iter()
                .map(|(name, metadata)| MemberProtocol {
                    name: name.clone(),
                    metadata: metadata.clone(),
                })
                .collect(),
            assignment: Bytes::new(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
        });
    }
    group.protocol_name = group.select_protocol();
    let protocol_name = group.protocol_name.clone().unwrap_or_default();
    for member in group.members.values_mut() {
        let target = consumer
            .target_assignment
            .get(&member.member_id)
            .cloned()
            .unwrap_or_default();
        // Bytes that were accepted at JoinGroup always carry a version; a member whose
        // assignment cannot be written keeps an empty one and gets a new one in the rebalance.
        member.assignment = version(&member.metadata(&protocol_name))
            .and_then(|v| encode_assignment(&target, topics, v))
            .unwrap_or_default();
    }
    group
}
