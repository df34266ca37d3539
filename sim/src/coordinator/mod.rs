//! The seam the group coordinators plug into, shaped like Kafka's coordinator runtime.
//!
//! Kafka runs one single-threaded *shard* per `__consumer_offsets` partition on the broker that
//! leads it. Here, too: a broker hosts a [`GroupShard`] per offsets partition it leads, each
//! driven by its own task ([`runtime`]) that feeds it requests, fires its timers and delivers its
//! responses back to the connections that asked, possibly much later (a parked JoinGroup).
//!
//! The shard is a sans-IO state machine supplied by a [`GroupShardFactory`]; the concrete
//! classic / KIP-848 coordinators live in `crate::group` and are wired in by the integrator.
//! Committed offsets and group metadata must outlive a coordinator move: a shard persists them
//! through its [`CoordinatorLog`] — records in its `__consumer_offsets` partition, the durable
//! log that survives broker restarts — and rebuilds its state from that log when loaded, as
//! Kafka's `CoordinatorLoader` does.

mod durable;
pub mod placement;
pub(crate) mod runtime;

use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, DeleteGroupsRequest, DeleteGroupsResponse,
    DescribeGroupsRequest, DescribeGroupsResponse, HeartbeatRequest, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest,
    ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest,
    OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest,
    SyncGroupResponse,
};

use crate::kafka_version::KafkaVersion;

pub use durable::{CoordinatorLog, CoordinatorLogError, CoordinatorRecord};

/// Who sent a group request, as Kafka's `RequestContext` tells the coordinator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRequestContext {
    /// Opaque id the shard echoes with the response; unique per broker.
    pub request_id: u64,
    /// The request's API version (response fields depend on it).
    pub api_version: i16,
    /// `client.id` from the request header.
    pub client_id: String,
    /// The client's address, e.g. `/10.0.2.1` (Kafka's `clientHost`, used in member ids).
    pub client_host: String,
    /// The broker the request came to (`node.id`).
    pub broker_id: i32,
    /// The connection the request came on: ids increase in accept order across the cluster,
    /// so a request on a lower id than one the same client sent to the same broker before came
    /// on a connection it had already replaced.
    pub connection_id: u64,
}

/// A group request routed to the shard owning its group. Multi-group requests
/// (DescribeGroups, OffsetFetch v8+, ConsumerGroupDescribe, DeleteGroups) arrive already
/// narrowed to the groups this shard owns; ListGroups goes to every shard of the broker.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)] // one variant per API, named after it
pub enum GroupRequest {
    JoinGroup(JoinGroupRequest),
    SyncGroup(SyncGroupRequest),
    Heartbeat(HeartbeatRequest),
    LeaveGroup(LeaveGroupRequest),
    OffsetCommit(OffsetCommitRequest),
    OffsetFetch(OffsetFetchRequest),
    DescribeGroups(DescribeGroupsRequest),
    ListGroups(ListGroupsRequest),
    ConsumerGroupHeartbeat(ConsumerGroupHeartbeatRequest),
    ConsumerGroupDescribe(ConsumerGroupDescribeRequest),
    DeleteGroups(DeleteGroupsRequest),
    OffsetDelete(OffsetDeleteRequest),
}

/// A shard's answer; the variant must match the request's.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)] // one variant per API, named after it
pub enum GroupResponse {
    JoinGroup(JoinGroupResponse),
    SyncGroup(SyncGroupResponse),
    Heartbeat(HeartbeatResponse),
    LeaveGroup(LeaveGroupResponse),
    OffsetCommit(OffsetCommitResponse),
    OffsetFetch(OffsetFetchResponse),
    DescribeGroups(DescribeGroupsResponse),
    ListGroups(ListGroupsResponse),
    ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse),
    ConsumerGroupDescribe(ConsumerGroupDescribeResponse),
    DeleteGroups(DeleteGroupsResponse),
    OffsetDelete(OffsetDeleteResponse),
}

/// One `__consumer_offsets` partition's group state machine (classic and KIP-848 groups).
///
/// Sans-IO: time comes in as `now_ms` (virtual milliseconds on the cluster clock), requests come
/// in with an id, and responses — immediately or after any number of later calls — come out of
/// [`GroupShard::take_responses`] with that id. The runtime calls `poll` whenever
/// `next_deadline_ms` has passed.
pub trait GroupShard: Send + 'static {
    /// Handles one request. Its response may be queued now or later (e.g. a JoinGroup parked
    /// until the rebalance completes).
    fn handle(&mut self, now_ms: u64, context: GroupRequestContext, request: GroupRequest);
    /// Responses ready to send, as (request id, response).
    fn take_responses(&mut self) -> Vec<(u64, GroupResponse)>;
    /// Fires every timer due at `now_ms`.
    fn poll(&mut self, now_ms: u64);
    /// When `poll` next needs to run, if ever.
    fn next_deadline_ms(&self) -> Option<u64>;
    /// Loading finished at `now_ms` (Kafka's `onLoaded`): start the timers of the groups the
    /// shard replayed. Called once, before the first request.
    fn on_loaded(&mut self, _now_ms: u64) {}
    /// The members the shard removed on its own since the last call (a timer fired during
    /// `handle` or `poll`), in order. The member hears of it only when it next asks — a
    /// member whose requests no longer reach the coordinator never does.
    fn take_expelled(&mut self) -> Vec<ExpelledMember> {
        Vec::new()
    }
}

/// A member a coordinator removed from its group because a timer fired, not because it asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpelledMember {
    /// The group.
    pub group_id: String,
    /// The member's id in it.
    pub member_id: String,
    /// Which deadline it missed, as Kafka's coordinator logs it.
    pub reason: &'static str,
}

/// Builds a shard when a broker becomes leader of an offsets partition.
pub trait GroupShardFactory: Send + Sync + 'static {
    /// Loads the shard for `partition` from its durable `log` (replay what earlier coordinators
    /// wrote). The broker answers `COORDINATOR_LOAD_IN_PROGRESS` for the configured loading
    /// time after this returns. `version` is the Kafka release of the broker loading it: the
    /// coordinator behaves as that release's does.
    fn load(
        &self,
        partition: i32,
        log: CoordinatorLog,
        now_ms: u64,
        version: KafkaVersion,
    ) -> Box<dyn GroupShard>;
}
