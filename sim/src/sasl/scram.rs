//! SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server side, as Kafka's
//! `ScramSaslServer`.
//!
//! The broker keeps no password, only the credential Kafka stores in its metadata: salt,
//! iteration count, `StoredKey = H(HMAC(SaltedPassword, "Client Key"))` and
//! `ServerKey = HMAC(SaltedPassword, "Server Key")`. The client's proof is checked by
//! recomputing StoredKey from it (constant-time compare); the server proves it knows the
//! credential with `v=HMAC(ServerKey, AuthMessage)`.
//!
//! Failures follow Kafka: an unknown user, a bad proof or a malformed message is a
//! `SaslException` (the client gets the generic message); only an authorization id different
//! from the user name has its own message.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use kafka_consumer::rt::SeededRng;
use rand::RngCore;
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

use super::{
    Completed, Evaluated, MechanismError, MechanismServer, SaslServerConfig,
    SCRAM_DEFAULT_ITERATIONS,
};

/// Which SCRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScramMechanism {
    /// `SCRAM-SHA-256`.
    Sha256,
    /// `SCRAM-SHA-512`.
    Sha512,
}

impl ScramMechanism {
    /// The IANA name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sha256 => "SCRAM-SHA-256",
            Self::Sha512 => "SCRAM-SHA-512",
        }
    }

    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => {
                let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
                    .expect("HMAC accepts keys of any length");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            Self::Sha512 => {
                let mut mac = <Hmac<Sha512> as KeyInit>::new_from_slice(key)
                    .expect("HMAC accepts keys of any length");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => Sha256::digest(data).to_vec(),
            Self::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            Self::Sha256 => {
                let mut out = vec![0u8; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
                out
            }
            Self::Sha512 => {
                let mut out = vec![0u8; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
                out
            }
        }
    }
}

/// What Kafka stores for a SCRAM user (`ScramCredential`): never the password.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    /// The salt.
    pub salt: Vec<u8>,
    /// `StoredKey`.
    pub stored_key: Vec<u8>,
    /// `ServerKey`.
    pub server_key: Vec<u8>,
    /// The iteration count (Kafka refuses fewer than 4096 at authentication).
    pub iterations: u32,
}

impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredential")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// Kafka's `ScramFormatter.generateCredential`.
    pub fn new(mechanism: ScramMechanism, password: &str, salt: &[u8], iterations: u32) -> Self {
        let salted = mechanism.salted_password(password.as_bytes(), salt, iterations);
        let client_key = mechanism.hmac(&salted, b"Client Key");
        Self {
            salt: salt.to_vec(),
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.hmac(&salted, b"Server Key"),
            iterations,
        }
    }
}

enum State {
    ReceiveClientFirst,
    ReceiveClientFinal {
        username: String,
        credential: ScramCredential,
        client_first_bare: String,
        server_first: String,
        nonce: String,
    },
    Complete,
    Failed,
}

pub(crate) struct ScramServer {
    mechanism: ScramMechanism,
    state: State,
}

impl ScramServer {
    pub(crate) fn new(mechanism: ScramMechanism) -> Self {
        Self {
            mechanism,
            state: State::ReceiveClientFirst,
        }
    }

    fn client_first(
        &mut self,
        message: &str,
        config: &SaslServerConfig,
        rng: &mut SeededRng,
    ) -> Result<Evaluated, MechanismError> {
        let first = ClientFirst::parse(message).ok_or_else(|| {
            MechanismError::Sasl(format!(
                "Invalid SCRAM client first message format: {message}"
            ))
        })?;
        let username = unescape_sasl_name(&first.sasl_name);
        let credential = config
            .users
            .get(&username)
            .and_then(|user| user.scram.get(&self.mechanism))
            .cloned()
            .ok_or_else(|| {
                MechanismError::Sasl("Authentication failed: Invalid user credentials".to_owned())
            })?;
        if !first.authorization_id.is_empty() && first.authorization_id != username {
            return Err(MechanismError::Authentication(
                "Authentication failed: Client requested an authorization id that is different from username"
                    .to_owned(),
            ));
        }
        if credential.iterations < SCRAM_DEFAULT_ITERATIONS {
            return Err(MechanismError::Sasl(format!(
                "Iterations {} is less than the minimum {} for {}",
                credential.iterations,
                SCRAM_DEFAULT_ITERATIONS,
                self.mechanism.name()
            )));
        }
        let nonce = format!("{}{}", first.nonce, secure_random_string(rng));
        let server_first = format!(
            "r={nonce},s={},i={}",
            BASE64.encode(&credential.salt),
            credential.iterations
        );
        let challenge = server_first.clone().into_bytes();
        self.state = State::ReceiveClientFinal {
            username,
            credential,
            client_first_bare: first.bare,
            server_first,
            nonce,
        };
        Ok(Evaluated {
            challenge,
            completed: None,
        })
    }
}

