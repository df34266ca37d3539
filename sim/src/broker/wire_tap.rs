//! A record of every frame that crossed the brokers' sockets, on virtual time, so two runs of
//! one seed can be compared byte for byte (a frame is kept as its length and a 64-bit digest).
//!
//! Off unless a tap is plugged in: an unbounded trace is a test instrument, not broker state.

use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use kafka_consumer::rt::Instant;

/// What happened on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireKind {
    /// A request frame arrived (length prefix excluded).
    Request,
    /// A response frame was written (length prefix included).
    Response,
    /// The request was handled and, by design, not answered (Produce with acks=0).
    NoResponse,
    /// The broker closed the connection (peer EOF, reset, stop, or a request it refuses).
    Closed,
}

/// One event on one broker connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireEvent {
    /// Virtual microseconds since the tap was created.
    pub at_us: u64,
    /// The broker's node id.
    pub broker: i32,
    /// The client's address (madsim assigns ports deterministically).
    pub peer: SocketAddr,
    /// What happened.
    pub kind: WireKind,
    /// The frame's length in bytes (0 for `NoResponse` and `Closed`).
    pub len: usize,
    /// FNV-1a 64 of the frame (0 for `NoResponse` and `Closed`).
    pub digest: u64,
    /// A request's API key (the frame's first two bytes); `None` for other events.
    pub api_key: Option<i16>,
}

impl fmt::Display for WireEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>10}us broker-{} {} {:?} {}B {:016x}",
            self.at_us, self.broker, self.peer, self.kind, self.len, self.digest
        )
    }
}

/// The shared trace every broker of a cluster appends to.
#[derive(Debug, Clone)]
pub struct WireTap {
    inner: Arc<Mutex<Vec<WireEvent>>>,
    start: Instant,
}

impl Default for WireTap {
    fn default() -> Self {
        Self::new()
    }
}

impl WireTap {
    /// An empty trace whose clock starts now.
    pub fn new() -> Self {
        Self {
            inner: Arc::default(),
            start: Instant::now(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<WireEvent>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn record(&self, broker: i32, peer: SocketAddr, kind: WireKind, frame: &[u8]) {
        let at_us = u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX);
        let (len, digest) = if frame.is_empty() {
            (0, 0)
        } else {
            (frame.len(), fnv1a(frame))
        };
        let api_key = match (kind, frame) {
            (WireKind::Request, [k0, k1, ..]) => Some(i16::from_be_bytes([*k0, *k1])),
            _ => None,
        };
        self.lock().push(WireEvent {
            at_us,
            broker,
            peer,
            kind,
            len,
            digest,
            api_key,
        });
    }

    /// Everything recorded so far, in the order it happened.
    pub fn events(&self) -> Vec<WireEvent> {
        self.lock().clone()
    }
}

/// FNV-1a, 64 bits: a stable digest (std's hashers may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
