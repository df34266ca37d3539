//! Simulation mode: a [`ConsumerHandle`] used by other tasks while one task streams.
//!
//! - Workers commit through the handle while the stream runs: every record is committed, and
//!   the committed offsets reach the log end.
//! - A commit races a rebalance: made from a worker while `on_partitions_revoked` runs on the
//!   polling task it is accepted (it reaches the background task ahead of the callback's
//!   completion); made after the revocation completed it is refused with `IllegalState`, and
//!   the partition's committed offset stays what the revocation committed, so a worker that
//!   finishes late cannot overwrite the new owner's progress.
//! - A seek from a handle drops the records `recv` already holds for the partition; a pause
//!   from a handle holds them back until the resume, and none is lost.
//! - A handle refuses partitions the consumer does not hold, and fails cleanly once its
//!   consumer is closed or dropped.
#![cfg(madsim)]

mod support;

use std::collections::{BTreeMap, BTreeSet};

use kafka_consumer::config::Assignor;
use kafka_consumer::consumer::Offsets;
use kafka_consumer::rebalance::ListenerFuture;
use kafka_consumer::rt::Duration;
use kafka_consumer::{
    AutoOffsetReset, Consumer, ConsumerConfig, ConsumerHandle, ConsumerRebalanceListener, Error,
    OffsetAndMetadata, TopicPartition,
};
use madsim::runtime::Handle;
use sim::cluster::Cluster;
use tokio::sync::{mpsc, oneshot};

const PARTITIONS: i32 = 4;
const PER_PARTITION: usize = 50;

fn tp(partition: i32) -> TopicPartition {
    TopicPartition::new("t", partition)
}

fn offsets(entries: impl IntoIterator<Item = (TopicPartition, i64)>) -> Offsets {
    entries
        .into_iter()
        .map(|(tp, offset)| (tp, OffsetAndMetadata::new(offset)))
        .collect()
}

async fn cluster() -> Cluster {
    support::filled_cluster(PARTITIONS, PER_PARTITION).await
}

fn config(bootstrap: &[String], client_id: &str) -> kafka_consumer::config::ConsumerConfigBuilder {
    ConsumerConfig::builder()
        .bootstrap_servers(bootstrap.iter().cloned())
        .client_id(client_id)
        .enable_auto_commit(false)
        .auto_offset_reset(AutoOffsetReset::Earliest)
}

/// Runs `f` on a simulated node of its own (a client process).
fn on_node<F>(name: &str, ip: &str, f: F) -> madsim::task::JoinHandle<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    Handle::current()
        .create_node()
        .name(name)
        .ip(ip.parse().unwrap())
        .build()
        .spawn(f)
}

#[test]
fn a_handle_is_clone_send_and_sync() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<ConsumerHandle>();
}

/// One task streams; one worker per partition processes its records in order and commits each
/// through the handle. Every record arrives once and the committed offsets reach the log end.
#[madsim::test]
async fn workers_commit_through_a_handle_while_one_task_streams() {
    let cluster = cluster().await;
    let bootstrap = cluster.bootstrap_servers();
    let committed = on_node("app", "10.0.6.1", async move {
        let mut consumer = Consumer::new(
            config(&bootstrap, "streamer")
                .group_id("handle-workers")
                .build()
                .unwrap(),
        )
        .unwrap();
        consumer.subscribe(["t"]).await.unwrap();
        let handle = consumer.handle();
        let mut workers = BTreeMap::new();
        let mut done = Vec::new();
        for p in 0..PARTITIONS {
            let (tx, mut rx) = mpsc::unbounded_channel::<i64>();
            let handle = handle.clone();
            done.push(tokio::spawn(async move {
                let mut count = 0;
                while let Some(offset) = rx.recv().await {
                    // Processing takes a while; the stream goes on meanwhile.
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    handle
                        .commit_sync(offsets([(tp(p), offset + 1)]), Duration::from_secs(10))
                        .await
                        .expect("a worker's commit");
                    count += 1;
                }
                count
            }));
            workers.insert(p, tx);
        }
        {
            use futures_util::StreamExt;
            let stream = consumer.stream();
            let mut stream = std::pin::pin!(stream);
            let mut seen = BTreeSet::new();
            while seen.len() < PARTITIONS as usize * PER_PARTITION {
                let record = stream.next().await.unwrap().unwrap();
                assert!(
                    seen.insert((record.partition, record.offset)),
                    "a duplicate"
                );
                workers[&record.partition].send(record.offset).unwrap();
            }
        }
        drop(workers);
        for worker in done {
            assert_eq!(worker.await.unwrap(), PER_PARTITION);
        }
        let committed = handle
            .committed((0..PARTITIONS).map(tp), Duration::from_secs(10))
            .await
            .unwrap();
        consumer.close(Duration::from_secs(5)).await.unwrap();
        committed
    })
    .await
    .unwrap();
    for p in 0..PARTITIONS {
        assert_eq!(
            committed[&tp(p)].as_ref().map(|o| o.offset),
            Some(PER_PARTITION as i64),
            "partition {p}"
        );
    }
}