impl MechanismServer for ScramServer {
    fn evaluate(
        &mut self,
        response: &[u8],
        _now_ms: i64,
        config: &SaslServerConfig,
        rng: &mut SeededRng,
    ) -> Result<Evaluated, MechanismError> {
        let message = String::from_utf8_lossy(response).into_owned();
        let state = std::mem::replace(&mut self.state, State::Failed);
        let result = match state {
            State::ReceiveClientFirst => self.client_first(&message, config, rng),
            State::ReceiveClientFinal {
                username,
                credential,
                client_first_bare,
                server_first,
                nonce,
            } => client_final(
                self.mechanism,
                &message,
                &Exchange {
                    credential: &credential,
                    client_first_bare: &client_first_bare,
                    server_first: &server_first,
                    nonce: &nonce,
                },
            )
            .map(|server_final| {
                self.state = State::Complete;
                Evaluated {
                    challenge: server_final.into_bytes(),
                    completed: Some(Completed {
                        principal: username,
                        credential_expires_at_ms: None,
                    }),
                }
            }),
            State::Complete | State::Failed => Err(MechanismError::Authentication(format!(
                "Unexpected challenge in Sasl server state {}",
                if matches!(state, State::Complete) {
                    "COMPLETE"
                } else {
                    "FAILED"
                }
            ))),
        };
        if result.is_err() {
            self.state = State::Failed;
        }
        result
    }
}

struct Exchange<'a> {
    credential: &'a ScramCredential,
    client_first_bare: &'a str,
    server_first: &'a str,
    nonce: &'a str,
}

/// Verifies client-final-message's proof and answers server-final-message.
fn client_final(
    mechanism: ScramMechanism,
    message: &str,
    exchange: &Exchange<'_>,
) -> Result<String, MechanismError> {
    let invalid = || {
        MechanismError::Sasl(format!(
            "Invalid SCRAM client final message format: {message}"
        ))
    };
    let (without_proof, proof) = message.rsplit_once(",p=").ok_or_else(invalid)?;
    let mut attributes = without_proof.split(',');
    let channel = attributes
        .next()
        .and_then(|a| a.strip_prefix("c="))
        .ok_or_else(invalid)?;
    let nonce = attributes
        .next()
        .and_then(|a| a.strip_prefix("r="))
        .ok_or_else(invalid)?;
    if BASE64.decode(channel).is_err() {
        return Err(invalid());
    }
    let proof = BASE64.decode(proof).map_err(|_| invalid())?;
    if !nonce.ends_with(exchange.nonce) {
        return Err(MechanismError::Sasl(
            "Invalid client nonce in the final client message.".to_owned(),
        ));
    }
    let auth_message = format!(
        "{},{},{}",
        exchange.client_first_bare, exchange.server_first, without_proof
    );
    let client_signature = mechanism.hmac(&exchange.credential.stored_key, auth_message.as_bytes());
    if proof.len() != client_signature.len() {
        return Err(MechanismError::Sasl(
            "Invalid client credentials".to_owned(),
        ));
    }
    let client_key: Vec<u8> = proof
        .iter()
        .zip(&client_signature)
        .map(|(p, s)| p ^ s)
        .collect();
    let computed_stored_key = mechanism.hash(&client_key);
    if !bool::from(computed_stored_key.ct_eq(&exchange.credential.stored_key)) {
        return Err(MechanismError::Sasl(
            "Invalid client credentials".to_owned(),
        ));
    }
    let server_signature = mechanism.hmac(&exchange.credential.server_key, auth_message.as_bytes());
    Ok(format!("v={}", BASE64.encode(server_signature)))
}

/// client-first-message: `gs2-header client-first-message-bare`.
struct ClientFirst {
    authorization_id: String,
    sasl_name: String,
    nonce: String,
    /// `n=…,r=…[,extensions]`, for the auth message.
    bare: String,
}

