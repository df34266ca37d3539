//! **Family: authentication under faults** (issue #17, the project's own) — a group consuming
//! over SASL_PLAINTEXT while faults hit authentication.
//!
//! **Interleavings aimed at.** Per seed: the mechanism (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER
//! with Kafka's unsecured JWT login), the brokers' `connections.max.reauth.ms` (KIP-368: none,
//! 2 s, 4 s or 10 s) and for OAUTHBEARER the token lifetime (an hour, or 5–8 s, so the token's
//! expiry bounds the session), then a seeded subset of: network delays of 20–200 ms per message
//! (re-authentications due while requests are slow), one or two broker restarts (every session
//! on it re-established), a broker that drops or holds its SaslHandshake/SaslAuthenticate
//! answers (closing during the handshake), every session of a broker expired at once (the
//! broker closes each connection at its next request), `connections.max.reauth.ms` shortened
//! mid-run, and — with a password — the password rotated for 5–9 s: the old one is refused and
//! the sessions it opened are expired with the rotation (an operator revoking a leaked
//! credential; Kafka alone would refuse it at the next KIP-368 re-authentication), then restored.
//! Group protocol, timeouts and commit policy as in every family.
//!
//! **Invariants.** The full set ([`super::full_checks`]): every acked record delivered, none
//! lost, at-least-once bound, and after the heal the group settles and commits everything.
//! Plus [`AuthAttemptsBounded`]: no broker sees more than 40 SASL exchanges start in any second
//! (three members, a connection per broker and one to the coordinator each, reconnecting with
//! backoff: a client retrying refused credentials without backoff would exceed it at once);
//! and [`AuthErrorsMatchCredentials`]: `poll` fails with the typed authentication error only
//! while the password is wrong (or within 3 s of its restore), and every member polling
//! through a wrong window hears of it.
//!
//! **Why our design should hold.** Authentication is part of connecting (`network/connection`):
//! a refused exchange fails the connection with `NetworkError::Authentication`, the node backs
//! off as for any failed connect, and `internals/auth_failures` turns it into one
//! `Error::Authentication` per broker per backoff for `poll`. Re-authentication waits for the
//! in-flight requests and happens at 85–95 % of the session, so a slow network delays it
//! without the broker closing the session; a closed session is a closed connection, and every
//! request manager already retries those.

use sim::check::CheckerSet;
use sim::fault::{Fault, ResponseAction, ResponseRule, Trigger};
use sim::sasl::SaslServerConfig;

use super::{
    between, coin, family_scenario, full_checks, knob_rng, pick, set, Family, GroupKnobs, BROKERS,
};
use crate::checks::{AuthAttemptsBounded, AuthErrorsMatchCredentials};
use crate::scenario::{PlannedFaults, Scenario};

pub const NAME: &str = "family-auth";

const SALT: u64 = 0x6175_7468;
const WITHIN_MS: u64 = 30_000;
const PRODUCE_UNTIL_MS: u64 = 30_000;
const RUN_MS: u64 = 60_000;
/// The user every member authenticates as, and its password.
pub const USER: &str = "alice";
pub const PASSWORD: &str = "alice-secret";
const ROTATED: &str = "rotated-secret";
/// SaslHandshake and SaslAuthenticate.
const SASL_APIS: [i16; 2] = [17, 36];

/// `sasl.mechanism`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    ScramSha256,
    ScramSha512,
    OAuthBearer { token_lifetime_s: u64 },
}

impl Mechanism {
    fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
            Self::OAuthBearer { .. } => "OAUTHBEARER",
        }
    }

    fn jaas(self) -> String {
        match self {
            Self::Plain => format!(
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"{USER}\" password=\"{PASSWORD}\";"
            ),
            Self::ScramSha256 | Self::ScramSha512 => format!(
                "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{USER}\" password=\"{PASSWORD}\";"
            ),
            Self::OAuthBearer { token_lifetime_s } => format!(
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"{USER}\" unsecuredLoginLifetimeSeconds=\"{token_lifetime_s}\";"
            ),
        }
    }
}

