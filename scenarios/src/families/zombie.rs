//! **Family: zombie consumer** — one member stops polling (its application stalls with records
//! in hand, or its whole process is paused) past `max.poll.interval.ms` or its session timeout,
//! then resumes and commits what it had.
//!
//! **Interleavings aimed at.** Application stall: the poll loop holds the records of its last
//! poll for 1.2–2× `max.poll.interval.ms`; the background task notices the poll timer expiring
//! and leaves the group (KIP-62: classic `LeaveGroup`, KIP-848 a leave heartbeat), the others
//! take its partitions and move on; then the application wakes and commits the records it
//! processed — with the generation/epoch it had. Process pause (a GC pause): application and
//! background task stop for 1.2–1.8× the session timeout; the coordinator expires the member on
//! its own; on resume the member's timers fire late, the application may commit before the
//! background task has heard it was fenced. Per seed: protocol, timeouts
//! (`max.poll.interval.ms` 4 or 6 s), commit policy (an auto-commit on the next poll is a
//! zombie commit too), which member, stall or pause or both, when and how long.
//!
//! **Invariants.** The full set ([`super::full_checks_with_pauses`]: a paused process's `poll`
//! overshooting its timeout, or its poll-timer leave while inside `poll`, are excused during the
//! pause), and the sharp ones: the zombie's
//! commit is refused (`zombie-commits-refused`: no commit of a partition by its previous owner
//! succeeds once another member owns it), nothing it processed after losing the partitions is
//! committed over the new owner's progress (`committed-offsets-monotonic`), its ownership
//! window ends with *lost*, not revoked (`exclusive-ownership` tolerates only a fenced
//! overlap), the stalled member leaves when its poll timer expires (`poll-timeout-leaves`), and
//! it rejoins and the group settles (`liveness`).
//!
//! **Why our design should hold.** Commits carry the member id and generation (classic) or
//! member epoch (KIP-848) the background task holds *when it sends them*; after the poll-timer
//! leave or fencing those are reset, so a commit from the stalled application either goes with
//! the stale identity (refused by the coordinator: `ILLEGAL_GENERATION`, `UNKNOWN_MEMBER_ID`,
//! `STALE_MEMBER_EPOCH`) or fails locally as `CommitFailed` without a request. A member that
//! left on poll-timer expiry reports its partitions lost on the next `poll` before rejoining
//! (`membership/`, the KAFKA-16258 rule).

use super::{
    between, family_scenario, full_checks_with_pauses, knob_rng, latency_until, Family, GroupKnobs,
};
use crate::checks::PollTimeoutLeaves;
use crate::scenario::{MemberFaults, PlannedFaults, Scenario, Stall};

pub const NAME: &str = "family-zombie";

const SALT: u64 = 0x7a6f_6d62_6965;
const MEMBERS: usize = 3;
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 50_000;
const RUN_MS: u64 = 75_000;

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zombie {
    pub group: GroupKnobs,
    pub member: usize,
    pub faults: MemberFaults,
    pub latency_max_ms: u64,
    pub healed_at_ms: u64,
}

pub fn draw(seed: u64) -> Zombie {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[4_000, 6_000]);
    let member = rng.below_inclusive(MEMBERS as u64 - 1) as usize;
    let poll = group.max_poll_interval_ms;
    let session = group.session_ms();
    let mut faults = MemberFaults::default();
    let (stall, pause) = match rng.below_inclusive(2) {
        0 => (true, false),
        1 => (false, true),
        _ => (true, true),
    };
    let mut healed_at_ms = 0;
    if pause {
        let at_ms = between(&mut rng, 5_000, 8_000);
        let for_ms = between(&mut rng, session * 6 / 5, session * 9 / 5);
        faults.pause = Some(Stall { at_ms, for_ms });
        healed_at_ms = at_ms + for_ms;
    }
    if stall {
        let at_ms = between(&mut rng, 5_000, 14_000);
        let for_ms = between(&mut rng, poll * 6 / 5, poll * 2);
        faults.stall = Some(Stall { at_ms, for_ms });
        // The stall starts at the first poll with records after `at_ms` (after any pause).
        healed_at_ms = healed_at_ms.max(at_ms) + for_ms;
    }
    Zombie {
        group,
        member,
        faults,
        latency_max_ms: between(&mut rng, 2, 30),
        healed_at_ms: healed_at_ms + 1_000,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let z = draw(seed);
    for spec in &mut scenario.subjects {
        z.group.apply(spec);
    }
    scenario.subjects[z.member].member_faults = z.faults;
}

fn plan(seed: u64) -> PlannedFaults {
    let z = draw(seed);
    latency_until(z.latency_max_ms, z.healed_at_ms)
}

/// The full set with pauses excused, and the poll timer judged: the stalled member must leave
/// when its `max.poll.interval.ms` expires (the coordinator stays reachable here).
fn checks() -> sim::check::CheckerSet {
    full_checks_with_pauses(WITHIN_MS).with(PollTimeoutLeaves::default())
}

pub fn scenario() -> Scenario {
    family_scenario(Family {
        name: NAME,
        description: "one member's application stalls or its process pauses past max.poll.interval.ms / the session, then commits: refused, full checker set",
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
    fn the_zombie_outlasts_its_timeouts_and_the_run_outlasts_the_heal() {
        for seed in 0..100 {
            let z = draw(seed);
            if let Some(stall) = z.faults.stall {
                assert!(stall.for_ms > z.group.max_poll_interval_ms, "seed {seed}");
            }
            if let Some(pause) = z.faults.pause {
                assert!(pause.for_ms > z.group.session_ms(), "seed {seed}");
            }
            assert!(z.faults.stall.is_some() || z.faults.pause.is_some());
            assert!(z.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS, "seed {seed}");
        }
    }
}
