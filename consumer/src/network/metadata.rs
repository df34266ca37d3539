//! The client's view of the cluster, kept from Metadata responses: brokers and their racks, the
//! controller, the cluster id, and per topic its id and partitions (leader, leader epoch,
//! replicas, ISR, offline replicas).
//!
//! Sans-IO. Responses can arrive out of order or from a broker with stale metadata, so an update
//! never moves a partition's leader epoch backwards (Kafka's `Metadata.updatePartitionLeadership`
//! rule): a partition whose cached epoch is newer keeps its cached state.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use crate::protocol::ResponseError;

/// A broker as Metadata describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broker {
    /// `node.id`.
    pub node_id: i32,
    /// Advertised host.
    pub host: String,
    /// Advertised port.
    pub port: u16,
    /// `broker.rack`, if set.
    pub rack: Option<String>,
}

/// One partition's replica state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadata {
    /// The partition index.
    pub partition: i32,
    /// The leader's node id, `None` while there is no leader.
    pub leader_id: Option<i32>,
    /// The leader epoch, -1 when unknown.
    pub leader_epoch: i32,
    /// All replicas.
    pub replica_nodes: Vec<i32>,
    /// In-sync replicas.
    pub isr_nodes: Vec<i32>,
    /// Replicas that are offline.
    pub offline_replicas: Vec<i32>,
    /// The partition-level error, if any (e.g. LEADER_NOT_AVAILABLE).
    pub error: Option<ResponseError>,
}

/// One topic.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicMetadata {
    /// The topic name.
    pub name: String,
    /// The topic id (nil from brokers too old to have ids).
    pub topic_id: Uuid,
    /// Whether it is an internal topic (`__consumer_offsets`).
    pub is_internal: bool,
    /// The topic-level error of the latest response, if any.
    pub error: Option<ResponseError>,
    /// Partitions by index.
    pub partitions: BTreeMap<i32, PartitionMetadata>,
}

/// Whether a response covers all topics (so topics it lacks are gone) or only some.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataScope {
    /// The request asked for all topics.
    AllTopics,
    /// The request listed topics: others are left untouched.
    ListedTopics,
}

/// The cluster as last described by Metadata responses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    brokers: BTreeMap<i32, Broker>,
    controller_id: Option<i32>,
    cluster_id: Option<String>,
    topics: BTreeMap<String, TopicMetadata>,
    names_by_id: BTreeMap<Uuid, String>,
}

