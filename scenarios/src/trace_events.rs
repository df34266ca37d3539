//! A run in the Trace Event format (the JSON that Perfetto UI, `chrome://tracing` and Speedscope
//! open): `cargo sim run … --trace FILE.json` writes it.
//!
//! Layout, so the viewer shows what a rebalance race needs side by side:
//! - process `cluster`: a thread `faults` with each fault (and the heal) as a global instant — a
//!   line across every track — and an async slice per group request a node held, from its
//!   arrival to its answer, in the category of that node (`coordinator`);
//! - one process per member, with a thread `application` (each `poll`, `close` and rebalance
//!   callback as a slice, callbacks nested in the call that ran them; seeks, subscriptions,
//!   leaves, expulsions, crashes and assignment changes as instants), a thread `requests` (each
//!   group request and its answer as two instants joined by a flow arrow), and async tracks of
//!   the partitions it owned (one slice per ownership period) and of its commits (request to
//!   completion);
//! - the first violated invariant as a global instant named after its checker.
//!
//! Virtual milliseconds become the format's microseconds (`ts = at_ms × 1000`), and
//! `displayTimeUnit` is `ms`. Deliveries and producer acknowledgements are too many to draw one
//! by one: each poll slice carries its record count.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use sim::check::Report;
use sim::history::{CallbackKind, Event, History};

use crate::timeline::tps;

const CLUSTER_PID: u64 = 1;
const FAULTS_TID: u64 = 1;
const APPLICATION_TID: u64 = 1;
const REQUESTS_TID: u64 = 2;

fn us(at_ms: u64) -> u64 {
    at_ms * 1000
}

fn callback_name(kind: CallbackKind) -> &'static str {
    match kind {
        CallbackKind::Revoked => "onPartitionsRevoked",
        CallbackKind::Assigned => "onPartitionsAssigned",
        CallbackKind::Lost => "onPartitionsLost",
    }
}

fn result(error: &Option<String>) -> Value {
    error.as_ref().map_or(json!("ok"), |e| json!(e))
}

/// The events of one run, built up in history order.
struct Builder<'a> {
    history: &'a History,
    events: Vec<Value>,
    /// Member name → its process id.
    pids: BTreeMap<&'a str, u64>,
    next_flow: u64,
}

/// Renders `history`, judged by `report`, as a Trace Event JSON document.
pub fn render(title: &str, history: &History, report: &Report) -> String {
    let mut b = Builder::new(history);
    b.metadata();
    b.faults();
    b.application_slices();
    b.instants();
    b.requests();
    b.ownership();
    b.commits();
    if let Some((checker, v)) = report.first_violation() {
        b.events.push(json!({
            "name": format!("violation: {checker}"), "cat": "violation", "ph": "i", "s": "g",
            "ts": us(v.at_ms), "pid": CLUSTER_PID, "tid": FAULTS_TID,
            "args": {"kind": format!("{:?}", v.kind), "subject": v.subject,
                     "explanation": v.explanation},
        }));
    }
    let verdict = report
        .first_violation()
        .map_or("PASS".to_string(), |(c, _)| format!("FAIL ({c})"));
    let doc = json!({
        "traceEvents": b.events,
        "displayTimeUnit": "ms",
        "otherData": {"title": title, "verdict": verdict, "end_ms": history.end_ms()},
    });
    doc.to_string()
}

/// An application call that started and has not ended yet: its start, its args so far and
/// its slice's name.
type OpenCall = (u64, Value, String);

impl<'a> Builder<'a> {
    fn new(history: &'a History) -> Self {
        let members = history.subjects().into_iter().filter(|s| {
            history
                .of_subject(s)
                .any(|e| matches!(e.event, Event::MemberStart { .. }))
        });
        let pids = members
            .enumerate()
            .map(|(i, m)| (m, CLUSTER_PID + 1 + i as u64))
            .collect();
        Self {
            history,
            events: Vec::new(),
            pids,
            next_flow: 1,
        }
    }

    fn name(&mut self, what: &str, pid: u64, tid: Option<u64>, name: &str, sort: u64) {
        let mut e = json!({"name": what, "ph": "M", "pid": pid, "args": {"name": name}});
        if let Some(tid) = tid {
            e["tid"] = json!(tid);
        }
        self.events.push(e);
        let sort_what = if tid.is_some() {
            "thread_sort_index"
        } else {
            "process_sort_index"
        };
        let mut e = json!({"name": sort_what, "ph": "M", "pid": pid, "args": {"sort_index": sort}});
        if let Some(tid) = tid {
            e["tid"] = json!(tid);
        }
        self.events.push(e);
    }

