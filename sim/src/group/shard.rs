//! One `__consumer_offsets` partition's group coordinator: the classic and the KIP-848
//! coordinators side by side over one offset store, plugged into the broker's coordinator
//! runtime as a [`GroupShard`] (Kafka's `GroupCoordinatorShard`).
//!
//! - Routing: a group id is a consumer-protocol group once the consumer coordinator knows it;
//!   everything else is classic (including "simple" groups that only commit offsets). An empty
//!   group of one type gives way to the other, as Kafka's `maybeDeleteEmptyClassicGroup` /
//!   `maybeDeleteEmptyConsumerGroup` do: a successful ConsumerGroupHeartbeat replaces an empty
//!   classic group, a classic JoinGroup an empty consumer group (with the old group's
//!   tombstones).
//! - Online migration (`crate::group::migration`, policy `group.consumer.migration.policy`):
//!   classic JoinGroup / SyncGroup / Heartbeat / LeaveGroup for a consumer group are answered by
//!   the consumer coordinator (`classicGroup*ToConsumerGroup`); a joining ConsumerGroupHeartbeat
//!   turns a non-empty classic group into a consumer group (`convertToConsumerGroup`), and a
//!   consumer group that fencing leaves with classic members only is handed back to the classic
//!   coordinator (`convertToClassicGroup`).
//! - ListGroups lists both types (`list::filter_listed_groups` applies the v4 states and v5
//!   types filters).
//! - Durability: every accepted offset commit is appended to the shard's partition before it is
//!   answered ([`OffsetRecord`]), and group state is written as Kafka's group records
//!   ([`super::group_record`]): the classic coordinator's `GroupMetadata` records at the points
//!   Kafka writes them, and for consumer groups the records that changed in each operation. A
//!   shard loaded after a move or a restart replays them ([`LoadedGroups`]) and starts the
//!   members' timers in [`GroupShard::on_loaded`]. A write the log refuses (leadership moved
//!   on) fences the shard: it answers nothing more and the runtime answers NOT_COORDINATOR.
//! - Deletion: DeleteGroups ([`delete_groups`]), OffsetDelete ([`offset_delete`]) and the
//!   periodic offset expiry ([`offset_expiry`], `offsets.retention.minutes`) write offset and
//!   group tombstones.

mod delete_groups;
mod deleted_topics;
mod offset_delete;
mod offset_expiry;

use std::collections::BTreeMap;

use bytes::Bytes;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, DescribeGroupsResponse, GroupId,
    JoinGroupRequest, ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchRequest, OffsetFetchResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::classic::{ClassicGroupConfig, ClassicGroupCoordinator, ClassicResponse, RequestId};
use super::consumer::persist;
use super::consumer::validate::validate_heartbeat;
use super::consumer::{ConsumerGroupConfig, ConsumerGroupCoordinator, GroupError, TopicsImage};
use super::group_load::LoadedGroups;
use super::group_record::{record_type, GroupRecordKey, GroupRecordValue};
use super::list::filter_listed_groups;
use super::migration::{downgrade, upgrade};
use super::offset_record::OffsetRecord;
use super::offsets::{metadata_too_large, OffsetStore, RequestedTopics};
use super::offsets_retention::OffsetsRetentionConfig;
use crate::coordinator::{
    CoordinatorLog, ExpelledMember, GroupRequest, GroupRequestContext, GroupResponse, GroupShard,
    GroupShardFactory,
};
use crate::kafka_version::KafkaVersion;

/// Builds a [`GroupCoordinatorShard`] for every offsets partition a broker comes to lead.
#[derive(Debug, Clone, Default)]
pub struct GroupCoordinatorFactory {
    /// Settings of classic groups.
    pub classic: ClassicGroupConfig,
    /// Settings of consumer-protocol groups.
    pub consumer: ConsumerGroupConfig,
    /// Seeds the generated member ids (mixed with the partition and load time).
    pub seed: u64,
    /// `offsets.retention.minutes` and `offsets.retention.check.interval.ms`.
    pub offsets_retention: OffsetsRetentionConfig,
}

