//! The regression file format: a failing seed saved as data, replayed by the test suite
//! (`cargo stest -p regressions`) and by `cargo sim replay`.
//!
//! One `*.regression` file per seed under `saved/`, `key = value` lines (`#` comments):
//!
//! ```text
//! scenario = kafka-13563
//! seed = 1
//! subject = legacy
//! expect = fails coordinator-rediscovery NotCommitted
//! commit = 0123abc
//! plan = 0 MoveCoordinator { offsets_partition: 0, to: Some(2) }
//! ```
//!
//! `expect` is `passes` or `fails <checker> <ViolationKind>`; `plan` lines (repeated, in
//! order) are the fault plan the scenario drew for the seed, rendered `<ms> <fault:?>`, so a
//! change to the scenario's plan shows up as a mismatch instead of a silently different run.
//! `commit` records where the seed was found.

use std::fmt;

/// What the replay must conclude.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expectation {
    /// Every checker passes.
    Passes,
    /// This checker reports a violation of this kind (`sim::check::ViolationKind`'s name).
    Fails { checker: String, kind: String },
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expectation::Passes => f.write_str("passes"),
            Expectation::Fails { checker, kind } => write!(f, "fails {checker} {kind}"),
        }
    }
}

/// One saved seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regression {
    pub scenario: String,
    pub seed: u64,
    /// `legacy` or `consumer`.
    pub subject: String,
    pub expect: Expectation,
    pub commit: String,
    /// `<ms> <fault:?>` per fault, in plan order.
    pub plan: Vec<String>,
}

/// A malformed regression file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

fn parse_expectation(value: &str) -> Option<Expectation> {
    let words: Vec<&str> = value.split_whitespace().collect();
    match words.as_slice() {
        ["passes"] => Some(Expectation::Passes),
        ["fails", checker, kind] => Some(Expectation::Fails {
            checker: (*checker).to_owned(),
            kind: (*kind).to_owned(),
        }),
        _ => None,
    }
}

impl Regression {
    /// Parses a regression file.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let (mut scenario, mut seed, mut subject, mut expect, mut commit) =
            (None, None, None, None, None);
        let mut plan = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |message: String| ParseError {
                line: i + 1,
                message,
            };
            let (key, value) = line
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| err(format!("expected `key = value`, got `{line}`")))?;
            match key {
                "scenario" => scenario = Some(value.to_owned()),
                "seed" => {
                    seed = Some(
                        value
                            .parse()
                            .map_err(|_| err(format!("invalid seed `{value}`")))?,
                    )
                }
                "subject" => subject = Some(value.to_owned()),
                "expect" => {
                    expect = Some(
                        parse_expectation(value)
                            .ok_or_else(|| err(format!("invalid expect `{value}`")))?,
                    )
                }
                "commit" => commit = Some(value.to_owned()),
                "plan" => plan.push(value.to_owned()),
                other => return Err(err(format!("unknown key `{other}`"))),
            }
        }
        let missing = |key: &str| ParseError {
            line: 0,
            message: format!("missing `{key}`"),
        };
        Ok(Self {
            scenario: scenario.ok_or_else(|| missing("scenario"))?,
            seed: seed.ok_or_else(|| missing("seed"))?,
            subject: subject.ok_or_else(|| missing("subject"))?,
            expect: expect.ok_or_else(|| missing("expect"))?,
            commit: commit.ok_or_else(|| missing("commit"))?,
            plan,
        })
    }
}

impl fmt::Display for Regression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "scenario = {}", self.scenario)?;
        writeln!(f, "seed = {}", self.seed)?;
        writeln!(f, "subject = {}", self.subject)?;
        writeln!(f, "expect = {}", self.expect)?;
        writeln!(f, "commit = {}", self.commit)?;
        for p in &self.plan {
            writeln!(f, "plan = {p}")?;
        }
        Ok(())
    }
}

/// The directory the saved regressions live in (`regressions/saved/` of the workspace).
pub fn saved_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("regressions")
        .join("saved")
}

