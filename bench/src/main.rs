//! `kafka-bench`: fills topics on the real Apache Kafka broker with Kafka's own Java producer,
//! runs every client on every workload as a separate child process (alternating, several
//! repetitions), and writes the table into `BENCHMARKS.md` and the chart `bench/peers.svg`.
//!
//! ```text
//! kafka-bench all|fill|run|report [--sizes 100,1024] [--codecs none,lz4,zstd]
//!     [--codecs-groups none] [--modes assign,subscribe,group,rebalance] [--clients ours,rdkafka,...] [--reps 3]
//!     (or the second-round workloads, on their own: [--modes latency,slow-app,ceiling])
//!     (or the scale workload, on its own: [--modes partitions] or partitions-12,partitions-120-assign)
//!     (or the members workload, on its own: [--modes members] or members-3,members-10)
//!     [--members-join-ms 20000] [--members-after-ms 35000] [--members-rate-per-s 20000]
//!     [--members-records 36000000]
//!     [--window-ms 5000] [--records-100 N] [--records-1024 N] [--security plaintext,sasl_ssl]
//!     [--latency-window-ms 22000] [--slow-app-window-ms 60000]
//! ```
//!
//! The broker comes from `KAFKA_BOOTSTRAP` (see `bench/run`, which starts it); with
//! `--security sasl_ssl`, its SASL_SSL listener from `KAFKA_BOOTSTRAP_SASL_SSL` and the CA and
//! SCRAM credentials from the file `KAFKA_SECURITY_FILE` names (both printed by
//! `testing/kafka/run up`). A run with any other security than plaintext is the TLS
//! comparison: its rows go to `bench/results/tls.tsv` and its tables to the "Over SASL_SSL"
//! block of `BENCHMARKS.md`, leaving the plaintext matrix (`peers.tsv`) alone.

mod fill;
mod members;
mod report;
mod runner;
mod sockets;
mod svg;

use std::path::{Path, PathBuf};
use std::process::Command;

use kafka_bench::{Protocol, SaslSsl, Security};

/// Partitions of every benchmark topic.
pub const PARTITIONS: i32 = 12;

/// A record codec the topic is produced with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Codec {
    None,
    Lz4,
    Zstd,
}

impl Codec {
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "none",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }

    fn parse(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Codec::None),
            "lz4" => Ok(Codec::Lz4),
            "zstd" => Ok(Codec::Zstd),
            other => Err(format!("unknown codec {other}")),
        }
    }
}

/// How the clients read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WorkloadMode {
    /// One consumer, every partition assigned by hand.
    Assign,
    /// One consumer, `subscribe` in a fresh group.
    Subscribe,
    /// Three members of a fresh group; the third leaves after `LEAVE_AFTER_MS` of fetching,
    /// forcing a rebalance of the other two.
    Group,
    /// The group workload with a rate-limited application (`REBALANCE_RATE_PER_S` records a
    /// second per member, for `REBALANCE_WINDOW_MS`): no member ever reaches the end of its
    /// partitions, so the longest pause in a staying member's deliveries is the rebalance's.
    /// Measured at the smallest record size, uncompressed only: a pause at a fixed rate does
    /// not depend on how the records are encoded.
    Rebalance,
    /// End-to-end latency at a fixed produce rate (records a second, one of
    /// [`runner::LATENCY_RATES`]): a rate-limited Java producer writes 100 B records while one
    /// client, assigned every partition from the end, reports percentiles of delivery time −
    /// record timestamp (same machine clock).
    Latency(u64),
    /// A slow application on the pre-filled 100 B topic: every client delivers at most
    /// [`runner::SLOW_APP_RATE_PER_S`] records a second for [`runner::SLOW_APP_WINDOW_MS`]
    /// (assign mode), while the driver samples its RSS: what a consumer buffers when the
    /// application cannot keep up, and whether that stays bounded.
    SlowApp,
    /// The assign workload (uncompressed) with the raw fetch-only client `ceiling` beside the
    /// others: the broker's serving ceiling on this machine, every client a fraction of it.
    Ceiling,
    /// One consumer over `total` partitions (one of [`PARTITION_SCALES`], laid out over topics
    /// by [`partition_layout`]), [`SCALE_RECORDS`] records of 100 B over all of them,
    /// assigned by hand or subscribed in a fresh group, read to the end: how records/s, CPU per
    /// record, peak RSS and the time to the first record scale with the partition count.
    Partitions { total: u32, subscribe: bool },
    /// A group of `members` (one of [`members::GROUP_SIZES`]) on the 60-partition topic, as
    /// many processes or as many consumers in one process (the `*-inproc` clients), a
    /// rate-limited application: join-to-stable, then one member leaves at a fixed moment and
    /// the stayers' pause and takeover of its partitions are measured (`bench/src/members.rs`).
    Members { members: u32 },
}

