//! The consumer's log lines captured in memory, for tests that assert what it logs or count
//! what it did from its trace events.

use std::sync::{Arc, Mutex};

use tracing_subscriber::layer::SubscriberExt;

/// Where the captured lines go.
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogCapture {
    /// Installs the process-wide subscriber that captures what `filter` (an `EnvFilter`
    /// directive) lets through, without colours. Global because the consumer's background
    /// task logs from its own thread, so a test binary may call this once (one such test per
    /// binary).
    pub fn install(filter: &str) -> Self {
        let capture = Self::default();
        let writer = capture.clone();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new(filter))
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(move || writer.clone())
                    .with_ansi(false),
            );
        tracing::subscriber::set_global_default(subscriber).unwrap();
        capture
    }

    /// The lines captured since the last take, removed from the capture.
    pub fn take(&self) -> String {
        let bytes = std::mem::take(&mut *self.0.lock().unwrap());
        String::from_utf8(bytes).unwrap()
    }
}
