//! The application loop around a subject: poll, process, commit, and finally close. It records
//! what the application sees; the subject records its own requests and responses.

use std::collections::BTreeMap;
use std::future::Future;

use sim::history::{CommitMode, Event, Tp};
use tokio::time::{Duration, Instant};

use crate::app::{seek_note, AppBehaviour, CommitPolicy, DriveMode, SeekTo, UserPause, UserSeek};
use crate::checks::loop_rate::counters_note;
use crate::checks::DataEvent;
use crate::scenario::SubjectSpec;
use crate::subject::{Subject, SubjectContext};

/// After this many empty or failed `poll`s in a row at one virtual instant the application
/// stops polling and closes: otherwise a consumer whose `poll` returns at once (a fatal error
/// it reports forever, a busy loop) would keep the run at that instant forever.
const MAX_POLLS_AT_ONCE: u32 = 1_000;

fn spin_note(ctx: &SubjectContext, last: &str) -> Event {
    Event::Note {
        text: format!(
            "poll returned {MAX_POLLS_AT_ONCE} times at {}ms without time passing (last: \
             {last}): the application gives up and closes",
            ctx.now_ms()
        ),
    }
}

/// Counts one empty or failed poll at this instant; true once there were
/// [`MAX_POLLS_AT_ONCE`] in a row.
fn spun(at_once: &mut (u64, u32), ctx: &SubjectContext) -> bool {
    let now_ms = ctx.now_ms();
    *at_once = if at_once.0 == now_ms {
        (now_ms, at_once.1 + 1)
    } else {
        (now_ms, 1)
    };
    at_once.1 >= MAX_POLLS_AT_ONCE
}

/// How long the application polls a [`SubjectSpec::subscribe_before`] subscription for an
/// error before it gives up on it (virtual ms).
const SUBSCRIBE_BEFORE_POLLS_MS: u64 = 5_000;
/// How long the application waits in `position` after a seek.
const POSITION_TIMEOUT_MS: u64 = 10_000;

/// Makes one [`UserSeek`]: the seek (noted first, so a checker knows what was asked), then
/// `position`, recorded as the `Seek` to the offset the seek resolved to — where the
/// application's next records must start.
async fn user_seek<S: Subject>(subject: &mut S, ctx: &SubjectContext, seek: &UserSeek) {
    ctx.record(Event::Note {
        text: seek_note(&seek.tp, seek.to),
    });
    if let Err(e) = subject.seek(seek.tp.clone(), seek.to).await {
        ctx.record(Event::Note {
            text: format!("seek refused: {e}"),
        });
        return;
    }
    if !seek.position {
        return;
    }
    let timeout = Duration::from_millis(POSITION_TIMEOUT_MS);
    match subject.position(seek.tp.clone(), timeout).await {
        Ok(offset) => ctx.record(Event::Seek {
            tp: seek.tp.clone(),
            offset,
        }),
        Err(e) => ctx.record(Event::Note {
            text: format!("position failed: {e}"),
        }),
    }
}

/// One take of records in the application's [`DriveMode`].
async fn take<S: Subject>(
    subject: &mut S,
    drive: DriveMode,
    timeout: Duration,
) -> Result<Vec<crate::subject::Delivered>, crate::subject::SubjectError> {
    match drive {
        DriveMode::Poll => subject.poll(timeout).await,
        DriveMode::Recv => subject.take_one(timeout, false).await,
        DriveMode::Stream => subject.take_one(timeout, true).await,
    }
}

