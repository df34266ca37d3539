//! The metrics the background task measures from requests and responses (fetch latency and
//! size, commits, heartbeats, joins, syncs, rebalances) and the application side's `poll`
//! timing, under Java's names.

use std::collections::{BTreeMap, BTreeSet};

use crate::internals::events::RebalanceCallback;
use crate::metric::Metric;
use crate::rt::{Duration, Instant};
use crate::types::TopicPartition;

use super::names::*;
use super::network::{NetworkEvent, NetworkMetrics};
use super::sensor::{metric, MetricsClock, Sensor};
use super::stats::MetricConfig;
use super::EventQueue;

/// What a Fetch response held, for `fetch-size-*` and `records-per-request-avg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct FetchResponseSize {
    /// Bytes of record data in the response.
    pub bytes: usize,
    /// Records in its complete batches, as their headers count them.
    pub records: usize,
    /// The broker's `throttle_time_ms`.
    pub throttle_time_ms: i32,
}

/// A response whose latency a metric measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimedResponse {
    Fetch(FetchResponseSize),
    Commit,
    Heartbeat,
    /// A JoinGroup that succeeded (Java records only those).
    Join,
    /// A SyncGroup that succeeded.
    Sync,
}

/// Background-side and `poll` metrics of one consumer.
#[derive(Debug, Clone)]
pub(crate) struct ClientMetrics {
    config: MetricConfig,
    clock: MetricsClock,
    client_id: String,
    fetch_latency: Sensor,
    fetch_size: Sensor,
    fetch_records: Sensor,
    fetch_throttle: Sensor,
    commit: Sensor,
    heartbeat: Sensor,
    join: Sensor,
    sync: Sensor,
    rebalance: Sensor,
    rebalances_recorded: u64,
    failed_rebalance: Sensor,
    failed_rebalances_recorded: u64,
    last_heartbeat_sent_ms: Option<u64>,
    last_rebalance_end_ms: Option<u64>,
    time_between_poll: Sensor,
    poll_idle_ratio: Sensor,
    last_poll_start_ms: Option<u64>,
    time_since_last_poll_ms: u64,
    partition_revoked: Sensor,
    partition_assigned: Sensor,
    partition_lost: Sensor,
    commit_sync_time: Sensor,
    committed_time: Sensor,
    preferred_read_replicas: BTreeMap<TopicPartition, i32>,
    network: NetworkMetrics,
    network_thread_poll: Sensor,
    last_network_thread_poll_ms: Option<u64>,
    application_queue_time: Sensor,
    application_queue_processing: Sensor,
    background_queue_time: Sensor,
    background_queue_processing: Sensor,
}

impl Default for ClientMetrics {
    fn default() -> Self {
        Self::new(MetricConfig::default(), String::new())
    }
}

fn seconds_ago(since_ms: Option<u64>, now_ms: u64) -> f64 {
    // Java: -1 before the first event, else whole seconds (TimeUnit.SECONDS.convert).
    since_ms.map_or(-1.0, |at| (now_ms.saturating_sub(at) / 1_000) as f64)
}

