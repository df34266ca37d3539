//! The application's `seek`, `seek_to_beginning` and `seek_to_end` applied to one partition
//! (Java's `SubscriptionState.seekUnvalidated` / `requestOffsetReset` as `seek*` calls them).
//!
//! A seek always starts a new fetch-state instance
//! ([`SubscriptionState::seek_to_state`]): whatever lookup the consumer had under way for the
//! partition — an automatic reset's ListOffsets, a validation's OffsetForLeaderEpoch, the
//! committed-offset OffsetFetch, an earlier seek's ListOffsets — is for a state the user has
//! left, and its answer is dropped when it comes (KAFKA-7703: the user's last seek wins).

use super::events::SeekTarget;
use super::fetch_buffer::{FetchBuffer, FetchPosition};
use super::subscription_state::{FetchState, SubscriptionState};
use crate::config::AutoOffsetReset;
use crate::types::TopicPartition;

/// Seeks an assigned partition (no-op if unassigned: the caller checks assignment first, so
/// it can refuse the whole call). `leader_epoch` is the partition leader's current epoch from
/// metadata, if known.
pub(crate) fn seek_partition(
    subscriptions: &mut SubscriptionState,
    buffer: &FetchBuffer,
    tp: &TopicPartition,
    target: &SeekTarget,
    leader_epoch: Option<i32>,
) {
    match target {
        SeekTarget::Offset(offset) => {
            // Drops data fetched for the old position, buffered, in flight or held for `recv`.
            buffer.seek(
                tp,
                FetchPosition {
                    offset: offset.offset,
                    offset_epoch: offset.leader_epoch,
                    current_leader_epoch: leader_epoch,
                },
            );
            // With the epoch of the record before it, the position is checked for log
            // truncation first (KIP-320); without, it is trusted.
            let state = if offset.leader_epoch.is_some() {
                FetchState::AwaitingValidation
            } else {
                FetchState::Fetching
            };
            tracing::info!(partition = %tp, offset = offset.offset, "seek");
            subscriptions.seek_to_state(tp, state);
        }
        SeekTarget::Beginning | SeekTarget::End => {
            let strategy = if *target == SeekTarget::Beginning {
                AutoOffsetReset::Earliest
            } else {
                AutoOffsetReset::Latest
            };
            tracing::info!(partition = %tp, ?strategy, "seek to reset");
            buffer.seek_to_reset(tp);
            subscriptions.seek_to_state(tp, FetchState::AwaitingReset(strategy));
        }
    }
}
