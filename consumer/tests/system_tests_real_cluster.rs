//! Kafka's own consumer system tests (`tests/kafkatest/tests/client/consumer_test.py`,
//! `OffsetValidationTest`), replayed on the real 3-broker cluster with the same steps and the
//! same verification, once with Kafka's `VerifiableConsumer` and once with ours
//! (`kafka-verifiable-consumer`), for each group protocol. The steps and checks are re-stated
//! from the Python (`support::verifiable::{Group, Verifier}`); every scenario runs one bounce
//! round where the Python runs five, to fit CI.
//!
//! Scenarios: `test_broker_rolling_bounce`, `test_consumer_bounce` (clean and killed, rolling
//! and all), `test_consumer_failure` (with and without auto-commit), `test_broker_failure`
//! (clean and hard, without auto-commit), `test_static_consumer_bounce_with_eager_assignment`
//! (static and dynamic, rolling), `test_static_consumer_persisted_after_rejoin` (rolling),
//! `test_fencing_static_consumer` (one conflicting consumer, the "stable" stage),
//! `test_group_consumption` and `AssignmentValidationTest.test_valid_assignment` (every
//! classic assignor and both remote assignors).
//!
//! Each passing test prints one row of the side-by-side table in TESTING.md (records
//! consumed, duplicates, rebalances, how long each rebalance the scenario caused took to
//! settle, failed commits), and appends it to the file `SYSTEST_REPORT` names, if set; a
//! failing one appends a `FAIL` row. Kafka's client runs only with `-- --include-ignored`.
//!
//! Needs the cluster (see `support::real_cluster`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

use tokio::time::Instant;

use support::real_broker::unique;
use support::real_cluster::{cluster, Cluster, NodeAction};
use support::verifiable::{Client, Group, Producer, Tp, Tracking};

/// The tests restart brokers and run three JVMs at a time: one at a time.
static CLUSTER_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const NUM_CONSUMERS: usize = 3;
/// The system tests' producer rate, records/s.
const THROUGHPUT: u32 = 500;
/// `consumption_timeout_sec`: the producer's request timeout (30 s) + 5 s.
const CONSUMPTION_TIMEOUT_S: u64 = 35;
/// `VerifiableConsumerTest`'s `session_timeout_sec`, passed as `--session-timeout`; the
/// broker rolling bounce raises it to 30 s and the static-membership tests to 60 s, as the
/// Python does.
const SESSION_TIMEOUT_S: u64 = 10;
/// How long [`await_members`] waits. The Python waits twice the session timeout; this allows
/// more. After a kill the group waits for the dead member's session to expire, and the
/// controller's periodic preferred-leader election (`leader.imbalance.check.interval.seconds`,
/// 300 s) moves `__consumer_offsets` leaders back after the broker tests' restarts: a
/// coordinator that takes the group over restarts every member's session timer when it
/// loads the group, so one move can double the wait (seen here: a kill at 45 s sessions took
/// 74 s to settle).
const MEMBERS_TIMEOUT_S: u64 = 60;
const RANGE_ASSIGNOR: &str = "org.apache.kafka.clients.consumer.RangeAssignor";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Classic,
    Consumer,
}

/// One scenario's setting: the cluster, a fresh topic, the group's flags.
struct Setting {
    cluster: Cluster,
    bootstrap: String,
    topic: String,
    partitions: i32,
    protocol: Protocol,
    /// `--session-timeout` (`session.timeout.ms`), classic protocol only: under the consumer
    /// protocol the session is the broker's `group.consumer.session.timeout.ms`, and the
    /// consumer refuses `session.timeout.ms` as Java's 4.x client does.
    session_timeout_s: u64,
    /// `partition.assignment.strategy` (classic) or `group.remote.assignor` (consumer
    /// protocol); `None`: RangeAssignor or `range`, as `setup_consumer` chooses.
    assignor: Option<&'static str>,
}

impl Setting {
    async fn new(cluster: Cluster, prefix: &str, protocol: Protocol, partitions: i32) -> Self {
        let topic = unique(prefix);
        cluster.create_topic(&topic, partitions).await;
        Setting {
            bootstrap: cluster.bootstrap.join(","),
            cluster,
            topic,
            partitions,
            protocol,
            session_timeout_s: SESSION_TIMEOUT_S,
            assignor: None,
        }
    }

