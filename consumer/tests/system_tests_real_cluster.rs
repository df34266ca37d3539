//! Kafka's own consumer system tests (`tests/kafkatest/tests/client/consumer_test.py`,
//! `OffsetValidationTest`), replayed on the real 3-broker cluster with the same steps and the
//! same verification, once with Kafka's `VerifiableConsumer` and once with ours
//! (`kafka-verifiable-consumer`), for each group protocol. The steps and checks are re-stated
//! from the Python (`support::verifiable::{Group, Verifier}`); every scenario runs one bounce
//! round where the Python runs five, to fit CI.
//!
//! Scenarios: `test_broker_rolling_bounce`, `test_consumer_bounce` (clean, rolling and all),
//! `test_consumer_failure` (without auto-commit), `test_static_consumer_bounce_with_eager_
//! assignment` (static and dynamic, rolling) and `test_fencing_static_consumer` (one
//! conflicting consumer, the "stable" stage).
//!
//! Needs the cluster (see `support::real_cluster`) plus java; compiled out under madsim.
#![cfg(not(madsim))]

mod support;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Classic,
    Consumer,
}

/// One scenario's setting: the cluster, a fresh one-partition topic, the group's flags.
struct Setting {
    cluster: Cluster,
    bootstrap: String,
    topic: String,
    protocol: Protocol,
}

impl Setting {
    async fn new(cluster: Cluster, prefix: &str, protocol: Protocol) -> Self {
        let topic = unique(prefix);
        cluster.create_topic(&topic, 1).await;
        Setting {
            bootstrap: cluster.bootstrap.join(","),
            cluster,
            topic,
            protocol,
        }
    }

    fn partition(&self) -> Tp {
        (self.topic.clone(), 0)
    }

    /// The consumers as `setup_consumer` makes them: RangeAssignor (classic) or the `range`
    /// remote assignor (consumer protocol), no auto-commit unless asked.
    fn group(
        &self,
        client: Client,
        count: usize,
        group: &str,
        static_membership: bool,
        extra: &[&str],
    ) -> Group {
        let mut args = vec![
            "--bootstrap-server",
            &self.bootstrap,
            "--topic",
            &self.topic,
        ];
        let tracking = match self.protocol {
            Protocol::Classic => {
                args.extend([
                    "--group-protocol",
                    "classic",
                    "--assignment-strategy",
                    "org.apache.kafka.clients.consumer.RangeAssignor",
                ]);
                Tracking::Eager
            }
            Protocol::Consumer => {
                args.extend([
                    "--group-protocol",
                    "consumer",
                    "--group-remote-assignor",
                    "range",
                ]);
                Tracking::ConsumerProtocol
            }
        };
        args.extend(extra);
        Group::new(client, count, group, &args, static_membership, tracking)
    }

    /// The cluster held for this test alone, with a fresh topic; `None` after a loud skip.
    async fn take(
        prefix: &str,
        protocol: Protocol,
    ) -> Option<(tokio::sync::MutexGuard<'static, ()>, Setting)> {
        let cluster = kip848_cluster()?;
        let one_at_a_time = CLUSTER_LOCK.lock().await;
        Some((one_at_a_time, Setting::new(cluster, prefix, protocol).await))
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
    group
        .wait_until("every consumer to join", 60, |g| {
            g.joined_nodes() == NUM_CONSUMERS
        })
        .await;
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
        "total consumed records did not match the consumed position"
    );
}

/// `test_broker_rolling_bounce`: each broker restarted in turn (controlled shutdown) while a
/// producer writes and three consumers read; no rebalance may follow, and nothing is lost or
/// read twice. The consumers run with `metadata.recovery.strategy=none`, as in the Python.
async fn broker_rolling_bounce(client: Client, protocol: Protocol) {
    let Some((_one_at_a_time, setting)) = Setting::take("systest-broker-bounce", protocol).await
    else {
        return;
    };
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
    for broker in 1..=3 {
        setting.cluster.act(NodeAction::Restart, broker).await;
        await_all_members(&mut group).await;
        await_consumed(&mut group, 1).await;
    }
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
    let _ = std::fs::remove_file(config);
}

/// `test_consumer_bounce`, clean shutdowns: every consumer restarted, one at a time
/// (`rolling`) or all together (`all`); nothing lost or read twice.
async fn consumer_bounce(client: Client, protocol: Protocol, all_at_once: bool) {
    let Some((_one_at_a_time, setting)) = Setting::take("systest-consumer-bounce", protocol).await
    else {
        return;
    };
    let _producer = setting.producing(30).await;
    let mut group = setting.group(client, NUM_CONSUMERS, &unique("systest"), false, &[]);
    group.start();
    await_all_members(&mut group).await;
    bounce(&mut group, 0, all_at_once).await;
    group.stop_all().await;
    assert_position_is_total_consumed(&group, &setting.partition());
}

