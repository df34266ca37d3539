//! The algorithm shared by the `sticky` and `cooperative-sticky` assignors (Java's
//! `AbstractStickyAssignor`): balance first, then keep every member's previous partitions
//! wherever balance allows.
//!
//! Two builders, as in Java. When every member subscribes to the same topics the *constrained*
//! builder computes exact quotas (`floor` and `ceil` of partitions / members) and lets each
//! member keep up to its quota of what it owned, dealing out the rest. Otherwise the *general*
//! builder keeps all valid owned partitions, hands out the unowned ones to the least-loaded
//! eligible member, and then moves partitions one at a time while that improves balance,
//! preferring to move a partition back to its previous owner and never letting partitions of one
//! topic swap between the same two members.
//!
//! Ownership claims are resolved by generation: a partition claimed by members of different
//! generations goes to the highest generation, and one claimed by two members of the same
//! generation (which a correct group never produces, KAFKA-12984/KAFKA-13419) is treated as owned
//! by neither.
//!
//! Deliberate hardening against malformed subscriptions, which Java does not do: a member's
//! owned partitions are de-duplicated, partitions beyond a topic's partition count are ignored,
//! and members count as having equal subscriptions only if their topic *sets* are equal (Java
//! lets a member with no topics match any other).

use std::collections::{BTreeMap, BTreeSet};

use super::{
    rack_of, subscribed_topics, use_rack_aware_assignment, AssignorError, ClusterMetadata,
    GroupSubscription, Subscription, TopicPartition, DEFAULT_GENERATION,
};

/// What a member says it owned, and in which generation (Java's `AbstractStickyAssignor.MemberData`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberData {
    /// The partitions the member owned.
    pub partitions: Vec<TopicPartition>,
    /// The generation it owned them in, if known.
    pub generation: Option<i32>,
}

/// The sticky algorithm's result.
pub(crate) struct StickyAssignment {
    /// Member id → partitions, one entry per subscriber.
    pub assignment: BTreeMap<String, Vec<TopicPartition>>,
    /// Partitions given to a member other than their current owner → that member, as tracked by
    /// the constrained builder; `None` after the general builder, whose callers must compute it.
    pub partitions_transferring_ownership: Option<BTreeMap<TopicPartition, String>>,
}

type Topics<'a> = BTreeMap<String, &'a [BTreeSet<String>]>;

/// Runs the sticky algorithm; `member_data` reads a subscription the way the concrete assignor
/// encodes ownership (user data for `sticky`, owned partitions for `cooperative-sticky`).
pub(crate) fn assign(
    assignor: &'static str,
    cluster: &ClusterMetadata,
    subscriptions: &GroupSubscription,
    member_data: impl Fn(&Subscription) -> MemberData,
) -> Result<StickyAssignment, AssignorError> {
    if subscriptions.is_empty() {
        return Ok(StickyAssignment {
            assignment: BTreeMap::new(),
            partitions_transferring_ownership: Some(BTreeMap::new()),
        });
    }
    let topics = subscribed_topics(cluster, subscriptions);
    let rack_info = RackInfo::new(&topics, subscriptions);
    let owned = previous_ownership(&topics, subscriptions, &member_data);
    if owned.all_subscriptions_equal {
        let mut transferring = BTreeMap::new();
        let assignment = ConstrainedAssignmentBuilder::new(
            assignor,
            &topics,
            &rack_info,
            &owned.partitions_with_multiple_previous_owners,
            &mut transferring,
            owned.consumer_to_owned_partitions.len(),
        )
        .build(owned.consumer_to_owned_partitions)?;
        Ok(StickyAssignment {
            assignment,
            partitions_transferring_ownership: Some(transferring),
        })
    } else {
        let assignment = GeneralAssignmentBuilder::new(
            assignor,
            &topics,
            &rack_info,
            owned.consumer_to_owned_partitions,
            subscriptions,
        )
        .build(subscriptions, owned.max_generation, &member_data)?;
        Ok(StickyAssignment {
            assignment,
            partitions_transferring_ownership: None,
        })
    }
}

/// What the members' claims add up to (Java's `allSubscriptionsEqual` and its out-parameters).
struct PreviousOwnership {
    all_subscriptions_equal: bool,
    /// Each member's still-valid previously owned partitions, after conflicts are resolved.
    consumer_to_owned_partitions: BTreeMap<String, Vec<TopicPartition>>,
    partitions_with_multiple_previous_owners: BTreeSet<TopicPartition>,
    max_generation: i32,
}

