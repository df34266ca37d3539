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

/// One witness per catalogue entry, from `cargo sim sabotage --all --seeds 200 --jobs 2`.
pub const WITNESSES: &[Witness] = &[];

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
    fn every_witness_names_a_catalogue_entry_and_a_scenario_once() {
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
    }
}
