//! The sabotage catalogue: consumer bugs that this project found and fixed, and the classic
//! mechanisms of upstream Kafka consumer bugs, each one reintroducible into this consumer
//! behind a switch, so that the scenario library can be measured by what it catches
//! (`cargo sim sabotage`).
//!
//! The switch exists only in simulation builds (`--cfg madsim`, which no release build of the
//! crate has): in a normal build [`active`] is a constant `false` and every sabotaged branch is
//! dead code the compiler removes. In a simulation build nothing is sabotaged unless a test
//! or the scenarios CLI calls [`activate`]; one sabotage at a time, for the whole process (the
//! CLI runs each seed in its own process).

/// One reintroducible bug. Each variant's doc comment says what the consumer then does wrong
/// and where the bug comes from; [`Sabotage::origin`] says it in one line for the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sabotage {
    /// Partitions about to be revoked (or lost) keep being fetched and their buffered records
    /// stay deliverable: records reach the application after the commit before revocation.
    /// Java stops fetching them first (`SubscriptionState.markPendingRevocation`).
    FetchRevokedPartitions,
    /// A reconciliation that commits or revokes starts at any time instead of right after an
    /// acknowledged poll: the commit misses records handed out meanwhile (KAFKA-14196).
    ReconcileWithoutPoll,
    /// A pattern subscription is matched once and never again against new metadata. Project
    /// fix (pattern re-matching, Java's `updatePatternSubscription`).
    PatternNotRematched,
    /// No auto-commit before partitions are revoked: the next owner consumes again what the
    /// application already had (Java's `onJoinPrepare` / `maybeAutoCommitSyncBeforeRevocation`).
    NoCommitBeforeRevocation,
    /// A commit before revocation answered UNKNOWN_TOPIC_OR_PARTITION (the topic was deleted)
    /// is retried until the rebalance timeout instead of failing (KAFKA-16224).
    UnknownTopicCommitRetried,
    /// `close` / `unsubscribe` leave without running `on_partitions_revoked` (or lost) for what
    /// the member owns. Project fix (close through the listener).
    LeaveWithoutCallback,
    /// A member whose application stays away from `poll` past `max.poll.interval.ms` keeps its
    /// place and partitions instead of leaving the group. Project fix (poll-timeout leave).
    PollTimeoutNoLeave,
    /// No heartbeat goes out while a rebalance callback runs: the old design's heartbeat
    /// blocked behind the application thread (KAFKA-4160).
    HeartbeatPausedDuringCallback,
    /// KIP-848: the heartbeat stops reporting partitions being revoked as owned before
    /// `on_partitions_revoked` has run, so the coordinator hands them on while the member
    /// still processes and commits them (assign before revoke).
    ReleaseBeforeRevokeCallback,
    /// KIP-848: the heartbeat reports only the acknowledged assignment while a reconciliation
    /// adds partitions (Java's behaviour); a newer target taking one back lets two members own
    /// it. Project fix (family-lost-commits seed 179).
    OwnedReportsAcknowledgedOnly,
    /// A consumed position survives the loss of its partition: a later auto-commit commits a
    /// position from the previous ownership. Project fix (family-zombie seed 114).
    StalePositionSurvivesLoss,
    /// Auto-commits are not floored by what earlier commits sent: two auto-commits from
    /// different snapshots move the committed offset back. Project fix (family-lost-commits
    /// seeds 0 and 34).
    AutoCommitIgnoresFloor,
    /// An auto-commit of a topic deleted meanwhile goes out anyway and can land in a topic
    /// created again under the same name. Project fix (family-data-path-recreate 230, 766).
    AutoCommitIntoRecreatedTopic,
    /// A coordinator that failed is never forgotten: FindCoordinator is not sent again
    /// (KAFKA-13563, KAFKA-6362, KAFKA-10793).
    CoordinatorNeverForgotten,
    /// Newly assigned partitions start from `auto.offset.reset` instead of the group's
    /// committed offset (Java's `initWithCommittedOffsetsIfNeeded`).
    CommittedOffsetIgnored,
    /// Commits take the partition's high watermark as of the last fetch instead of the position
    /// after the records handed out: records fetched but not yet returned count as consumed
    /// (KAFKA-2942).
    CommitFetchedNotReturned,
    /// Under `read_committed`, batches of aborted transactions are handed out.
    AbortedRecordsDelivered,
    /// Fetches ask for `read_uncommitted` whatever `isolation.level` says: the broker returns
    /// records above the last stable offset (Java's `FetchRequest` isolation level).
    FetchIgnoresIsolation,
    /// Transaction markers (control records) are handed to the application as records (Java's
    /// `CompletedFetch` skips control batches).
    ControlRecordsDelivered,
    /// A batch the log cleaner emptied at the end of a fetch is fetched again forever (the
    /// position does not move past the batch's last offset).
    EmptiedBatchRefetched,
    /// A fetch answered OFFSET_OUT_OF_RANGE under `earliest` / `latest` does not reset the
    /// position: the partition is fetched at the same offset forever (Java's
    /// `FetchCollector.handleInitializeErrors`).
    OutOfRangeIgnored,
    /// Fetched data is kept even when the partition's position moved (seek, reset) while the
    /// fetch was in flight: records from the old position are delivered.
    StaleFetchAfterSeek,
    /// An offset-reset answer is applied even after a seek superseded the reset (KAFKA-7703).
    LateResetOverridesSeek,
    /// A committed-offset answer is applied even after a seek superseded the lookup
    /// (KAFKA-7703's OffsetFetch twin).
    LateCommittedOffsetApplied,
    /// An OffsetForLeaderEpoch answer is applied even after a seek superseded the validation
    /// (KAFKA-7703's validation twin).
    LateValidationApplied,
    /// `pause` drops the records `recv` / `stream` already took from the buffer for the paused
    /// partitions. Project fix.
    PauseDropsTakenRecords,
    /// Committed offsets are fetched without `require_stable` under `read_uncommitted`: a
    /// coordinator that just took over answers from its trailing high watermark, so a member
    /// taking a partition over right after a coordinator move starts behind the committed
    /// offset. Project fix (Java's consumers always set `requireStable`).
    OffsetFetchNotStable,
}

