//! Differential: the same SASL conversations, byte-level requests written by hand, against the
//! real Apache Kafka's SASL_PLAINTEXT listener (`testing/kafka/run up`) and a loopback simulated
//! cluster configured like it (same users, mechanisms and OAUTHBEARER session limit). Each
//! conversation becomes a transcript (error codes, messages, mechanism lists, session lifetimes,
//! where the broker closed the connection) and the two transcripts must be equal.
//!
//! Needs `KAFKA_BOOTSTRAP_SASL_PLAINTEXT` and `KAFKA_SECURITY_FILE` (the lines `run up`
//! prints); skipped without them unless `REQUIRE_KAFKA=1`. Compiled out under madsim.
#![cfg(not(madsim))]

mod differential_support;

use std::collections::BTreeMap;

use base64::engine::general_purpose::{STANDARD as BASE64, URL_SAFE_NO_PAD};
use base64::Engine;
use bytes::{BufMut, Bytes, BytesMut};
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use kafka_consumer::rt::SeededRng;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use sha2::{Digest, Sha256};
use sim::config::ClusterConfig;
use sim::real::{LocalCluster, LocalClusterOptions};
use sim::sasl::SaslServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{timeout, Duration};

/// How long to wait for an answer before deciding there is none.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

struct Setup {
    real: String,
    user: String,
    password: String,
}

fn setup() -> Option<Setup> {
    let vars = ["KAFKA_BOOTSTRAP_SASL_PLAINTEXT", "KAFKA_SECURITY_FILE"];
    let values: Vec<String> = vars
        .iter()
        .filter_map(|v| std::env::var(v).ok().filter(|v| !v.is_empty()))
        .collect();
    if values.len() < vars.len() {
        differential_support::skip(&format!(
            "{vars:?} not set; the SASL differential did not run (export the lines `testing/kafka/run up` prints)"
        ));
        return None;
    }
    let env: BTreeMap<String, String> = std::fs::read_to_string(&values[1])
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    Some(Setup {
        real: values[0].clone(),
        user: env["KAFKA_SASL_USER"].clone(),
        password: env["KAFKA_SASL_PASSWORD"].clone(),
    })
}

/// A simulated broker configured like the harness's SASL_PLAINTEXT listener.
async fn simulated(setup: &Setup) -> LocalCluster {
    let mut sasl = SaslServerConfig::sasl_plaintext();
    sasl.add_user(
        &setup.user,
        &setup.password,
        &mut SeededRng::seed_from_u64(1),
    );
    sasl.max_reauth_ms_by_mechanism
        .insert("OAUTHBEARER".to_owned(), 3_000);
    LocalCluster::start(LocalClusterOptions {
        brokers: 1,
        base_port: 0,
        config: ClusterConfig {
            sasl,
            ..ClusterConfig::default()
        },
        group_shards: None,
    })
    .await
    .unwrap()
}

/// A raw connection: whole frames out, whole frames in, and a transcript of what came back.
struct Raw {
    stream: TcpStream,
    correlation_id: i32,
    transcript: Vec<String>,
}

impl Raw {
    async fn connect(address: &str) -> Self {
        Self {
            stream: TcpStream::connect(address).await.unwrap(),
            correlation_id: 0,
            transcript: Vec::new(),
        }
    }

    async fn write_frame(&mut self, body: &[u8]) {
        let mut frame = BytesMut::with_capacity(4 + body.len());
        frame.put_i32(body.len() as i32);
        frame.put_slice(body);
        // A broker that already closed may reset the write; the read then says so.
        let _ = self.stream.write_all(&frame).await;
    }

    /// The next frame, or `None` if the broker closed (or said nothing within the wait).
    async fn read_frame(&mut self) -> Option<Bytes> {
        let mut length = [0u8; 4];
        match timeout(ANSWER_WITHIN, self.stream.read_exact(&mut length)).await {
            Ok(Ok(_)) => {}
            Ok(Err(_)) => return None,
            Err(_) => {
                self.transcript.push("no answer".to_owned());
                return None;
            }
        }
        let mut body = vec![0u8; i32::from_be_bytes(length) as usize];
        timeout(ANSWER_WITHIN, self.stream.read_exact(&mut body))
            .await
            .ok()?
            .ok()?;
        Some(Bytes::from(body))
    }

