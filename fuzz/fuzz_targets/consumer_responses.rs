//! The consumer's whole response path against a broker that lies: a real `Consumer` (its
//! background task, request managers and application side) consumes from a real-mode simulated
//! cluster whose broker rewrites chosen responses of every API the consumer uses — at whatever
//! version the consumer negotiated — before sending them. The lies reach the response decoder
//! and, when they still decode, the managers' handling (coordinator, membership of both group
//! protocols, commits, offsets, metadata, fetches, ApiVersions).
//!
//! Input: a control byte (bits 0-1 the mode: manual assignment, a classic group or a
//! consumer-protocol group; bit 2 `read_committed`; bit 3 auto-commit; bit 4 lz4-compressed
//! data), then up to [`MAX_LIES`] lies of 6 bytes plus a payload each: which API
//! ([`APIS`]), which of its responses (0 = the first), what to do (xor, overwrite, truncate,
//! insert, replace: [`Lie`]), where (a 16-bit position, modulo the body's length) and the
//! payload's length, then the payload.
//!
//! Properties: no panic in any thread; live allocation under the cap; every `poll` returns
//! within its timeout plus [`SLACK`] and `close` within its own (the application side is never
//! blocked, whatever the broker says); and the consumer stays usable: once the broker is honest
//! again after lies that did not decode (protocol errors: the connection is dropped, the
//! request retried), a manually assigned consumer either reads the records appended after the
//! lies or reports a typed error from `poll`. Lies that decode may be believed with lasting
//! effect, as by Java's client ([`believable`]), and a group member is held to the first two
//! only, as a lying group coordinator may legitimately leave it with nothing to fetch (an
//! assignment of partitions that do not exist stands until the next rebalance, as in Java).
//!
//! `FUZZ_VERBOSE=1` prints, per input, whether a believable lie was told, how long the honest
//! phase took, the error and the records seen, and how long `close` took.
#![no_main]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_consumer::records::{Compression, NewRecord, RecordBatchBuilder};
use kafka_consumer::types::TopicPartition;
use kafka_consumer::{Consumer, ConsumerConfig};
use kafka_consumer_fuzz::{with_alloc_cap, Control};
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatResponse, FetchResponse, FindCoordinatorResponse, HeartbeatResponse,
    JoinGroupResponse, LeaveGroupResponse, ListOffsetsResponse, MetadataResponse,
    OffsetCommitResponse, OffsetFetchResponse, OffsetForLeaderEpochResponse, SyncGroupResponse,
};
use kafka_protocol::protocol::Decodable;
use libfuzzer_sys::fuzz_target;
use sim::config::ClusterConfig;
use sim::fault::{ResponseRewriter, ResponseToRewrite};
use sim::group::classic::ClassicGroupConfig;
use sim::group::consumer::ConsumerGroupConfig;
use sim::group::shard::GroupCoordinatorFactory;
use sim::real::{LocalCluster, LocalClusterOptions};

/// Room for the consumer's fetch buffers (`fetch.max.bytes` is set small below), a 64 MiB
/// decompressed batch twice over, the broker and the runtimes.
const ALLOC_CAP_BYTES: usize = 256 * 1024 * 1024;
/// Most lies per input.
const MAX_LIES: usize = 8;
/// How long the broker may lie, from the consumer's creation: it is honest again as soon as
/// every lie was told, or after this (a lie about a response that never comes is not told).
const LYING: Duration = Duration::from_millis(600);
/// How long an honest broker's records may take to arrive after the lies.
const RECOVERY: Duration = Duration::from_secs(5);
/// How long a group member, or a consumer that may have believed a lie, consumes after the
/// lies (no liveness required of them).
const GROUP_TAIL: Duration = Duration::from_secs(2);
/// `poll`'s timeout in this target.
const POLL_TIMEOUT: Duration = Duration::from_millis(50);
/// Scheduling slack on a loaded 2-core machine under AddressSanitizer.
const SLACK: Duration = Duration::from_secs(5);
/// `close`'s timeout in this target.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);
const PARTITIONS: i32 = 2;

/// The APIs the consumer sends, by the index a lie names.
const APIS: [i16; 13] = [
    18, // ApiVersions
    3,  // Metadata
    10, // FindCoordinator
    1,  // Fetch
    2,  // ListOffsets
    23, // OffsetForLeaderEpoch
    9,  // OffsetFetch
    8,  // OffsetCommit
    11, // JoinGroup
    14, // SyncGroup
    12, // Heartbeat
    13, // LeaveGroup
    68, // ConsumerGroupHeartbeat
];

#[derive(Debug, Clone, Copy)]
enum Mode {
    Assign,
    Classic,
    Consumer,
}

