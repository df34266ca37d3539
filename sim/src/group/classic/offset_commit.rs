//! OffsetCommit and OffsetFetch for classic groups: the classic validation
//! (`OffsetMetadataManager.validateOffsetCommit`, `ClassicGroup.validateOffsetCommit`,
//! `ClassicGroup.validateOffsetFetch`) in front of the shared [`OffsetStore`].

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{OffsetCommitRequest, OffsetFetchRequest, OffsetFetchResponse};

use super::coordinator::{ClassicGroupCoordinator, ClassicResponse, RequestId};
use super::group::ClassicGroup;
use super::state::ClassicGroupState;
use crate::group::offsets::{to_single_group_shape, OffsetStore, RequestedTopics};

impl ClassicGroupCoordinator {
    /// Handles OffsetCommit (non-transactional): validates against the classic group, then
    /// stores into `offsets`. A commit from a member of a Stable or PreparingRebalance group
    /// also keeps its session alive, as in Kafka.
    pub fn offset_commit(
        &mut self,
        now_ms: u64,
        id: RequestId,
        api_version: i16,
        request: &OffsetCommitRequest,
        offsets: &mut OffsetStore,
    ) {
        self.advance(now_ms);
        let response = match self.validate_offset_commit(api_version, request) {
            Ok(()) => {
                let group_id = request.group_id.0.as_str();
                let member_id = request.member_id.as_str();
                self.with_group(group_id, |group, fx| {
                    let keeps_session = matches!(
                        group.state(),
                        ClassicGroupState::Stable | ClassicGroupState::PreparingRebalance
                    );
                    if let Some(member) = group.members.get(member_id).filter(|_| keeps_session) {
                        fx.reschedule_heartbeat(group_id, member_id, member.session_timeout_ms);
                    }
                });
                offsets.commit(self.now_ms, request, self.config.offset_metadata_max_bytes)
            }
            Err(error) => OffsetStore::commit_error_response(request, error),
        };
        self.respond(id, ClassicResponse::OffsetCommit(response));
    }

    /// `OffsetMetadataManager.validateOffsetCommit` for classic groups. A commit with a negative
    /// generation to an unknown group creates a "simple" (unmanaged) Empty group; otherwise an
    /// unknown group is GROUP_ID_NOT_FOUND from v9 and ILLEGAL_GENERATION before.
    pub fn validate_offset_commit(
        &mut self,
        api_version: i16,
        request: &OffsetCommitRequest,
    ) -> Result<(), ResponseError> {
        let group_id = request.group_id.0.as_str();
        let generation_id = request.generation_id_or_member_epoch;
        if !self.groups.contains_key(group_id) {
            if generation_id < 0 {
                tracing::debug!(group = %group_id, "creating a simple group via manual offset commit");
                let group = ClassicGroup::created_at(group_id, self.now_ms);
                self.groups.insert(group_id.to_owned(), group);
            } else if api_version >= 9 {
                return Err(ResponseError::GroupIdNotFound);
            } else {
                return Err(ResponseError::IllegalGeneration);
            }
        }
        let group = self
            .groups
            .get(group_id)
            .ok_or(ResponseError::GroupIdNotFound)?;
        validate_classic_offset_commit(group, request)
    }

    /// Handles OffsetFetch: v8+ may batch groups, older versions name one group. Unknown and
    /// Dead groups read as "no offsets" without an error, as in Kafka.
    pub fn offset_fetch(
        &mut self,
        now_ms: u64,
        id: RequestId,
        api_version: i16,
        request: &OffsetFetchRequest,
        offsets: &OffsetStore,
    ) {
        self.advance(now_ms);
        let response = if api_version >= 8 {
            let groups = request
                .groups
                .iter()
                .map(|g| {
                    let requested: RequestedTopics = g.topics.as_ref().map(|topics| {
                        topics
                            .iter()
                            .map(|t| (t.name.clone(), t.partition_indexes.clone()))
                            .collect()
                    });
                    offsets.fetch_group(&g.group_id, &requested, self.is_fetchable(&g.group_id.0))
                })
                .collect();
            OffsetFetchResponse::default().with_groups(groups)
        } else {
            let requested: RequestedTopics = request.topics.as_ref().map(|topics| {
                topics
                    .iter()
                    .map(|t| (t.name.clone(), t.partition_indexes.clone()))
                    .collect()
            });
            let visible = self.is_fetchable(&request.group_id.0);
            let group = offsets.fetch_group(&request.group_id, &requested, visible);
            let (topics, error_code) = to_single_group_shape(group);
            OffsetFetchResponse::default()
                .with_topics(topics)
                .with_error_code(error_code)
        };
        self.respond(id, ClassicResponse::OffsetFetch(response));
    }

    /// `validateOffsetFetch`: a group that does not exist or is Dead has no visible offsets.
    fn is_fetchable(&self, group_id: &str) -> bool {
        self.groups
            .get(group_id)
            .is_some_and(|g| !g.is_in(ClassicGroupState::Dead))
    }
}

/// `ClassicGroup.validateOffsetCommit` (non-transactional).
fn validate_classic_offset_commit(
    group: &ClassicGroup,
    request: &OffsetCommitRequest,
) -> Result<(), ResponseError> {
    if group.is_in(ClassicGroupState::Dead) {
        return Err(ResponseError::CoordinatorNotAvailable);
    }
    let generation_id = request.generation_id_or_member_epoch;
    // Admin clients and consumers without group management commit with generation -1; they
    // may only do so while no members own the partitions.
    if generation_id < 0 && group.is_in(ClassicGroupState::Empty) {
        return Ok(());
    }
    let member_id = request.member_id.as_str();
    let instance_id = request.group_instance_id.as_ref().map(|s| s.as_str());
    if generation_id >= 0 || !member_id.is_empty() || instance_id.is_some() {
        group.validate_member(member_id, instance_id)?;
        if generation_id != group.generation_id {
            return Err(ResponseError::IllegalGeneration);
        }
    } else if !group.is_in(ClassicGroupState::Empty) {
        return Err(ResponseError::UnknownMemberId);
    }
    // A member with a valid generation that has not synced yet: tell it to finish the rebalance.
    if group.is_in(ClassicGroupState::CompletingRebalance) {
        return Err(ResponseError::RebalanceInProgress);
    }
    Ok(())
}
