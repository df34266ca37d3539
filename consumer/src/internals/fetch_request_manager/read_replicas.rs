//! Follower fetching (KIP-392): the replica each partition is fetched from (Java's
//! `SubscriptionState.updatePreferredReadReplica` / `AbstractFetch.selectReadReplica`).
//!
//! A consumer with `client.rack` sends its rack in every Fetch (v11+); a leader configured
//! with a rack-aware `replica.selector.class` answers a partition with no records and the
//! `preferred_read_replica` to fetch it from instead (a follower in the consumer's rack). The
//! consumer then fetches the partition from that replica until the preference's lease,
//! `metadata.max.age.ms`, runs out or a fetch from it fails (an error, an out-of-range offset
//! the follower has not caught up to, a lost connection), and from the leader again after
//! that. A preferred replica that metadata does not list as a live broker is not used.

use std::collections::BTreeMap;

use crate::network::Metadata;
use crate::rt::{Duration, Instant};
use crate::types::TopicPartition;

/// The preferred read replica of each partition that has one, with the end of its lease.
#[derive(Debug, Default)]
pub(super) struct ReadReplicas {
    preferred: BTreeMap<TopicPartition, (i32, Instant)>,
}

impl ReadReplicas {
    /// The broker to fetch `tp` from: its preferred read replica while the lease holds and
    /// metadata knows the broker, its leader otherwise.
    pub fn select(
        &self,
        tp: &TopicPartition,
        leader: i32,
        metadata: &Metadata,
        now: Instant,
    ) -> i32 {
        match self.preferred.get(tp) {
            Some(&(replica, expires_at))
                if now < expires_at && metadata.broker(replica).is_some() =>
            {
                replica
            }
            _ => leader,
        }
    }

    /// Drops preferences whose lease ran out or whose broker metadata no longer lists.
    pub fn prune(&mut self, metadata: &Metadata, now: Instant) {
        self.preferred.retain(|tp, &mut (replica, expires_at)| {
            let keep = now < expires_at && metadata.broker(replica).is_some();
            if !keep {
                tracing::debug!(partition = %tp, replica, "preferred read replica dropped: back to the leader");
            }
            keep
        });
    }

    /// The leader named `replica` as `tp`'s preferred read replica for `lease`.
    pub fn update(&mut self, tp: &TopicPartition, replica: i32, now: Instant, lease: Duration) {
        if self.preferred.get(tp).map(|&(r, _)| r) != Some(replica) {
            tracing::debug!(partition = %tp, replica, "fetching from the preferred read replica");
        }
        self.preferred.insert(tp.clone(), (replica, now + lease));
    }

    /// The replica `tp` is fetched from instead of its leader, if any.
    pub fn preferred(&self, tp: &TopicPartition) -> Option<i32> {
        self.preferred.get(tp).map(|&(replica, _)| replica)
    }

    /// A fetch of `tp` failed: fetch it from the leader again. Returns whether a preference
    /// was dropped.
    pub fn clear(&mut self, tp: &TopicPartition) -> bool {
        self.preferred.remove(tp).is_some()
    }

    /// Every partition's preferred read replica (for the `preferred-read-replica` metric).
    pub fn replicas(&self) -> impl Iterator<Item = (&TopicPartition, i32)> + Clone {
        self.preferred
            .iter()
            .map(|(tp, &(replica, _))| (tp, replica))
    }

    /// Forgets partitions no longer assigned.
    pub fn retain(&mut self, assigned: impl Fn(&TopicPartition) -> bool) {
        self.preferred.retain(|tp, _| assigned(tp));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internals::test_support::metadata;

    #[test]
    fn a_preference_holds_for_its_lease_and_only_for_a_known_broker() {
        let md = metadata(&[(0, 1, 5)]);
        let tp = TopicPartition::new("t", 0);
        let now = Instant::now();
        let lease = Duration::from_millis(1_000);
        let mut r = ReadReplicas::default();
        assert_eq!(r.select(&tp, 1, &md, now), 1, "the leader by default");
        r.update(&tp, 2, now, lease);
        assert_eq!(r.select(&tp, 1, &md, now + Duration::from_millis(999)), 2);
        assert_eq!(r.select(&tp, 1, &md, now + Duration::from_millis(1_000)), 1);
        r.prune(&md, now + Duration::from_millis(1_000));
        assert_eq!(r.preferred(&tp), None, "an expired lease is dropped");
        r.update(&tp, 9, now, lease);
        assert_eq!(r.select(&tp, 1, &md, now), 1, "broker 9 is not in metadata");
        r.update(&tp, 2, now, lease);
        assert!(r.clear(&tp));
        assert!(!r.clear(&tp));
        assert_eq!(r.select(&tp, 1, &md, now), 1);
        r.update(&tp, 2, now, lease);
        r.retain(|_| false);
        assert_eq!(r.select(&tp, 1, &md, now), 1);
    }
}
