//! Checkers: they read a [`History`] and say what went wrong, when, and why it matters.
//!
//! Every checker only reads the history, so it judges any subject that records the same events:
//! our consumer today, a model of the legacy two-thread consumer (which must fail the Jira
//! scenarios through upstream's own mechanism) tomorrow.
//!
//! Two families:
//! - **Jepsen's Kafka taxonomy** (`jepsen/src/jepsen/tests/kafka.clj`): [`LostWrites`],
//!   [`DuplicateDeliveries`] (re-delivery beyond the at-least-once bound), [`InconsistentOffsets`]
//!   (and Jepsen's duplicate writes), [`DeliveryOrder`] (nonmonotonic-poll and poll-skip within one
//!   ownership period), [`CommittedOffsetsMonotonic`].
//! - **Group invariants** from the Jira catalogue: [`ExclusiveOwnership`], [`RevokeBeforeReassign`],
//!   [`CallbackHandshake`], [`BlockingBounds`], [`NoLeaveInPoll`], [`Liveness`].
//!
//! A [`Verdict`] lists typed [`Violation`]s sorted by virtual time; the first one is what a
//! timeline highlights. A [`CheckerSet`] runs a chosen set and gives a [`Report`].

mod callbacks;
mod commit_regress;
mod delivery;
mod duplicate;
mod expected;
mod gaps;
mod inconsistent;
mod leave_in_poll;
mod liveness;
mod lost;
mod ownership;
mod poll_bound;
mod revoke;
#[cfg(test)]
pub(crate) mod testkit;

use std::fmt;

use crate::history::{History, Tp};

pub use callbacks::CallbackHandshake;
pub use commit_regress::CommittedOffsetsMonotonic;
pub use delivery::{DeliveryOrder, SkipMode};
pub use duplicate::DuplicateDeliveries;
pub use expected::Expected;
pub use gaps::KnownGaps;
pub use inconsistent::InconsistentOffsets;
pub use leave_in_poll::NoLeaveInPoll;
pub use liveness::Liveness;
pub use lost::LostWrites;
pub use ownership::{ExclusiveOwnership, OwnershipMode};
pub use poll_bound::{blocking_calls, BlockingBounds, BlockingCall};
pub use revoke::RevokeBeforeReassign;

