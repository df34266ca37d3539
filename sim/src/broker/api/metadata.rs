//! Metadata (3): brokers, controller, cluster id and, per topic, its id and partitions with
//! leader, leader epoch, replicas, ISR and offline replicas.

use kafka_consumer::topic_name::is_valid_topic_name;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::NONE;
use crate::broker::dispatch::RequestCtx;
use crate::controller::{ClusterState, TopicState, NO_LEADER};

pub(crate) async fn handle(ctx: &RequestCtx<'_>, request: MetadataRequest) -> MetadataResponse {
    let version = ctx.version;
    let controller = &ctx.broker.controller;
    // v0: an empty list means all topics; v1+: null means all, empty means none.
    let requested: Option<Vec<MetadataRequestTopic>> = match request.topics {
        Some(topics) if version == 0 && topics.is_empty() => None,
        other => other,
    };
    // Before v4 the field did not exist and brokers always auto-created.
    let auto_create = version < 4 || request.allow_auto_topic_creation;
    let mut topics = Vec::new();
    match requested {
        None => {
            let state = controller.read();
            topics.extend(state.topics.values().map(|t| describe(&state, t, version)));
        }
        Some(wanted) => {
            for wanted in wanted {
                topics.push(describe_requested(ctx, wanted, auto_create));
            }
        }
    }
    let state = controller.read();
    let brokers = state
        .brokers
        .values()
        .filter(|b| b.alive)
        .map(|b| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(b.node_id))
                .with_host(StrBytes::from_string(b.host.clone()))
                .with_port(i32::from(b.port))
                .with_rack(if version >= 1 {
                    b.rack.clone().map(StrBytes::from_string)
                } else {
                    None
                })
        })
        .collect();
    let mut response = MetadataResponse::default()
        .with_brokers(brokers)
        .with_topics(topics);
    if version >= 1 {
        // KRaft brokers report a random live broker as "controller"; we report the lowest.
        let controller_id = state.live_brokers().first().copied().unwrap_or(-1);
        response = response.with_controller_id(BrokerId(controller_id));
    }
    if version >= 2 {
        response =
            response.with_cluster_id(Some(StrBytes::from_string(state.config.cluster_id.clone())));
    }
    if (8..=10).contains(&version) {
        response = response.with_cluster_authorized_operations(i32::MIN);
    }
    response
}

fn describe_requested(
    ctx: &RequestCtx<'_>,
    wanted: MetadataRequestTopic,
    auto_create: bool,
) -> MetadataResponseTopic {
    let version = ctx.version;
    let controller = &ctx.broker.controller;
    let Some(name) = wanted.name else {
        // Lookup by id alone (v10+ allows the field; Kafka rejects it in Metadata).
        let state = controller.read();
        return match state.topic_by_id(wanted.topic_id) {
            Some(topic) => describe(&state, topic, version),
            None => error_topic(
                None,
                wanted.topic_id,
                ResponseError::UnknownTopicId.code(),
                version,
            ),
        };
    };
    {
        let state = controller.read();
        if let Some(topic) = state.topics.get(name.0.as_str()) {
            return describe(&state, topic, version);
        }
    }
    // A name no topic can have: INVALID_TOPIC_EXCEPTION whether or not auto-creation is on
    // (KafkaApis `getTopicMetadata` validates the names it cannot find; with auto-creation
    // `AutoTopicCreationManager.filterCreatableTopics` refuses them with the same code).
    if !is_valid_topic_name(name.0.as_str()) {
        return error_topic(
            Some(name),
            Uuid::nil(),
            ResponseError::InvalidTopicException.code(),
            version,
        );
    }
    if auto_create && controller.read().config.auto_create_topics_enable {
        // KRaft brokers forward the creation to the controller and answer the creating request
        // with UNKNOWN_TOPIC_OR_PARTITION (`sendCreateTopicRequest`; LEADER_NOT_AVAILABLE was
        // the ZooKeeper-mode answer); a later request sees the topic. A creation the
        // controller refuses (e.g. too few brokers) looks the same to this client.
        let _ = controller.update(|state| {
            let partitions = state.config.num_partitions;
            let rf = state.config.default_replication_factor(state.brokers.len());
            state.create_topic(name.0.as_str(), partitions, rf, None)
        });
    }
    error_topic(
        Some(name),
        Uuid::nil(),
        ResponseError::UnknownTopicOrPartition.code(),
        version,
    )
}

fn error_topic(
    name: Option<TopicName>,
    topic_id: Uuid,
    code: i16,
    version: i16,
) -> MetadataResponseTopic {
    let mut topic = MetadataResponseTopic::default()
        .with_error_code(code)
        .with_name(name);
    if version >= 10 {
        topic = topic.with_topic_id(topic_id);
    }
    if version >= 8 {
        topic = topic.with_topic_authorized_operations(i32::MIN);
    }
    topic
}

fn describe(state: &ClusterState, topic: &TopicState, version: i16) -> MetadataResponseTopic {
    let partitions = topic
        .partitions
        .iter()
        .enumerate()
        .map(|(index, p)| {
            let offline: Vec<BrokerId> = p
                .replicas
                .iter()
                .filter(|r| !state.brokers.get(r).is_some_and(|b| b.alive))
                .map(|r| BrokerId(*r))
                .collect();
            let error = if p.leader == NO_LEADER {
                ResponseError::LeaderNotAvailable.code()
            } else {
                NONE
            };
            let mut partition = MetadataResponsePartition::default()
                .with_error_code(error)
                .with_partition_index(index as i32)
                .with_leader_id(BrokerId(p.leader))
                .with_replica_nodes(p.replicas.iter().map(|r| BrokerId(*r)).collect())
                .with_isr_nodes(p.isr.iter().map(|r| BrokerId(*r)).collect());
            if version >= 7 {
                partition = partition.with_leader_epoch(p.leader_epoch);
            }
            if version >= 5 {
                partition = partition.with_offline_replicas(offline);
            }
            partition
        })
        .collect();
    let mut out = MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(topic.name.clone()))))
        .with_partitions(partitions);
    if version >= 1 {
        out = out.with_is_internal(topic.internal);
    }
    if version >= 10 {
        out = out.with_topic_id(topic.topic_id);
    }
    if version >= 8 {
        out = out.with_topic_authorized_operations(i32::MIN);
    }
    out
}

pub(crate) fn error_response(
    ctx: &RequestCtx<'_>,
    request: &MetadataRequest,
    code: i16,
) -> MetadataResponse {
    let topics = request
        .topics
        .iter()
        .flatten()
        .map(|t| error_topic(t.name.clone(), t.topic_id, code, ctx.version))
        .collect();
    MetadataResponse::default().with_topics(topics)
}
