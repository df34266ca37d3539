//! The `consumer` subject: our production [`kafka_consumer::Consumer`], driven through the
//! same [`Subject`] calls as the legacy model. The runner records what the application does
//! (polls, deliveries, commits); this subject adds what its listener sees — rebalance
//! callbacks, run on the application side where our design runs them, and the assignment
//! changes they carry.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use futures_core::Stream;
use kafka_consumer::consumer::WakeupHandle;
use kafka_consumer::rebalance::{ConsumerRebalanceListener, ListenerFuture};
use kafka_consumer::{Consumer, Error, OffsetAndMetadata, TopicPartition};
use sim::history::{CallbackKind, Event, Tp};
use tokio::time::Duration;

use crate::app::SeekTo;
use crate::subject::{
    CommitCompletion, Delivered, ListenerBehaviour, LoopCounters, Subject, SubjectContext,
    SubjectError,
};

/// Our consumer as a subject.
pub struct ConsumerSubject {
    consumer: Consumer,
    ctx: SubjectContext,
    completed: Arc<Mutex<Vec<CommitCompletion>>>,
    /// The reset error the last failed take of records carried (see
    /// [`Subject::take_reset_error`]).
    reset_error: Option<(String, Vec<(Tp, i64)>)>,
    /// A listener method is running (inside `poll`/`recv`): a take does not give up on its
    /// deadline then, since dropping the call would abandon the callback halfway.
    in_listener: Arc<AtomicBool>,
}

impl ConsumerSubject {
    /// Starts the consumer (its background task runs on the current simulated node).
    pub fn new(ctx: SubjectContext) -> Result<Self, String> {
        let consumer = Consumer::new(ctx.config.clone()).map_err(|e| e.to_string())?;
        ctx.record(Event::MemberStart {
            group: ctx.config.group_id().unwrap_or_default().to_owned(),
        });
        Ok(Self {
            consumer,
            ctx,
            completed: Arc::default(),
            reset_error: None,
            in_listener: Arc::default(),
        })
    }

    /// The listener `subscribe` hands the consumer: it records every call.
    fn recording(&self, behaviour: ListenerBehaviour) -> RecordingListener {
        RecordingListener {
            ctx: self.ctx.clone(),
            behaviour,
            calls: AtomicU32::new(0),
            running: Arc::clone(&self.in_listener),
        }
    }

    /// Keeps the partitions and offsets of a reset error for the application, and names the
    /// error as the history does.
    fn failed(&mut self, error: &Error) -> SubjectError {
        let named = |kind: &str, offsets: &[(TopicPartition, i64)]| {
            let offsets = offsets.iter().map(|(tp, o)| (to_tp(tp), *o)).collect();
            Some((kind.to_owned(), offsets))
        };
        self.reset_error = match error {
            Error::OffsetOutOfRange { offsets } => named("OFFSET_OUT_OF_RANGE", offsets),
            Error::LogTruncation { divergent_offsets } => {
                named("LOG_TRUNCATION", divergent_offsets)
            }
            // No position at all: the partitions, with no offset to name.
            Error::NoOffsetForPartition { partitions } => {
                let none: Vec<(TopicPartition, i64)> =
                    partitions.iter().map(|tp| (tp.clone(), -1)).collect();
                named(NO_OFFSET, &none)
            }
            _ => None,
        };
        SubjectError(error_name(error))
    }

    /// A refused subscription is noted; the application goes on polling, as it would.
    fn note_subscribe_failure(&self, subscribed: kafka_consumer::Result<()>) {
        if let Err(error) = subscribed {
            self.ctx.record(Event::Note {
                text: format!("subscribe failed: {error}"),
            });
        }
    }
}

/// Kafka's name for what went wrong, as the checkers compare them (`NOT_COORDINATOR`, ...).
pub fn error_name(error: &Error) -> String {
    if let Some(code) = error.code() {
        return screaming_snake(&format!("{code:?}"));
    }
    match error {
        Error::Network(e) if e.to_string().contains("timed out") => "REQUEST_TIMED_OUT".to_owned(),
        Error::Network(_) => "DISCONNECTED".to_owned(),
        Error::RebalanceInProgress { .. } => "REBALANCE_IN_PROGRESS".to_owned(),
        Error::CommitFailed { .. } => "COMMIT_FAILED".to_owned(),
        Error::Timeout { .. } => "TIMEOUT".to_owned(),
        other => other.to_string(),
    }
}

