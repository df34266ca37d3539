//! SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), client side, as a state machine.
//!
//! client-first `n,,n=user,r=cnonce` → server-first `r=cnonce+snonce,s=salt,i=iterations` →
//! client-final `c=biws,r=nonce,p=proof` → server-final `v=signature` (or `e=error`). The
//! server's nonce must extend ours, the iteration count must be within Kafka's 4096..=16384
//! (`ScramMechanism`), and the server's signature is checked in constant time: a server that
//! does not know the password cannot complete the exchange.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::{SaslClient, SaslError};
use crate::network::secret::Secret;
use crate::rt::SeededRng;

/// Kafka's `ScramMechanism.minIterations()`.
const MIN_ITERATIONS: u32 = 4096;
/// Kafka's `ScramMechanism.maxIterations()`: no Kafka broker stores credentials with more
/// (the credential admin APIs refuse them), so a larger count can only come from a server
/// that is not Kafka or lies, and would cost seconds of CPU per handshake (found by the
/// `sasl_client` fuzz target: 5,910,606 SHA-512 iterations took 12 s).
const MAX_ITERATIONS: u32 = 16_384;
const NONCE_BYTES: usize = 24;

/// The hash behind the mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScramHash {
    Sha256,
    Sha512,
}

impl ScramHash {
    fn hmac(self, key: &[u8], data: &[u8]) -> Zeroizing<Vec<u8>> {
        match self {
            Self::Sha256 => {
                let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
                    .expect("HMAC accepts keys of any length");
                mac.update(data);
                Zeroizing::new(mac.finalize().into_bytes().to_vec())
            }
            Self::Sha512 => {
                let mut mac = <Hmac<Sha512> as KeyInit>::new_from_slice(key)
                    .expect("HMAC accepts keys of any length");
                mac.update(data);
                Zeroizing::new(mac.finalize().into_bytes().to_vec())
            }
        }
    }

    fn hash(self, data: &[u8]) -> Zeroizing<Vec<u8>> {
        Zeroizing::new(match self {
            Self::Sha256 => Sha256::digest(data).to_vec(),
            Self::Sha512 => Sha512::digest(data).to_vec(),
        })
    }

    /// `Hi(password, salt, i)`: PBKDF2 with HMAC of this hash.
    fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Zeroizing<Vec<u8>> {
        match self {
            Self::Sha256 => {
                let mut out = Zeroizing::new(vec![0u8; 32]);
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out);
                out
            }
            Self::Sha512 => {
                let mut out = Zeroizing::new(vec![0u8; 64]);
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out);
                out
            }
        }
    }
}

enum State {
    Initial,
    /// Sent client-first; holds its bare part for the auth message.
    FirstSent {
        client_first_bare: String,
    },
    /// Sent client-final; holds the server signature we expect.
    FinalSent {
        server_signature: Zeroizing<Vec<u8>>,
    },
    Complete,
    Failed,
}

pub(crate) struct ScramClient {
    hash: ScramHash,
    username: String,
    password: Secret,
    nonce: String,
    state: State,
}

impl ScramClient {
    pub(crate) fn new(
        hash: ScramHash,
        username: &str,
        password: &Secret,
        rng: &mut SeededRng,
    ) -> Self {
        let mut bytes = [0u8; NONCE_BYTES];
        rng.fill_bytes(&mut bytes);
        Self::with_nonce(hash, username, password, BASE64.encode(bytes))
    }

    /// With a given client nonce (the RFC's test vectors).
    fn with_nonce(hash: ScramHash, username: &str, password: &Secret, nonce: String) -> Self {
        Self {
            hash,
            username: username.to_owned(),
            password: password.clone(),
            nonce,
            state: State::Initial,
        }
    }

