//! The members workload (`--modes members`, or `members-3`, `members-10`, `members-30`): a
//! group of N members on one 60-partition topic, each member's application rate-limited, as N
//! processes or as N consumers in one process (the `*-inproc` clients). Every member starts at
//! once; at a fixed moment (the leave, [`MembersSettings::join_ms`] after the start) the last
//! member closes; the others stop [`MembersSettings::after_ms`] later. From the members'
//! `BENCH` lines ([`kafka_bench::Stats`]: `assigned_ns`, `stable_ns`, `pause_ns`, `own_<p>`,
//! `ptake_<p>`) this module computes join-to-stable, the stayers' pause and the takeover of
//! the leaver's partitions ([`evaluate`]), and marks a run whose group never settled or whose
//! leaver's partitions nobody took over invalid. Rows go to `bench/results/members.tsv`, the
//! tables to the `members:begin`/`members:end` block of `BENCHMARKS.md`, the chart to
//! `bench/members.svg`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::fill::members_topic;
use crate::report::{Cell, Outcome, Results, Spread};
use crate::runner::{bench_line, error_text, run_children, ChildOutcome, Launcher};
use crate::{Client, Options, Workload, WorkloadMode, CLIENTS};

/// Partitions of the members workload's topic: every member of the largest group owns two.
pub const PARTITIONS: i32 = 60;
/// The group sizes of `--modes members`.
pub const GROUP_SIZES: [u32; 3] = [3, 10, 30];

/// The members workload's settings (`--members-*` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MembersSettings {
    /// From the start of the members to the leave: the budget for the group to form and
    /// settle. A run whose group is not stable by then is invalid.
    pub join_ms: u64,
    /// How long the stayers go on after the leave: the slowest protocol's notice of it
    /// (KIP-848's 5 s heartbeat interval) and the takeover fit inside. A stayer of a group of
    /// 3 owns 30 partitions after the leave, and a rate-limited application reaches a newly
    /// assigned partition only after what is buffered of the others: a fetch brings ~1 MiB a
    /// partition (`max.partition.fetch.bytes`), ~10,000 records of 100 B, 0.5 s at 20,000
    /// records/s, and ours hands them out a partition at a time: in a pilot run (KIP-848,
    /// 3 members) the stayers were assigned the leaver's partitions 0.2 s after the leave
    /// and delivered the last of them 21 s after it.
    pub after_ms: u64,
    /// What each member's application takes a second (as the rebalance workload's 20,000):
    /// a member never reaches the end of its partitions, so its gaps are the group's.
    pub rate_per_s: u64,
    /// Records (100 B, uncompressed) in the topic.
    pub records: u64,
}

impl Default for MembersSettings {
    /// 36 M records: 600 k a partition, more than a member of the largest group (two or three
    /// partitions, 20,000 records/s for at most the 55 s of a run, 1.1 M records) reads of
    /// one partition; 3.6 GB of values.
    fn default() -> Self {
        MembersSettings {
            join_ms: 20_000,
            after_ms: 35_000,
            rate_per_s: 20_000,
            records: 36_000_000,
        }
    }
}

impl MembersSettings {
    /// The run metadata lines (`members.meta`).
    pub fn meta_lines(&self) -> Vec<String> {
        vec![
            format!("members_join_ms={}", self.join_ms),
            format!("members_after_ms={}", self.after_ms),
            format!("members_rate_per_s={}", self.rate_per_s),
            format!("members_records={}", self.records),
        ]
    }
}

/// One member's `BENCH` fields.
pub type Report = BTreeMap<String, u128>;

/// What one valid run measured, from its members' reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// From the earliest `subscribe` call to the moment the last member was consuming its
    /// final assignment (its first delivery after its assignment last changed), ms.
    pub join_ms: f64,
    /// From the earliest `subscribe` call to the last member's first record, ms.
    pub first_ms: f64,
    /// The longest gap between two deliveries of a staying member that ends at or after the
    /// leave (the open gap to its stop included), over the stayers, ms.
    pub pause_ms: f64,
    /// From the leave to the moment every partition the leaver owned was in some stayer's
    /// assignment (as the stayers read it every 10 ms; a delivery counts as an assignment), ms.
    pub reassign_ms: f64,
    /// From the leave to the moment every partition the leaver owned had been delivered by a
    /// stayer, ms: the reassignment, then the fetch, then the stayer's application reaching
    /// the partition (a rate-limited application drains what it has buffered of its other
    /// partitions first). 0 when not all of them were delivered before the stop.
    pub takeover_ms: f64,
    /// The leaver's partitions at the leave, and how many of them a stayer delivered before
    /// the stop.
    pub leaver_partitions: usize,
    pub delivered_partitions: usize,
    /// Records delivered, over the members.
    pub records: u64,
}

/// The partitions whose `<prefix><p>` field a report has.
fn partitions_with(report: &Report, prefix: &str) -> BTreeSet<i32> {
    report
        .keys()
        .filter_map(|k| k.strip_prefix(prefix)?.parse().ok())
        .collect()
}

