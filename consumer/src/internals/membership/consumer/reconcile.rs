//! Reconciliation (Java's `maybeReconcile`, `revokeAndAssign`): from the target assignment
//! the coordinator sent to the one the member owns, strictly in order — resolve names,
//! auto-commit, stop fetching revoked partitions, `on_partitions_revoked`, assign (not yet
//! fetchable), `on_partitions_assigned`, enable, acknowledge. Only one at a time; each step
//! after a wait checks the member is still the one that started it.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::state::MemberState;
use super::{ConsumerMembershipManager, LocalAssignment, ReconcileStep, Reconciliation};
use crate::error::Error;
use crate::internals::commit_request_manager::CommitRequestManager;
use crate::internals::context::ManagerContext;
use crate::internals::events::RebalanceCallback;
use crate::internals::membership::{set_assignment, stop_fetching};
use crate::internals::requests::PollResult;
use crate::rt::Duration;
use crate::types::TopicPartition;

impl ConsumerMembershipManager {
    /// Whether the reconciliation under way was overtaken (fenced, rejoined, leaving, fatal).
    fn reconciliation_aborted(&self) -> bool {
        self.state != MemberState::Reconciling
            || self
                .reconciliation
                .as_ref()
                .is_none_or(|r| r.incarnation != self.incarnation)
    }

    pub(super) fn maybe_reconcile(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        commit: &mut CommitRequestManager,
        result: &mut PollResult,
    ) {
        if let Some(r) = &self.reconciliation {
            if let ReconcileStep::Commit {
                completion,
                receiver,
                deadline,
            } = &r.step
            {
                let done = receiver.borrow().is_some();
                if !done && ctx.now < *deadline && !self.reconciliation_aborted() {
                    result.wake_at(*deadline);
                    return;
                }
                if !done {
                    completion.complete(Err(Error::Timeout {
                        operation: "auto-commit before revocation",
                        timeout_ms: self.rebalance_timeout_ms,
                    }));
                    tracing::warn!("auto-commit before revocation did not finish in time");
                } else if let Some(Err(error)) = receiver.borrow().as_ref() {
                    // Java logs it and reconciles anyway.
                    tracing::warn!(%error, "auto-commit before revocation failed");
                }
                self.after_commit(ctx);
            }
            return;
        }
        if self.state != MemberState::Reconciling || self.current == self.target {
            return;
        }
        self.start_reconciliation(ctx, commit, result);
    }

    fn resolve(&mut self, ctx: &mut ManagerContext<'_>) -> (BTreeMap<Uuid, BTreeSet<i32>>, bool) {
        let mut resolved = BTreeMap::new();
        let mut unresolved = false;
        for (id, partitions) in &self.target.partitions {
            let name = ctx
                .metadata
                .topic_name(*id)
                .map(str::to_owned)
                .or_else(|| self.topic_names.get(id).cloned());
            match name {
                Some(name) => {
                    self.topic_names.insert(*id, name);
                    resolved.insert(*id, partitions.clone());
                }
                None => unresolved = true,
            }
        }
        if unresolved {
            tracing::debug!("assigned topic ids unknown to metadata: refreshing it");
            ctx.request_metadata_refresh();
        }
        (resolved, unresolved)
    }

    fn names(&self, partitions: &BTreeMap<Uuid, BTreeSet<i32>>) -> BTreeSet<TopicPartition> {
        partitions
            .iter()
            .filter_map(|(id, ps)| Some((self.topic_names.get(id)?, ps)))
            .flat_map(|(name, ps)| ps.iter().map(|&p| TopicPartition::new(name.as_str(), p)))
            .collect()
    }

    fn start_reconciliation(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        commit: &mut CommitRequestManager,
        result: &mut PollResult,
    ) {
        self.reconciliation_started_at.get_or_insert(ctx.now);
        let (partitions, unresolved) = self.resolve(ctx);
        let resolved = LocalAssignment {
            local_epoch: self.target.local_epoch,
            partitions,
        };
        if unresolved {
            if resolved == self.current {
                // Already acknowledged what can be resolved: wait for metadata.
                return;
            }
            if !self.current.is_none() && resolved.partitions == self.current.partitions {
                // KAFKA-16198: acknowledge the resolvable part, keep the rest as target.
                self.current = resolved;
                self.transition(ctx, MemberState::Acknowledging);
                return;
            }
        }
        let assigned = self.names(&resolved.partitions);
        let owned = ctx.subscriptions.assigned();
        let added: BTreeSet<TopicPartition> = assigned.difference(&owned).cloned().collect();
        let revoked: BTreeSet<TopicPartition> = owned.difference(&assigned).cloned().collect();
        // Java's `maybeReconcile(canCommit)`: a reconciliation that commits or revokes starts
        // right after the application polled, when it has processed what it was given and is
        // not collecting records (KAFKA-14196); one that only adds partitions need not wait.
        if (self.auto_commit || !revoked.is_empty()) && !self.poll_gate.open(ctx) {
            return;
        }
        // Fetching stops before the commit goes out (Java's
        // `markPendingRevocationToPauseFetching`): nothing the commit leaves out is handed to
        // the application afterwards.
        if !revoked.is_empty() {
            stop_fetching(ctx, &revoked);
        }
        tracing::info!(
            local_epoch = resolved.local_epoch,
            ?assigned,
            ?added,
            ?revoked,
            "reconciling the assignment"
        );
        let deadline = ctx.now + Duration::from_millis(self.rebalance_timeout_ms);
        let commit_step = if self.auto_commit {
            commit.commit_before_revocation(ctx, deadline)
        } else {
            None
        };
        let has_commit = commit_step.is_some();
        let step = match commit_step {
            Some((completion, receiver)) => ReconcileStep::Commit {
                completion,
                receiver,
                deadline,
            },
            // Placeholder until the next step is chosen below.
            None => ReconcileStep::Revoke { id: 0 },
        };
        self.reconciliation = Some(Reconciliation {
            incarnation: self.incarnation,
            resolved,
            assigned,
            revoked,
            added,
            step,
        });
        if has_commit {
            result.wake_at(deadline);
        } else {
            self.after_commit(ctx);
        }
    }