impl ClientMetrics {
    pub fn new(config: MetricConfig, client_id: String) -> Self {
        Self {
            config,
            clock: MetricsClock::default(),
            client_id,
            fetch_latency: Sensor::new()
                .avg(&FETCH_LATENCY_AVG)
                .max(&FETCH_LATENCY_MAX)
                .count_meter(&FETCH_RATE, &FETCH_TOTAL),
            fetch_size: Sensor::new().avg(&FETCH_SIZE_AVG).max(&FETCH_SIZE_MAX),
            fetch_records: Sensor::new().avg(&RECORDS_PER_REQUEST_AVG),
            fetch_throttle: Sensor::new()
                .avg(&FETCH_THROTTLE_TIME_AVG)
                .max(&FETCH_THROTTLE_TIME_MAX),
            commit: Sensor::new()
                .avg(&COMMIT_LATENCY_AVG)
                .max(&COMMIT_LATENCY_MAX)
                .count_meter(&COMMIT_RATE, &COMMIT_TOTAL),
            heartbeat: Sensor::new()
                .max(&HEARTBEAT_RESPONSE_TIME_MAX)
                .count_meter(&HEARTBEAT_RATE, &HEARTBEAT_TOTAL),
            join: Sensor::new()
                .avg(&JOIN_TIME_AVG)
                .max(&JOIN_TIME_MAX)
                .count_meter(&JOIN_RATE, &JOIN_TOTAL),
            sync: Sensor::new()
                .avg(&SYNC_TIME_AVG)
                .max(&SYNC_TIME_MAX)
                .count_meter(&SYNC_RATE, &SYNC_TOTAL),
            rebalance: Sensor::new()
                .avg(&REBALANCE_LATENCY_AVG)
                .max(&REBALANCE_LATENCY_MAX)
                .total(&REBALANCE_LATENCY_TOTAL)
                .count(&REBALANCE_TOTAL)
                .count_rate_per_hour(&REBALANCE_RATE_PER_HOUR),
            rebalances_recorded: 0,
            failed_rebalance: Sensor::new()
                .total(&FAILED_REBALANCE_TOTAL)
                .count_rate_per_hour(&FAILED_REBALANCE_RATE_PER_HOUR),
            failed_rebalances_recorded: 0,
            last_heartbeat_sent_ms: None,
            last_rebalance_end_ms: None,
            time_between_poll: Sensor::new()
                .avg(&TIME_BETWEEN_POLL_AVG)
                .max(&TIME_BETWEEN_POLL_MAX),
            poll_idle_ratio: Sensor::new().avg(&POLL_IDLE_RATIO_AVG),
            last_poll_start_ms: None,
            time_since_last_poll_ms: 0,
            partition_revoked: Sensor::new()
                .avg(&PARTITION_REVOKED_LATENCY_AVG)
                .max(&PARTITION_REVOKED_LATENCY_MAX),
            partition_assigned: Sensor::new()
                .avg(&PARTITION_ASSIGNED_LATENCY_AVG)
                .max(&PARTITION_ASSIGNED_LATENCY_MAX),
            partition_lost: Sensor::new()
                .avg(&PARTITION_LOST_LATENCY_AVG)
                .max(&PARTITION_LOST_LATENCY_MAX),
            commit_sync_time: Sensor::new().total(&COMMIT_SYNC_TIME_NS_TOTAL),
            committed_time: Sensor::new().total(&COMMITTED_TIME_NS_TOTAL),
            preferred_read_replicas: BTreeMap::new(),
            network: NetworkMetrics::default(),
            network_thread_poll: Sensor::new()
                .avg(&TIME_BETWEEN_NETWORK_THREAD_POLL_AVG)
                .max(&TIME_BETWEEN_NETWORK_THREAD_POLL_MAX),
            last_network_thread_poll_ms: None,
            application_queue_time: Sensor::new()
                .avg(&APPLICATION_EVENT_QUEUE_TIME_AVG)
                .max(&APPLICATION_EVENT_QUEUE_TIME_MAX),
            application_queue_processing: Sensor::new()
                .avg(&APPLICATION_EVENT_QUEUE_PROCESSING_TIME_AVG)
                .max(&APPLICATION_EVENT_QUEUE_PROCESSING_TIME_MAX),
            background_queue_time: Sensor::new()
                .avg(&BACKGROUND_EVENT_QUEUE_TIME_AVG)
                .max(&BACKGROUND_EVENT_QUEUE_TIME_MAX),
            background_queue_processing: Sensor::new()
                .avg(&BACKGROUND_EVENT_QUEUE_PROCESSING_TIME_AVG)
                .max(&BACKGROUND_EVENT_QUEUE_PROCESSING_TIME_MAX),
        }
    }

