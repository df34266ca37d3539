//! Group coordinator discovery (Java's `CoordinatorRequestManager`).
//!
//! Level-triggered (the structural answer to KAFKA-10793 and KAFKA-13563): every loop, if a
//! `group.id` is set and the coordinator is unknown, a FindCoordinator goes out — in assign mode
//! too — subject only to "one in flight" and the retry backoff. There is no future to remember
//! to clear: the state is one `Option`. Other managers report the coordinator unknown on
//! NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, REQUEST_TIMED_OUT and on any connection failure
//! of coordinator traffic (KAFKA-17293).

use kafka_protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::{Message, StrBytes};

use super::context::ManagerContext;
use super::request_state::RequestState;
use super::requests::{PollResult, RequestBody, ResponseBody, UnsentRequest};
use crate::error::Error;
use crate::network::{NetworkError, Target};
use crate::protocol::ResponseError;
use crate::rt::{Duration, Instant};
use crate::sabotage::{self, Sabotage};

/// FindCoordinator key type of a consumer group.
const KEY_TYPE_GROUP: i8 = 0;
/// The first FindCoordinator version that batches keys (KIP-699).
const BATCHED_VERSION: i16 = 4;
/// How often an ongoing coordinator outage is logged at warn level (Java: every minute).
const UNKNOWN_WARN_INTERVAL: Duration = Duration::from_secs(60);

/// The group coordinator as discovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Coordinator {
    /// The broker's node id.
    pub node_id: i32,
    /// The connection id coordinator traffic uses: `i32::MAX - node_id`, so it gets a
    /// connection of its own, separate from fetches to the same broker.
    pub connection_id: i32,
    /// Host.
    pub host: String,
    /// Port.
    pub port: u16,
}

/// Finds and remembers the group coordinator.
#[derive(Debug)]
pub(crate) struct CoordinatorRequestManager {
    group_id: Option<String>,
    coordinator: Option<Coordinator>,
    request_state: RequestState,
    next_token: u64,
    in_flight_token: Option<u64>,
    unknown_since: Option<Instant>,
    last_warned_at: Option<Instant>,
    fatal_error: Option<Error>,
}

impl CoordinatorRequestManager {
    /// A manager for `group_id` (none: it never does anything).
    pub fn new(group_id: Option<String>, retry_backoff_ms: u64, retry_backoff_max_ms: u64) -> Self {
        Self {
            group_id,
            coordinator: None,
            request_state: RequestState::new(retry_backoff_ms, retry_backoff_max_ms),
            next_token: 0,
            in_flight_token: None,
            unknown_since: None,
            last_warned_at: None,
            fatal_error: None,
        }
    }

    /// The coordinator, while known.
    pub fn coordinator(&self) -> Option<&Coordinator> {
        self.coordinator.as_ref()
    }

    /// Takes the fatal discovery error, if one happened since the last call, so the commit
    /// manager can fail what waits for the coordinator (KAFKA-18034).
    pub fn take_fatal_error(&mut self) -> Option<Error> {
        self.fatal_error.take()
    }

    /// Sends FindCoordinator when the coordinator is unknown, level-triggered.
    pub fn poll(&mut self, ctx: &mut ManagerContext<'_>) -> PollResult {
        let mut result = PollResult::default();
        let Some(group_id) = self.group_id.clone() else {
            return result;
        };
        if self.coordinator.is_some() {
            return result;
        }
        self.maybe_warn(ctx.now);
        if !self.request_state.can_send(ctx.now) {
            if let Some(at) = self.request_state.backoff_until(ctx.now) {
                result.wake_at(at);
            }
            return result;
        }
        // The request's fields depend on the version, so it is built for one connected broker
        // that offers it, from that broker's own versions (another may be older or newer).
        // Until one is connected, wait: the loop connects the least loaded broker, and the
        // connection wakes us.
        let Some((node_id, version)) = ctx
            .versions
            .least_loaded_supporting::<FindCoordinatorRequest>(FindCoordinatorRequest::VERSIONS)
        else {
            if ctx.versions.any_candidate_connected() {
                // Connected brokers that all lack the API: other brokers may have it, and
                // fresh metadata may name them.
                tracing::warn!(
                    group_id,
                    "no connected broker offers FindCoordinator; refreshing metadata"
                );
                ctx.request_metadata_refresh();
            }
            ctx.effects.connect_least_loaded = true;
            return result;
        };
        let key = StrBytes::from_string(group_id.clone());
        let request = if version >= BATCHED_VERSION {
            FindCoordinatorRequest::default()
                .with_key_type(KEY_TYPE_GROUP)
                .with_coordinator_keys(vec![key])
        } else {
            FindCoordinatorRequest::default()
                .with_key(key)
                .with_key_type(if version >= 1 { KEY_TYPE_GROUP } else { 0 })
        };
        self.next_token += 1;
        self.in_flight_token = Some(self.next_token);
        self.request_state.on_send();
        tracing::debug!(group_id, version, "sending FindCoordinator");
        result.requests.push(UnsentRequest {
            timeout_ms: None,
            target: Target::Node(node_id),
            version: Some(version),
            body: RequestBody::FindCoordinator(request),
            token: self.next_token,
        });
        result
    }

