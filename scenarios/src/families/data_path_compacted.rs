//! **Family: data path — batches as the log cleaner leaves them** (the project's own, issue
//! #27; no Jira). The topic's batches have the shapes Kafka's log cleaner leaves behind in a
//! compacted topic: records missing between the ones kept (offset gaps, the first kept record
//! above the batch's base offset), offsets after the last kept record still taken by the
//! batch's `lastOffsetDelta`, and batches with no record left at all, kept for their
//! producer's state (`MemoryRecords.filterTo`, `writeEmptyHeader`) — interleaved with whole
//! batches, while the group consumes and leaders move.
//!
//! **Interleavings aimed at.** A fetch response that ends on a batch whose last offsets hold
//! no record, or on an empty batch (the next fetch must start after the batch, not after its
//! last record, or the consumer fetches the same batch forever: Java's `CompletedFetch`
//! moves `nextFetchOffset` to the batch's next offset); a fetch cut inside a batch; records
//! at offsets that skip; `max.poll.records` ending a poll inside a gapped batch; a rebalance
//! whose committed offset points into a gap or at an empty batch; leaders moving while the
//! consumer is positioned on a gap. Per seed: the protocol and commit policy, how the
//! application takes records, one or two members, the batch shapes, `max.poll.records`,
//! `max.partition.fetch.bytes` and the leader churn.
//!
//! **Invariants** ([`data_path_checks_with_liveness`]): every record kept is
//! delivered once and in order per partition (re-deliveries only from the committed offset
//! after a rebalance), the offsets a gap or an empty batch takes deliver nothing, and the group
//! consumes and commits to the log end after the heal (liveness: an empty batch at the end of
//! what was fetched must not stall the partition).
//!
//! **Why our design should hold.** The completed fetch hands out each record at its own offset
//! and, when it runs out of batches, moves the fetch position to the last batch's next offset
//! (v2 keeps a batch's last offset even when its last records are gone).

use super::data_path::{apply_members, data_path_checks_with_liveness, draw_churn, draw_drive};
use super::{coin, draw_listener, group_builder, knob_rng, pick, GroupKnobs, TOPIC};
use crate::app::DriveMode;
use crate::scenario::{FaultSource, PlannedFaults, ProducerShape, Scenario};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-data-path-compacted";

const SALT: u64 = 0x636f_6d70_6163;
const PARTITIONS: i32 = 2;
const MEMBERS: usize = 2;
const CHURN_FROM_MS: u64 = 3_000;
const CHURN_UNTIL_MS: u64 = 12_000;
const PRODUCE_UNTIL_MS: u64 = 14_000;
const RUN_MS: u64 = 32_000;
const WITHIN_MS: u64 = 15_000;

/// One seed's draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    pub group: GroupKnobs,
    pub drive: DriveMode,
    pub members: usize,
    pub listeners: Vec<ListenerBehaviour>,
    /// Draws the producer's batch shapes.
    pub shapes_seed: u64,
    /// `max.poll.records`: small values end polls inside batches.
    pub max_poll_records: u64,
    /// `max.partition.fetch.bytes`: small values cut fetches inside batches.
    pub max_partition_fetch_bytes: u64,
    /// Leader moves and broker restarts, in time order (possibly none).
    pub churn: Vec<(u64, sim::fault::Fault)>,
}

pub fn draw(seed: u64) -> Compacted {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let drive = draw_drive(&mut rng);
    let members = if coin(&mut rng) { 1 } else { MEMBERS };
    let listeners = (0..MEMBERS).map(|_| draw_listener(&mut rng, 300)).collect();
    let shapes_seed = rng.below_inclusive(u64::MAX);
    let max_poll_records = pick(&mut rng, &[1, 2, 5, 500]);
    let max_partition_fetch_bytes = pick(&mut rng, &[120, 400, 1_048_576]);
    let churn = if coin(&mut rng) {
        draw_churn(
            &mut rng,
            CHURN_FROM_MS,
            CHURN_UNTIL_MS,
            3,
            (1_000, 3_000),
            PARTITIONS,
        )
    } else {
        Vec::new()
    };
    Compacted {
        group,
        drive,
        members,
        listeners,
        shapes_seed,
        max_poll_records,
        max_partition_fetch_bytes,
        churn,
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
        super::set(spec, "metadata.max.age.ms", "3000");
        super::set(spec, "max.poll.records", &d.max_poll_records.to_string());
        super::set(
            spec,
            "max.partition.fetch.bytes",
            &d.max_partition_fetch_bytes.to_string(),
        );
    }
    for producer in &mut scenario.producers {
        producer.shape = ProducerShape::Compacted {
            seed: d.shapes_seed,
        };
    }
}

fn plan(seed: u64) -> PlannedFaults {
    PlannedFaults {
        plan: draw(seed).churn,
        healed_at_ms: CHURN_UNTIL_MS,
    }
}

fn checks() -> sim::check::CheckerSet {
    data_path_checks_with_liveness(WITHIN_MS)
}

pub fn scenario() -> Scenario {
    group_builder(NAME, "batches shaped as the log cleaner leaves them (offset gaps, emptied batches) while the group consumes and leaders move, poll/recv/stream: every kept record once in order, no stall on an empty batch", PARTITIONS, MEMBERS, &[TOPIC])
        .shaped_producer("p0", TOPIC, 30, PRODUCE_UNTIL_MS, ProducerShape::Compacted { seed: 0 })
        .faults(FaultSource::Fixed(plan))
        .run_ms(RUN_MS)
        .checks(checks)
        .vary(vary)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::Protocol;

    #[test]
    fn the_seeds_cover_each_drive_protocol_and_fetch_limit() {
        let draws: Vec<Compacted> = (0..100).map(draw).collect();
        for drive in [DriveMode::Poll, DriveMode::Recv, DriveMode::Stream] {
            assert!(draws.iter().any(|d| d.drive == drive));
        }
        for protocol in [Protocol::Classic, Protocol::Consumer] {
            assert!(draws.iter().any(|d| d.group.protocol == protocol));
        }
        assert!(draws.iter().any(|d| d.max_partition_fetch_bytes == 120));
        assert!(draws.iter().any(|d| d.max_poll_records == 1));
        assert!(draws.iter().any(|d| d.churn.is_empty()));
        assert!(draws.iter().any(|d| !d.churn.is_empty()));
    }
}
