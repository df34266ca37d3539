//! What the consumer is assigned and where each partition stands (Java's `SubscriptionState`),
//! owned by the background task alone. Positions themselves live in the shared
//! [`FetchBuffer`](super::fetch_buffer::FetchBuffer) (see there for why).

use std::collections::{BTreeMap, BTreeSet};

use crate::config::AutoOffsetReset;
use crate::types::TopicPartition;

/// A partition's fetch state (Java's `FetchStates`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FetchState {
    /// Just assigned: the committed offset (if there is a group) or a reset decides the position.
    Initializing,
    /// Needs a reset with this strategy (no committed offset, out of range, `seek_to_*`).
    AwaitingReset(AutoOffsetReset),
    /// Has a position whose log may have been truncated since (KIP-320): OffsetForLeaderEpoch
    /// must confirm it before fetching.
    AwaitingValidation,
    /// Has a valid position.
    Fetching,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PartitionState {
    fetch_state: FetchState,
    paused: bool,
}

/// The assignment and per-partition state.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionState {
    assignment: BTreeMap<TopicPartition, PartitionState>,
}

impl SubscriptionState {
    /// Replaces the manual assignment; returns (added, removed).
    pub fn assign_from_user(
        &mut self,
        partitions: &BTreeSet<TopicPartition>,
    ) -> (Vec<TopicPartition>, Vec<TopicPartition>) {
        let removed: Vec<_> = self
            .assignment
            .keys()
            .filter(|tp| !partitions.contains(*tp))
            .cloned()
            .collect();
        for tp in &removed {
            self.assignment.remove(tp);
        }
        let mut added = Vec::new();
        for tp in partitions {
            if !self.assignment.contains_key(tp) {
                self.assignment.insert(
                    tp.clone(),
                    PartitionState {
                        fetch_state: FetchState::Initializing,
                        paused: false,
                    },
                );
                added.push(tp.clone());
            }
        }
        tracing::info!(?added, ?removed, "assignment changed");
        (added, removed)
    }

    /// The assigned partitions.
    pub fn assigned(&self) -> BTreeSet<TopicPartition> {
        self.assignment.keys().cloned().collect()
    }

    /// Whether `partition` is assigned.
    pub fn is_assigned(&self, partition: &TopicPartition) -> bool {
        self.assignment.contains_key(partition)
    }

    /// A partition's fetch state.
    pub fn fetch_state(&self, partition: &TopicPartition) -> Option<FetchState> {
        self.assignment.get(partition).map(|s| s.fetch_state)
    }

    /// Moves a partition to `state` (no-op if unassigned).
    pub fn set_fetch_state(&mut self, partition: &TopicPartition, state: FetchState) {
        if let Some(s) = self.assignment.get_mut(partition) {
            if s.fetch_state != state {
                tracing::debug!(%partition, from = ?s.fetch_state, to = ?state, "fetch state");
                s.fetch_state = state;
            }
        }
    }

    /// Partitions in `state`.
    pub fn partitions_in(&self, state: FetchState) -> Vec<TopicPartition> {
        self.assignment
            .iter()
            .filter(|(_, s)| s.fetch_state == state)
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// Partitions awaiting a reset, with their strategies.
    pub fn partitions_awaiting_reset(&self) -> Vec<(TopicPartition, AutoOffsetReset)> {
        self.assignment
            .iter()
            .filter_map(|(tp, s)| match s.fetch_state {
                FetchState::AwaitingReset(strategy) => Some((tp.clone(), strategy)),
                _ => None,
            })
            .collect()
    }

    /// Pauses or resumes a partition.
    pub fn set_paused(&mut self, partition: &TopicPartition, paused: bool) {
        if let Some(s) = self.assignment.get_mut(partition) {
            s.paused = paused;
        }
    }

    /// Whether a partition is paused.
    #[cfg(test)]
    pub fn is_paused(&self, partition: &TopicPartition) -> bool {
        self.assignment.get(partition).is_some_and(|s| s.paused)
    }

    /// The paused partitions.
    #[cfg(test)]
    pub fn paused(&self) -> BTreeSet<TopicPartition> {
        self.assignment
            .iter()
            .filter(|(_, s)| s.paused)
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// Assigned, not paused, with a valid position: may be fetched (the fetch manager also
    /// skips partitions with buffered data).
    pub fn fetchable_partitions(&self) -> Vec<TopicPartition> {
        self.assignment
            .iter()
            .filter(|(_, s)| !s.paused && s.fetch_state == FetchState::Fetching)
            .map(|(tp, _)| tp.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    #[test]
    fn assignment_states_and_fetchable_rule() {
        let mut s = SubscriptionState::default();
        let (added, removed) = s.assign_from_user(&[tp(0), tp(1), tp(2)].into_iter().collect());
        assert_eq!((added.len(), removed.len()), (3, 0));
        assert_eq!(s.partitions_in(FetchState::Initializing).len(), 3);
        assert!(s.fetchable_partitions().is_empty(), "no positions yet");

        s.set_fetch_state(&tp(0), FetchState::Fetching);
        s.set_fetch_state(&tp(1), FetchState::Fetching);
        s.set_fetch_state(&tp(2), FetchState::AwaitingReset(AutoOffsetReset::Earliest));
        s.set_paused(&tp(1), true);
        assert_eq!(s.fetchable_partitions(), [tp(0)]);
        assert_eq!(s.paused(), [tp(1)].into_iter().collect());
        assert_eq!(
            s.partitions_awaiting_reset(),
            [(tp(2), AutoOffsetReset::Earliest)]
        );

        let (added, removed) = s.assign_from_user(&[tp(1), tp(3)].into_iter().collect());
        assert_eq!((added, removed), (vec![tp(3)], vec![tp(0), tp(2)]));
        assert!(s.is_paused(&tp(1)), "kept partitions keep their state");
        assert_eq!(s.fetch_state(&tp(3)), Some(FetchState::Initializing));
        assert_eq!(s.fetch_state(&tp(0)), None);
    }
}
