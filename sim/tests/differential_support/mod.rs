//! Shared by the fidelity tests (`differential_*.rs`, `java_consumer.rs`): a simulated cluster
//! configured like the real-broker harness, the real broker's address, and transcripts of
//! protocol conversations that can be compared between the two with ids, hosts and timing
//! masked.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::Write;
use std::sync::Arc;

use kafka_consumer::network::metadata::metadata_request_for_topics;
use kafka_consumer::network::{MetadataScope, NetworkClient, NetworkConfig, Target};
use kafka_consumer::rt::SeededRng;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::{CreateTopicsRequest, GroupId, TopicName};
use kafka_protocol::protocol::{Request, StrBytes};
use rand::RngCore;
use sim::config::ClusterConfig;
use sim::group::classic::ClassicGroupConfig;
use sim::group::consumer::ConsumerGroupConfig;
use sim::group::shard::GroupCoordinatorFactory;
use sim::kafka_version::KafkaVersion;
use sim::real::{LocalCluster, LocalClusterOptions};
use tokio::time::{sleep, Duration, Instant};

/// The group coordinator with the settings of `testing/kafka/run`'s broker (and `sim serve`):
/// no initial rebalance delay, classic minimum session 1 s, KIP-848 heartbeat 500 ms and
/// session 6 s.
pub fn harness_groups() -> GroupCoordinatorFactory {
    GroupCoordinatorFactory {
        classic: ClassicGroupConfig {
            group_initial_rebalance_delay_ms: 0,
            group_min_session_timeout_ms: 1_000,
            ..ClassicGroupConfig::default()
        },
        consumer: ConsumerGroupConfig {
            heartbeat_interval_ms: 500,
            session_timeout_ms: 6_000,
            ..ConsumerGroupConfig::default()
        },
        seed: 0,
        ..GroupCoordinatorFactory::default()
    }
}

/// A loopback cluster of `brokers` configured like the harness broker (3 offsets partitions,
/// auto-created topics with 1 partition), with `topics` (name → partitions) created up front.
pub async fn harness_cluster(
    brokers: usize,
    topics: &[(&str, i32)],
    kafka_version: KafkaVersion,
) -> LocalCluster {
    harness_cluster_with_groups(brokers, topics, kafka_version, harness_groups()).await
}

/// [`harness_cluster`] with group coordinators built by `groups`.
pub async fn harness_cluster_with_groups(
    brokers: usize,
    topics: &[(&str, i32)],
    kafka_version: KafkaVersion,
    groups: GroupCoordinatorFactory,
) -> LocalCluster {
    let mut config = ClusterConfig {
        auto_create_topics_enable: true,
        offsets_partitions: 3,
        num_partitions: 1,
        kafka_version,
        ..ClusterConfig::default()
    };
    for (topic, partitions) in topics {
        config.topics.insert((*topic).to_owned(), *partitions);
    }
    LocalCluster::start(LocalClusterOptions {
        brokers,
        base_port: 0,
        config,
        group_shards: Some(Arc::new(groups)),
    })
    .await
    .unwrap()
}

/// The Kafka release of the real broker at `bootstrap`, known by its ApiVersions table, so
/// that the simulated cluster it is compared with runs the same release. Panics (naming the
/// table) on a release the simulator does not model: the comparison would be meaningless.
pub async fn real_kafka_version(bootstrap: &str) -> KafkaVersion {
    let mut client = client(bootstrap);
    client
        .send(Target::LeastLoaded, metadata_request_for_topics([], false))
        .await
        .expect("Metadata from the real broker");
    let node = client
        .connected_nodes()
        .into_iter()
        .next()
        .expect("a connection to the real broker");
    let listed = |api| node.versions.broker_range(api as i16);
    KafkaVersion::identify(listed).unwrap_or_else(|| {
        panic!(
            "the real broker at {bootstrap} lists an ApiVersions table of no Kafka release the \
             simulator models ({:?}): {:?}",
            KafkaVersion::ALL,
            node.versions
        )
    })
}

/// Whether tests that need the real broker (or its toolchain) must run: `REQUIRE_KAFKA=1`, as
/// set by CI, turns a missing prerequisite into a failure instead of a skip.
pub fn required() -> bool {
    std::env::var("REQUIRE_KAFKA").as_deref() == Ok("1")
}

