//! Fetch sessions (KIP-227), after Kafka's `FetchSession` / `FetchManager`: a full fetch
//! (epoch 0) opens a session, incremental fetches (epoch n) name only changed partitions and
//! get back only partitions with news (and a partition that returned records goes to the end
//! of the session, for fairness), epoch -1 closes. In memory: a restarted broker knows no
//! session, and clients get `FETCH_SESSION_ID_NOT_FOUND`.

use std::collections::BTreeMap;

use kafka_consumer::rt::SeededRng;
use kafka_protocol::error::ResponseError;
use rand::RngCore;
use uuid::Uuid;

/// `FetchMetadata.INITIAL_EPOCH`.
const INITIAL_EPOCH: i32 = 0;
/// `FetchMetadata.FINAL_EPOCH`.
const FINAL_EPOCH: i32 = -1;

/// A partition of a fetch, by topic (name and, from Fetch v13, id) and index.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct FetchKey {
    pub topic_id: Uuid,
    pub topic: String,
    pub partition: i32,
}

/// What the client asked for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FetchParams {
    pub fetch_offset: i64,
    pub partition_max_bytes: i32,
    pub current_leader_epoch: i32,
    pub last_fetched_epoch: i32,
}

/// What the last response told the client, to decide whether an incremental response must
/// include the partition (Kafka's `CachedPartition.maybeUpdateResponseData`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sent {
    high_watermark: i64,
    log_start_offset: i64,
}

#[derive(Debug, Clone)]
struct FetchSession {
    epoch: i32,
    /// In insertion order, as Kafka's `ImplicitLinkedHashCollection`.
    partitions: Vec<(FetchKey, FetchParams, Option<Sent>)>,
}

/// How one fetch request relates to sessions.
#[derive(Debug, Clone)]
pub(crate) struct FetchContext {
    /// The session id the response carries (0: no session).
    pub session_id: i32,
    /// Whether the response lists only partitions with news.
    pub incremental: bool,
    /// The partitions to read, in session order.
    pub partitions: Vec<(FetchKey, FetchParams)>,
}

/// A broker's sessions.
#[derive(Debug)]
pub(crate) struct FetchSessionCache {
    slots: usize,
    rng: SeededRng,
    sessions: BTreeMap<i32, FetchSession>,
}

impl FetchSessionCache {
    pub(crate) fn new(slots: usize, rng: SeededRng) -> Self {
        Self {
            slots,
            rng,
            sessions: BTreeMap::new(),
        }
    }

    /// Kafka's `FetchManager.newContext`.
    pub(crate) fn new_context(
        &mut self,
        session_id: i32,
        epoch: i32,
        requested: Vec<(FetchKey, FetchParams)>,
        forgotten: Vec<FetchKey>,
    ) -> Result<FetchContext, ResponseError> {
        if epoch == FINAL_EPOCH || epoch == INITIAL_EPOCH {
            if session_id != 0 {
                self.sessions.remove(&session_id);
            }
            if epoch == FINAL_EPOCH {
                return Ok(FetchContext {
                    session_id: 0,
                    incremental: false,
                    partitions: requested,
                });
            }
            let new_id = if self.sessions.len() < self.slots {
                let id = self.new_session_id();
                let partitions = requested
                    .iter()
                    .map(|(k, p)| (k.clone(), *p, None))
                    .collect();
                self.sessions.insert(
                    id,
                    FetchSession {
                        epoch: 1,
                        partitions,
                    },
                );
                id
            } else {
                0
            };
            return Ok(FetchContext {
                session_id: new_id,
                incremental: false,
                partitions: requested,
            });
        }
        let session = self
            .sessions
            .get_mut(&session_id)
            .ok_or(ResponseError::FetchSessionIdNotFound)?;
        if session.epoch != epoch {
            return Err(ResponseError::InvalidFetchSessionEpoch);
        }
        for (key, params) in requested {
            match session.partitions.iter_mut().find(|(k, _, _)| *k == key) {
                Some(entry) => entry.1 = params,
                None => session.partitions.push((key, params, None)),
            }
        }
        session
            .partitions
            .retain(|(k, _, _)| !forgotten.contains(k));
        session.epoch = if session.epoch == i32::MAX {
            1
        } else {
            session.epoch + 1
        };
        Ok(FetchContext {
            session_id,
            incremental: true,
            partitions: session
                .partitions
                .iter()
                .map(|(k, p, _)| (k.clone(), *p))
                .collect(),
        })
    }

