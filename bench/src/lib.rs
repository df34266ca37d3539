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
    /// The members workload: the moment (ms since the Unix epoch, this machine's clock) the
    /// leaving member leaves. Every member tracks its assignment, when it became stable and
    /// what it delivered around this moment ([`Stats::note_assignment`]).
    pub leave_at_epoch_ms: Option<u64>,
    /// The members workload: stop at this moment (ms since the Unix epoch) whatever was
    /// delivered: every member of a run stops on the same clock, not relative to its first
    /// record (which comes at a different time for each).
    pub until_epoch_ms: Option<u64>,
    /// The members workload, in one process (client-ours only): this many consumers, each its
    /// own task; the last one stops at `leave_at_epoch_ms` (it is the leaver).
    pub members: usize,
    /// With `members`: where the consumers' background tasks run (`BackgroundRuntime`).
    pub runtime: RuntimeChoice,
}

/// Where an in-process group's consumers run their background tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeChoice {
    /// One OS thread and runtime per consumer (`BackgroundRuntime::Dedicated`, the default).
    Dedicated,
    /// Every consumer's background task on the application's runtime
    /// (`BackgroundRuntime::Shared`).
    Shared,
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
    /// [--latency-warmup-ms MS] [--leave-at-epoch-ms MS] [--until-epoch-ms MS] [--members N]
    /// [--runtime dedicated|shared] [--security plaintext|sasl_ssl
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
            leave_at_epoch_ms: None,
            until_epoch_ms: None,
            members: 1,
            runtime: RuntimeChoice::Dedicated,
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
                "--leave-at-epoch-ms" => args.leave_at_epoch_ms = Some(number(&value)?),
                "--until-epoch-ms" => args.until_epoch_ms = Some(number(&value)?),
                "--members" => args.members = number(&value)?.max(1) as usize,
                "--runtime" => {
                    args.runtime = match value.as_str() {
                        "dedicated" => RuntimeChoice::Dedicated,
                        "shared" => RuntimeChoice::Shared,
                        other => return Err(format!("unknown runtime {other}")),
                    }
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
    /// The members workload: the stop moment shared by the whole run (`--until-epoch-ms`).
    until: Option<Instant>,
    /// When [`Stats::done`] first said yes.
    stopped: Option<Instant>,
    /// The members workload: assignment, stability and takeover around the leave.
    member: Option<MemberTrack>,
}

/// How often a member of the members workload reads its consumer's assignment: often enough
/// that join-to-stable is resolved to ~10 ms, rarely enough to cost nothing at the
/// workload's rates (librdkafka's clients poll once per record).
pub const ASSIGNMENT_CHECK_EVERY: Duration = Duration::from_millis(10);

/// What a member of the members workload tracks besides the counts: the driver turns these
/// into join-to-stable, the stayers' pause and the takeover of the leaver's partitions
/// (`bench/src/members.rs`).
#[derive(Debug)]
struct MemberTrack {
    /// The leave moment (`--leave-at-epoch-ms`) on this process's monotonic clock.
    leave_at: Instant,
    /// The assignment as last read (partition numbers, sorted), and when it was read.
    assignment: Vec<i32>,
    checked: Option<Instant>,
    /// When the assignment last changed before the leave (a non-empty one: losing every
    /// partition is not becoming stable).
    assigned: Option<Instant>,
    /// The first delivery after `assigned`, before the leave: the member consumes its final
    /// assignment from here on.
    stable: Option<Instant>,
    /// The longest gap between two deliveries that ends at or after the leave (the open gap
    /// from the last delivery to the stop included).
    pause: Duration,
    /// Per partition: the first delivery of one of its records at or after the leave.
    taken: Vec<Option<Instant>>,
    /// Per partition: the first assignment read at or after the leave that holds it.
    got: Vec<Option<Instant>>,
}

impl MemberTrack {
    /// Notes an assignment read now; before the leave, a change to a non-empty one restarts
    /// the wait for stability.
    fn note_assignment(&mut self, now: Instant, mut partitions: Vec<i32>) {
        self.checked = Some(now);
        partitions.sort_unstable();
        partitions.dedup();
        if now >= self.leave_at {
            for &p in &partitions {
                if let Some(slot @ None) = self.got.get_mut(p.max(0) as usize) {
                    *slot = Some(now);
                }
            }
            return;
        }
        if partitions == self.assignment {
            return;
        }
        if !partitions.is_empty() {
            self.assigned = Some(now);
        }
        self.stable = None;
        self.assignment = partitions;
    }

