//! Reaching (and breaking) the real 3-broker Apache Kafka cluster started by
//! `testing/kafka/run up --brokers 3`.
//!
//! Tests need the lines `up --brokers` prints: `KAFKA_BOOTSTRAP_CLUSTER=h:p,h:p,h:p`,
//! `KAFKA_CLUSTER_STATE_DIR=...` and `KAFKA_CLUSTER_VERSION=...`. Without them they print a
//! loud SKIPPED line and pass, unless `REQUIRE_KAFKA_CLUSTER=1` (set by CI), which turns the
//! missing cluster into a failure.

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};

use kafka_consumer::network::metadata::metadata_request_for_topics;
use kafka_consumer::network::{
    MetadataScope, NetworkClient, NetworkConfig, RequestOptions, Target,
};
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{GroupId, ListGroupsRequest, OffsetFetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use tokio::time::{sleep, Duration, Instant};

use super::real_broker::send_create_topic;

const HARNESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testing/kafka/run");

/// The cluster a test may break: its brokers' addresses and the harness state that lets
/// `kill`/`stop`/`restart` find the node processes.
#[derive(Clone)]
pub struct Cluster {
    pub bootstrap: Vec<String>,
    state_dir: String,
    version: String,
}

/// A 3-broker cluster this test starts itself on Kafka `version` (`testing/kafka/run up
/// --brokers 3` on `port`.. and `state_dir`), for tests that change what the shared cluster
/// must keep (its version). Stopped, and its data deleted, when dropped.
pub struct OwnCluster {
    pub cluster: Cluster,
    /// The first broker's port as started (`KAFKA_PORT`): brokers use it and the three after.
    port: u16,
}

impl OwnCluster {
    /// The cluster of a test named `name` (`UPGRADE`, `REBOOTSTRAP`), started on the version
    /// `version_var` names, on `KAFKA_<name>_PORT` (default `default_port`) and in
    /// `KAFKA_<name>_STATE_DIR` (default: a new temporary dir). Without `version_var` the test
    /// does not run: `None` after a loud SKIPPED line (`example` shows how to run it), or a
    /// failure when `REQUIRE_KAFKA_<name>=1`.
    pub fn from_env(
        name: &str,
        version_var: &str,
        default_port: u16,
        example: &str,
    ) -> Option<Self> {
        let var = |key: &str| std::env::var(key).ok().filter(|v| !v.is_empty());
        let require_var = format!("REQUIRE_KAFKA_{name}");
        let Some(version) = var(version_var) else {
            assert!(
                var(&require_var).as_deref() != Some("1"),
                "{require_var}=1 but {version_var} is not set"
            );
            // The stderr handle, not `eprintln!` (captured for passing tests): a skip must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: {version_var} is not set; the {} test on a cluster of its own did \
                 not run (e.g. {example})",
                name.to_lowercase()
            );
            return None;
        };
        let port_var = format!("KAFKA_{name}_PORT");
        let port = var(&port_var).map_or(default_port, |p| {
            p.parse()
                .unwrap_or_else(|_| panic!("{port_var} is a port, got {p:?}"))
        });
        let state_dir = var(&format!("KAFKA_{name}_STATE_DIR")).unwrap_or_else(|| {
            let dir = std::env::temp_dir().join(super::real_broker::unique(&format!(
                "kafka-{}",
                name.to_lowercase()
            )));
            dir.to_str().unwrap().to_owned()
        });
        Some(Self::start(&version, port, &state_dir))
    }

    pub fn start(version: &str, port: u16, state_dir: &str) -> Self {
        // A cluster left running in `state_dir` by an interrupted run would be reused by `up`,
        // on whatever versions its nodes reached: stopped first, so every run starts afresh.
        // Real-broker support only (compiled out under madsim): blocking child processes,
        // before the test's workload starts.
        #[allow(clippy::disallowed_methods)]
        let _ = Command::new("bash")
            .args([HARNESS, "down"])
            .env("KAFKA_STATE_DIR", state_dir)
            .env_remove("KAFKA_VERSION")
            .output();
        #[allow(clippy::disallowed_methods)]
        let output = Command::new("bash")
            .args([HARNESS, "up", "--brokers", "3"])
            .env("KAFKA_VERSION", version)
            .env("KAFKA_PORT", port.to_string())
            .env("KAFKA_STATE_DIR", state_dir)
            .output()
            .expect("run testing/kafka/run up --brokers 3");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "testing/kafka/run up --brokers 3 (Kafka {version}) failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let bootstrap = stdout
            .lines()
            .find_map(|line| line.strip_prefix("KAFKA_BOOTSTRAP_CLUSTER="))
            .expect("up --brokers prints KAFKA_BOOTSTRAP_CLUSTER");
        OwnCluster {
            cluster: Cluster {
                bootstrap: bootstrap.split(',').map(str::to_owned).collect(),
                state_dir: state_dir.to_owned(),
                version: version.to_owned(),
            },
            port,
        }
    }

    /// The first broker's port as started; the controller's is 3 above.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        // Real-broker support only (compiled out under madsim): a blocking child process.
        #[allow(clippy::disallowed_methods)]
        let _ = Command::new("bash")
            .args([HARNESS, "down"])
            .env("KAFKA_STATE_DIR", &self.cluster.state_dir)
            .env_remove("KAFKA_VERSION")
            .output();
    }
}

