//! What every benchmarked client process shares: its command line, the stop rule and the
//! measurements it reports to the driver.
//!
//! A client process is started by the driver (`kafka-bench`), consumes one topic in one mode,
//! and prints exactly one line starting with `BENCH ` on stdout (see [`Stats::report`]). CPU time
//! and peak RSS are not measured here: the driver takes them from `wait4` on the child.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How a client reads the topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every partition assigned by hand, from the earliest offset, no group.
    Assign,
    /// A group member: `subscribe(topic)` with a group id (the driver starts one member for the
    /// single-consumer workload, three for the group workload).
    Subscribe,
}

/// The group protocol a subscribing client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Classic,
    Consumer,
}

impl Protocol {
    /// Kafka's `group.protocol` value.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Classic => "classic",
            Protocol::Consumer => "consumer",
        }
    }
}

/// The SASL mechanism of the SASL_SSL workloads: SCRAM-SHA-512, the stronger of the two SCRAM
/// variants (both are enabled on the harness broker; the handshake happens once per connection,
/// so the choice hardly shows in throughput).
pub const SASL_MECHANISM: &str = "SCRAM-SHA-512";

/// Which listener the clients use and how they authenticate on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Security {
    /// The broker's PLAINTEXT listener, no authentication (the default).
    Plaintext,
    /// The SASL_SSL listener: TLS verified against the harness's CA (host name included), then
    /// SASL [`SASL_MECHANISM`].
    SaslSsl,
}

impl Security {
    /// Kafka's `security.protocol` spelling in lower case, as on the command lines.
    pub fn name(self) -> &'static str {
        match self {
            Security::Plaintext => "plaintext",
            Security::SaslSsl => "sasl_ssl",
        }
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "plaintext" => Ok(Security::Plaintext),
            "sasl_ssl" => Ok(Security::SaslSsl),
            other => Err(format!(
                "unknown security {other} (expected plaintext or sasl_ssl)"
            )),
        }
    }
}

/// What a client needs for the SASL_SSL listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslSsl {
    /// PEM file of the CA that signed the broker's certificate.
    pub ca_location: String,
    pub username: String,
    pub password: String,
}

impl SaslSsl {
    /// The Java client's properties for this listener, which ours and confluent-kafka read
    /// under the same names (the Java program sets the same ones): no fallback is possible,
    /// since `security.protocol` is explicit and the bootstrap is the SASL_SSL port.
    pub fn java_properties(&self) -> Vec<(&'static str, String)> {
        vec![
            ("security.protocol", "SASL_SSL".to_owned()),
            ("sasl.mechanism", SASL_MECHANISM.to_owned()),
            (
                "sasl.jaas.config",
                format!(
                    "org.apache.kafka.common.security.scram.ScramLoginModule required \
                     username=\"{}\" password=\"{}\";",
                    self.username, self.password
                ),
            ),
            ("ssl.truststore.type", "PEM".to_owned()),
            ("ssl.truststore.location", self.ca_location.clone()),
            ("ssl.endpoint.identification.algorithm", "https".to_owned()),
        ]
    }

    /// librdkafka's properties for this listener.
    pub fn librdkafka_properties(&self) -> Vec<(&'static str, String)> {
        vec![
            ("security.protocol", "SASL_SSL".to_owned()),
            ("sasl.mechanisms", SASL_MECHANISM.to_owned()),
            ("sasl.username", self.username.clone()),
            ("sasl.password", self.password.clone()),
            ("ssl.ca.location", self.ca_location.clone()),
            ("ssl.endpoint.identification.algorithm", "https".to_owned()),
        ]
    }
}

