//! The KIP-714 request manager: fetches the broker's telemetry subscription and pushes the
//! consumer's metrics on its interval (Java's `ClientTelemetryReporter.DefaultClientTelemetrySender`
//! driven by `NetworkClient.TelemetrySender`).
//!
//! Sans-IO like the other managers: [`TelemetryManager::poll`] says which request is due and
//! when to ask again, [`TelemetryManager::on_response`] takes the answer. It never connects a
//! broker of its own: it talks to a connected broker whose ApiVersions offer
//! GetTelemetrySubscriptions (71) and PushTelemetry (72), sticking to it while it stays
//! connected (KIP-714), and turns itself off when the connected brokers lack the APIs, as
//! Java's sender does on the `UnsupportedVersionException` it gets there.

use std::collections::BTreeSet;

use bytes::Bytes;
use kafka_protocol::messages::{
    GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse, PushTelemetryRequest,
    PushTelemetryResponse,
};
use kafka_protocol::protocol::{Message, Request, StrBytes};
use uuid::Uuid;

use super::collector::Collector;
use super::otlp::encode_metrics_data;
use super::state::TelemetryState;
use super::subscription::{
    accepted_compression, error_wait, preferred_compression, validate_interval_ms, ErrorWait,
    MetricSelector, Subscription, DEFAULT_PUSH_INTERVAL_MS,
};
use crate::error_code::ErrorCode;
use crate::internals::context::ManagerContext;
use crate::internals::requests::{PollResult, RequestBody, ResponseBody, UnsentRequest};
use crate::metric::Metric;
use crate::network::{NetworkError, Target};
use crate::protocol::{Api, ApiVersionsTable};
use crate::records::compression::compress;
use crate::records::{Compression, SnappyFraming};
use crate::rt::{Duration, Instant};

/// Java's `INITIAL_PUSH_JITTER_LOWER` and `_UPPER`: the first push after a new subscription
/// waits 50% to 150% of the interval, so clients started together do not push together.
const INITIAL_PUSH_JITTER: (f64, f64) = (0.5, 1.5);

/// What a push reports: the consumer's metrics and the wall-clock time they were taken at.
pub(crate) struct Sample {
    /// Every metric, as `Consumer::metrics` would report them now.
    pub metrics: Vec<Metric>,
    /// Milliseconds since the Unix epoch.
    pub now_unix_ms: i64,
}

/// The resource every pushed metric carries (Java's `ClientTelemetryProvider`): the
/// consumer's `group.id`, `group.instance.id` and `client.rack` when set, and its member id
/// once it has joined (`updateMetricsLabels(group_member_id)`).
fn resource_attributes(ctx: &ManagerContext<'_>) -> Vec<(String, String)> {
    let settings = ctx.settings;
    let mut out = Vec::new();
    if let Some(group_id) = &settings.group_id {
        out.push(("group_id".to_owned(), group_id.clone()));
    }
    if let Some(instance_id) = &settings.group_instance_id {
        out.push(("group_instance_id".to_owned(), instance_id.clone()));
    }
    if !settings.client_rack.is_empty() {
        out.push(("client_rack".to_owned(), settings.client_rack.clone()));
    }
    if let Some(member) = ctx.member.filter(|m| !m.member_id.is_empty()) {
        out.push(("group_member_id".to_owned(), member.member_id.clone()));
    }
    out
}

/// Why no broker can take a telemetry request now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NoTarget {
    /// No broker is connected yet: wait (the other managers connect them).
    NotConnected,
    /// The connected brokers do not offer both APIs (no client-metrics plugin).
    Unsupported,
}

/// The versions of GetTelemetrySubscriptions and PushTelemetry a broker offers within
/// ours, if it offers both.
fn telemetry_versions(table: &ApiVersionsTable) -> Option<(i16, i16)> {
    let subscriptions = table
        .select(
            Api(GetTelemetrySubscriptionsRequest::KEY),
            GetTelemetrySubscriptionsRequest::VERSIONS,
        )
        .ok()?;
    let push = table
        .select(
            Api(PushTelemetryRequest::KEY),
            PushTelemetryRequest::VERSIONS,
        )
        .ok()?;
    Some((subscriptions, push))
}

/// The telemetry sender.
#[derive(Debug)]
pub(crate) struct TelemetryManager {
    /// Java's `enabled`: false once an error no retry can cure was seen (or telemetry is
    /// configured off); nothing is sent after that.
    enabled: bool,
    state: TelemetryState,
    subscription: Option<Subscription>,
    /// When the last response was handled (Java's `lastRequestMs`; `None`: never).
    last_request_at: Option<Instant>,
    /// How long after `last_request_at` the next request is due (Java's `intervalMs`).
    interval_ms: u64,
    /// The broker telemetry goes to while it stays connected (Java's `stickyNode`).
    sticky_node: Option<i32>,
    /// The token of the request out, if any.
    in_flight: Option<u64>,
    next_token: u64,
    /// Codecs that failed to compress a payload (Java's `unsupportedCompressionTypes`).
    failed_compression: BTreeSet<u8>,
    collector: Collector,
}

