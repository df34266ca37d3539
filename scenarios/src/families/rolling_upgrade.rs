//! **Family: rolling broker upgrade** (the project's own; issue #18) — a three-broker cluster
//! on Kafka 3.9 upgraded broker by broker to 4.4 while a classic group consumes, then the
//! group migrated to `group.protocol=consumer` member by member, as Kafka's online migration
//! (KIP-848) allows once every broker offers ConsumerGroupHeartbeat.
//!
//! **Interleavings aimed at.** Mixed versions: mid-upgrade the brokers answer ApiVersions with
//! different tables (3.9: Fetch up to v17, ListOffsets v9, Metadata v12, no
//! ConsumerGroupHeartbeat; 4.4: v18, v10, v13, ConsumerGroupHeartbeat v0–1, as far as the
//! simulator serves them), so a request whose version was chosen from one broker's table and
//! sent to another fails — the fetch to a 3.9 leader built from a 4.4 connection, the
//! coordinator's requests after it moved. A coordinator that moves to an upgraded broker
//! behaves as 4.4's: consumer groups it creates start at epoch 1, and it computes target
//! assignments at most once a second (`group.consumer.assignment.interval.ms`), so members
//! joining in a burst during the migration wait for a heartbeat after the interval. Each
//! broker in a seeded order is restarted into 4.4 at once, or killed and brought back on 4.4
//! after 0.5–3 s (leadership and the coordinator fail over meanwhile), 1–3 s apart. Then,
//! 2–4 s after the last broker is back, each classic member is replaced in turn by a new
//! process (3–6 s apart; the old one leaves or is killed up to 2 s before or 4 s after its
//! replacement starts): in three seeds out of four the replacements run
//! `group.protocol=consumer` (the group turns mixed, then a consumer group), in the others
//! classic again (a rolling client restart on the new cluster). Per seed also: the classic
//! assignor and session timeout, the commit policy, the listeners' slowness and the network
//! latency.
//!
//! **Invariants.** The full set ([`super::full_checks`]): no record lost, duplicates only
//! within the at-least-once bound across the restarts and the protocol switch, committed
//! offsets never move back, no partition owned by two members at once (a killed member's
//! window excepted, its commits refused), no fatal error (a `poll` error fails `BlockingBounds`
//! no more than any other, but the liveness checker wants every member consuming), and once
//! the last replacement is in the group settles and commits everything within 30 s.
//!
//! **Why our design should hold.** Every request is built for its target broker's own
//! ApiVersions (`consumer/src/internals/node_versions.rs`): a manager whose target has no
//! negotiated connection waits for it instead of borrowing another broker's versions, and a
//! restarted broker's new connection renegotiates. The KIP-848 members start only once every
//! broker offers ConsumerGroupHeartbeat; before that the group is classic, whose APIs both
//! releases serve.

use sim::fault::Fault;
use sim::kafka_version::KafkaVersion;

use super::mixed_protocols::{apply_members, replace_members, Member, Replacements};
use super::{
    between, coin, draw_listener, family_scenario, full_checks, knob_rng, latency_until, pick,
    Family, GroupKnobs, Protocol, BROKERS,
};
use crate::scenario::{MemberFaults, PlannedFaults, Scenario};

pub const NAME: &str = "family-rolling-upgrade";

const SALT: u64 = 0x7570_6772_6164;
/// The release the cluster starts on, and the one it is upgraded to.
pub const FROM: KafkaVersion = KafkaVersion::V3_9;
pub const TO: KafkaVersion = KafkaVersion::V4_4;
/// `c0`–`c2` consume through the upgrade; `c3`–`c5` replace them afterwards.
const REPLACED: usize = 3;
const MEMBERS: usize = 2 * REPLACED;
const UPGRADE_START_MS: (u64, u64) = (3_000, 8_000);
const DOWN_MS: (u64, u64) = (500, 3_000);
const UPGRADE_GAP_MS: (u64, u64) = (1_000, 3_000);
const FIRST_REPLACEMENT_AFTER_MS: (u64, u64) = (2_000, 4_000);
const BETWEEN_REPLACEMENTS_MS: (u64, u64) = (3_000, 6_000);
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 60_000;
const RUN_MS: u64 = 85_000;

/// How one broker is upgraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Restarted straight into the new release.
    Restart,
    /// Killed, and started on the new release this much later.
    KillThenStart { down_ms: u64 },
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upgrade {
    /// The knobs every member shares but its protocol.
    pub group: GroupKnobs,
    /// In order: broker, how, when it starts going down.
    pub steps: Vec<(i32, Step, u64)>,
    /// When the last broker is back on the new release.
    pub upgraded_at_ms: u64,
    pub members: Vec<Member>,
    pub latency_max_ms: u64,
    /// After the last old member left or was killed.
    pub healed_at_ms: u64,
}

