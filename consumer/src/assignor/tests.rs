//! Assignor tests: Java's unit-test scenarios with their exact expected assignments, seeded
//! property tests, and the ConsumerProtocol codec.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use super::test_support::*;
use super::*;

mod registry {
    use super::*;

    #[test]
    fn short_and_java_class_names_resolve() {
        for (name, expected) in [
            ("range", "range"),
            ("org.apache.kafka.clients.consumer.RangeAssignor", "range"),
            ("roundrobin", "roundrobin"),
            (
                "org.apache.kafka.clients.consumer.RoundRobinAssignor",
                "roundrobin",
            ),
            ("sticky", "sticky"),
            ("org.apache.kafka.clients.consumer.StickyAssignor", "sticky"),
            (" cooperative-sticky ", "cooperative-sticky"),
            (
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
                "cooperative-sticky",
            ),
        ] {
            assert_eq!(assignor_by_name(name).unwrap().name(), expected, "{name}");
        }
        assert_eq!(
            assignor_by_name("fancy").unwrap_err(),
            AssignorError::UnknownAssignor {
                name: "fancy".into()
            }
        );
    }

    #[test]
    fn strategy_list_keeps_order_and_rejects_duplicates() {
        let names: Vec<_> = assignors_for_strategy(DEFAULT_PARTITION_ASSIGNMENT_STRATEGY)
            .unwrap()
            .iter()
            .map(|a| a.name())
            .collect();
        assert_eq!(names, ["range", "cooperative-sticky"]);
        let err =
            assignors_for_strategy(&["range", "org.apache.kafka.clients.consumer.RangeAssignor"])
                .unwrap_err();
        assert_eq!(
            err,
            AssignorError::DuplicateAssignorName {
                name: "range".into()
            }
        );
    }

    #[test]
    fn protocols_match_java() {
        assert_eq!(
            RangeAssignor.supported_protocols(),
            [RebalanceProtocol::Eager]
        );
        assert_eq!(
            CooperativeStickyAssignor::default().supported_protocols(),
            [RebalanceProtocol::Cooperative, RebalanceProtocol::Eager]
        );
        assert_eq!(RebalanceProtocol::Cooperative.id(), 1);
    }
}

/// Ports of `RangeAssignorTest`.
mod range {
    use super::*;

    fn assign(c: &ClusterMetadata, g: &GroupSubscription) -> BTreeMap<String, Vec<TopicPartition>> {
        let a = run(&RangeAssignor, c, g);
        assert_valid(c, g, &a, true);
        a
    }

    #[test]
    fn one_consumer_no_topic_and_nonexistent_topic() {
        let a = assign(&cluster(&[]), &group(vec![("consumer1", sub(&[]))]));
        assert!(a["consumer1"].is_empty());
        let a = assign(&cluster(&[]), &group(vec![("consumer1", sub(&["topic1"]))]));
        assert!(a["consumer1"].is_empty());
    }

    #[test]
    fn only_assigns_partitions_from_subscribed_topics() {
        let a = assign(
            &cluster(&[("topic1", 3), ("other", 3)]),
            &group(vec![("consumer1", sub(&["topic1"]))]),
        );
        assert_eq!(
            a["consumer1"],
            [tp("topic1", 0), tp("topic1", 1), tp("topic1", 2)]
        );
    }

    #[test]
    fn multiple_consumers_mixed_topics() {
        let g = group(vec![
            ("consumer1", sub(&["topic1"])),
            ("consumer2", sub(&["topic1", "topic2"])),
            ("consumer3", sub(&["topic1"])),
        ]);
        let a = assign(&cluster(&[("topic1", 3), ("topic2", 2)]), &g);
        assert_eq!(a["consumer1"], [tp("topic1", 0)]);
        assert_eq!(
            set(&a["consumer2"]),
            set(&[tp("topic1", 1), tp("topic2", 0), tp("topic2", 1)])
        );
        assert_eq!(a["consumer3"], [tp("topic1", 2)]);
    }

    #[test]
    fn two_consumers_two_topics_six_partitions() {
        let both = ["topic1", "topic2"];
        let a = assign(
            &cluster(&[("topic1", 3), ("topic2", 3)]),
            &group(vec![("consumer1", sub(&both)), ("consumer2", sub(&both))]),
        );
        assert_eq!(
            sorted_string(&a["consumer1"]),
            "topic1-0, topic1-1, topic2-0, topic2-1"
        );
        assert_eq!(sorted_string(&a["consumer2"]), "topic1-2, topic2-2");
    }