fn previous_ownership(
    topics: &Topics<'_>,
    subscriptions: &GroupSubscription,
    member_data: &impl Fn(&Subscription) -> MemberData,
) -> PreviousOwnership {
    let mut first_topics: Option<BTreeSet<&str>> = None;
    let mut all_subscriptions_equal = true;
    let mut max_generation = DEFAULT_GENERATION;
    let mut consumer_to_owned: BTreeMap<String, Vec<TopicPartition>> = BTreeMap::new();
    let mut multiple_owners = BTreeSet::new();
    let mut owner_of: BTreeMap<TopicPartition, &str> = BTreeMap::new();

    for (consumer, subscription) in subscriptions {
        let member_topics: BTreeSet<&str> =
            subscription.topics.iter().map(String::as_str).collect();
        match &first_topics {
            None => first_topics = Some(member_topics),
            Some(first) => all_subscriptions_equal &= *first == member_topics,
        }
        let data = member_data(subscription);
        let generation = data.generation.unwrap_or(DEFAULT_GENERATION);
        max_generation = max_generation.max(generation);

        let mut owned = Vec::new();
        let mut seen = BTreeSet::new();
        for tp in data.partitions {
            let exists = topics
                .get(&*tp.topic)
                .is_some_and(|racks| usize::try_from(tp.partition).is_ok_and(|p| p < racks.len()));
            if !exists || !seen.insert(tp.clone()) {
                continue;
            }
            match owner_of.get(&tp).copied() {
                None => {
                    owner_of.insert(tp.clone(), consumer);
                    owned.push(tp);
                }
                Some(other) => {
                    // Java compares against the other member's *subscription* generation here,
                    // not its member data's; kept for identical results.
                    let other_generation = subscriptions
                        .get(other)
                        .and_then(|s| s.generation_id)
                        .unwrap_or(DEFAULT_GENERATION);
                    if generation >= other_generation {
                        if let Some(list) = consumer_to_owned.get_mut(other) {
                            list.retain(|p| *p != tp);
                        }
                        owner_of.insert(tp.clone(), consumer);
                        if generation == other_generation {
                            multiple_owners.insert(tp);
                        } else {
                            owned.push(tp);
                        }
                    }
                }
            }
        }
        consumer_to_owned.insert(consumer.clone(), owned);
    }
    PreviousOwnership {
        all_subscriptions_equal,
        consumer_to_owned_partitions: consumer_to_owned,
        partitions_with_multiple_previous_owners: multiple_owners,
        max_generation,
    }
}

/// Members' and replicas' racks for rack-aware sticky assignment (Java's `RackInfo`).
struct RackInfo<'a> {
    topics: &'a Topics<'a>,
    /// Member → rack, only if rack-aware assignment is in use.
    consumer_racks: BTreeMap<&'a str, &'a str>,
    /// Members per rack, whether or not rack-aware assignment is in use (Java sorts unassigned
    /// partitions by it either way).
    consumers_by_rack: BTreeMap<&'a str, usize>,
}

impl<'a> RackInfo<'a> {
    fn new(topics: &'a Topics<'a>, subscriptions: &'a GroupSubscription) -> Self {
        let mut consumers_by_rack: BTreeMap<&str, usize> = BTreeMap::new();
        for subscription in subscriptions.values() {
            if let Some(rack) = rack_of(subscription) {
                *consumers_by_rack.entry(rack).or_default() += 1;
            }
        }
        let rack_set: BTreeSet<&str> = consumers_by_rack.keys().copied().collect();
        let rack_aware = !consumers_by_rack.is_empty()
            && use_rack_aware_assignment(&rack_set, topics.values().flat_map(|racks| racks.iter()));
        let consumer_racks = if rack_aware {
            subscriptions
                .iter()
                .filter_map(|(member, s)| rack_of(s).map(|rack| (member.as_str(), rack)))
                .collect()
        } else {
            BTreeMap::new()
        };
        Self {
            topics,
            consumer_racks,
            consumers_by_rack,
        }
    }

    fn partition_racks(&self, tp: &TopicPartition) -> Option<&'a BTreeSet<String>> {
        if self.consumer_racks.is_empty() {
            return None;
        }
        let racks: &'a [BTreeSet<String>] = self.topics.get(&*tp.topic)?;
        racks.get(usize::try_from(tp.partition).ok()?)
    }

    /// The member has a rack and no replica of `tp` is on it.
    fn racks_mismatch(&self, consumer: &str, tp: &TopicPartition) -> bool {
        match self.consumer_racks.get(consumer) {
            None => false,
            Some(rack) => !self.partition_racks(tp).is_some_and(|r| r.contains(*rack)),
        }
    }

    /// Partitions with the fewest same-rack members first, so the scarce matches are made before
    /// the plentiful ones use up the quotas.
    fn sort_partitions_by_rack_consumers(&self, partitions: &mut [TopicPartition]) {
        if self.consumers_by_rack.is_empty() {
            return;
        }
        partitions.sort_by_cached_key(|tp| {
            let racks = self
                .topics
                .get(&*tp.topic)
                .and_then(|r| usize::try_from(tp.partition).ok().and_then(|p| r.get(p)));
            racks.map_or(0, |racks| {
                racks
                    .iter()
                    .map(|rack| {
                        self.consumers_by_rack
                            .get(rack.as_str())
                            .copied()
                            .unwrap_or(0)
                    })
                    .sum::<usize>()
            })
        });
    }

    /// The index of the first member of `consumers`, cycling from `first_index`, on a rack with
    /// a replica of `tp`.
    fn next_rack_consumer(
        &self,
        tp: &TopicPartition,
        consumers: &[String],
        first_index: usize,
    ) -> Option<usize> {
        let racks = self.partition_racks(tp).filter(|r| !r.is_empty())?;
        (0..consumers.len())
            .map(|i| (first_index + i) % consumers.len())
            .find(|&i| {
                self.consumer_racks
                    .get(consumers[i].as_str())
                    .is_some_and(|rack| racks.contains(*rack))
            })
    }
}