fn field(report: &Report, key: &str) -> u128 {
    report.get(key).copied().unwrap_or(0)
}

/// Why the group was not stable at the leave, if it was not: a member never consumed an
/// assignment, or the assignments at the leave overlap or leave partitions out.
fn unsettled(reports: &[Report], partitions: i32) -> Option<String> {
    if let Some(member) = reports.iter().position(|r| field(r, "stable_ns") == 0) {
        return Some(format!(
            "invalid run: member {member} was not consuming an assignment before the leave \
             (the group did not settle within the join budget)"
        ));
    }
    let mut owned: BTreeMap<i32, usize> = BTreeMap::new();
    for (member, report) in reports.iter().enumerate() {
        for p in partitions_with(report, "own_") {
            if let Some(other) = owned.insert(p, member) {
                return Some(format!(
                    "invalid run: partition {p} was assigned to members {other} and {member} \
                     at the leave"
                ));
            }
        }
    }
    let missing: Vec<String> = (0..partitions)
        .filter(|p| !owned.contains_key(p))
        .map(|p| p.to_string())
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "invalid run: partition(s) {} assigned to no member at the leave",
            missing.join(",")
        )
    })
}

/// How the stayers took the leaver's partitions over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Takeover {
    /// The leaver's partitions at the leave, and how many of them a stayer delivered.
    partitions: usize,
    delivered: usize,
    /// From the leave to the last of them in a stayer's assignment (or delivered).
    reassign_ns: u128,
    /// From the leave to the last of them delivered by a stayer (when all were).
    delivered_ns: u128,
}

/// The takeover of the leaver's partitions (those it held at the leave) by the stayers; an
/// `Err` when one of them was in no stayer's assignment by the stop, or when no stayer
/// delivered a record of any of them: no takeover was seen. Not all of them need to have
/// been delivered: a stayer reaches a new partition only after what it buffered of its
/// others, which at a slow application's rate can outlast the window (librdkafka buffers
/// far more of each partition than the others).
fn takeover(leaver: &Report, stayers: &[Report], leave_ns: u128) -> Result<Takeover, String> {
    let earliest = |key: &str| stayers.iter().filter_map(|s| s.get(key).copied()).min();
    let owned = partitions_with(leaver, "own_");
    let mut unassigned = Vec::new();
    let mut t = Takeover {
        partitions: owned.len(),
        delivered: 0,
        reassign_ns: 0,
        delivered_ns: 0,
    };
    for p in owned {
        let taken = earliest(&format!("ptake_{p}"));
        let got = match (earliest(&format!("pgot_{p}")), taken) {
            (Some(got), Some(taken)) => got.min(taken),
            (Some(at), None) | (None, Some(at)) => at,
            (None, None) => {
                unassigned.push(p.to_string());
                continue;
            }
        };
        t.reassign_ns = t.reassign_ns.max(got.saturating_sub(leave_ns));
        if let Some(taken) = taken {
            t.delivered += 1;
            t.delivered_ns = t.delivered_ns.max(taken.saturating_sub(leave_ns));
        }
    }
    if !unassigned.is_empty() {
        return Err(format!(
            "invalid run: the leaver's partition(s) {} were in no staying member's assignment \
             between the leave and the stop",
            unassigned.join(",")
        ));
    }
    if t.delivered == 0 {
        return Err(format!(
            "invalid run: no staying member delivered any of the leaver's {} partition(s) \
             between the leave and the stop",
            t.partitions
        ));
    }
    if t.delivered < t.partitions {
        t.delivered_ns = 0;
    }
    Ok(t)
}

/// The run's figures from its members' reports (member order, the leaver last), the leave
/// moment (`leave_ns`, ns since the Unix epoch) and the topic's partition count; an `Err`
/// says why the run is invalid: the group was not stable at the leave ([`unsettled`]), or
/// some partition the leaver owned was delivered by no stayer between the leave and the stop.
pub fn evaluate(reports: &[Report], leave_ns: u128, partitions: i32) -> Result<Figures, String> {
    let (leaver, stayers) = reports
        .split_last()
        .filter(|(_, stayers)| !stayers.is_empty())
        .ok_or("invalid run: fewer than two members reported")?;
    if let Some(error) = unsettled(reports, partitions) {
        return Err(error);
    }
    let start_ns = reports
        .iter()
        .map(|r| field(r, "start_ns"))
        .min()
        .unwrap_or(0);
    let since_start_ms = |key: &str| {
        let latest = reports.iter().map(|r| field(r, key)).max().unwrap_or(0);
        latest.saturating_sub(start_ns) as f64 / 1e6
    };
    let takeover = takeover(leaver, stayers, leave_ns)?;
    Ok(Figures {
        join_ms: since_start_ms("stable_ns"),
        first_ms: since_start_ms("first_ns"),
        pause_ms: stayers
            .iter()
            .map(|s| field(s, "pause_ns"))
            .max()
            .unwrap_or(0) as f64
            / 1e6,
        reassign_ms: takeover.reassign_ns as f64 / 1e6,
        takeover_ms: takeover.delivered_ns as f64 / 1e6,
        leaver_partitions: takeover.partitions,
        delivered_partitions: takeover.delivered,
        records: reports.iter().map(|r| field(r, "records") as u64).sum(),
    })
}

