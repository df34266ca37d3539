//! The telemetry manager on a fake clock: every transition and every error of Java's
//! `ClientTelemetryReporterTest`, against our request and response types.

use kafka_protocol::messages::ApiKey;
use opentelemetry_proto::tonic::metrics::v1::MetricsData;
use prost::Message as _;

use super::*;
use crate::internals::context::testing::Parts;
use crate::internals::node_versions::NodeVersions;
use crate::internals::settings::ConsumerSettings;
use crate::internals::test_support::{all_versions, versions_without};
use crate::metric::{MetricName, FETCH_MANAGER_GROUP};
use crate::network::CloseReason;

const ID: Uuid = Uuid::from_u128(0x1234);

fn parts() -> Parts {
    let mut parts = Parts::new(ConsumerSettings {
        group_id: Some("g".into()),
        ..ConsumerSettings::default()
    });
    parts.versions = NodeVersions::default().with_node(1, all_versions());
    parts
}

fn sample() -> Sample {
    Sample {
        metrics: vec![Metric {
            name: MetricName {
                group: FETCH_MANAGER_GROUP,
                name: "records-consumed-total",
                tags: vec![("client-id", "c".into())],
            },
            description: "",
            value: 42.0,
        }],
        now_unix_ms: 1_700_000_000_000,
    }
}

fn poll(m: &mut TelemetryManager, p: &mut Parts) -> PollResult {
    m.poll(&mut p.ctx(), sample)
}

fn subscription(interval_ms: i32, requested: &[&str]) -> GetTelemetrySubscriptionsResponse {
    GetTelemetrySubscriptionsResponse::default()
        .with_client_instance_id(ID)
        .with_subscription_id(7)
        .with_push_interval_ms(interval_ms)
        .with_accepted_compression_types(vec![4, 1])
        .with_requested_metrics(
            requested
                .iter()
                .map(|m| StrBytes::from_string((*m).to_owned()))
                .collect(),
        )
}

fn respond_subscription(
    m: &mut TelemetryManager,
    p: &mut Parts,
    token: u64,
    body: GetTelemetrySubscriptionsResponse,
) {
    m.on_response(
        &mut p.ctx(),
        token,
        Ok((ResponseBody::GetTelemetrySubscriptions(body), 0)),
    );
}

fn respond_push(m: &mut TelemetryManager, p: &mut Parts, token: u64, error: ErrorCode) {
    let body = PushTelemetryResponse::default().with_error_code(error.code());
    m.on_response(
        &mut p.ctx(),
        token,
        Ok((ResponseBody::PushTelemetry(body), 0)),
    );
}

/// The one request of a poll, with its token.
fn single(result: PollResult) -> (RequestBody, u64, Target) {
    assert_eq!(result.requests.len(), 1, "{result:?}");
    let request = result.requests.into_iter().next().unwrap();
    (request.body, request.token, request.target)
}

fn expect_subscription_request(m: &mut TelemetryManager, p: &mut Parts, id: Uuid) -> u64 {
    let (body, token, target) = single(poll(m, p));
    let RequestBody::GetTelemetrySubscriptions(request) = body else {
        panic!("{body:?}")
    };
    assert_eq!(request.client_instance_id, id);
    assert_eq!(target, Target::Node(1));
    assert_eq!(m.state(), TelemetryState::SubscriptionInProgress);
    token
}

fn expect_push(m: &mut TelemetryManager, p: &mut Parts) -> (PushTelemetryRequest, u64) {
    let (body, token, _) = single(poll(m, p));
    let RequestBody::PushTelemetry(request) = body else {
        panic!("{body:?}")
    };
    (request, token)
}

/// A fresh manager that asked for its first subscription and got `body` back.
fn answered(body: GetTelemetrySubscriptionsResponse) -> (TelemetryManager, Parts) {
    let mut p = parts();
    let mut m = TelemetryManager::new(true);
    let token = expect_subscription_request(&mut m, &mut p, Uuid::nil());
    respond_subscription(&mut m, &mut p, token, body);
    (m, p)
}