fn all_partitions_of(topics: &Topics<'_>, sorted_topics: &[&String]) -> Vec<TopicPartition> {
    sorted_topics
        .iter()
        .flat_map(|topic| {
            let count = topics.get(*topic).map_or(0, |r| r.len());
            (0..count)
                .filter_map(|p| i32::try_from(p).ok())
                .map(|p| TopicPartition::new((*topic).clone(), p))
        })
        .collect()
}

/// Java's `ConstrainedAssignmentBuilder`, for groups whose members all subscribe to the same
/// topics.
struct ConstrainedAssignmentBuilder<'a> {
    assignor: &'static str,
    topics: &'a Topics<'a>,
    rack_info: &'a RackInfo<'a>,
    partitions_with_multiple_previous_owners: &'a BTreeSet<TopicPartition>,
    partitions_transferring_ownership: &'a mut BTreeMap<TopicPartition, String>,
    maybe_revoked_partitions: BTreeMap<TopicPartition, String>,
    unfilled_members_with_under_min_quota_partitions: Vec<String>,
    unfilled_members_with_exactly_min_quota_partitions: Vec<String>,
    min_quota: usize,
    max_quota: usize,
    expected_num_members_with_over_min_quota_partitions: usize,
    current_num_members_with_over_min_quota_partitions: usize,
    assignment: BTreeMap<String, Vec<TopicPartition>>,
}

impl<'a> ConstrainedAssignmentBuilder<'a> {
    fn new(
        assignor: &'static str,
        topics: &'a Topics<'a>,
        rack_info: &'a RackInfo<'a>,
        partitions_with_multiple_previous_owners: &'a BTreeSet<TopicPartition>,
        partitions_transferring_ownership: &'a mut BTreeMap<TopicPartition, String>,
        num_consumers: usize,
    ) -> Self {
        let total: usize = topics.values().map(|r| r.len()).sum();
        Self {
            assignor,
            topics,
            rack_info,
            partitions_with_multiple_previous_owners,
            partitions_transferring_ownership,
            maybe_revoked_partitions: BTreeMap::new(),
            unfilled_members_with_under_min_quota_partitions: Vec::new(),
            unfilled_members_with_exactly_min_quota_partitions: Vec::new(),
            min_quota: total / num_consumers,
            max_quota: total.div_ceil(num_consumers),
            expected_num_members_with_over_min_quota_partitions: total % num_consumers,
            current_num_members_with_over_min_quota_partitions: 0,
            assignment: BTreeMap::new(),
        }
    }

    fn build(
        mut self,
        consumer_to_owned_partitions: BTreeMap<String, Vec<TopicPartition>>,
    ) -> Result<BTreeMap<String, Vec<TopicPartition>>, AssignorError> {
        let assigned = self.assign_owned_partitions(consumer_to_owned_partitions);
        let mut sorted_topics: Vec<&String> = self.topics.keys().collect();
        sorted_topics.sort();
        let mut unassigned: Vec<TopicPartition> = all_partitions_of(self.topics, &sorted_topics)
            .into_iter()
            .filter(|tp| !assigned.contains(tp))
            .collect();
        self.unfilled_members_with_under_min_quota_partitions.sort();
        self.unfilled_members_with_exactly_min_quota_partitions
            .sort();
        self.rack_info
            .sort_partitions_by_rack_consumers(&mut unassigned);

        self.assign_rack_aware_round_robin(&mut unassigned);
        self.assign_round_robin(&unassigned)?;
        self.verify_unfilled_members()?;
        Ok(self.assignment)
    }

    /// Step 1: every member keeps what it owned, up to its quota (rack-matching partitions only,
    /// when rack-aware).
    fn assign_owned_partitions(
        &mut self,
        consumer_to_owned_partitions: BTreeMap<String, Vec<TopicPartition>>,
    ) -> BTreeSet<TopicPartition> {
        let mut assigned = BTreeSet::new();
        for (consumer, owned) in consumer_to_owned_partitions {
            let mut owned: Vec<TopicPartition> = owned
                .into_iter()
                .filter(|tp| {
                    let mismatch = self.rack_info.racks_mismatch(&consumer, tp);
                    if mismatch {
                        self.maybe_revoked_partitions
                            .insert(tp.clone(), consumer.clone());
                    }
                    !mismatch
                })
                .filter(|tp| !self.partitions_with_multiple_previous_owners.contains(tp))
                .collect();
            owned.sort_by(|a, b| {
                a.partition
                    .cmp(&b.partition)
                    .then_with(|| a.topic.cmp(&b.topic))
            });

            let keep = if owned.len() < self.min_quota {
                self.unfilled_members_with_under_min_quota_partitions
                    .push(consumer.clone());
                owned.len()
            } else if owned.len() >= self.max_quota
                && self.current_num_members_with_over_min_quota_partitions
                    < self.expected_num_members_with_over_min_quota_partitions
            {
                self.current_num_members_with_over_min_quota_partitions += 1;
                if self.current_num_members_with_over_min_quota_partitions
                    == self.expected_num_members_with_over_min_quota_partitions
                {
                    self.unfilled_members_with_exactly_min_quota_partitions
                        .clear();
                }
                self.max_quota
            } else {
                if self.current_num_members_with_over_min_quota_partitions
                    < self.expected_num_members_with_over_min_quota_partitions
                {
                    self.unfilled_members_with_exactly_min_quota_partitions
                        .push(consumer.clone());
                }
                self.min_quota
            };
            for tp in owned.split_off(keep) {
                self.maybe_revoked_partitions.insert(tp, consumer.clone());
            }
            assigned.extend(owned.iter().cloned());
            self.assignment.insert(consumer, owned);
        }
        assigned
    }