impl TelemetryManager {
    /// A sender; `enabled` is `enable.metrics.push`.
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            state: TelemetryState::SubscriptionNeeded,
            subscription: None,
            last_request_at: None,
            interval_ms: 0,
            sticky_node: None,
            in_flight: None,
            next_token: 0,
            failed_compression: BTreeSet::new(),
            collector: Collector::default(),
        }
    }

    /// Whether telemetry may still send anything.
    #[cfg(test)]
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The client instance id the broker assigned, once a subscription is in.
    pub fn client_instance_id(&self) -> Option<Uuid> {
        self.subscription.as_ref().map(|s| s.client_instance_id)
    }

    /// Whether close should wait for the terminating push: it is out. The background task
    /// polls this manager in the round close begins, so a push that could go out is out when
    /// close looks; one that found no connected broker is not waited for, as Java's close
    /// waits only for requests it sent.
    pub fn terminating_push_pending(&self) -> bool {
        self.enabled && self.state == TelemetryState::TerminatingPushInProgress
    }

    /// The consumer is closing: one last push is due at once if a subscription was loaded
    /// (Java's `initiateClose`).
    pub fn initiate_close(&mut self) {
        if !self.enabled || self.last_request_at.is_none() {
            return;
        }
        if self.state == TelemetryState::SubscriptionNeeded || self.state.is_terminating() {
            return;
        }
        self.set_state(TelemetryState::TerminatingPushNeeded);
    }

    /// Moves to `to` if Java allows it; an invalid transition disables telemetry (Java's
    /// `maybeSetState`).
    fn set_state(&mut self, to: TelemetryState) -> bool {
        match self.state.validate_transition(to) {
            Ok(to) => {
                tracing::debug!(from = ?self.state, ?to, "telemetry state");
                self.state = to;
                true
            }
            Err(invalid) => {
                tracing::warn!(%invalid, "disabling client telemetry");
                self.enabled = false;
                false
            }
        }
    }

    /// Java's `updateErrorResult`.
    fn wait_after_error(&mut self, wait: ErrorWait, now: Instant) {
        self.last_request_at = Some(now);
        match wait {
            ErrorWait::RetryAfterMs(ms) => self.interval_ms = ms,
            ErrorWait::Disable => {
                tracing::debug!("client telemetry disabled for this client");
                self.enabled = false;
            }
            ErrorWait::None => {}
        }
    }

    /// When the next request is due (Java's `timeToNextUpdate`); `None`: nothing is due
    /// until a response arrives or close begins.
    fn due_at(&self, now: Instant) -> Option<Instant> {
        if !self.enabled {
            return None;
        }
        match self.state {
            TelemetryState::SubscriptionNeeded | TelemetryState::PushNeeded => Some(
                self.last_request_at
                    .map_or(now, |at| at + Duration::from_millis(self.interval_ms)),
            ),
            TelemetryState::TerminatingPushNeeded => Some(now),
            _ => None,
        }
    }

    /// The broker to send to and the versions of the two APIs there.
    fn target(&mut self, ctx: &ManagerContext<'_>) -> Result<(i32, i16, i16), NoTarget> {
        let versions_at = |node: i32| {
            let (subscriptions, push) = telemetry_versions(ctx.versions.of(node)?)?;
            Some((node, subscriptions, push))
        };
        if let Some(found) = self.sticky_node.and_then(versions_at) {
            return Ok(found);
        }
        self.sticky_node = None;
        let candidate = ctx
            .versions
            .least_loaded_where(|table| telemetry_versions(table).is_some())
            .and_then(versions_at);
        match candidate {
            Some(found) => {
                self.sticky_node = Some(found.0);
                Ok(found)
            }
            None if ctx.versions.any_candidate_connected() => Err(NoTarget::Unsupported),
            None => Err(NoTarget::NotConnected),
        }
    }

    /// The request due now, if any, and when to be polled next. `sample` is taken only when
    /// a push goes out.
    pub fn poll(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        sample: impl FnOnce() -> Sample,
    ) -> PollResult {
        let mut result = PollResult::default();
        let Some(due) = self.due_at(ctx.now) else {
            return result;
        };
        if due > ctx.now {
            result.wake_at(due);
            return result;
        }
        let (node, subscriptions_version, push_version) = match self.target(ctx) {
            Ok(found) => found,
            Err(NoTarget::NotConnected) => return result,
            Err(NoTarget::Unsupported) => {
                // Java sends anyway and disables telemetry on the UnsupportedVersionException;
                // nothing reaches the broker there either.
                tracing::debug!(
                    "no connected broker supports client telemetry (KIP-714); disabling it"
                );
                self.enabled = false;
                return result;
            }
        };
        let body = match self.state {
            TelemetryState::SubscriptionNeeded => {
                if !self.set_state(TelemetryState::SubscriptionInProgress) {
                    return result;
                }
                // KIP-714: the zero UUID asks the broker to assign an instance id.
                let id = self.client_instance_id().unwrap_or(Uuid::nil());
                (
                    RequestBody::GetTelemetrySubscriptions(
                        GetTelemetrySubscriptionsRequest::default().with_client_instance_id(id),
                    ),
                    subscriptions_version,
                )
            }
            TelemetryState::PushNeeded | TelemetryState::TerminatingPushNeeded => {
                let resource = resource_attributes(ctx);
                match self.push_request(&resource, sample) {
                    Some(request) => (RequestBody::PushTelemetry(request), push_version),
                    None => return result,
                }
            }
            _ => return result,
        };
        let token = self.next_token;
        self.next_token += 1;
        self.in_flight = Some(token);
        result.requests.push(UnsentRequest {
            target: Target::Node(node),
            version: Some(body.1),
            body: body.0,
            token,
            timeout_ms: None,
        });
        result
    }

    /// Java's `createPushRequest`: moves to the push's in-progress state and builds it.
    fn push_request(
        &mut self,
        resource: &[(String, String)],
        sample: impl FnOnce() -> Sample,
    ) -> Option<PushTelemetryRequest> {
        let Some(subscription) = self.subscription.clone() else {
            tracing::warn!(state = ?self.state, "telemetry push due without a subscription");
            self.set_state(TelemetryState::SubscriptionNeeded);
            return None;
        };
        let terminating = self.state == TelemetryState::TerminatingPushNeeded;
        let next = if terminating {
            TelemetryState::TerminatingPushInProgress
        } else {
            TelemetryState::PushInProgress
        };
        if !self.set_state(next) {
            return None;
        }
        let Sample {
            metrics,
            now_unix_ms,
        } = sample();
        let now_unix_nano = u64::try_from(now_unix_ms)
            .unwrap_or(0)
            .saturating_mul(1_000_000);
        let points = self.collector.collect(
            &metrics,
            &subscription.selector,
            subscription.delta_temporality,
            now_unix_nano,
        );
        let payload = encode_metrics_data(resource, &points);
        let mut codec =
            preferred_compression(&subscription.accepted_compression, &self.failed_compression);
        let metrics = match compress(codec, SnappyFraming::Xerial, &payload) {
            Ok(compressed) => compressed,
            Err(error) => {
                // Java: remember the codec as unsupported and send this payload uncompressed.
                tracing::debug!(?codec, %error, "compressing the telemetry payload failed; sending it uncompressed");
                self.failed_compression.insert(codec.id());
                codec = Compression::None;
                payload
            }
        };
        Some(
            PushTelemetryRequest::default()
                .with_client_instance_id(subscription.client_instance_id)
                .with_subscription_id(subscription.subscription_id)
                .with_terminating(terminating)
                .with_compression_type(codec.id() as i8)
                .with_metrics(Bytes::from(metrics)),
        )
    }

    /// Takes the answer to one of this manager's requests.
    pub fn on_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        token: u64,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        if self.in_flight != Some(token) {
            return;
        }
        self.in_flight = None;
        match result {
            Ok((ResponseBody::GetTelemetrySubscriptions(body), _)) => {
                self.on_subscription(ctx, &body)
            }
            Ok((ResponseBody::PushTelemetry(body), _)) => self.on_push(ctx.now, &body),
            Ok((other, _)) => tracing::warn!(?other, "unexpected response to a telemetry request"),
            Err(error) => self.on_failed_request(ctx.now, &error),
        }
    }

    /// Java's `handleResponse(GetTelemetrySubscriptionsResponse)`.
    fn on_subscription(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        body: &GetTelemetrySubscriptionsResponse,
    ) {
        let now = ctx.now;
        let wait = error_wait(
            ErrorCode::from_i16(body.error_code),
            self.subscription.as_ref().map(|s| s.push_interval_ms),
        );
        if wait != ErrorWait::None {
            tracing::debug!(
                error_code = body.error_code,
                ?wait,
                "GetTelemetrySubscriptions failed"
            );
            self.set_state(TelemetryState::SubscriptionNeeded);
            self.wait_after_error(wait, now);
            return;
        }
        if body.client_instance_id.is_nil() {
            // Java's validateClientInstanceId throws here; the broker broke the protocol, so
            // telemetry goes off rather than asking again for an id it will not give.
            tracing::warn!("GetTelemetrySubscriptions returned no client instance id; disabling client telemetry");
            self.enabled = false;
            return;
        }
        let requested: Vec<&str> = body
            .requested_metrics
            .iter()
            .map(StrBytes::as_str)
            .collect();
        let subscription = Subscription {
            client_instance_id: body.client_instance_id,
            subscription_id: body.subscription_id,
            push_interval_ms: validate_interval_ms(body.push_interval_ms),
            accepted_compression: accepted_compression(&body.accepted_compression_types),
            delta_temporality: body.delta_temporality,
            selector: MetricSelector::from_requested(&requested),
        };
        if self
            .subscription
            .as_ref()
            .is_some_and(|old| old.delta_temporality != subscription.delta_temporality)
        {
            tracing::info!(
                delta = subscription.delta_temporality,
                "telemetry temporality changed; resetting metric values"
            );
            self.collector.reset();
        }
        if self.state.is_terminating() {
            return; // closing began while the request was out (Java ignores the answer)
        }
        let next = if subscription.selector == MetricSelector::None {
            TelemetryState::SubscriptionNeeded
        } else {
            TelemetryState::PushNeeded
        };
        if !self.set_state(next) {
            return;
        }
        // Java's updateSubscriptionResult: the first push of a subscription is staggered.
        self.interval_ms = if next == TelemetryState::PushNeeded {
            let (low, high) = INITIAL_PUSH_JITTER;
            let factor = low + (high - low) * ctx.rng.unit_f64();
            (factor * subscription.push_interval_ms as f64).round() as u64
        } else {
            subscription.push_interval_ms
        };
        self.last_request_at = Some(now);
        tracing::info!(client_instance_id = %subscription.client_instance_id, "client telemetry registered");
        self.subscription = Some(subscription);
    }

    /// Java's `handleResponse(PushTelemetryResponse)`.
    fn on_push(&mut self, now: Instant, body: &PushTelemetryResponse) {
        if self.state.is_terminating() {
            // The terminating push was answered (or an earlier push after close began):
            // nothing more is sent.
            if self.state == TelemetryState::TerminatingPushInProgress {
                self.set_state(TelemetryState::Terminated);
            }
            return;
        }
        let push_interval_ms = self
            .subscription
            .as_ref()
            .map_or(DEFAULT_PUSH_INTERVAL_MS, |s| s.push_interval_ms);
        let wait = error_wait(ErrorCode::from_i16(body.error_code), Some(push_interval_ms));
        if wait != ErrorWait::None {
            tracing::debug!(error_code = body.error_code, ?wait, "PushTelemetry failed");
            self.set_state(TelemetryState::SubscriptionNeeded);
            self.wait_after_error(wait, now);
            return;
        }
        self.last_request_at = Some(now);
        self.interval_ms = push_interval_ms;
        self.set_state(TelemetryState::PushNeeded);
    }

    /// Java's `handleFailedRequest`: a request that got no response.
    fn on_failed_request(&mut self, now: Instant, error: &NetworkError) {
        tracing::debug!(%error, "telemetry request failed");
        self.sticky_node = None;
        if self.state.is_terminating() {
            if self.state == TelemetryState::TerminatingPushInProgress {
                self.set_state(TelemetryState::Terminated);
            }
            return;
        }
        if !matches!(
            self.state,
            TelemetryState::SubscriptionInProgress | TelemetryState::PushInProgress
        ) {
            self.wait_after_error(ErrorWait::Disable, now);
            return;
        }
        // The broker may be gone or not support telemetry: wait a full default interval and
        // ask again (maybe another broker); a failure no retry cures turns telemetry off.
        let wait = if error.is_retriable() {
            ErrorWait::RetryAfterMs(DEFAULT_PUSH_INTERVAL_MS)
        } else {
            ErrorWait::Disable
        };
        self.wait_after_error(wait, now);
        self.set_state(TelemetryState::SubscriptionNeeded);
    }

    /// The consumer closed: nothing more is sent (Java's `close`).
    pub fn close(&mut self) {
        if self.state != TelemetryState::Terminated {
            self.set_state(TelemetryState::Terminated);
        }
    }

    #[cfg(test)]
    pub fn state(&self) -> TelemetryState {
        self.state
    }
}

#[cfg(test)]
#[path = "manager_tests.rs"]
mod tests;