/// Subscribed with `interval_ms`, the staggered first push waited out: a push is due.
fn subscribed(interval_ms: i32) -> (TelemetryManager, Parts) {
    let (m, mut p) = answered(subscription(interval_ms, &["org.apache.kafka.consumer."]));
    assert_eq!(m.state(), TelemetryState::PushNeeded);
    p.advance_ms(u64::try_from(interval_ms).unwrap() * 3 / 2);
    (m, p)
}

#[test]
fn disabled_by_config_sends_nothing() {
    let mut p = parts();
    let mut m = TelemetryManager::new(false);
    let result = poll(&mut m, &mut p);
    assert!(result.requests.is_empty() && result.next_poll_at.is_none());
    m.initiate_close();
    assert!(!m.terminating_push_pending());
}

#[test]
fn waits_for_a_connected_broker_and_turns_off_where_none_has_the_apis() {
    let mut p = parts();
    p.versions = NodeVersions::default();
    let mut m = TelemetryManager::new(true);
    let result = poll(&mut m, &mut p);
    assert!(result.requests.is_empty() && result.next_poll_at.is_none());
    assert!(p.effects.connect_nodes.is_empty() && !p.effects.connect_least_loaded);
    assert!(m.is_enabled(), "no broker connected yet: waits");
    p.versions = NodeVersions::default().with_node(
        1,
        versions_without(&[ApiKey::GetTelemetrySubscriptions, ApiKey::PushTelemetry]),
    );
    assert!(poll(&mut m, &mut p).requests.is_empty());
    assert!(
        !m.is_enabled(),
        "a cluster without KIP-714 keeps telemetry off"
    );
    assert!(poll(&mut m, &mut p).requests.is_empty());
}

#[test]
fn passes_over_a_broker_without_the_apis_and_sticks_to_its_broker() {
    let mut p = parts();
    p.versions = NodeVersions::default()
        .with_node(1, versions_without(&[ApiKey::PushTelemetry]))
        .with_node(2, all_versions())
        .with_node(3, all_versions());
    let mut m = TelemetryManager::new(true);
    let (_, token, target) = single(poll(&mut m, &mut p));
    assert_eq!(target, Target::Node(2));
    respond_subscription(&mut m, &mut p, token, subscription(1000, &["*"]));
    p.advance_ms(1500);
    let (_, _, target) = single(poll(&mut m, &mut p));
    assert_eq!(target, Target::Node(2), "sticky");
}

#[test]
fn subscription_then_staggered_first_push_then_pushes_on_the_interval() {
    let mut p = parts();
    let mut m = TelemetryManager::new(true);
    let token = expect_subscription_request(&mut m, &mut p, Uuid::nil());
    assert!(m.client_instance_id().is_none());
    respond_subscription(
        &mut m,
        &mut p,
        token,
        subscription(10_000, &["org.apache.kafka.consumer.fetch"]),
    );
    assert_eq!(m.client_instance_id(), Some(ID));
    let start = p.now;
    let wake = poll(&mut m, &mut p)
        .next_poll_at
        .expect("the first push is scheduled");
    let first_ms = wake.duration_since(start).as_millis();
    assert!(
        (5_000..=15_000).contains(&first_ms),
        "jitter 50%-150%: {first_ms}"
    );
    p.now = wake - Duration::from_millis(1);
    assert!(poll(&mut m, &mut p).requests.is_empty());
    p.now = wake;
    let (push, token) = expect_push(&mut m, &mut p);
    assert_eq!(m.state(), TelemetryState::PushInProgress);
    assert_eq!(push.client_instance_id, ID);
    assert_eq!(push.subscription_id, 7);
    assert!(!push.terminating);
    assert_eq!(
        push.compression_type,
        Compression::Zstd.id() as i8,
        "the broker's first choice"
    );
    let raw = zstd::decode_all(push.metrics.as_ref()).unwrap();
    let data = MetricsData::decode(raw.as_slice()).unwrap();
    let rm = &data.resource_metrics[0];
    assert_eq!(rm.resource.as_ref().unwrap().attributes[0].key, "group_id");
    assert_eq!(
        rm.scope_metrics[0].metrics[0].name,
        "org.apache.kafka.consumer.fetch.manager.records.consumed.total"
    );
    // Nothing else while the push is out.
    assert!(poll(&mut m, &mut p).requests.is_empty());
    respond_push(&mut m, &mut p, token, ErrorCode::from_i16(0));
    assert_eq!(m.state(), TelemetryState::PushNeeded);
    let next = poll(&mut m, &mut p).next_poll_at.unwrap();
    assert_eq!(
        next,
        p.now + Duration::from_millis(10_000),
        "later pushes: the interval itself"
    );
    p.now = next;
    let (push, _) = expect_push(&mut m, &mut p);
    assert!(!push.terminating);
}

