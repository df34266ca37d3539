//! Coordinator tests with a fake clock, one behaviour each.

mod classic_harness;
mod classic_members;
mod harness;
mod join_and_reconcile;
mod kafka_4_4;
mod leave_and_static;
mod metadata_and_describe;
mod offsets;
mod timeouts;
mod validation;
