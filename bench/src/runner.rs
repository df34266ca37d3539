//! Runs the matrix: every workload, `reps` rounds, every client once per round (the order
//! rotates from round to round), each client as its own child process(es). CPU time and peak RSS
//! come from `wait4` on each child; throughput and latencies from the child's `BENCH` line.
//! Raw rows go to `bench/results/<set>.tsv`, run metadata to `bench/results/<set>.meta`
//! (`peers` for the plaintext matrix, `tls` for a run with the SASL_SSL listener). The remote
//! ports each child talked to are sampled while it runs ([`crate::sockets`]); a SASL_SSL run
//! that touched any other port than the SASL_SSL listener's fails.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kafka_bench::Security;

use crate::fill::{partition_topics, topic_name};
use crate::sockets::{port_of, remote_ports};
use crate::{
    bench_dir, kafka_classpath, newer, output, partition_layout, repo_dir, results_dir, Client,
    Launch, Options, SaslSslListener, Workload, WorkloadMode, PARTITIONS, SCALE_RECORDS,
};

/// In the group workload, the third member leaves this long after its first record.
pub const LEAVE_AFTER_MS: u64 = 2_000;
/// Members of the group workload.
pub const GROUP_MEMBERS: usize = 3;
/// In the rebalance workload, what each member's application takes a second: a sixth of what
/// the slowest client (krafka, ~120 k records/s at 100 B) reads alone, so every client keeps
/// up; over the window a member takes 200 k records, a small part of the millions its
/// partitions hold, so none runs out.
pub const REBALANCE_RATE_PER_S: u64 = 20_000;
/// In the rebalance workload, how long the members that stay read after their first record:
/// the leave, the slowest protocol's notice of it (KIP-848's 5 s heartbeat interval) and the
/// resumed deliveries fit inside it.
pub const REBALANCE_WINDOW_MS: u64 = 10_000;
/// The latency workload's produce rates, records a second.
pub const LATENCY_RATES: [u64; 3] = [1_000, 10_000, 100_000];
/// The latency workload's topic (100 B values, 12 partitions), shared by every run: each run
/// reads only what is produced while it runs (it starts at the end offsets).
pub const LATENCY_TOPIC: &str = "bench-latency-100b";
/// The producer starts this long before the client, so its JVM is up and producing at its
/// rate when the client arrives.
pub const LATENCY_PRODUCER_LEAD: Duration = Duration::from_secs(4);
/// Latencies are recorded from this long after a client's first record: connection set-up,
/// the first fetches and a JIT's warm-up are not steady-state delivery.
pub const LATENCY_WARMUP_MS: u64 = 2_000;
/// What the slow application takes a second, every client alike: a tenth of what the slowest
/// client (krafka, ~210 k records/s at 100 B) reads unthrottled in assign mode, so every client
/// fetches at least 10× faster than its application (ours ~290×). A tenth of ours' rate
/// (~585 k/s) would read the 20 M-record topic to its end in 35 s and would not hold back the
/// clients slower than that at all.
pub const SLOW_APP_RATE_PER_S: u64 = 20_000;
/// The partitions workload's window after the first record: long enough that every client
/// reads its topics to the end (it stops there), at 6,000 partitions too.
pub const PARTITIONS_WINDOW_MS: u64 = 120_000;
/// How often the driver samples a child's RSS (`VmRSS` in `/proc/<pid>/status`).
const RSS_SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// What one child process did.
#[derive(Debug, Default)]
pub(crate) struct ChildOutcome {
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) exit: i32,
    pub(crate) cpu_s: f64,
    pub(crate) max_rss_kb: i64,
    pub(crate) killed: bool,
    /// The most threads seen in the child (`Threads:` of `/proc/<pid>/status`, sampled with
    /// the RSS).
    pub(crate) max_threads: i64,
    /// Remote TCP ports seen on the child's sockets while it ran.
    remote_ports: BTreeSet<u16>,
    /// `(ms since the children started, VmRSS kB)`, every [`RSS_SAMPLE_EVERY`].
    rss: Vec<(u64, i64)>,
}

/// The `VmRSS` of a `/proc/<pid>/status` text, in kB.
pub fn vm_rss_kb(status: &str) -> Option<i64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut fields = line["VmRSS:".len()..].split_whitespace();
    let kb = fields.next()?.parse().ok()?;
    (fields.next() == Some("kB")).then_some(kb)
}