    fn metadata(&mut self) {
        self.name("process_name", CLUSTER_PID, None, "cluster", 0);
        self.name("thread_name", CLUSTER_PID, Some(FAULTS_TID), "faults", 0);
        let members: Vec<(&str, u64)> = self.pids.iter().map(|(m, p)| (*m, *p)).collect();
        for (member, pid) in members {
            self.name("process_name", pid, None, member, pid);
            self.name(
                "thread_name",
                pid,
                Some(APPLICATION_TID),
                "application",
                APPLICATION_TID,
            );
            self.name(
                "thread_name",
                pid,
                Some(REQUESTS_TID),
                "requests",
                REQUESTS_TID,
            );
        }
    }

    fn faults(&mut self) {
        for e in self.history.entries() {
            let name = match &e.event {
                Event::Fault { kind } => kind.clone(),
                Event::Healed => "healed".to_string(),
                _ => continue,
            };
            self.events.push(json!({
                "name": name, "cat": "fault", "ph": "i", "s": "g", "ts": us(e.at_ms),
                "pid": CLUSTER_PID, "tid": FAULTS_TID,
            }));
        }
    }

    /// A complete slice on a member's application thread.
    fn slice(&mut self, pid: u64, name: String, from_ms: u64, to_ms: u64, args: Value) {
        self.events.push(json!({
            "name": name, "cat": "application", "ph": "X", "ts": us(from_ms),
            "dur": us(to_ms.saturating_sub(from_ms)), "pid": pid, "tid": APPLICATION_TID,
            "args": args,
        }));
    }

    /// Draws `call` (if it was open) as a slice ending at `at_ms` with its outcome, and the
    /// records a poll returned.
    fn end_call(
        &mut self,
        pid: u64,
        call: Option<OpenCall>,
        at_ms: u64,
        error: &Option<String>,
        records: Option<u64>,
    ) {
        let Some((from, mut args, name)) = call else {
            return;
        };
        if let Some(records) = records {
            args["records"] = json!(records);
        }
        args["result"] = result(error);
        self.slice(pid, name, from, at_ms, args);
    }

    /// `poll`, `close` and callbacks: each start paired with the subject's next end of its
    /// kind (callbacks last-in first-out); a call still open when the history ends lasts to
    /// its end.
    fn application_slices(&mut self) {
        let end_ms = self.history.end_ms();
        let mut open: BTreeMap<(&str, &str), Vec<OpenCall>> = BTreeMap::new();
        for e in self.history.entries() {
            let Some(&pid) = self.pids.get(e.subject.as_str()) else {
                continue;
            };
            let subject = e.subject.as_str();
            match &e.event {
                Event::PollStart { timeout_ms } => {
                    let args = json!({"timeout_ms": timeout_ms});
                    open.entry((subject, "poll"))
                        .or_default()
                        .push((e.at_ms, args, "poll".into()));
                }
                Event::CloseStart { timeout_ms } => {
                    let args = json!({"timeout_ms": timeout_ms});
                    open.entry((subject, "close")).or_default().push((
                        e.at_ms,
                        args,
                        "close".into(),
                    ));
                }
                Event::CallbackStart { kind, partitions } => {
                    let name = format!("{} [{}]", callback_name(*kind), tps(partitions));
                    open.entry((subject, "callback"))
                        .or_default()
                        .push((e.at_ms, json!({}), name));
                }
                Event::PollEnd { records, error } => {
                    let call = open.get_mut(&(subject, "poll")).and_then(Vec::pop);
                    self.end_call(pid, call, e.at_ms, error, Some(*records));
                }
                Event::CloseEnd { error } => {
                    let call = open.get_mut(&(subject, "close")).and_then(Vec::pop);
                    self.end_call(pid, call, e.at_ms, error, None);
                }
                Event::CallbackEnd { error, .. } => {
                    let call = open.get_mut(&(subject, "callback")).and_then(Vec::pop);
                    self.end_call(pid, call, e.at_ms, error, None);
                }
                Event::MemberCrash | Event::MemberRestart => {
                    // A crash ends whatever the process was doing.
                    let ended: Vec<_> = open
                        .iter_mut()
                        .filter(|((s, _), _)| *s == subject)
                        .flat_map(|(_, calls)| calls.drain(..))
                        .collect();
                    for (from, mut args, name) in ended {
                        args["result"] = json!("crashed");
                        self.slice(pid, name, from, e.at_ms, args);
                    }
                }
                _ => {}
            }
        }
        let unfinished: Vec<_> = open
            .into_iter()
            .flat_map(|((subject, _), calls)| calls.into_iter().map(move |c| (subject, c)))
            .collect();
        for (subject, (from, mut args, name)) in unfinished {
            args["result"] = json!("unfinished when the run ended");
            let pid = self.pids[subject];
            self.slice(pid, name, from, end_ms, args);
        }
    }

