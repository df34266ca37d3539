//! **Family: lost commit responses and slow rebalance callbacks** — commits applied by the
//! coordinator whose answers never arrive, while rebalances with slow listeners come and go.
//!
//! **Interleavings aimed at.** Over a seeded window, each OffsetCommit response is lost with a
//! seeded probability (the coordinator *applied* the commit; the member sees its connection
//! close with the request in flight) or held 0.5–3 s; in some seeds group heartbeats' answers
//! are lost now and then too. Meanwhile members join and leave, and the listeners are slow
//! (`onPartitionsRevoked`/`onPartitionsAssigned` up to 3 s each), so commits before revocation,
//! async commits of the last poll and auto-commits are in flight across rebalances, and a
//! commit's outcome is unknown exactly when the partition is handed over. Per seed: protocol,
//! timeouts, commit policy, loss probability, hold, window, join/leave times, listener times.
//!
//! **Invariants.** The full set ([`super::full_checks`]): a commit whose answer was lost is
//! never replayed after a newer one (`committed-offsets-monotonic`), a lost answer never makes
//! the member re-deliver what the group had committed past (`duplicate-deliveries`), every
//! async commit's callback runs by `close` even when its answer was lost
//! (`async-commits-before-close`), slow callbacks keep within `poll`'s bound plus their own
//! time (`blocking-bounds`), and the group settles and commits everything after the window.
//!
//! **Why our design should hold.** A lost response fails its request with a disconnect; our
//! async commits are not retried (their callback gets the error), so a stale commit cannot
//! land after a newer one; the commit before revocation and `commit_sync` retry with the offsets
//! consumed *at retry time* and are single-flight. Callbacks run on the application side inside
//! `poll` while the background task keeps heartbeating, so a slow listener delays the
//! rebalance's acknowledgement but never the member's liveness.

use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};

use super::{
    between, coin, draw_listener_panic, family_scenario, full_checks, knob_rng, pick, Family,
    GroupKnobs, Protocol,
};
use crate::scenario::{MemberFaults, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-lost-commits";

const SALT: u64 = 0x6c6f_7374;
const OFFSET_COMMIT: i16 = 8;
const HEARTBEAT: i16 = 12;
const CONSUMER_GROUP_HEARTBEAT: i16 = 68;
const MEMBERS: usize = 4;
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 50_000;
const RUN_MS: u64 = 65_000;

/// One seed's draw.
#[derive(Debug, Clone, PartialEq)]
pub struct LostCommits {
    pub group: GroupKnobs,
    pub listeners: Vec<ListenerBehaviour>,
    /// `c2` joins, `c1` leaves, `c3` joins.
    pub join_ms: u64,
    pub leave_ms: u64,
    pub join_again_ms: u64,
    pub window: (u64, u64),
    pub lose_p: f64,
    pub hold_ms: Option<u64>,
    pub heartbeat_lose_p: Option<f64>,
}

pub fn draw(seed: u64) -> LostCommits {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let mut listeners: Vec<ListenerBehaviour> = (0..MEMBERS)
        .map(|_| ListenerBehaviour {
            revoked_ms: pick(&mut rng, &[0, 200, 1_000, 3_000]),
            assigned_ms: pick(&mut rng, &[0, 200, 1_000, 3_000]),
            wakeup_in_assigned: false,
            panic_on_call: None,
        })
        .collect();
    if let Some((member, call)) = draw_listener_panic(seed, SALT, listeners.len()) {
        listeners[member].panic_on_call = Some(call);
    }
    let join_ms = between(&mut rng, 3_000, 8_000);
    let leave_ms = join_ms + between(&mut rng, 3_000, 7_000);
    let join_again_ms = leave_ms + between(&mut rng, 2_000, 6_000);
    let window = (
        between(&mut rng, 1_000, 4_000),
        between(&mut rng, 15_000, 25_000),
    );
    let lose_p = pick(&mut rng, &[0.1, 0.3, 0.6]);
    let hold_ms = coin(&mut rng).then(|| between(&mut rng, 500, 3_000));
    let heartbeat_lose_p = coin(&mut rng).then(|| pick(&mut rng, &[0.02, 0.1]));
    LostCommits {
        group,
        listeners,
        join_ms,
        leave_ms,
        join_again_ms,
        window,
        lose_p,
        hold_ms,
        heartbeat_lose_p,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let l = draw(seed);
    for (spec, listener) in scenario.subjects.iter_mut().zip(&l.listeners) {
        l.group.apply(spec);
        spec.listener = *listener;
    }
    scenario.subjects[1].member_faults = MemberFaults {
        leave_at_ms: Some(l.leave_ms),
        ..MemberFaults::default()
    };
    scenario.subjects[2].start_ms = l.join_ms;
    scenario.subjects[3].start_ms = l.join_again_ms;
}

fn rule(api_key: i16, p: f64, action: ResponseAction) -> Fault {
    Fault::Response(ResponseRule {
        api_key,
        broker: None,
        trigger: Trigger::Probability(p),
        action,
    })
}

fn plan(seed: u64) -> PlannedFaults {
    let l = draw(seed);
    let (from, until) = l.window;
    let mut plan = vec![(from, rule(OFFSET_COMMIT, l.lose_p, ResponseAction::Lose))];
    if let Some(delay_ms) = l.hold_ms {
        plan.push((
            from,
            rule(OFFSET_COMMIT, 0.3, ResponseAction::Hold { delay_ms }),
        ));
    }
    if let Some(p) = l.heartbeat_lose_p {
        let api = match l.group.protocol {
            Protocol::Classic => HEARTBEAT,
            Protocol::Consumer => CONSUMER_GROUP_HEARTBEAT,
        };
        plan.push((from, rule(api, p, ResponseAction::Lose)));
    }
    let healed_at_ms = until.max(l.join_again_ms) + 1;
    plan.push((until, Fault::ClearResponses { api_key: None }));
    PlannedFaults { plan, healed_at_ms }
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS)
}

pub fn scenario() -> Scenario {
    family_scenario(Family {
        name: NAME,
        description: "commit responses lost (applied) or held, slow listeners, members joining and leaving: full checker set",
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
    fn the_window_covers_the_rebalances_and_heals_in_time() {
        for seed in 0..100 {
            let l = draw(seed);
            let planned = plan(seed);
            assert!(
                l.window.0 < l.leave_ms && l.window.1 >= l.leave_ms,
                "seed {seed}"
            );
            assert!(
                planned.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS,
                "seed {seed}"
            );
            assert!(matches!(
                planned.plan[0].1,
                Fault::Response(ResponseRule {
                    api_key: OFFSET_COMMIT,
                    action: ResponseAction::Lose,
                    ..
                })
            ));
        }
    }
}
