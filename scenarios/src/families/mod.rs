//! Scenario families beyond Jira: our consumer under fault plans *drawn from the seed*, with
//! per-seed knobs (swarm testing: which kinds of fault strike, when, how long, which group
//! protocol, which commit policy, how slow the listener) and the full checker set.
//!
//! A Jira scenario replays one known race; a family aims at a class of interleavings and lets
//! the seed pick the instance. Each family is one file: its doc comment names the interleavings
//! it aims at, the invariants and why our design should hold. Every family asserts
//! [`full_checks`]: Jepsen's taxonomy (no lost write, duplicates only within the at-least-once
//! bound, committed offsets never regress without a seek, consistent offsets, in-order delivery
//! within an ownership), the group invariants (no partition owned by two members at once — a
//! fenced zombie's window excepted, its commits then refused —, revoke/lost before the view
//! moves on, callback handshakes, `poll`/`close` within their timeouts, no leave inside `poll`),
//! a zombie's commits refused once a partition moved on, every async commit's callback run by
//! `close`, and liveness after the heal (the group settles, consumes and commits everything).
//!
//! The seed draws a family's knobs twice from the same stream: [`Scenario::vary`] rewrites the
//! members (protocol, timeouts, commit policy, start/leave/crash/stall times) and the fault
//! plan is a pure function of the same draw, so a plan's faults can be timed around the group
//! traffic the members cause.

pub mod auth;
pub mod close_outage;
pub mod coordinator_failover;
pub mod data_path;
pub mod data_path_compacted;
pub mod data_path_delete_records;
pub mod data_path_large_records;
pub mod data_path_late_topic;
pub mod data_path_leader_churn;
pub mod data_path_pause_seek;
pub mod data_path_recreate;
pub mod data_path_transactions;
pub mod data_path_unclean_election;
pub mod invalid_topic;
pub mod lost_commits;
pub mod mixed_protocols;
pub mod network_partition;
pub mod pattern_topics;
pub mod rebalance_storm;
pub mod request_storm;
pub mod rolling_restart;
pub mod rolling_upgrade;
pub mod static_members;
pub mod zombie;

use kafka_consumer::rt::SeededRng;
use sim::check::{
    blocking_calls, BlockingBounds, CallbackHandshake, Checker, CheckerSet, ExclusiveOwnership,
    KnownGaps, Liveness, NoLeaveInPoll, OwnershipMode, RevokeBeforeReassign, Violation,
    ViolationKind,
};
use sim::history::History;

use sim::fault::Fault;

use crate::app::{AppBehaviour, CommitPolicy};
use crate::checks::{
    AsyncCommitsBeforeClose, ListenerErrorsSurface, UntilFinalClose, ZombieCommitsRefused,
};
use crate::scenario::{FaultSource, PlannedFaults, Scenario, ScenarioBuilder, SubjectSpec};
use crate::subject::ListenerBehaviour;

/// The topic every family consumes.
pub const TOPIC: &str = "t";
/// The group every family's members join.
pub const GROUP: &str = "g";
/// Brokers of every family's cluster.
pub const BROKERS: i32 = 3;
/// The brokers' KIP-848 heartbeat interval: members send a heartbeat at least this often.
pub const KIP848_HEARTBEAT_MS: i32 = 1_000;
/// The brokers' KIP-848 session timeout (Kafka's default is 45 s; a shorter one keeps the
/// fencing of a crashed member inside a short run). A member silent for this long is fenced.
pub const KIP848_SESSION_MS: i32 = 8_000;
/// The consumers' `request.timeout.ms` under KIP-848: below the brokers' session timeout, in
/// Kafka's default proportion (30 s against 45 s). A heartbeat whose answer is lost is only
/// replaced when its request times out; with Kafka's 30 s against the 8 s session above, one
/// lost answer would get the member fenced without its knowing, in Java's consumer as in ours
/// (the session timeout lives on the broker under KIP-848; nothing tells the client).
pub const KIP848_REQUEST_TIMEOUT_MS: i32 = KIP848_SESSION_MS * 2 / 3;

/// What one family is made of; the rest of its cluster is the same in every family (three
/// brokers, one topic, one `__consumer_offsets` partition, the KIP-848 timeouts above, one
/// producer writing a record every 20 ms). The members start as plain subscribers of
/// [`TOPIC`] in [`GROUP`]; `vary` gives each seed its protocol, timeouts, roles and faults.
pub struct Family {
    pub name: &'static str,
    pub description: &'static str,
    pub partitions: i32,
    pub members: usize,
    pub produce_until_ms: u64,
    pub run_ms: u64,
    pub plan: fn(u64) -> PlannedFaults,
    pub checks: fn() -> CheckerSet,
    pub vary: fn(&mut Scenario, u64),
}

