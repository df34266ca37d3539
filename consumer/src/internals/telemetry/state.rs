//! The telemetry sender's states and the transitions between them (Java's
//! `org.apache.kafka.common.telemetry.ClientTelemetryState`).

use std::fmt;

/// Where the KIP-714 conversation with the broker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TelemetryState {
    /// A GetTelemetrySubscriptions request is due (at once, or after the wait interval).
    SubscriptionNeeded,
    /// A GetTelemetrySubscriptions request is out.
    SubscriptionInProgress,
    /// A PushTelemetry request is due once the push interval has passed.
    PushNeeded,
    /// A PushTelemetry request is out.
    PushInProgress,
    /// The consumer is closing: one last, terminating push is due at once.
    TerminatingPushNeeded,
    /// The terminating push is out.
    TerminatingPushInProgress,
    /// Nothing more is sent.
    Terminated,
}

/// A transition `ClientTelemetryState.validateTransition` refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InvalidTransition {
    pub from: TelemetryState,
    pub to: TelemetryState,
}

impl fmt::Display for InvalidTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid telemetry state transition from {:?} to {:?}",
            self.from, self.to
        )
    }
}

impl TelemetryState {
    /// The states this one may move to, as Java's `VALID_NEXT_STATES`: a subscription or a
    /// push may fail back to `SubscriptionNeeded`, a subscription that requests no metrics
    /// goes back to `SubscriptionNeeded` as well, and every non-terminal state may end in
    /// `Terminated` (the client closes before it gets far).
    pub fn valid_next(self) -> &'static [TelemetryState] {
        use TelemetryState::*;
        match self {
            SubscriptionNeeded => &[SubscriptionInProgress, Terminated],
            SubscriptionInProgress => &[
                PushNeeded,
                SubscriptionNeeded,
                TerminatingPushNeeded,
                Terminated,
            ],
            PushNeeded => &[
                PushInProgress,
                SubscriptionNeeded,
                TerminatingPushNeeded,
                Terminated,
            ],
            PushInProgress => &[
                PushNeeded,
                SubscriptionNeeded,
                TerminatingPushNeeded,
                Terminated,
            ],
            TerminatingPushNeeded => &[TerminatingPushInProgress, Terminated],
            TerminatingPushInProgress => &[Terminated],
            Terminated => &[],
        }
    }

    /// `to` if this state may move there (Java throws `IllegalStateException` otherwise).
    pub fn validate_transition(
        self,
        to: TelemetryState,
    ) -> Result<TelemetryState, InvalidTransition> {
        if self.valid_next().contains(&to) {
            Ok(to)
        } else {
            Err(InvalidTransition { from: self, to })
        }
    }

    /// Java's `isTerminatingState`: closing has begun or is over.
    pub fn is_terminating(self) -> bool {
        matches!(
            self,
            Self::TerminatingPushNeeded | Self::TerminatingPushInProgress | Self::Terminated
        )
    }
}

#[cfg(test)]
mod tests {
    use super::TelemetryState::*;
    use super::*;

    const ALL: [TelemetryState; 7] = [
        SubscriptionNeeded,
        SubscriptionInProgress,
        PushNeeded,
        PushInProgress,
        TerminatingPushNeeded,
        TerminatingPushInProgress,
        Terminated,
    ];

    #[test]
    fn transitions_match_java_valid_next_states() {
        let allowed =
            |from: TelemetryState, to: TelemetryState| from.validate_transition(to).is_ok();
        // Java's ClientTelemetryStateTest, as a table: (from, to) pairs that are valid.
        let valid = [
            (SubscriptionNeeded, SubscriptionInProgress),
            (SubscriptionNeeded, Terminated),
            (SubscriptionInProgress, PushNeeded),
            (SubscriptionInProgress, SubscriptionNeeded),
            (SubscriptionInProgress, TerminatingPushNeeded),
            (SubscriptionInProgress, Terminated),
            (PushNeeded, PushInProgress),
            (PushNeeded, SubscriptionNeeded),
            (PushNeeded, TerminatingPushNeeded),
            (PushNeeded, Terminated),
            (PushInProgress, PushNeeded),
            (PushInProgress, SubscriptionNeeded),
            (PushInProgress, TerminatingPushNeeded),
            (PushInProgress, Terminated),
            (TerminatingPushNeeded, TerminatingPushInProgress),
            (TerminatingPushNeeded, Terminated),
            (TerminatingPushInProgress, Terminated),
        ];
        for from in ALL {
            for to in ALL {
                assert_eq!(
                    allowed(from, to),
                    valid.contains(&(from, to)),
                    "{from:?} -> {to:?}"
                );
            }
        }
        let error = Terminated.validate_transition(PushNeeded).unwrap_err();
        assert!(error.to_string().contains("Terminated to PushNeeded"));
    }

    #[test]
    fn terminating_states() {
        let terminating: Vec<_> = ALL.into_iter().filter(|s| s.is_terminating()).collect();
        assert_eq!(
            terminating,
            [TerminatingPushNeeded, TerminatingPushInProgress, Terminated]
        );
    }
}
