//! One member of a classic group (Kafka's `ClassicGroupMember`).

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;

use super::RequestId;

/// One protocol a member supports, with its opaque metadata, in the member's preference order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberProtocol {
    pub name: String,
    pub metadata: Bytes,
}

impl MemberProtocol {
    /// The protocols of a JoinGroup request, keeping their order (it is the member's vote).
    pub fn from_request(protocols: &[JoinGroupRequestProtocol]) -> Vec<Self> {
        protocols
            .iter()
            .map(|p| Self {
                name: p.name.to_string(),
                metadata: p.metadata.clone(),
            })
            .collect()
    }
}

/// A JoinGroup request held until the join barrier completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParkedJoin {
    pub request_id: RequestId,
    /// The request's API version: the response's shape depends on it.
    pub api_version: i16,
}

/// A member of a classic group.
#[derive(Debug, Clone)]
pub struct ClassicGroupMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<MemberProtocol>,
    /// The assignment from the leader's last SyncGroup (empty until then).
    pub assignment: Bytes,
    pub awaiting_join: Option<ParkedJoin>,
    pub awaiting_sync: Option<RequestId>,
    /// Set from its first join until its first join completes: a new member cannot heartbeat
    /// yet, so a parked join does not keep it alive (`hasSatisfiedHeartbeat`).
    pub is_new: bool,
}

impl ClassicGroupMember {
    pub fn is_awaiting_join(&self) -> bool {
        self.awaiting_join.is_some()
    }

    pub fn is_static(&self) -> bool {
        self.group_instance_id.is_some()
    }

    /// Members parked in a rebalance count as alive, unless they are new.
    pub fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.awaiting_join.is_some() || self.awaiting_sync.is_some())
    }

    /// Same protocols, same order, same metadata (`ClassicGroupMember.matches`).
    pub fn matches(&self, protocols: &[JoinGroupRequestProtocol]) -> bool {
        self.protocols.len() == protocols.len()
            && self
                .protocols
                .iter()
                .zip(protocols)
                .all(|(mine, theirs)| mine.name == *theirs.name && mine.metadata == theirs.metadata)
    }

    /// The metadata this member sent for `protocol_name`, empty if it does not support it.
    pub fn metadata(&self, protocol_name: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == protocol_name)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }

    /// The first of this member's protocols (in its preference order) that is a candidate.
    pub fn vote<'a>(&'a self, candidates: &[&str]) -> Option<&'a str> {
        self.protocols
            .iter()
            .map(|p| p.name.as_str())
            .find(|name| candidates.contains(name))
    }
}
