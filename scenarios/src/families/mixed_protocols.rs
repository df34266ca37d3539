//! **Family: mixed protocols** — a rolling client upgrade (or downgrade) of a live group: each
//! member running one `group.protocol` is replaced, one at a time, by a new process running the
//! other, so the group is classic, then mixed, then KIP-848 (or the reverse).
//!
//! **Interleavings aimed at.** The coordinator's online migration (KIP-848's
//! `group.consumer.migration.policy`, bidirectional by default in Kafka 4.1): the first
//! consumer-protocol member turns a classic group into a consumer group, whose classic members
//! then get their assignment through JoinGroup/SyncGroup computed by the server-side assignor
//! and learn of rebalances from heartbeats; the last consumer-protocol member leaving turns it
//! back. Per seed: the direction, the classic assignor (eager range/roundrobin, or
//! cooperative-sticky), the classic session timeout, the commit policy, when each replacement
//! starts and whether its predecessor leaves before or after it joins (a gap or an overlap of
//! up to 4 s), whether the predecessor leaves cleanly or is killed (its partitions held until
//! its session expires), the listeners' slowness, a panicking listener call, and the network
//! latency.
//!
//! **Invariants.** The full set ([`super::full_checks`]): no partition owned by two members at
//! once across the protocol switch (a crashed member's window excepted, its commits then
//! refused), revoke or lost before the view moves on, no loss, duplicates only of what was
//! processed after the last successful commit, committed offsets never move back, and once the
//! last replacement is in the group settles, consumes and commits everything within 30 s.
//!
//! **Why our design should hold.** Each member speaks one protocol through one membership
//! state machine (`consumer/src/internals/membership/{classic,consumer}`); what the coordinator
//! does to migrate the group is invisible to it beyond the answers it gets — a classic member
//! sees ordinary JoinGroup/SyncGroup/Heartbeat answers (`REBALANCE_IN_PROGRESS`,
//! `UNKNOWN_MEMBER_ID`), a consumer member ordinary heartbeats — and both only acknowledge an
//! assignment after the revocation callback and the commit before it finished.

use kafka_consumer::rt::SeededRng;

use super::{
    between, coin, draw_listener, draw_listener_panic, family_scenario, full_checks, knob_rng,
    latency_until, Family, GroupKnobs, Protocol, LEAVE_GRACE_MS,
};
use crate::scenario::{MemberFaults, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-mixed-protocols";

const SALT: u64 = 0x006d_6978_6564;
/// `c0`–`c2` run the old protocol from the start; `c3`–`c5` replace them in turn.
const REPLACED: usize = 3;
const MEMBERS: usize = 2 * REPLACED;
const FIRST_REPLACEMENT_MS: (u64, u64) = (8_000, 12_000);
const BETWEEN_REPLACEMENTS_MS: (u64, u64) = (3_000, 8_000);
/// How long before (negative) or after its replacement starts an old member goes.
const HANDOVER_MS: (i64, i64) = (-2_000, 4_000);
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 60_000;
const RUN_MS: u64 = 80_000;

/// One member of a seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub protocol: Protocol,
    pub start_ms: u64,
    pub faults: MemberFaults,
    pub listener: ListenerBehaviour,
}

/// How the first `REPLACED` members are replaced, one after another, by members on `to`.
pub(super) struct Replacements {
    pub to: Protocol,
    /// When the first replacement starts.
    pub first_ms: u64,
    /// The gap between one replacement's start and the next, drawn in this range.
    pub between_ms: (u64, u64),
    /// No old member goes before this (it is what consumes until then).
    pub not_before_ms: u64,
    /// The longest a new member's listener may take.
    pub listener_max_ms: u64,
}

