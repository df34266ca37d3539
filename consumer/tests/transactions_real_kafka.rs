//! `isolation.level` against a real Apache Kafka broker (issue #27), with logs written by
//! Kafka's own transactional `KafkaProducer` (`testing/kafka/run txn-produce`, scripted one
//! step at a time):
//! - `read_committed` returns exactly the committed records, in offset order, none of an
//!   aborted transaction and no control record, from two producers whose committed and aborted
//!   transactions interleave on two partitions; its position ends at the log end offset, past
//!   the last transaction marker;
//! - `read_uncommitted` (the default) returns every data record, aborted ones included, and
//!   still no control record;
//! - while a transaction is open, `read_committed` stops at the last stable offset: nothing at
//!   or past the open transaction's first offset, and `end_offsets`, `seek_to_end` and
//!   `auto.offset.reset=latest` answer the last stable offset, not the high watermark; once
//!   the transaction commits, the held records arrive.
//!
//! Needs `KAFKA_BOOTSTRAP` (see `support::real_broker`) plus java and javac; compiled out under
//! madsim.
#![cfg(not(madsim))]

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig, IsolationLevel, TopicPartition};
use support::real_broker::{bootstrap, client, create_topic, delete_topic, unique};
use tokio::sync::mpsc;
use tokio::time::{timeout, Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);
/// A JVM start (and the first `javac` of the producer) on a busy 2-core machine.
const JAVA_TIMEOUT: Duration = Duration::from_secs(90);

/// One record as the test sees it: (offset, value).
type Entry = (i64, String);

