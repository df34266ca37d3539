//! The observable events of a run, as plain data.
//!
//! Every field is something a test subject (our consumer, a model of the legacy consumer, a
//! producer, the fault runner) can see and report on its own: no payloads, no task ids, no
//! ports. Times are virtual milliseconds since the simulation started, supplied by the caller.

use std::fmt;

/// A topic partition. Renders the way Kafka logs it: `topic-3`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tp {
    pub topic: String,
    pub partition: i32,
}

impl Tp {
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for Tp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// Which rebalance listener method a callback event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CallbackKind {
    /// `onPartitionsRevoked`: the member gives partitions back in an orderly way.
    Revoked,
    /// `onPartitionsAssigned`.
    Assigned,
    /// `onPartitionsLost`: the member learned it no longer owns them (fenced, session expired).
    Lost,
}

impl fmt::Display for CallbackKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CallbackKind::Revoked => "revoked",
            CallbackKind::Assigned => "assigned",
            CallbackKind::Lost => "lost",
        })
    }
}

/// How a commit was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommitMode {
    Sync,
    Async,
    /// Auto-commit (periodic, before revocation, or on close).
    Auto,
    /// An auto-commit that reached the coordinator on a connection its client had already
    /// replaced: the request timed out, the client closed the connection and committed newer
    /// offsets on a new one, and TCP still delivered the old bytes after the network healed
    /// (a closed socket's send queue is still transmitted; madsim's clogged links do the same).
    /// The coordinator cannot tell it from a fresh commit of the same generation, so it may
    /// move the committed offset back; no client can prevent that.
    Abandoned,
}

impl fmt::Display for CommitMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CommitMode::Sync => "sync",
            CommitMode::Async => "async",
            CommitMode::Auto => "auto",
            CommitMode::Abandoned => "abandoned",
        })
    }
}

/// One observable event. See [`super::Entry`] for who and when.
///
/// `generation` is the classic protocol's generation id or the KIP-848 member epoch, whichever
/// the subject speaks. Errors are Kafka error-code names (`REBALANCE_IN_PROGRESS`) or short
/// strings; `None` means success.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A member process started (first time or after a crash). `group` is its `group.id`,
    /// empty for none; checkers compare deliveries and commits within one group.
    MemberStart { group: String },
    /// The member process died without any cleanup (kill -9, node crash).
    MemberCrash,
    /// The member process was restarted after a crash (it will record a new `MemberStart`
    /// if its group changes; the group is kept otherwise).
    MemberRestart,
    /// `subscribe(topics)`.
    Subscribe { topics: Vec<String> },
    /// `assign(partitions)`: manual assignment, no group management.
    ManualAssign { partitions: Vec<Tp> },
    /// A request sent by the subject (compact summary).
    Request {
        api: String,
        correlation: i32,
        node: String,
        member_id: Option<String>,
        generation: Option<i32>,
    },
    /// A response received by the subject (compact summary).
    Response {
        api: String,
        correlation: i32,
        node: String,
        error: Option<String>,
        member_id: Option<String>,
        generation: Option<i32>,
    },
    /// The member's own view of what it owns changed: after a SyncGroup / heartbeat
    /// assignment (`assigned`), an orderly give-back (`revoked`), or learning it was fenced
    /// (`lost`). Revoked and lost are applied before assigned.
    Assignment {
        generation: i32,
        assigned: Vec<Tp>,
        revoked: Vec<Tp>,
        lost: Vec<Tp>,
    },
    /// The background side asked the application to run a rebalance callback (KIP-848
    /// consumer's `ConsumerRebalanceListenerCallbackNeededEvent`). `id` pairs it with its
    /// completion; any subject-local counter will do.
    CallbackNeeded {
        id: u64,
        kind: CallbackKind,
        partitions: Vec<Tp>,
    },
    /// The application started running a rebalance callback (including the no-op one when no
    /// listener is set). This is the moment the application is told.
    CallbackStart {
        kind: CallbackKind,
        partitions: Vec<Tp>,
    },
    /// The rebalance callback returned (or threw: `error`).
    CallbackEnd {
        kind: CallbackKind,
        partitions: Vec<Tp>,
        error: Option<String>,
    },
    /// The application reported the callback done to the background side.
    CallbackCompleted {
        id: u64,
        kind: CallbackKind,
        error: Option<String>,
    },
    /// `poll(timeout)` was called.
    PollStart { timeout_ms: u64 },
    /// `poll` returned `records` records (or an error).
    PollEnd { records: u64, error: Option<String> },
    /// One record handed to the application.
    Delivered { tp: Tp, offset: i64, value: String },
    /// A commit was requested. Offsets are Kafka's: the next offset to consume.
    CommitRequested {
        id: u64,
        mode: CommitMode,
        generation: Option<i32>,
        offsets: Vec<(Tp, i64)>,
    },
    /// The commit with this id finished (`error: None` = every partition committed).
    CommitCompleted { id: u64, error: Option<String> },
    /// `seek(tp, offset)` by the application.
    Seek { tp: Tp, offset: i64 },
    /// The position was reset by `auto.offset.reset` (`strategy`: earliest, latest, ...).
    PositionReset {
        tp: Tp,
        offset: i64,
        strategy: String,
    },
    /// The member decided to leave the group (LeaveGroup, or a KIP-848 heartbeat with epoch -1).
    Leave { reason: String },
    /// The coordinator removed the member on its own: a deadline passed (its session, a
    /// rejoin, a sync or a revocation). Recorded by the coordinator's side; the member learns
    /// it only from its next answered group request, if one ever gets through.
    Expelled { member_id: String, reason: String },
    /// `close(timeout)` was called.
    CloseStart { timeout_ms: u64 },
    /// `close` returned.
    CloseEnd { error: Option<String> },
    /// A producer send was acknowledged at this offset.
    ProduceAcked { tp: Tp, offset: i64, value: String },
    /// The fault runner applied a fault (its own description).
    Fault { kind: String },
    /// The fault runner healed every fault: liveness clocks start here.
    Healed,
    /// Free text, for traces.
    Note { text: String },
}

