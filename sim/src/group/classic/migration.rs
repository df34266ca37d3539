//! The classic coordinator's side of online migration: handing a group over to the consumer
//! coordinator (upgrade) and taking one back (downgrade). The conversions themselves live in
//! `crate::group::migration`.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::SyncGroupResponse;

use super::coordinator::ClassicGroupCoordinator;
use super::group::ClassicGroup;
use super::rebalance::join_error;
use super::timers::ClassicTimerKey;

impl ClassicGroupCoordinator {
    /// The group `group_id`, if it exists and has members.
    pub fn non_empty_group(&self, group_id: &str) -> Option<&ClassicGroup> {
        self.groups.get(group_id).filter(|g| !g.members.is_empty())
    }

    /// Takes `group_id` out for an upgrade (`convertToConsumerGroup`'s first steps): every parked
    /// JoinGroup and SyncGroup is answered REBALANCE_IN_PROGRESS (`completeAllJoinFutures`,
    /// `completeAllSyncFutures`), so those members rejoin the group in its new form. The
    /// group's timers stay until [`Self::forget_upgraded_group`]: if the upgrade fails, the
    /// group comes back with [`Self::reattach_group`] and carries on.
    pub fn detach_group_for_upgrade(
        &mut self,
        now_ms: u64,
        group_id: &str,
    ) -> Option<ClassicGroup> {
        self.advance(now_ms);
        self.with_group(group_id, |group, fx| {
            let member_ids: Vec<String> = group.members.keys().cloned().collect();
            for member_id in member_ids {
                if let Some(member) = group.members.get_mut(&member_id) {
                    fx.complete_join(
                        member,
                        join_error(&member_id, ResponseError::RebalanceInProgress),
                    );
                    fx.complete_sync(
                        member,
                        SyncGroupResponse::default()
                            .with_error_code(ResponseError::RebalanceInProgress.code()),
                    );
                }
            }
        })?;
        self.groups.remove(group_id)
    }

    /// Puts back a group whose upgrade was refused after [`Self::detach_group_for_upgrade`].
    pub fn reattach_group(&mut self, group: ClassicGroup) {
        self.groups.insert(group.group_id.clone(), group);
    }

    /// Cancels the timers of a group that became a consumer group.
    pub fn forget_upgraded_group(&mut self, group: &ClassicGroup) {
        for member_id in group.members.keys().chain(&group.pending_join_members) {
            self.timers
                .cancel(&ClassicTimerKey::heartbeat(&group.group_id, member_id));
        }
        self.timers.cancel(&ClassicTimerKey::join(&group.group_id));
        self.timers.cancel(&ClassicTimerKey::sync(&group.group_id));
    }

    /// Installs a group converted from a consumer group (`convertToClassicGroup`): its
    /// `GroupMetadata` record is written, every member's session timer starts now, and, if
    /// `rebalance`, a rebalance begins so the members rejoin and the leader assigns again
    /// (without, the group stays Stable with the assignments it was converted with).
    pub fn adopt_downgraded_group(&mut self, now_ms: u64, group: ClassicGroup, rebalance: bool) {
        self.advance(now_ms);
        let group_id = group.group_id.clone();
        self.groups.insert(group_id.clone(), group);
        self.with_group(&group_id, |group, fx| {
            fx.persist_group(group);
            for member in group.members.values() {
                fx.reschedule_heartbeat(
                    &group.group_id,
                    &member.member_id,
                    member.session_timeout_ms,
                );
            }
            if rebalance {
                fx.prepare_rebalance(group);
            }
        });
    }
}
