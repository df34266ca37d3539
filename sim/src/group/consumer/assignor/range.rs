//! Kafka's server-side `RangeAssignor`: for each topic, its subscribers in a fixed order take
//! consecutive ranges, the first `partitions % subscribers` one partition more.
//!
//! Members subscribed to the same topics with the same partition counts get the same partition
//! numbers of each (co-partitioning, for joins). The order is static members by instance id, then
//! dynamic members by member id, so a restarted static member gets its range back. Not sticky
//! otherwise, as in Kafka.

use std::cmp::Ordering;

use super::{GroupAssignment, GroupSpec, MemberSpec};

/// Assigns ranges of every subscribed topic to its subscribers.
pub fn assign(spec: &GroupSpec) -> GroupAssignment {
    let mut order: Vec<(&String, &MemberSpec)> = spec.members.iter().collect();
    order.sort_by(member_order);

    let mut result: GroupAssignment = spec
        .members
        .keys()
        .map(|id| (id.clone(), Default::default()))
        .collect();
    for (&topic_id, &partition_count) in &spec.partition_counts {
        let subscribers: Vec<&String> = order
            .iter()
            .filter(|(_, m)| m.subscribed_topic_ids.contains(&topic_id))
            .map(|(id, _)| *id)
            .collect();
        if subscribers.is_empty() || partition_count <= 0 {
            continue;
        }
        // At most i32::MAX subscribers can matter: more than partitions means zero quota.
        let subscriber_count = i32::try_from(subscribers.len()).unwrap_or(i32::MAX);
        let min_quota = partition_count / subscriber_count;
        let mut extra = partition_count % subscriber_count;
        let mut next = 0;
        for member_id in subscribers {
            let mut quota = min_quota;
            if extra > 0 {
                quota += 1;
                extra -= 1;
            }
            let end = (next + quota).min(partition_count);
            if next < end {
                if let Some(assignment) = result.get_mut(member_id) {
                    assignment.insert(topic_id, (next..end).collect());
                }
            }
            next = end;
        }
    }
    result
}

/// Kafka's `sortMemberIds`: static members first by instance id, then member id.
fn member_order(a: &(&String, &MemberSpec), b: &(&String, &MemberSpec)) -> Ordering {
    match (&a.1.instance_id, &b.1.instance_id) {
        (Some(x), Some(y)) => x.cmp(y).then_with(|| a.0.cmp(b.0)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.0.cmp(b.0),
    }
}