/// A child's RSS now (`None` once it has exited or when `/proc` is unreadable).
fn sample_rss(pid: libc::pid_t) -> Option<i64> {
    vm_rss_kb(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// The `Threads:` count of a `/proc/<pid>/status` text.
pub fn threads_of(status: &str) -> Option<i64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

/// A child's thread count now (`None` once it has exited).
fn sample_threads(pid: libc::pid_t) -> Option<i64> {
    threads_of(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// What a run's RSS samples say: the median over its second half (the steady state) and
/// the growth from the middle of the run to its end (a bounded consumer's is ~0).
pub fn rss_steady_and_growth(samples: &[(u64, i64)]) -> Option<(i64, i64)> {
    let (&(end_ms, end_kb), _) = samples.split_last()?;
    let half = end_ms / 2;
    let mut second: Vec<i64> = samples
        .iter()
        .filter(|(t, _)| *t >= half)
        .map(|(_, kb)| *kb)
        .collect();
    let mid_kb = second[0];
    second.sort_unstable();
    Some((second[second.len() / 2], end_kb - mid_kb))
}

/// How often the driver looks at the children's sockets: often enough to see every broker
/// connection of a run of seconds, rarely enough to cost nothing measurable.
const SOCKET_SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// One row of `peers.tsv`.
#[derive(Debug, Clone)]
pub struct Row {
    pub workload: String,
    pub client: String,
    pub rep: usize,
    pub ok: bool,
    pub records: u64,
    pub bytes: u64,
    /// First record to last record (earliest first, latest last over the members).
    pub fetch_s: f64,
    /// `subscribe`/`assign` call to last record.
    pub join_s: f64,
    /// `subscribe`/`assign` call to first record (the slowest member's).
    pub first_ms: f64,
    /// Longest gap between two deliveries (over the members that stayed).
    pub max_gap_ms: f64,
    /// User + system CPU seconds, summed over the members.
    pub cpu_s: f64,
    /// Peak RSS, the largest member's.
    pub rss_kb: i64,
    pub error: String,
    /// Remote ports the members' sockets were seen connected to, comma-separated (empty in
    /// TSVs written before the column existed).
    pub ports: String,
    /// The latency workload: p50, p99, p99.9 and max of delivery − record timestamp, ms, and
    /// how many records they are over (0 elsewhere).
    pub latency_ms: [f64; 4],
    pub latency_samples: u64,
    /// The slow-app workload: median RSS over the run's second half, and its growth from the
    /// middle of the run to the end, kB (0 elsewhere).
    pub rss_steady_kb: i64,
    pub rss_growth_kb: i64,
}

/// The slow-app workload's RSS samples (`bench/results/<this>`).
pub const RSS_TSV: &str = "workloads-rss.tsv";
pub const RSS_TSV_HEADER: &str = "workload\tclient\trep\tt_ms\trss_kb";

pub const TSV_HEADER: &str = "workload\tclient\trep\tstatus\trecords\tbytes\tfetch_s\tjoin_s\tfirst_ms\tmax_gap_ms\tcpu_s\trss_kb\terror\tports\tlat_p50_ms\tlat_p99_ms\tlat_p999_ms\tlat_max_ms\tlat_n\trss_steady_kb\trss_growth_kb";

impl Row {
    fn tsv(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{:.6}\t{:.6}\t{:.3}\t{:.3}\t{:.4}\t{}\t{}\t{}\t{:.3}\t{:.3}\t{:.3}\t{:.3}\t{}\t{}\t{}",
            self.workload,
            self.client,
            self.rep,
            if self.ok { "ok" } else { "fail" },
            self.records,
            self.bytes,
            self.fetch_s,
            self.join_s,
            self.first_ms,
            self.max_gap_ms,
            self.cpu_s,
            self.rss_kb,
            self.error,
            self.ports,
            self.latency_ms[0],
            self.latency_ms[1],
            self.latency_ms[2],
            self.latency_ms[3],
            self.latency_samples,
            self.rss_steady_kb,
            self.rss_growth_kb,
        )
    }

    pub fn parse(line: &str) -> Option<Row> {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 13 {
            return None;
        }
        Some(Row {
            workload: f[0].to_owned(),
            client: f[1].to_owned(),
            rep: f[2].parse().ok()?,
            ok: f[3] == "ok",
            records: f[4].parse().ok()?,
            bytes: f[5].parse().ok()?,
            fetch_s: f[6].parse().ok()?,
            join_s: f[7].parse().ok()?,
            first_ms: f[8].parse().ok()?,
            max_gap_ms: f[9].parse().ok()?,
            cpu_s: f[10].parse().ok()?,
            rss_kb: f[11].parse().ok()?,
            error: f[12].to_owned(),
            ports: f.get(13).map_or(String::new(), |p| (*p).to_owned()),
            // Absent in TSVs written before the second-round workloads.
            latency_ms: [14, 15, 16, 17]
                .map(|i| f.get(i).and_then(|v| v.parse().ok()).unwrap_or(0.0)),
            latency_samples: f.get(18).and_then(|v| v.parse().ok()).unwrap_or(0),
            rss_steady_kb: f.get(19).and_then(|v| v.parse().ok()).unwrap_or(0),
            rss_growth_kb: f.get(20).and_then(|v| v.parse().ok()).unwrap_or(0),
        })
    }
}

/// Spawns the children at once and waits for all of them; each is killed (SIGKILL, by its own
/// pid, before it is reaped) if it outlives `deadline`.
pub(crate) fn run_children(
    commands: Vec<Command>,
    deadline: Duration,
) -> Result<Vec<ChildOutcome>, String> {
    let started = Instant::now();
    let mut running = Vec::new();
    for mut command in commands {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{:?}: {e}", command.get_program()))?;
        let pid = child.id() as libc::pid_t;
        let mut out = child.stdout.take().ok_or("no stdout")?;
        let mut err = child.stderr.take().ok_or("no stderr")?;
        let out = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        });
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        // `child` is reaped by wait4 below, never by std: dropping a Child does not wait.
        drop(child);
        running.push((pid, out, err));
    }
    // Sockets are sampled for every child that is not reaped yet (so its pid is still ours).
    let pids: Vec<libc::pid_t> = running.iter().map(|(pid, ..)| *pid).collect();
    let mut ports: Vec<BTreeSet<u16>> = vec![BTreeSet::new(); pids.len()];
    let mut rss: Vec<Vec<(u64, i64)>> = vec![Vec::new(); pids.len()];
    let mut threads: Vec<i64> = vec![0; pids.len()];
    let mut reaped_pids: BTreeSet<libc::pid_t> = BTreeSet::new();
    let mut sampled = Instant::now();
    let mut rss_sampled = Instant::now();
    let mut outcomes = Vec::new();
    for (pid, out, err) in running {
        let mut outcome = ChildOutcome::default();
        loop {
            if sampled.elapsed() >= SOCKET_SAMPLE_EVERY {
                sampled = Instant::now();
                for (i, &p) in pids.iter().enumerate() {
                    if !reaped_pids.contains(&p) {
                        ports[i].extend(remote_ports(p));
                    }
                }
            }
            if rss_sampled.elapsed() >= RSS_SAMPLE_EVERY {
                rss_sampled = Instant::now();
                let at = started.elapsed().as_millis() as u64;
                for (i, &p) in pids.iter().enumerate() {
                    if !reaped_pids.contains(&p) {
                        rss[i].extend(sample_rss(p).map(|kb| (at, kb)));
                        threads[i] = threads[i].max(sample_threads(p).unwrap_or(0));
                    }
                }
            }
            let mut status: libc::c_int = 0;
            // SAFETY: an all-zero rusage is a valid value of this plain C struct.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: `pid` is our own unreaped child; status and usage are valid out-pointers.
            let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
            if reaped == pid {
                let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
                outcome.cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
                outcome.max_rss_kb = usage.ru_maxrss;
                outcome.exit = if libc::WIFEXITED(status) {
                    libc::WEXITSTATUS(status)
                } else {
                    -1
                };
                reaped_pids.insert(pid);
                break;
            }
            if reaped < 0 {
                return Err(format!("wait4({pid}): {}", std::io::Error::last_os_error()));
            }
            if started.elapsed() > deadline && !outcome.killed {
                // SAFETY: signalling our own child, which is not reaped yet (so the pid is ours).
                unsafe { libc::kill(pid, libc::SIGKILL) };
                outcome.killed = true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        outcome.stdout = out.join().unwrap_or_default();
        outcome.stderr = err.join().unwrap_or_default();
        outcomes.push(outcome);
    }
    for (((outcome, ports), rss), threads) in outcomes.iter_mut().zip(ports).zip(rss).zip(threads) {
        outcome.remote_ports = ports;
        outcome.rss = rss;
        outcome.max_threads = threads;
    }
    Ok(outcomes)
}

/// The `key=value` fields of a child's `BENCH` line.
pub(crate) fn bench_line(stdout: &str) -> Option<BTreeMap<String, u128>> {
    let line = stdout.lines().find(|l| l.starts_with("BENCH "))?;
    Some(
        line.split_whitespace()
            .skip(1)
            .filter_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                Some((k.to_owned(), v.parse().ok()?))
            })
            .collect(),
    )
}

/// The first exception line of a Java stack trace, else the last meaningful stderr line,
/// flattened for the TSV.
pub(crate) fn error_text(outcome: &ChildOutcome) -> String {
    let mut lines = outcome.stderr.lines().filter(|l| !l.trim().is_empty());
    let line = lines
        .clone()
        .find(|l| l.starts_with("Exception in thread") || l.contains("Exception: "))
        .or_else(|| lines.next_back())
        .unwrap_or("no output");
    let mut text = if outcome.killed {
        format!("killed after the deadline; last stderr: {line}")
    } else {
        format!("exit {}: {line}", outcome.exit)
    };
    text = text.replace(['\t', '\r', '\n'], " ");
    text.truncate(400);
    text
}

pub(crate) struct Launcher {
    release_dir: PathBuf,
    /// Kafka's classpath (the latency workload's producer).
    kafka_classpath: String,
    java_classpath: String,
    java_log_config: PathBuf,
}

impl Launcher {
    fn new() -> Result<Self, String> {
        let release_dir = bench_dir().join("target/release");
        let java_dir = bench_dir().join("target/java");
        std::fs::create_dir_all(&java_dir).map_err(|e| e.to_string())?;
        let kafka = kafka_classpath()?;
        let source = bench_dir().join("java/BenchConsumer.java");
        if !newer(&java_dir.join("BenchConsumer.class"), &source) {
            output(
                Command::new("javac")
                    .args(["-cp", &kafka, "-d"])
                    .arg(&java_dir)
                    .arg(&source),
            )?;
        }
        // kafka-clients logs through slf4j/log4j2: warnings and errors to stderr only.
        let java_log_config = java_dir.join("log4j2.properties");
        std::fs::write(
            &java_log_config,
            "status = warn\nappender.err.type = Console\nappender.err.name = ERR\n\
             appender.err.target = SYSTEM_ERR\nappender.err.layout.type = PatternLayout\n\
             appender.err.layout.pattern = [%d] %p %m (%c)%n\nrootLogger.level = warn\n\
             rootLogger.appenderRef.err.ref = ERR\n",
        )
        .map_err(|e| e.to_string())?;
        Ok(Launcher {
            release_dir,
            kafka_classpath: kafka.clone(),
            java_classpath: format!("{kafka}:{}", java_dir.display()),
            java_log_config,
        })
    }

    pub(crate) fn command(&self, client: &Client, args: &[String]) -> Command {
        let mut command = match client.launch {
            Launch::Rust(binary) => Command::new(self.release_dir.join(binary)),
            Launch::Java => {
                let mut c = Command::new("java");
                c.args(["-Xmx512m", "-Djava.awt.headless=true"])
                    .arg(format!(
                        "-Dlog4j2.configurationFile={}",
                        self.java_log_config.display()
                    ))
                    .args(["-cp", &self.java_classpath, "BenchConsumer"]);
                c
            }
        };
        command.args(args).current_dir(repo_dir());
        command
    }
}

/// One run of one client on one workload.
fn run_one(
    launcher: &Launcher,
    options: &Options,
    sasl_ssl: Option<&SaslSslListener>,
    workload: &Workload,
    client: &Client,
    rep: usize,
    serial: usize,
) -> Result<(Row, Vec<(u64, i64)>), String> {
    // `expected`: the records a client reads before it stops on its own.
    let (expected, topic, partitions) = match workload.mode {
        // Fresh records only, for the whole window (the Java client's count is a long).
        WorkloadMode::Latency(_) => (i64::MAX as u64, LATENCY_TOPIC.to_owned(), PARTITIONS),
        WorkloadMode::Partitions { total, .. } => {
            let (_, per_topic) = partition_layout(total);
            (
                SCALE_RECORDS,
                partition_topics(total).join(","),
                per_topic as i32,
            )
        }
        _ => {
            let records = options.records(workload.size);
            let topic = topic_name(workload.size, workload.codec, records);
            (records, topic, PARTITIONS)
        }
    };
    let window_ms = match workload.mode {
        WorkloadMode::Partitions { .. } => PARTITIONS_WINDOW_MS,
        WorkloadMode::Rebalance => REBALANCE_WINDOW_MS,
        WorkloadMode::Latency(_) => options.latency_window_ms,
        WorkloadMode::SlowApp => options.slow_app_window_ms,
        _ => options.window_ms,
    };
    let group = format!(
        "bench-{}-{}-{}-{serial}",
        client.name,
        workload.label().replace('/', "-"),
        std::process::id()
    );
    let listener = match workload.security {
        Security::Plaintext => None,
        Security::SaslSsl => Some(sasl_ssl.ok_or("no SASL_SSL listener resolved")?),
    };
    let bootstrap = listener.map_or(&options.bootstrap, |l| &l.bootstrap);
    let base = |leave: Option<u64>| -> Vec<String> {
        let mut args = vec![
            "--bootstrap".to_owned(),
            bootstrap.clone(),
            "--topic".to_owned(),
            topic.clone(),
            "--partitions".to_owned(),
            partitions.to_string(),
            "--mode".to_owned(),
            if workload.mode.assigns() {
                "assign"
            } else {
                "subscribe"
            }
            .to_owned(),
            "--group".to_owned(),
            group.clone(),
            "--protocol".to_owned(),
            client.protocol.name().to_owned(),
            "--window-ms".to_owned(),
            window_ms.to_string(),
            "--expected".to_owned(),
            expected.to_string(),
        ];
        args.extend(client.extra.iter().map(|s| (*s).to_owned()));
        if let Some(listener) = listener {
            let c = &listener.client;
            args.extend(
                [
                    "--security",
                    workload.security.name(),
                    "--ca-location",
                    &c.ca_location,
                    "--sasl-username",
                    &c.username,
                    "--sasl-password",
                    &c.password,
                ]
                .map(str::to_owned),
            );
        }
        match workload.mode {
            WorkloadMode::Rebalance => {
                args.extend(["--rate-per-s".to_owned(), REBALANCE_RATE_PER_S.to_string()])
            }
            WorkloadMode::SlowApp => {
                args.extend(["--rate-per-s".to_owned(), SLOW_APP_RATE_PER_S.to_string()])
            }
            WorkloadMode::Latency(_) => args.extend(
                [
                    "--start",
                    "latest",
                    "--latency-warmup-ms",
                    &LATENCY_WARMUP_MS.to_string(),
                ]
                .map(str::to_owned),
            ),
            _ => {}
        }
        if let Some(ms) = leave {
            args.extend(["--leave-after-ms".to_owned(), ms.to_string()]);
        }
        args
    };
    let commands: Vec<Command> = if workload.mode.is_group() {
        (0..GROUP_MEMBERS)
            .map(|member| {
                let leave = (member == GROUP_MEMBERS - 1).then_some(LEAVE_AFTER_MS);
                launcher.command(client, &base(leave))
            })
            .collect()
    } else {
        vec![launcher.command(client, &base(None))]
    };
    let deadline =
        Duration::from_millis(window_ms.max(REBALANCE_WINDOW_MS)) + Duration::from_secs(150);
    // The latency workload's producer runs from before the client starts until it is done.
    let producer = match workload.mode {
        WorkloadMode::Latency(rate) => Some(LatencyProducer::start(
            &launcher.kafka_classpath,
            &options.bootstrap,
            rate,
            deadline + LATENCY_PRODUCER_LEAD,
        )?),
        _ => None,
    };
    let outcomes = run_children(commands, deadline);
    let producer_error = producer.map(LatencyProducer::stop).transpose()?.flatten();
    let outcomes = outcomes?;

    let mut row = Row {
        workload: workload.label(),
        client: client.name.to_owned(),
        rep,
        ok: true,
        records: 0,
        bytes: 0,
        fetch_s: 0.0,
        join_s: 0.0,
        first_ms: 0.0,
        max_gap_ms: 0.0,
        cpu_s: 0.0,
        rss_kb: 0,
        error: String::new(),
        ports: String::new(),
        latency_ms: [0.0; 4],
        latency_samples: 0,
        rss_steady_kb: 0,
        rss_growth_kb: 0,
    };
    let ports: BTreeSet<u16> = outcomes
        .iter()
        .flat_map(|o| o.remote_ports.iter().copied())
        .collect();
    row.ports = ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let (mut start, mut first, mut last) = (u128::MAX, u128::MAX, 0u128);
    let mut reports: Vec<BTreeMap<String, u128>> = Vec::new();
    for (member, outcome) in outcomes.iter().enumerate() {
        row.cpu_s += outcome.cpu_s;
        row.rss_kb = row.rss_kb.max(outcome.max_rss_kb);
        let fields = (outcome.exit == 0 && !outcome.killed)
            .then(|| bench_line(&outcome.stdout))
            .flatten();
        let Some(f) = fields else {
            if row.ok {
                row.ok = false;
                row.error = if outcomes.len() > 1 {
                    format!("member {member}: {}", error_text(outcome))
                } else {
                    error_text(outcome)
                };
            }
            continue;
        };
        reports.push(f.clone());
        let get = |k: &str| f.get(k).copied().unwrap_or(0);
        row.records += get("records") as u64;
        row.bytes += get("bytes") as u64;
        start = start.min(get("start_ns"));
        first = first.min(get("first_ns"));
        last = last.max(get("last_ns"));
        row.first_ms = row
            .first_ms
            .max(get("first_ns").saturating_sub(get("start_ns")) as f64 / 1e6);
        if let WorkloadMode::Latency(_) = workload.mode {
            row.latency_samples = get("lat_n") as u64;
            row.latency_ms = ["lat_p50_us", "lat_p99_us", "lat_p999_us", "lat_max_us"]
                .map(|k| get(k) as f64 / 1e3);
        }
        let stayed = !workload.mode.is_group() || member < GROUP_MEMBERS - 1;
        if stayed {
            row.max_gap_ms = row.max_gap_ms.max(get("max_gap_ns") as f64 / 1e6);
        }
    }
    if row.ok {
        if let Some(error) = listener.and_then(|l| foreign_ports(&l.bootstrap, &ports)) {
            row.ok = false;
            row.error = error;
        }
    }
    if row.ok {
        row.fetch_s = last.saturating_sub(first) as f64 / 1e9;
        row.join_s = last.saturating_sub(start) as f64 / 1e9;
    }
    if let (true, WorkloadMode::Rebalance) = (row.ok, workload.mode) {
        if let Some(error) = leaver_partitions_not_taken_over(&reports) {
            row.ok = false;
            row.error = error;
        }
    }
    if let (true, WorkloadMode::Latency(_)) = (row.ok, workload.mode) {
        // A run without percentiles measured nothing; one whose producer failed measured a
        // producer that was not at its rate.
        if let Some(error) = producer_error {
            row.ok = false;
            row.error = error;
        } else if row.latency_samples == 0 {
            row.ok = false;
            row.error = "no latency samples after the warm-up".to_owned();
        }
    }
    let rss = outcomes.first().map(|o| o.rss.clone()).unwrap_or_default();
    if workload.mode == WorkloadMode::SlowApp {
        if let Some((steady, growth)) = rss_steady_and_growth(&rss) {
            row.rss_steady_kb = steady;
            row.rss_growth_kb = growth;
        }
    }
    Ok((row, rss))
}

/// The rebalance workload's validity: every partition the leaver (the last member) delivered
/// records of must have had records delivered by a member that stayed after the leaver's last
/// delivery, inside the window; else the pause measured is not a rebalance's (the stayers may
/// have run out of the window, or never been given the partitions). `reports` are the members'
/// `BENCH` fields in member order (`plast_<p>`: when partition `p` last delivered, ns since the
/// epoch; `last_ns`: the last delivery). `None` when valid.
pub fn leaver_partitions_not_taken_over(reports: &[BTreeMap<String, u128>]) -> Option<String> {
    let (leaver, stayers) = reports.split_last()?;
    let left_at = leaver.get("last_ns").copied().unwrap_or(0);
    let missing: Vec<&str> = leaver
        .keys()
        .filter_map(|k| k.strip_prefix("plast_"))
        .filter(|p| {
            !stayers
                .iter()
                .any(|s| s.get(&format!("plast_{p}")).is_some_and(|&at| at > left_at))
        })
        .collect();
    if leaver.keys().all(|k| !k.starts_with("plast_")) {
        return Some("invalid run: the leaving member reported no partitions".to_owned());
    }
    (!missing.is_empty()).then(|| {
        format!(
            "invalid run: the members that stayed delivered nothing of the leaver's partition(s) {} after it left (within the window)",
            missing.join(",")
        )
    })
}

/// The latency workload's producer: Kafka's own `ProducerPerformance` (the class behind
/// `kafka-producer-perf-test.sh`, kafka-tools 4.1.1, as the fill uses) throttled to `--throughput`
/// records a second. Its records carry no explicit timestamp, so `KafkaProducer.send` stamps
/// each with the wall clock when it is called (CreateTime, the topic's default timestamp
/// type): the same clock the clients read at delivery. `linger.ms=0` (Kafka 4's default is 5):
/// a record leaves as soon as the sender thread can send it, so batching adds only what
/// in-flight requests make it wait; `acks=1`. 100 B values, uncompressed.
struct LatencyProducer {
    child: std::process::Child,
    started: Instant,
}

impl LatencyProducer {
    fn start(
        classpath: &str,
        bootstrap: &str,
        rate: u64,
        lasting: Duration,
    ) -> Result<Self, String> {
        let mut command =
            crate::fill::tool(classpath, "org.apache.kafka.tools.ProducerPerformance");
        command
            .args(["--topic", LATENCY_TOPIC, "--record-size", "100"])
            .args(["--num-records", &(rate * lasting.as_secs()).to_string()])
            .args(["--throughput", &rate.to_string(), "--producer-props"])
            .args([
                format!("bootstrap.servers={bootstrap}"),
                "acks=1".to_owned(),
                "linger.ms=0".to_owned(),
                "compression.type=none".to_owned(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let child = command
            .spawn()
            .map_err(|e| format!("ProducerPerformance: {e}"))?;
        let producer = LatencyProducer {
            child,
            started: Instant::now(),
        };
        std::thread::sleep(LATENCY_PRODUCER_LEAD);
        Ok(producer)
    }

    /// Stops the producer (SIGKILL by its own pid: it would otherwise produce its whole
    /// `--num-records`); `Some(error)` when it had exited before it was stopped.
    fn stop(mut self) -> Result<Option<String>, String> {
        let early = self.child.try_wait().map_err(|e| e.to_string())?;
        if early.is_none() {
            self.child.kill().map_err(|e| e.to_string())?;
        }
        self.child.wait().map_err(|e| e.to_string())?;
        let mut stderr = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ = err.read_to_string(&mut stderr);
        }
        Ok(early.map(|status| {
            let tail = stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            format!(
                "the producer exited after {:.0?} ({status}): {}",
                self.started.elapsed(),
                tail.replace(['\t', '\r', '\n'], " ")
            )
        }))
    }
}

/// Creates the latency workload's topic unless it exists. At 100 k records/s it grows by
/// ~15 MB/s: it keeps a minute of records in 64 MiB segments (the broker deletes older ones at
/// its next retention check, every 5 min by default), and the run deletes it when done.
fn create_latency_topic(classpath: &str, bootstrap: &str) -> Result<(), String> {
    output(
        crate::fill::tool(classpath, "org.apache.kafka.tools.TopicCommand").args([
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--if-not-exists",
            "--topic",
            LATENCY_TOPIC,
            "--partitions",
            &PARTITIONS.to_string(),
            "--replication-factor",
            "1",
            "--config",
            "retention.ms=60000",
            "--config",
            "segment.bytes=67108864",
        ]),
    )
    .map(drop)
}

/// Deletes the latency workload's topic (nothing in it is read again: every run starts at the
/// end).
fn delete_latency_topic(classpath: &str, bootstrap: &str) -> Result<(), String> {
    output(
        crate::fill::tool(classpath, "org.apache.kafka.tools.TopicCommand").args([
            "--bootstrap-server",
            bootstrap,
            "--delete",
            "--if-exists",
            "--topic",
            LATENCY_TOPIC,
        ]),
    )
    .map(drop)
}

/// The row of a client that cannot run the workload at all: not measured, with the reason.
fn skipped(workload: &Workload, client: &Client, rep: usize, reason: &str) -> Row {
    Row {
        workload: workload.label(),
        client: client.name.to_owned(),
        rep,
        ok: false,
        records: 0,
        bytes: 0,
        fetch_s: 0.0,
        join_s: 0.0,
        first_ms: 0.0,
        max_gap_ms: 0.0,
        cpu_s: 0.0,
        rss_kb: 0,
        error: format!("skipped: {reason}"),
        ports: String::new(),
        latency_ms: [0.0; 4],
        latency_samples: 0,
        rss_steady_kb: 0,
        rss_growth_kb: 0,
    }
}

/// Why a secured run does not count: its sockets were never seen, or were seen connected to
/// another port than its listener's (a fallback, or a broker advertising another listener).
fn foreign_ports(bootstrap: &str, ports: &BTreeSet<u16>) -> Option<String> {
    let expected = port_of(bootstrap)?;
    if ports.is_empty() {
        return Some(format!(
            "no TCP connection of the client was seen (expected only port {expected})"
        ));
    }
    let others: Vec<String> = ports
        .iter()
        .filter(|&&p| p != expected)
        .map(u16::to_string)
        .collect();
    (!others.is_empty()).then(|| {
        format!(
            "connected to port(s) {} besides the listener's {expected}",
            others.join(",")
        )
    })
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn first_line(command: &mut Command) -> String {
    let out = command.output().ok();
    out.map(|o| {
        let text = if o.stdout.is_empty() {
            o.stderr
        } else {
            o.stdout
        };
        String::from_utf8_lossy(&text)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    })
    .unwrap_or_default()
}

fn utc_now() -> String {
    first_line(Command::new("date").args(["-u", "+%Y-%m-%d %H:%M UTC"]))
}

pub fn run(options: &Options) -> Result<(), String> {
    if options.bootstrap.is_empty() {
        return Err("KAFKA_BOOTSTRAP is not set (start the broker with bench/run)".to_owned());
    }
    let sasl_ssl = options.sasl_ssl_listener()?;
    let set = options.results_set();
    let launcher = Launcher::new()?;
    std::fs::create_dir_all(results_dir()).map_err(|e| e.to_string())?;
    let commit = first_line(
        Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .current_dir(repo_dir()),
    );
    let cpu = first_line(Command::new("sh").args(["-c", "lscpu | sed -n 's/^Model name: *//p'"]));
    let mut meta = vec![
        format!("command={}", options.command),
        format!("commit={commit}"),
        format!("started={}", utc_now()),
        format!(
            "machine={} cores, {cpu}",
            std::thread::available_parallelism().map_or(0, |n| n.get())
        ),
        format!("rustc={}", first_line(Command::new("rustc").arg("-V"))),
        format!("java={}", first_line(Command::new("java").arg("-version"))),
        format!("load_start={}", load_average()),
        format!("reps={}", options.reps),
        format!("window_ms={}", options.window_ms),
        format!("latency_window_ms={}", options.latency_window_ms),
        format!("slow_app_window_ms={}", options.slow_app_window_ms),
        format!("records_100={}", options.records_100),
        format!("records_1024={}", options.records_1024),
        format!(
            "security={}",
            options
                .securities
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(",")
        ),
        format!("bootstrap={}", options.bootstrap),
        format!(
            "bootstrap_sasl_ssl={}",
            sasl_ssl.as_ref().map_or("", |l| l.bootstrap.as_str())
        ),
    ];
    let meta_path = results_dir().join(format!("{}.meta", set.name()));
    let write_meta = |meta: &[String]| {
        std::fs::write(&meta_path, meta.join("\n") + "\n").map_err(|e| e.to_string())
    };
    write_meta(&[meta.clone(), vec!["finished=(interrupted)".to_owned()]].concat())?;
    let tsv_path = results_dir().join(format!("{}.tsv", set.name()));
    let mut lines = vec![if set == crate::report::ResultsSet::Members {
        crate::members::TSV_HEADER.to_owned()
    } else {
        TSV_HEADER.to_owned()
    }];
    if set == crate::report::ResultsSet::Members {
        meta.extend(options.members.meta_lines());
    }
    // The slow-app workload's RSS over time, one line per sample.
    let rss_path = results_dir().join(RSS_TSV);
    let mut rss_lines = vec![RSS_TSV_HEADER.to_owned()];
    let latency = options
        .modes
        .iter()
        .any(|m| matches!(m, WorkloadMode::Latency(_)));
    if latency {
        create_latency_topic(&launcher.kafka_classpath, &options.bootstrap)?;
    }
    let mut serial = 0;
    // A client that failed a workload is not retried on it (the error is in the table).
    let mut failed: BTreeSet<(String, &str)> = BTreeSet::new();
    let workloads = options.workloads();
    let total: usize = workloads
        .iter()
        .map(|w| options.reps * options.clients.iter().filter(|c| c.runs_in(w.mode)).count())
        .sum();
    // The listeners of one workload alternate round by round (plaintext, then sasl_ssl, in
    // every round), so a drift in the machine's load hits both sides of their ratio alike.
    let mut bases: Vec<Vec<&Workload>> = Vec::new();
    for workload in &workloads {
        match bases.last_mut() {
            Some(base) if base[0].base() == workload.base() => base.push(workload),
            _ => bases.push(vec![workload]),
        }
    }
    for base in &bases {
        for rep in 0..options.reps {
            for &workload in base {
                let n = options.clients.len();
                for i in 0..n {
                    let client = &options.clients[(i + rep) % n];
                    if !client.runs_in(workload.mode) {
                        continue;
                    }
                    serial += 1;
                    if failed.contains(&(workload.label(), client.name)) {
                        continue;
                    }
                    if let (Security::SaslSsl, Some(reason)) =
                        (workload.security, client.no_sasl_ssl)
                    {
                        eprintln!(
                            "kafka-bench: {} {}: skipped over SASL_SSL: {reason}",
                            workload.label(),
                            client.name
                        );
                        lines.push(skipped(workload, client, rep, reason).tsv());
                        failed.insert((workload.label(), client.name));
                        continue;
                    }
                    if workload.mode.is_members() {
                        let row = crate::members::run_one(
                            &launcher, options, workload, client, rep, serial,
                        )?;
                        eprintln!(
                            "kafka-bench: [{serial}/{total}] {} {} rep {}: {}",
                            row.workload,
                            row.client,
                            rep + 1,
                            row.summary()
                        );
                        // An invalid run is a measurement (the next repetition may be
                        // valid); a failed one is not retried.
                        if row.status == crate::members::Status::Fail {
                            failed.insert((workload.label(), client.name));
                        }
                        lines.push(row.tsv());
                        std::fs::write(&tsv_path, lines.join("\n") + "\n")
                            .map_err(|e| e.to_string())?;
                        continue;
                    }
                    let (row, rss) = run_one(
                        &launcher,
                        options,
                        sasl_ssl.as_ref(),
                        workload,
                        client,
                        rep,
                        serial,
                    )?;
                    if workload.mode == WorkloadMode::SlowApp {
                        rss_lines.extend(rss.iter().map(|(ms, kb)| {
                            format!("{}\t{}\t{rep}\t{ms}\t{kb}", row.workload, row.client)
                        }));
                        std::fs::write(&rss_path, rss_lines.join("\n") + "\n")
                            .map_err(|e| e.to_string())?;
                    }
                    eprintln!(
                        "kafka-bench: [{serial}/{total}] {} {} rep {}: {}",
                        row.workload,
                        row.client,
                        rep + 1,
                        if row.ok {
                            format!(
                            "{} records in {:.2} s = {:.0} rec/s, cpu {:.2} s, rss {} MiB, first {:.0} ms, gap {:.0} ms, ports {}{}",
                            row.records,
                            row.fetch_s,
                            row.records as f64 / row.fetch_s.max(1e-9),
                            row.cpu_s,
                            row.rss_kb / 1024,
                            row.first_ms,
                            row.max_gap_ms,
                            row.ports,
                            match workload.mode {
                                WorkloadMode::Latency(_) => format!(
                                    ", latency ms p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.1} over {} records",
                                    row.latency_ms[0], row.latency_ms[1], row.latency_ms[2],
                                    row.latency_ms[3], row.latency_samples
                                ),
                                WorkloadMode::SlowApp => format!(
                                    ", rss steady {:.1} MiB, growth {:+.1} MiB",
                                    row.rss_steady_kb as f64 / 1024.0,
                                    row.rss_growth_kb as f64 / 1024.0
                                ),
                                _ => String::new(),
                            }
                        )
                        } else {
                            format!("FAILED: {}", row.error)
                        }
                    );
                    if !row.ok {
                        failed.insert((workload.label(), client.name));
                    }
                    lines.push(row.tsv());
                    // Written after every run: an interrupted run keeps what it measured.
                    std::fs::write(&tsv_path, lines.join("\n") + "\n")
                        .map_err(|e| e.to_string())?;
                }
            }
        }
    }
    if latency {
        delete_latency_topic(&launcher.kafka_classpath, &options.bootstrap)?;
    }
    meta.push(format!("finished={}", utc_now()));
    meta.push(format!("load_end={}", load_average()));
    write_meta(&meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(fields: &[(&str, u128)]) -> BTreeMap<String, u128> {
        fields.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    fn a_rebalance_run_is_valid_only_if_the_stayers_took_over_the_leavers_partitions() {
        let stayer_a = report(&[("last_ns", 90), ("plast_0", 90), ("plast_4", 80)]);
        let stayer_b = report(&[("last_ns", 95), ("plast_1", 95), ("plast_5", 40)]);
        let leaver = report(&[("last_ns", 50), ("plast_4", 50), ("plast_5", 49)]);
        // Partition 4 went on at a after the leave; 5 stopped at b before it.
        let error = leaver_partitions_not_taken_over(&[stayer_a.clone(), stayer_b, leaver.clone()])
            .expect("invalid");
        assert!(error.contains("partition(s) 5 after it left"), "{error}");
        let stayer_b = report(&[("last_ns", 95), ("plast_1", 95), ("plast_5", 60)]);
        assert_eq!(
            leaver_partitions_not_taken_over(&[stayer_a.clone(), stayer_b, leaver]),
            None
        );
        let silent = report(&[("last_ns", 50)]);
        assert!(leaver_partitions_not_taken_over(&[stayer_a, silent]).is_some());
    }

    #[test]
    fn vm_rss_is_read_from_proc_status() {
        let status =
            "Name:\tclient-ours\nVmPeak:\t  812345 kB\nVmRSS:\t   19876 kB\nRssAnon:\t 1 kB\n";
        assert_eq!(vm_rss_kb(status), Some(19_876));
        assert_eq!(vm_rss_kb("Name:\tx\n"), None);
        assert_eq!(vm_rss_kb("VmRSS:\t12 MB\n"), None);
        assert!(sample_rss(std::process::id() as libc::pid_t).is_some_and(|kb| kb > 0));
        assert_eq!(
            threads_of("Name:\tx\nThreads:\t17\nVmRSS:\t1 kB\n"),
            Some(17)
        );
        assert_eq!(threads_of("Name:\tx\n"), None);
        assert!(sample_threads(std::process::id() as libc::pid_t).is_some_and(|n| n >= 1));
    }

    #[test]
    fn steady_rss_is_the_second_half_and_growth_is_middle_to_end() {
        assert_eq!(rss_steady_and_growth(&[]), None);
        let flat: Vec<(u64, i64)> = (0..=20).map(|i| (i * 500, 20_000 + i as i64 % 2)).collect();
        assert_eq!(rss_steady_and_growth(&flat), Some((20_000, 0)));
        let growing: Vec<(u64, i64)> = (0..=20).map(|i| (i * 500, 1_000 * i as i64)).collect();
        // Samples at 5 000 ms (the middle) to 10 000 ms: median 15 000, growth 20 000 − 10 000.
        assert_eq!(rss_steady_and_growth(&growing), Some((15_000, 10_000)));
    }

    #[test]
    fn rows_round_trip_and_old_rows_still_parse() {
        let old =
            "100B/none/assign\tours\t0\tok\t10\t1000\t1.0\t1.1\t5.0\t2.0\t0.5\t19000\t\t19192";
        let row = Row::parse(old).expect("old row");
        assert_eq!((row.latency_samples, row.rss_steady_kb), (0, 0));
        let mut row = row;
        row.latency_ms = [1.5, 9.25, 20.0, 31.0];
        row.latency_samples = 42;
        row.rss_steady_kb = 18_000;
        row.rss_growth_kb = -12;
        let back = Row::parse(&row.tsv()).expect("new row");
        assert_eq!(back.latency_ms, [1.5, 9.25, 20.0, 31.0]);
        assert_eq!(
            (back.latency_samples, back.rss_steady_kb, back.rss_growth_kb),
            (42, 18_000, -12)
        );
        assert_eq!(
            TSV_HEADER.split('\t').count(),
            row.tsv().split('\t').count()
        );
    }
}
