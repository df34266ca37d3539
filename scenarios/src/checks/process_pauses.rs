//! The member processes' pauses (a GC-pause fault), as the runner notes them: checkers that
//! bound what a member does in time subtract the time its whole process was frozen.

use sim::history::{Event, History};

/// Every pause of a member's whole process in `history` (the runner's `process paused <ms>ms`
/// note): the subject, and from when to when (ms).
pub fn process_pauses(history: &History) -> Vec<(String, u64, u64)> {
    history
        .entries()
        .iter()
        .filter_map(|e| match &e.event {
            Event::Note { text } => {
                let ms = text.strip_prefix("process paused ")?.strip_suffix("ms")?;
                Some((
                    e.subject.clone(),
                    e.at_ms,
                    e.at_ms + ms.parse::<u64>().ok()?,
                ))
            }
            _ => None,
        })
        .collect()
}
