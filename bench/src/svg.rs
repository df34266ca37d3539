//! The charts: one panel per workload, one bar per client (median records/s, a whisker from the
//! slowest to the fastest repetition; for the rebalance workload the longest pause in ms, for
//! the latency workload the p99, for the slow-app workload the peak RSS, for the partitions
//! workload the CPU per record), each panel on its own
//! scale; and the slow-app workload's RSS over time. Plain SVG, no dependencies.

use std::fmt::Write as _;

use crate::report::{Cell, Outcome, Results, RssSeries, Spread};
use crate::CLIENTS;

const COLUMNS: usize = 3;
const PANEL_W: f64 = 330.0;
const LABEL_W: f64 = 100.0;
const BAR_H: f64 = 14.0;
const BAR_GAP: f64 = 4.0;
const TITLE_H: f64 = 22.0;
/// One per client of [`CLIENTS`], in its order (the members workload's in-process rows in
/// lighter shades of their processes rows' colours: ours' reds and pinks, Java's browns).
const COLORS: [&str; 15] = [
    "#d62728", "#e377c2", "#1f77b4", "#ff7f0e", "#2ca02c", "#98df8a", "#9467bd", "#8c564b",
    "#7f7f7f", "#ff9896", "#fcbba1", "#f7b6d2", "#fde0ef", "#c49c94", "#e7cbc4",
];

/// The peer matrix chart's title.
pub const PEERS_TITLE: &str = "Median records/s per client (whisker: min–max; each panel its own scale); rebalance: longest pause, ms";
/// The second-round chart's title.
pub const WORKLOADS_TITLE: &str = "Latency: p99 ms (lower is better); slow-app: peak RSS MiB (lower is better); ceiling: median records/s (whisker: min–max)";

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else {
        format!("{:.0}k", v / 1e3)
    }
}

/// Which figure of a cell a panel draws.
type Value = fn(&Cell) -> Spread;
/// How a panel writes a value.
type Label = fn(f64) -> String;

/// What a panel draws for a cell, and how its value is written: records/s, or for the
/// rebalance workload the longest pause.
fn figure(workload: &str) -> (Value, Label) {
    if workload.ends_with("/rebalance") || workload.starts_with("members-") {
        (|c| c.gap_ms, |v| format!("{v:.0} ms"))
    } else if workload.contains("/latency-") {
        (|c| c.latency_ms[1], |v| format!("{v:.1} ms"))
    } else if workload.contains("/partitions-") {
        (|c| c.cpu_per_m, |v| format!("{v:.2} µs"))
    } else if workload.ends_with("/slow-app") {
        (|c| c.rss_mib, |v| format!("{v:.0} MiB"))
    } else {
        (|c| c.rate, short)
    }
}

/// Draws only the clients that took part in some workload of `results`.
/// The scale chart's title.
pub const SCALE_TITLE: &str =
    "Partitions: CPU µs per record (whisker: min–max; lower is better; flat across the partition counts is the goal)";

