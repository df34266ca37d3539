//! Exponential backoff with jitter, as Kafka's `ExponentialBackoff` computes it.
//!
//! `backoff(attempts) = min(max, initial * multiplier^min(attempts, exp_max) * U(1-jitter, 1+jitter))`
//! where `exp_max` is the exponent at which the un-jittered value reaches `max`. Pure: the caller
//! counts attempts and supplies the randomness.

use crate::rt::SeededRng;

/// Kafka's jitter for reconnect backoff (`CommonClientConfigs.RECONNECT_BACKOFF_JITTER`).
pub const RECONNECT_BACKOFF_JITTER: f64 = 0.2;
/// Kafka's multiplier for reconnect backoff (`RECONNECT_BACKOFF_EXP_BASE`).
pub const RECONNECT_BACKOFF_MULTIPLIER: f64 = 2.0;

/// Kafka's jitter for the connection setup timeout (`CONNECTION_SETUP_TIMEOUT_JITTER` in
/// `ClusterConnectionStates`).
pub const CONNECTION_SETUP_TIMEOUT_JITTER: f64 = 0.2;
/// Kafka's multiplier for the connection setup timeout (`CONNECTION_SETUP_TIMEOUT_EXP_BASE`).
pub const CONNECTION_SETUP_TIMEOUT_MULTIPLIER: f64 = 2.0;

/// Backoff parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExponentialBackoff {
    initial_ms: u64,
    multiplier: f64,
    max_ms: u64,
    jitter: f64,
    exp_max: f64,
}

impl ExponentialBackoff {
    /// Backoff growing from `initial_ms` by `multiplier` per attempt up to `max_ms`, each value
    /// scaled by a uniform factor in `[1 - jitter, 1 + jitter)`.
    pub fn new(initial_ms: u64, multiplier: f64, max_ms: u64, jitter: f64) -> Self {
        let exp_max = if max_ms > initial_ms {
            (max_ms as f64 / initial_ms.max(1) as f64).ln() / multiplier.ln()
        } else {
            0.0
        };
        Self {
            initial_ms,
            multiplier,
            max_ms,
            jitter,
            exp_max,
        }
    }

    /// Kafka's reconnect backoff (`reconnect.backoff.ms`, `reconnect.backoff.max.ms`).
    pub fn reconnect(initial_ms: u64, max_ms: u64) -> Self {
        Self::new(
            initial_ms,
            RECONNECT_BACKOFF_MULTIPLIER,
            max_ms,
            RECONNECT_BACKOFF_JITTER,
        )
    }

    /// Kafka's connection setup timeout (`socket.connection.setup.timeout.ms`, `.max.ms`):
    /// each setup that fails in a row doubles the next one's timeout, jittered, up to the
    /// maximum.
    pub fn connection_setup_timeout(initial_ms: u64, max_ms: u64) -> Self {
        Self::new(
            initial_ms,
            CONNECTION_SETUP_TIMEOUT_MULTIPLIER,
            max_ms,
            CONNECTION_SETUP_TIMEOUT_JITTER,
        )
    }

    /// The delay before the next try, after `attempts` consecutive failures so far minus one
    /// (0 for the first retry).
    pub fn backoff_ms(&self, attempts: u32, rng: &mut SeededRng) -> u64 {
        if self.exp_max == 0.0 {
            return self.initial_ms;
        }
        let exponent = f64::from(attempts).min(self.exp_max);
        let term = self.initial_ms as f64 * self.multiplier.powf(exponent);
        let factor = if self.jitter < f64::MIN_POSITIVE {
            1.0
        } else {
            1.0 - self.jitter + 2.0 * self.jitter * rng.unit_f64()
        };
        // Float to int saturates, so even absurd parameters cannot wrap.
        let value_ms = (term * factor) as u64;
        value_ms.min(self.max_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_geometrically_within_jitter_bounds() {
        let backoff = ExponentialBackoff::reconnect(50, 100_000);
        let mut rng = SeededRng::seed_from_u64(1);
        for attempts in 0..10u32 {
            let base = 50.0 * 2f64.powi(attempts as i32);
            for _ in 0..200 {
                let ms = backoff.backoff_ms(attempts, &mut rng) as f64;
                assert!(
                    ms >= (base * 0.8).floor() && ms <= base * 1.2,
                    "attempt {attempts}: {ms}"
                );
            }
        }
    }

    #[test]
    fn is_capped_at_max() {
        let backoff = ExponentialBackoff::reconnect(50, 1000);
        let mut rng = SeededRng::seed_from_u64(2);
        let mut saw_cap = false;
        for attempts in 4..64u32 {
            let ms = backoff.backoff_ms(attempts, &mut rng);
            assert!(ms <= 1000, "{ms}");
            // At the cap the jitter spreads values over [800, 1000].
            assert!(ms >= 800, "{ms}");
            saw_cap |= ms == 1000;
        }
        assert!(saw_cap, "jitter above 1.0 must be clamped to max");
        assert!(backoff.backoff_ms(u32::MAX, &mut rng) <= 1000);
    }

    #[test]
    fn jitter_actually_varies_and_is_seed_deterministic() {
        let backoff = ExponentialBackoff::reconnect(100, 10_000);
        let draw = |seed| {
            let mut rng = SeededRng::seed_from_u64(seed);
            (0..20)
                .map(|_| backoff.backoff_ms(0, &mut rng))
                .collect::<Vec<_>>()
        };
        let a = draw(7);
        assert_eq!(a, draw(7));
        assert!(a.iter().any(|&ms| ms != a[0]), "no jitter: {a:?}");
    }

    #[test]
    fn reset_attempts_returns_to_the_initial_range() {
        let backoff = ExponentialBackoff::reconnect(50, 1000);
        let mut rng = SeededRng::seed_from_u64(3);
        assert!(backoff.backoff_ms(6, &mut rng) >= 800);
        let after_reset = backoff.backoff_ms(0, &mut rng);
        assert!((40..=60).contains(&after_reset), "{after_reset}");
    }

    #[test]
    fn max_not_above_initial_means_constant_backoff() {
        let backoff = ExponentialBackoff::reconnect(500, 500);
        let mut rng = SeededRng::seed_from_u64(4);
        assert_eq!(backoff.backoff_ms(0, &mut rng), 500);
        assert_eq!(backoff.backoff_ms(9, &mut rng), 500);
    }
}
