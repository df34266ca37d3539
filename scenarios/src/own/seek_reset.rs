//! `seek-reset`: the user's last seek wins over every lookup in flight (KAFKA-7703 and the
//! project's issue #24).
//!
//! **The race.** A partition's position is decided by answers that arrive later: the
//! committed offset (OffsetFetch), an automatic reset's ListOffsets (`auto.offset.reset`), the
//! ListOffsets of a `seekToBeginning`/`seekToEnd`, and the OffsetForLeaderEpoch that validates
//! a seek carrying a leader epoch (KIP-320). Here each of those answers is held 0.5–2 s by the
//! broker while the application seeks: a `seekToEnd` while the first poll's EARLIEST reset is
//! outstanding (the run: the late EARLIEST answer was installed, `position` 0, the
//! partition delivered again), seeks while the committed offset is fetched, bursts of seeks
//! with no `position` in between so that one seek's lookup races the next seek, a seek with an
//! epoch followed by another seek while its validation is outstanding. Manual assignment with
//! and without a group, and subscription with either group protocol; the seed draws the mode,
//! the holds, and the seeks (kinds, partitions, times, bursts).
//!
//! **The invariant** ([`UserSeekWins`]): once `position` returns after a seek, it is where the
//! *last* seek points — the offset sought, 0 for the beginning (the log start never moves
//! here), at least every record acked before the seek for the end — and the partition's next
//! record is delivered from there. Java applies a reset answer only if the strategy it was
//! requested for is still the awaited one (`maybeSeekUnvalidated`); our consumer applies an
//! answer only to the very fetch state it was requested for, so a `seekToEnd` answered before
//! a later `seekToEnd` is dropped too. Plus the standard set (no lost write beyond the seeks'
//! skips, duplicates only where a seek went back, in-order delivery, group invariants).
//! `auto.offset.reset=earliest` throughout: the Jepsen checkers read a skip only from a `Seek`.
//!
//! **Legacy.** The legacy model (Kafka 3.1's classic consumer, `crate::legacy`) has no
//! ListOffsets and no seek: its reset is offset 0 in place. Its subject refuses the seeks, so
//! nothing is judged there; the pre-2.3 behaviour cannot be shown with it.

use sim::check::{CheckerSet, KnownGaps, OwnershipMode};
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};
use sim::history::Tp;

use crate::app::{AppBehaviour, CommitPolicy, SeekTo, UserSeek};
use crate::checks::UserSeekWins;
use crate::families::{
    between, coin, knob_rng, pick, set, Protocol, GROUP, KIP848_HEARTBEAT_MS,
    KIP848_REQUEST_TIMEOUT_MS, KIP848_SESSION_MS,
};
use crate::scenario::{FaultSource, PlannedFaults, Scenario};

pub const NAME: &str = "seek-reset";

const SALT: u64 = 0x7365_656b;
const TOPIC: &str = "seeks";
const PARTITIONS: i32 = 2;
const LIST_OFFSETS: i16 = 2;
const OFFSET_FETCH: i16 = 9;
const OFFSET_FOR_LEADER_EPOCH: i16 = 23;
/// Every seek is made by then; the producer goes on a little longer.
const SEEKS_UNTIL_MS: u64 = 8_000;
const PRODUCE_UNTIL_MS: u64 = 9_000;
const RUN_MS: u64 = 11_000;
/// The classic coordinator's `group.initial.rebalance.delay.ms`: no assignment before it.
const CLASSIC_FIRST_ASSIGNMENT_MS: u64 = 3_300;

/// How the consumer gets its partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `assign` without a `group.id`: the reset starts at once.
    AssignWithoutGroup,
    /// `assign` with a `group.id`: OffsetFetch first, then the reset.
    AssignWithGroup,
    /// `subscribe` with this group protocol.
    Subscribe(Protocol),
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq)]
pub struct SeekReset {
    pub mode: Mode,
    /// How long a held ListOffsets / OffsetFetch / OffsetForLeaderEpoch answer waits.
    pub hold_ms: [u64; 3],
    /// The share of those answers that are held.
    pub hold_p: f64,
    pub seeks: Vec<UserSeek>,
}