    /// Step 2 (rack-aware only): fill members round-robin with partitions on their rack.
    fn assign_rack_aware_round_robin(&mut self, unassigned: &mut Vec<TopicPartition>) {
        if self.rack_info.consumer_racks.is_empty() {
            return;
        }
        let mut next_unfilled_consumer_index = 0;
        let mut i = 0;
        while i < unassigned.len() {
            let tp = &unassigned[i];
            let mut consumer = None;
            let under = &self.unfilled_members_with_under_min_quota_partitions;
            if let Some(mut index) =
                self.rack_info
                    .next_rack_consumer(tp, under, next_unfilled_consumer_index)
            {
                let chosen = under[index].clone();
                let count = self.assigned_count(&chosen) + 1;
                if count >= self.min_quota {
                    self.unfilled_members_with_under_min_quota_partitions
                        .remove(index);
                    if count < self.max_quota
                        && self.current_num_members_with_over_min_quota_partitions
                            < self.expected_num_members_with_over_min_quota_partitions
                    {
                        self.unfilled_members_with_exactly_min_quota_partitions
                            .push(chosen.clone());
                    }
                } else {
                    index += 1;
                }
                let remaining = self.unfilled_members_with_under_min_quota_partitions.len();
                next_unfilled_consumer_index = if remaining == 0 { 0 } else { index % remaining };
                consumer = Some(chosen);
            } else if !self
                .unfilled_members_with_exactly_min_quota_partitions
                .is_empty()
            {
                let exact = &self.unfilled_members_with_exactly_min_quota_partitions;
                if let Some(first) = self.rack_info.next_rack_consumer(tp, exact, 0) {
                    let chosen = exact[first].clone();
                    if self.assigned_count(&chosen) + 1 == self.max_quota {
                        self.unfilled_members_with_exactly_min_quota_partitions
                            .remove(first);
                        self.current_num_members_with_over_min_quota_partitions += 1;
                        if self.current_num_members_with_over_min_quota_partitions
                            == self.expected_num_members_with_over_min_quota_partitions
                        {
                            self.unfilled_members_with_exactly_min_quota_partitions
                                .clear();
                        }
                    }
                    consumer = Some(chosen);
                }
            }
            match consumer {
                Some(chosen) => {
                    let tp = unassigned.remove(i);
                    self.assign_new_partition(tp, &chosen);
                }
                None => i += 1,
            }
        }
    }

    /// Step 3: fill members round-robin up to the minimum quota, then hand the extra partitions
    /// to members at exactly the minimum.
    fn assign_round_robin(&mut self, unassigned: &[TopicPartition]) -> Result<(), AssignorError> {
        // Position of Java's iterator over the under-quota members.
        let mut next = 0;
        for tp in unassigned {
            let consumer = if next < self.unfilled_members_with_under_min_quota_partitions.len() {
                next += 1;
                self.unfilled_members_with_under_min_quota_partitions[next - 1].clone()
            } else if self
                .unfilled_members_with_under_min_quota_partitions
                .is_empty()
            {
                if self
                    .unfilled_members_with_exactly_min_quota_partitions
                    .is_empty()
                {
                    return Err(self.invariant(format!(
                        "no more unfilled consumers to be assigned, {tp} and later partitions remain"
                    )));
                }
                self.unfilled_members_with_exactly_min_quota_partitions
                    .remove(0)
            } else {
                next = 1;
                self.unfilled_members_with_under_min_quota_partitions[0].clone()
            };
            let count = self.assign_new_partition(tp.clone(), &consumer);
            if count == self.min_quota {
                // Only an under-quota member can land exactly on the minimum.
                next -= 1;
                self.unfilled_members_with_under_min_quota_partitions
                    .remove(next);
                self.unfilled_members_with_exactly_min_quota_partitions
                    .push(consumer);
            } else if count == self.max_quota {
                self.current_num_members_with_over_min_quota_partitions += 1;
            }
        }
        Ok(())
    }

