//! ConsumerGroupHeartbeat: Kafka's `GroupMetadataManager.consumerGroupHeartbeat` and
//! `consumerGroupLeave`.
//!
//! A regular heartbeat (1) creates or updates the member, bumping the group epoch when its
//! subscription or the subscribed topics changed, (2) recomputes the target assignment when the
//! group epoch moved past it, and (3) moves the member one reconciliation step towards its target.

use std::collections::BTreeMap;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;
use tracing::debug;

use super::assignment::{self, Assignment};
use super::assignor::{GroupSpec, MemberSpec, ServerAssignor};
use super::coordinator::ConsumerGroupCoordinator;
use super::error::GroupError;
use super::group::{subscribed_topic_names, ConsumerGroup};
use super::member::ConsumerGroupMember;
use super::reconcile::reconcile;
use super::validate::{
    validate_heartbeat, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
};

/// The member a heartbeat acts on, before its metadata is updated.
pub(super) struct ResolvedMember {
    pub(super) member: ConsumerGroupMember,
    /// The member id of a static member being replaced by a rejoining instance.
    pub(super) replaced_member_id: Option<String>,
}

impl ConsumerGroupCoordinator {
    /// Answers a ConsumerGroupHeartbeat received with `api_version` at `now_ms`.
    pub fn consumer_group_heartbeat(
        &mut self,
        request: &ConsumerGroupHeartbeatRequest,
        api_version: i16,
        client_id: &str,
        client_host: &str,
        now_ms: u64,
    ) -> ConsumerGroupHeartbeatResponse {
        self.poll(now_ms);
        let result = validate_heartbeat(request, api_version, &self.config).and_then(|()| {
            let epoch = request.member_epoch;
            if epoch == LEAVE_GROUP_MEMBER_EPOCH || epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                self.leave(request)
            } else {
                self.heartbeat(request, client_id, client_host, now_ms)
            }
        });
        result.unwrap_or_else(|e| {
            ConsumerGroupHeartbeatResponse::default()
                .with_error_code(e.error.code())
                .with_error_message(Some(StrBytes::from_string(e.message)))
        })
    }

    fn heartbeat(
        &mut self,
        request: &ConsumerGroupHeartbeatRequest,
        client_id: &str,
        client_host: &str,
        now_ms: u64,
    ) -> Result<ConsumerGroupHeartbeatResponse, GroupError> {
        let group_id: &str = &request.group_id.0;
        let member_epoch = request.member_epoch;
        let create = member_epoch == 0;
        let owned = request.topic_partitions.as_deref();

        // Get or (on join) create the group, then check its size.
        let new_group;
        let group = match self.groups.get(group_id) {
            Some(group) => group,
            None if create => {
                new_group = ConsumerGroup::at_epoch(group_id, self.config.initial_group_epoch());
                &new_group
            }
            None => return Err(group_id_not_found(group_id)),
        };
        let member_id: &str = &request.member_id;
        if group.members.len() >= self.config.max_size
            && (member_id.is_empty() || !group.members.contains_key(member_id))
        {
            return Err(GroupError::new(
                ResponseError::GroupMaxSizeReached,
                format!(
                    "The consumer group has reached its maximum capacity of {} members.",
                    self.config.max_size
                ),
            ));
        }
        let member_id = if member_id.is_empty() {
            // `Uuid.randomUuid().toString()`.
            self.member_ids.generate_uuid()
        } else {
            member_id.to_owned()
        };

        // Get or create the member.
        let resolved = match request.instance_id.as_deref() {
            None => dynamic_member(group, &member_id, member_epoch, owned, create, false)?,
            Some(instance_id) => static_member(
                group,
                &member_id,
                member_epoch,
                instance_id,
                owned,
                create,
                false,
            )?,
        };
        let member = resolved.member;
        let updated = updated_member(&member, request, client_id, client_host);
        let replaced = resolved.replaced_member_id.filter(|old| *old != member_id);
        let reconciled = self.update_member_and_reconcile(
            group_id,
            &member,
            updated,
            replaced.as_deref(),
            owned,
            now_ms,
        );
        self.schedule_session_timeout(group_id, &member_id, now_ms);

        // The assignment goes out on joins, on full requests (sent after errors) and on change.
        let full_request = member_epoch == 0
            || (request.rebalance_timeout_ms != -1
                && (request.subscribed_topic_names.is_some()
                    || request.subscribed_topic_regex.is_some())
                && owned.is_some());
        let changed = reconciled.assigned_partitions != member.assigned_partitions;
        Ok(ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(StrBytes::from_string(member_id)))
            .with_member_epoch(reconciled.member_epoch)
            .with_heartbeat_interval_ms(self.config.heartbeat_interval_ms)
            .with_assignment(
                (full_request || changed)
                    .then(|| assignment::to_heartbeat_assignment(&reconciled.assigned_partitions)),
            ))
    }

    /// Steps 1–3 shared by ConsumerGroupHeartbeat and a classic JoinGroup
    /// (`consumerGroupHeartbeat`, `classicGroupJoinToConsumerGroup`): store `updated` (replacing
    /// a static member's previous id), bump the group epoch when its subscription or the
    /// subscribed topics changed, recompute the target assignment when the group epoch moved
    /// past it, and move the member one reconciliation step towards its target given what it
    /// reports owning. Returns the stored member.
    pub(super) fn update_member_and_reconcile(
        &mut self,
        group_id: &str,
        member: &ConsumerGroupMember,
        updated: ConsumerGroupMember,
        replaced_member_id: Option<&str>,
        owned: Option<&[TopicPartitions]>,
        now_ms: u64,
    ) -> ConsumerGroupMember {
        let member_id = updated.member_id.clone();
        let subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names
            || updated.subscribed_topic_regex != member.subscribed_topic_regex;

        // 1. Store the member; bump the group epoch on subscription or metadata changes.
        let group = self.groups.entry(group_id.to_owned()).or_insert_with(|| {
            ConsumerGroup::at_epoch(group_id, self.config.initial_group_epoch())
        });
        if let Some(old_member_id) = replaced_member_id {
            let target = group.target_assignment.get(old_member_id).cloned();
            group.remove_member(old_member_id);
            if let Some(target) = target {
                group.target_assignment.insert(member_id.clone(), target);
            }
        }
        group.update_member(updated.clone());
        // A newly created group moves away from epoch 0 whatever its first member subscribes
        // to (an empty subscription changes nothing else; Kafka 4.1's `consumerGroupHeartbeat`).
        let mut bump_group_epoch = subscription_changed || group.group_epoch == 0;
        if bump_group_epoch || group.metadata_refresh_requested {
            let metadata = group.compute_subscription_metadata(&self.topics);
            if metadata != group.subscription_metadata {
                group.subscription_metadata = metadata;
                bump_group_epoch = true;
            }
            group.metadata_refresh_requested = false;
        }
        if bump_group_epoch {
            group.group_epoch += 1;
            debug!(
                group_id,
                member_id,
                group_epoch = group.group_epoch,
                "bumped group epoch"
            );
        }

        // 2. Recompute the target assignment when the group epoch moved past it, and (4.4) the
        // assignment interval has passed since the last one; until then members reconcile
        // towards the last target assignment and the group stays `Assigning`.
        if group.group_epoch > group.assignment_epoch
            && self
                .config
                .can_compute_next_target_assignment(group.assignment_timestamp_ms, now_ms)
        {
            let assignor = preferred_server_assignor(group)
                .and_then(|name| self.config.assignor(name))
                .unwrap_or_else(|| self.config.default_assignor());
            group.target_assignment = assignor.assign(&group_spec(group, &self.topics));
            group.assignment_epoch = group.group_epoch;
            group.assignment_timestamp_ms = Some(now_ms);
            debug!(
                group_id,
                assignment_epoch = group.assignment_epoch,
                assignor = assignor.name(),
                "computed target assignment"
            );
        }

        // 3. Reconcile the member towards its target.
        let mut reconciled = updated;
        let mut rebalance_timer = None;
        if !reconciled.is_reconciled_to(group.assignment_epoch) {
            let target = group
                .target_assignment
                .get(&member_id)
                .cloned()
                .unwrap_or_default();
            let epochs = group.partition_epochs();
            let next = reconcile(
                &reconciled,
                group.assignment_epoch,
                &target,
                &|topic_id, p| ConsumerGroup::partition_epoch(&epochs, topic_id, p),
                owned,
            );
            if next != reconciled {
                debug!(
                    group_id,
                    member_id,
                    member_epoch = next.member_epoch,
                    previous_member_epoch = next.previous_member_epoch,
                    state = next.state.name(),
                    "member assignment state changed"
                );
                rebalance_timer = Some(next.state);
                group.update_member(next.clone());
                reconciled = next;
            }
        }

        if let Some(old_member_id) = replaced_member_id {
            self.cancel_timers(group_id, old_member_id);
        }
        // `maybeReconcile`: only consumer-protocol members get the rebalance timeout; classic
        // members have their join and sync timers instead.
        match rebalance_timer {
            _ if reconciled.uses_classic_protocol() => {}
            Some(super::member::MemberState::UnrevokedPartitions) => self
                .schedule_rebalance_timeout(
                    group_id,
                    &member_id,
                    reconciled.member_epoch,
                    reconciled.rebalance_timeout_ms,
                    now_ms,
                ),
            Some(_) => self.cancel_rebalance_timeout(group_id, &member_id),
            None => {}
        }
        reconciled
    }

    /// Kafka's `consumerGroupLeave`: epoch -1 removes the member; epoch -2 from a static member
    /// only marks it as temporarily gone, keeping its assignment for a rejoin.
    fn leave(
        &mut self,
        request: &ConsumerGroupHeartbeatRequest,
    ) -> Result<ConsumerGroupHeartbeatResponse, GroupError> {
        let group_id: &str = &request.group_id.0;
        let member_id: &str = &request.member_id;
        let group = self
            .groups
            .get_mut(group_id)
            .ok_or_else(|| group_id_not_found(group_id))?;
        let response = ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(request.member_id.clone()))
            .with_member_epoch(request.member_epoch);
        match request.instance_id.as_deref() {
            None => {
                if !group.members.contains_key(member_id) {
                    return Err(unknown_member(group_id, member_id));
                }
                debug!(group_id, member_id, "member left the consumer group");
            }
            Some(instance_id) => {
                let member = group
                    .static_member(instance_id)
                    .cloned()
                    .ok_or_else(|| unknown_instance(instance_id))?;
                throw_if_instance_id_is_fenced(&member, member_id, instance_id)?;
                if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                    let mut leaving = member;
                    leaving.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
                    leaving.partitions_pending_revocation = Assignment::new();
                    debug!(
                        group_id,
                        member_id, instance_id, "static member temporarily left the consumer group"
                    );
                    group.update_member(leaving);
                    return Ok(response);
                }
                debug!(
                    group_id,
                    member_id, instance_id, "static member left the consumer group"
                );
            }
        }
        self.fence_member(group_id, member_id);
        Ok(response)
    }
}

