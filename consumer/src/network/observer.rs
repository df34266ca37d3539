//! What the network layer reports as it works: connections opened and closed, frames sent and
//! received. The consumer measures Java's `Selector` metrics from these (`consumer-metrics`
//! and `consumer-node-metrics`); the layer itself only reports.

use std::fmt;
use std::sync::Arc;

/// Told of every connection and frame by the node tasks, as it happens: implementations must
/// be quick and must not block.
pub trait NetworkObserver: Send + Sync {
    /// A connection to `node_id` was established (TCP connected, TLS done; before the
    /// ApiVersions handshake, as Java's `connection-creation` counts it).
    fn connection_created(&self, node_id: i32);
    /// A connection [`connection_created`](Self::connection_created) reported has ended,
    /// whatever the reason.
    fn connection_closed(&self, node_id: i32);
    /// A request frame of `bytes` (its size prefix included) was handed to the socket.
    fn request_sent(&self, node_id: i32, bytes: usize);
    /// A response frame of `bytes` (its size prefix included) arrived.
    fn response_received(&self, node_id: i32, bytes: usize);
}

/// An installed [`NetworkObserver`]. Settings holding one compare equal when they hold the
/// same observer.
#[derive(Clone)]
pub struct ObserverHandle(pub Arc<dyn NetworkObserver>);

impl PartialEq for ObserverHandle {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for ObserverHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ObserverHandle(..)")
    }
}

/// Reports a connection's end when dropped, so every connection reported created is reported
/// closed exactly once, however it ends (a failed handshake included).
pub(crate) struct ConnectionReport {
    observer: Option<ObserverHandle>,
    node_id: i32,
}

impl ConnectionReport {
    /// Reports the connection to `node_id` created.
    pub fn created(observer: Option<ObserverHandle>, node_id: i32) -> Self {
        if let Some(observer) = &observer {
            observer.0.connection_created(node_id);
        }
        Self { observer, node_id }
    }

    pub fn request_sent(&self, bytes: usize) {
        if let Some(observer) = &self.observer {
            observer.0.request_sent(self.node_id, bytes);
        }
    }

    /// `frame_bytes`: the frame without its 4-byte size prefix, as the decoder returns it.
    pub fn response_received(&self, frame_bytes: usize) {
        if let Some(observer) = &self.observer {
            observer.0.response_received(self.node_id, frame_bytes + 4);
        }
    }
}

impl Drop for ConnectionReport {
    fn drop(&mut self) {
        if let Some(observer) = &self.observer {
            observer.0.connection_closed(self.node_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Recorded(Mutex<Vec<String>>);

    impl NetworkObserver for Recorded {
        fn connection_created(&self, node_id: i32) {
            self.0.lock().unwrap().push(format!("created {node_id}"));
        }
        fn connection_closed(&self, node_id: i32) {
            self.0.lock().unwrap().push(format!("closed {node_id}"));
        }
        fn request_sent(&self, node_id: i32, bytes: usize) {
            self.0
                .lock()
                .unwrap()
                .push(format!("sent {node_id} {bytes}"));
        }
        fn response_received(&self, node_id: i32, bytes: usize) {
            self.0
                .lock()
                .unwrap()
                .push(format!("received {node_id} {bytes}"));
        }
    }

    #[test]
    fn a_connection_is_reported_closed_once_when_dropped() {
        let recorded = Arc::new(Recorded::default());
        let observer: Arc<dyn NetworkObserver> = recorded.clone();
        let report = ConnectionReport::created(Some(ObserverHandle(observer)), 7);
        report.request_sent(30);
        report.response_received(96);
        drop(report);
        assert_eq!(
            *recorded.0.lock().unwrap(),
            ["created 7", "sent 7 30", "received 7 100", "closed 7"]
        );
        // Without an observer nothing is reported, and nothing fails.
        ConnectionReport::created(None, 7).request_sent(1);
    }
}