    /// Records what the response tells the client and, for an incremental response, whether
    /// each partition must be included: records or an error, or a changed high watermark or
    /// log start offset.
    pub(crate) fn must_include(
        &mut self,
        session_id: i32,
        key: &FetchKey,
        high_watermark: i64,
        log_start_offset: i64,
        has_records_or_error: bool,
    ) -> bool {
        let now = Sent {
            high_watermark,
            log_start_offset,
        };
        let Some(entry) = self
            .sessions
            .get_mut(&session_id)
            .and_then(|s| s.partitions.iter_mut().find(|(k, _, _)| k == key))
        else {
            return true;
        };
        let changed = entry.2 != Some(now);
        entry.2 = Some(now);
        changed || has_records_or_error
    }

    /// Moves a partition that returned records in an incremental response to the end of its
    /// session, so the next fetches read the others first: Kafka's
    /// `IncrementalFetchContext.updateAndGenerateResponseData` (`partitionMap.remove` then
    /// `mustAdd`), which keeps a response-size limit from starving the partitions after it.
    pub(crate) fn rotate_to_end(&mut self, session_id: i32, key: &FetchKey) {
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        if let Some(at) = session.partitions.iter().position(|(k, _, _)| k == key) {
            let entry = session.partitions.remove(at);
            session.partitions.push(entry);
        }
    }

    fn new_session_id(&mut self) -> i32 {
        loop {
            let id = (self.rng.next_u32() & 0x7fff_ffff) as i32;
            if id != 0 && !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(p: i32) -> FetchKey {
        FetchKey {
            topic_id: Uuid::nil(),
            topic: "t".to_owned(),
            partition: p,
        }
    }

    fn params(offset: i64) -> FetchParams {
        FetchParams {
            fetch_offset: offset,
            partition_max_bytes: 1 << 20,
            current_leader_epoch: -1,
            last_fetched_epoch: -1,
        }
    }

    #[test]
    fn full_then_incremental_then_errors() {
        let mut cache = FetchSessionCache::new(10, SeededRng::seed_from_u64(1));
        let full = cache
            .new_context(0, 0, vec![(key(0), params(0)), (key(1), params(0))], vec![])
            .unwrap();
        assert!(full.session_id != 0 && !full.incremental);
        let id = full.session_id;
        let inc = cache
            .new_context(id, 1, vec![(key(0), params(5))], vec![key(1)])
            .unwrap();
        assert!(inc.incremental);
        assert_eq!(inc.partitions, vec![(key(0), params(5))]);
        assert_eq!(
            cache.new_context(id, 1, vec![], vec![]).unwrap_err(),
            ResponseError::InvalidFetchSessionEpoch
        );
        assert_eq!(
            cache.new_context(id + 1, 1, vec![], vec![]).unwrap_err(),
            ResponseError::FetchSessionIdNotFound
        );
        let closed = cache.new_context(id, -1, vec![], vec![]).unwrap();
        assert_eq!(closed.session_id, 0);
        assert!(cache.new_context(id, 3, vec![], vec![]).is_err());
    }

    #[test]
    fn incremental_includes_only_news() {
        let mut cache = FetchSessionCache::new(10, SeededRng::seed_from_u64(1));
        let id = cache
            .new_context(0, 0, vec![(key(0), params(0))], vec![])
            .unwrap()
            .session_id;
        assert!(cache.must_include(id, &key(0), 5, 0, false));
        assert!(!cache.must_include(id, &key(0), 5, 0, false));
        assert!(cache.must_include(id, &key(0), 6, 0, false));
        assert!(cache.must_include(id, &key(0), 6, 0, true));
    }

    #[test]
    fn partitions_that_returned_records_move_to_the_end_of_the_session() {
        let mut cache = FetchSessionCache::new(10, SeededRng::seed_from_u64(1));
        let all = vec![
            (key(0), params(0)),
            (key(1), params(0)),
            (key(2), params(0)),
        ];
        let id = cache.new_context(0, 0, all, vec![]).unwrap().session_id;
        let order = |c: &FetchContext| {
            c.partitions
                .iter()
                .map(|(k, _)| k.partition)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            order(&cache.new_context(id, 1, vec![], vec![]).unwrap()),
            [0, 1, 2]
        );
        cache.rotate_to_end(id, &key(0));
        assert_eq!(
            order(&cache.new_context(id, 2, vec![], vec![]).unwrap()),
            [1, 2, 0]
        );
        cache.rotate_to_end(id, &key(1));
        cache.rotate_to_end(id, &key(2));
        assert_eq!(
            order(&cache.new_context(id, 3, vec![], vec![]).unwrap()),
            [0, 1, 2]
        );
        // A partition updated by the request keeps its place.
        let moved = cache
            .new_context(id, 4, vec![(key(1), params(7))], vec![])
            .unwrap();
        assert_eq!(order(&moved), [0, 1, 2]);
    }
}