    /// This setting with the consumers' session timeout raised to `seconds`.
    fn with_session_timeout(mut self, seconds: u64) -> Self {
        self.session_timeout_s = seconds;
        self
    }

    fn partition(&self) -> Tp {
        (self.topic.clone(), 0)
    }

    /// The table row of `scenario` run by `client` in this setting's group protocol, made
    /// once the cluster is held (a skipped test writes no row).
    fn row(&self, client: Client, scenario: impl std::fmt::Display) -> Row {
        let protocol = match self.protocol {
            Protocol::Classic => "classic",
            Protocol::Consumer => "consumer",
        };
        Row::new(format!("{scenario}, {protocol}"), client)
    }

    fn partitions(&self) -> Vec<Tp> {
        (0..self.partitions)
            .map(|p| (self.topic.clone(), p))
            .collect()
    }

    /// The consumers as `setup_consumer` makes them: the setting's assignor, no auto-commit
    /// unless asked.
    fn group(
        &self,
        client: Client,
        count: usize,
        group: &str,
        static_membership: bool,
        extra: &[&str],
    ) -> Group {
        let session_timeout_ms = (self.session_timeout_s * 1000).to_string();
        let mut args = vec![
            "--bootstrap-server",
            &self.bootstrap,
            "--topic",
            &self.topic,
        ];
        let tracking = match self.protocol {
            Protocol::Classic => {
                let strategy = self.assignor.unwrap_or(RANGE_ASSIGNOR);
                args.extend([
                    "--group-protocol",
                    "classic",
                    "--assignment-strategy",
                    strategy,
                    "--session-timeout",
                    &session_timeout_ms,
                ]);
                if strategy.contains("Cooperative") {
                    Tracking::Incremental
                } else {
                    Tracking::Eager
                }
            }
            Protocol::Consumer => {
                args.extend([
                    "--group-protocol",
                    "consumer",
                    "--group-remote-assignor",
                    self.assignor.unwrap_or("range"),
                ]);
                Tracking::ConsumerProtocol
            }
        };
        args.extend(extra);
        Group::new(client, count, group, &args, static_membership, tracking)
    }

    /// The cluster held for this test alone, with a fresh one-partition topic (as
    /// `OffsetValidationTest`'s); `None` after a loud skip.
    async fn take(
        prefix: &str,
        protocol: Protocol,
    ) -> Option<(tokio::sync::MutexGuard<'static, ()>, Setting)> {
        Self::take_with(prefix, protocol, 1).await
    }

    /// [`Setting::take`] with a topic of `partitions` partitions.
    async fn take_with(
        prefix: &str,
        protocol: Protocol,
        partitions: i32,
    ) -> Option<(tokio::sync::MutexGuard<'static, ()>, Setting)> {
        let cluster = kip848_cluster()?;
        let one_at_a_time = CLUSTER_LOCK.lock().await;
        Some((
            one_at_a_time,
            Setting::new(cluster, prefix, protocol, partitions).await,
        ))
    }

    /// `setup_producer` started, once 1000 of its records are acknowledged
    /// (`await_produced_messages`).
    async fn producing(&self, timeout_s: u64) -> Producer {
        let producer = Producer::start(&self.bootstrap, &self.topic, THROUGHPUT);
        producer.await_produced(1000, timeout_s).await;
        producer
    }
}

/// The running cluster on Kafka 4 (both protocols), or `None` after a loud skip.
fn kip848_cluster() -> Option<Cluster> {
    let cluster = cluster()?;
    assert!(
        cluster.has_kip848(),
        "the system-test scenarios run both group protocols: the cluster must be Kafka 4 or newer"
    );
    Some(cluster)
}

async fn await_all_members(group: &mut Group) {
    await_members(group, NUM_CONSUMERS).await;
}

/// `await_members`: `count` consumers joined ([`MEMBERS_TIMEOUT_S`]).
async fn await_members(group: &mut Group, count: usize) {
    group
        .wait_until("the consumers to join", MEMBERS_TIMEOUT_S, |g| {
            g.joined_nodes() == count
        })
        .await;
}

