//! Authentication checkers (issue #17), over the brokers' SASL events (copied into the history
//! as notes of subject [`AUTH_SUBJECT`] by the runner) and the
//! members' `poll` results:
//!
//! - [`AuthAttemptsBounded`]: no authentication storm — per broker, SASL exchanges started in
//!   any one-second window stay within a bound that reconnect backoff and KIP-368's "at most
//!   one re-authentication per session lifetime" give, with every member connected.
//! - [`AuthErrorsMatchCredentials`]: the typed error surfaces exactly when credentials are
//!   wrong — no `poll` fails with an authentication error while the password is right (a
//!   grace period after a restore covers errors already on their way), and every member that
//!   keeps polling through a window of wrong credentials is told at least once in it.

use std::collections::BTreeMap;

use sim::check::{Checker, Violation, ViolationKind};
use sim::history::{Event, History};
use sim::sasl::{AuthEvent, AuthEventKind};

/// The history subject of the brokers' SASL events.
pub const AUTH_SUBJECT: &str = "sasl";

/// The history note for one broker authentication event.
pub fn note(event: &AuthEvent) -> String {
    let what = match &event.kind {
        AuthEventKind::Started {
            mechanism,
            reauthentication,
        } => format!("started {mechanism} reauthentication={reauthentication}"),
        AuthEventKind::Authenticated {
            principal,
            session_lifetime_ms,
            reauthentication,
        } => format!(
            "authenticated {principal} lifetime={session_lifetime_ms}ms reauthentication={reauthentication}"
        ),
        AuthEventKind::Failed { code } => match code {
            Some(code) => format!("failed code={code}"),
            None => "failed".to_owned(),
        },
        AuthEventKind::ExpiredClosed => "expired-closed".to_owned(),
    };
    format!(
        "sasl broker={} connection={} {what}",
        event.broker, event.connection_id
    )
}

