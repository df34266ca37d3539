//! **Family: rebalance storm** — members joining, leaving and crashing (killed without a
//! leave, sometimes restarted) at random times, under either group protocol.
//!
//! **Interleavings aimed at.** A join landing while a previous rebalance is still in its
//! sync/reconciliation; a leave while another member is revoking; a crash of a member that owns
//! partitions in the middle of a rebalance (classic: the join phase waits for it until its
//! session expires; KIP-848: the coordinator keeps its partitions assigned until it is fenced,
//! so the others' target assignment is reached in steps); a crashed member restarting as a new
//! member while its old incarnation still holds the partitions; slow rebalance callbacks
//! stretching every phase. Per seed: the protocol (classic or consumer), the classic assignor
//! (eager range/roundrobin or cooperative-sticky) and session timeout, the commit policy
//! (auto-commit or `commitAsync` after each poll), each churning member's role and times, the
//! listeners' slowness and the network latency.
//!
//! **Invariants.** The full set ([`super::full_checks`]): no partition owned by two members at
//! once (a crashed or fenced member's window excepted, and then its commits must fail), revoke
//! or lost before the view moves on, no loss, duplicates only of what was processed after the
//! last successful commit, committed offsets never move back, and after the last membership
//! change the group settles and consumes and commits everything within 30 s.
//!
//! **Why our design should hold.** Membership (`consumer/src/internals/membership/`) is one
//! state machine on the background task; the application learns of every change through
//! callback events run inside `poll`, and an assignment is acknowledged (classic: SyncGroup's
//! result applied; KIP-848: reconciliation's ack heartbeat) only after the revocation callback
//! and the commit before it finished. A rebalance that commits before revoking stops fetching
//! first and waits for an acknowledged `poll` (the KAFKA-14196 fix), so nothing fetched for a
//! partition being given up reaches the application; a member that learns it was fenced runs
//! `onPartitionsLost` and its commits carry the stale generation/epoch the coordinator refuses.

use super::{
    between, coin, draw_listener, draw_listener_panic, family_scenario, full_checks, knob_rng,
    latency_until, Family, GroupKnobs, LEAVE_GRACE_MS,
};
use crate::scenario::{MemberFaults, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-rebalance-storm";

const SALT: u64 = 0x0073_746f_726d;
/// `c0` and `c1` run throughout; `c2`… churn.
const MEMBERS: usize = 5;
const STEADY: usize = 2;
/// Every join, leave, crash and restart happens before this.
const CHURN_UNTIL_MS: u64 = 25_000;
const RESTART_WITHIN_MS: u64 = 8_000;
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 50_000;
const RUN_MS: u64 = 70_000;

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storm {
    pub group: GroupKnobs,
    /// Per member: start time, own faults, listener.
    pub members: Vec<(u64, MemberFaults, ListenerBehaviour)>,
    pub latency_max_ms: u64,
    /// After the last membership change.
    pub healed_at_ms: u64,
}

pub fn draw(seed: u64) -> Storm {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let mut members = Vec::new();
    let mut last = 0;
    for i in 0..MEMBERS {
        let listener = draw_listener(&mut rng, 1_500);
        if i < STEADY {
            members.push((0, MemberFaults::default(), listener));
            continue;
        }
        let start = if coin(&mut rng) {
            0
        } else {
            between(&mut rng, 1_000, 15_000)
        };
        let mut faults = MemberFaults::default();
        let at = between(&mut rng, start + 1_000, CHURN_UNTIL_MS);
        match rng.below_inclusive(2) {
            0 => {}
            1 => {
                faults.leave_at_ms = Some(at);
                last = last.max(at + LEAVE_GRACE_MS);
            }
            _ => {
                faults.crash_at_ms = Some(at);
                faults.restart_after_ms =
                    coin(&mut rng).then(|| between(&mut rng, 500, RESTART_WITHIN_MS));
                last = last.max(at + faults.restart_after_ms.unwrap_or(0));
            }
        }
        last = last.max(start);
        members.push((start, faults, listener));
    }
    if let Some((member, call)) = draw_listener_panic(seed, SALT, members.len()) {
        members[member].2.panic_on_call = Some(call);
    }
    Storm {
        group,
        members,
        latency_max_ms: between(&mut rng, 2, 40),
        healed_at_ms: last + 1,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let storm = draw(seed);
    for (spec, (start, faults, listener)) in scenario.subjects.iter_mut().zip(storm.members) {
        storm.group.apply(spec);
        spec.start_ms = start;
        spec.member_faults = faults;
        spec.listener = listener;
    }
}

fn plan(seed: u64) -> PlannedFaults {
    let storm = draw(seed);
    latency_until(storm.latency_max_ms, storm.healed_at_ms)
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS)
}

pub fn scenario() -> Scenario {
    family_scenario(Family {
        name: NAME,
        description: "members join, leave and crash (some restart) at seeded times, either protocol: full checker set",
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
    fn every_role_is_drawn_and_the_heal_follows_the_churn() {
        let (mut leaves, mut crashes, mut restarts) = (0, 0, 0);
        for seed in 0..100 {
            let storm = draw(seed);
            for (start, faults, _) in &storm.members {
                assert!(*start < storm.healed_at_ms);
                leaves += usize::from(faults.leave_at_ms.is_some());
                crashes += usize::from(faults.crash_at_ms.is_some());
                restarts += usize::from(faults.restart_after_ms.is_some());
                for at in [faults.leave_at_ms, faults.crash_at_ms]
                    .into_iter()
                    .flatten()
                {
                    assert!(at > *start && at < storm.healed_at_ms, "seed {seed}");
                }
            }
            assert!(storm.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS);
            assert!(storm.members[..STEADY]
                .iter()
                .all(|(s, f, _)| *s == 0 && *f == MemberFaults::default()));
        }
        assert!(leaves > 30 && crashes > 30 && restarts > 10);
        let s = scenario().for_seed(3);
        assert_eq!(s.subjects.len(), MEMBERS);
        assert!(s
            .subjects
            .iter()
            .all(|m| m.properties.iter().any(|(k, _)| k == "group.protocol")));
    }
}