    /// Sends `request` at `version`; its decoded response, or `None` (noted as "closed").
    async fn exchange<R: Request>(&mut self, version: i16, request: &R) -> Option<R::Response> {
        self.correlation_id += 1;
        let mut body = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("differential")))
            .encode(&mut body, R::header_version(version))
            .unwrap();
        request.encode(&mut body, version).unwrap();
        self.write_frame(&body).await;
        let Some(mut frame) = self.read_frame().await else {
            self.transcript
                .push(format!("api {} v{version}: closed", R::KEY));
            return None;
        };
        let header =
            ResponseHeader::decode(&mut frame, R::Response::header_version(version)).unwrap();
        assert_eq!(header.correlation_id, self.correlation_id);
        Some(R::Response::decode(&mut frame, version).unwrap())
    }

    async fn api_versions(&mut self) {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("differential"))
            .with_client_software_version(StrBytes::from_static_str("1"));
        if let Some(response) = self.exchange(3, &request).await {
            let sasl: Vec<String> = response
                .api_keys
                .iter()
                .filter(|k| k.api_key == 17 || k.api_key == 36)
                .map(|k| format!("{}:{}-{}", k.api_key, k.min_version, k.max_version))
                .collect();
            self.transcript.push(format!(
                "ApiVersions error={} sasl={sasl:?}",
                response.error_code
            ));
        }
    }

    async fn handshake(&mut self, mechanism: &'static str, version: i16) -> bool {
        let request =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism));
        let Some(response) = self.exchange(version, &request).await else {
            return false;
        };
        let mechanisms: Vec<&str> = response.mechanisms.iter().map(|m| m.as_str()).collect();
        self.transcript.push(format!(
            "SaslHandshake v{version} {mechanism}: error={} mechanisms={mechanisms:?}",
            response.error_code
        ));
        response.error_code == 0
    }

    /// One SaslAuthenticate; the server's bytes if it succeeded.
    async fn authenticate(&mut self, bytes: &[u8], describe_bytes: bool) -> Option<Bytes> {
        let request =
            SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(bytes));
        let response = self.exchange(2, &request).await?;
        let shown = if describe_bytes {
            String::from_utf8_lossy(&response.auth_bytes).into_owned()
        } else {
            "…".to_owned()
        };
        self.transcript.push(format!(
            "SaslAuthenticate: error={} message={:?} lifetime_ms={} auth_bytes={shown}",
            response.error_code,
            response.error_message.as_deref(),
            response.session_lifetime_ms,
        ));
        (response.error_code == 0).then_some(response.auth_bytes)
    }

    /// A Metadata request (any topic list): noted as answered or closed.
    async fn metadata(&mut self) {
        if self
            .exchange(
                12,
                &MetadataRequest::default().with_topics(Some(Vec::new())),
            )
            .await
            .is_some()
        {
            self.transcript.push("Metadata: answered".to_owned());
        }
    }

    /// Whether the broker closed the connection: the next read ends (within the wait).
    async fn closed(&mut self) {
        let mut byte = [0u8; 1];
        let closed = matches!(
            timeout(ANSWER_WITHIN, self.stream.read(&mut byte)).await,
            Ok(Ok(0) | Err(_))
        );
        self.transcript.push(format!("closed={closed}"));
    }
}

/// SCRAM-SHA-256's client side, from RFC 5802, for the conversation: client-first, then the
/// client-final for the server-first, then checks the server signature.
struct Scram {
    bare: String,
}

impl Scram {
    fn first(user: &str) -> (Self, String) {
        let bare = format!("n={user},r=differentialnonce0123");
        (Self { bare: bare.clone() }, format!("n,,{bare}"))
    }

    fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap();
        mac.update(data);
        mac.finalize().into_bytes().to_vec()
    }

    /// The client-final message and the server signature it expects.
    fn last(&self, password: &str, server_first: &str) -> (String, String) {
        let field = |k: &str| {
            server_first
                .split(',')
                .find_map(|a| a.strip_prefix(k))
                .unwrap()
                .to_owned()
        };
        let salt = BASE64.decode(field("s=")).unwrap();
        let iterations: u32 = field("i=").parse().unwrap();
        let mut salted = [0u8; 32];
        pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), &salt, iterations, &mut salted);
        let client_key = Self::hmac(&salted, b"Client Key");
        let stored_key = Sha256::digest(&client_key);
        let without_proof = format!("c=biws,r={}", field("r="));
        let auth_message = format!("{},{server_first},{without_proof}", self.bare);
        let signature = Self::hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = Self::hmac(&salted, b"Server Key");
        let expected = BASE64.encode(Self::hmac(&server_key, auth_message.as_bytes()));
        (
            format!("{without_proof},p={}", BASE64.encode(proof)),
            format!("v={expected}"),
        )
    }
}

/// What must hold of every server-first-message (the nonce and salt are random, so their
/// lengths vary from run to run even on the real broker): our nonce extended by a base-36 one,
/// a salt, the iteration count.
fn scram_server_first_shape(client_first: &str, server_first: &str) -> String {
    let client_nonce = client_first.rsplit_once("r=").unwrap().1;
    let mut parts = server_first.split(',');
    let nonce = parts
        .next()
        .and_then(|p| p.strip_prefix("r="))
        .unwrap_or_default();
    let extension = nonce.strip_prefix(client_nonce).unwrap_or_default();
    let salt = parts
        .next()
        .and_then(|p| p.strip_prefix("s="))
        .unwrap_or_default();
    let salt = BASE64.decode(salt).unwrap_or_default();
    let base36 = |s: &[u8]| {
        !s.is_empty()
            && s.iter()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
    };
    format!(
        "server-first: nonce extended by base-36={} salt base-36={} {}",
        base36(extension.as_bytes()),
        base36(&salt),
        parts.next().unwrap_or_default()
    )
}

fn plain(user: &str, password: &str) -> Vec<u8> {
    format!("\0{user}\0{password}").into_bytes()
}

fn unsecured_token(sub: &str, lifetime_s: i64) -> String {
    let now_s = kafka_consumer::rt::wall_clock_ms() / 1000;
    let claims = format!(
        r#"{{"sub":"{sub}","iat":{},"exp":{}}}"#,
        now_s - 10,
        now_s + lifetime_s
    );
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
        URL_SAFE_NO_PAD.encode(claims)
    )
}

fn oauth_initial(token: &str) -> Vec<u8> {
    format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
}