impl GroupShardFactory for GroupCoordinatorFactory {
    fn load(
        &self,
        partition: i32,
        log: CoordinatorLog,
        now_ms: u64,
        version: KafkaVersion,
    ) -> Box<dyn GroupShard> {
        let seed = self
            .seed
            .wrapping_add(u64::from(partition.unsigned_abs()).wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .wrapping_add(now_ms);
        Box::new(GroupCoordinatorShard::load(
            self, log, seed, now_ms, version,
        ))
    }
}

/// The group state of one offsets partition.
pub struct GroupCoordinatorShard {
    log: CoordinatorLog,
    classic: ClassicGroupCoordinator,
    consumer: ConsumerGroupCoordinator,
    offsets: OffsetStore,
    offset_metadata_max_bytes: usize,
    /// `group.{min,max}.session.timeout.ms`.
    session_timeout_range: (i32, i32),
    /// The topics last handed to the consumer coordinator.
    topics: Vec<(String, uuid::Uuid, i32)>,
    /// The topics (by name and id) the shard last checked for deletions.
    known_topics: deleted_topics::KnownTopics,
    /// Offset commits the classic coordinator has not answered yet (with when they arrived), to
    /// persist on its answer.
    pending_commits: BTreeMap<u64, (u64, OffsetCommitRequest)>,
    outbox: Vec<(u64, GroupResponse)>,
    /// The consumer-group records the log holds, per group (the last value of each key).
    persisted_consumer: BTreeMap<String, BTreeMap<GroupRecordKey, GroupRecordValue>>,
    /// Records to write before the operation's own (a replaced group's tombstone).
    leading_records: Vec<(Option<Bytes>, Option<Bytes>)>,
    /// Set once an append was refused: leadership moved on and every answer is NOT_COORDINATOR.
    fenced: bool,
    offsets_retention: OffsetsRetentionConfig,
    /// When the next offset expiry check runs; set when loading completes.
    next_offsets_cleanup_ms: Option<u64>,
    /// What an OffsetFetch without `require_stable` reads while this shard's high watermark
    /// still trails its predecessor's
    /// ([`crate::config::ClusterConfig::coordinator_high_watermark_lag_ms`]).
    lagging_reads: Option<LaggingReads>,
}

/// The committed offsets as of a new leader's trailing high watermark, until it catches up.
struct LaggingReads {
    offsets: OffsetStore,
    until_ms: u64,
}

/// The committed offsets an OffsetFetch reads: all of them for a `require_stable` fetch (a
/// write operation in Kafka's coordinator), those at the high watermark otherwise.
fn offsets_to_read<'a>(
    live: &'a OffsetStore,
    lagging: Option<&'a LaggingReads>,
    require_stable: bool,
    now_ms: u64,
) -> &'a OffsetStore {
    match lagging {
        Some(lagging) if !require_stable && now_ms < lagging.until_ms => &lagging.offsets,
        _ => live,
    }
}

/// The offsets a replay found, as a store.
fn offset_store(
    offsets: impl IntoIterator<Item = super::offset_record::OffsetRecord>,
) -> OffsetStore {
    let mut store = OffsetStore::new();
    for offset in offsets {
        store.restore(
            &offset.group_id,
            &offset.topic,
            offset.partition,
            offset.offset,
        );
    }
    store
}

