//! The recording handle subjects, producers, brokers and the fault runner write to.

use std::sync::{Arc, Mutex, MutexGuard};

use super::coverage::Coverage;
use super::event::Event;
use super::{Entry, History};

#[derive(Debug, Default)]
struct Inner {
    entries: Vec<Entry>,
    coverage: Coverage,
}

/// A cheap, cloneable handle onto one run's history.
///
/// It never reads a clock: every call takes the virtual time, so the same code records
/// deterministic traces under madsim and meaningful ones in real mode. The lock is held only to
/// push; a poisoned lock (a panicking writer) is recovered rather than propagated, because the
/// history of a failing run is exactly what one wants to read.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
}

impl Recorder {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records `event` by `subject` at virtual time `at_ms`.
    pub fn record(&self, at_ms: u64, subject: &str, event: Event) {
        let mut inner = self.lock();
        let seq = inner.entries.len() as u64;
        inner.entries.push(Entry {
            seq,
            at_ms,
            subject: subject.to_string(),
            event,
        });
    }

    /// A handle that records as `subject`.
    pub fn subject(&self, subject: &str) -> SubjectRecorder {
        SubjectRecorder {
            recorder: self.clone(),
            subject: subject.to_string(),
        }
    }

    /// Bumps the coverage counter `name` by one.
    pub fn bump(&self, name: &str) {
        self.lock().coverage.bump_by(name, 1);
    }

    /// Makes `name` appear in the coverage report even if never bumped.
    pub fn declare(&self, name: &str) {
        self.lock().coverage.declare(name);
    }

    /// The coverage so far.
    pub fn coverage(&self) -> Coverage {
        self.lock().coverage.clone()
    }

    /// A snapshot of everything recorded so far.
    pub fn snapshot(&self) -> History {
        let inner = self.lock();
        History::from_recorded(inner.entries.clone(), inner.coverage.clone())
    }
}

/// A [`Recorder`] bound to one subject name (`c0`, `producer`, `faults`, `broker-1`).
#[derive(Clone, Debug)]
pub struct SubjectRecorder {
    recorder: Recorder,
    subject: String,
}

impl SubjectRecorder {
    pub fn name(&self) -> &str {
        &self.subject
    }

    pub fn record(&self, at_ms: u64, event: Event) {
        self.recorder.record(at_ms, &self.subject, event);
    }

    pub fn bump(&self, name: &str) {
        self.recorder.bump(name);
    }

    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisoned_lock_still_records() {
        let rec = Recorder::new();
        let clone = rec.clone();
        let result = std::panic::catch_unwind(move || {
            let _guard = clone.inner.lock();
            panic!("writer panicked while holding the lock");
        });
        assert!(result.is_err());
        rec.record(1, "c0", Event::Healed);
        rec.bump("after_poison");
        let h = rec.snapshot();
        assert_eq!(h.entries().len(), 1);
        assert_eq!(h.coverage().get("after_poison"), 1);
    }
}