    #[test]
    fn static_members_order_by_instance_id_before_dynamic_members() {
        let both = ["topic1", "topic2"];
        let c = cluster(&[("topic1", 3), ("topic2", 3)]);
        let static_sub = |id: &str| Subscription {
            group_instance_id: Some(id.into()),
            ..sub(&both)
        };
        // consumer-b sorts after consumer-a by member id but before it by instance id.
        let a = assign(
            &c,
            &group(vec![
                ("consumer-b", static_sub("instance1")),
                ("consumer-a", static_sub("instance2")),
            ]),
        );
        assert_eq!(
            sorted_string(&a["consumer-b"]),
            "topic1-0, topic1-1, topic2-0, topic2-1"
        );
        // A static member sorts before any dynamic one.
        let a = assign(
            &c,
            &group(vec![
                ("consumer-b", static_sub("instance1")),
                ("consumer-a", sub(&both)),
            ]),
        );
        assert_eq!(
            sorted_string(&a["consumer-b"]),
            "topic1-0, topic1-1, topic2-0, topic2-1"
        );
        assert_eq!(sorted_string(&a["consumer-a"]), "topic1-2, topic2-2");
    }

    #[test]
    fn static_member_assignment_persists_across_member_id_changes() {
        let both = ["topic1", "topic2"];
        let c = cluster(&[("topic1", 5), ("topic2", 4)]);
        let static_sub = |id: &str| Subscription {
            group_instance_id: Some(id.into()),
            ..sub(&both)
        };
        let mut g = group(vec![
            ("consumer1", static_sub("instance1")),
            ("consumer2", static_sub("instance2")),
            ("consumer3", static_sub("instance3")),
            ("consumer4", sub(&both)),
        ]);
        let a = assign(&c, &g);
        assert_eq!(
            sorted_string(&a["consumer1"]),
            "topic1-0, topic1-1, topic2-0"
        );
        assert_eq!(sorted_string(&a["consumer2"]), "topic1-2, topic2-1");
        assert_eq!(sorted_string(&a["consumer3"]), "topic1-3, topic2-2");
        assert_eq!(sorted_string(&a["consumer4"]), "topic1-4, topic2-3");
        // Replace the dynamic member and rename the static ones: instances keep their partitions.
        g.remove("consumer4");
        g.insert("consumer5".into(), sub(&both));
        let renamed: GroupSubscription = g
            .into_iter()
            .map(|(m, s)| {
                (
                    if s.group_instance_id.is_some() {
                        format!("z-{m}")
                    } else {
                        m
                    },
                    s,
                )
            })
            .collect();
        let b = assign(&c, &renamed);
        assert_eq!(b["z-consumer1"], a["consumer1"]);
        assert_eq!(b["z-consumer3"], a["consumer3"]);
        assert_eq!(b["consumer5"], a["consumer4"]);
    }

    fn verify_rack(
        topics: &[(&str, usize)],
        rf: usize,
        broker_racks: &[&str],
        consumer_racks: &[Option<&str>],
        consumer_topics: &[&[&str]],
        expected: &[&str],
    ) {
        let c = rack_cluster(topics, rf, broker_racks);
        let g: GroupSubscription = consumer_topics
            .iter()
            .zip(consumer_racks)
            .enumerate()
            .map(|(i, (t, r))| {
                (
                    format!("consumer{i}"),
                    Subscription {
                        rack_id: r.map(Into::into),
                        ..sub(t)
                    },
                )
            })
            .collect();
        let a = assign(&c, &g);
        let actual: Vec<String> = (0..expected.len())
            .map(|i| sorted_string(&a[&format!("consumer{i}")]))
            .collect();
        assert_eq!(actual, expected);
    }

    const ALL: &[&str] = &["t1", "t2", "t3"];

    #[test]
    fn rack_aware_assignment_with_uniform_subscription() {
        let topics = [("t1", 6), ("t2", 7), ("t3", 2)];
        let racks = [Some("a"), Some("b"), Some("c")];
        let non_rack_aware = [
            "t1-0, t1-1, t2-0, t2-1, t2-2, t3-0",
            "t1-2, t1-3, t2-3, t2-4, t3-1",
            "t1-4, t1-5, t2-5, t2-6",
        ];
        // Every partition on every rack, or no consumer racks: plain range.
        verify_rack(
            &topics,
            3,
            &["a", "b", "c"],
            &racks,
            &[ALL, ALL, ALL],
            &non_rack_aware,
        );
        verify_rack(
            &topics,
            3,
            &["a", "b", "c"],
            &[None, None, None],
            &[ALL, ALL, ALL],
            &non_rack_aware,
        );
        verify_rack(
            &topics,
            3,
            &["a", "b", "c"],
            &[Some("d"), Some("e"), Some("f")],
            &[ALL, ALL, ALL],
            &non_rack_aware,
        );
        verify_rack(
            &topics,
            1,
            &["a", "b", "c"],
            &racks,
            &[ALL, ALL, ALL],
            &[
                "t1-0, t1-3, t2-0, t2-3, t2-6",
                "t1-1, t1-4, t2-1, t2-4, t3-0",
                "t1-2, t1-5, t2-2, t2-5, t3-1",
            ],
        );
        verify_rack(
            &topics,
            2,
            &["a", "b", "c"],
            &racks,
            &[ALL, ALL, ALL],
            &[
                "t1-0, t1-2, t2-0, t2-2, t2-3, t3-1",
                "t1-1, t1-3, t2-1, t2-4, t3-0",
                "t1-4, t1-5, t2-5, t2-6",
            ],
        );
    }