impl GroupCoordinatorShard {
    fn load(
        factory: &GroupCoordinatorFactory,
        log: CoordinatorLog,
        seed: u64,
        now_ms: u64,
        version: KafkaVersion,
    ) -> Self {
        let mut shard = Self {
            classic: ClassicGroupCoordinator::new(factory.classic.clone(), seed),
            consumer: ConsumerGroupCoordinator::new(
                ConsumerGroupConfig {
                    classic_group_max_size: factory.classic.group_max_size,
                    kafka_version: version,
                    ..factory.consumer.clone()
                },
                TopicsImage::default(),
            ),
            offsets: OffsetStore::new(),
            offset_metadata_max_bytes: factory.classic.offset_metadata_max_bytes,
            session_timeout_range: (
                factory.classic.group_min_session_timeout_ms,
                factory.classic.group_max_session_timeout_ms,
            ),
            topics: Vec::new(),
            known_topics: deleted_topics::KnownTopics::new(),
            pending_commits: BTreeMap::new(),
            outbox: Vec::new(),
            persisted_consumer: BTreeMap::new(),
            leading_records: Vec::new(),
            fenced: false,
            offsets_retention: factory.offsets_retention,
            next_offsets_cleanup_ms: None,
            lagging_reads: None,
            log,
        };
        // A stream of its own, so consumer-group ids do not shift the classic ones.
        shard.consumer.seed_member_ids(seed ^ 0xC0A5_0E7E_D1D5_5EED);
        let records = shard.log.read_all();
        let lag_ms = shard.log.high_watermark_lag_ms();
        let below_high_watermark = now_ms.saturating_sub(lag_ms) as i64;
        if lag_ms > 0
            && records
                .iter()
                .any(|r| r.timestamp_ms > below_high_watermark)
        {
            let committed = records
                .iter()
                .take_while(|r| r.timestamp_ms <= below_high_watermark)
                .cloned()
                .collect();
            shard.lagging_reads = Some(LaggingReads {
                offsets: offset_store(LoadedGroups::replay(committed).offsets.into_values()),
                until_ms: now_ms + lag_ms,
            });
        }
        let loaded = LoadedGroups::replay(records);
        shard.offsets = offset_store(loaded.offsets.into_values());
        for (group_id, value) in &loaded.classic {
            match value {
                Some(value) => shard.classic.restore_group(group_id, value),
                None => shard.classic.load_empty_group(group_id),
            }
        }
        for (group_id, group) in loaded.consumer {
            shard
                .persisted_consumer
                .insert(group_id, persist::group_records(&group));
            shard.consumer.restore_group(group);
        }
        shard.refresh_topics();
        shard.known_topics = shard.current_topic_ids();
        shard.poll(now_ms);
        shard
    }

    /// Appends the group records the last operation produced: the classic coordinator's
    /// `GroupMetadata` records, and for consumer groups the records whose value changed since
    /// they were last written (tombstones for what disappeared). A refused append (leadership
    /// moved on) fences the shard: from then on it answers NOT_COORDINATOR, as Kafka's runtime
    /// does once the partition is no longer led here.
    fn flush_group_records(&mut self, now_ms: u64, consumer_touched: bool) {
        // Order as Kafka writes them: the deleted group's tombstones before the new group's
        // records, whichever type each is.
        let mut records = std::mem::take(&mut self.leading_records);
        if consumer_touched {
            records.extend(self.consumer_record_changes());
        }
        records.extend(
            self.classic
                .take_records()
                .into_iter()
                .map(|(group_id, value)| {
                    let key = GroupRecordKey::group(record_type::GROUP_METADATA, &group_id);
                    (Some(key.encode()), Some(value.encode()))
                }),
        );
        if records.is_empty() || self.fenced {
            return;
        }
        match self.log.append(now_ms as i64, &records) {
            Ok(_) => self.lagging_reads = None,
            Err(error) => {
                tracing::debug!(?error, "group records not persisted; shard fenced");
                self.fenced = true;
            }
        }
    }

    /// The consumer-group records to write so the log matches the groups in memory.
    fn consumer_record_changes(&mut self) -> Vec<(Option<Bytes>, Option<Bytes>)> {
        let mut changes = Vec::new();
        let mut current_ids = self.consumer.group_ids();
        current_ids.extend(self.persisted_consumer.keys().cloned());
        current_ids.sort();
        current_ids.dedup();
        for group_id in current_ids {
            let current = self
                .consumer
                .group(&group_id)
                .map(persist::group_records)
                .unwrap_or_default();
            let previous = self
                .persisted_consumer
                .remove(&group_id)
                .unwrap_or_default();
            for (key, value) in &current {
                if previous.get(key) != Some(value) {
                    changes.push((Some(key.encode()), Some(value.encode())));
                }
            }
            // Tombstones last and in reverse key order: members before the group epoch.
            for key in previous.keys().rev() {
                if !current.contains_key(key) {
                    changes.push((Some(key.encode()), None));
                }
            }
            if !current.is_empty() {
                self.persisted_consumer.insert(group_id, current);
            }
        }
        changes
    }

    fn is_consumer_group(&self, group_id: &str) -> bool {
        self.consumer.group(group_id).is_some()
    }

    fn is_non_empty_consumer_group(&self, group_id: &str) -> bool {
        self.consumer
            .group(group_id)
            .is_some_and(|g| !g.members.is_empty())
    }