/// The running cluster, or `None` (after a visible SKIPPED line) when there is none.
pub fn cluster() -> Option<Cluster> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (
        var("KAFKA_BOOTSTRAP_CLUSTER"),
        var("KAFKA_CLUSTER_STATE_DIR"),
        var("KAFKA_CLUSTER_VERSION"),
    ) {
        (Some(bootstrap), Some(state_dir), Some(version)) => Some(Cluster {
            bootstrap: bootstrap.split(',').map(str::to_owned).collect(),
            state_dir,
            version,
        }),
        _ => {
            assert!(
                std::env::var("REQUIRE_KAFKA_CLUSTER").as_deref() != Ok("1"),
                "REQUIRE_KAFKA_CLUSTER=1 but KAFKA_BOOTSTRAP_CLUSTER, KAFKA_CLUSTER_STATE_DIR and \
                 KAFKA_CLUSTER_VERSION are not all set: the cluster tests cannot run"
            );
            // The stderr handle, not `eprintln!` (captured for passing tests): a skip must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: KAFKA_BOOTSTRAP_CLUSTER is not set; real-cluster tests did not run \
                 (start one with `testing/kafka/run up --brokers 3` on its own KAFKA_PORT and \
                 KAFKA_STATE_DIR, and export the KAFKA_* lines it prints)"
            );
            None
        }
    }
}

/// What the harness can do to one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeAction {
    /// SIGKILL: no controlled shutdown; the controller fences the broker when its session ends.
    Kill,
    /// SIGTERM: controlled shutdown (leadership moved away first).
    Stop,
    /// Controlled shutdown if running, then start on the same storage and wait until it answers.
    Restart,
}

impl NodeAction {
    pub fn command(self) -> &'static str {
        match self {
            NodeAction::Kill => "kill",
            NodeAction::Stop => "stop",
            NodeAction::Restart => "restart",
        }
    }
}

impl Cluster {
    /// The cluster's Kafka version (`KAFKA_CLUSTER_VERSION`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether the brokers run KIP-848 consumer groups (Kafka 4.0 and newer; the harness
    /// enables only `classic` on 3.9, where the protocol was an early-access preview).
    pub fn has_kip848(&self) -> bool {
        kafka_major(&self.version) >= 4
    }

    /// Runs `testing/kafka/run ACTION BROKER` on this cluster; panics with the harness's
    /// stderr if it fails. Runs on a blocking thread: a restart waits for the broker.
    pub async fn act(&self, action: NodeAction, broker: i32) {
        self.harness(&[action.command(), &broker.to_string()], &[])
            .await;
    }

    /// Restarts `node` (a broker id or `controller`) on Kafka `version`: one step of a rolling
    /// upgrade (controlled shutdown, then the same storage on the new release).
    pub async fn restart_on_version(&self, node: &str, version: &str) {
        self.harness(&["restart", node], &[("KAFKA_VERSION", version)])
            .await;
    }

    /// Restarts `broker` listening on, and advertising, `port`; the bootstrap list follows.
    pub async fn move_broker(&mut self, broker: i32, port: u16) {
        self.harness(
            &["restart", &broker.to_string()],
            &[("KAFKA_NODE_PORT", &port.to_string())],
        )
        .await;
        // Broker i is the i-th address, as `up --brokers` lists them.
        let index = usize::try_from(broker - 1).unwrap();
        self.bootstrap[index] = format!("127.0.0.1:{port}");
    }

    /// `testing/kafka/run features ARGS...`: Kafka's FeatureCommand on the newest version a
    /// node runs; returns its stdout.
    pub async fn features(&self, args: &[&str]) -> String {
        let mut argv = vec!["features"];
        argv.extend_from_slice(args);
        self.harness(&argv, &[]).await
    }