    /// Handles the FindCoordinator response.
    pub fn on_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        token: u64,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) {
        if self.in_flight_token != Some(token) {
            return;
        }
        self.in_flight_token = None;
        let response = match result {
            Ok((ResponseBody::FindCoordinator(body), version)) => (body, version),
            Ok(_) => return,
            Err(error) => {
                tracing::debug!(%error, "FindCoordinator failed");
                self.request_state.on_failure(ctx.now, ctx.rng);
                return;
            }
        };
        match coordinator_from(&response.0, response.1, self.group_id.as_deref()) {
            Ok(coordinator) => {
                tracing::info!(node_id = coordinator.node_id, host = %coordinator.host,
                    port = coordinator.port, "discovered group coordinator");
                self.request_state.on_success();
                self.coordinator = Some(coordinator);
                self.unknown_since = None;
                self.last_warned_at = None;
            }
            Err((code, message)) => {
                self.request_state.on_failure(ctx.now, ctx.rng);
                if code.is_retriable() {
                    tracing::debug!(%code, message, "FindCoordinator: retriable error");
                } else {
                    tracing::warn!(%code, message, "FindCoordinator: fatal error");
                    let error = Error::from_code(code, format!("FindCoordinator: {message}"));
                    self.fatal_error = Some(error.clone());
                    ctx.report(error);
                }
            }
        }
    }

    /// Forgets the coordinator; the next poll rediscovers it.
    pub fn mark_coordinator_unknown(&mut self, now: Instant, reason: &str) {
        if sabotage::active(Sabotage::CoordinatorNeverForgotten) {
            return;
        }
        if let Some(old) = self.coordinator.take() {
            tracing::info!(
                node_id = old.node_id,
                reason,
                "group coordinator marked unknown"
            );
            self.unknown_since = Some(now);
        }
    }

    fn maybe_warn(&mut self, now: Instant) {
        let Some(since) = self.unknown_since else {
            return;
        };
        let due = self
            .last_warned_at
            .map_or(now - since >= UNKNOWN_WARN_INTERVAL, |at| {
                now - at >= UNKNOWN_WARN_INTERVAL
            });
        if due {
            tracing::warn!(
                unknown_for_ms = (now - since).as_millis() as u64,
                "group coordinator still unknown"
            );
            self.last_warned_at = Some(now);
        }
    }
}