#[cfg_attr(not(feature = "__internal"), allow(dead_code))] // The testbed's API.
impl Sabotage {
    /// Every entry, in catalogue order.
    pub const ALL: [Sabotage; 27] = [
        Sabotage::FetchRevokedPartitions,
        Sabotage::ReconcileWithoutPoll,
        Sabotage::PatternNotRematched,
        Sabotage::NoCommitBeforeRevocation,
        Sabotage::UnknownTopicCommitRetried,
        Sabotage::LeaveWithoutCallback,
        Sabotage::PollTimeoutNoLeave,
        Sabotage::HeartbeatPausedDuringCallback,
        Sabotage::ReleaseBeforeRevokeCallback,
        Sabotage::OwnedReportsAcknowledgedOnly,
        Sabotage::StalePositionSurvivesLoss,
        Sabotage::AutoCommitIgnoresFloor,
        Sabotage::AutoCommitIntoRecreatedTopic,
        Sabotage::CoordinatorNeverForgotten,
        Sabotage::CommittedOffsetIgnored,
        Sabotage::CommitFetchedNotReturned,
        Sabotage::AbortedRecordsDelivered,
        Sabotage::FetchIgnoresIsolation,
        Sabotage::ControlRecordsDelivered,
        Sabotage::EmptiedBatchRefetched,
        Sabotage::OutOfRangeIgnored,
        Sabotage::StaleFetchAfterSeek,
        Sabotage::LateResetOverridesSeek,
        Sabotage::LateCommittedOffsetApplied,
        Sabotage::LateValidationApplied,
        Sabotage::PauseDropsTakenRecords,
        Sabotage::OffsetFetchNotStable,
    ];