/// The application's answer to a reset error under `auto.offset.reset=none`: for each
/// partition the error names, it reads `position` (recorded, so a checker can tell whether the
/// consumer kept it) and seeks to `to`.
async fn after_reset_error<S: Subject>(subject: &mut S, ctx: &SubjectContext, to: SeekTo) {
    let Some((error, offsets)) = subject.take_reset_error() else {
        return;
    };
    for (tp, error_offset) in offsets {
        let timeout = Duration::from_millis(POSITION_TIMEOUT_MS);
        let position = if error == crate::consumer_subject::NO_OFFSET {
            // There is no position to keep: the application only seeks.
            Err(crate::subject::SubjectError(error.clone()))
        } else {
            subject.position(tp.clone(), timeout).await
        };
        match position {
            Ok(position) => ctx.record(
                DataEvent::PositionAfterError {
                    tp: tp.clone(),
                    error: error.clone(),
                    error_offset,
                    position,
                }
                .note(),
            ),
            Err(e) if e.0 == crate::consumer_subject::NO_OFFSET => {}
            Err(e) => ctx.record(Event::Note {
                text: format!("position after {error} failed: {e}"),
            }),
        }
        let seek = UserSeek {
            at_ms: ctx.now_ms(),
            tp,
            to,
            position: true,
        };
        user_seek(subject, ctx, &seek).await;
    }
}

/// Pauses that are due, and resumes whose pause has lasted its time.
async fn pause_and_resume<S: Subject>(
    subject: &mut S,
    ctx: &SubjectContext,
    pauses: &mut std::collections::VecDeque<UserPause>,
    resumes: &mut Vec<(u64, Vec<Tp>)>,
) {
    while let Some(pause) = pauses.front().filter(|p| ctx.now_ms() >= p.at_ms).cloned() {
        pauses.pop_front();
        let done = subject.set_paused(pause.partitions.clone(), true).await;
        ctx.record(Event::Note {
            text: format!(
                "user pause {} {}",
                tps_text(&pause.partitions),
                outcome(&done)
            ),
        });
        if done.is_ok() {
            resumes.push((ctx.now_ms() + pause.for_ms, pause.partitions));
        }
    }
    let now_ms = ctx.now_ms();
    let (due, later): (Vec<_>, Vec<_>) = resumes.drain(..).partition(|(at, _)| *at <= now_ms);
    *resumes = later;
    for (_, partitions) in due {
        let done = subject.set_paused(partitions.clone(), false).await;
        ctx.record(Event::Note {
            text: format!("user resume {} {}", tps_text(&partitions), outcome(&done)),
        });
    }
}

fn tps_text(tps: &[Tp]) -> String {
    tps.iter().map(Tp::to_string).collect::<Vec<_>>().join(",")
}

fn outcome(done: &Result<(), crate::subject::SubjectError>) -> String {
    match done {
        Ok(()) => "ok".to_owned(),
        Err(e) => format!("refused: {e}"),
    }
}

/// Loop counters are sampled at most this often (virtual ms).
const SAMPLE_EVERY_MS: u64 = 1_000;

