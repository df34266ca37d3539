//! Fills the benchmark topics with Kafka's own Java producer (`ProducerPerformance` from
//! kafka-tools 4.1.1, the class behind `kafka-producer-perf-test.sh`).
//!
//! One topic per record size and codec the workloads read, 12 partitions, named after its record count so a topic
//! is filled once and reused by later runs. Values are drawn at random from 10,000 distinct
//! log-like lines of exactly the record size (a JSON-ish prefix, then random hex), so the codecs
//! compress about as they would real events, not a single repeated payload. Keys are null.
//! Producer: acks=1, linger.ms=20, batch.size=64 KiB (with the default 16 KiB a pilot fill of
//! 100 B records ran at ~70,000 records/s here, too slow for topics this size). The members
//! workload's topic is filled the same way, 100 B uncompressed, over 60 partitions
//! ([`members_topic`]); the partitions workload's topics below.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::{
    bench_dir, kafka_classpath, output, partition_layout, partition_topic_records, Codec, Options,
    PARTITIONS,
};

/// The topic holding `records` records of `size` bytes produced with `codec`.
pub fn topic_name(size: usize, codec: Codec, records: u64) -> String {
    format!("bench-{size}b-{}-{records}", codec.name())
}

const TOOL_JVM: [&str; 3] = ["-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"];

pub(crate) fn tool(classpath: &str, class: &str) -> Command {
    let mut command = Command::new("java");
    command.args(TOOL_JVM).arg("-cp").arg(classpath).arg(class);
    command
}