    fn server_first(
        &mut self,
        message: &str,
        client_first_bare: &str,
    ) -> Result<Vec<u8>, SaslError> {
        let invalid =
            |why: &str| SaslError::InvalidServerMessage(format!("server-first-message: {why}"));
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for attribute in message.split(',') {
            match attribute.split_once('=') {
                Some(("r", value)) => nonce = Some(value),
                Some(("s", value)) => salt = Some(value),
                Some(("i", value)) => iterations = Some(value),
                Some(("e", value)) => return Err(SaslError::Rejected(value.to_owned())),
                Some(("m", _)) => return Err(invalid("mandatory extension not supported")),
                _ => {} // extensions (Kafka's tokenauth) are optional
            }
        }
        let nonce = nonce.ok_or_else(|| invalid("no nonce"))?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(invalid("the server nonce does not extend the client nonce"));
        }
        let salt = BASE64
            .decode(salt.ok_or_else(|| invalid("no salt"))?)
            .map_err(|_| invalid("salt is not base64"))?;
        let iterations: u32 = iterations
            .ok_or_else(|| invalid("no iteration count"))?
            .parse()
            .map_err(|_| invalid("iteration count is not a number"))?;
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(invalid(&format!(
                "iteration count {iterations} outside {MIN_ITERATIONS}..={MAX_ITERATIONS}"
            )));
        }
        let hash = self.hash;
        let salted = hash.salted_password(self.password.expose().as_bytes(), &salt, iterations);
        let client_key = hash.hmac(&salted, b"Client Key");
        let stored_key = hash.hash(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{client_first_bare},{message},{without_proof}");
        let client_signature = hash.hmac(&stored_key, auth_message.as_bytes());
        let proof: Zeroizing<Vec<u8>> = Zeroizing::new(
            client_key
                .iter()
                .zip(client_signature.iter())
                .map(|(k, s)| k ^ s)
                .collect(),
        );
        let server_key = hash.hmac(&salted, b"Server Key");
        let server_signature = hash.hmac(&server_key, auth_message.as_bytes());
        self.state = State::FinalSent { server_signature };
        Ok(format!("{without_proof},p={}", BASE64.encode(&proof[..])).into_bytes())
    }
}

/// `saslname`: `=` and `,` escaped as `=3D` and `=2C` (RFC 5802 §5.1).
fn escape_username(username: &str) -> String {
    username.replace('=', "=3D").replace(',', "=2C")
}

impl SaslClient for ScramClient {
    fn initial_response(&mut self) -> Result<Zeroizing<Vec<u8>>, SaslError> {
        let client_first_bare = format!("n={},r={}", escape_username(&self.username), self.nonce);
        let message = format!("n,,{client_first_bare}");
        self.state = State::FirstSent { client_first_bare };
        Ok(Zeroizing::new(message.into_bytes()))
    }