/// The `BENCH member=<i> ...` lines of an in-process group, in member order.
pub fn member_lines(stdout: &str) -> Vec<Report> {
    let mut reports: Vec<Report> = stdout
        .lines()
        .filter(|l| l.starts_with("BENCH "))
        .filter_map(bench_line)
        .collect();
    reports.sort_by_key(|r| field(r, "member"));
    reports
}

/// Whether a run counted, was measured but invalid, or failed (a member's error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    Invalid,
    Fail,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Invalid => "invalid",
            Status::Fail => "fail",
        }
    }

    fn parse(s: &str) -> Option<Status> {
        [Status::Ok, Status::Invalid, Status::Fail]
            .into_iter()
            .find(|st| st.name() == s)
    }
}

/// One row of `members.tsv`.
#[derive(Debug, Clone, PartialEq)]
pub struct MembersRow {
    pub workload: String,
    pub client: String,
    pub rep: usize,
    pub status: Status,
    /// Figures (zeros unless [`Status::Ok`]).
    pub figures: Figures,
    /// User + system CPU seconds, summed over the member processes (or the one process).
    pub cpu_s: f64,
    /// Peak RSS summed over the member processes (the one process's, in process), kB.
    pub rss_kb: i64,
    /// Most threads seen, summed over the member processes (the one process's, in process).
    pub threads: i64,
    /// Processes the group ran in (N, or 1 in process).
    pub processes: usize,
    pub error: String,
}

pub const TSV_HEADER: &str = "workload\tclient\trep\tstatus\tjoin_ms\tfirst_ms\tpause_ms\treassign_ms\ttakeover_ms\tleaver_partitions\tdelivered_partitions\trecords\tcpu_s\trss_kb\tthreads\tprocesses\terror";

impl MembersRow {
    pub fn tsv(&self) -> String {
        let f = &self.figures;
        format!(
            "{}\t{}\t{}\t{}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{}\t{}\t{}\t{:.3}\t{}\t{}\t{}\t{}",
            self.workload,
            self.client,
            self.rep,
            self.status.name(),
            f.join_ms,
            f.first_ms,
            f.pause_ms,
            f.reassign_ms,
            f.takeover_ms,
            f.leaver_partitions,
            f.delivered_partitions,
            f.records,
            self.cpu_s,
            self.rss_kb,
            self.threads,
            self.processes,
            self.error.replace(['\t', '\r', '\n'], " "),
        )
    }

    pub fn parse(line: &str) -> Option<MembersRow> {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 17 {
            return None;
        }
        Some(MembersRow {
            workload: f[0].to_owned(),
            client: f[1].to_owned(),
            rep: f[2].parse().ok()?,
            status: Status::parse(f[3])?,
            figures: Figures {
                join_ms: f[4].parse().ok()?,
                first_ms: f[5].parse().ok()?,
                pause_ms: f[6].parse().ok()?,
                reassign_ms: f[7].parse().ok()?,
                takeover_ms: f[8].parse().ok()?,
                leaver_partitions: f[9].parse().ok()?,
                delivered_partitions: f[10].parse().ok()?,
                records: f[11].parse().ok()?,
            },
            cpu_s: f[12].parse().ok()?,
            rss_kb: f[13].parse().ok()?,
            threads: f[14].parse().ok()?,
            processes: f[15].parse().ok()?,
            error: f[16].to_owned(),
        })
    }

    /// The driver's progress line for the run.
    pub fn summary(&self) -> String {
        let f = &self.figures;
        let usage = format!(
            "cpu {:.2} s, rss {} MiB, threads {}, {} process(es)",
            self.cpu_s,
            self.rss_kb / 1024,
            self.threads,
            self.processes
        );
        match self.status {
            Status::Ok => format!(
                "join-to-stable {:.0} ms (first records {:.0} ms), pause {:.0} ms, reassigned {:.0} ms, {}, {} records, {usage}",
                f.join_ms,
                f.first_ms,
                f.pause_ms,
                f.reassign_ms,
                if f.delivered_partitions == f.leaver_partitions {
                    format!("taken over {:.0} ms", f.takeover_ms)
                } else {
                    format!(
                        "{} of the leaver's {} partitions delivered by the stop",
                        f.delivered_partitions, f.leaver_partitions
                    )
                },
                f.records
            ),
            Status::Invalid => format!("INVALID: {}; {usage}", self.error),
            Status::Fail => format!("FAILED: {}", self.error),
        }
    }
}

fn epoch_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