/// One seed's draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Draw {
    pub group: GroupKnobs,
    pub mechanism: Mechanism,
    pub max_reauth_ms: i64,
    pub plan: Vec<(u64, Fault)>,
    pub healed_at_ms: u64,
    /// `[from, to)` of the rotated password, if any.
    pub rotation: Option<(u64, u64)>,
}

pub fn draw(seed: u64) -> Draw {
    let mut rng = knob_rng(seed, SALT);
    let group = GroupKnobs::draw(&mut rng, &[30_000]);
    let mechanism = match rng.below_inclusive(3) {
        0 => Mechanism::Plain,
        1 => Mechanism::ScramSha256,
        2 => Mechanism::ScramSha512,
        _ => Mechanism::OAuthBearer {
            token_lifetime_s: pick(&mut rng, &[3_600, 5, 8]),
        },
    };
    let max_reauth_ms = pick(&mut rng, &[0, 2_000, 4_000, 10_000]);
    let mut plan = Vec::new();
    let mut last_ms = 4_000;
    if coin(&mut rng) {
        let from = between(&mut rng, 3_000, 12_000);
        let to = from + between(&mut rng, 3_000, 8_000);
        let max_ms = between(&mut rng, 20, 200);
        plan.push((from, Fault::Latency { min_ms: 1, max_ms }));
        plan.push((
            to,
            Fault::Latency {
                min_ms: 1,
                max_ms: 10,
            },
        ));
        last_ms = last_ms.max(to);
    }
    for _ in 0..rng.below_inclusive(2) {
        let at = between(&mut rng, 3_000, 18_000);
        let broker = between(&mut rng, 1, BROKERS as u64) as i32;
        plan.push((at, Fault::RestartBroker { broker }));
        last_ms = last_ms.max(at + 1_000);
    }
    if coin(&mut rng) {
        let at = between(&mut rng, 2_000, 15_000);
        let broker = between(&mut rng, 1, BROKERS as u64) as i32;
        let action = if coin(&mut rng) {
            ResponseAction::Lose
        } else {
            ResponseAction::Hold {
                delay_ms: between(&mut rng, 100, 2_000),
            }
        };
        plan.push((
            at,
            Fault::Response(ResponseRule {
                api_key: pick(&mut rng, &SASL_APIS),
                broker: Some(broker),
                trigger: Trigger::Next(between(&mut rng, 1, 3) as u32),
                action,
            }),
        ));
        plan.push((at + 6_000, Fault::ClearResponses { api_key: None }));
        last_ms = last_ms.max(at + 6_000);
    }
    if coin(&mut rng) {
        let at = between(&mut rng, 3_000, 18_000);
        let broker = between(&mut rng, 1, BROKERS as u64) as i32;
        plan.push((at, Fault::SaslExpireSessions { broker }));
        last_ms = last_ms.max(at + 1_000);
    }
    if coin(&mut rng) {
        let at = between(&mut rng, 3_000, 15_000);
        let max_reauth_ms = between(&mut rng, 1_500, 3_000) as i64;
        plan.push((at, Fault::SaslMaxReauth { max_reauth_ms }));
        last_ms = last_ms.max(at + 1_000);
    }
    let password = !matches!(mechanism, Mechanism::OAuthBearer { .. });
    let rotation = (password && coin(&mut rng)).then(|| {
        let from = between(&mut rng, 5_000, 15_000);
        (from, from + between(&mut rng, 5_000, 9_000))
    });
    if let Some((from, to)) = rotation {
        let set_password = |password: &str| Fault::SaslSetPassword {
            user: USER.to_owned(),
            password: password.to_owned(),
        };
        plan.push((from, set_password(ROTATED)));
        for broker in 1..=BROKERS {
            plan.push((from, Fault::SaslExpireSessions { broker }));
        }
        plan.push((to, set_password(PASSWORD)));
        last_ms = last_ms.max(to);
    }
    plan.sort_by_key(|(at, _)| *at);
    Draw {
        group,
        mechanism,
        max_reauth_ms,
        plan,
        healed_at_ms: last_ms + 500,
        rotation,
    }
}

