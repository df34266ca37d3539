//! `kafka-verifiable-consumer`: this crate's consumer behind the command line and the JSON
//! events of Kafka's `org.apache.kafka.tools.VerifiableConsumer`, so that Kafka's own system
//! tests (`tests/kafkatest/tests/client/consumer_test.py`, through `verifiable_consumer.py`)
//! and any harness written against that contract can drive and judge it exactly as they
//! judge Java's client. It does what Java's tool does, step for step: print
//! `startup_complete`, subscribe to the topic with a listener that prints every assignment
//! and revocation (a loss prints as a revocation, as Java's default `onPartitionsLost`
//! does), poll, print a summary of each poll, and without auto-commit `commitSync` each
//! poll's offsets and print the outcome; SIGTERM or SIGINT prints `shutdown_requested` and
//! wakes the consumer up; it then closes within `--close-timeout` and prints
//! `shutdown_complete`. Java prints `shutdown_requested` from a JVM shutdown hook, so a run
//! that ends by itself (`--max-messages`) prints it too, last; so does this one. Build it with `cargo build -p kafka-consumer --features
//! verifiable-consumer --bin kafka-verifiable-consumer`.

#[cfg(not(madsim))]
mod args;
#[cfg(not(madsim))]
mod events;

#[cfg(madsim)]
fn main() {}

#[cfg(not(madsim))]
#[tokio::main]
async fn main() -> std::process::ExitCode {
    use std::process::ExitCode;

    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match args::parse(&argv, |path| std::fs::read_to_string(path)) {
        Ok(args) => args,
        Err(args::Exit::Help) => {
            println!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(args::Exit::Error(message)) => {
            eprintln!("kafka-verifiable-consumer: {message}\n\n{}", args::USAGE);
            return ExitCode::from(1);
        }
    };
    // Stdout carries the events alone; logs go to stderr.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match verifiable::run(args).await {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            // Java's tool dies of an uncaught exception here (a bad config, say): exit 1.
            eprintln!("kafka-verifiable-consumer: {error}");
            ExitCode::from(1)
        }
    }
}

#[cfg(not(madsim))]
mod verifiable {
    use std::collections::BTreeSet;
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use kafka_consumer::consumer::Offsets;
    use kafka_consumer::rebalance::{ConsumerRebalanceListener, ListenerFuture};
    use kafka_consumer::{
        Consumer, ConsumerConfig, ConsumerRecords, Error, OffsetAndMetadata, TopicPartition,
    };

    use crate::args::Args;
    use crate::events::{self, RecordSetSummary};

    /// Java polls with `Long.MAX_VALUE`; ours polls in hour-long rounds and goes round again
    /// when one ends empty (Java's poll never returns empty records with that timeout, so an
    /// empty round prints nothing and commits nothing).
    const POLL_ROUND: Duration = Duration::from_secs(3600);

    /// Prints the group's decisions as Java's tool does from its `ConsumerRebalanceListener`.
    struct PrintingListener;

