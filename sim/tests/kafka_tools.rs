//! Apache Kafka's own command-line tools against the cluster `sim serve` runs
//! (`LocalClusterOptions::serve`, three brokers): `kafka-topics.sh` (`TopicCommand`),
//! `kafka-configs.sh` (`ConfigCommand`), `kafka-consumer-groups.sh` (`ConsumerGroupCommand`) and
//! `kafka-delete-records.sh` (`DeleteRecordsCommand`), run as Java main classes from the
//! harness's Kafka jars (`testing/kafka/run classpath`, Kafka 4.4.0 unless `KAFKA_VERSION` says
//! otherwise). A group of our own consumer commits offsets in between; each tool's output and
//! exit status are checked, and what the tools changed is read back over the wire.
//!
//! Needs java and the harness jars (Maven resolves them on first use); without them the test
//! prints SKIPPED and passes, unless `REQUIRE_KAFKA=1`.
#![cfg(not(madsim))]

mod differential_support;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use differential_support::*;
use kafka_consumer::{
    AutoOffsetReset, Consumer, ConsumerConfig, OffsetAndMetadata, TopicPartition,
};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{BrokerId, FetchRequest, OffsetFetchRequest};
use sim::real::{LocalCluster, LocalClusterOptions};
use support::batch;

const TOPIC: &str = "tools";
const GROUP: &str = "tools-group";
/// Records per partition.
const RECORDS: [usize; 3] = [10, 5, 0];

/// Kafka's jars and a JVM to run their tools.
struct Tools {
    classpath: String,
    /// ConfigCommand's class in this release (it moved to `org.apache.kafka.tools` in 4.4).
    configs: String,
}

impl Tools {
    /// The tools, or `None` after a SKIPPED line (a failure with `REQUIRE_KAFKA=1`).
    fn find() -> Option<Self> {
        let java = Command::new("java")
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !java {
            skip("java is needed to run Kafka's command-line tools against the sim");
            return None;
        }
        let run = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testing/kafka/run");
        let output = Command::new("bash").arg(&run).arg("classpath").output();
        match output {
            Ok(o) if o.status.success() => Some(Self {
                classpath: String::from_utf8_lossy(&o.stdout).trim().to_owned(),
                configs: tool_class(&run, "ConfigCommand"),
            }),
            Ok(o) => {
                skip(&format!(
                    "the harness could not resolve Kafka's jars: {}",
                    String::from_utf8_lossy(&o.stderr)
                ));
                None
            }
            Err(error) => {
                skip(&format!("testing/kafka/run classpath did not run: {error}"));
                None
            }
        }
    }

    /// Runs `class` with `args`; (exit success, stdout, stderr).
    async fn run(&self, class: &str, args: &[&str]) -> (bool, String, String) {
        let mut command = Command::new("java");
        command
            .args(["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
            .arg("-cp")
            .arg(&self.classpath)
            .arg(class)
            .args(args);
        // Blocking, on a blocking thread: the cluster's tasks keep running on the test runtime.
        #[allow(clippy::disallowed_methods)] // real mode only: waiting for a child process
        let output = tokio::task::spawn_blocking(move || command.output())
            .await
            .unwrap()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Runs `class` and returns its stdout, failing the test if it failed.
    async fn ok(&self, class: &str, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(class, args).await;
        assert!(
            ok,
            "{class} {args:?} failed\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
        );
        stdout
    }
}

/// The class of Kafka's CLI tool `name` in the harness's release (`run tool-class`).
fn tool_class(run: &Path, name: &str) -> String {
    let output = Command::new("bash")
        .arg(run)
        .args(["tool-class", name])
        .output()
        .expect("testing/kafka/run tool-class");
    assert!(output.status.success(), "run tool-class {name}: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";
const GROUPS: &str = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
const DELETE_RECORDS: &str = "org.apache.kafka.tools.DeleteRecordsCommand";

/// (current offset, log end offset, lag) per partition of the `--describe` table, as printed.
fn described_offsets(stdout: &str) -> BTreeMap<i32, (String, String, String)> {
    stdout
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|words| words.len() >= 6 && words[0] == GROUP && words[1] == TOPIC)
        .map(|w| {
            (
                w[2].parse().unwrap(),
                (w[3].to_owned(), w[4].to_owned(), w[5].to_owned()),
            )
        })
        .collect()
}

/// The group's committed offset per partition (-1: none), by OffsetFetch.
async fn committed(bootstrap: &str) -> BTreeMap<i32, i64> {
    let mut client = client(bootstrap);
    let coordinator = find_coordinator(&mut client, GROUP).await;
    let fetched = send(
        &mut client,
        coordinator,
        OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
            .with_group_id(group_id(GROUP))
            .with_member_epoch(-1)
            .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                .with_name(topic_name(TOPIC))
                .with_partition_indexes(vec![0, 1, 2])]))]),
    )
    .await;
    assert_eq!(fetched.groups[0].error_code, 0);
    fetched.groups[0].topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.committed_offset))
        .collect()
}