    /// The background loop began a round (Java's `recordTimeBetweenNetworkThreadPoll`, from
    /// the previous round's start).
    pub fn record_network_thread_poll(&mut self, now: Instant) {
        let now_ms = self.clock.ms(now);
        if let Some(last) = self.last_network_thread_poll_ms {
            self.network_thread_poll.record(
                &self.config,
                now_ms.saturating_sub(last) as f64,
                now_ms,
            );
        }
        self.last_network_thread_poll_ms = Some(now_ms);
    }

    /// An event of `queue` was taken `waited` after it was queued.
    pub fn record_queue_time(&mut self, queue: EventQueue, waited: Duration, now: Instant) {
        let now_ms = self.clock.ms(now);
        let sensor = match queue {
            EventQueue::Application => &mut self.application_queue_time,
            EventQueue::Background => &mut self.background_queue_time,
        };
        sensor.record(&self.config, waited.as_millis() as f64, now_ms);
    }

    /// The events taken from `queue` in one go were processed in `took`.
    pub fn record_queue_processing(&mut self, queue: EventQueue, took: Duration, now: Instant) {
        let now_ms = self.clock.ms(now);
        let sensor = match queue {
            EventQueue::Application => &mut self.application_queue_processing,
            EventQueue::Background => &mut self.background_queue_processing,
        };
        sensor.record(&self.config, took.as_millis() as f64, now_ms);
    }

    /// The `client-id` tag's value.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// A node task reported `event` on its connection to `node_id`.
    pub fn record_network(&mut self, node_id: i32, event: NetworkEvent, now: Instant) {
        let now_ms = self.clock.ms(now);
        self.network.record(&self.config, node_id, event, now_ms);
    }

    /// The partitions fetched from a follower (KIP-392) and that follower, as of now.
    /// Called on every loop iteration: copies only when something changed.
    pub fn set_preferred_read_replicas<'a>(
        &mut self,
        replicas: impl Iterator<Item = (&'a TopicPartition, i32)> + Clone,
    ) {
        let known = &self.preferred_read_replicas;
        let unchanged = replicas.clone().count() == known.len()
            && replicas.clone().all(|(tp, r)| known.get(tp) == Some(&r));
        if unchanged {
            return;
        }
        self.preferred_read_replicas = replicas.map(|(tp, r)| (tp.clone(), r)).collect();
    }

    /// A rebalance listener method returned (or failed) after `took` (Java's
    /// `RebalanceCallbackMetricsManager`).
    pub fn record_listener_call(
        &mut self,
        callback: RebalanceCallback,
        took: Duration,
        now: Instant,
    ) {
        let now_ms = self.clock.ms(now);
        let sensor = match callback {
            RebalanceCallback::Revoked => &mut self.partition_revoked,
            RebalanceCallback::Assigned => &mut self.partition_assigned,
            RebalanceCallback::Lost => &mut self.partition_lost,
        };
        sensor.record(&self.config, took.as_millis() as f64, now_ms);
    }

    /// `commit_sync` returned after `took` (Java's `recordCommitSync`, in ns).
    pub fn record_commit_sync(&mut self, took: Duration, now: Instant) {
        let now_ms = self.clock.ms(now);
        self.commit_sync_time
            .record(&self.config, took.as_nanos() as f64, now_ms);
    }

    /// `committed` returned after `took` (Java's `recordCommitted`, in ns).
    pub fn record_committed(&mut self, took: Duration, now: Instant) {
        let now_ms = self.clock.ms(now);
        self.committed_time
            .record(&self.config, took.as_nanos() as f64, now_ms);
    }

    /// A heartbeat (Heartbeat or ConsumerGroupHeartbeat) was sent.
    pub fn record_heartbeat_sent(&mut self, now: Instant) {
        self.last_heartbeat_sent_ms = Some(self.clock.ms(now));
    }

