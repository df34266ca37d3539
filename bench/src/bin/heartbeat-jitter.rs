//! Heartbeat jitter of a consumer in a group, observed from outside the consumer.
//!
//! `heartbeat-jitter run --upstream H:P --topic T [--protocol classic|consumer]
//! [--heartbeat-ms 100] [--seconds 30] [--consumer-bin PATH]` starts a TCP proxy in front of
//! the broker, then the consumer (`PATH consume ...`, this binary by default: pass a binary
//! built against another version of the crate to compare versions) as a child process that
//! reads the topic from the beginning again and again through the proxy. The proxy timestamps
//! every Heartbeat (API key 12) and ConsumerGroupHeartbeat (68) request frame as it arrives
//! from the consumer and prints the intervals between them. Metadata and FindCoordinator
//! responses are rewritten so the broker's advertised port is the proxy's: every connection of
//! the consumer goes through it.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig};
use kafka_protocol::messages::{ApiKey, FindCoordinatorResponse, MetadataResponse, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};

const HEARTBEAT: i16 = 12;
const CONSUMER_GROUP_HEARTBEAT: i16 = 68;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("consume") => consume(&args[1..]),
        _ => Err(
            "usage: heartbeat-jitter run|consume --upstream|--bootstrap H:P --topic T \
                  [--protocol classic|consumer] [--heartbeat-ms N] [--seconds N] \
                  [--consumer-bin PATH] [--group G]"
                .into(),
        ),
    };
    if let Err(e) = result {
        eprintln!("heartbeat-jitter: {e}");
        std::process::exit(1);
    }
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn flag_or<'a>(args: &'a [String], name: &str, default: &'a str) -> &'a str {
    flag(args, name).unwrap_or(default)
}

/// One heartbeat request seen by the proxy.
struct Beat {
    at: Instant,
    api_key: i16,
    /// Request to response, filled when the response passes.
    answered_in: Option<Duration>,
}

#[derive(Default)]
struct Shared {
    beats: Vec<Beat>,
}

fn run(args: &[String]) -> Result<(), String> {
    let upstream = flag(args, "--upstream").ok_or("--upstream H:P is required")?;
    let topic = flag(args, "--topic").ok_or("--topic is required")?;
    let protocol = flag_or(args, "--protocol", "classic");
    let heartbeat_ms = flag_or(args, "--heartbeat-ms", "100");
    let seconds = flag_or(args, "--seconds", "30");
    let own = std::env::current_exe().map_err(|e| e.to_string())?;
    let consumer_bin = flag(args, "--consumer-bin").map(Into::into).unwrap_or(own);

    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let proxy_port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let upstream_port: i32 = upstream
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .ok_or("--upstream needs a port")?;
    let shared = Arc::new(Mutex::new(Shared::default()));
    {
        let shared = shared.clone();
        let upstream = upstream.to_string();
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let shared = shared.clone();
                thread::spawn(move || {
                    proxy(client, server, shared, upstream_port, proxy_port.into())
                });
            }
        });
    }

    let group = format!(
        "hb-jitter-{}-{}",
        protocol,
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0)
    );
    let status = Command::new(&consumer_bin)
        .args(["consume", "--bootstrap", &format!("127.0.0.1:{proxy_port}")])
        .args(["--topic", topic, "--group", &group, "--protocol", protocol])
        .args(["--heartbeat-ms", heartbeat_ms, "--seconds", seconds])
        .status()
        .map_err(|e| format!("{}: {e}", consumer_bin.display()))?;
    if !status.success() {
        return Err(format!("the consumer exited with {status}"));
    }

    let shared = shared.lock().unwrap();
    report(&shared.beats, protocol, heartbeat_ms.parse().unwrap_or(0));
    Ok(())
}