/// Kafka's name for a response error code (`NOT_COORDINATOR`), or `ERROR_<code>` for a code
/// this client does not know.
pub fn code_name(code: i16) -> String {
    kafka_protocol::error::ResponseError::try_from_code(code).map_or_else(
        || format!("ERROR_{code}"),
        |e| screaming_snake(&format!("{e:?}")),
    )
}

fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// Awaits `future` for up to `wait`, and past it while a listener method runs inside it (the
/// application gives up on a `recv` only between callbacks: dropping it mid-callback would
/// abandon the callback, which the consumer then treats as done). `None`: given up.
async fn until_deadline<F: Future>(
    future: F,
    wait: Duration,
    in_listener: &AtomicBool,
) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut deadline = std::pin::pin!(tokio::time::sleep(wait));
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(cx) {
            return std::task::Poll::Ready(Some(output));
        }
        if deadline.as_mut().poll(cx).is_ready() && !in_listener.load(Ordering::SeqCst) {
            return std::task::Poll::Ready(None);
        }
        std::task::Poll::Pending
    })
    .await
}

/// A record as the application's history sees it.
fn delivered(r: &kafka_consumer::ConsumerRecord) -> Delivered {
    Delivered {
        tp: Tp::new(&*r.topic, r.partition),
        offset: r.offset,
        value: r
            .value
            .as_deref()
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default(),
    }
}

fn to_tp(tp: &TopicPartition) -> Tp {
    Tp::new(&*tp.topic, tp.partition)
}

fn offsets(offsets: &[(Tp, i64)]) -> kafka_consumer::consumer::Offsets {
    offsets
        .iter()
        .map(|(tp, o)| {
            (
                TopicPartition::new(tp.topic.as_str(), tp.partition),
                OffsetAndMetadata::new(*o),
            )
        })
        .collect()
}

/// The member's generation as the application sees it (-1 outside one).
fn generation_of(consumer: &Consumer) -> i32 {
    consumer.group_metadata().map_or(-1, |m| m.generation_id)
}

/// The reset error of a partition with no position at all (`NoOffsetForPartition`).
pub const NO_OFFSET: &str = "NO_OFFSET";

/// What a planned listener panic says (and its `CallbackEnd` records as the error).
pub const PLANNED_PANIC: &str = "planned listener panic";

/// The application's listener: records each call and takes the scenario's virtual time.
struct RecordingListener {
    ctx: SubjectContext,
    behaviour: ListenerBehaviour,
    /// Calls so far (for [`ListenerBehaviour::panic_on_call`]).
    calls: AtomicU32,
    /// Set while a call runs ([`ConsumerSubject::in_listener`]).
    running: Arc<AtomicBool>,
}

/// Clears the running flag when a listener call ends, also by a panic.
struct Running(Arc<AtomicBool>);