/// A known failure's key: the scenario and the seed its regression saved.
pub type KnownSeed = (String, u64);

/// (scenario, seed) → the checkers our consumer is known to fail there: its saved regressions
/// with `subject = consumer` that expect a failure. The test suite and `cargo sim explore`
/// excuse exactly these checkers on exactly that seed — a known bug stays visible in
/// `regressions/saved/`, every other invariant of the seed stays guarded, and the same
/// checker failing on any other seed is a new failure. An unreadable regression file is an
/// error.
pub fn known_consumer_failures(
) -> Result<std::collections::BTreeMap<KnownSeed, std::collections::BTreeSet<String>>, String> {
    let mut saved = Vec::new();
    let Ok(dir) = std::fs::read_dir(saved_dir()) else {
        return Ok(known_failures_of(saved));
    };
    for entry in dir.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "regression") {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        saved.push(Regression::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?);
    }
    Ok(known_failures_of(saved))
}

/// [`known_consumer_failures`] of these regressions.
pub fn known_failures_of(
    saved: impl IntoIterator<Item = Regression>,
) -> std::collections::BTreeMap<KnownSeed, std::collections::BTreeSet<String>> {
    let mut known =
        std::collections::BTreeMap::<KnownSeed, std::collections::BTreeSet<String>>::new();
    for r in saved {
        if let (true, Expectation::Fails { checker, .. }) = (r.subject == "consumer", r.expect) {
            known
                .entry((r.scenario, r.seed))
                .or_default()
                .insert(checker);
        }
    }
    known
}

impl Regression {
    /// Whether `report` reaches this regression's expected verdict.
    pub fn reproduced_by(&self, report: &sim::check::Report) -> bool {
        match &self.expect {
            Expectation::Passes => report.is_ok(),
            Expectation::Fails { checker, kind } => report.verdicts.iter().any(|v| {
                v.checker == checker.as_str()
                    && v.violations
                        .iter()
                        .any(|x| format!("{:?}", x.kind) == *kind)
            }),
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# found by explore
scenario = kafka-13563
seed = 7
subject = legacy
expect = fails coordinator-rediscovery NotCommitted
commit = abc123
plan = 0 MoveCoordinator { offsets_partition: 0, to: Some(2) }
plan = 4000 RestartBroker { broker: 2 }
";

    #[test]
    fn parses_and_renders_back() {
        let r = Regression::parse(SAMPLE).unwrap();
        assert_eq!(r.seed, 7);
        assert_eq!(
            r.expect,
            Expectation::Fails {
                checker: "coordinator-rediscovery".into(),
                kind: "NotCommitted".into()
            }
        );
        assert_eq!(r.plan.len(), 2);
        assert_eq!(Regression::parse(&r.to_string()).unwrap(), r);
    }

    /// A known failure used to excuse its checker for the whole scenario on every seed.
    #[test]
    fn a_known_failure_is_scoped_to_its_seed() {
        let consumer = |seed, expect: &str| {
            Regression::parse(&format!(
                "scenario = s\nseed = {seed}\nsubject = consumer\nexpect = {expect}\ncommit = x\n"
            ))
            .unwrap()
        };
        let legacy = Regression {
            subject: "legacy".into(),
            ..consumer(3, "fails liveness NotCommitted")
        };
        let known = known_failures_of([
            consumer(7, "fails liveness NotCommitted"),
            consumer(8, "passes"),
            legacy,
        ]);
        assert_eq!(known.len(), 1, "{known:?}");
        let checkers = &known[&("s".to_owned(), 7)];
        assert!(checkers.contains("liveness"));
        assert!(!known.contains_key(&("s".to_owned(), 8)));
        assert!(!known.contains_key(&("s".to_owned(), 3)));
    }

    #[test]
    fn rejects_unknown_keys_and_missing_fields() {
        let bad = Regression::parse("scenario = x\nwhat = y\n").unwrap_err();
        assert_eq!(bad.line, 2);
        let missing = Regression::parse("scenario = x\n").unwrap_err();
        assert!(missing.message.contains("seed"), "{missing}");
    }
}