/// The command lines of one run: N member processes (the last leaves at `leave_ms`), or one
/// process of N members (`--members N`, client-ours) whose last member leaves.
fn commands(
    launcher: &Launcher,
    options: &Options,
    client: &Client,
    members: u32,
    group: &str,
    leave_ms: u64,
) -> Vec<Command> {
    let settings = &options.members;
    let stop_ms = leave_ms + settings.after_ms;
    let args = |until_ms: u64, in_process: bool| -> Vec<String> {
        let mut args: Vec<String> = [
            "--bootstrap",
            &options.bootstrap,
            "--topic",
            &members_topic(settings.records),
            "--partitions",
            &PARTITIONS.to_string(),
            "--mode",
            "subscribe",
            "--group",
            group,
            "--protocol",
            client.protocol.name(),
            // The stop moment decides; the window only has to outlast it.
            "--window-ms",
            &(settings.join_ms + settings.after_ms + 60_000).to_string(),
            "--expected",
            &settings.records.to_string(),
            "--rate-per-s",
            &settings.rate_per_s.to_string(),
            "--leave-at-epoch-ms",
            &leave_ms.to_string(),
            "--until-epoch-ms",
            &until_ms.to_string(),
        ]
        .map(str::to_owned)
        .to_vec();
        args.extend(client.extra.iter().map(|s| (*s).to_owned()));
        if in_process {
            args.extend(["--members".to_owned(), members.to_string()]);
        }
        args
    };
    if client.in_process {
        return vec![launcher.command(client, &args(stop_ms, true))];
    }
    (0..members)
        .map(|member| {
            let until_ms = if member == members - 1 {
                leave_ms
            } else {
                stop_ms
            };
            launcher.command(client, &args(until_ms, false))
        })
        .collect()
}

/// The members' reports from the children's outputs, member order; `Err` names the first
/// member (or process) that failed.
fn reports_of(outcomes: &[ChildOutcome], in_process: bool) -> Result<Vec<Report>, String> {
    let mut reports = Vec::new();
    for (member, outcome) in outcomes.iter().enumerate() {
        let fine = outcome.exit == 0 && !outcome.killed;
        if in_process {
            let lines = member_lines(&outcome.stdout);
            if !fine || lines.is_empty() {
                return Err(error_text(outcome));
            }
            reports.extend(lines);
        } else {
            match bench_line(&outcome.stdout).filter(|_| fine) {
                Some(report) => reports.push(report),
                None => return Err(format!("member {member}: {}", error_text(outcome))),
            }
        }
    }
    Ok(reports)
}

/// One run of one client on one group size: starts the members, waits for them, evaluates.
pub fn run_one(
    launcher: &Launcher,
    options: &Options,
    workload: &Workload,
    client: &Client,
    rep: usize,
    serial: usize,
) -> Result<MembersRow, String> {
    let WorkloadMode::Members { members } = workload.mode else {
        return Err(format!("{} is not a members workload", workload.label()));
    };
    let settings = &options.members;
    let group = format!(
        "bench-{}-{}-{}-{serial}",
        client.name,
        workload.mode.name(),
        std::process::id()
    );
    let leave_ms = epoch_ms_now() + settings.join_ms;
    let commands = commands(launcher, options, client, members, &group, leave_ms);
    let deadline =
        Duration::from_millis(settings.join_ms + settings.after_ms) + Duration::from_secs(120);
    let outcomes = run_children(commands, deadline)?;
    let mut row = MembersRow {
        workload: workload.label(),
        client: client.name.to_owned(),
        rep,
        status: Status::Ok,
        figures: Figures {
            join_ms: 0.0,
            first_ms: 0.0,
            pause_ms: 0.0,
            reassign_ms: 0.0,
            takeover_ms: 0.0,
            leaver_partitions: 0,
            delivered_partitions: 0,
            records: 0,
        },
        cpu_s: outcomes.iter().map(|o| o.cpu_s).sum(),
        rss_kb: outcomes.iter().map(|o| o.max_rss_kb).sum(),
        threads: outcomes.iter().map(|o| o.max_threads).sum(),
        processes: outcomes.len(),
        error: String::new(),
    };
    let evaluated = reports_of(&outcomes, client.in_process)
        .map_err(|e| (Status::Fail, e))
        .and_then(|reports| {
            evaluate(&reports, u128::from(leave_ms) * 1_000_000, PARTITIONS)
                .map_err(|e| (Status::Invalid, e))
        });
    match evaluated {
        Ok(figures) => row.figures = figures,
        Err((status, error)) => {
            row.status = status;
            row.error = error;
        }
    }
    Ok(row)
}

// --- the report ------------------------------------------------------------------------------

const BEGIN: &str =
    "<!-- members:begin (generated by bench/run --modes members; edits inside are overwritten) -->";
const END: &str = "<!-- members:end -->";

/// One client on one group size, over its repetitions: the valid runs' figures, and how
/// many runs were invalid (measured, not counted) or failed.
#[derive(Debug, Clone)]
pub struct MembersCell {
    pub valid: usize,
    pub invalid: usize,
    pub join_ms: Spread,
    pub pause_ms: Spread,
    pub reassign_ms: Spread,
    /// Over the runs whose stayers delivered every one of the leaver's partitions.
    pub takeover_ms: Option<Spread>,
    /// The run that delivered the fewest of the leaver's partitions: (delivered, of).
    pub fewest_delivered: (usize, usize),
    /// Valid runs whose stayers delivered all of the leaver's partitions.
    pub valid_complete: usize,
    pub cpu_s: Spread,
    pub rss_mib: Spread,
    pub threads: Spread,
    pub processes: usize,
    /// The first invalid run's reason, or the failure when no run counted.
    pub note: String,
}