/// Reports a skipped test loudly, or fails it when `REQUIRE_KAFKA=1`.
pub fn skip(why: &str) {
    assert!(!required(), "REQUIRE_KAFKA=1 but {why}");
    // Written to the stderr handle, not with `eprintln!`, which libtest captures and hides for
    // passing tests: a skip must be seen.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

/// The real broker's bootstrap address (`KAFKA_BOOTSTRAP`), or `None` after a SKIPPED line.
pub fn real_bootstrap() -> Option<String> {
    match std::env::var("KAFKA_BOOTSTRAP") {
        Ok(bootstrap) if !bootstrap.is_empty() => Some(bootstrap),
        _ => {
            skip(
                "KAFKA_BOOTSTRAP is not set; the differential tests did not run (start a broker \
                 with `testing/kafka/run up` and export the KAFKA_BOOTSTRAP it prints)",
            );
            None
        }
    }
}

/// A name no earlier run used, so runs against a long-lived real broker never meet old state.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{:016x}", SeededRng::from_runtime().next_u64())
}

/// A random UUID string, like the member ids KIP-848 clients generate (ConsumerGroupHeartbeat
/// v1+).
pub fn random_uuid() -> String {
    let mut rng = SeededRng::from_runtime();
    let bits = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
    uuid::Uuid::from_u128(bits).to_string()
}

pub fn str(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

pub fn topic_name(s: &str) -> TopicName {
    TopicName(str(s))
}

pub fn group_id(s: &str) -> GroupId {
    GroupId(str(s))
}

/// A client for `bootstrap` with a generous timeout: group requests park for a rebalance.
pub fn client(bootstrap: &str) -> NetworkClient {
    NetworkClient::new(NetworkConfig {
        bootstrap_servers: vec![bootstrap.to_owned()],
        client_id: "fidelity".to_owned(),
        request_timeout_ms: 30_000,
        ..NetworkConfig::default()
    })
    .unwrap()
}

pub async fn send<R>(client: &mut NetworkClient, node: i32, request: R) -> R::Response
where
    R: Request + Send + 'static,
    R::Response: Send + 'static,
{
    client.send(Target::Node(node), request).await.unwrap().body
}

/// Creates `topic` (unless it exists) and waits until Metadata shows a leader for each of its
/// partitions; the client's metadata then holds it.
pub async fn create_topic(client: &mut NetworkClient, topic: &str, partitions: i32) {
    let create = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(topic_name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(-1)])
        .with_timeout_ms(15_000);
    let created = client.send(Target::LeastLoaded, create).await.unwrap();
    let code = created.body.topics[0].error_code;
    assert!(
        code == 0 || code == 36, // TOPIC_ALREADY_EXISTS
        "creating {topic}: error {code}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let response = client
            .send(
                Target::LeastLoaded,
                metadata_request_for_topics([topic], false),
            )
            .await
            .unwrap();
        client.update_metadata(&response.body, MetadataScope::ListedTopics);
        let ready = client.metadata().topic(topic).is_some_and(|t| {
            t.error.is_none()
                && t.partitions.len() == usize::try_from(partitions).unwrap()
                && t.partitions.values().all(|p| p.leader_id.is_some())
        });
        if ready {
            return;
        }
        assert!(Instant::now() < deadline, "topic {topic} never got leaders");
        sleep(Duration::from_millis(100)).await;
    }
}

/// The coordinator node of `group`, found with FindCoordinator (retried while the broker is
/// still loading or electing it); the client's metadata then knows that node.
pub async fn find_coordinator(client: &mut NetworkClient, group: &str) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = client
            .send(
                Target::LeastLoaded,
                FindCoordinatorRequest::default().with_coordinator_keys(vec![str(group)]),
            )
            .await
            .unwrap()
            .body;
        let (error, node) = match found.coordinators.first() {
            Some(c) => (c.error_code, c.node_id),
            None => (found.error_code, found.node_id),
        };
        if error == 0 {
            let metadata = client
                .send(Target::LeastLoaded, metadata_request_for_topics([], false))
                .await
                .unwrap();
            client.update_metadata(&metadata.body, MetadataScope::ListedTopics);
            return node.0;
        }
        assert!(
            Instant::now() < deadline,
            "no coordinator for {group}: error {error}"
        );
        sleep(Duration::from_millis(200)).await;
    }
}

/// Replaces run-specific strings (member ids, topic ids, names) by stable placeholders, the same
/// placeholder for the same string within one conversation, so that structure (who is leader,
/// which member got which assignment) survives masking.
#[derive(Default)]
pub struct Masks {
    seen: BTreeMap<String, String>,
    counts: BTreeMap<&'static str, usize>,
}