    #[test]
    fn rack_aware_assignment_with_non_equal_subscription() {
        let topics = [("t1", 6), ("t2", 7), ("t3", 2)];
        let racks = [Some("a"), Some("b"), Some("c")];
        let t13: &[&str] = &["t1", "t3"];
        verify_rack(
            &topics,
            1,
            &["a", "b", "c"],
            &racks,
            &[ALL, ALL, t13],
            &[
                "t1-0, t1-3, t2-0, t2-2, t2-3, t2-6",
                "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0",
                "t1-2, t1-5, t3-1",
            ],
        );
        verify_rack(
            &topics,
            2,
            &["a", "b", "c"],
            &racks,
            &[ALL, ALL, t13],
            &[
                "t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1",
                "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0",
                "t1-4, t1-5",
            ],
        );
    }

    #[test]
    fn rack_aware_assignment_keeps_co_partitioning() {
        let topics = [("t1", 6), ("t2", 6), ("t3", 2), ("t4", 2)];
        let racks = [Some("a"), Some("b"), Some("b"), Some("a")];
        let t12: &[&str] = &["t1", "t2"];
        let t34: &[&str] = &["t3", "t4"];
        verify_rack(
            &topics,
            1,
            &["a", "b"],
            &racks,
            &[t12, t12, t34, t34],
            &[
                "t1-0, t1-2, t1-4, t2-0, t2-2, t2-4",
                "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5",
                "t3-1, t4-1",
                "t3-0, t4-0",
            ],
        );
        let all: &[&str] = &["t1", "t2", "t3", "t4"];
        verify_rack(
            &topics,
            1,
            &["a", "b", "c"],
            &racks,
            &[all, all, all, all],
            &[
                "t1-0, t1-3, t2-0, t2-3, t3-0, t4-0",
                "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1",
                "t1-2, t2-2",
                "t1-5, t2-5",
            ],
        );
    }
}

/// Ports of `RoundRobinAssignorTest` (and its class javadoc examples).
mod round_robin {
    use super::*;

    #[test]
    fn javadoc_examples() {
        let both = ["t0", "t1"];
        let c = cluster(&[("t0", 3), ("t1", 3)]);
        let a = run(
            &RoundRobinAssignor,
            &c,
            &group(vec![("C0", sub(&both)), ("C1", sub(&both))]),
        );
        assert_eq!(sorted_string(&a["C0"]), "t0-0, t0-2, t1-1");
        assert_eq!(sorted_string(&a["C1"]), "t0-1, t1-0, t1-2");

        let c = cluster(&[("t0", 1), ("t1", 2), ("t2", 3)]);
        let g = group(vec![
            ("C0", sub(&["t0"])),
            ("C1", sub(&["t0", "t1"])),
            ("C2", sub(&["t0", "t1", "t2"])),
        ]);
        let a = run(&RoundRobinAssignor, &c, &g);
        assert_valid(&c, &g, &a, true);
        assert_eq!(sorted_string(&a["C0"]), "t0-0");
        assert_eq!(sorted_string(&a["C1"]), "t1-0");
        assert_eq!(sorted_string(&a["C2"]), "t1-1, t2-0, t2-1, t2-2");
    }

    #[test]
    fn one_consumer_nonexistent_topic_and_two_consumers_one_partition() {
        let a = run(
            &RoundRobinAssignor,
            &cluster(&[]),
            &group(vec![("consumer", sub(&["topic"]))]),
        );
        assert!(a["consumer"].is_empty());
        let g = group(vec![
            ("consumer1", sub(&["topic"])),
            ("consumer2", sub(&["topic"])),
        ]);
        let a = run(&RoundRobinAssignor, &cluster(&[("topic", 1)]), &g);
        assert_eq!(a["consumer1"], [tp("topic", 0)]);
        assert!(a["consumer2"].is_empty());
    }

    #[test]
    fn static_members_order_by_instance_id() {
        let both = ["topic1", "topic2"];
        let c = cluster(&[("topic1", 3), ("topic2", 3)]);
        let static_sub = |id: &str| Subscription {
            group_instance_id: Some(id.into()),
            ..sub(&both)
        };
        let g = group(vec![
            ("consumer-b", static_sub("instance1")),
            ("consumer-a", sub(&both)),
        ]);
        let a = run(&RoundRobinAssignor, &c, &g);
        assert_eq!(
            sorted_string(&a["consumer-b"]),
            "topic1-0, topic1-2, topic2-1"
        );
        assert_eq!(
            sorted_string(&a["consumer-a"]),
            "topic1-1, topic2-0, topic2-2"
        );
    }
}