/// Asks the worker to commit every revoked partition at its position while the revocation
/// runs, and reports the outcome.
struct CommitThroughWorker {
    worker: mpsc::UnboundedSender<(Offsets, oneshot::Sender<kafka_consumer::Result<()>>)>,
    during_revocation: mpsc::UnboundedSender<(Offsets, kafka_consumer::Result<()>)>,
}

impl ConsumerRebalanceListener for CommitThroughWorker {
    fn on_partitions_revoked<'a>(
        &'a mut self,
        consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            let mut at = Offsets::new();
            for partition in partitions {
                let position = consumer.position(partition, Duration::from_secs(5)).await?;
                at.insert(partition.clone(), OffsetAndMetadata::new(position));
            }
            if at.is_empty() {
                return Ok(());
            }
            let (reply, outcome) = oneshot::channel();
            // On close the worker is gone: nothing to report then.
            if self.worker.send((at.clone(), reply)).is_err() {
                return Ok(());
            }
            if let Ok(outcome) = outcome.await {
                let _ = self.during_revocation.send((at, outcome));
            }
            Ok(())
        })
    }
}

/// Member `a` consumes alone; `b` joins (eager range: everything is revoked, half comes back).
/// A worker's commit made while `a`'s revocation runs is accepted; its commit of a partition
/// that went to `b`, made after the rebalance, is refused and leaves the committed offset as
/// the revocation left it.
#[madsim::test]
async fn a_commit_racing_a_revocation_is_accepted_during_it_and_refused_after_it() {
    let cluster = cluster().await;
    let bootstrap = cluster.bootstrap_servers();
    let (b_joined_tx, b_joined) = oneshot::channel::<()>();
    let a = on_node("a", "10.0.6.2", {
        let bootstrap = bootstrap.clone();
        async move {
            let mut consumer = Consumer::new(
                config(&bootstrap, "a")
                    .group_id("handle-race")
                    .partition_assignment_strategy(&[Assignor::Range])
                    .build()
                    .unwrap(),
            )
            .unwrap();
            let handle = consumer.handle();
            let (worker_tx, mut worker_rx) =
                mpsc::unbounded_channel::<(Offsets, oneshot::Sender<kafka_consumer::Result<()>>)>();
            let worker = tokio::spawn(async move {
                while let Some((offsets, reply)) = worker_rx.recv().await {
                    let _ = reply.send(handle.commit_sync(offsets, Duration::from_secs(10)).await);
                }
            });
            let (during_tx, mut during_rx) = mpsc::unbounded_channel();
            consumer
                .subscribe_with_listener(
                    ["t"],
                    CommitThroughWorker {
                        worker: worker_tx.clone(),
                        during_revocation: during_tx,
                    },
                )
                .await
                .unwrap();
            // Own everything and consume some of it.
            let mut consumed = 0;
            while consumed < 60 || consumer.assignment().len() < PARTITIONS as usize {
                consumed += consumer
                    .poll(Duration::from_millis(100))
                    .await
                    .unwrap()
                    .count();
            }
            b_joined_tx.send(()).unwrap();
            // Poll until the revocation ran and half the partitions came back.
            let mut during = None;
            let during = loop {
                consumer.poll(Duration::from_millis(100)).await.unwrap();
                if during.is_none() {
                    during = during_rx.try_recv().ok();
                }
                if let Some(during) = &during {
                    if consumer.assignment().len() == PARTITIONS as usize / 2 {
                        break during.clone();
                    }
                }
            };
            let gone: Vec<TopicPartition> = (0..PARTITIONS)
                .map(tp)
                .filter(|tp| !consumer.assignment().contains(tp))
                .collect();
            // The worker finishes a record of a partition that went to `b`, late.
            let (reply, outcome) = oneshot::channel();
            worker_tx
                .send((offsets(gone.iter().map(|tp| (tp.clone(), 10_000))), reply))
                .unwrap();
            let late = outcome.await.unwrap();
            // A partition `a` still owns is committed as usual.
            let kept = consumer.assignment().iter().next().unwrap().clone();
            let (reply, outcome) = oneshot::channel();
            worker_tx
                .send((offsets([(kept.clone(), 7)]), reply))
                .unwrap();
            let owned = outcome.await.unwrap();
            // The listener keeps a sender to the worker: stop it here.
            worker.abort();
            let committed = consumer
                .committed(gone.clone(), Duration::from_secs(5))
                .await
                .unwrap();
            consumer.close(Duration::from_secs(5)).await.unwrap();
            (during, gone, late, owned, committed)
        }
    });
    let b = on_node("b", "10.0.6.3", async move {
        b_joined.await.unwrap();
        let mut consumer = Consumer::new(
            config(&bootstrap, "b")
                .group_id("handle-race")
                .partition_assignment_strategy(&[Assignor::Range])
                .build()
                .unwrap(),
        )
        .unwrap();
        consumer.subscribe(["t"]).await.unwrap();
        for _ in 0..100 {
            consumer.poll(Duration::from_millis(100)).await.unwrap();
        }
        consumer.close(Duration::from_secs(5)).await.unwrap();
    });
    let ((during_offsets, during_outcome), gone, late, owned, committed) = a.await.unwrap();
    b.await.unwrap();
    assert_eq!(
        during_offsets.len(),
        PARTITIONS as usize,
        "eager: every partition revoked"
    );
    during_outcome.expect("a commit made while on_partitions_revoked runs is accepted");
    assert_eq!(gone.len(), PARTITIONS as usize / 2);
    match late {
        Err(Error::IllegalState(message)) => assert!(
            message.contains("not assigned"),
            "the refusal says why: {message}"
        ),
        other => panic!("a commit of a partition revoked earlier must be refused, got {other:?}"),
    }
    owned.expect("a commit of a partition still owned");
    for tp in &gone {
        assert_eq!(
            committed[tp].as_ref().map(|o| o.offset),
            Some(during_offsets[tp].offset),
            "{tp}: the committed offset is what the revocation committed"
        );
    }
}

