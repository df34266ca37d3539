//! Requests written to a connection and not yet answered, oldest first.
//!
//! Kafka answers requests on one connection in the order it received them, so a response must
//! carry the correlation id of the oldest in-flight request (the Java client checks the same).
//! Anything else means the stream is out of step and the connection must be closed.

use std::collections::VecDeque;

use crate::protocol::ProtocolError;
use crate::rt::Instant;

/// One in-flight request.
#[derive(Debug)]
pub struct InFlight<T> {
    /// The id in its request header.
    pub correlation_id: i32,
    /// When it times out.
    pub deadline: Instant,
    /// Whatever the owner needs to complete it.
    pub payload: T,
}

/// The in-flight requests of one connection, and its correlation id counter.
#[derive(Debug)]
pub struct InFlightRequests<T> {
    queue: VecDeque<InFlight<T>>,
    next_correlation_id: i32,
}

impl<T> Default for InFlightRequests<T> {
    fn default() -> Self {
        Self {
            queue: VecDeque::new(),
            next_correlation_id: 0,
        }
    }
}

impl<T> InFlightRequests<T> {
    /// How many requests are in flight.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// A fresh correlation id (wrapping, so a long-lived connection never overflows).
    pub fn allocate_correlation_id(&mut self) -> i32 {
        let id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        id
    }

    /// Records a request that is about to be written.
    pub fn push(&mut self, correlation_id: i32, deadline: Instant, payload: T) {
        self.queue.push_back(InFlight {
            correlation_id,
            deadline,
            payload,
        });
    }

    /// Takes the request a response with `correlation_id` answers: it must be the oldest.
    pub fn complete(&mut self, correlation_id: i32) -> Result<InFlight<T>, ProtocolError> {
        let expected = self.queue.front().map(|r| r.correlation_id);
        if expected == Some(correlation_id) {
            if let Some(oldest) = self.queue.pop_front() {
                return Ok(oldest);
            }
        }
        Err(ProtocolError::UnexpectedCorrelationId {
            expected,
            received: correlation_id,
        })
    }

    /// The earliest deadline of any in-flight request.
    pub fn earliest_deadline(&self) -> Option<Instant> {
        self.queue.iter().map(|r| r.deadline).min()
    }

    /// Removes and returns one request whose deadline is at or before `now`, if any.
    pub fn take_expired(&mut self, now: Instant) -> Option<InFlight<T>> {
        let index = self.queue.iter().position(|r| r.deadline <= now)?;
        self.queue.remove(index)
    }

    /// Removes every request, oldest first.
    pub fn drain(&mut self) -> impl Iterator<Item = InFlight<T>> + '_ {
        self.queue.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::Duration;

    fn at(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    #[test]
    fn responses_must_match_the_oldest_request() {
        let base = Instant::now();
        let mut in_flight = InFlightRequests::default();
        for name in ["a", "b", "c"] {
            let id = in_flight.allocate_correlation_id();
            in_flight.push(id, at(base, 100), name);
        }
        assert_eq!(in_flight.complete(0).unwrap().payload, "a");
        let err = in_flight.complete(2).unwrap_err();
        assert_eq!(
            err,
            ProtocolError::UnexpectedCorrelationId {
                expected: Some(1),
                received: 2
            }
        );
        assert_eq!(in_flight.len(), 2, "a mismatch removes nothing");
        assert_eq!(in_flight.complete(1).unwrap().payload, "b");
        assert_eq!(in_flight.complete(2).unwrap().payload, "c");
        assert_eq!(
            in_flight.complete(3).unwrap_err(),
            ProtocolError::UnexpectedCorrelationId {
                expected: None,
                received: 3
            }
        );
    }

    #[test]
    fn deadlines_and_expiry() {
        let base = Instant::now();
        let mut in_flight = InFlightRequests::default();
        in_flight.push(0, at(base, 300), "slow");
        in_flight.push(1, at(base, 100), "fast");
        assert_eq!(in_flight.earliest_deadline(), Some(at(base, 100)));
        assert!(in_flight.take_expired(at(base, 99)).is_none());
        assert_eq!(
            in_flight.take_expired(at(base, 100)).unwrap().payload,
            "fast"
        );
        assert_eq!(in_flight.earliest_deadline(), Some(at(base, 300)));
        let drained: Vec<_> = in_flight.drain().map(|r| r.payload).collect();
        assert_eq!(drained, ["slow"]);
        assert!(in_flight.is_empty());
    }

    #[test]
    fn correlation_ids_wrap_instead_of_overflowing() {
        let mut in_flight = InFlightRequests::<()> {
            queue: VecDeque::new(),
            next_correlation_id: i32::MAX,
        };
        assert_eq!(in_flight.allocate_correlation_id(), i32::MAX);
        assert_eq!(in_flight.allocate_correlation_id(), i32::MIN);
    }
}