/// Median, min and max of `samples` (zeros when empty).
fn spread(samples: Vec<f64>) -> Spread {
    Spread::of(samples).unwrap_or(Spread {
        median: 0.0,
        min: 0.0,
        max: 0.0,
    })
}

/// Why a client has no figures at a group size: its failure, or the first invalid run's
/// reason, and how many runs were invalid.
#[derive(Debug, Clone)]
pub struct NotMeasured {
    pub reason: String,
    pub invalid: usize,
}

/// A client's figures at a group size, or why there are none.
pub type CellOutcome = Result<MembersCell, NotMeasured>;

/// Aggregates one client's rows on one group size: `Err` with the failure or the invalid
/// reason when no run counted.
pub fn aggregate(rows: &[&MembersRow]) -> CellOutcome {
    let ok: Vec<&&MembersRow> = rows.iter().filter(|r| r.status == Status::Ok).collect();
    let note = rows
        .iter()
        .find(|r| r.status != Status::Ok)
        .map_or(String::new(), |r| r.error.clone());
    if ok.is_empty() {
        return Err(NotMeasured {
            reason: if note.is_empty() {
                "no runs".to_owned()
            } else {
                note
            },
            invalid: rows.iter().filter(|r| r.status == Status::Invalid).count(),
        });
    }
    let of = |f: &dyn Fn(&MembersRow) -> f64| spread(ok.iter().map(|r| f(r)).collect());
    Ok(MembersCell {
        valid: ok.len(),
        invalid: rows.iter().filter(|r| r.status == Status::Invalid).count(),
        join_ms: of(&|r| r.figures.join_ms),
        pause_ms: of(&|r| r.figures.pause_ms),
        reassign_ms: of(&|r| r.figures.reassign_ms),
        takeover_ms: Spread::of(
            ok.iter()
                .filter(|r| r.figures.delivered_partitions == r.figures.leaver_partitions)
                .map(|r| r.figures.takeover_ms)
                .collect(),
        ),
        fewest_delivered: ok
            .iter()
            .map(|r| (r.figures.delivered_partitions, r.figures.leaver_partitions))
            .min_by_key(|&(d, n)| (d * 1000).checked_div(n).unwrap_or(0))
            .unwrap_or((0, 0)),
        valid_complete: ok
            .iter()
            .filter(|r| r.figures.delivered_partitions == r.figures.leaver_partitions)
            .count(),
        cpu_s: of(&|r| r.cpu_s),
        rss_mib: of(&|r| r.rss_kb as f64 / 1024.0),
        threads: of(&|r| r.threads as f64),
        processes: ok[0].processes,
        note,
    })
}

/// Group size → client (table order) → cell or the reason it has none.
pub type MembersResults = Vec<(u32, Vec<(String, CellOutcome)>)>;

/// The group size of a members workload's label (`100B/none/members-10`).
pub fn group_size(label: &str) -> Option<u32> {
    label
        .split('/')
        .nth(2)?
        .strip_prefix("members-")?
        .parse()
        .ok()
}

/// The rows, by group size (ascending) and client (in [`CLIENTS`] order).
pub fn collect(rows: &[MembersRow]) -> MembersResults {
    let mut by: BTreeMap<u32, BTreeMap<&str, Vec<&MembersRow>>> = BTreeMap::new();
    for row in rows {
        if let Some(size) = group_size(&row.workload) {
            by.entry(size)
                .or_default()
                .entry(row.client.as_str())
                .or_default()
                .push(row);
        }
    }
    by.into_iter()
        .map(|(size, clients)| {
            let cells = CLIENTS
                .iter()
                .filter_map(|c| {
                    clients
                        .get(c.name)
                        .map(|rows| (c.name.to_owned(), aggregate(rows)))
                })
                .collect();
            (size, cells)
        })
        .collect()
}

/// Whether a client's row is ours (a numerator of the ratios, never a peer).
fn is_ours(name: &str) -> bool {
    CLIENTS.iter().any(|c| c.name == name && c.is_ours())
}

fn cell_text(s: &Spread, digits: usize) -> String {
    format!(
        "{:.*} ({:.*}–{:.*})",
        digits, s.median, digits, s.min, digits, s.max
    )
}

/// The taken-over column: the time over the runs that delivered all of the leaver's
/// partitions, and how many the worst run delivered when one did not.
fn takeover_text(c: &MembersCell) -> String {
    let (delivered, of) = c.fewest_delivered;
    match (&c.takeover_ms, delivered < of) {
        (Some(s), false) => cell_text(s, 0),
        (Some(s), true) => format!(
            "{} in {} of {} runs; {delivered} of {of} partitions in the worst",
            cell_text(s, 0),
            c.valid_complete,
            c.valid
        ),
        (None, _) => format!("> window: {delivered} of {of} partitions delivered"),
    }
}