/// [`await_members`] after a step that made the group rebalance, begun at `step`: the time
/// from the step to `count` members joined is noted for the table.
async fn settle(group: &mut Group, count: usize, step: Instant) {
    await_members(group, count).await;
    group.note_rebalance(step.elapsed());
}

async fn await_consumed(group: &mut Group, more: i64) {
    let target = group.verifier().total_consumed() + more;
    group
        .wait_until("consumption", CONSUMPTION_TIMEOUT_S, |g| {
            g.verifier().total_consumed() >= target
        })
        .await;
}

/// `await_all_members_stabilized`: the coordinator lists the group as `Stable` (every member
/// has its assignment: a valid split seen before that may still change), then the members'
/// events add up to a valid assignment.
async fn await_stabilized(cluster: &Cluster, group: &mut Group, partition: &Tp) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let state = cluster.group_state(group.id()).await;
        if state.as_deref() == Some("Stable") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "group {} never became Stable (last state {state:?}); events:\n{}",
            group.id(),
            group.log()
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let partitions = [partition.clone()];
    group
        .wait_until("a valid assignment", 60, |g| {
            g.valid_assignment(&partitions)
        })
        .await;
}

/// After a clean stop of every consumer: the position is the number of records consumed
/// (the topic starts at offset 0, so nothing was consumed twice or skipped).
fn assert_position_is_total_consumed(group: &Group, partition: &Tp) {
    let position = group.verifier().positions().get(partition).copied();
    assert_eq!(
        position,
        Some(group.verifier().total_consumed()),
        "{:?}: total consumed records did not match the consumed position",
        group.client()
    );
}

/// Without auto-commit the consumers commit what they consumed before they stop: the last
/// commit is the position.
fn assert_last_commit_is_position(group: &Group, partition: &Tp) {
    assert_eq!(
        group.verifier().committed().get(partition),
        group.verifier().positions().get(partition),
        "{:?}: the last committed offset did not match the last consumed position",
        group.client()
    );
}

/// One row of the side-by-side table for a scenario and client: written when the test ends,
/// `FAIL` unless [`Row::pass`] filled it in first.
struct Row {
    scenario: String,
    client: Client,
    cells: Option<String>,
}

impl Row {
    fn new(scenario: impl Into<String>, client: Client) -> Self {
        Row {
            scenario: scenario.into(),
            client,
            cells: None,
        }
    }

    /// The scenario passed with `group`'s figures (the producer's records the group consumed,
    /// duplicates, rebalances the busiest member saw, settling times, failed commits).
    fn pass(&mut self, group: &Group) {
        let v = group.verifier();
        let waits = group
            .rebalance_waits()
            .iter()
            .map(|took| format!("{:.1}", took.as_secs_f64()))
            .collect::<Vec<_>>();
        self.cells = Some(format!(
            "pass | {} | {} | {} | {} | {}",
            v.total_consumed(),
            v.duplicates(),
            v.rebalances(),
            if waits.is_empty() {
                "–".to_owned()
            } else {
                waits.join(", ")
            },
            v.commit_failures()
        ));
    }
}

impl Drop for Row {
    fn drop(&mut self) {
        let client = match self.client {
            Client::Java => "Java",
            Client::Ours => "ours",
        };
        let cells = self.cells.as_deref().unwrap_or("FAIL | | | | |");
        let row = format!("| {} | {client} | {cells} |", self.scenario);
        println!("system test: {row}");
        if let Ok(path) = std::env::var("SYSTEST_REPORT") {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("open SYSTEST_REPORT");
            writeln!(file, "{row}").expect("append to SYSTEST_REPORT");
        }
    }
}

