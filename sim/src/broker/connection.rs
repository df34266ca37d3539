//! One client connection: frames in, handled strictly one at a time in arrival order (Kafka's
//! processor mutes the channel until the response is sent), each response written as a whole
//! frame and flushed (madsim sends only on flush). Frames are reported to the cluster's
//! [`WireTap`](super::WireTap), if any.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::BytesMut;
use kafka_consumer::protocol::frame::FrameDecoder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::dispatch::{self, ClientInfo, Outcome};
use super::wire_tap::WireKind;
use super::{stopped, Broker};

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
        let outcome = tokio::select! {
            outcome = dispatch::handle(broker, frame, &client) => outcome,
            _ = resets.changed() => return,
            () = stopped(&mut stop) => return,
        };
        match outcome {
            Outcome::Respond(frame) => {
                tap(WireKind::Response, &frame);
                if writer.write_all(&frame).await.is_err() || writer.flush().await.is_err() {
                    return;
                }
            }
            Outcome::NoResponse => tap(WireKind::NoResponse, &[]),
            Outcome::Close => return,
        }
    }
}