/// The partitions workload's partition counts.
pub const PARTITION_SCALES: [u32; 4] = [12, 120, 1_200, 6_000];
/// Records (100 B) in the partitions workload at every partition count, spread evenly over
/// its topics: the same volume at 12 and at 6,000 partitions, so CPU per record compares the
/// per-record cost as partitions multiply (and a run at 12 partitions lasts long enough to
/// time), 200 records a partition at 6,000.
pub const SCALE_RECORDS: u64 = 1_200_000;

/// Records in each of the partitions workload's topics for `total` partitions.
pub fn partition_topic_records(total: u32) -> u64 {
    SCALE_RECORDS / u64::from(partition_layout(total).0)
}

/// How the partitions workload lays `total` partitions out: `(topics, partitions per topic)`.
/// Up to 1,200 partitions, 12 per topic (12 = 1 × 12, 120 = 10 × 12, 1,200 = 100 × 12); above,
/// 100 topics with more partitions each (6,000 = 100 × 60).
pub fn partition_layout(total: u32) -> (u32, u32) {
    let total = total.max(1);
    if total <= 1_200 {
        (total.div_ceil(12), 12.min(total))
    } else {
        (100, total.div_ceil(100))
    }
}

impl WorkloadMode {
    pub fn name(self) -> String {
        match self {
            WorkloadMode::Assign => "assign".to_owned(),
            WorkloadMode::Subscribe => "subscribe".to_owned(),
            WorkloadMode::Group => "group".to_owned(),
            WorkloadMode::Rebalance => "rebalance".to_owned(),
            WorkloadMode::Latency(rate) => format!("latency-{}", rate_label(rate)),
            WorkloadMode::SlowApp => "slow-app".to_owned(),
            WorkloadMode::Ceiling => "ceiling".to_owned(),
            WorkloadMode::Partitions { total, subscribe } => format!(
                "partitions-{total}-{}",
                if subscribe { "subscribe" } else { "assign" }
            ),
            WorkloadMode::Members { members } => format!("members-{members}"),
        }
    }

    /// The members workload: its results go to `members.tsv` and its own block
    /// ([`report::ResultsSet::Members`]).
    pub fn is_members(self) -> bool {
        matches!(self, WorkloadMode::Members { .. })
    }

    /// The latency, slow-app and ceiling workloads: their results go to their own file and block
    /// ([`report::ResultsSet::Workloads`]), never mixed with the peer matrix's.
    pub fn is_second_round(self) -> bool {
        matches!(
            self,
            WorkloadMode::Latency(_) | WorkloadMode::SlowApp | WorkloadMode::Ceiling
        )
    }

    /// The scale workloads (partitions): their results go to `scale.tsv` and their own block
    /// ([`report::ResultsSet::Scale`]).
    pub fn is_scale(self) -> bool {
        matches!(self, WorkloadMode::Partitions { .. })
    }

    /// Whether the clients run in assign mode (no group).
    pub fn assigns(self) -> bool {
        !matches!(
            self,
            WorkloadMode::Subscribe
                | WorkloadMode::Group
                | WorkloadMode::Rebalance
                | WorkloadMode::Members { .. }
                | WorkloadMode::Partitions {
                    subscribe: true,
                    ..
                }
        )
    }

    /// Whether the workload runs [`runner::GROUP_MEMBERS`] members, one of which leaves.
    pub fn is_group(self) -> bool {
        matches!(self, WorkloadMode::Group | WorkloadMode::Rebalance)
    }

    /// One mode, or `latency` for every rate of [`runner::LATENCY_RATES`] (`latency-10k` for
    /// one of them).
    fn parse(s: &str) -> Result<Vec<Self>, String> {
        let one = match s {
            "assign" => WorkloadMode::Assign,
            "subscribe" => WorkloadMode::Subscribe,
            "group" => WorkloadMode::Group,
            "rebalance" => WorkloadMode::Rebalance,
            "slow-app" => WorkloadMode::SlowApp,
            "ceiling" => WorkloadMode::Ceiling,
            "partitions" => {
                return Ok(PARTITION_SCALES
                    .iter()
                    .flat_map(|&total| WorkloadMode::partitions(total))
                    .collect())
            }
            other if other.starts_with("partitions-") => {
                return WorkloadMode::parse_partitions(&other["partitions-".len()..])
            }
            "members" => {
                return Ok(members::GROUP_SIZES
                    .iter()
                    .map(|&members| WorkloadMode::Members { members })
                    .collect())
            }
            other if other.starts_with("members-") => {
                let members: u32 = other["members-".len()..]
                    .parse()
                    .ok()
                    .filter(|&m| m >= 2 && m <= members::PARTITIONS as u32)
                    .ok_or(format!(
                        "{other}: not a group size (2 to {} members)",
                        members::PARTITIONS
                    ))?;
                WorkloadMode::Members { members }
            }
            "latency" => {
                return Ok(runner::LATENCY_RATES
                    .iter()
                    .map(|&r| WorkloadMode::Latency(r))
                    .collect())
            }
            other => runner::LATENCY_RATES
                .iter()
                .map(|&r| WorkloadMode::Latency(r))
                .find(|m| m.name() == other)
                .ok_or(format!("unknown mode {other}"))?,
        };
        Ok(vec![one])
    }
}

