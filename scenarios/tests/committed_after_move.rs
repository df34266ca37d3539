//! `committed-after-move` in simulation mode: a consumer restarted right after its group's
//! coordinator moved resumes at the committed offset (OffsetFetch with `require_stable`), not
//! at the new coordinator's trailing high watermark.
#![cfg(madsim)]

use scenarios::own::committed_after_move::{self, Commits};
use scenarios::runner::run_in_runtime;
use scenarios::subject::SubjectKind;
use sim::history::Event;

#[test]
fn a_consumer_restarted_after_a_coordinator_move_resumes_at_the_committed_offset() {
    let each_poll = (0..)
        .find(|s| committed_after_move::draw(*s).commits == Commits::EachPoll)
        .unwrap();
    let auto = (0..)
        .find(|s| matches!(committed_after_move::draw(*s).commits, Commits::Auto { .. }))
        .unwrap();
    for seed in [each_poll, auto] {
        for subject in [SubjectKind::Consumer, SubjectKind::Legacy] {
            let result = run_in_runtime(committed_after_move::scenario, seed, subject).unwrap();
            assert!(
                result.report.is_ok(),
                "{subject:?} seed {seed}:\n{}",
                result.report
            );
            let entries = result.history.entries();
            let restart = entries
                .iter()
                .position(|e| e.subject == "c0" && matches!(e.event, Event::MemberRestart))
                .unwrap_or_else(|| panic!("{subject:?} seed {seed}: no restart"));
            assert!(
                entries[..restart]
                    .iter()
                    .any(|e| e.subject == "c0" && matches!(e.event, Event::MemberCrash)),
                "{subject:?} seed {seed}: the restart follows a crash"
            );
            assert!(
                entries[restart..]
                    .iter()
                    .any(|e| e.subject == "c0" && matches!(e.event, Event::Delivered { .. })),
                "{subject:?} seed {seed}: the restarted process consumes"
            );
        }
    }
}
