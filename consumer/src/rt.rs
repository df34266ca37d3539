//! The runtime seam: where time and randomness come from.
//!
//! Everything the simulation runs reads time through the runtime (`tokio::time`, which is
//! madsim's virtual clock under `--cfg madsim`) and draws randomness from one seeded source, so a
//! simulated run is a pure function of its seed. `clippy.toml` bans the escape hatches
//! (`SystemTime::now`, `rand::thread_rng`, OS threads); the two sanctioned exits live here.

use rand::{rngs::SmallRng, RngCore, SeedableRng};

pub use tokio::time::{Duration, Instant};

/// Milliseconds since the Unix epoch, for record timestamps and ListOffsets by time.
///
/// Under madsim this is virtual wall-clock time (madsim intercepts the clock), so it is
/// deterministic per seed.
pub fn wall_clock_ms() -> i64 {
    #[allow(clippy::disallowed_methods)] // the one sanctioned wall-clock read; virtual under madsim
    let now = std::time::SystemTime::now();
    now.duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The next number for a generated `client.id` (`consumer-<group.id>-<n>`), counting from 1
/// like Java's `ConsumerConfig.CONSUMER_CLIENT_ID_SEQUENCE`.
///
/// Real mode: one process-wide counter, as Java's static. Under madsim: a counter per
/// simulation thread (madsim runs each seed on a fresh thread), so a run's client ids depend
/// only on that run, whatever else the process ran before, and no randomness is drawn (a draw
/// would shift every later random choice of the seed).
pub fn next_client_id_sequence() -> u64 {
    #[cfg(not(madsim))]
    {
        use std::sync::atomic::{AtomicU64, Ordering};
        static SEQUENCE: AtomicU64 = AtomicU64::new(1);
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    }
    #[cfg(madsim)]
    {
        thread_local! {
            static SEQUENCE: std::cell::Cell<u64> = const { std::cell::Cell::new(1) };
        }
        SEQUENCE.with(|next| {
            let n = next.get();
            next.set(n + 1);
            n
        })
    }
}

/// The one source of randomness (backoff jitter, member ids, buggify decisions).
///
/// Seeded from the simulator's seed under madsim and from OS entropy in real mode; tests can
/// seed it explicitly with [`SeededRng::seed_from_u64`].
#[derive(Debug, Clone)]
pub struct SeededRng(SmallRng);

impl SeededRng {
    /// A generator seeded by the runtime: madsim's seed in simulation, OS entropy otherwise.
    pub fn from_runtime() -> Self {
        Self::seed_from_u64(runtime_seed())
    }

    /// A generator with an explicit seed (tests, replays).
    pub fn seed_from_u64(seed: u64) -> Self {
        Self(SmallRng::seed_from_u64(seed))
    }

    /// A uniformly distributed value in `0..=max` (`max` inclusive).
    pub fn below_inclusive(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            return self.0.next_u64();
        }
        rand::Rng::gen_range(&mut self.0, 0..=max)
    }

    /// A uniformly distributed `f64` in `[0, 1)`.
    pub fn unit_f64(&mut self) -> f64 {
        rand::Rng::gen::<f64>(&mut self.0)
    }
}

impl RngCore for SeededRng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.0.try_fill_bytes(dest)
    }
}

#[cfg(madsim)]
fn runtime_seed() -> u64 {
    madsim::rand::random::<u64>()
}

#[cfg(not(madsim))]
fn runtime_seed() -> u64 {
    #[allow(clippy::disallowed_types)] // real mode: the seed itself must come from the OS
    let mut os = rand::rngs::OsRng;
    os.next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = SeededRng::seed_from_u64(7);
        let mut b = SeededRng::seed_from_u64(7);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        let mut c = SeededRng::seed_from_u64(8);
        assert_ne!(xs[0], c.next_u64());
    }

    #[test]
    fn below_inclusive_stays_in_range() {
        let mut r = SeededRng::seed_from_u64(1);
        for max in [0u64, 1, 5, 1000, u64::MAX] {
            for _ in 0..100 {
                assert!(r.below_inclusive(max) <= max);
            }
        }
    }

    #[test]
    fn wall_clock_is_after_2020() {
        assert!(wall_clock_ms() > 1_577_836_800_000);
    }
}
