//! The seam between the runner and a consumer under test.
//!
//! The runner's application loop drives a [`Subject`] through the calls a Kafka application
//! makes (`assign` or `subscribe`, `poll`, `commitAsync`, `close`) and records what the
//! application sees
//! (polls, deliveries, commit requests and completions). The subject records what only it can
//! see (requests, responses) through the [`SubjectContext`] it was built with. Every method is
//! a `Send` future so the same loop drives the legacy model and our async consumer.

use std::fmt;
use std::future::Future;
use std::str::FromStr;

use kafka_consumer::config::ConsumerConfig;
use sim::history::{Event, SubjectRecorder, Tp};
use tokio::time::{Duration, Instant};

/// Which implementation plays the consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubjectKind {
    /// `crate::legacy`: Kafka 3.1's classic consumer threading, bugs included.
    Legacy,
    /// `kafka_consumer::Consumer`, the production crate.
    Consumer,
}

impl SubjectKind {
    pub fn name(self) -> &'static str {
        match self {
            SubjectKind::Legacy => "legacy",
            SubjectKind::Consumer => "consumer",
        }
    }
}

impl fmt::Display for SubjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SubjectKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "legacy" => Ok(SubjectKind::Legacy),
            "consumer" => Ok(SubjectKind::Consumer),
            other => Err(format!(
                "unknown subject `{other}`; expected legacy or consumer"
            )),
        }
    }
}

/// One record handed to the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    pub tp: Tp,
    pub offset: i64,
    pub value: String,
}

/// A finished commit, reported when the application's callback runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitCompletion {
    /// The id the application gave `commit_async`.
    pub id: u64,
    /// `None` on success, else the error (Kafka error name or short text).
    pub error: Option<String>,
}

/// An error a subject call returned to the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectError(pub String);

impl fmt::Display for SubjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the application's `ConsumerRebalanceListener` does. The subject runs it where its
/// design runs callbacks (inside `poll` for both the classic consumer and ours) and records
/// `CallbackStart` / `CallbackEnd` around it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenerBehaviour {
    /// Virtual time `onPartitionsRevoked` / `onPartitionsLost` take (blocking work).
    pub revoked_ms: u64,
    /// Virtual time `onPartitionsAssigned` takes.
    pub assigned_ms: u64,
    /// `wakeup()` is called (as from another thread) while `onPartitionsAssigned` runs, halfway
    /// through it (KAFKA-18160).
    pub wakeup_in_assigned: bool,
    /// The listener call with this index (0 = the first after `subscribe`) panics once its work
    /// is done, as a listener that throws. Java's consumer goes on with the rebalance and
    /// rethrows from `poll`; ours reports `Error::RebalanceCallback` from `poll`. Our consumer's
    /// subject only: the legacy model's listeners do not fail (no scenario of the old design
    /// needs it).
    pub panic_on_call: Option<u32>,
}

/// How often a subject's own loops turned so far: a busy loop shows as a rate far above what
/// the traffic explains (KAFKA-20426, KAFKA-14729).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopCounters {
    /// Iterations of the background (network) loop.
    pub background: u64,
    /// Turns of the application side's wait inside `poll`.
    pub poll: u64,
    /// Group membership and coordinator discovery requests sent (request storms).
    pub group_requests: u64,
    /// Metadata and offset lookup requests sent.
    pub lookup_requests: u64,
}

/// What a subject is built from.
#[derive(Debug, Clone)]
pub struct SubjectContext {
    pub config: ConsumerConfig,
    /// Records as this subject.
    pub recorder: SubjectRecorder,
    /// Virtual time zero of the run: history times are `now - started`.
    pub started: Instant,
}

impl SubjectContext {
    /// Virtual milliseconds since the run started.
    pub fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Records `event` now.
    pub fn record(&self, event: Event) {
        self.recorder.record(self.now_ms(), event);
    }
}