fn report(beats: &[Beat], protocol: &str, heartbeat_ms: u64) {
    // The first heartbeat of the consumer protocol joins; the last one (either protocol) may
    // be the leave at close: intervals between the ones in between.
    let mut intervals: Vec<f64> = beats
        .windows(2)
        .map(|w| (w[1].at - w[0].at).as_secs_f64() * 1e3)
        .collect();
    if intervals.len() > 2 {
        intervals.remove(0);
        intervals.pop();
    }
    let keys: Vec<i16> = beats.iter().map(|b| b.api_key).collect();
    let answered: Vec<f64> = beats
        .iter()
        .filter_map(|b| b.answered_in)
        .map(|d| d.as_secs_f64() * 1e3)
        .collect();
    let mut sorted = intervals.clone();
    sorted.sort_by(f64::total_cmp);
    let pct = |p: f64| -> f64 {
        if sorted.is_empty() {
            return f64::NAN;
        }
        sorted[((sorted.len() - 1) as f64 * p).round() as usize]
    };
    let mean = sorted.iter().sum::<f64>() / sorted.len().max(1) as f64;
    let nominal = heartbeat_ms as f64;
    let max_dev = sorted
        .iter()
        .map(|i| (i - nominal).abs())
        .fold(0.0, f64::max);
    let max_answer = answered.iter().copied().fold(0.0, f64::max);
    println!(
        "protocol={protocol} heartbeats={} api_keys={:?} intervals={} mean_ms={:.2} \
         p50_ms={:.2} p99_ms={:.2} min_ms={:.2} max_ms={:.2} max_dev_from_{}ms={:.2} \
         max_broker_answer_ms={:.2}",
        beats.len(),
        {
            let mut k = keys.clone();
            k.dedup();
            k
        },
        sorted.len(),
        mean,
        pct(0.5),
        pct(0.99),
        sorted.first().copied().unwrap_or(f64::NAN),
        sorted.last().copied().unwrap_or(f64::NAN),
        heartbeat_ms,
        max_dev,
        max_answer,
    );
}

/// Reads one size-prefixed frame.
fn read_frame(stream: &mut TcpStream) -> Option<Bytes> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size).max(0) as usize];
    stream.read_exact(&mut body).ok()?;
    Some(body.into())
}

fn write_frame(stream: &mut TcpStream, body: &[u8]) -> bool {
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&(body.len() as i32).to_be_bytes());
    out.extend_from_slice(body);
    stream.write_all(&out).is_ok()
}

/// A request in flight, by correlation id: (api key, version, index in the beats if a heartbeat).
type InFlight = (i16, i16, Option<usize>);

