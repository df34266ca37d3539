//! The timeline of a run: one self-contained HTML page (inline SVG and a few lines of inline
//! script, nothing fetched) with a lane per member over virtual time — owned partitions,
//! rebalance callbacks, commits, heartbeats — a lane of faults, and the first violated
//! invariant highlighted. `cargo sim run … --trace FILE.html` writes it.
//!
//! Every drawn element carries a class (`owned`, `callback`, `commit ok|err`, `heartbeat`,
//! `fault`, `violation`) and lanes a `data-member`, so a browser test can check what the page
//! shows; the inline script counts them into `#rendered` once the SVG is parsed.

use std::collections::BTreeMap;
use std::fmt::Write;

use sim::check::Report;
use sim::history::{Event, History, Tp};

const WIDTH: f64 = 1400.0;
const LEFT: f64 = 90.0;
const LANE: f64 = 70.0;
const TOP: f64 = 40.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Partitions as `t-0,t-1` (the Trace Event output names them the same way).
pub(crate) fn tps(set: &[Tp]) -> String {
    set.iter().map(Tp::to_string).collect::<Vec<_>>().join(",")
}

/// An owned-partitions period of one member.
struct Owned {
    from: u64,
    to: Option<u64>,
    partitions: Vec<Tp>,
}

/// Renders the page for `history` judged by `report`.
pub fn render(title: &str, history: &History, report: &Report) -> String {
    let end = history.end_ms().max(1);
    let x = |ms: u64| LEFT + (ms as f64 / end as f64) * (WIDTH - LEFT - 10.0);
    let members: Vec<String> = history
        .subjects()
        .into_iter()
        .filter(|s| {
            history
                .of_subject(s)
                .any(|e| matches!(e.event, Event::MemberStart { .. }))
        })
        .map(str::to_owned)
        .collect();
    let lane_of: BTreeMap<&str, usize> = members
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i + 1))
        .collect();
    let lane_y = |lane: usize| TOP + lane as f64 * LANE;
    let height = lane_y(members.len() + 1) + 20.0;
    let first = report.first_violation();
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="monospace" font-size="11">"#
    );
    // Time axis: a tick every tenth of the run.
    for i in 0..=10 {
        let ms = end * i / 10;
        let _ = writeln!(
            svg,
            r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#eee"/><text x="{0:.1}" y="{3}" fill="#888">{ms}ms</text>"##,
            x(ms),
            TOP - 10.0,
            height - 20.0,
            TOP - 14.0
        );
    }
    // Lanes.
    let names = std::iter::once("faults".to_owned()).chain(members.iter().cloned());
    for (lane, name) in names.enumerate() {
        let y = lane_y(lane);
        let violated = first.is_some_and(|(_, v)| v.subject.as_deref() == Some(name.as_str()));
        let _ = writeln!(
            svg,
            r##"<g class="lane" data-member="{0}"><rect x="0" y="{1}" width="{WIDTH}" height="{2}" fill="{3}" stroke="{4}" stroke-width="{5}"/><text x="6" y="{6}" font-weight="bold">{0}</text></g>"##,
            esc(&name),
            y - LANE / 2.0 + 4.0,
            LANE - 8.0,
            if lane % 2 == 0 { "#fafafa" } else { "#f3f6fa" },
            if violated { "#d00" } else { "none" },
            if violated { 2 } else { 0 },
            y + 4.0
        );
    }
    // Owned partitions per member.
    let mut owned: BTreeMap<&str, Vec<Owned>> = BTreeMap::new();
    for e in history.entries() {
        let Some(_) = lane_of.get(e.subject.as_str()) else {
            continue;
        };
        let periods = owned.entry(e.subject.as_str()).or_default();
        let current: Vec<Tp> = periods
            .last()
            .filter(|p| p.to.is_none())
            .map(|p| p.partitions.clone())
            .unwrap_or_default();
        let next = match &e.event {
            Event::ManualAssign { partitions } => Some(partitions.clone()),
            Event::Assignment {
                assigned,
                revoked,
                lost,
                ..
            } => {
                let mut set: Vec<Tp> = current
                    .iter()
                    .filter(|tp| !revoked.contains(tp) && !lost.contains(tp))
                    .cloned()
                    .collect();
                set.extend(assigned.iter().cloned());
                Some(set)
            }
            Event::CloseEnd { .. } | Event::MemberCrash => Some(Vec::new()),
            _ => None,
        };
        if let Some(set) = next {
            if let Some(p) = periods.last_mut().filter(|p| p.to.is_none()) {
                p.to = Some(e.at_ms);
            }
            if !set.is_empty() {
                periods.push(Owned {
                    from: e.at_ms,
                    to: None,
                    partitions: set,
                });
            }
        }
    }
    for (member, periods) in &owned {
        let y = lane_y(lane_of[member]) - 22.0;
        for p in periods {
            let to = p.to.unwrap_or(end);
            let w = (x(to) - x(p.from)).max(1.0);
            let _ = writeln!(
                svg,
                r##"<g class="owned"><title>{member} owns {0} from {1}ms to {to}ms</title><rect x="{2:.1}" y="{y}" width="{w:.1}" height="14" fill="#9cc3e6" stroke="#4a7fb0"/><text x="{3:.1}" y="{4}" fill="#123">{0}</text></g>"##,
                esc(&tps(&p.partitions)),
                p.from,
                x(p.from),
                x(p.from) + 2.0,
                y + 11.0
            );
        }
    }
    // Callbacks, commits, heartbeats, leaves.
    let mut callback_start: BTreeMap<&str, u64> = BTreeMap::new();
    for e in history.entries() {
        let Some(lane) = lane_of.get(e.subject.as_str()) else {
            continue;
        };
        let y = lane_y(*lane);
        match &e.event {
            Event::CallbackStart { .. } => {
                callback_start.insert(e.subject.as_str(), e.at_ms);
            }
            Event::CallbackEnd {
                kind, partitions, ..
            } => {
                let from = callback_start.remove(e.subject.as_str()).unwrap_or(e.at_ms);
                let _ = writeln!(
                    svg,
                    r##"<g class="callback {kind}"><title>on partitions {kind} {0} ({from}ms..{1}ms)</title><rect x="{2:.1}" y="{3}" width="{4:.1}" height="10" fill="{5}"/></g>"##,
                    esc(&tps(partitions)),
                    e.at_ms,
                    x(from),
                    y - 4.0,
                    (x(e.at_ms) - x(from)).max(3.0),
                    match kind {
                        sim::history::CallbackKind::Assigned => "#3a3",
                        sim::history::CallbackKind::Revoked => "#e90",
                        sim::history::CallbackKind::Lost => "#c33",
                    }
                );
            }
            Event::CommitCompleted { id, error } => {
                let (class, color) = if error.is_none() {
                    ("ok", "#2a2")
                } else {
                    ("err", "#d22")
                };
                let _ = writeln!(
                    svg,
                    r##"<g class="commit {class}"><title>commit#{id} done at {0}ms: {1}</title><circle cx="{2:.1}" cy="{3}" r="2.5" fill="{color}"/></g>"##,
                    e.at_ms,
                    esc(error.as_deref().unwrap_or("ok")),
                    x(e.at_ms),
                    y + 14.0
                );
            }
            Event::Request { api, .. } if api == "Heartbeat" || api == "FindCoordinator" => {
                let _ = writeln!(
                    svg,
                    r##"<g class="{0}"><title>{api} at {1}ms</title><line x1="{2:.1}" y1="{3}" x2="{2:.1}" y2="{4}" stroke="{5}"/></g>"##,
                    if api == "Heartbeat" {
                        "heartbeat"
                    } else {
                        "find-coordinator"
                    },
                    e.at_ms,
                    x(e.at_ms),
                    y + 20.0,
                    y + 27.0,
                    if api == "Heartbeat" { "#999" } else { "#808" }
                );
            }
            Event::Leave { reason } => {
                let _ = writeln!(
                    svg,
                    r##"<g class="leave"><title>leave at {0}ms: {1}</title><text x="{2:.1}" y="{3}" fill="#a00">⏏</text></g>"##,
                    e.at_ms,
                    esc(reason),
                    x(e.at_ms),
                    y + 28.0
                );
            }
            _ => {}
        }
    }
    // Faults and the heal, across every lane.
    for e in history.entries() {
        let (class, text, color) = match &e.event {
            Event::Fault { kind } => ("fault", kind.clone(), "#a0a"),
            Event::Healed => ("healed", "healed".to_owned(), "#0a0"),
            _ => continue,
        };
        let _ = writeln!(
            svg,
            r##"<g class="{class}"><title>{0}ms {1}</title><line x1="{2:.1}" y1="{3}" x2="{2:.1}" y2="{4}" stroke="{color}" stroke-dasharray="4 3"/><text x="{5:.1}" y="{6}" fill="{color}">{7}</text></g>"##,
            e.at_ms,
            esc(&text),
            x(e.at_ms),
            TOP - 20.0,
            height - 20.0,
            x(e.at_ms) + 2.0,
            lane_y(0) + 4.0,
            esc(&text.chars().take(28).collect::<String>())
        );
    }
    // The first violation.
    if let Some((checker, v)) = first {
        let _ = writeln!(
            svg,
            r##"<g class="violation" data-checker="{0}"><title>{1}</title><line x1="{2:.1}" y1="{3}" x2="{2:.1}" y2="{4}" stroke="#d00" stroke-width="3"/><text x="{5:.1}" y="{6}" fill="#d00" font-weight="bold">✗ {0} {7:?}</text></g>"##,
            esc(checker),
            esc(&v.to_string()),
            x(v.at_ms),
            TOP - 20.0,
            height - 20.0,
            x(v.at_ms) + 4.0,
            height - 8.0,
            v.kind
        );
    }
    svg.push_str("</svg>\n");
    let verdict = match first {
        None => "PASS".to_owned(),
        Some((checker, v)) => format!("FAIL — first violation [{checker}]: {v}"),
    };
    format!(
        r##"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:16px}} .verdict{{font-family:monospace;white-space:pre-wrap}} .fail{{color:#b00}}</style>
</head><body>
<h1>{title}</h1>
<p class="verdict {cls}">{verdict}</p>
<p>Lanes: faults, then one per member. Blue bars: owned partitions. Orange/green/red boxes: revoked/assigned/lost callbacks. Dots: commits (green ok, red failed). Gray ticks: heartbeats; purple ticks: FindCoordinator. Dashed lines: faults and the heal. Red line: the first violated invariant. Hover for details.</p>
{svg}<p id="rendered"></p>
<script>
const n = s => document.querySelectorAll(s).length;
document.getElementById("rendered").setAttribute("data-rendered",
  "lanes=" + (n("g.lane") - 1) + " owned=" + n("g.owned") + " callbacks=" + n("g.callback") +
  " commits=" + n("g.commit") + " heartbeats=" + n("g.heartbeat") + " faults=" + n("g.fault") +
  " violations=" + n("g.violation"));
</script>
</body></html>
"##,
        title = esc(title),
        cls = if first.is_some() { "fail" } else { "" },
        verdict = esc(&verdict),
    )
}