/// A client process's command line.
#[derive(Debug, Clone)]
pub struct ClientArgs {
    pub bootstrap: String,
    /// `None`: PLAINTEXT (`--security plaintext`, the default).
    pub sasl_ssl: Option<SaslSsl>,
    /// One topic, or several separated by commas (the partitions workload reads up to 100
    /// topics); see [`ClientArgs::topics`].
    pub topic: String,
    /// Partitions of each topic.
    pub partitions: i32,
    pub mode: Mode,
    pub group: String,
    pub protocol: Protocol,
    /// Stop this long after the first record.
    pub window: Duration,
    /// Stop after this many records (the topic's size).
    pub expected: u64,
    /// Group workload: leave the group (close) this long after the first record, forcing the
    /// other members to rebalance.
    pub leave_after: Option<Duration>,
    /// krafka only: its `max_buffered_records` (default 500; 0 = no cap).
    pub max_buffered_records: Option<i32>,
    /// The rebalance workload: the application takes at most this many records a second (it
    /// waits between polls, see [`Stats::pace`]), so a member never reaches the end of its
    /// partitions and every pause in its deliveries is the rebalance's.
    pub rate_per_s: Option<u64>,
    /// Where an assigned partition without a committed offset starts (`auto.offset.reset`):
    /// the earliest offset (every workload reading a pre-filled topic), or the end (the latency
    /// workload, which counts only records produced while the client runs).
    pub start: Start,
    /// The latency workload: record each record's delivery time − its timestamp
    /// ([`Stats::record_latency`]) once this long has passed since the first record (the
    /// warm-up: connections, the first fetches and a JIT are not what is measured).
    pub latency_warmup: Option<Duration>,
}

impl ClientArgs {
    /// The topics `--topic` names: a comma-separated list, empty names skipped.
    pub fn topics(&self) -> Vec<&str> {
        self.topic.split(',').filter(|t| !t.is_empty()).collect()
    }

    /// Every partition of every topic, topic by topic.
    pub fn topic_partitions(&self) -> Vec<(&str, i32)> {
        self.topics()
            .into_iter()
            .flat_map(|t| (0..self.partitions).map(move |p| (t, p)))
            .collect()
    }
}

/// Where a client starts reading a partition it has no committed offset for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    Earliest,
    Latest,
}

impl Start {
    /// Kafka's `auto.offset.reset` value.
    pub fn name(self) -> &'static str {
        match self {
            Start::Earliest => "earliest",
            Start::Latest => "latest",
        }
    }
}

impl ClientArgs {
    /// Parses `--bootstrap H:P --topic T --partitions N --mode assign|subscribe --group G
    /// --protocol classic|consumer --window-ms MS --expected N [--leave-after-ms MS]
    /// [--max-buffered-records N] [--rate-per-s N] [--start earliest|latest]
    /// [--latency-warmup-ms MS] [--security plaintext|sasl_ssl
    /// --ca-location PEM --sasl-username U --sasl-password P]`.
    pub fn parse() -> Result<Self, String> {
        Self::parse_from(std::env::args().skip(1))
    }

    /// [`ClientArgs::parse`] over the given arguments (without the program name).
    pub fn parse_from(argv: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut security = Security::Plaintext;
        let (mut ca_location, mut username, mut password) = (None, None, None);
        let mut args = ClientArgs {
            bootstrap: String::new(),
            sasl_ssl: None,
            topic: String::new(),
            partitions: 0,
            mode: Mode::Assign,
            group: String::new(),
            protocol: Protocol::Classic,
            window: Duration::from_secs(5),
            expected: u64::MAX,
            leave_after: None,
            max_buffered_records: None,
            rate_per_s: None,
            start: Start::Earliest,
            latency_warmup: None,
        };
        let mut it = argv.into_iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or(format!("{flag} needs a value"))?;
            let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
            match flag.as_str() {
                "--bootstrap" => args.bootstrap = value,
                "--topic" => args.topic = value,
                "--partitions" => {
                    args.partitions = value.parse().map_err(|e| format!("{flag}: {e}"))?
                }
                "--mode" => {
                    args.mode = match value.as_str() {
                        "assign" => Mode::Assign,
                        "subscribe" => Mode::Subscribe,
                        other => return Err(format!("unknown mode {other}")),
                    }
                }
                "--group" => args.group = value,
                "--protocol" => {
                    args.protocol = match value.as_str() {
                        "classic" => Protocol::Classic,
                        "consumer" => Protocol::Consumer,
                        other => return Err(format!("unknown protocol {other}")),
                    }
                }
                "--window-ms" => args.window = Duration::from_millis(number(&value)?),
                "--expected" => args.expected = number(&value)?,
                "--leave-after-ms" => {
                    args.leave_after = Some(Duration::from_millis(number(&value)?))
                }
                "--max-buffered-records" => {
                    args.max_buffered_records =
                        Some(value.parse().map_err(|e| format!("{flag}: {e}"))?)
                }
                "--rate-per-s" => args.rate_per_s = Some(number(&value)?.max(1)),
                "--start" => {
                    args.start = match value.as_str() {
                        "earliest" => Start::Earliest,
                        "latest" => Start::Latest,
                        other => return Err(format!("unknown start {other}")),
                    }
                }
                "--latency-warmup-ms" => {
                    args.latency_warmup = Some(Duration::from_millis(number(&value)?))
                }
                "--security" => security = Security::parse(&value)?,
                "--ca-location" => ca_location = Some(value),
                "--sasl-username" => username = Some(value),
                "--sasl-password" => password = Some(value),
                other => return Err(format!("unknown argument {other}")),
            }
        }
        args.sasl_ssl =
            match (security, ca_location, username, password) {
                (Security::Plaintext, None, None, None) => None,
                (Security::Plaintext, ..) => {
                    return Err("--ca-location and --sasl-* need --security sasl_ssl".to_owned())
                }
                (Security::SaslSsl, Some(ca_location), Some(username), Some(password)) => {
                    Some(SaslSsl {
                        ca_location,
                        username,
                        password,
                    })
                }
                (Security::SaslSsl, ..) => return Err(
                    "--security sasl_ssl needs --ca-location, --sasl-username and --sasl-password"
                        .to_owned(),
                ),
            };
        if args.bootstrap.is_empty() || args.topic.is_empty() || args.partitions <= 0 {
            return Err("--bootstrap, --topic and --partitions are required".to_owned());
        }
        if args.mode == Mode::Subscribe && args.group.is_empty() {
            return Err("--mode subscribe needs --group".to_owned());
        }
        Ok(args)
    }
}

