//! The network client against a real Apache Kafka broker.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`). Real sockets only: compiled out under
//! madsim.
#![cfg(not(madsim))]

mod support;

use kafka_consumer::network::metadata::{metadata_request_all_topics, metadata_request_for_topics};
use kafka_consumer::network::{MetadataScope, Target};
use kafka_consumer::protocol::versions::CONSUMER_APIS;
use kafka_consumer::protocol::Api;
use kafka_consumer::rt::SeededRng;
use rand::RngCore;
use support::real_broker::{bootstrap, client, create_topic, delete_topic};

#[tokio::test]
async fn every_consumer_api_has_a_common_version() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut client = client(bootstrap);
    client
        .send(Target::LeastLoaded, metadata_request_for_topics([], false))
        .await
        .unwrap();
    let table = client
        .api_versions(-1)
        .expect("connected to the bootstrap node");
    for api in CONSUMER_APIS {
        let version = table
            .select(Api(api as i16), api.valid_versions())
            .unwrap_or_else(|e| panic!("{e}"));
        eprintln!("{api:?}: v{version}");
    }
}

#[tokio::test]
async fn metadata_names_brokers_controller_and_cluster() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut client = client(bootstrap);
    let response = client
        .send(Target::LeastLoaded, metadata_request_all_topics())
        .await
        .unwrap();
    client.update_metadata(&response.body, MetadataScope::AllTopics);
    let metadata = client.metadata();
    assert!(metadata.brokers().count() >= 1);
    let controller = metadata.controller_id().expect("a controller id");
    assert!(
        metadata.broker(controller).is_some(),
        "controller {controller} is a known broker"
    );
    assert!(!metadata.cluster_id().unwrap_or_default().is_empty());
    // The advertised broker is reachable under its own node id.
    let node_id = metadata.brokers().next().unwrap().node_id;
    let again = client
        .send(
            Target::Node(node_id),
            metadata_request_for_topics([], false),
        )
        .await
        .unwrap();
    assert_eq!(again.node_id, node_id);
}

#[tokio::test]
async fn create_describe_and_delete_a_topic() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut client = client(bootstrap);
    let name = format!("wire-test-{:016x}", SeededRng::from_runtime().next_u64());
    let topic_id = create_topic(&mut client, &name, 3).await;

    let metadata = client.metadata();
    assert_eq!(metadata.topic_id(&name), Some(topic_id));
    assert_eq!(metadata.topic_name(topic_id), Some(name.as_str()));
    for partition in 0..3 {
        let p = metadata.partition(&name, partition).unwrap();
        let leader = p.leader_id.unwrap();
        assert!(
            metadata.broker(leader).is_some(),
            "leader {leader} is a known broker"
        );
        assert!(p.replica_nodes.contains(&leader));
    }
    delete_topic(&mut client, &name).await;
}
