//! Incremental fetch sessions, one per broker (KIP-227; Java's `FetchSessionHandler`).
//!
//! The first request of a session is *full* (session id 0, epoch 0) and lists every partition;
//! once the broker answers with a session id, later requests are *incremental*: same id, next
//! epoch, only partitions that are new or whose fetch data changed, plus the partitions to
//! forget. Session errors (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) and
//! failed requests fall back to a full request.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::protocol::ResponseError;
use crate::types::TopicPartition;

/// Session id of "no session".
pub(crate) const INVALID_SESSION_ID: i32 = 0;
/// Epoch of a full request that creates a session.
pub(crate) const INITIAL_EPOCH: i32 = 0;
/// Epoch that closes a session.
pub(crate) const FINAL_EPOCH: i32 = -1;

/// What a fetch request says about one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PartitionData {
    /// The topic id (nil when the cluster has none).
    pub topic_id: Uuid,
    /// Where to fetch from.
    pub fetch_offset: i64,
    /// The leader epoch we believe current (-1 unknown).
    pub current_leader_epoch: i32,
    /// `max.partition.fetch.bytes`.
    pub max_bytes: i32,
    /// The leader epoch of the last record consumed before `fetch_offset` (Fetch v12+
    /// `last_fetched_epoch`; -1 unknown): lets the leader answer a diverging epoch when its
    /// log was truncated below the position.
    pub last_fetched_epoch: i32,
}

/// The session part of one fetch request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FetchRequestData {
    /// The session id to send.
    pub session_id: i32,
    /// The epoch to send.
    pub epoch: i32,
    /// Partitions to put in the request.
    pub to_send: BTreeMap<TopicPartition, PartitionData>,
    /// Partitions to forget (incremental only).
    pub to_forget: Vec<(TopicPartition, Uuid)>,
    /// Every partition the session covers after this request (to map a response back).
    pub session_partitions: BTreeMap<TopicPartition, PartitionData>,
}

impl FetchRequestData {
    /// Whether this is a full request.
    #[cfg(test)]
    pub fn is_full(&self) -> bool {
        self.epoch == INITIAL_EPOCH || self.epoch == FINAL_EPOCH
    }
}

/// One broker's session.
#[derive(Debug, Clone, Default)]
pub(crate) struct FetchSessionHandler {
    session_id: i32,
    epoch: i32,
    partitions: BTreeMap<TopicPartition, PartitionData>,
}

impl FetchSessionHandler {
    /// The request for fetching `next` (the partitions wanted from this broker now).
    pub fn build(&mut self, next: BTreeMap<TopicPartition, PartitionData>) -> FetchRequestData {
        let full = self.epoch == INITIAL_EPOCH;
        let data = if full {
            FetchRequestData {
                session_id: self.session_id,
                epoch: self.epoch,
                to_send: next.clone(),
                to_forget: Vec::new(),
                session_partitions: next.clone(),
            }
        } else {
            let to_send = next
                .iter()
                .filter(|(tp, data)| self.partitions.get(*tp) != Some(*data))
                .map(|(tp, data)| (tp.clone(), *data))
                .collect();
            let to_forget = self
                .partitions
                .iter()
                .filter(|(tp, _)| !next.contains_key(*tp))
                .map(|(tp, data)| (tp.clone(), data.topic_id))
                .collect();
            FetchRequestData {
                session_id: self.session_id,
                epoch: self.epoch,
                to_send,
                to_forget,
                session_partitions: next.clone(),
            }
        };
        tracing::trace!(
            session_id = data.session_id,
            epoch = data.epoch,
            full,
            sent = data.to_send.len(),
            forgotten = data.to_forget.len(),
            "fetch session request"
        );
        self.partitions = next;
        data
    }

    /// Updates the session from a response's top-level error and session id; returns whether
    /// the response can be used.
    pub fn handle_response(
        &mut self,
        error: Option<ResponseError>,
        response_session_id: i32,
    ) -> bool {
        match error {
            None => {}
            Some(ResponseError::FetchSessionIdNotFound) => {
                tracing::info!(
                    session_id = self.session_id,
                    "fetch session not found: starting over"
                );
                self.session_id = INVALID_SESSION_ID;
                self.epoch = INITIAL_EPOCH;
                return false;
            }
            Some(code) => {
                tracing::info!(session_id = self.session_id, %code, "fetch session error: full request next");
                self.epoch = INITIAL_EPOCH;
                return false;
            }
        }
        if response_session_id == INVALID_SESSION_ID {
            // Sessionless (the broker has no room, or the request was full without a session):
            // every request stays full.
            self.session_id = INVALID_SESSION_ID;
            self.epoch = INITIAL_EPOCH;
        } else if self.epoch == INITIAL_EPOCH {
            self.session_id = response_session_id;
            self.epoch = next_epoch(INITIAL_EPOCH);
        } else {
            self.epoch = next_epoch(self.epoch);
        }
        true
    }