impl Masks {
    /// The placeholder of `value` as a `kind`; the empty string stays empty (it means "none" in
    /// many fields).
    pub fn mask(&mut self, kind: &'static str, value: &str) -> String {
        if value.is_empty() {
            return String::new();
        }
        if let Some(known) = self.seen.get(value) {
            return known.clone();
        }
        let n = self.counts.entry(kind).or_default();
        *n += 1;
        let placeholder = format!("<{kind}{n}>");
        self.seen.insert(value.to_owned(), placeholder.clone());
        placeholder
    }

    pub fn mask_str(&mut self, kind: &'static str, value: &mut StrBytes) {
        *value = str(&self.mask(kind, value.as_str()));
    }

    /// Registers the run's own names (group, topic) under fixed placeholders, so they mask the
    /// same on both brokers whatever their unique suffix.
    pub fn name(&mut self, value: &str, placeholder: &str) {
        self.seen
            .insert(value.to_owned(), format!("<{placeholder}>"));
    }

    /// `text` with every run-specific string seen so far replaced by its placeholder: error
    /// messages quote member and group ids.
    pub fn text(&self, text: &str) -> String {
        let mut known: Vec<(&String, &String)> = self.seen.iter().collect();
        // Longest first, so no value is replaced inside a longer one.
        known.sort_by_key(|(value, _)| std::cmp::Reverse(value.len()));
        let mut text = text.to_owned();
        for (value, placeholder) in known {
            text = text.replace(value.as_str(), placeholder);
        }
        text
    }

    pub fn uuid(&mut self, value: &mut uuid::Uuid) -> String {
        if value.is_nil() {
            "<nil>".to_owned()
        } else {
            self.mask("topic-id", &value.to_string())
        }
    }
}

/// The steps of one protocol conversation: a label and the masked response, `Debug`-printed.
#[derive(Default)]
pub struct Transcript {
    pub steps: Vec<(String, String)>,
}

impl Transcript {
    pub fn record(&mut self, label: impl Into<String>, masked: impl Debug) {
        self.note(label, format!("{masked:#?}"));
    }

    /// A step that is compared like a response (e.g. a derived fact). With `FIDELITY_TRACE=1`
    /// every step is also printed as it happens, to see how far a conversation got.
    pub fn note(&mut self, label: impl Into<String>, text: impl Into<String>) {
        let (label, text) = (label.into(), text.into());
        if std::env::var("FIDELITY_TRACE").as_deref() == Ok("1") {
            let _ = writeln!(std::io::stderr(), "--- {label}\n{text}");
        }
        self.steps.push((label, text));
    }
}

/// Panics with a readable, step-by-step diff when the two transcripts differ.
pub fn assert_same(conversation: &str, sim: &Transcript, real: &Transcript) {
    let mut report = String::new();
    let steps = sim.steps.len().max(real.steps.len());
    for i in 0..steps {
        let (sim_label, sim_text) = sim.steps.get(i).map_or(("<missing>", ""), |(l, t)| (l, t));
        let (real_label, real_text) = real.steps.get(i).map_or(("<missing>", ""), |(l, t)| (l, t));
        if sim_label == real_label && sim_text == real_text {
            continue;
        }
        report.push_str(&format!(
            "\n=== step {i}: sim `{sim_label}` vs kafka `{real_label}` ===\n"
        ));
        let sim_lines: Vec<&str> = sim_text.lines().collect();
        let real_lines: Vec<&str> = real_text.lines().collect();
        for line in diff_lines(&sim_lines, &real_lines) {
            report.push_str(&line);
            report.push('\n');
        }
    }
    assert!(
        report.is_empty(),
        "{conversation}: the simulated broker differs from Kafka \
         (- sim, + kafka, unmarked lines are shared context){report}"
    );
}

/// A line diff (longest common subsequence), printing changed lines with two lines of context.
fn diff_lines(a: &[&str], b: &[&str]) -> Vec<String> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            ops.push(('+', b[j]));
            j += 1;
        } else {
            ops.push(('-', a[i]));
            i += 1;
        }
    }
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k].0 != ' ').collect();
    let near = |k: usize| changed.iter().any(|&c| c.abs_diff(k) <= 2);
    let mut out = Vec::new();
    let mut skipped = false;
    for (k, (tag, line)) in ops.iter().enumerate() {
        if near(k) {
            if skipped {
                out.push("   ...".to_owned());
                skipped = false;
            }
            out.push(format!("{tag} {line}"));
        } else {
            skipped = true;
        }
    }
    out
}
