//! Shorthands for hand-built histories in checker tests. Topic `t`, value of offset `o` in
//! partition `p` is `p{p}v{o}`, group `g`.

use crate::history::{CallbackKind, CommitMode, Event, History, Tp};

pub fn tp(p: i32) -> Tp {
    Tp::new("t", p)
}

fn tps(ps: &[i32]) -> Vec<Tp> {
    ps.iter().map(|p| tp(*p)).collect()
}

pub fn value(p: i32, o: i64) -> String {
    format!("p{p}v{o}")
}

pub fn start() -> Event {
    Event::MemberStart { group: "g".into() }
}

pub fn delivered(p: i32, o: i64) -> Event {
    Event::Delivered {
        tp: tp(p),
        offset: o,
        value: value(p, o),
    }
}

pub fn acked(p: i32, o: i64) -> Event {
    Event::ProduceAcked {
        tp: tp(p),
        offset: o,
        value: value(p, o),
    }
}

pub fn assigned(generation: i32, ps: &[i32]) -> Event {
    Event::Assignment {
        generation,
        assigned: tps(ps),
        revoked: vec![],
        lost: vec![],
    }
}

pub fn revoked(generation: i32, ps: &[i32]) -> Event {
    Event::Assignment {
        generation,
        assigned: vec![],
        revoked: tps(ps),
        lost: vec![],
    }
}

pub fn lost(generation: i32, ps: &[i32]) -> Event {
    Event::Assignment {
        generation,
        assigned: vec![],
        revoked: vec![],
        lost: tps(ps),
    }
}

pub fn commit(id: u64, p: i32, o: i64) -> Event {
    Event::CommitRequested {
        id,
        mode: CommitMode::Sync,
        generation: None,
        offsets: vec![(tp(p), o)],
    }
}

pub fn commit_ok(id: u64) -> Event {
    Event::CommitCompleted { id, error: None }
}

pub fn commit_err(id: u64, e: &str) -> Event {
    Event::CommitCompleted {
        id,
        error: Some(e.into()),
    }
}

pub fn seek(p: i32, o: i64) -> Event {
    Event::Seek {
        tp: tp(p),
        offset: o,
    }
}

pub fn cb_start(kind: CallbackKind, ps: &[i32]) -> Event {
    Event::CallbackStart {
        kind,
        partitions: tps(ps),
    }
}

pub fn cb_end(kind: CallbackKind, ps: &[i32]) -> Event {
    Event::CallbackEnd {
        kind,
        partitions: tps(ps),
        error: None,
    }
}

pub fn history(events: Vec<(u64, &str, Event)>) -> History {
    History::from_events(events)
}
