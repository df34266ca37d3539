//! Writes the fuzz targets' seed corpus (`fuzz/corpus/<target>/`) from the crate's own encoders,
//! so the seeds are real broker-shaped bytes: `cargo test -p kafka-consumer --test
//! fuzz_seed_corpus -- --ignored`. Ignored by default: it writes into the source tree. The
//! unignored test checks the seeds still decode, so an encoder change that breaks them shows.
//!
//! Each seed starts with the target's control bytes (see the target's doc comment).

use std::path::PathBuf;

use bytes::Bytes;
use kafka_consumer::assignor::protocol::{encode_assignment, encode_subscription};
use kafka_consumer::assignor::{Assignment, StickyAssignor, Subscription, TopicPartition};
use kafka_consumer::records::{
    end_txn_marker_batch, Compression, ControlRecord, NewRecord, RecordBatchBuilder, SnappyFraming,
};

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

fn batch(base_offset: i64, codec: Compression, count: usize) -> Bytes {
    let mut builder = RecordBatchBuilder::new(base_offset)
        .compression(codec)
        .partition_leader_epoch(3);
    for i in 0..count {
        let value = format!("value-{i}-{}", "x".repeat(i * 7));
        builder
            .append(&NewRecord {
                timestamp_ms: 1_700_000_000_000 + i as i64,
                key: (i % 2 == 0).then_some(&b"key"[..]),
                value: Some(value.as_bytes()),
                headers: &[("trace", Some(b"abc")), ("null", None)],
            })
            .unwrap();
    }
    builder.build().unwrap()
}

fn transactional(base_offset: i64, producer_id: i64, count: usize) -> Bytes {
    let mut builder = RecordBatchBuilder::new(base_offset)
        .producer(producer_id, 0, 0)
        .transactional(true);
    for i in 0..count {
        builder
            .append(&NewRecord {
                timestamp_ms: 10 + i as i64,
                key: None,
                value: Some(b"txn"),
                headers: &[],
            })
            .unwrap();
    }
    builder.build().unwrap()
}

/// fetch_partition's control bytes: flags, a one-byte fetch offset, the aborted list.
fn fetch_seed(flags: u8, fetch_offset: u8, aborted: &[(i8, i16)], records: &[u8]) -> Vec<u8> {
    assert_eq!(flags & 0x80, 0, "one-byte fetch offset");
    let mut seed = vec![flags, fetch_offset, aborted.len() as u8];
    for (producer_id, first_offset) in aborted {
        seed.push(*producer_id as u8);
        seed.extend_from_slice(&first_offset.to_le_bytes());
    }
    seed.extend_from_slice(records);
    seed
}

/// decompress's control bytes: selector, a little-endian cap.
fn decompress_seed(selector: u8, cap: u32, payload: &[u8]) -> Vec<u8> {
    let mut seed = vec![selector];
    seed.extend_from_slice(&cap.to_le_bytes());
    seed.extend_from_slice(payload);
    seed
}

fn compressed(codec: Compression, framing: SnappyFraming, payload: &[u8]) -> Vec<u8> {
    // The records section of a one-record batch with that codec is the codec's output.
    let mut builder = RecordBatchBuilder::new(0)
        .compression(codec)
        .snappy_framing(framing);
    builder
        .append(&NewRecord {
            timestamp_ms: 0,
            key: None,
            value: Some(payload),
            headers: &[],
        })
        .unwrap();
    builder.build().unwrap()[61..].to_vec()
}

fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    const READ_UNCOMMITTED_CRC: u8 = 0b10;
    const READ_COMMITTED_CRC: u8 = 0b11;
    for codec in CODECS {
        let mut records = batch(0, codec, 3).to_vec();
        records.extend_from_slice(&batch(3, codec, 2));
        let name = format!("{codec:?}-two-batches").to_lowercase();
        out.push((
            "fetch_partition",
            name,
            fetch_seed(READ_UNCOMMITTED_CRC | 0b1000, 1, &[], &records),
        ));
        let mut cut = records.clone();
        cut.truncate(records.len() - 5);
        let name = format!("{codec:?}-truncated-tail").to_lowercase();
        out.push(("fetch_partition", name, fetch_seed(0, 0, &[], &cut)));
    }
    // Producer 5's transaction is aborted (its marker follows), producer 6's committed.
    let mut txn = transactional(0, 5, 2).to_vec();
    txn.extend_from_slice(&transactional(2, 6, 2));
    let abort = ControlRecord::Abort {
        coordinator_epoch: 1,
    };
    let commit = ControlRecord::Commit {
        coordinator_epoch: 1,
    };
    txn.extend_from_slice(&end_txn_marker_batch(4, 5, 0, 20, &abort).unwrap());
    txn.extend_from_slice(&end_txn_marker_batch(5, 6, 0, 21, &commit).unwrap());
    txn.extend_from_slice(&batch(6, Compression::None, 1));
    out.push((
        "fetch_partition",
        "read-committed-aborted".into(),
        fetch_seed(READ_COMMITTED_CRC, 0, &[(5, 0)], &txn),
    ));
    out.push((
        "fetch_partition",
        "read-uncommitted-markers".into(),
        fetch_seed(0, 0, &[(5, 0)], &txn),
    ));

    let text = b"the quick brown fox jumps over the lazy dog; the quick brown fox again".repeat(8);
    for codec in CODECS {
        let payload = compressed(codec, SnappyFraming::Xerial, &text);
        let name = format!("{codec:?}").to_lowercase();
        out.push((
            "decompress",
            name.clone(),
            decompress_seed(codec.id(), 4096, &payload),
        ));
        out.push((
            "decompress",
            format!("{name}-over-cap"),
            decompress_seed(codec.id(), 100, &payload),
        ));
        out.push((
            "decompress",
            format!("{name}-round-trip"),
            decompress_seed(0x80 | codec.id(), 0, &text),
        ));
    }
    let raw_snappy = compressed(Compression::Snappy, SnappyFraming::Raw, &text);
    out.push((
        "decompress",
        "snappy-raw".into(),
        decompress_seed(2, 4096, &raw_snappy),
    ));
    let lz4 = compressed(Compression::Lz4, SnappyFraming::Xerial, &text);
    out.push((
        "decompress",
        "lz4-frame-reader".into(),
        decompress_seed(5, 4096, &lz4),
    ));

    let mut subscription = Subscription::new(["orders", "payments"]);
    subscription.user_data = StickyAssignor::encode_user_data(
        &[
            TopicPartition::new("orders", 0),
            TopicPartition::new("orders", 2),
        ],
        7,
    );
    subscription.owned_partitions = vec![
        TopicPartition::new("orders", 0),
        TopicPartition::new("payments", 1),
    ];
    subscription.generation_id = Some(7);
    subscription.rack_id = Some("rack-a".into());
    let assignment = Assignment::new(vec![
        TopicPartition::new("orders", 1),
        TopicPartition::new("payments", 0),
    ]);
    for version in 0..=3 {
        let mut seed = vec![0];
        seed.extend_from_slice(&encode_subscription(&subscription, version).unwrap());
        out.push((
            "consumer_protocol",
            format!("subscription-v{version}"),
            seed,
        ));
        let mut seed = vec![1];
        seed.extend_from_slice(&encode_assignment(&assignment, version).unwrap());
        out.push(("consumer_protocol", format!("assignment-v{version}"), seed));
    }
    let mut seed = vec![2];
    seed.extend_from_slice(subscription.user_data.as_ref().unwrap());
    out.push(("consumer_protocol", "sticky-user-data-v1".into(), seed));
    out.extend(request_seeds());
    out.extend(lie_seeds());
    out
}

/// Scripts for `consumer_responses`: each mode honest, then one lie per API the consumer
/// uses (the layout is in `fuzz/fuzz_targets/consumer_responses.rs`).
fn lie_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    const ASSIGN: u8 = 0;
    const CLASSIC: u8 = 1;
    const CONSUMER: u8 = 2;
    const READ_COMMITTED_AUTO_COMMIT_LZ4: u8 = 4 | 8 | 16;
    const XOR: u8 = 0;
    const OVERWRITE: u8 = 1;
    const TRUNCATE: u8 = 2;
    // The target's `APIS`, in its order, with the mode that sends each.
    const APIS: [(&str, u8); 13] = [
        ("api-versions", ASSIGN),
        ("metadata", ASSIGN),
        ("find-coordinator", CLASSIC),
        ("fetch", ASSIGN),
        ("list-offsets", ASSIGN),
        ("offset-for-leader-epoch", ASSIGN),
        ("offset-fetch", CLASSIC),
        ("offset-commit", CLASSIC),
        ("join-group", CLASSIC),
        ("sync-group", CLASSIC),
        ("heartbeat", CLASSIC),
        ("leave-group", CLASSIC),
        ("consumer-group-heartbeat", CONSUMER),
    ];
    let lie = |mode: u8, api: usize, nth: u8, op: u8, position: u16, payload: &[u8]| {
        let mut seed = vec![mode, api as u8, nth, op];
        seed.extend_from_slice(&position.to_le_bytes());
        seed.push(payload.len() as u8);
        seed.extend_from_slice(payload);
        seed
    };
    let mut out = Vec::new();
    for (mode, name) in [
        (ASSIGN, "assign"),
        (CLASSIC, "classic"),
        (CONSUMER, "consumer"),
    ] {
        out.push(("consumer_responses", format!("{name}-honest"), vec![mode]));
        out.push((
            "consumer_responses",
            format!("{name}-read-committed-lz4"),
            vec![mode | READ_COMMITTED_AUTO_COMMIT_LZ4],
        ));
    }
    for (api, (name, mode)) in APIS.iter().enumerate() {
        let mode = *mode | 8;
        out.push((
            "consumer_responses",
            format!("{name}-xor"),
            lie(mode, api, 0, XOR, 9, &[1]),
        ));
        out.push((
            "consumer_responses",
            format!("{name}-truncate"),
            lie(mode, api, 0, TRUNCATE, 7, &[]),
        ));
        out.push((
            "consumer_responses",
            format!("{name}-overwrite"),
            lie(mode, api, 0, OVERWRITE, 12, &[0xff; 4]),
        ));
        out.push((
            "consumer_responses",
            format!("{name}-second-xor"),
            lie(mode, api, 1, XOR, 3, &[0x10]),
        ));
    }
    out
}

