//! `AbstractCoordinator.HeartbeatThread.run()` of Kafka 3.1.0 (AbstractCoordinator.java:1406):
//! a task of its own that takes the consumer's lock for each iteration, polls the shared
//! network client (so it may run response handlers the application thread is waiting for), and
//! rediscovers the coordinator, expires the session, leaves on poll timeout, or heartbeats.
//! `AbstractCoordinator.this.wait(ms)` releases the lock and waits for a notification or the
//! time, as in Java. An exception out of its `client.pollNoWakeup()` (a response that does not
//! parse) ends the thread with `failed` set, as Java's `catch (Throwable e)` does.

use std::sync::Arc;

use kafka_consumer::rt::SeededRng;
use sim::history::Event;
use tokio::sync::{Mutex, Notify};
use tokio::time::{Duration, Instant};

use super::app::EMPTY_PASS_COST;
use super::consumer::KafkaConsumer;

/// The longest the heartbeat thread stays off the CPU after waking the application thread: a
/// few scheduler periods of a loaded host (Streams soak tests, where KAFKA-10793 was seen).
/// It spans the time the simulated network takes to refuse a connection (a few virtual ms),
/// so either side of the race can win.
const MAX_OFF_CPU: Duration = Duration::from_millis(10);

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
        if s.coordinator.clears_lookup_in_handler() {
            // 2.6.1: "the immediate future check ensures that we backoff properly in the case
            // that no brokers are available to connect to" — and for as long as the field is
            // set, whatever state its future is in.
            if s.coordinator.has_find_coordinator_future() || lookup_coordinator(s).await {
                return Next::Wait(retry_backoff);
            }
            return Next::Continue;
        }
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

/// 2.6.1's `lookupCoordinator()` on the heartbeat thread, with the field known to be empty;
/// whether the future it returns has failed. `client.send` queues the request and wakes the
/// application thread's client poll (`client.wakeup()`), which holds no coordinator monitor
/// (the fetch wait of `pollForFetches`); the woken thread runs that poll while the heartbeat
/// thread goes on to `compose`. When the poll completes the request first — a broker that
/// refuses the connection fails it at once — `compose` finds a completed future and runs
/// `FindCoordinatorResponseHandler` on the spot: its `clearFindCoordinatorFuture()` finds
/// nothing to clear, it fails the composed future, and `lookupCoordinator` then stores that
/// failed future (KAFKA-10793). The model's I/O runs in tasks of its own, so the race is
/// how long the heartbeat thread stays off the CPU after the wake-up ([`off_cpu_after_wakeup`]):
/// whatever the network completed by then is complete when the handler is chained. (On the
/// application thread nothing can complete the request in between: the heartbeat thread
/// polls only under the monitor the application thread holds there.)
async fn lookup_coordinator(s: &mut KafkaConsumer) -> bool {
    let Some(sent) = s.coordinator.send_find_coordinator(&mut s.client) else {
        return true; // RequestFuture.noBrokersAvailable()
    };
    tokio::time::sleep(off_cpu_after_wakeup(s)).await;
    if let Some(completion) = s.client.take_if_completed(sent.correlation).await {
        s.dispatch(vec![completion]);
    }
    s.coordinator.store_find_coordinator_future(sent.id);
    matches!(s.coordinator.lookup_outcome(sent.id), Some(Err(_)))
}

/// How long the heartbeat thread waits for the CPU after waking the application thread:
/// drawn per wake-up, uniformly up to [`MAX_OFF_CPU`], at least the virtual CPU time of a
/// poll pass.
fn off_cpu_after_wakeup(s: &mut KafkaConsumer) -> Duration {
    let max_us = MAX_OFF_CPU.as_micros() as u64;
    let drawn = s
        .scheduler
        .get_or_insert_with(SeededRng::from_runtime)
        .below_inclusive(max_us);
    Duration::from_micros(drawn).max(EMPTY_PASS_COST)
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