/// What kind of invariant broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ViolationKind {
    /// Jepsen `lost-write`: acked, below an offset the group consumed, never consumed.
    LostWrite,
    /// Re-delivered although the group had committed past it (beyond at-least-once).
    DuplicateBeyondBound,
    /// Jepsen `inconsistent-offsets`: two values at one (partition, offset).
    InconsistentOffset,
    /// Jepsen `duplicate`: one value at two offsets of a partition (values are unique).
    DuplicateWrite,
    /// Jepsen `nonmonotonic-poll`: offsets went backwards within one ownership period.
    NonMonotonicDelivery,
    /// Jepsen `poll-skip`: offsets jumped over records within one ownership period.
    SkippedOffsets,
    /// A record of a partition the member did not own at the time (KAFKA-14196).
    DeliveredWhileNotOwned,
    /// The group's committed offset went backwards without a seek or reset: the client
    /// committed the lower offset after the higher one.
    CommittedRegressed,
    /// The group's committed offset went backwards because a commit the client had given up
    /// on (its connection replaced after a timeout) reached the coordinator after a newer one.
    /// Kafka cannot refuse it; a scenario may declare it expected, with that reason.
    LateCommitRegressed,
    /// Two members owned one partition at once (same generation, or overlapping windows).
    DoubleOwnership,
    /// A member revoked or lost a partition it did not own.
    RevokedNotOwned,
    /// The application was given a partition it already held, without revoke/lost in between.
    AssignedAgainWithoutRevoke,
    /// `close` ended while the application still held partitions.
    ClosedWithoutRevoke,
    /// A callback-needed never got its callback-completed (KAFKA-18160).
    CallbackNotCompleted,
    /// A callback was completed twice.
    CallbackCompletedTwice,
    /// A callback completion with no matching callback-needed.
    CallbackCompletedUnasked,
    /// A rebalance callback started and never returned.
    CallbackNotEnded,
    /// `poll(d)` blocked longer than d + callback time + tolerance (KAFKA-13310).
    PollOvershoot,
    /// `close(d)` blocked longer than d + callback time + tolerance (KAFKA-19357).
    CloseOvershoot,
    /// The member left the group while the application was inside `poll` (KAFKA-16243).
    LeaveInPoll,
    /// The application stayed out of `poll` past `max.poll.interval.ms` and the member did
    /// not leave the group (nor was it removed).
    NoLeaveOnPollTimeout,
    /// After healing, the group's assignment kept changing past the bound.
    GroupNotStable,
    /// After healing, an acked record was not consumed within the bound.
    NotAllConsumed,
    /// After healing, an acked record was not committed within the bound.
    NotCommitted,
    /// The history ended before a liveness bound could be judged.
    LivenessInconclusive,
    /// `commitSync` returned before the callbacks of earlier `commitAsync`s ran (KAFKA-10337).
    CommitCallbackOrder,
    /// The application thread woke up more often per virtual second than a poll loop that
    /// waits for its timeout, a response or a deadline can (KAFKA-14729's busy loop).
    BusyLoop,
    /// A member was told it lost its partitions although nothing cut it off from the group
    /// and its application kept polling in time (KAFKA-4160: heartbeats starved).
    SpuriousLoss,
    /// `poll` kept throwing past a bound: the consumer cannot recover without a restart
    /// (KAFKA-8104: every poll rethrew from `onJoinComplete`).
    PollKeepsFailing,
    /// A rebalance listener call failed (threw, panicked) and the `poll` (or `close`) that ran
    /// it returned normally: the application never learns that its callback did not do its
    /// work.
    ListenerErrorSwallowed,
    /// A member's commit of a partition succeeded after another member had taken the partition
    /// over (a zombie's stale commit accepted over the new owner's progress).
    StaleCommitAccepted,
    /// A subscription to a topic name Kafka does not allow went through without the
    /// application being told: neither `subscribe` nor a `poll` after it failed naming it.
    InvalidTopicAccepted,
    /// The application's last seek did not decide the position: a lookup answered for an
    /// earlier state (an automatic reset, a validation, an earlier seek) overwrote it
    /// (KAFKA-7703).
    SeekOverridden,
    /// A member sent group or lookup requests faster than any backoff allows while the
    /// cluster kept refusing them (a rejoin per round trip while fenced, a retry per
    /// response): the project's own invariant (issue #18).
    RequestStorm,
    /// A broker saw more SASL authentications per second than the members' reconnect
    /// backoff allows: a client retrying refused credentials (or re-authenticating) in a loop.
    AuthenticationStorm,
    /// `poll` failed with an authentication error while the credentials were right.
    AuthenticationErrorUnexpected,
    /// The credentials were wrong for a whole window in which the member kept polling, and no
    /// `poll` reported it: the consumer spun silently on refused authentications.
    AuthenticationErrorMissing,
    /// After a reset error under `auto.offset.reset=none` (out of range, log truncation), the
    /// position was not the one the error named: the consumer threw it away or moved it.
    PositionNotKept,
    /// A `read_committed` member was handed a record of a transaction that had not committed
    /// (still open, or aborted): Kafka's broker serves such a member only up to the last
    /// stable offset and the client drops the batches of aborted transactions.
    UncommittedDelivered,
}

/// One broken invariant, located in virtual time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    /// When the invariant was first observably broken.
    pub at_ms: u64,
    pub subject: Option<String>,
    pub tp: Option<Tp>,
    pub offset: Option<i64>,
    /// What happened and what was expected, in words.
    pub explanation: String,
}

impl Violation {
    pub fn new(kind: ViolationKind, at_ms: u64, explanation: impl Into<String>) -> Self {
        Self {
            kind,
            at_ms,
            subject: None,
            tp: None,
            offset: None,
            explanation: explanation.into(),
        }
    }

    pub fn subject(mut self, subject: &str) -> Self {
        self.subject = Some(subject.to_string());
        self
    }

    pub fn tp(mut self, tp: &Tp) -> Self {
        self.tp = Some(tp.clone());
        self
    }

    pub fn offset(mut self, offset: i64) -> Self {
        self.offset = Some(offset);
        self
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>7}ms {:?}", self.at_ms, self.kind)?;
        if let Some(s) = &self.subject {
            write!(f, " {s}")?;
        }
        match (&self.tp, self.offset) {
            (Some(tp), Some(o)) => write!(f, " {tp}@{o}")?,
            (Some(tp), None) => write!(f, " {tp}")?,
            (None, Some(o)) => write!(f, " @{o}")?,
            (None, None) => {}
        }
        write!(f, ": {}", self.explanation)
    }
}

/// One checker's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub checker: &'static str,
    /// Sorted by `at_ms` (stable).
    pub violations: Vec<Violation>,
}

impl Verdict {
    pub fn new(checker: &'static str, mut violations: Vec<Violation>) -> Self {
        violations.sort_by_key(|v| v.at_ms);
        Self {
            checker,
            violations,
        }
    }

    pub fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// The earliest violation.
    pub fn first(&self) -> Option<&Violation> {
        self.violations.first()
    }

