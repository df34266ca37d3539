//! The chart: one panel per workload, one bar per client (median records/s, a whisker from the
//! slowest to the fastest repetition; for the rebalance workload the longest pause in ms), each
//! panel on its own scale. Plain SVG, no dependencies.

use std::fmt::Write as _;

use crate::report::{Cell, Outcome, Results, Spread};
use crate::CLIENTS;

const COLUMNS: usize = 3;
const PANEL_W: f64 = 330.0;
const LABEL_W: f64 = 100.0;
const BAR_H: f64 = 14.0;
const BAR_GAP: f64 = 4.0;
const TITLE_H: f64 = 22.0;
const COLORS: [&str; 8] = [
    "#d62728", "#e377c2", "#1f77b4", "#ff7f0e", "#2ca02c", "#98df8a", "#9467bd", "#8c564b",
];

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
    if workload.ends_with("/rebalance") {
        (|c| c.gap_ms, |v| format!("{v:.0} ms"))
    } else {
        (|c| c.rate, short)
    }
}

pub fn chart(results: &Results) -> String {
    let panel_h = TITLE_H + CLIENTS.len() as f64 * (BAR_H + BAR_GAP) + 10.0;
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
        r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="22" font-size="14" font-weight="bold">Median records/s per client (whisker: min–max; each panel its own scale); rebalance: longest pause, ms</text>"#
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
        for (j, client) in CLIENTS.iter().enumerate() {
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
                        COLORS[j % COLORS.len()],
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
