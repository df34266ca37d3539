//! When to fetch the next token: Kafka's `ExpiringCredentialRefreshingLogin.refreshMs`, as a
//! pure function of the clock, so the schedule is unit-tested without threads or sleeps.
//!
//! A token is refreshed at `sasl.login.refresh.window.factor` (plus up to
//! `sasl.login.refresh.window.jitter`) of its lifetime, but not later than
//! `sasl.login.refresh.buffer.seconds` before it expires and not sooner than
//! `sasl.login.refresh.min.period.seconds` from now; a token too short-lived for both buffers
//! is refreshed at the window factor of what is left. After a failed fetch Java waits a fixed
//! 10 seconds and tries again, keeping the old token, which stays usable until it expires.

/// Java's `DELAY_SECONDS_BEFORE_NEXT_RETRY_WHEN_RELOGIN_FAILS`, in milliseconds: the wait
/// after a failed refresh, and the fallback when no token or only an expired one is held.
pub(crate) const RETRY_AFTER_FAILED_REFRESH_MS: i64 = 10_000;

/// The `sasl.login.refresh.*` settings (Java's `ExpiringCredentialRefreshConfig`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefreshConfig {
    /// `sasl.login.refresh.window.factor`, 0.5 to 1.0 (default 0.8).
    pub window_factor: f64,
    /// `sasl.login.refresh.window.jitter`, 0 to 0.25 (default 0.05).
    pub window_jitter: f64,
    /// `sasl.login.refresh.min.period.seconds`, 0 to 900 (default 60).
    pub min_period_seconds: u16,
    /// `sasl.login.refresh.buffer.seconds`, 0 to 3600 (default 300).
    pub buffer_seconds: u16,
}

impl Default for RefreshConfig {
    fn default() -> Self {
        Self {
            window_factor: 0.8,
            window_jitter: 0.05,
            min_period_seconds: 60,
            buffer_seconds: 300,
        }
    }
}

impl RefreshConfig {
    /// Checks Java's ranges (`Range.between` of each key); the error names the key.
    pub fn validate(&self) -> Result<(), String> {
        if !(0.5..=1.0).contains(&self.window_factor) {
            return Err(format!(
                "sasl.login.refresh.window.factor must be between 0.5 and 1.0, not {}",
                self.window_factor
            ));
        }
        if !(0.0..=0.25).contains(&self.window_jitter) {
            return Err(format!(
                "sasl.login.refresh.window.jitter must be between 0.0 and 0.25, not {}",
                self.window_jitter
            ));
        }
        if self.min_period_seconds > 900 {
            return Err(format!(
                "sasl.login.refresh.min.period.seconds must be between 0 and 900, not {}",
                self.min_period_seconds
            ));
        }
        if self.buffer_seconds > 3600 {
            return Err(format!(
                "sasl.login.refresh.buffer.seconds must be between 0 and 3600, not {}",
                self.buffer_seconds
            ));
        }
        Ok(())
    }
}

/// The lifetime of the token held: when it was issued (the JWT's `iat`, if it has one) and
/// when it expires, in Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lifetime {
    pub(crate) start_ms: Option<i64>,
    pub(crate) expire_ms: i64,
}

/// When to refresh, computed at `now_ms` for the token held (`None`: no token yet).
/// `jitter_unit` is a uniform draw from `[0, 1)`; the caller owns the randomness so tests fix it.
pub(crate) fn next_refresh_ms(
    config: &RefreshConfig,
    now_ms: i64,
    held: Option<Lifetime>,
    jitter_unit: f64,
) -> i64 {
    let Some(Lifetime {
        start_ms,
        expire_ms,
    }) = held
    else {
        return now_ms.saturating_add(RETRY_AFTER_FAILED_REFRESH_MS);
    };
    // OAUTHBEARER needs no logout before logging in again: an expired token is simply
    // retried for (Java's `isLogoutRequiredBeforeLoggingBackIn` is false for it).
    if now_ms > expire_ms {
        return now_ms.saturating_add(RETRY_AFTER_FAILED_REFRESH_MS);
    }
    let pct = config.window_factor + config.window_jitter * jitter_unit.clamp(0.0, 1.0);
    let min_period_ms = 1000 * i64::from(config.min_period_seconds);
    let buffer_ms = 1000 * i64::from(config.buffer_seconds);
    let refresh_ms = if now_ms.saturating_add(min_period_ms + buffer_ms) > expire_ms {
        // Too short-lived for both buffers: refresh at the window factor of what is left.
        now_ms + scaled(expire_ms - now_ms, pct)
    } else {
        let start_ms = start_ms.unwrap_or(now_ms);
        let proposed_ms = start_ms.saturating_add(scaled(expire_ms - start_ms, pct));
        let buffer_begins_ms = expire_ms - buffer_ms;
        let min_period_ends_ms = now_ms + min_period_ms;
        if proposed_ms > buffer_begins_ms {
            buffer_begins_ms
        } else if proposed_ms < min_period_ends_ms {
            min_period_ends_ms
        } else {
            proposed_ms
        }
    };
    // Java's KAFKA-7945 safety net: a refresh time in the past becomes "in 10 seconds".
    if refresh_ms < now_ms {
        now_ms.saturating_add(RETRY_AFTER_FAILED_REFRESH_MS)
    } else {
        refresh_ms
    }
}

