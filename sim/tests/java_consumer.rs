//! Apache Kafka's own Java clients against the simulated cluster: `testing/kafka/run java-group`
//! (`testing/kafka/java/GroupScenario.java`, kafka-clients of the harness's release) runs a KafkaProducer and a
//! three-member KafkaConsumer group — one member leaves, another joins — once with
//! `group.protocol=classic` and once with `group.protocol=consumer`. The test checks from the
//! program's output that every produced record was consumed and that the group rebalanced on the
//! leave and on the join, and with ListOffsets/OffsetFetch that the committed offsets reach the
//! log end of every partition.
//!
//! Needs java, javac and the harness jars (Maven resolves them on first use); without them the
//! test prints SKIPPED and passes, unless `REQUIRE_KAFKA=1`.
#![cfg(not(madsim))]

mod differential_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use differential_support::*;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, OffsetFetchRequest};
use sim::kafka_version::KafkaVersion;

const PARTITIONS: i32 = 6;
/// Records per produce phase (three phases).
const RECORDS: usize = 120;

fn run_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testing/kafka/run")
}

/// Whether `tool -version` runs.
fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What the Java program printed, parsed.
#[derive(Default)]
struct Output {
    /// (partition, offset) of every acknowledged record.
    produced: BTreeSet<(i32, i64)>,
    /// (partition, offset) → the members that consumed it.
    consumed: BTreeMap<(i32, i64), Vec<String>>,
    /// Per phase (the phase marker last printed), each member's assignments in order.
    assignments: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    done: bool,
}

fn parse(stdout: &str) -> Output {
    let mut out = Output::default();
    let mut phase = "start".to_owned();
    for line in stdout.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["PRODUCED", p, o] => {
                out.produced
                    .insert((p.parse().unwrap(), o.parse().unwrap()));
            }
            ["RECORD", member, p, o] => out
                .consumed
                .entry((p.parse().unwrap(), o.parse().unwrap()))
                .or_default()
                .push((*member).to_owned()),
            ["ASSIGNMENT", member, partitions] => out
                .assignments
                .entry(phase.clone())
                .or_default()
                .entry((*member).to_owned())
                .or_default()
                .push((*partitions).to_owned()),
            ["PHASE", name] => phase = (*name).to_owned(),
            ["DONE"] => out.done = true,
            _ => panic!("unexpected output line {line:?}"),
        }
    }
    out
}

/// The last assignment `member` reported in `phase`, as partitions.
fn last_assignment(out: &Output, phase: &str, member: &str) -> Option<BTreeSet<i32>> {
    let last = out.assignments.get(phase)?.get(member)?.last()?;
    Some(if last == "-" {
        BTreeSet::new()
    } else {
        last.split(',').map(|p| p.parse().unwrap()).collect()
    })
}

