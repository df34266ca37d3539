//! Retry bookkeeping for one kind of request (Java's `RequestState`): at most one in flight, and
//! after a failure an exponential backoff from `retry.backoff.ms` to `retry.backoff.max.ms`.

use crate::network::backoff::ExponentialBackoff;
use crate::rt::{Duration, Instant, SeededRng};

/// Kafka's multiplier for retry backoff (`CommonClientConfigs.RETRY_BACKOFF_EXP_BASE`).
pub(crate) const RETRY_BACKOFF_MULTIPLIER: f64 = 2.0;
/// Kafka's jitter for retry backoff (`CommonClientConfigs.RETRY_BACKOFF_JITTER`).
pub(crate) const RETRY_BACKOFF_JITTER: f64 = 0.2;

/// One request's send/backoff state.
#[derive(Debug, Clone)]
pub(crate) struct RequestState {
    backoff: ExponentialBackoff,
    failed_attempts: u32,
    in_flight: bool,
    next_send_at: Option<Instant>,
}

impl RequestState {
    /// A state backing off from `retry_backoff_ms` up to `retry_backoff_max_ms`.
    pub fn new(retry_backoff_ms: u64, retry_backoff_max_ms: u64) -> Self {
        Self {
            backoff: ExponentialBackoff::new(
                retry_backoff_ms,
                RETRY_BACKOFF_MULTIPLIER,
                retry_backoff_max_ms,
                RETRY_BACKOFF_JITTER,
            ),
            failed_attempts: 0,
            in_flight: false,
            next_send_at: None,
        }
    }

    /// Whether a request may be sent now: none in flight and no backoff pending.
    pub fn can_send(&self, now: Instant) -> bool {
        !self.in_flight && self.next_send_at.is_none_or(|at| now >= at)
    }

    /// When a request may next be sent, if it is waiting on a backoff (`None` while one is in
    /// flight or when it may be sent at once).
    pub fn backoff_until(&self, now: Instant) -> Option<Instant> {
        if self.in_flight {
            return None;
        }
        self.next_send_at.filter(|&at| at > now)
    }

    /// A request was sent.
    pub fn on_send(&mut self) {
        self.in_flight = true;
    }

    /// The request succeeded: the backoff starts over.
    pub fn on_success(&mut self) {
        self.in_flight = false;
        self.failed_attempts = 0;
        self.next_send_at = None;
    }

    /// The request failed: back off before the next one.
    pub fn on_failure(&mut self, now: Instant, rng: &mut SeededRng) {
        self.in_flight = false;
        let delay_ms = self.backoff.backoff_ms(self.failed_attempts, rng);
        self.failed_attempts = self.failed_attempts.saturating_add(1);
        self.next_send_at = Some(now + Duration::from_millis(delay_ms));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_in_flight_and_exponential_backoff_capped() {
        let mut rng = SeededRng::seed_from_u64(1);
        let now = Instant::now();
        let mut s = RequestState::new(100, 1_000);
        assert!(s.can_send(now));
        s.on_send();
        assert!(!s.can_send(now), "one in flight");
        assert_eq!(s.backoff_until(now), None);
        s.on_failure(now, &mut rng);
        let first = s.backoff_until(now).unwrap() - now;
        assert!((80..=120).contains(&first.as_millis()), "{first:?}");
        assert!(!s.can_send(now + first - Duration::from_millis(1)));
        assert!(s.can_send(now + first));
        let mut last = first;
        for _ in 0..10 {
            s.on_send();
            s.on_failure(now, &mut rng);
            last = s.backoff_until(now).unwrap() - now;
        }
        assert!(last <= Duration::from_millis(1_000), "{last:?}");
        assert!(last >= Duration::from_millis(800), "{last:?}");
        s.on_send();
        s.on_success();
        assert!(s.can_send(now));
    }
}
