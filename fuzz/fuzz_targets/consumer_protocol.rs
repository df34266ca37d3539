//! The classic group's member metadata: ConsumerProtocol subscriptions (JoinGroup metadata a
//! leader decodes for every member), assignments (SyncGroup), and the sticky assignor's user
//! data inside a subscription.
//!
//! Input: a selector byte (0 subscription, 1 assignment, 2 sticky user data), then the bytes.
//!
//! Properties: no panic; allocation bounded by a small multiple of the input (array counts are
//! checked against the bytes left before anything is reserved); whatever decodes re-encodes at
//! its own version and decodes to the same value (order aside where the encoder sorts).
#![no_main]

use bytes::Bytes;
use kafka_consumer::assignor::protocol::{
    decode_assignment, decode_subscription, encode_assignment, encode_subscription,
};
use kafka_consumer::assignor::{Assignment, MemberData, StickyAssignor, Subscription};
use kafka_consumer_fuzz::{with_alloc_cap, Control};
use libfuzzer_sys::fuzz_target;

fn version_of(bytes: &[u8]) -> i16 {
    i16::from_be_bytes([bytes[0], bytes[1]])
}

fn sorted_subscription(mut subscription: Subscription) -> Subscription {
    subscription.topics.sort();
    subscription.owned_partitions.sort();
    subscription
}

fn sorted_assignment(mut assignment: Assignment) -> Assignment {
    assignment.partitions.sort();
    assignment
}

fn sorted_member_data(mut data: MemberData) -> MemberData {
    data.partitions.sort();
    data
}

fuzz_target!(|data: &[u8]| {
    let mut control = Control::new(data);
    let selector = control.u8();
    let bytes = Bytes::copy_from_slice(control.rest());
    let alloc_cap = 64 * bytes.len() + (64 << 10);
    with_alloc_cap(alloc_cap, || match selector % 3 {
        0 => {
            if let Ok(subscription) = decode_subscription(&bytes) {
                let version = version_of(&bytes);
                let encoded = encode_subscription(&subscription, version)
                    .expect("a decoded subscription re-encodes");
                let again = decode_subscription(&encoded).expect("re-encoded bytes decode");
                assert_eq!(
                    sorted_subscription(again),
                    sorted_subscription(subscription)
                );
            }
        }
        1 => {
            if let Ok(assignment) = decode_assignment(&bytes) {
                let version = version_of(&bytes);
                let encoded = encode_assignment(&assignment, version)
                    .expect("a decoded assignment re-encodes");
                let again = decode_assignment(&encoded).expect("re-encoded bytes decode");
                assert_eq!(sorted_assignment(again), sorted_assignment(assignment));
            }
        }
        _ => {
            let member = StickyAssignor::decode_user_data(&bytes);
            if let Some(generation) = member.generation {
                if let Some(encoded) =
                    StickyAssignor::encode_user_data(&member.partitions, generation)
                {
                    let again = StickyAssignor::decode_user_data(&encoded);
                    assert_eq!(sorted_member_data(again), sorted_member_data(member));
                }
            }
        }
    });
});
