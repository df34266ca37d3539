//! The broker's serving ceiling: a raw fetch-only loop, no consumer at all. One blocking TCP
//! connection to the bootstrap broker (the harness's single node leads every partition), Fetch
//! v12 (topic names, no topic ids, so no Metadata round trip) for every partition at once,
//! sessionless (each request names every partition and its offset), `fetch.max.bytes` 50 MiB,
//! `max.partition.fetch.bytes` 1 MiB, `fetch.min.bytes` 1, `fetch.max.wait.ms` 500 — the
//! defaults of the Java client and ours. One request in flight: the next one needs the offsets
//! the previous response ended at.
//!
//! Nothing is decoded below the record-batch header: records are counted from each batch's
//! `recordsCount` field and the next offset is `baseOffset + lastOffsetDelta + 1`, so the
//! client spends its time on the wire, not on records. Its rate is what the broker serves one
//! client on this machine, and the other clients' rates are reported as fractions of it.
//! `bytes` is the batches' size on the wire (record framing included), not keys + values.
//! Assign mode from the earliest offset only (it has no group, no offset reset, no security).

use std::io::{Read, Write};
use std::net::TcpStream;

use bytes::{Buf, Bytes, BytesMut};
use kafka_bench::{client_main, ClientArgs, Mode, Start, Stats};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, FetchRequest, FetchResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// Fetch v12: the newest version that names topics (v13+ needs topic ids from Metadata).
const FETCH_VERSION: i16 = 12;
const FETCH_MAX_BYTES: i32 = 50 * 1024 * 1024;
const PARTITION_MAX_BYTES: i32 = 1024 * 1024;
const MAX_WAIT_MS: i32 = 500;
/// The v2 record batch header up to and including `recordsCount`.
const BATCH_HEADER: usize = 61;

fn main() {
    client_main("client-ceiling", run);
}

fn run(args: ClientArgs) -> Result<Stats, String> {
    if args.mode != Mode::Assign || args.start != Start::Earliest || args.sasl_ssl.is_some() {
        return Err("only assign mode from the earliest offset over PLAINTEXT".to_owned());
    }
    let mut stream = TcpStream::connect(&args.bootstrap).map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut offsets = vec![0i64; args.partitions as usize];
    let mut stats = Stats::start(&args);
    let topic = TopicName(StrBytes::from_string(args.topic.clone()));
    for correlation_id in 1.. {
        let request = FetchRequest::default()
            .with_replica_id((-1).into())
            .with_max_wait_ms(MAX_WAIT_MS)
            .with_min_bytes(1)
            .with_max_bytes(FETCH_MAX_BYTES)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic.clone())
                .with_partitions(
                    offsets
                        .iter()
                        .enumerate()
                        .map(|(p, &offset)| {
                            FetchPartition::default()
                                .with_partition(p as i32)
                                .with_fetch_offset(offset)
                                .with_partition_max_bytes(PARTITION_MAX_BYTES)
                        })
                        .collect(),
                )]);
        let response = round_trip(&mut stream, correlation_id, &request)?;
        if response.error_code != 0 {
            return Err(format!("fetch error {}", response.error_code));
        }
        let (mut records, mut bytes) = (0, 0);
        for partition in response.responses.iter().flat_map(|t| &t.partitions) {
            if partition.error_code != 0 {
                return Err(format!(
                    "partition {}: error {}",
                    partition.partition_index, partition.error_code
                ));
            }
            let Some(data) = &partition.records else {
                continue;
            };
            let counted = count_batches(data);
            records += counted.records;
            bytes += counted.bytes;
            if let Some(next) = counted.next_offset {
                offsets[partition.partition_index as usize] = next;
            }
        }
        stats.delivered(records, bytes);
        if stats.done()? {
            break;
        }
    }
    Ok(stats)
}

/// One request on the wire and its response.
fn round_trip(
    stream: &mut TcpStream,
    correlation_id: i32,
    request: &FetchRequest,
) -> Result<FetchResponse, String> {
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::Fetch as i16)
        .with_request_api_version(FETCH_VERSION)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("bench-ceiling")));
    let mut frame = BytesMut::new();
    frame.extend_from_slice(&[0; 4]);
    header
        .encode(
            &mut frame,
            ApiKey::Fetch.request_header_version(FETCH_VERSION),
        )
        .map_err(|e| e.to_string())?;
    request
        .encode(&mut frame, FETCH_VERSION)
        .map_err(|e| e.to_string())?;
    let len = (frame.len() - 4) as u32;
    frame[..4].copy_from_slice(&len.to_be_bytes());
    stream.write_all(&frame).map_err(|e| e.to_string())?;
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).map_err(|e| e.to_string())?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).map_err(|e| e.to_string())?;
    let mut body = Bytes::from(body);
    let header = ResponseHeader::decode(
        &mut body,
        ApiKey::Fetch.response_header_version(FETCH_VERSION),
    )
    .map_err(|e| e.to_string())?;
    if header.correlation_id != correlation_id {
        return Err(format!(
            "correlation id {} for request {correlation_id}",
            header.correlation_id
        ));
    }
    FetchResponse::decode(&mut body, FETCH_VERSION).map_err(|e| e.to_string())
}

/// What the whole batches of one partition's `records` hold.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counted {
    records: u64,
    bytes: u64,
    /// The offset after the last whole batch, if there was one.
    next_offset: Option<i64>,
}

/// Walks the record batches by their headers only; a trailing partial batch (the broker cuts
/// the response at the size limit) is left for the next fetch.
fn count_batches(mut data: &[u8]) -> Counted {
    let mut counted = Counted::default();
    while data.len() >= BATCH_HEADER {
        let mut header = &data[..BATCH_HEADER];
        let base_offset = header.get_i64();
        let batch_length = header.get_i32();
        let total = 12 + batch_length.max(0) as usize;
        if batch_length < 49 || data.len() < total {
            break;
        }
        header.advance(4 + 1 + 4 + 2); // partitionLeaderEpoch, magic, crc, attributes
        let last_offset_delta = header.get_i32();
        header.advance(8 + 8 + 8 + 2 + 4); // timestamps, producer id and epoch, base sequence
        let records_count = header.get_i32();
        counted.records += records_count.max(0) as u64;
        counted.bytes += total as u64;
        counted.next_offset = Some(base_offset + i64::from(last_offset_delta) + 1);
        data = &data[total..];
    }
    counted
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch header with `count` records from `base`, its body `body` bytes of filler.
    fn batch(base: i64, count: i32, body: usize) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&base.to_be_bytes());
        b.extend_from_slice(&((BATCH_HEADER - 12 + body) as i32).to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes()); // partitionLeaderEpoch
        b.push(2); // magic
        b.extend_from_slice(&0u32.to_be_bytes()); // crc
        b.extend_from_slice(&0i16.to_be_bytes()); // attributes
        b.extend_from_slice(&(count - 1).to_be_bytes()); // lastOffsetDelta
        b.extend_from_slice(&[0; 8 + 8 + 8 + 2 + 4]);
        b.extend_from_slice(&count.to_be_bytes());
        b.extend(std::iter::repeat_n(0xab, body));
        b
    }

    #[test]
    fn batches_are_counted_from_their_headers_and_a_partial_one_waits() {
        let mut data = batch(100, 5, 40);
        data.extend(batch(105, 3, 10));
        let whole = data.len() as u64;
        data.extend(&batch(108, 7, 30)[..50]);
        assert_eq!(
            count_batches(&data),
            Counted {
                records: 8,
                bytes: whole,
                next_offset: Some(108),
            }
        );
        assert_eq!(count_batches(&data[..20]), Counted::default());
    }
}
