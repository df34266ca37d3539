//! **Family: static member restarts** — members with `group.instance.id` killed and restarted,
//! within the session timeout (they should get their partitions back without a rebalance) or
//! beyond it (they are expelled, the group rebalances, and they rejoin as new owners).
//!
//! **Interleavings aimed at.** A static member's process dies without leaving; a new process
//! with the same `group.instance.id` joins while the coordinator still holds the old member
//! (classic: JoinGroup replaces the old member id and returns the old assignment; KIP-848: a
//! heartbeat with epoch 0 and the same instance id takes over the old member's assignment) — or
//! after the coordinator expired it and gave its partitions to the others, which must give them
//! back. The old incarnation's commits were in flight when it died; the new one starts from
//! the committed offsets. Per seed: protocol, timeouts, commit policy, one or two members, each
//! crash time and down time (0.5 s up to 0.6× the session, or 1.3–2× the session). KIP-848
//! answers a crashed static member's new process `UNRELEASED_INSTANCE_ID` (fatal, in Java's
//! client as in ours) until the old member's session expired, so under KIP-848 the restarts are
//! all beyond the session; within-session restarts are drawn for classic groups.
//!
//! **Invariants.** The full set ([`super::full_checks`]): the restarted member re-reads the
//! committed offsets, so records are re-delivered only after the last successful commit
//! (`duplicate-deliveries`), never lost; ownership by the old and the new incarnation never
//! overlaps another member's (`exclusive-ownership`, a crash ends a window); committed offsets
//! never move back, and the group settles after the last restart (`liveness`).
//!
//! **Why our design should hold.** A static member's identity is its `group.instance.id`: the
//! new process joins with it and no member id (classic) or epoch 0 (KIP-848), and our consumer
//! holds no state across processes — the positions come from OffsetFetch of the committed
//! offsets (`internals/` offset fetch on assignment), exactly as for a new member. The
//! coordinator, not the client, decides whether this is a replacement or a new member.

use sim::fault::Fault;

use super::{
    between, coin, family_scenario, full_checks, knob_rng, set, Family, GroupKnobs, Protocol,
};
use crate::scenario::{MemberFaults, PlannedFaults, Scenario};

pub const NAME: &str = "family-static-members";

const SALT: u64 = 0x7374_6174_6963;
const MEMBERS: usize = 3;
/// How soon after the last restart the group must be stable: the rebalance timeout (30 s) and
/// a heartbeat interval, plus slack. A static member that crashes while its first JoinGroup
/// is out and is replaced before it sent SyncGroup stays in Kafka's `pendingSyncMembers` under
/// its old member id (`ClassicGroup.replaceStaticMember` does not carry it over), so the
/// pending-sync expiration rebalances the group one rebalance timeout after that join
/// completed, whatever happened since (seeds 27 and 101: settled 30.1 s after the restart).
const WITHIN_MS: u64 = 40_000;
const PRODUCE_UNTIL_MS: u64 = 55_000;
const RUN_MS: u64 = 85_000;

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticRestarts {
    pub group: GroupKnobs,
    /// Per member: its crash and restart, if any.
    pub members: Vec<MemberFaults>,
    pub healed_at_ms: u64,
}

pub fn draw(seed: u64) -> StaticRestarts {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let session = group.session_ms();
    let crashing = 1 + rng.below_inclusive(1) as usize;
    let first = rng.below_inclusive(MEMBERS as u64 - 1) as usize;
    let mut members = vec![MemberFaults::default(); MEMBERS];
    let mut healed_at_ms = 0;
    for k in 0..crashing {
        let crash_at = between(&mut rng, 5_000, 18_000);
        // KIP-848 refuses a static member's new process while the old one has neither left
        // (epoch -2) nor expired: `UNRELEASED_INSTANCE_ID`, fatal in Java's client and ours.
        // A crashed KIP-848 static member therefore comes back only after its session.
        let within = group.protocol == Protocol::Classic && coin(&mut rng);
        let down = if within {
            between(&mut rng, 500, session * 6 / 10)
        } else {
            between(&mut rng, session * 13 / 10, session * 2)
        };
        members[(first + k) % MEMBERS] = MemberFaults {
            crash_at_ms: Some(crash_at),
            restart_after_ms: Some(down),
            ..MemberFaults::default()
        };
        healed_at_ms = healed_at_ms.max(crash_at + down + 1);
    }
    StaticRestarts {
        group,
        members,
        healed_at_ms,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let s = draw(seed);
    for (spec, faults) in scenario.subjects.iter_mut().zip(s.members) {
        s.group.apply(spec);
        let instance = format!("static-{}", spec.name);
        set(spec, "group.instance.id", &instance);
        spec.member_faults = faults;
    }
}

fn plan(seed: u64) -> PlannedFaults {
    let s = draw(seed);
    PlannedFaults {
        plan: vec![(
            0,
            Fault::Latency {
                min_ms: 1,
                max_ms: 10,
            },
        )],
        healed_at_ms: s.healed_at_ms,
    }
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS)
}

pub fn scenario() -> Scenario {
    family_scenario(Family {
        name: NAME,
        description: "static members (group.instance.id) killed and restarted within or beyond the session timeout: full checker set",
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
    fn restarts_fall_on_both_sides_of_the_session_timeout() {
        let (mut within, mut beyond) = (0, 0);
        for seed in 0..100 {
            let s = draw(seed);
            for f in &s.members {
                if let Some(down) = f.restart_after_ms {
                    if down < s.group.session_ms() {
                        within += 1;
                    } else {
                        beyond += 1;
                    }
                }
            }
            assert!(s.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS, "seed {seed}");
            let spec = &scenario().for_seed(seed).subjects[0];
            assert!(spec
                .properties
                .contains(&("group.instance.id".into(), "static-c0".into())));
        }
        assert!(
            within > 30 && beyond > 30,
            "{within} within, {beyond} beyond"
        );
    }
}