/// Kafka's `getOrMaybeSubscribeDynamicConsumerGroupMember`; a classic JoinGroup
/// (`use_classic_protocol`) carries no member epoch to check.
pub(super) fn dynamic_member(
    group: &ConsumerGroup,
    member_id: &str,
    member_epoch: i32,
    owned: Option<&[TopicPartitions]>,
    create: bool,
    use_classic_protocol: bool,
) -> Result<ResolvedMember, GroupError> {
    let member = match group.members.get(member_id) {
        Some(member) => member.clone(),
        None if create => ConsumerGroupMember::new(member_id),
        None => return Err(unknown_member(&group.group_id, member_id)),
    };
    if !use_classic_protocol {
        throw_if_member_epoch_is_invalid(&member, member_epoch, owned)?;
    }
    Ok(ResolvedMember {
        member,
        replaced_member_id: None,
    })
}

/// Kafka's `getOrMaybeSubscribeStaticConsumerGroupMember`: a joining instance may take over the
/// instance id only after its previous member left with epoch -2; it then inherits that
/// member's assignment at epoch 0. When either side uses the classic protocol the instance id is
/// taken over without waiting for the release, and a classic JoinGroup carries no epoch to check.
pub(super) fn static_member(
    group: &ConsumerGroup,
    member_id: &str,
    member_epoch: i32,
    instance_id: &str,
    owned: Option<&[TopicPartitions]>,
    create: bool,
    use_classic_protocol: bool,
) -> Result<ResolvedMember, GroupError> {
    let existing = group.static_member(instance_id);
    if create {
        let Some(existing) = existing else {
            let member = group
                .members
                .get(member_id)
                .cloned()
                .unwrap_or_else(|| ConsumerGroupMember::new(member_id));
            return Ok(ResolvedMember {
                member,
                replaced_member_id: None,
            });
        };
        if !use_classic_protocol
            && !existing.uses_classic_protocol()
            && existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH
        {
            return Err(GroupError::new(
                ResponseError::UnreleasedInstanceId,
                format!(
                    "Static member {member_id} with instance id {instance_id} cannot join the \
                     group because the instance id is owned by {} member.",
                    existing.member_id
                ),
            ));
        }
        let mut member = existing.clone();
        member.member_id = member_id.to_owned();
        member.member_epoch = 0;
        member.previous_member_epoch = 0;
        return Ok(ResolvedMember {
            member,
            replaced_member_id: Some(existing.member_id.clone()),
        });
    }
    let existing = existing.ok_or_else(|| unknown_instance(instance_id))?;
    throw_if_instance_id_is_fenced(existing, member_id, instance_id)?;
    if !use_classic_protocol {
        throw_if_member_epoch_is_invalid(existing, member_epoch, owned)?;
    }
    Ok(ResolvedMember {
        member: existing.clone(),
        replaced_member_id: None,
    })
}

