//! A consumer dropped without `close`: the background task leaves the group on its own.
//!
//! Java's `KafkaConsumer` does nothing when it is garbage-collected unclosed: the member stays
//! in its group until the coordinator's session timer expires, and its partitions wait that
//! long for a new owner. A Rust value is dropped at a known point, and users expect `Drop` to
//! clean up, but `Drop` cannot await. So the dropping task only closes the event channel; this
//! task, which owns the network, does what `close` would have done to the group — the same
//! leave `close` sends with [`GroupMembershipOperation::Default`], so static members keep
//! Java's close semantics (classic: no LeaveGroup; KIP-848: the heartbeat with epoch -2, the
//! member's place kept for the session timeout) and dynamic members leave (LeaveGroup;
//! KIP-848 heartbeat with epoch -1) — within [`LEAVE_ON_DROP_TIMEOUT`], then it stops.
//!
//! What a drop cannot do that `close` does: no listener runs (no application side is left to
//! run it; the calls are answered here, so the leave is not held up), and nothing is committed
//! (only the application side knows what it processed), so the next owner starts from the
//! last commit. The process must also live long enough: a program that exits right after the
//! drop takes the background thread with it.

use super::*;
use crate::close_options::GroupMembershipOperation;

/// How long a dropped consumer's background task keeps trying to leave its group (find the
/// coordinator, send the leave, read the answer) before it stops anyway. A healthy cluster
/// answers in milliseconds; the bound keeps a consumer dropped during an outage from holding
/// a thread and its connections for long.
pub(crate) const LEAVE_ON_DROP_TIMEOUT: Duration = Duration::from_millis(5_000);

impl ConsumerNetworkThread {
    /// The application side closed the event channel: the consumer was dropped. After `close`
    /// this only stops reading the channel; otherwise it starts the best-effort leave.
    pub(super) fn on_application_dropped(&mut self, now: Instant) {
        self.application_gone = true;
        if self.closing.is_some() {
            return;
        }
        // Listener calls already handed out will never run: answer them, so a rebalance or
        // leave waiting for one goes on.
        for id in std::mem::take(&mut self.outstanding_callbacks) {
            self.process(ApplicationEvent::RebalanceCallbackCompleted { id }, now);
        }
        let deadline = now + LEAVE_ON_DROP_TIMEOUT;
        let in_group =
            self.membership.is_some() && self.subscriptions.has_auto_assigned_partitions();
        let mut leave_waiter = None;
        if in_group && !self.membership.as_ref().is_some_and(Membership::is_leaving) {
            tracing::info!(
                timeout_ms = LEAVE_ON_DROP_TIMEOUT.as_millis(),
                "consumer dropped without close: leaving the group (best effort)"
            );
            let timeout_ms = u64::try_from(LEAVE_ON_DROP_TIMEOUT.as_millis()).unwrap_or(u64::MAX);
            let (completion, waiter) =
                Completion::new("leave group on drop", Some(deadline), timeout_ms);
            leave_waiter = Some(waiter);
            self.reaper.add(&completion);
            let mut effects = Effects::default();
            self.with_ctx(now, &mut effects, |ctx, m| {
                if let Some(membership) = m.membership.as_deref_mut() {
                    membership.leave(ctx, Some(completion), GroupMembershipOperation::Default);
                }
            });
            self.apply(effects, now);
        }
        self.begin_close_by(None, deadline, leave_waiter);
    }
}