/// Every conversation against `address`, one transcript each.
async fn conversations(address: &str, user: &str, password: &str) -> Vec<Vec<String>> {
    let mut transcripts = Vec::new();
    macro_rules! conversation {
        (|$raw:ident| $body:block) => {{
            let mut $raw = Raw::connect(address).await;
            $body
            transcripts.push($raw.transcript);
        }};
    }
    // PLAIN, right password: authenticated, requests served, a second handshake is illegal
    // (no session expiry for PLAIN on this listener) but keeps the connection.
    conversation!(|raw| {
        raw.api_versions().await;
        raw.handshake("PLAIN", 1).await;
        raw.authenticate(&plain(user, password), true).await;
        raw.metadata().await;
        raw.handshake("PLAIN", 1).await;
        raw.authenticate(b"again", true).await;
        raw.metadata().await;
    });
    // PLAIN, wrong password: SASL_AUTHENTICATION_FAILED with Kafka's message, then closed.
    conversation!(|raw| {
        raw.api_versions().await;
        raw.handshake("PLAIN", 1).await;
        raw.authenticate(&plain(user, "wrong-password"), true).await;
        raw.closed().await;
    });
    // PLAIN, unknown user.
    conversation!(|raw| {
        raw.handshake("PLAIN", 1).await;
        raw.authenticate(&plain("nobody-at-all", password), true)
            .await;
        raw.closed().await;
    });
    // An unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the enabled list, then closed.
    conversation!(|raw| {
        raw.api_versions().await;
        raw.handshake("GSSAPI", 1).await;
        raw.closed().await;
    });
    // A request before authentication: closed without an answer.
    conversation!(|raw| {
        raw.metadata().await;
    });
    conversation!(|raw| {
        raw.api_versions().await;
        raw.metadata().await;
    });
    // A request between the handshake and the authentication: answered (ILLEGAL_SASL_STATE in
    // its own error response), then closed.
    conversation!(|raw| {
        raw.handshake("PLAIN", 1).await;
        raw.metadata().await;
        raw.closed().await;
    });
    // SaslAuthenticate before any handshake: closed.
    conversation!(|raw| {
        raw.api_versions().await;
        raw.authenticate(&plain(user, password), true).await;
    });
    // Two ApiVersions before the handshake: the second closes.
    conversation!(|raw| {
        raw.api_versions().await;
        raw.api_versions().await;
    });
    // SCRAM-SHA-256: right password (server signature checked), wrong password, unknown user.
    for (who, secret) in [
        (user, password),
        (user, "wrong-password"),
        ("nobody-at-all", password),
    ] {
        conversation!(|raw| {
            raw.handshake("SCRAM-SHA-256", 1).await;
            let (scram, first) = Scram::first(who);
            if let Some(server_first) = raw.authenticate(first.as_bytes(), false).await {
                let server_first = String::from_utf8(server_first.to_vec()).unwrap();
                raw.transcript
                    .push(scram_server_first_shape(&first, &server_first));
                let (last, expected) = scram.last(secret, &server_first);
                if let Some(server_final) = raw.authenticate(last.as_bytes(), false).await {
                    raw.transcript.push(format!(
                        "server signature verified={}",
                        server_final == expected.as_bytes()
                    ));
                }
            }
            raw.closed().await;
        });
    }
    // OAUTHBEARER: a valid token gets the listener's 3 s session; an expired one the error
    // document, then SASL_AUTHENTICATION_FAILED on the client's 0x01.
    conversation!(|raw| {
        raw.handshake("OAUTHBEARER", 1).await;
        raw.authenticate(&oauth_initial(&unsecured_token(user, 3600)), true)
            .await;
        raw.metadata().await;
    });
    conversation!(|raw| {
        raw.handshake("OAUTHBEARER", 1).await;
        raw.authenticate(&oauth_initial(&unsecured_token(user, -60)), true)
            .await;
        raw.authenticate(&[0x01], true).await;
        raw.closed().await;
    });
    // SaslHandshake v0: raw, length-prefixed PLAIN token; an empty raw answer, then requests.
    conversation!(|raw| {
        if raw.handshake("PLAIN", 0).await {
            raw.write_frame(&plain(user, password)).await;
            let answer = raw.read_frame().await;
            raw.transcript
                .push(format!("raw answer={:?}", answer.map(|b| b.to_vec())));
            raw.metadata().await;
        }
    });
    transcripts
}

#[tokio::test]
async fn sasl_conversations_match_the_real_broker() {
    let Some(setup) = setup() else {
        return;
    };
    let cluster = simulated(&setup).await;
    let simulated_address = cluster.bootstrap_servers()[0].clone();
    let real = conversations(&setup.real, &setup.user, &setup.password).await;
    let ours = conversations(&simulated_address, &setup.user, &setup.password).await;
    for (index, (real, ours)) in real.iter().zip(&ours).enumerate() {
        assert_eq!(
            ours, real,
            "conversation {index}: simulated (left) vs real (right)"
        );
    }
    assert_eq!(real.len(), ours.len());
    // The conversations exercised what they claim (a transcript equal to a broken real one would
    // prove nothing).
    let all = real.concat().join("\n");
    for expected in [
        "error=58 message=Some(\"Authentication failed: Invalid username or password\")",
        "error=33 mechanisms=[\"PLAIN\", \"SCRAM-SHA-512\", \"SCRAM-SHA-256\", \"OAUTHBEARER\"]",
        "server signature verified=true",
        "lifetime_ms=3000",
        "invalid_token",
        "closed=true",
    ] {
        assert!(all.contains(expected), "no `{expected}` in:\n{all}");
    }
}