/// Kafka's `throwIfConsumerGroupMemberEpochIsInvalid`: an epoch ahead of the coordinator's, or
/// behind it, is fenced, except the previous epoch when the member owns nothing beyond its
/// current assignment (the response that moved it forward was lost).
fn throw_if_member_epoch_is_invalid(
    member: &ConsumerGroupMember,
    received: i32,
    owned: Option<&[TopicPartitions]>,
) -> Result<(), GroupError> {
    let fenced = |relation: &str| {
        Err(GroupError::new(
            ResponseError::FencedMemberEpoch,
            format!(
                "The consumer group member has a {relation} member epoch ({received}) than the \
                 one known by the group coordinator ({}). The member must abandon all its \
                 partitions and rejoin.",
                member.member_epoch
            ),
        ))
    };
    if received > member.member_epoch {
        return fenced("greater");
    }
    if received < member.member_epoch
        && (received != member.previous_member_epoch
            || !assignment::is_subset(owned, &member.assigned_partitions))
    {
        return fenced("smaller");
    }
    Ok(())
}

/// Kafka's `throwIfInstanceIdIsFenced`.
pub(super) fn throw_if_instance_id_is_fenced(
    member: &ConsumerGroupMember,
    member_id: &str,
    instance_id: &str,
) -> Result<(), GroupError> {
    if member.member_id == member_id {
        return Ok(());
    }
    Err(GroupError::new(
        ResponseError::FencedInstanceId,
        format!(
            "Static member {member_id} with instance id {instance_id} was fenced by member {}.",
            member.member_id
        ),
    ))
}

