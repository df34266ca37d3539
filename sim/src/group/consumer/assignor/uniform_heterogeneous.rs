//! The uniform assignor for members subscribed to different topics.
//!
//! Kafka's `UniformHeterogeneousAssignmentBuilder` keeps current partitions, deals unassigned
//! partitions to the least-loaded subscriber (topics with fewer subscribers first), then moves
//! partitions from over-loaded to under-loaded subscribers until no move improves balance. This
//! follows the same three phases with simpler bookkeeping; rack awareness is not modelled. The
//! result is balanced in Kafka's sense: no partition could move to one of its subscribers holding
//! two fewer partitions than its owner.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::super::assignment;
use super::uniform::{unassigned_partitions, valid_current};
use super::{GroupAssignment, GroupSpec};

/// Assigns every subscribed partition to exactly one of its subscribers.
pub fn assign(spec: &GroupSpec) -> GroupAssignment {
    let mut result = valid_current(spec);
    let subscribers = subscribers_by_topic(spec);
    let topics: BTreeSet<Uuid> = subscribers.keys().copied().collect();

    // Phase 2: least-contended topics first, so flexible partitions fill the gaps afterwards.
    let mut unassigned = unassigned_partitions(spec, &topics, &result);
    unassigned.sort_by_key(|(topic_id, partition)| {
        (
            subscribers.get(topic_id).map_or(0, Vec::len),
            *topic_id,
            *partition,
        )
    });
    for (topic_id, partition) in unassigned {
        if let Some(member_id) = least_loaded(&result, subscribers.get(&topic_id)) {
            if let Some(target) = result.get_mut(&member_id) {
                assignment::insert(target, topic_id, partition);
            }
        }
    }

    // Phase 3: each move lowers the sum of squared loads, so this terminates.
    while let Some((from, to, topic_id, partition)) = improving_move(&result, &subscribers) {
        if let Some(source) = result.get_mut(&from) {
            assignment::remove(source, topic_id, partition);
        }
        if let Some(target) = result.get_mut(&to) {
            assignment::insert(target, topic_id, partition);
        }
    }
    result
}

/// Subscribed member ids of every existing topic, in member id order.
fn subscribers_by_topic(spec: &GroupSpec) -> BTreeMap<Uuid, Vec<String>> {
    let mut subscribers: BTreeMap<Uuid, Vec<String>> = BTreeMap::new();
    for (member_id, member) in &spec.members {
        for topic_id in &member.subscribed_topic_ids {
            if spec.partition_counts.contains_key(topic_id) {
                subscribers
                    .entry(*topic_id)
                    .or_default()
                    .push(member_id.clone());
            }
        }
    }
    subscribers
}

fn load(result: &GroupAssignment, member_id: &str) -> usize {
    result.get(member_id).map_or(0, assignment::partition_count)
}

/// The candidate holding the fewest partitions, ties to the smallest member id.
fn least_loaded(result: &GroupAssignment, candidates: Option<&Vec<String>>) -> Option<String> {
    candidates?
        .iter()
        .min_by_key(|id| (load(result, id), (*id).clone()))
        .cloned()
}

/// The first move, from the most loaded member, of a partition to a subscriber holding at least
/// two fewer partitions.
fn improving_move(
    result: &GroupAssignment,
    subscribers: &BTreeMap<Uuid, Vec<String>>,
) -> Option<(String, String, Uuid, i32)> {
    let mut by_load: Vec<(&String, usize)> = result
        .iter()
        .map(|(id, a)| (id, assignment::partition_count(a)))
        .collect();
    by_load.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    for (from, from_load) in by_load {
        let owned = result.get(from)?;
        for (topic_id, partition) in assignment::pairs(owned) {
            let Some(to) = least_loaded(result, subscribers.get(&topic_id)) else {
                continue;
            };
            if load(result, &to) + 1 < from_load {
                return Some((from.clone(), to, topic_id, partition));
            }
        }
    }
    None
}
