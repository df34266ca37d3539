//! One TCP connection to a broker, driven by the broker's task.
//!
//! The task alone owns the socket. Requests arrive on a channel; the task chooses each one's
//! version, encodes it, records it in flight (bounded by `max_in_flight_requests_per_connection`),
//! and writes whole frames, flushing each batch (madsim's TCP sends only on flush). It reads
//! frames as they arrive and matches them to the oldest in-flight request.
//!
//! Cancellation safety: the write in progress is a boxed future kept across loop iterations,
//! so the `select!` that also reads, accepts requests and watches deadlines never drops a
//! half-written frame; callers only ever hold oneshot receivers. A write is abandoned only when
//! the connection is being closed anyway.
//!
//! Any failure (EOF, I/O error, malformed frame, unexpected correlation id, undecodable
//! response, a timed-out written request) closes the connection: every in-flight request fails
//! with a typed error and the task's caller decides about reconnecting.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use kafka_protocol::messages::{ApiVersionsRequest, SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::{Message, Request, StrBytes, VersionRange};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::mpsc;

use super::in_flight::InFlightRequests;
use super::observer::{ConnectionReport, ObserverHandle};
use super::read_buffer::ReadBuffer;
use super::request::{Command, PendingRequest};
use super::sasl::{self, SaslConfig};
use super::socket::SocketBuffers;
use super::{CloseReason, NetworkError};
use crate::protocol::frame::FrameDecoder;
use crate::protocol::versions::{
    api_versions_request, handle_api_versions_response, ApiVersionsOutcome, ApiVersionsTable,
};
use crate::protocol::{codec, Api, ProtocolError, ResponseError};
use crate::rt::{Duration, Instant, SeededRng};

/// A byte stream to a broker: plain TCP, or TLS over TCP. Boxed so the connection logic is
/// the same for both (and for madsim's simulated TCP).
pub(crate) trait BrokerIo: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> BrokerIo for T {}

pub(crate) type BrokerStream = Box<dyn BrokerIo>;

type WriteFuture =
    Pin<Box<dyn Future<Output = (WriteHalf<BrokerStream>, std::io::Result<()>)> + Send>>;

/// Whether a request carries a secret, and so needs the zeroizing encoder.
#[derive(Clone, Copy)]
enum Carries {
    Nothing,
    /// A password or token (SaslAuthenticate): `codec::encode_secret_request`.
    Secret,
}

/// A SASL exchange longer than this is a broken or hostile server (SCRAM needs 2 rounds).
const MAX_SASL_ROUNDS: usize = 8;

/// The per-connection settings, taken from the client's config.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionSettings {
    pub client_id: Option<StrBytes>,
    pub max_in_flight: usize,
    pub max_response_size_bytes: usize,
    pub request_timeout_ms: u64,
    /// `connections.max.idle.ms`: a connection with no request in flight and no traffic for
    /// this long is closed (`None`: never).
    pub connections_max_idle_ms: Option<u64>,
    /// `send.buffer.bytes` and `receive.buffer.bytes`, applied before connecting.
    pub socket_buffers: SocketBuffers,
    /// Told of the connection and its frames.
    pub observer: Option<ObserverHandle>,
}

/// A written (or about to be written) request.
struct Sent {
    request: Box<dyn PendingRequest>,
    version: i16,
    timeout_ms: u64,
}

/// An established connection.
pub(crate) struct Connection {
    broker: String,
    /// Reports the frames, and the connection's end when dropped.
    report: ConnectionReport,
    settings: ConnectionSettings,
    versions: ApiVersionsTable,
    reader: ReadHalf<BrokerStream>,
    /// The write half while no write is in progress.
    writer: Option<WriteHalf<BrokerStream>>,
    /// The write in progress; it owns the write half until it finishes.
    writing: Option<WriteFuture>,
    /// Frames waiting for the current write to finish.
    outbox: Vec<Bytes>,
    read_buf: ReadBuffer,
    frames: FrameDecoder,
    in_flight: InFlightRequests<Sent>,
    /// KIP-368: the SASL settings to re-authenticate with, and when, while the broker limits
    /// the session's lifetime.
    reauthentication: Option<Reauthentication>,
}