impl Metadata {
    /// Applies a response. Brokers, controller and cluster id are replaced (a response lists all
    /// live brokers); topics are merged without regressing leader epochs.
    pub fn update(&mut self, response: &MetadataResponse, scope: MetadataScope) {
        self.brokers = response
            .brokers
            .iter()
            .filter_map(|b| {
                let port = u16::try_from(b.port).ok()?;
                let broker = Broker {
                    node_id: b.node_id.0,
                    host: b.host.to_string(),
                    port,
                    rack: b.rack.as_ref().map(|r| r.to_string()),
                };
                Some((broker.node_id, broker))
            })
            .collect();
        self.controller_id = (response.controller_id.0 >= 0).then_some(response.controller_id.0);
        self.cluster_id = response.cluster_id.as_ref().map(|c| c.to_string());

        // Names this response lists, looked up once per cached topic below: a set, so a
        // response for all of a cluster's topics merges in O(n log n), not O(n²).
        let mut seen = BTreeSet::new();
        for topic in &response.topics {
            let Some(name) = topic.name.as_ref().map(|n| n.0.to_string()) else {
                continue; // only possible in a by-id request for an unknown id
            };
            let error = ResponseError::try_from_code(topic.error_code);
            // A topic the broker does not have, will never have (an illegal name) or will not
            // show us (no Describe permission) has no state worth keeping: caching it would
            // offer it to pattern matching and `list_topics` as if it existed. (Java keeps
            // only its name in `invalidTopics`/`unauthorizedTopics`; the metadata manager
            // raises those from the response itself.)
            if matches!(
                error,
                Some(
                    ResponseError::UnknownTopicOrPartition
                        | ResponseError::UnknownTopicId
                        | ResponseError::InvalidTopicException
                        | ResponseError::TopicAuthorizationFailed
                )
            ) {
                self.remove_topic(&name);
                continue;
            }
            seen.insert(name.clone());
            let replaced = self
                .topics
                .get(&name)
                .is_some_and(|cached| cached.topic_id != topic.topic_id);
            if replaced {
                // Same name, new id: the topic was deleted and re-created.
                self.remove_topic(&name);
            }
            let entry = self
                .topics
                .entry(name.clone())
                .or_insert_with(|| TopicMetadata {
                    name: name.clone(),
                    topic_id: topic.topic_id,
                    is_internal: topic.is_internal,
                    error: None,
                    partitions: BTreeMap::new(),
                });
            entry.error = error;
            entry.is_internal = topic.is_internal;
            for p in &topic.partitions {
                let incoming = PartitionMetadata {
                    partition: p.partition_index,
                    leader_id: (p.leader_id.0 >= 0).then_some(p.leader_id.0),
                    leader_epoch: p.leader_epoch,
                    replica_nodes: p.replica_nodes.iter().map(|n| n.0).collect(),
                    isr_nodes: p.isr_nodes.iter().map(|n| n.0).collect(),
                    offline_replicas: p.offline_replicas.iter().map(|n| n.0).collect(),
                    error: ResponseError::try_from_code(p.error_code),
                };
                let stale = entry
                    .partitions
                    .get(&p.partition_index)
                    .is_some_and(|cached| incoming.leader_epoch < cached.leader_epoch);
                if !stale {
                    entry.partitions.insert(p.partition_index, incoming);
                }
            }
            if !topic.topic_id.is_nil() {
                self.names_by_id.insert(topic.topic_id, name);
            }
        }
        if scope == MetadataScope::AllTopics {
            let names_by_id = &mut self.names_by_id;
            self.topics.retain(|name, topic| {
                let listed = seen.contains(name);
                if !listed {
                    names_by_id.remove(&topic.topic_id);
                }
                listed
            });
        }
    }

    fn remove_topic(&mut self, name: &str) {
        if let Some(topic) = self.topics.remove(name) {
            self.names_by_id.remove(&topic.topic_id);
        }
    }

    /// Forgets the brokers, the controller and the cluster id (a rebootstrap): requests go to
    /// the bootstrap servers until the next response names brokers again.
    pub fn forget_brokers(&mut self) {
        self.brokers.clear();
        self.controller_id = None;
        self.cluster_id = None;
    }

    /// Every known topic.
    pub fn topics(&self) -> impl Iterator<Item = &TopicMetadata> {
        self.topics.values()
    }

    /// A broker by node id.
    pub fn broker(&self, node_id: i32) -> Option<&Broker> {
        self.brokers.get(&node_id)
    }

    /// All known brokers, by node id.
    pub fn brokers(&self) -> impl Iterator<Item = &Broker> {
        self.brokers.values()
    }

    /// The controller's node id, if known.
    #[cfg_attr(not(feature = "__internal"), allow(dead_code))] // The testbed's API.
    pub fn controller_id(&self) -> Option<i32> {
        self.controller_id
    }

    /// The cluster id, if known.
    #[cfg_attr(not(feature = "__internal"), allow(dead_code))] // The testbed's API.
    pub fn cluster_id(&self) -> Option<&str> {
        self.cluster_id.as_deref()
    }

    /// A topic by name.
    pub fn topic(&self, name: &str) -> Option<&TopicMetadata> {
        self.topics.get(name)
    }

    /// A topic by id.
    #[cfg_attr(not(feature = "__internal"), allow(dead_code))] // The testbed's API.
    pub fn topic_by_id(&self, topic_id: Uuid) -> Option<&TopicMetadata> {
        self.topics.get(self.names_by_id.get(&topic_id)?)
    }

    /// The name of the topic with this id.
    pub fn topic_name(&self, topic_id: Uuid) -> Option<&str> {
        self.names_by_id.get(&topic_id).map(String::as_str)
    }

    /// The id of the topic with this name.
    pub fn topic_id(&self, name: &str) -> Option<Uuid> {
        self.topics.get(name).map(|t| t.topic_id)
    }