/// One round of `bounce_all_consumers` or `rolling_bounce_consumers` over the nodes after the
/// first `keep_alive`, with clean shutdowns.
async fn bounce(group: &mut Group, keep_alive: usize, all_at_once: bool) {
    let bounced: Vec<usize> = group.node_ids().into_iter().skip(keep_alive).collect();
    if all_at_once {
        for node in &bounced {
            group.stop_node(*node, true).await;
        }
        let dead = bounced.len();
        group
            .wait_until("the consumers to shut down", 10, |g| g.dead_nodes() == dead)
            .await;
        for node in &bounced {
            group.start_node(*node);
        }
        await_all_members(group).await;
        await_consumed(group, 1).await;
    } else {
        for node in bounced {
            group.stop_node(node, true).await;
            group
                .wait_until("the consumer to shut down", 60, |g| g.dead_nodes() == 1)
                .await;
            group.start_node(node);
            await_all_members(group).await;
            await_consumed(group, 1).await;
        }
    }
}

/// `test_consumer_failure`, clean shutdown, without auto-commit: the partition's owner is
/// stopped; another consumer takes the partition over and goes on; at the end the last commit
/// is the position and the position the number of records consumed.
async fn consumer_failure(client: Client, protocol: Protocol) {
    let Some((_one_at_a_time, setting)) = Setting::take("systest-consumer-failure", protocol).await
    else {
        return;
    };
    let partition = setting.partition();
    let mut group = setting.group(client, NUM_CONSUMERS, &unique("systest"), false, &[]);
    group.start();
    await_all_members(&mut group).await;
    await_stabilized(&setting.cluster, &mut group, &partition).await;
    let owner = group.owner(&partition).expect("an owner of the partition");
    let _producer = setting.producing(30).await;
    group.kill_node(owner, true);
    group
        .wait_until("the owner to close and another to take over", 60, |g| {
            g.joined_nodes() == NUM_CONSUMERS - 1 && g.owner(&partition).is_some_and(|o| o != owner)
        })
        .await;
    await_consumed(&mut group, 1000).await;
    group.stop_all().await;
    assert_position_is_total_consumed(&group, &partition);
    assert_eq!(
        group.verifier().committed().get(&partition),
        group.verifier().positions().get(&partition),
        "the last committed offset did not match the last consumed position"
    );
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
    bounce(&mut group, 1, false).await;
    let revokes = group.revokes_for_alive(1) - before;
    if static_membership {
        assert_eq!(
            revokes, 0,
            "{client:?}: bouncing static members triggered revocations"
        );
    } else {
        assert_ne!(
            revokes, 0,
            "{client:?}: bouncing dynamic members (eager) triggered no revocation"
        );
    }
    group.stop_all().await;
    assert_position_is_total_consumed(&group, &setting.partition());
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
}

/// Two tests per scenario: Kafka's client first, then ours, each on its own.
macro_rules! both_clients {
    ($($java:ident, $ours:ident => $scenario:ident($($arg:expr),*);)*) => {
        $(
            #[tokio::test]
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
        => consumer_bounce(Protocol::Classic, false);
    consumer_rolling_bounce_consumer_java, consumer_rolling_bounce_consumer_ours
        => consumer_bounce(Protocol::Consumer, false);
    consumer_bounce_all_classic_java, consumer_bounce_all_classic_ours
        => consumer_bounce(Protocol::Classic, true);
    consumer_bounce_all_consumer_java, consumer_bounce_all_consumer_ours
        => consumer_bounce(Protocol::Consumer, true);
    consumer_failure_classic_java, consumer_failure_classic_ours
        => consumer_failure(Protocol::Classic);
    consumer_failure_consumer_java, consumer_failure_consumer_ours
        => consumer_failure(Protocol::Consumer);
    static_consumer_bounce_java, static_consumer_bounce_ours
        => static_consumer_bounce(true);
    dynamic_consumer_bounce_java, dynamic_consumer_bounce_ours
        => static_consumer_bounce(false);
    fencing_static_consumer_classic_java, fencing_static_consumer_classic_ours
        => fencing_static_consumer(Protocol::Classic);
    fencing_static_consumer_consumer_java, fencing_static_consumer_consumer_ours
        => fencing_static_consumer(Protocol::Consumer);
}