/// A consumer the runner can drive. Methods mirror `KafkaConsumer`'s.
pub trait Subject: Send {
    /// `assign(partitions)`: manual assignment.
    fn assign(&mut self, partitions: Vec<Tp>) -> impl Future<Output = ()> + Send;
    /// `subscribe(topics, listener)`: group management; the subject records the
    /// `Subscribe` event, and later `Assignment` and callback events as its group protocol
    /// moves partitions.
    fn subscribe(
        &mut self,
        topics: Vec<String>,
        listener: ListenerBehaviour,
    ) -> impl Future<Output = ()> + Send;
    /// `subscribe(Pattern, listener)`: group management over every topic whose whole name
    /// matches `pattern`, re-evaluated as metadata changes; records `Subscribe` with no topics.
    fn subscribe_pattern(
        &mut self,
        pattern: String,
        listener: ListenerBehaviour,
    ) -> impl Future<Output = ()> + Send;
    /// `unsubscribe()`: leaves the group (or drops a subscription that never joined). The
    /// default, for a model without it, only notes the call: its next `subscribe` replaces the
    /// subscription, as Java's does.
    fn unsubscribe(&mut self) -> impl Future<Output = ()> + Send {
        async {}
    }
    /// `poll(timeout)`: the records of one poll.
    fn poll(
        &mut self,
        timeout: Duration,
    ) -> impl Future<Output = Result<Vec<Delivered>, SubjectError>> + Send;
    /// `commitAsync(offsets, callback)`; the completion is reported later by
    /// [`Subject::take_completed_commits`], when the callback would run.
    fn commit_async(&mut self, id: u64, offsets: Vec<(Tp, i64)>)
        -> impl Future<Output = ()> + Send;
    /// `commitSync(offsets, timeout)`: returns when the commit is done (or failed, or timed
    /// out); callbacks of earlier `commitAsync`s that ran meanwhile are reported by
    /// [`Subject::take_completed_commits`] afterwards.
    fn commit_sync(
        &mut self,
        offsets: Vec<(Tp, i64)>,
        timeout: Duration,
    ) -> impl Future<Output = Result<(), SubjectError>> + Send;
    /// `close(timeout)`.
    fn close(&mut self, timeout: Duration)
        -> impl Future<Output = Result<(), SubjectError>> + Send;
    /// Commit callbacks that ran since the last call, in the order they ran.
    fn take_completed_commits(&mut self) -> impl Future<Output = Vec<CommitCompletion>> + Send;
    /// `seek` / `seekToBeginning` / `seekToEnd` of one assigned partition. A subject that
    /// cannot seek refuses (the legacy model: its positions come from committed offsets or
    /// offset 0, without ListOffsets).
    fn seek(
        &mut self,
        tp: Tp,
        to: crate::app::SeekTo,
    ) -> impl Future<Output = Result<(), SubjectError>> + Send {
        let _ = (tp, to);
        async {
            Err(SubjectError(
                "seek is not modelled by this subject".to_owned(),
            ))
        }
    }
    /// `position(tp, timeout)`: the next offset to consume, once any lookup it needs is done.
    fn position(
        &mut self,
        tp: Tp,
        timeout: Duration,
    ) -> impl Future<Output = Result<i64, SubjectError>> + Send {
        let _ = (tp, timeout);
        async {
            Err(SubjectError(
                "position is not modelled by this subject".to_owned(),
            ))
        }
    }
    /// One record taken by `recv()` (`stream`: the next item of `stream()`), waited for up to
    /// `timeout`. One call per take: a rebalance callback the next call runs comes after this
    /// record in the history, as it did in the consumer. A subject without them polls.
    fn take_one(
        &mut self,
        timeout: Duration,
        stream: bool,
    ) -> impl Future<Output = Result<Vec<Delivered>, SubjectError>> + Send {
        let _ = stream;
        self.poll(timeout)
    }
    /// `pause` (`paused`) or `resume` of assigned partitions.
    fn set_paused(
        &mut self,
        partitions: Vec<Tp>,
        paused: bool,
    ) -> impl Future<Output = Result<(), SubjectError>> + Send {
        let _ = (partitions, paused);
        async {
            Err(SubjectError(
                "pause is not modelled by this subject".to_owned(),
            ))
        }
    }
    /// The reset error (`OFFSET_OUT_OF_RANGE`, `LOG_TRUNCATION`) the last failed take of
    /// records carried, with the partitions and offsets it named; taken once.
    fn take_reset_error(&mut self) -> Option<(String, Vec<(Tp, i64)>)> {
        None
    }
    /// The subject's loop counters, if it keeps them.
    fn loop_counters(&self) -> Option<LoopCounters> {
        None
    }
}
