//! Time from members joining to a stable group, in virtual time, for each group protocol:
//! our consumer (`kafka_consumer::Consumer`, one per simulated node) against 3 simulated brokers
//! with Kafka's default coordinator settings (classic: `group.initial.rebalance.delay.ms`
//! 3000; consumer protocol: heartbeat interval 5000 ms, `uniform` assignor) and one topic of
//! 60 partitions.
//!
//! Two figures per group size N: N members subscribing together until the group is stable,
//! and one more member joining that stable group until it is stable again. Stable: every
//! member's application view (after its listener calls) holds a share of the partitions, the
//! shares are disjoint, cover all 60 and differ by at most one; with the classic protocol
//! every member is in the same generation. Members poll every 100 ms.
//!
//! `SIM_JOIN_SEEDS` (default 3) seeds per cell; the median is printed. Only meaningful under
//! `--cfg madsim` (BENCHMARKS.md has the command).

#[cfg(madsim)]
mod join {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    use kafka_consumer::rt::{Duration, Instant};
    use kafka_consumer::{AutoOffsetReset, Consumer, ConsumerConfig};
    use madsim::runtime::Handle;
    use sim::cluster::Cluster;
    use sim::group::shard::GroupCoordinatorFactory;

    pub const PARTITIONS: i32 = 60;
    /// A cell that takes longer than this is reported as not stable.
    const GIVE_UP: Duration = Duration::from_secs(180);

    /// Each member's application view: partitions and generation (member epoch).
    type Views = Arc<Mutex<BTreeMap<usize, (BTreeSet<i32>, i32)>>>;

    fn config(bootstrap: &[String], member: usize, protocol: &str) -> ConsumerConfig {
        ConsumerConfig::builder()
            .bootstrap_servers(bootstrap.iter().cloned())
            .group_id("join-to-stable")
            .client_id(format!("m{member}"))
            .auto_offset_reset(AutoOffsetReset::Earliest)
            .set("group.protocol", protocol)
            .build()
            .unwrap()
    }

    async fn member(
        index: usize,
        bootstrap: Vec<String>,
        protocol: &'static str,
        views: Views,
        stop: Arc<AtomicBool>,
    ) {
        let mut consumer = Consumer::new(config(&bootstrap, index, protocol)).unwrap();
        consumer.subscribe(["t"]).await.unwrap();
        while !stop.load(Ordering::SeqCst) {
            // Errors (a coordinator still loading) are retried by polling again.
            let _ = consumer.poll(Duration::from_millis(100)).await;
            let partitions = consumer
                .assignment()
                .iter()
                .map(|tp| tp.partition)
                .collect();
            let generation = consumer.group_metadata().map_or(-1, |m| m.generation_id);
            views
                .lock()
                .unwrap()
                .insert(index, (partitions, generation));
        }
    }

    fn stable(views: &Views, members: usize, classic: bool) -> bool {
        let views = views.lock().unwrap();
        if views.len() != members {
            return false;
        }
        let sizes: Vec<usize> = views.values().map(|v| v.0.len()).collect();
        let union: BTreeSet<i32> = views.values().flat_map(|v| v.0.iter().copied()).collect();
        let generations: BTreeSet<i32> = views.values().map(|v| v.1).collect();
        sizes.iter().sum::<usize>() == PARTITIONS as usize
            && union.len() == PARTITIONS as usize
            && sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1
            && (!classic || generations.len() == 1)
    }

    /// Virtual ms until the group of `members` is stable, or `None` past [`GIVE_UP`].
    async fn until_stable(views: &Views, members: usize, classic: bool) -> Option<u64> {
        let started = Instant::now();
        while !stable(views, members, classic) {
            if started.elapsed() > GIVE_UP {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Some(started.elapsed().as_millis() as u64)
    }

    /// (N members together → stable, one more joins → stable again), virtual ms.
    pub async fn run(protocol: &'static str, members: usize) -> (Option<u64>, Option<u64>) {
        let cluster = Cluster::builder()
            .brokers(3)
            .topic("t", PARTITIONS)
            .offsets_partitions(3)
            .group_shards(Arc::new(GroupCoordinatorFactory::default()))
            .build()
            .await;
        let views: Views = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let start = |index: usize| {
            Handle::current()
                .create_node()
                .name(format!("member-{index}"))
                .ip(format!("10.0.{}.{}", 3 + index / 200, 1 + index % 200)
                    .parse()
                    .unwrap())
                .build()
                .spawn(member(
                    index,
                    cluster.bootstrap_servers(),
                    protocol,
                    Arc::clone(&views),
                    Arc::clone(&stop),
                ))
        };
        let classic = protocol == "classic";
        let mut handles: Vec<_> = (0..members).map(start).collect();
        let together = until_stable(&views, members, classic).await;
        handles.push(start(members));
        let one_more = until_stable(&views, members + 1, classic).await;
        stop.store(true, Ordering::SeqCst);
        for handle in handles {
            let _ = handle.await;
        }
        (together, one_more)
    }
}

#[cfg(madsim)]
fn main() {
    let seeds: u64 = std::env::var("SIM_JOIN_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let median = |mut values: Vec<Option<u64>>| -> String {
        if values.iter().any(Option::is_none) {
            return "not stable".to_owned();
        }
        values.sort();
        format!("{}", values[values.len() / 2].unwrap())
    };
    println!("protocol  members  together_ms (median of {seeds})  one_more_joins_ms  per seed");
    for protocol in ["classic", "consumer"] {
        for members in [1usize, 10, 50] {
            let mut together = Vec::new();
            let mut one_more = Vec::new();
            for seed in 1..=seeds {
                // Each seed in a fresh runtime on a fresh OS thread, as madsim's runner does.
                #[allow(clippy::disallowed_methods)]
                let thread = std::thread::spawn(move || {
                    madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default())
                        .block_on(join::run(protocol, members))
                });
                let (t, o) = thread.join().expect("the workload panicked");
                together.push(t);
                one_more.push(o);
            }
            println!(
                "{protocol:<8}  {members:>7}  {:>28}  {:>17}  {together:?} / {one_more:?}",
                median(together.clone()),
                median(one_more.clone()),
            );
        }
    }
}

#[cfg(not(madsim))]
fn main() {
    eprintln!(
        "join_to_stable measures simulation mode; run it with --cfg madsim (see BENCHMARKS.md)"
    );
}
