//! Running a verifiable consumer (ours, `kafka-verifiable-consumer`, or Kafka's own
//! `VerifiableConsumer` through `testing/kafka/run verifiable-consumer`) and judging its JSON
//! events the way Kafka's system tests do.
//!
//! [`Verifier`] re-states the checks of Kafka's `tests/kafkatest/services/
//! verifiable_consumer.py` (`ConsumerEventHandler` and its incremental and consumer-protocol
//! variants, `_update_global_position`, `_update_global_committed`), with `verify_offsets`
//! on: records come only while joined and only from assigned partitions, each partition's
//! records continue where its last batch ended, a successful commit is of an assigned
//! partition and not beyond the consumer's position, and nothing is consumed from behind the
//! group's last commit.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::Value;

const HARNESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testing/kafka/run");

/// The Kafka release whose `VerifiableConsumer` and `VerifiableProducer` run as Java's side: the
/// newest contract (`shutdown_requested`, `--close-timeout`, `--command-config`), whatever the
/// broker's version.
pub const JAVA_TOOLS_VERSION: &str = "4.4.0";

/// Which client runs behind the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// `kafka-verifiable-consumer`, this crate's binary.
    Ours,
    /// Kafka's `org.apache.kafka.tools.VerifiableConsumer`.
    Java,
}

/// How the system tests track a member's assignment, chosen as `verifiable_consumer.py`'s
/// `create_event_handler` chooses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tracking {
    /// Classic protocol, eager assignor: each assignment replaces the last; a revocation
    /// takes everything.
    Eager,
    /// Classic protocol, cooperative assignor: assignments add, revocations remove what was
    /// assigned (revoking what is not assigned is a failure).
    Incremental,
    /// The consumer protocol: as incremental, but revoking what is not assigned is allowed.
    ConsumerProtocol,
}

/// Stdout lines of one or more processes, tagged with the node that wrote each, in the order
/// they arrived (as the system tests' service reads its nodes' lines under one lock).
pub type Feed = Arc<Mutex<Vec<(usize, String)>>>;

/// What a [`Running`] process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// A verifiable consumer.
    Consumer(Client),
    /// Kafka's `VerifiableProducer`.
    Producer,
}

/// A running verifiable client; its stdout lines are collected as they come.
pub struct Running {
    pub program: Program,
    node: usize,
    child: Child,
    lines: Feed,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Starts `client` with `args` (the flags both clients share).
    pub fn start(client: Client, args: &[String]) -> Self {
        Self::start_in(Program::Consumer(client), args, Feed::default(), 0)
    }

