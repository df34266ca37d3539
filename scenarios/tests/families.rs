//! The scenario families (`scenarios/src/families/`) on our consumer, a few seeds each: every
//! checker passes, and the batch reached the state each family exists for (a coverage
//! assertion: at least one crash and restart, one coordinator disrupted mid-rebalance, one
//! member fenced, one zombie commit refused, ...). Seeds are picked from each family's draw so
//! the few that run cover the knobs that matter (both protocols, both sides of a timeout).
//! Many seeds: `cargo sim explore family-NAME --seeds 200 --subject consumer`.
#![cfg(madsim)]

use std::collections::BTreeSet;

use scenarios::families::{self, Protocol};
use scenarios::regression::known_consumer_failures;
use scenarios::runner::{run_in_runtime, RunResult};
use scenarios::scenario::Scenario;
use scenarios::subject::SubjectKind;
use sim::history::{Event, History};

/// The checkers our consumer is known to fail on `scenario`'s `seed` (its saved consumer
/// regression of that seed expecting a failure, as `tests/consumer_subject.rs` excuses them).
fn known_failures(scenario: &str, seed: u64) -> BTreeSet<String> {
    known_consumer_failures()
        .unwrap()
        .remove(&(scenario.to_owned(), seed))
        .unwrap_or_default()
}