/// The seeds' knobs.
pub fn draw(seed: u64) -> SeekReset {
    let mut rng = knob_rng(seed, SALT);
    let mode = pick(
        &mut rng,
        &[
            Mode::AssignWithoutGroup,
            Mode::AssignWithGroup,
            Mode::Subscribe(Protocol::Classic),
            Mode::Subscribe(Protocol::Consumer),
        ],
    );
    let hold_ms = [0; 3].map(|_| between(&mut rng, 500, 2_000));
    let hold_p = pick(&mut rng, &[0.5, 0.8, 1.0]);
    // The first seek lands while the first lookups (committed offset, reset) are outstanding.
    let mut at_ms = match mode {
        Mode::AssignWithoutGroup | Mode::AssignWithGroup => between(&mut rng, 20, 600),
        Mode::Subscribe(Protocol::Consumer) => between(&mut rng, 300, 1_500),
        Mode::Subscribe(Protocol::Classic) => {
            CLASSIC_FIRST_ASSIGNMENT_MS + between(&mut rng, 0, 1_200)
        }
    };
    let mut seeks = Vec::new();
    while at_ms < SEEKS_UNTIL_MS && seeks.len() < 8 {
        let tp = Tp::new(TOPIC, pick(&mut rng, &[0, 1]));
        // A burst: seeks of one partition back to back, `position` only after the last.
        let burst = pick(&mut rng, &[1, 1, 2, 3]);
        for i in 0..burst {
            let to = match rng.below_inclusive(4) {
                0 | 1 => SeekTo::End,
                2 => SeekTo::Beginning,
                // Offsets every seed's log has by the time (a record every 20 ms from 0).
                _ => SeekTo::Offset {
                    offset: between(&mut rng, 0, at_ms.min(1_000) / 100) as i64,
                    // With the epoch of the records (the leader never moves here), the seek is
                    // validated first: OffsetForLeaderEpoch, held like the others.
                    leader_epoch: coin(&mut rng).then_some(0),
                },
            };
            seeks.push(UserSeek {
                at_ms,
                tp: tp.clone(),
                to,
                position: i + 1 == burst,
            });
        }
        at_ms += pick(&mut rng, &[0, 100, 400, 900, 1_600]);
    }
    SeekReset {
        mode,
        hold_ms,
        hold_p,
        seeks,
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let d = draw(seed);
    let spec = &mut scenario.subjects[0];
    set(spec, "auto.offset.reset", "earliest");
    set(spec, "enable.auto.commit", "false");
    match d.mode {
        Mode::AssignWithoutGroup => spec.app.commit = CommitPolicy::Auto,
        Mode::AssignWithGroup => set(spec, "group.id", GROUP),
        Mode::Subscribe(protocol) => {
            set(spec, "group.id", GROUP);
            set(spec, "group.protocol", protocol.name());
            if protocol == Protocol::Consumer {
                set(
                    spec,
                    "request.timeout.ms",
                    &KIP848_REQUEST_TIMEOUT_MS.to_string(),
                );
            }
            spec.subscribe = vec![TOPIC.to_owned()];
            spec.assign.clear();
        }
    }
    spec.seeks = d.seeks;
}

fn hold(api_key: i16, p: f64, delay_ms: u64) -> Fault {
    Fault::Response(ResponseRule {
        api_key,
        broker: None,
        trigger: Trigger::Probability(p),
        action: ResponseAction::Hold { delay_ms },
    })
}

fn plan(seed: u64) -> PlannedFaults {
    let d = draw(seed);
    let [list_ms, fetch_ms, epoch_ms] = d.hold_ms;
    PlannedFaults {
        plan: vec![
            (0, hold(LIST_OFFSETS, d.hold_p, list_ms)),
            (0, hold(OFFSET_FETCH, d.hold_p, fetch_ms)),
            (0, hold(OFFSET_FOR_LEADER_EPOCH, d.hold_p, epoch_ms)),
            (SEEKS_UNTIL_MS, Fault::ClearResponses { api_key: None }),
        ],
        healed_at_ms: SEEKS_UNTIL_MS,
    }
}

fn checks() -> CheckerSet {
    CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows).with(UserSeekWins)
}

pub fn scenario() -> Scenario {
    Scenario::builder(
        NAME,
        "user seeks race slow ListOffsets / OffsetFetch / OffsetForLeaderEpoch answers: the last seek decides the position (KAFKA-7703)",
    )
    .brokers(1)
    .topic(TOPIC, PARTITIONS)
    .offsets_partitions(1)
    .kip848_timeouts_ms(KIP848_HEARTBEAT_MS, KIP848_SESSION_MS)
    .assigning_consumer(
        "c0",
        &[],
        TOPIC,
        AppBehaviour {
            commit: CommitPolicy::AsyncEachPoll,
            ..AppBehaviour::default()
        },
    )
    .producer("p0", TOPIC, 20, PRODUCE_UNTIL_MS)
    .faults(FaultSource::Fixed(plan))
    .run_ms(RUN_MS)
    .checks(checks)
    .vary(vary)
    .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_cover_every_mode_bursts_and_validated_seeks() {
        let draws: Vec<SeekReset> = (0..200).map(draw).collect();
        for mode in [
            Mode::AssignWithoutGroup,
            Mode::AssignWithGroup,
            Mode::Subscribe(Protocol::Classic),
            Mode::Subscribe(Protocol::Consumer),
        ] {
            assert!(draws.iter().any(|d| d.mode == mode), "{mode:?}");
        }
        assert!(draws.iter().any(|d| d.seeks.iter().any(|s| !s.position)));
        assert!(draws.iter().any(|d| d.seeks.iter().any(|s| matches!(
            s.to,
            SeekTo::Offset {
                leader_epoch: Some(_),
                ..
            }
        ))));
        for d in &draws {
            assert!(!d.seeks.is_empty());
            assert!(d.seeks.iter().all(|s| s.at_ms < SEEKS_UNTIL_MS));
            assert!(
                d.seeks.last().is_some_and(|s| s.position),
                "a burst ends with position"
            );
        }
    }
}