    /// One partition's state.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionMetadata> {
        self.topics.get(topic)?.partitions.get(&partition)
    }

    /// Applies KIP-951 leader hints (a Fetch or Produce response's `current_leader` and
    /// `node_endpoints`) without waiting for a Metadata response, as Kafka's
    /// `Metadata.updatePartitionLeadership` does: a hint is taken only for a partition already
    /// known, with a leader epoch newer than the cached one, and a leader whose address is known
    /// (from `endpoints` or the cached brokers). The leader and epoch change; replicas and ISR
    /// stay until the next Metadata response. Brokers in `endpoints` join the known brokers.
    /// Returns the partitions whose leader was updated.
    pub fn update_partition_leadership(
        &mut self,
        hints: &[LeaderHint],
        endpoints: &[Broker],
    ) -> Vec<(String, i32)> {
        let mut updated = Vec::new();
        for hint in hints {
            let known_node = self.brokers.contains_key(&hint.leader_id)
                || endpoints.iter().any(|b| b.node_id == hint.leader_id);
            let Some(partition) = self
                .topics
                .get_mut(&hint.topic)
                .and_then(|t| t.partitions.get_mut(&hint.partition))
            else {
                continue;
            };
            if hint.leader_id < 0 || hint.leader_epoch <= partition.leader_epoch || !known_node {
                tracing::debug!(
                    ?hint,
                    cached_epoch = partition.leader_epoch,
                    known_node,
                    "leader hint not applied"
                );
                continue;
            }
            tracing::debug!(?hint, from = ?partition.leader_id, "leader hint applied");
            partition.leader_id = Some(hint.leader_id);
            partition.leader_epoch = hint.leader_epoch;
            partition.error = None;
            updated.push((hint.topic.clone(), hint.partition));
        }
        if !updated.is_empty() {
            for broker in endpoints {
                self.brokers.insert(broker.node_id, broker.clone());
            }
        }
        updated
    }
}

/// A partition's new leader as a response named it (KIP-951).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderHint {
    /// The topic.
    pub topic: String,
    /// The partition index.
    pub partition: i32,
    /// The leader's node id.
    pub leader_id: i32,
    /// Its leader epoch.
    pub leader_epoch: i32,
}

/// A Metadata request for every topic in the cluster.
pub fn metadata_request_all_topics() -> MetadataRequest {
    MetadataRequest::default()
        .with_topics(None)
        .with_allow_auto_topic_creation(false)
}

/// A Metadata request for the named topics (an empty list asks for brokers only).
pub fn metadata_request_for_topics<'a>(
    names: impl IntoIterator<Item = &'a str>,
    allow_auto_topic_creation: bool,
) -> MetadataRequest {
    let topics = names
        .into_iter()
        .map(|name| {
            MetadataRequestTopic::default()
                .with_name(Some(TopicName(StrBytes::from_string(name.to_owned()))))
        })
        .collect();
    MetadataRequest::default()
        .with_topics(Some(topics))
        .with_allow_auto_topic_creation(allow_auto_topic_creation)
}

