//! Simulation mode: madsim's determinism check (the same seed draws the same random numbers at
//! the same virtual times) on a group of our consumers under a seeded fault plan — the whole
//! client (application side, background task, membership, fetch, commits) replays exactly.
//!
//! In a binary of its own: it must be the first simulation of its process (see
//! `sim_check_determinism.rs` for why).
#![cfg(madsim)]

mod consumer_group;
mod support;

#[test]
fn a_group_of_our_consumers_replays_exactly() {
    let seed = 7;
    let outcome =
        madsim::runtime::Runtime::check_determinism(seed, madsim::Config::default(), move || {
            consumer_group::run_group(seed)
        });
    consumer_group::check(seed, &outcome).unwrap();
    assert!(outcome.journal.callbacks > 0, "the group rebalanced");
}