async fn group_scenario(protocol: &str) {
    if !(have("java") && have("javac")) {
        skip("java and javac are needed to run Kafka's Java consumer against the sim");
        return;
    }
    let topic = format!("java-{protocol}");
    let group = format!("java-group-{protocol}");
    let cluster = harness_cluster(3, &[(&topic, PARTITIONS)], KafkaVersion::default()).await;
    let bootstrap = cluster.bootstrap_servers()[0].clone();

    let started = tokio::time::Instant::now();
    let (script, args) = (
        run_script(),
        [
            "java-group",
            "--bootstrap",
            &bootstrap,
            "--topic",
            &topic,
            "--group",
            &group,
            "--protocol",
            protocol,
            "--partitions",
            &PARTITIONS.to_string(),
            "--records",
            &RECORDS.to_string(),
        ]
        .map(str::to_owned),
    );
    // Blocking, on a blocking thread: the cluster's tasks keep running on the test runtime.
    #[allow(clippy::disallowed_methods)] // real mode only: waiting for a child process
    let output = tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .arg(script)
            .args(args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "java-group --protocol {protocol} failed ({}):\n--- stderr ---\n{stderr}\n--- stdout (tail) ---\n{}",
        output.status,
        stdout.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
    );
    let out = parse(&stdout);
    assert!(out.done, "the program did not finish:\n{stdout}");

    // Every record was produced and consumed, and every member took part.
    assert_eq!(out.produced.len(), 3 * RECORDS);
    let missing: Vec<_> = out
        .produced
        .iter()
        .filter(|r| !out.consumed.contains_key(r))
        .collect();
    assert!(missing.is_empty(), "records never consumed: {missing:?}");
    for member in ["m0", "m1", "m2", "m3"] {
        assert!(
            out.consumed
                .values()
                .any(|ms| ms.iter().any(|m| m == member)),
            "{member} consumed nothing"
        );
    }

    // The group rebalanced on the leave and on the join.
    let all: BTreeSet<i32> = (0..PARTITIONS).collect();
    let before: Vec<_> = ["m0", "m1", "m2"]
        .map(|m| last_assignment(&out, "start", m).unwrap_or_default())
        .into();
    assert!(before.iter().all(|a| !a.is_empty()), "{before:?}");
    // A member that reported nothing in the phase kept its assignment.
    let after_leave: Vec<_> = [0, 1]
        .map(|i| {
            last_assignment(&out, "leave", ["m0", "m1"][i]).unwrap_or_else(|| before[i].clone())
        })
        .into();
    assert_eq!(
        after_leave[0]
            .union(&after_leave[1])
            .copied()
            .collect::<BTreeSet<_>>(),
        all,
        "m0 and m1 took over m2's partitions"
    );
    assert_ne!(
        after_leave[..],
        before[..2],
        "the leave changed assignments"
    );
    // Under load the join can complete after the scenario moved on to its next phase.
    let m3 = ["rejoin", "produce-3", "close"]
        .into_iter()
        .find_map(|phase| last_assignment(&out, phase, "m3"))
        .expect("m3 got an assignment");
    assert!(!m3.is_empty(), "the rejoining member got partitions");

    // Committed offsets cover everything: each partition's commit is its log end.
    let mut client = client(&bootstrap);
    create_topic(&mut client, &topic, PARTITIONS).await;
    let leaders: BTreeMap<i32, i32> = client
        .metadata()
        .topic(&topic)
        .unwrap()
        .partitions
        .iter()
        .map(|(p, info)| (*p, info.leader_id.unwrap()))
        .collect();
    let mut log_end = BTreeMap::new();
    for (partition, leader) in &leaders {
        let listed = send(
            &mut client,
            *leader,
            ListOffsetsRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_topics(vec![ListOffsetsTopic::default()
                    .with_name(topic_name(&topic))
                    .with_partitions(vec![ListOffsetsPartition::default()
                        .with_partition_index(*partition)
                        .with_timestamp(-1)])]),
        )
        .await;
        log_end.insert(*partition, listed.topics[0].partitions[0].offset);
    }
    let produced_per_partition: BTreeMap<i32, i64> =
        out.produced.iter().fold(BTreeMap::new(), |mut m, (p, _)| {
            *m.entry(*p).or_default() += 1;
            m
        });
    assert_eq!(log_end, produced_per_partition, "log end offsets");

    let coordinator = find_coordinator(&mut client, &group).await;
    let fetched = send(
        &mut client,
        coordinator,
        OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
            .with_group_id(group_id(&group))
            .with_member_epoch(-1)
            .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                .with_name(topic_name(&topic))
                .with_partition_indexes((0..PARTITIONS).collect())]))]),
    )
    .await;
    assert_eq!(fetched.groups[0].error_code, 0);
    let committed: BTreeMap<i32, i64> = fetched.groups[0].topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.committed_offset))
        .collect();
    assert_eq!(committed, log_end, "committed offsets reach the log end");

    let duplicates = out.consumed.values().filter(|ms| ms.len() > 1).count();
    let _ = writeln_stderr(&format!(
        "java-group --protocol {protocol}: {} records, {duplicates} redelivered, {:.1} s",
        out.produced.len(),
        started.elapsed().as_secs_f64()
    ));
}

/// Progress for whoever runs the test with `--nocapture`.
fn writeln_stderr(line: &str) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(std::io::stderr(), "{line}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_kafka_consumer_classic_group_on_the_sim() {
    group_scenario("classic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_kafka_consumer_kip848_group_on_the_sim() {
    group_scenario("consumer").await;
}