/// How long a client waits for its first record before giving up.
pub const FIRST_RECORD_TIMEOUT: Duration = Duration::from_secs(90);

/// A rate-limited application waits only when it is at least this far ahead of its rate: a
/// shorter wait costs more in sleeping than it holds back (librdkafka's clients deliver one
/// record per poll).
const SHORTEST_PACE: Duration = Duration::from_millis(1);

/// Counts what a client hands to the application, and decides when it stops.
#[derive(Debug)]
pub struct Stats {
    wall_start: SystemTime,
    start: Instant,
    first: Option<Instant>,
    last: Option<Instant>,
    records: u64,
    bytes: u64,
    max_gap: Duration,
    window: Duration,
    expected: u64,
    rate_per_s: Option<u64>,
    latency_warmup: Option<Duration>,
    /// Delivery time − record timestamp of every record after the warm-up, in µs.
    latencies_us: Vec<u64>,
    /// A rate-limited application (the rebalance workload): when each partition last had a
    /// record delivered, so the driver can check that the members that stayed received the
    /// leaver's partitions after it left ([`Stats::note_partitions`]).
    partition_last: Vec<Option<Instant>>,
}

/// The percentiles of the latency workload, in µs (nearest-rank on the sorted samples).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Percentiles {
    pub samples: u64,
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Percentiles {
    /// Nearest-rank percentiles (the smallest sample with at least `q` of the samples at or
    /// below it); `None` without samples. Sorts `samples` in place.
    pub fn of(samples: &mut [u64]) -> Option<Percentiles> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let n = samples.len();
        let rank = |q: f64| samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Percentiles {
            samples: n as u64,
            p50: rank(0.50),
            p99: rank(0.99),
            p999: rank(0.999),
            max: samples[n - 1],
        })
    }
}

/// Now, in µs since the Unix epoch: the clock the producer's timestamps come from (the same
/// machine's wall clock).
pub fn wall_clock_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros() as u64
}

impl Percentiles {
    /// The `BENCH` line's latency fields (the Java client prints the same).
    pub fn fields(&self) -> String {
        format!(
            " lat_n={} lat_p50_us={} lat_p99_us={} lat_p999_us={} lat_max_us={}",
            self.samples, self.p50, self.p99, self.p999, self.max
        )
    }
}