    /// Notes a delivery at `now` after the previous one at `last`.
    fn delivered(&mut self, now: Instant, last: Option<Instant>) {
        if now < self.leave_at && self.assigned.is_some() && self.stable.is_none() {
            self.stable = Some(now);
        }
        if let Some(last) = last.filter(|_| now >= self.leave_at) {
            self.pause = self.pause.max(now - last);
        }
    }

    /// Notes a record of `partition` delivered at `now` (only those at or after the leave
    /// count: they show who took the leaver's partitions over).
    fn note_partition(&mut self, now: Instant, partition: i32) {
        if now < self.leave_at {
            return;
        }
        if let Some(slot @ None) = self.taken.get_mut(partition.max(0) as usize) {
            *slot = Some(now);
        }
    }
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
            until: args.until_epoch_ms.map(instant_of_epoch_ms),
            stopped: None,
            member: args.leave_at_epoch_ms.map(|ms| MemberTrack {
                leave_at: instant_of_epoch_ms(ms),
                assignment: Vec::new(),
                checked: None,
                assigned: None,
                stable: None,
                pause: Duration::ZERO,
                taken: vec![None; args.partitions.max(0) as usize],
                got: vec![None; args.partitions.max(0) as usize],
            }),
        }
    }

    /// Whether the client should read its consumer's assignment now and hand it to
    /// [`Stats::note_assignment`]: the members workload, every [`ASSIGNMENT_CHECK_EVERY`].
    pub fn assignment_due(&self) -> bool {
        self.member.as_ref().is_some_and(|m| {
            m.checked
                .is_none_or(|at| at.elapsed() >= ASSIGNMENT_CHECK_EVERY)
        })
    }

    /// Notes the consumer's assignment (its partition numbers) read now: when it last changed
    /// before the leave, and what it was at the leave, go to the report.
    pub fn note_assignment(&mut self, partitions: impl IntoIterator<Item = i32>) {
        if let Some(member) = &mut self.member {
            member.note_assignment(Instant::now(), partitions.into_iter().collect());
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
            if let Some(member) = &mut self.member {
                member.note_partition(now, p);
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
        if let Some(member) = &mut self.member {
            member.delivered(now, self.last);
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
    pub fn done(&mut self) -> Result<bool, String> {
        let done = self.should_stop()?;
        if done && self.stopped.is_none() {
            self.stopped = Some(Instant::now());
        }
        Ok(done)
    }

    /// [`Stats::done`]'s rule. With `--until-epoch-ms` (the members workload) the shared stop
    /// moment decides alone: a member that got nothing by then still reports (the driver
    /// marks the run invalid), so the table says which member failed.
    fn should_stop(&self) -> Result<bool, String> {
        if let Some(until) = self.until {
            return Ok(Instant::now() >= until);
        }
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
        if let Some(member) = &self.member {
            line.push_str(&self.member_fields(member, &epoch_ns));
        }
        line
    }

    /// The members workload's fields: `assigned_ns`, `stable_ns` (0 when never), `pause_ns`
    /// (the open gap to the stop included), `own_<p>=1` for each partition assigned at the
    /// leave (or at the stop, for a leaver), `ptake_<p>` for the first delivery of `p` at or
    /// after the leave, `pgot_<p>` for the first assignment read at or after the leave that
    /// holds `p`.
    fn member_fields(
        &self,
        member: &MemberTrack,
        epoch_ns: &dyn Fn(Option<Instant>) -> u128,
    ) -> String {
        let mut pause = member.pause;
        if let (Some(stopped), Some(last)) = (self.stopped, self.last) {
            if stopped >= member.leave_at {
                pause = pause.max(stopped.saturating_duration_since(last));
            }
        }
        let mut fields = format!(
            " assigned_ns={} stable_ns={} pause_ns={}",
            epoch_ns(member.assigned),
            epoch_ns(member.stable),
            pause.as_nanos()
        );
        for p in &member.assignment {
            fields.push_str(&format!(" own_{p}=1"));
        }
        for (p, at) in member.taken.iter().enumerate() {
            if let Some(at) = at {
                fields.push_str(&format!(" ptake_{p}={}", epoch_ns(Some(*at))));
            }
        }
        for (p, at) in member.got.iter().enumerate() {
            if let Some(at) = at {
                fields.push_str(&format!(" pgot_{p}={}", epoch_ns(Some(*at))));
            }
        }
        fields
    }
}

/// The monotonic instant of a wall-clock moment (ms since the Unix epoch): now, moved by the
/// difference between that moment and the wall clock now.
fn instant_of_epoch_ms(ms: u64) -> Instant {
    let target = UNIX_EPOCH + Duration::from_millis(ms);
    let now = Instant::now();
    match target.duration_since(SystemTime::now()) {
        Ok(ahead) => now + ahead,
        Err(behind) => now.checked_sub(behind.duration()).unwrap_or(now),
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
            leave_at_epoch_ms: None,
            until_epoch_ms: None,
            members: 1,
            runtime: RuntimeChoice::Dedicated,
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

    fn track(leave_at: Instant) -> MemberTrack {
        MemberTrack {
            leave_at,
            assignment: Vec::new(),
            checked: None,
            assigned: None,
            stable: None,
            pause: Duration::ZERO,
            taken: vec![None; 4],
            got: vec![None; 4],
        }
    }

    #[test]
    fn a_member_is_stable_from_its_first_delivery_after_its_last_assignment_change() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut m = track(ms(1_000));
        m.delivered(ms(10), None);
        assert_eq!(m.stable, None, "no assignment seen yet");
        m.note_assignment(ms(20), vec![3, 1]);
        m.delivered(ms(30), Some(ms(10)));
        assert_eq!((m.assigned, m.stable), (Some(ms(20)), Some(ms(30))));
        // The same set again is no change; a new one restarts the wait.
        m.note_assignment(ms(40), vec![1, 3]);
        assert_eq!(m.stable, Some(ms(30)));
        m.note_assignment(ms(50), vec![1]);
        assert_eq!((m.assigned, m.stable), (Some(ms(50)), None));
        m.delivered(ms(60), Some(ms(30)));
        assert_eq!(m.stable, Some(ms(60)));
        // Losing everything is not a stable assignment; after the leave nothing changes.
        m.note_assignment(ms(70), vec![]);
        assert_eq!((m.assigned, m.stable), (Some(ms(50)), None));
        m.note_assignment(ms(80), vec![2]);
        m.delivered(ms(90), Some(ms(60)));
        m.note_assignment(ms(1_500), vec![0, 1, 2]);
        assert_eq!(m.assignment, [2], "the assignment at the leave");
        assert_eq!(m.stable, Some(ms(90)));
        m.note_assignment(ms(1_600), vec![0, 3]);
        assert_eq!(
            m.got,
            [
                Some(ms(1_500)),
                Some(ms(1_500)),
                Some(ms(1_500)),
                Some(ms(1_600))
            ]
        );
    }

    #[test]
    fn the_pause_is_the_longest_gap_ending_after_the_leave() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut m = track(ms(1_000));
        m.delivered(ms(900), Some(ms(100)));
        assert_eq!(
            m.pause,
            Duration::ZERO,
            "a gap before the leave is the join's"
        );
        m.delivered(ms(1_050), Some(ms(990)));
        m.delivered(ms(1_100), Some(ms(1_050)));
        assert_eq!(
            m.pause,
            Duration::from_millis(60),
            "the gap across the leave counts"
        );
        m.note_partition(ms(999), 2);
        m.note_partition(ms(1_200), 2);
        m.note_partition(ms(1_300), 2);
        m.note_partition(ms(1_300), 9);
        assert_eq!(m.taken, [None, None, Some(ms(1_200)), None]);
    }

    #[test]
    fn a_member_reports_its_assignment_and_stops_on_the_shared_clock() {
        let mut a = args(Some(1_000));
        a.partitions = 4;
        let now_ms = wall_clock_us() / 1_000;
        a.leave_at_epoch_ms = Some(now_ms + 60_000);
        a.until_epoch_ms = Some(now_ms);
        let mut stats = Stats::start(&a);
        assert!(stats.assignment_due());
        stats.note_assignment([1, 0]);
        assert!(!stats.assignment_due(), "read again only after 10 ms");
        assert!(stats.done().expect("no error without records"));
        let line = stats.report();
        assert!(line.contains(" own_0=1 own_1=1"), "{line}");
        assert!(line.contains(" stable_ns=0 "), "{line}");
        assert!(!Stats::start(&args(None)).assignment_due());
        let parsed = ClientArgs::parse_from(argv(&[
            "--leave-at-epoch-ms",
            "5",
            "--until-epoch-ms",
            "6",
            "--members",
            "3",
            "--runtime",
            "shared",
        ]))
        .expect("members");
        assert_eq!(
            (
                parsed.leave_at_epoch_ms,
                parsed.until_epoch_ms,
                parsed.members,
                parsed.runtime
            ),
            (Some(5), Some(6), 3, RuntimeChoice::Shared)
        );
    }
}