    /// Application-side moments that have no duration.
    fn instants(&mut self) {
        for e in self.history.entries() {
            let Some(&pid) = self.pids.get(e.subject.as_str()) else {
                continue;
            };
            let (name, cat) = match &e.event {
                Event::MemberStart { group } => (format!("start (group '{group}')"), "member"),
                Event::MemberCrash => ("crash".to_string(), "member"),
                Event::MemberRestart => ("restart".to_string(), "member"),
                Event::Subscribe { topics } => {
                    (format!("subscribe [{}]", topics.join(",")), "member")
                }
                Event::ManualAssign { partitions } => {
                    (format!("assign [{}]", tps(partitions)), "member")
                }
                Event::Assignment { .. } => (e.event.to_string(), "assignment"),
                Event::Seek { tp, offset } => (format!("seek {tp}@{offset}"), "position"),
                Event::PositionReset { .. } => (e.event.to_string(), "position"),
                Event::Leave { reason } => (format!("leave ({reason})"), "group"),
                Event::Expelled { reason, .. } => (format!("expelled ({reason})"), "group"),
                Event::Note { text } => (text.clone(), "note"),
                _ => continue,
            };
            self.events.push(json!({
                "name": name, "cat": cat, "ph": "i", "s": "t", "ts": us(e.at_ms),
                "pid": pid, "tid": APPLICATION_TID,
            }));
        }
    }

    /// Group requests: on the member's `requests` thread the request and its answer, joined
    /// by a flow arrow; in the cluster process, the time the node held the request.
    fn requests(&mut self) {
        let end_ms = self.history.end_ms();
        // (subject, api, correlation) → (at_ms, node, flow id).
        let mut open: BTreeMap<(&str, &str, i32), (u64, &str, u64)> = BTreeMap::new();
        for e in self.history.entries() {
            let Some(&pid) = self.pids.get(e.subject.as_str()) else {
                continue;
            };
            match &e.event {
                Event::Request {
                    api,
                    correlation,
                    node,
                    member_id,
                    generation,
                } => {
                    let flow = self.next_flow;
                    self.next_flow += 1;
                    open.insert(
                        (e.subject.as_str(), api.as_str(), *correlation),
                        (e.at_ms, node.as_str(), flow),
                    );
                    self.events.push(json!({
                        "name": format!("{api} →"), "cat": "request", "ph": "X", "dur": 0,
                        "ts": us(e.at_ms), "pid": pid, "tid": REQUESTS_TID,
                        "args": {"node": node, "correlation": correlation,
                                 "member_id": member_id, "generation": generation},
                    }));
                    self.events.push(json!({
                        "name": api, "cat": "request", "ph": "s", "id": flow,
                        "ts": us(e.at_ms), "pid": pid, "tid": REQUESTS_TID,
                    }));
                }
                Event::Response {
                    api,
                    correlation,
                    error,
                    member_id,
                    generation,
                    ..
                } => {
                    let key = (e.subject.as_str(), api.as_str(), *correlation);
                    let Some((from_ms, node, flow)) = open.remove(&key) else {
                        continue;
                    };
                    self.events.push(json!({
                        "name": format!("← {api} {}", result(error).as_str().unwrap_or("")),
                        "cat": "response", "ph": "X", "dur": 0, "ts": us(e.at_ms),
                        "pid": pid, "tid": REQUESTS_TID,
                        "args": {"node": node, "correlation": correlation, "result": result(error),
                                 "member_id": member_id, "generation": generation},
                    }));
                    self.events.push(json!({
                        "name": api, "cat": "request", "ph": "f", "bp": "e", "id": flow,
                        "ts": us(e.at_ms), "pid": pid, "tid": REQUESTS_TID,
                    }));
                    self.held(node, api, &e.subject, flow, from_ms, e.at_ms);
                }
                _ => {}
            }
        }
        let unanswered: Vec<_> = open.into_iter().collect();
        for ((subject, api, _), (from_ms, node, flow)) in unanswered {
            self.held(node, api, subject, flow, from_ms, end_ms);
        }
    }

    /// One async slice, in the node's category, while it held a member's request.
    fn held(&mut self, node: &str, api: &str, member: &str, id: u64, from_ms: u64, to_ms: u64) {
        let name = format!("{api} {member}");
        for (ph, ts) in [("b", from_ms), ("e", to_ms)] {
            self.events.push(json!({
                "name": name, "cat": node, "ph": ph, "id": format!("held-{id}"),
                "ts": us(ts), "pid": CLUSTER_PID,
            }));
        }
    }

