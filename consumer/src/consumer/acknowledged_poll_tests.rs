//! `poll` waits for the background's answer to an acknowledged poll (a rebalance asked for
//! one) only until its own deadline, collecting nothing meanwhile; the next `poll` waits on.

use super::*;
use crate::internals::events::ApplicationEvent;

#[tokio::test]
async fn poll_keeps_its_timeout_while_the_background_has_not_answered() {
    let config = ConsumerConfig::from_pairs([("bootstrap.servers", "127.0.0.1:1")]).unwrap();
    let mut consumer = Consumer::new(config).unwrap();
    consumer
        .assign([TopicPartition::new("orders", 0)])
        .await
        .unwrap();
    // A background task stuck for 2 s, and a rebalance waiting for an acknowledged poll.
    consumer
        .send(ApplicationEvent::StallForTest(Duration::from_secs(2)))
        .unwrap();
    consumer.poll_requested = true;
    let started = Instant::now();
    let records = consumer.poll(Duration::from_millis(100)).await.unwrap();
    let took = started.elapsed();
    assert!(records.is_empty());
    assert!(
        took < Duration::from_millis(1_000),
        "poll(100 ms) waited {took:?} for the background"
    );
    assert!(consumer.pending_ack.is_some(), "the next poll waits on");
    // Once the background is back, a poll receives the answer.
    let started = Instant::now();
    while consumer.pending_ack.is_some() {
        consumer.poll(Duration::from_millis(100)).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(10), "no answer");
    }
    consumer.close(Duration::from_secs(1)).await.unwrap();
}