pub fn chart(results: &Results, title: &str) -> String {
    let clients_shown: Vec<_> = CLIENTS
        .iter()
        .filter(|c| {
            results
                .iter()
                .any(|(_, cs)| cs.iter().any(|(n, _)| n == c.name))
        })
        .collect();
    let panel_h = TITLE_H + clients_shown.len() as f64 * (BAR_H + BAR_GAP) + 10.0;
    let rows = results.len().div_ceil(COLUMNS);
    let width = PANEL_W * COLUMNS as f64 + 20.0;
    let height = 40.0 + panel_h * rows as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="22" font-size="14" font-weight="bold">{}</text>"#,
        escape(title)
    );
    for (i, (workload, clients)) in results.iter().enumerate() {
        let x0 = 10.0 + (i % COLUMNS) as f64 * PANEL_W;
        let y0 = 40.0 + (i / COLUMNS) as f64 * panel_h;
        let (value, label) = figure(workload);
        let max = clients
            .iter()
            .filter_map(|(_, o)| match o {
                Outcome::Measured(c) => Some(value(c).max),
                Outcome::Failed(_) => None,
            })
            .fold(0.0, f64::max)
            .max(1.0);
        let bar_w = PANEL_W - LABEL_W - 60.0;
        let _ = writeln!(
            s,
            r#"<text x="{x0}" y="{}" font-weight="bold">{}</text>"#,
            y0 + 14.0,
            escape(workload)
        );
        for (j, client) in clients_shown.iter().enumerate() {
            let y = y0 + TITLE_H + j as f64 * (BAR_H + BAR_GAP);
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
                x0 + LABEL_W - 4.0,
                y + BAR_H - 3.0,
                client.name
            );
            let outcome = clients
                .iter()
                .find(|(c, _)| c == client.name)
                .map(|(_, o)| o);
            match outcome {
                Some(Outcome::Measured(c)) => {
                    let v = value(c);
                    let w = v.median / max * bar_w;
                    let (lo, hi) = (
                        x0 + LABEL_W + v.min / max * bar_w,
                        x0 + LABEL_W + v.max / max * bar_w,
                    );
                    let mid = y + BAR_H / 2.0;
                    let _ = writeln!(
                        s,
                        r#"<rect x="{}" y="{y}" width="{w:.1}" height="{BAR_H}" fill="{}"/><line x1="{lo:.1}" y1="{mid}" x2="{hi:.1}" y2="{mid}" stroke="black"/><line x1="{lo:.1}" y1="{}" x2="{lo:.1}" y2="{}" stroke="black"/><line x1="{hi:.1}" y1="{}" x2="{hi:.1}" y2="{}" stroke="black"/><text x="{:.1}" y="{}">{}</text>"#,
                        x0 + LABEL_W,
                        color(client.name),
                        y + 3.0,
                        y + BAR_H - 3.0,
                        y + 3.0,
                        y + BAR_H - 3.0,
                        hi + 4.0,
                        y + BAR_H - 3.0,
                        label(v.median)
                    );
                }
                Some(Outcome::Failed(_)) => {
                    let _ = writeln!(
                        s,
                        r##"<text x="{}" y="{}" fill="#888">not measured</text>"##,
                        x0 + LABEL_W,
                        y + BAR_H - 3.0
                    );
                }
                None => {}
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

/// A client's colour, the same in every chart.
fn color(name: &str) -> &'static str {
    let i = CLIENTS.iter().position(|c| c.name == name).unwrap_or(0);
    COLORS[i % COLORS.len()]
}

/// The slow-app workload's RSS over time: one line per client and repetition (MiB against
/// seconds since the client started), a legend of the clients.
pub fn rss_chart(series: &RssSeries) -> String {
    const W: f64 = 900.0;
    const H: f64 = 420.0;
    const LEFT: f64 = 60.0;
    const TOP: f64 = 40.0;
    const PLOT_W: f64 = 640.0;
    const PLOT_H: f64 = 330.0;
    let max_s = series
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(|(ms, _)| *ms as f64 / 1e3))
        .fold(1.0, f64::max);
    let max_mib = series
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(|(_, kb)| *kb as f64 / 1024.0))
        .fold(1.0, f64::max)
        * 1.05;
    let x = |s: f64| LEFT + s / max_s * PLOT_W;
    let y = |mib: f64| TOP + PLOT_H - mib / max_mib * PLOT_H;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="22" font-size="14" font-weight="bold">Slow application: RSS (MiB) over time (s), one line per client and repetition</text>"#
    );
    let _ = writeln!(
        s,
        r#"<line x1="{LEFT}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{}" stroke="black"/>"#,
        TOP + PLOT_H,
        LEFT + PLOT_W,
        TOP + PLOT_H,
        TOP + PLOT_H
    );
    for i in 0..=4 {
        let (sec, mib) = (max_s * i as f64 / 4.0, max_mib * i as f64 / 4.0);
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{sec:.0}</text><text x="{}" y="{:.1}" text-anchor="end">{mib:.0}</text>"#,
            x(sec),
            TOP + PLOT_H + 14.0,
            LEFT - 4.0,
            y(mib) + 4.0
        );
    }
    for (client, _, points) in series {
        let path: Vec<String> = points
            .iter()
            .map(|(ms, kb)| format!("{:.1},{:.1}", x(*ms as f64 / 1e3), y(*kb as f64 / 1024.0)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>"#,
            color(client),
            path.join(" ")
        );
    }
    let mut legend: Vec<&str> = Vec::new();
    for (client, _, _) in series {
        if !legend.contains(&client.as_str()) {
            legend.push(client);
        }
    }
    for (i, client) in legend.iter().enumerate() {
        let ly = TOP + 10.0 + i as f64 * 16.0;
        let _ = writeln!(
            s,
            r#"<rect x="{}" y="{}" width="12" height="4" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            LEFT + PLOT_W + 20.0,
            ly - 4.0,
            color(client),
            LEFT + PLOT_W + 38.0,
            ly,
            escape(client)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rss_chart_draws_a_line_per_run_and_a_legend_per_client() {
        let series = vec![
            ("ours".to_owned(), 0, vec![(500, 10_240), (1_000, 20_480)]),
            ("ours".to_owned(), 1, vec![(500, 10_240)]),
            ("rdkafka".to_owned(), 0, vec![(500, 30_720)]),
        ];
        let svg = rss_chart(&series);
        assert_eq!(svg.matches("<polyline").count(), 3);
        assert_eq!(svg.matches(">ours</text>").count(), 1);
        assert!(svg.contains(">rdkafka</text>"));
        assert!(svg.ends_with("</svg>\n"));
    }
}
