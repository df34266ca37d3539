//! Which failed connection attempts to one broker are worth a warning.
//!
//! A consumer whose brokers are unreachable must say so: Java's `NetworkClient` logs "Connection
//! to node N (host:port) could not be established. Node may not be available." at WARN for each
//! failed attempt. Attempts follow the reconnect backoff (`reconnect.backoff.max.ms`, 1 s by
//! default), so an outage of an hour writes thousands of those lines per broker. This warns on
//! the first failure of a streak and then once per [`WARN_INTERVAL_MS`] with the number of
//! attempts that failed since the last warning; the attempts between go to DEBUG.

use crate::rt::{Duration, Instant};

/// The least time between two warnings about one broker's failed attempts.
pub(crate) const WARN_INTERVAL_MS: u64 = 10_000;

/// The streak of failed connection attempts to one broker.
#[derive(Debug, Default)]
pub(crate) struct ConnectFailures {
    /// Attempts failed since the last success.
    streak: u32,
    /// Attempts failed since the last warning.
    unreported: u32,
    /// When the last warning went out, within this streak.
    warned_at: Option<Instant>,
}

impl ConnectFailures {
    /// Counts a failed attempt at `now`; `Some(n)` when it is to be warned about, `n` being the
    /// attempts failed since the last warning (this one included).
    pub fn on_failure(&mut self, now: Instant) -> Option<u32> {
        self.streak = self.streak.saturating_add(1);
        self.unreported = self.unreported.saturating_add(1);
        let due = self.warned_at.is_none_or(|at| {
            now.saturating_duration_since(at) >= Duration::from_millis(WARN_INTERVAL_MS)
        });
        if !due {
            return None;
        }
        self.warned_at = Some(now);
        Some(std::mem::take(&mut self.unreported))
    }

    /// A connection was made; returns how many attempts had failed before it (0: none), so a
    /// recovery after a warning can be reported.
    pub fn on_success(&mut self) -> u32 {
        let streak = self.streak;
        *self = Self::default();
        streak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_on_the_first_failure_then_once_per_interval_with_the_count() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut failures = ConnectFailures::default();
        assert_eq!(failures.on_failure(at(0)), Some(1));
        // One attempt per second of backoff: nine quiet ones.
        for second in 1..10 {
            assert_eq!(failures.on_failure(at(second * 1_000)), None);
        }
        assert_eq!(failures.on_failure(at(10_000)), Some(10));
        assert_eq!(failures.on_failure(at(10_500)), None);
        assert_eq!(failures.on_failure(at(20_000)), Some(2));
        assert_eq!(failures.on_success(), 13);
    }

    #[test]
    fn a_success_starts_a_new_streak_that_warns_at_once() {
        let start = Instant::now();
        let mut failures = ConnectFailures::default();
        assert_eq!(failures.on_failure(start), Some(1));
        assert_eq!(failures.on_success(), 1);
        assert_eq!(failures.on_success(), 0);
        // Within the interval of the old streak's warning, but a new outage.
        let soon = start + Duration::from_millis(100);
        assert_eq!(failures.on_failure(soon), Some(1));
    }
}
