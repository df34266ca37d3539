//! The two channels' messages (Java's `ApplicationEvent` and `BackgroundEvent`).
//!
//! Every application event that the caller waits on carries a [`Completion`] with an absolute
//! deadline; the background side's reaper fails it when the deadline passes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::completion::Completion;
use super::subscription_state::TopicPattern;
use crate::close_options::GroupMembershipOperation;
use crate::error::Error;
use crate::types::{OffsetAndMetadata, OffsetAndTimestamp, PartitionInfo, TopicPartition};

/// Committed offsets by partition (`None`: nothing committed).
pub(crate) type CommittedOffsets = BTreeMap<TopicPartition, Option<OffsetAndMetadata>>;
/// ListOffsets answers by partition (`None`: no such offset, e.g. no record that late).
pub(crate) type ListedOffsets = BTreeMap<TopicPartition, Option<OffsetAndTimestamp>>;
/// Topic metadata by topic name.
pub(crate) type TopicPartitions = BTreeMap<String, Vec<PartitionInfo>>;

/// Where a seek goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SeekTarget {
    /// An explicit offset (and the epoch of the record before it, if known).
    Offset(OffsetAndMetadata),
    /// The log start offset.
    Beginning,
    /// The log end offset.
    End,
}

/// What `subscribe` / `subscribe_pattern` / `subscribe_regex` subscribe to.
#[derive(Debug, Clone)]
pub(crate) enum SubscriptionRequest {
    /// These topics.
    Topics(BTreeSet<String>),
    /// The topics matching a pattern, re-evaluated on every metadata refresh.
    Pattern(TopicPattern),
    /// The topics a broker-side RE2J regex matches (consumer group protocol only).
    Regex(String),
}

/// The rebalance listener method a callback-needed event asks the application side to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RebalanceCallback {
    /// `on_partitions_revoked`: the partitions are given up in an orderly way.
    Revoked,
    /// `on_partitions_assigned`.
    Assigned,
    /// `on_partitions_lost`: the partitions may already belong to another member.
    Lost,
}

impl RebalanceCallback {
    /// The listener method's name, for logs and spans.
    pub(crate) fn method_name(self) -> &'static str {
        match self {
            Self::Revoked => "on_partitions_revoked",
            Self::Assigned => "on_partitions_assigned",
            Self::Lost => "on_partitions_lost",
        }
    }
}

