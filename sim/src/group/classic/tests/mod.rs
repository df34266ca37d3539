//! Unit tests of the classic coordinator with a fake clock. `Harness` drives one coordinator,
//! stashes its responses by request id and offers request builders with test defaults.

mod join;
mod leave;
mod offsets;
mod states;
mod static_members;
mod sync_heartbeat;

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, SyncGroupRequest,
    SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::{ClassicGroupConfig, ClassicGroupCoordinator, ClassicResponse, RequestId};

pub const GROUP: &str = "g";
pub const SESSION_MS: i32 = 10_000;
pub const REBALANCE_MS: i32 = 60_000;
pub const DELAY_MS: u64 = 3_000;

pub fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

pub fn code(e: ResponseError) -> i16 {
    e.code()
}

pub struct Harness {
    pub coordinator: ClassicGroupCoordinator,
    pub now_ms: u64,
    next_id: u64,
    stash: BTreeMap<RequestId, ClassicResponse>,
    /// Every response in arrival order, for determinism checks.
    pub log: Vec<(u64, RequestId, ClassicResponse)>,
}

impl Harness {
    pub fn new() -> Self {
        Self::with_config(ClassicGroupConfig::default())
    }

    pub fn with_config(config: ClassicGroupConfig) -> Self {
        Self {
            coordinator: ClassicGroupCoordinator::new(config, 7),
            now_ms: 0,
            next_id: 0,
            stash: BTreeMap::new(),
            log: Vec::new(),
        }
    }

    pub fn next_request_id(&mut self) -> RequestId {
        self.next_id += 1;
        RequestId(self.next_id)
    }

    fn drain(&mut self) {
        for (id, response) in self.coordinator.take_responses() {
            self.log.push((self.now_ms, id, response.clone()));
            let previous = self.stash.insert(id, response);
            assert!(previous.is_none(), "request {id:?} answered twice");
        }
    }

    /// Moves the clock forward and fires due timers.
    pub fn advance(&mut self, ms: u64) {
        self.now_ms += ms;
        self.coordinator.poll(self.now_ms);
        self.drain();
    }

    /// Whether `id` has been answered (without consuming the answer).
    pub fn answered(&mut self, id: RequestId) -> bool {
        self.drain();
        self.stash.contains_key(&id)
    }

    pub fn take(&mut self, id: RequestId) -> ClassicResponse {
        self.drain();
        match self.stash.remove(&id) {
            Some(response) => response,
            None => panic!("request {id:?} not answered"),
        }
    }

    pub fn join_response(&mut self, id: RequestId) -> JoinGroupResponse {
        match self.take(id) {
            ClassicResponse::JoinGroup(r) => r,
            other => panic!("expected JoinGroup, got {other:?}"),
        }
    }

    pub fn sync_response(&mut self, id: RequestId) -> SyncGroupResponse {
        match self.take(id) {
            ClassicResponse::SyncGroup(r) => r,
            other => panic!("expected SyncGroup, got {other:?}"),
        }
    }

    pub fn send_join(&mut self, version: i16, request: &JoinGroupRequest) -> RequestId {
        let id = self.next_request_id();
        self.coordinator
            .join_group(self.now_ms, id, version, request, "client", "/127.0.0.1");
        self.drain();
        id
    }

    /// A v5 dynamic member: MEMBER_ID_REQUIRED, then the parked rejoin. Returns (id, rejoin).
    pub fn join_dynamic(&mut self, protocols: &[(&str, &[u8])]) -> (String, RequestId) {
        let first = self.send_join(5, &join_request("", None, protocols));
        let response = self.join_response(first);
        assert_eq!(response.error_code, code(ResponseError::MemberIdRequired));
        let member_id = response.member_id.to_string();
        let rejoin = self.send_join(5, &join_request(&member_id, None, protocols));
        (member_id, rejoin)
    }

    pub fn send_sync(
        &mut self,
        member_id: &str,
        generation_id: i32,
        assignments: &[(&str, &[u8])],
    ) -> RequestId {
        let request = SyncGroupRequest::default()
            .with_group_id(GroupId(sb(GROUP)))
            .with_generation_id(generation_id)
            .with_member_id(sb(member_id))
            .with_assignments(
                assignments
                    .iter()
                    .map(|(m, a)| {
                        SyncGroupRequestAssignment::default()
                            .with_member_id(sb(m))
                            .with_assignment(Bytes::copy_from_slice(a))
                    })
                    .collect(),
            );
        let id = self.next_request_id();
        self.coordinator.sync_group(self.now_ms, id, 5, &request);
        self.drain();
        id
    }

    pub fn heartbeat_with(&mut self, request: &HeartbeatRequest) -> i16 {
        let id = self.next_request_id();
        self.coordinator.heartbeat(self.now_ms, id, 4, request);
        match self.take(id) {
            ClassicResponse::Heartbeat(r) => r.error_code,
            other => panic!("expected Heartbeat, got {other:?}"),
        }
    }

    pub fn heartbeat(&mut self, member_id: &str, generation_id: i32) -> i16 {
        self.heartbeat_with(&heartbeat_request(member_id, generation_id, None))
    }

    /// Two dynamic members in a Stable group at generation 1: (leader, follower).
    pub fn stable_pair(&mut self) -> (String, String) {
        let (a, join_a) = self.join_dynamic(&[("range", b"a")]);
        let (b, join_b) = self.join_dynamic(&[("range", b"b")]);
        self.advance(2 * DELAY_MS);
        let (ra, rb) = (self.join_response(join_a), self.join_response(join_b));
        assert_eq!((ra.generation_id, rb.generation_id), (1, 1));
        let sync_b = self.send_sync(&b, 1, &[]);
        let sync_a = self.send_sync(&a, 1, &[(&a, b"A"), (&b, b"B")]);
        assert_eq!(self.sync_response(sync_a).error_code, 0);
        assert_eq!(self.sync_response(sync_b).error_code, 0);
        assert_eq!(self.state(), Some(super::ClassicGroupState::Stable));
        (a, b)
    }

    pub fn state(&self) -> Option<super::ClassicGroupState> {
        self.coordinator.group_state(GROUP)
    }

    pub fn generation(&self) -> Option<i32> {
        self.coordinator.group_generation_id(GROUP)
    }
}

pub fn join_request(
    member_id: &str,
    instance_id: Option<&str>,
    protocols: &[(&str, &[u8])],
) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_session_timeout_ms(SESSION_MS)
        .with_rebalance_timeout_ms(REBALANCE_MS)
        .with_member_id(sb(member_id))
        .with_group_instance_id(instance_id.map(sb))
        .with_protocol_type(sb("consumer"))
        .with_protocols(
            protocols
                .iter()
                .map(|(name, metadata)| {
                    JoinGroupRequestProtocol::default()
                        .with_name(sb(name))
                        .with_metadata(Bytes::copy_from_slice(metadata))
                })
                .collect(),
        )
}

pub fn heartbeat_request(
    member_id: &str,
    generation_id: i32,
    instance_id: Option<&str>,
) -> HeartbeatRequest {
    HeartbeatRequest::default()
        .with_group_id(GroupId(sb(GROUP)))
        .with_generation_id(generation_id)
        .with_member_id(sb(member_id))
        .with_group_instance_id(instance_id.map(sb))
}
