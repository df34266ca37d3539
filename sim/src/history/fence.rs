//! Fencing as the simulation observed it: the facts that a member stopped being a member of
//! its group in the coordinator's eyes.
//!
//! Two checkers (`exclusive-ownership`, `duplicate-deliveries`) tolerate a *zombie*: a member
//! that still believes it owns a partition the coordinator has already given away. Kafka's
//! coordinators give a partition to a new owner only once the old owner revoked it or is no
//! longer a member (KIP-848: `CurrentAssignmentBuilder` keeps a partition pending revocation
//! away from its next owner until the current owner acknowledges; `GroupMetadataManager.
//! consumerGroupFenceMember` removes a member whose session or rebalance timeout expired.
//! Classic: a generation completes only after every member rejoined or was removed,
//! `GroupMetadataManager.onCompleteJoin` / `removeMemberAndUpdateClassicGroup`). So a zombie
//! window is legitimate only *after* one of these facts, never because of how the member's own
//! view later ended:
//!
//! - [`FenceCause::Expelled`]: the coordinator removed the member on its own (a session,
//!   rejoin, sync or revocation deadline passed). The member may never hear it.
//! - [`FenceCause::FencingError`]: a group request of the member was answered
//!   `UNKNOWN_MEMBER_ID`, `FENCED_MEMBER_EPOCH` or `FENCED_INSTANCE_ID` — the coordinator
//!   no longer knew it as the member it claimed to be (Java: `AbstractMembershipManager.
//!   transitionToFenced`, `AbstractCoordinator.resetGenerationOnResponseError`).
//! - [`FenceCause::LeftGroup`]: the member itself left (a leave heartbeat or `LeaveGroup`).
//!   It excuses only an ownership that then ends in `onPartitionsLost`, the way Java's consumer
//!   drops its partitions after leaving on an expired poll timer
//!   (`AbstractMembershipManager.transitionToStale`, `ConsumerCoordinator.onJoinPrepare` →
//!   `invokePartitionsLost`); a member that leaves before revoking on close keeps no excuse.

use std::fmt;

use super::event::Event;
use super::ownership::{OwnershipEnd, OwnershipPeriod};
use super::snapshot::History;

/// The group error codes that tell a member the coordinator no longer knows it.
pub const FENCING_ERRORS: [&str; 3] = [
    "UNKNOWN_MEMBER_ID",
    "FENCED_MEMBER_EPOCH",
    "FENCED_INSTANCE_ID",
];

/// What the simulation saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FenceCause {
    /// The coordinator removed the member (`Event::Expelled`).
    Expelled { reason: String },
    /// A group request was answered with one of [`FENCING_ERRORS`].
    FencingError { api: String, error: String },
    /// The member left the group (`Event::Leave`).
    LeftGroup { reason: String },
}

impl fmt::Display for FenceCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FenceCause::Expelled { reason } => write!(f, "expelled by the coordinator: {reason}"),
            FenceCause::FencingError { api, error } => write!(f, "{api} answered {error}"),
            FenceCause::LeftGroup { reason } => write!(f, "left the group: {reason}"),
        }
    }
}

/// One observed fencing of `subject`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    pub seq: u64,
    pub at_ms: u64,
    pub subject: String,
    pub cause: FenceCause,
}

impl Fence {
    /// Whether this fact makes `period`'s owner a zombie for a partition that moved to another
    /// member at entry `moved_seq`: the fact is the owner's, it happened inside the period and
    /// before the move (the coordinator moves a partition only after it), and a leave excuses
    /// only a period the member then reported lost.
    pub fn excuses(&self, period: &OwnershipPeriod, moved_seq: u64) -> bool {
        let lost_after_leave = !matches!(self.cause, FenceCause::LeftGroup { .. })
            || period.end == Some(OwnershipEnd::Lost);
        self.subject == period.subject
            && period.start_seq < self.seq
            && self.seq < moved_seq
            && period.end_seq.is_none_or(|end| self.seq <= end)
            && lost_after_leave
    }
}

impl History {
    /// Every observed fencing, in time order (see the module doc for what counts).
    pub fn fences(&self) -> Vec<Fence> {
        self.entries()
            .iter()
            .filter_map(|e| {
                let cause = match &e.event {
                    Event::Expelled { reason, .. } => FenceCause::Expelled {
                        reason: reason.clone(),
                    },
                    Event::Response {
                        api,
                        error: Some(error),
                        ..
                    } if FENCING_ERRORS.contains(&error.as_str()) => FenceCause::FencingError {
                        api: api.clone(),
                        error: error.clone(),
                    },
                    Event::Leave { reason } => FenceCause::LeftGroup {
                        reason: reason.clone(),
                    },
                    _ => return None,
                };
                Some(Fence {
                    seq: e.seq,
                    at_ms: e.at_ms,
                    subject: e.subject.clone(),
                    cause,
                })
            })
            .collect()
    }

    /// The first fencing that makes `period`'s owner a zombie for a partition that moved on at
    /// entry `moved_seq` ([`Fence::excuses`]).
    pub fn zombie_fence(&self, period: &OwnershipPeriod, moved_seq: u64) -> Option<Fence> {
        self.fences()
            .into_iter()
            .find(|f| f.excuses(period, moved_seq))
    }
}