    /// Hands the consumer coordinator the current topics when they changed (partitions added,
    /// topics created or deleted), so its assignments follow the cluster.
    fn refresh_topics(&mut self) {
        let topics = self.log.topics();
        if topics != self.topics {
            let image = topics
                .iter()
                .fold(TopicsImage::default(), |image, (name, id, partitions)| {
                    image.with_topic(name, *id, *partitions)
                });
            self.consumer.on_topics_changed(image);
            self.topics = topics;
        }
    }

    fn join_group(
        &mut self,
        now_ms: u64,
        context: &GroupRequestContext,
        request: &JoinGroupRequest,
    ) {
        // The service rejects a bad session timeout before the shard sees the join; the classic
        // coordinator answers that for us.
        let (min_session_ms, max_session_ms) = self.session_timeout_range;
        if (min_session_ms..=max_session_ms).contains(&request.session_timeout_ms) {
            if self.is_non_empty_consumer_group(&request.group_id.0) {
                // `classicGroupJoinToConsumerGroup`.
                let response = self.consumer.classic_group_join(
                    request,
                    context.api_version,
                    &context.client_id,
                    &context.client_host,
                    now_ms,
                );
                self.outbox
                    .push((context.request_id, GroupResponse::JoinGroup(response)));
                return;
            }
            // `maybeDeleteEmptyConsumerGroup`: an empty consumer group gives way to the classic
            // group the join creates (its tombstones are written with the join's records).
            self.consumer.remove_empty_group(&request.group_id.0);
        }
        self.classic.join_group(
            now_ms,
            RequestId(context.request_id),
            context.api_version,
            request,
            &context.client_id,
            &context.client_host,
        );
    }

    fn consumer_group_heartbeat(
        &mut self,
        now_ms: u64,
        context: &GroupRequestContext,
        request: &ConsumerGroupHeartbeatRequest,
    ) -> ConsumerGroupHeartbeatResponse {
        if self.classic.non_empty_group(&request.group_id.0).is_some() {
            return self
                .upgrade_and_heartbeat(now_ms, context, request)
                .unwrap_or_else(|e| {
                    ConsumerGroupHeartbeatResponse::default()
                        .with_error_code(e.error.code())
                        .with_error_message(Some(StrBytes::from_string(e.message)))
                });
        }
        self.refresh_topics();
        let response = self.consumer.consumer_group_heartbeat(
            request,
            context.api_version,
            &context.client_id,
            &context.client_host,
            now_ms,
        );
        // `maybeDeleteEmptyClassicGroup`: a consumer group created over an empty classic group
        // (a simple group, or one whose members all left) replaces it; its GroupMetadata
        // tombstone goes before the consumer group's records.
        let group_id = request.group_id.0.as_str();
        if response.error_code == 0
            && self.is_consumer_group(group_id)
            && self.classic.group_state(group_id).is_some()
        {
            self.classic.remove_group(group_id);
            let key = GroupRecordKey::group(record_type::GROUP_METADATA, group_id);
            self.leading_records.push((Some(key.encode()), None));
        }
        response
    }

