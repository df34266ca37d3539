//! The rebalance listener (Java's `ConsumerRebalanceListener`) and the application side of the
//! callback handshake.
//!
//! The background side asks for a callback with a callback-needed event; the application side
//! runs the listener inside `poll`, `unsubscribe` or `close` and answers with exactly one
//! callback-completed event — also when the listener returns an error, panics, or the caller's
//! future is dropped halfway (its completion answers from its `Drop`). The rebalance on
//! the background side only waits for that answer; the listener's own error is returned to the
//! caller of `poll`.

use std::collections::BTreeSet;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::consumer::Consumer;
use crate::error::{Error, Result};
use crate::internals::event_queue::EventSender;
use crate::internals::events::ApplicationEvent;
use crate::types::TopicPartition;

/// What a listener method returns: a boxed future borrowing the listener and the consumer.
pub type ListenerFuture<'a> = Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// Reacts to the group moving partitions to and from this consumer. Runs on the application
/// side, inside `poll` (or `unsubscribe` / `close`), with the consumer at hand: a method may
/// commit, seek and read positions. Every method has a default that does nothing
/// (`on_partitions_lost` defaults to `on_partitions_revoked`, as in Java).
///
/// ```
/// use std::collections::BTreeSet;
/// use kafka_consumer::rebalance::{ConsumerRebalanceListener, ListenerFuture};
/// use kafka_consumer::{Consumer, TopicPartition};
///
/// /// Commits what was consumed before partitions go away.
/// struct CommitOnRevoke;
///
/// impl ConsumerRebalanceListener for CommitOnRevoke {
///     fn on_partitions_revoked<'a>(
///         &'a mut self,
///         consumer: &'a mut Consumer,
///         _partitions: &'a BTreeSet<TopicPartition>,
///     ) -> ListenerFuture<'a> {
///         Box::pin(async move {
///             consumer.commit_sync(None, std::time::Duration::from_secs(10)).await
///         })
///     }
/// }
/// ```
pub trait ConsumerRebalanceListener: Send {
    /// The partitions are taken away in an orderly way: their data was last handed out by an
    /// earlier `poll`, and they are still in `assignment()` so their offsets can be committed.
    fn on_partitions_revoked<'a>(
        &'a mut self,
        _consumer: &'a mut Consumer,
        _partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async { Ok(()) })
    }

    /// New partitions (possibly none) are assigned; they are not fetched until this returns,
    /// so a seek here decides where consumption starts.
    fn on_partitions_assigned<'a>(
        &'a mut self,
        _consumer: &'a mut Consumer,
        _partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async { Ok(()) })
    }

    /// The partitions may already belong to another member (the generation was lost, the
    /// session expired, the poll interval passed): committing their offsets would fail.
    fn on_partitions_lost<'a>(
        &'a mut self,
        consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        self.on_partitions_revoked(consumer, partitions)
    }
}

/// The listener's shared slot: taken out while a method runs, put back even if the caller's
/// future is dropped.
pub(crate) type ListenerSlot = Arc<Mutex<Option<Box<dyn ConsumerRebalanceListener>>>>;

/// Takes the listener out of its slot for one call; puts it back when dropped (unless the
/// callback installed a new one meanwhile).
pub(crate) struct BorrowedListener {
    slot: ListenerSlot,
    listener: Option<Box<dyn ConsumerRebalanceListener>>,
}

impl BorrowedListener {
    pub(crate) fn take(slot: &ListenerSlot) -> Self {
        let listener = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        Self {
            slot: Arc::clone(slot),
            listener,
        }
    }

    pub(crate) fn get(&mut self) -> Option<&mut Box<dyn ConsumerRebalanceListener>> {
        self.listener.as_mut()
    }
}

impl Drop for BorrowedListener {
    fn drop(&mut self) {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = self.listener.take();
        }
    }
}

/// Sends the callback-completed event exactly once: when [`Self::complete`] is called, or on
/// drop (the caller's future went away mid-callback). Also clears the in-callback flag.
/// A listener call the background side did not ask for (`close` giving up what the
/// application still holds) has no id: nothing is sent.
pub(crate) struct CallbackCompletion {
    app_events: EventSender<ApplicationEvent>,
    in_callback: Arc<AtomicBool>,
    id: Option<u64>,
}

impl CallbackCompletion {
    pub(crate) fn start(
        app_events: &EventSender<ApplicationEvent>,
        in_callback: &Arc<AtomicBool>,
        id: Option<u64>,
    ) -> Self {
        in_callback.store(true, Ordering::SeqCst);
        Self {
            app_events: app_events.clone(),
            in_callback: Arc::clone(in_callback),
            id,
        }
    }
}

impl Drop for CallbackCompletion {
    fn drop(&mut self) {
        self.in_callback.store(false, Ordering::SeqCst);
        // The background task may be gone (closing): nothing waits then.
        if let Some(id) = self.id {
            let _ = self
                .app_events
                .send(ApplicationEvent::RebalanceCallbackCompleted { id });
        }
    }
}

/// Runs a listener future, turning a panic into an error (the consumer must stay usable, and
/// the background side must get its answer).
pub(crate) struct CatchUnwind<'a> {
    inner: ListenerFuture<'a>,
}

impl<'a> CatchUnwind<'a> {
    pub(crate) fn new(inner: ListenerFuture<'a>) -> Self {
        Self { inner }
    }
}

impl Future for CatchUnwind<'_> {
    type Output = std::result::Result<Result<()>, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match catch_unwind(AssertUnwindSafe(|| self.inner.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(Ok(result)),
            Err(panic) => Poll::Ready(Err(crate::error::panic_message(panic.as_ref()))),
        }
    }
}

/// The error a failed or panicking listener method surfaces as.
pub(crate) fn callback_error(
    callback: &'static str,
    outcome: std::result::Result<Result<()>, String>,
) -> Result<()> {
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(Error::RebalanceCallback {
            callback,
            message: error.to_string(),
        }),
        Err(panic) => Err(Error::RebalanceCallback {
            callback,
            message: format!("panicked: {panic}"),
        }),
    }
}
