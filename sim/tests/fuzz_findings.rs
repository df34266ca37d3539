//! Inputs the fuzz targets (`fuzz/`) found, replayed against a real-mode broker on loopback.
#![cfg(not(madsim))]

use sim::config::ClusterConfig;
use sim::real::{LocalCluster, LocalClusterOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `fuzz/known-crashes/sim_request-list-offsets-array-count`, found by `sim_request` in under
/// 100 executions: a 48-byte ListOffsets v1 request whose topics array declares 589,824
/// elements. kafka-protocol 0.18's `Array::decode` calls `Vec::with_capacity(count)` before
/// reading an element, so the broker reserved 2.95 GB for it.
const FOUND: &[u8] =
    include_bytes!("../../fuzz/known-crashes/sim_request-list-offsets-array-count");

/// Offset of the topics array count in [`FOUND`]: length prefix, header (api key, version,
/// correlation id, client id "seed"), replica id.
const TOPICS_COUNT_AT: usize = 4 + 2 + 2 + 4 + 2 + 4 + 4;

/// Sends `frame` on a fresh connection and reads until the broker closes it.
async fn answer_of(frame: &[u8]) -> Vec<u8> {
    let mut config = ClusterConfig::default();
    config.topics.insert("fuzz".to_owned(), 2);
    let cluster = LocalCluster::start(LocalClusterOptions {
        brokers: 1,
        base_port: 0,
        config,
        group_shards: None,
    })
    .await
    .unwrap();
    let mut stream = TcpStream::connect(&cluster.bootstrap_servers()[0])
        .await
        .unwrap();
    stream.write_all(frame).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    answer
}

/// The same request declaring `i32::MAX` topics: before the patch of the vendored
/// kafka-protocol (third_party/kafka-protocol/PATCHED.md) the reservation could not be
/// satisfied and the allocation failure aborted the whole process (every connection, every test
/// beside it). The broker must close this one connection, as Kafka does for an array count
/// larger than the bytes left (`Tried to allocate a collection of size …`).
#[tokio::test]
async fn a_request_declaring_more_array_elements_than_bytes_only_closes_its_connection() {
    let mut frame = FOUND.to_vec();
    assert_eq!(
        &frame[TOPICS_COUNT_AT..TOPICS_COUNT_AT + 4],
        &0x0009_0000i32.to_be_bytes()
    );
    frame[TOPICS_COUNT_AT..TOPICS_COUNT_AT + 4].copy_from_slice(&i32::MAX.to_be_bytes());
    assert!(
        answer_of(&frame).await.is_empty(),
        "a malformed request gets no response"
    );
}

/// The request as found: refused on its count, its connection closed, and no 2.95 GB
/// reservation. The process's peak virtual size (`VmPeak`, which counts a reservation even
/// when its pages are never touched) must not grow by anything near the 2.95 GB the unpatched
/// decoder asked for.
#[tokio::test]
async fn the_found_list_offsets_request_only_closes_its_connection() {
    let before_kib = vm_peak_kib();
    assert!(
        answer_of(FOUND).await.is_empty(),
        "a malformed request gets no response"
    );
    let grown_kib = vm_peak_kib() - before_kib;
    assert!(
        grown_kib < 1024 * 1024,
        "the peak virtual size grew by {grown_kib} KiB"
    );
}

/// `VmPeak` of this process, in KiB (Linux).
fn vm_peak_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmPeak:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmPeak in /proc/self/status")
}