    /// A ConsumerGroupHeartbeat for a non-empty classic group (`getOrMaybeCreateConsumerGroup`
    /// with `convertToConsumerGroup`): after the request's own checks, only a join (epoch 0)
    /// may upgrade the group, and only as `validateOnlineUpgrade` allows. The converted group
    /// takes the heartbeat; if the heartbeat is refused nothing is written and the classic group
    /// stays (its parked requests were already told to rejoin, as in Kafka).
    fn upgrade_and_heartbeat(
        &mut self,
        now_ms: u64,
        context: &GroupRequestContext,
        request: &ConsumerGroupHeartbeatRequest,
    ) -> Result<ConsumerGroupHeartbeatResponse, GroupError> {
        let group_id = request.group_id.0.as_str();
        validate_heartbeat(request, context.api_version, self.consumer.config())?;
        let Some(classic) = self.classic.non_empty_group(group_id) else {
            return Err(GroupError::new(
                ResponseError::GroupIdNotFound,
                format!("Group {group_id} is not a consumer group."),
            ));
        };
        if request.member_epoch != 0 {
            return Err(GroupError::new(
                ResponseError::GroupIdNotFound,
                format!("Group {group_id} is not a consumer group."),
            ));
        }
        upgrade::validate_online_upgrade(classic, self.consumer.config())?;
        self.refresh_topics();
        let Some(classic) = self.classic.detach_group_for_upgrade(now_ms, group_id) else {
            return Err(GroupError::new(
                ResponseError::GroupIdNotFound,
                format!("Group {group_id} is not a consumer group."),
            ));
        };
        let converted = match upgrade::consumer_group_from_classic(&classic, self.consumer.topics())
        {
            Ok(converted) => converted,
            Err(e) => {
                self.classic.reattach_group(classic);
                return Err(e);
            }
        };
        let mut upgraded = self.consumer.clone();
        upgraded.adopt_upgraded_group(converted, now_ms);
        let response = upgraded.consumer_group_heartbeat(
            request,
            context.api_version,
            &context.client_id,
            &context.client_host,
            now_ms,
        );
        if response.error_code != 0 {
            self.classic.reattach_group(classic);
            return Ok(response);
        }
        tracing::debug!(group_id, "upgraded classic group to a consumer group");
        self.consumer = upgraded;
        self.classic.forget_upgraded_group(&classic);
        let key = GroupRecordKey::group(record_type::GROUP_METADATA, group_id);
        self.leading_records.push((Some(key.encode()), None));
        Ok(response)
    }

    /// Hands every consumer group that fencing left with classic members only to the classic
    /// coordinator (`convertToClassicGroup`); the consumer group's tombstones are written
    /// before the classic group's record.
    fn apply_downgrades(&mut self, now_ms: u64) {
        for downgraded in self.consumer.take_downgraded_groups() {
            let group = downgrade::classic_group_from_consumer(&downgraded, self.consumer.topics());
            tracing::debug!(group_id = %group.group_id, "downgraded consumer group to a classic group");
            self.classic
                .adopt_downgraded_group(now_ms, group, downgraded.rebalance);
        }
    }

    fn offset_commit(
        &mut self,
        now_ms: u64,
        context: &GroupRequestContext,
        request: OffsetCommitRequest,
    ) {
        let group_id = request.group_id.0.as_str();
        if !self.is_consumer_group(group_id) {
            self.classic.offset_commit(
                now_ms,
                RequestId(context.request_id),
                context.api_version,
                &request,
                &mut self.offsets,
            );
            self.pending_commits
                .insert(context.request_id, (now_ms, request));
            return;
        }
        // The partitions Kafka's validator sees: those whose metadata is not refused first.
        let max_bytes = self.offset_metadata_max_bytes;
        let partitions = request.topics.iter().flat_map(|topic| {
            topic
                .partitions
                .iter()
                .filter(move |p| {
                    let metadata = p.committed_metadata.as_deref().unwrap_or_default();
                    !metadata_too_large(metadata, max_bytes)
                })
                .map(move |p| (topic.name.0.as_str(), p.partition_index))
        });
        let validated = self.consumer.validate_offset_commit(
            group_id,
            request.member_id.as_str(),
            request.generation_id_or_member_epoch,
            false,
            context.api_version,
            partitions,
            now_ms,
        );
        let response = match validated {
            Ok(()) => {
                let response =
                    self.offsets
                        .commit(now_ms, &request, self.offset_metadata_max_bytes);
                self.persist_commit(now_ms, &request, response)
            }
            Err(error) => OffsetStore::commit_error_response(&request, error.error),
        };
        self.outbox
            .push((context.request_id, GroupResponse::OffsetCommit(response)));
    }