/// What every group family starts from: `BROKERS` brokers, `TOPIC` with `partitions`, one
/// offsets partition, the KIP-848 timeouts, and `members` consumers `c0..` of `GROUP`
/// subscribed to `topics`. The family adds its producers, faults, checks and draw.
pub(crate) fn group_builder(
    name: &'static str,
    description: &'static str,
    partitions: i32,
    members: usize,
    topics: &[&str],
) -> ScenarioBuilder {
    let mut builder = Scenario::builder(name, description)
        .brokers(BROKERS as usize)
        .topic(TOPIC, partitions)
        .offsets_partitions(1)
        .kip848_timeouts_ms(KIP848_HEARTBEAT_MS, KIP848_SESSION_MS);
    for i in 0..members {
        builder = builder.subscribing_consumer(
            &format!("c{i}"),
            &[("group.id", GROUP)],
            topics,
            AppBehaviour::default(),
        );
    }
    builder
}

/// Builds a family's scenario from its [`Family`].
pub fn family_scenario(family: Family) -> Scenario {
    group_builder(
        family.name,
        family.description,
        family.partitions,
        family.members,
        &[TOPIC],
    )
    .producer("p0", TOPIC, 20, family.produce_until_ms)
    .faults(FaultSource::Fixed(family.plan))
    .run_ms(family.run_ms)
    .checks(family.checks)
    .vary(family.vary)
    .build()
}

/// How long after its `leave_at_ms` a member's `close` may start: the application finishes the
/// poll (and any rebalance callback inside it) that was running at that time. Heal times are
/// set at least this long after every early leave, so that only the final closes come after the
/// heal ([`UntilFinalClose`]).
pub const LEAVE_GRACE_MS: u64 = 2_500;

/// The knob stream of a family for `seed` (`salt` tells the families apart).
pub fn knob_rng(seed: u64, salt: u64) -> SeededRng {
    SeededRng::seed_from_u64(seed ^ salt)
}

/// Uniform in `[lo, hi]`.
pub fn between(rng: &mut SeededRng, lo: u64, hi: u64) -> u64 {
    lo + rng.below_inclusive(hi.saturating_sub(lo))
}

/// Heads with probability 1/2.
pub fn coin(rng: &mut SeededRng) -> bool {
    rng.below_inclusive(1) == 1
}

/// One of `items`.
pub fn pick<T: Copy>(rng: &mut SeededRng, items: &[T]) -> T {
    items[rng.below_inclusive(items.len() as u64 - 1) as usize]
}

/// Which group protocol a seed's group speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Classic,
    Consumer,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Classic => "classic",
            Protocol::Consumer => "consumer",
        }
    }
}

/// The group-wide knobs every family draws first: protocol, the classic timeouts and
/// assignor, `max.poll.interval.ms`, and how the application commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupKnobs {
    pub protocol: Protocol,
    /// Classic `session.timeout.ms` (KIP-848: the broker's [`KIP848_SESSION_MS`]).
    pub classic_session_ms: u64,
    /// Classic `partition.assignment.strategy`.
    pub classic_assignor: &'static str,
    pub max_poll_interval_ms: u64,
    /// `Some(interval)`: `enable.auto.commit` every `interval` ms; `None`: `commitAsync` after
    /// every poll.
    pub auto_commit_ms: Option<u64>,
}

impl GroupKnobs {
    /// Draws the knobs; `max_poll_interval_ms` from `max_poll_choices`.
    pub fn draw(rng: &mut SeededRng, max_poll_choices: &[u64]) -> Self {
        let protocol = if coin(rng) {
            Protocol::Consumer
        } else {
            Protocol::Classic
        };
        let classic_session_ms = pick(rng, &[6_000, 10_000]);
        let classic_assignor = pick(rng, &["range", "roundrobin", "cooperative-sticky"]);
        let max_poll_interval_ms = pick(rng, max_poll_choices);
        let auto_commit_ms = coin(rng).then(|| pick(rng, &[200, 1_000]));
        Self {
            protocol,
            classic_session_ms,
            classic_assignor,
            max_poll_interval_ms,
            auto_commit_ms,
        }
    }