/// `test_broker_rolling_bounce`: each broker restarted in turn (controlled shutdown) while a
/// producer writes and three consumers read; no rebalance may follow, and nothing is lost or
/// read twice. The consumers run with `metadata.recovery.strategy=none`, as in the Python.
async fn broker_rolling_bounce(client: Client, protocol: Protocol) {
    let Some((_one_at_a_time, setting)) = Setting::take("systest-broker-bounce", protocol).await
    else {
        return;
    };
    // The Python's reason: sessions must outlast a broker's roll, or a member that reaches no
    // broker meanwhile is expelled and the group rebalances, which this test forbids.
    let setting = setting.with_session_timeout(30);
    let mut row = setting.row(client, "broker rolling bounce");
    let config = std::env::temp_dir().join(format!("{}.properties", unique("systest")));
    std::fs::write(&config, "metadata.recovery.strategy=none\n").unwrap();
    let config_path = config.to_string_lossy().into_owned();
    let _producer = setting.producing(30).await;
    let mut group = setting.group(
        client,
        NUM_CONSUMERS,
        &unique("systest"),
        false,
        &["--command-config", &config_path],
    );
    group.start();
    await_all_members(&mut group).await;
    await_stabilized(&setting.cluster, &mut group, &setting.partition()).await;
    let rebalances = group.verifier().rebalances();
    rolling_bounce_brokers(&setting, &mut group).await;
    let unexpected = group.verifier().rebalances() - rebalances;
    assert_eq!(
        unexpected,
        0,
        "{client:?} {protocol:?}: the broker rolling bounce caused {unexpected} unexpected group \
         rebalances; events:\n{}",
        group.log()
    );
    group.stop_all().await;
    assert_position_is_total_consumed(&group, &setting.partition());
    row.pass(&group);
    let _ = std::fs::remove_file(config);
}

/// One round of `rolling_bounce_brokers`: each broker restarted (controlled shutdown), then
/// every member joined and consuming again.
async fn rolling_bounce_brokers(setting: &Setting, group: &mut Group) {
    for broker in 1..=3 {
        setting.cluster.act(NodeAction::Restart, broker).await;
        await_all_members(group).await;
        await_consumed(group, 1).await;
    }
}

/// `test_consumer_bounce`: every consumer restarted, one at a time (`rolling`) or all
/// together (`all`), stopped cleanly (SIGTERM) or killed (SIGKILL, `clean` false); nothing
/// lost, and after clean stops nothing read twice. A killed member stays in the group until
/// its session times out, and what it consumed after its last commit is read again, so after
/// kills the position may only be at most the records consumed (the Python's check).
async fn consumer_bounce(client: Client, protocol: Protocol, all_at_once: bool, clean: bool) {
    let Some((_one_at_a_time, setting)) = Setting::take("systest-consumer-bounce", protocol).await
    else {
        return;
    };
    let mut row = setting.row(
        client,
        format!(
            "consumer bounce ({}{})",
            if all_at_once { "all" } else { "rolling" },
            if clean { "" } else { ", killed" }
        ),
    );
    let _producer = setting.producing(30).await;
    let mut group = setting.group(client, NUM_CONSUMERS, &unique("systest"), false, &[]);
    group.start();
    await_all_members(&mut group).await;
    bounce(&mut group, 0, all_at_once, clean).await;
    group.stop_all().await;
    if clean {
        assert_position_is_total_consumed(&group, &setting.partition());
    } else {
        let position = group
            .verifier()
            .positions()
            .get(&setting.partition())
            .copied();
        let consumed = group.verifier().total_consumed();
        assert!(
            position.is_some_and(|p| p <= consumed),
            "{client:?}: the position {position:?} is beyond the {consumed} records consumed"
        );
    }
    row.pass(&group);
}

/// One round of `bounce_all_consumers` or `rolling_bounce_consumers` over the nodes after the
/// first `keep_alive`, stopped cleanly or killed.
async fn bounce(group: &mut Group, keep_alive: usize, all_at_once: bool, clean: bool) {
    let bounced: Vec<usize> = group.node_ids().into_iter().skip(keep_alive).collect();
    if all_at_once {
        let step = Instant::now();
        for node in &bounced {
            group.stop_node(*node, clean).await;
        }
        let dead = bounced.len();
        group
            .wait_until("the consumers to shut down", 10, |g| g.dead_nodes() == dead)
            .await;
        for node in &bounced {
            group.start_node(*node);
        }
        settle(group, NUM_CONSUMERS, step).await;
        await_consumed(group, 1).await;
    } else {
        for node in bounced {
            let step = Instant::now();
            group.stop_node(node, clean).await;
            group
                .wait_until("the consumer to shut down", 60, |g| g.dead_nodes() == 1)
                .await;
            group.start_node(node);
            settle(group, NUM_CONSUMERS, step).await;
            await_consumed(group, 1).await;
        }
    }
}