impl Stats {
    /// Starts the clock: call right before `subscribe`/`assign`.
    pub fn start(args: &ClientArgs) -> Self {
        Stats {
            wall_start: SystemTime::now(),
            start: Instant::now(),
            first: None,
            last: None,
            records: 0,
            bytes: 0,
            max_gap: Duration::ZERO,
            window: args.leave_after.unwrap_or(args.window).min(args.window),
            expected: args.expected,
            rate_per_s: args.rate_per_s,
            latency_warmup: args.latency_warmup,
            latencies_us: Vec::new(),
            partition_last: if args.rate_per_s.is_some() {
                vec![None; args.partitions.max(0) as usize]
            } else {
                Vec::new()
            },
        }
    }

    /// Notes the partitions of records delivered now (only a rate-limited application keeps
    /// them: at its rate this costs nothing; unlimited ones skip the per-record work).
    pub fn note_partitions(&mut self, partitions: impl IntoIterator<Item = i32>) {
        if self.partition_last.is_empty() {
            return;
        }
        let now = Instant::now();
        for p in partitions {
            if let Some(slot) = self.partition_last.get_mut(p.max(0) as usize) {
                *slot = Some(now);
            }
        }
    }

    /// Whether [`Stats::note_partitions`] keeps anything (so a client can skip collecting).
    pub fn tracks_partitions(&self) -> bool {
        !self.partition_last.is_empty()
    }

    /// Whether the client should call [`Stats::record_latency`] for the records it just
    /// delivered: the latency workload, past its warm-up.
    pub fn measuring_latency(&self) -> bool {
        match (self.latency_warmup, self.first) {
            (Some(warmup), Some(first)) => first.elapsed() >= warmup,
            _ => false,
        }
    }

    /// Notes one record delivered now whose timestamp (CreateTime, set by the producer from
    /// the same machine's wall clock) is `timestamp_ms`. The timestamp has ms resolution, so
    /// every latency reads up to 1 ms high, alike for every client.
    pub fn record_latency(&mut self, now_us: u64, timestamp_ms: i64) {
        let sent_us = (timestamp_ms.max(0) as u64).saturating_mul(1000);
        self.latencies_us.push(now_us.saturating_sub(sent_us));
    }

    /// Notes `records` records with `bytes` bytes of keys and values, handed to the application
    /// now (one poll's worth, or one record).
    pub fn delivered(&mut self, records: u64, bytes: u64) {
        if records == 0 {
            return;
        }
        let now = Instant::now();
        if self.first.is_none() {
            self.first = Some(now);
        }
        if let Some(last) = self.last {
            self.max_gap = self.max_gap.max(now - last);
        }
        self.last = Some(now);
        self.records += records;
        self.bytes += bytes;
    }

    /// How long a rate-limited application waits before its next poll to hold its
    /// `--rate-per-s` since the first record (as if it spent that long processing what it got);
    /// `None` for an unlimited one, or when the wait would be shorter than [`SHORTEST_PACE`].
    pub fn pace(&self) -> Option<Duration> {
        let (rate, first) = (self.rate_per_s?, self.first?);
        let due = first + Duration::from_secs_f64(self.records as f64 / rate as f64);
        let wait = due.saturating_duration_since(Instant::now());
        (wait >= SHORTEST_PACE).then_some(wait)
    }

    /// Whether the client should stop: its window since the first record is over, or it has
    /// read the whole topic. Errors when no record came within [`FIRST_RECORD_TIMEOUT`].
    pub fn done(&self) -> Result<bool, String> {
        match self.first {
            None if self.start.elapsed() > FIRST_RECORD_TIMEOUT => Err(format!(
                "no record within {} s",
                FIRST_RECORD_TIMEOUT.as_secs()
            )),
            None => Ok(false),
            Some(first) => Ok(self.records >= self.expected || first.elapsed() >= self.window),
        }
    }

    /// The line the driver reads, on stdout: counts, and times as nanoseconds since the Unix
    /// epoch (so the driver can line up the members of a group).
    pub fn report(&self) -> String {
        let epoch_ns = |at: Option<Instant>| -> u128 {
            let base = self
                .wall_start
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos();
            at.map_or(0, |t| base + (t - self.start).as_nanos())
        };
        let mut line = format!(
            "BENCH records={} bytes={} start_ns={} first_ns={} last_ns={} max_gap_ns={}",
            self.records,
            self.bytes,
            epoch_ns(Some(self.start)),
            epoch_ns(self.first),
            epoch_ns(self.last),
            self.max_gap.as_nanos(),
        );
        if let Some(p) = Percentiles::of(&mut self.latencies_us.clone()) {
            line.push_str(&p.fields());
        }
        for (partition, at) in self.partition_last.iter().enumerate() {
            if let Some(at) = at {
                line.push_str(&format!(" plast_{partition}={}", epoch_ns(Some(*at))));
            }
        }
        line
    }
}

