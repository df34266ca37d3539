//! Shared test support. Each test binary uses a different subset of it.
#![allow(dead_code)]

#[cfg(not(madsim))]
pub mod cluster_workload;
pub mod fake_broker;
#[cfg(not(madsim))]
pub mod group;
#[cfg(not(madsim))]
pub mod log_capture;
#[cfg(not(madsim))]
pub mod real_broker;
#[cfg(not(madsim))]
pub mod real_cluster;
#[cfg(not(madsim))]
pub mod secured;
#[cfg(not(madsim))]
pub mod verifiable;
