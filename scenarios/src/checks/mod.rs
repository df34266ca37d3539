//! Scenario-specific checkers, over the same `sim::history::History` as `sim::check`'s.

mod auto_commit_bound;
mod barrier;
mod close_commits;
mod handover;
mod heartbeat_resumes;
mod listener_errors;
pub mod loop_rate;
mod no_loss;
mod no_lost;
mod pattern_coverage;
mod poll_recovers;
mod rediscovery;
mod revocation_finishes;
mod seek_wins;
mod stale_rejoin;
mod until_close;
pub mod wakeups;
mod zombie_commits;

pub use auto_commit_bound::AutoCommitBound;
pub use barrier::CommitCallbacksBeforeSync;
pub use close_commits::AsyncCommitsBeforeClose;
pub use handover::HandoverWithoutRedelivery;
pub use heartbeat_resumes::HeartbeatResumes;
pub use listener_errors::ListenerErrorsSurface;
pub use loop_rate::LoopRate;
pub use no_loss::NoSpuriousLoss;
pub use no_lost::NoPartitionsLost;
pub use pattern_coverage::PatternCoverage;
pub use poll_recovers::PollRecovers;
pub use rediscovery::CoordinatorRediscovery;
pub use revocation_finishes::RevocationFinishes;
pub use seek_wins::UserSeekWins;
pub use stale_rejoin::StaleMemberRejoin;
pub use until_close::{UntilClose, UntilFinalClose};
pub use wakeups::AppWakeups;
pub use zombie_commits::ZombieCommitsRefused;
