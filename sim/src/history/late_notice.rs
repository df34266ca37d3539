//! Assignments a member's application hears of only after the member is out of the group.
//!
//! A KIP-848 member reconciles a new assignment in its background thread, marks the added
//! partitions as awaiting their `onPartitionsAssigned` callback (no fetching, no positions
//! until it ran: `AbstractMembershipManager.updateSubscriptionAwaitingCallback`) and queues
//! that callback for the application's next `poll`. If the member then leaves on an expired
//! poll timer or is fenced before the application polls again, it releases everything it holds,
//! the pending partitions included, through `onPartitionsLost`
//! (`transitionToStale` / `transitionToFenced` → `signalPartitionsLost(subscriptions.
//! assignedPartitions())`), queued behind the first. The coordinator, meanwhile, has given the
//! partitions to someone else. So the application runs `onPartitionsAssigned(P)` for partitions
//! another member already owns, then at once `onPartitionsLost(P)` — Java's consumer does the
//! same, and the window can hold nothing: the partitions never became fetchable.
//!
//! Such a period is a *late notice*, not an ownership: [`History::late_assignment_notices`]
//! names the periods that are, on observed facts only, and the ownership checkers leave them
//! out. A period qualifies when all of these hold:
//!
//! - the member was out of the group when the period opened: an observed fencing of it
//!   ([`crate::history::Fence`]: expelled, a fencing error, or its own leave) came before the
//!   period, and no successful `ConsumerGroupHeartbeat` or `JoinGroup` answer with a generation
//!   (member epoch) of 1 or more — a rejoin — came between that fencing and the period;
//! - the application heard of the assignment with no generation: the `Assignment` that opened
//!   the period carries generation (member epoch) -1, the member's state once it left. An
//!   assignment heard with a generation was heard by a member of the group, however late (the
//!   legacy model's KAFKA-4160 stall: a 12 s `onPartitionsAssigned` while the coordinator moves
//!   the partitions on), and stays an ownership;
//! - the period ended in `onPartitionsLost`;
//! - nothing happened to the partition inside it: no record of it delivered to the member, no
//!   commit of it requested by the member.
//!
//! Anything more — a record delivered, a commit, a revocation instead of a loss, a rejoin in
//! between — keeps the period an ownership, judged as any other.

use std::collections::BTreeSet;

use super::event::{Event, Tp};
use super::fence::Fence;
use super::ownership::{OwnershipEnd, OwnershipPeriod};
use super::snapshot::History;
use super::Entry;

/// A period named by who, which partition and the entry that opened it.
pub type PeriodKey = (String, Tp, u64);

impl History {
    /// The managed ownership periods that are late notices of an assignment the member had
    /// already given up (see the module doc), as `(subject, tp, start_seq)`.
    pub fn late_assignment_notices(&self) -> BTreeSet<PeriodKey> {
        let fences = self.fences();
        self.ownership_periods()
            .into_iter()
            .filter(|p| self.is_late_notice(p, &fences))
            .map(|p| (p.subject, p.tp, p.start_seq))
            .collect()
    }

    /// Whether `p`, one of this history's ownership periods, is a late notice; `fences` are
    /// [`History::fences`], for a caller that has them already.
    pub fn is_late_notice(&self, p: &OwnershipPeriod, fences: &[Fence]) -> bool {
        p.managed
            && p.end == Some(OwnershipEnd::Lost)
            && self.heard_without_generation(p)
            && self.out_of_group_at_start(p, fences)
            && self.untouched(p)
    }

    /// Whether the assignment that opened `p` reached the application without a generation.
    fn heard_without_generation(&self, p: &OwnershipPeriod) -> bool {
        matches!(
            self.entries()[seq_index(p.start_seq)].event,
            Event::Assignment { generation, .. } if generation < 0
        )
    }

    /// Whether the last observed fencing of `p`'s member before `p` opened was not followed by
    /// a rejoin before it.
    fn out_of_group_at_start(&self, p: &OwnershipPeriod, fences: &[Fence]) -> bool {
        let Some(fence) = fences
            .iter()
            .filter(|f| f.subject == p.subject && f.seq < p.start_seq)
            .max_by_key(|f| f.seq)
        else {
            return false;
        };
        !self
            .between(fence.seq, p.start_seq)
            .iter()
            .any(|e| e.subject == p.subject && is_rejoin_answer(&e.event))
    }

    /// Whether no record of `p`'s partition reached its member and no commit of it was asked
    /// for inside `p`.
    fn untouched(&self, p: &OwnershipPeriod) -> bool {
        let end_seq = p.end_seq.unwrap_or(self.entries().len() as u64);
        !self.between(p.start_seq, end_seq).iter().any(|e| {
            e.subject == p.subject
                && match &e.event {
                    Event::Delivered { tp, .. } => *tp == p.tp,
                    Event::CommitRequested { offsets, .. } => {
                        offsets.iter().any(|(tp, _)| *tp == p.tp)
                    }
                    _ => false,
                }
        })
    }

