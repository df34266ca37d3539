//! What the scenario library catches: each entry of the consumer's sabotage catalogue
//! (`kafka_consumer::sabotage`) puts one known bug back into the consumer, and
//! `cargo sim sabotage` runs the library against it until a checker fails.
//!
//! The search is seed-major — seed S of every scenario before seed S+1 of any — so the number
//! of runs to the first catch measures how quickly the library as a whole notices, not how
//! well one hand-picked scenario does. [`WITNESSES`] records, per entry, the first catch the
//! search found; `cargo sim sabotage --witnesses` (run by CI) checks each witness still fails
//! under its sabotage, so a checker or scenario change that stops catching one is noticed.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The first run that caught a sabotage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Catch {
    pub scenario: String,
    pub seed: u64,
    /// Every checker that failed.
    pub checkers: Vec<String>,
    pub first_violation: String,
    /// Runs in search order up to and including this one.
    pub runs: usize,
}

/// What one run concluded: `None` when it passed, else the failing checkers and the first
/// violation's line.
pub type RunVerdict = Option<(Vec<String>, String)>;

/// The runs to make, seed-major: every scenario's seed S before any seed S+1. Pairs in `skip`
/// (seeds a saved regression already records as failing) are left out: they fail unsabotaged.
pub fn work_list<'a>(
    scenarios: &[&'a str],
    seeds: &[u64],
    skip: &BTreeSet<(String, u64)>,
) -> Vec<(&'a str, u64)> {
    seeds
        .iter()
        .flat_map(|&seed| scenarios.iter().map(move |&scenario| (scenario, seed)))
        .filter(|(scenario, seed)| !skip.contains(&((*scenario).to_owned(), *seed)))
        .collect()
}

/// Runs `work` in order, `jobs` at a time, until a run fails; returns the failure earliest in
/// `work` (runs started before it was found finish, so a later failure found first is
/// replaced by an earlier one) and how many runs were made.
pub fn first_catch(
    work: &[(&str, u64)],
    jobs: usize,
    run: impl Fn(&str, u64) -> RunVerdict + Sync,
) -> (Option<Catch>, usize) {
    let next = AtomicUsize::new(0);
    let made = AtomicUsize::new(0);
    let best: Mutex<Option<(usize, Catch)>> = Mutex::new(None);
    let worker = || loop {
        let index = next.fetch_add(1, Ordering::SeqCst);
        let Some(&(scenario, seed)) = work.get(index) else {
            return;
        };
        let found_earlier = best
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|(at, _)| *at < index);
        if found_earlier {
            return;
        }
        made.fetch_add(1, Ordering::SeqCst);
        if let Some((checkers, first_violation)) = run(scenario, seed) {
            let mut best = best.lock().unwrap_or_else(|e| e.into_inner());
            if best.as_ref().is_none_or(|(at, _)| index < *at) {
                *best = Some((
                    index,
                    Catch {
                        scenario: scenario.to_owned(),
                        seed,
                        checkers,
                        first_violation,
                        runs: index + 1,
                    },
                ));
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(worker);
        }
    });
    let best = best.into_inner().unwrap_or_else(|e| e.into_inner());
    (best.map(|(_, c)| c), made.into_inner())
}

/// A recorded first catch: under `sabotage`, `scenario` at `seed` fails `checker`.
#[derive(Clone, Copy, Debug)]
pub struct Witness {
    pub sabotage: &'static str,
    pub scenario: &'static str,
    pub seed: u64,
    pub checker: &'static str,
}