/// Replaces `members[0..REPLACED]`: each new member starts in turn, and the old one it
/// replaces leaves (or, one time in four, crashes) within `HANDOVER_MS` of that start. Returns
/// when the last of them is done (a leaver after its close grace).
pub(super) fn replace_members(
    rng: &mut SeededRng,
    members: &mut Vec<Member>,
    plan: Replacements,
) -> u64 {
    let mut at = plan.first_ms;
    let mut last = 0;
    for old in 0..REPLACED {
        let handover =
            HANDOVER_MS.0 + rng.below_inclusive((HANDOVER_MS.1 - HANDOVER_MS.0) as u64) as i64;
        let gone_ms = at.saturating_add_signed(handover).max(plan.not_before_ms);
        if coin(rng) && coin(rng) {
            members[old].faults.crash_at_ms = Some(gone_ms);
            last = last.max(gone_ms);
        } else {
            members[old].faults.leave_at_ms = Some(gone_ms);
            last = last.max(gone_ms + LEAVE_GRACE_MS);
        }
        members.push(Member {
            protocol: plan.to,
            start_ms: at,
            faults: MemberFaults::default(),
            listener: draw_listener(rng, plan.listener_max_ms),
        });
        last = last.max(at);
        at += between(rng, plan.between_ms.0, plan.between_ms.1);
    }
    last
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rollout {
    /// The knobs every member shares but its protocol.
    pub group: GroupKnobs,
    /// The protocol the group starts with.
    pub from: Protocol,
    pub members: Vec<Member>,
    pub latency_max_ms: u64,
    /// After the last member left or was killed.
    pub healed_at_ms: u64,
}

pub fn draw(seed: u64) -> Rollout {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let (from, to) = if coin(&mut rng) {
        (Protocol::Classic, Protocol::Consumer)
    } else {
        (Protocol::Consumer, Protocol::Classic)
    };
    let mut members: Vec<Member> = (0..REPLACED)
        .map(|_| Member {
            protocol: from,
            start_ms: between(&mut rng, 0, 2_000),
            faults: MemberFaults::default(),
            listener: draw_listener(&mut rng, 1_500),
        })
        .collect();
    let first_ms = between(&mut rng, FIRST_REPLACEMENT_MS.0, FIRST_REPLACEMENT_MS.1);
    let last = replace_members(
        &mut rng,
        &mut members,
        Replacements {
            to,
            first_ms,
            between_ms: BETWEEN_REPLACEMENTS_MS,
            not_before_ms: 0,
            listener_max_ms: 1_500,
        },
    );
    if let Some((member, call)) = draw_listener_panic(seed, SALT, members.len()) {
        members[member].listener.panic_on_call = Some(call);
    }
    Rollout {
        group,
        from,
        members,
        latency_max_ms: between(&mut rng, 2, 40),
        healed_at_ms: last + 1,
    }
}

/// Gives each of `scenario`'s subjects its drawn member: the shared knobs with the member's own
/// protocol, its start, faults and listener.
pub(super) fn apply_members(scenario: &mut Scenario, group: &GroupKnobs, members: Vec<Member>) {
    for (spec, member) in scenario.subjects.iter_mut().zip(members) {
        GroupKnobs {
            protocol: member.protocol,
            ..group.clone()
        }
        .apply(spec);
        spec.start_ms = member.start_ms;
        spec.member_faults = member.faults;
        spec.listener = member.listener;
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let rollout = draw(seed);
    apply_members(scenario, &rollout.group, rollout.members);
}

fn plan(seed: u64) -> PlannedFaults {
    let rollout = draw(seed);
    latency_until(rollout.latency_max_ms, rollout.healed_at_ms)
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS)
}

pub fn scenario() -> Scenario {
    family_scenario(Family {
        name: NAME,
        description: "a rolling upgrade or downgrade between group protocols: each member replaced by one running the other protocol, full checker set",
        partitions: 6,
        members: MEMBERS,
        produce_until_ms: PRODUCE_UNTIL_MS,
        run_ms: RUN_MS,
        plan,
        checks,
        vary,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_old_member_is_replaced_by_one_running_the_other_protocol() {
        let (mut upgrades, mut downgrades, mut crashes, mut gaps) = (0, 0, 0, 0);
        for seed in 0..100 {
            let rollout = draw(seed);
            let (old, new) = rollout.members.split_at(REPLACED);
            assert!(old.iter().all(|m| m.protocol == rollout.from));
            assert!(new.iter().all(|m| m.protocol != rollout.from));
            match rollout.from {
                Protocol::Classic => upgrades += 1,
                Protocol::Consumer => downgrades += 1,
            }
            for (o, n) in old.iter().zip(new) {
                let gone = o.faults.leave_at_ms.or(o.faults.crash_at_ms).unwrap();
                assert!(gone > o.start_ms, "seed {seed}");
                assert!(gone < rollout.healed_at_ms, "seed {seed}");
                crashes += usize::from(o.faults.crash_at_ms.is_some());
                gaps += usize::from(gone < n.start_ms);
            }
            assert!(new.windows(2).all(|w| w[0].start_ms < w[1].start_ms));
            assert!(
                rollout.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS,
                "seed {seed}"
            );
            assert!(rollout.healed_at_ms < PRODUCE_UNTIL_MS);
        }
        assert!(upgrades > 30 && downgrades > 30);
        assert!(crashes > 30 && gaps > 30, "{crashes} crashes, {gaps} gaps");
        let s = scenario().for_seed(5);
        let protocols: std::collections::BTreeSet<&str> = s
            .subjects
            .iter()
            .filter_map(|m| {
                m.properties
                    .iter()
                    .find(|(k, _)| k == "group.protocol")
                    .map(|(_, v)| v.as_str())
            })
            .collect();
        assert_eq!(protocols.len(), 2, "both protocols in one group");
    }
}