#[test]
fn jitter_comes_from_the_injected_rng() {
    let first_push_ms = |seed: u64| {
        let mut p = parts();
        p.rng = crate::rt::SeededRng::seed_from_u64(seed);
        let mut m = TelemetryManager::new(true);
        let token = expect_subscription_request(&mut m, &mut p, Uuid::nil());
        respond_subscription(&mut m, &mut p, token, subscription(10_000, &["*"]));
        m.interval_ms
    };
    assert_eq!(first_push_ms(1), first_push_ms(1));
    assert_ne!(first_push_ms(1), first_push_ms(2));
}

#[test]
fn empty_requested_metrics_means_no_push_and_a_new_subscription_after_the_interval() {
    let (mut m, mut p) = answered(subscription(2_000, &[]));
    assert_eq!(m.state(), TelemetryState::SubscriptionNeeded);
    let next = poll(&mut m, &mut p).next_poll_at.unwrap();
    assert_eq!(next, p.now + Duration::from_millis(2_000), "not staggered");
    p.now = next;
    expect_subscription_request(&mut m, &mut p, ID);
}

#[test]
fn invalid_push_interval_becomes_the_default() {
    let (m, _p) = answered(subscription(0, &["*"]));
    assert_eq!(
        m.subscription.as_ref().unwrap().push_interval_ms,
        DEFAULT_PUSH_INTERVAL_MS
    );
}

#[test]
fn a_nil_instance_id_from_the_broker_turns_telemetry_off() {
    let (m, _p) = answered(subscription(1000, &["*"]).with_client_instance_id(Uuid::nil()));
    assert!(!m.is_enabled());
}

#[test]
fn push_errors_follow_maybe_fetch_error_interval_ms() {
    // (error, Some(wait before the next GetTelemetrySubscriptions) or None: disabled)
    let cases = [
        (ErrorCode::UNKNOWN_SUBSCRIPTION_ID, Some(0)),
        (ErrorCode::UNSUPPORTED_COMPRESSION_TYPE, Some(0)),
        (ErrorCode::TELEMETRY_TOO_LARGE, Some(1000)),
        (ErrorCode::THROTTLING_QUOTA_EXCEEDED, Some(1000)),
        (ErrorCode::INVALID_RECORD, None),
        (ErrorCode::INVALID_REQUEST, None),
        (ErrorCode::UNSUPPORTED_VERSION, None),
        (ErrorCode::UNKNOWN_SERVER_ERROR, None),
    ];
    for (error, wait_ms) in cases {
        let (mut m, mut p) = subscribed(1000);
        let (_, token) = expect_push(&mut m, &mut p);
        respond_push(&mut m, &mut p, token, error);
        assert_eq!(m.state(), TelemetryState::SubscriptionNeeded, "{error}");
        match wait_ms {
            Some(ms) => {
                assert!(m.is_enabled(), "{error}");
                let result = poll(&mut m, &mut p);
                if ms == 0 {
                    let (body, _, _) = single(result);
                    // The new subscription request carries the assigned id.
                    let RequestBody::GetTelemetrySubscriptions(r) = body else {
                        panic!()
                    };
                    assert_eq!(r.client_instance_id, ID);
                } else {
                    assert_eq!(
                        result.next_poll_at,
                        Some(p.now + Duration::from_millis(ms)),
                        "{error}"
                    );
                    p.advance_ms(ms);
                    expect_subscription_request(&mut m, &mut p, ID);
                }
            }
            None => {
                assert!(!m.is_enabled(), "{error}");
                let result = poll(&mut m, &mut p);
                assert!(result.requests.is_empty() && result.next_poll_at.is_none());
            }
        }
    }
}

