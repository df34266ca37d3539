//! The `range` assignor (Java's `RangeAssignor`).
//!
//! Works topic by topic: lay the topic's partitions out in order and its subscribers in member
//! order (static members by `group.instance.id` first, then dynamic members by member id), and
//! give each subscriber a contiguous range, the first `partitions % subscribers` one extra. With
//! two members and topics of three partitions, member 0 gets partitions 0–1 of every topic and
//! member 1 partition 2: topics with equal partition counts are *co-partitioned*, which joins
//! and stream processing rely on.
//!
//! Rack awareness (KIP-881): if members report racks and some partitions have replicas on only
//! some racks, partitions are first matched to members on a rack holding a replica, within each
//! member's range quota (so balance is never traded for locality), keeping co-partitioned topics
//! aligned; the rest are then assigned as above.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    into_group_assignment, member_order, rack_of, subscribed_topics, use_rack_aware_assignment,
    AssignorError, ClusterMetadata, ConsumerPartitionAssignor, GroupAssignment, GroupSubscription,
    TopicPartition,
};

/// The `range` assignor.
#[derive(Debug, Clone, Copy, Default)]
pub struct RangeAssignor;

impl RangeAssignor {
    /// Its protocol name.
    pub const NAME: &'static str = "range";
}

impl ConsumerPartitionAssignor for RangeAssignor {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn assign(
        &self,
        cluster: &ClusterMetadata,
        subscriptions: &GroupSubscription,
    ) -> Result<GroupAssignment, AssignorError> {
        let topics = subscribed_topics(cluster, subscriptions);
        let mut states: Vec<TopicAssignmentState<'_>> = topics
            .iter()
            .map(|(topic, racks)| TopicAssignmentState::new(topic, racks, subscriptions))
            .collect();
        let mut assignment: BTreeMap<String, Vec<TopicPartition>> = subscriptions
            .keys()
            .map(|member| (member.clone(), Vec::new()))
            .collect();

        let use_rack_aware = states.iter().any(|s| s.needs_rack_aware_assignment);
        if use_rack_aware {
            assign_with_rack_matching(&mut states, &mut assignment);
        }
        for state in &mut states {
            assign_ranges(state, |_, _, _| true, &mut assignment);
        }
        if use_rack_aware {
            // Rack matching assigns out of order; Java sorts so each member's list reads naturally.
            for partitions in assignment.values_mut() {
                partitions.sort();
            }
        }
        Ok(into_group_assignment(assignment))
    }
}

/// One topic's progress through the assignment (Java's `RangeAssignor.TopicAssignmentState`).
struct TopicAssignmentState<'a> {
    topic: &'a str,
    /// The topic's subscribers in member order, with their racks.
    consumers: Vec<(&'a str, Option<&'a str>)>,
    needs_rack_aware_assignment: bool,
    /// Replica racks by partition; empty when no subscriber has a rack (as in Java, where the
    /// map's size also keys the co-partitioning groups).
    partition_racks: &'a [BTreeSet<String>],
    unassigned: BTreeSet<i32>,
    num_assigned: BTreeMap<&'a str, usize>,
    num_partitions_per_consumer: usize,
    /// Signed like Java's int: it is decremented once per member that passes the base quota.
    remaining_consumers_with_extra_partition: isize,
}

impl<'a> TopicAssignmentState<'a> {
    fn new(
        topic: &'a str,
        racks: &'a [BTreeSet<String>],
        subscriptions: &'a GroupSubscription,
    ) -> Self {
        let mut members: Vec<(&'a str, &'a super::Subscription)> = subscriptions
            .iter()
            .filter(|(_, s)| s.topics.iter().any(|t| t == topic))
            .map(|(m, s)| (m.as_str(), s))
            .collect();
        members.sort_by(|a, b| member_order(a.0, a.1).cmp(&member_order(b.0, b.1)));
        let consumers: Vec<(&'a str, Option<&'a str>)> =
            members.iter().map(|(m, s)| (*m, rack_of(s))).collect();
        let consumer_racks: BTreeSet<&str> = consumers.iter().filter_map(|c| c.1).collect();
        let partition_racks: &'a [BTreeSet<String>] = if consumer_racks.is_empty() {
            &[]
        } else {
            racks
        };
        let n = racks.len();
        let (per, extra) = match consumers.len() {
            0 => (0, 0),
            c => (n / c, n % c),
        };
        Self {
            topic,
            needs_rack_aware_assignment: use_rack_aware_assignment(
                &consumer_racks,
                partition_racks,
            ),
            num_assigned: consumers.iter().map(|c| (c.0, 0)).collect(),
            consumers,
            partition_racks,
            unassigned: (0..n).filter_map(|p| i32::try_from(p).ok()).collect(),
            num_partitions_per_consumer: per,
            remaining_consumers_with_extra_partition: extra as isize,
        }
    }

    fn rack_of(&self, consumer: &str) -> Option<&'a str> {
        self.consumers
            .iter()
            .find(|c| c.0 == consumer)
            .and_then(|c| c.1)
    }

    /// Whether `consumer` may take `partition` under rack matching: it has no rack, or its rack
    /// holds a replica.
    fn racks_match(&self, consumer: &str, partition: i32) -> bool {
        match self.rack_of(consumer) {
            None => true,
            Some(rack) => usize::try_from(partition)
                .ok()
                .and_then(|p| self.partition_racks.get(p))
                .is_some_and(|racks| racks.contains(rack)),
        }
    }

    fn max_assignable(&self, consumer: &str) -> usize {
        let quota = self.num_partitions_per_consumer
            + usize::from(self.remaining_consumers_with_extra_partition > 0);
        quota.saturating_sub(self.num_assigned.get(consumer).copied().unwrap_or(0))
    }

    fn on_assigned(&mut self, consumer: &'a str, partitions: &[i32]) {
        let assigned = self.num_assigned.entry(consumer).or_insert(0);
        *assigned += partitions.len();
        if *assigned > self.num_partitions_per_consumer {
            self.remaining_consumers_with_extra_partition -= 1;
        }
        for p in partitions {
            self.unassigned.remove(p);
        }
    }
}