    /// A response from `node` (`None`: a request to the least loaded node) arrived
    /// `latency_ms` after its request was sent.
    pub fn record_response(
        &mut self,
        response: TimedResponse,
        node: Option<i32>,
        latency_ms: u64,
        now: Instant,
    ) {
        let now_ms = self.clock.ms(now);
        let config = &self.config;
        let latency = latency_ms as f64;
        match response {
            TimedResponse::Fetch(size) => {
                self.fetch_latency.record(config, latency, now_ms);
                if let Some(node) = node {
                    self.network
                        .record_fetch_latency(config, node, latency, now_ms);
                }
                self.fetch_size.record(config, size.bytes as f64, now_ms);
                self.fetch_records
                    .record(config, size.records as f64, now_ms);
                self.fetch_throttle
                    .record(config, f64::from(size.throttle_time_ms), now_ms);
            }
            TimedResponse::Commit => self.commit.record(config, latency, now_ms),
            TimedResponse::Heartbeat => self.heartbeat.record(config, latency, now_ms),
            TimedResponse::Join => self.join.record(config, latency, now_ms),
            TimedResponse::Sync => self.sync.record(config, latency, now_ms),
        }
    }

    /// The membership has completed `completed` rebalances, the last taking `last_ms`, and
    /// seen `failed` fail: each one not yet recorded is recorded (Java records each as it
    /// ends or fails).
    pub fn record_rebalances(&mut self, completed: u64, last_ms: u64, failed: u64, now: Instant) {
        let now_ms = self.clock.ms(now);
        for _ in self.failed_rebalances_recorded..failed {
            self.failed_rebalance.record(&self.config, 1.0, now_ms);
        }
        self.failed_rebalances_recorded = self.failed_rebalances_recorded.max(failed);
        if completed <= self.rebalances_recorded {
            return;
        }
        for _ in self.rebalances_recorded..completed {
            self.rebalance.record(&self.config, last_ms as f64, now_ms);
        }
        self.rebalances_recorded = completed;
        self.last_rebalance_end_ms = Some(now_ms);
    }

    /// `poll` started (Java's `KafkaConsumerMetrics.recordPollStart`).
    pub fn record_poll_start(&mut self, now: Instant) {
        let now_ms = self.clock.ms(now);
        self.time_since_last_poll_ms = self
            .last_poll_start_ms
            .map_or(0, |last| now_ms.saturating_sub(last));
        self.time_between_poll
            .record(&self.config, self.time_since_last_poll_ms as f64, now_ms);
        self.last_poll_start_ms = Some(now_ms);
    }

    /// `poll` returned: the fraction of the time since the previous `poll` began that was
    /// spent inside this one (Java's `recordPollEnd`).
    pub fn record_poll_end(&mut self, now: Instant) {
        let now_ms = self.clock.ms(now);
        let poll_ms = now_ms.saturating_sub(self.last_poll_start_ms.unwrap_or(now_ms));
        let total_ms = poll_ms + self.time_since_last_poll_ms;
        // Java divides 0 by 0 here (NaN) for a first poll that returned at once.
        let ratio = if total_ms == 0 {
            f64::NAN
        } else {
            poll_ms as f64 / total_ms as f64
        };
        self.poll_idle_ratio.record(&self.config, ratio, now_ms);
    }