    /// Appends the partitions `response` accepted to the log; if the log refuses (leadership
    /// moved on), the whole commit is answered NOT_COORDINATOR instead.
    fn persist_commit(
        &mut self,
        now_ms: u64,
        request: &OffsetCommitRequest,
        response: OffsetCommitResponse,
    ) -> OffsetCommitResponse {
        let group_id = request.group_id.0.as_str();
        let records: Vec<_> = response
            .topics
            .iter()
            .flat_map(|topic| {
                topic
                    .partitions
                    .iter()
                    .filter(|p| p.error_code == 0)
                    .map(move |p| (topic.name.0.as_str(), p.partition_index))
            })
            .filter_map(|(topic, partition)| {
                let offset = self.offsets.get(group_id, topic, partition)?.clone();
                let record = OffsetRecord {
                    group_id: group_id.to_owned(),
                    topic: topic.to_owned(),
                    partition,
                    offset,
                };
                let (key, value) = record.encode();
                Some((Some(key), Some(value)))
            })
            .collect();
        if records.is_empty() {
            return response;
        }
        match self.log.append(now_ms as i64, &records) {
            Ok(_) => {
                // Answered once the high watermark passed it, and with it the whole log.
                self.lagging_reads = None;
                response
            }
            Err(error) => {
                tracing::debug!(group = %group_id, ?error, "offset commit not persisted");
                self.fenced = true;
                OffsetStore::commit_error_response(request, ResponseError::NotCoordinator)
            }
        }
    }

    /// OffsetFetch. Classic-only requests go to the classic coordinator; a v8+ request naming a
    /// consumer group is answered here, group by group, with the member-epoch check
    /// (`ConsumerGroup.validateOffsetFetch`) for consumer groups.
    fn offset_fetch(
        &mut self,
        now_ms: u64,
        context: &GroupRequestContext,
        request: &OffsetFetchRequest,
    ) {
        let any_consumer_group = request
            .groups
            .iter()
            .any(|g| self.is_consumer_group(&g.group_id.0));
        if context.api_version < 8 && self.is_consumer_group(&request.group_id.0) {
            // A pre-v8 fetch carries no member: `ConsumerGroup.validateOffsetFetch` lets such
            // (admin) fetches see the consumer group's offsets.
            let requested: RequestedTopics = request.topics.as_ref().map(|topics| {
                topics
                    .iter()
                    .map(|t| (t.name.clone(), t.partition_indexes.clone()))
                    .collect()
            });
            let offsets = offsets_to_read(
                &self.offsets,
                self.lagging_reads.as_ref(),
                request.require_stable,
                now_ms,
            );
            let group = offsets.fetch_group(&request.group_id, &requested, true);
            let (topics, error_code) = super::offsets::to_single_group_shape(group);
            let response = OffsetFetchResponse::default()
                .with_topics(topics)
                .with_error_code(error_code);
            self.outbox
                .push((context.request_id, GroupResponse::OffsetFetch(response)));
            return;
        }
        if context.api_version < 8 || !any_consumer_group {
            self.classic.offset_fetch(
                now_ms,
                RequestId(context.request_id),
                context.api_version,
                request,
                offsets_to_read(
                    &self.offsets,
                    self.lagging_reads.as_ref(),
                    request.require_stable,
                    now_ms,
                ),
            );
            return;
        }
        let offsets = offsets_to_read(
            &self.offsets,
            self.lagging_reads.as_ref(),
            request.require_stable,
            now_ms,
        );
        let mut groups = Vec::with_capacity(request.groups.len());
        for group in &request.groups {
            let requested: RequestedTopics = group.topics.as_ref().map(|topics| {
                topics
                    .iter()
                    .map(|t| (t.name.clone(), t.partition_indexes.clone()))
                    .collect()
            });
            let id = group.group_id.0.as_str();
            let answer = if self.is_consumer_group(id) {
                match self.consumer.validate_offset_fetch(
                    id,
                    group.member_id.as_deref(),
                    group.member_epoch,
                    now_ms,
                ) {
                    Ok(()) => offsets.fetch_group(&group.group_id, &requested, true),
                    Err(error) => offsets
                        .fetch_group(&group.group_id, &None, false)
                        .with_error_code(error.error.code()),
                }
            } else {
                let visible = self
                    .classic
                    .group_state(id)
                    .is_some_and(|s| s != super::classic::ClassicGroupState::Dead);
                offsets.fetch_group(&group.group_id, &requested, visible)
            };
            groups.push(answer);
        }
        self.outbox.push((
            context.request_id,
            GroupResponse::OffsetFetch(OffsetFetchResponse::default().with_groups(groups)),
        ));
    }
}