/// `recv` holds the rest of a fetched batch; a seek from a handle on another task drops the
/// held records, and the next `recv` starts at the seek's offset.
#[madsim::test]
async fn a_seek_from_a_handle_drops_the_records_recv_holds() {
    let cluster = cluster().await;
    let bootstrap = cluster.bootstrap_servers();
    on_node("app", "10.0.6.4", async move {
        let mut consumer = Consumer::new(config(&bootstrap, "seeker").build().unwrap()).unwrap();
        consumer.assign([tp(0)]).await.unwrap();
        assert_eq!(consumer.recv().await.unwrap().offset, 0);
        assert_eq!(consumer.recv().await.unwrap().offset, 1);
        let handle = consumer.handle();
        assert_eq!(
            handle
                .position(&tp(0), Duration::from_secs(5))
                .await
                .unwrap(),
            2,
            "the position counts the records recv holds as not yet consumed"
        );
        tokio::spawn(async move { handle.seek(&tp(0), 30).await })
            .await
            .unwrap()
            .unwrap();
        let next: Vec<i64> = [
            consumer.recv().await.unwrap(),
            consumer.recv().await.unwrap(),
        ]
        .iter()
        .map(|r| r.offset)
        .collect();
        assert_eq!(next, [30, 31]);
        consumer.close(Duration::from_secs(5)).await.unwrap();
    })
    .await
    .unwrap();
}