impl WorkloadMode {
    /// The partitions workload over `total` partitions, assigned then subscribed.
    fn partitions(total: u32) -> [WorkloadMode; 2] {
        [false, true].map(|subscribe| WorkloadMode::Partitions { total, subscribe })
    }

    /// `120` (both modes), `120-assign` or `120-subscribe`.
    fn parse_partitions(rest: &str) -> Result<Vec<Self>, String> {
        let (count, which) = match rest.split_once('-') {
            Some((count, which)) => (count, Some(which)),
            None => (rest, None),
        };
        let total: u32 = count
            .parse()
            .ok()
            .filter(|&t| t > 0)
            .ok_or(format!("partitions-{rest}: not a partition count"))?;
        let both = WorkloadMode::partitions(total);
        match which {
            None => Ok(both.to_vec()),
            Some("assign") => Ok(vec![both[0]]),
            Some("subscribe") => Ok(vec![both[1]]),
            Some(other) => Err(format!(
                "partitions-{rest}: {other} is not assign or subscribe"
            )),
        }
    }
}

/// `1k`, `100k`, `1M` records a second.
pub fn rate_label(rate: u64) -> String {
    if rate >= 1_000_000 && rate.is_multiple_of(1_000_000) {
        format!("{}M", rate / 1_000_000)
    } else if rate >= 1_000 && rate.is_multiple_of(1_000) {
        format!("{}k", rate / 1_000)
    } else {
        rate.to_string()
    }
}

/// One cell of the matrix: record size, codec, mode, listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Workload {
    pub size: usize,
    pub codec: Codec,
    pub mode: WorkloadMode,
    pub security: Security,
}

impl Workload {
    /// `100B/none/assign`, and `1KiB/none/assign/sasl_ssl` over SASL_SSL (plaintext labels stay
    /// as they were, so earlier TSVs still read the same).
    pub fn label(&self) -> String {
        let mut label = format!(
            "{}/{}/{}",
            size_label(self.size),
            self.codec.name(),
            self.mode.name()
        );
        if self.security != Security::Plaintext {
            label = format!("{label}/{}", self.security.name());
        }
        label
    }

    /// The same cell but for the listener: runs of one base are interleaved round by round.
    pub fn base(&self) -> (usize, Codec, WorkloadMode) {
        (self.size, self.codec, self.mode)
    }
}

pub fn size_label(size: usize) -> String {
    if size.is_multiple_of(1024) {
        format!("{}KiB", size / 1024)
    } else {
        format!("{size}B")
    }
}

/// How a client is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// A binary of this crate (`target/release/<name>`).
    Rust(&'static str),
    /// `bench/java/BenchConsumer.java` on the kafka-clients 4.1.1 classpath.
    Java,
}

/// A benchmarked client: implementation and the group protocol it uses when it subscribes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Client {
    pub name: &'static str,
    pub launch: Launch,
    pub protocol: Protocol,
    /// Extra arguments for the client process.
    pub extra: &'static [&'static str],
    /// Whether the client is a second protocol of a client already in the table, run only in
    /// the subscribe and group workloads (in assign mode no group protocol is involved, so it
    /// would measure the same thing twice).
    pub groups_only: bool,
    /// Why the client cannot run over SASL_SSL with [`kafka_bench::SASL_MECHANISM`], if it
    /// cannot: it is then skipped there, with this reason in the output and the table.
    pub no_sasl_ssl: Option<&'static str>,
    /// The members workload's N consumers in one process (client-ours or BenchConsumer with
    /// `--members N`), not N processes: such a client runs only there.
    pub in_process: bool,
}

impl Client {
    /// Whether the client runs in `mode`: the second protocols only where a group is involved,
    /// the raw fetch loop only in the ceiling workload.
    pub fn runs_in(&self, mode: WorkloadMode) -> bool {
        if self.is_ceiling() {
            return mode == WorkloadMode::Ceiling;
        }
        if self.in_process {
            return mode.is_members();
        }
        !(self.groups_only && mode.assigns())
    }

    /// Whether the client is the raw fetch loop of the ceiling workload (no consumer).
    pub fn is_ceiling(&self) -> bool {
        matches!(self.launch, Launch::Rust("client-ceiling"))
    }

    /// Whether the client is ours (a column of our side in the ratios, not a peer).
    pub fn is_ours(&self) -> bool {
        matches!(self.launch, Launch::Rust("client-ours"))
    }
}

