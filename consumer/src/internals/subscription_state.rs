//! What the consumer subscribes to, what it is assigned and where each partition stands (Java's
//! `SubscriptionState`), owned by the background task alone. Positions themselves live in the
//! shared [`FetchBuffer`](super::fetch_buffer::FetchBuffer) (see there for why).

use std::collections::{BTreeMap, BTreeSet};

use crate::config::AutoOffsetReset;
use crate::types::TopicPartition;

/// A topic pattern of `subscribe_pattern`: Java's `Pattern.matcher(topic).matches()`, i.e. the
/// whole topic name must match.
#[derive(Debug, Clone)]
pub(crate) struct TopicPattern {
    source: String,
    anchored: regex::Regex,
}

impl TopicPattern {
    /// Compiles `pattern`; the error names what is wrong with it.
    pub fn new(pattern: &str) -> Result<Self, String> {
        regex::Regex::new(&format!("^(?:{pattern})$"))
            .map(|anchored| Self {
                source: pattern.to_owned(),
                anchored,
            })
            .map_err(|e| format!("invalid topic pattern {pattern:?}: {e}"))
    }

    /// Whether the whole of `topic` matches.
    pub fn matches(&self, topic: &str) -> bool {
        self.anchored.is_match(topic)
    }

    /// The pattern as the user wrote it.
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

/// How partitions get assigned (Java's `SubscriptionType`); the modes exclude each other.
#[derive(Debug, Clone, Default)]
pub(crate) enum SubscriptionType {
    /// Neither subscribed nor assigned.
    #[default]
    None,
    /// `subscribe(topics)`: the group assigns partitions of these topics.
    AutoTopics,
    /// `subscribe_pattern`: the group assigns partitions of the topics the pattern matches.
    AutoPattern(TopicPattern),
    /// `subscribe_regex` (Java's `AUTO_PATTERN_RE2J`): the broker matches this RE2J regex
    /// against its topics; the consumer never evaluates it.
    AutoPatternRe2j(String),
    /// `assign(partitions)`: the application chose the partitions.
    UserAssigned,
}

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
    /// Which instance of `fetch_state` this is ([`FetchStateId`]).
    state_id: FetchStateId,
    paused: bool,
    /// Being revoked: not fetched, and data fetched for it is not handed out (so nothing is
    /// consumed twice once its new owner starts).
    pending_revocation: bool,
    /// Newly assigned by the group, `on_partitions_assigned` not yet run: not fetched, so the
    /// callback can still seek (KAFKA-16107).
    awaiting_callback: bool,
}

/// Names one instance of a partition's fetch state: a new id is drawn (from one counter for
/// the whole consumer, so a partition unassigned and assigned again never sees an old id) each
/// time the state changes, the partition is assigned, or the application seeks, even to the
/// state it is already in.
///
/// Background answers change per-partition state the application can change meanwhile: a
/// ListOffsets for a reset, an OffsetForLeaderEpoch for a validation, an OffsetFetch for an
/// initializing position. Each request remembers the id it was made for and its answer is
/// applied only while the partition still has that id; otherwise the answer is for a state the
/// application (or the consumer itself) has since left and is dropped, and the request for the
/// current state goes out. This is Java's `maybeSeekUnvalidated(tp, position,
/// requestedResetStrategy)` (KAFKA-7703) made exact: comparing strategies alone would still
/// install a `seek_to_end` answered before a later `seek_to_end` of the same partition.
pub(crate) type FetchStateId = u64;

/// The subscription, the assignment and per-partition state.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionState {
    /// The last [`FetchStateId`] drawn.
    last_state_id: FetchStateId,
    subscription_type: SubscriptionType,
    /// The topics subscribed to (for a pattern: those it matched in the latest metadata).
    subscribed_topics: BTreeSet<String>,
    /// The topics any group member subscribes to, while this member leads the group: the
    /// leader's assignor needs their metadata.
    group_subscription: BTreeSet<String>,
    /// Topics of offset lookups in flight (`beginning_offsets`, `end_offsets`,
    /// `offsets_for_times`), which may be neither subscribed nor assigned: their leaders come
    /// from metadata too (Java's `ConsumerMetadata.transientTopics`).
    transient_topics: BTreeSet<String>,
    assignment: BTreeMap<TopicPartition, PartitionState>,
}