    fn verify_unfilled_members(&self) -> Result<(), AssignorError> {
        if self
            .unfilled_members_with_under_min_quota_partitions
            .is_empty()
        {
            return Ok(());
        }
        if self.current_num_members_with_over_min_quota_partitions
            != self.expected_num_members_with_over_min_quota_partitions
        {
            return Err(self.invariant(format!(
                "{} members have more than the minimum quota, {} expected, and no partitions are left",
                self.current_num_members_with_over_min_quota_partitions,
                self.expected_num_members_with_over_min_quota_partitions
            )));
        }
        for member in &self.unfilled_members_with_under_min_quota_partitions {
            let count = self.assigned_count(member);
            if count != self.min_quota {
                return Err(self.invariant(format!(
                    "consumer {member} has {count} partitions, below the minimum quota {}",
                    self.min_quota
                )));
            }
        }
        Ok(())
    }

    fn assigned_count(&self, consumer: &str) -> usize {
        self.assignment.get(consumer).map_or(0, Vec::len)
    }

    /// Assigns a partition the member did not keep from its own; records a transfer if another
    /// member owned it.
    fn assign_new_partition(&mut self, tp: TopicPartition, consumer: &str) -> usize {
        let transferring = self
            .maybe_revoked_partitions
            .get(&tp)
            .is_some_and(|previous| previous != consumer)
            || self.partitions_with_multiple_previous_owners.contains(&tp);
        if transferring {
            self.partitions_transferring_ownership
                .insert(tp.clone(), consumer.to_owned());
        }
        let list = self.assignment.entry(consumer.to_owned()).or_default();
        list.push(tp);
        list.len()
    }

    fn invariant(&self, detail: String) -> AssignorError {
        AssignorError::InvariantViolated {
            assignor: self.assignor,
            detail,
        }
    }
}

/// A partition's move during one rebalance.
type ConsumerPair = (String, String);

/// Tracks partition moves within one general-builder run so a move that would undo an earlier
/// one (within the same topic) moves the earlier partition back instead (Java's
/// `PartitionMovements`).
#[derive(Default)]
struct PartitionMovements {
    movements: BTreeMap<TopicPartition, ConsumerPair>,
    movements_by_topic: BTreeMap<String, BTreeMap<ConsumerPair, BTreeSet<TopicPartition>>>,
}

impl PartitionMovements {
    fn remove_record(&mut self, tp: &TopicPartition) -> Option<ConsumerPair> {
        let pair = self.movements.remove(tp)?;
        if let Some(by_pair) = self.movements_by_topic.get_mut(&*tp.topic) {
            if let Some(set) = by_pair.get_mut(&pair) {
                set.remove(tp);
                if set.is_empty() {
                    by_pair.remove(&pair);
                }
            }
            if by_pair.is_empty() {
                self.movements_by_topic.remove(&*tp.topic);
            }
        }
        Some(pair)
    }

    fn add_record(&mut self, tp: TopicPartition, pair: ConsumerPair) {
        self.movements_by_topic
            .entry(tp.topic.to_string())
            .or_default()
            .entry(pair.clone())
            .or_default()
            .insert(tp.clone());
        self.movements.insert(tp, pair);
    }

    fn move_partition(&mut self, tp: &TopicPartition, old: &str, new: &str) {
        match self.remove_record(tp) {
            // Moved before: record the net move, or nothing if it is back where it started.
            Some((src, _)) => {
                if src != new {
                    self.add_record(tp.clone(), (src, new.to_owned()));
                }
            }
            None => self.add_record(tp.clone(), (old.to_owned(), new.to_owned())),
        }
    }

    fn actual_partition_to_be_moved(
        &self,
        tp: &TopicPartition,
        old: &str,
        new: &str,
    ) -> TopicPartition {
        let Some(by_pair) = self.movements_by_topic.get(&*tp.topic) else {
            return tp.clone();
        };
        let old = self.movements.get(tp).map_or(old, |(src, _)| src.as_str());
        by_pair
            .get(&(new.to_owned(), old.to_owned()))
            .and_then(|set| set.iter().next())
            .unwrap_or(tp)
            .clone()
    }
}

/// Java's `GeneralAssignmentBuilder`, for groups whose members subscribe to different topics.
struct GeneralAssignmentBuilder<'a> {
    assignor: &'static str,
    topics: &'a Topics<'a>,
    rack_info: &'a RackInfo<'a>,
    total_partitions: usize,
    topic2_all_potential_consumers: BTreeMap<String, Vec<String>>,
    consumer2_all_potential_topics: BTreeMap<String, BTreeSet<String>>,
    current_assignment: BTreeMap<String, Vec<TopicPartition>>,
    current_partition_consumer: BTreeMap<TopicPartition, String>,
    sorted_all_partitions: Vec<TopicPartition>,
    /// Members ascending by assigned count, then id (Java's `sortedCurrentSubscriptions`).
    sorted_current_subscriptions: BTreeSet<(usize, String)>,
    revocation_required: bool,
    partition_movements: PartitionMovements,
}