    /// The request failed: the next one is full and replaces the session (Java's
    /// `nextCloseExisting`).
    pub fn handle_error(&mut self) {
        self.epoch = INITIAL_EPOCH;
    }

    /// The session id to close on shutdown, if there is a session.
    pub fn session_to_close(&self) -> Option<i32> {
        (self.session_id != INVALID_SESSION_ID).then_some(self.session_id)
    }
}

/// The epoch after `epoch`, wrapping to 1 (0 is reserved for full requests).
fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn data(offset: i64) -> PartitionData {
        PartitionData {
            topic_id: Uuid::from_u128(1),
            fetch_offset: offset,
            current_leader_epoch: 0,
            max_bytes: 1024,
            last_fetched_epoch: -1,
        }
    }

    fn wanted(entries: &[(i32, i64)]) -> BTreeMap<TopicPartition, PartitionData> {
        entries.iter().map(|&(p, o)| (tp(p), data(o))).collect()
    }

    #[test]
    fn full_then_incremental_with_epochs_changes_and_forgotten() {
        let mut s = FetchSessionHandler::default();
        let first = s.build(wanted(&[(0, 0), (1, 0)]));
        assert!(first.is_full());
        assert_eq!((first.session_id, first.epoch), (0, 0));
        assert_eq!(first.to_send.len(), 2);
        assert!(s.handle_response(None, 77));

        // p0 advanced, p1 unchanged, p2 new.
        let second = s.build(wanted(&[(0, 5), (1, 0), (2, 0)]));
        assert!(!second.is_full());
        assert_eq!((second.session_id, second.epoch), (77, 1));
        assert_eq!(
            second.to_send.keys().cloned().collect::<Vec<_>>(),
            [tp(0), tp(2)]
        );
        assert!(second.to_forget.is_empty());
        assert!(s.handle_response(None, 77));

        // p1 no longer wanted (paused, buffered or revoked): forgotten.
        let third = s.build(wanted(&[(0, 5), (2, 0)]));
        assert_eq!(third.epoch, 2);
        assert!(third.to_send.is_empty());
        assert_eq!(third.to_forget, [(tp(1), Uuid::from_u128(1))]);
        assert_eq!(s.session_to_close(), Some(77));
    }

    #[test]
    fn session_errors_fall_back_to_full_requests() {
        let mut s = FetchSessionHandler::default();
        s.build(wanted(&[(0, 0)]));
        s.handle_response(None, 5);
        s.build(wanted(&[(0, 1)]));
        assert!(!s.handle_response(Some(ResponseError::InvalidFetchSessionEpoch), 0));
        let next = s.build(wanted(&[(0, 1)]));
        assert!(next.is_full());
        assert_eq!(
            (next.session_id, next.epoch),
            (5, 0),
            "close the old session, open a new one"
        );
        assert_eq!(next.to_send.len(), 1);

        assert!(!s.handle_response(Some(ResponseError::FetchSessionIdNotFound), 0));
        let next = s.build(wanted(&[(0, 1)]));
        assert_eq!((next.session_id, next.epoch), (0, 0));

        s.handle_response(None, 9);
        s.build(wanted(&[(0, 2)]));
        s.handle_error();
        let next = s.build(wanted(&[(0, 2)]));
        assert!(next.is_full(), "after a failed request");
    }

    #[test]
    fn sessionless_brokers_get_full_requests_and_epochs_wrap() {
        let mut s = FetchSessionHandler::default();
        s.build(wanted(&[(0, 0)]));
        s.handle_response(None, INVALID_SESSION_ID);
        assert!(s.build(wanted(&[(0, 1)])).is_full());
        assert_eq!(s.session_to_close(), None);
        assert_eq!(next_epoch(i32::MAX), 1);
    }
}