/// Runs `spec.app` against `subject` from `spec.start_ms` until `end`, then closes it.
/// `extra_ms_per_record` is the seed's processing jitter. With `count_wakeups`, each `poll`
/// records how often it was woken ([`crate::checks::AppWakeups`]).
pub(super) async fn drive<S: Subject>(
    mut subject: S,
    ctx: SubjectContext,
    spec: SubjectSpec,
    extra_ms_per_record: u64,
    end: Instant,
    count_wakeups: bool,
) {
    let app: AppBehaviour = spec.app;
    if let Some(topics) = &spec.subscribe_before {
        subject.subscribe(topics.clone(), spec.listener).await;
        // The application polls until a poll fails (at once when `subscribe` already
        // refused, since there is then no subscription) or it gives up, then unsubscribes.
        let give_up = Instant::now() + Duration::from_millis(SUBSCRIBE_BEFORE_POLLS_MS);
        while Instant::now() < give_up {
            ctx.record(Event::PollStart {
                timeout_ms: app.poll_timeout_ms,
            });
            let polled = subject
                .poll(Duration::from_millis(app.poll_timeout_ms))
                .await;
            let failed = polled.is_err();
            ctx.record(Event::PollEnd {
                records: polled.as_ref().map_or(0, |r| r.len() as u64),
                error: polled.err().map(|e| e.0),
            });
            if failed {
                break;
            }
        }
        subject.unsubscribe().await;
    }
    if let Some(pattern) = &spec.subscribe_pattern {
        subject
            .subscribe_pattern(pattern.clone(), spec.listener)
            .await;
    } else if spec.subscribe.is_empty() {
        subject.assign(spec.assign.clone()).await;
    } else {
        subject
            .subscribe(spec.subscribe.clone(), spec.listener)
            .await;
    }
    let mut next_commit_id = 0;
    // Offsets processed since the last checkpoint commit, and when the next one is due.
    let mut checkpoint: BTreeMap<Tp, i64> = BTreeMap::new();
    let mut next_barrier = match app.commit {
        CommitPolicy::AsyncWithSyncBarrier { barrier_ms } => {
            Some(Instant::now() + Duration::from_millis(barrier_ms))
        }
        _ => None,
    };
    let mut next_checkpoint = match app.commit {
        CommitPolicy::AsyncEvery { interval_ms } => {
            Some(Instant::now() + Duration::from_millis(interval_ms))
        }
        _ => None,
    };
    let mut next_sample = Instant::now();
    // The one stall of `spec.stall_when_idle`, until it has happened.
    let mut idle_stall = spec.stall_when_idle;
    // The one stall of `spec.member_faults`, until it has happened.
    let mut stall = spec.member_faults.stall;
    // Empty or failed polls in a row at one virtual instant (see `spun`).
    let mut at_once = (u64::MAX, 0u32);
    // The application's seeks still to make.
    let mut seeks = std::collections::VecDeque::from(spec.seeks.clone());
    // Its pauses still to make, and the resumes due for those made.
    let mut pauses = std::collections::VecDeque::from(spec.pauses.clone());
    let mut resumes: Vec<(u64, Vec<Tp>)> = Vec::new();
    while Instant::now() < end {
        while let Some(seek) = seeks.front().filter(|s| ctx.now_ms() >= s.at_ms).cloned() {
            seeks.pop_front();
            user_seek(&mut subject, &ctx, &seek).await;
        }
        pause_and_resume(&mut subject, &ctx, &mut pauses, &mut resumes).await;
        if Instant::now() >= next_sample {
            if let Some(counters) = subject.loop_counters() {
                ctx.record(counters_note(counters));
            }
            next_sample = Instant::now() + Duration::from_millis(SAMPLE_EVERY_MS);
        }
        ctx.record(Event::PollStart {
            timeout_ms: app.poll_timeout_ms,
        });
        let (polled, wakeups) = count_polls(take(
            &mut subject,
            spec.drive,
            Duration::from_millis(app.poll_timeout_ms),
        ))
        .await;
        if count_wakeups {
            ctx.record(crate::checks::wakeups::note(wakeups));
        }
        let records = match polled {
            Ok(records) => records,
            Err(e) => {
                ctx.record(Event::PollEnd {
                    records: 0,
                    error: Some(e.0.clone()),
                });
                if let Some(to) = spec.on_reset_error {
                    after_reset_error(&mut subject, &ctx, to).await;
                }
                if spun(&mut at_once, &ctx) {
                    ctx.record(spin_note(&ctx, &e.0));
                    break;
                }
                continue;
            }
        };
        ctx.record(Event::PollEnd {
            records: records.len() as u64,
            error: None,
        });
        if records.is_empty() && spun(&mut at_once, &ctx) {
            ctx.record(spin_note(&ctx, "no records"));
            break;
        }
        record_completions(&mut subject, &ctx).await;
        if let Some((after_ms, for_ms)) = idle_stall {
            if records.is_empty() && ctx.now_ms() >= after_ms {
                idle_stall = None;
                ctx.record(Event::Note {
                    text: format!("application: idle, off to other work for {for_ms}ms"),
                });
                tokio::time::sleep(Duration::from_millis(for_ms)).await;
            }
        }
        let mut offsets: BTreeMap<Tp, i64> = BTreeMap::new();
        for r in &records {
            ctx.record(Event::Delivered {
                tp: r.tp.clone(),
                offset: r.offset,
                value: r.value.clone(),
            });
            offsets.insert(r.tp.clone(), r.offset + 1);
        }
        let per_record = app.processing_ms_per_record + extra_ms_per_record;
        tokio::time::sleep(Duration::from_millis(per_record * records.len() as u64)).await;
        if let Some(s) = stall.filter(|s| !records.is_empty() && ctx.now_ms() >= s.at_ms) {
            // A zombie in the making: the records are in hand, the loop stops polling, then
            // goes on to commit them as if nothing happened.
            ctx.record(Event::Note {
                text: format!(
                    "application stalls {}ms holding {} records",
                    s.for_ms,
                    records.len()
                ),
            });
            ctx.recorder.bump("app-stall");
            tokio::time::sleep(Duration::from_millis(s.for_ms)).await;
            stall = None;
        }
        if let (CommitPolicy::AsyncEvery { interval_ms }, Some(due)) = (app.commit, next_checkpoint)
        {
            checkpoint.extend(offsets.clone());
            if Instant::now() >= due && !checkpoint.is_empty() {
                let offsets: Vec<(Tp, i64)> = std::mem::take(&mut checkpoint).into_iter().collect();
                ctx.record(Event::CommitRequested {
                    id: next_commit_id,
                    mode: CommitMode::Async,
                    generation: None,
                    offsets: offsets.clone(),
                });
                subject.commit_async(next_commit_id, offsets).await;
                next_commit_id += 1;
                next_checkpoint = Some(Instant::now() + Duration::from_millis(interval_ms));
            }
            record_completions(&mut subject, &ctx).await;
            continue;
        }
        if offsets.is_empty() {
            continue;
        }
        match app.commit {
            CommitPolicy::AsyncEachPoll | CommitPolicy::AsyncWithSyncBarrier { .. } => {
                let offsets: Vec<(Tp, i64)> = offsets.into_iter().collect();
                ctx.record(Event::CommitRequested {
                    id: next_commit_id,
                    mode: CommitMode::Async,
                    generation: None,
                    offsets: offsets.clone(),
                });
                subject.commit_async(next_commit_id, offsets).await;
                next_commit_id += 1;
            }
            CommitPolicy::AsyncEvery { .. } | CommitPolicy::Auto => {}
        }
        if let (CommitPolicy::AsyncWithSyncBarrier { barrier_ms }, Some(due)) =
            (app.commit, next_barrier)
        {
            if Instant::now() >= due {
                // The barrier: commitSync(emptyMap). Callbacks that ran inside it are recorded
                // before its own completion.
                record_completions(&mut subject, &ctx).await;
                ctx.record(Event::CommitRequested {
                    id: next_commit_id,
                    mode: CommitMode::Sync,
                    generation: None,
                    offsets: Vec::new(),
                });
                let id = next_commit_id;
                next_commit_id += 1;
                let done = subject
                    .commit_sync(Vec::new(), Duration::from_millis(5_000))
                    .await;
                record_completions(&mut subject, &ctx).await;
                ctx.record(Event::CommitCompleted {
                    id,
                    error: done.err().map(|e| e.0),
                });
                next_barrier = Some(Instant::now() + Duration::from_millis(barrier_ms));
            }
        }
        record_completions(&mut subject, &ctx).await;
    }
    ctx.record(Event::CloseStart {
        timeout_ms: app.close_timeout_ms,
    });
    let closed = subject
        .close(Duration::from_millis(app.close_timeout_ms))
        .await;
    record_completions(&mut subject, &ctx).await;
    ctx.record(Event::CloseEnd {
        error: closed.err().map(|e| e.0),
    });
}

/// Runs `future` to completion and counts its polls: every poll after the first is a wake-up
/// of the task awaiting it.
async fn count_polls<F: Future>(future: F) -> (F::Output, u64) {
    let mut future = std::pin::pin!(future);
    let mut polls = 0;
    let output = std::future::poll_fn(|cx| {
        polls += 1;
        future.as_mut().poll(cx)
    })
    .await;
    (output, polls)
}

async fn record_completions<S: Subject>(subject: &mut S, ctx: &SubjectContext) {
    for c in subject.take_completed_commits().await {
        ctx.record(Event::CommitCompleted {
            id: c.id,
            error: c.error,
        });
    }
}
