//! Simulation mode: madsim's own determinism check (the same seed draws the same random numbers
//! at the same virtual times) on the faulty produce/fetch workload.
//!
//! In a binary of its own, because it must be the first simulation of its process: tokio seeds
//! the branch order of an unbiased `select!` from a process-wide counter, not from madsim's
//! seed, so simulations that ran earlier in the same process shift the draws of later ones —
//! exactly as madsim's runner (`MADSIM_TEST_CHECK_DETERMINISM`, one test per process) expects.
#![cfg(madsim)]

mod workload;

#[test]
fn madsim_check_determinism_passes() {
    let outcome = madsim::runtime::Runtime::check_determinism(3, madsim::Config::default(), || {
        workload::run(workload::faulty_load())
    });
    assert!(
        outcome.produced > 0 && outcome.fetched > 0,
        "the workload ran: {} produced, {} fetched",
        outcome.produced,
        outcome.fetched
    );
    assert!(outcome.errors > 0, "the faulty load's faults were felt");
    assert!(
        !outcome.trace.is_empty(),
        "the run left its per-client summaries"
    );
}