/// `test_consumer_failure`, clean shutdown: the partition's owner is stopped; another consumer
/// takes the partition over and goes on. At the end the position is the number of records
/// consumed and, without auto-commit, the last commit is the position.
async fn consumer_failure(client: Client, protocol: Protocol, auto_commit: bool) {
    let Some((_one_at_a_time, setting)) = Setting::take("systest-consumer-failure", protocol).await
    else {
        return;
    };
    let mut row = setting.row(
        client,
        format!(
            "consumer failure ({})",
            if auto_commit {
                "auto-commit"
            } else {
                "manual commits"
            }
        ),
    );
    let partition = setting.partition();
    let extra: &[&str] = if auto_commit {
        &["--enable-autocommit"]
    } else {
        &[]
    };
    let mut group = setting.group(client, NUM_CONSUMERS, &unique("systest"), false, extra);
    group.start();
    await_all_members(&mut group).await;
    await_stabilized(&setting.cluster, &mut group, &partition).await;
    let owner = group.owner(&partition).expect("an owner of the partition");
    let _producer = setting.producing(30).await;
    let step = Instant::now();
    group.kill_node(owner, true);
    group
        .wait_until("the owner to close and another to take over", 60, |g| {
            g.joined_nodes() == NUM_CONSUMERS - 1 && g.owner(&partition).is_some_and(|o| o != owner)
        })
        .await;
    group.note_rebalance(step.elapsed());
    await_consumed(&mut group, 1000).await;
    group.stop_all().await;
    assert_position_is_total_consumed(&group, &partition);
    if !auto_commit {
        assert_last_commit_is_position(&group, &partition);
    }
    row.pass(&group);
}

/// `test_broker_failure`, without auto-commit: one broker stopped, by SIGTERM (`clean`,
/// controlled shutdown) or SIGKILL, while three consumers read what a producer writes. The
/// consumers must go on without a rebalance, and at the end the position is the number of
/// records consumed and the last commit the position. The broker is started again
/// afterwards (the system tests tear the cluster down instead).
///
/// The broker is the group's coordinator, where the Python picks the first node and leaves
/// "target the coordinator" as a TODO: heartbeats and commits must move to the new coordinator
/// too. The topic has three replicas, so the partition stays online whichever broker leads it.
async fn broker_failure(client: Client, protocol: Protocol, clean: bool) {
    let Some((_one_at_a_time, setting)) = Setting::take("systest-broker-failure", protocol).await
    else {
        return;
    };
    let mut row = setting.row(
        client,
        format!("broker failure ({})", if clean { "clean" } else { "hard" }),
    );
    let partition = setting.partition();
    let _producer = Producer::start(&setting.bootstrap, &setting.topic, THROUGHPUT);
    let mut group = setting.group(client, NUM_CONSUMERS, &unique("systest"), false, &[]);
    group.start();
    await_all_members(&mut group).await;
    await_stabilized(&setting.cluster, &mut group, &partition).await;
    let rebalances = group.verifier().rebalances();
    let action = if clean {
        NodeAction::Stop
    } else {
        NodeAction::Kill
    };
    let coordinator = setting.cluster.coordinator(group.id()).await;
    setting.cluster.act(action, coordinator).await;
    let consumed = std::panic::AssertUnwindSafe(await_consumed(&mut group, 1000));
    let outcome = catching_panic(consumed).await;
    setting.cluster.act(NodeAction::Restart, coordinator).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    assert_eq!(
        group.verifier().rebalances(),
        rebalances,
        "{client:?} {protocol:?}: a broker failure caused a rebalance; events:\n{}",
        group.log()
    );
    group.stop_all().await;
    assert_position_is_total_consumed(&group, &partition);
    assert_last_commit_is_position(&group, &partition);
    row.pass(&group);
}

/// Runs `future` to completion, catching a panic in it (so that a broker stopped by the
/// scenario is started again before the test fails).
async fn catching_panic<F: std::future::Future>(
    future: std::panic::AssertUnwindSafe<F>,
) -> std::thread::Result<F::Output> {
    use std::pin::pin;
    use std::task::Poll;
    let mut future = pin!(future.0);
    std::future::poll_fn(|cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    })
    .await
}

