//! Replays every saved regression in simulation mode and checks its verdict.
#![cfg(madsim)]

use regressions::{saved, Expectation, Regression};
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;

#[test]
fn every_saved_regression_reproduces_its_verdict() {
    let files = saved().unwrap();
    assert!(!files.is_empty(), "no saved regressions");
    for (name, text) in files {
        let r = Regression::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
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
        match &r.expect {
            Expectation::Passes => assert!(result.report.is_ok(), "{name}:\n{}", result.report),
            Expectation::Fails { checker, kind } => {
                let found = result.report.verdicts.iter().any(|v| {
                    v.checker == checker.as_str()
                        && v.violations
                            .iter()
                            .any(|x| format!("{:?}", x.kind) == *kind)
                });
                assert!(found, "{name}: expected {}\n{}", r.expect, result.report);
            }
        }
    }
}