/// Scenarios from `AbstractStickyAssignorTest`, `StickyAssignorTest` and
/// `CooperativeStickyAssignorTest`.
mod sticky {
    use super::*;

    /// A `sticky` subscription as Java's `buildSubscriptionV2Above` builds it: user data and the
    /// subscription fields agree.
    fn sticky_owned(
        topics: &[&str],
        partitions: Vec<TopicPartition>,
        generation: i32,
    ) -> Subscription {
        Subscription {
            user_data: StickyAssignor::encode_user_data(&partitions, generation),
            ..owned(topics, partitions, Some(generation))
        }
    }

    #[test]
    fn partition_claimed_twice_in_one_generation_is_owned_by_neither() {
        for (partitions, consumer1) in [(3, "topic-1"), (4, "topic-1, topic-3")] {
            let c = cluster(&[("topic", partitions)]);
            let g = group(vec![
                (
                    "consumer1",
                    sticky_owned(&["topic"], vec![tp("topic", 0), tp("topic", 1)], 1),
                ),
                (
                    "consumer2",
                    sticky_owned(&["topic"], vec![tp("topic", 0), tp("topic", 2)], 1),
                ),
                ("consumer3", sticky_owned(&["topic"], vec![], 1)),
            ]);
            let a = run(&StickyAssignor::default(), &c, &g);
            assert_eq!(sorted_string(&a["consumer1"]), consumer1);
            assert_eq!(sorted_string(&a["consumer2"]), "topic-2");
            assert_eq!(sorted_string(&a["consumer3"]), "topic-0");

            // Cooperative: topic-0 may still be held by both claimants, so nobody gets it yet.
            let a = run(&CooperativeStickyAssignor::default(), &c, &g);
            assert_eq!(sorted_string(&a["consumer1"]), consumer1);
            assert_eq!(sorted_string(&a["consumer2"]), "topic-2");
            assert!(a["consumer3"].is_empty());
        }
    }

    #[test]
    fn old_version_subscriptions_keep_their_partitions() {
        let c = cluster(&[("topic1", 3)]);
        let t = ["topic1"];
        // StickyAssignorTest: v0 (user data only), v1 (plus owned partitions), v2 (generation).
        let v0 = Subscription {
            user_data: StickyAssignor::encode_user_data(&[tp("topic1", 0)], 1),
            ..sub(&t)
        };
        let v1 = Subscription {
            user_data: StickyAssignor::encode_user_data(&[tp("topic1", 1)], 1),
            ..owned(&t, vec![tp("topic1", 1)], None)
        };
        let g = group(vec![
            ("consumer1", v0),
            ("consumer2", v1),
            ("consumer3", sticky_owned(&t, vec![], 1)),
        ]);
        let a = run(&StickyAssignor::default(), &c, &g);
        assert_eq!(
            (a["consumer1"].as_slice(), a["consumer2"].as_slice()),
            (&[tp("topic1", 0)][..], &[tp("topic1", 1)][..])
        );
        assert_eq!(a["consumer3"], [tp("topic1", 2)]);

        // CooperativeStickyAssignorTest: v1 subscriptions carry no generation.
        let g = group(vec![
            ("consumer1", owned(&t, vec![tp("topic1", 0)], None)),
            ("consumer2", owned(&t, vec![tp("topic1", 1)], None)),
            ("consumer3", owned(&t, vec![], Some(1))),
        ]);
        let a = run(&CooperativeStickyAssignor::default(), &c, &g);
        assert_eq!(a["consumer1"], [tp("topic1", 0)]);
        assert_eq!(a["consumer2"], [tp("topic1", 1)]);
        assert_eq!(a["consumer3"], [tp("topic1", 2)]);
    }