/// The table of one group size: one line per client, the figures' medians (min–max).
fn size_table(out: &mut String, size: u32, cells: &[(String, CellOutcome)]) {
    let _ = writeln!(out, "#### {size} members\n");
    let _ = writeln!(
        out,
        "| client | processes | join-to-stable ms | stayers' pause ms | reassigned ms | taken over ms | CPU s | peak RSS MiB (sum) | threads (sum) | runs valid / invalid |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (client, cell) in cells {
        match cell {
            Ok(c) => {
                let _ = writeln!(
                    out,
                    "| {client} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {} / {} |",
                    c.processes,
                    cell_text(&c.join_ms, 0),
                    cell_text(&c.pause_ms, 0),
                    cell_text(&c.reassign_ms, 0),
                    takeover_text(c),
                    cell_text(&c.cpu_s, 2),
                    cell_text(&c.rss_mib, 0),
                    c.threads.median,
                    c.valid,
                    c.invalid,
                );
            }
            Err(none) => {
                let _ = writeln!(
                    out,
                    "| {client} | | **not measured**: `{}` | | | | | | | 0 / {} |",
                    none.reason.replace('|', "\\|").replace('`', "'"),
                    none.invalid
                );
            }
        }
    }
    out.push('\n');
    for (client, cell) in cells {
        if let Some(c) = cell.as_ref().ok().filter(|c| c.invalid > 0) {
            let _ = writeln!(
                out,
                "- {client}: {} invalid run(s), not counted; the first: `{}`",
                c.invalid,
                c.note.replace('`', "'")
            );
        }
    }
    ratio_lines(out, cells);
}

/// One figure of a cell, for the ratios.
type Figure = fn(&MembersCell) -> f64;