    /// The entry's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Sabotage::FetchRevokedPartitions => "fetch-revoked-partitions",
            Sabotage::ReconcileWithoutPoll => "reconcile-without-poll",
            Sabotage::PatternNotRematched => "pattern-not-rematched",
            Sabotage::NoCommitBeforeRevocation => "no-commit-before-revocation",
            Sabotage::UnknownTopicCommitRetried => "unknown-topic-commit-retried",
            Sabotage::LeaveWithoutCallback => "leave-without-callback",
            Sabotage::PollTimeoutNoLeave => "poll-timeout-no-leave",
            Sabotage::HeartbeatPausedDuringCallback => "heartbeat-paused-during-callback",
            Sabotage::ReleaseBeforeRevokeCallback => "release-before-revoke-callback",
            Sabotage::OwnedReportsAcknowledgedOnly => "owned-reports-acknowledged-only",
            Sabotage::StalePositionSurvivesLoss => "stale-position-survives-loss",
            Sabotage::AutoCommitIgnoresFloor => "auto-commit-ignores-floor",
            Sabotage::AutoCommitIntoRecreatedTopic => "auto-commit-into-recreated-topic",
            Sabotage::CoordinatorNeverForgotten => "coordinator-never-forgotten",
            Sabotage::CommittedOffsetIgnored => "committed-offset-ignored",
            Sabotage::CommitFetchedNotReturned => "commit-fetched-not-returned",
            Sabotage::AbortedRecordsDelivered => "aborted-records-delivered",
            Sabotage::FetchIgnoresIsolation => "fetch-ignores-isolation",
            Sabotage::ControlRecordsDelivered => "control-records-delivered",
            Sabotage::EmptiedBatchRefetched => "emptied-batch-refetched",
            Sabotage::OutOfRangeIgnored => "out-of-range-ignored",
            Sabotage::StaleFetchAfterSeek => "stale-fetch-after-seek",
            Sabotage::LateResetOverridesSeek => "late-reset-overrides-seek",
            Sabotage::LateCommittedOffsetApplied => "late-committed-offset-applied",
            Sabotage::LateValidationApplied => "late-validation-applied",
            Sabotage::PauseDropsTakenRecords => "pause-drops-taken-records",
            Sabotage::OffsetFetchNotStable => "offset-fetch-not-stable",
        }
    }

    /// Where the bug comes from: `project` for a bug of this consumer found and fixed here, or
    /// the upstream issue / Java mechanism it reintroduces.
    pub fn origin(self) -> &'static str {
        match self {
            Sabotage::FetchRevokedPartitions => "Java markPendingRevocation",
            Sabotage::ReconcileWithoutPoll => "KAFKA-14196",
            Sabotage::PatternNotRematched => "project",
            Sabotage::NoCommitBeforeRevocation => "Java onJoinPrepare",
            Sabotage::UnknownTopicCommitRetried => "KAFKA-16224",
            Sabotage::LeaveWithoutCallback => "project",
            Sabotage::PollTimeoutNoLeave => "project",
            Sabotage::HeartbeatPausedDuringCallback => "KAFKA-4160",
            Sabotage::ReleaseBeforeRevokeCallback => "KIP-848 revocation order",
            Sabotage::OwnedReportsAcknowledgedOnly => "project",
            Sabotage::StalePositionSurvivesLoss => "project",
            Sabotage::AutoCommitIgnoresFloor => "project",
            Sabotage::AutoCommitIntoRecreatedTopic => "project",
            Sabotage::CoordinatorNeverForgotten => "KAFKA-13563",
            Sabotage::CommittedOffsetIgnored => "Java initWithCommittedOffsets",
            Sabotage::CommitFetchedNotReturned => "KAFKA-2942",
            Sabotage::AbortedRecordsDelivered => "Java CompletedFetch",
            Sabotage::FetchIgnoresIsolation => "Java FetchRequest",
            Sabotage::ControlRecordsDelivered => "Java CompletedFetch",
            Sabotage::EmptiedBatchRefetched => "Java CompletedFetch",
            Sabotage::OutOfRangeIgnored => "Java FetchCollector",
            Sabotage::StaleFetchAfterSeek => "Java FetchCollector",
            Sabotage::LateResetOverridesSeek => "KAFKA-7703",
            Sabotage::LateCommittedOffsetApplied => "KAFKA-7703",
            Sabotage::LateValidationApplied => "KAFKA-7703",
            Sabotage::PauseDropsTakenRecords => "project",
            Sabotage::OffsetFetchNotStable => "project",
        }
    }

    /// The entry named `name` ([`Sabotage::name`]).
    pub fn from_name(name: &str) -> Option<Sabotage> {
        Sabotage::ALL.into_iter().find(|s| s.name() == name)
    }
}

#[cfg(madsim)]
mod switch {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::Sabotage;

    /// 0: nothing sabotaged; otherwise the index in [`Sabotage::ALL`] plus one.
    static ACTIVE: AtomicUsize = AtomicUsize::new(0);

    /// Sabotages the consumer with `sabotage` (or nothing) from now on, process-wide.
    #[cfg_attr(not(feature = "__internal"), allow(dead_code))] // The testbed's API.
    pub fn activate(sabotage: Option<Sabotage>) {
        let index = sabotage
            .and_then(|s| Sabotage::ALL.iter().position(|a| *a == s))
            .map_or(0, |i| i + 1);
        ACTIVE.store(index, Ordering::SeqCst);
    }

    /// Whether `sabotage` is the active one.
    pub fn active(sabotage: Sabotage) -> bool {
        match ACTIVE.load(Ordering::Relaxed) {
            0 => false,
            index => Sabotage::ALL.get(index - 1) == Some(&sabotage),
        }
    }
}

#[cfg(madsim)]
#[cfg_attr(not(feature = "__internal"), allow(unused_imports))] // The testbed's API.
pub use switch::activate;

#[cfg(madsim)]
pub(crate) use switch::active;

/// Never sabotaged outside simulation builds.
#[cfg(not(madsim))]
#[inline(always)]
pub(crate) const fn active(_sabotage: Sabotage) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut names = std::collections::BTreeSet::new();
        for sabotage in Sabotage::ALL {
            assert!(names.insert(sabotage.name()), "{sabotage:?} named twice");
            assert_eq!(Sabotage::from_name(sabotage.name()), Some(sabotage));
        }
        assert_eq!(Sabotage::from_name("no-such-sabotage"), None);
    }

    #[cfg(not(madsim))]
    #[test]
    fn nothing_is_sabotaged_outside_simulation_builds() {
        assert!(Sabotage::ALL.into_iter().all(|s| !active(s)));
    }
}