impl ClientFirst {
    /// Kafka's pattern: `n,[a=authzid],n=saslname,r=nonce(,ext=value)*`; no channel binding.
    fn parse(message: &str) -> Option<Self> {
        let rest = message.strip_prefix("n,")?;
        let (authzid, bare) = rest.split_once(',')?;
        let authorization_id = match authzid {
            "" => String::new(),
            a => unescape_sasl_name(a.strip_prefix("a=")?),
        };
        let mut attributes = bare.split(',');
        let sasl_name = attributes.next()?.strip_prefix("n=")?;
        let nonce = attributes.next()?.strip_prefix("r=")?;
        let printable = |s: &str| !s.is_empty() && s.bytes().all(|b| (0x21..=0x7E).contains(&b));
        if sasl_name.is_empty() || !printable(nonce) {
            return None;
        }
        // Extensions (Kafka's `tokenauth`): `key=value`; unknown ones are ignored.
        if !attributes.all(|a| a.split_once('=').is_some_and(|(k, _)| !k.is_empty())) {
            return None;
        }
        Some(Self {
            authorization_id,
            sasl_name: sasl_name.to_owned(),
            nonce: nonce.to_owned(),
            bare: bare.to_owned(),
        })
    }
}

/// RFC 5802's saslname: `=2C` is `,` and `=3D` is `=`.
fn unescape_sasl_name(name: &str) -> String {
    name.replace("=2C", ",").replace("=3D", "=")
}