/// `test_static_consumer_bounce_with_eager_assignment`, classic protocol, rolling: every
/// consumer but the first restarted. Static members rejoin within the session without a
/// rebalance, so the first consumer (eager: it would revoke everything in one) sees no
/// revocation; dynamic members make it revoke.
async fn static_consumer_bounce(client: Client, static_membership: bool) {
    let Some((_one_at_a_time, setting)) =
        Setting::take("systest-static-bounce", Protocol::Classic).await
    else {
        return;
    };
    let setting = setting.with_session_timeout(60);
    let mut row = setting.row(
        client,
        format!(
            "{} consumer bounce, eager",
            if static_membership {
                "static"
            } else {
                "dynamic"
            }
        ),
    );
    let _producer = setting.producing(30).await;
    let mut group = setting.group(
        client,
        NUM_CONSUMERS,
        &unique("systest"),
        static_membership,
        &[],
    );
    group.start();
    await_all_members(&mut group).await;
    let before = group.revokes_for_alive(1);
    bounce(&mut group, 1, false, true).await;
    let revokes = group.revokes_for_alive(1) - before;
    if static_membership {
        assert_eq!(
            revokes,
            0,
            "{client:?}: bouncing static members triggered revocations; events:\n{}",
            group.log()
        );
    } else {
        assert_ne!(
            revokes, 0,
            "{client:?}: bouncing dynamic members (eager) triggered no revocation"
        );
    }
    group.stop_all().await;
    assert_position_is_total_consumed(&group, &setting.partition());
    row.pass(&group);
}

/// `test_static_consumer_persisted_after_rejoin`, rolling: three static consumers, each
/// restarted once (a static member rejoining gets a new member id, which the coordinator
/// must persist), then every broker restarted in turn (the group coordinator moves, and
/// loads the group from its log): the members must still be able to join and consume.
async fn static_consumer_persisted_after_rejoin(client: Client, protocol: Protocol) {
    let Some((_one_at_a_time, setting)) = Setting::take("systest-static-persisted", protocol).await
    else {
        return;
    };
    let setting = setting.with_session_timeout(60);
    let mut row = setting.row(client, "static member persisted after rejoin");
    let _producer = setting.producing(30).await;
    let mut group = setting.group(client, NUM_CONSUMERS, &unique("systest"), true, &[]);
    group.start();
    await_all_members(&mut group).await;
    bounce(&mut group, 0, false, true).await;
    rolling_bounce_brokers(&setting, &mut group).await;
    group.stop_all().await;
    assert_position_is_total_consumed(&group, &setting.partition());
    row.pass(&group);
}

/// `test_fencing_static_consumer`, one conflicting consumer, "stable" stage: three static
/// consumers settle; then a fourth starts with the first one's `group.instance.id`. Classic:
/// the newcomer takes the identity over and the member it replaces is fenced and stops.
/// Consumer protocol: the newcomer is refused (the identity is in use), never joins, and
/// stops; the group does not rebalance and keeps consuming.
async fn fencing_static_consumer(client: Client, protocol: Protocol) {
    let Some((_one_at_a_time, setting)) = Setting::take("systest-fencing", protocol).await else {
        return;
    };
    let setting = setting.with_session_timeout(60);
    let mut row = setting.row(client, "fencing a conflicting static member");
    let partition = setting.partition();
    let _producer = setting.producing(120).await;
    let group_id = unique("systest");
    let mut consumers = setting.group(client, NUM_CONSUMERS, &group_id, true, &[]);
    let mut conflict = setting.group(client, 1, &group_id, true, &[]);
    consumers.start();
    await_all_members(&mut consumers).await;
    await_stabilized(&setting.cluster, &mut consumers, &partition).await;
    let rebalances = consumers.verifier().rebalances();
    conflict.start();
    match protocol {
        Protocol::Classic => {
            conflict
                .wait_until("the conflicting consumer to join", 60, |g| {
                    g.joined_nodes() == 1
                })
                .await;
            consumers
                .wait_until("the fenced consumer to leave", 60, |g| {
                    g.joined_nodes() == NUM_CONSUMERS - 1
                })
                .await;
            consumers
                .wait_until("the fenced consumer to stop", 10, |g| g.dead_nodes() == 1)
                .await;
        }
        Protocol::Consumer => {
            await_consumed(&mut consumers, 1).await;
            assert_eq!(
                consumers.verifier().rebalances(),
                rebalances,
                "{client:?}: a static consumer joining with an instance id in use caused a rebalance"
            );
            assert_eq!(consumers.joined_nodes(), NUM_CONSUMERS);
            assert_eq!(conflict.joined_nodes(), 0);
            conflict
                .wait_until(
                    "the conflicting consumer to be fenced and shut down",
                    60,
                    |g| g.dead_nodes() == 1 && g.verifier().shut_down("node1"),
                )
                .await;
        }
    }
    conflict.stop_all().await;
    consumers.stop_all().await;
    row.pass(&consumers);
}