impl SubscriptionState {
    /// The subscription mode.
    pub fn subscription_type(&self) -> &SubscriptionType {
        &self.subscription_type
    }

    /// Whether the group assigns the partitions (`subscribe` or `subscribe_pattern`).
    pub fn has_auto_assigned_partitions(&self) -> bool {
        matches!(
            self.subscription_type,
            SubscriptionType::AutoTopics
                | SubscriptionType::AutoPattern(_)
                | SubscriptionType::AutoPatternRe2j(_)
        )
    }

    /// `subscribe(topics)`; returns whether the subscribed topics changed.
    pub fn subscribe(&mut self, topics: BTreeSet<String>) -> bool {
        self.subscription_type = SubscriptionType::AutoTopics;
        self.set_subscribed_topics(topics)
    }

    /// `subscribe_pattern`: the matching topics are resolved from metadata
    /// ([`Self::match_pattern`]).
    pub fn subscribe_pattern(&mut self, pattern: TopicPattern) {
        tracing::info!(pattern = pattern.as_str(), "subscribed to pattern");
        self.subscription_type = SubscriptionType::AutoPattern(pattern);
    }

    /// `subscribe_regex`: the broker resolves `regex`; no topic names are subscribed locally.
    pub fn subscribe_regex(&mut self, regex: String) {
        tracing::info!(regex = regex.as_str(), "subscribed to broker-side regex");
        self.subscription_type = SubscriptionType::AutoPatternRe2j(regex);
        self.set_subscribed_topics(BTreeSet::new());
    }

    /// The broker-side regex subscribed to, if any.
    pub fn subscribed_regex(&self) -> Option<&str> {
        match &self.subscription_type {
            SubscriptionType::AutoPatternRe2j(regex) => Some(regex),
            _ => None,
        }
    }