    #[test]
    fn conflicting_previous_generations_favour_the_newest() {
        // StickyAssignorTest.testAssignmentWithConflictingPreviousGenerations, both subscription shapes.
        let all = ["topic", "topic2", "topic3"];
        let c = cluster(&[("topic", 4), ("topic2", 4), ("topic3", 4)]);
        let t = |topic: &str, ps: &[i32]| ps.iter().map(|&p| tp(topic, p)).collect::<Vec<_>>();
        for equal in [true, false] {
            let c1_topics: &[&str] = if equal { &all } else { &["topic"] };
            let c2_topics: &[&str] = if equal { &all } else { &["topic", "topic2"] };
            let c1 = if equal {
                [
                    t("topic", &[0, 1, 2]),
                    t("topic2", &[2, 3]),
                    t("topic3", &[0]),
                ]
                .concat()
            } else {
                t("topic", &[0, 1, 2, 3])
            };
            let c2 = [t("topic", &[0, 1]), t("topic2", &[0, 1, 2, 3])].concat();
            let c3 = [t("topic", &[2, 3]), t("topic3", &[0, 1, 2, 3])].concat();
            let g = group(vec![
                ("consumer1", sticky_owned(c1_topics, c1, 1)),
                ("consumer2", sticky_owned(c2_topics, c2.clone(), 2)),
                ("consumer3", sticky_owned(&all, c3.clone(), 2)),
            ]);
            let a = run(&StickyAssignor::default(), &c, &g);
            assert_valid(&c, &g, &a, true);
            assert!(a.values().all(|p| p.len() == 4), "equal={equal}: {a:?}");
            assert!(set(&c2).is_superset(&set(&a["consumer2"])), "equal={equal}");
            assert!(set(&c3).is_superset(&set(&a["consumer3"])), "equal={equal}");
        }
    }

    /// A topic's name is allocated once for all its decoded partitions, not per partition:
    /// a long name and many partitions in a hostile member's user data must not cost name ×
    /// partitions bytes (the `consumer_protocol` fuzz target hit its allocation cap so).
    #[test]
    fn sticky_user_data_shares_one_name_per_topic() {
        let name = "t".repeat(1000);
        let partitions: Vec<TopicPartition> = (0..500).map(|p| tp(&name, p)).collect();
        let bytes = StickyAssignor::encode_user_data(&partitions, 1).unwrap();
        let decoded = StickyAssignor::decode_user_data(&bytes).partitions;
        assert_eq!(decoded.len(), 500);
        assert!(decoded
            .iter()
            .all(|p| Arc::ptr_eq(&p.topic, &decoded[0].topic)));
    }

    #[test]
    fn sticky_user_data_round_trips_and_falls_back() {
        let partitions = vec![tp("t1", 0), tp("t1", 3), tp("t2", 1)];
        let v1 = StickyAssignor::encode_user_data(&partitions, 7).unwrap();
        assert_eq!(
            StickyAssignor::decode_user_data(&v1),
            MemberData {
                partitions: partitions.clone(),
                generation: Some(7)
            }
        );
        // v0: the same without the trailing generation.
        let v0 = &v1[..v1.len() - 4];
        assert_eq!(
            StickyAssignor::decode_user_data(v0),
            MemberData {
                partitions,
                generation: None
            }
        );
        // Garbage (here an absurd topic count) is ignored, not an error.
        assert_eq!(
            StickyAssignor::decode_user_data(&[0x7f, 0xff, 0xff, 0xff]),
            MemberData {
                partitions: vec![],
                generation: Some(DEFAULT_GENERATION)
            }
        );
    }

    #[test]
    fn member_data_sources_match_java() {
        // StickyAssignor honours user data over the subscription fields.
        let s = Subscription {
            user_data: StickyAssignor::encode_user_data(&[tp("topic1", 0), tp("topic2", 1)], 0),
            ..owned(&["topic"], vec![], Some(1))
        };
        assert_eq!(
            StickyAssignor::member_data(&s),
            MemberData {
                partitions: vec![tp("topic1", 0), tp("topic2", 1)],
                generation: Some(0)
            }
        );
        // CooperativeStickyAssignor honours the subscription when it has a generation...
        assert_eq!(
            CooperativeStickyAssignor::member_data(&s),
            MemberData {
                partitions: vec![],
                generation: Some(1)
            }
        );
        // ...else the generation in user data, with the subscription's owned partitions.
        let mut assignor = CooperativeStickyAssignor::default();
        let topics = BTreeSet::from(["topic".to_owned()]);
        let fresh = Subscription {
            user_data: assignor.subscription_user_data(&topics),
            ..owned(&["topic"], vec![tp("topic", 0)], None)
        };
        assert_eq!(
            CooperativeStickyAssignor::member_data(&fresh).generation,
            Some(DEFAULT_GENERATION)
        );
        assignor.on_assignment(&Assignment::default(), 10);
        let s = Subscription {
            user_data: assignor.subscription_user_data(&topics),
            ..owned(&["topic"], vec![tp("topic", 0)], None)
        };
        assert_eq!(
            CooperativeStickyAssignor::member_data(&s),
            MemberData {
                partitions: vec![tp("topic", 0)],
                generation: Some(10)
            }
        );
        assert_eq!(
            CooperativeStickyAssignor::member_data(&sub(&["topic"])).generation,
            None
        );
        // The eager sticky assignor reports its own last assignment.
        let mut sticky = StickyAssignor::default();
        assert_eq!(sticky.subscription_user_data(&topics), None);
        sticky.on_assignment(&Assignment::new(vec![tp("topic", 1)]), 3);
        let s = Subscription {
            user_data: sticky.subscription_user_data(&topics),
            ..sub(&["topic"])
        };
        assert_eq!(
            StickyAssignor::member_data(&s),
            MemberData {
                partitions: vec![tp("topic", 1)],
                generation: Some(3)
            }
        );
    }

