//! The consumer's SASL client against arbitrary server messages: SCRAM-SHA-256/512 server-first
//! and server-final messages, OAUTHBEARER error challenges, PLAIN's answer.
//!
//! Input: a selector byte (mechanism: 0 SCRAM-SHA-256, 1 SCRAM-SHA-512, 2 OAUTHBEARER, 3
//! PLAIN), then up to four server messages separated by NUL bytes. `%N` in a message is
//! replaced by the client's nonce (fixed seed), so server-first messages can extend it.
//!
//! Properties: no panic; bounded allocation; errors render; once a SCRAM or OAUTHBEARER client
//! says it is done (`Ok(None)`), any further server message is refused. (PLAIN's client keeps
//! no state past its one message: it answers every empty response with `Ok(None)`, harmless
//! because the authenticator never asks a finished client again.)
#![no_main]

use std::sync::Arc;

use kafka_consumer::fuzzing::SaslExchange;
use kafka_consumer::network::sasl::{
    SaslConfig, SaslCredentials, SaslMechanism, UnsecuredJwtProvider,
};
use kafka_consumer::network::Secret;
use kafka_consumer_fuzz::{with_alloc_cap, Control};
use libfuzzer_sys::fuzz_target;

fn replace_nonce(message: &[u8], nonce: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + nonce.len());
    let mut rest = message;
    while let Some(at) = rest.windows(2).position(|w| w == b"%N") {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(nonce);
        rest = &rest[at + 2..];
    }
    out.extend_from_slice(rest);
    out
}

fuzz_target!(|data: &[u8]| {
    let mut control = Control::new(data);
    let selector = control.u8() % 4;
    let messages: Vec<&[u8]> = control.rest().split(|b| *b == 0).take(4).collect();
    let password = || SaslCredentials::Password {
        username: "alice".to_owned(),
        password: Secret::new("secret"),
    };
    let (mechanism, credentials) = match selector {
        0 => (SaslMechanism::ScramSha256, password()),
        1 => (SaslMechanism::ScramSha512, password()),
        2 => (
            SaslMechanism::OAuthBearer,
            SaslCredentials::Token(Arc::new(UnsecuredJwtProvider::new("alice"))),
        ),
        _ => (SaslMechanism::Plain, password()),
    };
    let config = SaslConfig {
        mechanism,
        credentials,
    };
    let input_bytes = data.len();
    with_alloc_cap(64 * input_bytes + (1 << 20), || {
        let mut exchange = SaslExchange::new(&config).expect("matching credentials");
        let first = exchange.initial_response().expect("an initial response");
        // SCRAM's client-first is `n,,n=alice,r=<nonce>`.
        let nonce = first
            .windows(2)
            .position(|w| w == b"r=")
            .map(|at| first[at + 2..].to_vec())
            .unwrap_or_default();
        let mut done = false;
        for message in messages {
            let message = replace_nonce(message, &nonce);
            match exchange.evaluate(&message) {
                Ok(_) if done && mechanism != SaslMechanism::Plain => {
                    panic!("a server message accepted after the exchange ended")
                }
                Ok(None) => done = true,
                Ok(Some(_)) => {}
                Err(error) => {
                    assert!(!error.to_string().is_empty());
                    break;
                }
            }
        }
    });
});