/// The brokers' SASL listener for a draw: every mechanism enabled, the user with its password
/// (SCRAM salts drawn from the seed), `connections.max.reauth.ms`.
fn listener(seed: u64, draw: &Draw) -> SaslServerConfig {
    let mut sasl = SaslServerConfig::sasl_plaintext();
    sasl.connections_max_reauth_ms = draw.max_reauth_ms;
    sasl.add_user(USER, PASSWORD, &mut knob_rng(seed, SALT ^ 0x7573_6572));
    sasl
}

fn vary(scenario: &mut Scenario, seed: u64) {
    let draw = draw(seed);
    for spec in &mut scenario.subjects {
        draw.group.apply(spec);
        set(spec, "security.protocol", "SASL_PLAINTEXT");
        set(spec, "sasl.mechanism", draw.mechanism.name());
        set(spec, "sasl.jaas.config", &draw.mechanism.jaas());
    }
    scenario.cluster.sasl = Some(listener(seed, &draw));
}

fn plan(seed: u64) -> PlannedFaults {
    let draw = draw(seed);
    PlannedFaults {
        plan: draw.plan,
        healed_at_ms: draw.healed_at_ms,
    }
}

fn checks() -> CheckerSet {
    full_checks(WITHIN_MS)
        .with(AuthAttemptsBounded {
            max_per_broker_per_second: 40,
        })
        .with(AuthErrorsMatchCredentials {
            user: USER,
            password: PASSWORD,
            grace_ms: 3_000,
            notice_ms: 3_000,
        })
}

pub fn scenario() -> Scenario {
    let mut scenario = family_scenario(Family {
        name: NAME,
        description: "a group over SASL while sessions expire, brokers restart, handshakes drop and a password is rotated: full checker set, typed auth errors exactly when credentials are wrong, no auth storm",
        partitions: 4,
        members: 3,
        produce_until_ms: PRODUCE_UNTIL_MS,
        run_ms: RUN_MS,
        plan,
        checks,
        vary,
    });
    // Seed 0's listener until `vary` draws the seed's own.
    scenario.cluster.sasl = Some(listener(0, &draw(0)));
    scenario
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_cover_every_mechanism_and_fault_and_heal_in_time() {
        let mut mechanisms = std::collections::BTreeSet::new();
        let mut kinds = std::collections::BTreeSet::new();
        let mut rotations = 0;
        for seed in 0..200 {
            let draw = draw(seed);
            mechanisms.insert(draw.mechanism.name());
            for (at, fault) in &draw.plan {
                assert!(
                    *at <= draw.healed_at_ms,
                    "seed {seed}: {fault:?} after the heal"
                );
                kinds.insert(
                    format!("{fault:?}")
                        .split([' ', '(', '{'])
                        .next()
                        .unwrap()
                        .to_owned(),
                );
            }
            assert!(
                draw.healed_at_ms + WITHIN_MS + 5_000 <= RUN_MS,
                "seed {seed}"
            );
            if let Some((from, to)) = draw.rotation {
                rotations += 1;
                assert!(!matches!(draw.mechanism, Mechanism::OAuthBearer { .. }));
                assert!(to - from >= 5_000);
            }
        }
        assert_eq!(mechanisms.len(), 4, "{mechanisms:?}");
        for kind in [
            "Latency",
            "RestartBroker",
            "Response",
            "SaslExpireSessions",
            "SaslMaxReauth",
            "SaslSetPassword",
        ] {
            assert!(kinds.contains(kind), "{kind} never drawn: {kinds:?}");
        }
        assert!(rotations > 30, "{rotations}");
    }

    #[test]
    fn members_get_the_mechanisms_properties() {
        let scenario = scenario().for_seed(3);
        let draw = draw(3);
        for spec in &scenario.subjects {
            let get = |key: &str| {
                spec.properties
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.clone())
            };
            assert_eq!(get("security.protocol").as_deref(), Some("SASL_PLAINTEXT"));
            assert_eq!(
                get("sasl.mechanism").as_deref(),
                Some(draw.mechanism.name())
            );
            assert!(get("sasl.jaas.config").unwrap().contains(USER));
        }
        let sasl = scenario.cluster.sasl.unwrap();
        assert_eq!(sasl.connections_max_reauth_ms, draw.max_reauth_ms);
        assert!(sasl.users.contains_key(USER));
    }
}