/// The best (lowest) median of a figure over the peers' rows (either layout), and the peer.
fn best_peer(cells: &[(String, CellOutcome)], figure: Figure) -> Option<(&str, f64)> {
    cells
        .iter()
        .filter(|(name, _)| !is_ours(name))
        .filter_map(|(name, cell)| Some((name.as_str(), figure(cell.as_ref().ok()?))))
        .filter(|(_, v)| *v > 0.0)
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Ours ÷ the best peer (lower is better for every figure), one line per row of ours.
fn ratio_lines(out: &mut String, cells: &[(String, CellOutcome)]) {
    let figures: [(&str, Figure); 4] = [
        ("join-to-stable", |c| c.join_ms.median),
        ("pause", |c| c.pause_ms.median),
        ("CPU", |c| c.cpu_s.median),
        ("RSS", |c| c.rss_mib.median),
    ];
    let mut any = false;
    for (client, cell) in cells {
        let (Ok(c), true) = (cell, is_ours(client)) else {
            continue;
        };
        let parts: Vec<String> = figures
            .iter()
            .filter_map(|(label, f)| {
                let (peer, best) = best_peer(cells, *f)?;
                Some(format!("{label} {:.2}× ({peer})", f(c) / best))
            })
            .collect();
        if !parts.is_empty() {
            any = true;
            let _ = writeln!(out, "- {client} ÷ best peer: {}", parts.join(", "));
        }
    }
    if any {
        out.push('\n');
    }
}

/// The members block: the run's metadata, the chart, a table per group size.
pub fn block(results: &MembersResults, meta: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{BEGIN}\n");
    if results.is_empty() {
        let _ = writeln!(out, "Not measured yet.\n");
        let _ = writeln!(out, "{END}");
        return out;
    }
    crate::report::meta_lines(&mut out, meta);
    let m = |k: &str| meta.get(k).cloned().unwrap_or_else(|| "?".to_owned());
    let _ = writeln!(
        out,
        "- {} repetitions per client, clients alternating (the order rotates each round); the leave {} ms after the members start, the stayers stop {} ms after it; {} records/s per member; topic of {} × 100 B records, {PARTITIONS} partitions\n",
        m("reps"),
        m("members_join_ms"),
        m("members_after_ms"),
        m("members_rate_per_s"),
        m("members_records"),
    );
    let _ = writeln!(
        out,
        "![Stayers' pause and join-to-stable by group size](bench/members.svg)\n"
    );
    for (size, cells) in results {
        size_table(&mut out, *size, cells);
    }
    let _ = writeln!(out, "{END}");
    out
}

/// The chart's panels in the shape `svg::chart` draws: per group size one panel of the
/// stayers' pause and one of join-to-stable (a [`Cell`] carrying the figure as its
/// `gap_ms`).
pub fn chart_results(results: &MembersResults) -> Results {
    let zero = Spread {
        median: 0.0,
        min: 0.0,
        max: 0.0,
    };
    let panel =
        |size: u32, what: &str, cells: &[(String, CellOutcome)], f: fn(&MembersCell) -> Spread| {
            let clients = cells
                .iter()
                .map(|(name, cell)| {
                    let outcome = match cell {
                        Ok(c) => Outcome::Measured(Box::new(Cell {
                            runs: c.valid,
                            rate: zero,
                            mb_s: zero,
                            rate_join: zero,
                            cpu_per_m: zero,
                            rss_mib: c.rss_mib,
                            first_ms: zero,
                            gap_ms: f(c),
                            min_fetch_s: 0.0,
                            ports: String::new(),
                            latency_ms: [zero; 4],
                            latency_samples: 0,
                            rss_steady_mib: zero,
                            rss_growth_mib: zero,
                        })),
                        Err(none) => Outcome::Failed(none.reason.clone()),
                    };
                    (name.clone(), outcome)
                })
                .collect();
            (format!("members-{size}: {what}"), clients)
        };
    results
        .iter()
        .flat_map(|(size, cells)| {
            [
                panel(*size, "stayers' pause", cells, |c| c.pause_ms),
                panel(*size, "join-to-stable", cells, |c| c.join_ms),
            ]
        })
        .collect()
}

/// The chart's title.
pub const CHART_TITLE: &str =
    "Members: stayers' pause and join-to-stable, ms (median, whisker: min–max; lower is better)";

/// Rewrites the members block of `BENCHMARKS.md` and `bench/members.svg` from
/// `bench/results/members.tsv` (the block says "Not measured yet" without it).
pub fn report(meta: &BTreeMap<String, String>) -> Result<(), String> {
    let tsv = std::fs::read_to_string(crate::results_dir().join("members.tsv")).unwrap_or_default();
    let rows: Vec<MembersRow> = tsv.lines().skip(1).filter_map(MembersRow::parse).collect();
    let results = collect(&rows);
    crate::report::write_block(
        BEGIN,
        END,
        "## Groups of 3, 10 and 30 members (real broker)",
        &block(&results, meta),
    )?;
    if !results.is_empty() {
        std::fs::write(
            crate::bench_dir().join("members.svg"),
            crate::svg::chart(&chart_results(&results), CHART_TITLE),
        )
        .map_err(|e| e.to_string())?;
    }
    eprintln!("kafka-bench: wrote the members block of BENCHMARKS.md and bench/members.svg");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(fields: &[(&str, u128)]) -> Report {
        fields.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    /// A member that started at 1 000, was stable at `stable`, owned `owned` at the leave,
    /// paused `pause` and took `taken` over.
    fn member(stable: u128, owned: &[i32], pause: u128, taken: &[(i32, u128)]) -> Report {
        let mut r = report(&[
            ("start_ns", 1_000),
            ("first_ns", stable - 100),
            ("stable_ns", stable),
            ("pause_ns", pause),
            ("records", 10),
        ]);
        for p in owned {
            r.insert(format!("own_{p}"), 1);
        }
        for (p, at) in taken {
            r.insert(format!("ptake_{p}"), *at);
        }
        r
    }

    #[test]
    fn a_valid_run_yields_join_pause_and_takeover() {
        let leave = 10_000_000;
        let reports = [
            member(
                3_000_000,
                &[0, 1],
                40_000_000,
                &[(0, leave + 1), (4, leave + 30_000_000)],
            ),
            member(5_001_000, &[2, 3], 70_000_000, &[(5, leave + 50_000_000)]),
            member(4_000_000, &[4, 5], 0, &[]),
        ];
        let figures = evaluate(&reports, leave, 6).expect("valid");
        assert_eq!(
            figures.join_ms, 5.0,
            "the last member stable at 5 001 000 ns"
        );
        assert_eq!(figures.first_ms, 4.9999, "its first record 100 ns before");
        assert_eq!(
            figures.pause_ms, 70.0,
            "the worst stayer; the leaver's own gap is not one"
        );
        assert_eq!(
            figures.takeover_ms, 50.0,
            "partition 5, the last taken over"
        );
        assert_eq!(figures.records, 30);
    }

    #[test]
    fn a_takeover_needs_every_leaver_partition_reassigned_and_one_delivered() {
        let leave = 10_000_000;
        let mut reports = [
            member(3_000_000, &[0, 1, 2], 1, &[(4, leave + 5)]),
            member(3_000_000, &[3, 4, 5], 1, &[]),
            member(3_000_000, &[6, 7], 1, &[]),
        ];
        let error = evaluate(&reports, leave, 8).unwrap_err();
        assert!(
            error.contains("partition(s) 6,7 were in no staying"),
            "{error}"
        );
        reports[0].insert("pgot_6".to_owned(), leave + 7);
        reports[1].insert("pgot_7".to_owned(), leave + 9);
        let error = evaluate(&reports, leave, 8).unwrap_err();
        assert!(error.contains("delivered any of the leaver's 2"), "{error}");
        // One of the two delivered: valid, reassigned, but not taken over in full.
        reports[1].insert("ptake_7".to_owned(), leave + 40);
        let figures = evaluate(&reports, leave, 8).expect("valid");
        assert_eq!(
            (figures.leaver_partitions, figures.delivered_partitions),
            (2, 1)
        );
        assert_eq!(figures.takeover_ms, 0.0);
        assert_eq!(figures.reassign_ms, 9e-6);
    }

    #[test]
    fn an_unsettled_group_makes_the_run_invalid() {
        let leave = 10_000_000;
        let never = member(3_000_000, &[2, 3], 1, &[]);
        let mut never = never;
        never.insert("stable_ns".to_owned(), 0);
        let ok = member(3_000_000, &[0, 1], 1, &[(2, leave)]);
        let error = evaluate(&[ok.clone(), never], leave, 4).unwrap_err();
        assert!(error.contains("member 1 was not consuming"), "{error}");
        let overlap = member(3_000_000, &[1, 2, 3], 1, &[]);
        let error = evaluate(&[ok.clone(), overlap], leave, 4).unwrap_err();
        assert!(
            error.contains("partition 1 was assigned to members 0 and 1"),
            "{error}"
        );
        let short = member(3_000_000, &[2], 1, &[]);
        let error = evaluate(&[ok.clone(), short], leave, 4).unwrap_err();
        assert!(
            error.contains("partition(s) 3 assigned to no member"),
            "{error}"
        );
        assert!(
            evaluate(&[ok], leave, 2).is_err(),
            "a group of one has no stayer"
        );
    }

    #[test]
    fn in_process_lines_come_back_in_member_order() {
        let stdout = "noise\nBENCH member=1 records=5\nBENCH member=0 records=7\n";
        let reports = member_lines(stdout);
        assert_eq!(reports.len(), 2);
        assert_eq!(field(&reports[0], "records"), 7);
    }

    fn row(client: &str, status: Status, pause_ms: f64, rss_kb: i64) -> MembersRow {
        MembersRow {
            workload: "100B/none/members-3".to_owned(),
            client: client.to_owned(),
            rep: 0,
            status,
            figures: Figures {
                join_ms: 3_000.0,
                first_ms: 2_500.5,
                pause_ms,
                reassign_ms: 80.0,
                takeover_ms: 120.0,
                leaver_partitions: 20,
                delivered_partitions: 20,
                records: 1_000,
            },
            cpu_s: 1.5,
            rss_kb,
            threads: 12,
            processes: 3,
            error: if status == Status::Ok {
                String::new()
            } else {
                "invalid run: x".to_owned()
            },
        }
    }

    #[test]
    fn rows_round_trip_through_the_tsv() {
        let r = row("ours", Status::Invalid, 55.5, 40_960);
        assert_eq!(MembersRow::parse(&r.tsv()), Some(r.clone()));
        assert_eq!(TSV_HEADER.split('\t').count(), r.tsv().split('\t').count());
        assert_eq!(MembersRow::parse("a\tb"), None);
        assert_eq!(group_size("100B/none/members-30"), Some(30));
        assert_eq!(group_size("100B/none/rebalance"), None);
    }

    #[test]
    fn the_block_counts_only_valid_runs_and_divides_by_the_best_peer() {
        let mut partial = row("java-consumer", Status::Ok, 50.0, 900 * 1024);
        partial.figures.delivered_partitions = 7;
        let rows = [
            partial,
            row("ours", Status::Ok, 60.0, 30 * 1024),
            row("ours", Status::Invalid, 0.0, 30 * 1024),
            row("rdkafka", Status::Ok, 30.0, 60 * 1024),
            row("java-classic", Status::Ok, 40.0, 600 * 1024),
            row("krafka", Status::Fail, 0.0, 0),
        ];
        let results = collect(&rows);
        assert_eq!(results.len(), 1);
        let block = block(&results, &BTreeMap::new());
        assert!(block.starts_with(BEGIN) && block.trim_end().ends_with(END));
        assert!(
            block.contains("| ours | 3 | 3000 (3000–3000) | 60 (60–60) |"),
            "{block}"
        );
        assert!(block.contains("| 1 / 1 |"), "{block}");
        assert!(
            block.contains("| 80 (80–80) | > window: 7 of 20 partitions delivered |"),
            "{block}"
        );
        assert!(block.contains("| 80 (80–80) | 120 (120–120) |"), "{block}");
        assert!(block.contains("ours: 1 invalid run(s)"), "{block}");
        assert!(
            block.contains("| krafka | | **not measured**: `invalid run: x`"),
            "{block}"
        );
        assert!(
            block.contains("- ours ÷ best peer: join-to-stable 1.00× (rdkafka), pause 2.00× (rdkafka), CPU 1.00× (rdkafka), RSS 0.50× (rdkafka)"),
            "{block}"
        );
        let panels = chart_results(&results);
        assert_eq!(panels[0].0, "members-3: stayers' pause");
        assert_eq!(panels[1].0, "members-3: join-to-stable");
    }

    #[test]
    fn the_block_says_not_measured_until_a_run() {
        let block = block(&Vec::new(), &BTreeMap::new());
        assert!(block.contains("Not measured yet"), "{block}");
    }
}