/// One client connection: requests to the broker (heartbeats timestamped), responses back
/// (Metadata and FindCoordinator rewritten to advertise the proxy's port).
fn proxy(
    mut client: TcpStream,
    mut server: TcpStream,
    shared: Arc<Mutex<Shared>>,
    upstream_port: i32,
    proxy_port: i32,
) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let pending: Arc<Mutex<HashMap<i32, InFlight>>> = Default::default();
    let (mut client_r, mut server_w) = match (client.try_clone(), server.try_clone()) {
        (Ok(c), Ok(s)) => (c, s),
        _ => return,
    };
    let requests = {
        let pending = pending.clone();
        let shared = shared.clone();
        thread::spawn(move || {
            while let Some(frame) = read_frame(&mut client_r) {
                let at = Instant::now();
                if frame.len() >= 8 {
                    let mut head = &frame[..8];
                    let key = head.get_i16();
                    let version = head.get_i16();
                    let correlation = head.get_i32();
                    let beat = (key == HEARTBEAT || key == CONSUMER_GROUP_HEARTBEAT).then(|| {
                        let mut s = shared.lock().unwrap();
                        s.beats.push(Beat {
                            at,
                            api_key: key,
                            answered_in: None,
                        });
                        s.beats.len() - 1
                    });
                    pending
                        .lock()
                        .unwrap()
                        .insert(correlation, (key, version, beat));
                }
                if !write_frame(&mut server_w, &frame) {
                    break;
                }
            }
            let _ = server_w.shutdown(Shutdown::Write);
        })
    };
    while let Some(frame) = read_frame(&mut server) {
        let at = Instant::now();
        let mut out = frame.clone();
        if frame.len() >= 4 {
            let correlation = (&frame[..4]).get_i32();
            let entry = pending.lock().unwrap().remove(&correlation);
            if let Some((key, version, beat)) = entry {
                if let Some(i) = beat {
                    let mut s = shared.lock().unwrap();
                    let sent = s.beats[i].at;
                    s.beats[i].answered_in = Some(at - sent);
                }
                if let Some(rewritten) = rewrite(key, version, frame, upstream_port, proxy_port) {
                    out = rewritten;
                }
            }
        }
        if !write_frame(&mut client, &out) {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = requests.join();
}

/// Metadata and FindCoordinator responses with the broker's port replaced by the proxy's.
fn rewrite(key: i16, version: i16, frame: Bytes, from: i32, to: i32) -> Option<Bytes> {
    let api = ApiKey::try_from(key).ok()?;
    if !matches!(api, ApiKey::Metadata | ApiKey::FindCoordinator) {
        return None;
    }
    let header_version = api.response_header_version(version);
    let mut buf = frame;
    let header = ResponseHeader::decode(&mut buf, header_version).ok()?;
    let mut out = BytesMut::new();
    header.encode(&mut out, header_version).ok()?;
    let swap = |port: &mut i32| {
        if *port == from {
            *port = to;
        }
    };
    match api {
        ApiKey::Metadata => {
            let mut body = MetadataResponse::decode(&mut buf, version).ok()?;
            body.brokers.iter_mut().for_each(|b| swap(&mut b.port));
            body.encode(&mut out, version).ok()?;
        }
        _ => {
            let mut body = FindCoordinatorResponse::decode(&mut buf, version).ok()?;
            swap(&mut body.port);
            body.coordinators.iter_mut().for_each(|c| swap(&mut c.port));
            body.encode(&mut out, version).ok()?;
        }
    }
    Some(out.freeze())
}

/// The consumer: reads the topic from the beginning, again each time it has caught up, for
/// `--seconds`.
fn consume(args: &[String]) -> Result<(), String> {
    let bootstrap = flag(args, "--bootstrap").ok_or("--bootstrap is required")?;
    let topic = flag(args, "--topic").ok_or("--topic is required")?;
    let group = flag_or(args, "--group", "hb-jitter");
    let protocol = flag_or(args, "--protocol", "classic");
    let heartbeat_ms = flag_or(args, "--heartbeat-ms", "100");
    let seconds: u64 = flag_or(args, "--seconds", "30")
        .parse()
        .map_err(|_| "--seconds")?;
    let mut builder = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .client_id("hb-jitter")
        .group_id(group)
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("group.protocol", protocol)
        .set("enable.auto.commit", "false")
        .set("max.poll.records", "100000")
        .set("fetch.max.bytes", "8388608")
        .set("max.partition.fetch.bytes", "8388608");
    if protocol == "classic" {
        builder = builder.set("heartbeat.interval.ms", heartbeat_ms);
    }
    let config = builder.build().map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let mut consumer = Consumer::new(config).map_err(|e| e.to_string())?;
        consumer
            .subscribe([topic])
            .await
            .map_err(|e| e.to_string())?;
        let start = Instant::now();
        let (mut records, mut bytes, mut rounds) = (0u64, 0u64, 0u64);
        // Log end offset of each assigned partition, and the next offset to read in this round.
        let mut ends: HashMap<i32, i64> = HashMap::new();
        let mut next: HashMap<i32, i64> = HashMap::new();
        while start.elapsed() < Duration::from_secs(seconds) {
            let polled = consumer
                .poll(Duration::from_millis(100))
                .await
                .map_err(|e| e.to_string())?;
            for record in polled.iter() {
                records += 1;
                bytes += record.value.as_ref().map_or(0, |v| v.len() as u64);
                next.insert(record.partition, record.offset + 1);
            }
            let assigned: Vec<_> = consumer.assignment().iter().cloned().collect();
            if assigned.is_empty() {
                continue;
            }
            if ends.len() != assigned.len() {
                ends = consumer
                    .end_offsets(assigned.clone(), Duration::from_secs(10))
                    .await
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .map(|(tp, end)| (tp.partition, end))
                    .collect();
            }
            // Caught up everywhere: from the beginning again.
            if ends
                .iter()
                .all(|(p, end)| next.get(p).copied().unwrap_or(0) >= *end)
            {
                consumer
                    .seek_to_beginning(assigned)
                    .await
                    .map_err(|e| e.to_string())?;
                next.clear();
                rounds += 1;
            }
        }
        consumer
            .close(Duration::from_secs(10))
            .await
            .map_err(|e| e.to_string())?;
        eprintln!(
            "consumer: {records} records, {:.1} MiB of values, {rounds} re-seeks in {:.1} s",
            bytes as f64 / 1048576.0,
            start.elapsed().as_secs_f64()
        );
        Ok(())
    })
}