    /// Re-evaluates a pattern subscription against every topic the cluster has; returns
    /// whether the subscribed topics changed.
    pub fn match_pattern<'a>(&mut self, topics: impl IntoIterator<Item = &'a str>) -> bool {
        let SubscriptionType::AutoPattern(pattern) = &self.subscription_type else {
            return false;
        };
        let matched = topics
            .into_iter()
            .filter(|t| pattern.matches(t))
            .map(str::to_owned)
            .collect();
        self.set_subscribed_topics(matched)
    }

    fn set_subscribed_topics(&mut self, topics: BTreeSet<String>) -> bool {
        if self.subscribed_topics == topics {
            return false;
        }
        tracing::info!(?topics, "subscribed topics changed");
        self.subscribed_topics = topics;
        true
    }

    /// `unsubscribe`: no subscription, no assignment.
    pub fn unsubscribe(&mut self) {
        self.subscription_type = SubscriptionType::None;
        self.subscribed_topics.clear();
        self.group_subscription.clear();
        self.assignment.clear();
    }

    /// The subscribed topics.
    pub fn subscribed_topics(&self) -> &BTreeSet<String> {
        &self.subscribed_topics
    }

    /// Sets the group's topics while leading it (empty otherwise).
    pub fn set_group_subscription(&mut self, topics: BTreeSet<String>) {
        self.group_subscription = topics;
    }

    /// Sets the topics of the offset lookups in flight (see [`Self::metadata_topics`]).
    pub fn set_transient_topics(&mut self, topics: BTreeSet<String>) {
        self.transient_topics = topics;
    }

    /// The topics whose metadata the consumer needs: subscribed, the group's (leader),
    /// assigned, and those of offset lookups in flight.
    pub fn metadata_topics(&self) -> BTreeSet<String> {
        let mut topics: BTreeSet<String> = self
            .subscribed_topics
            .union(&self.group_subscription)
            .cloned()
            .collect();
        topics.extend(self.assignment.keys().map(|tp| tp.topic.to_string()));
        topics.extend(self.transient_topics.iter().cloned());
        topics
    }

    /// Whether the consumer needs `topic`'s metadata, so a broker's error for it is the
    /// application's business (Java's `ConsumerMetadata.retainTopic`): a subscribed, group,
    /// assigned or looked-up topic, or one a `subscribe_pattern` pattern matches.
    pub fn retains_metadata_of(&self, topic: &str) -> bool {
        self.subscribed_topics.contains(topic)
            || self.group_subscription.contains(topic)
            || self.transient_topics.contains(topic)
            || self.assignment.keys().any(|tp| &*tp.topic == topic)
            || matches!(&self.subscription_type, SubscriptionType::AutoPattern(p) if p.matches(topic))
    }

    /// Whether metadata must cover every topic: a pattern is matched against all of them, and
    /// a broker-side regex assigns topics by id that only metadata can name. (Java asks for the
    /// assigned topic ids there; Metadata by topic id is not served by every broker we talk
    /// to, all topics is.)
    pub fn needs_all_topics_metadata(&self) -> bool {
        matches!(
            self.subscription_type,
            SubscriptionType::AutoPattern(_) | SubscriptionType::AutoPatternRe2j(_)
        )
    }

    /// Replaces the assignment with what the group assigned; `awaiting_callback` are the new
    /// partitions `on_partitions_assigned` has yet to see. Returns the partitions removed.
    pub fn assign_from_subscribed(
        &mut self,
        partitions: &BTreeSet<TopicPartition>,
        awaiting_callback: &BTreeSet<TopicPartition>,
    ) -> Vec<TopicPartition> {
        let (added, removed) = self.replace_assignment(partitions);
        for tp in added {
            if let Some(s) = self.assignment.get_mut(&tp) {
                s.awaiting_callback = awaiting_callback.contains(&tp);
            }
        }
        removed
    }

    /// Stops fetching `partitions` ahead of their revocation.
    pub fn mark_pending_revocation(&mut self, partitions: &BTreeSet<TopicPartition>) {
        for tp in partitions {
            if let Some(s) = self.assignment.get_mut(tp) {
                s.pending_revocation = true;
            }
        }
    }

    /// `on_partitions_assigned` has run: the partitions may be fetched.
    pub fn enable_awaiting_callback(&mut self, partitions: &BTreeSet<TopicPartition>) {
        for tp in partitions {
            if let Some(s) = self.assignment.get_mut(tp) {
                s.awaiting_callback = false;
            }
        }
    }

    /// Replaces the manual assignment; returns (added, removed).
    pub fn assign_from_user(
        &mut self,
        partitions: &BTreeSet<TopicPartition>,
    ) -> (Vec<TopicPartition>, Vec<TopicPartition>) {
        self.subscription_type = if partitions.is_empty() {
            SubscriptionType::None
        } else {
            SubscriptionType::UserAssigned
        };
        self.replace_assignment(partitions)
    }

    fn replace_assignment(
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
                self.last_state_id += 1;
                self.assignment.insert(
                    tp.clone(),
                    PartitionState {
                        fetch_state: FetchState::Initializing,
                        state_id: self.last_state_id,
                        paused: false,
                        pending_revocation: false,
                        awaiting_callback: false,
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

    /// The id of a partition's current fetch state ([`FetchStateId`]).
    pub fn fetch_state_id(&self, partition: &TopicPartition) -> Option<FetchStateId> {
        self.assignment.get(partition).map(|s| s.state_id)
    }

    /// Whether `partition` is still in the fetch state instance `id` (assigned, not moved on).
    pub fn is_current(&self, partition: &TopicPartition, id: FetchStateId) -> bool {
        self.fetch_state_id(partition) == Some(id)
    }

    /// Moves a partition to `state` (no-op if unassigned); a new state gets a new id, staying
    /// in the same state keeps it, so a caller that re-asserts the state it found does not
    /// cancel the lookup under way for it.
    pub fn set_fetch_state(&mut self, partition: &TopicPartition, state: FetchState) {
        if let Some(s) = self.assignment.get_mut(partition) {
            if s.fetch_state != state {
                tracing::debug!(%partition, from = ?s.fetch_state, to = ?state, "fetch state");
                s.fetch_state = state;
                self.last_state_id += 1;
                s.state_id = self.last_state_id;
            }
        }
    }

    /// The application's seek: moves a partition to `state` with a new id even if it is
    /// already there, so the answer to any lookup made before the seek is dropped — the user's
    /// last seek wins (KAFKA-7703). No-op if unassigned.
    pub fn seek_to_state(&mut self, partition: &TopicPartition, state: FetchState) {
        if let Some(s) = self.assignment.get_mut(partition) {
            tracing::debug!(%partition, from = ?s.fetch_state, to = ?state, "fetch state (seek)");
            s.fetch_state = state;
            self.last_state_id += 1;
            s.state_id = self.last_state_id;
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

    /// Partitions in `state`, with the ids of those states.
    pub fn partitions_in_with_ids(&self, state: FetchState) -> Vec<(TopicPartition, FetchStateId)> {
        self.assignment
            .iter()
            .filter(|(_, s)| s.fetch_state == state)
            .map(|(tp, s)| (tp.clone(), s.state_id))
            .collect()
    }

    /// Partitions awaiting a reset, with their strategies and the ids of those states.
    pub fn resets_awaited(&self) -> Vec<(TopicPartition, AutoOffsetReset, FetchStateId)> {
        self.assignment
            .iter()
            .filter_map(|(tp, s)| match s.fetch_state {
                FetchState::AwaitingReset(strategy) => Some((tp.clone(), strategy, s.state_id)),
                _ => None,
            })
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

    /// Assigned, not paused, not being revoked, past `on_partitions_assigned`, with a valid
    /// position: may be fetched (the fetch manager also skips partitions with buffered data).
    pub fn fetchable_partitions(&self) -> Vec<TopicPartition> {
        self.assignment
            .iter()
            .filter(|(_, s)| {
                !s.paused
                    && !s.pending_revocation
                    && !s.awaiting_callback
                    && s.fetch_state == FetchState::Fetching
            })
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

    #[test]
    fn patterns_match_whole_topic_names_like_java() {
        let pattern = TopicPattern::new("orders-.*").unwrap();
        assert!(pattern.matches("orders-eu"));
        assert!(
            !pattern.matches("old-orders-eu"),
            "a full match, not a search"
        );
        assert!(TopicPattern::new("orders-(").is_err());
        let mut s = SubscriptionState::default();
        s.subscribe_pattern(pattern);
        assert!(s.needs_all_topics_metadata());
        assert!(s.match_pattern(["orders-eu", "payments", "orders-us"]));
        assert_eq!(
            s.subscribed_topics().iter().cloned().collect::<Vec<_>>(),
            ["orders-eu", "orders-us"]
        );
        assert!(!s.match_pattern(["orders-us", "orders-eu"]), "unchanged");
        assert!(s.has_auto_assigned_partitions());
    }

    #[test]
    fn group_assignment_fetches_only_after_the_callback_and_not_while_revoking() {
        let mut s = SubscriptionState::default();
        s.subscribe(["t".to_owned()].into_iter().collect());
        let all: BTreeSet<_> = [tp(0), tp(1)].into_iter().collect();
        let removed = s.assign_from_subscribed(&all, &[tp(1)].into_iter().collect());
        assert!(removed.is_empty());
        for p in [0, 1] {
            s.set_fetch_state(&tp(p), FetchState::Fetching);
        }
        assert_eq!(
            s.fetchable_partitions(),
            [tp(0)],
            "tp 1 awaits its callback"
        );
        s.enable_awaiting_callback(&[tp(1)].into_iter().collect());
        assert_eq!(s.fetchable_partitions(), [tp(0), tp(1)]);
        s.mark_pending_revocation(&[tp(0)].into_iter().collect());
        assert_eq!(s.fetchable_partitions(), [tp(1)], "revoking stops fetching");
        assert_eq!(s.metadata_topics(), ["t".to_owned()].into_iter().collect());
        s.unsubscribe();
        assert!(s.assigned().is_empty() && !s.has_auto_assigned_partitions());
    }
}
