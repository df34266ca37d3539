//! A small fake Kafka broker for connection tests: speaks the wire protocol with the broker side
//! of `kafka-protocol` (ApiVersions and Metadata), records every request frame it receives, and
//! can be scripted to misbehave on the next requests (delays, garbage, bad lengths, wrong
//! correlation ids, truncation, silence). Works on real tokio and inside madsim.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::metadata_response::{MetadataResponseBroker, MetadataResponseTopic};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId, MetadataRequest, MetadataResponse,
    RequestHeader, ResponseHeader, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::Duration;

/// What the broker does with one (non-ApiVersions) request.
#[derive(Debug, Clone, PartialEq)]
pub enum Behavior {
    /// Answer correctly.
    Normal,
    /// Answer correctly after a delay.
    Delay(Duration),
    /// Never answer (the connection stays open).
    Silent,
    /// Answer with the right correlation id and a body of garbage bytes.
    GarbageBody,
    /// Answer with a frame whose length prefix is this value and nothing else.
    LengthPrefix(i32),
    /// Answer with the correlation id off by one.
    WrongCorrelationId,
    /// Answer the next request first, then this one.
    Reorder,
    /// Write the first half of the real response, flush, then close the connection.
    TruncateThenClose,
    /// Write the first half of the real response, flush, then hang (the test kills the node).
    HalfThenHang,
}

/// One request frame as the broker parsed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// Which accepted connection (0-based) it arrived on.
    pub connection: usize,
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub frame_bytes: usize,
    /// Topic names of a Metadata request (`None` = all topics).
    pub metadata_topics: Option<Vec<String>>,
}

#[derive(Debug)]
struct State {
    received: Vec<Received>,
    script: VecDeque<Behavior>,
    connections: usize,
    /// The highest ApiVersions version we claim; higher requests get a v0 UNSUPPORTED_VERSION.
    api_versions_max: i16,
    /// APIs left out of the ApiVersions table.
    omitted_apis: Vec<i16>,
    /// Advertised broker address (node 1) and extra topics in Metadata responses.
    advertised: Option<SocketAddr>,
    /// Malformed request frames (the stream was corrupted).
    malformed: Vec<String>,
    /// SASL/PLAIN: the one SaslAuthenticate message accepted (`\0user\0password`); any other
    /// fails with SASL_AUTHENTICATION_FAILED.
    plain_credentials: Vec<u8>,
    /// `session_lifetime_ms` of a successful SaslAuthenticate (0: no KIP-368 limit).
    session_lifetime_ms: i64,
    /// The top-level `error_code` of Metadata responses (0: none).
    metadata_error_code: i16,
}

/// Handle to a fake broker's state; clones share it (it survives a madsim node restart).
#[derive(Debug, Clone)]
pub struct FakeBroker {
    state: Arc<Mutex<State>>,
}

impl Default for FakeBroker {
    fn default() -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                received: Vec::new(),
                script: VecDeque::new(),
                connections: 0,
                api_versions_max: ApiKey::ApiVersions.valid_versions().max,
                omitted_apis: Vec::new(),
                advertised: None,
                malformed: Vec::new(),
                plain_credentials: Vec::new(),
                session_lifetime_ms: 0,
                metadata_error_code: 0,
            })),
        }
    }
}

impl FakeBroker {
    /// Binds `127.0.0.1:0`, serves in a spawned task, returns the handle and the address.
    pub async fn start() -> (Self, SocketAddr) {
        let broker = Self::default();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        broker.state().advertised = Some(addr);
        tokio::spawn(broker.clone().serve(listener));
        (broker, addr)
    }