/// Kafka's DescribeGroups answer for a consumer-protocol group (`DescribeGroupsResponse.groupError`
/// with GROUP_ID_NOT_FOUND, from `GroupMetadataManager.classicGroup`): a "Dead" group and an
/// error, the message from v6 on.
fn not_a_classic_group(group: &GroupId, version: i16) -> DescribeGroupsResponse {
    let mut described = DescribedGroup::default()
        .with_group_id(group.clone())
        .with_group_state(StrBytes::from_static_str("Dead"))
        .with_error_code(ResponseError::GroupIdNotFound.code());
    if version >= 6 {
        described = described.with_error_message(Some(StrBytes::from_string(format!(
            "Group {} is not a classic group.",
            group.0
        ))));
    }
    DescribeGroupsResponse::default().with_groups(vec![described])
}

impl GroupShard for GroupCoordinatorShard {
    fn handle(&mut self, now_ms: u64, context: GroupRequestContext, request: GroupRequest) {
        if self.fenced {
            // Leadership moved on: the runtime unloads this shard and answers NOT_COORDINATOR
            // to every request left waiting on it.
            return;
        }
        let consumer_touched = matches!(
            request,
            GroupRequest::ConsumerGroupHeartbeat(_)
                | GroupRequest::JoinGroup(_)
                | GroupRequest::LeaveGroup(_)
                | GroupRequest::DeleteGroups(_)
        ) || self.consumer_timer_due(now_ms)
            || self.cleanup_due(now_ms);
        self.remove_offsets_of_deleted_topics();
        self.handle_request(now_ms, context, request);
        // A leave may have left a consumer group with classic members only.
        self.apply_downgrades(now_ms);
        self.flush_group_records(now_ms, consumer_touched);
    }

    fn on_loaded(&mut self, now_ms: u64) {
        self.classic.on_loaded(now_ms);
        self.consumer.on_loaded(now_ms);
        // `scheduleGroupMetadataExpiration`.
        self.next_offsets_cleanup_ms =
            Some(now_ms.saturating_add(self.offsets_retention.offsets_retention_check_interval_ms));
        self.flush_group_records(now_ms, false);
    }

    fn take_responses(&mut self) -> Vec<(u64, GroupResponse)> {
        let responses = self.collect_responses();
        if self.fenced {
            return Vec::new();
        }
        responses
    }

    fn poll(&mut self, now_ms: u64) {
        if self.fenced {
            return;
        }
        let consumer_touched = self.consumer_timer_due(now_ms);
        self.remove_offsets_of_deleted_topics();
        self.classic.poll(now_ms);
        self.consumer.poll(now_ms);
        self.apply_downgrades(now_ms);
        let cleaned = self.maybe_cleanup_group_metadata(now_ms);
        self.flush_group_records(now_ms, consumer_touched || cleaned);
    }