/// A pause from a handle holds back the records `recv` holds for the partition until the
/// resume; the other partition goes on; nothing is lost or repeated.
#[madsim::test]
async fn a_pause_from_a_handle_holds_back_held_records_until_the_resume() {
    let cluster = cluster().await;
    let bootstrap = cluster.bootstrap_servers();
    on_node("app", "10.0.6.5", async move {
        let mut consumer = Consumer::new(
            config(&bootstrap, "pauser")
                .max_poll_records(500)
                .build()
                .unwrap(),
        )
        .unwrap();
        consumer.assign([tp(0), tp(1)]).await.unwrap();
        let first = consumer.recv().await.unwrap();
        let (paused, other) = (tp(first.partition), tp(1 - first.partition));
        let mut next: BTreeMap<i32, i64> = BTreeMap::new();
        next.insert(first.partition, first.offset + 1);
        let handle = consumer.handle();
        {
            let (handle, paused) = (handle.clone(), paused.clone());
            tokio::spawn(async move { handle.pause([paused]).await })
                .await
                .unwrap()
                .unwrap();
        }
        assert_eq!(handle.paused(), BTreeSet::from([paused.clone()]));
        assert_eq!(consumer.paused(), BTreeSet::from([paused.clone()]));
        // Only the other partition's records come while paused.
        let mut check = |record: kafka_consumer::ConsumerRecord| {
            let expected = next.entry(record.partition).or_insert(0);
            assert_eq!(record.offset, *expected, "partition {}", record.partition);
            *expected += 1;
        };
        for _ in 0..PER_PARTITION {
            let record = consumer.recv().await.unwrap();
            assert_eq!(
                record.partition, other.partition,
                "a paused partition's record"
            );
            check(record);
        }
        assert!(
            tokio::time::timeout(Duration::from_secs(2), consumer.recv())
                .await
                .is_err(),
            "nothing while the only partition left is paused"
        );
        handle.resume([paused.clone()]).await.unwrap();
        for _ in first.offset + 1..PER_PARTITION as i64 {
            let record = consumer.recv().await.unwrap();
            assert_eq!(record.partition, paused.partition);
            check(record);
        }
        consumer.close(Duration::from_secs(5)).await.unwrap();
    })
    .await
    .unwrap();
}

/// A handle refuses what its consumer does not hold, and fails cleanly once the consumer is
/// closed or dropped (it does not keep the consumer's background task alive).
#[madsim::test]
async fn a_handle_refuses_unowned_partitions_and_outlives_its_consumer_cleanly() {
    let cluster = cluster().await;
    let bootstrap = cluster.bootstrap_servers();
    on_node("app", "10.0.6.6", async move {
        let mut consumer = Consumer::new(
            config(&bootstrap, "refused")
                .group_id("handle-refusals")
                .build()
                .unwrap(),
        )
        .unwrap();
        consumer.assign([tp(0)]).await.unwrap();
        let handle = consumer.handle();
        let timeout = Duration::from_secs(5);
        let not_assigned = |result: kafka_consumer::Result<()>, what: &str| match result {
            Err(Error::IllegalState(message)) if message.contains("not assigned") => {}
            other => panic!("{what} of an unassigned partition: {other:?}"),
        };
        not_assigned(
            handle.commit_sync(offsets([(tp(1), 3)]), timeout).await,
            "commit_sync",
        );
        not_assigned(
            handle.commit_async(offsets([(tp(1), 3)])).await,
            "commit_async",
        );
        not_assigned(handle.seek(&tp(1), 3).await, "seek");
        not_assigned(handle.pause([tp(0), tp(1)]).await, "pause");
        assert!(handle.paused().is_empty(), "all or nothing");
        not_assigned(
            handle.position(&tp(1), timeout).await.map(|_| ()),
            "position",
        );
        match handle.commit_sync(offsets([(tp(0), -1)]), timeout).await {
            Err(Error::InvalidArgument(_)) => {}
            other => panic!("a negative offset: {other:?}"),
        }
        handle
            .commit_sync(offsets([(tp(0), 3)]), timeout)
            .await
            .unwrap();
        assert_eq!(
            handle.committed([tp(0)], timeout).await.unwrap()[&tp(0)]
                .as_ref()
                .map(|o| o.offset),
            Some(3)
        );
        consumer.close(timeout).await.unwrap();
        match handle.commit_sync(offsets([(tp(0), 4)]), timeout).await {
            Err(Error::IllegalState(message)) => assert!(message.contains("closed")),
            other => panic!("a handle of a closed consumer: {other:?}"),
        }

        let dropped = Consumer::new(config(&bootstrap, "dropped").build().unwrap()).unwrap();
        let handle = dropped.handle();
        drop(dropped);
        match handle.seek(&tp(0), 1).await {
            Err(Error::Closed) => {}
            other => panic!("a handle of a dropped consumer: {other:?}"),
        }
    })
    .await
    .unwrap();
}
