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

use crate::fill::topic_name;
use crate::sockets::{port_of, remote_ports};
use crate::{
    bench_dir, kafka_classpath, newer, output, repo_dir, results_dir, Client, Launch, Options,
    SaslSslListener, Workload, WorkloadMode, PARTITIONS,
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

/// What one child process did.
#[derive(Debug, Default)]
struct ChildOutcome {
    stdout: String,
    stderr: String,
    exit: i32,
    cpu_s: f64,
    max_rss_kb: i64,
    killed: bool,
    /// Remote TCP ports seen on the child's sockets while it ran.
    remote_ports: BTreeSet<u16>,
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
}

pub const TSV_HEADER: &str = "workload\tclient\trep\tstatus\trecords\tbytes\tfetch_s\tjoin_s\tfirst_ms\tmax_gap_ms\tcpu_s\trss_kb\terror\tports";

impl Row {
    fn tsv(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{:.6}\t{:.6}\t{:.3}\t{:.3}\t{:.4}\t{}\t{}\t{}",
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
            self.ports
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
        })
    }
}

/// Spawns the children at once and waits for all of them; each is killed (SIGKILL, by its own
/// pid, before it is reaped) if it outlives `deadline`.
fn run_children(commands: Vec<Command>, deadline: Duration) -> Result<Vec<ChildOutcome>, String> {
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
    let mut reaped_pids: BTreeSet<libc::pid_t> = BTreeSet::new();
    let mut sampled = Instant::now();
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
    for (outcome, ports) in outcomes.iter_mut().zip(ports) {
        outcome.remote_ports = ports;
    }
    Ok(outcomes)
}

/// The `key=value` fields of a child's `BENCH` line.
fn bench_line(stdout: &str) -> Option<BTreeMap<String, u128>> {
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
fn error_text(outcome: &ChildOutcome) -> String {
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

struct Launcher {
    release_dir: PathBuf,
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
            java_classpath: format!("{kafka}:{}", java_dir.display()),
            java_log_config,
        })
    }

    fn command(&self, client: &Client, args: &[String]) -> Command {
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
) -> Result<Row, String> {
    let records = options.records(workload.size);
    let topic = topic_name(workload.size, workload.codec, records);
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
            PARTITIONS.to_string(),
            "--mode".to_owned(),
            if workload.mode == WorkloadMode::Assign {
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
            if workload.mode == WorkloadMode::Rebalance {
                REBALANCE_WINDOW_MS
            } else {
                options.window_ms
            }
            .to_string(),
            "--expected".to_owned(),
            records.to_string(),
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
        if workload.mode == WorkloadMode::Rebalance {
            args.extend(["--rate-per-s".to_owned(), REBALANCE_RATE_PER_S.to_string()]);
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
    let deadline = Duration::from_millis(options.window_ms.max(REBALANCE_WINDOW_MS))
        + Duration::from_secs(150);
    let outcomes = run_children(commands, deadline)?;

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
        let get = |k: &str| f.get(k).copied().unwrap_or(0);
        row.records += get("records") as u64;
        row.bytes += get("bytes") as u64;
        start = start.min(get("start_ns"));
        first = first.min(get("first_ns"));
        last = last.max(get("last_ns"));
        row.first_ms = row
            .first_ms
            .max(get("first_ns").saturating_sub(get("start_ns")) as f64 / 1e6);
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
    Ok(row)
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
    let mut lines = vec![TSV_HEADER.to_owned()];
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
                    let row = run_one(
                        &launcher,
                        options,
                        sasl_ssl.as_ref(),
                        workload,
                        client,
                        rep,
                        serial,
                    )?;
                    eprintln!(
                        "kafka-bench: [{serial}/{total}] {} {} rep {}: {}",
                        row.workload,
                        row.client,
                        rep + 1,
                        if row.ok {
                            format!(
                            "{} records in {:.2} s = {:.0} rec/s, cpu {:.2} s, rss {} MiB, first {:.0} ms, gap {:.0} ms, ports {}",
                            row.records,
                            row.fetch_s,
                            row.records as f64 / row.fetch_s.max(1e-9),
                            row.cpu_s,
                            row.rss_kb / 1024,
                            row.first_ms,
                            row.max_gap_ms,
                            row.ports
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
    meta.push(format!("finished={}", utc_now()));
    meta.push(format!("load_end={}", load_average()));
    write_meta(&meta)
}
