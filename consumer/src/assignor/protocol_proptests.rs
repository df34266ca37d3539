//! Property-based round trips of the ConsumerProtocol subscription and assignment at every
//! version, and of the sticky assignor's user data; arbitrary bytes never panic a decoder.

use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;

use super::protocol::{
    decode_assignment, decode_subscription, encode_assignment, encode_subscription,
    CONSUMER_PROTOCOL_VERSION,
};
use super::{Assignment, StickyAssignor, Subscription, TopicPartition};

fn name() -> impl Strategy<Value = String> {
    vec(any::<char>(), 0..12).prop_map(|chars| chars.into_iter().collect())
}

fn partitions() -> impl Strategy<Value = Vec<TopicPartition>> {
    vec((name(), any::<i32>()), 0..12).prop_map(|tps| {
        tps.into_iter()
            .map(|(topic, partition)| TopicPartition::new(topic, partition))
            .collect()
    })
}

fn user_data() -> impl Strategy<Value = Option<Bytes>> {
    proptest::option::of(vec(any::<u8>(), 0..64).prop_map(Bytes::from))
}

fn subscription() -> impl Strategy<Value = Subscription> {
    (
        vec(name(), 0..8),
        user_data(),
        partitions(),
        proptest::option::of(0..i32::MAX),
        proptest::option::of(vec(any::<char>(), 1..8).prop_map(|c| c.into_iter().collect())),
    )
        .prop_map(
            |(topics, user_data, owned_partitions, generation_id, rack_id)| Subscription {
                topics,
                user_data,
                owned_partitions,
                generation_id,
                rack_id,
                group_instance_id: None,
            },
        )
}

/// What `subscription` reads back as after a trip through `version`: fields the version lacks
/// are gone, topics and owned partitions come back sorted.
fn as_of_version(mut subscription: Subscription, version: i16) -> Subscription {
    subscription.topics.sort();
    subscription.owned_partitions.sort();
    if version < 1 {
        subscription.owned_partitions.clear();
    }
    if version < 2 {
        subscription.generation_id = None;
    }
    if version < 3 {
        subscription.rack_id = None;
    }
    subscription
}

proptest! {
    #[test]
    fn subscriptions_round_trip_at_every_version(
        subscription in subscription(),
        version in 0..=CONSUMER_PROTOCOL_VERSION,
    ) {
        let bytes = encode_subscription(&subscription, version).unwrap();
        let mut decoded = decode_subscription(&bytes).unwrap();
        decoded.owned_partitions.sort();
        prop_assert_eq!(decoded, as_of_version(subscription, version));
    }

    #[test]
    fn assignments_round_trip_at_every_version(
        partitions in partitions(),
        user_data in user_data(),
        version in 0..=CONSUMER_PROTOCOL_VERSION,
    ) {
        let assignment = Assignment { partitions, user_data };
        let bytes = encode_assignment(&assignment, version).unwrap();
        let mut decoded = decode_assignment(&bytes).unwrap();
        let mut expected = assignment;
        decoded.partitions.sort();
        expected.partitions.sort();
        prop_assert_eq!(decoded, expected);
    }

    #[test]
    fn sticky_user_data_round_trips(partitions in partitions(), generation in any::<i32>()) {
        let bytes = StickyAssignor::encode_user_data(&partitions, generation).unwrap();
        let mut decoded = StickyAssignor::decode_user_data(&bytes);
        let mut expected = partitions;
        decoded.partitions.sort();
        expected.sort();
        prop_assert_eq!(decoded.partitions, expected);
        prop_assert_eq!(decoded.generation, Some(generation));
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_member_metadata_decoders(bytes in vec(any::<u8>(), 0..256)) {
        let bytes = Bytes::from(bytes);
        let _ = decode_subscription(&bytes);
        let _ = decode_assignment(&bytes);
        let member = StickyAssignor::decode_user_data(&bytes);
        // Every decoded partition took at least 4 bytes of input.
        prop_assert!(member.partitions.len() * 4 <= bytes.len());
    }
}
