//! JoinGroup from a classic member of a consumer group (`classicGroupJoinToConsumerGroup`).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use kafka_protocol::protocol::StrBytes;
use tracing::debug;

use super::super::coordinator::ConsumerGroupCoordinator;
use super::super::error::GroupError;
use super::super::heartbeat::{dynamic_member, static_member};
use super::super::member::{ClassicMemberMetadata, ConsumerGroupMember};
use crate::group::migration::consumer_protocol::{decode_subscription, DecodedSubscription};

/// JoinGroup v4+ makes a dynamic member without an id come back with one (KIP-394,
/// `JoinGroupRequest.requiresKnownMemberId`).
const KNOWN_MEMBER_ID_REQUIRED_VERSION: i16 = 4;

impl ConsumerGroupCoordinator {
    /// Answers a classic JoinGroup (API `api_version`) for the non-empty consumer group it names.
    /// Unlike a classic group there is no join barrier: the target assignment is computed in
    /// this call, so the answer is immediate.
    pub fn classic_group_join(
        &mut self,
        request: &JoinGroupRequest,
        api_version: i16,
        client_id: &str,
        client_host: &str,
        now_ms: u64,
    ) -> JoinGroupResponse {
        self.poll(now_ms);
        let answer = self.classic_join(request, api_version, client_id, client_host, now_ms);
        let response = answer.unwrap_or_else(|e| {
            debug!(group_id = %request.group_id.0, error = ?e.error, message = e.message, "classic join refused");
            JoinGroupResponse::default()
                .with_member_id(request.member_id.clone())
                .with_error_code(e.error.code())
                .with_protocol_name(None)
        });
        // JoinGroup v0–6 cannot encode a null protocol name; Kafka sends "".
        if api_version < 7 && response.protocol_name.is_none() {
            return response.with_protocol_name(Some(StrBytes::default()));
        }
        response
    }