    fn evaluate(&mut self, challenge: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, SaslError> {
        let message = std::str::from_utf8(challenge)
            .map_err(|_| SaslError::InvalidServerMessage("not UTF-8".into()))?;
        match std::mem::replace(&mut self.state, State::Failed) {
            State::FirstSent { client_first_bare } => {
                let reply = self.server_first(message, &client_first_bare)?;
                Ok(Some(Zeroizing::new(reply)))
            }
            State::FinalSent { server_signature } => {
                if let Some(error) = message.strip_prefix("e=") {
                    return Err(SaslError::Rejected(error.to_owned()));
                }
                let verifier = message
                    .split(',')
                    .find_map(|a| a.strip_prefix("v="))
                    .ok_or_else(|| {
                        SaslError::InvalidServerMessage("server-final-message: no verifier".into())
                    })?;
                let received = BASE64.decode(verifier).map_err(|_| {
                    SaslError::InvalidServerMessage(
                        "server-final-message: verifier is not base64".into(),
                    )
                })?;
                if !bool::from(received.ct_eq(&server_signature)) {
                    return Err(SaslError::InvalidServerMessage(
                        "the server signature is wrong: the server does not know the credentials"
                            .into(),
                    ));
                }
                self.state = State::Complete;
                Ok(None)
            }
            State::Initial | State::Complete | State::Failed => Err(
                SaslError::InvalidServerMessage("a server message after the exchange ended".into()),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 §3: user "user", password "pencil".
    #[test]
    fn rfc7677_test_vector() {
        let mut client = ScramClient::with_nonce(
            ScramHash::Sha256,
            "user",
            &Secret::new("pencil"),
            "rOprNGfwEbeRWgbNEkqO".into(),
        );
        assert_eq!(
            &client.initial_response().unwrap()[..],
            b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
        );
        let server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let client_final = client.evaluate(server_first).unwrap().unwrap();
        assert_eq!(
            std::str::from_utf8(&client_final).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert_eq!(
            client
                .evaluate(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
                .unwrap(),
            None
        );
    }

    fn after_first() -> ScramClient {
        let mut client = ScramClient::with_nonce(
            ScramHash::Sha256,
            "user",
            &Secret::new("pencil"),
            "rOprNGfwEbeRWgbNEkqO".into(),
        );
        client.initial_response().unwrap();
        client
            .evaluate(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
            .unwrap();
        client
    }

    #[test]
    fn a_wrong_server_signature_is_refused() {
        let mut client = after_first();
        let error = client
            .evaluate(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
            .unwrap_err();
        assert!(error.to_string().contains("server signature"), "{error}");
    }

    #[test]
    fn server_errors_and_bad_first_messages_are_refused() {
        let mut client = after_first();
        assert_eq!(
            client.evaluate(b"e=invalid-proof").unwrap_err(),
            SaslError::Rejected("invalid-proof".into())
        );
        for bad in [
            &b"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"[..],
            b"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=10",
            b"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=16385",
            b"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=5910606",
            b"r=rOprNGfwEbeRWgbNEkqOx,s=!!,i=4096",
            b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        ] {
            let mut client = ScramClient::with_nonce(
                ScramHash::Sha256,
                "user",
                &Secret::new("pencil"),
                "rOprNGfwEbeRWgbNEkqO".into(),
            );
            client.initial_response().unwrap();
            let error = client.evaluate(bad).unwrap_err();
            assert!(
                matches!(error, SaslError::InvalidServerMessage(_)),
                "{error}"
            );
        }
    }

    #[test]
    fn sha512_round_trip_against_a_server_computation() {
        let mut rng = SeededRng::seed_from_u64(3);
        let mut client = ScramClient::new(ScramHash::Sha512, "a=b,c", &Secret::new("pw"), &mut rng);
        let first = client.initial_response().unwrap();
        let first = std::str::from_utf8(&first).unwrap().to_owned();
        assert!(first.starts_with("n,,n=a=3Db=2Cc,r="), "{first}");
        let cnonce = first.rsplit_once("r=").unwrap().1.to_owned();
        // The server's side, computed independently from the stored credentials.
        let salt = b"salty";
        let server_first = format!("r={cnonce}SERVER,s={},i=4096", BASE64.encode(salt));
        let reply = client.evaluate(server_first.as_bytes()).unwrap().unwrap();
        let reply = std::str::from_utf8(&reply).unwrap().to_owned();
        let (without_proof, proof) = reply.rsplit_once(",p=").unwrap();
        let salted = ScramHash::Sha512.salted_password(b"pw", salt, 4096);
        let auth = format!("{},{server_first},{without_proof}", &first[3..]);
        let stored_key = ScramHash::Sha512.hash(&ScramHash::Sha512.hmac(&salted, b"Client Key"));
        let signature = ScramHash::Sha512.hmac(&stored_key, auth.as_bytes());
        let client_key: Vec<u8> = BASE64
            .decode(proof)
            .unwrap()
            .iter()
            .zip(signature.iter())
            .map(|(p, s)| p ^ s)
            .collect();
        assert_eq!(&ScramHash::Sha512.hash(&client_key)[..], &stored_key[..]);
        let server_key = ScramHash::Sha512.hmac(&salted, b"Server Key");
        let verifier = BASE64.encode(&ScramHash::Sha512.hmac(&server_key, auth.as_bytes())[..]);
        assert_eq!(
            client.evaluate(format!("v={verifier}").as_bytes()).unwrap(),
            None
        );
    }
}
