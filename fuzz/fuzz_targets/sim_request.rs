//! The simulated broker's request path as `sim serve` runs it: arbitrary bytes on a fresh TCP
//! connection to a real-mode broker (framing, request header, every API it serves, SASL off).
//!
//! Properties: the broker answers with responses or closes the connection, within a time
//! bound (except for requests Kafka itself may hold, see [`LONG_POLL_APIS`]: once every
//! request before the first of those is answered, silence is allowed), and never panics (a
//! panicking connection task would leave the canary unanswered or abort the process); live
//! allocation stays under the 100 MiB request limit plus headroom (a
//! lying length prefix may reserve at most that, as in Kafka's `NetworkReceive`); another
//! connection opened beforehand still gets a correct answer afterwards; the log of the
//! pre-created partition keeps `log start <= high watermark <= log end`, and its end never
//! moves back.
#![no_main]

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use kafka_consumer_fuzz::with_alloc_cap;
use libfuzzer_sys::fuzz_target;
use sim::config::ClusterConfig;
use sim::real::{LocalCluster, LocalClusterOptions};

const ALLOC_CAP_BYTES: usize = 160 * 1024 * 1024;
/// How long a connection may take to answer and close after the client's input ends.
const ANSWER_BOUND: Duration = Duration::from_secs(5);
/// How long to wait for more once every request before a held one ([`LONG_POLL_APIS`]) is
/// answered.
const LONG_POLL_PATIENCE: Duration = Duration::from_millis(200);
const TOPIC: &str = "fuzz";

/// Requests a Kafka broker holds until a time the request itself names, so no bound on the
/// answer applies: Fetch (`DelayedFetch`, up to `max_wait_ms`), JoinGroup (`DelayedJoin`, up
/// to the rebalance timeout) and SyncGroup (a follower waits for the leader's assignment). A
/// client that half-closes its connection does not cancel them: Kafka's `Selector` keeps a
/// closing channel until its received requests are answered.
const LONG_POLL_APIS: [i16; 3] = [1, 11, 14];

/// The position among the input's whole frames of the first one whose api key is one of
/// [`LONG_POLL_APIS`]: Kafka answers a connection's requests in order, so once that many
/// answers came back, silence is the held request waiting, not a hang. Frames are read as the
/// broker reads them (a 4-byte length, then the api key); the walk stops at a length that
/// does not fit, where the broker closes.
fn first_long_poll(data: &[u8]) -> Option<usize> {
    let mut rest = data;
    let mut index = 0;
    while rest.len() >= 6 {
        let size = i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        let size = usize::try_from(size)
            .ok()
            .filter(|s| *s >= 2 && 4 + s <= rest.len())?;
        if LONG_POLL_APIS.contains(&i16::from_be_bytes([rest[4], rest[5]])) {
            return Some(index);
        }
        rest = &rest[4 + size..];
        index += 1;
    }
    None
}

/// Counts whole answers (a 4-byte length, then that many bytes) as their bytes arrive.
#[derive(Default)]
struct AnswerCounter {
    /// The length prefix read so far of the answer under way.
    prefix: Vec<u8>,
    /// Body bytes still to come of the answer under way.
    remaining: usize,
    whole: usize,
}

impl AnswerCounter {
    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.remaining > 0 {
                let take = self.remaining.min(bytes.len());
                self.remaining -= take;
                bytes = &bytes[take..];
                if self.remaining == 0 {
                    self.whole += 1;
                }
                continue;
            }
            let take = (4 - self.prefix.len()).min(bytes.len());
            self.prefix.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.prefix.len() == 4 {
                let size = i32::from_be_bytes([
                    self.prefix[0],
                    self.prefix[1],
                    self.prefix[2],
                    self.prefix[3],
                ]);
                self.prefix.clear();
                match usize::try_from(size) {
                    Ok(0) => self.whole += 1,
                    Ok(size) => self.remaining = size,
                    // Not an answer the broker would send; count nothing more.
                    Err(_) => return,
                }
            }
        }
    }
}

struct Broker {
    _runtime: tokio::runtime::Runtime,
    cluster: LocalCluster,
    address: SocketAddr,
    canary: Mutex<(TcpStream, i32)>,
}