    /// Appends every metric's value; `assigned` is the current assignment.
    pub fn measure_into(
        &mut self,
        now: Instant,
        assigned: &BTreeSet<TopicPartition>,
        out: &mut Vec<Metric>,
    ) {
        let now_ms = self.clock.ms(now);
        let config = &self.config;
        let client = [("client-id", self.client_id.clone())];
        for sensor in [
            &mut self.fetch_latency,
            &mut self.fetch_size,
            &mut self.fetch_records,
            &mut self.fetch_throttle,
            &mut self.commit,
            &mut self.heartbeat,
            &mut self.join,
            &mut self.sync,
            &mut self.rebalance,
            &mut self.failed_rebalance,
            &mut self.time_between_poll,
            &mut self.poll_idle_ratio,
            &mut self.partition_revoked,
            &mut self.partition_assigned,
            &mut self.partition_lost,
            &mut self.commit_sync_time,
            &mut self.committed_time,
            &mut self.network_thread_poll,
            &mut self.application_queue_time,
            &mut self.application_queue_processing,
            &mut self.background_queue_time,
            &mut self.background_queue_processing,
        ] {
            sensor.measure_into(config, now_ms, &client, out);
        }
        out.push(metric(
            &LAST_HEARTBEAT_SECONDS_AGO,
            &client,
            seconds_ago(self.last_heartbeat_sent_ms, now_ms),
        ));
        out.push(metric(
            &LAST_REBALANCE_SECONDS_AGO,
            &client,
            seconds_ago(self.last_rebalance_end_ms, now_ms),
        ));
        out.push(metric(
            &LAST_POLL_SECONDS_AGO,
            &client,
            seconds_ago(self.last_poll_start_ms, now_ms),
        ));
        out.push(metric(&ASSIGNED_PARTITIONS, &client, assigned.len() as f64));
        // Java registers this gauge for each assigned partition: the replica, or -1.
        for tp in assigned {
            let replica = self.preferred_read_replicas.get(tp).copied().unwrap_or(-1);
            let tags = [
                ("client-id", self.client_id.clone()),
                ("topic", tp.topic.replace('.', "_")),
                ("partition", tp.partition.to_string()),
            ];
            out.push(metric(&PREFERRED_READ_REPLICA, &tags, f64::from(replica)));
        }
        self.network
            .measure_into(config, now_ms, &self.client_id, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::Duration;

    fn six() -> BTreeSet<TopicPartition> {
        (0..6).map(|p| TopicPartition::new("t", p)).collect()
    }

    fn value(metrics: &[Metric], name: &str) -> f64 {
        metrics
            .iter()
            .find(|m| m.name.name == name)
            .unwrap_or_else(|| panic!("{name} missing"))
            .value
    }

    #[test]
    fn responses_feed_their_sensors() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut metrics = ClientMetrics::new(
            MetricConfig {
                samples: 2,
                window_ms: 30_000,
            },
            "c1".into(),
        );
        let fetch = |bytes, records| {
            TimedResponse::Fetch(FetchResponseSize {
                bytes,
                records,
                throttle_time_ms: 0,
            })
        };
        metrics.record_response(fetch(1_000, 10), Some(1), 20, at(0));
        metrics.record_response(fetch(3_000, 30), Some(1), 40, at(100));
        metrics.record_response(TimedResponse::Commit, Some(2), 7, at(200));
        metrics.record_heartbeat_sent(at(300));
        metrics.record_response(TimedResponse::Heartbeat, Some(2), 3, at(310));
        metrics.record_rebalances(2, 1_500, 1, at(400));
        let mut out = Vec::new();
        metrics.measure_into(at(2_400), &six(), &mut out);
        assert_eq!(value(&out, "fetch-latency-avg"), 30.0);
        assert_eq!(value(&out, "fetch-latency-max"), 40.0);
        assert_eq!(value(&out, "fetch-total"), 2.0);
        assert_eq!(value(&out, "fetch-size-avg"), 2_000.0);
        assert_eq!(value(&out, "fetch-size-max"), 3_000.0);
        assert_eq!(value(&out, "records-per-request-avg"), 20.0);
        assert_eq!(value(&out, "commit-latency-avg"), 7.0);
        assert_eq!(value(&out, "commit-total"), 1.0);
        assert_eq!(value(&out, "heartbeat-response-time-max"), 3.0);
        assert_eq!(value(&out, "heartbeat-total"), 1.0);
        assert_eq!(value(&out, "last-heartbeat-seconds-ago"), 2.0);
        assert_eq!(value(&out, "rebalance-total"), 2.0);
        assert_eq!(value(&out, "rebalance-latency-total"), 3_000.0);
        assert_eq!(value(&out, "last-rebalance-seconds-ago"), 2.0);
        assert_eq!(value(&out, "assigned-partitions"), 6.0);
        assert!(value(&out, "join-time-avg").is_nan());
        assert_eq!(value(&out, "join-total"), 0.0);
        assert_eq!(value(&out, "last-poll-seconds-ago"), -1.0);

        assert_eq!(value(&out, "failed-rebalance-total"), 1.0);
        // The same counts again record nothing.
        metrics.record_rebalances(2, 1_500, 1, at(2_500));
        let mut out = Vec::new();
        metrics.measure_into(at(2_500), &six(), &mut out);
        assert_eq!(value(&out, "rebalance-total"), 2.0);
        assert_eq!(value(&out, "failed-rebalance-total"), 1.0);
    }

    #[test]
    fn poll_timing_follows_java() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut metrics = ClientMetrics::default();
        metrics.record_poll_start(at(0));
        metrics.record_poll_end(at(100));
        // 300 ms of application work, then a poll of 100 ms.
        metrics.record_poll_start(at(400));
        metrics.record_poll_end(at(500));
        let mut out = Vec::new();
        metrics.measure_into(at(2_600), &BTreeSet::new(), &mut out);
        // Between starts: 0 (first poll, as Java records it) and 400.
        assert_eq!(value(&out, "time-between-poll-avg"), 200.0);
        assert_eq!(value(&out, "time-between-poll-max"), 400.0);
        // 100 / (100 + 0) and 100 / (100 + 400).
        assert_eq!(value(&out, "poll-idle-ratio-avg"), (1.0 + 0.2) / 2.0);
        assert_eq!(value(&out, "last-poll-seconds-ago"), 2.0);
    }