/// Kafka's `ConsumerGroupMember.Builder.maybeUpdate*`: absent fields keep their value.
fn updated_member(
    member: &ConsumerGroupMember,
    request: &ConsumerGroupHeartbeatRequest,
    client_id: &str,
    client_host: &str,
) -> ConsumerGroupMember {
    let mut updated = member.clone();
    if let Some(instance_id) = &request.instance_id {
        updated.instance_id = Some(instance_id.to_string());
    }
    if let Some(rack_id) = &request.rack_id {
        updated.rack_id = Some(rack_id.to_string());
    }
    if request.rebalance_timeout_ms != -1 {
        updated.rebalance_timeout_ms = request.rebalance_timeout_ms;
    }
    if let Some(assignor) = &request.server_assignor {
        updated.server_assignor_name = Some(assignor.to_string());
    }
    if let Some(names) = &request.subscribed_topic_names {
        updated.subscribed_topic_names = names.iter().map(|n| n.0.to_string()).collect();
    }
    if let Some(regex) = &request.subscribed_topic_regex {
        // An empty regex clears the regex subscription.
        updated.subscribed_topic_regex = (!regex.is_empty()).then(|| regex.to_string());
    }
    updated.client_id = client_id.to_owned();
    updated.client_host = client_host.to_owned();
    // A member heartbeating with the consumer protocol no longer uses the classic one.
    updated.classic = None;
    updated
}