/// A pending KIP-368 re-authentication.
struct Reauthentication {
    config: SaslConfig,
    rng: SeededRng,
    at: Instant,
}

impl Connection {
    /// A connection to node `node_id` (`broker` names it in errors and logs), reported
    /// created to the settings' observer.
    pub fn new(
        stream: BrokerStream,
        node_id: i32,
        broker: String,
        settings: ConnectionSettings,
    ) -> Self {
        let (reader, writer) = tokio::io::split(stream);
        let frames = FrameDecoder::new(settings.max_response_size_bytes);
        Self {
            broker,
            report: ConnectionReport::created(settings.observer.clone(), node_id),
            settings,
            versions: ApiVersionsTable::default(),
            reader,
            writer: Some(writer),
            writing: None,
            outbox: Vec::new(),
            read_buf: ReadBuffer::default(),
            frames,
            in_flight: InFlightRequests::default(),
            reauthentication: None,
        }
    }

    /// The versions negotiated by [`Connection::negotiate`].
    pub fn versions(&self) -> &ApiVersionsTable {
        &self.versions
    }

    /// The ApiVersions handshake: ask at our newest version, fall back to the broker's newest if
    /// it says UNSUPPORTED_VERSION, and keep the resulting table.
    pub async fn negotiate(&mut self) -> Result<(), NetworkError> {
        let timeout_ms = self.settings.request_timeout_ms;
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let mut version = ApiVersionsRequest::VERSIONS.max;
        loop {
            tracing::debug!(broker = %self.broker, version, "ApiVersions");
            let (request, correlation_id) =
                self.encode_alone(&api_versions_request(), version, Carries::Nothing)?;
            let remaining = deadline.saturating_duration_since(Instant::now());
            let frame = self
                .exchange_checked(
                    request,
                    Api(ApiVersionsRequest::KEY),
                    correlation_id,
                    remaining,
                    timeout_ms,
                )
                .await?;
            let (response, _) = codec::decode_api_versions_response(frame, version)
                .map_err(|source| self.protocol_error(source))?;
            match handle_api_versions_response(&response, version) {
                Ok(ApiVersionsOutcome::Negotiated(table)) => {
                    self.versions = table;
                    return Ok(());
                }
                Ok(ApiVersionsOutcome::RetryAt(lower)) => version = lower,
                Err(source) => {
                    return Err(NetworkError::ApiVersions {
                        broker: self.broker.clone(),
                        source,
                    })
                }
            }
        }
    }

