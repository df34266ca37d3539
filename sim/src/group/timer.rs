//! Keyed timers on virtual milliseconds, the way Kafka's coordinator runtime keys them.
//!
//! Kafka schedules coordinator timeouts under string keys (e.g. `heartbeat-<group>-<member>`,
//! `join-<group>`): scheduling an existing key replaces its deadline, and cancelling a key that
//! is not scheduled does nothing. Races that depend on "the old timer fired after it was
//! rescheduled" are impossible by construction, as in Kafka.

use std::collections::{BTreeMap, BTreeSet};

/// A set of timers, at most one per key.
#[derive(Debug, Clone)]
pub struct Timers<K: Ord + Clone> {
    deadline_by_key: BTreeMap<K, u64>,
    /// (deadline_ms, key), kept in sync with `deadline_by_key`, so expiry is in deadline order
    /// and ties break by key: deterministic.
    queue: BTreeSet<(u64, K)>,
}

impl<K: Ord + Clone> Default for Timers<K> {
    fn default() -> Self {
        Self {
            deadline_by_key: BTreeMap::new(),
            queue: BTreeSet::new(),
        }
    }
}

impl<K: Ord + Clone> Timers<K> {
    /// Schedules `key` to fire at `deadline_ms`, replacing any earlier schedule of that key.
    pub fn schedule(&mut self, key: K, deadline_ms: u64) {
        if let Some(old) = self.deadline_by_key.insert(key.clone(), deadline_ms) {
            self.queue.remove(&(old, key.clone()));
        }
        self.queue.insert((deadline_ms, key));
    }

    /// Cancels `key`; a no-op when it is not scheduled.
    pub fn cancel(&mut self, key: &K) {
        if let Some(old) = self.deadline_by_key.remove(key) {
            self.queue.remove(&(old, key.clone()));
        }
    }

    /// The deadline of `key`, if scheduled.
    pub fn deadline_ms(&self, key: &K) -> Option<u64> {
        self.deadline_by_key.get(key).copied()
    }

    /// The earliest deadline of all timers: when the owner next needs to be polled.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        self.queue.first().map(|(deadline, _)| *deadline)
    }

    /// Removes and returns the next timer due at or before `now_ms`, earliest first.
    ///
    /// One at a time, because handling an expiry may schedule or cancel other timers.
    pub fn pop_expired(&mut self, now_ms: u64) -> Option<K> {
        let (deadline, _) = self.queue.first()?;
        if *deadline > now_ms {
            return None;
        }
        let (_, key) = self.queue.pop_first()?;
        self.deadline_by_key.remove(&key);
        Some(key)
    }

    /// Number of scheduled timers.
    pub fn len(&self) -> usize {
        self.deadline_by_key.len()
    }

    /// True when no timer is scheduled.
    pub fn is_empty(&self) -> bool {
        self.deadline_by_key.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reschedule_replaces_and_cancel_removes() {
        let mut t = Timers::default();
        t.schedule("join", 100);
        t.schedule("hb", 50);
        t.schedule("join", 200);
        assert_eq!(t.len(), 2);
        assert_eq!(t.next_deadline_ms(), Some(50));
        assert_eq!(t.pop_expired(150), Some("hb"));
        assert_eq!(
            t.pop_expired(150),
            None,
            "the replaced 100 ms deadline must not fire"
        );
        t.cancel(&"join");
        t.cancel(&"absent");
        assert!(t.is_empty());
        assert_eq!(t.pop_expired(u64::MAX), None);
    }

    #[test]
    fn expiry_order_is_deadline_then_key() {
        let mut t = Timers::default();
        t.schedule("b", 10);
        t.schedule("a", 10);
        t.schedule("c", 5);
        let fired: Vec<_> = std::iter::from_fn(|| t.pop_expired(10)).collect();
        assert_eq!(fired, ["c", "a", "b"]);
        assert_eq!(t.deadline_ms(&"a"), None);
    }
}