/// Application side → background side.
#[derive(Debug)]
pub(crate) enum ApplicationEvent {
    /// `poll` started. Carries the consumed positions as of that moment — records returned by
    /// *earlier* polls — which is all auto-commit may commit (KAFKA-2942, KAFKA-18641).
    Poll {
        /// Positions to auto-commit.
        offsets_to_commit: BTreeMap<TopicPartition, OffsetAndMetadata>,
        /// Set when the background side asked for this poll
        /// ([`BackgroundEvent::PollRequested`]): completed once a rebalance waiting for it
        /// has started (its partitions to revoke no longer fetchable), so records collected
        /// after it are never ones the revocation's commit left out. Java's `canCommit`.
        ack: Option<Completion<()>>,
    },
    /// `poll` handed out the last buffered records of at least one partition: the next
    /// fetches can go out now, while the application processes what it was given, instead of
    /// at its next `poll` (Java's `sendPrefetches`, a `CreateFetchRequestsEvent` sent before
    /// `poll` returns). A broker whose partitions all have nothing buffered any more is fetched
    /// from in the round this wakes.
    CreateFetchRequests,
    /// `assign` / `unsubscribe` (an empty set). Auto-commits the given positions first.
    Assign {
        /// The new assignment.
        partitions: BTreeSet<TopicPartition>,
        /// Positions to auto-commit before the assignment changes.
        offsets_to_commit: BTreeMap<TopicPartition, OffsetAndMetadata>,
        /// Done when the assignment is in effect.
        completion: Completion<()>,
    },
    /// `subscribe` / `subscribe_pattern`: the group is joined on the next poll.
    Subscribe {
        /// Topics or pattern.
        subscription: SubscriptionRequest,
        /// Done when the subscription is in effect.
        completion: Completion<()>,
    },
    /// `unsubscribe` (and the first half of `close`) in subscribe mode: revoke (or lose) the
    /// partitions through the listener, leave the group, drop the subscription.
    Unsubscribe {
        /// Done when the member has left.
        completion: Completion<()>,
        /// Leave or remain (`close_with`); `Default` for `unsubscribe`.
        operation: GroupMembershipOperation,
    },
    /// A rebalance listener callback has run on the application side (or failed, panicked, or
    /// was abandoned: the background side only needs to know it is over).
    RebalanceCallbackCompleted {
        /// The id of the callback-needed event.
        id: u64,
    },
    /// `enforce_rebalance`.
    EnforceRebalance {
        /// Why, for the logs.
        reason: String,
    },
    /// `commit_sync` (retries retriable errors until its deadline) or `commit_async` (no retry).
    Commit {
        /// What to commit.
        offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
        /// Whether retriable errors are retried.
        retry: bool,
        /// Refuse the commit if a partition is no longer assigned when the background side
        /// takes it up: a [`ConsumerHandle`](crate::consumer::ConsumerHandle)'s commit races
        /// the polling task's rebalance callbacks, and a commit of a partition whose revocation
        /// has completed could overwrite its new owner's progress. The consumer's own commits
        /// are checked against its view before they are sent.
        assigned_only: bool,
        /// Done when the broker accepted the commit (or it failed).
        completion: Completion<()>,
    },
    /// `committed`.
    FetchCommittedOffsets {
        /// The partitions.
        partitions: BTreeSet<TopicPartition>,
        /// The answer.
        completion: Completion<CommittedOffsets>,
    },
    /// `seek`, `seek_to_beginning`, `seek_to_end`.
    Seek {
        /// The partitions.
        partitions: Vec<TopicPartition>,
        /// Where to.
        target: SeekTarget,
        /// Done when the new position (or the pending reset) is in effect.
        completion: Completion<()>,
    },
    /// `pause` / `resume`.
    SetPaused {
        /// The partitions.
        partitions: Vec<TopicPartition>,
        /// Pause (`true`) or resume.
        paused: bool,
        /// Done when in effect (buffered data of paused partitions dropped).
        completion: Completion<()>,
    },
    /// `client_instance_id`: completes once a KIP-714 telemetry subscription has given the
    /// client its instance id.
    ClientInstanceId {
        /// The id.
        completion: Completion<uuid::Uuid>,
    },
    /// `position`: completes once the partition has a valid position.
    Position {
        /// The partition.
        partition: TopicPartition,
        /// The position.
        completion: Completion<OffsetAndMetadata>,
    },
    /// `beginning_offsets`, `end_offsets`, `offsets_for_times`.
    ListOffsets {
        /// Timestamp to look up per partition (-2 earliest, -1 latest).
        timestamps: BTreeMap<TopicPartition, i64>,
        /// The answers.
        completion: Completion<ListedOffsets>,
    },
    /// `partitions_for` (`Some`) and `list_topics` (`None`).
    TopicMetadata {
        /// The topics, or all.
        topics: Option<Vec<String>>,
        /// The answer.
        completion: Completion<TopicPartitions>,
    },
    /// `close` is under way: commits still pending drain, or fail at once while the
    /// coordinator is unknown (KAFKA-19357).
    CommitOnClose,
    /// `close`: finish pending commits (or fail them), close fetch sessions, stop.
    Close {
        /// Done when the background task has finished.
        completion: Completion<()>,
    },
    /// Tests only: the background task panics with this message, as a bug in it would.
    #[cfg(all(test, not(madsim)))]
    PanicForTest(&'static str),
}

/// Background side → application side.
#[derive(Debug)]
pub(crate) enum BackgroundEvent {
    /// An error for the application's next call (Java's `ErrorEvent`).
    Error(Error),
    /// Run a rebalance listener method, then answer with
    /// [`ApplicationEvent::RebalanceCallbackCompleted`] — exactly once, whatever happens.
    RebalanceCallbackNeeded {
        /// Echoed in the completion.
        id: u64,
        /// Which method.
        callback: RebalanceCallback,
        /// Its argument.
        partitions: BTreeSet<TopicPartition>,
        /// The application's view of the assignment once the callback is over (before an
        /// `Assigned` callback it already holds the new partitions, so the callback can seek).
        assignment_after: BTreeSet<TopicPartition>,
        /// Set by the background side when a `Revoked` call not yet started must run as
        /// `Lost` (the member lost its generation meanwhile); read when the call starts.
        became_lost: Arc<AtomicBool>,
    },
    /// A rebalance waits for the application's next `poll`: the commit before revocation must
    /// carry what the application has processed, and records of partitions about to be
    /// revoked must not be handed out meanwhile. The next `poll` (or the one waiting now)
    /// sends an acknowledged [`ApplicationEvent::Poll`] and waits for it before collecting.
    PollRequested,
}