pub fn draw(seed: u64) -> Upgrade {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs {
        protocol: Protocol::Classic,
        ..GroupKnobs::draw(&mut rng, &[30_000])
    };
    let to = if rng.below_inclusive(3) == 0 {
        Protocol::Classic
    } else {
        Protocol::Consumer
    };
    let mut members: Vec<Member> = (0..REPLACED)
        .map(|_| Member {
            protocol: Protocol::Classic,
            start_ms: between(&mut rng, 0, 2_000),
            faults: MemberFaults::default(),
            listener: draw_listener(&mut rng, 1_000),
        })
        .collect();
    let mut order: Vec<i32> = (1..=BROKERS).collect();
    for i in (1..order.len()).rev() {
        let j = rng.below_inclusive(i as u64) as usize;
        order.swap(i, j);
    }
    let mut at = between(&mut rng, UPGRADE_START_MS.0, UPGRADE_START_MS.1);
    let mut steps = Vec::new();
    for broker in order {
        let step = if coin(&mut rng) {
            Step::Restart
        } else {
            Step::KillThenStart {
                down_ms: between(&mut rng, DOWN_MS.0, DOWN_MS.1),
            }
        };
        steps.push((broker, step, at));
        if let Step::KillThenStart { down_ms } = step {
            at += down_ms;
        }
        at += between(&mut rng, UPGRADE_GAP_MS.0, UPGRADE_GAP_MS.1);
    }
    let upgraded_at_ms = at;
    let first_ms = upgraded_at_ms
        + between(
            &mut rng,
            FIRST_REPLACEMENT_AFTER_MS.0,
            FIRST_REPLACEMENT_AFTER_MS.1,
        );
    // Never before the upgrade is done: the old members are what consumes through it.
    let last = replace_members(
        &mut rng,
        &mut members,
        Replacements {
            to,
            first_ms,
            between_ms: BETWEEN_REPLACEMENTS_MS,
            not_before_ms: upgraded_at_ms,
            listener_max_ms: 1_000,
        },
    );
    Upgrade {
        group,
        steps,
        upgraded_at_ms,
        members,
        latency_max_ms: pick(&mut rng, &[2, 10, 30]),
        healed_at_ms: last + 1,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let upgrade = draw(seed);
    scenario.cluster.kafka_version = FROM;
    apply_members(scenario, &upgrade.group, upgrade.members);
}

fn plan(seed: u64) -> PlannedFaults {
    let upgrade = draw(seed);
    let mut planned = latency_until(upgrade.latency_max_ms, upgrade.healed_at_ms);
    for (broker, step, at) in upgrade.steps {
        let to_new = Fault::UpgradeBroker {
            broker,
            version: TO,
        };
        match step {
            Step::Restart => planned.plan.push((at, to_new)),
            Step::KillThenStart { down_ms } => {
                planned.plan.push((at, Fault::KillBroker { broker }));
                planned.plan.push((at + down_ms, to_new));
            }
        }
    }
    planned.plan.sort_by_key(|(at, _)| *at);
    planned
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS)
}

pub fn scenario() -> Scenario {
    let mut scenario = family_scenario(Family {
        name: NAME,
        description: "brokers upgraded 3.9 → 4.4 one at a time under a classic group, then the group migrated member by member to group.protocol=consumer: full checker set",
        partitions: 6,
        members: MEMBERS,
        produce_until_ms: PRODUCE_UNTIL_MS,
        run_ms: RUN_MS,
        plan,
        checks,
        vary,
    });
    scenario.cluster.kafka_version = FROM;
    scenario
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_broker_is_upgraded_once_before_any_kip_848_member_starts() {
        let (mut migrations, mut kills) = (0, 0);
        for seed in 0..200 {
            let upgrade = draw(seed);
            let planned = plan(seed);
            let mut upgraded: Vec<i32> = planned
                .plan
                .iter()
                .filter_map(|(_, f)| match f {
                    Fault::UpgradeBroker { broker, version } => {
                        assert_eq!(*version, TO);
                        Some(*broker)
                    }
                    _ => None,
                })
                .collect();
            upgraded.sort_unstable();
            assert_eq!(upgraded, vec![1, 2, 3], "seed {seed}");
            let last_upgrade = planned
                .plan
                .iter()
                .filter(|(_, f)| matches!(f, Fault::UpgradeBroker { .. }))
                .map(|(at, _)| *at)
                .max()
                .unwrap();
            assert!(last_upgrade < upgrade.upgraded_at_ms, "seed {seed}");
            kills += planned
                .plan
                .iter()
                .filter(|(_, f)| matches!(f, Fault::KillBroker { .. }))
                .count();
            let (old, new) = upgrade.members.split_at(REPLACED);
            assert!(old.iter().all(|m| m.protocol == Protocol::Classic));
            for (o, n) in old.iter().zip(new) {
                assert!(n.start_ms > upgrade.upgraded_at_ms, "seed {seed}");
                let gone = o.faults.leave_at_ms.or(o.faults.crash_at_ms).unwrap();
                assert!(gone >= upgrade.upgraded_at_ms, "seed {seed}");
                assert!(gone < upgrade.healed_at_ms, "seed {seed}");
            }
            migrations += usize::from(new[0].protocol == Protocol::Consumer);
            assert!(upgrade.healed_at_ms < PRODUCE_UNTIL_MS, "seed {seed}");
            assert!(
                upgrade.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS,
                "seed {seed}"
            );
        }
        assert!(
            migrations > 120 && migrations < 180,
            "{migrations} migrations"
        );
        assert!(kills > 200, "{kills} kills");
        let s = scenario().for_seed(3);
        assert_eq!(s.cluster.kafka_version, FROM);
    }
}
