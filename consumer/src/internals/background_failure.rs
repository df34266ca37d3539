//! A background task that panicked is reported, not mistaken for a closed consumer.
//!
//! The background task is the only code that talks to brokers; if it panics (a bug), every
//! channel to it closes and the application side's next call would fail with
//! [`Error::Closed`], the error of a consumer the user closed. The task's loop runs each of its
//! steps under `catch_unwind` and records a panic's message here before it stops, so its
//! channels close only once the message can be read; the application side then reports
//! [`Error::Internal`] with that message from every call instead. [`supervise`] catches what
//! is left (a panic inside an await of the loop), recorded once the task has unwound.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};

use futures_util::FutureExt;

use super::completion::{self, CompletionReceiver};
use crate::error::{panic_message, Error};

/// Why the background task stopped, when it failed; shared by both sides of one consumer.
#[derive(Debug, Clone, Default)]
pub(crate) struct BackgroundFailure(Arc<OnceLock<Arc<str>>>);

impl BackgroundFailure {
    /// Records a panic of the background task (the first one counts).
    pub fn record(&self, message: &str) {
        tracing::error!(%message, "the consumer's background task panicked; the consumer cannot go on");
        let _ = self.0.set(format!("panicked: {message}").into());
    }

    /// Whether the background task panicked.
    pub fn has_failed(&self) -> bool {
        self.0.get().is_some()
    }

    /// The error for a call that found the background task gone: [`Error::Internal`] with the
    /// panic's message if it failed, else [`Error::Closed`].
    pub fn stopped_error(&self) -> Error {
        self.0.get().map_or(Error::Closed, |message| {
            Error::Internal(Arc::clone(message))
        })
    }

    /// [`completion::wait`], a dropped completion explained by [`Self::explain`].
    pub async fn wait<T: Clone>(&self, receiver: &mut CompletionReceiver<T>) -> Result<T, Error> {
        self.explain(completion::wait(receiver).await)
    }

    /// `result`, with [`Error::Closed`] replaced by [`Self::stopped_error`].
    pub fn explain<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        match result {
            Err(Error::Closed) => Err(self.stopped_error()),
            other => other,
        }
    }
}

/// Runs `task`, recording a panic in `failure` (once the task has unwound: a caller may see
/// its channels close just before).
pub(crate) async fn supervise(task: impl Future<Output = ()>, failure: BackgroundFailure) {
    if let Err(payload) = AssertUnwindSafe(task).catch_unwind().await {
        failure.record(&panic_message(payload.as_ref()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_in_an_await_is_recorded() {
        let failure = BackgroundFailure::default();
        supervise(
            async {
                tokio::task::yield_now().await;
                panic!("boom at {}", 7);
            },
            failure.clone(),
        )
        .await;
        assert!(failure.has_failed());
        assert_eq!(
            failure.stopped_error().to_string(),
            "background task failed: panicked: boom at 7"
        );
        assert!(matches!(
            failure.explain::<()>(Err(Error::Closed)),
            Err(Error::Internal(_))
        ));
    }

    #[tokio::test]
    async fn a_task_that_ends_leaves_closed_as_closed() {
        let failure = BackgroundFailure::default();
        supervise(async {}, failure.clone()).await;
        assert!(matches!(failure.stopped_error(), Error::Closed));
        assert!(matches!(
            failure.explain::<()>(Err(Error::Closed)),
            Err(Error::Closed)
        ));
    }
}