impl<'a> GeneralAssignmentBuilder<'a> {
    fn new(
        assignor: &'static str,
        topics: &'a Topics<'a>,
        rack_info: &'a RackInfo<'a>,
        current_assignment: BTreeMap<String, Vec<TopicPartition>>,
        subscriptions: &GroupSubscription,
    ) -> Self {
        let mut topic2_all_potential_consumers: BTreeMap<String, Vec<String>> =
            topics.keys().map(|t| (t.clone(), Vec::new())).collect();
        let mut consumer2_all_potential_topics = BTreeMap::new();
        for (consumer, subscription) in subscriptions {
            let mut potential = BTreeSet::new();
            for topic in &subscription.topics {
                if let Some(consumers) = topic2_all_potential_consumers.get_mut(topic) {
                    if potential.insert(topic.clone()) {
                        consumers.push(consumer.clone());
                    }
                }
            }
            consumer2_all_potential_topics.insert(consumer.clone(), potential);
        }
        let current_partition_consumer = current_assignment
            .iter()
            .flat_map(|(consumer, tps)| tps.iter().map(move |tp| (tp.clone(), consumer.clone())))
            .collect();
        // Topics with the fewest potential consumers first: they have the fewest options.
        let mut sorted_topics: Vec<&String> = topic2_all_potential_consumers.keys().collect();
        sorted_topics.sort_by_key(|t| (topic2_all_potential_consumers[*t].len(), *t));
        let sorted_all_partitions = all_partitions_of(topics, &sorted_topics);
        Self {
            assignor,
            topics,
            rack_info,
            total_partitions: topics.values().map(|r| r.len()).sum(),
            topic2_all_potential_consumers,
            consumer2_all_potential_topics,
            current_assignment,
            current_partition_consumer,
            sorted_all_partitions,
            sorted_current_subscriptions: BTreeSet::new(),
            revocation_required: false,
            partition_movements: PartitionMovements::default(),
        }
    }

    fn build(
        mut self,
        subscriptions: &GroupSubscription,
        max_generation: i32,
        member_data: &impl Fn(&Subscription) -> MemberData,
    ) -> Result<BTreeMap<String, Vec<TopicPartition>>, AssignorError> {
        let prev_assignment =
            prepopulate_previous_assignment(subscriptions, max_generation, member_data);
        let assigned = self.assign_owned_partitions(subscriptions);
        let unassigned: Vec<TopicPartition> = self
            .sorted_all_partitions
            .iter()
            .filter(|tp| !assigned.contains(*tp))
            .cloned()
            .collect();
        self.sorted_current_subscriptions = self
            .current_assignment
            .iter()
            .map(|(c, tps)| (tps.len(), c.clone()))
            .collect();
        self.balance(&prev_assignment, unassigned)?;
        Ok(self.current_assignment)
    }

    /// Keeps each member's owned partitions that it still subscribes to (and, rack-aware, that
    /// are on its rack).
    fn assign_owned_partitions(
        &mut self,
        subscriptions: &GroupSubscription,
    ) -> BTreeSet<TopicPartition> {
        let mut assigned = BTreeSet::new();
        for (consumer, partitions) in &mut self.current_assignment {
            let Some(subscription) = subscriptions.get(consumer) else {
                continue;
            };
            partitions.retain(|tp| {
                if !subscription.topics.iter().any(|t| **t == *tp.topic)
                    || self.rack_info.racks_mismatch(consumer, tp)
                {
                    self.current_partition_consumer.remove(tp);
                    self.revocation_required = true;
                    false
                } else {
                    assigned.insert(tp.clone());
                    true
                }
            });
        }
        assigned
    }

    fn size(&self, consumer: &str) -> Option<usize> {
        self.current_assignment.get(consumer).map(Vec::len)
    }

    fn max_assignment_size(&self, consumer: &str) -> usize {
        let potential = &self.consumer2_all_potential_topics[consumer];
        if potential.len() == self.topics.len() {
            self.total_partitions
        } else {
            potential
                .iter()
                .map(|t| self.topics.get(t).map_or(0, |r| r.len()))
                .sum()
        }
    }

