//! **Family: data path — records larger than the fetch limits** (the project's own, issue #27;
//! KIP-74). Records up to several KiB are consumed with `max.partition.fetch.bytes` and
//! `fetch.max.bytes` far below them.
//!
//! **Interleavings aimed at.** A fetch whose first batch is larger than either limit: Kafka
//! returns that batch whole anyway (KIP-74: the limits are not absolute, so the consumer
//! always makes progress), and only what fits after it; a response cut inside a later batch
//! (the consumer drops the partial batch and fetches it again from its offset). Per seed: the
//! protocol and commit policy, how the application takes records, one or two members, the two
//! limits, the record sizes, and the network latency.
//!
//! **Invariants** ([`super::full_checks`] and [`DataPathAccounting`]): every acked record is
//! delivered, once and in order per partition, however large; the group settles and commits
//! everything after the heal. A consumer that treats an oversized batch as an error, or stops
//! at a partial one, stalls here.
//!
//! **Why our design should hold.** The broker's read returns the first batch whole
//! (`PartitionLog::read`'s `min_one_batch`, as Kafka's `minOneMessage` for the first partition
//! of a response); the consumer's record reader stops at a truncated tail and the next fetch
//! starts at the first offset not returned.

use super::data_path::{apply_members, draw_drive};
use super::{
    between, coin, draw_listener, full_checks, group_builder, knob_rng, latency_until, pick,
    GroupKnobs, TOPIC,
};
use crate::app::DriveMode;
use crate::checks::DataPathAccounting;
use crate::scenario::{FaultSource, PlannedFaults, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-data-path-large-records";

const SALT: u64 = 0x6c61_7267_6572;
const PARTITIONS: i32 = 2;
const MEMBERS: usize = 2;
/// Values are padded up to this size (spread per record).
const VALUE_BYTES: usize = 6_000;
const PRODUCE_UNTIL_MS: u64 = 10_000;
const RUN_MS: u64 = 25_000;
const WITHIN_MS: u64 = 10_000;

/// One seed's draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LargeRecords {
    pub group: GroupKnobs,
    pub drive: DriveMode,
    pub members: usize,
    pub listeners: Vec<ListenerBehaviour>,
    pub max_partition_fetch_bytes: u64,
    pub fetch_max_bytes: u64,
    pub latency_max_ms: u64,
}

pub fn draw(seed: u64) -> LargeRecords {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let drive = draw_drive(&mut rng);
    let members = if coin(&mut rng) { 1 } else { MEMBERS };
    let listeners = (0..MEMBERS).map(|_| draw_listener(&mut rng, 300)).collect();
    LargeRecords {
        group,
        drive,
        members,
        listeners,
        max_partition_fetch_bytes: pick(&mut rng, &[100, 1_024, 4_096, 1_048_576]),
        fetch_max_bytes: pick(&mut rng, &[100, 2_048, 8_192, 52_428_800]),
        latency_max_ms: between(&mut rng, 1, 20),
    }
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let d = draw(seed);
    let members = apply_members(
        scenario,
        d.members,
        &d.group,
        &d.listeners,
        d.drive,
        "earliest",
    );
    for spec in members {
        super::set(
            spec,
            "max.partition.fetch.bytes",
            &d.max_partition_fetch_bytes.to_string(),
        );
        super::set(spec, "fetch.max.bytes", &d.fetch_max_bytes.to_string());
    }
}

fn plan(seed: u64) -> PlannedFaults {
    latency_until(draw(seed).latency_max_ms, PRODUCE_UNTIL_MS)
}

fn checks() -> sim::check::CheckerSet {
    full_checks(WITHIN_MS).with(DataPathAccounting::default())
}

pub fn scenario() -> Scenario {
    group_builder(NAME, "records larger than max.partition.fetch.bytes / fetch.max.bytes, poll/recv/stream: each returned whole (KIP-74), every acked record delivered once in order", PARTITIONS, MEMBERS, &[TOPIC])
        .large_producer("p0", TOPIC, 20, PRODUCE_UNTIL_MS, VALUE_BYTES)
        .faults(FaultSource::Fixed(plan))
        .run_ms(RUN_MS)
        .checks(checks)
        .vary(vary)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn some_seeds_set_both_limits_below_the_largest_record() {
        let draws: Vec<LargeRecords> = (0..100).map(draw).collect();
        assert!(draws.iter().any(|d| {
            d.max_partition_fetch_bytes < VALUE_BYTES as u64
                && d.fetch_max_bytes < VALUE_BYTES as u64
        }));
        for drive in [DriveMode::Poll, DriveMode::Recv, DriveMode::Stream] {
            assert!(draws.iter().any(|d| d.drive == drive));
        }
    }
}
