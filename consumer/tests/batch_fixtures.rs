//! Decodes the batches Kafka's own Java `MemoryRecordsBuilder` wrote (kafka-clients 4.1.1, see
//! `fixtures/batches/README.md`) and compares every batch field and every record with what Java
//! decoded from the same bytes. A missing fixture fails the test: it must never pass by skipping.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use kafka_consumer::records::{
    Compression, ControlRecord, FetchedRecords, ReadOptions, RecordBatch,
};

const FIXTURES: [&str; 7] = [
    "none",
    "gzip",
    "snappy",
    "lz4",
    "zstd",
    "control",
    "compacted",
];

fn fixture_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/batches")
        .join(file)
}

fn read_fixture(name: &str) -> (Bytes, String) {
    let bin = fixture_path(&format!("{name}.bin"));
    let expected = fixture_path(&format!("{name}.expected"));
    let bin =
        std::fs::read(&bin).unwrap_or_else(|e| panic!("fixture {} missing: {e}", bin.display()));
    let expected = std::fs::read_to_string(&expected)
        .unwrap_or_else(|e| panic!("fixture {} missing: {e}", expected.display()));
    (Bytes::from(bin), expected)
}

fn codec_name(codec: Compression) -> &'static str {
    match codec {
        Compression::None => "none",
        Compression::Gzip => "gzip",
        Compression::Snappy => "snappy",
        Compression::Lz4 => "lz4",
        Compression::Zstd => "zstd",
    }
}

fn hex(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "-".to_owned(),
        Some(bytes) => bytes.iter().fold(String::new(), |mut out, b| {
            write!(out, "{b:02x}").expect("writing to a String");
            out
        }),
    }
}

/// The `.expected` batch summary for one batch, in the fixture's field order.
fn describe_batch(batch: &RecordBatch) -> String {
    format!(
        "{}/{}/{}/{}/{}/{}/{}/{}/{}/{}",
        batch.base_offset(),
        batch.last_offset_delta(),
        codec_name(batch.compression()),
        batch.is_transactional(),
        batch.is_control(),
        batch.record_count(),
        batch.producer_id(),
        batch.producer_epoch(),
        batch.base_sequence(),
        batch.partition_leader_epoch(),
    )
}

/// Decodes `bytes` into the `.expected` text format, plus each batch's next offset and
/// control record.
fn decode(name: &str, bytes: Bytes) -> (String, Vec<i64>, Vec<Option<ControlRecord>>) {
    let mut batches = FetchedRecords::new(Arc::from(name), 0, bytes, ReadOptions::default());
    let mut summaries = Vec::new();
    let mut lines = String::new();
    let mut next_offsets = Vec::new();
    let mut controls = Vec::new();
    for batch in &mut batches {
        let batch = batch.unwrap_or_else(|e| panic!("{name}: {e}"));
        summaries.push(describe_batch(&batch));
        next_offsets.push(batch.next_offset());
        controls.push(
            batch
                .control_record()
                .unwrap_or_else(|e| panic!("{name}: {e}")),
        );
        let kind = if batch.is_control() {
            "control"
        } else {
            "data"
        };
        for record in batch.records().unwrap_or_else(|e| panic!("{name}: {e}")) {
            let record = record.unwrap_or_else(|e| panic!("{name}: {e}"));
            let headers: Vec<String> = record
                .headers()
                .iter()
                .map(|h| format!("{}={}", hex(Some(h.key())), hex(h.value())))
                .collect();
            writeln!(
                lines,
                "{}\t{}\t{}\t{}\t{}\t{kind}",
                record.offset(),
                record.timestamp_ms(),
                hex(record.key()),
                hex(record.value()),
                headers.join(";"),
            )
            .expect("writing to a String");
        }
    }
    assert!(
        batches.truncated_tail().is_none(),
        "{name}: fixture has no partial batch"
    );
    (
        format!("# batches: {}\n{lines}", summaries.join(";")),
        next_offsets,
        controls,
    )
}

/// Java's own `next offset` for each batch: base_offset + last_offset_delta + 1, from the
/// expected summary line.
fn expected_next_offsets(expected: &str) -> Vec<i64> {
    let summary = expected
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# batches: "))
        .expect("summary line");
    summary
        .split(';')
        .map(|batch| {
            let fields: Vec<i64> = batch
                .split('/')
                .take(2)
                .map(|f| f.parse().expect("numeric field"))
                .collect();
            fields[0] + fields[1] + 1
        })
        .collect()
}

#[test]
fn every_fixture_decodes_exactly_as_java_decoded_it() {
    for name in FIXTURES {
        let (bytes, expected) = read_fixture(name);
        let (decoded, next_offsets, _) = decode(name, bytes);
        assert_eq!(decoded, expected, "fixture {name}");
        assert_eq!(
            next_offsets,
            expected_next_offsets(&expected),
            "fixture {name}"
        );
    }
}

#[test]
fn control_fixture_markers_and_compacted_next_offset() {
    let (bytes, _) = read_fixture("control");
    let (_, _, controls) = decode("control", bytes);
    assert_eq!(
        controls,
        [
            None,
            Some(ControlRecord::Commit {
                coordinator_epoch: 7
            }),
            None,
            Some(ControlRecord::Abort {
                coordinator_epoch: 7
            }),
        ]
    );
    let (bytes, _) = read_fixture("compacted");
    let (_, next_offsets, _) = decode("compacted", bytes);
    assert_eq!(
        next_offsets.last(),
        Some(&17),
        "README: the next fetch offset after compacted.bin is 17"
    );
}

/// Every cut of a Java-written response yields the complete batches before the cut and a
/// reported tail, never an error.
#[test]
fn every_truncation_of_every_fixture_is_a_clean_prefix() {
    for name in FIXTURES {
        let (bytes, _) = read_fixture(name);
        let full: Vec<i64> =
            FetchedRecords::new(Arc::from(name), 0, bytes.clone(), ReadOptions::default())
                .map(|b| b.expect("fixture batch").base_offset())
                .collect();
        for cut in 0..bytes.len() {
            let mut batches = FetchedRecords::new(
                Arc::from(name),
                0,
                bytes.slice(..cut),
                ReadOptions::default(),
            );
            let read: Vec<i64> = (&mut batches)
                .map(|b| b.expect("prefix batch").base_offset())
                .collect();
            assert_eq!(read[..], full[..read.len()], "{name} cut at {cut}");
            let consumed = batches.position_bytes();
            match batches.truncated_tail() {
                Some(tail) => assert_eq!(
                    tail.position_bytes + tail.available_bytes,
                    cut,
                    "{name} cut at {cut}"
                ),
                None => assert_eq!(consumed, cut, "{name} cut at {cut}"),
            }
        }
    }
}