    /// How long a silent member stays in the group: the session timeout of its protocol.
    pub fn session_ms(&self) -> u64 {
        match self.protocol {
            Protocol::Classic => self.classic_session_ms,
            Protocol::Consumer => KIP848_SESSION_MS as u64,
        }
    }

    /// Writes the knobs into one member's properties and commit policy.
    pub fn apply(&self, spec: &mut SubjectSpec) {
        set(spec, "group.id", GROUP);
        set(spec, "group.protocol", self.protocol.name());
        set(
            spec,
            "max.poll.interval.ms",
            &self.max_poll_interval_ms.to_string(),
        );
        if self.protocol == Protocol::Classic {
            set(
                spec,
                "session.timeout.ms",
                &self.classic_session_ms.to_string(),
            );
            set(
                spec,
                "heartbeat.interval.ms",
                &(self.classic_session_ms / 3).to_string(),
            );
            set(spec, "partition.assignment.strategy", self.classic_assignor);
        } else {
            set(
                spec,
                "request.timeout.ms",
                &KIP848_REQUEST_TIMEOUT_MS.to_string(),
            );
        }
        match self.auto_commit_ms {
            Some(interval) => {
                set(spec, "enable.auto.commit", "true");
                set(spec, "auto.commit.interval.ms", &interval.to_string());
                spec.app.commit = CommitPolicy::Auto;
            }
            None => {
                set(spec, "enable.auto.commit", "false");
                spec.app.commit = CommitPolicy::AsyncEachPoll;
            }
        }
    }
}

/// Sets (or replaces) one consumer property of `spec`.
pub fn set(spec: &mut SubjectSpec, key: &str, value: &str) {
    match spec.properties.iter_mut().find(|(k, _)| k == key) {
        Some((_, v)) => *v = value.to_owned(),
        None => spec.properties.push((key.to_owned(), value.to_owned())),
    }
}

/// A listener that is slow in a third of the draws (well within `max.poll.interval.ms`).
pub fn draw_listener(rng: &mut SeededRng, max_ms: u64) -> ListenerBehaviour {
    if rng.below_inclusive(2) == 0 {
        ListenerBehaviour {
            revoked_ms: rng.below_inclusive(max_ms),
            assigned_ms: rng.below_inclusive(max_ms),
            wakeup_in_assigned: false,
            panic_on_call: None,
        }
    } else {
        ListenerBehaviour::default()
    }
}

/// In half the seeds, one member's listener panics on one of its first four calls (a listener
/// that throws: the rebalance goes on, `poll` reports it). Drawn from its own stream so the
/// family's other knobs stay what they were for every seed. As `(member, call)`.
pub fn draw_listener_panic(seed: u64, salt: u64, members: usize) -> Option<(usize, u32)> {
    const PANIC_SALT: u64 = 0x0070_616e_6963;
    let mut rng = knob_rng(seed, salt ^ PANIC_SALT);
    let member = usize::try_from(rng.below_inclusive(members.saturating_sub(1) as u64)).ok()?;
    let call = u32::try_from(rng.below_inclusive(3)).ok()?;
    coin(&mut rng).then_some((member, call))
}

/// A plan of network latency alone: each message takes 1–`max_ms` ms until `healed_at_ms`,
/// then 1–10 ms, the heal.
pub fn latency_until(max_ms: u64, healed_at_ms: u64) -> PlannedFaults {
    let latency = |max_ms| Fault::Latency { min_ms: 1, max_ms };
    PlannedFaults {
        plan: vec![(0, latency(max_ms)), (healed_at_ms, latency(10))],
        healed_at_ms,
    }
}

/// The node name of broker `id`.
pub fn broker_node(id: i32) -> String {
    format!("broker-{id}")
}

/// Why a family whose faults cut a member's links may see [`ViolationKind::LateCommitRegressed`]
/// (`committed-offsets-monotonic`): an OffsetCommit written into a cut link times out, the
/// client closes that connection and commits newer offsets on a new one, and the cut link
/// still delivers the old request after it heals, moving the committed offset back until the
/// next commit. Java's consumer does the same (`NetworkClient.handleTimedOutRequests` closes
/// the connection; a closed socket's queued bytes are still sent), and the coordinator cannot
/// refuse it: the request carries the member's current id and epoch
/// (`OffsetMetadataManager.validateOffsetCommit`).
pub const LATE_COMMIT_REASON: &str = "a timed-out OffsetCommit written into a cut link reaches \
     the coordinator after a newer commit on a new connection (NetworkClient.\
     handleTimedOutRequests; OffsetMetadataManager.validateOffsetCommit checks only member and \
     epoch)";