/// A consumer of our own in `GROUP`, subscribed to `TOPIC`, that has read every record.
async fn consuming_member(bootstrap: &str) -> Consumer {
    let config = ConsumerConfig::builder()
        .bootstrap_servers([bootstrap.to_owned()])
        .group_id(GROUP)
        .client_id("tools-member")
        .auto_offset_reset(AutoOffsetReset::Earliest)
        .set("enable.auto.commit", "false")
        .build()
        .unwrap();
    let mut consumer = Consumer::new(config).unwrap();
    consumer.subscribe([TOPIC]).await.unwrap();
    let total: usize = RECORDS.iter().sum();
    let mut seen = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while seen < total {
        assert!(
            tokio::time::Instant::now() < deadline,
            "consumed {seen} of {total}"
        );
        seen += consumer
            .poll(Duration::from_millis(500))
            .await
            .unwrap()
            .iter()
            .count();
    }
    consumer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafkas_tools_work_against_sim_serve() {
    let Some(tools) = Tools::find() else {
        return;
    };
    let cluster = LocalCluster::start(LocalClusterOptions::serve(3, 0))
        .await
        .unwrap();
    let bootstrap = cluster.bootstrap_servers()[0].clone();
    let b = bootstrap.as_str();

    // kafka-topics.sh --create, then records appended as each partition's leader would.
    let created = tools
        .ok(
            TOPICS,
            &[
                "--bootstrap-server",
                b,
                "--create",
                "--topic",
                TOPIC,
                "--partitions",
                "3",
            ],
        )
        .await;
    assert!(created.contains("Created topic tools."), "{created}");
    for (partition, count) in RECORDS.iter().enumerate() {
        if *count > 0 {
            let values: Vec<String> = (0..*count).map(|i| format!("r{i}")).collect();
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            cluster
                .controller()
                .append(TOPIC, partition as i32, batch(&values))
                .unwrap();
        }
    }

    // kafka-configs.sh --alter, then --describe shows the topic's own config.
    let altered = tools
        .ok(
            &tools.configs,
            &[
                "--bootstrap-server",
                b,
                "--alter",
                "--entity-type",
                "topics",
                "--entity-name",
                TOPIC,
                "--add-config",
                "retention.ms=3600000",
            ],
        )
        .await;
    assert!(
        altered.contains("Completed updating config for topic tools."),
        "{altered}"
    );
    let configs = tools
        .ok(
            &tools.configs,
            &[
                "--bootstrap-server",
                b,
                "--describe",
                "--entity-type",
                "topics",
                "--entity-name",
                TOPIC,
            ],
        )
        .await;
    assert_eq!(
        configs.trim_end(),
        "Dynamic configs for topic tools are:\n  retention.ms=3600000 sensitive=false \
         synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}"
    );
    let unknown = tools
        .run(
            &tools.configs,
            &[
                "--bootstrap-server",
                b,
                "--alter",
                "--entity-type",
                "topics",
                "--entity-name",
                TOPIC,
                "--add-config",
                "no.such.config=1",
            ],
        )
        .await;
    assert!(!unknown.0, "an unknown config is refused");
    assert!(
        unknown
            .1
            .contains("Unknown topic config name: no.such.config")
            || unknown
                .2
                .contains("Unknown topic config name: no.such.config"),
        "{unknown:?}"
    );

    // kafka-topics.sh --describe: the summary line with the config set above, then one line per
    // partition with the leader, replicas and ISR the controller holds.
    let described = tools
        .ok(
            TOPICS,
            &["--bootstrap-server", b, "--describe", "--topic", TOPIC],
        )
        .await;
    let mut lines = described.lines();
    let summary = lines.next().unwrap_or_default();
    for part in [
        "Topic: tools",
        "PartitionCount: 3",
        "ReplicationFactor: 3",
        "retention.ms=3600000",
        "min.insync.replicas=1",
    ] {
        assert!(summary.contains(part), "{part} not in {summary:?}");
    }
    let expected: Vec<String> = {
        let state = cluster.controller().read();
        let join = |ids: &[i32]| ids.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
        state.topics[TOPIC]
            .partitions
            .iter()
            .enumerate()
            .map(|(i, p)| {
                format!(
                    "Topic: tools\tPartition: {i}\tLeader: {}\tReplicas: {}\tIsr: {}",
                    p.leader,
                    join(&p.replicas),
                    join(&p.isr)
                )
            })
            .collect()
    };
    let partitions: Vec<&str> = lines.map(str::trim).collect();
    assert_eq!(partitions.len(), 3, "{described}");
    for (line, expected) in partitions.iter().zip(&expected) {
        assert!(
            line.starts_with(expected.as_str()),
            "{line:?} vs {expected:?}"
        );
    }

    // A member of our consumer reads everything and commits 6 of partition 0 and all of 1.
    let mut member = consuming_member(b).await;
    let offsets = [(0, 6), (1, 5)]
        .into_iter()
        .map(|(p, offset)| {
            (
                TopicPartition::new(TOPIC, p),
                OffsetAndMetadata {
                    offset,
                    leader_epoch: None,
                    metadata: String::new(),
                },
            )
        })
        .collect();
    member
        .commit_sync(Some(offsets), Duration::from_secs(30))
        .await
        .unwrap();

    // kafka-consumer-groups.sh --describe: CURRENT-OFFSET, LOG-END-OFFSET and LAG.
    let described = tools
        .ok(
            GROUPS,
            &["--bootstrap-server", b, "--describe", "--group", GROUP],
        )
        .await;
    let rows = described_offsets(&described);
    assert_eq!(
        rows.get(&0),
        Some(&("6".into(), "10".into(), "4".into())),
        "{described}"
    );
    assert_eq!(
        rows.get(&1),
        Some(&("5".into(), "5".into(), "0".into())),
        "{described}"
    );
    assert!(
        described.contains("tools-member"),
        "the member is listed: {described}"
    );

    // --delete-offsets while the member is subscribed: Kafka's GROUP_SUBSCRIBED_TO_TOPIC.
    let refused = tools
        .run(
            GROUPS,
            &[
                "--bootstrap-server",
                b,
                "--delete-offsets",
                "--group",
                GROUP,
                "--topic",
                TOPIC,
            ],
        )
        .await;
    let said = format!("{}{}", refused.1, refused.2);
    assert!(
        said.contains("Encountered some partition-level error"),
        "{said}"
    );
    // The tool reports partition errors in its table and still exits 0.
    assert_eq!(
        said.matches("GroupSubscribedToTopicException").count(),
        3,
        "every partition refused: {said}"
    );
    assert_eq!(committed(b).await[&0], 6);
    member.close(Duration::from_secs(10)).await.unwrap();

    // kafka-delete-records.sh: partition 0 starts at 3 from now on.
    let json = std::env::temp_dir().join(format!("sim-kafka-tools-{}.json", std::process::id()));
    std::fs::write(
        &json,
        r#"{"partitions":[{"topic":"tools","partition":0,"offset":3}],"version":1}"#,
    )
    .unwrap();
    let deleted = tools
        .ok(
            DELETE_RECORDS,
            &[
                "--bootstrap-server",
                b,
                "--offset-json-file",
                json.to_str().unwrap(),
            ],
        )
        .await;
    let _ = std::fs::remove_file(&json);
    assert!(
        deleted.contains("partition: tools-0\tlow_watermark: 3"),
        "{deleted}"
    );
    let (leader, topic_id) = {
        let state = cluster.controller().read();
        let topic = &state.topics[TOPIC];
        (topic.partitions[0].leader, topic.topic_id)
    };
    let mut client = client(b);
    // The topic exists: this loads its leaders into the client's metadata.
    create_topic(&mut client, TOPIC, 3).await;
    let fetched = send(
        &mut client,
        leader,
        FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_max_bytes(1 << 20)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic_name(TOPIC))
                .with_topic_id(topic_id)
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20)])]),
    )
    .await;
    let partition = &fetched.responses[0].partitions[0];
    assert_eq!(
        partition.error_code, 1,
        "OFFSET_OUT_OF_RANGE below the new start"
    );

    // --reset-offsets --to-earliest --execute on the now empty group.
    let reset = tools
        .ok(
            GROUPS,
            &[
                "--bootstrap-server",
                b,
                "--reset-offsets",
                "--group",
                GROUP,
                "--topic",
                TOPIC,
                "--to-earliest",
                "--execute",
            ],
        )
        .await;
    assert!(reset.contains("NEW-OFFSET"), "{reset}");
    let after_reset = committed(b).await;
    assert_eq!(
        (after_reset[&0], after_reset[&1], after_reset[&2]),
        (3, 0, 0),
        "{reset}"
    );

    // --delete-offsets of partition 1 now that nobody is subscribed.
    let dropped = tools
        .ok(
            GROUPS,
            &[
                "--bootstrap-server",
                b,
                "--delete-offsets",
                "--group",
                GROUP,
                "--topic",
                "tools:1",
            ],
        )
        .await;
    assert!(dropped.contains("Successful"), "{dropped}");
    let after_drop = committed(b).await;
    assert_eq!((after_drop[&0], after_drop[&1]), (3, -1), "{dropped}");

    // --delete removes the group and its offsets.
    let removed = tools
        .ok(
            GROUPS,
            &["--bootstrap-server", b, "--delete", "--group", GROUP],
        )
        .await;
    assert!(
        removed.contains("Deletion of requested consumer groups ('tools-group') was successful."),
        "{removed}"
    );
    assert_eq!(committed(b).await[&0], -1);
    let listed = tools.ok(GROUPS, &["--bootstrap-server", b, "--list"]).await;
    assert!(!listed.lines().any(|l| l.trim() == GROUP), "{listed}");
}
