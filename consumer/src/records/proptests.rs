//! Property-based round trips of the records layer's encoders and decoders: varints, the batch
//! writer against the batch reader (every codec, several batches per response), and the LZ4
//! frame reader against the writer's LZ4 frames. Arbitrary bytes never panic any decoder.

use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;

use super::compression::{compress, decompress, Compression, DecompressError, SnappyFraming};
use super::decompression_buffer::DecompressionBuffer;
use super::lz4_frame;
use super::test_support::{read_all, OwnedRecord};
use super::varint::{read_varint, read_varlong, write_varint, write_varlong};
use super::{NewRecord, ReadOptions, RecordBatchBuilder};

fn codec() -> impl Strategy<Value = Compression> {
    prop_oneof![
        Just(Compression::None),
        Just(Compression::Gzip),
        Just(Compression::Snappy),
        Just(Compression::Lz4),
        Just(Compression::Zstd),
    ]
}

fn snappy_framing() -> impl Strategy<Value = SnappyFraming> {
    prop_oneof![Just(SnappyFraming::Xerial), Just(SnappyFraming::Raw)]
}

fn bytes_or_null(max_len: usize) -> impl Strategy<Value = Option<Vec<u8>>> {
    proptest::option::of(vec(any::<u8>(), 0..max_len))
}

/// One record to write: timestamp, key, value and headers (UTF-8 keys, nullable values).
#[derive(Debug, Clone)]
struct Input {
    timestamp_ms: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn header_key() -> impl Strategy<Value = String> {
    vec(any::<char>(), 0..8).prop_map(|chars| chars.into_iter().collect())
}

fn record_input() -> impl Strategy<Value = Input> {
    (
        any::<i64>(),
        bytes_or_null(40),
        bytes_or_null(300),
        vec((header_key(), bytes_or_null(16)), 0..4),
    )
        .prop_map(|(timestamp_ms, key, value, headers)| Input {
            timestamp_ms,
            key,
            value,
            headers,
        })
}

/// Writes `records` as one batch at `base_offset`.
fn write_batch(
    base_offset: i64,
    codec: Compression,
    framing: SnappyFraming,
    records: &[Input],
) -> Bytes {
    let mut builder = RecordBatchBuilder::new(base_offset)
        .compression(codec)
        .snappy_framing(framing);
    for input in records {
        let headers: Vec<(&str, Option<&[u8]>)> = input
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        builder
            .append(&NewRecord {
                timestamp_ms: input.timestamp_ms,
                key: input.key.as_deref(),
                value: input.value.as_deref(),
                headers: &headers,
            })
            .unwrap();
    }
    builder.build().unwrap()
}

proptest! {
    #[test]
    fn varint_round_trips(value in any::<i32>()) {
        let mut out = Vec::new();
        write_varint(&mut out, value);
        prop_assert!(out.len() <= 5);
        let mut pos = 0;
        prop_assert_eq!(read_varint(&out, &mut pos), Ok(value));
        prop_assert_eq!(pos, out.len());
    }

    #[test]
    fn varlong_round_trips(value in any::<i64>()) {
        let mut out = Vec::new();
        write_varlong(&mut out, value);
        prop_assert!(out.len() <= 10);
        let mut pos = 0;
        prop_assert_eq!(read_varlong(&out, &mut pos), Ok(value));
        prop_assert_eq!(pos, out.len());
    }

    #[test]
    fn varint_reading_arbitrary_bytes_stays_in_bounds(bytes in vec(any::<u8>(), 0..12)) {
        let mut pos = 0;
        if read_varint(&bytes, &mut pos).is_ok() {
            prop_assert!(pos >= 1 && pos <= 5.min(bytes.len()));
        } else {
            prop_assert_eq!(pos, 0);
        }
        let mut pos = 0;
        if read_varlong(&bytes, &mut pos).is_ok() {
            prop_assert!(pos >= 1 && pos <= 10.min(bytes.len()));
        } else {
            prop_assert_eq!(pos, 0);
        }
    }

    #[test]
    fn written_batches_read_back_unchanged(
        base_offset in 0i64..1 << 40,
        batches in vec((codec(), snappy_framing(), vec(record_input(), 1..8)), 1..4),
        check_crcs in any::<bool>(),
    ) {
        let mut response = Vec::new();
        let mut expected = Vec::new();
        let mut next_offset = base_offset;
        for (codec, framing, records) in &batches {
            response.extend_from_slice(&write_batch(next_offset, *codec, *framing, records));
            for input in records {
                expected.push(OwnedRecord {
                    offset: next_offset,
                    timestamp_ms: input.timestamp_ms,
                    key: input.key.clone(),
                    value: input.value.clone(),
                    headers: input.headers.clone(),
                });
                next_offset += 1;
            }
        }
        let options = ReadOptions { check_crcs, ..ReadOptions::default() };
        let read = read_all(Bytes::from(response), options).unwrap();
        prop_assert_eq!(read, expected);
    }

    #[test]
    fn a_response_cut_anywhere_reads_its_whole_batches_only(
        records in vec(record_input(), 1..6),
        codec in codec(),
        cut in any::<prop::sample::Index>(),
    ) {
        let first = write_batch(0, codec, SnappyFraming::Xerial, &records);
        let second = write_batch(records.len() as i64, codec, SnappyFraming::Xerial, &records);
        let mut response = first.to_vec();
        response.extend_from_slice(&second[..cut.index(second.len())]);
        let read = read_all(Bytes::from(response), ReadOptions::default()).unwrap();
        prop_assert_eq!(read.len(), records.len());
    }

    #[test]
    fn lz4_frames_round_trip(input in vec(any::<u8>(), 0..140_000)) {
        let frame = compress(Compression::Lz4, SnappyFraming::Xerial, &input).unwrap();
        let mut buffer = DecompressionBuffer::new();
        let out = lz4_frame::decompress(&frame, input.len(), &mut buffer).unwrap();
        prop_assert_eq!(&out[..], &input[..]);
        if !input.is_empty() {
            let capped = lz4_frame::decompress(&frame, input.len() - 1, &mut buffer);
            prop_assert!(matches!(capped, Err(DecompressError::TooLarge)));
        }
    }

    #[test]
    fn every_codec_round_trips_and_honours_its_cap(
        codec in codec(),
        input in vec(any::<u8>(), 1..20_000),
    ) {
        let compressed = compress(codec, SnappyFraming::Xerial, &input).unwrap();
        let mut buffer = DecompressionBuffer::new();
        let out = decompress(codec, &compressed, input.len(), &mut buffer).unwrap();
        prop_assert_eq!(&out[..], &input[..]);
        let capped = decompress(codec, &compressed, input.len() - 1, &mut buffer);
        prop_assert!(matches!(capped, Err(DecompressError::TooLarge)), "{:?}", capped);
    }

    #[test]
    fn arbitrary_bytes_never_panic_a_decompressor(
        codec in codec(),
        input in vec(any::<u8>(), 0..512),
        cap in 0usize..1 << 16,
    ) {
        let mut buffer = DecompressionBuffer::new();
        if let Ok(out) = decompress(codec, &input, cap, &mut buffer) {
            prop_assert!(out.len() <= cap);
        }
    }
}
