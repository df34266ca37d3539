//! Offset commit and fetch checks for consumer groups: Kafka's `ConsumerGroup.validateOffsetCommit`
//! and `validateOffsetFetch`, called by the offsets store before it acts.

use kafka_protocol::error::ResponseError;

use super::coordinator::ConsumerGroupCoordinator;
use super::error::GroupError;
use super::member::ConsumerGroupMember;
use super::topics::TopicsImage;

/// The first OffsetCommit version carrying member epochs (KIP-848).
const MIN_OFFSET_COMMIT_VERSION_FOR_CONSUMER_PROTOCOL: i16 = 9;

impl ConsumerGroupCoordinator {
    /// Whether an OffsetCommit by `member_id` at `member_epoch` of `partitions` (topic name,
    /// partition; read only when a 4.4 coordinator judges them one by one) may write to consumer group `group_id` at `now_ms`. Before Kafka 4.4 every
    /// epoch mismatch is STALE_MEMBER_EPOCH, older or newer: the member retries with the epoch
    /// its next heartbeat returns. From 4.4 (KIP-1251) an older epoch is accepted when every
    /// partition is one the member owns, assigned at or before that epoch; otherwise the whole
    /// commit fails, as Kafka's validator throws out of `commitOffset`.
    #[allow(clippy::too_many_arguments)] // Kafka's validateOffsetCommit, plus the partitions.
    pub fn validate_offset_commit<'a>(
        &mut self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
        is_transactional: bool,
        api_version: i16,
        partitions: impl IntoIterator<Item = (&'a str, i32)>,
        now_ms: u64,
    ) -> Result<(), GroupError> {
        self.poll(now_ms);
        let group = self
            .groups
            .get(group_id)
            .ok_or_else(|| group_not_found(group_id))?;
        // Admin clients and manual-assignment consumers commit with epoch -1 to empty groups.
        if member_epoch < 0 && group.members.is_empty() {
            return Ok(());
        }
        let member = group
            .members
            .get(member_id)
            .ok_or_else(|| unknown_member(group_id, member_id))?;
        if !is_transactional
            && !member.uses_classic_protocol()
            && api_version < MIN_OFFSET_COMMIT_VERSION_FOR_CONSUMER_PROTOCOL
        {
            return Err(GroupError::new(
                ResponseError::UnsupportedVersion,
                "OffsetCommit version 9 or above must be used by members using the modern group \
                 protocol",
            ));
        }
        if member_epoch < member.member_epoch
            && self
                .config
                .kafka_version
                .fences_commits_by_assignment_epoch()
        {
            return partitions.into_iter().try_for_each(|(topic, partition)| {
                validate_assignment_epoch(member, member_epoch, &self.topics, topic, partition)
            });
        }
        validate_member_epoch(member_epoch, member)
    }

    /// Whether an OffsetFetch by `member_id` (absent for admin clients) at `member_epoch` may
    /// read consumer group `group_id` at `now_ms`.
    pub fn validate_offset_fetch(
        &mut self,
        group_id: &str,
        member_id: Option<&str>,
        member_epoch: i32,
        now_ms: u64,
    ) -> Result<(), GroupError> {
        self.poll(now_ms);
        let group = self
            .groups
            .get(group_id)
            .ok_or_else(|| group_not_found(group_id))?;
        let Some(member_id) = member_id else {
            if member_epoch < 0 {
                return Ok(());
            }
            return Err(unknown_member(group_id, ""));
        };
        let member = group
            .members
            .get(member_id)
            .ok_or_else(|| unknown_member(group_id, member_id))?;
        validate_member_epoch(member_epoch, member)
    }
}

/// Kafka's `validateMemberEpoch`: a classic member's generation is its member epoch, and a
/// mismatch is the classic ILLEGAL_GENERATION rather than STALE_MEMBER_EPOCH.
fn validate_member_epoch(received: i32, member: &ConsumerGroupMember) -> Result<(), GroupError> {
    let expected = member.member_epoch;
    if received == expected {
        return Ok(());
    }
    if member.uses_classic_protocol() {
        return Err(GroupError::new(
            ResponseError::IllegalGeneration,
            format!("The received generation id {received} does not match the expected member epoch {expected}."),
        ));
    }
    Err(GroupError::new(
        ResponseError::StaleMemberEpoch,
        format!("The received member epoch {received} does not match the expected member epoch {expected}."),
    ))
}

/// Kafka 4.4's `createAssignmentEpochValidator`: a commit at `received`, older than the
/// member's epoch, may write partition `partition` of `topic` only if the member owns it
/// (assigned or pending revocation) since an epoch no newer than `received`.
fn validate_assignment_epoch(
    member: &ConsumerGroupMember,
    received: i32,
    topics: &TopicsImage,
    topic: &str,
    partition: i32,
) -> Result<(), GroupError> {
    let error = if member.uses_classic_protocol() {
        ResponseError::IllegalGeneration
    } else {
        ResponseError::StaleMemberEpoch
    };
    let assigned_at = topics
        .topic(topic)
        .and_then(|image| member.assignment_epoch(image.id, partition));
    match assigned_at {
        None => Err(GroupError::new(
            error,
            format!(
                "Partition {topic}-{partition} is not assigned or pending revocation for member."
            ),
        )),
        Some(epoch) if received < epoch => Err(GroupError::new(
            error,
            format!(
                "Received member epoch {received} is older than assignment epoch {epoch} for \
                 partition {topic}-{partition}."
            ),
        )),
        Some(_) => Ok(()),
    }
}

fn group_not_found(group_id: &str) -> GroupError {
    GroupError::new(
        ResponseError::GroupIdNotFound,
        format!("Consumer group {group_id} not found."),
    )
}

fn unknown_member(group_id: &str, member_id: &str) -> GroupError {
    GroupError::new(
        ResponseError::UnknownMemberId,
        format!("Member {member_id} is not a member of group {group_id}."),
    )
}
