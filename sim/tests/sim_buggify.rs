//! Simulation mode: the brokers' buggify sites perturb only legal behaviour, so a client that
//! keeps fetching still reads every record exactly once, in order, whatever the seed activated.
#![cfg(madsim)]

mod support;

use kafka_consumer::network::MetadataScope;
use kafka_protocol::messages::*;
use madsim::runtime::Handle;
use sim::cluster::Cluster;
use support::*;

#[madsim::test]
async fn fetching_through_buggified_brokers_reads_every_record_once_in_order() {
    let cluster = Cluster::builder()
        .brokers(1)
        .topic("t", 1)
        .buggify()
        .build()
        .await;
    let expected: Vec<String> = (0..30).map(|i| format!("v{i}")).collect();
    for chunk in expected.chunks(3) {
        let values: Vec<&str> = chunk.iter().map(String::as_str).collect();
        cluster.controller().append("t", 0, batch(&values)).unwrap();
    }
    let t = ("t", cluster.controller().read().topics["t"].topic_id);
    let bootstrap = cluster.bootstrap_servers();
    let read = Handle::current()
        .create_node()
        .name("client")
        .ip("10.0.2.1".parse().unwrap())
        .build()
        .spawn(async move {
            let mut client = client(bootstrap);
            let metadata = send(
                &mut client,
                -1,
                MetadataRequest::default().with_topics(None),
            )
            .await;
            client.update_metadata(&metadata, MetadataScope::AllTopics);
            let mut read: Vec<(i64, String)> = Vec::new();
            for _ in 0..200 {
                let next = read.last().map_or(0, |(offset, _)| offset + 1);
                let mut request = fetch_request(t, 0, next, (0, -1));
                request.max_wait_ms = 50;
                let response = send(&mut client, 1, request).await;
                read.extend(values(response.responses[0].partitions[0].records.clone()));
                if read.len() >= 30 {
                    break;
                }
            }
            // At the log end: a long poll, answered empty (after the wait, or early if the
            // seed activated that site).
            let mut request = fetch_request(t, 0, 30, (0, -1));
            request.max_wait_ms = 50;
            let response = send(&mut client, 1, request).await;
            assert!(values(response.responses[0].partitions[0].records.clone()).is_empty());
            read
        })
        .await
        .unwrap();
    let offsets: Vec<i64> = read.iter().map(|(offset, _)| *offset).collect();
    assert_eq!(offsets, (0..30).collect::<Vec<_>>());
    let values: Vec<String> = read.into_iter().map(|(_, value)| value).collect();
    assert_eq!(values, expected);
    let sites = cluster.faults().buggify().sites();
    assert!(
        sites
            .iter()
            .filter(|(site, _)| site.contains("fetch.rs"))
            .count()
            >= 2,
        "both fetch sites were reached: {sites:?}"
    );
}