/// The coordinator in a response, or its error.
fn coordinator_from(
    response: &FindCoordinatorResponse,
    version: i16,
    group_id: Option<&str>,
) -> Result<Coordinator, (ResponseError, String)> {
    let (code, message, node_id, host, port) = if version >= BATCHED_VERSION {
        let entry = response
            .coordinators
            .iter()
            .find(|c| Some(c.key.as_str()) == group_id)
            .ok_or((
                ResponseError::CoordinatorNotAvailable,
                "response does not name our group".to_owned(),
            ))?;
        (
            entry.error_code,
            entry.error_message.as_ref().map(|m| m.to_string()),
            entry.node_id.0,
            entry.host.to_string(),
            entry.port,
        )
    } else {
        (
            response.error_code,
            response.error_message.as_ref().map(|m| m.to_string()),
            response.node_id.0,
            response.host.to_string(),
            response.port,
        )
    };
    if let Some(code) = ResponseError::try_from_code(code) {
        return Err((code, message.unwrap_or_default()));
    }
    let port = u16::try_from(port).map_err(|_| {
        (
            ResponseError::CoordinatorNotAvailable,
            format!("invalid coordinator port {port}"),
        )
    })?;
    if node_id < 0 {
        return Err((
            ResponseError::CoordinatorNotAvailable,
            format!("invalid coordinator node id {node_id}"),
        ));
    }
    Ok(Coordinator {
        node_id,
        connection_id: i32::MAX - node_id,
        host,
        port,
    })
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::find_coordinator_response::Coordinator as WireCoordinator;
    use kafka_protocol::messages::BrokerId;

    use super::*;
    use crate::internals::context::testing::Parts;
    use crate::internals::settings::ConsumerSettings;
    use crate::internals::test_support::all_versions;

    fn parts() -> Parts {
        let mut p = Parts::new(ConsumerSettings::default());
        p.versions = crate::internals::node_versions::NodeVersions::every_node(all_versions());
        p
    }

    fn ok_response(node: i32) -> Result<(ResponseBody, i16), NetworkError> {
        let body =
            FindCoordinatorResponse::default().with_coordinators(vec![WireCoordinator::default()
                .with_key(StrBytes::from_static_str("g"))
                .with_node_id(BrokerId(node))
                .with_host(StrBytes::from_static_str("b1"))
                .with_port(9092)]);
        Ok((ResponseBody::FindCoordinator(body), 6))
    }

    fn error_response(code: ResponseError) -> Result<(ResponseBody, i16), NetworkError> {
        let body =
            FindCoordinatorResponse::default().with_coordinators(vec![WireCoordinator::default()
                .with_key(StrBytes::from_static_str("g"))
                .with_error_code(code.code())]);
        Ok((ResponseBody::FindCoordinator(body), 6))
    }

    fn sent_token(result: &PollResult) -> u64 {
        assert_eq!(result.requests.len(), 1, "{result:?}");
        result.requests[0].token
    }

    #[test]
    fn no_group_no_requests() {
        let mut p = parts();
        let mut m = CoordinatorRequestManager::new(None, 100, 1_000);
        let r = m.poll(&mut p.ctx());
        assert!(r.requests.is_empty());
        assert_eq!(
            r.next_poll_at, None,
            "nothing to do: no wake-up (KAFKA-20426)"
        );
    }

    #[test]
    fn discovers_with_batched_request_and_synthetic_connection_id() {
        let mut p = parts();
        let mut m = CoordinatorRequestManager::new(Some("g".into()), 100, 1_000);
        let r = m.poll(&mut p.ctx());
        let token = sent_token(&r);
        let request = &r.requests[0];
        assert_eq!(request.target, Target::Node(-1));
        assert_eq!(request.version, Some(6));
        let RequestBody::FindCoordinator(body) = &request.body else {
            panic!()
        };
        assert_eq!(body.coordinator_keys, [StrBytes::from_static_str("g")]);
        assert!(body.key.is_empty());
        // One in flight.
        assert!(m.poll(&mut p.ctx()).requests.is_empty());
        m.on_response(&mut p.ctx(), token, ok_response(3));
        let c = m.coordinator().unwrap();
        assert_eq!(
            (c.node_id, c.connection_id, c.port),
            (3, i32::MAX - 3, 9092)
        );
        assert!(m.poll(&mut p.ctx()).requests.is_empty());
    }

    #[test]
    fn old_brokers_get_the_single_key_request() {
        let mut p = parts();
        p.versions = crate::internals::node_versions::NodeVersions::every_node(
            crate::internals::test_support::versions_capped(10, 3),
        );
        let mut m = CoordinatorRequestManager::new(Some("g".into()), 100, 1_000);
        let r = m.poll(&mut p.ctx());
        let RequestBody::FindCoordinator(body) = &r.requests[0].body else {
            panic!()
        };
        assert_eq!(r.requests[0].version, Some(3));
        assert_eq!(body.key.as_str(), "g");
        assert!(body.coordinator_keys.is_empty());
        let response = FindCoordinatorResponse::default()
            .with_node_id(BrokerId(2))
            .with_host(StrBytes::from_static_str("h"))
            .with_port(1);
        m.on_response(
            &mut p.ctx(),
            r.requests[0].token,
            Ok((ResponseBody::FindCoordinator(response), 3)),
        );
        assert_eq!(m.coordinator().unwrap().node_id, 2);
    }

    #[test]
    fn retriable_errors_back_off_exponentially_then_rediscover() {
        let mut p = parts();
        let mut m = CoordinatorRequestManager::new(Some("g".into()), 100, 1_000);
        let token = sent_token(&m.poll(&mut p.ctx()));
        m.on_response(
            &mut p.ctx(),
            token,
            error_response(ResponseError::CoordinatorNotAvailable),
        );
        let r = m.poll(&mut p.ctx());
        assert!(r.requests.is_empty(), "backing off");
        let first_backoff = r.next_poll_at.unwrap() - p.now;
        assert!(first_backoff <= Duration::from_millis(120));
        p.now = r.next_poll_at.unwrap();
        let token = sent_token(&m.poll(&mut p.ctx()));
        // A disconnect is a failure too.
        m.on_response(&mut p.ctx(), token, Err(NetworkError::NoNodeAvailable));
        let r = m.poll(&mut p.ctx());
        let second_backoff = r.next_poll_at.unwrap() - p.now;
        assert!(
            second_backoff > first_backoff,
            "{second_backoff:?} > {first_backoff:?}"
        );
        p.now = r.next_poll_at.unwrap();
        let token = sent_token(&m.poll(&mut p.ctx()));
        m.on_response(&mut p.ctx(), token, ok_response(1));
        assert!(m.coordinator().is_some());
        assert!(p.effects.errors.is_empty());
    }

    #[test]
    fn level_triggered_after_marked_unknown() {
        // KAFKA-13563 / KAFKA-17293: after NOT_COORDINATOR or a disconnect reported by another
        // manager, the very next poll sends a new FindCoordinator; nothing needs clearing.
        let mut p = parts();
        let mut m = CoordinatorRequestManager::new(Some("g".into()), 100, 1_000);
        for round in 0..3 {
            let token = sent_token(&m.poll(&mut p.ctx()));
            m.on_response(&mut p.ctx(), token, ok_response(round));
            assert_eq!(m.coordinator().unwrap().node_id, round);
            m.mark_coordinator_unknown(p.now, "disconnected");
            assert!(m.coordinator().is_none());
        }
        assert_eq!(m.poll(&mut p.ctx()).requests.len(), 1);
    }

    #[test]
    fn authorization_failure_is_reported_and_kept_for_pending_commits() {
        let mut p = parts();
        let mut m = CoordinatorRequestManager::new(Some("g".into()), 100, 1_000);
        let token = sent_token(&m.poll(&mut p.ctx()));
        m.on_response(
            &mut p.ctx(),
            token,
            error_response(ResponseError::GroupAuthorizationFailed),
        );
        assert!(matches!(
            p.effects.errors[..],
            [Error::Authorization { .. }]
        ));
        assert!(matches!(
            m.take_fatal_error(),
            Some(Error::Authorization { .. })
        ));
        assert!(m.take_fatal_error().is_none());
        assert!(m.coordinator().is_none());
    }

    /// Two brokers of different versions: the request goes to one of them, built for that
    /// broker's own FindCoordinator range (a single key for the old one).
    #[test]
    fn the_request_is_built_for_the_broker_it_goes_to() {
        use crate::internals::node_versions::NodeVersions;
        use crate::internals::test_support::{versions_capped, versions_without};
        use kafka_protocol::messages::ApiKey;
        let mut p = Parts::new(ConsumerSettings::default());
        p.versions = NodeVersions::default()
            .with_node(1, versions_capped(10, 3))
            .with_node(2, all_versions());
        let mut m = CoordinatorRequestManager::new(Some("g".into()), 100, 1_000);
        let r = m.poll(&mut p.ctx());
        assert_eq!(r.requests[0].target, Target::Node(1));
        assert_eq!(r.requests[0].version, Some(3));
        let RequestBody::FindCoordinator(body) = &r.requests[0].body else {
            panic!()
        };
        assert_eq!(body.key.as_str(), "g");

        // A broker without FindCoordinator is passed over for one that has it.
        let mut p = Parts::new(ConsumerSettings::default());
        p.versions = NodeVersions::default()
            .with_node(1, versions_without(&[ApiKey::FindCoordinator]))
            .with_node(2, all_versions());
        let mut m = CoordinatorRequestManager::new(Some("g".into()), 100, 1_000);
        let r = m.poll(&mut p.ctx());
        assert_eq!(r.requests[0].target, Target::Node(2));
        assert_eq!(r.requests[0].version, Some(6));
    }

    #[test]
    fn waits_for_negotiated_versions() {
        let mut p = Parts::new(ConsumerSettings::default());
        let mut m = CoordinatorRequestManager::new(Some("g".into()), 100, 1_000);
        assert!(m.poll(&mut p.ctx()).requests.is_empty());
        assert!(
            p.effects.connect_least_loaded,
            "asks the loop to connect a broker"
        );
    }

    #[test]
    fn stale_responses_are_ignored() {
        let mut p = parts();
        let mut m = CoordinatorRequestManager::new(Some("g".into()), 100, 1_000);
        let token = sent_token(&m.poll(&mut p.ctx()));
        m.on_response(&mut p.ctx(), token + 7, ok_response(1));
        assert!(m.coordinator().is_none());
    }
}
