//! Completion handles of blocking application events, and the reaper that enforces their
//! deadlines (Java's `CompletableApplicationEvent` future and `CompletableEventReaper`).
//!
//! A completion is shared between the request manager that works on it and the reaper: whoever
//! completes it first wins, later completions are ignored. The application side waits on a
//! `watch` receiver, which several parties can hold (a `commit_async` future and the queue that
//! orders commit callbacks).

use std::sync::Arc;

use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::rt::Instant;

/// The background side's end of one blocking call.
#[derive(Debug)]
pub(crate) struct Completion<T> {
    sender: Arc<watch::Sender<Option<Result<T>>>>,
    deadline: Option<Instant>,
    operation: &'static str,
    timeout_ms: u64,
}

impl<T> Clone for Completion<T> {
    fn clone(&self) -> Self {
        Self {
            sender: Arc::clone(&self.sender),
            deadline: self.deadline,
            operation: self.operation,
            timeout_ms: self.timeout_ms,
        }
    }
}

/// The application side's end: resolves once the background side (or the reaper) completes it.
pub(crate) type CompletionReceiver<T> = watch::Receiver<Option<Result<T>>>;

impl<T: Clone + Send + Sync + 'static> Completion<T> {
    /// A completion for `operation` that times out at `deadline` (`None`: only close fails it).
    pub fn new(
        operation: &'static str,
        deadline: Option<Instant>,
        timeout_ms: u64,
    ) -> (Self, CompletionReceiver<T>) {
        let (sender, receiver) = watch::channel(None);
        let completion = Self {
            sender: Arc::new(sender),
            deadline,
            operation,
            timeout_ms,
        };
        (completion, receiver)
    }

    /// Completes with `result` unless already completed; returns whether this call did it.
    pub fn complete(&self, result: Result<T>) -> bool {
        let mut result = Some(result);
        self.sender.send_if_modified(|slot| {
            if slot.is_some() {
                return false;
            }
            *slot = result.take();
            true
        })
    }

    /// Whether it is completed, or nobody waits for it any more.
    pub fn is_done(&self) -> bool {
        self.sender.borrow().is_some() || self.sender.is_closed()
    }

    /// The absolute deadline, if any.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The timeout error this completion fails with at its deadline.
    pub fn timeout_error(&self) -> Error {
        Error::Timeout {
            operation: self.operation,
            timeout_ms: self.timeout_ms,
        }
    }
}

/// Waits for a completion on the application side.
pub(crate) async fn wait<T: Clone>(receiver: &mut CompletionReceiver<T>) -> Result<T> {
    match receiver.wait_for(Option::is_some).await {
        Ok(value) => value.clone().unwrap_or(Err(Error::Closed)),
        // The background task dropped every handle without completing: it is gone.
        Err(_) => Err(Error::Closed),
    }
}

/// What the reaper needs of a completion, whatever its value type.
trait Reapable: Send {
    fn deadline(&self) -> Option<Instant>;
    fn is_done(&self) -> bool;
    fn fail_timeout(&self) -> bool;
    fn fail(&self, error: Error) -> bool;
}

impl<T: Clone + Send + Sync + 'static> Reapable for Completion<T> {
    fn deadline(&self) -> Option<Instant> {
        Completion::deadline(self)
    }
    fn is_done(&self) -> bool {
        Completion::is_done(self)
    }
    fn fail_timeout(&self) -> bool {
        self.complete(Err(self.timeout_error()))
    }
    fn fail(&self, error: Error) -> bool {
        self.complete(Err(error))
    }
}

/// Fails overdue completions with a timeout error; on close, fails all that remain.
#[derive(Default)]
pub(crate) struct CompletableEventReaper {
    tracked: Vec<Box<dyn Reapable>>,
}

impl CompletableEventReaper {
    /// Starts tracking a completion.
    pub fn add<T: Clone + Send + Sync + 'static>(&mut self, completion: &Completion<T>) {
        self.tracked.push(Box::new(completion.clone()));
    }

    /// Fails every tracked completion whose deadline is at or before `now`, and forgets the
    /// completed ones. Returns how many it timed out.
    pub fn reap(&mut self, now: Instant) -> usize {
        let mut timed_out = 0;
        self.tracked.retain(|c| {
            if c.is_done() {
                return false;
            }
            if c.deadline().is_some_and(|d| d <= now) {
                if c.fail_timeout() {
                    timed_out += 1;
                }
                return false;
            }
            true
        });
        if timed_out > 0 {
            tracing::debug!(timed_out, "reaper failed overdue events");
        }
        timed_out
    }

    /// Fails every remaining completion (close).
    pub fn reap_all(&mut self, error: &Error) -> usize {
        let failed = self
            .tracked
            .iter()
            .filter(|c| c.fail(error.clone()))
            .count();
        self.tracked.clear();
        failed
    }

    /// The earliest deadline among pending completions, so the loop wakes to reap it.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.tracked
            .iter()
            .filter(|c| !c.is_done())
            .filter_map(|c| c.deadline())
            .min()
    }

    /// How many completions are tracked.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.tracked.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rt::Duration;

    #[tokio::test]
    async fn reaper_times_out_overdue_events_only() {
        let now = Instant::now();
        let mut reaper = CompletableEventReaper::default();
        let (early, mut early_rx) =
            Completion::<u32>::new("early", Some(now + Duration::from_millis(10)), 10);
        let (late, mut late_rx) =
            Completion::<u32>::new("late", Some(now + Duration::from_millis(100)), 100);
        let (done, mut done_rx) =
            Completion::<u32>::new("done", Some(now + Duration::from_millis(10)), 10);
        reaper.add(&early);
        reaper.add(&late);
        reaper.add(&done);
        assert!(done.complete(Ok(7)));
        assert_eq!(
            reaper.next_deadline(),
            Some(now + Duration::from_millis(10))
        );

        assert_eq!(reaper.reap(now + Duration::from_millis(10)), 1);
        assert!(matches!(
            wait(&mut early_rx).await,
            Err(Error::Timeout {
                operation: "early",
                ..
            })
        ));
        assert_eq!(wait(&mut done_rx).await.unwrap(), 7);
        assert_eq!(reaper.len(), 1);
        // A late completion does not overwrite the timeout.
        assert!(!early.complete(Ok(1)));

        assert_eq!(reaper.reap_all(&Error::Closed), 1);
        assert!(matches!(wait(&mut late_rx).await, Err(Error::Closed)));
        assert_eq!(reaper.len(), 0);
    }

    #[tokio::test]
    async fn abandoned_completion_counts_as_done() {
        let (c, rx) = Completion::<()>::new("x", None, 0);
        assert!(!c.is_done());
        drop(rx);
        assert!(c.is_done());
    }
}