/// 10,000 distinct lines, each exactly `size` bytes, deterministic (xorshift, fixed seed).
fn payload_file(size: usize) -> Result<PathBuf, String> {
    let path = bench_dir().join(format!("target/payloads-{size}.txt"));
    if path.exists() {
        return Ok(path);
    }
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15 ^ size as u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    const ACTIONS: [&str; 5] = ["view", "click", "add_to_cart", "checkout", "search"];
    let mut text = String::new();
    for seq in 0..10_000u64 {
        let mut line = String::new();
        let _ = write!(
            line,
            "{{\"seq\":{seq},\"user\":\"u{:06}\",\"action\":\"{}\",\"ts\":{},\"data\":\"",
            next() % 1_000_000,
            ACTIONS[(next() % 5) as usize],
            1_790_000_000_000u64 + next() % 1_000_000_000,
        );
        while line.len() < size - 2 {
            let _ = write!(line, "{:x}", next() % 16);
        }
        line.truncate(size - 2);
        line.push_str("\"}");
        debug_assert_eq!(line.len(), size);
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::create_dir_all(bench_dir().join("target")).map_err(|e| e.to_string())?;
    std::fs::write(&path, text).map_err(|e| e.to_string())?;
    Ok(path)
}

/// The partitions workload's topics for `total` partitions ([`partition_layout`]): 100 B
/// records, uncompressed, [`crate::SCALE_RECORDS`] over all of them, named after the layout
/// and each topic's record count.
pub fn partition_topics(total: u32) -> Vec<String> {
    let (topics, per_topic) = partition_layout(total);
    let records = partition_topic_records(total);
    (0..topics)
        .map(|i| format!("bench-parts-{topics}x{per_topic}-{i:03}-{records}"))
        .collect()
}

/// The sum of the end offsets of every topic in a `GetOffsetShell` listing
/// (`topic:partition:offset` lines), by topic.
pub fn end_offsets_by_topic(listing: &str) -> std::collections::BTreeMap<String, u64> {
    let mut sums = std::collections::BTreeMap::new();
    for line in listing.lines() {
        let mut fields = line.trim().rsplitn(3, ':');
        let (Some(offset), Some(_partition), Some(topic)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if let Ok(offset) = offset.parse::<u64>() {
            *sums.entry(topic.to_owned()).or_insert(0) += offset;
        }
    }
    sums
}

/// Fills the partitions workload's topics for every partition count of the run (reused when
/// a topic already holds its records). Batches of 4 KiB (about 35 records) so the sticky
/// partitioner spreads each topic's records over all its partitions.
fn fill_partitions(options: &Options, classpath: &str) -> Result<(), String> {
    let payloads = payload_file(100)?;
    for total in options.partition_totals() {
        let (_, per_topic) = partition_layout(total);
        let records = partition_topic_records(total);
        let topics = partition_topics(total);
        let prefix = topics[0]
            .rsplitn(3, '-')
            .nth(2)
            .unwrap_or_default()
            .to_owned();
        let listing = |pattern: &str| {
            output(
                tool(classpath, "org.apache.kafka.tools.GetOffsetShell").args([
                    "--bootstrap-server",
                    &options.bootstrap,
                    "--topic",
                    pattern,
                ]),
            )
            .unwrap_or_default()
        };
        let have = end_offsets_by_topic(&listing(&format!("{prefix}-.*")));
        let started = Instant::now();
        let mut filled = 0;
        for topic in &topics {
            match have.get(topic).copied().unwrap_or(0) {
                n if n == records => continue,
                0 => {}
                n => {
                    return Err(format!(
                        "{topic} holds {n} records, not {records} (an interrupted fill?): \
                         delete it with TopicCommand --delete or restart the broker with a \
                         fresh state dir"
                    ))
                }
            }
            output(
                tool(classpath, "org.apache.kafka.tools.TopicCommand").args([
                    "--bootstrap-server",
                    &options.bootstrap,
                    "--create",
                    "--if-not-exists",
                    "--topic",
                    topic,
                    "--partitions",
                    &per_topic.to_string(),
                    "--replication-factor",
                    "1",
                ]),
            )?;
            output(
                tool(classpath, "org.apache.kafka.tools.ProducerPerformance")
                    .args(["--topic", topic, "--num-records", &records.to_string()])
                    .args(["--throughput", "-1", "--payload-file"])
                    .arg(&payloads)
                    .args([
                        "--producer-props",
                        &format!("bootstrap.servers={}", options.bootstrap),
                        "acks=1",
                        "linger.ms=5",
                        "batch.size=4096",
                    ]),
            )?;
            filled += 1;
        }
        std::thread::sleep(Duration::from_millis(500));
        let have = end_offsets_by_topic(&listing(&format!("{prefix}-.*")));
        if let Some(short) = topics
            .iter()
            .find(|t| have.get(*t).copied().unwrap_or(0) != records)
        {
            return Err(format!(
                "{short}: produced {records}, broker has {}",
                have.get(short).copied().unwrap_or(0)
            ));
        }
        eprintln!(
            "kafka-bench: {total} partitions ({} topics): {filled} filled, {} reused ({:.0?})",
            topics.len(),
            topics.len() - filled,
            started.elapsed()
        );
    }
    Ok(())
}

/// The sum of the topic's end offsets (0 when it does not exist).
fn end_offsets(classpath: &str, bootstrap: &str, topic: &str) -> u64 {
    let listed = output(
        tool(classpath, "org.apache.kafka.tools.GetOffsetShell").args([
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
        ]),
    )
    .unwrap_or_default();
    listed
        .lines()
        .filter_map(|line| line.rsplit(':').next()?.trim().parse::<u64>().ok())
        .sum()
}

pub fn fill(options: &Options) -> Result<(), String> {
    if options.bootstrap.is_empty() {
        return Err("KAFKA_BOOTSTRAP is not set (start the broker with bench/run)".to_owned());
    }
    let classpath = kafka_classpath()?;
    // Only the topics the run's workloads read (`Options::filled_topics`).
    for (size, codec) in options.filled_topics() {
        let records = options.records(size);
        let topic = topic_name(size, codec, records);
        fill_topic(
            &classpath,
            &options.bootstrap,
            &topic,
            PARTITIONS,
            records,
            size,
            codec,
        )?;
    }
    if options.modes.iter().any(|m| m.is_members()) {
        let records = options.members.records;
        let topic = members_topic(records);
        let partitions = crate::members::PARTITIONS;
        fill_topic(
            &classpath,
            &options.bootstrap,
            &topic,
            partitions,
            records,
            100,
            Codec::None,
        )?;
    }
    fill_partitions(options, &classpath)
}

/// The members workload's topic: `records` records of 100 B, uncompressed, over
/// [`crate::members::PARTITIONS`] partitions.
pub fn members_topic(records: u64) -> String {
    format!(
        "bench-members-100b-{}p-{records}",
        crate::members::PARTITIONS
    )
}

/// Creates `topic` with `partitions` partitions and produces `records` records of `size`
/// bytes with `codec` into it, unless it already holds exactly that many (a topic is filled
/// once and reused); a topic holding another count is an error (an interrupted fill).
fn fill_topic(
    classpath: &str,
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    records: u64,
    size: usize,
    codec: Codec,
) -> Result<(), String> {
    let payloads = payload_file(size)?;
    let have = end_offsets(classpath, bootstrap, topic);
    if have == records {
        eprintln!("kafka-bench: {topic}: {have} records, reused");
        return Ok(());
    }
    if have > 0 {
        return Err(format!(
            "{topic} holds {have} records, not {records} (an interrupted fill?): delete it \
             with TopicCommand --delete or restart the broker with a fresh state dir"
        ));
    }
    output(
        tool(classpath, "org.apache.kafka.tools.TopicCommand").args([
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--if-not-exists",
            "--topic",
            topic,
            "--partitions",
            &partitions.to_string(),
            "--replication-factor",
            "1",
        ]),
    )?;
    eprintln!("kafka-bench: {topic}: producing {records} records ...");
    let started = Instant::now();
    let produced = output(
        tool(classpath, "org.apache.kafka.tools.ProducerPerformance")
            .args(["--topic", topic, "--num-records", &records.to_string()])
            .args(["--throughput", "-1", "--payload-file"])
            .arg(&payloads)
            .args([
                "--producer-props",
                &format!("bootstrap.servers={bootstrap}"),
                &format!("compression.type={}", codec.name()),
                "acks=1",
                "linger.ms=20",
                "batch.size=65536",
            ]),
    )?;
    let summary = produced.lines().last().unwrap_or_default();
    eprintln!(
        "kafka-bench: {topic}: {summary} ({:.0?})",
        started.elapsed()
    );
    // The last acks can race the end-offset lookup; give the log a moment.
    std::thread::sleep(Duration::from_millis(500));
    let have = end_offsets(classpath, bootstrap, topic);
    if have != records {
        return Err(format!("{topic}: produced {records}, broker has {have}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_topics_follow_the_layout() {
        assert_eq!(partition_topics(12), ["bench-parts-1x12-000-1200000"]);
        let big = partition_topics(6_000);
        assert_eq!(big.len(), 100);
        assert_eq!(big[99], "bench-parts-100x60-099-12000");
    }

    #[test]
    fn end_offsets_sum_per_topic() {
        let listing = "bench-parts-10x12-000-12000:0:990\n\
                       bench-parts-10x12-000-12000:1:1010\n\
                       bench-parts-10x12-001-12000:0:7\n\
                       some warning line\n";
        let sums = end_offsets_by_topic(listing);
        assert_eq!(sums["bench-parts-10x12-000-12000"], 2000);
        assert_eq!(sums["bench-parts-10x12-001-12000"], 7);
        assert_eq!(sums.len(), 2);
    }
}