    /// Runs the harness with `args` on this cluster's state dir, with `env` (and
    /// `KAFKA_VERSION` only when `env` sets it: with it, `restart` moves a node to that
    /// version); panics with its stderr if it fails, else returns its stdout.
    async fn harness(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let state_dir = self.state_dir.clone();
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        // Real-broker support only (compiled out under madsim): a blocking child process.
        #[allow(clippy::disallowed_methods)]
        let output = tokio::task::spawn_blocking(move || {
            let mut command = Command::new("bash");
            command
                .arg(HARNESS)
                .args(&args)
                .env("KAFKA_STATE_DIR", state_dir)
                .env_remove("KAFKA_VERSION");
            command.envs(env);
            let output = command.output().expect("run testing/kafka/run");
            (args, output)
        })
        .await
        .unwrap();
        let (args, output) = output;
        assert!(
            output.status.success(),
            "testing/kafka/run {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// A network client bootstrapped from every broker (one may be down at any time).
    pub fn client(&self) -> NetworkClient {
        NetworkClient::new(NetworkConfig {
            bootstrap_servers: self.bootstrap.clone(),
            client_id: "real-cluster-test".to_owned(),
            request_timeout_ms: 10_000,
            ..NetworkConfig::default()
        })
        .unwrap()
    }

    /// Creates `name` with `partitions` partitions at the brokers' default replication factor
    /// and waits until every partition has a leader and a full ISR.
    pub async fn create_topic(&self, name: &str, partitions: i32) {
        let mut client = self.client();
        send_create_topic(&mut client, name, partitions).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let response = client
                .send(
                    Target::LeastLoaded,
                    metadata_request_for_topics([name], false),
                )
                .await
                .unwrap();
            let full_isr = response.body.topics.iter().all(|t| {
                t.partitions.len() == usize::try_from(partitions).unwrap()
                    && t.partitions
                        .iter()
                        .all(|p| p.leader_id.0 >= 0 && p.isr_nodes.len() == p.replica_nodes.len())
            });
            if full_isr && !response.body.topics.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "topic {name} never got leaders and full ISRs"
            );
            sleep(Duration::from_millis(200)).await;
        }
    }

    /// The broker that coordinates `group` now (FindCoordinator, retried while brokers move).
    pub async fn coordinator(&self, group: &str) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut client = self.client();
            // v4+ (every broker the harness runs): the batched coordinator_keys field.
            let request = FindCoordinatorRequest::default()
                .with_coordinator_keys(vec![StrBytes::from_string(group.to_owned())]);
            let last = match client.send(Target::LeastLoaded, request).await {
                Ok(found) => {
                    let (error, node) = match found.body.coordinators.first() {
                        Some(c) => (c.error_code, c.node_id.0),
                        None => (found.body.error_code, found.body.node_id.0),
                    };
                    if error == 0 && node >= 0 {
                        return node;
                    }
                    format!("error code {error}, node {node}")
                }
                Err(error) => error.to_string(),
            };
            assert!(
                Instant::now() < deadline,
                "no coordinator found for {group}: {last}"
            );
            sleep(Duration::from_millis(300)).await;
        }
    }

    /// The state of `group` as its coordinator lists it (ListGroups: `Stable`, `Empty`,
    /// `PreparingRebalance`, `Reconciling`, ...), or `None` when the coordinator could not be
    /// asked or does not list it.
    pub async fn group_state(&self, group: &str) -> Option<String> {
        let coordinator = self.coordinator(group).await;
        let mut client = self.client();
        // Node targets need the brokers' addresses: a Metadata answer first.
        let metadata = client
            .send(
                Target::LeastLoaded,
                metadata_request_for_topics(Vec::<&str>::new(), false),
            )
            .await
            .ok()?;
        client.update_metadata(&metadata.body, MetadataScope::ListedTopics);
        let listed = client
            .send(Target::Node(coordinator), ListGroupsRequest::default())
            .await
            .ok()?;
        listed
            .body
            .groups
            .iter()
            .find(|g| g.group_id.0.as_str() == group)
            .map(|g| g.group_state.to_string())
    }

    /// One OffsetFetch (v7, the single-group layout) of `topic`-`partition` for `group`,
    /// sent to the group's coordinator as `client` last found it, *without* `require_stable`:
    /// what an admin tool asks by default, and what Kafka's coordinator answers with a read at
    /// its `__consumer_offsets` high watermark. `None` on any error (the coordinator is moving);
    /// `Some(-1)` when nothing is committed.
    pub async fn committed_without_require_stable(
        &self,
        client: &mut NetworkClient,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> Option<i64> {
        let found = client
            .send(
                Target::LeastLoaded,
                FindCoordinatorRequest::default()
                    .with_coordinator_keys(vec![StrBytes::from_string(group.to_owned())]),
            )
            .await
            .ok()?;
        let coordinator = found.body.coordinators.first()?;
        if coordinator.error_code != 0 || coordinator.node_id.0 < 0 {
            return None;
        }
        if !client.is_connected(coordinator.node_id.0) {
            let metadata = client
                .send(
                    Target::LeastLoaded,
                    metadata_request_for_topics(Vec::<&str>::new(), false),
                )
                .await
                .ok()?;
            client.update_metadata(&metadata.body, MetadataScope::ListedTopics);
        }
        let request = OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
            .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_partition_indexes(vec![partition])]))
            .with_require_stable(false);
        let options = RequestOptions {
            version: Some(7),
            timeout_ms: Some(5_000),
        };
        let answer = client
            .send_with(Target::Node(coordinator.node_id.0), request, options)
            .await
            .ok()?;
        if answer.body.error_code != 0 {
            return None;
        }
        let fetched = answer.body.topics.first()?.partitions.first()?;
        (fetched.error_code == 0).then_some(fetched.committed_offset)
    }

    /// The leader broker of every partition of `topic`, by partition (retried while brokers
    /// move; a partition without a leader is left out).
    pub async fn leaders(&self, topic: &str) -> Vec<(i32, i32)> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut client = self.client();
            if let Ok(response) = client
                .send(
                    Target::LeastLoaded,
                    metadata_request_for_topics([topic], false),
                )
                .await
            {
                client.update_metadata(&response.body, MetadataScope::ListedTopics);
                if let Some(t) = client.metadata().topic(topic) {
                    let leaders: Vec<(i32, i32)> = t
                        .partitions
                        .values()
                        .filter_map(|p| p.leader_id.map(|l| (p.partition, l)))
                        .collect();
                    if !leaders.is_empty() {
                        return leaders;
                    }
                }
            }
            assert!(Instant::now() < deadline, "no leaders for {topic}");
            sleep(Duration::from_millis(300)).await;
        }
    }
}