    fn is_balanced(&self) -> bool {
        let (Some((min, _)), Some((max, _))) = (
            self.sorted_current_subscriptions.first(),
            self.sorted_current_subscriptions.last(),
        ) else {
            return true;
        };
        if *min + 1 >= *max {
            return true;
        }
        // A member short of everything it could have must not be able to take a partition from a
        // member with two or more partitions more than it.
        for (count, consumer) in &self.sorted_current_subscriptions {
            if *count == self.max_assignment_size(consumer) {
                continue;
            }
            for topic in &self.consumer2_all_potential_topics[consumer] {
                let partitions = self.topics.get(topic).map_or(0, |r| r.len());
                for p in (0..partitions).filter_map(|p| i32::try_from(p).ok()) {
                    let tp = TopicPartition::new(topic.clone(), p);
                    let Some(owner) = self.current_partition_consumer.get(&tp) else {
                        continue;
                    };
                    if owner == consumer {
                        continue;
                    }
                    if self.size(owner).is_some_and(|other| count + 1 < other) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// The balance score: the sum over member pairs of the difference in assigned counts (0 is
    /// perfectly balanced).
    fn balance_score(assignment: &BTreeMap<String, Vec<TopicPartition>>) -> usize {
        let mut sizes: Vec<usize> = assignment.values().map(Vec::len).collect();
        sizes.sort_unstable();
        sizes
            .iter()
            .enumerate()
            .map(|(i, s)| s * i - sizes[..i].iter().sum::<usize>())
            .sum()
    }

    fn add_partition(&mut self, consumer: &str, tp: TopicPartition) {
        if let Some(list) = self.current_assignment.get_mut(consumer) {
            self.sorted_current_subscriptions
                .remove(&(list.len(), consumer.to_owned()));
            list.push(tp.clone());
            self.sorted_current_subscriptions
                .insert((list.len(), consumer.to_owned()));
        }
        self.current_partition_consumer
            .insert(tp, consumer.to_owned());
    }

    fn remove_partition(&mut self, consumer: &str, tp: &TopicPartition) {
        if let Some(list) = self.current_assignment.get_mut(consumer) {
            self.sorted_current_subscriptions
                .remove(&(list.len(), consumer.to_owned()));
            list.retain(|p| p != tp);
            self.sorted_current_subscriptions
                .insert((list.len(), consumer.to_owned()));
        }
    }

    /// Gives `tp` to the least-loaded member that can take it; false if none can.
    fn maybe_assign_partition(&mut self, tp: &TopicPartition, rack_aware: bool) -> bool {
        let chosen = self
            .sorted_current_subscriptions
            .iter()
            .map(|(_, c)| c)
            .find(|c| {
                self.consumer2_all_potential_topics[c.as_str()].contains(&*tp.topic)
                    && !(rack_aware && self.rack_info.racks_mismatch(c, tp))
            })
            .cloned();
        match chosen {
            Some(consumer) => {
                self.add_partition(&consumer, tp.clone());
                true
            }
            None => false,
        }
    }

    fn maybe_assign(
        &mut self,
        partitions: &mut Vec<TopicPartition>,
        rack_aware: bool,
        remove_assigned: bool,
    ) {
        let mut kept = Vec::with_capacity(partitions.len());
        for tp in partitions.drain(..) {
            let has_consumers = !self.topic2_all_potential_consumers[&*tp.topic].is_empty();
            let assigned = has_consumers && self.maybe_assign_partition(&tp, rack_aware);
            if !(assigned && remove_assigned) {
                kept.push(tp);
            }
        }
        *partitions = kept;
    }

    fn can_topic_participate_in_reassignment(&self, topic: &str) -> bool {
        self.topic2_all_potential_consumers
            .get(topic)
            .is_some_and(|c| c.len() >= 2)
    }

    fn can_consumer_participate_in_reassignment(&self, consumer: &str) -> bool {
        let Some(partitions) = self.current_assignment.get(consumer) else {
            return false;
        };
        partitions.len() < self.max_assignment_size(consumer)
            || partitions
                .iter()
                .any(|tp| self.can_topic_participate_in_reassignment(&tp.topic))
    }

    fn balance(
        &mut self,
        prev_assignment: &BTreeMap<TopicPartition, (String, i32)>,
        mut unassigned: Vec<TopicPartition>,
    ) -> Result<(), AssignorError> {
        let initializing = self
            .sorted_current_subscriptions
            .last()
            .is_none_or(|(count, _)| *count == 0);

        // Rack-matched first, then whatever is left without rack matching.
        let mut to_assign = unassigned.clone();
        if !self.rack_info.consumer_racks.is_empty() {
            self.maybe_assign(&mut to_assign, true, true);
        }
        self.maybe_assign(&mut to_assign, false, false);

        // Only partitions with two or more potential consumers, and members that could change,
        // take part in the reassignment.
        let fixed_topics: BTreeSet<String> = self
            .topic2_all_potential_consumers
            .keys()
            .filter(|t| !self.can_topic_participate_in_reassignment(t))
            .cloned()
            .collect();
        self.sorted_all_partitions
            .retain(|tp| !fixed_topics.contains(&*tp.topic));
        unassigned.retain(|tp| !fixed_topics.contains(&*tp.topic));
        let mut fixed_assignments = BTreeMap::new();
        let consumers: Vec<String> = self
            .consumer2_all_potential_topics
            .keys()
            .cloned()
            .collect();
        for consumer in consumers {
            if !self.can_consumer_participate_in_reassignment(&consumer) {
                if let Some(partitions) = self.current_assignment.remove(&consumer) {
                    self.sorted_current_subscriptions
                        .remove(&(partitions.len(), consumer.clone()));
                    fixed_assignments.insert(consumer, partitions);
                }
            }
        }

        let pre_balance_assignment = self.current_assignment.clone();
        let pre_balance_partition_consumers = self.current_partition_consumer.clone();

        // Without subscription-driven revocations, first try balancing by moving only new partitions.
        if !self.revocation_required {
            self.perform_reassignments(&unassigned, prev_assignment)?;
        }
        let all = self.sorted_all_partitions.clone();
        let reassignment_performed = self.perform_reassignments(&all, prev_assignment)?;

        // Moving owned partitions must buy balance; otherwise keep the pre-balance assignment.
        if !initializing
            && reassignment_performed
            && Self::balance_score(&self.current_assignment)
                >= Self::balance_score(&pre_balance_assignment)
        {
            self.current_assignment = pre_balance_assignment;
            self.current_partition_consumer = pre_balance_partition_consumers;
        }
        self.current_assignment.extend(fixed_assignments);
        Ok(())
    }

    fn perform_reassignments(
        &mut self,
        reassignable: &[TopicPartition],
        prev_assignment: &BTreeMap<TopicPartition, (String, i32)>,
    ) -> Result<bool, AssignorError> {
        let mut reassignment_performed = false;
        loop {
            let mut modified = false;
            for tp in reassignable {
                if self.is_balanced() {
                    break;
                }
                let Some(consumer) = self.current_partition_consumer.get(tp).cloned() else {
                    return Err(AssignorError::InvariantViolated {
                        assignor: self.assignor,
                        detail: format!("expected partition {tp} to be assigned to a consumer"),
                    });
                };
                let size = self.size(&consumer).unwrap_or(0);
                if let Some((previous, _)) = prev_assignment.get(tp) {
                    if self
                        .size(previous)
                        .is_some_and(|prev_size| size > prev_size + 1)
                    {
                        self.reassign_partition_to(tp, previous);
                        reassignment_performed = true;
                        modified = true;
                        continue;
                    }
                }
                let others = self.topic2_all_potential_consumers[&*tp.topic].clone();
                let more_than_one_above =
                    |b: &Self, other: &str| b.size(other).is_some_and(|o| size > o + 1);
                // Prefer a better-suited member on a rack holding a replica.
                let mut found_rack_consumer = false;
                let consumer_rack = self.rack_info.consumer_racks.get(consumer.as_str());
                let partition_racks = self.rack_info.partition_racks(tp);
                if let (Some(rack), Some(racks)) = (consumer_rack, partition_racks) {
                    if racks.contains(*rack) {
                        for other in &others {
                            let same_rack = self
                                .rack_info
                                .consumer_racks
                                .get(other.as_str())
                                .is_some_and(|r| racks.contains(*r));
                            if same_rack && more_than_one_above(self, other) {
                                self.reassign_partition(tp)?;
                                found_rack_consumer = true;
                                break;
                            }
                        }
                    }
                }
                if !found_rack_consumer {
                    if let Some(_other) = others.iter().find(|o| more_than_one_above(self, o)) {
                        self.reassign_partition(tp)?;
                        found_rack_consumer = true;
                    }
                }
                if found_rack_consumer {
                    reassignment_performed = true;
                    modified = true;
                }
            }
            if !modified {
                return Ok(reassignment_performed);
            }
        }
    }

    /// Moves `tp` to the least-loaded member subscribed to its topic.
    fn reassign_partition(&mut self, tp: &TopicPartition) -> Result<(), AssignorError> {
        let new_consumer = self
            .sorted_current_subscriptions
            .iter()
            .map(|(_, c)| c)
            .find(|c| self.consumer2_all_potential_topics[c.as_str()].contains(&*tp.topic))
            .cloned()
            .ok_or_else(|| AssignorError::InvariantViolated {
                assignor: self.assignor,
                detail: format!("no consumer can take {tp}"),
            })?;
        self.reassign_partition_to(tp, &new_consumer);
        Ok(())
    }

    fn reassign_partition_to(&mut self, tp: &TopicPartition, new_consumer: &str) {
        let Some(consumer) = self.current_partition_consumer.get(tp).cloned() else {
            return;
        };
        let to_move =
            self.partition_movements
                .actual_partition_to_be_moved(tp, &consumer, new_consumer);
        let Some(old_consumer) = self.current_partition_consumer.get(&to_move).cloned() else {
            return;
        };
        self.partition_movements
            .move_partition(&to_move, &old_consumer, new_consumer);
        self.remove_partition(&old_consumer, &to_move);
        self.add_partition(new_consumer, to_move);
    }
}

/// Each partition's most recent previous owner from an *older* generation than the newest
/// (Java's `prepopulateCurrentAssignments`), so a partition can be moved back to it.
fn prepopulate_previous_assignment(
    subscriptions: &GroupSubscription,
    max_generation: i32,
    member_data: &impl Fn(&Subscription) -> MemberData,
) -> BTreeMap<TopicPartition, (String, i32)> {
    let mut prev: BTreeMap<TopicPartition, (String, i32)> = BTreeMap::new();
    for (consumer, subscription) in subscriptions {
        let data = member_data(subscription);
        let generation = match data.generation {
            Some(g) if g < max_generation => g,
            None if max_generation > DEFAULT_GENERATION => DEFAULT_GENERATION,
            _ => continue,
        };
        for tp in data.partitions {
            match prev.get(&tp) {
                Some((_, g)) if generation <= *g => {}
                _ => {
                    prev.insert(tp, (consumer.clone(), generation));
                }
            }
        }
    }
    prev
}