    /// Binds `addr` and serves TLS with `config` forever (a madsim node's init future).
    #[allow(dead_code)] // used by the simulation tests only
    pub async fn bind_and_serve_tls(self, addr: SocketAddr, config: Arc<rustls::ServerConfig>) {
        let listener = TcpListener::bind(addr).await.unwrap();
        self.state().advertised = Some(addr);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let connection = {
                let mut state = self.state();
                state.connections += 1;
                state.connections - 1
            };
            let broker = self.clone();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // A client that refuses our certificate ends the handshake; nothing to serve.
                if let Ok(stream) = acceptor.accept(stream).await {
                    broker.serve_connection(stream, connection).await;
                }
            });
        }
    }

    /// Binds `addr` and serves forever (a madsim node's init future).
    pub async fn bind_and_serve(self, addr: SocketAddr) {
        let listener = TcpListener::bind(addr).await.unwrap();
        self.state().advertised = Some(addr);
        self.serve(listener).await;
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Queues behaviors for the next non-ApiVersions requests, in order.
    pub fn script(&self, behaviors: impl IntoIterator<Item = Behavior>) {
        self.state().script.extend(behaviors);
    }

    /// Advertises node 1 at `addr` in Metadata responses from now on (instead of the broker's
    /// own address): a broker that moved, or one that is gone.
    pub fn advertise(&self, addr: SocketAddr) {
        self.state().advertised = Some(addr);
    }

    /// Answers Metadata with this top-level error code from now on (0: none).
    pub fn set_metadata_error_code(&self, code: i16) {
        self.state().metadata_error_code = code;
    }

    pub fn set_api_versions_max(&self, max: i16) {
        self.state().api_versions_max = max;
    }

    pub fn omit_api(&self, api_key: ApiKey) {
        self.state().omitted_apis.push(api_key as i16);
    }

    /// Accepts SASL/PLAIN for this user and password only.
    pub fn accept_plain(&self, user: &str, password: &str) {
        self.state().plain_credentials = format!("\0{user}\0{password}").into_bytes();
    }

    /// Limits authenticated sessions to this lifetime (KIP-368), so clients re-authenticate.
    pub fn set_session_lifetime_ms(&self, lifetime_ms: i64) {
        self.state().session_lifetime_ms = lifetime_ms;
    }

    pub fn received(&self) -> Vec<Received> {
        self.state().received.clone()
    }

    /// Received requests other than ApiVersions.
    pub fn received_requests(&self) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| r.api_key != ApiKey::ApiVersions as i16)
            .collect()
    }

    /// How many `api` requests were received.
    pub fn received_count(&self, api: ApiKey) -> usize {
        self.received()
            .iter()
            .filter(|r| r.api_key == api as i16)
            .count()
    }

    pub fn connections(&self) -> usize {
        self.state().connections
    }

    pub fn malformed(&self) -> Vec<String> {
        self.state().malformed.clone()
    }

    async fn serve(self, listener: TcpListener) {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let connection = {
                let mut state = self.state();
                state.connections += 1;
                state.connections - 1
            };
            tokio::spawn(self.clone().serve_connection(stream, connection));
        }
    }

    async fn serve_connection<S>(self, stream: S, connection: usize)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (mut reader, mut writer) = tokio::io::split(stream);
        let (requests, mut queue) = mpsc::unbounded_channel::<(Received, Bytes)>();
        // Reader: parse and record every frame as it arrives, so pipelining is observable.
        let broker = self.clone();
        let reader_task = tokio::spawn(async move {
            loop {
                let Ok(length) = reader.read_i32().await else {
                    return;
                };
                let mut frame = vec![0u8; length.max(0) as usize];
                if reader.read_exact(&mut frame).await.is_err() {
                    return;
                }
                match parse_request(connection, Bytes::from(frame)) {
                    Ok((received, body)) => {
                        broker.state().received.push(received.clone());
                        if requests.send((received, body)).is_err() {
                            return;
                        }
                    }
                    Err(message) => {
                        broker.state().malformed.push(message);
                        return;
                    }
                }
            }
        });
        self.answer(&mut writer, &mut queue).await;
        // The socket closes only once both halves are gone.
        reader_task.abort();
    }

    /// Answers requests in order, applying the script; returns to close the connection.
    async fn answer(
        &self,
        writer: &mut tokio::io::WriteHalf<impl AsyncWrite>,
        queue: &mut mpsc::UnboundedReceiver<(Received, Bytes)>,
    ) {
        let mut held: Option<Bytes> = None;
        while let Some((request, body)) = queue.recv().await {
            let behavior = if request.api_key == ApiKey::ApiVersions as i16 {
                Behavior::Normal
            } else {
                self.state().script.pop_front().unwrap_or(Behavior::Normal)
            };
            let response = self.respond(&request, body);
            let mut out = BytesMut::new();
            match behavior {
                Behavior::Normal => frame_into(&mut out, &response),
                Behavior::Delay(delay) => {
                    tokio::time::sleep(delay).await;
                    frame_into(&mut out, &response);
                }
                Behavior::Silent => continue,
                Behavior::GarbageBody => {
                    let mut garbage = BytesMut::new();
                    garbage.put_i32(request.correlation_id);
                    garbage.put_slice(&[0xff; 7]);
                    frame_into(&mut out, &garbage);
                }
                Behavior::LengthPrefix(length) => out.put_i32(length),
                Behavior::WrongCorrelationId => {
                    let mut wrong = BytesMut::from(&response[..]);
                    wrong[..4].copy_from_slice(&(request.correlation_id + 1).to_be_bytes());
                    frame_into(&mut out, &wrong);
                }
                Behavior::Reorder => {
                    held = Some(response);
                    continue;
                }
                Behavior::TruncateThenClose | Behavior::HalfThenHang => {
                    let mut full = BytesMut::new();
                    frame_into(&mut full, &response);
                    out.put_slice(&full[..full.len() / 2]);
                    if writer.write_all(&out).await.is_err() || writer.flush().await.is_err() {
                        return;
                    }
                    if behavior == Behavior::HalfThenHang {
                        std::future::pending::<()>().await;
                    }
                    return; // dropping both halves closes the connection
                }
            }
            if let Some(held) = held.take() {
                frame_into(&mut out, &held);
            }
            if writer.write_all(&out).await.is_err() || writer.flush().await.is_err() {
                return;
            }
        }
    }

    /// The correct response frame body (header + message) to a request.
    fn respond(&self, request: &Received, mut body: Bytes) -> Bytes {
        let mut out = BytesMut::new();
        let api = ApiKey::try_from(request.api_key).unwrap();
        let version = request.api_version;
        let state = self.state();
        let header_version = api.response_header_version(version);
        let write_header = |out: &mut BytesMut, header_version| {
            ResponseHeader::default()
                .with_correlation_id(request.correlation_id)
                .encode(out, header_version)
                .unwrap();
        };
        match api {
            ApiKey::ApiVersions if version > state.api_versions_max => {
                // Kafka's answer to a too-new ApiVersions: a v0 body with its own range.
                write_header(&mut out, 0);
                ApiVersionsResponse::default()
                    .with_error_code(35)
                    .with_api_keys(vec![ApiVersion::default()
                        .with_api_key(ApiKey::ApiVersions as i16)
                        .with_min_version(0)
                        .with_max_version(state.api_versions_max)])
                    .encode(&mut out, 0)
                    .unwrap();
            }
            ApiKey::ApiVersions => {
                // KIP-714's APIs are left out, as a real broker without a client-metrics
                // plugin leaves them out: the consumer then sends no telemetry request.
                let keys = ApiKey::iter()
                    .filter(|k| {
                        !matches!(k, ApiKey::GetTelemetrySubscriptions | ApiKey::PushTelemetry)
                    })
                    .filter(|k| !state.omitted_apis.contains(&(*k as i16)))
                    .map(|k| {
                        let range = k.valid_versions();
                        let max = if k == ApiKey::ApiVersions {
                            state.api_versions_max
                        } else {
                            range.max
                        };
                        ApiVersion::default()
                            .with_api_key(k as i16)
                            .with_min_version(range.min)
                            .with_max_version(max)
                    })
                    .collect();
                write_header(&mut out, header_version);
                ApiVersionsResponse::default()
                    .with_api_keys(keys)
                    .encode(&mut out, version)
                    .unwrap();
            }
            ApiKey::Metadata => {
                let request = MetadataRequest::decode(&mut body, version).unwrap();
                let addr = state.advertised.expect("advertised address");
                let topics = request
                    .topics
                    .unwrap_or_default()
                    .into_iter()
                    .map(|t| {
                        let id = topic_id_for(t.name.as_ref().map_or("", |n| n.0.as_str()));
                        MetadataResponseTopic::default()
                            .with_name(t.name)
                            .with_topic_id(id)
                    })
                    .collect();
                write_header(&mut out, header_version);
                MetadataResponse::default()
                    .with_brokers(vec![MetadataResponseBroker::default()
                        .with_node_id(BrokerId(1))
                        .with_host(StrBytes::from_string(addr.ip().to_string()))
                        .with_port(i32::from(addr.port()))
                        .with_rack(Some(StrBytes::from_static_str("rack-1")))])
                    .with_controller_id(BrokerId(1))
                    .with_cluster_id(Some(StrBytes::from_static_str("fake-cluster")))
                    .with_error_code(state.metadata_error_code)
                    .with_topics(topics)
                    .encode(&mut out, version)
                    .unwrap();
            }
            ApiKey::SaslHandshake => {
                let request = SaslHandshakeRequest::decode(&mut body, version).unwrap();
                let supported = request.mechanism.as_str() == "PLAIN";
                write_header(&mut out, header_version);
                SaslHandshakeResponse::default()
                    .with_error_code(if supported { 0 } else { 33 })
                    .with_mechanisms(vec![StrBytes::from_static_str("PLAIN")])
                    .encode(&mut out, version)
                    .unwrap();
            }
            ApiKey::SaslAuthenticate => {
                let request = SaslAuthenticateRequest::decode(&mut body, version).unwrap();
                let accepted = request.auth_bytes[..] == state.plain_credentials[..];
                write_header(&mut out, header_version);
                let response = if accepted {
                    SaslAuthenticateResponse::default()
                        .with_session_lifetime_ms(state.session_lifetime_ms)
                } else {
                    SaslAuthenticateResponse::default()
                        .with_error_code(58)
                        .with_error_message(Some(StrBytes::from_static_str(
                            "Authentication failed: Invalid username or password",
                        )))
                };
                response.encode(&mut out, version).unwrap();
            }
            other => panic!("fake broker does not implement {other:?}"),
        }
        out.freeze()
    }
}