    #[test]
    fn stale_generation_loses_its_claim() {
        // AbstractStickyAssignorTest.testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration.
        let c = cluster(&[("topic", 3), ("topic2", 3)]);
        let both = ["topic", "topic2"];
        let g = group(vec![
            (
                "consumer1",
                owned(
                    &both,
                    vec![tp("topic", 0), tp("topic", 2), tp("topic2", 1)],
                    Some(2),
                ),
            ),
            (
                "consumer2",
                owned(
                    &both,
                    vec![tp("topic", 0), tp("topic", 2), tp("topic2", 1)],
                    Some(1),
                ),
            ),
        ]);
        let a = run(&CooperativeStickyAssignor::default(), &c, &g);
        assert_eq!(
            set(&a["consumer1"]),
            set(&[tp("topic", 0), tp("topic", 2), tp("topic2", 1)])
        );
        assert_eq!(
            set(&a["consumer2"]),
            set(&[tp("topic", 1), tp("topic2", 0), tp("topic2", 2)])
        );
    }

    #[test]
    fn constrained_quota_cases() {
        // testConsumerOwningMinQuotaExpectedMaxQuota: 2 members, 5 partitions.
        let c = cluster(&[("topic1", 2), ("topic2", 3)]);
        let both = ["topic1", "topic2"];
        let g = group(vec![
            (
                "consumer1",
                owned(&both, vec![tp("topic1", 0), tp("topic2", 1)], Some(1)),
            ),
            (
                "consumer2",
                owned(&both, vec![tp("topic1", 1), tp("topic2", 2)], Some(1)),
            ),
        ]);
        let a = run(&CooperativeStickyAssignor::default(), &c, &g);
        assert_eq!(
            set(&a["consumer1"]),
            set(&[tp("topic1", 0), tp("topic2", 1), tp("topic2", 0)])
        );
        assert_eq!(
            set(&a["consumer2"]),
            set(&[tp("topic1", 1), tp("topic2", 2)])
        );
    }
}

/// Seeded property tests over random groups.
mod properties {
    use super::*;

    const SEEDS: u64 = 150;

    fn assignors() -> Vec<Box<dyn ConsumerPartitionAssignor>> {
        assignors_for_strategy(&["range", "roundrobin", "sticky", "cooperative-sticky"]).unwrap()
    }

    #[test]
    fn every_subscribed_partition_assigned_once_and_only_to_subscribers() {
        for seed in 0..SEEDS {
            let mut rng = seeded(seed);
            let (c, g) = random_group(&mut rng, seed % 2 == 0);
            for assignor in assignors() {
                let a = run(assignor.as_ref(), &c, &g);
                assert_valid(&c, &g, &a, true);
            }
        }
    }

    #[test]
    fn deterministic() {
        for seed in 0..20 {
            let (c, g) = random_group(&mut seeded(seed), false);
            for assignor in assignors() {
                assert_eq!(
                    assignor.assign(&c, &g),
                    assignor.assign(&c, &g),
                    "{}",
                    assignor.name()
                );
            }
        }
    }

    #[test]
    fn sticky_is_balanced_for_uniform_subscriptions_and_keeps_partitions_when_a_member_leaves() {
        for seed in 0..SEEDS {
            let (c, mut g) = random_group(&mut seeded(seed), true);
            let a = run(&StickyAssignor::default(), &c, &g);
            assert!(spread(&a) <= 1, "seed {seed}: {a:?}");
            if g.len() < 2 {
                continue;
            }
            let leaver = g.keys().next().cloned().unwrap();
            g.remove(&leaver);
            for (member, s) in &mut g {
                s.user_data = StickyAssignor::encode_user_data(&a[member], 1);
                s.generation_id = Some(1);
            }
            let b = run(&StickyAssignor::default(), &c, &g);
            assert!(spread(&b) <= 1, "seed {seed}: {b:?}");
            for member in g.keys() {
                assert!(
                    set(&b[member]).is_superset(&set(&a[member])),
                    "seed {seed}: {member} lost partitions"
                );
            }
        }
    }

    #[test]
    fn sticky_general_case_keeps_survivors_partitions() {
        for seed in 0..SEEDS {
            let (c, mut g) = random_group(&mut seeded(seed), false);
            let a = run(&StickyAssignor::default(), &c, &g);
            if g.len() < 2 {
                continue;
            }
            let leaver = g.keys().last().cloned().unwrap();
            g.remove(&leaver);
            for (member, s) in &mut g {
                s.user_data = StickyAssignor::encode_user_data(&a[member], 1);
            }
            let b = run(&StickyAssignor::default(), &c, &g);
            assert_valid(&c, &g, &b, true);
        }
    }