impl Running {
    fn start(flag: &Arc<AtomicBool>) -> Self {
        flag.store(true, Ordering::SeqCst);
        Self(Arc::clone(flag))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl RecordingListener {
    /// One listener call: the generation is read before the future (it must be `Send`, and
    /// `&Consumer` is not); revoked and lost take the scenario's revoke time.
    fn call<'a>(
        &'a self,
        consumer: &Consumer,
        kind: CallbackKind,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        let generation = generation_of(consumer);
        let millis = match kind {
            CallbackKind::Assigned => self.behaviour.assigned_ms,
            CallbackKind::Revoked | CallbackKind::Lost => self.behaviour.revoked_ms,
        };
        let wakeup = (kind == CallbackKind::Assigned && self.behaviour.wakeup_in_assigned)
            .then(|| consumer.wakeup_handle());
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        let panics = self.behaviour.panic_on_call == Some(call);
        Box::pin(async move {
            let _running = Running::start(&self.running);
            self.run(generation, kind, partitions, millis, wakeup, panics)
                .await;
            Ok(())
        })
    }

    async fn run(
        &self,
        generation: i32,
        kind: CallbackKind,
        partitions: &BTreeSet<TopicPartition>,
        millis: u64,
        wakeup: Option<WakeupHandle>,
        panics: bool,
    ) {
        let tps: Vec<Tp> = partitions.iter().map(to_tp).collect();
        self.ctx.record(Event::CallbackStart {
            kind,
            partitions: tps.clone(),
        });
        let (assigned, revoked, lost) = match kind {
            CallbackKind::Assigned => (tps.clone(), Vec::new(), Vec::new()),
            CallbackKind::Revoked => (Vec::new(), tps.clone(), Vec::new()),
            CallbackKind::Lost => (Vec::new(), Vec::new(), tps.clone()),
        };
        if kind != CallbackKind::Assigned {
            self.ctx.record(Event::Assignment {
                generation,
                assigned: Vec::new(),
                revoked,
                lost,
            });
        }
        if let Some(wakeup) = wakeup {
            // Another thread's wakeup() lands halfway through the callback (KAFKA-18160).
            tokio::time::sleep(Duration::from_millis(millis / 2)).await;
            wakeup.wakeup();
            self.ctx.recorder.bump("wakeup-in-assigned");
            tokio::time::sleep(Duration::from_millis(millis - millis / 2)).await;
        } else if millis > 0 {
            tokio::time::sleep(Duration::from_millis(millis)).await;
        }
        if kind == CallbackKind::Assigned {
            self.ctx.record(Event::Assignment {
                generation,
                assigned,
                revoked: Vec::new(),
                lost: Vec::new(),
            });
        }
        self.ctx.record(Event::CallbackEnd {
            kind,
            partitions: tps,
            error: panics.then(|| PLANNED_PANIC.to_owned()),
        });
        if panics {
            self.ctx.recorder.bump("listener-panicked");
            panic!("{PLANNED_PANIC}");
        }
    }
}

impl ConsumerRebalanceListener for RecordingListener {
    fn on_partitions_revoked<'a>(
        &'a mut self,
        consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        self.call(consumer, CallbackKind::Revoked, partitions)
    }

    fn on_partitions_assigned<'a>(
        &'a mut self,
        consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        self.call(consumer, CallbackKind::Assigned, partitions)
    }

    fn on_partitions_lost<'a>(
        &'a mut self,
        consumer: &'a mut Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        self.call(consumer, CallbackKind::Lost, partitions)
    }
}

impl Subject for ConsumerSubject {
    async fn assign(&mut self, partitions: Vec<Tp>) {
        self.ctx.record(Event::ManualAssign {
            partitions: partitions.clone(),
        });
        let tps = partitions
            .iter()
            .map(|tp| TopicPartition::new(tp.topic.as_str(), tp.partition));
        if let Err(error) = self.consumer.assign(tps).await {
            self.ctx.record(Event::Note {
                text: format!("assign failed: {error}"),
            });
        }
    }

    async fn subscribe(&mut self, topics: Vec<String>, listener: ListenerBehaviour) {
        self.ctx.record(Event::Subscribe {
            topics: topics.clone(),
        });
        let listener = self.recording(listener);
        let subscribed = self
            .consumer
            .subscribe_with_listener(topics, listener)
            .await;
        self.note_subscribe_failure(subscribed);
    }

    async fn unsubscribe(&mut self) {
        self.ctx.record(Event::Note {
            text: "unsubscribe".to_owned(),
        });
        if let Err(error) = self.consumer.unsubscribe().await {
            self.ctx.record(Event::Note {
                text: format!("unsubscribe failed: {error}"),
            });
        }
    }

    async fn subscribe_pattern(&mut self, pattern: String, listener: ListenerBehaviour) {
        self.ctx.record(Event::Subscribe { topics: Vec::new() });
        self.ctx.record(Event::Note {
            text: format!("subscribe pattern {pattern}"),
        });
        let listener = self.recording(listener);
        let subscribed = self
            .consumer
            .subscribe_pattern_with_listener(&pattern, listener)
            .await;
        self.note_subscribe_failure(subscribed);
    }

