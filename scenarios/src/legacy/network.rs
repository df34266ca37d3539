//! `ConsumerNetworkClient`, as the classic consumer has it: requests are queued with a handler
//! tag, and their completions are handed back only when someone *polls* the client
//! (`poll(timer)` or `pollNoWakeup()`). That is where Java runs `RequestFuture` listeners, on
//! whichever thread happens to poll — the property KAFKA-10793 and KAFKA-13563 hinge on.
//!
//! A response that does not parse is not handed to any listener: Java's
//! `NetworkClient.handleCompletedReceives` removes the in-flight request and `parseResponse`
//! throws a `SchemaException` out of `poll`, to whichever thread polled (KAFKA-14729: the
//! heartbeat thread, which dies of it). Here the exception waits in a slot for that thread to
//! take ([`ConsumerNetworkClient::take_thrown`]); the request's future never completes, as in
//! Java. (Java keeps the connection open; our network client closes it, so other requests in
//! flight on it fail as disconnects.)

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;

use kafka_consumer::network::{NetworkClient, NetworkError, RequestOptions, Target};
use kafka_protocol::messages::{
    FetchResponse, FindCoordinatorResponse, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupResponse, MetadataResponse, OffsetCommitResponse, OffsetFetchResponse,
    SyncGroupResponse,
};
use kafka_protocol::protocol::Request;
use sim::history::{Event, Tp};
use tokio::time::Instant;

use super::requests;
use crate::subject::SubjectContext;

/// What a completion is for: the Java listener chained on the request's future.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Handler {
    /// `FindCoordinatorResponseHandler` for the lookup with this id.
    FindCoordinator { lookup: u64 },
    /// `OffsetCommitResponseHandler` for the commit with this id, sent in `generation`.
    OffsetCommit {
        commit: u64,
        offsets: Vec<(Tp, i64)>,
        generation: i32,
    },
    /// `JoinGroupResponseHandler` (sent with this generation).
    JoinGroup { generation: i32 },
    /// `SyncGroupResponseHandler`.
    SyncGroup { generation: i32 },
    /// `HeartbeatResponseHandler` and the heartbeat thread's listener.
    Heartbeat { generation: i32 },
    /// `LeaveGroupResponseHandler`.
    LeaveGroup,
    /// `OffsetFetchResponseHandler`.
    OffsetFetch,
    /// The fetcher's response handler for the fetch to this node.
    Fetch { node: i32 },
    /// The metadata updater.
    Metadata,
}

/// A decoded response body.
#[derive(Debug)]
pub(super) enum Body {
    FindCoordinator(FindCoordinatorResponse),
    OffsetCommit(OffsetCommitResponse),
    OffsetFetch(OffsetFetchResponse),
    Fetch(FetchResponse),
    Metadata(MetadataResponse),
    JoinGroup(JoinGroupResponse),
    SyncGroup(SyncGroupResponse),
    Heartbeat(HeartbeatResponse),
    LeaveGroup(LeaveGroupResponse),
}

/// One finished request.
#[derive(Debug)]
pub(super) struct Completion {
    pub handler: Handler,
    pub result: Result<Body, NetworkError>,
}

type Pending = Pin<Box<dyn Future<Output = Completion> + Send>>;

/// The shared network client of the classic consumer.
pub(super) struct ConsumerNetworkClient {
    client: NetworkClient,
    in_flight: Vec<(i32, &'static str, String, Pending)>,
    next_correlation: i32,
    ctx: SubjectContext,
    /// The exception the last poll threw (an unparseable response), until taken.
    thrown: Option<String>,
}

/// Kafka's error name for a response error code, `None` for success.
pub(super) fn error_name(code: i16) -> Option<String> {
    if code == 0 {
        return None;
    }
    Some(
        match kafka_protocol::error::ResponseError::try_from_code(code) {
            Some(e) => screaming_snake(&format!("{e:?}")),
            None => format!("error {code}"),
        },
    )
}

/// `NotCoordinator` → `NOT_COORDINATOR`, the way Kafka names its errors.
fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// The error a network failure surfaces as in the classic client: every connection loss or
/// request timeout is a `DisconnectException` to the response handlers.
pub(super) fn network_error_name(error: &NetworkError) -> String {
    match error {
        NetworkError::ConnectFailed { .. }
        | NetworkError::ConnectTimedOut { .. }
        | NetworkError::ConnectionClosed { .. }
        | NetworkError::RequestTimedOut { .. } => "DISCONNECTED".to_owned(),
        other => other.to_string(),
    }
}

pub(super) fn node_name(node: i32) -> String {
    if node >= 0 {
        format!("broker-{node}")
    } else {
        format!("bootstrap{node}")
    }
}

impl ConsumerNetworkClient {
    pub fn new(client: NetworkClient, ctx: SubjectContext) -> Self {
        Self {
            client,
            in_flight: Vec::new(),
            next_correlation: 0,
            ctx,
            thrown: None,
        }
    }

