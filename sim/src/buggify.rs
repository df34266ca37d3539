//! FoundationDB-style two-phase BUGGIFY for the simulated brokers.
//!
//! madsim's own `buggify()` is a flat coin flip per call. FoundationDB's is two-phase: each
//! *site* (a place in the code) is activated or not once per run, and an activated site then
//! fires with some probability each time it is reached. A run thus exercises a few perturbations
//! hard instead of every perturbation faintly, which is what finds rare interleavings. Sites
//! perturb only *legal* broker behaviour (answering a long-poll early, returning less data than
//! allowed), so a client that breaks under them has a real bug.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kafka_consumer::rt::SeededRng;

/// The per-run activation state of every buggify site, shared by a cluster's brokers.
#[derive(Debug, Clone)]
pub struct Buggify {
    inner: Option<Arc<Mutex<State>>>,
}

#[derive(Debug)]
struct State {
    rng: SeededRng,
    activation_probability: f64,
    fire_probability: f64,
    /// Site (`file:line`) → activated this run.
    sites: BTreeMap<&'static str, bool>,
}

impl Buggify {
    /// Never fires (real mode, and simulations that want plain behaviour).
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    /// FoundationDB's defaults: a site is activated with probability 1/4 and an activated site
    /// fires with probability 1/4.
    pub fn enabled(seed: u64) -> Self {
        Self::with_probabilities(seed, 0.25, 0.25)
    }

    /// Sites activate with `activation_probability` and fire with `fire_probability`.
    pub fn with_probabilities(
        seed: u64,
        activation_probability: f64,
        fire_probability: f64,
    ) -> Self {
        Self {
            inner: Some(Arc::new(Mutex::new(State {
                rng: SeededRng::seed_from_u64(seed ^ 0x0062_7567_6769_6679),
                activation_probability,
                fire_probability,
                sites: BTreeMap::new(),
            }))),
        }
    }

    /// Whether `site` fires now. The first call for a site decides its activation for the run.
    /// Use the [`buggify!`](crate::buggify!) macro, which names the site by file and line.
    pub fn fire(&self, site: &'static str) -> bool {
        let Some(inner) = &self.inner else {
            return false;
        };
        let mut state = inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let activation = state.activation_probability;
        let activated = match state.sites.get(site) {
            Some(activated) => *activated,
            None => {
                let activated = state.rng.unit_f64() < activation;
                state.sites.insert(site, activated);
                activated
            }
        };
        activated && state.rng.unit_f64() < state.fire_probability
    }

    /// The sites reached so far and whether each was activated (coverage of a batch of seeds).
    pub fn sites(&self) -> Vec<(&'static str, bool)> {
        self.inner.as_ref().map_or_else(Vec::new, |inner| {
            let state = inner
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            state.sites.iter().map(|(site, on)| (*site, *on)).collect()
        })
    }
}

/// `buggify!(b)`: whether the buggify site at this file and line fires now.
#[macro_export]
macro_rules! buggify {
    ($buggify:expr) => {
        $buggify.fire(concat!(file!(), ":", line!()))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_never_fires() {
        let b = Buggify::disabled();
        assert!((0..1000).all(|_| !crate::buggify!(b)));
        assert!(b.sites().is_empty());
    }

    #[test]
    fn a_site_is_activated_once_per_run_then_fires_sometimes() {
        // Over many runs, about a quarter activate the site; an inactive site never fires, an
        // active one fires about a quarter of the time.
        let (mut active_runs, mut fired, mut reached_when_active) = (0, 0, 0);
        for seed in 0..400 {
            let b = Buggify::enabled(seed);
            let results: Vec<bool> = (0..100).map(|_| b.fire("site-a")).collect();
            let activated = b.sites() == vec![("site-a", true)];
            if activated {
                active_runs += 1;
                reached_when_active += results.len();
                fired += results.iter().filter(|f| **f).count();
            } else {
                assert!(
                    results.iter().all(|f| !f),
                    "seed {seed}: inactive site fired"
                );
            }
        }
        assert!(
            (60..140).contains(&active_runs),
            "{active_runs} of 400 runs activated"
        );
        let rate = fired as f64 / reached_when_active as f64;
        assert!((0.18..0.32).contains(&rate), "fire rate {rate}");
    }

    #[test]
    fn same_seed_same_decisions() {
        let run = |seed| {
            let b = Buggify::enabled(seed);
            (0..50)
                .map(|i| b.fire(if i % 2 == 0 { "a" } else { "b" }))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
    }
}