/// What a lie does to a response body.
#[derive(Debug, Clone)]
enum Lie {
    /// Xors the payload into the body at the position (wrapping): flipped bits in fields.
    Xor,
    /// Writes the payload over the body at the position (stopping at the end): other values.
    Overwrite,
    /// Cuts the body at the position.
    Truncate,
    /// Inserts the payload at the position.
    Insert,
    /// Sends the payload instead of the body.
    Replace,
}

#[derive(Debug, Clone)]
struct ScheduledLie {
    api_key: i16,
    /// Which response of that API (0 = the first one this input).
    nth: u32,
    lie: Lie,
    position: usize,
    payload: Vec<u8>,
}

impl ScheduledLie {
    fn apply(&self, body: &[u8]) -> Bytes {
        let mut out = body.to_vec();
        let at = if out.is_empty() {
            0
        } else {
            self.position % out.len()
        };
        match self.lie {
            Lie::Xor if !out.is_empty() => {
                for (i, b) in self.payload.iter().enumerate() {
                    let index = (at + i) % out.len();
                    out[index] ^= b;
                }
            }
            Lie::Xor => {}
            Lie::Overwrite => {
                for (slot, b) in out[at..].iter_mut().zip(&self.payload) {
                    *slot = *b;
                }
            }
            Lie::Truncate => out.truncate(at),
            Lie::Insert => {
                out.splice(at..at, self.payload.iter().copied());
            }
            Lie::Replace => out.clone_from(&self.payload),
        }
        Bytes::from(out)
    }
}

/// The lies of the input running now, and how many responses of each API went out.
#[derive(Default)]
struct Script {
    lying: bool,
    lies: Vec<ScheduledLie>,
    seen: Vec<(i16, u32)>,
    /// A lie told decoded as a response (ApiVersions lies always count): the consumer may
    /// believe it, as Java would, with lasting effects. [`believable`] says why.
    believable_told: bool,
}

/// Whether a consumer may believe `body` as the response of `api_key` at `version`: it
/// decodes (leftover bytes are not checked by Kafka's clients either), or it is an ApiVersions
/// response, which a client also re-reads at v0 when it does not parse.
///
/// A believed lie may legitimately outlive the broker's honesty: a leader epoch from the
/// future is kept over the honest, older one of every later Metadata response (Java's
/// `Metadata.updateLatestMetadata` ignores a partition's older epoch), an ApiVersions table
/// stays for the connection's life, a lying assignment stands until the next rebalance. A lie
/// that does not decode is a protocol error: the connection is closed and the request
/// retried, so it must leave no trace.
fn believable(api_key: i16, version: i16, body: &Bytes) -> bool {
    fn decodes<M: Decodable>(body: &Bytes, version: i16) -> bool {
        M::decode(&mut body.clone(), version).is_ok()
    }
    match api_key {
        18 => true,
        3 => decodes::<MetadataResponse>(body, version),
        10 => decodes::<FindCoordinatorResponse>(body, version),
        1 => decodes::<FetchResponse>(body, version),
        2 => decodes::<ListOffsetsResponse>(body, version),
        23 => decodes::<OffsetForLeaderEpochResponse>(body, version),
        9 => decodes::<OffsetFetchResponse>(body, version),
        8 => decodes::<OffsetCommitResponse>(body, version),
        11 => decodes::<JoinGroupResponse>(body, version),
        14 => decodes::<SyncGroupResponse>(body, version),
        12 => decodes::<HeartbeatResponse>(body, version),
        13 => decodes::<LeaveGroupResponse>(body, version),
        68 => decodes::<ConsumerGroupHeartbeatResponse>(body, version),
        // Not an API the consumer sends ([`APIS`]).
        _ => false,
    }
}

impl Script {
    fn rewrite(&mut self, response: ResponseToRewrite<'_>) -> Option<Bytes> {
        if !self.lying {
            return None;
        }
        let nth = match self
            .seen
            .iter_mut()
            .find(|(key, _)| *key == response.api_key)
        {
            Some((_, count)) => {
                *count += 1;
                *count - 1
            }
            None => {
                self.seen.push((response.api_key, 1));
                0
            }
        };
        let index = self
            .lies
            .iter()
            .position(|lie| lie.api_key == response.api_key && lie.nth == nth)?;
        let lie = self.lies.swap_remove(index).apply(response.body);
        self.believable_told |= believable(response.api_key, response.version, &lie);
        Some(lie)
    }

    /// Whether every lie has been told.
    fn told(&self) -> bool {
        self.lies.is_empty()
    }
}

