//! Retries of one token fetch: Kafka's `internals.secured.Retry`. Waits grow from
//! `sasl.login.retry.backoff.ms`, doubling per attempt, and all retries together stay within
//! `sasl.login.retry.backoff.max.ms` of the first attempt; a non-retriable failure (a 4xx
//! answer, an invalid token) ends the fetch at once. Pure, so it is tested on a fake clock.

/// The retry budget of one fetch.
#[derive(Debug, Clone)]
pub(crate) struct RetryBudget {
    backoff_ms: u64,
    end_ms: i64,
    attempts: u32,
}

impl RetryBudget {
    /// A fetch starting at `now_ms`.
    pub(crate) fn start(now_ms: i64, backoff_ms: u64, backoff_max_ms: u64) -> Self {
        Self {
            backoff_ms,
            end_ms: now_ms.saturating_add(i64::try_from(backoff_max_ms).unwrap_or(i64::MAX)),
            attempts: 0,
        }
    }

    /// An attempt failed retriably at `now_ms`: how long to wait before the next one, or
    /// `None` when the budget is spent and the fetch fails with this error.
    pub(crate) fn after_failure(&mut self, now_ms: i64) -> Option<u64> {
        self.attempts = self.attempts.saturating_add(1);
        if now_ms > self.end_ms {
            return None;
        }
        let factor = 1u64
            .checked_shl(self.attempts - 1)
            .filter(|f| *f != 0)
            .unwrap_or(u64::MAX);
        let wait_ms = self.backoff_ms.saturating_mul(factor);
        let left_ms = u64::try_from(self.end_ms - now_ms).unwrap_or(0);
        let wait_ms = wait_ms.min(left_ms);
        (wait_ms > 0).then_some(wait_ms)
    }

    /// Attempts that failed so far.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_and_stop_at_the_budget() {
        // Kafka's defaults: 100 ms doubling, 10 s in all.
        let mut budget = RetryBudget::start(0, 100, 10_000);
        let mut now = 0;
        let mut waits = Vec::new();
        while let Some(wait) = budget.after_failure(now) {
            waits.push(wait);
            now += i64::try_from(wait).unwrap();
        }
        assert_eq!(waits, [100, 200, 400, 800, 1600, 3200, 3700]);
        assert_eq!(now, 10_000);
        assert_eq!(budget.attempts(), 8);
    }

    #[test]
    fn time_spent_in_attempts_counts_against_the_budget() {
        let mut budget = RetryBudget::start(0, 100, 1_000);
        // The first attempt hung for 950 ms before failing: 50 ms are left.
        assert_eq!(budget.after_failure(950), Some(50));
        assert_eq!(budget.after_failure(1_001), None);
    }

    #[test]
    fn a_zero_budget_means_one_attempt() {
        let mut budget = RetryBudget::start(5, 100, 0);
        assert_eq!(budget.after_failure(5), None);
    }

    #[test]
    fn huge_attempt_counts_do_not_overflow() {
        let mut budget = RetryBudget::start(0, u64::MAX / 2, u64::MAX);
        for _ in 0..100 {
            assert!(budget.after_failure(0).is_some());
        }
    }
}
