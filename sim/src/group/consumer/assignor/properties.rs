//! Assignor properties over random groups from a fixed-seed generator: every subscribed partition
//! assigned exactly once and only to a subscriber; uniform balanced within one for homogeneous
//! groups and sticky; range co-partitioned.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::super::assignment::{self, Assignment};
use super::{GroupAssignment, GroupSpec, MemberSpec, ServerAssignor};

/// SplitMix64: a tiny deterministic generator, enough for test inputs.
struct Generator(u64);

impl Generator {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_spec(g: &mut Generator, homogeneous: bool) -> GroupSpec {
    let topic_count = 1 + g.below(4) as u128;
    let partition_counts: BTreeMap<Uuid, i32> = (0..topic_count)
        .map(|t| (Uuid::from_u128(t + 1), 1 + g.below(12) as i32))
        .collect();
    let topics: Vec<Uuid> = partition_counts.keys().copied().collect();
    let member_count = 1 + g.below(7);
    let members = (0..member_count)
        .map(|m| {
            let subscribed_topic_ids: BTreeSet<Uuid> = if homogeneous {
                topics.iter().copied().collect()
            } else {
                let picked: BTreeSet<Uuid> =
                    topics.iter().copied().filter(|_| g.below(2) == 0).collect();
                if picked.is_empty() {
                    BTreeSet::from([topics[g.below(topics.len() as u64) as usize]])
                } else {
                    picked
                }
            };
            let spec = MemberSpec {
                instance_id: (g.below(3) == 0).then(|| format!("i{}", g.below(5))),
                subscribed_topic_ids,
                current_assignment: Assignment::new(),
            };
            (format!("m{m}"), spec)
        })
        .collect();
    GroupSpec {
        members,
        partition_counts,
    }
}

fn check_complete_and_exclusive(spec: &GroupSpec, result: &GroupAssignment) {
    let mut owners: BTreeMap<(Uuid, i32), &str> = BTreeMap::new();
    for (member_id, assigned) in result {
        let member = &spec.members[member_id];
        for tp in assignment::pairs(assigned) {
            assert!(
                member.subscribed_topic_ids.contains(&tp.0),
                "{member_id} got {tp:?} without subscribing"
            );
            assert!(
                owners.insert(tp, member_id).is_none(),
                "{tp:?} assigned twice"
            );
        }
    }
    for (&topic_id, &count) in &spec.partition_counts {
        let subscribed = spec
            .members
            .values()
            .any(|m| m.subscribed_topic_ids.contains(&topic_id));
        for p in 0..count {
            assert_eq!(
                owners.contains_key(&(topic_id, p)),
                subscribed,
                "{topic_id} {p}"
            );
        }
    }
}

fn loads(result: &GroupAssignment) -> Vec<usize> {
    result.values().map(assignment::partition_count).collect()
}

#[test]
fn every_partition_is_assigned_once_to_a_subscriber() {
    let mut g = Generator(0x5EED);
    for round in 0..300 {
        let spec = random_spec(&mut g, round % 2 == 0);
        for assignor in [ServerAssignor::Uniform, ServerAssignor::Range] {
            let result = assignor.assign(&spec);
            assert_eq!(result.len(), spec.members.len());
            check_complete_and_exclusive(&spec, &result);
        }
    }
}

#[test]
fn uniform_homogeneous_is_balanced_within_one_and_sticky() {
    let mut g = Generator(42);
    for _ in 0..300 {
        let mut spec = random_spec(&mut g, true);
        let first = ServerAssignor::Uniform.assign(&spec);
        let l = loads(&first);
        assert!(
            l.iter().max().unwrap() - l.iter().min().unwrap() <= 1,
            "{l:?}"
        );

        // Recomputing from a balanced assignment moves nothing.
        for (member_id, member) in spec.members.iter_mut() {
            member.current_assignment = first[member_id].clone();
        }
        assert_eq!(ServerAssignor::Uniform.assign(&spec), first);

        // A new member only takes partitions; the others keep all they still can.
        spec.members.insert(
            "new".into(),
            MemberSpec {
                subscribed_topic_ids: spec.members["m0"].subscribed_topic_ids.clone(),
                ..MemberSpec::default()
            },
        );
        let second = ServerAssignor::Uniform.assign(&spec);
        check_complete_and_exclusive(&spec, &second);
        let l = loads(&second);
        assert!(
            l.iter().max().unwrap() - l.iter().min().unwrap() <= 1,
            "{l:?}"
        );
        let total: usize = l.iter().sum();
        let quota_max = total.div_ceil(spec.members.len());
        for (member_id, before) in &first {
            let kept = assignment::pairs(before)
                .filter(|&(t, p)| assignment::contains(&second[member_id], t, p))
                .count();
            assert_eq!(
                kept,
                before
                    .values()
                    .map(BTreeSet::len)
                    .sum::<usize>()
                    .min(quota_max)
                    .min(assignment::partition_count(&second[member_id]))
            );
        }
    }
}

#[test]
fn uniform_heterogeneous_cannot_improve_by_one_move_and_is_stable() {
    let mut g = Generator(7);
    for _ in 0..300 {
        let mut spec = random_spec(&mut g, false);
        let first = ServerAssignor::Uniform.assign(&spec);
        for (member_id, assigned) in &first {
            for (topic_id, _) in assignment::pairs(assigned) {
                for (other_id, other) in &spec.members {
                    if other.subscribed_topic_ids.contains(&topic_id) {
                        assert!(
                            assignment::partition_count(&first[other_id]) + 1
                                >= assignment::partition_count(assigned),
                            "{member_id} could give {topic_id} to {other_id}"
                        );
                    }
                }
            }
        }
        for (member_id, member) in spec.members.iter_mut() {
            member.current_assignment = first[member_id].clone();
        }
        assert_eq!(ServerAssignor::Uniform.assign(&spec), first);
    }
}

#[test]
fn range_is_co_partitioned_and_ordered_by_instance_id() {
    let a = Uuid::from_u128(1);
    let b = Uuid::from_u128(2);
    let both = BTreeSet::from([a, b]);
    let spec = GroupSpec {
        members: BTreeMap::from([
            (
                "m1".into(),
                MemberSpec {
                    subscribed_topic_ids: both.clone(),
                    ..MemberSpec::default()
                },
            ),
            (
                "m2".into(),
                MemberSpec {
                    instance_id: Some("z".into()),
                    subscribed_topic_ids: both.clone(),
                    ..MemberSpec::default()
                },
            ),
            (
                "m3".into(),
                MemberSpec {
                    subscribed_topic_ids: both,
                    ..MemberSpec::default()
                },
            ),
        ]),
        partition_counts: BTreeMap::from([(a, 7), (b, 7)]),
    };
    let result = ServerAssignor::Range.assign(&spec);
    // Static m2 first, then m1, m3: ranges [0,3), [3,5), [5,7) of each topic.
    let expect = |ps: &[i32]| -> Assignment {
        [
            (a, ps.iter().copied().collect()),
            (b, ps.iter().copied().collect()),
        ]
        .into()
    };
    assert_eq!(result["m2"], expect(&[0, 1, 2]));
    assert_eq!(result["m1"], expect(&[3, 4]));
    assert_eq!(result["m3"], expect(&[5, 6]));
}