/// Whole request frames for the simulated broker, as a client sends them.
fn request_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    use kafka_consumer::protocol::codec::encode_request;
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{
        ApiVersionsRequest, FetchRequest, FindCoordinatorRequest, ListOffsetsRequest,
        MetadataRequest, ProduceRequest, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;

    let client = StrBytes::from_static_str("seed");
    let topic = || TopicName(StrBytes::from_static_str("fuzz"));
    let frame = |name: &str, bytes: Bytes| ("sim_request", name.to_owned(), bytes.to_vec());
    let mut out = vec![
        frame(
            "api-versions-v3",
            encode_request(
                &ApiVersionsRequest::default()
                    .with_client_software_name(StrBytes::from_static_str("seed"))
                    .with_client_software_version(StrBytes::from_static_str("1")),
                3,
                1,
                Some(&client),
            )
            .unwrap(),
        ),
        frame(
            "metadata-v1-all",
            encode_request(&MetadataRequest::default(), 1, 2, Some(&client)).unwrap(),
        ),
        frame(
            "metadata-v12-fuzz",
            encode_request(
                &MetadataRequest::default().with_topics(Some(vec![MetadataRequestTopic::default(
                )
                .with_name(Some(topic()))])),
                12,
                3,
                Some(&client),
            )
            .unwrap(),
        ),
        frame(
            "find-coordinator-v3",
            encode_request(
                &FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("g")),
                3,
                4,
                Some(&client),
            )
            .unwrap(),
        ),
        frame(
            "list-offsets-v1",
            encode_request(
                &ListOffsetsRequest::default()
                    .with_replica_id((-1).into())
                    .with_topics(vec![ListOffsetsTopic::default()
                        .with_name(topic())
                        .with_partitions(vec![ListOffsetsPartition::default()
                            .with_partition_index(0)
                            .with_timestamp(-1)])]),
                1,
                5,
                Some(&client),
            )
            .unwrap(),
        ),
        frame(
            "fetch-v11",
            encode_request(
                &FetchRequest::default()
                    .with_max_wait_ms(0)
                    .with_max_bytes(1 << 20)
                    .with_topics(vec![FetchTopic::default()
                        .with_topic(topic())
                        .with_partitions(vec![FetchPartition::default()
                            .with_partition(0)
                            .with_partition_max_bytes(1 << 20)])]),
                11,
                6,
                Some(&client),
            )
            .unwrap(),
        ),
    ];
    let records = batch(0, Compression::None, 2);
    out.push(frame(
        "produce-v8",
        encode_request(
            &ProduceRequest::default()
                .with_acks(-1)
                .with_timeout_ms(1000)
                .with_topic_data(vec![TopicProduceData::default()
                    .with_name(topic())
                    .with_partition_data(vec![PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(records))])]),
            8,
            7,
            Some(&client),
        )
        .unwrap(),
    ));
    // Two requests on one connection, the second pipelined behind the first.
    let mut pipelined = out[0].2.clone();
    pipelined.extend_from_slice(&out[2].2);
    out.push(("sim_request", "pipelined".into(), pipelined));
    out
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus")
}

#[test]
#[ignore = "writes the fuzz seed corpus into the source tree"]
fn write_fuzz_seed_corpus() {
    for (target, name, bytes) in seeds() {
        let dir = corpus_dir().join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("seed-{name}")), bytes).unwrap();
    }
}

#[test]
fn committed_seeds_match_the_encoders() {
    // Compressed payloads depend on codec library versions; the uncompressed and protocol
    // seeds must be byte-identical to what the encoders write now.
    for (target, name, bytes) in seeds() {
        if target == "decompress"
            || (target == "fetch_partition"
                && !name.starts_with("none")
                && !name.starts_with("read"))
        {
            continue;
        }
        let path = corpus_dir().join(target).join(format!("seed-{name}"));
        let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            committed,
            bytes,
            "{} differs from the encoders' output",
            path.display()
        );
    }
}