    /// The entries strictly after `from_seq` and strictly before `to_seq` (`seq` is the index).
    fn between(&self, from_seq: u64, to_seq: u64) -> &[Entry] {
        let entries = self.entries();
        let to = seq_index(to_seq).min(entries.len());
        &entries[(seq_index(from_seq) + 1).min(to)..to]
    }
}

fn seq_index(seq: u64) -> usize {
    usize::try_from(seq).unwrap_or(usize::MAX)
}

/// A successful answer that makes the member a member again (KIP-848: a heartbeat answered
/// with a member epoch; classic: a JoinGroup answered with a generation).
fn is_rejoin_answer(event: &Event) -> bool {
    matches!(
        event,
        Event::Response { api, error: None, generation: Some(g), .. }
            if *g >= 1 && (api == "ConsumerGroupHeartbeat" || api == "JoinGroup")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::testkit::*;

    fn left() -> Event {
        Event::Leave {
            reason: "heartbeat epoch -1".into(),
        }
    }

    fn heartbeat_answer(epoch: i32) -> Event {
        Event::Response {
            api: "ConsumerGroupHeartbeat".into(),
            correlation: 9,
            node: "coordinator".into(),
            error: None,
            member_id: Some("m0".into()),
            generation: Some(epoch),
        }
    }

    /// family-zombie seed 1034: c0 left at 20 (its poll timer expired with `t-0`'s assigned
    /// callback queued), c1 got `t-0` at 22, c0's application heard assigned then lost at 30;
    /// `between` is added to c0's history at 30 between the two.
    fn told_late(before: Vec<(u64, &'static str, Event)>, between: Option<Event>) -> History {
        let mut h = vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (1, "c0", assigned(5, &[1])),
            (20, "c0", left()),
            (22, "c1", assigned(6, &[0])),
            (30, "c0", assigned(-1, &[0])),
        ];
        h.extend(before);
        h.extend(between.map(|e| (30, "c0", e)));
        h.push((30, "c0", lost(-1, &[0, 1])));
        h.sort_by_key(|(at, ..)| *at);
        history(h)
    }

    fn late(h: &History) -> Vec<(String, Tp)> {
        h.late_assignment_notices()
            .into_iter()
            .map(|(subject, tp, _)| (subject, tp))
            .collect()
    }

    #[test]
    fn an_assignment_heard_after_leaving_and_then_lost_is_a_late_notice() {
        assert_eq!(
            late(&told_late(Vec::new(), None)),
            vec![("c0".to_string(), tp(0))]
        );
    }

    #[test]
    fn a_rejoin_before_the_notice_makes_it_an_ownership() {
        let rejoined = vec![(25, "c0", heartbeat_answer(7))];
        assert!(late(&told_late(rejoined, None)).is_empty());
        // The leave heartbeat's own answer (epoch -1) is no rejoin.
        let leave_answer = vec![(21, "c0", heartbeat_answer(-1))];
        assert_eq!(late(&told_late(leave_answer, None)).len(), 1);
    }

    #[test]
    fn a_delivery_or_a_commit_inside_makes_it_an_ownership() {
        for between in [delivered(0, 3), commit(1, 0, 4)] {
            assert!(late(&told_late(Vec::new(), Some(between))).is_empty());
        }
        // Another partition's record is not this one's.
        assert_eq!(late(&told_late(Vec::new(), Some(delivered(1, 3)))).len(), 1);
    }

    /// kafka-4160 on the legacy model: c0 is expelled, rejoins (its JoinGroup answer not
    /// recorded), is assigned `t-0` at generation 3 and stalls in `onPartitionsAssigned` while
    /// the coordinator gives `t-0` to c1; then it loses it. Heard with a generation: an
    /// ownership, whatever else is (not) observed.
    #[test]
    fn an_assignment_heard_with_a_generation_is_an_ownership() {
        let stalled = history(vec![
            (0, "c0", start()),
            (0, "c1", start()),
            (15, "c0", left()),
            (16, "c0", assigned(3, &[0])),
            (26, "c1", assigned(4, &[0])),
            (28, "c0", lost(-1, &[0])),
        ]);
        assert!(late(&stalled).is_empty());
    }

    #[test]
    fn without_a_fencing_before_it_or_ending_otherwise_it_is_an_ownership() {
        // Heard without a generation, lost untouched, but no fencing of it was ever observed.
        let never_left = history(vec![
            (0, "c0", start()),
            (1, "c0", assigned(5, &[1])),
            (30, "c0", assigned(-1, &[0])),
            (31, "c0", lost(-1, &[0, 1])),
        ]);
        assert!(late(&never_left).is_empty());
        let revoked_after_leaving = history(vec![
            (0, "c0", start()),
            (20, "c0", left()),
            (30, "c0", assigned(-1, &[0])),
            (31, "c0", revoked(-1, &[0])),
        ]);
        assert!(late(&revoked_after_leaving).is_empty());
    }
}