/// `test_group_consumption`: the consumers started one by one, then stopped one by one, the
/// partition read after every rebalance that causes; at the end the position is the number
/// of records consumed and the last commit the position.
async fn group_consumption(client: Client, protocol: Protocol) {
    let Some((_one_at_a_time, setting)) = Setting::take("systest-group", protocol).await else {
        return;
    };
    let mut row = setting.row(client, "group consumption");
    let partition = setting.partition();
    let mut group = setting.group(client, NUM_CONSUMERS, &unique("systest"), false, &[]);
    let _producer = Producer::start(&setting.bootstrap, &setting.topic, THROUGHPUT);
    for (started, node) in group.node_ids().into_iter().enumerate() {
        let step = Instant::now();
        group.start_node(node);
        settle(&mut group, started + 1, step).await;
        await_consumed(&mut group, 1).await;
    }
    for (stopped, node) in group.node_ids().into_iter().enumerate() {
        let step = Instant::now();
        group.stop_node(node, true).await;
        let left = NUM_CONSUMERS - (stopped + 1);
        if left > 0 {
            settle(&mut group, left, step).await;
            await_consumed(&mut group, 1).await;
        }
    }
    assert_position_is_total_consumed(&group, &partition);
    assert_last_commit_is_position(&group, &partition);
    row.pass(&group);
}

/// `AssignmentValidationTest.test_valid_assignment`: three consumers of a 6-partition topic
/// started one by one; after each start the members' assignments together hold every
/// partition exactly once (30 s).
async fn valid_assignment(client: Client, protocol: Protocol, assignor: &'static str) {
    let Some((_one_at_a_time, mut setting)) =
        Setting::take_with("systest-assignment", protocol, 6).await
    else {
        return;
    };
    let mut row = setting.row(
        client,
        format!(
            "valid assignment ({})",
            assignor.rsplit('.').next().unwrap_or(assignor)
        ),
    );
    setting.assignor = Some(assignor);
    let partitions = setting.partitions();
    let mut group = setting.group(client, NUM_CONSUMERS, &unique("systest"), false, &[]);
    for (started, node) in group.node_ids().into_iter().enumerate() {
        let step = Instant::now();
        group.start_node(node);
        settle(&mut group, started + 1, step).await;
        group
            .wait_until(
                &format!("a valid assignment of 6 partitions to {}", started + 1),
                30,
                |g| g.valid_assignment(&partitions),
            )
            .await;
    }
    group.stop_all().await;
    row.pass(&group);
}

/// Two tests per scenario: Kafka's client first, then ours, each on its own. Kafka's runs are
/// the baseline of the table in TESTING.md, not a test of this crate: ignored by default (they
/// double the suite's time), run with `-- --include-ignored`.
macro_rules! both_clients {
    ($($java:ident, $ours:ident => $scenario:ident($($arg:expr),*);)*) => {
        $(
            #[tokio::test]
            #[ignore = "Kafka's VerifiableConsumer, the baseline: run with --include-ignored"]
            async fn $java() {
                $scenario(Client::Java, $($arg),*).await;
            }

            #[tokio::test]
            async fn $ours() {
                $scenario(Client::Ours, $($arg),*).await;
            }
        )*
    };
}