    impl ConsumerRebalanceListener for PrintingListener {
        fn on_partitions_revoked<'a>(
            &'a mut self,
            _consumer: &'a mut Consumer,
            partitions: &'a BTreeSet<TopicPartition>,
        ) -> ListenerFuture<'a> {
            events::print(&events::partitions("partitions_revoked", partitions));
            Box::pin(async { Ok(()) })
        }

        fn on_partitions_assigned<'a>(
            &'a mut self,
            _consumer: &'a mut Consumer,
            partitions: &'a BTreeSet<TopicPartition>,
        ) -> ListenerFuture<'a> {
            events::print(&events::partitions("partitions_assigned", partitions));
            Box::pin(async { Ok(()) })
        }
    }

    /// Builds the consumer, consumes until done or told to stop, closes; returns the exit
    /// code: 0, or 128 + the signal that stopped it (143 for SIGTERM, 130 for SIGINT), as a
    /// JVM that ran its shutdown hooks exits. Only a consumer that cannot be built is an
    /// error; how consuming ended is logged, as Java's tool logs it.
    pub async fn run(args: Args) -> Result<u8, Box<dyn std::error::Error>> {
        let config = ConsumerConfig::from_map(&args.config)?;
        let commit_timeout = Duration::from_millis(config.default_api_timeout_ms().into());
        let mut consumer = Consumer::new(config)?;
        let shutdown_requested = Arc::new(AtomicBool::new(false));
        let signalled = Arc::new(AtomicU8::new(0));
        stop_on_signal(
            &consumer,
            Arc::clone(&shutdown_requested),
            Arc::clone(&signalled),
        );
        let mut session = Session {
            args: &args,
            consumed: 0,
            commit_timeout,
        };
        events::print(&events::event("startup_complete", Vec::new()));
        match session.consume(&mut consumer).await {
            Ok(()) => {}
            Err(Error::Wakeup) => tracing::debug!("woken up to shut down"),
            Err(error) => {
                tracing::error!(%error, "Error during processing, terminating consumer process")
            }
        }
        if let Err(error) = consumer
            .close(Duration::from_millis(args.close_timeout_ms))
            .await
        {
            tracing::warn!(%error, "close");
        }
        events::print(&events::event("shutdown_complete", Vec::new()));
        // Java's shutdown hook runs at every JVM exit, also one without a signal.
        print_shutdown_requested(&shutdown_requested);
        Ok(signalled.load(Ordering::SeqCst))
    }

    /// Prints `shutdown_requested` unless it was printed already: once per process, as the
    /// JVM runs its shutdown hook once.
    fn print_shutdown_requested(printed: &AtomicBool) {
        if !printed.swap(true, Ordering::SeqCst) {
            events::print(&events::event("shutdown_requested", Vec::new()));
        }
    }

    /// SIGTERM or SIGINT (Java's shutdown hook): print `shutdown_requested` and wake the
    /// consumer up; the main loop then closes it.
    fn stop_on_signal(
        consumer: &Consumer,
        shutdown_requested: Arc<AtomicBool>,
        signalled: Arc<AtomicU8>,
    ) {
        let wakeup = consumer.wakeup_handle();
        tokio::spawn(async move {
            let terminate = async {
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(mut signal) => {
                        signal.recv().await;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cannot listen for SIGTERM");
                        std::future::pending::<()>().await;
                    }
                }
            };
            let exit_code = tokio::select! {
                () = terminate => 128 + 15,
                _ = tokio::signal::ctrl_c() => 128 + 2,
            };
            signalled.store(exit_code, Ordering::SeqCst);
            print_shutdown_requested(&shutdown_requested);
            wakeup.wakeup();
        });
    }

    struct Session<'a> {
        args: &'a Args,
        consumed: usize,
        commit_timeout: Duration,
    }

    impl Session<'_> {
        fn finished(&self) -> bool {
            self.args
                .max_messages
                .is_some_and(|max| self.consumed >= max)
        }

        async fn consume(&mut self, consumer: &mut Consumer) -> kafka_consumer::Result<()> {
            consumer
                .subscribe_with_listener([self.args.topic.clone()], PrintingListener)
                .await?;
            while !self.finished() {
                let records = consumer.poll(POLL_ROUND).await?;
                if records.is_empty() {
                    continue;
                }
                let offsets = self.on_records_received(&records);
                if !self.args.auto_commit {
                    self.commit_sync(consumer, offsets).await?;
                }
            }
            Ok(())
        }

        /// Summarises one poll per partition (cut short at `--max-messages`), prints it and
        /// returns the offsets after each partition's last record.
        fn on_records_received(&mut self, records: &ConsumerRecords) -> Offsets {
            let mut offsets = Offsets::new();
            let mut summaries = Vec::new();
            for tp in records.partitions() {
                let mut partition_records = records.records(tp);
                if let Some(max) = self.args.max_messages {
                    let left = max.saturating_sub(self.consumed);
                    partition_records = &partition_records[..partition_records.len().min(left)];
                }
                let (Some(first), Some(last)) =
                    (partition_records.first(), partition_records.last())
                else {
                    continue;
                };
                offsets.insert(tp.clone(), OffsetAndMetadata::new(last.offset + 1));
                summaries.push(RecordSetSummary {
                    partition: tp.clone(),
                    count: partition_records.len(),
                    min_offset: first.offset,
                    max_offset: last.offset,
                });
                if self.args.verbose {
                    for record in partition_records {
                        events::print(&events::record_data(record));
                    }
                }
                self.consumed += partition_records.len();
                if self.finished() {
                    break;
                }
            }
            events::print(&events::records_consumed(records.count(), &summaries));
            offsets
        }

        /// Java's `commitSync` step: the outcome printed either way; a wakeup (the shutdown
        /// request) lets the commit finish first and then stops consuming; a fenced instance
        /// stops consuming without a line.
        async fn commit_sync(
            &self,
            consumer: &mut Consumer,
            offsets: Offsets,
        ) -> kafka_consumer::Result<()> {
            let mut woken = false;
            loop {
                match consumer
                    .commit_sync(Some(offsets.clone()), self.commit_timeout)
                    .await
                {
                    Err(Error::Wakeup) if !woken => woken = true,
                    Err(error @ Error::Fenced { .. }) => return Err(error),
                    outcome => {
                        let error = outcome.err().map(|e| e.to_string());
                        events::print(&events::offsets_committed(&offsets, error));
                        break;
                    }
                }
            }
            if woken {
                Err(Error::Wakeup)
            } else {
                Ok(())
            }
        }
    }
}
