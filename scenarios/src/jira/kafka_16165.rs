//! **KAFKA-16165** — "Consumer invalid transition on expired poll interval" and
//! **KAFKA-16258** — "Stale member should trigger onPartitionsLost when leaving group"
//! (both 3.8.0).
//!
//! **Interleaving.** The member's `onPartitionsRevoked` runs longer than
//! `max.poll.interval.ms`. (16258) During a rebalance the callback runs inside `poll`; the poll
//! timer expires meanwhile, so the heartbeat manager sends a leave heartbeat and the member goes
//! STALE; upstream it then rejoined on the next poll without releasing the partitions it still
//! held — no `onPartitionsLost` — and applied late heartbeat responses meant for its old self.
//! (16165) On `close`/`unsubscribe` the member is already leaving (waiting for the same slow
//! callback) when the poll timer expires: upstream the expiry forced LEAVING→STALE, an invalid
//! transition, and threw `IllegalStateException` on the network thread.
//!
//! **Symptom upstream.** 16165: "Invalid state transition from LEAVING to STALE" in system
//! tests, the leave never completed. 16258: partitions silently carried across a rejoin,
//! applications keeping per-partition state never told they lost it.
//!
//! **Invariants.** No call returns a background-task failure (illegal transition) and a member
//! that left on expiry owning partitions revokes or loses them before its join heartbeat
//! ([`StaleMemberRejoin`]); `close(15 s)` returns within its timeout plus callback time
//! ([`BlockingBounds`](sim::check::BlockingBounds)); revoked/lost only what it owned, exactly
//! once (`RevokeBeforeReassign` in the standard set); the group settles ([`Liveness`]).
//!
//! **Our design.** The poll timer lives with the membership manager
//! (`internals/membership/consumer/mod.rs`); the member-state table
//! (`internals/membership/consumer/state.rs`, shared `IllegalTransition` in
//! `internals/membership/state.rs`) refuses LEAVING→STALE and the expiry path only acts from
//! states where leaving is legal; a refused transition surfaces as `Error::Internal` rather than
//! killing the loop, which this scenario would see. Callbacks run on the application side
//! (`Consumer::run_rebalance_callback`, consumer/src/consumer.rs) and the STALE path asks for
//! `onPartitionsLost` before the rejoin.
//!
//! **Plan.** Group `g` (KIP-848, `max.poll.interval.ms=3000`): `c0`'s `onPartitionsRevoked`
//! takes 5 s; `c1` joins at 3 s, so `c0` revokes inside `poll` and its poll timer expires
//! mid-callback; at the end both close with `close(15 s)`, `c0` again revoking for 5 s while
//! leaving. The seed draws a network latency.

use kafka_consumer::rt::SeededRng;
use sim::check::{
    BlockingBounds, CallbackHandshake, CheckerSet, ExclusiveOwnership, KnownGaps, Liveness,
    RevokeBeforeReassign,
};
use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::{StaleMemberRejoin, UntilClose};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "kafka-16165";

#[cfg(test)]
const MAX_POLL_INTERVAL_MS: u64 = 3_000;
const REVOKE_MS: u64 = 5_000;
const RUN_MS: u64 = 35_000;

fn app() -> AppBehaviour {
    AppBehaviour {
        poll_timeout_ms: 100,
        processing_ms_per_record: 1,
        commit: CommitPolicy::Auto,
        close_timeout_ms: 15_000,
    }
}

const PROPERTIES: &[(&str, &str)] = &[
    ("group.id", "g"),
    ("group.protocol", "consumer"),
    ("max.poll.interval.ms", "3000"),
    ("enable.auto.commit", "true"),
];

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "onPartitionsRevoked outlasts max.poll.interval.ms, in a rebalance and while leaving: no illegal transition, lost before rejoin",
    )
    .brokers(3)
    .topic("t", 4)
    .offsets_partitions(1)
    .subscribing_consumer("c0", PROPERTIES, &["t"], app())
    .listener(ListenerBehaviour {
        revoked_ms: REVOKE_MS,
        ..ListenerBehaviour::default()
    })
    .subscribing_consumer("c1", PROPERTIES, &["t"], app())
    .start_at(3_000)
    .producer("p0", "t", 20, RUN_MS - 10_000)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .build()
}

/// A seeded network latency from the start.
fn plan(seed: u64) -> PlannedFaults {
    let mut rng = SeededRng::seed_from_u64(seed ^ 0x0001_6165);
    let max_ms = 2 + rng.below_inclusive(30);
    PlannedFaults {
        plan: vec![(0, Fault::Latency { min_ms: 1, max_ms })],
        healed_at_ms: 0,
    }
}

/// The standard set without `NoLeaveInPoll`: a callback longer than `max.poll.interval.ms`
/// *must* make the member leave (the application is not polling while its callback runs),
/// which here happens inside `poll`.
fn checks() -> CheckerSet {
    CheckerSet::jepsen(KnownGaps::new())
        .with(ExclusiveOwnership::default())
        .with(RevokeBeforeReassign::default())
        .with(CallbackHandshake::default())
        .with(BlockingBounds::default())
        .with(StaleMemberRejoin::default())
        .with(UntilClose {
            inner: Liveness {
                within_ms: 25_000,
                stable_for_ms: 5_000,
                ..Liveness::default()
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_revocation_outlasts_the_poll_interval_and_fits_the_close() {
        let s = scenario();
        const { assert!(REVOKE_MS > MAX_POLL_INTERVAL_MS) };
        assert!(s.subjects[0].app.close_timeout_ms > REVOKE_MS);
        assert_eq!(s.subjects[0].listener.revoked_ms, REVOKE_MS);
        assert!(s.subjects.iter().all(|m| m
            .properties
            .contains(&("max.poll.interval.ms".to_owned(), "3000".to_owned()))));
        assert!((s.checks)().names().contains(&"stale-member-rejoin"));
    }
}
