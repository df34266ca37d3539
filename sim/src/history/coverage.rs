//! Coverage counters: proof that a batch of seeds reached the rare states a scenario exists for.
//!
//! A scenario about "coordinator moved during JoinGroup" is worthless if no seed ever moved the
//! coordinator during a JoinGroup. Any code holding a [`super::Recorder`] bumps a named counter
//! when it passes through such a state; a [`CoverageBatch`] sums them over seeds and
//! [`CoverageBatch::require`] fails the batch when one stayed at zero (the TigerBeetle VOPR and
//! FoundationDB `TEST_PROBE` idea).

use std::collections::BTreeMap;
use std::fmt;

/// Named counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    counts: BTreeMap<String, u64>,
}

impl Coverage {
    /// Adds `by` to the counter `name` (creating it).
    pub fn bump_by(&mut self, name: &str, by: u64) {
        let c = self.counts.entry(name.to_string()).or_insert(0);
        *c = c.saturating_add(by);
    }

    /// Makes `name` known with a zero count, so a report lists it even if never reached.
    pub fn declare(&mut self, name: &str) {
        self.counts.entry(name.to_string()).or_insert(0);
    }

    /// The count of `name` (0 if unknown).
    pub fn get(&self, name: &str) -> u64 {
        self.counts.get(name).copied().unwrap_or(0)
    }

    /// All counters, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counts.iter().map(|(k, v)| (k.as_str(), *v))
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, count) in self.iter() {
            writeln!(f, "{name}={count}")?;
        }
        Ok(())
    }
}

/// Coverage summed over a batch of seeds.
#[derive(Clone, Debug, Default)]
pub struct CoverageBatch {
    runs: u64,
    totals: BTreeMap<String, u64>,
    /// Seeds that reached each counter (count > 0), ascending: a seed to replay for each state.
    seeds: BTreeMap<String, Vec<u64>>,
}

/// The counters a batch never reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoverageMiss {
    pub runs: u64,
    pub missing: Vec<String>,
}

impl fmt::Display for CoverageMiss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "over {} seeds these coverage counters stayed at zero: {}",
            self.runs,
            self.missing.join(", ")
        )
    }
}

impl std::error::Error for CoverageMiss {}

impl CoverageBatch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one seed's coverage.
    pub fn add(&mut self, seed: u64, coverage: &Coverage) {
        self.runs += 1;
        for (name, count) in coverage.iter() {
            let t = self.totals.entry(name.to_string()).or_insert(0);
            *t = t.saturating_add(count);
            let seeds = self.seeds.entry(name.to_string()).or_default();
            if count > 0 {
                if let Err(at) = seeds.binary_search(&seed) {
                    seeds.insert(at, seed);
                }
            }
        }
    }

    /// How many runs were added.
    pub fn runs(&self) -> u64 {
        self.runs
    }

    /// The sum of `name` over all runs.
    pub fn total(&self, name: &str) -> u64 {
        self.totals.get(name).copied().unwrap_or(0)
    }

    /// The seeds in which `name` was reached.
    pub fn seeds_reaching(&self, name: &str) -> &[u64] {
        self.seeds.get(name).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Ok when every counter in `names` is above zero over the batch.
    pub fn require(&self, names: &[&str]) -> Result<(), CoverageMiss> {
        let missing: Vec<String> = names
            .iter()
            .filter(|n| self.total(n) == 0)
            .map(|n| n.to_string())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(CoverageMiss {
                runs: self.runs,
                missing,
            })
        }
    }
}

impl CoverageBatch {
    /// Panics, listing the counters that stayed at zero and the batch summary, unless every
    /// counter in `names` was reached: the one-line assertion for batch tests.
    #[track_caller]
    pub fn assert_reached(&self, names: &[&str]) {
        if let Err(miss) = self.require(names) {
            panic!("{miss}\n{self}");
        }
    }
}

impl fmt::Display for CoverageBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "coverage over {} seeds:", self.runs)?;
        for (name, total) in &self.totals {
            let seeds = self.seeds_reaching(name);
            write!(f, "  {name}={total} in {} seeds", seeds.len())?;
            if let Some(first) = seeds.first() {
                write!(f, " (first seed {first})")?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_requires_every_named_counter() {
        let mut a = Coverage::default();
        a.bump_by("coordinator_moved_during_join", 2);
        a.declare("commit_failed_rebalance_in_progress");
        let mut b = Coverage::default();
        b.bump_by("coordinator_moved_during_join", 1);

        let mut batch = CoverageBatch::new();
        batch.add(7, &a);
        batch.add(3, &b);
        assert_eq!(batch.total("coordinator_moved_during_join"), 3);
        assert_eq!(
            batch.seeds_reaching("coordinator_moved_during_join"),
            &[3, 7]
        );
        assert!(batch.require(&["coordinator_moved_during_join"]).is_ok());
        let miss = batch
            .require(&[
                "coordinator_moved_during_join",
                "commit_failed_rebalance_in_progress",
            ])
            .unwrap_err();
        assert_eq!(miss.missing, vec!["commit_failed_rebalance_in_progress"]);
        assert!(miss.to_string().contains("over 2 seeds"));
        batch.assert_reached(&["coordinator_moved_during_join"]);
        let unreached = std::panic::catch_unwind(|| batch.assert_reached(&["never_bumped"]));
        assert!(unreached.is_err());
    }
}