    fn classic_join(
        &mut self,
        request: &JoinGroupRequest,
        api_version: i16,
        client_id: &str,
        client_host: &str,
        now_ms: u64,
    ) -> Result<JoinGroupResponse, GroupError> {
        let group_id: &str = &request.group_id.0;
        // JoinGroup v0 has no rebalance timeout: Kafka's `JoinGroupRequest` uses the session
        // timeout in its place.
        let normalized;
        let request = if api_version == 0 {
            normalized = request
                .clone()
                .with_rebalance_timeout_ms(request.session_timeout_ms);
            &normalized
        } else {
            request
        };
        let instance_id = request.group_instance_id.as_deref();
        let is_unknown_member = request.member_id.is_empty();
        let member_id = if is_unknown_member {
            // `Uuid.randomUuid().toString()`.
            self.member_ids.generate_uuid()
        } else {
            request.member_id.to_string()
        };
        let group = self
            .groups
            .get(group_id)
            .ok_or_else(|| GroupError::new(ResponseError::UnknownMemberId, "Group not found."))?;

        // `throwIfConsumerGroupIsFull`, `throwIfClassicProtocolIsNotSupported`.
        if group.members.len() >= self.config.max_size && !group.members.contains_key(&member_id) {
            return Err(GroupError::new(
                ResponseError::GroupMaxSizeReached,
                format!(
                    "The consumer group has reached its maximum capacity of {} members.",
                    self.config.max_size
                ),
            ));
        }
        let protocol_names = request.protocols.iter().map(|p| p.name.as_str());
        if !group.supports_classic_protocols(&request.protocol_type, protocol_names) {
            return Err(GroupError::new(
                ResponseError::InconsistentGroupProtocol,
                format!("Member {member_id}'s protocols are not supported."),
            ));
        }
        if is_unknown_member
            && instance_id.is_none()
            && api_version >= KNOWN_MEMBER_ID_REQUIRED_VERSION
        {
            debug!(
                group_id,
                member_id, "classic member needs a member id; asked to rejoin with one"
            );
            return Ok(JoinGroupResponse::default()
                .with_member_id(StrBytes::from_string(member_id))
                .with_error_code(ResponseError::MemberIdRequired.code())
                .with_protocol_name(None));
        }

        let resolved = match instance_id {
            None => dynamic_member(group, &member_id, -1, None, true, true)?,
            Some(instance_id) => static_member(
                group,
                &member_id,
                -1,
                instance_id,
                None,
                is_unknown_member,
                true,
            )?,
        };
        // All protocols carry the same subscription; Kafka reads the first one's.
        let metadata = request.protocols.first().map(|p| p.metadata.as_ref());
        let subscription = metadata
            .and_then(|m| decode_subscription(m).ok())
            .ok_or_else(|| {
                GroupError::new(
                    ResponseError::UnknownServerError,
                    "Malformed embedded consumer protocol in subscription deserialization.",
                )
            })?;
        let member = resolved.member;
        // `validateOnlineDowngradeWithReplacedMember`, asked of the instance's current member.
        let downgrade = instance_id
            .and_then(|instance| group.static_member(instance))
            .is_some_and(|existing| {
                self.validate_online_downgrade_with_replaced_member(group, &existing.member_id)
            });
        let updated =
            updated_classic_member(&member, request, &subscription, client_id, client_host);
        let subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names
            || updated.subscribed_topic_regex != member.subscribed_topic_regex;
        let protocol_name = updated
            .classic
            .as_ref()
            .map(|c| c.protocol_name().to_owned())
            .unwrap_or_default();
        let owned = subscription.owned_by_topic_id(&self.topics);
        let replaced = resolved.replaced_member_id.filter(|old| *old != member_id);
        let reconciled = self.update_member_and_reconcile(
            group_id,
            &member,
            updated,
            replaced.as_deref(),
            Some(&owned),
            now_ms,
        );

        self.cancel_classic_join_timeout(group_id, &member_id);
        if downgrade {
            // `convertToClassicGroup` with the joining member in the replaced one's place (its
            // assignment included); a changed subscription makes the classic group rebalance.
            debug!(
                group_id,
                member_id, "downgrading consumer group at a static member's replacement"
            );
            self.downgrade_after_replacement(group_id, subscription_changed);
        } else {
            self.schedule_session_timeout(group_id, &member_id, now_ms);
            self.schedule_classic_sync_timeout(
                group_id,
                &member_id,
                request.rebalance_timeout_ms,
                now_ms,
            );
        }
        debug!(
            group_id,
            member_id,
            generation_id = reconciled.member_epoch,
            state = reconciled.state.name(),
            "classic member joined the consumer group"
        );
        Ok(JoinGroupResponse::default()
            .with_member_id(StrBytes::from_string(member_id))
            .with_generation_id(reconciled.member_epoch)
            .with_protocol_type(Some(StrBytes::from_static_str(
                crate::group::migration::CONSUMER_PROTOCOL_TYPE,
            )))
            .with_protocol_name(Some(StrBytes::from_string(protocol_name)))
            .with_leader(StrBytes::default())
            .with_skip_assignment(false))
    }
}

/// The member as the JoinGroup describes it (Kafka's `ConsumerGroupMember.Builder` calls in
/// `classicGroupJoinToConsumerGroup`): subscription and rack from the embedded subscription,
/// rebalance timeout unless -1, the server assignor left as it was, and the classic metadata.
fn updated_classic_member(
    member: &ConsumerGroupMember,
    request: &JoinGroupRequest,
    subscription: &DecodedSubscription,
    client_id: &str,
    client_host: &str,
) -> ConsumerGroupMember {
    let mut updated = member.clone();
    if let Some(instance_id) = &request.group_instance_id {
        updated.instance_id = Some(instance_id.to_string());
    }
    if let Some(rack_id) = &subscription.rack_id {
        updated.rack_id = Some(rack_id.clone());
    }
    if request.rebalance_timeout_ms != -1 {
        updated.rebalance_timeout_ms = request.rebalance_timeout_ms;
    }
    updated.subscribed_topic_names = subscription.topics.clone();
    updated.client_id = client_id.to_owned();
    updated.client_host = client_host.to_owned();
    updated.classic = Some(ClassicMemberMetadata {
        session_timeout_ms: request.session_timeout_ms,
        supported_protocols: request
            .protocols
            .iter()
            .map(|p| (p.name.to_string(), p.metadata.clone()))
            .collect(),
    });
    updated
}