    fn next_deadline_ms(&self) -> Option<u64> {
        if self.fenced {
            return None;
        }
        [
            self.classic.next_deadline_ms(),
            self.consumer.next_deadline_ms(),
            self.next_offsets_cleanup_ms,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn take_expelled(&mut self) -> Vec<ExpelledMember> {
        let mut expelled = self.classic.take_expelled();
        expelled.extend(self.consumer.take_expelled());
        expelled
    }
}

impl GroupCoordinatorShard {
    fn cleanup_due(&self, now_ms: u64) -> bool {
        self.next_offsets_cleanup_ms
            .is_some_and(|deadline| deadline <= now_ms)
    }

    fn consumer_timer_due(&self, now_ms: u64) -> bool {
        self.consumer
            .next_deadline_ms()
            .is_some_and(|deadline| deadline <= now_ms)
    }

    fn handle_request(&mut self, now_ms: u64, context: GroupRequestContext, request: GroupRequest) {
        let id = RequestId(context.request_id);
        let version = context.api_version;
        // Timers due by now fire first (a fenced member may turn its group back into a classic
        // group), so the request is routed to the group as it is now.
        self.classic.poll(now_ms);
        self.consumer.poll(now_ms);
        self.apply_downgrades(now_ms);
        self.maybe_cleanup_group_metadata(now_ms);
        match request {
            GroupRequest::JoinGroup(r) => self.join_group(now_ms, &context, &r),
            // `classicGroupSync`: an empty group of either type is UNKNOWN_MEMBER_ID.
            GroupRequest::SyncGroup(r) if self.is_consumer_group(&r.group_id.0) => {
                let response = self.consumer.classic_group_sync(&r, now_ms);
                self.outbox
                    .push((context.request_id, GroupResponse::SyncGroup(response)));
            }
            GroupRequest::SyncGroup(r) => self.classic.sync_group(now_ms, id, version, &r),
            GroupRequest::Heartbeat(r) if self.is_consumer_group(&r.group_id.0) => {
                let response = self.consumer.classic_group_heartbeat(&r, now_ms);
                self.outbox
                    .push((context.request_id, GroupResponse::Heartbeat(response)));
            }
            GroupRequest::Heartbeat(r) => self.classic.heartbeat(now_ms, id, version, &r),
            GroupRequest::LeaveGroup(r) if self.is_consumer_group(&r.group_id.0) => {
                let response = self.consumer.classic_group_leave(&r, version, now_ms);
                self.outbox
                    .push((context.request_id, GroupResponse::LeaveGroup(response)));
            }
            GroupRequest::LeaveGroup(r) => self.classic.leave_group(now_ms, id, version, &r),
            // The routing layer splits DescribeGroups per group, so one id is asked at a time.
            GroupRequest::DescribeGroups(r) => match r.groups.as_slice() {
                [group] if self.is_consumer_group(group.0.as_str()) => self.outbox.push((
                    context.request_id,
                    GroupResponse::DescribeGroups(not_a_classic_group(group, version)),
                )),
                _ => self.classic.describe_groups(now_ms, id, version, &r),
            },
            GroupRequest::ListGroups(r) => {
                let mut groups = self.classic.listed_groups(now_ms);
                groups.extend(self.consumer.listed_groups(now_ms));
                let response = ListGroupsResponse::default()
                    .with_error_code(0)
                    .with_groups(filter_listed_groups(&r, groups));
                self.outbox
                    .push((context.request_id, GroupResponse::ListGroups(response)));
            }
            GroupRequest::OffsetCommit(r) => self.offset_commit(now_ms, &context, r),
            GroupRequest::OffsetFetch(r) => self.offset_fetch(now_ms, &context, &r),
            GroupRequest::ConsumerGroupHeartbeat(r) => {
                let response = self.consumer_group_heartbeat(now_ms, &context, &r);
                self.outbox.push((
                    context.request_id,
                    GroupResponse::ConsumerGroupHeartbeat(response),
                ));
            }
            GroupRequest::DeleteGroups(r) => {
                let response = self.delete_groups(&r);
                self.outbox
                    .push((context.request_id, GroupResponse::DeleteGroups(response)));
            }
            GroupRequest::OffsetDelete(r) => {
                let response = self.offset_delete(&r);
                self.outbox
                    .push((context.request_id, GroupResponse::OffsetDelete(response)));
            }
            GroupRequest::ConsumerGroupDescribe(r) => {
                let response = self.consumer.consumer_group_describe(&r, now_ms);
                self.outbox.push((
                    context.request_id,
                    GroupResponse::ConsumerGroupDescribe(response),
                ));
            }
        }
    }

    fn collect_responses(&mut self) -> Vec<(u64, GroupResponse)> {
        let classic = self.classic.take_responses();
        let mut responses = std::mem::take(&mut self.outbox);
        for (RequestId(id), response) in classic {
            let response = match response {
                ClassicResponse::JoinGroup(r) => GroupResponse::JoinGroup(r),
                ClassicResponse::SyncGroup(r) => GroupResponse::SyncGroup(r),
                ClassicResponse::Heartbeat(r) => GroupResponse::Heartbeat(r),
                ClassicResponse::LeaveGroup(r) => GroupResponse::LeaveGroup(r),
                ClassicResponse::DescribeGroups(r) => GroupResponse::DescribeGroups(r),
                ClassicResponse::ListGroups(r) => GroupResponse::ListGroups(r),
                ClassicResponse::OffsetFetch(r) => GroupResponse::OffsetFetch(r),
                ClassicResponse::OffsetCommit(r) => {
                    let persisted = match self.pending_commits.remove(&id) {
                        Some((now_ms, request)) => self.persist_commit(now_ms, &request, r),
                        None => r,
                    };
                    GroupResponse::OffsetCommit(persisted)
                }
            };
            responses.push((id, response));
        }
        responses
    }
}