    /// Java's `CooperativeStickyAssignorTest.verifyValidityAndBalance`: no partition is added to
    /// one member in the round it is revoked from another, and follow-up rebalances converge.
    #[test]
    fn cooperative_never_reassigns_a_partition_in_the_round_it_is_revoked() {
        for seed in 0..SEEDS {
            let mut rng = seeded(seed);
            let (c, g0) = random_group(&mut rng, seed % 2 == 0);
            let assignor = CooperativeStickyAssignor::default();
            // Round 1 from scratch, then a membership change: add a member subscribed to all.
            let first = run(&assignor, &c, &g0);
            let mut g: GroupSubscription = g0
                .iter()
                .map(|(m, s)| {
                    (
                        m.clone(),
                        owned(
                            &s.topics.iter().map(String::as_str).collect::<Vec<_>>(),
                            first[m].clone(),
                            Some(1),
                        ),
                    )
                })
                .collect();
            let all: Vec<String> = g0
                .values()
                .flat_map(|s| s.topics.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            g.insert(
                "member-new".into(),
                Subscription {
                    generation_id: Some(1),
                    ..Subscription::new(all)
                },
            );
            let mut rounds = 0;
            loop {
                let a = run(&assignor, &c, &g);
                assert_valid(&c, &g, &a, false);
                let mut added = BTreeSet::new();
                let mut revoked = BTreeSet::new();
                for (m, s) in &g {
                    let now = set(&a[m]);
                    let before = set(&s.owned_partitions);
                    added.extend(now.difference(&before).cloned());
                    revoked.extend(before.difference(&now).cloned());
                }
                assert!(
                    added.is_disjoint(&revoked),
                    "seed {seed}: moved in one round: {:?}",
                    added.intersection(&revoked).collect::<Vec<_>>()
                );
                if revoked.is_empty() {
                    assert_valid(&c, &g, &a, true);
                    if seed % 2 == 0 {
                        assert!(spread(&a) <= 1, "seed {seed}: unbalanced {a:?}");
                    }
                    break;
                }
                rounds += 1;
                assert!(rounds <= 4, "seed {seed}: no convergence");
                for (m, s) in &mut g {
                    s.owned_partitions = a[m].clone();
                    s.generation_id = Some(2 + rounds);
                }
            }
        }
    }
}

/// The ConsumerProtocol codec (`ConsumerProtocolTest`).
mod protocol {
    use super::*;
    use crate::assignor::protocol::*;

    /// ConsumerProtocol assignments and owned partitions share one allocation of each topic's
    /// name (see `sticky_user_data_shares_one_name_per_topic`).
    #[test]
    fn decoded_partitions_share_one_name_per_topic() {
        let name = "t".repeat(1000);
        let partitions: Vec<TopicPartition> = (0..500).map(|p| tp(&name, p)).collect();
        let assignment = Assignment {
            partitions: partitions.clone(),
            user_data: None,
        };
        let decoded = decode_assignment(&encode_assignment(&assignment, 3).unwrap()).unwrap();
        let subscription = Subscription {
            topics: vec![name.clone()],
            owned_partitions: partitions,
            ..Subscription::default()
        };
        let owned = decode_subscription(&encode_subscription(&subscription, 3).unwrap())
            .unwrap()
            .owned_partitions;
        for decoded in [decoded.partitions, owned] {
            assert_eq!(decoded.len(), 500);
            assert!(decoded
                .iter()
                .all(|p| Arc::ptr_eq(&p.topic, &decoded[0].topic)));
        }
    }

    fn full_subscription() -> Subscription {
        Subscription {
            topics: vec!["foo".into(), "bar".into()],
            user_data: Some(Bytes::from_static(b"hello")),
            owned_partitions: vec![tp("foo", 1), tp("bar", 0), tp("foo", 0)],
            generation_id: Some(7),
            rack_id: Some("rack-a".into()),
            group_instance_id: None,
        }
    }

    #[test]
    fn subscription_round_trips_at_every_version() {
        let s = full_subscription();
        for version in 0..=3 {
            let decoded = decode_subscription(&encode_subscription(&s, version).unwrap()).unwrap();
            assert_eq!(
                decoded.topics,
                ["bar", "foo"],
                "v{version}: topics are sorted"
            );
            assert_eq!(decoded.user_data, s.user_data);
            let owned = if version >= 1 {
                vec![tp("bar", 0), tp("foo", 0), tp("foo", 1)]
            } else {
                vec![]
            };
            assert_eq!(decoded.owned_partitions, owned, "v{version}");
            assert_eq!(
                decoded.generation_id,
                (version >= 2).then_some(7),
                "v{version}"
            );
            assert_eq!(
                decoded.rack_id,
                (version >= 3).then(|| "rack-a".to_owned()),
                "v{version}"
            );
        }
        let minimal = Subscription::new(["t"]);
        assert_eq!(
            decode_subscription(&encode_subscription(&minimal, 3).unwrap()).unwrap(),
            minimal
        );
    }