/// Runs a client's `main` body: parses the arguments, runs it, prints the report or the error
/// (exit status 1).
pub fn client_main<F>(name: &str, body: F)
where
    F: FnOnce(ClientArgs) -> Result<Stats, String>,
{
    let outcome = ClientArgs::parse().and_then(body);
    match outcome {
        Ok(stats) => println!("{}", stats.report()),
        Err(error) => {
            eprintln!("{name}: {error}");
            std::process::exit(1);
        }
    }
}

/// The length of an optional byte slice.
pub fn len(bytes: Option<&[u8]>) -> u64 {
    bytes.map_or(0, |b| b.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(rate_per_s: Option<u64>) -> ClientArgs {
        ClientArgs {
            bootstrap: "b:9092".to_owned(),
            sasl_ssl: None,
            topic: "t".to_owned(),
            partitions: 1,
            mode: Mode::Subscribe,
            group: "g".to_owned(),
            protocol: Protocol::Classic,
            window: Duration::from_secs(10),
            expected: u64::MAX,
            leave_after: None,
            max_buffered_records: None,
            rate_per_s,
            start: Start::Earliest,
            latency_warmup: None,
        }
    }

    #[test]
    fn topic_lists_every_partition_of_every_topic() {
        let mut a = args(None);
        a.topic = "a,b,".to_owned();
        a.partitions = 2;
        assert_eq!(a.topics(), ["a", "b"]);
        assert_eq!(
            a.topic_partitions(),
            [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
        );
        a.topic = "t".to_owned();
        assert_eq!(a.topics(), ["t"]);
    }

    fn argv(extra: &[&str]) -> Vec<String> {
        [
            "--bootstrap",
            "localhost:19194",
            "--topic",
            "t",
            "--partitions",
            "12",
        ]
        .iter()
        .chain(extra)
        .map(|s| (*s).to_owned())
        .collect()
    }

    #[test]
    fn plaintext_is_the_default_and_takes_no_credentials() {
        let args = ClientArgs::parse_from(argv(&[])).expect("plaintext");
        assert_eq!(args.sasl_ssl, None);
        let error = ClientArgs::parse_from(argv(&["--ca-location", "ca.pem"])).unwrap_err();
        assert!(error.contains("--security sasl_ssl"), "{error}");
    }

    #[test]
    fn sasl_ssl_needs_the_ca_and_the_credentials() {
        let full = [
            "--security",
            "sasl_ssl",
            "--ca-location",
            "/x/ca.pem",
            "--sasl-username",
            "alice",
            "--sasl-password",
            "pw",
        ];
        let args = ClientArgs::parse_from(argv(&full)).expect("complete");
        let sasl_ssl = args.sasl_ssl.expect("sasl_ssl");
        let java = sasl_ssl.java_properties();
        let get = |k: &str| {
            java.iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(get("sasl.mechanism"), Some("SCRAM-SHA-512"));
        assert_eq!(get("ssl.truststore.location"), Some("/x/ca.pem"));
        assert_eq!(
            get("sasl.jaas.config"),
            Some(
                "org.apache.kafka.common.security.scram.ScramLoginModule required \
                 username=\"alice\" password=\"pw\";"
            )
        );
        let error = ClientArgs::parse_from(argv(&full[..6])).unwrap_err();
        assert!(error.contains("--sasl-password"), "{error}");
        let error = ClientArgs::parse_from(argv(&["--security", "ssl"])).unwrap_err();
        assert!(error.contains("unknown security ssl"), "{error}");
    }

    #[test]
    fn the_latency_workload_starts_at_the_end_and_warms_up() {
        let args = ClientArgs::parse_from(argv(&[])).expect("defaults");
        assert_eq!(args.start, Start::Earliest);
        assert_eq!(args.latency_warmup, None);
        let args =
            ClientArgs::parse_from(argv(&["--start", "latest", "--latency-warmup-ms", "1000"]))
                .expect("latency");
        assert_eq!(args.start, Start::Latest);
        assert_eq!(args.start.name(), "latest");
        assert_eq!(args.latency_warmup, Some(Duration::from_secs(1)));
        let error = ClientArgs::parse_from(argv(&["--start", "middle"])).unwrap_err();
        assert!(error.contains("unknown start middle"), "{error}");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        assert_eq!(Percentiles::of(&mut []), None);
        let mut one = [7];
        let p = Percentiles::of(&mut one).expect("one sample");
        assert_eq!((p.p50, p.p99, p.p999, p.max), (7, 7, 7, 7));
        // 1..=1000 shuffled: the 500th, 990th and 999th smallest.
        let mut samples: Vec<u64> = (1..=1000).map(|i| (i * 7919) % 1000 + 1).collect();
        let p = Percentiles::of(&mut samples).expect("samples");
        assert_eq!(
            p,
            Percentiles {
                samples: 1000,
                p50: 500,
                p99: 990,
                p999: 999,
                max: 1000
            }
        );
        assert_eq!(
            p.fields(),
            " lat_n=1000 lat_p50_us=500 lat_p99_us=990 lat_p999_us=999 lat_max_us=1000"
        );
    }

    #[test]
    fn latencies_count_only_after_the_warm_up_and_never_go_negative() {
        let mut a = args(None);
        a.latency_warmup = Some(Duration::ZERO);
        let mut stats = Stats::start(&a);
        assert!(!stats.measuring_latency(), "no record yet");
        stats.delivered(1, 100);
        assert!(stats.measuring_latency());
        stats.record_latency(5_000_300, 5_000);
        // A timestamp a little ahead of the delivery (ms rounding) counts as 0.
        stats.record_latency(4_999_000, 5_000);
        assert!(stats
            .report()
            .ends_with(" lat_n=2 lat_p50_us=0 lat_p99_us=300 lat_p999_us=300 lat_max_us=300"));
        let unmeasured = Stats::start(&args(None));
        assert!(!unmeasured.report().contains("lat_n"));
    }

    #[test]
    fn a_rate_limited_application_reports_when_each_partition_last_delivered() {
        let mut a = args(Some(1_000));
        a.partitions = 3;
        let mut stats = Stats::start(&a);
        assert!(stats.tracks_partitions());
        stats.delivered(2, 200);
        stats.note_partitions([0, 2, 7]);
        let line = stats.report();
        assert!(
            line.contains(" plast_0=") && line.contains(" plast_2="),
            "{line}"
        );
        assert!(
            !line.contains("plast_1") && !line.contains("plast_7"),
            "{line}"
        );
        let mut unlimited = Stats::start(&args(None));
        assert!(!unlimited.tracks_partitions());
        unlimited.note_partitions([0]);
        assert!(!unlimited.report().contains("plast_"));
    }

    #[test]
    fn an_unlimited_application_never_waits() {
        let mut stats = Stats::start(&args(None));
        stats.delivered(1_000_000, 100_000_000);
        assert_eq!(stats.pace(), None);
    }

    #[test]
    fn a_rate_limited_application_waits_for_what_it_took_ahead_of_its_rate() {
        // 500 records at 1,000/s are 500 ms of work: wide enough that a loaded machine's
        // scheduling between `delivered` and `pace` cannot eat the margin.
        let mut stats = Stats::start(&args(Some(1_000)));
        assert_eq!(stats.pace(), None, "nothing delivered yet");
        stats.delivered(500, 50_000);
        let wait = stats.pace().expect("ahead of the rate by 500 ms");
        assert!(wait <= Duration::from_millis(500), "{wait:?}");
        assert!(wait > Duration::from_millis(250), "{wait:?}");
        stats.delivered(100, 10_000);
        let wait = stats.pace().expect("further ahead");
        assert!(wait > Duration::from_millis(350), "{wait:?}");
    }

    #[test]
    fn a_rate_limited_application_behind_its_rate_does_not_wait() {
        let mut stats = Stats::start(&args(Some(1_000_000)));
        stats.delivered(1, 100);
        std::thread::sleep(Duration::from_millis(5));
        stats.delivered(1, 100);
        assert_eq!(stats.pace(), None);
    }
}