/// Every client, in the order of the table.
pub const CLIENTS: [Client; 15] = [
    Client {
        name: "ours",
        launch: Launch::Rust("client-ours"),
        protocol: Protocol::Classic,
        extra: &[],
        groups_only: false,
        no_sasl_ssl: None,
        in_process: false,
    },
    // Ours again with KIP-848 (`group.protocol=consumer`), beside confluent-kafka and
    // java-consumer, which subscribe with it too.
    Client {
        name: "ours-consumer",
        launch: Launch::Rust("client-ours"),
        protocol: Protocol::Consumer,
        extra: &[],
        groups_only: true,
        no_sasl_ssl: None,
        in_process: false,
    },
    Client {
        name: "rdkafka",
        launch: Launch::Rust("client-rdkafka"),
        protocol: Protocol::Classic,
        extra: &[],
        groups_only: false,
        no_sasl_ssl: None,
        in_process: false,
    },
    Client {
        name: "confluent-kafka",
        launch: Launch::Rust("client-confluent"),
        protocol: Protocol::Consumer,
        extra: &[],
        groups_only: false,
        // Its TLS works, but `ConsumerConfig::new` refuses SCRAM: "Invalid value SCRAM-SHA-512
        // for configuration sasl.mechanism: only PLAIN is supported by this client".
        no_sasl_ssl: Some(
            "confluent-kafka 1.0.0 supports only SASL/PLAIN (its ConsumerConfig refuses \
             SCRAM-SHA-512: 'only PLAIN is supported by this client')",
        ),
        in_process: false,
    },
    Client {
        name: "krafka",
        launch: Launch::Rust("client-krafka"),
        protocol: Protocol::Classic,
        extra: &[],
        groups_only: false,
        no_sasl_ssl: None,
        in_process: false,
    },
    // krafka's default max_buffered_records=500 caps what it fetches ahead at 500 records;
    // without the cap it fetches like the others.
    Client {
        name: "krafka-unbuffered",
        launch: Launch::Rust("client-krafka"),
        protocol: Protocol::Classic,
        extra: &["--max-buffered-records", "0"],
        groups_only: false,
        no_sasl_ssl: None,
        in_process: false,
    },
    Client {
        name: "java-classic",
        launch: Launch::Java,
        protocol: Protocol::Classic,
        extra: &[],
        groups_only: false,
        no_sasl_ssl: None,
        in_process: false,
    },
    Client {
        name: "java-consumer",
        launch: Launch::Java,
        protocol: Protocol::Consumer,
        extra: &[],
        groups_only: false,
        no_sasl_ssl: None,
        in_process: false,
    },
    // Not a consumer: Fetch requests in a loop, batches counted from their headers
    // (bench/src/bin/client-ceiling.rs). Only in the ceiling workload, where it is the 1.0.
    Client {
        name: "ceiling",
        launch: Launch::Rust("client-ceiling"),
        protocol: Protocol::Classic,
        extra: &[],
        groups_only: false,
        no_sasl_ssl: Some("the raw fetch loop speaks PLAINTEXT only"),
        in_process: false,
    },
    // The members workload's N consumers in one process: ours, both protocols, the background
    // tasks on a thread and runtime each (the default) or on the process's runtime.
    Client {
        name: "ours-inproc",
        launch: Launch::Rust("client-ours"),
        protocol: Protocol::Classic,
        extra: &["--runtime", "dedicated"],
        groups_only: true,
        no_sasl_ssl: None,
        in_process: true,
    },
    Client {
        name: "ours-inproc-shared",
        launch: Launch::Rust("client-ours"),
        protocol: Protocol::Classic,
        extra: &["--runtime", "shared"],
        groups_only: true,
        no_sasl_ssl: None,
        in_process: true,
    },
    Client {
        name: "ours-consumer-inproc",
        launch: Launch::Rust("client-ours"),
        protocol: Protocol::Consumer,
        extra: &["--runtime", "dedicated"],
        groups_only: true,
        no_sasl_ssl: None,
        in_process: true,
    },
    Client {
        name: "ours-consumer-inproc-shared",
        launch: Launch::Rust("client-ours"),
        protocol: Protocol::Consumer,
        extra: &["--runtime", "shared"],
        groups_only: true,
        no_sasl_ssl: None,
        in_process: true,
    },
    // And Java's: N KafkaConsumers in one JVM, each polled by a thread of its own.
    Client {
        name: "java-classic-inproc",
        launch: Launch::Java,
        protocol: Protocol::Classic,
        extra: &[],
        groups_only: true,
        no_sasl_ssl: None,
        in_process: true,
    },
    Client {
        name: "java-consumer-inproc",
        launch: Launch::Java,
        protocol: Protocol::Consumer,
        extra: &[],
        groups_only: true,
        no_sasl_ssl: None,
        in_process: true,
    },
];

/// The broker's SASL_SSL listener and what a client needs for it.
#[derive(Debug, Clone)]
pub struct SaslSslListener {
    /// `localhost:<port>`: the broker's certificate names only `localhost`.
    pub bootstrap: String,
    pub client: SaslSsl,
}

