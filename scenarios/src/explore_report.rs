//! Machine-readable results of `cargo sim explore`: one JSON object per seed (JSON lines, so
//! shards run on separate machines concatenate), JUnit XML for CI systems, and the summary the
//! CLI prints — the same for one run and for the merge of many shards' JSON lines
//! (`cargo sim merge`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

/// What one seed came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// A violation no saved regression records.
    Fail,
    /// Violations a saved regression of this seed records (a known bug).
    Known,
}

impl Verdict {
    fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Known => "known",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "pass" => Verdict::Pass,
            "fail" => Verdict::Fail,
            "known" => Verdict::Known,
            _ => return None,
        })
    }
}

/// One explored seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedResult {
    pub scenario: String,
    /// `consumer` or `legacy`.
    pub subject: String,
    pub seed: u64,
    pub verdict: Verdict,
    /// The first violation (checker and explanation), for a failing seed.
    pub first_violation: Option<String>,
    /// The command that runs this seed again.
    pub repro: String,
}

impl SeedResult {
    /// One JSON object on one line.
    pub fn to_json_line(&self) -> String {
        json!({
            "scenario": self.scenario,
            "subject": self.subject,
            "seed": self.seed,
            "verdict": self.verdict.name(),
            "first_violation": self.first_violation,
            "repro": self.repro,
        })
        .to_string()
    }

    /// Reads back what [`Self::to_json_line`] wrote.
    pub fn from_json_line(line: &str) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("not a JSON object: {e}"))?;
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("no string `{key}`"))
        };
        let verdict = text("verdict")?;
        Ok(Self {
            scenario: text("scenario")?,
            subject: text("subject")?,
            seed: value
                .get("seed")
                .and_then(Value::as_u64)
                .ok_or("no number `seed`")?,
            verdict: Verdict::parse(&verdict).ok_or(format!("unknown verdict `{verdict}`"))?,
            first_violation: value
                .get("first_violation")
                .and_then(Value::as_str)
                .map(str::to_owned),
            repro: text("repro")?,
        })
    }
}

/// Reads JSON lines (blank lines skipped); a seed listed twice (an overlapping shard, a
/// re-run) keeps its last result.
pub fn read_json_lines(
    text: &str,
    into: &mut BTreeMap<(String, String, u64), SeedResult>,
) -> Result<(), String> {
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let result =
            SeedResult::from_json_line(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        into.insert(
            (result.scenario.clone(), result.subject.clone(), result.seed),
            result,
        );
    }
    Ok(())
}

/// One scenario's row of the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub scenario: String,
    pub subject: String,
    pub seeds: u64,
    pub failures: u64,
    pub known: u64,
}

/// Rows per (scenario, subject), in first-seen order.
pub fn summarize(results: &[SeedResult]) -> Vec<Summary> {
    let mut rows: Vec<Summary> = Vec::new();
    for r in results {
        let at = match rows
            .iter()
            .position(|s| s.scenario == r.scenario && s.subject == r.subject)
        {
            Some(at) => at,
            None => {
                rows.push(Summary {
                    scenario: r.scenario.clone(),
                    subject: r.subject.clone(),
                    seeds: 0,
                    failures: 0,
                    known: 0,
                });
                rows.len() - 1
            }
        };
        let row = &mut rows[at];
        row.seeds += 1;
        match r.verdict {
            Verdict::Pass => {}
            Verdict::Fail => row.failures += 1,
            Verdict::Known => row.known += 1,
        }
    }
    rows
}

/// A JUnit XML report: a test suite per scenario and subject, a test case per seed; a new
/// failure is a `<failure>` (message: the first violation, text: the repro line), a known one
/// is `<skipped>` with the same message, so CI shows it without failing on it.
pub fn junit(results: &[SeedResult]) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    for row in summarize(results) {
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">",
            escape(&format!("{} ({})", row.scenario, row.subject)),
            row.seeds,
            row.failures,
            row.known
        );
        for r in results
            .iter()
            .filter(|r| r.scenario == row.scenario && r.subject == row.subject)
        {
            let name = escape(&format!("seed {}", r.seed));
            let classname = escape(&r.scenario);
            let message = escape(r.first_violation.as_deref().unwrap_or(""));
            match r.verdict {
                Verdict::Pass => {
                    let _ = writeln!(
                        out,
                        "    <testcase classname=\"{classname}\" name=\"{name}\"/>"
                    );
                }
                Verdict::Fail => {
                    let _ = writeln!(
                        out,
                        "    <testcase classname=\"{classname}\" name=\"{name}\">\n      <failure message=\"{message}\">{}</failure>\n    </testcase>",
                        escape(&r.repro)
                    );
                }
                Verdict::Known => {
                    let _ = writeln!(
                        out,
                        "    <testcase classname=\"{classname}\" name=\"{name}\">\n      <skipped message=\"known (saved regression): {message}\"/>\n    </testcase>"
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// XML text and attribute escaping.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {
                let _ = write!(out, "&#x{:x};", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(seed: u64, verdict: Verdict) -> SeedResult {
        SeedResult {
            scenario: "family-x".into(),
            subject: "consumer".into(),
            seed,
            verdict,
            first_violation: (verdict != Verdict::Pass)
                .then(|| "[lost-writes] t-0@3 \"v\" <never> & gone".to_owned()),
            repro: format!("cargo sim run family-x --seed {seed} --subject consumer"),
        }
    }

    #[test]
    fn json_lines_read_back_and_shards_merge() {
        let a = [result(0, Verdict::Pass), result(1, Verdict::Fail)];
        let b = [result(2, Verdict::Known), result(1, Verdict::Pass)];
        for r in a.iter().chain(&b) {
            assert_eq!(SeedResult::from_json_line(&r.to_json_line()).unwrap(), *r);
        }
        let lines = |rs: &[SeedResult]| {
            rs.iter()
                .map(SeedResult::to_json_line)
                .collect::<Vec<_>>()
                .join("\n")
        };
        let mut merged = BTreeMap::new();
        read_json_lines(&lines(&a), &mut merged).unwrap();
        read_json_lines(&format!("\n{}\n", lines(&b)), &mut merged).unwrap();
        let all: Vec<SeedResult> = merged.into_values().collect();
        assert_eq!(
            summarize(&all),
            [Summary {
                scenario: "family-x".into(),
                subject: "consumer".into(),
                seeds: 3,
                failures: 0,
                known: 1,
            }],
            "seed 1's re-run replaced its failure"
        );
        assert!(read_json_lines("{\"seed\": 1}", &mut BTreeMap::new()).is_err());
        assert!(read_json_lines("not json", &mut BTreeMap::new()).is_err());
    }

    #[test]
    fn junit_marks_new_failures_and_skips_known_ones() {
        let xml = junit(&[
            result(0, Verdict::Pass),
            result(1, Verdict::Fail),
            result(2, Verdict::Known),
        ]);
        assert!(xml.contains(
            "<testsuite name=\"family-x (consumer)\" tests=\"3\" failures=\"1\" skipped=\"1\">"
        ));
        assert!(xml.contains("<testcase classname=\"family-x\" name=\"seed 0\"/>"));
        assert!(xml.contains(
            "<failure message=\"[lost-writes] t-0@3 &quot;v&quot; &lt;never&gt; &amp; gone\">cargo sim run family-x --seed 1 --subject consumer</failure>"
        ));
        assert!(xml.contains("<skipped message=\"known (saved regression): [lost-writes]"));
        assert_eq!(xml.matches("<testcase").count(), 3);
    }
}
