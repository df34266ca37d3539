//! The history of a simulated (or real) run: everything observable, on virtual time.
//!
//! Subjects (our consumer, a model of the legacy two-thread consumer), producers, brokers and
//! the fault runner share one [`Recorder`] and push [`Event`]s with the virtual time they
//! happened at. A [`History`] is a snapshot of that log with the queries the checkers in
//! [`crate::check`] and the timeline need. Each [`Entry`] renders as one stable line
//! (`    120ms c0 poll-start timeout=100ms`) so curated runs can be golden traces (insta).
//!
//! Design notes:
//! - Nothing here reads a clock or a random source: time is an argument, so the log of a seed is
//!   a pure function of the seed.
//! - Events are summaries, not payloads: the checkers need offsets, values, generations, error
//!   codes and partition sets, never bytes.
//! - [`Coverage`] counters ride along on the same handle, so code that already records can
//!   also prove a batch of seeds reached a rare state.

mod coverage;
mod event;
mod fence;
mod late_notice;
mod ownership;
mod recorder;
mod snapshot;

use std::fmt;

pub use coverage::{Coverage, CoverageBatch, CoverageMiss};
pub use event::{CallbackKind, CommitMode, Event, Tp};
pub use fence::{Fence, FenceCause, FENCING_ERRORS};
pub use late_notice::PeriodKey;
pub use ownership::{OwnershipChange, OwnershipEnd, OwnershipPeriod, OwnershipTracker};
pub use recorder::{Recorder, SubjectRecorder};
pub use snapshot::{CommitOutcome, Delivery, History, ProduceAck};

/// One recorded event: who, when, what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Position in the log: ties on `at_ms` keep recording order.
    pub seq: u64,
    /// Virtual milliseconds since the start of the run.
    pub at_ms: u64,
    /// A stable name: `c0`, `producer`, `faults`, `broker-1`.
    pub subject: String,
    pub event: Event,
}

/// `{at_ms:>7}ms {subject} {event}`: the golden-trace line.
impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>7}ms {} {}", self.at_ms, self.subject, self.event)
    }
}

#[cfg(test)]
mod tests;