#[test]
fn subscription_errors_before_any_subscription_use_the_default_interval() {
    for (error, wait_ms) in [
        (
            ErrorCode::THROTTLING_QUOTA_EXCEEDED,
            Some(DEFAULT_PUSH_INTERVAL_MS),
        ),
        (ErrorCode::UNKNOWN_SUBSCRIPTION_ID, Some(0)),
        (ErrorCode::INVALID_REQUEST, None),
    ] {
        let (mut m, mut p) =
            answered(GetTelemetrySubscriptionsResponse::default().with_error_code(error.code()));
        assert_eq!(m.state(), TelemetryState::SubscriptionNeeded);
        assert_eq!(m.is_enabled(), wait_ms.is_some(), "{error}");
        if let Some(ms) = wait_ms.filter(|&ms| ms > 0) {
            assert_eq!(
                poll(&mut m, &mut p).next_poll_at,
                Some(p.now + Duration::from_millis(ms))
            );
        }
    }
}

#[test]
fn network_failures_retry_after_the_default_interval_or_turn_telemetry_off() {
    let (mut m, mut p) = subscribed(1000);
    let (_, token) = expect_push(&mut m, &mut p);
    m.on_response(&mut p.ctx(), token, Err(NetworkError::NoNodeAvailable));
    assert_eq!(m.state(), TelemetryState::SubscriptionNeeded);
    assert_eq!(
        poll(&mut m, &mut p).next_poll_at,
        Some(p.now + Duration::from_millis(DEFAULT_PUSH_INTERVAL_MS))
    );
    p.advance_ms(DEFAULT_PUSH_INTERVAL_MS);
    let token = expect_subscription_request(&mut m, &mut p, ID);
    let fatal = NetworkError::ConnectionClosed {
        broker: "node 1".into(),
        reason: CloseReason::Shutdown,
    };
    m.on_response(&mut p.ctx(), token, Err(fatal));
    assert!(!m.is_enabled());
}

#[test]
fn responses_to_other_tokens_are_ignored() {
    let (mut m, mut p) = subscribed(1000);
    let (_, token) = expect_push(&mut m, &mut p);
    respond_push(&mut m, &mut p, token + 100, ErrorCode::INVALID_RECORD);
    assert_eq!(m.state(), TelemetryState::PushInProgress);
    assert!(m.is_enabled());
}

#[test]
fn close_sends_one_terminating_push_at_once() {
    let (mut m, mut p) = answered(subscription(60_000, &["*"]));
    // Closing long before the next push is due: the terminating push goes at once.
    m.initiate_close();
    assert_eq!(m.state(), TelemetryState::TerminatingPushNeeded);
    assert!(
        !m.terminating_push_pending(),
        "not sent yet: close does not wait for it"
    );
    let (push, token) = expect_push(&mut m, &mut p);
    assert!(push.terminating);
    assert_eq!(m.state(), TelemetryState::TerminatingPushInProgress);
    assert!(m.terminating_push_pending());
    m.initiate_close();
    assert_eq!(
        m.state(),
        TelemetryState::TerminatingPushInProgress,
        "a second close changes nothing"
    );
    respond_push(&mut m, &mut p, token, ErrorCode::from_i16(0));
    assert_eq!(m.state(), TelemetryState::Terminated);
    assert!(!m.terminating_push_pending());
    assert!(poll(&mut m, &mut p).requests.is_empty());
}

