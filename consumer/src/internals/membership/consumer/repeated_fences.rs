//! The backoff between rejoins while the coordinator keeps fencing the member (the project's
//! own rule; Java rejoins at once after every fence).
//!
//! After FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID a KIP-848 member rejoins with epoch 0 at
//! once. A coordinator that still holds the member's old epoch (or keeps losing it) fences
//! that rejoin too, and the member used to rejoin again at once: a heartbeat per round trip
//! until its session expired. So only the first fence of a run rejoins at once; each further
//! fence with no successful heartbeat since waits `retry.backoff.ms`, doubling (with Kafka's
//! 20 % jitter) up to `retry.backoff.max.ms`, as Java's heartbeat manager backs off after
//! other errors.

use crate::internals::request_state::{RETRY_BACKOFF_JITTER, RETRY_BACKOFF_MULTIPLIER};
use crate::network::backoff::ExponentialBackoff;
use crate::rt::{Duration, Instant, SeededRng};

/// A run of fences and the earliest rejoin.
#[derive(Debug, Clone)]
pub(super) struct RepeatedFences {
    backoff: ExponentialBackoff,
    /// Fences since the last successful heartbeat.
    in_a_row: u32,
    rejoin_at: Option<Instant>,
}

impl RepeatedFences {
    /// Backing off from `retry_backoff_ms` to `retry_backoff_max_ms`.
    pub fn new(retry_backoff_ms: u64, retry_backoff_max_ms: u64) -> Self {
        Self {
            backoff: ExponentialBackoff::new(
                retry_backoff_ms,
                RETRY_BACKOFF_MULTIPLIER,
                retry_backoff_max_ms.max(retry_backoff_ms),
                RETRY_BACKOFF_JITTER,
            ),
            in_a_row: 0,
            rejoin_at: None,
        }
    }

    /// The member was fenced at `now`.
    pub fn on_fence(&mut self, now: Instant, rng: &mut SeededRng) {
        self.in_a_row = self.in_a_row.saturating_add(1);
        self.rejoin_at = match self.in_a_row {
            1 => None,
            n => {
                let delay_ms = self.backoff.backoff_ms(n - 2, rng);
                tracing::info!(
                    fences_in_a_row = n,
                    delay_ms,
                    "fenced again before any successful heartbeat: rejoining after a backoff"
                );
                Some(now + Duration::from_millis(delay_ms))
            }
        };
    }

    /// A heartbeat succeeded: the run is over.
    pub fn on_heartbeat_success(&mut self) {
        self.in_a_row = 0;
        self.rejoin_at = None;
    }

    /// When the rejoin may go out, while that is after `now`.
    pub fn rejoin_not_before(&self, now: Instant) -> Option<Instant> {
        self.rejoin_at.filter(|&at| at > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_repeated_fences_wait_and_a_success_ends_the_run() {
        let mut rng = SeededRng::seed_from_u64(9);
        let now = Instant::now();
        let mut f = RepeatedFences::new(100, 1_000);
        f.on_fence(now, &mut rng);
        assert_eq!(f.rejoin_not_before(now), None, "first fence: at once");
        f.on_fence(now, &mut rng);
        let at = f.rejoin_not_before(now).expect("second fence waits");
        assert!((80..120).contains(&(at - now).as_millis()));
        assert_eq!(f.rejoin_not_before(at), None, "the wait ends");
        for _ in 0..10 {
            f.on_fence(now, &mut rng);
        }
        let at = f.rejoin_not_before(now).expect("waits");
        assert!((800..=1_000).contains(&(at - now).as_millis()), "capped");
        f.on_heartbeat_success();
        f.on_fence(now, &mut rng);
        assert_eq!(f.rejoin_not_before(now), None, "a new run");
    }
}