fn assign<'a>(
    consumer: &'a str,
    partitions: &[i32],
    state: &mut TopicAssignmentState<'a>,
    assignment: &mut BTreeMap<String, Vec<TopicPartition>>,
) {
    if let Some(list) = assignment.get_mut(consumer) {
        list.extend(
            partitions
                .iter()
                .map(|&p| TopicPartition::new(state.topic, p)),
        );
    }
    state.on_assigned(consumer, partitions);
}

/// Gives each subscriber, in member order, the first unassigned partitions it may take, up to
/// its quota.
fn assign_ranges<'a>(
    state: &mut TopicAssignmentState<'a>,
    may_assign: impl Fn(&TopicAssignmentState<'a>, &str, i32) -> bool,
    assignment: &mut BTreeMap<String, Vec<TopicPartition>>,
) {
    for i in 0..state.consumers.len() {
        if state.unassigned.is_empty() {
            break;
        }
        let consumer = state.consumers[i].0;
        let assignable: Vec<i32> = state
            .unassigned
            .iter()
            .copied()
            .filter(|&p| may_assign(state, consumer, p))
            .take(state.max_assignable(consumer))
            .collect();
        if !assignable.is_empty() {
            assign(consumer, &assignable, state, assignment);
        }
    }
}

/// The rack-matching pass. Topics with the same subscribers and partition count are assigned
/// together, partition index by partition index, so they stay co-partitioned; any other topic
/// that needs it gets a rack-filtered range pass.
fn assign_with_rack_matching(
    states: &mut [TopicAssignmentState<'_>],
    assignment: &mut BTreeMap<String, Vec<TopicPartition>>,
) {
    let mut groups: BTreeMap<(Vec<&str>, usize), Vec<usize>> = BTreeMap::new();
    for (i, state) in states.iter().enumerate() {
        let consumers = state.consumers.iter().map(|c| c.0).collect();
        groups
            .entry((consumers, state.partition_racks.len()))
            .or_default()
            .push(i);
    }
    for ((consumers, num_partitions), members) in groups {
        if let [single] = members[..] {
            let state = &mut states[single];
            if state.needs_rack_aware_assignment {
                assign_ranges(state, TopicAssignmentState::racks_match, assignment);
            }
        } else {
            assign_co_partitioned_with_rack_matching(
                &consumers,
                num_partitions,
                &members,
                states,
                assignment,
            );
        }
    }
}

fn assign_co_partitioned_with_rack_matching<'a>(
    consumers: &[&'a str],
    num_partitions: usize,
    group: &[usize],
    states: &mut [TopicAssignmentState<'a>],
    assignment: &mut BTreeMap<String, Vec<TopicPartition>>,
) {
    let mut remaining: Vec<&'a str> = consumers.to_vec();
    for p in (0..num_partitions).filter_map(|p| i32::try_from(p).ok()) {
        let matching = remaining.iter().position(|c| {
            group
                .iter()
                .all(|&t| states[t].racks_match(c, p) && states[t].max_assignable(c) > 0)
        });
        let Some(index) = matching else { continue };
        let consumer = remaining[index];
        for &t in group {
            assign(consumer, &[p], &mut states[t], assignment);
        }
        if group
            .iter()
            .all(|&t| states[t].max_assignable(consumer) == 0)
        {
            remaining.remove(index);
            if remaining.is_empty() {
                break;
            }
        }
    }
}