/// `(at_ms, broker)` of every exchange a broker started.
fn starts(history: &History) -> Vec<(u64, i32)> {
    history
        .of_subject(AUTH_SUBJECT)
        .filter_map(|e| match &e.event {
            Event::Note { text } if text.contains(" started ") => {
                let broker = text
                    .strip_prefix("sasl broker=")?
                    .split(' ')
                    .next()?
                    .parse()
                    .ok()?;
                Some((e.at_ms, broker))
            }
            _ => None,
        })
        .collect()
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct AuthAttemptsBounded {
    /// Most exchanges one broker may start in any window of one second.
    pub max_per_broker_per_second: usize,
}

impl Checker for AuthAttemptsBounded {
    fn name(&self) -> &'static str {
        "auth-attempts-bounded"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let mut by_broker: BTreeMap<i32, Vec<u64>> = BTreeMap::new();
        for (at_ms, broker) in starts(history) {
            by_broker.entry(broker).or_default().push(at_ms);
        }
        let mut out = Vec::new();
        for (broker, times) in by_broker {
            // Sliding window over the sorted start times.
            let mut first = 0;
            for (last, &at_ms) in times.iter().enumerate() {
                while times[first] + 1_000 <= at_ms {
                    first += 1;
                }
                let count = last - first + 1;
                if count > self.max_per_broker_per_second {
                    out.push(Violation::new(
                        ViolationKind::AuthenticationStorm,
                        at_ms,
                        format!(
                            "broker {broker} started {count} SASL exchanges within the second \
                             before {at_ms}ms (bound {})",
                            self.max_per_broker_per_second
                        ),
                    ));
                    break;
                }
            }
        }
        out
    }
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct AuthErrorsMatchCredentials {
    /// The user every member authenticates as.
    pub user: &'static str,
    /// The password the members are configured with.
    pub password: &'static str,
    /// How long after the credentials are right again a failure may still surface (it was
    /// refused before the restore and reported by a later `poll`).
    pub grace_ms: u64,
    /// How much of a wrong window a member must poll through, from its start, for the error to
    /// be required (time for its sessions to be closed and re-authenticated).
    pub notice_ms: u64,
}

/// Whether a failed `poll`'s error (as the subjects name it) is an authentication failure.
pub fn is_authentication_error(error: &str) -> bool {
    error == "SASL_AUTHENTICATION_FAILED"
        || error == "ILLEGAL_SASL_STATE"
        || error == "UNSUPPORTED_SASL_MECHANISM"
        || error.starts_with("authentication with ")
}

impl AuthErrorsMatchCredentials {
    /// `[from, to)` windows in which the user's password differs from the members', from the
    /// `SaslSetPassword`/`SaslDeleteUser` faults (recorded as their `Debug` text).
    fn wrong_windows(&self, history: &History) -> Vec<(u64, u64)> {
        let mut windows = Vec::new();
        let mut wrong_since: Option<u64> = None;
        for e in history.entries() {
            let Event::Fault { kind } = &e.event else {
                continue;
            };
            let for_user = kind.contains(&format!("user: {:?}", self.user));
            let now_wrong = if kind.starts_with("SaslSetPassword") && for_user {
                !kind.contains(&format!("password: {:?}", self.password))
            } else if kind.starts_with("SaslDeleteUser") && for_user {
                true
            } else {
                continue;
            };
            match (wrong_since, now_wrong) {
                (None, true) => wrong_since = Some(e.at_ms),
                (Some(from), false) => {
                    windows.push((from, e.at_ms));
                    wrong_since = None;
                }
                _ => {}
            }
        }
        if let Some(from) = wrong_since {
            windows.push((from, history.end_ms()));
        }
        windows
    }
}

impl Checker for AuthErrorsMatchCredentials {
    fn name(&self) -> &'static str {
        "auth-errors-match-credentials"
    }

    fn violations(&self, history: &History) -> Vec<Violation> {
        let windows = self.wrong_windows(history);
        let explained = |at_ms: u64| {
            windows
                .iter()
                .any(|&(from, to)| from <= at_ms && at_ms <= to + self.grace_ms)
        };
        let mut out = Vec::new();
        for subject in history.subjects() {
            let polls: Vec<(u64, Option<&str>)> = history
                .of_subject(subject)
                .filter_map(|e| match &e.event {
                    Event::PollEnd { error, .. } => Some((e.at_ms, error.as_deref())),
                    _ => None,
                })
                .collect();
            if polls.is_empty() {
                continue;
            }
            let auth_errors: Vec<u64> = polls
                .iter()
                .filter(|(_, error)| error.is_some_and(is_authentication_error))
                .map(|(at_ms, _)| *at_ms)
                .collect();
            if let Some(&at_ms) = auth_errors.iter().find(|&&at| !explained(at)) {
                out.push(
                    Violation::new(
                        ViolationKind::AuthenticationErrorUnexpected,
                        at_ms,
                        format!(
                            "{subject}'s poll failed authenticating although user {} had the \
                             password it was configured with",
                            self.user
                        ),
                    )
                    .subject(subject),
                );
            }
            for &(from, to) in &windows {
                let polled_through = polls.first().is_some_and(|(at, _)| *at <= from)
                    && polls.last().is_some_and(|(at, _)| *at >= to);
                if !polled_through || to < from + self.notice_ms {
                    continue;
                }
                if !auth_errors
                    .iter()
                    .any(|&at| from <= at && at <= to + self.grace_ms)
                {
                    out.push(
                        Violation::new(
                            ViolationKind::AuthenticationErrorMissing,
                            to,
                            format!(
                                "{subject} kept polling while user {}'s password was wrong \
                                 ({from}ms–{to}ms) and no poll reported an authentication error",
                                self.user
                            ),
                        )
                        .subject(subject),
                    );
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use sim::history::Recorder;

    use super::*;

    fn history(build: impl FnOnce(&Recorder)) -> History {
        let recorder = Recorder::new();
        build(&recorder);
        recorder.snapshot()
    }

    fn start(recorder: &Recorder, at_ms: u64, broker: i32) {
        recorder.subject(AUTH_SUBJECT).record(
            at_ms,
            Event::Note {
                text: note(&AuthEvent {
                    at_ms,
                    broker,
                    connection_id: 1,
                    kind: AuthEventKind::Started {
                        mechanism: "PLAIN".to_owned(),
                        reauthentication: false,
                    },
                }),
            },
        );
    }

    #[test]
    fn a_storm_is_caught_and_spread_attempts_are_not() {
        let checker = AuthAttemptsBounded {
            max_per_broker_per_second: 5,
        };
        let spread = history(|r| (0..20).for_each(|i| start(r, i * 250, 1 + (i % 2) as i32)));
        assert!(checker.violations(&spread).is_empty());
        let storm = history(|r| (0..6).for_each(|i| start(r, 100 + i * 10, 2)));
        let v = checker.violations(&storm);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].kind, ViolationKind::AuthenticationStorm);
    }

    fn poll(recorder: &Recorder, at_ms: u64, error: Option<&str>) {
        recorder.subject("c0").record(
            at_ms,
            Event::PollEnd {
                records: 0,
                error: error.map(str::to_owned),
            },
        );
    }

    fn set_password(recorder: &Recorder, at_ms: u64, password: &str) {
        recorder.subject("faults").record(
            at_ms,
            Event::Fault {
                kind: format!(
                    "{:?}",
                    sim::fault::Fault::SaslSetPassword {
                        user: "alice".to_owned(),
                        password: password.to_owned()
                    }
                ),
            },
        );
    }

    fn checker() -> AuthErrorsMatchCredentials {
        AuthErrorsMatchCredentials {
            user: "alice",
            password: "secret",
            grace_ms: 1_000,
            notice_ms: 3_000,
        }
    }

    #[test]
    fn errors_inside_the_wrong_window_are_required_and_allowed() {
        let ok = history(|r| {
            poll(r, 0, None);
            set_password(r, 1_000, "rotated");
            poll(r, 2_000, Some("SASL_AUTHENTICATION_FAILED"));
            set_password(r, 6_000, "secret");
            poll(r, 6_500, Some("SASL_AUTHENTICATION_FAILED"));
            poll(r, 9_000, None);
        });
        assert!(checker().violations(&ok).is_empty());
    }

    #[test]
    fn a_silent_wrong_window_and_an_error_with_right_credentials_are_caught() {
        let silent = history(|r| {
            poll(r, 0, None);
            set_password(r, 1_000, "rotated");
            poll(r, 3_000, Some("DISCONNECTED"));
            set_password(r, 6_000, "secret");
            poll(r, 9_000, None);
        });
        let v = checker().violations(&silent);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::AuthenticationErrorMissing);

        let spurious = history(|r| {
            poll(r, 0, None);
            poll(r, 500, Some("SASL_AUTHENTICATION_FAILED"));
            poll(r, 9_000, None);
        });
        let v = checker().violations(&spurious);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].kind, ViolationKind::AuthenticationErrorUnexpected);
    }
}
