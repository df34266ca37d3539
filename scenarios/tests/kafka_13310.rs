//! KAFKA-13310 on the legacy model, in simulation mode: `poll(100ms)` blocks in
//! `onJoinPrepare`'s synchronous auto-commit loop for the rebalance timeout.
#![cfg(madsim)]

use scenarios::jira::kafka_13310;
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;
use sim::check::ViolationKind;
use sim::history::{CallbackKind, Event};

#[test]
fn legacy_poll_blocks_in_the_pre_rebalance_commit_loop() {
    let result = run_in_runtime(kafka_13310::scenario, 1, SubjectKind::Legacy).unwrap();
    let overshoot = result
        .report
        .verdicts
        .iter()
        .find(|v| v.checker == "blocking-bounds")
        .and_then(|v| {
            v.violations
                .iter()
                .find(|x| x.kind == ViolationKind::PollOvershoot)
        })
        .unwrap_or_else(|| panic!("no PollOvershoot\n{}", result.report));
    assert_eq!(overshoot.subject.as_deref(), Some("c0"));
    // The mechanism: between c0's rejoin request and its revocation, only OffsetCommit
    // requests (retried after each UNKNOWN_TOPIC_OR_PARTITION), no JoinGroup, for ~15 s.
    let entries = result.history.entries();
    let c0 = |e: &&sim::history::Entry| e.subject == "c0";
    let rejoin_ms = entries
        .iter()
        .filter(c0)
        .find(|e| matches!(&e.event, Event::Note { text } if text.contains("already rebalancing")))
        .map(|e| e.at_ms)
        .expect("c0 was asked to rejoin");
    let revoked_ms = entries
        .iter()
        .filter(c0)
        .find(|e| {
            e.at_ms > rejoin_ms
                && matches!(
                    &e.event,
                    Event::CallbackStart {
                        kind: CallbackKind::Revoked,
                        ..
                    }
                )
        })
        .map(|e| e.at_ms)
        .expect("c0 revoked eventually");
    assert!(
        revoked_ms - rejoin_ms >= 14_000,
        "onJoinPrepare took {}ms",
        revoked_ms - rejoin_ms
    );
    let retries = entries
        .iter()
        .filter(c0)
        .filter(|e| e.at_ms > rejoin_ms && e.at_ms < revoked_ms)
        .filter(|e| {
            matches!(&e.event, Event::Response { api, error: Some(err), .. }
                if api == "OffsetCommit" && err == "UNKNOWN_TOPIC_OR_PARTITION")
        })
        .count();
    assert!(retries > 50, "{retries} retried commits");
}

/// Set by [`same_seed_same_history_with_the_heartbeat_thread`] in its child processes.
const DUMP_ENV: &str = "SCENARIOS_13310_DETERMINISM_DUMP";

/// Subscribe mode adds the heartbeat task racing the application task for the consumer's
/// lock: same seed, two fresh processes ⇒ byte-identical histories all the same.
#[test]
fn same_seed_same_history_with_the_heartbeat_thread() {
    if let Ok(path) = std::env::var(DUMP_ENV) {
        let result = run_in_runtime(kafka_13310::scenario, 3, SubjectKind::Legacy).unwrap();
        std::fs::write(path, result.history.render()).unwrap();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let renders: Vec<String> = (0..2)
        .map(|i| {
            let path = std::env::temp_dir().join(format!(
                "kafka-13310-determinism-{}-{i}",
                std::process::id()
            ));
            let status = std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "same_seed_same_history_with_the_heartbeat_thread",
                    "--test-threads",
                    "1",
                ])
                .env(DUMP_ENV, &path)
                .status()
                .unwrap();
            assert!(status.success());
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::remove_file(&path).unwrap();
            text
        })
        .collect();
    let heartbeats = renders[0].matches("-> Heartbeat#").count();
    assert!(heartbeats > 20, "the heartbeat thread ran: {heartbeats}");
    assert!(renders[0] == renders[1], "same seed, different histories");
}
