//! SASL/PLAIN (RFC 4616), server side, as Kafka's `PlainSaslServer` with the default
//! `PlainServerCallbackHandler`: `[authzid] NUL authcid NUL passwd`, the password compared in
//! constant time with the user's, and Kafka's error messages.

use kafka_consumer::rt::SeededRng;
use subtle::ConstantTimeEq;

use super::{Completed, Evaluated, MechanismError, MechanismServer, SaslServerConfig};

/// PLAIN completes in one message; a second one is a client bug.
#[derive(Debug, Default)]
pub(crate) struct PlainServer {
    complete: bool,
}

impl MechanismServer for PlainServer {
    fn evaluate(
        &mut self,
        response: &[u8],
        _now_ms: i64,
        config: &SaslServerConfig,
        _rng: &mut SeededRng,
    ) -> Result<Evaluated, MechanismError> {
        let failed = |message: &str| MechanismError::Authentication(message.to_owned());
        if self.complete {
            return Err(MechanismError::Sasl("PLAIN already complete".to_owned()));
        }
        let message = String::from_utf8_lossy(response);
        // Kafka's extractTokens: split on NUL at most four times, exactly three tokens.
        let tokens: Vec<&str> = message.splitn(4, '\0').collect();
        if tokens.len() != 3 {
            return Err(failed(&format!(
                "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
                tokens.len()
            )));
        }
        let (authorization_id, username, password) = (tokens[0], tokens[1], tokens[2]);
        if username.is_empty() {
            return Err(failed("Authentication failed: username not specified"));
        }
        if password.is_empty() {
            return Err(failed("Authentication failed: password not specified"));
        }
        let expected = config
            .users
            .get(username)
            .and_then(|user| user.plain_password.as_deref());
        let authenticated = expected
            .is_some_and(|expected| bool::from(expected.as_bytes().ct_eq(password.as_bytes())));
        if !authenticated {
            return Err(failed(
                "Authentication failed: Invalid username or password",
            ));
        }
        if !authorization_id.is_empty() && authorization_id != username {
            return Err(failed(
                "Authentication failed: Client requested an authorization id that is different from username",
            ));
        }
        self.complete = true;
        Ok(Evaluated {
            challenge: Vec::new(),
            completed: Some(Completed {
                principal: username.to_owned(),
                credential_expires_at_ms: None,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SaslServerConfig {
        let mut config = SaslServerConfig::sasl_plaintext();
        config.add_user("alice", "alice-secret", &mut SeededRng::seed_from_u64(1));
        config
    }

    fn run(message: &[u8]) -> Result<Evaluated, MechanismError> {
        PlainServer::default().evaluate(message, 0, &config(), &mut SeededRng::seed_from_u64(2))
    }

    #[test]
    fn right_password_completes_as_the_user() {
        let done = run(b"\0alice\0alice-secret").unwrap();
        assert!(done.challenge.is_empty());
        assert_eq!(done.completed.unwrap().principal, "alice");
        assert!(run(b"alice\0alice\0alice-secret").is_ok(), "authzid = user");
    }

    #[test]
    fn refusals_carry_kafkas_messages() {
        let message = |bytes: &[u8]| match run(bytes) {
            Err(MechanismError::Authentication(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            message(b"\0alice\0wrong"),
            "Authentication failed: Invalid username or password"
        );
        assert_eq!(
            message(b"\0bob\0alice-secret"),
            "Authentication failed: Invalid username or password"
        );
        assert_eq!(
            message(b"\0\0x"),
            "Authentication failed: username not specified"
        );
        assert_eq!(
            message(b"\0alice\0"),
            "Authentication failed: password not specified"
        );
        assert_eq!(
            message(b"alice-secret"),
            "Invalid SASL/PLAIN response: expected 3 tokens, got 1"
        );
        assert_eq!(
            message(b"mallory\0alice\0alice-secret"),
            "Authentication failed: Client requested an authorization id that is different from username"
        );
    }

    #[test]
    fn a_deleted_user_is_refused() {
        let mut config = config();
        config.delete_user("alice");
        let refused = PlainServer::default().evaluate(
            b"\0alice\0alice-secret",
            0,
            &config,
            &mut SeededRng::seed_from_u64(2),
        );
        assert!(matches!(refused, Err(MechanismError::Authentication(_))));
    }
}