    /// SASL authentication, before any other request (Kafka's `SaslClientAuthenticator`):
    /// SaslHandshake v1 names the mechanism, then SaslAuthenticate requests carry its messages
    /// until it completes. Any failure is an `Authentication` error naming the broker and the
    /// mechanism; the broker closes the connection after a failed SaslAuthenticate anyway.
    pub async fn authenticate(
        &mut self,
        config: &SaslConfig,
        rng: &mut SeededRng,
    ) -> Result<(), NetworkError> {
        let mechanism = config.mechanism;
        let broker = self.broker.clone();
        let failed = |code: Option<ResponseError>, message: String| NetworkError::Authentication {
            broker: broker.clone(),
            mechanism: format!("SASL/{mechanism}"),
            code: code.map(crate::error::ErrorCode::of),
            message,
        };
        tracing::debug!(broker = %self.broker, %mechanism, "SaslHandshake");
        let handshake = SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_static_str(mechanism.as_str()));
        // v0 would switch to raw SASL tokens after the handshake; Kafka clients use v1.
        let version =
            self.pinned_version::<SaslHandshakeRequest>(VersionRange { min: 1, max: 1 })?;
        let response = self.round_trip(&handshake, version).await?;
        if let Some(code) = ResponseError::try_from_code(response.error_code) {
            let enabled: Vec<&str> = response.mechanisms.iter().map(|m| m.as_str()).collect();
            return Err(failed(
                Some(code),
                format!("the broker enables [{}]", enabled.join(", ")),
            ));
        }
        let mut client =
            sasl::client_for(config, rng).map_err(|error| failed(None, error.to_string()))?;
        let mut message = client
            .initial_response()
            .map_err(|error| failed(None, error.to_string()))?;
        let version =
            self.pinned_version::<SaslAuthenticateRequest>(SaslAuthenticateRequest::VERSIONS)?;
        for _ in 0..MAX_SASL_ROUNDS {
            // The message moves into the request, and the request is encoded into a frame
            // that is zeroized once written (`encode_secret_request`): no copy of a password
            // or token outlives the exchange.
            let request =
                SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from_owner(message));
            let (frame, correlation_id) = self.encode_alone(&request, version, Carries::Secret)?;
            drop(request);
            let response = self
                .round_trip_frame::<SaslAuthenticateRequest>(frame, version, correlation_id)
                .await?;
            if let Some(code) = ResponseError::try_from_code(response.error_code) {
                let message = response
                    .error_message
                    .as_ref()
                    .map_or_else(|| code.to_string(), |m| m.to_string());
                return Err(failed(Some(code), message));
            }
            match client.evaluate(&response.auth_bytes) {
                Ok(Some(next)) => message = next,
                Ok(None) => {
                    let session_lifetime_ms = response.session_lifetime_ms;
                    tracing::debug!(broker = %self.broker, %mechanism, session_lifetime_ms,
                        "authenticated");
                    self.reauthentication =
                        reauthentication_after(session_lifetime_ms, config, rng);
                    return Ok(());
                }
                Err(error) => return Err(failed(None, error.to_string())),
            }
        }
        Err(failed(
            None,
            format!("no result after {MAX_SASL_ROUNDS} rounds"),
        ))
    }

    /// KIP-368: re-authenticates on this connection once nothing is in flight. New requests
    /// wait in the channel meanwhile; those in flight complete normally first.
    async fn reauthenticate(&mut self) -> Result<(), CloseReason> {
        let Some(mut pending) = self.reauthentication.take() else {
            return Ok(());
        };
        tracing::debug!(broker = %self.broker, "re-authenticating (KIP-368)");
        match self.authenticate(&pending.config, &mut pending.rng).await {
            Ok(()) => Ok(()),
            // A reconnect authenticates afresh (with a new token from the provider); if that
            // fails too, the node reports a typed Authentication error.
            Err(error) => Err(CloseReason::Reauthentication {
                message: error.to_string(),
            }),
        }
    }

    /// The version of `R` both sides support within `ours`.
    fn pinned_version<R: Request>(&self, ours: VersionRange) -> Result<i16, NetworkError> {
        self.versions
            .select(Api(R::KEY), ours)
            .map_err(|source| NetworkError::UnsupportedApi {
                broker: self.broker.clone(),
                source,
            })
    }

    /// One request and its response with nothing else in flight, within `request_timeout_ms`.
    async fn round_trip<R: Request>(
        &mut self,
        request: &R,
        version: i16,
    ) -> Result<R::Response, NetworkError> {
        let (frame, correlation_id) = self.encode_alone(request, version, Carries::Nothing)?;
        self.round_trip_frame::<R>(frame, version, correlation_id)
            .await
    }

    /// `request` as a frame under a fresh correlation id, for the exchanges that run with
    /// nothing else in flight (ApiVersions, SASL, [`round_trip`](Self::round_trip)).
    fn encode_alone<R: Request>(
        &mut self,
        request: &R,
        version: i16,
        carries: Carries,
    ) -> Result<(Bytes, i32), NetworkError> {
        let correlation_id = self.in_flight.allocate_correlation_id();
        let client_id = self.settings.client_id.as_ref();
        let encoded = match carries {
            Carries::Nothing => codec::encode_request(request, version, correlation_id, client_id),
            Carries::Secret => {
                codec::encode_secret_request(request, version, correlation_id, client_id)
            }
        };
        let frame = encoded.map_err(|source| NetworkError::Encode {
            broker: self.broker.clone(),
            source,
        })?;
        Ok((frame, correlation_id))
    }

    /// The second half of [`round_trip`](Self::round_trip): sends `frame` (`R` encoded at
    /// `version` with `correlation_id`) and decodes the answer.
    async fn round_trip_frame<R: Request>(
        &mut self,
        frame: Bytes,
        version: i16,
        correlation_id: i32,
    ) -> Result<R::Response, NetworkError> {
        let timeout_ms = self.settings.request_timeout_ms;
        let frame = self
            .exchange_checked(
                frame,
                Api(R::KEY),
                correlation_id,
                Duration::from_millis(timeout_ms),
                timeout_ms,
            )
            .await?;
        codec::decode_response::<R>(frame, version).map_err(|source| self.protocol_error(source))
    }

    /// [`exchange`](Self::exchange) within `wait`, as a [`NetworkError`] naming the broker:
    /// a timeout reports `api` and `timeout_ms` (the request's whole budget, of which `wait` is
    /// what is left), and an answer must carry the request's `correlation_id`.
    async fn exchange_checked(
        &mut self,
        request: Bytes,
        api: Api,
        correlation_id: i32,
        wait: Duration,
        timeout_ms: u64,
    ) -> Result<Bytes, NetworkError> {
        let frame = match tokio::time::timeout(wait, self.exchange(request)).await {
            Ok(Ok(frame)) => frame,
            Ok(Err(reason)) => {
                return Err(NetworkError::ConnectionClosed {
                    broker: self.broker.clone(),
                    reason,
                })
            }
            Err(_) => {
                return Err(NetworkError::RequestTimedOut {
                    api,
                    broker: self.broker.clone(),
                    timeout_ms,
                })
            }
        };
        let received =
            codec::peek_correlation_id(&frame).map_err(|source| self.protocol_error(source))?;
        if received != correlation_id {
            return Err(self.protocol_error(ProtocolError::UnexpectedCorrelationId {
                expected: Some(correlation_id),
                received,
            }));
        }
        Ok(frame)
    }

    fn protocol_error(&self, source: ProtocolError) -> NetworkError {
        NetworkError::Protocol {
            broker: self.broker.clone(),
            source,
        }
    }

    /// Writes one frame and reads one frame, with nothing else in flight (the handshake).
    async fn exchange(&mut self, request: Bytes) -> Result<Bytes, CloseReason> {
        let writer = self.writer.as_mut().ok_or(CloseReason::Shutdown)?;
        writer
            .write_all(&request)
            .await
            .map_err(|e| CloseReason::io(&e))?;
        writer.flush().await.map_err(|e| CloseReason::io(&e))?;
        self.report.request_sent(request.len());
        loop {
            if let Some(frame) = self
                .frames
                .decode(self.read_buf.bytes_mut())
                .map_err(CloseReason::Protocol)?
            {
                self.report.response_received(frame.len());
                return Ok(frame);
            }
            self.read_buf
                .reserve(self.frames.read_reservation(self.read_buf.bytes()));
            match self.reader.read_buf(self.read_buf.bytes_mut()).await {
                Ok(0) => return Err(self.eof_reason()),
                Ok(_) => {}
                Err(e) => return Err(CloseReason::io(&e)),
            }
        }
    }

    /// Serves requests from `first` and then `commands` until the connection fails, or until
    /// `commands` is closed and nothing is in flight (`Shutdown`). Every in-flight request has
    /// been completed or failed when this returns.
    pub async fn run(
        mut self,
        first: Option<Command>,
        commands: &mut mpsc::Receiver<Command>,
    ) -> CloseReason {
        if let Some(command) = first {
            self.accept(command);
        }
        let mut commands_open = true;
        let mut last_active_at = Instant::now();
        loop {
            if !commands_open && self.in_flight.is_empty() {
                return CloseReason::Shutdown;
            }
            self.start_write();
            self.read_buf
                .reserve(self.frames.read_reservation(self.read_buf.bytes()));
            let deadline = self.in_flight.earliest_deadline();
            let reauthenticate_at = self.reauthentication.as_ref().map(|r| r.at);
            let reauthentication_due = reauthenticate_at.is_some_and(|at| Instant::now() >= at);
            if reauthentication_due
                && self.in_flight.is_empty()
                && self.writing.is_none()
                && self.outbox.is_empty()
            {
                if let Err(reason) = self.reauthenticate().await {
                    return self.close(reason);
                }
                continue;
            }
            // While a re-authentication waits for the in-flight requests, no new one is sent.
            let accepting = commands_open
                && !reauthentication_due
                && self.in_flight.len() < self.settings.max_in_flight;
            // Java's `Selector` (its `IdleExpiryManager`) closes a connection that carried no
            // traffic for `connections.max.idle.ms`; the next request reconnects.
            let idle =
                self.in_flight.is_empty() && self.writing.is_none() && self.outbox.is_empty();
            let idle_ms = self.settings.connections_max_idle_ms.filter(|_| idle);
            // An idle connection has nothing in flight, so no request deadline: one timer
            // serves both.
            let timer_at =
                deadline.or(idle_ms.map(|ms| last_active_at + Duration::from_millis(ms)));
            let step = tokio::select! {
                written = poll_write(&mut self.writing), if self.writing.is_some() => {
                    last_active_at = Instant::now();
                    let (writer, result) = written;
                    self.writing = None;
                    self.writer = Some(writer);
                    result.map_err(|e| CloseReason::io(&e))
                }
                read = self.reader.read_buf(self.read_buf.bytes_mut()) => {
                    last_active_at = Instant::now();
                    match read {
                        Ok(0) => Err(self.eof_reason()),
                        Ok(_) => self.complete_responses(),
                        Err(e) => Err(CloseReason::io(&e)),
                    }
                }
                command = commands.recv(), if accepting => {
                    last_active_at = Instant::now();
                    match command {
                        Some(command) => self.accept(command),
                        None => commands_open = false,
                    }
                    Ok(())
                }
                // Not a branch of its own for idle expiry: under simulation the branch count
                // draws the order in which an unbiased `select!` polls, and recorded seeds
                // depend on it.
                () = sleep_until(timer_at), if timer_at.is_some() => match idle_ms {
                    Some(idle_ms) => Err(CloseReason::Idle { idle_ms }),
                    None => self.expire(),
                },
                () = sleep_until(reauthenticate_at), if reauthenticate_at.is_some() && !reauthentication_due => Ok(()),
            };
            if let Err(reason) = step {
                return self.close(reason);
            }
        }
    }

    /// Chooses the version, encodes and queues a request for writing; requests that cannot be
    /// sent fail alone, without disturbing the connection.
    fn accept(&mut self, command: Command) {
        let Command {
            request,
            deadline,
            timeout_ms,
        } = command;
        let api = request.api();
        if Instant::now() >= deadline {
            request.fail(NetworkError::RequestTimedOut {
                api,
                broker: self.broker.clone(),
                timeout_ms,
            });
            return;
        }
        let version = match self.versions.select(api, request.versions()) {
            Ok(version) => version,
            Err(source) => {
                request.fail(NetworkError::UnsupportedApi {
                    broker: self.broker.clone(),
                    source,
                });
                return;
            }
        };
        let correlation_id = self.in_flight.allocate_correlation_id();
        match request.encode(version, correlation_id, self.settings.client_id.as_ref()) {
            Ok(frame) => {
                tracing::trace!(broker = %self.broker, %api, version, correlation_id, "send");
                // Counted when queued: the write follows in this task's next turn.
                self.report.request_sent(frame.len());
                self.outbox.push(frame);
                let sent = Sent {
                    request,
                    version,
                    timeout_ms,
                };
                self.in_flight.push(correlation_id, deadline, sent);
            }
            Err(source) => request.fail(NetworkError::Encode {
                broker: self.broker.clone(),
                source,
            }),
        }
    }

    /// Starts writing everything in the outbox, unless a write is already in progress.
    fn start_write(&mut self) {
        if self.writing.is_some() || self.outbox.is_empty() {
            return;
        }
        let Some(writer) = self.writer.take() else {
            return;
        };
        let frames = std::mem::take(&mut self.outbox);
        self.writing = Some(Box::pin(write_frames(writer, frames)));
    }

    /// Hands every complete response frame in the read buffer to its request.
    fn complete_responses(&mut self) -> Result<(), CloseReason> {
        while let Some(frame) = self
            .frames
            .decode(self.read_buf.bytes_mut())
            .map_err(CloseReason::Protocol)?
        {
            self.report.response_received(frame.len());
            let correlation_id =
                codec::peek_correlation_id(&frame).map_err(CloseReason::Protocol)?;
            let sent = self
                .in_flight
                .complete(correlation_id)
                .map_err(CloseReason::Protocol)?
                .payload;
            sent.request
                .complete(sent.version, frame)
                .map_err(CloseReason::Protocol)?;
        }
        Ok(())
    }

    /// Fails the first overdue request; it had been written, so the connection closes too.
    fn expire(&mut self) -> Result<(), CloseReason> {
        let Some(expired) = self.in_flight.take_expired(Instant::now()) else {
            return Ok(());
        };
        let api = expired.payload.request.api();
        let timeout_ms = expired.payload.timeout_ms;
        tracing::info!(broker = %self.broker, %api, timeout_ms, "request timed out");
        expired.payload.request.fail(NetworkError::RequestTimedOut {
            api,
            broker: self.broker.clone(),
            timeout_ms,
        });
        Err(CloseReason::RequestTimedOut {
            api,
            correlation_id: expired.correlation_id,
            timeout_ms,
        })
    }

    /// Why the stream ended: cleanly between frames, or inside one.
    fn eof_reason(&self) -> CloseReason {
        match self.frames.check_clean_eof(self.read_buf.bytes()) {
            Ok(()) => CloseReason::PeerClosed,
            Err(error) => CloseReason::Protocol(error),
        }
    }

    /// Fails everything in flight with `reason`; dropping `self` then closes the socket.
    fn close(mut self, reason: CloseReason) -> CloseReason {
        let in_flight = self.in_flight.len();
        if matches!(reason, CloseReason::Idle { .. }) {
            tracing::debug!(broker = %self.broker, %reason, "connection closed");
        } else {
            tracing::info!(broker = %self.broker, %reason, in_flight, "connection closed");
        }
        for entry in self.in_flight.drain() {
            entry.payload.request.fail(NetworkError::ConnectionClosed {
                broker: self.broker.clone(),
                reason: reason.clone(),
            });
        }
        reason
    }
}

