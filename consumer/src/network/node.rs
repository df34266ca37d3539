//! One task per broker node: connect, negotiate, serve requests, and after a failure reconnect
//! with exponential backoff and jitter.
//!
//! Connecting is lazy: the task connects when a request arrives, like Kafka's `NetworkClient`.
//! When a connection attempt or a connection fails, everything queued for the node fails with
//! that (retriable) error, so callers learn about a dead broker at once instead of at their
//! timeout. Requests that arrive during the backoff wait for it (at most
//! `reconnect_backoff_max_ms`) and then ride the next attempt.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, Notify};
use tracing::Instrument;

use super::backoff::ExponentialBackoff;
use super::connect_failures::ConnectFailures;
use super::connection::{BrokerStream, Connection, ConnectionSettings};
use super::request::Command;
use super::sasl::SaslConfig;
use super::socket;
use super::tls;
use super::{CloseReason, NetworkError};
use crate::protocol::ApiVersionsTable;
use crate::rt::{Duration, Instant, SeededRng};

/// Where a node's task is, as the client sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NodeStatus {
    /// The versions negotiated on the current connection, while connected.
    pub versions: Option<ApiVersionsTable>,
    /// When the next connection attempt may start, while backing off.
    pub reconnect_at: Option<Instant>,
}

pub(crate) type SharedStatus = Arc<Mutex<NodeStatus>>;

/// A change of a node's connection the background task may be waiting for: a request manager
/// builds a version-dependent request only once its target's own connection has negotiated
/// (as Java's `NetworkClient` builds each request for its destination's `NodeApiVersions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeEvent {
    /// The node's connection negotiated its versions.
    Connected(i32),
    /// A connection attempt to the node failed; the next waits for the reconnect backoff.
    ConnectFailed(i32),
}

