//! The classic member's timers (Java's `Heartbeat`): when the next heartbeat is due, whether the
//! session has expired without a heartbeat response, and whether the application stayed away
//! from `poll` longer than `max.poll.interval.ms`. Pure bookkeeping on the loop's clock.

use crate::rt::{Duration, Instant};

/// Heartbeat, session and poll timers.
#[derive(Debug, Clone)]
pub(crate) struct HeartbeatTimers {
    session_timeout: Duration,
    heartbeat_interval: Duration,
    max_poll_interval: Duration,
    retry_backoff: Duration,
    next_heartbeat_at: Instant,
    session_deadline: Instant,
    poll_deadline: Instant,
}

impl HeartbeatTimers {
    /// Timers starting at `now`.
    pub fn new(
        now: Instant,
        session_timeout_ms: u64,
        heartbeat_interval_ms: u64,
        max_poll_interval_ms: u64,
        retry_backoff_ms: u64,
    ) -> Self {
        let session_timeout = Duration::from_millis(session_timeout_ms);
        let max_poll_interval = Duration::from_millis(max_poll_interval_ms);
        Self {
            session_timeout,
            heartbeat_interval: Duration::from_millis(heartbeat_interval_ms),
            max_poll_interval,
            retry_backoff: Duration::from_millis(retry_backoff_ms),
            next_heartbeat_at: now,
            session_deadline: now + session_timeout,
            poll_deadline: now + max_poll_interval,
        }
    }

    /// The application polled.
    pub fn poll(&mut self, now: Instant) {
        self.poll_deadline = now + self.max_poll_interval;
    }

    /// A heartbeat went out: the next is due one interval later.
    pub fn sent_heartbeat(&mut self, now: Instant) {
        self.next_heartbeat_at = now + self.heartbeat_interval;
    }

    /// A heartbeat failed: try again after the retry backoff, not a whole interval.
    pub fn fail_heartbeat(&mut self, now: Instant) {
        self.next_heartbeat_at = now + self.retry_backoff;
    }

    /// The coordinator answered: the session is alive.
    pub fn received_heartbeat(&mut self, now: Instant) {
        self.session_deadline = now + self.session_timeout;
    }

    /// A new generation (or coordinator): session from now, first heartbeat one interval on.
    pub fn reset_session(&mut self, now: Instant) {
        self.session_deadline = now + self.session_timeout;
        self.next_heartbeat_at = now + self.heartbeat_interval;
    }

    /// Whether a heartbeat is due.
    pub fn should_heartbeat(&self, now: Instant) -> bool {
        now >= self.next_heartbeat_at
    }

    /// When the next heartbeat is due.
    pub fn next_heartbeat_at(&self) -> Instant {
        self.next_heartbeat_at
    }

    /// Whether no heartbeat response came within `session.timeout.ms`.
    pub fn session_expired(&self, now: Instant) -> bool {
        now >= self.session_deadline
    }

    /// When the session expires.
    pub fn session_deadline(&self) -> Instant {
        self.session_deadline
    }

    /// Whether the application stayed away from `poll` past `max.poll.interval.ms`.
    pub fn poll_expired(&self, now: Instant) -> bool {
        now >= self.poll_deadline
    }

    /// When the poll timer expires.
    pub fn poll_deadline(&self) -> Instant {
        self.poll_deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn heartbeat_session_and_poll_timers_on_a_fake_clock() {
        let start = Instant::now();
        let mut t = HeartbeatTimers::new(start, 10_000, 3_000, 60_000, 100);
        assert!(
            t.should_heartbeat(start),
            "the first heartbeat is due at once"
        );
        t.sent_heartbeat(start);
        assert!(!t.should_heartbeat(start + ms(2_999)));
        assert!(t.should_heartbeat(start + ms(3_000)));
        t.fail_heartbeat(start + ms(3_000));
        assert_eq!(
            t.next_heartbeat_at(),
            start + ms(3_100),
            "retry after backoff"
        );

        assert!(!t.session_expired(start + ms(9_999)));
        assert!(t.session_expired(start + ms(10_000)));
        t.received_heartbeat(start + ms(8_000));
        assert!(!t.session_expired(start + ms(17_999)));
        assert_eq!(t.session_deadline(), start + ms(18_000));

        assert!(!t.poll_expired(start + ms(59_999)));
        assert!(t.poll_expired(start + ms(60_000)));
        t.poll(start + ms(50_000));
        assert!(!t.poll_expired(start + ms(109_999)));
        assert_eq!(t.poll_deadline(), start + ms(110_000));

        t.reset_session(start + ms(20_000));
        assert_eq!(t.session_deadline(), start + ms(30_000));
        assert_eq!(t.next_heartbeat_at(), start + ms(23_000));
    }
}
