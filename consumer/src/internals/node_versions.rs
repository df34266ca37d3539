//! The API versions of each connected broker, as request managers see them when they build
//! requests.
//!
//! Brokers of one cluster may differ: during a rolling upgrade some run the old version and
//! some the new, and a request pinned to a version only its builder's broker knows fails on
//! another. Java's `NetworkClient` therefore builds each request for its destination's own
//! `NodeApiVersions`, once that connection is ready; a manager here does the same by asking
//! [`NodeVersions::select`] about its target, and waits (the loop connects the node) while
//! the target has no negotiated connection.

use std::collections::BTreeMap;

use kafka_protocol::protocol::{Request, VersionRange};

use crate::network::ConnectedNode;
use crate::protocol::{Api, ApiVersionsTable, UnsupportedApi};

/// The version a request to one node can be built for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum VersionChoice {
    /// The highest version both we and the node support.
    Version(i16),
    /// The node has no negotiated connection yet: wait for it (the loop connects it).
    NotConnected,
    /// The node is connected and supports no version in our range (an older or newer broker
    /// than we can talk this API to).
    Unsupported(UnsupportedApi),
}

impl VersionChoice {
    /// The version, if one can be used now.
    pub fn version(&self) -> Option<i16> {
        match self {
            Self::Version(version) => Some(*version),
            _ => None,
        }
    }
}

/// One connected node's entry.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    versions: ApiVersionsTable,
    outstanding: usize,
    least_loaded_candidate: bool,
}

/// The negotiated versions of every connected node.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NodeVersions {
    nodes: BTreeMap<i32, Entry>,
    /// Unit tests only: a table every node has, connected or not.
    #[cfg(test)]
    every_node: Option<ApiVersionsTable>,
}

impl NodeVersions {
    /// The snapshot of the client's connected nodes.
    pub fn from_connected(connected: Vec<ConnectedNode>) -> Self {
        Self {
            nodes: connected
                .into_iter()
                .map(|node| {
                    let entry = Entry {
                        versions: node.versions,
                        outstanding: node.outstanding,
                        least_loaded_candidate: node.least_loaded_candidate,
                    };
                    (node.node_id, entry)
                })
                .collect(),
            #[cfg(test)]
            every_node: None,
        }
    }

    /// The versions `node_id`'s connection negotiated, while it is connected.
    pub fn of(&self, node_id: i32) -> Option<&ApiVersionsTable> {
        #[cfg(test)]
        if let Some(table) = &self.every_node {
            return Some(table);
        }
        self.nodes.get(&node_id).map(|entry| &entry.versions)
    }

    /// The version of `R` within `ours` to build a request to `node_id` for.
    pub fn select<R: Request>(&self, node_id: i32, ours: VersionRange) -> VersionChoice {
        match self.of(node_id) {
            None => VersionChoice::NotConnected,
            Some(table) => match table.select(Api(R::KEY), ours) {
                Ok(version) => VersionChoice::Version(version),
                Err(unsupported) => VersionChoice::Unsupported(unsupported),
            },
        }
    }

    /// For a cluster-wide request (FindCoordinator): among the connected least-loaded
    /// candidates that support `R` within `ours`, the one with the fewest unanswered requests
    /// (the lowest id on a tie), and the version to build for it. A broker without the API is
    /// passed over for one that has it. `None` while no such node is connected.
    pub fn least_loaded_supporting<R: Request>(&self, ours: VersionRange) -> Option<(i32, i16)> {
        #[cfg(test)]
        if let Some(table) = &self.every_node {
            return table.select(Api(R::KEY), ours).ok().map(|v| (-1, v));
        }
        self.nodes
            .iter()
            .filter(|(_, entry)| entry.least_loaded_candidate)
            .filter_map(|(&node_id, entry)| {
                let version = entry.versions.select(Api(R::KEY), ours).ok()?;
                Some((entry.outstanding, node_id, version))
            })
            .min_by_key(|&(outstanding, node_id, _)| (outstanding, node_id))
            .map(|(_, node_id, version)| (node_id, version))
    }

    /// Among the connected least-loaded candidates whose versions pass `usable`, the one with
    /// the fewest unanswered requests (the lowest id on a tie): for a request that needs
    /// several APIs on one broker (KIP-714's GetTelemetrySubscriptions and PushTelemetry).
    pub fn least_loaded_where(&self, usable: impl Fn(&ApiVersionsTable) -> bool) -> Option<i32> {
        #[cfg(test)]
        if let Some(table) = &self.every_node {
            return usable(table).then_some(-1);
        }
        self.nodes
            .iter()
            .filter(|(_, entry)| entry.least_loaded_candidate && usable(&entry.versions))
            .min_by_key(|(&node_id, entry)| (entry.outstanding, node_id))
            .map(|(&node_id, _)| node_id)
    }

    /// Whether any least-loaded candidate is connected (with or without the API).
    pub fn any_candidate_connected(&self) -> bool {
        #[cfg(test)]
        if self.every_node.is_some() {
            return true;
        }
        self.nodes
            .values()
            .any(|entry| entry.least_loaded_candidate)
    }
}

#[cfg(test)]
impl NodeVersions {
    /// Unit tests: every node, connected or not, negotiated `table`.
    pub fn every_node(table: ApiVersionsTable) -> Self {
        Self {
            nodes: BTreeMap::new(),
            every_node: Some(table),
        }
    }

    /// Unit tests: `node_id` is connected with `table` (a Metadata broker, no requests out).
    pub fn with_node(mut self, node_id: i32, table: ApiVersionsTable) -> Self {
        self.every_node = None;
        self.nodes.insert(
            node_id,
            Entry {
                versions: table,
                outstanding: 0,
                least_loaded_candidate: (0..i32::MAX / 2).contains(&node_id),
            },
        );
        self
    }
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::{ApiKey, ConsumerGroupHeartbeatRequest, FetchRequest};
    use kafka_protocol::protocol::Message;

    use super::*;
    use crate::internals::test_support::{all_versions, versions_capped, versions_without};

    #[test]
    fn each_node_answers_from_its_own_table() {
        let versions = NodeVersions::default()
            .with_node(1, versions_without(&[ApiKey::ConsumerGroupHeartbeat]))
            .with_node(2, all_versions());
        let ours = ConsumerGroupHeartbeatRequest::VERSIONS;
        assert!(matches!(
            versions.select::<ConsumerGroupHeartbeatRequest>(1, ours),
            VersionChoice::Unsupported(UnsupportedApi { broker: None, .. })
        ));
        assert!(matches!(
            versions.select::<ConsumerGroupHeartbeatRequest>(2, ours),
            VersionChoice::Version(_)
        ));
        assert_eq!(
            versions.select::<ConsumerGroupHeartbeatRequest>(3, ours),
            VersionChoice::NotConnected
        );
    }

    #[test]
    fn least_loaded_passes_over_a_broker_without_the_api() {
        let versions = NodeVersions::default()
            .with_node(1, versions_capped(1, 12))
            .with_node(2, all_versions());
        let ours = VersionRange { min: 13, max: 17 };
        assert_eq!(
            versions
                .least_loaded_supporting::<FetchRequest>(ours)
                .map(|(node, _)| node),
            Some(2)
        );
        assert!(versions.any_candidate_connected());
        assert_eq!(
            NodeVersions::default().least_loaded_supporting::<FetchRequest>(ours),
            None
        );
    }
}