/// Kafka's transactional `KafkaProducer`, driven step by step through
/// `testing/kafka/run txn-produce` (see `testing/kafka/java/TxnProducer.java`). The child process
/// is the JVM itself (the harness `exec`s it); dropping this without [`TxnProducer::finish`]
/// (a failed assertion) kills it.
struct TxnProducer {
    name: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl TxnProducer {
    async fn start(name: &'static str, bootstrap: &str, topic: &str) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../testing/kafka/run");
        let mut child = Command::new("bash")
            .args([script, "txn-produce", "--topic", topic])
            .args(["--bootstrap", bootstrap])
            .args(["--transactional-id", &unique(&format!("txn-{name}"))])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run testing/kafka/run txn-produce");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let mut stderr_pipe = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::unbounded_channel();
        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_sink = Arc::clone(&stderr);
        // Blocking pipe readers on OS threads: this file only runs in real mode (it is compiled
        // out under madsim), and a thread, unlike a blocking task, never holds up the runtime's
        // shutdown. Both end when the JVM exits or is killed.
        #[allow(clippy::disallowed_methods)]
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        #[allow(clippy::disallowed_methods)]
        std::thread::spawn(move || {
            let mut buf = [0_u8; 4096];
            while let Ok(n @ 1..) = stderr_pipe.read(&mut buf) {
                stderr_sink
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut producer = Self {
            name,
            child,
            stdin,
            lines,
            stderr,
        };
        let first = producer.next_line(JAVA_TIMEOUT).await;
        assert!(
            first.starts_with("INITIALIZED "),
            "{name}: expected INITIALIZED, got {first:?}"
        );
        producer
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    async fn next_line(&mut self, wait: Duration) -> String {
        let line = match timeout(wait, self.lines.recv()).await {
            Ok(Some(line)) => line,
            Ok(None) => panic!(
                "{}: the producer exited early; stderr:\n{}",
                self.name,
                self.stderr()
            ),
            Err(_) => panic!(
                "{}: no answer within {wait:?}; stderr:\n{}",
                self.name,
                self.stderr()
            ),
        };
        assert!(
            !line.starts_with("ERROR"),
            "{}: {line}; stderr:\n{}",
            self.name,
            self.stderr()
        );
        line
    }

    fn write_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Runs one step and returns the producer's answer.
    async fn step(&mut self, step: &str) -> String {
        self.write_line(step);
        self.next_line(TIMEOUT).await
    }

    async fn expect(&mut self, step: &str, answer: &str) {
        let got = self.step(step).await;
        assert_eq!(got, answer, "{}: step {step:?}", self.name);
    }

    async fn begin(&mut self) {
        self.expect("begin", "BEGUN").await;
    }

    async fn commit(&mut self) {
        self.expect("commit", "COMMITTED").await;
    }

    async fn abort(&mut self) {
        self.expect("abort", "ABORTED").await;
    }

    /// Sends `value` to `partition`, returning its offset from the broker's ack.
    async fn send(&mut self, partition: i32, value: &str) -> i64 {
        let answer = self.step(&format!("send {partition} {value}")).await;
        let fields: Vec<&str> = answer.splitn(4, ' ').collect();
        assert!(
            fields.len() == 4
                && fields[0] == "SENT"
                && fields[1] == partition.to_string()
                && fields[3] == value,
            "{}: unexpected answer to send: {answer:?}",
            self.name
        );
        fields[2].parse().unwrap()
    }

    /// Blocks the producer in `wait-line` (its transaction stays open) until [`Self::release`].
    async fn hold(&mut self) {
        self.expect("wait-line", "READY").await;
    }

    fn release(&mut self) {
        self.write_line("go");
    }

    /// Closes stdin; the producer closes and must exit 0.
    async fn finish(mut self) {
        self.stdin = None;
        let last = self.next_line(TIMEOUT).await;
        assert_eq!(last, "CLOSED", "{}", self.name);
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "{}: exited with {status}; stderr:\n{}",
                    self.name,
                    self.stderr()
                );
                return;
            }
            assert!(Instant::now() < deadline, "{}: did not exit", self.name);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for TxnProducer {
    fn drop(&mut self) {
        // Exited already after `finish`; otherwise a test failed: no orphaned JVM.
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The data records a script wrote, per partition, split by what became of them.
#[derive(Debug, Default)]
struct Written {
    committed: BTreeMap<i32, Vec<Entry>>,
    every: BTreeMap<i32, Vec<Entry>>,
}

impl Written {
    fn record(&mut self, partition: i32, offset: i64, value: &str, committed: bool) {
        let entry = (offset, value.to_owned());
        if committed {
            self.committed
                .entry(partition)
                .or_default()
                .push(entry.clone());
        }
        self.every.entry(partition).or_default().push(entry);
    }

    fn sort(&mut self) {
        for list in self.committed.values_mut().chain(self.every.values_mut()) {
            list.sort();
        }
    }
}

/// A transaction in flight: its sends, recorded once its fate is known.
struct Txn(Vec<(i32, i64, String)>);

impl Txn {
    async fn send(&mut self, producer: &mut TxnProducer, partition: i32, value: &str) {
        let offset = producer.send(partition, value).await;
        self.0.push((partition, offset, value.to_owned()));
    }

    fn end(self, written: &mut Written, committed: bool) {
        for (partition, offset, value) in self.0 {
            written.record(partition, offset, &value, committed);
        }
    }
}

/// Two transactional producers whose transactions interleave on partitions 0 and 1 (aborted
/// records sit between committed ones, and each producer's batches between the other's).
/// Partition 0's log ends with a commit marker, partition 1's with an abort marker. Returns
/// what was written and each partition's log end offset (the last marker's offset + 1).
async fn write_interleaved(bootstrap: &str, topic: &str) -> (Written, BTreeMap<i32, i64>) {
    let mut p = TxnProducer::start("p", bootstrap, topic).await;
    let mut q = TxnProducer::start("q", bootstrap, topic).await;
    let mut w = Written::default();

    // P's first transaction (committed) is open while Q's first (aborted) writes.
    p.begin().await;
    let mut p1 = Txn(Vec::new());
    p1.send(&mut p, 0, "p1-c-0").await;
    p1.send(&mut p, 1, "p1-c-1").await;
    q.begin().await;
    let mut q1 = Txn(Vec::new());
    q1.send(&mut q, 0, "q1-a-0").await;
    q1.send(&mut q, 1, "q1-a-1").await;
    p1.send(&mut p, 0, "p1-c-2").await;
    p.commit().await;
    p1.end(&mut w, true);
    q1.send(&mut q, 0, "q1-a-3").await;
    q.abort().await;
    q1.end(&mut w, false);

    // P's second transaction (aborted) is open while Q's second (committed) writes.
    p.begin().await;
    let mut p2 = Txn(Vec::new());
    p2.send(&mut p, 1, "p2-a-0").await;
    p2.send(&mut p, 0, "p2-a-1").await;
    q.begin().await;
    let mut q2 = Txn(Vec::new());
    q2.send(&mut q, 1, "q2-c-0").await;
    q2.send(&mut q, 0, "q2-c-1").await;
    q.commit().await;
    q2.end(&mut w, true);
    p2.send(&mut p, 1, "p2-a-2").await;
    p.abort().await;
    p2.end(&mut w, false);

    // Two transactions of one producer back to back: a committed one, then an aborted one
    // that only touches partition 1.
    p.begin().await;
    let mut p3 = Txn(Vec::new());
    p3.send(&mut p, 0, "p3-c-0").await;
    p3.send(&mut p, 1, "p3-c-1").await;
    let last_on_0 = p3.0[0].1;
    p.commit().await;
    p3.end(&mut w, true);
    q.begin().await;
    let mut q3 = Txn(Vec::new());
    q3.send(&mut q, 1, "q3-a-0").await;
    q3.send(&mut q, 1, "q3-a-1").await;
    let last_on_1 = q3.0[1].1;
    q.abort().await;
    q3.end(&mut w, false);

    p.finish().await;
    q.finish().await;
    w.sort();
    // Nothing else wrote to partition 0 after P's last record there but its commit marker, nor
    // to partition 1 after Q's last record but its abort marker.
    let log_end = BTreeMap::from([(0, last_on_0 + 2), (1, last_on_1 + 2)]);
    (w, log_end)
}

fn config(bootstrap: &str, isolation: IsolationLevel, reset: AutoOffsetReset) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .enable_auto_commit(false)
        .auto_offset_reset(reset)
        .isolation_level(isolation)
        .allow_auto_create_topics(false)
        .client_id("transactions-real-kafka")
        .build()
        .unwrap()
}

/// `end_offsets` of `partitions` once it answers `expected` (by partition index), asserting it
/// does within the timeout. Kafka answers EndTxn once the transaction is prepared and writes
/// the markers after (`TransactionMarkerChannelManager`), so right after `commit`/`abort` the
/// offsets a marker moves may still be short of it; the expected value is exact all the same.
async fn end_offsets_settle(
    consumer: &mut Consumer,
    partitions: Vec<TopicPartition>,
    expected: &BTreeMap<i32, i64>,
) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let ends: BTreeMap<i32, i64> = consumer
            .end_offsets(partitions.clone(), TIMEOUT)
            .await
            .unwrap()
            .into_iter()
            .map(|(tp, o)| (tp.partition, o))
            .collect();
        if ends == *expected || Instant::now() >= deadline {
            assert_eq!(ends, *expected);
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn partitions(topic: &str) -> Vec<TopicPartition> {
    (0..2).map(|p| TopicPartition::new(topic, p)).collect()
}

/// Polls until every partition's position reaches `until` (or the deadline), returning what
/// was delivered, per partition, in delivery order.
async fn consume_until(
    consumer: &mut Consumer,
    topic: &str,
    until: &BTreeMap<i32, i64>,
) -> BTreeMap<i32, Vec<Entry>> {
    let mut got: BTreeMap<i32, Vec<Entry>> = BTreeMap::new();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        for record in consumer.poll(Duration::from_millis(200)).await.unwrap() {
            let value = record.value.as_ref().expect("a data record has a value");
            got.entry(record.partition)
                .or_default()
                .push((record.offset, String::from_utf8(value.to_vec()).unwrap()));
        }
        let mut reached = true;
        for (&partition, &end) in until {
            let tp = TopicPartition::new(topic, partition);
            let position = consumer.position(&tp, TIMEOUT).await.unwrap();
            assert!(
                position <= end,
                "partition {partition}: position {position} is past {end} (delivered {got:?})"
            );
            reached &= position == end;
        }
        if reached {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "positions never reached {until:?} (delivered {got:?})"
        );
    }
}

/// Polls for `how_long`, asserting nothing is delivered.
async fn assert_nothing_more(consumer: &mut Consumer, how_long: Duration) {
    let deadline = Instant::now() + how_long;
    while Instant::now() < deadline {
        let records = consumer.poll(Duration::from_millis(200)).await.unwrap();
        assert!(
            records.is_empty(),
            "unexpected records: {:?}",
            records
                .into_iter()
                .map(|r| (r.partition, r.offset))
                .collect::<Vec<_>>()
        );
    }
}

#[tokio::test]
async fn read_committed_returns_only_committed_records() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("txn-committed");
    create_topic(&mut admin, &topic, 2).await;
    let (written, log_end) = write_interleaved(&bootstrap, &topic).await;

    let mut consumer = Consumer::new(config(
        &bootstrap,
        IsolationLevel::ReadCommitted,
        AutoOffsetReset::Earliest,
    ))
    .unwrap();
    consumer.assign(partitions(&topic)).await.unwrap();
    // With no transaction open, read_committed's end offsets are the log end offsets.
    end_offsets_settle(&mut consumer, partitions(&topic), &log_end).await;

    let got = consume_until(&mut consumer, &topic, &log_end).await;
    assert_eq!(
        got, written.committed,
        "read_committed must deliver exactly the committed records, in offset order"
    );
    assert_nothing_more(&mut consumer, Duration::from_secs(1)).await;
    for tp in partitions(&topic) {
        assert_eq!(
            consumer.position(&tp, TIMEOUT).await.unwrap(),
            log_end[&tp.partition],
            "{tp}: the position ends past the last marker"
        );
    }
    consumer.close(TIMEOUT).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}

#[tokio::test]
async fn read_uncommitted_returns_aborted_records_but_no_markers() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("txn-uncommitted");
    create_topic(&mut admin, &topic, 2).await;
    let (written, log_end) = write_interleaved(&bootstrap, &topic).await;
    assert_ne!(written.every, written.committed);

    // The default isolation level is read_uncommitted.
    let mut consumer = Consumer::new(
        ConsumerConfig::builder()
            .bootstrap_servers([bootstrap.as_str()])
            .enable_auto_commit(false)
            .auto_offset_reset(AutoOffsetReset::Earliest)
            .client_id("transactions-real-kafka")
            .build()
            .unwrap(),
    )
    .unwrap();
    consumer.assign(partitions(&topic)).await.unwrap();
    let got = consume_until(&mut consumer, &topic, &log_end).await;
    assert_eq!(
        got, written.every,
        "read_uncommitted must deliver every data record (aborted ones too), no marker"
    );
    assert_nothing_more(&mut consumer, Duration::from_secs(1)).await;
    consumer.close(TIMEOUT).await.unwrap();
    delete_topic(&mut admin, &topic).await;
}

#[tokio::test]
async fn read_committed_stops_at_the_last_stable_offset_of_an_open_transaction() {
    let Some(bootstrap) = bootstrap() else { return };
    let mut admin = client(bootstrap.clone());
    let topic = unique("txn-open");
    create_topic(&mut admin, &topic, 2).await;
    let tp0 = TopicPartition::new(topic.as_str(), 0);

    let mut done = TxnProducer::start("committer", &bootstrap, &topic).await;
    let mut open = TxnProducer::start("open", &bootstrap, &topic).await;
    done.begin().await;
    let c0 = done.send(0, "c-0").await;
    let c1 = done.send(1, "c-1").await;
    done.commit().await;

    // The open transaction starts on partition 0 and stays open (the producer waits).
    open.begin().await;
    let first_open = open.send(0, "open-0").await;
    let open_1 = open.send(0, "open-1").await;
    open.hold().await;

    // Committed records behind the open one on partition 0, and beside it on partition 1.
    done.begin().await;
    let c2 = done.send(1, "c-2").await;
    let behind = done.send(0, "c-behind").await;
    done.commit().await;
    done.finish().await;
    assert!(c0 < first_open && first_open < open_1 && open_1 < behind);
    let last_stable = first_open;
    // Partition 0's high watermark: past the committer's marker, the last write there.
    let high_watermark = behind + 2;
    let end_1 = c2 + 2;

    // read_uncommitted sees the high watermark, as a reference.
    let mut uncommitted = Consumer::new(config(
        &bootstrap,
        IsolationLevel::ReadUncommitted,
        AutoOffsetReset::Latest,
    ))
    .unwrap();
    end_offsets_settle(
        &mut uncommitted,
        partitions(&topic),
        &BTreeMap::from([(0, high_watermark), (1, end_1)]),
    )
    .await;
    uncommitted.assign([tp0.clone()]).await.unwrap();
    assert_eq!(
        uncommitted.position(&tp0, TIMEOUT).await.unwrap(),
        high_watermark
    );
    uncommitted.close(TIMEOUT).await.unwrap();

    let mut consumer = Consumer::new(config(
        &bootstrap,
        IsolationLevel::ReadCommitted,
        AutoOffsetReset::Earliest,
    ))
    .unwrap();
    consumer.assign(partitions(&topic)).await.unwrap();
    // end_offsets answers the last stable offset, not the high watermark.
    end_offsets_settle(
        &mut consumer,
        partitions(&topic),
        &BTreeMap::from([(0, last_stable), (1, end_1)]),
    )
    .await;

    // Partition 1's committed records arrive; partition 0 stops before the open transaction.
    let until = BTreeMap::from([(0, last_stable), (1, end_1)]);
    let got = consume_until(&mut consumer, &topic, &until).await;
    let expected = BTreeMap::from([
        (0, vec![(c0, "c-0".to_owned())]),
        (1, vec![(c1, "c-1".to_owned()), (c2, "c-2".to_owned())]),
    ]);
    assert_eq!(got, expected);
    // Held at the last stable offset for as long as the transaction is open.
    assert_nothing_more(&mut consumer, Duration::from_secs(2)).await;
    assert_eq!(consumer.position(&tp0, TIMEOUT).await.unwrap(), last_stable);

    // seek_to_end lands on the last stable offset.
    consumer.seek_to_end([tp0.clone()]).await.unwrap();
    assert_eq!(consumer.position(&tp0, TIMEOUT).await.unwrap(), last_stable);

    // So does auto.offset.reset=latest.
    let mut latest = Consumer::new(config(
        &bootstrap,
        IsolationLevel::ReadCommitted,
        AutoOffsetReset::Latest,
    ))
    .unwrap();
    latest.assign([tp0.clone()]).await.unwrap();
    assert_eq!(latest.position(&tp0, TIMEOUT).await.unwrap(), last_stable);

    // The transaction commits: the held records arrive, in order, then the committed one
    // behind them, and the position reaches the log end, past the new commit marker (the last
    // write to partition 0).
    open.release();
    open.commit().await;
    open.finish().await;
    let log_end = high_watermark + 1;
    let held = vec![
        (first_open, "open-0".to_owned()),
        (open_1, "open-1".to_owned()),
        (behind, "c-behind".to_owned()),
    ];
    for consumer in [&mut consumer, &mut latest] {
        // No transaction open: the log end.
        end_offsets_settle(consumer, vec![tp0.clone()], &BTreeMap::from([(0, log_end)])).await;
        let until = BTreeMap::from([(0, log_end)]);
        let got = consume_until(consumer, &topic, &until).await;
        assert_eq!(got, BTreeMap::from([(0, held.clone())]));
        assert_nothing_more(consumer, Duration::from_millis(500)).await;
        consumer.close(TIMEOUT).await.unwrap();
    }
    delete_topic(&mut admin, &topic).await;
}