/// Kafka's `ScramFormatter.secureRandomString`: `new BigInteger(130, random).toString(36)`, a
/// uniformly random 130-bit number in base 36 (so usually 25 or 26 digits). Used for server
/// nonces and, as its UTF-8 bytes, for salts (`secureRandomBytes`).
pub(crate) fn secure_random_string(rng: &mut SeededRng) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    // Little-endian 32-bit limbs of a 130-bit number.
    let mut limbs = [0u32; 5];
    for limb in limbs.iter_mut().take(4) {
        *limb = rng.next_u32();
    }
    limbs[4] = rng.next_u32() & 0b11;
    let mut digits = Vec::new();
    while limbs.iter().any(|&l| l != 0) {
        let mut remainder = 0u64;
        for limb in limbs.iter_mut().rev() {
            let value = (remainder << 32) | u64::from(*limb);
            *limb = (value / 36) as u32;
            remainder = value % 36;
        }
        digits.push(DIGITS[remainder as usize]);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    String::from_utf8(digits).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client side written from RFC 5802 for the tests, independent of the consumer's.
    fn client_final_for(
        mechanism: ScramMechanism,
        password: &str,
        client_first_bare: &str,
        server_first: &str,
    ) -> (String, Vec<u8>) {
        let mut salt = None;
        let mut iterations = None;
        let mut nonce = None;
        for attribute in server_first.split(',') {
            match attribute.split_at(2) {
                ("r=", v) => nonce = Some(v.to_owned()),
                ("s=", v) => salt = Some(BASE64.decode(v).unwrap()),
                ("i=", v) => iterations = Some(v.parse().unwrap()),
                _ => {}
            }
        }
        let salted =
            mechanism.salted_password(password.as_bytes(), &salt.unwrap(), iterations.unwrap());
        let client_key = mechanism.hmac(&salted, b"Client Key");
        let stored_key = mechanism.hash(&client_key);
        let without_proof = format!("c=biws,r={}", nonce.unwrap());
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let signature = mechanism.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = mechanism.hmac(&salted, b"Server Key");
        let expected_server_signature = mechanism.hmac(&server_key, auth_message.as_bytes());
        (
            format!("{without_proof},p={}", BASE64.encode(proof)),
            expected_server_signature,
        )
    }

    fn config() -> SaslServerConfig {
        let mut config = SaslServerConfig::sasl_plaintext();
        config.add_user("alice", "alice-secret", &mut SeededRng::seed_from_u64(1));
        config
    }

    fn exchange(
        mechanism: ScramMechanism,
        user: &str,
        password: &str,
        config: &SaslServerConfig,
    ) -> Result<Evaluated, MechanismError> {
        let mut rng = SeededRng::seed_from_u64(3);
        let mut server = ScramServer::new(mechanism);
        let bare = format!("n={user},r=fyko+d2lbbFgONRv9qkxdawL");
        let first = server.evaluate(format!("n,,{bare}").as_bytes(), 0, config, &mut rng)?;
        assert!(first.completed.is_none());
        let server_first = String::from_utf8(first.challenge).unwrap();
        assert!(server_first.starts_with("r=fyko+d2lbbFgONRv9qkxdawL"));
        assert!(server_first.ends_with(",i=4096"));
        let (final_message, expected) = client_final_for(mechanism, password, &bare, &server_first);
        let done = server.evaluate(final_message.as_bytes(), 0, config, &mut rng)?;
        assert_eq!(
            done.challenge,
            format!("v={}", BASE64.encode(expected)).into_bytes(),
            "server signature"
        );
        Ok(done)
    }

    #[test]
    fn both_hashes_complete_with_the_right_password() {
        for mechanism in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            let done = exchange(mechanism, "alice", "alice-secret", &config()).unwrap();
            assert_eq!(done.completed.unwrap().principal, "alice");
        }
    }

    #[test]
    fn wrong_password_unknown_user_and_low_iterations_are_sasl_exceptions() {
        let config = config();
        assert_eq!(
            exchange(ScramMechanism::Sha256, "alice", "wrong", &config).unwrap_err(),
            MechanismError::Sasl("Invalid client credentials".to_owned())
        );
        assert_eq!(
            exchange(ScramMechanism::Sha512, "bob", "x", &config).unwrap_err(),
            MechanismError::Sasl("Authentication failed: Invalid user credentials".to_owned())
        );
        let mut weak = config.clone();
        let user = weak.users.get_mut("alice").unwrap();
        user.scram.insert(
            ScramMechanism::Sha256,
            ScramCredential::new(ScramMechanism::Sha256, "alice-secret", b"salt", 4095),
        );
        assert!(matches!(
            exchange(ScramMechanism::Sha256, "alice", "alice-secret", &weak),
            Err(MechanismError::Sasl(m)) if m.starts_with("Iterations 4095 is less than the minimum 4096")
        ));
    }

    #[test]
    fn a_rotated_password_refuses_the_old_one() {
        let mut config = config();
        config.add_user("alice", "rotated", &mut SeededRng::seed_from_u64(9));
        assert!(exchange(ScramMechanism::Sha256, "alice", "alice-secret", &config).is_err());
        assert!(exchange(ScramMechanism::Sha256, "alice", "rotated", &config).is_ok());
    }

    #[test]
    fn malformed_messages_and_a_foreign_nonce_fail() {
        let config = config();
        let mut rng = SeededRng::seed_from_u64(3);
        for bad in [
            "y,,n=alice,r=abc",
            "n,,r=abc",
            "n,,n=alice",
            "n,,n=alice,r=",
        ] {
            let mut server = ScramServer::new(ScramMechanism::Sha256);
            assert!(
                matches!(
                    server.evaluate(bad.as_bytes(), 0, &config, &mut rng),
                    Err(MechanismError::Sasl(_))
                ),
                "{bad}"
            );
        }
        let mut server = ScramServer::new(ScramMechanism::Sha256);
        server
            .evaluate(b"n,,n=alice,r=abc", 0, &config, &mut rng)
            .unwrap();
        let forged = server.evaluate(b"c=biws,r=abcXYZ,p=AAAA", 0, &config, &mut rng);
        assert_eq!(
            forged.unwrap_err(),
            MechanismError::Sasl("Invalid client nonce in the final client message.".to_owned())
        );
        let after_failure = server.evaluate(b"c=biws,r=abc,p=AAAA", 0, &config, &mut rng);
        assert!(after_failure.is_err(), "a failed exchange stays failed");
    }

    #[test]
    fn authorization_id_must_be_the_user() {
        let config = config();
        let mut server = ScramServer::new(ScramMechanism::Sha256);
        let refused = server.evaluate(
            b"n,a=mallory,n=alice,r=abc",
            0,
            &config,
            &mut SeededRng::seed_from_u64(3),
        );
        assert!(
            matches!(refused, Err(MechanismError::Authentication(m)) if m.contains("authorization id"))
        );
    }

    #[test]
    fn random_strings_are_base36_of_130_bits() {
        let mut rng = SeededRng::seed_from_u64(11);
        let lengths: std::collections::BTreeSet<usize> = (0..500)
            .map(|_| {
                let s = secure_random_string(&mut rng);
                assert!(
                    s.bytes()
                        .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()),
                    "{s}"
                );
                // 36^26 > 2^130 > 36^25: at most 26 digits.
                assert!(s.len() <= 26, "{s}");
                s.len()
            })
            .collect();
        assert!(
            lengths.contains(&26) && lengths.contains(&25),
            "{lengths:?}"
        );
    }

    #[test]
    fn credential_matches_rfc7677_test_vector() {
        // RFC 7677 §3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096.
        let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let credential = ScramCredential::new(ScramMechanism::Sha256, "pencil", &salt, 4096);
        let mut config = SaslServerConfig::sasl_plaintext();
        config.users.insert(
            "user".to_owned(),
            super::super::SaslUser {
                plain_password: None,
                scram: [(ScramMechanism::Sha256, credential)].into_iter().collect(),
            },
        );
        let bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let exchange = Exchange {
            credential: &config.users["user"].scram[&ScramMechanism::Sha256],
            client_first_bare: bare,
            server_first,
            nonce: "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
        };
        let client_final_message = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        assert_eq!(
            client_final(ScramMechanism::Sha256, client_final_message, &exchange).unwrap(),
            "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }
}