    pub fn inner(&mut self) -> &mut NetworkClient {
        &mut self.client
    }

    pub fn ctx(&self) -> &SubjectContext {
        &self.ctx
    }

    /// `hasReadyNodes(now)`: a connection to some broker Metadata named is up.
    pub fn has_ready_nodes(&self) -> bool {
        self.client
            .metadata()
            .brokers()
            .any(|b| self.client.is_connected(b.node_id))
    }

    /// `leastLoadedNode()`.
    pub fn least_loaded_node(&mut self) -> Option<i32> {
        self.client.least_loaded_node()
    }

    /// Queues `request` to `node` at `version` (the version Kafka 3.1 sends), recording it;
    /// returns its correlation id.
    pub fn send<R>(
        &mut self,
        node: i32,
        request: R,
        version: i16,
        handler: Handler,
        wrap: fn(R::Response) -> Body,
    ) -> i32
    where
        R: Request + Send + 'static,
        R::Response: Send + 'static,
    {
        self.send_as(node, request, version, handler, wrap, None)
    }

    /// [`Self::send`] for a group request, recorded with the member id and generation it
    /// carries.
    pub fn send_as<R>(
        &mut self,
        node: i32,
        request: R,
        version: i16,
        handler: Handler,
        wrap: fn(R::Response) -> Body,
        member: Option<(String, i32)>,
    ) -> i32
    where
        R: Request + Send + 'static,
        R::Response: Send + 'static,
    {
        let options = RequestOptions {
            version: Some(version),
            timeout_ms: None,
        };
        self.send_with_options(node, request, options, handler, wrap, member)
    }

    /// The JoinGroup `sendJoinGroupRequest` sends for `generation`, with its own request
    /// timeout (`client.send(coordinator, requestBuilder, joinGroupTimeoutMs)`) when the
    /// release has one.
    pub fn send_join_group(
        &mut self,
        node: i32,
        request: JoinGroupRequest,
        generation: i32,
        member: (String, i32),
        timeout_ms: Option<u64>,
    ) -> i32 {
        let options = RequestOptions {
            version: Some(requests::JOIN_GROUP_VERSION),
            timeout_ms,
        };
        self.send_with_options(
            node,
            request,
            options,
            Handler::JoinGroup { generation },
            Body::JoinGroup,
            Some(member),
        )
    }

    fn send_with_options<R>(
        &mut self,
        node: i32,
        request: R,
        options: RequestOptions,
        handler: Handler,
        wrap: fn(R::Response) -> Body,
        member: Option<(String, i32)>,
    ) -> i32
    where
        R: Request + Send + 'static,
        R::Response: Send + 'static,
    {
        let correlation = self.next_correlation;
        self.next_correlation += 1;
        let api = api_name(&handler);
        let (member_id, generation) = match member {
            Some((m, g)) => (Some(m), Some(g)),
            None => (None, None),
        };
        self.ctx.record(Event::Request {
            api: api.to_owned(),
            correlation,
            node: node_name(node),
            member_id,
            generation,
        });
        let future = self.client.send_with(Target::Node(node), request, options);
        let pending: Pending = Box::pin(async move {
            let result = future.await.map(|r| wrap(r.body));
            Completion { handler, result }
        });
        self.in_flight
            .push((correlation, api, node_name(node), pending));
        correlation
    }

    /// The exception a poll threw since the last call: the polling thread takes it.
    pub fn take_thrown(&mut self) -> Option<String> {
        self.thrown.take()
    }

    /// Whether an exception thrown by a poll is waiting to be taken.
    pub fn has_thrown(&self) -> bool {
        self.thrown.is_some()
    }

    /// Whether any request is still in flight (`pendingRequestCount > 0`).
    pub fn has_in_flight(&self) -> bool {
        !self.in_flight.is_empty()
    }

