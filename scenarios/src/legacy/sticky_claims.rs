//! Kafka 3.4.0's `AbstractStickyAssignor.allSubscriptionsEqual` as far as it decides which
//! owned partitions count (AbstractStickyAssignor.java:92–164 at tag 3.4.0): only the claims of
//! members of the *highest generation* in the group are honoured — a member whose subscription
//! carries an older generation (or none, once some member has one) is treated as owning
//! nothing, whatever else claims its partitions. The assignment then runs on the remaining
//! claims, which is what the production crate's sticky assignors do with them, so the model
//! applies this one 3.4.0 step to the subscriptions and hands them to the production assignor.
//!
//! That is KAFKA-14639: a member that missed a generation still owns its partitions, but the
//! leader sees them as unowned and gives them straight to another member — not as a transfer
//! to wait for — while the claimant is told to revoke them in the same round. 3.4.1 / 3.5.0
//! honour every claim and let the highest generation win where claims collide, as the
//! production assignors do.
//!
//! Only `cooperative-sticky` is filtered: the eager `sticky` assignor's claims travel in its
//! user data (an eager member owns nothing when it joins), which the model leaves as it is —
//! no scenario runs that assignor on 3.4.0.

use kafka_consumer::assignor::{CooperativeStickyAssignor, GroupSubscription, DEFAULT_GENERATION};

/// Empties the owned partitions of every member below the group's highest generation when the
/// group's chosen assignor (`protocol`) is `cooperative-sticky`.
pub(super) fn drop_claims_below_highest_generation(
    protocol: &str,
    subscriptions: &mut GroupSubscription,
) {
    if protocol != CooperativeStickyAssignor::NAME {
        return;
    }
    let generations: Vec<(String, Option<i32>)> = subscriptions
        .iter()
        .map(|(member, s)| {
            let generation = CooperativeStickyAssignor::member_data(s).generation;
            (member.clone(), generation)
        })
        .collect();
    let max_generation = generations
        .iter()
        .filter_map(|(_, g)| *g)
        .fold(DEFAULT_GENERATION, i32::max);
    for (member, generation) in generations {
        let honoured = match generation {
            Some(g) => g >= max_generation,
            None => max_generation == DEFAULT_GENERATION,
        };
        if !honoured {
            if let Some(s) = subscriptions.get_mut(&member) {
                s.owned_partitions.clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kafka_consumer::assignor::{Subscription, TopicPartition};

    use super::*;

    fn member(generation: Option<i32>, owned: &[i32]) -> Subscription {
        Subscription {
            owned_partitions: owned.iter().map(|&p| TopicPartition::new("t", p)).collect(),
            generation_id: generation,
            ..Subscription::new(["t"])
        }
    }

    fn owned(subscriptions: &GroupSubscription, member: &str) -> Vec<i32> {
        subscriptions[member]
            .owned_partitions
            .iter()
            .map(|tp| tp.partition)
            .collect()
    }

    #[test]
    fn a_member_that_missed_a_generation_owns_nothing_even_uncontested() {
        let mut subscriptions: GroupSubscription = [
            ("a".to_owned(), member(Some(3), &[0, 1, 2])),
            ("b".to_owned(), member(Some(4), &[3, 4])),
            ("c".to_owned(), member(Some(4), &[])),
        ]
        .into();
        drop_claims_below_highest_generation("cooperative-sticky", &mut subscriptions);
        assert!(owned(&subscriptions, "a").is_empty());
        assert_eq!(owned(&subscriptions, "b"), vec![3, 4]);
    }

    #[test]
    fn members_without_a_generation_count_only_while_nobody_has_one() {
        let mut none_known: GroupSubscription = [
            ("a".to_owned(), member(None, &[0])),
            ("b".to_owned(), member(None, &[1])),
        ]
        .into();
        drop_claims_below_highest_generation("cooperative-sticky", &mut none_known);
        assert_eq!(owned(&none_known, "a"), vec![0]);
        assert_eq!(owned(&none_known, "b"), vec![1]);

        let mut one_known: GroupSubscription = [
            ("a".to_owned(), member(None, &[0])),
            ("b".to_owned(), member(Some(2), &[1])),
        ]
        .into();
        drop_claims_below_highest_generation("cooperative-sticky", &mut one_known);
        assert!(owned(&one_known, "a").is_empty());
        assert_eq!(owned(&one_known, "b"), vec![1]);
    }

    #[test]
    fn other_assignors_are_left_alone() {
        for protocol in ["range", "sticky"] {
            let mut subscriptions: GroupSubscription = [
                ("a".to_owned(), member(Some(1), &[0])),
                ("b".to_owned(), member(Some(2), &[1])),
            ]
            .into();
            drop_claims_below_highest_generation(protocol, &mut subscriptions);
            assert_eq!(owned(&subscriptions, "a"), vec![0], "{protocol}");
        }
    }
}
