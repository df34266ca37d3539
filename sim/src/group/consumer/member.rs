//! A member of a consumer group: Kafka's `ConsumerGroupMember` and `MemberState`.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use uuid::Uuid;

use super::assignment::{self, Assignment};

/// Kafka's `ConsumerGroupMemberMetadataValue.ClassicMemberMetadata`: set on the members of a
/// consumer group that speak the classic protocol (JoinGroup / SyncGroup / Heartbeat).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMemberMetadata {
    /// The JoinGroup's session timeout: such members are fenced after it, not after
    /// `group.consumer.session.timeout.ms`.
    pub session_timeout_ms: i32,
    /// The JoinGroup's protocols (assignor name and subscription bytes), in preference order.
    pub supported_protocols: Vec<(String, Bytes)>,
}

impl ClassicMemberMetadata {
    /// The protocol name the member is answered with (`supportedClassicProtocols().iterator().next()`).
    pub fn protocol_name(&self) -> &str {
        self.supported_protocols
            .first()
            .map_or("", |(name, _)| name.as_str())
    }

    /// The subscription bytes of the member's first protocol, whose version prefix the
    /// assignment is written in (`prepareAssignment`).
    pub fn first_metadata(&self) -> &[u8] {
        self.supported_protocols
            .first()
            .map_or(&[][..], |(_, metadata)| metadata.as_ref())
    }
}

/// Kafka's `MemberState`: where a member is in reconciling towards its target assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberState {
    /// The member owns its whole assignment at its epoch; nothing to do until the target moves.
    Stable,
    /// The member must first give up `partitions_pending_revocation`; its epoch only advances
    /// once a heartbeat no longer lists them as owned.
    UnrevokedPartitions,
    /// The member is at the target epoch but some target partitions are still owned by other
    /// members; they are handed over as soon as those members release them.
    UnreleasedPartitions,
}

impl MemberState {
    /// Kafka's `MemberState.toString()`, used in logs.
    pub fn name(self) -> &'static str {
        match self {
            MemberState::Stable => "STABLE",
            MemberState::UnrevokedPartitions => "UNREVOKED_PARTITIONS",
            MemberState::UnreleasedPartitions => "UNRELEASED_PARTITIONS",
        }
    }
}

/// One member of a consumer group, as the coordinator stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupMember {
    /// Client-generated (KIP-1082) or, on v0 joins with an empty id, coordinator-generated.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    /// The client's rack, reported for rack-aware assignors and describe.
    pub rack_id: Option<String>,
    /// The member's current epoch: `-2` after a static temporary leave.
    pub member_epoch: i32,
    /// The epoch before the last update, tolerated once for a lost heartbeat response.
    pub previous_member_epoch: i32,
    /// Where the member is in reconciling.
    pub state: MemberState,
    /// The client's `max.poll.interval.ms`: how long it may take to revoke partitions.
    pub rebalance_timeout_ms: i32,
    /// For describe.
    pub client_id: String,
    /// For describe.
    pub client_host: String,
    /// Topics subscribed by name.
    pub subscribed_topic_names: BTreeSet<String>,
    /// Topics subscribed by a full-match regular expression (ConsumerGroupHeartbeat v1).
    pub subscribed_topic_regex: Option<String>,
    /// The server assignor this member votes for.
    pub server_assignor_name: Option<String>,
    /// Partitions the member owns at `member_epoch`.
    pub assigned_partitions: Assignment,
    /// Partitions the member must still give up before advancing its epoch.
    pub partitions_pending_revocation: Assignment,
    /// The epoch at which each partition it owns (assigned or pending revocation) was assigned
    /// to it (KIP-1251's assignment epochs, Kafka 4.4's `ConsumerGroupMember.assignmentEpoch`):
    /// a 4.4 coordinator accepts a commit at an older member epoch for a partition assigned at
    /// or before that epoch. A partition missing here counts as assigned at the member's epoch
    /// (Kafka's default for records written without epochs).
    pub assignment_epochs: BTreeMap<(Uuid, i32), i32>,
    /// Set when the member uses the classic protocol inside this consumer group.
    pub classic: Option<ClassicMemberMetadata>,
}

impl ConsumerGroupMember {
    /// A member about to join: epoch 0, nothing assigned (Kafka's `Builder(memberId)` defaults).
    pub fn new(member_id: &str) -> Self {
        Self {
            member_id: member_id.to_owned(),
            instance_id: None,
            rack_id: None,
            member_epoch: 0,
            previous_member_epoch: 0,
            state: MemberState::Stable,
            rebalance_timeout_ms: -1,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: BTreeSet::new(),
            subscribed_topic_regex: None,
            server_assignor_name: None,
            assigned_partitions: Assignment::new(),
            partitions_pending_revocation: Assignment::new(),
            assignment_epochs: BTreeMap::new(),
            classic: None,
        }
    }

    /// The epoch at which partition `partition` of `topic_id` was assigned to this member, if it
    /// owns it (assigned or pending revocation): Kafka 4.4's `assignmentEpoch`, then
    /// `pendingRevocationEpoch`.
    pub fn assignment_epoch(&self, topic_id: Uuid, partition: i32) -> Option<i32> {
        let owns = assignment::contains(&self.assigned_partitions, topic_id, partition)
            || assignment::contains(&self.partitions_pending_revocation, topic_id, partition);
        owns.then(|| {
            self.assignment_epochs
                .get(&(topic_id, partition))
                .copied()
                .unwrap_or(self.member_epoch.max(0))
        })
    }

    /// Brings `assignment_epochs` in step after a reconciliation step from `previous`: a
    /// partition it already owned keeps the epoch it was assigned at, one newly assigned is at
    /// its new member epoch (Kafka's `CurrentAssignmentBuilder` puts the target assignment
    /// epoch), and a partition it gave up is forgotten.
    pub fn refresh_assignment_epochs(&mut self, previous: &ConsumerGroupMember) {
        let new_epoch = self.member_epoch;
        self.assignment_epochs = assignment::pairs(&self.assigned_partitions)
            .chain(assignment::pairs(&self.partitions_pending_revocation))
            .map(|(topic_id, partition)| {
                let epoch = previous
                    .assignment_epoch(topic_id, partition)
                    .unwrap_or(new_epoch);
                ((topic_id, partition), epoch)
            })
            .collect();
    }

    /// Kafka's `useClassicProtocol`.
    pub fn uses_classic_protocol(&self) -> bool {
        self.classic.is_some()
    }

    /// The session timeout that applies to this member: its own for classic members,
    /// `consumer_session_timeout_ms` otherwise.
    pub fn session_timeout_ms(&self, consumer_session_timeout_ms: i32) -> i32 {
        self.classic
            .as_ref()
            .map_or(consumer_session_timeout_ms, |c| c.session_timeout_ms)
    }

    /// Kafka's `isReconciledTo`: stable at the group's target assignment epoch.
    pub fn is_reconciled_to(&self, target_assignment_epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == target_assignment_epoch
    }

    /// Kafka's `Builder.updateMemberEpoch`: the current epoch becomes the previous one, even when
    /// unchanged, so the lost-response tolerance covers exactly one step.
    pub fn update_member_epoch(&mut self, member_epoch: i32) {
        self.previous_member_epoch = self.member_epoch;
        self.member_epoch = member_epoch;
    }
}