    /// `poll(timer)`: waits until at least one request completes or `deadline` passes, then
    /// returns every completion that is ready.
    pub async fn poll(&mut self, deadline: Instant) -> Vec<Completion> {
        if self.in_flight.is_empty() {
            tokio::time::sleep_until(deadline).await;
            return Vec::new();
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        tokio::time::timeout(wait, self.ready(true))
            .await
            .unwrap_or_default()
    }

    /// `pollNoWakeup()`: the completions that are ready now, without waiting.
    pub async fn poll_no_wakeup(&mut self) -> Vec<Completion> {
        self.ready(false).await
    }

    /// The request `correlation` if it has completed by now, taken out of the in-flight set
    /// like a poll takes it: a `RequestFuture` that is already done, on which a listener added
    /// now fires at once. `None` while it is in flight (or already taken).
    pub async fn take_if_completed(&mut self, correlation: i32) -> Option<Completion> {
        let i = self.in_flight.iter().position(|f| f.0 == correlation)?;
        let in_flight = &mut self.in_flight;
        let ready = poll_fn(|cx| Poll::Ready(in_flight[i].3.as_mut().poll(cx))).await;
        let Poll::Ready(completion) = ready else {
            return None;
        };
        let (correlation, api, node, _) = self.in_flight.remove(i);
        Self::taken(
            &self.ctx,
            &mut self.thrown,
            correlation,
            api,
            node,
            completion,
        )
    }

    /// Records a completion taken out of the in-flight set; an unparseable response becomes
    /// the exception the poll throws instead of reaching a handler.
    fn taken(
        ctx: &SubjectContext,
        thrown: &mut Option<String>,
        correlation: i32,
        api: &str,
        node: String,
        completion: Completion,
    ) -> Option<Completion> {
        ctx.record(Event::Response {
            api: api.to_owned(),
            correlation,
            node,
            error: summary_error(&completion.result),
            member_id: None,
            generation: None,
        });
        match &completion.result {
            Err(NetworkError::Protocol { source, .. }) => {
                thrown.get_or_insert(format!(
                    "SchemaException: cannot parse the {api} response: {source}"
                ));
                None
            }
            _ => Some(completion),
        }
    }

    /// Collects ready completions; with `wait`, pends until there is at least one.
    async fn ready(&mut self, wait: bool) -> Vec<Completion> {
        let in_flight = &mut self.in_flight;
        let ctx = &self.ctx;
        let thrown = &mut self.thrown;
        poll_fn(|cx| {
            let mut done = Vec::new();
            let mut i = 0;
            while i < in_flight.len() {
                match in_flight[i].3.as_mut().poll(cx) {
                    Poll::Ready(completion) => {
                        let (correlation, api, node, _) = in_flight.remove(i);
                        done.extend(Self::taken(ctx, thrown, correlation, api, node, completion));
                    }
                    Poll::Pending => i += 1,
                }
            }
            if done.is_empty() && wait && thrown.is_none() {
                Poll::Pending
            } else {
                Poll::Ready(done)
            }
        })
        .await
    }
}

fn api_name(handler: &Handler) -> &'static str {
    match handler {
        Handler::FindCoordinator { .. } => "FindCoordinator",
        Handler::OffsetCommit { .. } => "OffsetCommit",
        Handler::OffsetFetch => "OffsetFetch",
        Handler::Fetch { .. } => "Fetch",
        Handler::Metadata => "Metadata",
        Handler::JoinGroup { .. } => "JoinGroup",
        Handler::SyncGroup { .. } => "SyncGroup",
        Handler::Heartbeat { .. } => "Heartbeat",
        Handler::LeaveGroup => "LeaveGroup",
    }
}

/// The first error a response carries, for the history line.
fn summary_error(result: &Result<Body, NetworkError>) -> Option<String> {
    let body = match result {
        Ok(body) => body,
        Err(e) => return Some(network_error_name(e)),
    };
    let code = match body {
        Body::FindCoordinator(r) => r.error_code,
        Body::OffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| p.error_code)
            .find(|c| *c != 0)
            .unwrap_or(0),
        Body::OffsetFetch(r) => {
            if r.error_code != 0 {
                r.error_code
            } else {
                r.topics
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .map(|p| p.error_code)
                    .find(|c| *c != 0)
                    .unwrap_or(0)
            }
        }
        Body::Fetch(r) => {
            if r.error_code != 0 {
                r.error_code
            } else {
                r.responses
                    .iter()
                    .flat_map(|t| &t.partitions)
                    .map(|p| p.error_code)
                    .find(|c| *c != 0)
                    .unwrap_or(0)
            }
        }
        Body::Metadata(_) => 0,
        Body::JoinGroup(r) => r.error_code,
        Body::SyncGroup(r) => r.error_code,
        Body::Heartbeat(r) => r.error_code,
        Body::LeaveGroup(r) => r.error_code,
    };
    error_name(code)
}