fn broker() -> &'static Broker {
    static BROKER: OnceLock<Broker> = OnceLock::new();
    BROKER.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let mut config = ClusterConfig::default();
        config.topics.insert(TOPIC.to_owned(), 2);
        let cluster = runtime
            .block_on(LocalCluster::start(LocalClusterOptions {
                brokers: 1,
                base_port: 0,
                config,
                group_shards: None,
            }))
            .expect("the broker binds a loopback port");
        let address: SocketAddr = cluster.bootstrap_servers()[0].parse().unwrap();
        let canary = TcpStream::connect(address).expect("canary connects");
        canary.set_read_timeout(Some(ANSWER_BOUND)).unwrap();
        Broker {
            _runtime: runtime,
            cluster,
            address,
            canary: Mutex::new((canary, 0)),
        }
    })
}

/// An ApiVersions v0 request (header v1, client id "canary").
fn api_versions_request(correlation_id: i32) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&18i16.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&correlation_id.to_be_bytes());
    body.extend_from_slice(&6i16.to_be_bytes());
    body.extend_from_slice(b"canary");
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

/// The canary connection still answers ApiVersions correctly.
fn check_canary(broker: &Broker) {
    let mut canary = broker.canary.lock().unwrap();
    let (stream, correlation_id) = &mut *canary;
    *correlation_id = correlation_id.wrapping_add(1);
    stream
        .write_all(&api_versions_request(*correlation_id))
        .expect("canary writes");
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).expect("canary gets an answer");
    let size = i32::from_be_bytes(size);
    assert!(
        (6..1 << 20).contains(&size),
        "canary answer of {size} bytes"
    );
    let mut body = vec![0u8; size as usize];
    stream
        .read_exact(&mut body)
        .expect("canary reads its answer");
    assert_eq!(
        &body[..4],
        &correlation_id.to_be_bytes(),
        "canary's correlation id"
    );
    assert_eq!(&body[4..6], &[0, 0], "canary's ApiVersions error code");
}

/// (log start, high watermark, log end) of each partition of the pre-created topic.
fn log_offsets(broker: &Broker) -> Vec<(i64, i64, i64)> {
    let state = broker.cluster.controller().read();
    (0..2)
        .filter_map(|p| state.partition(TOPIC, p))
        .map(|p| {
            (
                p.log.log_start_offset(),
                p.log.high_watermark(),
                p.log.log_end_offset(),
            )
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let broker = broker();
    let before = log_offsets(broker);
    with_alloc_cap(ALLOC_CAP_BYTES, || {
        let mut stream = TcpStream::connect(broker.address).expect("connects");
        // A held request is left waiting once the requests before it are answered.
        let long_poll = first_long_poll(data);
        // The broker may close mid-write (a bad frame): that is an answer, not a failure.
        let _ = stream.write_all(data);
        let _ = stream.shutdown(Shutdown::Write);
        let started = Instant::now();
        let mut answer = [0u8; 64 * 1024];
        let mut answers = AnswerCounter::default();
        loop {
            let waiting_on_held = long_poll.is_some_and(|k| answers.whole >= k);
            let patience = if waiting_on_held {
                LONG_POLL_PATIENCE
            } else {
                ANSWER_BOUND
            };
            stream.set_read_timeout(Some(patience)).unwrap();
            match stream.read(&mut answer) {
                Ok(0) => break,
                Ok(n) => answers.feed(&answer[..n]),
                Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
                // libFuzzer's timers interrupt the read; that is neither answer nor silence.
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e)
                    if waiting_on_held
                        && matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    break
                }
                Err(e) => panic!(
                    "no answer and no close within {patience:?} ({} whole answers, a held \
                     request at {long_poll:?}): {e}",
                    answers.whole
                ),
            }
            assert!(started.elapsed() < 2 * ANSWER_BOUND, "answers without end");
        }
    });
    check_canary(broker);
    let after = log_offsets(broker);
    if after.len() != before.len() {
        // A well-formed DeleteTopics or CreatePartitions is an answer too: start over.
        broker.cluster.controller().update(|state| {
            let _ = state.delete_topic(TOPIC);
            state.create_topic(TOPIC, 2, 1, None).expect("recreated");
        });
        return;
    }
    for ((start, hw, end), (_, _, end_before)) in after.iter().zip(&before) {
        assert!(start <= hw && hw <= end, "log offsets {start} {hw} {end}");
        assert!(
            end >= end_before,
            "log end moved back from {end_before} to {end}"
        );
    }
});