struct World {
    /// Runs the cluster's brokers.
    _broker_runtime: tokio::runtime::Runtime,
    /// Runs the application side's calls.
    app_runtime: tokio::runtime::Runtime,
    cluster: LocalCluster,
    script: Arc<Mutex<Script>>,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let broker_runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let factory = GroupCoordinatorFactory {
            classic: ClassicGroupConfig {
                group_initial_rebalance_delay_ms: 0,
                group_min_session_timeout_ms: 1_000,
                ..ClassicGroupConfig::default()
            },
            consumer: ConsumerGroupConfig {
                heartbeat_interval_ms: 100,
                session_timeout_ms: 6_000,
                ..ConsumerGroupConfig::default()
            },
            ..GroupCoordinatorFactory::default()
        };
        let cluster = broker_runtime
            .block_on(LocalCluster::start(LocalClusterOptions {
                brokers: 1,
                base_port: 0,
                config: ClusterConfig::default(),
                group_shards: Some(Arc::new(factory)),
            }))
            .expect("the broker binds a loopback port");
        let script = Arc::new(Mutex::new(Script::default()));
        let shared = Arc::clone(&script);
        let rewriter: ResponseRewriter =
            Arc::new(move |response| shared.lock().unwrap().rewrite(response));
        cluster.faults().set_response_rewriter(Some(rewriter));
        let app_runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        World {
            _broker_runtime: broker_runtime,
            app_runtime,
            cluster,
            script,
        }
    })
}

struct Input {
    mode: Mode,
    read_committed: bool,
    auto_commit: bool,
    lz4: bool,
    lies: Vec<ScheduledLie>,
}

fn parse(data: &[u8]) -> Input {
    let mut control = Control::new(data);
    let flags = control.u8();
    let mode = match flags & 3 {
        1 | 3 => Mode::Classic,
        2 => Mode::Consumer,
        _ => Mode::Assign,
    };
    let mut lies = Vec::new();
    while lies.len() < MAX_LIES && !control.is_empty() {
        let api_key = APIS[usize::from(control.u8()) % APIS.len()];
        let nth = u32::from(control.u8() % 4);
        let lie = match control.u8() % 5 {
            0 => Lie::Xor,
            1 => Lie::Overwrite,
            2 => Lie::Truncate,
            3 => Lie::Insert,
            _ => Lie::Replace,
        };
        let position = usize::from(control.u16());
        let len = usize::from(control.u8());
        let payload = control.take(len).to_vec();
        lies.push(ScheduledLie {
            api_key,
            nth,
            lie,
            position,
            payload,
        });
    }
    Input {
        mode,
        read_committed: flags & 4 != 0,
        auto_commit: flags & 8 != 0,
        lz4: flags & 16 != 0,
        lies,
    }
}

/// One batch of `values` for the topic's partitions.
fn batch(values: &[String], lz4: bool) -> Bytes {
    let compression = if lz4 {
        Compression::Lz4
    } else {
        Compression::None
    };
    let mut builder = RecordBatchBuilder::new(0).compression(compression);
    for value in values {
        builder
            .append(&NewRecord {
                timestamp_ms: 1_000,
                key: None,
                value: Some(value.as_bytes()),
                headers: &[],
            })
            .expect("a small record");
    }
    builder.build().expect("a small batch")
}

fn config(input: &Input, bootstrap: &str, group: &str) -> ConsumerConfig {
    let mut pairs: Vec<(&str, String)> = vec![
        ("bootstrap.servers", bootstrap.to_owned()),
        ("client.id", group.to_owned()),
        ("auto.offset.reset", "earliest".to_owned()),
        (
            "isolation.level",
            if input.read_committed {
                "read_committed"
            } else {
                "read_uncommitted"
            }
            .to_owned(),
        ),
        ("fetch.max.wait.ms", "50".to_owned()),
        ("fetch.max.bytes", "1048576".to_owned()),
        ("metadata.max.age.ms", "500".to_owned()),
        ("request.timeout.ms", "1000".to_owned()),
        ("default.api.timeout.ms", "1000".to_owned()),
        ("retry.backoff.ms", "10".to_owned()),
        ("retry.backoff.max.ms", "100".to_owned()),
        ("reconnect.backoff.ms", "10".to_owned()),
        ("reconnect.backoff.max.ms", "100".to_owned()),
        ("socket.connection.setup.timeout.ms", "500".to_owned()),
        ("socket.connection.setup.timeout.max.ms", "1000".to_owned()),
    ];
    match input.mode {
        Mode::Assign => {}
        Mode::Classic | Mode::Consumer => {
            let protocol = if matches!(input.mode, Mode::Classic) {
                "classic"
            } else {
                "consumer"
            };
            pairs.extend([
                ("group.id", group.to_owned()),
                ("group.protocol", protocol.to_owned()),
                ("enable.auto.commit", input.auto_commit.to_string()),
                ("auto.commit.interval.ms", "100".to_owned()),
            ]);
            if matches!(input.mode, Mode::Classic) {
                pairs.extend([
                    ("session.timeout.ms", "6000".to_owned()),
                    ("heartbeat.interval.ms", "100".to_owned()),
                ]);
            }
        }
    }
    ConsumerConfig::from_pairs(pairs).expect("a valid configuration")
}