    /// One async slice per (member, partition) ownership period.
    fn ownership(&mut self) {
        let end_ms = self.history.end_ms();
        for p in self.history.ownership_periods() {
            let Some(&pid) = self.pids.get(p.subject.as_str()) else {
                continue;
            };
            let id = format!("owned-{}-{}-{}", p.subject, p.tp, p.start_seq);
            let end = p
                .end
                .map_or("owned at the end".to_string(), |e| format!("{e:?}"));
            self.events.push(json!({
                "name": p.tp.to_string(), "cat": "owned", "ph": "b", "id": id,
                "ts": us(p.start_ms), "pid": pid, "args": {"managed": p.managed},
            }));
            self.events.push(json!({
                "name": p.tp.to_string(), "cat": "owned", "ph": "e", "id": id,
                "ts": us(p.end_ms.unwrap_or(end_ms)), "pid": pid, "args": {"end": end},
            }));
        }
    }

    /// One async slice per commit, from the request to its completion.
    fn commits(&mut self) {
        let end_ms = self.history.end_ms();
        for c in self.history.commits() {
            let Some(&pid) = self.pids.get(c.subject.as_str()) else {
                continue;
            };
            let id = format!("commit-{}-{}", c.subject, c.requested_seq);
            let name = format!("commit#{} {}", c.id, c.mode);
            let offsets: BTreeMap<String, i64> = c
                .offsets
                .iter()
                .map(|(tp, offset)| (tp.to_string(), *offset))
                .collect();
            let outcome = match (c.completed_ms, &c.error) {
                (None, _) => json!("unanswered"),
                (Some(_), error) => result(error),
            };
            self.events.push(json!({
                "name": name, "cat": "commit", "ph": "b", "id": id, "ts": us(c.requested_ms),
                "pid": pid, "args": {"offsets": offsets, "generation": c.generation},
            }));
            self.events.push(json!({
                "name": name, "cat": "commit", "ph": "e", "id": id,
                "ts": us(c.completed_ms.unwrap_or(end_ms)), "pid": pid,
                "args": {"result": outcome},
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::check::{Verdict, Violation, ViolationKind};
    use sim::history::{CommitMode, Event, Tp};

    fn run() -> History {
        let tp = Tp::new("t", 0);
        History::from_events(vec![
            (0, "c0", Event::MemberStart { group: "g".into() }),
            (1, "c0", Event::PollStart { timeout_ms: 100 }),
            (
                2,
                "c0",
                Event::Request {
                    api: "JoinGroup".into(),
                    correlation: 1,
                    node: "coordinator".into(),
                    member_id: None,
                    generation: None,
                },
            ),
            (
                5,
                "c0",
                Event::Response {
                    api: "JoinGroup".into(),
                    correlation: 1,
                    node: "coordinator".into(),
                    error: None,
                    member_id: Some("m".into()),
                    generation: Some(1),
                },
            ),
            (
                6,
                "c0",
                Event::CallbackStart {
                    kind: CallbackKind::Assigned,
                    partitions: vec![tp.clone()],
                },
            ),
            (
                6,
                "c0",
                Event::Assignment {
                    generation: 1,
                    assigned: vec![tp.clone()],
                    revoked: vec![],
                    lost: vec![],
                },
            ),
            (
                7,
                "c0",
                Event::CallbackEnd {
                    kind: CallbackKind::Assigned,
                    partitions: vec![tp.clone()],
                    error: None,
                },
            ),
            (
                8,
                "c0",
                Event::PollEnd {
                    records: 3,
                    error: None,
                },
            ),
            (
                9,
                "c0",
                Event::CommitRequested {
                    id: 1,
                    mode: CommitMode::Sync,
                    generation: Some(1),
                    offsets: vec![(tp.clone(), 3)],
                },
            ),
            (
                9,
                "faults",
                Event::Fault {
                    kind: "partition".into(),
                },
            ),
            (12, "c0", Event::CommitCompleted { id: 1, error: None }),
            (20, "faults", Event::Healed),
            (21, "c0", Event::PollStart { timeout_ms: 100 }),
        ])
    }

    fn passed() -> Report {
        Report {
            verdicts: Vec::new(),
        }
    }

    fn events(doc: &str) -> Vec<Value> {
        let v: Value = serde_json::from_str(doc).unwrap();
        assert_eq!(v["displayTimeUnit"], "ms");
        v["traceEvents"].as_array().unwrap().clone()
    }

    fn with_ph<'e>(events: &'e [Value], ph: &str) -> Vec<&'e Value> {
        events.iter().filter(|e| e["ph"] == ph).collect()
    }

    #[test]
    fn calls_nest_and_requests_flow_to_their_answers() {
        let events = events(&render("t", &run(), &passed()));
        let slices = with_ph(&events, "X");
        let named = |n: &str| {
            slices
                .iter()
                .find(|e| e["name"] == n)
                .unwrap_or_else(|| panic!("no slice {n}: {slices:?}"))
        };
        let poll = named("poll");
        assert_eq!(
            (poll["ts"].as_u64(), poll["dur"].as_u64()),
            (Some(1000), Some(7000))
        );
        assert_eq!(poll["args"]["records"], 3);
        let callback = named("onPartitionsAssigned [t-0]");
        assert_eq!(
            (callback["ts"].as_u64(), callback["dur"].as_u64()),
            (Some(6000), Some(1000))
        );
        // The poll still open when the run ended lasts to its end.
        let last = slices
            .iter()
            .filter(|e| e["name"] == "poll")
            .nth(1)
            .unwrap();
        assert_eq!(last["args"]["result"], "unfinished when the run ended");
        // The request and its answer are joined by one flow.
        let starts = with_ph(&events, "s");
        let finishes = with_ph(&events, "f");
        assert_eq!((starts.len(), finishes.len()), (1, 1));
        assert_eq!(starts[0]["id"], finishes[0]["id"]);
        assert_eq!(
            (starts[0]["ts"].as_u64(), finishes[0]["ts"].as_u64()),
            (Some(2000), Some(5000))
        );
        // Faults and the heal are global instants on the cluster's faults thread.
        let faults: Vec<_> = with_ph(&events, "i")
            .into_iter()
            .filter(|e| e["cat"] == "fault")
            .collect();
        assert_eq!(faults.len(), 2);
        assert!(faults
            .iter()
            .all(|e| e["s"] == "g" && e["pid"] == CLUSTER_PID));
    }

    #[test]
    fn async_slices_pair_up_and_tracks_are_named() {
        let events = events(&render("t", &run(), &passed()));
        let mut balance: BTreeMap<String, i32> = BTreeMap::new();
        for e in &events {
            let id = e["id"].as_str().map(str::to_owned);
            match (e["ph"].as_str(), id) {
                (Some("b"), Some(id)) => *balance.entry(id).or_default() += 1,
                (Some("e"), Some(id)) => *balance.entry(id).or_default() -= 1,
                _ => {}
            }
        }
        assert!(balance.values().all(|n| *n == 0), "{balance:?}");
        let ids: Vec<&String> = balance.keys().collect();
        assert!(
            ids.iter().any(|id| id.starts_with("owned-c0-t-0")),
            "{ids:?}"
        );
        assert!(ids.iter().any(|id| id.starts_with("commit-c0")), "{ids:?}");
        assert!(ids.iter().any(|id| id.starts_with("held-")), "{ids:?}");
        assert!(
            events.iter().any(
                |e| e["id"].as_str().is_some_and(|id| id.starts_with("held-"))
                    && e["cat"] == "coordinator"
            ),
            "a held request in its node's category"
        );
        let names: Vec<&str> = with_ph(&events, "M")
            .iter()
            .filter_map(|e| e["args"]["name"].as_str())
            .collect();
        for name in ["cluster", "faults", "c0", "application", "requests"] {
            assert!(names.contains(&name), "{name} not in {names:?}");
        }
        // Every timestamp lies within the run.
        for e in &events {
            if let Some(ts) = e["ts"].as_u64() {
                assert!(ts <= 21_000, "{e}");
            }
        }
    }

    #[test]
    fn the_first_violation_is_a_global_instant_and_the_verdict_says_fail() {
        let report = Report {
            verdicts: vec![Verdict::new(
                "exclusive-ownership",
                vec![Violation::new(ViolationKind::DoubleOwnership, 6, "two owners").subject("c0")],
            )],
        };
        let doc = render("t", &run(), &report);
        let v: Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(v["otherData"]["verdict"], "FAIL (exclusive-ownership)");
        let events = events(&doc);
        let violation = events
            .iter()
            .find(|e| e["cat"] == "violation")
            .expect("a violation instant");
        assert_eq!(
            (
                violation["name"].as_str(),
                violation["ts"].as_u64(),
                violation["s"].as_str()
            ),
            (
                Some("violation: exclusive-ownership"),
                Some(6000),
                Some("g")
            )
        );
        let passed = render("t", &run(), &passed());
        assert!(!passed.contains("\"violation\""));
    }
}
