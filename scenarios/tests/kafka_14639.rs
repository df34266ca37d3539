//! KAFKA-14639 on the legacy model following 3.4.0, in simulation mode: c1 never hears its
//! JoinGroup answer, rejoins the next generation claiming its partitions with an older
//! generation, and 3.4.0's leader gives one of them to c2 while c1 still owns it.
#![cfg(madsim)]

use scenarios::jira::kafka_14639;
use scenarios::legacy::LegacyVersion;
use scenarios::runner::{assert_legacy_fails, run_in_runtime, RunResult};
use scenarios::scenario::Scenario;
use scenarios::subject::SubjectKind;
use sim::check::ViolationKind;
use sim::history::{Event, Tp};

/// The generation each JoinGroup of `subject` carried, in order.
fn join_generations(result: &RunResult, subject: &str) -> Vec<(u64, i32)> {
    result
        .history
        .entries()
        .iter()
        .filter(|e| e.subject == subject)
        .filter_map(|e| match &e.event {
            Event::Request {
                api,
                generation: Some(g),
                ..
            } if api == "JoinGroup" => Some((e.at_ms, *g)),
            _ => None,
        })
        .collect()
}

/// The partitions `subject` was assigned in `generation` (its `Assignment` events).
fn assigned_in(result: &RunResult, subject: &str, generation: i32) -> Vec<Tp> {
    result
        .history
        .entries()
        .iter()
        .filter(|e| e.subject == subject)
        .flat_map(|e| match &e.event {
            Event::Assignment {
                generation: g,
                assigned,
                ..
            } if *g == generation => assigned.clone(),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn legacy_3_4_0_hands_a_partition_of_the_member_a_generation_behind_to_another() {
    let result = assert_legacy_fails(
        kafka_14639::scenario,
        0,
        "exclusive-ownership",
        ViolationKind::DoubleOwnership,
    );
    let healed_ms = result.history.healed_at_ms().expect("the plan heals");
    // The mechanism: after the heal c1 rejoins with an older generation than c0 carried into
    // the same rebalance.
    let c1_rejoin = join_generations(&result, "c1")
        .into_iter()
        .find(|(at_ms, _)| *at_ms > healed_ms)
        .expect("c1 rejoins after the heal");
    let c0_joins = join_generations(&result, "c0");
    let c0_before = c0_joins
        .iter()
        .rev()
        .find(|(at_ms, _)| *at_ms <= c1_rejoin.0)
        .expect("c0 joined before c1 came back");
    assert!(
        c1_rejoin.1 < c0_before.1,
        "c1 rejoined with generation {} while c0 had {}",
        c1_rejoin.1,
        c0_before.1
    );
    // In the generation that follows, c2 is given a partition c1 owned, and c1 revokes it in
    // that same generation: revoked and assigned in one round.
    let next = c0_before.1 + 1;
    let c2_got = assigned_in(&result, "c2", next);
    let c1_revoked: Vec<Tp> = result
        .history
        .entries()
        .iter()
        .filter(|e| e.subject == "c1")
        .flat_map(|e| match &e.event {
            Event::Assignment {
                generation,
                revoked,
                ..
            } if *generation == next => revoked.clone(),
            _ => Vec::new(),
        })
        .collect();
    assert!(
        c2_got.iter().any(|tp| c1_revoked.contains(tp)),
        "c2 got {c2_got:?}, c1 revoked {c1_revoked:?} in generation {next}"
    );
}

/// The same scenario on 3.4.1 (KAFKA-14639's fix: every claim counts, the highest generation
/// among the claimants wins).
fn on_3_4_1() -> Scenario {
    Scenario {
        legacy_version: LegacyVersion::V3_4_1,
        ..kafka_14639::scenario()
    }
}

#[test]
fn legacy_3_4_1_keeps_the_claims_of_the_member_a_generation_behind() {
    let result = run_in_runtime(on_3_4_1, 0, SubjectKind::Legacy).unwrap();
    assert!(result.report.is_ok(), "{}", result.report);
    let healed_ms = result.history.healed_at_ms().expect("the plan heals");
    let c1_rejoin = join_generations(&result, "c1")
        .into_iter()
        .find(|(at_ms, _)| *at_ms > healed_ms)
        .expect("c1 rejoins after the heal");
    let c0_latest = join_generations(&result, "c0")
        .into_iter()
        .rev()
        .find(|(at_ms, _)| *at_ms <= c1_rejoin.0)
        .expect("c0 joined before c1 came back");
    assert!(c1_rejoin.1 < c0_latest.1, "the same interleaving");
}

#[test]
fn our_consumer_keeps_each_partition_with_one_owner_on_the_same_seeds() {
    for seed in 0..=2 {
        let result = run_in_runtime(kafka_14639::scenario, seed, SubjectKind::Consumer).unwrap();
        assert!(result.report.is_ok(), "seed {seed}:\n{}", result.report);
        // c0 rejoins right after revoking, in the pass that also sends the commit its
        // application made just before. The coordinator parks the JoinGroup until c1 is back
        // (over 5 s, the request timeout): a commit sent behind it would time out and close
        // the connection, JoinGroup and all. Every JoinGroup of c0 is answered.
        let entries = result.history.entries();
        for join in entries.iter().filter(|e| e.subject == "c0") {
            let Event::Request {
                api, correlation, ..
            } = &join.event
            else {
                continue;
            };
            if api != "JoinGroup" {
                continue;
            }
            assert!(
                entries.iter().any(|e| e.subject == "c0"
                    && matches!(&e.event, Event::Response { api, correlation: c, .. }
                        if api == "JoinGroup" && c == correlation)),
                "seed {seed}: c0's JoinGroup#{correlation} at {}ms was never answered",
                join.at_ms
            );
        }
    }
}