/// Writes `count` records to `topic` with Kafka's own producer and waits until all are acked;
/// returns the count.
pub async fn produce(cluster: &Cluster, topic: &str, count: usize) -> usize {
    let mut producer = JavaProducer::start(cluster, topic);
    producer.write(count);
    // Real-broker support only (compiled out under madsim): waits for the producer process.
    #[allow(clippy::disallowed_methods)]
    let written = tokio::task::spawn_blocking(move || producer.finish());
    written.await.unwrap()
}

/// Kafka's own Java producer (ConsoleProducer: acks=all, idempotent, retries until its
/// delivery timeout) kept running while brokers fail, fed line by line.
pub struct JavaProducer {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Drains the producer's stderr as it runs (a full pipe would stall it).
    stderr: Option<std::thread::JoinHandle<String>>,
    pub written: usize,
}

impl JavaProducer {
    pub fn start(cluster: &Cluster, topic: &str) -> Self {
        let mut child = Command::new("bash")
            .args([HARNESS, "produce", "--topic", topic, "--compression", "lz4"])
            .args(["--bootstrap", &cluster.bootstrap.join(",")])
            .env("KAFKA_VERSION", &cluster.version)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run testing/kafka/run produce");
        let stdin = child.stdin.take();
        let mut pipe = child.stderr.take().unwrap();
        // Real-broker support only (compiled out under madsim): drains a child's pipe.
        #[allow(clippy::disallowed_methods)]
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut pipe, &mut text);
            text
        });
        JavaProducer {
            child,
            stdin,
            stderr: Some(stderr),
            written: 0,
        }
    }

    /// Writes `count` more keyed records `value-<n>` (n counts up from 0 over the run).
    pub fn write(&mut self, count: usize) {
        let stdin = self.stdin.as_mut().expect("producer still open");
        let mut chunk = String::new();
        for i in self.written..self.written + count {
            chunk.push_str(&format!("\\N\tkey-{i}\tvalue-{i}\n"));
        }
        stdin
            .write_all(chunk.as_bytes())
            .expect("the producer accepts records");
        stdin.flush().unwrap();
        self.written += count;
    }

    /// Closes stdin, waits until every record is sent (ConsoleProducer flushes on EOF) and
    /// asserts the producer exited cleanly; returns the count written.
    pub fn finish(mut self) -> usize {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        assert!(status.success(), "Kafka's ConsoleProducer failed: {stderr}");
        // ConsoleProducer logs a failed send and goes on: such a record was never acked.
        assert!(
            !stderr.contains("Error when sending message"),
            "the producer reported unacknowledged records: {stderr}"
        );
        self.written
    }
}

impl Drop for JavaProducer {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The major version of a `x.y.z` release string (0 when unreadable).
pub fn kafka_major(version: &str) -> u32 {
    version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}
