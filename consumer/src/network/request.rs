//! A request on its way through a broker's connection task, type-erased, and the future its
//! caller holds.
//!
//! The caller's future only receives on a oneshot channel: dropping it never touches the socket.
//! The connection task chooses the version (after negotiation), encodes, writes, decodes the
//! response and completes the channel; a response nobody waits for any more is discarded.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use kafka_protocol::protocol::{Request, StrBytes, VersionRange};
use tokio::sync::oneshot;

use super::{CloseReason, NetworkError};
use crate::protocol::{codec, Api, ProtocolError};
use crate::rt::Instant;

/// A decoded response and the version it was exchanged at.
#[derive(Debug, Clone, PartialEq)]
pub struct Response<T> {
    /// The node that answered.
    pub node_id: i32,
    /// The version the request was sent at (and the response read at).
    pub version: i16,
    /// The response message.
    pub body: T,
}

type Completion<T> = oneshot::Sender<Result<Response<T>, NetworkError>>;

/// The response to a request sent with [`NetworkClient::send`](super::NetworkClient::send).
///
/// `'static` and `Send`; dropping it abandons the response but never the request, which is
/// written whole (or not at all) by the connection task.
#[derive(Debug)]
#[must_use = "the response arrives through this future"]
pub struct ResponseFuture<T> {
    receiver: oneshot::Receiver<Result<Response<T>, NetworkError>>,
    broker: String,
}

impl<T> ResponseFuture<T> {
    /// A future that resolves at once to `error`.
    pub(crate) fn failed(broker: String, error: NetworkError) -> Self {
        let (sender, receiver) = oneshot::channel();
        let _ = sender.send(Err(error));
        Self { receiver, broker }
    }
}

impl<T> Future for ResponseFuture<T> {
    type Output = Result<Response<T>, NetworkError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.receiver).poll(cx).map(|received| {
            received.unwrap_or_else(|_| {
                // The connection task ended without answering: the client was dropped.
                Err(NetworkError::ConnectionClosed {
                    broker: self.broker.clone(),
                    reason: CloseReason::Shutdown,
                })
            })
        })
    }
}

/// What the connection task needs from a request, whatever its type.
pub(crate) trait PendingRequest: Send {
    /// The request's API.
    fn api(&self) -> Api;
    /// The versions it may be sent at: its message's range, or the one version the caller pinned.
    fn versions(&self) -> VersionRange;
    /// Encodes one complete frame.
    fn encode(
        &self,
        version: i16,
        correlation_id: i32,
        client_id: Option<&StrBytes>,
    ) -> Result<Bytes, ProtocolError>;
    /// Decodes the response frame and hands it to the caller. A decode error is returned (after
    /// the caller got it too) so the connection can be closed.
    fn complete(self: Box<Self>, version: i16, frame: Bytes) -> Result<(), ProtocolError>;
    /// Fails the request.
    fn fail(self: Box<Self>, error: NetworkError);
}

/// A request queued for a connection task.
pub(crate) struct Command {
    pub request: Box<dyn PendingRequest>,
    pub deadline: Instant,
    pub timeout_ms: u64,
}

/// Counts a node's unanswered requests, for least-loaded node selection; the count drops when
/// the request is completed or failed (or dropped with a dead task).
pub(crate) struct LoadGuard(Arc<AtomicUsize>);

impl LoadGuard {
    pub fn new(outstanding: &Arc<AtomicUsize>) -> Self {
        outstanding.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(outstanding))
    }
}

impl Drop for LoadGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A typed request and its caller's completion channel.
pub(crate) struct TypedRequest<R: Request> {
    request: R,
    pinned_version: Option<i16>,
    node_id: i32,
    broker: String,
    completion: Completion<R::Response>,
    _load: LoadGuard,
}

impl<R: Request> TypedRequest<R> {
    /// The request and the future its response will complete.
    pub fn new(
        request: R,
        pinned_version: Option<i16>,
        node_id: i32,
        broker: String,
        load: LoadGuard,
    ) -> (Self, ResponseFuture<R::Response>) {
        let (completion, receiver) = oneshot::channel();
        let future = ResponseFuture {
            receiver,
            broker: broker.clone(),
        };
        let typed = Self {
            request,
            pinned_version,
            node_id,
            broker,
            completion,
            _load: load,
        };
        (typed, future)
    }
}

impl<R> PendingRequest for TypedRequest<R>
where
    R: Request + Send,
    R::Response: Send,
{
    fn api(&self) -> Api {
        Api(R::KEY)
    }

    fn versions(&self) -> VersionRange {
        match self.pinned_version {
            Some(v) => VersionRange { min: v, max: v },
            None => R::VERSIONS,
        }
    }

    fn encode(
        &self,
        version: i16,
        correlation_id: i32,
        client_id: Option<&StrBytes>,
    ) -> Result<Bytes, ProtocolError> {
        codec::encode_request(&self.request, version, correlation_id, client_id)
    }

    fn complete(self: Box<Self>, version: i16, frame: Bytes) -> Result<(), ProtocolError> {
        match codec::decode_response::<R>(frame, version) {
            Ok(body) => {
                let response = Response {
                    node_id: self.node_id,
                    version,
                    body,
                };
                // The caller may have dropped its future: the response is simply discarded.
                let _ = self.completion.send(Ok(response));
                Ok(())
            }
            Err(error) => {
                let _ = self.completion.send(Err(NetworkError::Protocol {
                    broker: self.broker,
                    source: error.clone(),
                }));
                Err(error)
            }
        }
    }

    fn fail(self: Box<Self>, error: NetworkError) {
        let _ = self.completion.send(Err(error));
    }
}
