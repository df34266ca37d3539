//! `AbstractCoordinator.HeartbeatThread.run()` of Kafka 3.1.0 (AbstractCoordinator.java:1406):
//! a task of its own that takes the consumer's lock for each iteration, polls the shared
//! network client (so it may run response handlers the application thread is waiting for), and
//! rediscovers the coordinator, expires the session, leaves on poll timeout, or heartbeats.
//! `AbstractCoordinator.this.wait(ms)` releases the lock and waits for a notification or the
//! time, as in Java. An exception out of its `client.pollNoWakeup()` (a response that does not
//! parse) ends the thread with `failed` set, as Java's `catch (Throwable e)` does.

use std::sync::Arc;

use sim::history::Event;
use tokio::sync::{Mutex, Notify};
use tokio::time::{Duration, Instant};

use super::consumer::KafkaConsumer;

/// What one iteration decided to do after releasing the lock.
enum Next {
    Continue,
    /// `wait()`: until notified.
    WaitNotified,
    /// `wait(ms)`.
    Wait(Duration),
    Exit,
}

/// The heartbeat thread, until it is closed (or, like Java's, forever if it is dropped).
pub(super) async fn run(shared: Arc<Mutex<KafkaConsumer>>, notify: Arc<Notify>) {
    loop {
        let next = iteration(&shared).await;
        match next {
            Next::Continue => {}
            Next::WaitNotified => notify.notified().await,
            Next::Wait(d) => {
                let _ = tokio::time::timeout(d, notify.notified()).await;
            }
            Next::Exit => return,
        }
    }
}

/// One pass of the `while (true) { synchronized (AbstractCoordinator.this) { … } }` loop.
async fn iteration(shared: &Arc<Mutex<KafkaConsumer>>) -> Next {
    let mut guard = shared.lock().await;
    let s = &mut *guard;
    let retry_backoff = s.retry_backoff;
    {
        let Some(group) = s.coordinator.group.as_mut() else {
            return Next::Exit;
        };
        let state = group.state;
        let Some(flags) = group.heartbeat_thread.as_mut() else {
            return Next::Exit;
        };
        if flags.closed {
            return Next::Exit;
        }
        if !flags.enabled {
            return Next::WaitNotified;
        }
        // "we do not need to heartbeat we are not part of a group yet"
        if state.has_not_joined_group() || flags.failed.is_some() {
            flags.enabled = false;
            return Next::Continue;
        }
    }
    if let Err(e) = poll_no_wakeup(s).await {
        return fail(s, e);
    }
    let now = Instant::now();
    if s.coordinator.coordinator_unknown() {
        if s.coordinator.has_find_coordinator_future() {
            // Clear it so that after the backoff, if the coordinator is still unknown, the
            // next iteration rediscovers it in case the application thread cannot.
            s.coordinator.clear_find_coordinator_future();
            return Next::Wait(retry_backoff);
        }
        s.coordinator.lookup_coordinator(&mut s.client);
        return Next::Continue;
    }
    let group = s.coordinator.group.as_mut().expect("checked above");
    if group.heartbeat.session_timeout_expired(now) {
        s.coordinator.mark_coordinator_unknown(
            &s.client,
            "session timed out without receiving a heartbeat response",
        );
        return Next::Continue;
    }
    if group.heartbeat.poll_timeout_expired(now) {
        // "the poll timeout has expired, which means that the foreground thread has stalled
        // in between calls to poll()"
        s.coordinator
            .maybe_leave_group(&mut s.client, "consumer poll timeout has expired.");
        if let Err(e) = poll_no_wakeup(s).await {
            return fail(s, e);
        }
        return Next::Continue;
    }
    if !group.heartbeat.should_heartbeat(now) {
        return Next::Wait(retry_backoff);
    }
    group.heartbeat.sent_heartbeat(now);
    s.coordinator.send_heartbeat(&mut s.client);
    Next::Continue
}

/// `client.pollNoWakeup()` on the heartbeat thread, with the exception it threw, if any. An
/// exception an earlier application-thread poll left untaken is not this thread's.
async fn poll_no_wakeup(s: &mut KafkaConsumer) -> Result<(), String> {
    let earlier = s.client.has_thrown();
    s.poll_no_wakeup().await;
    if earlier {
        return Ok(());
    }
    s.client.take_thrown().map_or(Ok(()), Err)
}

/// `catch (Throwable e) { failed.set(e) }` (AbstractCoordinator.java:1463): the thread ends and
/// leaves its failure for the application thread's `pollHeartbeat` to rethrow.
fn fail(s: &mut KafkaConsumer, cause: String) -> Next {
    s.ctx().record(Event::Note {
        text: format!("heartbeat thread failed due to unexpected error: {cause}"),
    });
    if let Some(flags) = s
        .coordinator
        .group
        .as_mut()
        .and_then(|g| g.heartbeat_thread.as_mut())
    {
        flags.failed = Some(cause);
    }
    Next::Exit
}