/// [`full_checks`], with a late commit's regression declared expected ([`LATE_COMMIT_REASON`]).
pub fn full_checks_with_cut_links(within_ms: u64) -> CheckerSet {
    full_checks(within_ms).expect(
        "committed-offsets-monotonic",
        ViolationKind::LateCommitRegressed,
        LATE_COMMIT_REASON,
    )
}

/// The full checker set of every family, with liveness judged `within_ms` of the heal (and
/// every acked record committed by then).
pub fn full_checks(within_ms: u64) -> CheckerSet {
    family_extras(
        CheckerSet::standard(KnownGaps::new(), OwnershipMode::Windows),
        within_ms,
    )
}

/// What the families add to the standard set: zombie commits, callbacks by `close`, and
/// liveness after the heal up to the final closes.
fn family_extras(set: CheckerSet, within_ms: u64) -> CheckerSet {
    set.with(ZombieCommitsRefused::default())
        .with(AsyncCommitsBeforeClose::default())
        .with(ListenerErrorsSurface::default())
        .with(liveness_after_heal(within_ms))
}

/// Liveness after the heal, judged up to the final closes: the group settles for 5 s and
/// consumes and commits every acked record within `within_ms`.
pub(crate) fn liveness_after_heal(within_ms: u64) -> UntilFinalClose<Liveness> {
    UntilFinalClose {
        inner: Liveness {
            within_ms,
            stable_for_ms: 5_000,
            require_committed: true,
            ..Liveness::default()
        },
    }
}

/// [`full_checks`] for runs where a member's whole process is paused
/// ([`crate::scenario::MemberFaults::pause`]): the standard set, with `poll`/`close` bounds
/// that subtract the time the process was frozen inside the call, and a leave inside `poll`
/// excused only right after the process resumed from a pause ([`ExcusePauses`]).
pub fn full_checks_with_pauses(within_ms: u64) -> CheckerSet {
    let set = CheckerSet::jepsen(KnownGaps::new())
        .with(ExclusiveOwnership {
            mode: OwnershipMode::Windows,
            ..ExclusiveOwnership::default()
        })
        .with(RevokeBeforeReassign::default())
        .with(CallbackHandshake::default())
        .with(ExcusePauses {
            inner: BlockingBounds::default(),
        })
        .with(ExcusePauses {
            inner: NoLeaveInPoll::default(),
        });
    family_extras(set, within_ms)
}

/// A wrapped checker judged with the member's process pauses taken into account (the
/// runner's `process paused <ms>ms` note), as a GC pause of a JVM would be:
///
/// - [`BlockingBounds`]: the time the process was frozen inside a `poll`/`close` is subtracted
///   from how long the call took (a frozen process cannot return; its timer runs on); anything
///   beyond timeout + callbacks + pause + tolerance is still a violation.
/// - [`NoLeaveInPoll`]: a leave inside `poll` is excused only when it reached the coordinator
///   within [`ExcusePauses::LEAVE_AFTER_RESUME_MS`] after a pause of that process ended.
///   `max.poll.interval.ms` is measured on the wall clock: a process frozen past it finds its
///   poll timer expired on resume and leaves at once, while its application, whose frozen
///   `poll` just returned, may already be inside the next one (Java's background thread races
///   the application the same way: `HeartbeatRequestManager.poll` on `pollTimer.isExpired()`
///   → `AbstractMembershipManager.transitionToSendingLeaveGroup`; classic
///   `AbstractCoordinator.HeartbeatThread` → `maybeLeaveGroup("consumer poll timeout has
///   expired")`). A leave later than that is the consumer's own (KAFKA-16243).
#[derive(Clone, Debug)]
pub struct ExcusePauses<C> {
    pub inner: C,
}

impl<C> ExcusePauses<C> {
    /// The most a leave may trail the resume: the background loop acts on its first wake-up
    /// after the resume, but the leave may queue behind one group request already in flight
    /// on the coordinator connection (an auto-commit: the coordinator serves one request per
    /// connection at a time), so two round trips at the zombie family's largest link latency
    /// (30 ms each way: 120 ms) plus scheduling. Measured: 1–25 ms after the resume over the
    /// 30 seeds of 0..50 where the leave falls inside a poll (`family-zombie`).
    pub const LEAVE_AFTER_RESUME_MS: u64 = 150;
}

