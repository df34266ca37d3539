//! The KIP-848 member's state (Java's `MemberState`) and its legal transitions, verbatim from
//! Kafka's table. A transition outside it is a bug in the manager: it is refused and reported.

use crate::internals::membership::state::IllegalTransition;

/// Where a `group.protocol=consumer` member is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemberState {
    /// Not in the group: before subscribing, or after leaving.
    Unsubscribed,
    /// Heartbeating with epoch 0 to join.
    Joining,
    /// A target assignment differs from the current one and is being reconciled.
    Reconciling,
    /// Reconciled: the next heartbeat acknowledges the new assignment.
    Acknowledging,
    /// In the group, owning its target assignment.
    Stable,
    /// The coordinator fenced the member: it loses its partitions and rejoins.
    Fenced,
    /// Leaving: the partitions are being revoked through the listener.
    PrepareLeaving,
    /// Leaving: the leave heartbeat is about to go out.
    Leaving,
    /// A non-recoverable error: the member is out for good.
    Fatal,
    /// Left because the application stayed away from `poll`; rejoins on the next poll.
    Stale,
}

impl MemberState {
    /// The states `next` may be entered from (Java's `previousValidStates`); a state may also
    /// always be re-entered.
    fn valid_previous(next: Self) -> &'static [Self] {
        use MemberState::{
            Acknowledging, Fatal, Fenced, Joining, Leaving, PrepareLeaving, Reconciling, Stable,
            Stale, Unsubscribed,
        };
        match next {
            Stable => &[Joining, Acknowledging, Reconciling],
            Reconciling => &[Stable, Joining, Acknowledging, Reconciling],
            Acknowledging => &[Reconciling],
            Fatal => &[
                Joining,
                Stable,
                Reconciling,
                Acknowledging,
                PrepareLeaving,
                Leaving,
                Unsubscribed,
            ],
            Fenced => &[
                Joining,
                Stable,
                Reconciling,
                Acknowledging,
                PrepareLeaving,
                Leaving,
            ],
            Joining => &[Fenced, Unsubscribed, Stale],
            PrepareLeaving => &[Joining, Stable, Reconciling, Acknowledging, Unsubscribed],
            Leaving => &[PrepareLeaving],
            Unsubscribed => &[PrepareLeaving, Leaving, Fenced],
            Stale => &[Leaving],
        }
    }

    /// Whether `self → next` is legal.
    pub fn can_transition_to(self, next: Self) -> bool {
        self == next || Self::valid_previous(next).contains(&self)
    }

    /// Moves to `next` if legal.
    pub fn transition_to(&mut self, next: Self) -> Result<(), IllegalTransition<Self>> {
        if !self.can_transition_to(next) {
            return Err(IllegalTransition {
                from: *self,
                to: next,
            });
        }
        if *self != next {
            tracing::debug!(from = ?*self, to = ?next, "consumer group member state");
        }
        *self = next;
        Ok(())
    }

    /// Java's `canHandleNewAssignment`: a target assignment from a heartbeat is taken.
    pub fn can_handle_new_assignment(self) -> bool {
        matches!(
            self,
            Self::Stable | Self::Joining | Self::Acknowledging | Self::Reconciling
        )
    }

    /// Java's `isNotInGroup`.
    pub fn is_not_in_group(self) -> bool {
        matches!(
            self,
            Self::Unsubscribed | Self::Fenced | Self::Fatal | Self::Stale
        )
    }

    /// Java's `shouldSkipHeartbeat`.
    pub fn skips_heartbeat(self) -> bool {
        self.is_not_in_group()
    }

    /// Java's `shouldHeartbeatNow`: no waiting for the interval.
    pub fn heartbeats_now(self) -> bool {
        matches!(self, Self::Acknowledging | Self::Leaving | Self::Joining)
    }

    /// Java's `isLeavingGroup`.
    pub fn is_leaving(self) -> bool {
        matches!(self, Self::PrepareLeaving | Self::Leaving)
    }
}

#[cfg(test)]
mod tests {
    use super::MemberState::{self, *};

    const ALL: [MemberState; 10] = [
        Unsubscribed,
        Joining,
        Reconciling,
        Acknowledging,
        Stable,
        Fenced,
        PrepareLeaving,
        Leaving,
        Fatal,
        Stale,
    ];

    /// Kafka's table (kafka-consumer-design.md §1.6), written out pair by pair.
    const LEGAL: &[(MemberState, MemberState)] = &[
        (Joining, Stable),
        (Acknowledging, Stable),
        (Reconciling, Stable),
        (Stable, Reconciling),
        (Joining, Reconciling),
        (Acknowledging, Reconciling),
        (Reconciling, Acknowledging),
        (Joining, Fatal),
        (Stable, Fatal),
        (Reconciling, Fatal),
        (Acknowledging, Fatal),
        (PrepareLeaving, Fatal),
        (Leaving, Fatal),
        (Unsubscribed, Fatal),
        (Joining, Fenced),
        (Stable, Fenced),
        (Reconciling, Fenced),
        (Acknowledging, Fenced),
        (PrepareLeaving, Fenced),
        (Leaving, Fenced),
        (Fenced, Joining),
        (Unsubscribed, Joining),
        (Stale, Joining),
        (Joining, PrepareLeaving),
        (Stable, PrepareLeaving),
        (Reconciling, PrepareLeaving),
        (Acknowledging, PrepareLeaving),
        (Unsubscribed, PrepareLeaving),
        (PrepareLeaving, Leaving),
        (PrepareLeaving, Unsubscribed),
        (Leaving, Unsubscribed),
        (Fenced, Unsubscribed),
        (Leaving, Stale),
    ];

    #[test]
    fn exactly_kafkas_table_is_legal() {
        let mut legal_count = 0;
        for from in ALL {
            for to in ALL {
                let mut state = from;
                let result = state.transition_to(to);
                if from == to || LEGAL.contains(&(from, to)) {
                    legal_count += 1;
                    assert_eq!(result, Ok(()), "{from:?} -> {to:?} must be legal");
                    assert_eq!(state, to);
                } else {
                    let error = result.expect_err("illegal transition accepted");
                    assert_eq!((error.from, error.to), (from, to));
                    assert_eq!(state, from, "a refused transition leaves the state alone");
                    assert!(error
                        .to_string()
                        .contains("invalid member state transition"));
                }
            }
        }
        assert_eq!(legal_count, LEGAL.len() + ALL.len());
        // Fatal is terminal: nothing leaves it.
        for to in ALL.into_iter().filter(|&s| s != Fatal) {
            assert!(!Fatal.can_transition_to(to), "Fatal -> {to:?}");
        }
    }

    #[test]
    fn state_predicates_follow_java() {
        let not_in_group: Vec<_> = ALL.into_iter().filter(|s| s.is_not_in_group()).collect();
        assert_eq!(not_in_group, [Unsubscribed, Fenced, Fatal, Stale]);
        let new_assignment: Vec<_> = ALL
            .into_iter()
            .filter(|s| s.can_handle_new_assignment())
            .collect();
        assert_eq!(
            new_assignment,
            [Joining, Reconciling, Acknowledging, Stable]
        );
        let now: Vec<_> = ALL.into_iter().filter(|s| s.heartbeats_now()).collect();
        assert_eq!(now, [Joining, Acknowledging, Leaving]);
        let leaving: Vec<_> = ALL.into_iter().filter(|s| s.is_leaving()).collect();
        assert_eq!(leaving, [PrepareLeaving, Leaving]);
        assert!(ALL
            .into_iter()
            .all(|s| s.skips_heartbeat() == s.is_not_in_group()));
    }
}