/// Writes whole frames, then flushes, returning the write half for the next batch.
async fn write_frames(
    mut writer: WriteHalf<BrokerStream>,
    frames: Vec<Bytes>,
) -> (WriteHalf<BrokerStream>, std::io::Result<()>) {
    for frame in &frames {
        if let Err(error) = writer.write_all(frame).await {
            return (writer, Err(error));
        }
    }
    let flushed = writer.flush().await;
    (writer, flushed)
}

/// Polls the write in progress; the boxed future survives being dropped by `select!`.
async fn poll_write(
    writing: &mut Option<WriteFuture>,
) -> (WriteHalf<BrokerStream>, std::io::Result<()>) {
    match writing {
        Some(write) => write.await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// When to re-authenticate a session the broker limited to `session_lifetime_ms` (0: no limit):
/// like Java's client, at a random point between 85 % and 95 % of the lifetime, so the broker
/// never closes an expired session and many connections do not re-authenticate at once.
fn reauthentication_after(
    session_lifetime_ms: i64,
    config: &SaslConfig,
    rng: &mut SeededRng,
) -> Option<Reauthentication> {
    let lifetime_ms = u64::try_from(session_lifetime_ms)
        .ok()
        .filter(|&ms| ms > 0)?;
    let fraction = 0.85 + 0.10 * rng.unit_f64();
    let after_ms = (lifetime_ms as f64 * fraction) as u64;
    Some(Reauthentication {
        config: config.clone(),
        rng: SeededRng::seed_from_u64(rand::RngCore::next_u64(rng)),
        at: Instant::now() + Duration::from_millis(after_ms),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::sasl::{SaslCredentials, SaslMechanism};
    use crate::network::Secret;

    #[test]
    fn reauthentication_falls_between_85_and_95_percent_of_the_lifetime() {
        let config = SaslConfig {
            mechanism: SaslMechanism::Plain,
            credentials: SaslCredentials::Password {
                username: "u".into(),
                password: Secret::new("p"),
            },
        };
        let mut rng = SeededRng::seed_from_u64(9);
        assert!(reauthentication_after(0, &config, &mut rng).is_none());
        assert!(reauthentication_after(-1, &config, &mut rng).is_none());
        for _ in 0..100 {
            let before = Instant::now();
            let pending = reauthentication_after(10_000, &config, &mut rng).unwrap();
            let after_ms = pending.at.duration_since(before).as_millis();
            assert!((8_500..=9_501).contains(&after_ms), "{after_ms}");
        }
    }
}