impl Checker for ExcusePauses<BlockingBounds> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let end_ms = history.end_ms();
        let pauses = crate::checks::process_pauses(history);
        let calls: Vec<_> = blocking_calls(history)
            .into_iter()
            .map(|mut call| {
                call.paused_ms = pauses
                    .iter()
                    .filter(|(subject, ..)| subject == call.subject)
                    .map(|(_, from, to)| call.overlap_ms(*from, *to, end_ms))
                    .sum();
                call
            })
            .collect();
        self.inner.violations_of(&calls, end_ms)
    }
}

impl Checker for ExcusePauses<NoLeaveInPoll> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let pauses = crate::checks::process_pauses(history);
        self.inner
            .violations_except(history, |subject, _poll_start_ms, leave_ms| {
                pauses.iter().any(|(paused, _, to)| {
                    paused == subject
                        && *to <= leave_ms
                        && leave_ms <= to + Self::LEAVE_AFTER_RESUME_MS
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::history::Event;

    /// c0's process is frozen from 10 ms for 5 s, inside a `poll(100)` started at 0 that
    /// returns at `poll_end_ms`; `then` follows at its own time.
    fn paused_poll(poll_end_ms: u64, then: Vec<(u64, Event)>) -> History {
        let mut events = vec![
            (0, "c0", Event::PollStart { timeout_ms: 100 }),
            (
                10,
                "c0",
                Event::Note {
                    text: "process paused 5000ms".into(),
                },
            ),
            (
                poll_end_ms,
                "c0",
                Event::PollEnd {
                    records: 0,
                    error: None,
                },
            ),
        ];
        events.extend(then.into_iter().map(|(at, e)| (at, "c0", e)));
        events.sort_by_key(|(at, ..)| *at);
        History::from_events(events)
    }

    #[test]
    fn a_pause_is_subtracted_from_poll_not_dropped() {
        let checker = ExcusePauses {
            inner: BlockingBounds::default(),
        };
        // 5110 ms = 100 ms timeout + 5000 ms frozen + 10 ms.
        assert!(checker.check(&paused_poll(5_110, vec![])).is_ok());
        // 900 ms late after the resume: the old excuse dropped it (within 1 s of the pause).
        let v = checker.check(&paused_poll(6_000, vec![]));
        assert_eq!(v.violations.len(), 1, "{v}");
        assert_eq!(
            v.violations[0].kind,
            sim::check::ViolationKind::PollOvershoot
        );
        assert!(
            v.violations[0]
                .explanation
                .contains("5000ms with its process paused"),
            "{v}"
        );
    }

    /// family-zombie seed 0: the frozen poll returns at the resume (5010), the application
    /// starts the next one, and the expired poll timer's leave comes 5 ms after the resume.
    #[test]
    fn a_leave_in_poll_is_excused_only_right_after_resuming_from_a_pause() {
        let checker = ExcusePauses {
            inner: NoLeaveInPoll::default(),
        };
        let leave = || Event::Leave {
            reason: "heartbeat epoch -1".into(),
        };
        let next_poll_then_leave = |leave_ms| {
            paused_poll(
                5_010,
                vec![
                    (5_011, Event::PollStart { timeout_ms: 100 }),
                    (leave_ms, leave()),
                ],
            )
        };
        assert!(checker.check(&next_poll_then_leave(5_015)).is_ok());
        // 1 s after the resume: the old excuse (pause + 1 s) took it; the poll timer had been
        // reset by then, so the leave is the consumer's own.
        assert!(!checker.check(&next_poll_then_leave(6_000)).is_ok());
        // During the pause a frozen process sends nothing.
        assert!(!checker
            .check(&paused_poll(9_000, vec![(3_000, leave())]))
            .is_ok());
    }

    #[test]
    fn group_knobs_vary_and_apply() {
        let mut protocols = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let knobs = GroupKnobs::draw(&mut knob_rng(seed, 1), &[5_000]);
            protocols.insert(knobs.protocol.name());
            let mut spec = crate::scenario::Scenario::builder("x", "x")
                .subscribing_consumer("c0", &[], &[TOPIC], crate::app::AppBehaviour::default())
                .build()
                .subjects
                .remove(0);
            knobs.apply(&mut spec);
            assert_eq!(spec.group_id(), GROUP);
            assert_eq!(
                spec.app.commit == CommitPolicy::Auto,
                knobs.auto_commit_ms.is_some()
            );
        }
        assert_eq!(protocols.len(), 2);
    }
}
