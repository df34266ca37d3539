//! A violation kind a scenario declares Kafka itself produces under its faults.
//!
//! Some violations are not the consumer's to prevent (a commit the client gave up on reaching
//! the coordinator late, [`ViolationKind::LateCommitRegressed`]). The checker still reports
//! them; a scenario whose faults can cause one may wrap the checker in [`Expected`] with the
//! reason, citing the Kafka behaviour that makes it unavoidable. Only that kind of that
//! checker is accepted, and only with a reason: an empty reason accepts nothing.

use super::{Checker, Violation, ViolationKind};
use crate::history::History;

/// `inner`, with violations of `kind` declared expected for `reason`.
#[derive(Clone, Debug)]
pub struct Expected<C> {
    inner: C,
    kind: ViolationKind,
    reason: &'static str,
}

impl<C> Expected<C> {
    /// Declares `kind` of `inner` expected because of `reason` (which Kafka behaviour, with
    /// its source reference).
    pub fn because(inner: C, kind: ViolationKind, reason: &'static str) -> Self {
        Self {
            inner,
            kind,
            reason,
        }
    }

    /// Why the kind is expected.
    pub fn reason(&self) -> &'static str {
        self.reason
    }

    /// The kind declared expected.
    pub fn kind(&self) -> ViolationKind {
        self.kind
    }
}

impl<C: Checker> Checker for Expected<C> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let accepted = !self.reason.trim().is_empty();
        self.inner
            .violations(history)
            .into_iter()
            .filter(|v| !(accepted && v.kind == self.kind))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use super::super::CommittedOffsetsMonotonic;
    use super::*;
    use crate::history::{CommitMode, Event};

    /// A late (abandoned) commit of 6 after 10, then an ordered commit of 5.
    fn late_then_ordered() -> History {
        let abandoned = Event::CommitRequested {
            id: 2,
            mode: CommitMode::Abandoned,
            generation: None,
            offsets: vec![(tp(0), 6)],
        };
        history(vec![
            (0, "c0", start()),
            (1, "c0", commit(1, 0, 10)),
            (2, "c0", commit_ok(1)),
            (3, "c0", abandoned),
            (4, "c0", commit_ok(2)),
            (5, "c0", commit(3, 0, 5)),
            (6, "c0", commit_ok(3)),
        ])
    }

    #[test]
    fn accepts_only_the_declared_kind() {
        let checker = Expected::because(
            CommittedOffsetsMonotonic::default(),
            ViolationKind::LateCommitRegressed,
            "Kafka cannot refuse a late commit",
        );
        let v = checker.check(&late_then_ordered());
        assert_eq!(v.violations.len(), 1, "{v}");
        assert_eq!(v.violations[0].kind, ViolationKind::CommittedRegressed);
        assert_eq!(v.checker, "committed-offsets-monotonic");
    }

    #[test]
    fn a_checker_set_declares_a_kind_of_one_checker() {
        let set = super::super::CheckerSet::jepsen(super::super::KnownGaps::new()).expect(
            "committed-offsets-monotonic",
            ViolationKind::LateCommitRegressed,
            "Kafka cannot refuse a late commit",
        );
        let report = set.run(&late_then_ordered());
        let kinds: Vec<_> = report.violations().iter().map(|(_, v)| v.kind).collect();
        assert_eq!(kinds, vec![ViolationKind::CommittedRegressed], "{report}");
    }

    #[test]
    fn an_empty_reason_accepts_nothing() {
        let checker = Expected::because(
            CommittedOffsetsMonotonic::default(),
            ViolationKind::LateCommitRegressed,
            " ",
        );
        assert_eq!(checker.check(&late_then_ordered()).violations.len(), 2);
    }
}