impl SaslSslListener {
    /// From `KAFKA_BOOTSTRAP_SASL_SSL` and the `KAFKA_SECURITY_FILE` (`KEY=VALUE` lines with
    /// `KAFKA_CA_PEM`, `KAFKA_SASL_USER` and `KAFKA_SASL_PASSWORD`), as `testing/kafka/run up`
    /// prints and writes them.
    pub fn resolve(bootstrap: &str, security_file: &str) -> Result<Self, String> {
        if bootstrap.is_empty() || security_file.is_empty() {
            return Err(
                "--security sasl_ssl needs KAFKA_BOOTSTRAP_SASL_SSL and KAFKA_SECURITY_FILE \
                        (printed by testing/kafka/run up; bench/run exports them)"
                    .to_owned(),
            );
        }
        let text = std::fs::read_to_string(security_file)
            .map_err(|e| format!("KAFKA_SECURITY_FILE {security_file}: {e}"))?;
        Self::parse(bootstrap, security_file, &text)
    }

    fn parse(bootstrap: &str, security_file: &str, text: &str) -> Result<Self, String> {
        let get = |key: &str| {
            text.lines()
                .filter_map(|l| l.split_once('='))
                .find(|(k, _)| k.trim() == key)
                .map(|(_, v)| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .ok_or(format!("{security_file} has no {key}"))
        };
        Ok(SaslSslListener {
            bootstrap: bootstrap.to_owned(),
            client: SaslSsl {
                ca_location: get("KAFKA_CA_PEM")?,
                username: get("KAFKA_SASL_USER")?,
                password: get("KAFKA_SASL_PASSWORD")?,
            },
        })
    }
}

/// The driver's options.
#[derive(Debug, Clone)]
pub struct Options {
    pub command: String,
    pub sizes: Vec<usize>,
    pub codecs: Vec<Codec>,
    /// Codecs for the subscribe and group modes (default: `codecs`).
    pub codecs_groups: Option<Vec<Codec>>,
    pub modes: Vec<WorkloadMode>,
    pub clients: Vec<Client>,
    pub reps: usize,
    pub window_ms: u64,
    /// The latency workload's window after the first record (the warm-up included).
    pub latency_window_ms: u64,
    /// The slow-app workload's window after the first record.
    pub slow_app_window_ms: u64,
    /// The members workload's settings (`members::MembersSettings`).
    pub members: members::MembersSettings,
    pub records_100: u64,
    pub records_1024: u64,
    pub bootstrap: String,
    /// Every workload runs once per listener (default: plaintext only).
    pub securities: Vec<Security>,
    pub bootstrap_sasl_ssl: String,
    pub security_file: String,
}

impl Options {
    pub fn records(&self, size: usize) -> u64 {
        if size <= 100 {
            self.records_100
        } else {
            self.records_1024
        }
    }

    /// Every workload, the listeners of one base next to each other.
    pub fn workloads(&self) -> Vec<Workload> {
        let mut all = Vec::new();
        let mut push = |size, codec, mode| {
            for &security in &self.securities {
                all.push(Workload {
                    size,
                    codec,
                    mode,
                    security,
                });
            }
        };
        for &mode in &self.modes {
            // Fixed-rate workloads: 100 B uncompressed (the rate, not the encoding, is measured).
            if matches!(mode, WorkloadMode::Latency(_) | WorkloadMode::SlowApp) {
                push(100, Codec::None, mode);
                continue;
            }
            if mode.is_scale() || mode.is_members() {
                push(100, Codec::None, mode);
                continue;
            }
            if mode == WorkloadMode::Ceiling {
                for &size in &self.sizes {
                    push(size, Codec::None, mode);
                }
                continue;
            }
            if mode == WorkloadMode::Rebalance {
                if let Some(&size) = self.sizes.iter().min() {
                    push(size, Codec::None, mode);
                }
                continue;
            }
            let codecs = match (mode, &self.codecs_groups) {
                (WorkloadMode::Subscribe | WorkloadMode::Group, Some(codecs)) => codecs,
                _ => &self.codecs,
            };
            for &size in &self.sizes {
                for &codec in codecs {
                    push(size, codec, mode);
                }
            }
        }
        all
    }

    /// The pre-filled topics the workloads read, as (record size, codec): the latency
    /// workload writes its own as it runs.
    pub fn filled_topics(&self) -> Vec<(usize, Codec)> {
        let mut topics: Vec<(usize, Codec)> = self
            .workloads()
            .iter()
            .filter(|w| {
                !matches!(w.mode, WorkloadMode::Latency(_))
                    && !w.mode.is_scale()
                    && !w.mode.is_members()
            })
            .map(|w| (w.size, w.codec))
            .collect();
        topics.sort();
        topics.dedup();
        topics
    }

    /// The partition counts of the run's partitions workloads (each has its own topics).
    pub fn partition_totals(&self) -> Vec<u32> {
        let mut totals: Vec<u32> = self
            .modes
            .iter()
            .filter_map(|m| match m {
                WorkloadMode::Partitions { total, .. } => Some(*total),
                _ => None,
            })
            .collect();
        totals.sort_unstable();
        totals.dedup();
        totals
    }