/// `(long) (span_ms * pct)`, as Java truncates it.
fn scaled(span_ms: i64, pct: f64) -> i64 {
    // Spans are token lifetimes in ms; f64 holds them exactly well past any real lifetime.
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    let value = (span_ms as f64 * pct) as i64;
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000;
    const HOUR_MS: i64 = 3_600_000;

    fn lifetime(start_ms: Option<i64>, expire_ms: i64) -> Option<Lifetime> {
        Some(Lifetime {
            start_ms,
            expire_ms,
        })
    }

    #[test]
    fn refreshes_at_the_window_factor_plus_jitter() {
        let config = RefreshConfig::default();
        let held = lifetime(Some(NOW), NOW + HOUR_MS);
        // 0.8 of an hour, then 0.85 with the full jitter.
        assert_eq!(next_refresh_ms(&config, NOW, held, 0.0), NOW + 2_880_000);
        assert_eq!(next_refresh_ms(&config, NOW, held, 1.0), NOW + 3_060_000);
        // The start is the token's iat, not the time it arrived.
        let issued_earlier = lifetime(Some(NOW - 600_000), NOW + HOUR_MS - 600_000);
        assert_eq!(
            next_refresh_ms(&config, NOW, issued_earlier, 0.0),
            NOW - 600_000 + 2_880_000
        );
        // Without iat, the lifetime counts from now.
        assert_eq!(
            next_refresh_ms(&config, NOW, lifetime(None, NOW + HOUR_MS), 0.0),
            NOW + 2_880_000
        );
    }

    #[test]
    fn the_end_buffer_caps_the_refresh_time() {
        let config = RefreshConfig {
            window_factor: 1.0,
            window_jitter: 0.0,
            ..RefreshConfig::default()
        };
        let held = lifetime(Some(NOW), NOW + HOUR_MS);
        assert_eq!(
            next_refresh_ms(&config, NOW, held, 0.0),
            NOW + HOUR_MS - 300_000
        );
    }

    #[test]
    fn the_min_period_delays_an_early_refresh() {
        let config = RefreshConfig {
            window_factor: 0.5,
            window_jitter: 0.0,
            min_period_seconds: 600,
            buffer_seconds: 0,
        };
        // Issued 55 minutes ago, valid for 2 hours: half-life was 5 minutes ago, but the min
        // period holds the refresh 10 minutes off.
        let held = lifetime(Some(NOW - 3_300_000), NOW - 3_300_000 + 2 * HOUR_MS);
        assert_eq!(next_refresh_ms(&config, NOW, held, 0.0), NOW + 600_000);
    }

    #[test]
    fn a_token_too_short_for_both_buffers_refreshes_at_the_factor_of_what_is_left() {
        let config = RefreshConfig::default(); // 60 s + 300 s of buffers
        let held = lifetime(Some(NOW), NOW + 10_000);
        assert_eq!(next_refresh_ms(&config, NOW, held, 0.0), NOW + 8_000);
        assert_eq!(
            next_refresh_ms(&config, NOW + 5_000, held, 0.0),
            NOW + 9_000
        );
    }

    #[test]
    fn no_token_or_an_expired_one_retries_in_ten_seconds() {
        let config = RefreshConfig::default();
        assert_eq!(next_refresh_ms(&config, NOW, None, 0.5), NOW + 10_000);
        let expired = lifetime(Some(NOW - HOUR_MS), NOW - 1);
        assert_eq!(next_refresh_ms(&config, NOW, expired, 0.5), NOW + 10_000);
    }

    #[test]
    fn a_window_point_already_passed_refreshes_when_the_min_period_ends() {
        let config = RefreshConfig {
            window_factor: 0.5,
            window_jitter: 0.0,
            min_period_seconds: 30,
            buffer_seconds: 0,
        };
        // Issued 10 hours ago, valid for one more: half-life is long past, so the refresh
        // waits only for the min period rather than running in a busy loop or never.
        let held = lifetime(Some(NOW - 10 * HOUR_MS), NOW + HOUR_MS);
        assert_eq!(next_refresh_ms(&config, NOW, held, 0.0), NOW + 30_000);
    }

    #[test]
    fn java_ranges_are_enforced_naming_the_key() {
        assert!(RefreshConfig::default().validate().is_ok());
        for (config, key) in [
            (
                RefreshConfig {
                    window_factor: 0.4,
                    ..RefreshConfig::default()
                },
                "sasl.login.refresh.window.factor",
            ),
            (
                RefreshConfig {
                    window_jitter: 0.3,
                    ..RefreshConfig::default()
                },
                "sasl.login.refresh.window.jitter",
            ),
            (
                RefreshConfig {
                    min_period_seconds: 901,
                    ..RefreshConfig::default()
                },
                "sasl.login.refresh.min.period.seconds",
            ),
            (
                RefreshConfig {
                    buffer_seconds: 3601,
                    ..RefreshConfig::default()
                },
                "sasl.login.refresh.buffer.seconds",
            ),
        ] {
            let error = config.validate().unwrap_err();
            assert!(error.starts_with(key), "{error}");
        }
    }
}