    #[test]
    fn listener_calls_and_commit_time_are_measured() {
        let start = Instant::now();
        let mut metrics = ClientMetrics::default();
        metrics.record_listener_call(
            RebalanceCallback::Assigned,
            Duration::from_millis(30),
            start,
        );
        metrics.record_listener_call(
            RebalanceCallback::Assigned,
            Duration::from_millis(10),
            start,
        );
        metrics.record_listener_call(RebalanceCallback::Lost, Duration::from_millis(5), start);
        metrics.record_commit_sync(Duration::from_micros(1_500), start);
        metrics.record_commit_sync(Duration::from_micros(500), start);
        metrics.record_committed(Duration::from_nanos(700), start);
        let mut out = Vec::new();
        metrics.measure_into(start, &BTreeSet::new(), &mut out);
        assert_eq!(value(&out, "partition-assigned-latency-avg"), 20.0);
        assert_eq!(value(&out, "partition-assigned-latency-max"), 30.0);
        assert_eq!(value(&out, "partition-lost-latency-max"), 5.0);
        assert!(value(&out, "partition-revoked-latency-avg").is_nan());
        assert_eq!(value(&out, "commit-sync-time-ns-total"), 2_000_000.0);
        assert_eq!(value(&out, "committed-time-ns-total"), 700.0);
    }

    #[test]
    fn every_assigned_partition_reports_its_read_replica_or_minus_one() {
        let start = Instant::now();
        let mut metrics = ClientMetrics::new(MetricConfig::default(), "c1".into());
        let a0 = TopicPartition::new("a.b", 0);
        metrics.set_preferred_read_replicas([(&a0, 3)].into_iter());
        let assigned = BTreeSet::from([a0.clone(), TopicPartition::new("a.b", 1)]);
        let mut out = Vec::new();
        metrics.measure_into(start, &assigned, &mut out);
        let replica = |out: &[Metric], partition: &str| {
            out.iter()
                .find(|m| {
                    m.name.name == "preferred-read-replica"
                        && m.name.tag("partition") == Some(partition)
                        && m.name.tag("topic") == Some("a_b")
                })
                .map(|m| m.value)
        };
        assert_eq!(replica(&out, "0"), Some(3.0));
        assert_eq!(replica(&out, "1"), Some(-1.0));
        // Back to the leader.
        metrics.set_preferred_read_replicas(std::iter::empty());
        let mut out = Vec::new();
        metrics.measure_into(start, &assigned, &mut out);
        assert_eq!(replica(&out, "0"), Some(-1.0));
    }
}