/// Polls once, checking that the application side was not blocked; records the values seen.
async fn poll_once(
    consumer: &mut Consumer,
    seen: &mut BTreeSet<(i32, String)>,
) -> Result<(), kafka_consumer::Error> {
    let started = Instant::now();
    let result = consumer.poll(POLL_TIMEOUT).await;
    let took = started.elapsed();
    assert!(
        took < POLL_TIMEOUT + SLACK,
        "poll({POLL_TIMEOUT:?}) blocked for {took:?}"
    );
    for record in result? {
        let value = String::from_utf8_lossy(record.value.as_deref().unwrap_or_default());
        seen.insert((record.partition, value.into_owned()));
    }
    Ok(())
}

async fn run(world: &World, input: &Input, n: u64) {
    let topic = format!("fuzz-{n}");
    let group = format!("fuzz-group-{n}");
    world.cluster.controller().update(|state| {
        state
            .create_topic(&topic, PARTITIONS, 1, None)
            .expect("a new topic");
    });
    for partition in 0..PARTITIONS {
        let values: Vec<String> = (0..3).map(|i| format!("before-{partition}-{i}")).collect();
        world
            .cluster
            .controller()
            .append(&topic, partition, batch(&values, input.lz4))
            .expect("appended");
    }
    let bootstrap = world.cluster.bootstrap_servers()[0].clone();
    {
        let mut script = world.script.lock().unwrap();
        *script = Script {
            lying: true,
            lies: input.lies.clone(),
            ..Script::default()
        };
    }
    let mut consumer =
        Consumer::new(config(input, &bootstrap, &group)).expect("the consumer starts");
    match input.mode {
        Mode::Assign => consumer
            .assign((0..PARTITIONS).map(|p| TopicPartition::new(topic.as_str(), p)))
            .await
            .expect("a valid assignment"),
        Mode::Classic | Mode::Consumer => consumer
            .subscribe([topic.as_str()])
            .await
            .expect("a valid subscription"),
    }
    let mut seen = BTreeSet::new();
    let started = Instant::now();
    while started.elapsed() < LYING && !world.script.lock().unwrap().told() {
        let _ = poll_once(&mut consumer, &mut seen).await;
    }
    let believable_told = {
        let mut script = world.script.lock().unwrap();
        script.lying = false;
        script.believable_told
    };
    let sentinels: BTreeSet<(i32, String)> = (0..PARTITIONS)
        .map(|partition| (partition, format!("after-{partition}")))
        .collect();
    for (partition, value) in &sentinels {
        world
            .cluster
            .controller()
            .append(&topic, *partition, batch(&[value.clone()], input.lz4))
            .expect("appended");
    }
    let honest_since = Instant::now();
    let mut error = None;
    match input.mode {
        Mode::Assign if !believable_told => {
            while !sentinels.is_subset(&seen) && honest_since.elapsed() < RECOVERY {
                if let Err(e) = poll_once(&mut consumer, &mut seen).await {
                    error = Some(e);
                    if honest_since.elapsed() > Duration::from_secs(1) {
                        break;
                    }
                }
            }
            assert!(
                sentinels.is_subset(&seen) || error.is_some(),
                "an honest broker for {RECOVERY:?} after lies that did not decode, and the \
                 consumer neither read the records appended after them nor reported an \
                 error; saw {seen:?}"
            );
        }
        Mode::Assign | Mode::Classic | Mode::Consumer => {
            while !sentinels.is_subset(&seen) && honest_since.elapsed() < GROUP_TAIL {
                let _ = poll_once(&mut consumer, &mut seen).await;
            }
        }
    }
    if std::env::var_os("FUZZ_VERBOSE").is_some() {
        eprintln!(
            "lies: {} believable, recovery {:?}, error {error:?}, seen {seen:?}",
            if believable_told { "some" } else { "none" },
            honest_since.elapsed()
        );
    }
    let started = Instant::now();
    let _ = consumer.close(CLOSE_TIMEOUT).await;
    let took = started.elapsed();
    if std::env::var_os("FUZZ_VERBOSE").is_some() {
        eprintln!("close took {took:?}");
    }
    assert!(
        took < CLOSE_TIMEOUT + SLACK,
        "close({CLOSE_TIMEOUT:?}) took {took:?}"
    );
    drop(consumer);
    world.cluster.controller().update(|state| {
        let _ = state.delete_topic(&topic);
    });
}

fuzz_target!(|data: &[u8]| {
    static INPUTS: AtomicU64 = AtomicU64::new(0);
    let world = world();
    let input = parse(data);
    let n = INPUTS.fetch_add(1, Ordering::Relaxed);
    with_alloc_cap(ALLOC_CAP_BYTES, || {
        world.app_runtime.block_on(run(world, &input, n));
    });
});