both_clients! {
    broker_rolling_bounce_classic_java, broker_rolling_bounce_classic_ours
        => broker_rolling_bounce(Protocol::Classic);
    broker_rolling_bounce_consumer_java, broker_rolling_bounce_consumer_ours
        => broker_rolling_bounce(Protocol::Consumer);
    consumer_rolling_bounce_classic_java, consumer_rolling_bounce_classic_ours
        => consumer_bounce(Protocol::Classic, false, true);
    consumer_rolling_bounce_consumer_java, consumer_rolling_bounce_consumer_ours
        => consumer_bounce(Protocol::Consumer, false, true);
    consumer_bounce_all_classic_java, consumer_bounce_all_classic_ours
        => consumer_bounce(Protocol::Classic, true, true);
    consumer_bounce_all_consumer_java, consumer_bounce_all_consumer_ours
        => consumer_bounce(Protocol::Consumer, true, true);
    consumer_rolling_kill_classic_java, consumer_rolling_kill_classic_ours
        => consumer_bounce(Protocol::Classic, false, false);
    consumer_rolling_kill_consumer_java, consumer_rolling_kill_consumer_ours
        => consumer_bounce(Protocol::Consumer, false, false);
    consumer_kill_all_classic_java, consumer_kill_all_classic_ours
        => consumer_bounce(Protocol::Classic, true, false);
    consumer_kill_all_consumer_java, consumer_kill_all_consumer_ours
        => consumer_bounce(Protocol::Consumer, true, false);
    consumer_failure_classic_java, consumer_failure_classic_ours
        => consumer_failure(Protocol::Classic, false);
    consumer_failure_consumer_java, consumer_failure_consumer_ours
        => consumer_failure(Protocol::Consumer, false);
    consumer_failure_autocommit_classic_java, consumer_failure_autocommit_classic_ours
        => consumer_failure(Protocol::Classic, true);
    consumer_failure_autocommit_consumer_java, consumer_failure_autocommit_consumer_ours
        => consumer_failure(Protocol::Consumer, true);
    broker_failure_clean_classic_java, broker_failure_clean_classic_ours
        => broker_failure(Protocol::Classic, true);
    broker_failure_clean_consumer_java, broker_failure_clean_consumer_ours
        => broker_failure(Protocol::Consumer, true);
    broker_failure_hard_classic_java, broker_failure_hard_classic_ours
        => broker_failure(Protocol::Classic, false);
    broker_failure_hard_consumer_java, broker_failure_hard_consumer_ours
        => broker_failure(Protocol::Consumer, false);
    static_consumer_bounce_java, static_consumer_bounce_ours
        => static_consumer_bounce(true);
    dynamic_consumer_bounce_java, dynamic_consumer_bounce_ours
        => static_consumer_bounce(false);
    static_persisted_after_rejoin_classic_java, static_persisted_after_rejoin_classic_ours
        => static_consumer_persisted_after_rejoin(Protocol::Classic);
    static_persisted_after_rejoin_consumer_java, static_persisted_after_rejoin_consumer_ours
        => static_consumer_persisted_after_rejoin(Protocol::Consumer);
    fencing_static_consumer_classic_java, fencing_static_consumer_classic_ours
        => fencing_static_consumer(Protocol::Classic);
    fencing_static_consumer_consumer_java, fencing_static_consumer_consumer_ours
        => fencing_static_consumer(Protocol::Consumer);
    group_consumption_classic_java, group_consumption_classic_ours
        => group_consumption(Protocol::Classic);
    group_consumption_consumer_java, group_consumption_consumer_ours
        => group_consumption(Protocol::Consumer);
    valid_assignment_range_java, valid_assignment_range_ours
        => valid_assignment(Protocol::Classic, RANGE_ASSIGNOR);
    valid_assignment_round_robin_java, valid_assignment_round_robin_ours
        => valid_assignment(Protocol::Classic, "org.apache.kafka.clients.consumer.RoundRobinAssignor");
    valid_assignment_sticky_java, valid_assignment_sticky_ours
        => valid_assignment(Protocol::Classic, "org.apache.kafka.clients.consumer.StickyAssignor");
    valid_assignment_cooperative_sticky_java, valid_assignment_cooperative_sticky_ours
        => valid_assignment(Protocol::Classic, "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
    valid_assignment_remote_range_java, valid_assignment_remote_range_ours
        => valid_assignment(Protocol::Consumer, "range");
    valid_assignment_remote_uniform_java, valid_assignment_remote_uniform_ours
        => valid_assignment(Protocol::Consumer, "uniform");
}
