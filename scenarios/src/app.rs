//! What the application around a subject does: how long it polls, how long it spends on each
//! record, and how it commits. The races in the Jira catalogue depend on exactly these choices
//! (KAFKA-13563 needs `commitAsync` after every poll; KAFKA-13310 a slow callback).

/// How the application commits what it consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitPolicy {
    /// `commitAsync(offsets of the records just processed)` after every poll that returned
    /// records: Flink's and many hand-written loops' pattern.
    AsyncEachPoll,
    /// `commitAsync(offsets consumed so far)` every `interval_ms`, driven by an external
    /// trigger rather than the poll loop: Flink's checkpoint commit (FLINK-28060).
    AsyncEvery { interval_ms: u64 },
    /// No application commits: `enable.auto.commit=true` does it.
    Auto,
    /// [`CommitPolicy::AsyncEachPoll`], plus a `commitSync(empty map)` every `barrier_ms` as a
    /// barrier: "every earlier commitAsync's callback has run when it returns".
    AsyncWithSyncBarrier { barrier_ms: u64 },
}

/// The application loop: `poll(poll_timeout_ms)`, process each record, commit, repeat; the
/// per-seed jitter is drawn by the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppBehaviour {
    /// The `poll(Duration)` argument.
    pub poll_timeout_ms: u64,
    /// Virtual time spent on each record; the runner adds up to the same again per seed.
    pub processing_ms_per_record: u64,
    pub commit: CommitPolicy,
    /// The `close(Duration)` argument at the end of the run.
    pub close_timeout_ms: u64,
}

impl Default for AppBehaviour {
    fn default() -> Self {
        Self {
            poll_timeout_ms: 100,
            processing_ms_per_record: 1,
            commit: CommitPolicy::AsyncEachPoll,
            close_timeout_ms: 5_000,
        }
    }
}

/// Where an application's seek goes (`seek`, `seekToBeginning`, `seekToEnd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeekTo {
    Beginning,
    End,
    /// `seek(tp, OffsetAndMetadata(offset, leader_epoch))`: with an epoch the consumer
    /// validates the position first (KIP-320).
    Offset {
        offset: i64,
        leader_epoch: Option<i32>,
    },
}

/// One seek the application makes: before the first `poll` at or after `at_ms`, it seeks `tp`
/// and then, with `position`, asks for its position (which waits for any lookup the seek
/// needs). Without, the next seek follows at once and races this one's lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSeek {
    pub at_ms: u64,
    pub tp: sim::history::Tp,
    pub to: SeekTo,
    pub position: bool,
}

/// The note a subject records when the application calls a seek; [`UserSeek`]s are judged
/// from it ([`crate::checks::UserSeekWins`]).
pub fn seek_note(tp: &sim::history::Tp, to: SeekTo) -> String {
    match to {
        SeekTo::Beginning => format!("user seek {tp} beginning"),
        SeekTo::End => format!("user seek {tp} end"),
        SeekTo::Offset { offset, .. } => format!("user seek {tp} offset {offset}"),
    }
}

/// How the application takes its records: Java's `poll(Duration)` loop, or our consumer's
/// `recv()` / `stream()` (records handed out one by one, held by the consumer between calls;
/// issue #27: a pause must not lose what they hold). A subject without `recv`/`stream` polls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DriveMode {
    #[default]
    Poll,
    Recv,
    Stream,
}

impl DriveMode {
    pub fn name(self) -> &'static str {
        match self {
            DriveMode::Poll => "poll",
            DriveMode::Recv => "recv",
            DriveMode::Stream => "stream",
        }
    }
}

/// One pause the application makes: before the first take of records at or after `at_ms`, it
/// pauses `partitions` (those it owns then), and resumes them `for_ms` later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserPause {
    pub at_ms: u64,
    pub partitions: Vec<sim::history::Tp>,
    pub for_ms: u64,
}
