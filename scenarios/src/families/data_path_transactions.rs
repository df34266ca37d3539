//! **Family: data path — transactions, `read_committed` and `read_uncommitted`** (the
//! project's own, issue #27; no Jira). Two transactional producers and a plain one write one
//! topic while the group consumes: transactions of one to several records over the
//! partitions, some aborted, some held open for seconds, their COMMIT/ABORT markers written to
//! every partition they touched (as Kafka's transaction coordinator has the leaders do).
//!
//! **Interleavings aimed at.** A `read_committed` fetch that stops at the last stable offset
//! while a transaction stays open, then resumes when the marker lands; aborted batches inside
//! a fetch response with the aborted-transaction list that names them, interleaved with
//! another producer's committed batches and plain records; a fetch response ending on a
//! marker (the position must move past it); the position reset to the log end under `latest`
//! (Kafka answers the last stable offset to `read_committed`); partition leaders moving and
//! brokers restarting while transactions are open. Per seed: the isolation level, the reset
//! policy, the protocol and commit policy, how the application takes records, one or two
//! members, the producers' transaction sizes, abort rates and long-open transactions, and the
//! leader churn.
//!
//! **Invariants** ([`data_path_checks`], [`DataPathAccounting`]'s transaction rules): every
//! committed record is delivered once and in order per partition (re-deliveries only from the
//! committed offset after a rebalance); a `read_committed` member is never handed a record of
//! a transaction that had not committed (aborted or still open); a `read_uncommitted` member
//! is handed every data record, aborted ones too; no control record is ever handed out.
//!
//! **Why our design should hold.** The fetch request carries the isolation level; the broker
//! bounds a `read_committed` fetch at the last stable offset and lists the aborted
//! transactions in the range; the completed fetch drops the batches of a listed producer until
//! its abort marker, skips every control batch, and moves the position past the last batch
//! read (Java's `CompletedFetch`), and ListOffsets asks for the stable end.

use sim::fault::Fault;

use super::data_path::{apply_members, data_path_checks, draw_churn, draw_drive, ResetPolicy};
use super::{between, coin, draw_listener, group_builder, knob_rng, pick, GroupKnobs, TOPIC};
use crate::app::DriveMode;
use crate::scenario::{FaultSource, PlannedFaults, ProducerShape, Scenario, TxnShape};
use crate::subject::ListenerBehaviour;

pub const NAME: &str = "family-data-path-transactions";

const SALT: u64 = 0x7478_6e73_2121;
const PARTITIONS: i32 = 3;
const MEMBERS: usize = 2;
const CHURN_FROM_MS: u64 = 3_000;
const CHURN_UNTIL_MS: u64 = 14_000;
const PRODUCE_UNTIL_MS: u64 = 16_000;
const RUN_MS: u64 = 36_000;
/// The transactional producers' ids (one producer id per transactional id in Kafka).
const PRODUCER_IDS: [i64; 2] = [1_000, 1_001];

/// `isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    ReadCommitted,
    ReadUncommitted,
}

impl Isolation {
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read_committed",
            Isolation::ReadUncommitted => "read_uncommitted",
        }
    }
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Transactions {
    pub group: GroupKnobs,
    pub isolation: Isolation,
    pub policy: ResetPolicy,
    pub drive: DriveMode,
    pub members: usize,
    pub listeners: Vec<ListenerBehaviour>,
    /// The two transactional producers.
    pub producers: [TxnShape; 2],
    /// Leader moves and broker restarts, in time order (possibly none).
    pub churn: Vec<(u64, Fault)>,
}