    /// The SASL_SSL listener, when a workload needs it.
    pub fn sasl_ssl_listener(&self) -> Result<Option<SaslSslListener>, String> {
        if !self.securities.contains(&Security::SaslSsl) {
            return Ok(None);
        }
        SaslSslListener::resolve(&self.bootstrap_sasl_ssl, &self.security_file).map(Some)
    }

    /// Which results a run writes: `peers` for the plaintext matrix, `tls` for a run with
    /// another listener (so the TLS comparison never overwrites the plaintext matrix).
    pub fn results_set(&self) -> report::ResultsSet {
        if !self.securities.iter().all(|&s| s == Security::Plaintext) {
            report::ResultsSet::Tls
        } else if self.modes.iter().all(|m| m.is_second_round()) {
            report::ResultsSet::Workloads
        } else if self.modes.iter().all(|m| m.is_scale()) {
            report::ResultsSet::Scale
        } else if self.modes.iter().all(|m| m.is_members()) {
            report::ResultsSet::Members
        } else {
            report::ResultsSet::Peers
        }
    }
}

fn list<T>(value: &str, parse: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    value.split(',').map(|s| parse(s.trim())).collect()
}

fn parse_options() -> Result<Options, String> {
    let argv: Vec<String> = std::env::args().collect();
    let mut options = Options {
        command: std::env::var("BENCH_COMMAND").unwrap_or_else(|_| argv.join(" ")),
        sizes: vec![100, 1024],
        codecs: vec![Codec::None, Codec::Lz4, Codec::Zstd],
        codecs_groups: None,
        modes: vec![
            WorkloadMode::Assign,
            WorkloadMode::Subscribe,
            WorkloadMode::Group,
            WorkloadMode::Rebalance,
        ],
        clients: CLIENTS.to_vec(),
        reps: 3,
        window_ms: 5_000,
        // 2 s of warm-up, then 20 s: 2 M samples at 100 k records/s, 18 k at 1 k/s.
        latency_window_ms: 22_000,
        slow_app_window_ms: 60_000,
        members: members::MembersSettings::default(),
        // Enough that the fastest client (ours, ~5–6 M records/s at 100 B and ~1.3 M at 1 KiB
        // in assign mode) still reads for most of the 5 s window: 2.2 GB and 7.2 GB uncompressed.
        records_100: 20_000_000,
        records_1024: 7_000_000,
        bootstrap: std::env::var("KAFKA_BOOTSTRAP").unwrap_or_default(),
        securities: vec![Security::Plaintext],
        bootstrap_sasl_ssl: std::env::var("KAFKA_BOOTSTRAP_SASL_SSL").unwrap_or_default(),
        security_file: std::env::var("KAFKA_SECURITY_FILE").unwrap_or_default(),
    };
    let mut it = argv.iter().skip(2);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--sizes" => options.sizes = list(value, |s| s.parse().map_err(|e| format!("{e}")))?,
            "--codecs" => options.codecs = list(value, Codec::parse)?,
            "--codecs-groups" => options.codecs_groups = Some(list(value, Codec::parse)?),
            "--modes" => {
                options.modes = list(value, WorkloadMode::parse)?
                    .into_iter()
                    .flatten()
                    .collect();
                let second = options.modes.iter().filter(|m| m.is_second_round()).count();
                if second != 0 && second != options.modes.len() {
                    return Err("latency, slow-app and ceiling write their own results \
                                (bench/results/workloads.tsv): run them apart from the \
                                peer matrix's modes"
                        .to_owned());
                }
                let group = options.modes.iter().filter(|m| m.is_members()).count();
                if group != 0 && group != options.modes.len() {
                    return Err(
                        "members writes its own results (bench/results/members.tsv): \
                                run it apart from the other modes"
                            .to_owned(),
                    );
                }
                let scale = options.modes.iter().filter(|m| m.is_scale()).count();
                if scale != 0 && scale != options.modes.len() {
                    return Err(
                        "partitions writes its own results (bench/results/scale.tsv): \
                                run it apart from the other modes"
                            .to_owned(),
                    );
                }
            }
            "--clients" => {
                options.clients = list(value, |name| {
                    CLIENTS
                        .iter()
                        .find(|c| c.name == name)
                        .copied()
                        .ok_or(format!("unknown client {name}"))
                })?
            }
            "--reps" => options.reps = number(value)? as usize,
            "--window-ms" => options.window_ms = number(value)?,
            "--latency-window-ms" => options.latency_window_ms = number(value)?,
            "--slow-app-window-ms" => options.slow_app_window_ms = number(value)?,
            "--members-join-ms" => options.members.join_ms = number(value)?,
            "--members-after-ms" => options.members.after_ms = number(value)?,
            "--members-rate-per-s" => options.members.rate_per_s = number(value)?.max(1),
            "--members-records" => options.members.records = number(value)?,
            "--records-100" => options.records_100 = number(value)?,
            "--records-1024" => options.records_1024 = number(value)?,
            "--bootstrap" => options.bootstrap = value.clone(),
            "--security" => options.securities = list(value, Security::parse)?,
            "--bootstrap-sasl-ssl" => options.bootstrap_sasl_ssl = value.clone(),
            "--security-file" => options.security_file = value.clone(),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(options)
}

/// `bench/`.
pub fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The repository root.
pub fn repo_dir() -> PathBuf {
    bench_dir().join("..")
}

/// Where raw results and run metadata live.
pub fn results_dir() -> PathBuf {
    bench_dir().join("results")
}

/// Runs a command, returning its stdout; an error carries its stderr's tail.
pub fn output(command: &mut Command) -> Result<String, String> {
    let out = command.output().map_err(|e| format!("{command:?}: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        return Err(format!(
            "{:?} failed ({}): {}",
            command.get_program(),
            out.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The Kafka 4.1.1 classpath resolved by the test harness (`testing/kafka/run classpath`).
pub fn kafka_classpath() -> Result<String, String> {
    let script = repo_dir().join("testing/kafka/run");
    Ok(output(Command::new(script).arg("classpath"))?
        .trim()
        .to_owned())
}

fn main() {
    let options = match parse_options() {
        Ok(options) => options,
        Err(error) => {
            eprintln!("kafka-bench: {error}");
            std::process::exit(2);
        }
    };
    let verb = std::env::args().nth(1).unwrap_or_default();
    let outcome = match verb.as_str() {
        "fill" => fill::fill(&options),
        "run" => runner::run(&options),
        "report" => report::report_all(),
        "all" => fill::fill(&options)
            .and_then(|()| runner::run(&options))
            .and_then(|()| report::report(options.results_set())),
        _ => Err("usage: kafka-bench all|fill|run|report [options] (see bench/src/main.rs)".into()),
    };
    if let Err(error) = outcome {
        eprintln!("kafka-bench: {error}");
        std::process::exit(1);
    }
}

/// Whether a path exists and is newer than another.
pub fn newer(path: &Path, than: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    matches!((modified(path), modified(than)), (Some(a), Some(b)) if a >= b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partitions_modes_parse_and_lay_out() {
        let all = WorkloadMode::parse("partitions").expect("partitions");
        assert_eq!(all.len(), 2 * PARTITION_SCALES.len());
        assert!(all.iter().all(|m| m.is_scale() && !m.is_second_round()));
        let both = WorkloadMode::parse("partitions-120").expect("one scale");
        assert_eq!(
            both.iter().map(|m| m.name()).collect::<Vec<_>>(),
            ["partitions-120-assign", "partitions-120-subscribe"]
        );
        assert!(both[0].assigns() && !both[1].assigns());
        assert_eq!(
            WorkloadMode::parse("partitions-12-subscribe").expect("one mode"),
            vec![WorkloadMode::Partitions {
                total: 12,
                subscribe: true
            }]
        );
        assert!(WorkloadMode::parse("partitions-x").is_err());
        assert!(WorkloadMode::parse("partitions-0").is_err());
        assert!(WorkloadMode::parse("partitions-12-group").is_err());
        assert_eq!(partition_layout(12), (1, 12));
        assert_eq!(partition_layout(120), (10, 12));
        assert_eq!(partition_layout(1_200), (100, 12));
        assert_eq!(partition_layout(6_000), (100, 60));
        assert_eq!(partition_layout(3), (1, 3));
        // The same volume at every count, evenly over the topics.
        for total in PARTITION_SCALES {
            let (topics, _) = partition_layout(total);
            assert_eq!(
                partition_topic_records(total) * u64::from(topics),
                SCALE_RECORDS
            );
        }
        // The second protocols run only where a group is.
        let ours_consumer = CLIENTS[1];
        assert!(!ours_consumer.runs_in(both[0]) && ours_consumer.runs_in(both[1]));
    }

    #[test]
    fn the_members_modes_parse_and_run_their_own_clients() {
        let all = WorkloadMode::parse("members").expect("members");
        assert_eq!(
            all.iter().map(|m| m.name()).collect::<Vec<_>>(),
            ["members-3", "members-10", "members-30"]
        );
        assert!(all
            .iter()
            .all(|m| m.is_members() && !m.assigns() && !m.is_group()));
        assert_eq!(
            WorkloadMode::parse("members-10").expect("one size"),
            vec![WorkloadMode::Members { members: 10 }]
        );
        assert!(WorkloadMode::parse("members-1").is_err());
        assert!(WorkloadMode::parse("members-61").is_err());
        let by_name = |n: &str| CLIENTS.iter().find(|c| c.name == n).copied().expect(n);
        let members = WorkloadMode::Members { members: 3 };
        let inproc = by_name("ours-inproc-shared");
        assert!(inproc.runs_in(members) && inproc.is_ours());
        assert!(!inproc.runs_in(WorkloadMode::Group) && !inproc.runs_in(WorkloadMode::Assign));
        assert!(by_name("ours-consumer").runs_in(members));
        assert!(by_name("java-consumer").runs_in(members));
        assert!(!by_name("ceiling").runs_in(members));
        let java = by_name("java-consumer-inproc");
        assert!(java.runs_in(members) && !java.is_ours() && !java.runs_in(WorkloadMode::SlowApp));
    }

    #[test]
    fn the_second_round_modes_parse_and_expand() {
        assert_eq!(
            WorkloadMode::parse("latency").expect("latency"),
            vec![
                WorkloadMode::Latency(1_000),
                WorkloadMode::Latency(10_000),
                WorkloadMode::Latency(100_000)
            ]
        );
        assert_eq!(
            WorkloadMode::parse("latency-10k").expect("one rate"),
            vec![WorkloadMode::Latency(10_000)]
        );
        assert_eq!(
            WorkloadMode::parse("slow-app").expect("slow-app"),
            vec![WorkloadMode::SlowApp]
        );
        assert_eq!(
            WorkloadMode::parse("ceiling").expect("ceiling"),
            vec![WorkloadMode::Ceiling]
        );
        assert!(WorkloadMode::parse("latency-7k").is_err());
        for mode in [
            WorkloadMode::Latency(100_000),
            WorkloadMode::SlowApp,
            WorkloadMode::Ceiling,
        ] {
            assert_eq!(
                WorkloadMode::parse(&mode.name()).expect("round trip"),
                vec![mode]
            );
            assert!(mode.is_second_round() && mode.assigns());
        }
        assert_eq!(rate_label(100_000), "100k");
        assert_eq!(rate_label(2_500), "2500");
    }

    #[test]
    fn the_second_round_workloads_and_their_clients() {
        let options = Options {
            command: String::new(),
            sizes: vec![100, 1024],
            codecs: vec![Codec::None, Codec::Lz4],
            codecs_groups: None,
            modes: vec![
                WorkloadMode::Latency(1_000),
                WorkloadMode::SlowApp,
                WorkloadMode::Ceiling,
            ],
            clients: CLIENTS.to_vec(),
            reps: 1,
            window_ms: 5_000,
            latency_window_ms: 22_000,
            slow_app_window_ms: 60_000,
            members: members::MembersSettings::default(),
            records_100: 20_000_000,
            records_1024: 7_000_000,
            bootstrap: String::new(),
            securities: vec![Security::Plaintext],
            bootstrap_sasl_ssl: String::new(),
            security_file: String::new(),
        };
        let labels: Vec<String> = options.workloads().iter().map(Workload::label).collect();
        assert_eq!(
            labels,
            [
                "100B/none/latency-1k",
                "100B/none/slow-app",
                "100B/none/ceiling",
                "1KiB/none/ceiling"
            ]
        );
        // The latency topic is written while it runs: only slow-app and ceiling need a fill.
        assert_eq!(
            options.filled_topics(),
            vec![(100, Codec::None), (1024, Codec::None)]
        );
        assert_eq!(options.results_set(), report::ResultsSet::Workloads);
        let by_name = |n: &str| CLIENTS.iter().find(|c| c.name == n).copied().expect(n);
        let ceiling = by_name("ceiling");
        assert!(ceiling.runs_in(WorkloadMode::Ceiling));
        assert!(!ceiling.runs_in(WorkloadMode::Assign) && !ceiling.runs_in(WorkloadMode::SlowApp));
        let ours_consumer = by_name("ours-consumer");
        assert!(!ours_consumer.runs_in(WorkloadMode::Latency(1_000)));
        assert!(ours_consumer.runs_in(WorkloadMode::Group));
        assert!(by_name("java-consumer").runs_in(WorkloadMode::SlowApp));
    }

    #[test]
    fn the_sasl_ssl_listener_comes_from_the_harness_security_file() {
        let text = "KAFKA_CA_PEM=/s/ca.pem\nKAFKA_TLS_HOST=localhost\nKAFKA_SASL_USER=alice\n\
                    KAFKA_SASL_PASSWORD=alice-secret\n";
        let listener = SaslSslListener::parse("localhost:19194", "f", text).expect("complete");
        assert_eq!(listener.bootstrap, "localhost:19194");
        assert_eq!(listener.client.ca_location, "/s/ca.pem");
        assert_eq!(listener.client.username, "alice");
        assert_eq!(listener.client.password, "alice-secret");
        let error =
            SaslSslListener::parse("localhost:19194", "f", "KAFKA_CA_PEM=/s/ca.pem\n").unwrap_err();
        assert_eq!(error, "f has no KAFKA_SASL_USER");
        let error = SaslSslListener::resolve("", "f").unwrap_err();
        assert!(error.contains("KAFKA_BOOTSTRAP_SASL_SSL"), "{error}");
    }
}