/// A stable topic id per name (FNV-1a), so tests can check ids round-trip.
pub fn topic_id_for(name: &str) -> uuid::Uuid {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    uuid::Uuid::from_u128(u128::from(hash) << 64 | u128::from(hash))
}

fn frame_into(out: &mut BytesMut, body: &[u8]) {
    out.put_i32(body.len() as i32);
    out.put_slice(body);
}

/// Parses a request frame (without length prefix): header, and the body when it is Metadata.
fn parse_request(connection: usize, frame: Bytes) -> Result<(Received, Bytes), String> {
    let frame_bytes = frame.len();
    if frame_bytes < 4 {
        return Err(format!("{frame_bytes}-byte frame"));
    }
    let api_key = (&frame[..2]).get_i16();
    let api_version = (&frame[2..4]).get_i16();
    let api = ApiKey::try_from(api_key).map_err(|()| format!("unknown api key {api_key}"))?;
    let mut rest = frame.clone();
    let header = RequestHeader::decode(&mut rest, api.request_header_version(api_version))
        .map_err(|e| format!("header: {e}"))?;
    let body = rest.clone();
    let metadata_topics = match api {
        ApiKey::Metadata => {
            let request = MetadataRequest::decode(&mut rest, api_version)
                .map_err(|e| format!("Metadata body: {e}"))?;
            if rest.has_remaining() {
                return Err(format!(
                    "{} trailing bytes after Metadata body",
                    rest.remaining()
                ));
            }
            request.topics.map(|topics| {
                topics
                    .iter()
                    .map(|t| t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default())
                    .collect()
            })
        }
        ApiKey::ApiVersions => {
            ApiVersionsRequest::decode(&mut rest, api_version)
                .map_err(|e| format!("ApiVersions body: {e}"))?;
            None
        }
        ApiKey::SaslHandshake => {
            SaslHandshakeRequest::decode(&mut rest, api_version)
                .map_err(|e| format!("SaslHandshake body: {e}"))?;
            None
        }
        ApiKey::SaslAuthenticate => {
            SaslAuthenticateRequest::decode(&mut rest, api_version)
                .map_err(|e| format!("SaslAuthenticate body: {e}"))?;
            None
        }
        other => return Err(format!("unexpected {other:?}")),
    };
    let received = Received {
        connection,
        api_key,
        api_version,
        correlation_id: header.correlation_id,
        frame_bytes,
        metadata_topics,
    };
    Ok((received, body))
}