#[test]
fn a_failed_terminating_push_ends_telemetry() {
    let (mut m, mut p) = subscribed(1000);
    m.initiate_close();
    let (_, token) = expect_push(&mut m, &mut p);
    m.on_response(&mut p.ctx(), token, Err(NetworkError::NoNodeAvailable));
    assert_eq!(m.state(), TelemetryState::Terminated);
    assert!(!m.terminating_push_pending());
}

#[test]
fn close_before_a_subscription_sends_nothing() {
    let mut p = parts();
    let mut m = TelemetryManager::new(true);
    m.initiate_close();
    assert_eq!(m.state(), TelemetryState::SubscriptionNeeded);
    assert!(!m.terminating_push_pending());
    // While the first subscription request is out, the client has no answer yet either.
    let token = expect_subscription_request(&mut m, &mut p, Uuid::nil());
    m.initiate_close();
    assert!(!m.terminating_push_pending());
    // Java ignores a subscription that arrives once closing has begun; here closing had not
    // begun (no request answered yet), so the subscription is taken.
    respond_subscription(&mut m, &mut p, token, subscription(1000, &["*"]));
    assert_eq!(m.state(), TelemetryState::PushNeeded);
    m.close();
    assert_eq!(m.state(), TelemetryState::Terminated);
}

#[test]
fn a_subscription_answered_after_close_began_is_ignored() {
    let (mut m, mut p) = subscribed(1000);
    let (_, token) = expect_push(&mut m, &mut p);
    respond_push(&mut m, &mut p, token, ErrorCode::UNKNOWN_SUBSCRIPTION_ID);
    let token = expect_subscription_request(&mut m, &mut p, ID);
    m.initiate_close();
    assert_eq!(m.state(), TelemetryState::TerminatingPushNeeded);
    respond_subscription(
        &mut m,
        &mut p,
        token,
        subscription(5000, &["*"]).with_subscription_id(8),
    );
    assert_eq!(m.state(), TelemetryState::TerminatingPushNeeded);
    let (push, _) = expect_push(&mut m, &mut p);
    assert!(push.terminating);
    assert_eq!(push.subscription_id, 7, "the old subscription");
}

#[test]
fn uncompressed_when_the_broker_accepts_no_codec() {
    let (mut m, mut p) =
        answered(subscription(1000, &["*"]).with_accepted_compression_types(Vec::new()));
    p.advance_ms(1500);
    let (push, _) = expect_push(&mut m, &mut p);
    assert_eq!(push.compression_type, 0);
    MetricsData::decode(push.metrics.as_ref()).unwrap();
}

#[test]
fn a_new_temporality_resets_the_sums() {
    let (mut m, mut p) = subscribed(1000);
    let (_, token) = expect_push(&mut m, &mut p);
    assert!(!m.collector.is_empty());
    respond_push(&mut m, &mut p, token, ErrorCode::UNKNOWN_SUBSCRIPTION_ID);
    // The same temporality: the ledger is kept.
    let token = expect_subscription_request(&mut m, &mut p, ID);
    respond_subscription(&mut m, &mut p, token, subscription(1000, &["*"]));
    assert!(!m.collector.is_empty());
    p.advance_ms(1500);
    let (_, token) = expect_push(&mut m, &mut p);
    respond_push(&mut m, &mut p, token, ErrorCode::UNKNOWN_SUBSCRIPTION_ID);
    let token = expect_subscription_request(&mut m, &mut p, ID);
    respond_subscription(
        &mut m,
        &mut p,
        token,
        subscription(1000, &["*"]).with_delta_temporality(true),
    );
    assert!(m.collector.is_empty(), "Java's metricsReset");
}
