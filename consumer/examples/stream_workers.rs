//! An async service's usual shape: one task streams records from a consumer group and hands
//! each partition's records to a worker task; the workers process them and commit what they
//! finished through a `ConsumerHandle`, while the stream goes on. Rebalances run on the
//! streaming task; a worker's commit of a partition that is no longer ours is refused, so a
//! late worker cannot overwrite the new owner's progress: it stops, and a new worker starts if
//! the partition comes back.
//!
//! ```text
//! cargo run -p kafka-consumer --example stream_workers -- \
//!     --bootstrap 127.0.0.1:9092 --topic orders --group billing [--count N] [--work-ms 2]
//! ```
//!
//! It stops after `--count` records (or on Ctrl-C), waits for the workers, closes, and prints
//! what it processed and committed.

#[cfg(madsim)]
fn main() {}

#[cfg(not(madsim))]
#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let outcome = match service::Args::parse(std::env::args().skip(1)) {
        Ok(args) => service::run(args, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| e.to_string()),
        Err(usage) => Err(usage),
    };
    match outcome {
        Ok(summary) => {
            println!("processed {} records", summary.processed);
            for (tp, offset) in &summary.committed {
                println!("committed {tp} {offset}");
            }
        }
        Err(error) => {
            eprintln!("stream_workers: {error}");
            std::process::exit(1);
        }
    }
}

#[cfg(not(madsim))]
#[allow(dead_code)] // `tests/stream_workers_real_kafka.rs` uses this module too.
pub mod service {
    use std::collections::BTreeMap;
    use std::future::Future;

    use futures_util::StreamExt;
    use kafka_consumer::{
        AutoOffsetReset, Consumer, ConsumerConfig, ConsumerHandle, ConsumerRecord,
        OffsetAndMetadata, TopicPartition,
    };
    use tokio::sync::mpsc;
    use tokio::task::JoinHandle;
    use tokio::time::Duration;

    const TIMEOUT: Duration = Duration::from_secs(30);

    /// The command line.
    pub struct Args {
        pub bootstrap: String,
        pub topic: String,
        pub group: String,
        /// Stop after this many records (all partitions together).
        pub count: Option<usize>,
        /// Simulated processing time per record.
        pub work_ms: u64,
    }

    impl Args {
        pub fn parse(args: impl Iterator<Item = String>) -> Result<Self, String> {
            let usage = "usage: stream_workers --bootstrap HOST:PORT --topic T --group G \
                         [--count N] [--work-ms MS]";
            let (mut bootstrap, mut topic, mut group) = (None, None, None);
            let (mut count, mut work_ms) = (None, 2);
            let mut args = args;
            while let Some(flag) = args.next() {
                let value = args.next().ok_or(usage)?;
                match flag.as_str() {
                    "--bootstrap" => bootstrap = Some(value),
                    "--topic" => topic = Some(value),
                    "--group" => group = Some(value),
                    "--count" => count = Some(value.parse().map_err(|_| usage)?),
                    "--work-ms" => work_ms = value.parse().map_err(|_| usage)?,
                    _ => return Err(usage.to_owned()),
                }
            }
            Ok(Self {
                bootstrap: bootstrap.ok_or(usage)?,
                topic: topic.ok_or(usage)?,
                group: group.ok_or(usage)?,
                count,
                work_ms,
            })
        }
    }

    /// What the service did.
    #[derive(Debug)]
    pub struct Summary {
        /// Records processed by the workers.
        pub processed: usize,
        /// (partition, offset) of every record processed, in processing order.
        pub records: Vec<(i32, i64)>,
        /// The group's committed offsets at the end.
        pub committed: BTreeMap<TopicPartition, i64>,
    }

    /// One partition's worker: processes its records in order and commits each one's next
    /// offset through the handle. Returns what it processed.
    fn spawn_worker(
        handle: ConsumerHandle,
        tp: TopicPartition,
        work: Duration,
    ) -> (
        mpsc::UnboundedSender<ConsumerRecord>,
        JoinHandle<Vec<(i32, i64)>>,
    ) {
        let (tx, mut rx) = mpsc::unbounded_channel::<ConsumerRecord>();
        let task = tokio::spawn(async move {
            let mut done = Vec::new();
            while let Some(record) = rx.recv().await {
                tokio::time::sleep(work).await;
                let next = [(tp.clone(), OffsetAndMetadata::new(record.offset + 1))];
                match handle
                    .commit_sync(next.into_iter().collect(), TIMEOUT)
                    .await
                {
                    Ok(()) => done.push((record.partition, record.offset)),
                    // The partition moved to another member: its new owner goes on from the
                    // last commit; what this worker did not commit will be redone there.
                    Err(error) => {
                        tracing::warn!(%error, partition = %tp, "worker stops");
                        break;
                    }
                }
            }
            done
        });
        (tx, task)
    }

    /// Runs the service until `count` records are processed or `stop` resolves.
    pub async fn run(
        args: Args,
        stop: impl Future<Output = ()>,
    ) -> Result<Summary, Box<dyn std::error::Error + Send + Sync>> {
        let config = ConsumerConfig::builder()
            .bootstrap_servers([args.bootstrap.as_str()])
            .group_id(&args.group)
            .client_id("stream-workers")
            .enable_auto_commit(false)
            .auto_offset_reset(AutoOffsetReset::Earliest)
            .build()?;
        let mut consumer = Consumer::new(config)?;
        consumer.subscribe([args.topic.clone()]).await?;
        let handle = consumer.handle();
        let work = Duration::from_millis(args.work_ms);
        let mut workers = BTreeMap::new();
        let mut finished = Vec::new();
        let mut dispatched = 0;
        {
            let stream = consumer.stream();
            let mut stream = std::pin::pin!(stream);
            let mut stop = std::pin::pin!(stop);
            while args.count.is_none_or(|count| dispatched < count) {
                let record = tokio::select! {
                    record = stream.next() => match record {
                        Some(record) => record?,
                        None => break,
                    },
                    () = &mut stop => break,
                };
                let tp = TopicPartition::new(&*record.topic, record.partition);
                let (tx, _) = workers
                    .entry(tp.clone())
                    .or_insert_with(|| spawn_worker(handle.clone(), tp.clone(), work));
                let record = match tx.send(record) {
                    Ok(()) => None,
                    Err(mpsc::error::SendError(record)) => Some(record),
                };
                if let Some(record) = record {
                    // Its worker stopped (the partition was revoked and came back).
                    let (tx, task) = spawn_worker(handle.clone(), tp.clone(), work);
                    tx.send(record).ok();
                    if let Some((_, old)) = workers.insert(tp, (tx, task)) {
                        finished.push(old);
                    }
                }
                dispatched += 1;
            }
        }
        // No more records: let each worker finish what it was given.
        for (_, (tx, task)) in std::mem::take(&mut workers) {
            drop(tx);
            finished.push(task);
        }
        let mut records = Vec::new();
        for task in finished {
            records.extend(task.await.unwrap_or_default());
        }
        let partitions: Vec<TopicPartition> = consumer.assignment().iter().cloned().collect();
        let committed = handle
            .committed(partitions, TIMEOUT)
            .await?
            .into_iter()
            .filter_map(|(tp, offset)| Some((tp, offset?.offset)))
            .collect();
        consumer.close(TIMEOUT).await?;
        Ok(Summary {
            processed: records.len(),
            records,
            committed,
        })
    }
}