/// Runs `seeds` of `scenario` on our consumer and fails with every failing seed's report
/// (a checker excused by a saved regression of this family aside).
fn run_all(scenario: fn() -> Scenario, seeds: &[u64]) -> Vec<RunResult> {
    let mut failures = Vec::new();
    let mut results = Vec::new();
    let name = scenario().name;
    for &seed in seeds {
        let excused = known_failures(name, seed);
        let result = run_in_runtime(scenario, seed, SubjectKind::Consumer)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let unexpected = result
            .report
            .verdicts
            .iter()
            .any(|v| !v.is_ok() && !excused.contains(v.checker));
        if unexpected {
            failures.push(format!("{}:\n{}", result.repro(), result.report));
        }
        results.push(result);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    results
}

/// The first `n` seeds from 1 on whose draw satisfies each predicate in turn.
fn seeds_where<T>(draw: fn(u64) -> T, wanted: &[&dyn Fn(&T) -> bool]) -> Vec<u64> {
    wanted
        .iter()
        .map(|want| {
            (1..1_000)
                .find(|seed| want(&draw(*seed)))
                .expect("no seed in 1..1000 fits")
        })
        .collect()
}

fn count(history: &History, subject: Option<&str>, wanted: impl Fn(&Event) -> bool) -> usize {
    history
        .entries()
        .iter()
        .filter(|e| subject.is_none_or(|s| e.subject == s) && wanted(&e.event))
        .count()
}

fn lost_somewhere(history: &History) -> bool {
    count(
        history,
        None,
        |e| matches!(e, Event::Assignment { lost, .. } if !lost.is_empty()),
    ) > 0
}

#[test]
fn rebalance_storm() {
    use families::rebalance_storm::{draw, scenario};
    let crash_restart = |protocol: Protocol| {
        move |s: &families::rebalance_storm::Storm| {
            s.group.protocol == protocol
                && s.members
                    .iter()
                    .any(|(_, f, _)| f.restart_after_ms.is_some())
                && s.members.iter().any(|(_, f, _)| f.leave_at_ms.is_some())
        }
    };
    let seeds = seeds_where(
        draw,
        &[
            &crash_restart(Protocol::Classic),
            &crash_restart(Protocol::Consumer),
        ],
    );
    for r in run_all(scenario, &seeds) {
        let h = &r.history;
        assert!(count(h, None, |e| matches!(e, Event::MemberCrash)) > 0);
        assert!(count(h, None, |e| matches!(e, Event::MemberRestart)) > 0);
        // Partitions moved after the crash: someone was assigned something after it.
        let crash_ms = h
            .entries()
            .iter()
            .find(|e| matches!(e.event, Event::MemberCrash))
            .map(|e| e.at_ms)
            .unwrap();
        assert!(h.entries().iter().any(|e| e.at_ms > crash_ms
            && matches!(&e.event, Event::Assignment { assigned, .. } if !assigned.is_empty())));
    }
}

#[test]
fn coordinator_failover() {
    use families::coordinator_failover::{draw, scenario, Disruption};
    let seeds = seeds_where(
        draw,
        &[
            &|f: &families::coordinator_failover::Failover| {
                f.group.protocol == Protocol::Classic
                    && f.disruptions
                        .iter()
                        .any(|(_, d)| matches!(d, Disruption::HoldThenMove { .. }))
            },
            &|f: &families::coordinator_failover::Failover| {
                f.group.protocol == Protocol::Consumer
                    && f.disruptions
                        .iter()
                        .any(|(_, d)| matches!(d, Disruption::KillRestart { .. }))
            },
        ],
    );
    let mut mid_rebalance = 0;
    for r in run_all(scenario, &seeds) {
        let h = &r.history;
        // A coordinator disrupted (moved or killed) with an assignment change within 3 s
        // around it: the disruption hit a rebalance in progress.
        for (at, kind) in h.faults() {
            if at == 0 || !(kind.starts_with("MoveCoordinator") || kind.starts_with("KillBroker")) {
                continue;
            }
            let near = h
                .entries()
                .iter()
                .filter(|e| {
                    e.at_ms + 1_000 >= at
                        && e.at_ms <= at + 3_000
                        && matches!(e.event, Event::Assignment { .. })
                })
                .count();
            mid_rebalance += usize::from(near > 0);
        }
    }
    assert!(mid_rebalance > 0, "no disruption hit a rebalance");
}

#[test]
fn network_partition() {
    use families::network_partition::{draw, scenario, Cut};
    let long = |cut: Cut, protocol: Protocol| {
        move |p: &families::network_partition::Partitions| {
            p.group.protocol == protocol
                && p.episodes
                    .iter()
                    .any(|(_, c, _, len)| *c == cut && *len > p.group.session_ms() + 2_000)
        }
    };
    let seeds = seeds_where(
        draw,
        &[
            &long(Cut::ToCoordinator, Protocol::Classic),
            &long(Cut::Isolated, Protocol::Consumer),
        ],
    );
    let results = run_all(scenario, &seeds);
    // A member cut off past its session was fenced and told so.
    assert!(results.iter().any(|r| lost_somewhere(&r.history)));
}

#[test]
fn rolling_restart() {
    use families::rolling_restart::{draw, scenario, Mode};
    let seeds = seeds_where(
        draw,
        &[&|r: &families::rolling_restart::Roll| {
            r.steps
                .iter()
                .any(|(_, m, _)| matches!(m, Mode::KillThenRestart { .. }))
                && r.steps
                    .iter()
                    .any(|(_, m, _)| matches!(m, Mode::Pause { .. }))
        }],
    );
    for r in run_all(scenario, &seeds) {
        let downs = r
            .history
            .faults()
            .iter()
            .filter(|(_, k)| k.starts_with("RestartBroker") || k.starts_with("PauseBroker"))
            .count();
        assert!(downs >= 3);
    }
}

#[test]
fn zombie() {
    use families::zombie::{draw, scenario};
    let stall_async = |protocol: Protocol| {
        move |z: &families::zombie::Zombie| {
            z.group.protocol == protocol
                && z.faults.stall.is_some()
                && z.faults.pause.is_none()
                && z.group.auto_commit_ms.is_none()
        }
    };
    let seeds = seeds_where(
        draw,
        &[
            &stall_async(Protocol::Classic),
            &stall_async(Protocol::Consumer),
            &|z: &families::zombie::Zombie| z.faults.pause.is_some(),
        ],
    );
    let results = run_all(scenario, &seeds);
    for (r, seed) in results.iter().zip(&seeds).take(2) {
        // The zombie's commit after its stall was refused.
        let z = draw(*seed);
        let name = format!("c{}", z.member);
        let h = &r.history;
        let stalled_at = h
            .of_subject(&name)
            .find(|e| matches!(&e.event, Event::Note { text } if text.starts_with("application stalls")))
            .map(|e| e.at_ms)
            .expect("the stall happened");
        let refused = h.of_subject(&name).any(|e| {
            e.at_ms > stalled_at
                && matches!(&e.event, Event::CommitCompleted { error: Some(_), .. })
        });
        assert!(refused, "seed {seed}: no refused commit after the stall");
        assert!(lost_somewhere(h), "seed {seed}: the zombie was never told");
    }
}

#[test]
fn lost_commits() {
    use families::lost_commits::{draw, scenario};
    let seeds = seeds_where(
        draw,
        &[&|l: &families::lost_commits::LostCommits| {
            l.lose_p >= 0.3 && l.group.auto_commit_ms.is_none()
        }],
    );
    for r in run_all(scenario, &seeds) {
        let failed = count(
            &r.history,
            None,
            |e| matches!(e, Event::CommitCompleted { error: Some(_), id } if *id < scenarios::runner::AUTO_COMMIT_IDS),
        );
        assert!(failed > 0, "no commit saw its answer lost");
    }
}

/// A listener call panics in the middle of rebalances (the storm's and the lost-commits
/// family's draws plant one in half their seeds): the panic reaches the application through
/// `poll` (`listener-errors-surface` among the checkers) and every other invariant holds.
#[test]
fn panicking_listeners() {
    use families::{lost_commits, rebalance_storm};
    let panics = |p: Protocol| {
        move |s: &rebalance_storm::Storm| {
            s.group.protocol == p && s.members.iter().any(|m| m.2.panic_on_call.is_some())
        }
    };
    let storm_seeds = seeds_where(
        rebalance_storm::draw,
        &[&panics(Protocol::Classic), &panics(Protocol::Consumer)],
    );
    let lost_commits_seeds = seeds_where(
        lost_commits::draw,
        &[&|l: &lost_commits::LostCommits| l.listeners.iter().any(|b| b.panic_on_call == Some(0))],
    );
    let mut results = run_all(rebalance_storm::scenario, &storm_seeds);
    results.extend(run_all(lost_commits::scenario, &lost_commits_seeds));
    let panicked = results
        .iter()
        .filter(|r| {
            count(&r.history, None, |e| {
                matches!(e, Event::CallbackEnd { error: Some(_), .. })
            }) > 0
        })
        .count();
    assert!(
        panicked >= 2,
        "only {panicked} of {} runs saw a listener panic",
        results.len()
    );
    let reported = results
        .iter()
        .map(|r| {
            count(&r.history, None, |e| {
                matches!(e, Event::PollEnd { error: Some(err), .. } if err.contains("panicked"))
            })
        })
        .sum::<usize>();
    assert!(reported > 0, "no poll reported a listener panic");
}

#[test]
fn static_members() {
    use families::static_members::{draw, scenario};
    let one = |within: bool, protocol: Protocol| {
        move |s: &families::static_members::StaticRestarts| {
            s.group.protocol == protocol
                && s.members.iter().filter(|f| f.crash_at_ms.is_some()).count() == 1
                && s.members.iter().any(|f| {
                    f.restart_after_ms
                        .is_some_and(|d| (d < s.group.session_ms()) == within)
                })
        }
    };
    let seeds = seeds_where(
        draw,
        &[
            &one(true, Protocol::Classic),
            &one(false, Protocol::Consumer),
        ],
    );
    let results = run_all(scenario, &seeds);
    for r in &results {
        assert!(count(&r.history, None, |e| matches!(e, Event::MemberRestart)) == 1);
    }
}

#[test]
fn close_outage() {
    use families::close_outage::{draw, scenario, Outage};
    let seeds = seeds_where(
        draw,
        &[
            &|c: &families::close_outage::CloseOutage| {
                c.group.protocol == Protocol::Classic
                    && c.closes
                        .iter()
                        .any(|x| x.outage == Outage::CoordinatorKilled)
            },
            &|c: &families::close_outage::CloseOutage| {
                c.group.protocol == Protocol::Consumer
                    && c.closes.iter().any(|x| x.outage == Outage::MemberIsolated)
            },
        ],
    );
    for r in run_all(scenario, &seeds) {
        // Both leavers' closes returned (in time: blocking-bounds passed).
        for leaver in ["c2", "c3"] {
            assert!(
                count(&r.history, Some(leaver), |e| matches!(
                    e,
                    Event::CloseEnd { .. }
                )) >= 1
            );
        }
    }
}

#[test]
fn mixed_protocols() {
    use families::mixed_protocols::{draw, scenario, Rollout};
    let seeds = seeds_where(
        draw,
        &[
            &|r: &Rollout| r.from == Protocol::Classic,
            &|r: &Rollout| r.from == Protocol::Consumer,
        ],
    );
    for r in run_all(scenario, &seeds) {
        let h = &r.history;
        let sent = |api: &str| -> BTreeSet<(String, u64)> {
            h.entries()
                .iter()
                .filter(|e| matches!(&e.event, Event::Request { api: a, .. } if a == api))
                .map(|e| (e.subject.clone(), e.at_ms))
                .collect()
        };
        let classic: BTreeSet<String> = sent("JoinGroup").into_iter().map(|(s, _)| s).collect();
        let first_heartbeat_ms = sent("ConsumerGroupHeartbeat")
            .into_iter()
            .map(|(_, at)| at)
            .min()
            .expect("a consumer-protocol member");
        // The group was mixed: a classic member's assignment changed while a member of the
        // consumer protocol was in the group.
        assert!(
            h.entries().iter().any(|e| e.at_ms > first_heartbeat_ms
                && classic.contains(&e.subject)
                && matches!(&e.event, Event::Assignment { assigned, revoked, .. }
                    if !assigned.is_empty() || !revoked.is_empty())),
            "{}: no classic member's assignment changed in a mixed group",
            r.repro()
        );
    }
}

#[test]
fn pattern_topics() {
    use families::pattern_topics::{draw, scenario, TopicChanges};
    let seeds = seeds_where(
        draw,
        &[
            &|c: &TopicChanges| c.group.protocol == Protocol::Classic,
            &|c: &TopicChanges| c.group.protocol == Protocol::Consumer,
        ],
    );
    for r in run_all(scenario, &seeds) {
        let h = &r.history;
        let delivered_from = |topic: &str, partition: Option<i32>| {
            count(h, None, |e| {
                matches!(e, Event::Delivered { tp, .. }
                    if tp.topic == topic && partition.is_none_or(|p| tp.partition == p))
            })
        };
        // The pattern picked up the created topic and the grown partitions, never the other.
        assert!(delivered_from("t-c", None) > 0, "{}", r.repro());
        assert!(delivered_from("t-a", Some(5)) > 0, "{}", r.repro());
        assert_eq!(delivered_from("x", None), 0, "{}", r.repro());
        // The deleted topic's partitions were given up.
        assert!(
            count(
                h,
                None,
                |e| matches!(e, Event::Assignment { revoked, lost, .. }
                if revoked.iter().chain(lost).any(|tp| tp.topic == "t-b"))
            ) > 0,
            "{}",
            r.repro()
        );
    }
}

#[test]
fn data_path_late_topic() {
    use families::data_path_late_topic::{draw, scenario, LateTopic, LATE};
    let seeds = seeds_where(
        draw,
        &[
            &|l: &LateTopic| l.group.protocol == Protocol::Classic && l.assignor == "range",
            &|l: &LateTopic| {
                l.group.protocol == Protocol::Classic && l.assignor == "cooperative-sticky"
            },
            &|l: &LateTopic| l.group.protocol == Protocol::Consumer,
        ],
    );
    for r in run_all(scenario, &seeds) {
        // The late topic's records were consumed, from every one of its partitions.
        let partitions = draw(r.seed).late_partitions;
        for partition in 0..partitions {
            assert!(
                count(
                    &r.history,
                    None,
                    |e| matches!(e, Event::Delivered { tp, .. }
                    if tp.topic == LATE && tp.partition == partition)
                ) > 0,
                "{LATE}-{partition} never delivered: {}",
                r.repro()
            );
        }
    }
}

#[test]
fn rolling_upgrade() {
    use families::rolling_upgrade::{draw, scenario, Step, Upgrade};
    let killed = |u: &Upgrade| {
        u.steps
            .iter()
            .any(|(_, s, _)| matches!(s, Step::KillThenStart { .. }))
    };
    let seeds = seeds_where(
        draw,
        &[
            &|u: &Upgrade| killed(u) && u.members[REPLACED_FIRST].protocol == Protocol::Consumer,
            &|u: &Upgrade| u.members[REPLACED_FIRST].protocol == Protocol::Classic,
        ],
    );
    for r in run_all(scenario, &seeds) {
        let h = &r.history;
        let upgrades: Vec<u64> = h
            .faults()
            .iter()
            .filter(|(_, k)| k.starts_with("UpgradeBroker"))
            .map(|(at, _)| *at)
            .collect();
        assert_eq!(upgrades.len(), 3, "{}", r.repro());
        // Mixed versions were consumed through: records delivered between the first and the
        // last broker's upgrade.
        let (first, last) = (upgrades[0], upgrades[2]);
        assert!(
            h.entries().iter().any(|e| e.at_ms > first
                && e.at_ms < last
                && matches!(e.event, Event::Delivered { .. })),
            "{}: nothing delivered while the cluster was mixed",
            r.repro()
        );
        // No version mismatch ever reached the application.
        assert_eq!(
            count(
                h,
                None,
                |e| matches!(e, Event::PollEnd { error: Some(err), .. }
                if err.contains("no common version") || err.contains("does not support"))
            ),
            0,
            "{}",
            r.repro()
        );
    }
}

/// The first replacement member of `family-rolling-upgrade` (`c3`).
const REPLACED_FIRST: usize = 3;

#[test]
fn auth() {
    use families::auth::{draw, Draw, Mechanism};
    let rotated_scram = |d: &Draw| {
        d.rotation.is_some()
            && matches!(d.mechanism, Mechanism::ScramSha256 | Mechanism::ScramSha512)
    };
    let short_token = |d: &Draw| matches!(d.mechanism, Mechanism::OAuthBearer { token_lifetime_s } if token_lifetime_s < 60);
    let short_sessions_under_latency = |d: &Draw| {
        d.max_reauth_ms == 2_000
            && d.plan.iter().any(
                |(_, f)| matches!(f, sim::fault::Fault::Latency { max_ms, .. } if *max_ms > 10),
            )
    };
    let seeds = seeds_where(
        draw,
        &[&rotated_scram, &short_token, &short_sessions_under_latency],
    );
    let results = run_all(families::auth::scenario, &seeds);
    let notes = |result: &RunResult, wanted: &str| {
        count(
            &result.history,
            Some(scenarios::checks::auth::AUTH_SUBJECT),
            |e| matches!(e, Event::Note { text } if text.contains(wanted)),
        )
    };
    // The rotation was refused and surfaced as the typed error.
    assert!(
        notes(&results[0], "failed code=58") > 0,
        "no refused authentication"
    );
    assert!(
        count(&results[0].history, None, |e| matches!(
            e,
            Event::PollEnd { error: Some(error), .. } if error == "SASL_AUTHENTICATION_FAILED"
        )) > 0,
        "no poll reported the refused password"
    );
    // Short tokens and short sessions were re-authenticated (KIP-368), never closed expired.
    for result in &results[1..] {
        assert!(
            notes(result, "reauthentication=true") > 0,
            "{}: no re-authentication",
            result.repro()
        );
    }
}

/// The data-path facts (`data: ...` notes) a run documented.
fn facts(history: &History) -> Vec<scenarios::checks::DataEvent> {
    history
        .entries()
        .iter()
        .filter_map(|e| scenarios::checks::DataEvent::of(&e.event))
        .collect()
}

/// (partition, offset) of every record handed to the application, in order.
fn deliveries(history: &History) -> Vec<(i32, i64, String)> {
    history
        .entries()
        .iter()
        .filter_map(|e| match &e.event {
            Event::Delivered { tp, offset, value } => Some((tp.partition, *offset, value.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn data_path_transactions() {
    use families::data_path::ResetPolicy;
    use families::data_path_transactions::{draw, scenario, Isolation, Transactions};
    let seeds = seeds_where(
        draw,
        &[
            &|t: &Transactions| t.isolation == Isolation::ReadCommitted && !t.churn.is_empty(),
            &|t: &Transactions| {
                t.isolation == Isolation::ReadCommitted && t.policy == ResetPolicy::Latest
            },
            &|t: &Transactions| t.isolation == Isolation::ReadUncommitted,
        ],
    );
    for r in run_all(scenario, &seeds) {
        let d = draw(r.seed);
        let aborted = count(
            &r.history,
            None,
            |e| matches!(e, Event::Note { text } if text.ends_with(" aborted")),
        );
        assert!(aborted > 0, "no transaction aborted: {}", r.repro());
        // Records of transactions that never committed: written, never acknowledged.
        let acked: BTreeSet<String> = r
            .history
            .entries()
            .iter()
            .filter_map(|e| match &e.event {
                Event::ProduceAcked { value, .. } => Some(value.clone()),
                _ => None,
            })
            .collect();
        let uncommitted: BTreeSet<String> = facts(&r.history)
            .into_iter()
            .filter_map(|f| match f {
                scenarios::checks::DataEvent::TxnWritten { value, .. }
                    if !acked.contains(&value) =>
                {
                    Some(value)
                }
                _ => None,
            })
            .collect();
        let handed_uncommitted = deliveries(&r.history)
            .iter()
            .filter(|(_, _, v)| uncommitted.contains(v))
            .count();
        match d.isolation {
            Isolation::ReadCommitted => assert_eq!(handed_uncommitted, 0, "{}", r.repro()),
            Isolation::ReadUncommitted => {
                assert!(
                    handed_uncommitted > 0,
                    "no aborted record read: {}",
                    r.repro()
                )
            }
        }
    }
}

#[test]
fn data_path_compacted() {
    use families::data_path_compacted::{draw, scenario, Compacted};
    let seeds = seeds_where(
        draw,
        &[
            &|c: &Compacted| {
                c.max_partition_fetch_bytes == 120 && c.group.protocol == Protocol::Classic
            },
            &|c: &Compacted| c.max_poll_records == 1 && c.group.protocol == Protocol::Consumer,
        ],
    );
    for r in run_all(scenario, &seeds) {
        // The consumer crossed offset gaps: a record handed out right after one more than
        // one offset below it in the same partition.
        let handed = deliveries(&r.history);
        let crossed = handed
            .windows(2)
            .any(|w| w[0].0 == w[1].0 && w[1].1 > w[0].1 + 1);
        assert!(crossed, "no gap crossed: {}", r.repro());
    }
}

#[test]
fn data_path_delete_records() {
    use families::data_path::ResetPolicy;
    use families::data_path_delete_records::{draw, scenario, DeleteRecords};
    let seeds = seeds_where(
        draw,
        &[
            &|d: &DeleteRecords| d.policy == ResetPolicy::None,
            &|d: &DeleteRecords| d.policy == ResetPolicy::Latest,
        ],
    );
    for r in run_all(scenario, &seeds) {
        let moved = facts(&r.history).into_iter().any(
            |f| matches!(f, scenarios::checks::DataEvent::LogStart { offset, .. } if offset > 0),
        );
        assert!(moved, "the log start never moved: {}", r.repro());
    }
}

#[test]
fn data_path_recreate() {
    use families::data_path_recreate::{draw, scenario, Recreate};
    let seeds = seeds_where(
        draw,
        &[
            &|d: &Recreate| d.group.protocol == Protocol::Classic,
            &|d: &Recreate| d.group.protocol == Protocol::Consumer,
        ],
    );
    for r in run_all(scenario, &seeds) {
        let f = facts(&r.history);
        let deleted = f
            .iter()
            .position(|f| matches!(f, scenarios::checks::DataEvent::TopicDeleted { .. }));
        let created = f
            .iter()
            .rposition(|f| matches!(f, scenarios::checks::DataEvent::TopicCreated { .. }));
        assert!(
            matches!((deleted, created), (Some(d), Some(c)) if d < c),
            "the topic was not deleted and created again: {}",
            r.repro()
        );
    }
}

#[test]
fn data_path_pause_seek() {
    use families::data_path_pause_seek::{draw, scenario, PauseSeek};
    let seeds = seeds_where(
        draw,
        &[
            &|d: &PauseSeek| d.drive == scenarios::app::DriveMode::Stream && !d.seeks.is_empty(),
            &|d: &PauseSeek| d.drive == scenarios::app::DriveMode::Recv && !d.pauses.is_empty(),
        ],
    );
    for r in run_all(scenario, &seeds) {
        let d = draw(r.seed);
        // The runner notes each pause and resume the owner made (`user pause t-0 ok`).
        let done = |prefix: &str| {
            count(
                &r.history,
                None,
                |e| matches!(e, Event::Note { text } if text.starts_with(prefix) && text.ends_with(" ok")),
            )
        };
        if !d.seeks.is_empty() {
            let seeks = count(&r.history, None, |e| matches!(e, Event::Seek { .. }));
            assert!(seeks > 0, "no seek made: {}", r.repro());
        }
        if !d.pauses.is_empty() {
            assert!(done("user pause ") > 0, "no pause made: {}", r.repro());
            assert!(done("user resume ") > 0, "no resume made: {}", r.repro());
        }
        assert!(!deliveries(&r.history).is_empty(), "{}", r.repro());
    }
}

#[test]
fn data_path_large_records() {
    use families::data_path_large_records::{draw, scenario, LargeRecords};
    let seeds = seeds_where(
        draw,
        &[&|d: &LargeRecords| d.max_partition_fetch_bytes < 2_000],
    );
    for r in run_all(scenario, &seeds) {
        let limit = draw(r.seed).max_partition_fetch_bytes as usize;
        let larger = deliveries(&r.history)
            .iter()
            .filter(|(_, _, v)| v.len() > limit)
            .count();
        assert!(
            larger > 0,
            "no record above max.partition.fetch.bytes delivered: {}",
            r.repro()
        );
    }
}

#[test]
fn data_path_leader_churn() {
    use families::data_path_leader_churn::{draw, scenario, LeaderChurn};
    use sim::fault::Fault;
    let seeds = seeds_where(
        draw,
        &[&|d: &LeaderChurn| {
            d.plan
                .iter()
                .filter(|(_, f)| matches!(f, Fault::RestartBroker { .. }))
                .count()
                >= 2
        }],
    );
    for r in run_all(scenario, &seeds) {
        let restart_ms = draw(r.seed)
            .plan
            .iter()
            .find(|(_, f)| matches!(f, Fault::RestartBroker { .. }))
            .map(|(at, _)| *at)
            .unwrap();
        let after = r
            .history
            .entries()
            .iter()
            .filter(|e| e.at_ms > restart_ms && matches!(e.event, Event::Delivered { .. }))
            .count();
        assert!(
            after > 0,
            "nothing delivered after the first restart: {}",
            r.repro()
        );
    }
}

#[test]
fn data_path_unclean_election() {
    use families::data_path::ResetPolicy;
    use families::data_path_unclean_election::{draw, scenario, UncleanElection};
    let seeds = seeds_where(
        draw,
        &[
            &|d: &UncleanElection| d.policy == ResetPolicy::Earliest,
            &|d: &UncleanElection| d.policy == ResetPolicy::None,
        ],
    );
    for r in run_all(scenario, &seeds) {
        let truncated = facts(&r.history)
            .into_iter()
            .any(|f| matches!(f, scenarios::checks::DataEvent::Truncated { .. }));
        assert!(truncated, "no log truncated: {}", r.repro());
    }
}
