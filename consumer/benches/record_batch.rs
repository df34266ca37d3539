//! Record-batch read throughput against memcpy of the same bytes.
//!
//! Builds a ~2 MiB fetch response of uncompressed ~16 KiB batches (the producer's default
//! `batch.size`) with 100 B and 1 KiB values, then measures iterating every record and touching
//! its key and value lengths, with `check.crcs` on and off. `memcpy` copies the same bytes into a
//! preallocated buffer: the ceiling any reader of those bytes is compared with (BENCHMARKS.md).
//!
//! `compressed/*` reads a response of lz4 and zstd batches of 1 KiB JSON-like values (64 KiB
//! batches, as the benchmark topics' Java producer writes them): there the cost is
//! decompression, and throughput is *decompressed* records-section bytes per second.

use std::hint::black_box;
use std::sync::Arc;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kafka_consumer::records::{
    Compression, DecompressionBuffer, FetchedRecords, NewRecord, ReadOptions, RecordBatchBuilder,
};

const RESPONSE_BYTES: usize = 2 << 20;
const BATCH_BYTES: usize = 16 << 10;
const KEY_BYTES: usize = 16;

/// A fetch response of back-to-back uncompressed batches holding `value_bytes`-sized values.
fn fetch_response(value_bytes: usize) -> Bytes {
    let key = [b'k'; KEY_BYTES];
    let value: Vec<u8> = (0..value_bytes).map(|i| i as u8).collect();
    let records_per_batch = (BATCH_BYTES / (value_bytes + KEY_BYTES)).max(1);
    let mut response = Vec::with_capacity(RESPONSE_BYTES + BATCH_BYTES);
    let mut offset = 0i64;
    while response.len() < RESPONSE_BYTES {
        let mut builder = RecordBatchBuilder::new(offset).producer(1, 0, offset as i32);
        for i in 0..records_per_batch {
            let record = NewRecord {
                timestamp_ms: 1_700_000_000_000 + i as i64,
                key: Some(&key),
                value: Some(&value),
                headers: &[],
            };
            offset = builder.append(&record).expect("benchmark record fits") + 1;
        }
        response.extend_from_slice(&builder.build().expect("benchmark batch builds"));
    }
    Bytes::from(response)
}

/// Iterates every record of every batch, summing key and value lengths; compressed batches are
/// decompressed into `buffer`, reused across calls as the consumer reuses it.
fn read_all(
    topic: &Arc<str>,
    response: &Bytes,
    options: ReadOptions,
    buffer: &mut DecompressionBuffer,
) -> usize {
    let mut total = 0;
    for batch in FetchedRecords::new(topic.clone(), 0, response.clone(), options) {
        let batch = batch.expect("benchmark batch is valid");
        for record in batch
            .records_in(buffer)
            .expect("benchmark batch decompresses")
        {
            let record = record.expect("benchmark record is valid");
            total += record.key_len().unwrap_or(0) + record.value_len().unwrap_or(0);
        }
    }
    total
}

fn bench_read(c: &mut Criterion) {
    let topic: Arc<str> = Arc::from("bench");
    for (label, value_bytes) in [("100B", 100), ("1KiB", 1024)] {
        let response = fetch_response(value_bytes);
        let mut group = c.benchmark_group(format!("record_batch/{label}"));
        group.throughput(Throughput::Bytes(response.len() as u64));

        let mut destination = vec![0u8; response.len()];
        group.bench_function("memcpy", |b| {
            b.iter(|| {
                destination.copy_from_slice(black_box(&response));
                black_box(&destination);
            })
        });
        for (case, check_crcs) in [("iterate_crc_on", true), ("iterate_crc_off", false)] {
            let options = ReadOptions {
                check_crcs,
                ..ReadOptions::default()
            };
            let mut buffer = DecompressionBuffer::new();
            group.bench_function(case, |b| {
                b.iter(|| black_box(read_all(&topic, black_box(&response), options, &mut buffer)))
            });
        }
        group.finish();
    }
}

/// Batches of `COMPRESSED_BATCH_RECORDS` 1 KiB values (JSON-like text with a varying hex
/// tail, so they compress about as well as the peer benchmark's topics) in `codec`; also
/// returns the records' total uncompressed size.
fn compressed_response(codec: Compression) -> (Bytes, usize) {
    const COMPRESSED_BATCHES: usize = 16;
    const COMPRESSED_BATCH_RECORDS: usize = 64;
    let mut response = Vec::new();
    let mut uncompressed_bytes = 0;
    let mut offset = 0i64;
    for batch in 0..COMPRESSED_BATCHES {
        let mut builder = RecordBatchBuilder::new(offset).compression(codec);
        for i in 0..COMPRESSED_BATCH_RECORDS {
            let n = (batch * COMPRESSED_BATCH_RECORDS + i) as u64;
            let mut value = format!("{{\"id\":{n},\"name\":\"user-{}\",\"tail\":\"", n % 997);
            let mut x = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            while value.len() < 1022 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                value.push_str(&format!("{:x}", x & 0xf));
            }
            value.push_str("\"}");
            let record = NewRecord {
                timestamp_ms: 1_700_000_000_000,
                key: None,
                value: Some(value.as_bytes()),
                headers: &[],
            };
            uncompressed_bytes += value.len();
            offset = builder.append(&record).expect("benchmark record fits") + 1;
        }
        response.extend_from_slice(&builder.build().expect("benchmark batch builds"));
    }
    (Bytes::from(response), uncompressed_bytes)
}

fn bench_compressed(c: &mut Criterion) {
    let topic: Arc<str> = Arc::from("bench");
    let mut group = c.benchmark_group("compressed/1KiB");
    for (label, codec) in [("lz4", Compression::Lz4), ("zstd", Compression::Zstd)] {
        let (response, uncompressed_bytes) = compressed_response(codec);
        group.throughput(Throughput::Bytes(uncompressed_bytes as u64));
        let options = ReadOptions {
            check_crcs: false,
            ..ReadOptions::default()
        };
        let mut buffer = DecompressionBuffer::new();
        group.bench_function(label, |b| {
            b.iter(|| black_box(read_all(&topic, black_box(&response), options, &mut buffer)))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_read, bench_compressed);
criterion_main!(benches);
