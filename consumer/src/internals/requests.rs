//! What request managers hand the network loop and get back: typed requests and responses,
//! tagged with the manager and a token so the loop can route each response to its owner.

use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, FetchRequest, FetchResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListOffsetsRequest,
    ListOffsetsResponse, MetadataRequest, MetadataResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse, PushTelemetryRequest, PushTelemetryResponse, SyncGroupRequest,
    SyncGroupResponse, TopicName,
};
use kafka_protocol::protocol::{Request, StrBytes};

use super::metrics::{FetchResponseSize, RequestKind, TimedResponse};
use crate::network::{NetworkError, Target};
use crate::protocol::Api;
use crate::records::count_declared_records;
use crate::rt::Instant;

/// A topic name as requests carry it.
pub(crate) fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

/// Groups entries into runs of equal keys, in order, one `(key, values)` per run. Request
/// builders put the partitions of one topic under one topic entry with it: their input is
/// sorted by topic, so each topic is one run.
pub(crate) fn group_runs<K: PartialEq, V>(
    entries: impl IntoIterator<Item = (K, V)>,
) -> Vec<(K, Vec<V>)> {
    let mut runs: Vec<(K, Vec<V>)> = Vec::new();
    for (key, value) in entries {
        match runs.last_mut() {
            Some((last, values)) if *last == key => values.push(value),
            _ => runs.push((key, vec![value])),
        }
    }
    runs
}

/// The request managers, in the fixed order the loop polls them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ManagerId {
    /// `CoordinatorRequestManager`.
    Coordinator,
    /// `CommitRequestManager`.
    Commit,
    /// `OffsetsRequestManager`.
    Offsets,
    /// `TopicMetadataRequestManager`.
    Metadata,
    /// `FetchRequestManager`.
    Fetch,
    /// The group membership manager (JoinGroup, SyncGroup, Heartbeat, LeaveGroup;
    /// ConsumerGroupHeartbeat).
    Membership,
    /// The KIP-714 client telemetry sender (GetTelemetrySubscriptions, PushTelemetry).
    Telemetry,
}

macro_rules! bodies {
    ($($name:ident($req:ty, $resp:ty)),* $(,)?) => {
        /// A request a manager wants sent.
        #[derive(Debug, Clone)]
        pub(crate) enum RequestBody { $($name($req)),* }

        /// The response to a [`RequestBody`].
        #[derive(Debug, Clone)]
        pub(crate) enum ResponseBody { $($name($resp)),* }

        impl RequestBody {
            /// The request's API, for traces.
            pub fn api(&self) -> Api {
                match self { $(Self::$name(_) => Api(<$req as Request>::KEY)),* }
            }
        }
    };
}

bodies! {
    FindCoordinator(FindCoordinatorRequest, FindCoordinatorResponse),
    OffsetCommit(OffsetCommitRequest, OffsetCommitResponse),
    OffsetFetch(OffsetFetchRequest, OffsetFetchResponse),
    ListOffsets(ListOffsetsRequest, ListOffsetsResponse),
    OffsetForLeaderEpoch(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse),
    Fetch(FetchRequest, FetchResponse),
    Metadata(MetadataRequest, MetadataResponse),
    JoinGroup(JoinGroupRequest, JoinGroupResponse),
    SyncGroup(SyncGroupRequest, SyncGroupResponse),
    Heartbeat(HeartbeatRequest, HeartbeatResponse),
    LeaveGroup(LeaveGroupRequest, LeaveGroupResponse),
    ConsumerGroupHeartbeat(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse),
    GetTelemetrySubscriptions(GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse),
    PushTelemetry(PushTelemetryRequest, PushTelemetryResponse),
}

impl RequestBody {
    /// Which request counter counts it ([`RequestKind`]).
    pub fn kind(&self) -> RequestKind {
        match self {
            Self::FindCoordinator(_)
            | Self::JoinGroup(_)
            | Self::SyncGroup(_)
            | Self::Heartbeat(_)
            | Self::LeaveGroup(_)
            | Self::ConsumerGroupHeartbeat(_) => RequestKind::Group,
            Self::Metadata(_)
            | Self::ListOffsets(_)
            | Self::OffsetForLeaderEpoch(_)
            | Self::OffsetFetch(_) => RequestKind::Lookup,
            Self::Fetch(_)
            | Self::OffsetCommit(_)
            | Self::GetTelemetrySubscriptions(_)
            | Self::PushTelemetry(_) => RequestKind::Other,
        }
    }
}

impl ResponseBody {
    /// The metric this response's latency feeds, if any (Java's fetch, commit, heartbeat,
    /// join and sync sensors).
    pub fn timed(&self) -> Option<TimedResponse> {
        match self {
            Self::Fetch(body) => {
                let mut size = FetchResponseSize {
                    throttle_time_ms: body.throttle_time_ms,
                    ..FetchResponseSize::default()
                };
                for partition in body.responses.iter().flat_map(|t| &t.partitions) {
                    if let Some(records) = &partition.records {
                        size.bytes += records.len();
                        size.records += count_declared_records(records);
                    }
                }
                Some(TimedResponse::Fetch(size))
            }
            Self::OffsetCommit(_) => Some(TimedResponse::Commit),
            Self::Heartbeat(_) | Self::ConsumerGroupHeartbeat(_) => Some(TimedResponse::Heartbeat),
            Self::JoinGroup(body) if body.error_code == 0 => Some(TimedResponse::Join),
            Self::SyncGroup(body) if body.error_code == 0 => Some(TimedResponse::Sync),
            _ => None,
        }
    }
}

/// A request and where to send it.
#[derive(Debug, Clone)]
pub(crate) struct UnsentRequest {
    /// The destination.
    pub target: Target,
    /// The version the manager built the request for (`None`: any, the fields are the same).
    pub version: Option<i16>,
    /// The request.
    pub body: RequestBody,
    /// The manager's token, returned with the response.
    pub token: u64,
    /// Overrides `request.timeout.ms` (JoinGroup waits for the whole rebalance).
    pub timeout_ms: Option<u64>,
}

/// A response (or the network failure in its place), on its way back to its manager.
#[derive(Debug)]
pub(crate) struct ResponseEnvelope {
    /// The manager that sent the request.
    pub manager: ManagerId,
    /// The manager's token.
    pub token: u64,
    /// The response and the version it was exchanged at.
    pub result: Result<(ResponseBody, i16), NetworkError>,
    /// When the request was handed to the network client (for latency metrics).
    pub sent_at: Instant,
    /// The node it went to, when the manager named one (per-node latency metrics).
    pub node: Option<i32>,
}

/// What a manager's `poll` returns: requests to send now, and when it wants to be polled again
/// even if nothing happens (`None`: only when an event or a response arrives).
#[derive(Debug, Default)]
pub(crate) struct PollResult {
    /// Requests to send.
    pub requests: Vec<UnsentRequest>,
    /// The next time the manager has something to do.
    pub next_poll_at: Option<Instant>,
}

impl PollResult {
    /// Lowers `next_poll_at` to `at` if earlier.
    pub fn wake_at(&mut self, at: Instant) {
        self.next_poll_at = earliest(self.next_poll_at, Some(at));
    }
}

/// The earlier of two optional instants.
pub(crate) fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_runs_keeps_order_and_merges_adjacent_keys_only() {
        let runs = group_runs([("a", 0), ("a", 1), ("b", 0), ("a", 2)]);
        assert_eq!(runs, [("a", vec![0, 1]), ("b", vec![0]), ("a", vec![2])]);
        assert!(group_runs(Vec::<(u8, u8)>::new()).is_empty());
    }
}