    /// Starts `program` with `args`, its lines going to `feed` as `node`'s.
    pub fn start_in(program: Program, args: &[String], feed: Feed, node: usize) -> Self {
        let java = |tool: &str| {
            let mut command = Command::new("bash");
            command
                .args([HARNESS, tool])
                .env("KAFKA_VERSION", JAVA_TOOLS_VERSION);
            command
        };
        let mut command = match program {
            Program::Consumer(Client::Ours) => {
                Command::new(env!("CARGO_BIN_EXE_kafka-verifiable-consumer"))
            }
            Program::Consumer(Client::Java) => java("verifiable-consumer"),
            Program::Producer => java("verifiable-producer"),
        };
        let mut child = command
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start a verifiable client");
        let stdout = child.stdout.take().unwrap();
        let sink = Arc::clone(&feed);
        // Real-broker support only (compiled out under madsim): drains the child's stdout.
        #[allow(clippy::disallowed_methods)]
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(line) => sink.lock().unwrap().push((node, line)),
                    Err(_) => break,
                }
            }
        });
        Running {
            program,
            node,
            child,
            lines: feed,
            reader: Some(reader),
        }
    }

    /// The events so far (lines that are not JSON, such as a deprecation notice, skipped as
    /// the system tests skip them).
    pub fn events(&self) -> Vec<Value> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|(node, _)| *node == self.node)
            .filter_map(|(_, line)| serde_json::from_str(line).ok())
            .collect()
    }

    /// Whether the process has exited.
    pub fn exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Waits until an event satisfies `condition`, failing after `timeout`.
    pub async fn wait_for(
        &self,
        what: &str,
        timeout: std::time::Duration,
        condition: impl Fn(&[Value]) -> bool,
    ) {
        let deadline = tokio::time::Instant::now() + timeout;
        while !condition(&self.events()) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{:?}: no {what} within {timeout:?}; events: {:#?}",
                self.program,
                self.events()
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// Sends SIGTERM (`clean`: what the system tests send for a clean shutdown) or SIGKILL.
    pub fn signal(&self, clean: bool) {
        let status = Command::new("kill")
            .args([
                if clean { "-TERM" } else { "-KILL" },
                &self.child.id().to_string(),
            ])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the process to exit (at most `timeout`), returning its exit code and every
    /// event it wrote.
    pub async fn finish(mut self, timeout: std::time::Duration) -> (Option<i32>, Vec<Value>) {
        let deadline = tokio::time::Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if tokio::time::Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "{:?} did not exit within {timeout:?}; events: {:#?}",
                    self.program,
                    self.events()
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        (status.code(), self.events())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.reader.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Writes `count` records to `topic` with Kafka's `VerifiableProducer` (acks=all; keys `0` to
/// `29` in turn, which its default partitioner hashes over the partitions) and asserts every
/// one was acknowledged.
pub fn produce(bootstrap: &str, topic: &str, count: usize) {
    let output = Command::new("bash")
        .args([
            HARNESS,
            "verifiable-producer",
            "--bootstrap-server",
            bootstrap,
        ])
        .args([
            "--topic",
            topic,
            "--max-messages",
            &count.to_string(),
            "--acks",
            "-1",
            "--repeating-keys",
            "30",
        ])
        .env("KAFKA_VERSION", JAVA_TOOLS_VERSION)
        .stderr(Stdio::inherit())
        .output()
        .expect("run Kafka's VerifiableProducer");
    assert!(output.status.success(), "VerifiableProducer failed");
    let acked = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["name"] == "producer_send_success")
        .count();
    assert_eq!(acked, count, "records acknowledged by the broker");
}

pub type Tp = (String, i32);

fn tp_of(value: &Value) -> Tp {
    (
        value["topic"].as_str().expect("topic").to_owned(),
        i32::try_from(value["partition"].as_i64().expect("partition")).unwrap(),
    )
}

fn int(value: &Value, key: &str) -> i64 {
    value[key]
        .as_i64()
        .unwrap_or_else(|| panic!("{key} in {value}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Dead,
    Started,
    Rebalancing,
    Joined,
}

/// One member's events, checked as Kafka's `ConsumerEventHandler` checks them.
#[derive(Debug)]
struct Member {
    state: State,
    assignment: Vec<Tp>,
    position: BTreeMap<Tp, i64>,
    total_consumed: i64,
    assigned_count: usize,
    revoked_count: usize,
    shutdown_complete: bool,
}

/// The system tests' view of a group of verifiable consumers: per member and global.
#[derive(Debug)]
pub struct Verifier {
    tracking: Tracking,
    members: BTreeMap<String, Member>,
    global_position: BTreeMap<Tp, i64>,
    global_committed: BTreeMap<Tp, i64>,
    commit_failures: usize,
}

impl Verifier {
    pub fn new(tracking: Tracking) -> Self {
        Verifier {
            tracking,
            members: BTreeMap::new(),
            global_position: BTreeMap::new(),
            global_committed: BTreeMap::new(),
            commit_failures: 0,
        }
    }

    /// Feeds one event of `member`; an event the system tests would fail on is an `Err`.
    pub fn handle(&mut self, member: &str, event: &Value) -> Result<(), String> {
        let m = self
            .members
            .entry(member.to_owned())
            .or_insert_with(|| Member {
                state: State::Dead,
                assignment: Vec::new(),
                position: BTreeMap::new(),
                total_consumed: 0,
                assigned_count: 0,
                revoked_count: 0,
                shutdown_complete: false,
            });
        let name = event["name"].as_str().ok_or("an event without a name")?;
        match name {
            "startup_complete" => m.state = State::Started,
            "shutdown_complete" => {
                m.state = State::Dead;
                m.assignment.clear();
                m.position.clear();
                m.shutdown_complete = true;
            }
            "partitions_assigned" => {
                m.assigned_count += 1;
                m.state = State::Joined;
                let assigned = event["partitions"]
                    .as_array()
                    .ok_or("partitions")?
                    .iter()
                    .map(tp_of);
                match self.tracking {
                    Tracking::Eager => m.assignment = assigned.collect(),
                    Tracking::Incremental | Tracking::ConsumerProtocol => {
                        m.assignment.extend(assigned)
                    }
                }
            }
            "partitions_revoked" => {
                m.revoked_count += 1;
                m.position.clear();
                if self.tracking != Tracking::ConsumerProtocol {
                    m.state = State::Rebalancing;
                }
                if self.tracking != Tracking::Eager {
                    for tp in event["partitions"].as_array().ok_or("partitions")?.iter() {
                        let tp = tp_of(tp);
                        match m.assignment.iter().position(|a| *a == tp) {
                            Some(i) => {
                                m.assignment.remove(i);
                            }
                            None if self.tracking == Tracking::Incremental => {
                                return Err(format!(
                                "{member}: partition {tp:?} cannot be revoked, it was not assigned"
                            ))
                            }
                            None => {}
                        }
                    }
                }
            }
            "records_consumed" => {
                if m.state != State::Joined {
                    return Err(format!(
                        "{member}: consumed records while {:?}, not joined",
                        m.state
                    ));
                }
                for batch in event["partitions"].as_array().ok_or("partitions")? {
                    let tp = tp_of(batch);
                    let (min, max) = (int(batch, "minOffset"), int(batch, "maxOffset"));
                    if !m.assignment.contains(&tp) {
                        return Err(format!(
                            "{member}: consumed records for {tp:?}, not assigned ({:?})",
                            m.assignment
                        ));
                    }
                    match m.position.get(&tp) {
                        Some(&position) if position != min => {
                            return Err(format!(
                                "{member}: consumed from an unexpected offset ({position}, {min}) for {tp:?}"
                            ))
                        }
                        _ => {
                            m.position.insert(tp.clone(), max + 1);
                        }
                    }
                    if let Some(&committed) = self.global_committed.get(&tp) {
                        if committed > min {
                            return Err(format!(
                                "{member}: consumed position {min} is behind the committed offset {committed} of {tp:?}"
                            ));
                        }
                    }
                    self.global_position.insert(tp, max + 1);
                }
                m.total_consumed += int(event, "count");
            }
            "offsets_committed" if event["success"].as_bool().ok_or("success")? => {
                for commit in event["offsets"].as_array().ok_or("offsets")? {
                    let tp = tp_of(commit);
                    let offset = int(commit, "offset");
                    if !m.assignment.contains(&tp) {
                        return Err(format!(
                            "{member}: committed offsets for {tp:?}, not assigned ({:?})",
                            m.assignment
                        ));
                    }
                    let Some(&position) = m.position.get(&tp) else {
                        return Err(format!("{member}: no previous position for {tp:?}"));
                    };
                    if position < offset {
                        return Err(format!(
                            "{member}: committed offset {offset} is beyond the position {position} of {tp:?}"
                        ));
                    }
                    if self.global_position.get(&tp).is_none_or(|&p| p < offset) {
                        return Err(format!(
                            "{member}: committed offset {offset} of {tp:?} is ahead of the global position"
                        ));
                    }
                    self.global_committed.insert(tp, offset);
                }
            }
            "offsets_committed" => self.commit_failures += 1,
            _ => {}
        }
        Ok(())
    }

    /// Feeds every event of `member`, failing on the first the system tests would fail on.
    pub fn handle_all(&mut self, member: &str, events: &[Value]) {
        for event in events {
            if let Err(violation) = self.handle(member, event) {
                panic!("{violation}\nevent: {event}\nall events of {member}: {events:#?}");
            }
        }
    }

    /// Records consumed by every member together (the system tests' `total_consumed`).
    pub fn total_consumed(&self) -> i64 {
        self.members.values().map(|m| m.total_consumed).sum()
    }

    /// The last successful commit per partition.
    pub fn committed(&self) -> &BTreeMap<Tp, i64> {
        &self.global_committed
    }

    /// The next offset to consume per partition, over all members.
    pub fn positions(&self) -> &BTreeMap<Tp, i64> {
        &self.global_position
    }

    /// Whether `member` is in the group as far as its events tell (`joined_nodes`).
    pub fn joined(&self, member: &str) -> bool {
        self.members
            .get(member)
            .is_some_and(|m| m.state == State::Joined)
    }

    /// Whether `member` is not running as far as its events tell (`dead_nodes`; a member not
    /// heard of yet counts, as a node whose process has not printed `startup_complete`).
    pub fn dead(&self, member: &str) -> bool {
        self.members
            .get(member)
            .is_none_or(|m| m.state == State::Dead)
    }

    /// `member` was killed hard: it will print nothing more (`handle_kill_process`).
    pub fn killed(&mut self, member: &str) {
        if let Some(m) = self.members.get_mut(member) {
            m.state = State::Dead;
            m.assignment.clear();
            m.position.clear();
            m.shutdown_complete = true;
        }
    }

    /// `member` is started again: the system tests keep its counts and clear only
    /// `shutdown_complete`.
    pub fn restarted(&mut self, member: &str) {
        if let Some(m) = self.members.get_mut(member) {
            m.shutdown_complete = false;
        }
    }

    /// What `member` owns as far as its events tell.
    pub fn assignment(&self, member: &str) -> Vec<Tp> {
        self.members
            .get(member)
            .map(|m| m.assignment.clone())
            .unwrap_or_default()
    }

    /// How many revocations `member` printed.
    pub fn revokes(&self, member: &str) -> usize {
        self.members.get(member).map_or(0, |m| m.revoked_count)
    }

    /// Whether `member` printed `shutdown_complete`.
    pub fn shut_down(&self, member: &str) -> bool {
        self.members
            .get(member)
            .is_some_and(|m| m.shutdown_complete)
    }

    /// How many `offsets_committed` events reported a failure (not a check of the system
    /// tests, which allow failed commits: a figure for the side-by-side table).
    pub fn commit_failures(&self) -> usize {
        self.commit_failures
    }

    /// Records consumed more than once: everything consumed beyond the positions reached (each
    /// topic of the tests starts at offset 0, and a skipped offset fails the checks first).
    pub fn duplicates(&self) -> i64 {
        self.total_consumed() - self.global_position.values().sum::<i64>()
    }

    /// How many rebalances the busiest member saw (`num_rebalances`).
    pub fn rebalances(&self) -> usize {
        self.members
            .values()
            .map(|m| m.assigned_count)
            .max()
            .unwrap_or(0)
    }
}

/// The keys (sorted) of each kind of event in `events`: the shape Kafka's system tests read,
/// compared between our client and Java's.
pub fn shapes(events: &[Value]) -> BTreeMap<String, BTreeSet<Vec<String>>> {
    let mut shapes: BTreeMap<String, BTreeSet<Vec<String>>> = BTreeMap::new();
    for event in events {
        let Some(object) = event.as_object() else {
            continue;
        };
        let name = event["name"].as_str().unwrap_or_default().to_owned();
        let mut keys: Vec<String> = object.keys().cloned().collect();
        // The nested objects' keys too, so a renamed field inside `partitions` shows.
        for nested in ["partitions", "offsets"] {
            if let Some(first) = event[nested].as_array().and_then(|a| a.first()) {
                if let Some(inner) = first.as_object() {
                    keys.extend(inner.keys().map(|k| format!("{nested}.{k}")));
                }
            }
        }
        shapes.entry(name).or_default().insert(keys);
    }
    shapes
}

/// The events' names, in order.
pub fn names(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e["name"].as_str().map(str::to_owned))
        .collect()
}

/// A group of verifiable consumers run as the system tests' `VerifiableConsumer` service runs
/// its nodes: the same client and flags on every node, node `i` (from 1) with the instance id
/// `GROUP-instance-i` when static, every node's events judged by one [`Verifier`] in arrival
/// order, nodes stopped cleanly (SIGTERM, then waiting for the process) or hard (SIGKILL).
pub struct Group {
    client: Client,
    group: String,
    args: Vec<String>,
    static_membership: bool,
    feed: Feed,
    seen: usize,
    verifier: Verifier,
    nodes: BTreeMap<usize, Running>,
    count: usize,
    rebalance_waits: Vec<std::time::Duration>,
}

impl Group {
    /// `count` nodes of `client` in `group`, each started with `args` after the group flags.
    pub fn new(
        client: Client,
        count: usize,
        group: &str,
        args: &[&str],
        static_membership: bool,
        tracking: Tracking,
    ) -> Self {
        Group {
            client,
            group: group.to_owned(),
            args: args.iter().map(|a| a.to_string()).collect(),
            static_membership,
            feed: Feed::default(),
            seen: 0,
            verifier: Verifier::new(tracking),
            nodes: BTreeMap::new(),
            count,
            rebalance_waits: Vec::new(),
        }
    }

    fn member(node: usize) -> String {
        format!("node{node}")
    }

    /// The group id.
    pub fn id(&self) -> &str {
        &self.group
    }

    /// The node numbers, from 1.
    pub fn node_ids(&self) -> Vec<usize> {
        (1..=self.count).collect()
    }

    /// Starts node `node` (again).
    pub fn start_node(&mut self, node: usize) {
        self.update();
        let mut args = vec!["--group-id".to_owned(), self.group.clone()];
        if self.static_membership {
            args.extend([
                "--group-instance-id".to_owned(),
                format!("{}-instance-{node}", self.group),
            ]);
        }
        args.extend(self.args.iter().cloned());
        self.verifier.restarted(&Self::member(node));
        let running = Running::start_in(
            Program::Consumer(self.client),
            &args,
            Arc::clone(&self.feed),
            node,
        );
        self.nodes.insert(node, running);
    }

    /// Starts every node.
    pub fn start(&mut self) {
        for node in self.node_ids() {
            self.start_node(node);
        }
    }

    /// Feeds the lines that arrived since the last call to the verifier; a line the system
    /// tests would fail on fails the test.
    pub fn update(&mut self) {
        let new: Vec<(usize, String)> = self.feed.lock().unwrap()[self.seen..].to_vec();
        self.seen += new.len();
        for (node, line) in new {
            let Ok(event) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let member = Self::member(node);
            if let Err(violation) = self.verifier.handle(&member, &event) {
                panic!("{:?}: {violation}\nevent: {event}", self.client);
            }
        }
    }

    /// Waits until `condition` holds, updating as lines come; fails after `timeout_s`.
    pub async fn wait_until(
        &mut self,
        what: &str,
        timeout_s: u64,
        condition: impl Fn(&Group) -> bool,
    ) {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(timeout_s);
        loop {
            self.update();
            if condition(self) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{:?}: timed out after {timeout_s} s waiting for {what}; verifier: {:#?}",
                self.client,
                self.verifier
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// SIGTERM (`clean`) or SIGKILL to node `node`, without waiting (`kill_node`). A killed
    /// node is marked dead only once [`Group::stop_node`] has read all it wrote.
    pub fn kill_node(&mut self, node: usize, clean: bool) {
        self.update();
        if let Some(running) = self.nodes.get(&node) {
            running.signal(clean);
        }
    }

    /// Stops node `node` and waits (30 s, the system tests' `stop_timeout_sec`) for its process
    /// to exit (`stop_node`). A killed node's last events, written before the SIGKILL landed
    /// but read after it was sent, are handled before the node is marked dead: they happened
    /// while it was still a member. (The Python marks it dead at once and would fail on such
    /// a `records_consumed` as consumed while not joined; its reader is seldom that far behind.)
    pub async fn stop_node(&mut self, node: usize, clean: bool) {
        self.kill_node(node, clean);
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
        while let Some(running) = self.nodes.get_mut(&node) {
            if running.exited() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{:?}: node {node} did not stop within 30 s",
                self.client
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        if let Some(mut running) = self.nodes.remove(&node) {
            if let Some(reader) = running.reader.take() {
                reader.join().unwrap();
            }
        }
        self.update();
        if !clean {
            self.verifier.killed(&Self::member(node));
        }
    }

    /// Stops every node cleanly (`stop_all`).
    pub async fn stop_all(&mut self) {
        for node in self.node_ids() {
            if self.nodes.contains_key(&node) {
                self.stop_node(node, true).await;
            }
        }
    }

    pub fn joined_nodes(&self) -> usize {
        self.node_ids()
            .iter()
            .filter(|n| self.verifier.joined(&Self::member(**n)))
            .count()
    }

    pub fn dead_nodes(&self) -> usize {
        self.node_ids()
            .iter()
            .filter(|n| self.verifier.dead(&Self::member(**n)))
            .count()
    }

    /// The node whose events say it owns `tp`.
    pub fn owner(&self, tp: &Tp) -> Option<usize> {
        self.node_ids()
            .into_iter()
            .find(|n| self.verifier.assignment(&Self::member(*n)).contains(tp))
    }

    /// Whether the nodes' assignments together hold each of `partitions` exactly once
    /// (`valid_assignment`).
    pub fn valid_assignment(&self, partitions: &[Tp]) -> bool {
        let mut all: Vec<Tp> = self
            .node_ids()
            .iter()
            .flat_map(|n| self.verifier.assignment(&Self::member(*n)))
            .collect();
        all.sort();
        let mut expected = partitions.to_vec();
        expected.sort();
        all == expected
    }

    /// The most revocations printed by a node kept alive through the bounces (those numbered
    /// up to `keep_alive`), as the system tests count them (`num_revokes_for_alive`).
    pub fn revokes_for_alive(&self, keep_alive: usize) -> usize {
        (1..=keep_alive)
            .map(|n| self.verifier.revokes(&Self::member(n)))
            .max()
            .unwrap_or(0)
    }

    /// Notes how long the group took to settle after a step that made it rebalance (from the
    /// step to every expected member joined), for the side-by-side table.
    pub fn note_rebalance(&mut self, took: std::time::Duration) {
        self.rebalance_waits.push(took);
    }

    /// The settling times noted so far, in order.
    pub fn rebalance_waits(&self) -> &[std::time::Duration] {
        &self.rebalance_waits
    }

    pub fn client(&self) -> Client {
        self.client
    }

    pub fn verifier(&self) -> &Verifier {
        &self.verifier
    }

    /// Every node's group events so far, one line each (`records_consumed` left out), for
    /// failure messages.
    pub fn log(&self) -> String {
        self.feed
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(node, line)| {
                let event: Value = serde_json::from_str(line).ok()?;
                let name = event["name"].as_str()?;
                (name != "records_consumed" && name != "offsets_committed").then(|| {
                    format!(
                        "{} node{node} {name} {}",
                        event["timestamp"], event["partitions"]
                    )
                })
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Kafka's `VerifiableProducer` writing to a topic until stopped, its acknowledgements counted.
pub struct Producer {
    running: Running,
}

impl Producer {
    /// Starts producing to `topic` at `throughput` records/s (the system tests' 500), acks=all.
    pub fn start(bootstrap: &str, topic: &str, throughput: u32) -> Self {
        let args: Vec<String> = [
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--throughput",
            &throughput.to_string(),
            "--acks",
            "-1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        Producer {
            running: Running::start_in(Program::Producer, &args, Feed::default(), 0),
        }
    }

    /// Records the brokers acknowledged so far.
    pub fn acked(&self) -> usize {
        self.running
            .events()
            .iter()
            .filter(|e| e["name"] == "producer_send_success")
            .count()
    }

    /// Waits until `count` more records than now are acknowledged (`await_produced_messages`).
    pub async fn await_produced(&self, count: usize, timeout_s: u64) {
        let target = self.acked() + count;
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(timeout_s);
        while self.acked() < target {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the producer did not get {count} more records acknowledged in {timeout_s} s"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}