/// One witness per catalogue entry: the first catch of `cargo sim sabotage --all --seeds 20
/// --jobs 2`, or for the entries no scenario caught in seeds 0..20, of a search of the
/// scenarios built for them (`owned-reports-acknowledged-only`: `--scenarios
/// family-lost-commits,family-rebalance-storm --seeds 200`; `stale-position-survives-loss`:
/// the scenario `stall-regain`, written for it when the seed the families had caught it on
/// (family-zombie 114) stopped catching it and seeds 0..1000 of family-zombie did not;
/// `auto-commit-into-recreated-topic`: seed 230 of `family-data-path-recreate`, the seed that
/// found the bug, none below 200 catching it). `pause-drops-taken-records` moved from
/// family-data-path-pause-seek seed 17 to seed 12 (`--scenarios family-data-path-pause-seek
/// --seeds 200`) when `poll` started asking for the next fetches itself, which moved that
/// family's timings.
pub const WITNESSES: &[Witness] = &[
    Witness {
        sabotage: "fetch-revoked-partitions",
        scenario: "kafka-14196",
        seed: 0,
        checker: "handover-without-redelivery",
    },
    Witness {
        sabotage: "reconcile-without-poll",
        scenario: "kafka-14196",
        seed: 0,
        checker: "handover-without-redelivery",
    },
    Witness {
        sabotage: "pattern-not-rematched",
        scenario: "family-pattern-topics",
        seed: 1,
        checker: "pattern-coverage",
    },
    Witness {
        sabotage: "no-commit-before-revocation",
        scenario: "kafka-14024",
        seed: 0,
        checker: "handover-without-redelivery",
    },
    Witness {
        sabotage: "unknown-topic-commit-retried",
        scenario: "kafka-16033",
        seed: 0,
        checker: "revocation-finishes",
    },
    Witness {
        sabotage: "leave-without-callback",
        scenario: "kafka-4160",
        seed: 0,
        checker: "no-spurious-loss",
    },
    Witness {
        sabotage: "poll-timeout-no-leave",
        scenario: "family-zombie",
        seed: 0,
        checker: "poll-timeout-leaves",
    },
    Witness {
        sabotage: "heartbeat-paused-during-callback",
        scenario: "kafka-4160",
        seed: 0,
        checker: "exclusive-ownership",
    },
    Witness {
        sabotage: "release-before-revoke-callback",
        scenario: "family-lost-commits",
        seed: 0,
        checker: "exclusive-ownership",
    },
    Witness {
        sabotage: "owned-reports-acknowledged-only",
        scenario: "family-rebalance-storm",
        seed: 110,
        checker: "exclusive-ownership",
    },
    Witness {
        sabotage: "stale-position-survives-loss",
        scenario: "stall-regain",
        seed: 0,
        checker: "duplicate-deliveries",
    },
    Witness {
        sabotage: "auto-commit-ignores-floor",
        scenario: "family-lost-commits",
        seed: 0,
        checker: "committed-offsets-monotonic",
    },
    Witness {
        sabotage: "auto-commit-into-recreated-topic",
        scenario: "family-data-path-recreate",
        seed: 230,
        checker: "data-path-accounting",
    },
    Witness {
        sabotage: "coordinator-never-forgotten",
        scenario: "kafka-13563",
        seed: 0,
        checker: "coordinator-rediscovery",
    },
    Witness {
        sabotage: "committed-offset-ignored",
        scenario: "kafka-13310",
        seed: 0,
        checker: "duplicate-deliveries",
    },
    Witness {
        sabotage: "commit-fetched-not-returned",
        scenario: "kafka-18641",
        seed: 0,
        checker: "lost-writes",
    },
    Witness {
        sabotage: "aborted-records-delivered",
        scenario: "family-data-path-transactions",
        seed: 0,
        checker: "data-path-accounting",
    },
    Witness {
        sabotage: "fetch-ignores-isolation",
        scenario: "family-data-path-transactions",
        seed: 0,
        checker: "data-path-accounting",
    },
    Witness {
        sabotage: "control-records-delivered",
        scenario: "family-data-path-transactions",
        seed: 0,
        checker: "data-path-accounting",
    },
    Witness {
        sabotage: "emptied-batch-refetched",
        scenario: "family-data-path-compacted",
        seed: 8,
        checker: "data-path-accounting",
    },
    Witness {
        sabotage: "out-of-range-ignored",
        scenario: "family-data-path-delete-records",
        seed: 1,
        checker: "data-path-accounting",
    },
    Witness {
        sabotage: "stale-fetch-after-seek",
        scenario: "kafka-14196",
        seed: 0,
        checker: "handover-without-redelivery",
    },
    Witness {
        sabotage: "late-reset-overrides-seek",
        scenario: "seek-reset",
        seed: 0,
        checker: "user-seek-wins",
    },
    Witness {
        sabotage: "late-committed-offset-applied",
        scenario: "seek-reset",
        seed: 1,
        checker: "delivery-order",
    },
    Witness {
        sabotage: "late-validation-applied",
        scenario: "seek-reset",
        seed: 1,
        checker: "user-seek-wins",
    },
    Witness {
        sabotage: "pause-drops-taken-records",
        scenario: "family-data-path-pause-seek",
        seed: 12,
        checker: "data-path-accounting",
    },
    Witness {
        sabotage: "offset-fetch-not-stable",
        scenario: "committed-after-move",
        seed: 0,
        checker: "duplicate-deliveries",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_is_seed_major_and_skips_known_failures() {
        let skip: BTreeSet<(String, u64)> = [("b".to_owned(), 0)].into_iter().collect();
        let work = work_list(&["a", "b"], &[0, 1], &skip);
        assert_eq!(work, vec![("a", 0), ("a", 1), ("b", 1)]);
    }

    #[test]
    fn the_earliest_failure_in_order_wins_whatever_finishes_first() {
        let work = work_list(&["a", "b", "c"], &[0, 1, 2], &BTreeSet::new());
        for jobs in [1, 2, 4] {
            let (catch, made) = first_catch(&work, jobs, |scenario, seed| {
                (scenario == "c" && seed >= 1 || scenario == "b" && seed == 2)
                    .then(|| (vec!["x".to_owned()], format!("{scenario} {seed}")))
            });
            let catch = catch.expect("caught");
            assert_eq!(
                (catch.scenario.as_str(), catch.seed),
                ("c", 1),
                "jobs {jobs}"
            );
            assert_eq!(catch.runs, 6);
            assert!(made >= 6, "every run before the catch was made");
        }
    }

    #[test]
    fn nothing_caught_runs_everything() {
        let work = work_list(&["a", "b"], &[0, 1, 2], &BTreeSet::new());
        let (catch, made) = first_catch(&work, 2, |_, _| None);
        assert_eq!(catch, None);
        assert_eq!(made, 6);
    }

    #[test]
    fn every_catalogue_entry_has_one_witness_of_a_known_scenario() {
        let mut seen = BTreeSet::new();
        for w in WITNESSES {
            assert!(
                kafka_consumer::sabotage::Sabotage::from_name(w.sabotage).is_some(),
                "{}",
                w.sabotage
            );
            assert!(crate::find(w.scenario).is_some(), "{}", w.scenario);
            assert!(seen.insert(w.sabotage), "{} twice", w.sabotage);
        }
        for sabotage in kafka_consumer::sabotage::Sabotage::ALL {
            assert!(
                seen.contains(sabotage.name()),
                "no witness for {}",
                sabotage.name()
            );
        }
    }
}