pub fn draw(seed: u64) -> Transactions {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let isolation = if rng.below_inclusive(2) == 0 {
        Isolation::ReadUncommitted
    } else {
        Isolation::ReadCommitted
    };
    let policy = if rng.below_inclusive(2) == 0 {
        ResetPolicy::Latest
    } else {
        ResetPolicy::Earliest
    };
    let drive = draw_drive(&mut rng);
    let members = if coin(&mut rng) { 1 } else { MEMBERS };
    let listeners = (0..MEMBERS).map(|_| draw_listener(&mut rng, 300)).collect();
    let producers = PRODUCER_IDS.map(|producer_id| TxnShape {
        producer_id,
        seed: rng.below_inclusive(u64::MAX),
        max_records: between(&mut rng, 1, 8),
        abort_one_in: between(&mut rng, 2, 5),
        long_open_one_in: pick(&mut rng, &[0, 4, 10]),
        long_open_ms: between(&mut rng, 1_000, 5_000),
    });
    let churn = if coin(&mut rng) {
        let from_ms = between(&mut rng, CHURN_FROM_MS, CHURN_FROM_MS + 2_000);
        draw_churn(
            &mut rng,
            from_ms,
            CHURN_UNTIL_MS,
            3,
            (1_500, 4_000),
            PARTITIONS,
        )
    } else {
        Vec::new()
    };
    Transactions {
        group,
        isolation,
        policy,
        drive,
        members,
        listeners,
        producers,
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
        d.policy.name(),
    );
    for spec in members {
        super::set(spec, "isolation.level", d.isolation.name());
        super::set(spec, "metadata.max.age.ms", "3000");
    }
    let transactional = scenario
        .producers
        .iter_mut()
        .filter(|p| matches!(p.shape, ProducerShape::Transactional(_)));
    for (producer, shape) in transactional.zip(d.producers) {
        producer.shape = ProducerShape::Transactional(shape);
    }
}

fn plan(seed: u64) -> PlannedFaults {
    PlannedFaults {
        plan: draw(seed).churn,
        healed_at_ms: CHURN_UNTIL_MS,
    }
}

/// The shape `vary` replaces with the seed's draw.
fn placeholder(producer_id: i64) -> ProducerShape {
    ProducerShape::Transactional(TxnShape {
        producer_id,
        seed: 0,
        max_records: 1,
        abort_one_in: 0,
        long_open_one_in: 0,
        long_open_ms: 0,
    })
}

pub fn scenario() -> Scenario {
    group_builder(NAME, "transactional producers commit, abort and hold transactions open while the group consumes under read_committed or read_uncommitted, with leader churn: committed records once in order, nothing uncommitted to read_committed", PARTITIONS, MEMBERS, &[TOPIC])
        .shaped_producer("tx0", TOPIC, 25, PRODUCE_UNTIL_MS, placeholder(PRODUCER_IDS[0]))
        .shaped_producer("tx1", TOPIC, 40, PRODUCE_UNTIL_MS, placeholder(PRODUCER_IDS[1]))
        .producer("p0", TOPIC, 60, PRODUCE_UNTIL_MS)
        .faults(FaultSource::Fixed(plan))
        .run_ms(RUN_MS)
        .checks(data_path_checks)
        .vary(vary)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::Protocol;

    #[test]
    fn the_seeds_cover_each_isolation_policy_drive_and_protocol() {
        let draws: Vec<Transactions> = (0..200).map(draw).collect();
        for isolation in [Isolation::ReadCommitted, Isolation::ReadUncommitted] {
            for policy in [ResetPolicy::Earliest, ResetPolicy::Latest] {
                assert!(draws
                    .iter()
                    .any(|d| d.isolation == isolation && d.policy == policy));
            }
            for drive in [DriveMode::Poll, DriveMode::Recv, DriveMode::Stream] {
                assert!(draws
                    .iter()
                    .any(|d| d.isolation == isolation && d.drive == drive));
            }
            for protocol in [Protocol::Classic, Protocol::Consumer] {
                assert!(draws
                    .iter()
                    .any(|d| d.isolation == isolation && d.group.protocol == protocol));
            }
        }
        assert!(draws
            .iter()
            .any(|d| d.producers.iter().all(|p| p.long_open_one_in > 0)));
        assert!(draws.iter().any(|d| d.churn.is_empty()));
        assert!(draws.iter().any(|d| d.churn.len() >= 3));
        assert!(draws
            .iter()
            .all(|d| d.producers.iter().all(|p| p.abort_one_in >= 2)));
    }
}
