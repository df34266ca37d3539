//! Simulation mode: our consumer with `group.protocol=consumer` (KIP-848, ConsumerGroupHeartbeat
//! and client-side reconciliation) as three group members on their own simulated nodes against
//! a 3-broker simulated cluster whose coordinator assigns with the `uniform` server assignor,
//! while the fault plan of the classic run (drawn from the seed) kills and restarts brokers,
//! moves the group coordinator (the simulated coordinator reloads KIP-848 membership from
//! `__consumer_offsets`, as Kafka does) and cuts members off the network one way and both ways,
//! often for longer than the 10 s `group.consumer.session.timeout.ms` of this run, so members
//! get fenced and rejoin.
//!
//! The shape and the checks are those of `sim_consumer_group.rs` (the classic protocol).
//! Invariants, checked for every seed (`SIM_KIP848_SEEDS`, default 12; `SIM_KIP848_SEED=N`
//! runs one):
//! - every record is delivered at least once once the faults heal;
//! - the listener sees a coherent assignment: it is never told a partition it owns is
//!   assigned again, nor revoked or lost a partition it does not own;
//! - within one ownership, a member's offsets of a partition only go up, and a new ownership
//!   never starts below what the previous owner committed when revoking it (the at-least-once
//!   bound on duplicates);
//! - `poll` returns no error but the planned listener panics it must report;
//! - at the end the members' assignments are disjoint and cover every partition.
#![cfg(madsim)]

mod consumer_group;
mod support;

#[test]
fn a_kip848_group_of_our_consumers_survives_seeded_faults() {
    consumer_group::run_seeds(consumer_group::Protocol::Consumer);
}