    /// Whether any violation is of `kind`.
    pub fn has(&self, kind: ViolationKind) -> bool {
        self.violations.iter().any(|v| v.kind == kind)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_ok() {
            return writeln!(f, "{}: ok", self.checker);
        }
        writeln!(
            f,
            "{}: {} violation(s)",
            self.checker,
            self.violations.len()
        )?;
        const SHOWN: usize = 20;
        for v in self.violations.iter().take(SHOWN) {
            writeln!(f, "  {v}")?;
        }
        if self.violations.len() > SHOWN {
            writeln!(f, "  ... {} more", self.violations.len() - SHOWN)?;
        }
        Ok(())
    }
}

/// A checker over a history. Implementations must not panic on any history.
pub trait Checker: fmt::Debug + Send + Sync {
    /// A stable name (`lost-writes`), used in reports and regression files.
    fn name(&self) -> &'static str;
    /// Every violation found.
    fn violations(&self, history: &History) -> Vec<Violation>;
    fn check(&self, history: &History) -> Verdict {
        Verdict::new(self.name(), self.violations(history))
    }
}

impl Checker for Box<dyn Checker> {
    fn name(&self) -> &'static str {
        self.as_ref().name()
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        self.as_ref().violations(history)
    }
}

/// A chosen set of checkers.
#[derive(Debug, Default)]
pub struct CheckerSet {
    checkers: Vec<Box<dyn Checker>>,
}

impl CheckerSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a checker.
    pub fn with(mut self, checker: impl Checker + 'static) -> Self {
        self.checkers.push(Box::new(checker));
        self
    }

    /// Jepsen's Kafka taxonomy with default settings and these known log gaps.
    pub fn jepsen(gaps: KnownGaps) -> Self {
        Self::new()
            .with(LostWrites {
                gaps: gaps.clone(),
                ..LostWrites::default()
            })
            .with(DuplicateDeliveries::default())
            .with(InconsistentOffsets::default())
            .with(DeliveryOrder {
                gaps,
                ..DeliveryOrder::default()
            })
            .with(CommittedOffsetsMonotonic::default())
    }

    /// The group invariants that need no scenario-specific bound (no liveness).
    pub fn group(mode: OwnershipMode) -> Self {
        Self::new()
            .with(ExclusiveOwnership {
                mode,
                ..ExclusiveOwnership::default()
            })
            .with(RevokeBeforeReassign::default())
            .with(CallbackHandshake::default())
            .with(BlockingBounds::default())
            .with(NoLeaveInPoll::default())
    }

    /// [`Self::jepsen`] and [`Self::group`] together.
    pub fn standard(gaps: KnownGaps, mode: OwnershipMode) -> Self {
        let mut set = Self::jepsen(gaps);
        set.checkers.extend(Self::group(mode).checkers);
        set
    }

    /// Declares violations of `kind` by the checker named `checker` expected, because of
    /// `reason` (the Kafka behaviour that makes them unavoidable, with its source reference):
    /// that checker is wrapped in [`Expected`]. A name not in the set changes nothing.
    pub fn expect(mut self, checker: &str, kind: ViolationKind, reason: &'static str) -> Self {
        self.checkers = self
            .checkers
            .into_iter()
            .map(|c| -> Box<dyn Checker> {
                if c.name() == checker {
                    Box::new(Expected::because(c, kind, reason))
                } else {
                    c
                }
            })
            .collect();
        self
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.checkers.iter().map(|c| c.name()).collect()
    }

    /// Runs every checker.
    pub fn run(&self, history: &History) -> Report {
        Report {
            verdicts: self.checkers.iter().map(|c| c.check(history)).collect(),
        }
    }
}

/// The verdicts of a [`CheckerSet`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub verdicts: Vec<Verdict>,
}

impl Report {
    pub fn is_ok(&self) -> bool {
        self.verdicts.iter().all(Verdict::is_ok)
    }

    /// The earliest violation over all checkers (ties: checker order), with its checker.
    pub fn first_violation(&self) -> Option<(&'static str, &Violation)> {
        self.verdicts
            .iter()
            .filter_map(|v| v.first().map(|f| (v.checker, f)))
            .min_by_key(|(_, f)| f.at_ms)
    }

    /// Every violation, in time order.
    pub fn violations(&self) -> Vec<(&'static str, &Violation)> {
        let mut all: Vec<_> = self
            .verdicts
            .iter()
            .flat_map(|v| v.violations.iter().map(move |x| (v.checker, x)))
            .collect();
        all.sort_by_key(|(_, v)| v.at_ms);
        all
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for v in &self.verdicts {
            write!(f, "{v}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
