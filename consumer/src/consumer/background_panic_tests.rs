//! A panic of the background task reaches the application as [`Error::Internal`] with the
//! panic's message — from `poll`, commits, `close` — never as [`Error::Closed`], and the
//! record stream ends after reporting it.

use futures_util::StreamExt;

use super::*;
use crate::internals::events::ApplicationEvent;

fn consumer() -> Consumer {
    // Nothing listens there: the consumer only needs its background task.
    let config = ConsumerConfig::from_pairs([
        ("bootstrap.servers", "127.0.0.1:1"),
        ("group.id", "g"),
        ("default.api.timeout.ms", "2000"),
    ])
    .unwrap();
    Consumer::new(config).unwrap()
}

/// A consumer with an assignment whose background task has been told to panic.
async fn panicked_consumer() -> Consumer {
    let mut consumer = consumer();
    consumer
        .assign([TopicPartition::new("orders", 0)])
        .await
        .unwrap();
    consumer
        .send(ApplicationEvent::PanicForTest("injected bug"))
        .unwrap();
    consumer
}

fn is_the_panic(error: &Error) -> bool {
    matches!(error, Error::Internal(message) if message.contains("panicked: injected bug"))
}

#[tokio::test]
async fn calls_after_a_background_panic_report_it() {
    let mut consumer = panicked_consumer().await;
    let error = consumer.poll(Duration::from_secs(5)).await.unwrap_err();
    assert!(is_the_panic(&error), "{error:?}");
    let offsets =
        || BTreeMap::from([(TopicPartition::new("orders", 0), OffsetAndMetadata::new(5))]);
    let error = consumer
        .commit_sync(Some(offsets()), Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(is_the_panic(&error), "{error:?}");
    let error = consumer.commit_async(Some(offsets())).await.unwrap_err();
    assert!(is_the_panic(&error), "{error:?}");
    let error = consumer.close(Duration::from_secs(1)).await.unwrap_err();
    assert!(is_the_panic(&error), "{error:?}");
}

#[tokio::test]
async fn the_stream_ends_after_reporting_a_background_panic() {
    let mut consumer = panicked_consumer().await;
    let items: Vec<Result<ConsumerRecord>> =
        tokio::time::timeout(Duration::from_secs(10), consumer.stream().collect())
            .await
            .expect("the stream ends");
    assert_eq!(items.len(), 1, "{items:?}");
    assert!(is_the_panic(items[0].as_ref().unwrap_err()));
}

#[tokio::test]
async fn a_clean_close_records_no_failure() {
    let mut consumer = consumer();
    consumer.close(Duration::from_secs(1)).await.unwrap();
    assert!(!consumer.failure.has_failed());
}
