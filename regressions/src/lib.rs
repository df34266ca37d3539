//! Regressions: every failing seed found by `cargo sim explore` is saved here as data (scenario,
//! seed, fault plan, config, subject, expected verdict, commit) and replayed by the test suite.
//! The format and the replayer arrive with the scenario-library issue.