/// Kafka's `computePreferredServerAssignor`: the assignor most members ask for (ties to the
/// smallest name, where Kafka's hash-map order is arbitrary).
fn preferred_server_assignor(group: &ConsumerGroup) -> Option<&str> {
    let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
    for name in group
        .members
        .values()
        .filter_map(|m| m.server_assignor_name.as_deref())
    {
        *votes.entry(name).or_default() += 1;
    }
    let max = votes.values().copied().max()?;
    votes
        .into_iter()
        .find(|(_, count)| *count == max)
        .map(|(name, _)| name)
}

/// Kafka's `TargetAssignmentBuilder` input: each member's existing subscribed topics and its
/// previous target, for stickiness.
fn group_spec(group: &ConsumerGroup, topics: &super::topics::TopicsImage) -> GroupSpec {
    let members = group
        .members
        .iter()
        .map(|(member_id, member)| {
            let subscribed_topic_ids = subscribed_topic_names(member, topics)
                .iter()
                .filter_map(|name| group.subscription_metadata.get(name))
                .map(|topic| topic.id)
                .collect();
            let spec = MemberSpec {
                instance_id: member.instance_id.clone(),
                subscribed_topic_ids,
                current_assignment: group
                    .target_assignment
                    .get(member_id)
                    .cloned()
                    .unwrap_or_default(),
            };
            (member_id.clone(), spec)
        })
        .collect();
    let partition_counts = group
        .subscription_metadata
        .values()
        .map(|topic| (topic.id, topic.partition_count))
        .collect();
    GroupSpec {
        members,
        partition_counts,
    }
}

fn group_id_not_found(group_id: &str) -> GroupError {
    GroupError::new(
        ResponseError::GroupIdNotFound,
        format!("Consumer group {group_id} not found."),
    )
}

pub(super) fn unknown_member(group_id: &str, member_id: &str) -> GroupError {
    GroupError::new(
        ResponseError::UnknownMemberId,
        format!("Member {member_id} is not a member of group {group_id}."),
    )
}

pub(super) fn unknown_instance(instance_id: &str) -> GroupError {
    GroupError::new(
        ResponseError::UnknownMemberId,
        format!("Instance id {instance_id} is unknown."),
    )
}

/// The assignor name describe reports: the preferred one, else the default.
pub(super) fn assignor_name(group: &ConsumerGroup, default: ServerAssignor) -> String {
    preferred_server_assignor(group)
        .unwrap_or(default.name())
        .to_owned()
}
