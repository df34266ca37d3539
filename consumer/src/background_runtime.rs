//! Where a consumer's background task runs.
//!
//! Every consumer has exactly one background task (the only code that talks to brokers). By
//! default it gets an OS thread of its own with a current-thread runtime: the application's
//! runtime — busy, single-threaded, or absent for the blocking facade — then never delays a
//! heartbeat. A process with many consumers (one per tenant) pays a thread and a runtime for
//! each; [`BackgroundRuntime::Shared`] puts every background task on one runtime the
//! application chooses instead (its own, or a pool built for the purpose). Either way it is one
//! task per consumer: the design does not change, only the executor.
//!
//! Under madsim there are no OS threads and no second runtime: both choices spawn the task on
//! the simulated node that creates the consumer (madsim-tokio's `Handle` spawns there too).

use std::future::Future;

use crate::error::Result;

/// Where [`Consumer::with_runtime`](crate::Consumer::with_runtime) runs the consumer's
/// background task.
#[derive(Debug, Clone, Default)]
pub enum BackgroundRuntime {
    /// An OS thread of its own with a current-thread runtime (the default): the background
    /// task never competes with the application's tasks, at the cost of one thread per
    /// consumer.
    #[default]
    Dedicated,
    /// Spawned onto this runtime, shared by every consumer given a handle to it. The runtime
    /// must outlive the consumers (when it shuts down, their background tasks stop and every
    /// call returns [`Error::Closed`](crate::Error::Closed)), and its threads must not be
    /// blocked for long: a blocked worker delays heartbeats of the consumers it runs. A
    /// multi-thread runtime is the safe choice; a current-thread one works as long as the
    /// thread that drives it keeps awaiting.
    Shared(tokio::runtime::Handle),
}

impl BackgroundRuntime {
    /// The runtime the caller is running on ([`BackgroundRuntime::Shared`] with
    /// `Handle::current()`), or `None` outside any runtime.
    pub fn current() -> Option<Self> {
        tokio::runtime::Handle::try_current().ok().map(Self::Shared)
    }

    /// Starts `task` here. Real mode, [`Dedicated`](Self::Dedicated): returns the lease that
    /// keeps the dedicated runtime alive for the blocking facade.
    pub(crate) fn spawn(
        &self,
        task: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Option<RuntimeLease>> {
        match self {
            Self::Shared(handle) => {
                drop(handle.spawn(task));
                Ok(None)
            }
            Self::Dedicated => spawn_dedicated(task).map(Some),
        }
    }
}

#[cfg(madsim)]
fn spawn_dedicated(task: impl Future<Output = ()> + Send + 'static) -> Result<RuntimeLease> {
    // madsim forbids OS threads; the task runs on the simulated node that created the consumer.
    drop(tokio::spawn(task));
    Ok(RuntimeLease {})
}

/// Simulation: nothing to keep alive.
#[cfg(madsim)]
#[derive(Debug)]
pub(crate) struct RuntimeLease {}

#[cfg(not(madsim))]
pub(crate) use dedicated::{spawn_dedicated, RuntimeLease};

#[cfg(not(madsim))]
mod dedicated {
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    use std::thread::Thread;

    use tokio::sync::oneshot;

    use crate::error::{Error, Result};

    /// A hold on a dedicated background runtime: while it lives, the runtime (its timer and
    /// reactor, driven by the background thread) stays up even after the background task
    /// ended, so the blocking facade can still wait on timers. Dropping it lets the
    /// background thread finish and drop the runtime there — never on the caller's thread,
    /// which may be inside an async context where tokio refuses to drop a runtime.
    #[derive(Debug)]
    pub(crate) struct RuntimeLease {
        handle: tokio::runtime::Handle,
        _keep_alive: oneshot::Sender<()>,
    }

    impl RuntimeLease {
        /// Runs `future` to completion on the calling thread, whatever runtime context that
        /// thread is in (none, a runtime's worker, `block_on`, a blocking-pool thread): the
        /// thread parks between polls, and timers are driven by the background thread. Unlike
        /// `Runtime::block_on` this never panics inside an async context; it blocks that
        /// thread like any other blocking call.
        pub(crate) fn block_on<F: Future>(&self, future: F) -> F::Output {
            let _entered = self.handle.enter();
            // Outside tokio's cooperative budget: inside a task's poll the budget is that
            // task's, never replenished while this loop runs, and an exhausted budget would
            // make every channel read return Pending for ever.
            let mut future = std::pin::pin!(tokio::task::unconstrained(future));
            let waker = Waker::from(Arc::new(Unparker(std::thread::current())));
            let mut cx = Context::from_waker(&waker);
            loop {
                if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                    return output;
                }
                // A spurious wake-up only costs one more poll.
                std::thread::park();
            }
        }

        /// Enters the runtime's context, for calls that create timers without blocking.
        pub(crate) fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
            self.handle.enter()
        }
    }

    struct Unparker(Thread);

    impl Wake for Unparker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }

    pub(crate) fn spawn_dedicated(
        task: impl Future<Output = ()> + Send + 'static,
    ) -> Result<RuntimeLease> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                Error::Internal(format!("cannot build the background runtime: {e}").into())
            })?;
        let handle = runtime.handle().clone();
        let (keep_alive, released) = oneshot::channel::<()>();
        // The one OS thread of real mode. The runtime is dropped on this thread once the task
        // has ended and the lease is gone.
        #[allow(clippy::disallowed_methods)]
        std::thread::Builder::new()
            .name("kafka-consumer-network".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    task.await;
                    let _ = released.await;
                });
            })
            .map_err(|e| {
                Error::Internal(format!("cannot start the background thread: {e}").into())
            })?;
        Ok(RuntimeLease {
            handle,
            _keep_alive: keep_alive,
        })
    }
}