pub(crate) fn read_status(status: &SharedStatus) -> NodeStatus {
    status
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

fn write_status(status: &SharedStatus, update: impl FnOnce(&mut NodeStatus)) {
    update(&mut status.lock().unwrap_or_else(PoisonError::into_inner));
}

/// How every connection of a client is secured; built once by the client.
#[derive(Clone, Default)]
pub(crate) struct ConnectionSecurity {
    /// The rustls config, for SSL and SASL_SSL.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The SASL settings, for SASL_PLAINTEXT and SASL_SSL.
    pub sasl: Option<SaslConfig>,
}

/// Everything a node task needs.
pub(crate) struct NodeTask {
    pub node_id: i32,
    pub host: String,
    pub port: u16,
    pub broker: String,
    pub settings: ConnectionSettings,
    pub security: ConnectionSecurity,
    /// `socket.connection.setup.timeout.ms` growing to `.max.ms` as setups keep failing.
    pub setup_timeout: ExponentialBackoff,
    /// Draws the setup timeout's jitter; apart from `rng` so that enabling it leaves the
    /// reconnect backoffs and SASL nonces a seed produces as they were.
    pub setup_timeout_rng: SeededRng,
    pub backoff: ExponentialBackoff,
    pub rng: SeededRng,
    pub commands: mpsc::Receiver<Command>,
    pub status: SharedStatus,
    /// Asks the task to connect without a request (`NetworkClient::connect`).
    pub connect: Arc<Notify>,
    /// Where the task reports connections made and attempts failed.
    pub events: mpsc::UnboundedSender<NodeEvent>,
}

impl NodeTask {
    /// Spawns the task on the current runtime (madsim's current node under simulation).
    pub fn spawn(self) {
        let span = tracing::info_span!("broker", node_id = self.node_id, addr = %format_args!("{}:{}", self.host, self.port));
        tokio::spawn(self.run().instrument(span));
    }

    async fn run(mut self) {
        let mut failed_attempts = 0u32;
        // Java's `ClusterConnectionStates.failedConnectAttempts`: setups that failed in a row.
        let mut failed_setups = 0u32;
        let mut failures = ConnectFailures::default();
        let mut reconnect_at: Option<Instant> = None;
        loop {
            // A request, or a bare connect asked for by the client.
            let first = tokio::select! {
                // Deterministic under simulation: tokio draws an unbiased select's branch order
                // from a process-wide source, not from the simulation's seed.
                biased;
                command = self.commands.recv() => match command {
                    Some(command) => Some(command),
                    None => return, // the client dropped this node
                },
                () = self.connect.notified() => None,
            };
            if let Some(at) = reconnect_at.take() {
                tokio::time::sleep_until(at).await;
            }
            let setup_timeout_ms = self
                .setup_timeout
                .backoff_ms(failed_setups, &mut self.setup_timeout_rng);
            let failure = match self.connect(setup_timeout_ms).await {
                Ok(connection) => {
                    failed_attempts = 0;
                    failed_setups = 0;
                    let failed_before = failures.on_success();
                    if failed_before > 0 {
                        tracing::info!(
                            failed_attempts = failed_before,
                            "connected to {} after {failed_before} failed attempts",
                            self.broker
                        );
                    }
                    let versions = connection.versions().clone();
                    write_status(&self.status, |s| {
                        s.versions = Some(versions);
                        s.reconnect_at = None;
                    });
                    let _ = self.events.send(NodeEvent::Connected(self.node_id));
                    let reason = connection.run(first, &mut self.commands).await;
                    write_status(&self.status, |s| s.versions = None);
                    match reason {
                        CloseReason::Shutdown => return,
                        // Nothing failed: like any first request, the next one reconnects.
                        CloseReason::Idle { .. } => continue,
                        _ => {}
                    }
                    NetworkError::ConnectionClosed {
                        broker: self.broker.clone(),
                        reason,
                    }
                }
                Err(AttemptFailure {
                    error,
                    during_setup,
                }) => {
                    // Like Java's `ClusterConnectionStates.disconnected`: a failure while
                    // connecting grows the next setup timeout, a later one resets it.
                    failed_setups = if during_setup {
                        failed_setups.saturating_add(1)
                    } else {
                        0
                    };
                    self.log_failure(&error, failures.on_failure(Instant::now()));
                    if let Some(first) = first {
                        first.request.fail(error.clone());
                    }
                    let _ = self.events.send(NodeEvent::ConnectFailed(self.node_id));
                    error
                }
            };
            self.fail_queued(&failure);
            let backoff_ms = self.backoff.backoff_ms(failed_attempts, &mut self.rng);
            failed_attempts = failed_attempts.saturating_add(1);
            let at = Instant::now() + Duration::from_millis(backoff_ms);
            tracing::debug!(backoff_ms, "reconnect backoff");
            reconnect_at = Some(at);
            write_status(&self.status, |s| s.reconnect_at = Some(at));
            if !failure.is_retriable() {
                // Like Java's NetworkClient after an AuthenticationException: requests during
                // the backoff fail at once with the same error rather than waiting to ride a
                // reconnect that would fail the same way. One attempt per backoff, no storm.
                if !self.fail_until(at, &failure).await {
                    return;
                }
            }
        }
    }

    /// Reports a failed connection attempt: at WARN (ERROR when it will not get better by
    /// retrying, as an authentication failure) when `warn` says so ([`ConnectFailures`]), with
    /// the broker's address and the cause; at DEBUG otherwise.
    fn log_failure(&self, error: &NetworkError, warn: Option<u32>) {
        let broker = &self.broker;
        match warn {
            None => tracing::debug!(%error, "connection attempt failed"),
            Some(failed_attempts) if !error.is_retriable() => tracing::error!(
                %error,
                failed_attempts,
                "Connection to {broker} failed"
            ),
            Some(failed_attempts) => tracing::warn!(
                %error,
                failed_attempts,
                "Connection to {broker} could not be established. Node may not be available."
            ),
        }
    }

    /// Fails every request that arrives before `at` with `error`; `false` once the client has
    /// dropped this node.
    async fn fail_until(&mut self, at: Instant, error: &NetworkError) -> bool {
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(at) => return true,
                command = self.commands.recv() => match command {
                    Some(command) => command.request.fail(error.clone()),
                    None => return false,
                },
            }
        }
    }

    /// TCP connect and TLS handshake (bounded by `timeout_ms`, this attempt's setup timeout),
    /// the ApiVersions handshake and SASL authentication.
    async fn connect(&mut self, timeout_ms: u64) -> Result<Connection, AttemptFailure> {
        tracing::debug!(timeout_ms, "connecting");
        let setup = |error| AttemptFailure {
            error,
            during_setup: true,
        };
        let started = Instant::now();
        let connect = socket::connect(&self.host, self.port, self.settings.socket_buffers);
        let stream = match tokio::time::timeout(Duration::from_millis(timeout_ms), connect).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(source)) => {
                return Err(setup(NetworkError::ConnectFailed {
                    broker: self.broker.clone(),
                    source: Arc::new(source),
                }))
            }
            Err(_) => {
                return Err(setup(NetworkError::ConnectTimedOut {
                    broker: self.broker.clone(),
                    timeout_ms,
                }))
            }
        };
        // Kafka requests are small and latency-bound; Nagle would only delay them.
        let _ = stream.set_nodelay(true);
        let stream: BrokerStream = match self.security.tls.clone() {
            None => Box::new(stream),
            Some(config) => {
                let elapsed = deadline_left(started, timeout_ms);
                self.tls_handshake(stream, config, elapsed, timeout_ms)
                    .await
                    .map_err(setup)?
            }
        };
        let mut connection = Connection::new(
            stream,
            self.node_id,
            self.broker.clone(),
            self.settings.clone(),
        );
        connection
            .negotiate()
            .await
            .map_err(|error| AttemptFailure {
                error: self.tls_failure(error),
                during_setup: false,
            })?;
        if let Some(sasl) = self.security.sasl.clone() {
            // Java authenticates while still connecting (the channel is not ready before).
            connection
                .authenticate(&sasl, &mut self.rng)
                .await
                .map_err(|error| setup(self.tls_failure(error)))?;
        }
        tracing::info!("connected");
        Ok(connection)
    }

    /// The TLS handshake, within what is left of the connection setup timeout. A TLS error
    /// (untrusted certificate, wrong host name, an alert from the broker) is an
    /// authentication failure; an I/O error is a connection failure like any other.
    async fn tls_handshake(
        &self,
        stream: tokio::net::TcpStream,
        config: Arc<rustls::ClientConfig>,
        remaining: Duration,
        timeout_ms: u64,
    ) -> Result<BrokerStream, NetworkError> {
        let server_name = tls::server_name(&self.host)?;
        let connector = tokio_rustls::TlsConnector::from(config);
        match tokio::time::timeout(remaining, connector.connect(server_name, stream)).await {
            Ok(Ok(stream)) => Ok(Box::new(stream)),
            Ok(Err(source)) => Err(match tls::tls_error(&source) {
                Some(error) => self.ssl_authentication(error.to_string()),
                None => NetworkError::ConnectFailed {
                    broker: self.broker.clone(),
                    source: Arc::new(source),
                },
            }),
            Err(_) => Err(NetworkError::ConnectTimedOut {
                broker: self.broker.clone(),
                timeout_ms,
            }),
        }
    }

    fn ssl_authentication(&self, message: String) -> NetworkError {
        NetworkError::Authentication {
            broker: self.broker.clone(),
            mechanism: "SSL".to_owned(),
            code: None,
            message,
        }
    }

    /// A TLS failure after the handshake (TLS 1.3 reports a refused client certificate only
    /// on the first read) is an authentication failure too.
    fn tls_failure(&self, error: NetworkError) -> NetworkError {
        match error {
            NetworkError::ConnectionClosed {
                reason: CloseReason::Tls { message },
                ..
            } => self.ssl_authentication(message),
            other => other,
        }
    }

    /// Fails every request still queued for this node.
    fn fail_queued(&mut self, error: &NetworkError) {
        while let Ok(command) = self.commands.try_recv() {
            command.request.fail(error.clone());
        }
    }
}

/// A failed connection attempt, and whether it failed while setting up the connection (TCP,
/// TLS, SASL: Java's CONNECTING state) rather than at the ApiVersions check after.
struct AttemptFailure {
    error: NetworkError,
    during_setup: bool,
}

/// What is left of a `timeout_ms` budget that started at `started`.
fn deadline_left(started: Instant, timeout_ms: u64) -> Duration {
    Duration::from_millis(timeout_ms).saturating_sub(started.elapsed())
}
