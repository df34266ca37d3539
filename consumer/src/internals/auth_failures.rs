//! Turns authentication failures seen by request managers into errors for the application.
//!
//! Request managers treat network errors as transient and retry, which for a refused password
//! would mean silent spinning. Java's `ConsumerNetworkClient.maybeThrowAuthFailure` instead
//! raises the `AuthenticationException` from the next `poll`. Here the background task passes
//! every failed response through [`AuthFailures::observe`]; an authentication failure becomes
//! an [`Error::Authentication`] for the application, at most once per broker per
//! `interval_ms` (every request to that broker fails with the same error during its reconnect
//! backoff, and one report per backoff is enough).

use std::collections::BTreeMap;

use crate::error::Error;
use crate::network::NetworkError;
use crate::rt::{Duration, Instant};

pub(crate) struct AuthFailures {
    interval: Duration,
    last_reported: BTreeMap<String, Instant>,
}

impl AuthFailures {
    pub(crate) fn new(interval_ms: u64) -> Self {
        Self {
            interval: Duration::from_millis(interval_ms.max(1)),
            last_reported: BTreeMap::new(),
        }
    }

    /// The error to report for `error` at `now`, if it is an authentication failure not
    /// reported for its broker within the interval.
    pub(crate) fn observe(&mut self, error: &NetworkError, now: Instant) -> Option<Error> {
        let NetworkError::Authentication { broker, .. } = error else {
            return None;
        };
        if self
            .last_reported
            .get(broker)
            .is_some_and(|&at| now < at + self.interval)
        {
            return None;
        }
        self.last_reported.insert(broker.clone(), now);
        Some(Error::from_network(error.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(broker: &str) -> NetworkError {
        NetworkError::Authentication {
            broker: broker.into(),
            mechanism: "SASL/PLAIN".into(),
            code: None,
            message: "bad password".into(),
        }
    }

    #[test]
    fn reports_once_per_broker_per_interval() {
        let start = Instant::now();
        let mut failures = AuthFailures::new(1_000);
        assert!(matches!(
            failures.observe(&refused("a"), start),
            Some(Error::Authentication { .. })
        ));
        assert!(failures
            .observe(&refused("a"), start + Duration::from_millis(999))
            .is_none());
        assert!(failures.observe(&refused("b"), start).is_some());
        assert!(failures
            .observe(&refused("a"), start + Duration::from_millis(1_000))
            .is_some());
        assert!(failures
            .observe(&NetworkError::NoNodeAvailable, start)
            .is_none());
    }
}