    async fn poll(&mut self, timeout: Duration) -> Result<Vec<Delivered>, SubjectError> {
        match self.consumer.poll(timeout).await {
            Ok(records) => Ok(records.iter().map(delivered).collect()),
            Err(error) => Err(self.failed(&error)),
        }
    }

    async fn take_one(
        &mut self,
        timeout: Duration,
        stream: bool,
    ) -> Result<Vec<Delivered>, SubjectError> {
        let in_listener = Arc::clone(&self.in_listener);
        let next = if stream {
            let mut records = std::pin::pin!(self.consumer.stream());
            let item = std::future::poll_fn(|cx| records.as_mut().poll_next(cx));
            until_deadline(item, timeout, &in_listener).await
        } else {
            until_deadline(self.consumer.recv(), timeout, &in_listener)
                .await
                .map(Some)
        };
        match next {
            None | Some(None) => Ok(Vec::new()),
            Some(Some(Ok(record))) => Ok(vec![delivered(&record)]),
            Some(Some(Err(error))) => Err(self.failed(&error)),
        }
    }

    async fn set_paused(&mut self, partitions: Vec<Tp>, paused: bool) -> Result<(), SubjectError> {
        let tps = partitions
            .iter()
            .map(|tp| TopicPartition::new(tp.topic.as_str(), tp.partition));
        let done = if paused {
            self.consumer.pause(tps).await
        } else {
            self.consumer.resume(tps).await
        };
        done.map_err(|e| SubjectError(error_name(&e)))
    }

    fn take_reset_error(&mut self) -> Option<(String, Vec<(Tp, i64)>)> {
        self.reset_error.take()
    }

    async fn seek(&mut self, tp: Tp, to: SeekTo) -> Result<(), SubjectError> {
        let partition = TopicPartition::new(tp.topic.as_str(), tp.partition);
        let sought = match to {
            SeekTo::Beginning => self.consumer.seek_to_beginning([partition]).await,
            SeekTo::End => self.consumer.seek_to_end([partition]).await,
            SeekTo::Offset {
                offset,
                leader_epoch,
            } => {
                let target = OffsetAndMetadata::with_leader_epoch(offset, leader_epoch);
                self.consumer.seek_with_metadata(&partition, target).await
            }
        };
        sought.map_err(|e| SubjectError(error_name(&e)))
    }

    async fn position(&mut self, tp: Tp, timeout: Duration) -> Result<i64, SubjectError> {
        let partition = TopicPartition::new(tp.topic.as_str(), tp.partition);
        self.consumer
            .position(&partition, timeout)
            .await
            .map_err(|e| SubjectError(error_name(&e)))
    }

    async fn commit_async(&mut self, id: u64, offsets_to_commit: Vec<(Tp, i64)>) {
        let completed = Arc::clone(&self.completed);
        let started = self.consumer.commit_async_with_callback(
            Some(offsets(&offsets_to_commit)),
            move |_, result| {
                let error = result.err().map(|e| error_name(&e));
                completed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(CommitCompletion { id, error });
            },
        );
        if let Err(error) = started {
            let error = Some(error_name(&error));
            self.completed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(CommitCompletion { id, error });
        }
    }

    async fn commit_sync(
        &mut self,
        offsets_to_commit: Vec<(Tp, i64)>,
        timeout: Duration,
    ) -> Result<(), SubjectError> {
        self.consumer
            .commit_sync(Some(offsets(&offsets_to_commit)), timeout)
            .await
            .map_err(|e| SubjectError(error_name(&e)))
    }

    async fn close(&mut self, timeout: Duration) -> Result<(), SubjectError> {
        self.consumer
            .close(timeout)
            .await
            .map_err(|e| SubjectError(error_name(&e)))
    }

    async fn take_completed_commits(&mut self) -> Vec<CommitCompletion> {
        std::mem::take(&mut *self.completed.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn loop_counters(&self) -> Option<LoopCounters> {
        let metrics = self.consumer.metrics();
        Some(LoopCounters {
            background: metrics.background_loop_iterations,
            poll: metrics.poll_wakeups,
            group_requests: metrics.group_requests_sent,
            lookup_requests: metrics.lookup_requests_sent,
        })
    }
}