    /// After the auto-commit (done, failed or timed out): revoke, or go on to assign.
    fn after_commit(&mut self, ctx: &mut ManagerContext<'_>) {
        if self.reconciliation_aborted() {
            tracing::info!("reconciliation abandoned: the member left, rejoined or was fenced");
            self.reconciliation = None;
            return;
        }
        let Some(r) = &self.reconciliation else {
            return;
        };
        if r.revoked.is_empty() {
            return self.start_assign(ctx);
        }
        let revoked = r.revoked.clone();
        let after: BTreeSet<TopicPartition> = ctx
            .subscriptions
            .assigned()
            .difference(&revoked)
            .cloned()
            .collect();
        stop_fetching(ctx, &revoked);
        let id = self
            .listener_calls
            .request(ctx, RebalanceCallback::Revoked, revoked, after);
        if let Some(r) = &mut self.reconciliation {
            r.step = ReconcileStep::Revoke { id };
        }
    }

    /// New partitions assigned but not fetchable until `on_partitions_assigned` has run
    /// (called even with nothing new, KAFKA-16312).
    ///
    /// Unless a newer target has taken one of them away while this reconciliation waited (for
    /// its commit, for the revoke callback): the coordinator may already have given it to
    /// another member (a heartbeat that reported the member's owned partitions before it knew
    /// this target let it go at once). Java's consumer assigns it anyway and revokes it in the
    /// next reconciliation, so two members own it at once for that long; here the stale
    /// reconciliation ends after its revocations and the next one starts from the newest
    /// target.
    fn start_assign(&mut self, ctx: &mut ManagerContext<'_>) {
        let Some(r) = &self.reconciliation else {
            return;
        };
        if r.resolved.local_epoch != self.target.local_epoch {
            let target = self.names(&self.target.partitions);
            if !r.added.is_subset(&target) {
                tracing::info!(
                    local_epoch = r.resolved.local_epoch,
                    newest_local_epoch = self.target.local_epoch,
                    "reconciliation superseded before assigning: a newer target took back \
                     partitions it would add"
                );
                self.reconciliation = None;
                return;
            }
        }
        let (assigned, added) = (r.assigned.clone(), r.added.clone());
        set_assignment(ctx, &assigned, &added);
        let id = self
            .listener_calls
            .request(ctx, RebalanceCallback::Assigned, added, assigned);
        if let Some(r) = &mut self.reconciliation {
            r.step = ReconcileStep::Assign { id };
        }
    }

    pub(super) fn on_reconcile_callback_completed(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        id: u64,
    ) {
        let Some(r) = &self.reconciliation else {
            tracing::debug!(id, "callback completion for an abandoned step");
            return;
        };
        match r.step {
            ReconcileStep::Revoke { id: waiting } if waiting == id => {
                // The application was told: the revoked partitions are gone whatever happens
                // next.
                let remaining: BTreeSet<TopicPartition> = ctx
                    .subscriptions
                    .assigned()
                    .difference(&r.revoked)
                    .cloned()
                    .collect();
                set_assignment(ctx, &remaining, &BTreeSet::new());
                if self.reconciliation_aborted() {
                    tracing::info!("reconciliation abandoned after revoking");
                    self.reconciliation = None;
                    return;
                }
                self.start_assign(ctx);
            }
            ReconcileStep::Assign { id: waiting } if waiting == id => {
                let Some(r) = self.reconciliation.take() else {
                    return;
                };
                if self.state != MemberState::Reconciling || r.incarnation != self.incarnation {
                    tracing::info!("reconciliation abandoned after assigning");
                    return;
                }
                ctx.subscriptions.enable_awaiting_callback(&r.added);
                let took_ms = self
                    .reconciliation_started_at
                    .take()
                    .map_or(0, |at| (ctx.now - at).as_millis());
                self.rebalances.completed += 1;
                self.rebalances.last_ms = u64::try_from(took_ms).unwrap_or(u64::MAX);
                tracing::info!(
                    local_epoch = r.resolved.local_epoch,
                    took_ms,
                    "reconciliation complete"
                );
                self.current = r.resolved;
                self.transition(ctx, MemberState::Acknowledging);
            }
            _ => tracing::debug!(id, "callback completion for an abandoned step"),
        }
    }
}