fn write_tps(f: &mut fmt::Formatter<'_>, tps: &[Tp]) -> fmt::Result {
    f.write_str("[")?;
    for (i, tp) in tps.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        write!(f, "{tp}")?;
    }
    f.write_str("]")
}

fn write_result(f: &mut fmt::Formatter<'_>, error: &Option<String>) -> fmt::Result {
    match error {
        None => f.write_str("ok"),
        Some(e) => write!(f, "err={e}"),
    }
}

fn write_opt<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    v: &Option<T>,
) -> fmt::Result {
    match v {
        None => Ok(()),
        Some(v) => write!(f, " {name}={v}"),
    }
}

/// The stable one-line rendering used in golden traces. Change it only on purpose: every
/// snapshot depends on it.
impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::MemberStart { group } => write!(f, "member-start group={group}"),
            Event::MemberCrash => f.write_str("crash"),
            Event::MemberRestart => f.write_str("restart"),
            Event::Subscribe { topics } => write!(f, "subscribe [{}]", topics.join(",")),
            Event::ManualAssign { partitions } => {
                f.write_str("manual-assign ")?;
                write_tps(f, partitions)
            }
            Event::Request {
                api,
                correlation,
                node,
                member_id,
                generation,
            } => {
                write!(f, "-> {api}#{correlation} {node}")?;
                write_opt(f, "member", member_id)?;
                write_opt(f, "gen", generation)
            }
            Event::Response {
                api,
                correlation,
                node,
                error,
                member_id,
                generation,
            } => {
                write!(f, "<- {api}#{correlation} {node} ")?;
                write_result(f, error)?;
                write_opt(f, "member", member_id)?;
                write_opt(f, "gen", generation)
            }
            Event::Assignment {
                generation,
                assigned,
                revoked,
                lost,
            } => {
                write!(f, "assignment gen={generation}")?;
                for (name, set) in [("revoked", revoked), ("lost", lost), ("assigned", assigned)] {
                    if !set.is_empty() {
                        write!(f, " {name}=")?;
                        write_tps(f, set)?;
                    }
                }
                Ok(())
            }
            Event::CallbackNeeded {
                id,
                kind,
                partitions,
            } => {
                write!(f, "callback-needed#{id} {kind} ")?;
                write_tps(f, partitions)
            }
            Event::CallbackStart { kind, partitions } => {
                write!(f, "callback-start {kind} ")?;
                write_tps(f, partitions)
            }
            Event::CallbackEnd {
                kind,
                partitions,
                error,
            } => {
                write!(f, "callback-end {kind} ")?;
                write_tps(f, partitions)?;
                f.write_str(" ")?;
                write_result(f, error)
            }
            Event::CallbackCompleted { id, kind, error } => {
                write!(f, "callback-completed#{id} {kind} ")?;
                write_result(f, error)
            }
            Event::PollStart { timeout_ms } => write!(f, "poll-start timeout={timeout_ms}ms"),
            Event::PollEnd { records, error } => {
                write!(f, "poll-end records={records}")?;
                write_opt(f, "err", error)
            }
            Event::Delivered { tp, offset, value } => write!(f, "deliver {tp}@{offset} {value}"),
            Event::CommitRequested {
                id,
                mode,
                generation,
                offsets,
            } => {
                write!(f, "commit#{id} {mode}")?;
                write_opt(f, "gen", generation)?;
                f.write_str(" {")?;
                for (i, (tp, offset)) in offsets.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{tp}:{offset}")?;
                }
                f.write_str("}")
            }
            Event::CommitCompleted { id, error } => {
                write!(f, "commit-done#{id} ")?;
                write_result(f, error)
            }
            Event::Seek { tp, offset } => write!(f, "seek {tp}@{offset}"),
            Event::PositionReset {
                tp,
                offset,
                strategy,
            } => write!(f, "reset {tp}@{offset} {strategy}"),
            Event::Leave { reason } => write!(f, "leave reason={reason}"),
            Event::Expelled { member_id, reason } => {
                write!(
                    f,
                    "expelled by the coordinator member={member_id}: {reason}"
                )
            }
            Event::CloseStart { timeout_ms } => write!(f, "close-start timeout={timeout_ms}ms"),
            Event::CloseEnd { error } => {
                f.write_str("close-end ")?;
                write_result(f, error)
            }
            Event::ProduceAcked { tp, offset, value } => {
                write!(f, "produce-ack {tp}@{offset} {value}")
            }
            Event::Fault { kind } => write!(f, "fault {kind}"),
            Event::Healed => f.write_str("healed"),
            Event::Note { text } => write!(f, "note {text}"),
        }
    }
}
