//! The classic member's state (Java's `AbstractCoordinator.MemberState`) and its legal
//! transitions. A transition outside the table is a bug in the manager: it is refused, and the
//! manager reports it instead of carrying on in a state Kafka never has.

use std::fmt;

/// Where the member is in the join protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemberState {
    /// Not in a generation (before the first join, after a reset or leaving).
    Unjoined,
    /// JoinGroup sent, no response yet.
    PreparingRebalance,
    /// JoinGroup answered, SyncGroup under way.
    CompletingRebalance,
    /// In a generation with an assignment.
    Stable,
}

/// A refused transition, of either protocol's member states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IllegalTransition<S> {
    /// The state the member was in.
    pub from: S,
    /// The state asked for.
    pub to: S,
}

impl<S: fmt::Debug> fmt::Display for IllegalTransition<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid member state transition from {:?} to {:?}",
            self.from, self.to
        )
    }
}

impl MemberState {
    /// Whether `self → next` is legal:
    ///
    /// | to | from |
    /// |---|---|
    /// | Unjoined | any (reset, leave, failure) |
    /// | PreparingRebalance | Unjoined, PreparingRebalance (JoinGroup resent), Stable (rejoin) |
    /// | CompletingRebalance | PreparingRebalance (JoinGroup answered) |
    /// | Stable | CompletingRebalance (SyncGroup answered) |
    pub fn can_transition_to(self, next: Self) -> bool {
        use MemberState::{CompletingRebalance, PreparingRebalance, Stable, Unjoined};
        match next {
            Unjoined => true,
            PreparingRebalance => matches!(self, Unjoined | PreparingRebalance | Stable),
            CompletingRebalance => self == PreparingRebalance,
            Stable => self == CompletingRebalance,
        }
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
            tracing::debug!(from = ?*self, to = ?next, "member state");
        }
        *self = next;
        Ok(())
    }

    /// Java's `hasNotJoinedGroup`.
    pub fn has_not_joined(self) -> bool {
        matches!(self, Self::Unjoined | Self::PreparingRebalance)
    }
}

#[cfg(test)]
mod tests {
    use super::MemberState::{self, CompletingRebalance, PreparingRebalance, Stable, Unjoined};

    const ALL: [MemberState; 4] = [Unjoined, PreparingRebalance, CompletingRebalance, Stable];

    #[test]
    fn exactly_the_table_is_legal() {
        let legal = [
            (Unjoined, Unjoined),
            (PreparingRebalance, Unjoined),
            (CompletingRebalance, Unjoined),
            (Stable, Unjoined),
            (Unjoined, PreparingRebalance),
            (PreparingRebalance, PreparingRebalance),
            (Stable, PreparingRebalance),
            (PreparingRebalance, CompletingRebalance),
            (CompletingRebalance, Stable),
        ];
        for from in ALL {
            for to in ALL {
                let mut state = from;
                let result = state.transition_to(to);
                if legal.contains(&(from, to)) {
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
    }

    #[test]
    fn not_joined_until_join_group_answers() {
        assert!(Unjoined.has_not_joined());
        assert!(PreparingRebalance.has_not_joined());
        assert!(!CompletingRebalance.has_not_joined());
        assert!(!Stable.has_not_joined());
    }
}
