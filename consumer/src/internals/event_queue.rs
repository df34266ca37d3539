//! The two event queues between the application side and the background task, measured as
//! Java's new consumer measures its own (KIP-1068, `AsyncConsumerMetrics`): how many events
//! wait (`*-event-queue-size`) and how long each waited to be taken (`*-event-queue-time`).
//! Each event carries the instant it was queued; the length is counted as events go in and
//! out, so either side can read it.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;

use super::metrics::{EventQueue, SharedMetrics};
use crate::rt::Instant;

/// An event and when it was queued.
#[derive(Debug)]
struct Queued<T> {
    event: T,
    queued_at: Instant,
}

/// A queue from one side to the other: `which` names it in the metrics.
pub(crate) fn unbounded<T>(
    which: EventQueue,
    metrics: &Arc<SharedMetrics>,
) -> (EventSender<T>, EventReceiver<T>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let sender = EventSender {
        tx,
        which,
        metrics: Arc::clone(metrics),
    };
    let receiver = EventReceiver {
        rx,
        which,
        metrics: Arc::clone(metrics),
    };
    (sender, receiver)
}

/// The sending end; cloned freely.
#[derive(Debug)]
pub(crate) struct EventSender<T> {
    tx: mpsc::UnboundedSender<Queued<T>>,
    which: EventQueue,
    metrics: Arc<SharedMetrics>,
}

impl<T> Clone for EventSender<T> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            which: self.which,
            metrics: Arc::clone(&self.metrics),
        }
    }
}

impl<T> EventSender<T> {
    /// Queues `event`; gives it back if the receiving side is gone.
    pub fn send(&self, event: T) -> Result<(), T> {
        self.metrics.event_queued(self.which);
        let queued = Queued {
            event,
            queued_at: Instant::now(),
        };
        self.tx.send(queued).map_err(|rejected| {
            self.metrics.event_taken(self.which);
            rejected.0.event
        })
    }

    /// A sender that does not keep the queue open.
    pub fn downgrade(&self) -> WeakEventSender<T> {
        WeakEventSender {
            tx: self.tx.downgrade(),
            which: self.which,
            metrics: Arc::clone(&self.metrics),
        }
    }
}

/// A sending end that does not keep the queue open (a handle that outlives the consumer).
#[derive(Debug)]
pub(crate) struct WeakEventSender<T> {
    tx: mpsc::WeakUnboundedSender<Queued<T>>,
    which: EventQueue,
    metrics: Arc<SharedMetrics>,
}

impl<T> WeakEventSender<T> {
    /// The sender, while the queue is open.
    pub fn upgrade(&self) -> Option<EventSender<T>> {
        Some(EventSender {
            tx: self.tx.upgrade()?,
            which: self.which,
            metrics: Arc::clone(&self.metrics),
        })
    }
}

/// The receiving end.
#[derive(Debug)]
pub(crate) struct EventReceiver<T> {
    rx: mpsc::UnboundedReceiver<Queued<T>>,
    which: EventQueue,
    metrics: Arc<SharedMetrics>,
}

impl<T> EventReceiver<T> {
    /// The next event, once one is queued; `None` once every sender is gone. Cancel-safe (as
    /// the channel's `recv`): an event is taken, and measured, only when returned.
    pub async fn recv(&mut self) -> Option<T> {
        let queued = self.rx.recv().await?;
        Some(self.taken(queued))
    }

    /// The next event if one is queued now.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        self.rx.try_recv().map(|queued| self.taken(queued))
    }

    fn taken(&self, queued: Queued<T>) -> T {
        self.metrics
            .event_dequeued(self.which, queued.queued_at, Instant::now());
        queued.event
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internals::metrics::MetricConfig;
    use crate::metric::CONSUMER_GROUP;

    fn value(metrics: &SharedMetrics, name: &str) -> f64 {
        let mut out = Vec::new();
        metrics.measure_into(Instant::now(), &Default::default(), &mut out);
        out.iter()
            .find(|m| m.name.group == CONSUMER_GROUP && m.name.name == name)
            .unwrap_or_else(|| panic!("{name} missing"))
            .value
    }

    #[tokio::test]
    async fn the_queue_counts_what_waits_and_times_what_was_taken() {
        let metrics = Arc::new(SharedMetrics::new(MetricConfig::default(), "c1"));
        let (tx, mut rx) = unbounded::<u32>(EventQueue::Application, &metrics);
        let weak = tx.downgrade();
        tx.send(1).unwrap();
        weak.upgrade().unwrap().send(2).unwrap();
        assert_eq!(value(&metrics, "application-event-queue-size"), 2.0);
        assert!(value(&metrics, "application-event-queue-time-max").is_nan());
        tokio::time::sleep(crate::rt::Duration::from_millis(20)).await;
        assert_eq!(rx.recv().await, Some(1));
        assert_eq!(value(&metrics, "application-event-queue-size"), 1.0);
        assert!(value(&metrics, "application-event-queue-time-max") >= 20.0);
        assert_eq!(rx.try_recv(), Ok(2));
        assert_eq!(value(&metrics, "application-event-queue-size"), 0.0);
        // The other queue is its own.
        assert_eq!(value(&metrics, "background-event-queue-size"), 0.0);
        drop(rx);
        assert_eq!(tx.send(3), Err(3));
        assert_eq!(value(&metrics, "application-event-queue-size"), 0.0);
        drop(tx);
        assert!(weak.upgrade().is_none());
    }
}