/// A Metadata request for topics by id (Metadata v10+).
#[cfg_attr(not(feature = "__internal"), allow(dead_code))] // The testbed's API.
pub fn metadata_request_for_topic_ids(ids: impl IntoIterator<Item = Uuid>) -> MetadataRequest {
    let topics = ids
        .into_iter()
        .map(|id| MetadataRequestTopic::default().with_topic_id(id))
        .collect();
    MetadataRequest::default()
        .with_topics(Some(topics))
        .with_allow_auto_topic_creation(false)
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::metadata_response::{
        MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
    };
    use kafka_protocol::messages::BrokerId;

    use super::*;

    fn partition(index: i32, leader: i32, epoch: i32) -> MetadataResponsePartition {
        MetadataResponsePartition::default()
            .with_partition_index(index)
            .with_leader_id(BrokerId(leader))
            .with_leader_epoch(epoch)
            .with_replica_nodes(vec![BrokerId(1), BrokerId(2)])
            .with_isr_nodes(vec![BrokerId(1)])
    }

    fn topic(
        name: &str,
        id: u128,
        partitions: Vec<MetadataResponsePartition>,
    ) -> MetadataResponseTopic {
        MetadataResponseTopic::default()
            .with_name(Some(TopicName(StrBytes::from_string(name.to_owned()))))
            .with_topic_id(Uuid::from_u128(id))
            .with_partitions(partitions)
    }

    fn response(topics: Vec<MetadataResponseTopic>) -> MetadataResponse {
        MetadataResponse::default()
            .with_brokers(vec![
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(1))
                    .with_host(StrBytes::from_static_str("b1"))
                    .with_port(9092)
                    .with_rack(Some(StrBytes::from_static_str("rack-a"))),
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(2))
                    .with_host(StrBytes::from_static_str("b2"))
                    .with_port(9093),
            ])
            .with_controller_id(BrokerId(2))
            .with_cluster_id(Some(StrBytes::from_static_str("cluster-x")))
            .with_topics(topics)
    }

    /// KIP-951 (issue #18): a Fetch response's leader hint moves a partition's leader at once,
    /// as Kafka's `Metadata.updatePartitionLeadership`: only a newer epoch, only a known
    /// partition, only a leader whose address is known; new endpoints become brokers.
    #[test]
    fn leader_hints_move_known_partitions_to_newer_epochs_only() {
        let mut md = Metadata::default();
        md.update(
            &response(vec![topic(
                "orders",
                7,
                vec![partition(0, 1, 3), partition(1, 1, 3)],
            )]),
            MetadataScope::AllTopics,
        );
        let hint = |partition, leader_id, leader_epoch| LeaderHint {
            topic: "orders".to_owned(),
            partition,
            leader_id,
            leader_epoch,
        };
        let b3 = Broker {
            node_id: 3,
            host: "b3".to_owned(),
            port: 9094,
            rack: Some("rack-c".to_owned()),
        };
        let updated = md.update_partition_leadership(
            &[
                hint(0, 3, 4), // newer epoch, endpoint given: applied
                hint(1, 2, 3), // same epoch: stale
                hint(2, 2, 9), // unknown partition
                hint(1, 5, 9), // unknown node, no endpoint
            ],
            std::slice::from_ref(&b3),
        );
        assert_eq!(updated, vec![("orders".to_owned(), 0)]);
        let p0 = md.partition("orders", 0).unwrap();
        assert_eq!((p0.leader_id, p0.leader_epoch), (Some(3), 4));
        assert_eq!(p0.replica_nodes, [1, 2], "replicas wait for Metadata");
        assert_eq!(md.broker(3), Some(&b3));
        let p1 = md.partition("orders", 1).unwrap();
        assert_eq!((p1.leader_id, p1.leader_epoch), (Some(1), 3));
        assert!(md.partition("orders", 2).is_none());
        assert!(
            md.update_partition_leadership(&[hint(1, 2, 4)], &[])
                .contains(&("orders".to_owned(), 1)),
            "a cached broker needs no endpoint"
        );
    }

    #[test]
    fn brokers_controller_cluster_and_topic_ids_both_ways() {
        let mut md = Metadata::default();
        md.update(
            &response(vec![topic("orders", 7, vec![partition(0, 1, 3)])]),
            MetadataScope::AllTopics,
        );
        assert_eq!(md.broker(1).unwrap().rack.as_deref(), Some("rack-a"));
        assert_eq!(md.broker(2).unwrap().port, 9093);
        assert_eq!(md.brokers().count(), 2);
        assert_eq!(md.controller_id(), Some(2));
        assert_eq!(md.cluster_id(), Some("cluster-x"));
        assert_eq!(md.topic_id("orders"), Some(Uuid::from_u128(7)));
        assert_eq!(md.topic_name(Uuid::from_u128(7)), Some("orders"));
        assert_eq!(md.topic_by_id(Uuid::from_u128(7)).unwrap().name, "orders");
        let p = md.partition("orders", 0).unwrap();
        assert_eq!((p.leader_id, p.leader_epoch), (Some(1), 3));
        assert_eq!(p.replica_nodes, [1, 2]);
        assert_eq!(p.isr_nodes, [1]);
    }

    #[test]
    fn stale_leader_epochs_do_not_regress() {
        let mut md = Metadata::default();
        md.update(
            &response(vec![topic(
                "t",
                1,
                vec![partition(0, 1, 5), partition(1, 1, 5)],
            )]),
            MetadataScope::AllTopics,
        );
        // A lagging broker reports epoch 4 for p0 (stale) and 6 for p1 (newer).
        md.update(
            &response(vec![topic(
                "t",
                1,
                vec![partition(0, 2, 4), partition(1, 2, 6)],
            )]),
            MetadataScope::AllTopics,
        );
        let p0 = md.partition("t", 0).unwrap();
        assert_eq!((p0.leader_id, p0.leader_epoch), (Some(1), 5));
        let p1 = md.partition("t", 1).unwrap();
        assert_eq!((p1.leader_id, p1.leader_epoch), (Some(2), 6));
    }

    #[test]
    fn recreated_topic_replaces_state_and_id_mapping() {
        let mut md = Metadata::default();
        md.update(
            &response(vec![topic("t", 1, vec![partition(0, 1, 9)])]),
            MetadataScope::AllTopics,
        );
        md.update(
            &response(vec![topic("t", 2, vec![partition(0, 2, 0)])]),
            MetadataScope::AllTopics,
        );
        assert_eq!(md.topic_id("t"), Some(Uuid::from_u128(2)));
        assert_eq!(md.topic_name(Uuid::from_u128(1)), None);
        assert_eq!(md.partition("t", 0).unwrap().leader_epoch, 0);
    }

    #[test]
    fn scope_decides_whether_missing_topics_are_dropped() {
        let mut md = Metadata::default();
        md.update(
            &response(vec![topic("a", 1, vec![]), topic("b", 2, vec![])]),
            MetadataScope::AllTopics,
        );
        md.update(
            &response(vec![topic("a", 1, vec![])]),
            MetadataScope::ListedTopics,
        );
        assert!(md.topic("b").is_some());
        md.update(
            &response(vec![topic("a", 1, vec![])]),
            MetadataScope::AllTopics,
        );
        assert!(md.topic("b").is_none());
        assert_eq!(md.topic_name(Uuid::from_u128(2)), None);
    }

    #[test]
    fn unknown_topic_error_removes_it_and_other_errors_are_kept() {
        let mut md = Metadata::default();
        md.update(
            &response(vec![topic("a", 1, vec![partition(0, 1, 1)])]),
            MetadataScope::AllTopics,
        );
        let leaderless =
            topic("a", 1, vec![]).with_error_code(ResponseError::LeaderNotAvailable.code());
        md.update(&response(vec![leaderless]), MetadataScope::ListedTopics);
        assert_eq!(
            md.topic("a").unwrap().error,
            Some(ResponseError::LeaderNotAvailable)
        );
        assert!(md.partition("a", 0).is_some());
        let unknown =
            topic("a", 1, vec![]).with_error_code(ResponseError::UnknownTopicOrPartition.code());
        md.update(&response(vec![unknown]), MetadataScope::ListedTopics);
        assert!(md.topic("a").is_none());
    }

    #[test]
    fn invalid_and_unauthorized_topics_are_not_cached() {
        let mut md = Metadata::default();
        md.update(
            &response(vec![topic("a", 1, vec![partition(0, 1, 1)])]),
            MetadataScope::AllTopics,
        );
        for code in [
            ResponseError::InvalidTopicException,
            ResponseError::TopicAuthorizationFailed,
        ] {
            let refused = topic("bad!topic", 0, vec![]).with_error_code(code.code());
            md.update(&response(vec![refused]), MetadataScope::ListedTopics);
            assert!(md.topic("bad!topic").is_none(), "{code}");
            let lost = topic("a", 1, vec![]).with_error_code(code.code());
            md.update(&response(vec![lost]), MetadataScope::ListedTopics);
            assert!(md.topic("a").is_none(), "{code}");
            assert_eq!(md.topic_name(Uuid::from_u128(1)), None);
            md.update(
                &response(vec![topic("a", 1, vec![partition(0, 1, 1)])]),
                MetadataScope::ListedTopics,
            );
        }
        assert_eq!(
            md.topics().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["a"]
        );
    }

    #[test]
    fn request_builders() {
        assert_eq!(metadata_request_all_topics().topics, None);
        let listed = metadata_request_for_topics(["x", "y"], true);
        assert_eq!(listed.topics.as_ref().unwrap().len(), 2);
        assert!(listed.allow_auto_topic_creation);
        let by_id = metadata_request_for_topic_ids([Uuid::from_u128(5)]);
        assert_eq!(by_id.topics.unwrap()[0].topic_id, Uuid::from_u128(5));
    }
}