    #[test]
    fn assignment_round_trips_at_every_version() {
        let a = Assignment {
            partitions: vec![tp("foo", 0), tp("bar", 2), tp("foo", 1)],
            user_data: Some(Bytes::from_static(b"x")),
        };
        for version in 0..=3 {
            let decoded = decode_assignment(&encode_assignment(&a, version).unwrap()).unwrap();
            // Grouped by topic in order of first appearance, like Java.
            assert_eq!(
                decoded.partitions,
                [tp("foo", 0), tp("foo", 1), tp("bar", 2)],
                "v{version}"
            );
            assert_eq!(decoded.user_data, a.user_data);
        }
        assert_eq!(
            decode_assignment(&encode_assignment(&Assignment::default(), 0).unwrap()).unwrap(),
            Assignment::default()
        );
    }

    #[test]
    fn newer_versions_are_read_as_the_newest_known_and_trailing_fields_ignored() {
        let body = encode_subscription(&full_subscription(), 3).unwrap();
        let mut future = BytesMut::new();
        future.put_i16(9);
        future.put_slice(&body[2..]);
        future.put_slice(b"new field");
        let decoded = decode_subscription(&future.freeze()).unwrap();
        assert_eq!(decoded.rack_id.as_deref(), Some("rack-a"));
        // Encoding at a newer version writes the newest we know.
        assert_eq!(
            &encode_subscription(&full_subscription(), 9).unwrap()[..2],
            &[0, 3]
        );
    }

    #[test]
    fn malformed_bytes_are_typed_errors() {
        use ConsumerProtocolMessage::*;
        assert_eq!(
            decode_subscription(&Bytes::from_static(&[0])).unwrap_err(),
            ConsumerProtocolError::ShortHeader {
                message: Subscription,
                len: 1
            }
        );
        assert_eq!(
            decode_assignment(&Bytes::from_static(&[0xff, 0xff])).unwrap_err(),
            ConsumerProtocolError::UnsupportedVersion {
                message: Assignment,
                version: -1
            }
        );
        assert!(matches!(
            encode_assignment(&super::Assignment::default(), -2),
            Err(ConsumerProtocolError::UnsupportedVersion { .. })
        ));
        // Every strict prefix of a valid message is truncated, never a panic.
        let full = encode_subscription(&full_subscription(), 3).unwrap();
        for cut in 2..full.len() {
            let err = decode_subscription(&full.slice(..cut)).unwrap_err();
            assert!(
                matches!(err, ConsumerProtocolError::Truncated { .. }),
                "cut {cut}: {err}"
            );
        }
        let full = encode_assignment(&super::Assignment::new(vec![tp("t", 1)]), 1).unwrap();
        for cut in 2..full.len() {
            assert!(decode_assignment(&full.slice(..cut)).is_err(), "cut {cut}");
        }
        // A two-billion-element array announced in a few bytes: refused before allocating.
        let huge = Bytes::from_static(&[0, 0, 0x7f, 0xff, 0xff, 0xff]);
        assert!(matches!(
            decode_assignment(&huge),
            Err(ConsumerProtocolError::Truncated {
                field: "assigned_partitions",
                ..
            })
        ));
        // Negative lengths and a null non-nullable string.
        let negative = Bytes::from_static(&[0, 0, 0xff, 0xff, 0xff, 0xfe]);
        assert!(matches!(
            decode_subscription(&negative),
            Err(ConsumerProtocolError::InvalidLength { length: -2, .. })
        ));
        let null_topic = Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0xff, 0xff]);
        assert!(matches!(
            decode_subscription(&null_topic),
            Err(ConsumerProtocolError::InvalidLength {
                field: "topics[]",
                ..
            })
        ));
        // Not UTF-8: structurally fine, rejected by the decoder.
        let bad_utf8 = Bytes::from_static(&[0, 0, 0, 0, 0, 1, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert!(matches!(
            decode_subscription(&bad_utf8),
            Err(ConsumerProtocolError::Malformed { .. })
        ));
    }

    #[test]
    fn random_bytes_never_panic() {
        use rand::Rng;
        let mut rng = seeded(42);
        for _ in 0..2000 {
            let len = rng.gen_range(0..40);
            let mut bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            if bytes.len() >= 2 {
                bytes[0] = 0;
                bytes[1] = rng.gen_range(0..4);
            }
            let bytes = Bytes::from(bytes);
            let _ = decode_subscription(&bytes);
            let _ = decode_assignment(&bytes);
        }
    }
}
