//! One client connection: frames in, handled strictly one at a time in arrival order (Kafka's
//! processor mutes the channel until the response is sent), each response written as a whole
//! frame and flushed (madsim sends only on flush). Frames are reported to the cluster's
//! [`WireTap`](super::WireTap), if any.
//!
//! On a SASL listener every frame first goes to the connection's
//! [`Authenticator`], which decides whether it is served, answered by the SASL exchange or
//! closes the connection. SaslHandshake and SaslAuthenticate frames it takes also pass the
//! fault hooks: an injected error fails the authentication, a hold delays the answer, a lost
//! response closes the connection mid-handshake.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_consumer::protocol::frame::FrameDecoder;
use kafka_consumer::rt::{wall_clock_ms, Duration, SeededRng};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::dispatch::{self, ClientInfo, Outcome};
use super::wire_tap::WireKind;
use super::{stopped, Broker};
use crate::sasl::authenticator::{Action, Authenticator, Env};
use crate::sasl::{AuthEventKind, SaslServerConfig};

/// SaslHandshake's and SaslAuthenticate's API keys.
const SASL_HANDSHAKE: i16 = 17;
const SASL_AUTHENTICATE: i16 = 36;

/// `socket.request.max.bytes`: Kafka's default largest request.
const MAX_REQUEST_BYTES: usize = 104_857_600;

pub(super) async fn serve(stream: TcpStream, peer: SocketAddr, broker: Arc<Broker>) {
    let tap = |kind, frame: &[u8]| {
        if let Some(tap) = &broker.wire_tap {
            tap.record(broker.node_id, peer, kind, frame);
        }
    };
    run(stream, peer, &broker, tap).await;
    tap(WireKind::Closed, &[]);
}

/// Serves requests until the connection closes, reporting each frame to `tap`.
async fn run(stream: TcpStream, peer: SocketAddr, broker: &Broker, tap: impl Fn(WireKind, &[u8])) {
    let (mut reader, mut writer) = tokio::io::split(stream);
    let mut resets = broker.faults.resets(broker.node_id);
    resets.borrow_and_update();
    let mut stop = broker.stop_signal();
    let decoder = FrameDecoder::new(MAX_REQUEST_BYTES);
    let client = ClientInfo {
        host: format!("/{}", peer.ip()),
        connection_id: broker.controller.next_connection_id(),
    };
    let mut sasl = Sasl::new(broker, client.connection_id);
    let mut buf = BytesMut::new();
    loop {
        let frame = match decoder.decode(&mut buf) {
            Err(_) => return,
            Ok(Some(frame)) => frame,
            Ok(None) => {
                buf.reserve(decoder.read_reservation(&buf));
                let read = tokio::select! {
                    read = reader.read_buf(&mut buf) => read,
                    _ = resets.changed() => return,
                    () = stopped(&mut stop) => return,
                };
                match read {
                    Ok(0) | Err(_) => return,
                    Ok(_) => continue,
                }
            }
        };
        tap(WireKind::Request, &frame);
        let mut forced_error = None;
        if let Some(sasl) = &mut sasl {
            let action = tokio::select! {
                action = sasl.on_frame(broker, &frame) => action,
                _ = resets.changed() => return,
                () = stopped(&mut stop) => return,
            };
            match action {
                Action::Serve => {}
                Action::FailAndClose(code) => forced_error = Some(code),
                Action::Respond(ref response) | Action::RespondAndClose(ref response) => {
                    let close = matches!(action, Action::RespondAndClose(_));
                    let response = response.clone();
                    tap(WireKind::Response, &response);
                    let written =
                        writer.write_all(&response).await.is_ok() && writer.flush().await.is_ok();
                    if !written || close {
                        return;
                    }
                    continue;
                }
                Action::Close => return,
            }
        }
        let outcome = tokio::select! {
            outcome = dispatch::handle(broker, frame, &client, forced_error) => outcome,
            _ = resets.changed() => return,
            () = stopped(&mut stop) => return,
        };
        match outcome {
            Outcome::Respond(frame) => {
                tap(WireKind::Response, &frame);
                if writer.write_all(&frame).await.is_err() || writer.flush().await.is_err() {
                    return;
                }
                if forced_error.is_some() {
                    return;
                }
            }
            Outcome::NoResponse => tap(WireKind::NoResponse, &[]),
            Outcome::Close => return,
        }
    }
}

/// A connection's SASL side: its authenticator, the settings it last read, its RNG.
struct Sasl {
    authenticator: Authenticator,
    /// The cluster's SASL settings, re-read for every frame of an authentication.
    config: SaslServerConfig,
    rng: SeededRng,
    connection_id: u64,
}

impl Sasl {
    /// `None` unless the cluster's listener requires SASL.
    fn new(broker: &Broker, connection_id: u64) -> Option<Self> {
        let (config, seed) = {
            let state = broker.controller.read();
            (state.config.sasl.clone(), state.config.seed)
        };
        config.requires_sasl().then(|| Self {
            authenticator: Authenticator::default(),
            connection_id,
            config,
            rng: SeededRng::seed_from_u64(
                seed ^ connection_id.rotate_left(17) ^ u64::from(broker.node_id as u32),
            ),
        })
    }

    async fn on_frame(&mut self, broker: &Broker, frame: &Bytes) -> Action {
        let api_key = frame.get(..2).map(|k| i16::from_be_bytes([k[0], k[1]]));
        let exchanging = !self.authenticator.is_complete();
        let sasl_api = !self.authenticator.expects_raw_token()
            && matches!(api_key, Some(SASL_HANDSHAKE | SASL_AUTHENTICATE));
        if exchanging || api_key == Some(SASL_HANDSHAKE) {
            self.config = broker.controller.read().config.sasl.clone();
        }
        if sasl_api && exchanging {
            if let Some(api_key) = api_key {
                let decision = broker.faults.decide(broker.node_id, api_key);
                if decision.hold_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(decision.hold_ms)).await;
                }
                if decision.lose {
                    self.record(broker, vec![AuthEventKind::Failed { code: None }]);
                    return Action::Close;
                }
                if let Some(code) = decision.error {
                    let action = self.authenticator.injected_failure(frame, code);
                    let events = self.authenticator.take_events();
                    self.record(broker, events);
                    return action;
                }
            }
        }
        let mut env = Env {
            config: &self.config,
            now_ms: wall_clock_ms(),
            generation: broker.faults.sasl_generation(broker.node_id),
            rng: &mut self.rng,
        };
        let action = self.authenticator.on_frame(frame, &mut env);
        let events = self.authenticator.take_events();
        self.record(broker, events);
        action
    }

    fn record(&self, broker: &Broker, events: Vec<AuthEventKind>) {
        for kind in events {
            broker
                .controller
                .record_auth(broker.node_id, self.connection_id, kind);
        }
    }
}
