//! Replays every saved regression in simulation mode and checks its plan and verdict.
//!
//! Each file replays in a child process of this test binary: a simulation is exactly
//! reproducible only as the first run of its process (unbiased `tokio::select!` draws from an
//! RNG tokio seeds with a process-global counter), and a saved seed must replay exactly.
#![cfg(madsim)]

use regressions::{saved, Regression};
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;

/// Set in the child process: the file to replay.
const FILE_ENV: &str = "REGRESSIONS_REPLAY_FILE";

fn replay(name: &str, text: &str) {
    let r = Regression::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let info = scenarios::find(&r.scenario)
        .unwrap_or_else(|| panic!("{name}: no scenario `{}`", r.scenario));
    let subject: SubjectKind = r.subject.parse().unwrap();
    let result =
        run_in_runtime(info.build, r.seed, subject).unwrap_or_else(|e| panic!("{name}: {e}"));
    let plan: Vec<String> = result
        .plan
        .iter()
        .map(|(at_ms, fault)| format!("{at_ms} {fault:?}"))
        .collect();
    assert_eq!(plan, r.plan, "{name}: the scenario now draws another plan");
    assert!(
        r.reproduced_by(&result.report),
        "{name}: expected {}\n{}",
        r.expect,
        result.report
    );
}

#[test]
fn every_saved_regression_reproduces_its_verdict() {
    let files = saved().unwrap();
    if let Ok(wanted) = std::env::var(FILE_ENV) {
        let (name, text) = files.iter().find(|(n, _)| *n == wanted).unwrap();
        replay(name, text);
        return;
    }
    assert!(!files.is_empty(), "no saved regressions");
    let exe = std::env::current_exe().unwrap();
    for (name, _) in &files {
        let status = std::process::Command::new(&exe)
            .args(["--exact", "every_saved_regression_reproduces_its_verdict"])
            .env(FILE_ENV, name)
            .status()
            .unwrap();
        assert!(status.success(), "{name} did not reproduce (output above)");
    }
}
