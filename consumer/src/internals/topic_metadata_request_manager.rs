//! Cluster metadata for the consumer (Java's `TopicMetadataRequestManager` plus the refresh
//! policy of `ConsumerMetadata`): the assigned topics are refreshed when a manager asks (leader
//! changes, unknown leaders, disconnects), when the assignment names a topic not yet known, and
//! every `metadata.max.age.ms`; `partitions_for` and `list_topics` get requests of their own.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::MetadataResponse;

use super::completion::Completion;
use super::context::ManagerContext;
use super::events::TopicPartitions;
use super::request_state::RequestState;
use super::requests::{PollResult, RequestBody, ResponseBody, UnsentRequest};
use crate::error::Error;
use crate::network::metadata::{metadata_request_all_topics, metadata_request_for_topics};
use crate::network::{MetadataScope, NetworkError, Target};
use crate::protocol::ResponseError;
use crate::rt::{Duration, Instant};
use crate::types::{PartitionInfo, TopicPartition};

struct UserMetadata {
    topics: Option<Vec<String>>,
    completion: Completion<TopicPartitions>,
    state: RequestState,
    token: Option<u64>,
}

/// The metadata manager.
pub(crate) struct TopicMetadataRequestManager {
    max_age: Duration,
    min_interval: Duration,
    retry_backoff_ms: u64,
    retry_backoff_max_ms: u64,
    /// `allow.auto.create.topics`: whether Metadata requests for named topics ask the broker
    /// to create missing ones (it does only when its `auto.create.topics.enable` is on too).
    allow_auto_topic_creation: bool,
    refresh_requested: bool,
    last_refresh_at: Option<Instant>,
    covered_topics: BTreeSet<String>,
    /// Whether the last successful refresh asked for every topic (a pattern subscription).
    covered_all_topics: bool,
    state: RequestState,
    /// The token of the refresh in flight, the topics it asks for, and whether it asks for all.
    in_flight: Option<(u64, BTreeSet<String>, bool)>,
    user: Vec<UserMetadata>,
    scopes: BTreeMap<u64, MetadataScope>,
    next_token: u64,
}

impl TopicMetadataRequestManager {
    /// A manager refreshing at least every `metadata_max_age_ms`.
    pub fn new(
        metadata_max_age_ms: u64,
        retry_backoff_ms: u64,
        retry_backoff_max_ms: u64,
        allow_auto_topic_creation: bool,
    ) -> Self {
        Self {
            allow_auto_topic_creation,
            max_age: Duration::from_millis(metadata_max_age_ms),
            min_interval: Duration::from_millis(retry_backoff_ms),
            retry_backoff_ms,
            retry_backoff_max_ms,
            // The first poll connects to the cluster and learns brokers and leaders.
            refresh_requested: true,
            last_refresh_at: None,
            covered_topics: BTreeSet::new(),
            covered_all_topics: false,
            state: RequestState::new(retry_backoff_ms, retry_backoff_max_ms),
            in_flight: None,
            user: Vec::new(),
            scopes: BTreeMap::new(),
            next_token: 0,
        }
    }

    /// Asks for a refresh of the assigned topics.
    pub fn request_refresh(&mut self) {
        self.refresh_requested = true;
    }

    /// `partitions_for` / `list_topics`.
    pub fn topic_metadata(
        &mut self,
        topics: Option<Vec<String>>,
        completion: Completion<TopicPartitions>,
    ) {
        self.user.push(UserMetadata {
            topics,
            completion,
            state: RequestState::new(self.retry_backoff_ms, self.retry_backoff_max_ms),
            token: None,
        });
    }

    /// How the response to `token` must be applied to the cluster metadata.
    pub fn scope_of(&self, token: u64) -> Option<MetadataScope> {
        self.scopes.get(&token).copied()
    }

    /// Sends refreshes and user requests that are due.
    pub fn poll(&mut self, ctx: &mut ManagerContext<'_>) -> PollResult {
        let mut result = PollResult::default();
        let all_topics = ctx.subscriptions.needs_all_topics_metadata();
        let wanted = ctx.subscriptions.metadata_topics();
        // Topics the last refresh did not ask for (a new subscription, a new assignment):
        // Java's `requestUpdateForNewTopics`, which lets the update go at once.
        let new_topics = if all_topics {
            !self.covered_all_topics
        } else {
            !wanted.is_subset(&self.covered_topics)
        };
        if new_topics {
            self.refresh_requested = true;
        }
        let expires_at = self.last_refresh_at.map(|at| at + self.max_age);
        if expires_at.is_some_and(|at| at <= ctx.now) {
            self.refresh_requested = true;
        }
        // Refreshes asked for right after one completed wait `retry.backoff.ms` (Java's
        // `refreshBackoffMs`): a manager that keeps asking (a leader still unknown) must not
        // turn the loop into a stream of Metadata requests. New topics do not wait (Java's
        // `requestUpdateForNewTopics` zeroes `lastRefreshMs`): a consumer that subscribes while
        // its first refresh (of no topic) is answered would otherwise learn its topics'
        // partitions only `retry.backoff.ms` later, after it joined the group, and a returning
        // static leader would take that late answer for a partition change and rebalance.
        // Once asked for, they are covered, so this cannot repeat; failed refreshes still back
        // off through `state`.
        let not_before = self
            .last_refresh_at
            .map(|at| at + self.min_interval)
            .filter(|at| *at > ctx.now && !new_topics);
        if self.refresh_requested && self.in_flight.is_none() {
            if let Some(at) = not_before {
                result.wake_at(at);
            } else if self.state.can_send(ctx.now) {
                self.next_token += 1;
                let token = self.next_token;
                tracing::debug!(topics = ?wanted, all_topics, "refreshing metadata");
                let (request, scope) = if all_topics {
                    // A pattern subscription matches against every topic (Java's
                    // `needMetadataForAllTopics`).
                    (metadata_request_all_topics(), MetadataScope::AllTopics)
                } else {
                    (
                        metadata_request_for_topics(
                            wanted.iter().map(String::as_str),
                            self.allow_auto_topic_creation,
                        ),
                        MetadataScope::ListedTopics,
                    )
                };
                self.scopes.insert(token, scope);
                self.in_flight = Some((token, wanted, all_topics));
                self.state.on_send();
                self.refresh_requested = false;
                result.requests.push(UnsentRequest {
                    timeout_ms: None,
                    target: Target::LeastLoaded,
                    version: None,
                    body: RequestBody::Metadata(request),
                    token,
                });
            } else if let Some(at) = self.state.backoff_until(ctx.now) {
                result.wake_at(at);
            }
        } else if let Some(at) = expires_at {
            result.wake_at(at);
        }
        self.user
            .retain(|u| u.token.is_some() || !u.completion.is_done());
        for user in &mut self.user {
            if user.token.is_some() {
                continue;
            }
            if !user.state.can_send(ctx.now) {
                if let Some(at) = user.state.backoff_until(ctx.now) {
                    result.wake_at(at);
                }
                continue;
            }
            self.next_token += 1;
            let (request, scope) = match &user.topics {
                Some(topics) => (
                    metadata_request_for_topics(
                        topics.iter().map(String::as_str),
                        self.allow_auto_topic_creation,
                    ),
                    MetadataScope::ListedTopics,
                ),
                None => (metadata_request_all_topics(), MetadataScope::AllTopics),
            };
            self.scopes.insert(self.next_token, scope);
            user.token = Some(self.next_token);
            user.state.on_send();
            result.requests.push(UnsentRequest {
                timeout_ms: None,
                target: Target::LeastLoaded,
                version: None,
                body: RequestBody::Metadata(request),
                token: self.next_token,
            });
        }
        result
    }

    /// Handles a Metadata response (already applied to the cluster metadata by the loop).
    /// Returns whether the assigned topics' metadata was refreshed.
    pub fn on_response(
        &mut self,
        ctx: &mut ManagerContext<'_>,
        token: u64,
        result: Result<(ResponseBody, i16), NetworkError>,
    ) -> bool {
        self.scopes.remove(&token);
        let body = match result {
            Ok((ResponseBody::Metadata(body), _)) => Ok(body),
            Ok(_) => return false,
            Err(error) => Err(error),
        };
        if self.in_flight.as_ref().is_some_and(|(t, _, _)| *t == token) {
            let Some((_, topics, all_topics)) = self.in_flight.take() else {
                return false;
            };
            return match body {
                Ok(body) => {
                    self.state.on_success();
                    self.last_refresh_at = Some(ctx.now);
                    self.covered_topics = topics;
                    self.covered_all_topics = all_topics;
                    // Java's `Metadata.maybeThrowAnyException` after each network poll: what
                    // this update reports is raised once, then cleared; the next refresh (new
                    // topics, `metadata.max.age.ms`) reports it again if it still holds.
                    if let Some(error) = unusable_topics_error(&body, |topic| {
                        ctx.subscriptions.retains_metadata_of(topic)
                    }) {
                        tracing::warn!(%error, "metadata refresh reports unusable topics");
                        ctx.report(error);
                    }
                    true
                }
                Err(error) => {
                    tracing::debug!(%error, "metadata refresh failed");
                    self.state.on_failure(ctx.now, ctx.rng);
                    self.refresh_requested = true;
                    false
                }
            };
        }
        let Some(index) = self.user.iter().position(|u| u.token == Some(token)) else {
            return false;
        };
        let user = &mut self.user[index];
        user.token = None;
        match body
            .map_err(Error::Network)
            .and_then(|b| partitions_by_topic(&b, user.topics.as_deref()))
        {
            Ok(Some(answer)) => {
                let user = self.user.remove(index);
                user.completion.complete(Ok(answer));
            }
            Ok(None) => user.state.on_failure(ctx.now, ctx.rng),
            Err(error) if error.is_retriable() => user.state.on_failure(ctx.now, ctx.rng),
            Err(error) => {
                let user = self.user.remove(index);
                user.completion.complete(Err(error));
            }
        }
        false
    }
}

/// The error a refresh raises for the topics the consumer needs that the broker refuses (Java's
/// `Metadata.recoverableException`): TOPIC_AUTHORIZATION_FAILED wins over
/// INVALID_TOPIC_EXCEPTION, as there; `None` when there are neither. `needed` is Java's
/// `ConsumerMetadata.retainTopic`: other topics of an all-topics answer are not ours to report.
fn unusable_topics_error(body: &MetadataResponse, needed: impl Fn(&str) -> bool) -> Option<Error> {
    let mut unauthorized = BTreeSet::new();
    let mut invalid = BTreeSet::new();
    for topic in &body.topics {
        let Some(name) = topic.name.as_ref().map(|n| n.0.as_str()) else {
            continue;
        };
        match ResponseError::try_from_code(topic.error_code) {
            Some(ResponseError::TopicAuthorizationFailed) if needed(name) => {
                unauthorized.insert(name.to_owned());
            }
            Some(ResponseError::InvalidTopicException) if needed(name) => {
                invalid.insert(name.to_owned());
            }
            _ => {}
        }
    }
    if !unauthorized.is_empty() {
        let topics: Vec<String> = unauthorized.into_iter().collect();
        return Some(Error::from_code(
            ResponseError::TopicAuthorizationFailed,
            format!("not authorized to access topics: [{}]", topics.join(", ")),
        ));
    }
    (!invalid.is_empty()).then(|| Error::InvalidTopic {
        topics: invalid.into_iter().collect(),
        reason: "the broker answered Metadata with INVALID_TOPIC_EXCEPTION".to_owned(),
    })
}

/// The partitions of each topic in a response; `Ok(None)` when it must be asked again (a topic
/// without a leader yet). Unknown topics are left out, like Java's `partitionsFor`; an invalid
/// or unauthorized topic fails the call, as Java's `TopicMetadataFetcher` does.
fn partitions_by_topic(
    body: &MetadataResponse,
    asked: Option<&[String]>,
) -> Result<Option<TopicPartitions>, Error> {
    let mut out: TopicPartitions = BTreeMap::new();
    for topic in &body.topics {
        let Some(name) = topic.name.as_ref().map(|n| n.0.to_string()) else {
            continue;
        };
        match ResponseError::try_from_code(topic.error_code) {
            None => {}
            Some(ResponseError::UnknownTopicOrPartition) => continue,
            Some(ResponseError::InvalidTopicException) => {
                return Err(Error::InvalidTopic {
                    topics: vec![name],
                    reason: "the broker answered Metadata with INVALID_TOPIC_EXCEPTION".to_owned(),
                })
            }
            Some(ResponseError::LeaderNotAvailable) => return Ok(None),
            Some(code) => return Err(Error::from_code(code, format!("metadata of topic {name}"))),
        }
        if asked.is_none() && topic.is_internal {
            continue;
        }
        let topic_arc: std::sync::Arc<str> = std::sync::Arc::from(name.as_str());
        let partitions = topic
            .partitions
            .iter()
            .map(|p| PartitionInfo {
                partition: TopicPartition {
                    topic: std::sync::Arc::clone(&topic_arc),
                    partition: p.partition_index,
                },
                leader: (p.leader_id.0 >= 0).then_some(p.leader_id.0),
                replicas: p.replica_nodes.iter().map(|n| n.0).collect(),
                in_sync_replicas: p.isr_nodes.iter().map(|n| n.0).collect(),
                offline_replicas: p.offline_replicas.iter().map(|n| n.0).collect(),
            })
            .collect();
        out.insert(name, partitions);
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::internals::context::testing::Parts;
    use crate::internals::settings::ConsumerSettings;
    use crate::internals::test_support::metadata_response;

    #[test]
    fn refreshes_at_start_for_new_topics_on_request_and_on_max_age() {
        let mut p = Parts::new(ConsumerSettings::default());
        let mut m = TopicMetadataRequestManager::new(10_000, 100, 1_000, false);
        let r = m.poll(&mut p.ctx());
        assert_eq!(r.requests.len(), 1, "startup refresh");
        let token = r.requests[0].token;
        assert_eq!(m.scope_of(token), Some(MetadataScope::ListedTopics));
        assert!(m.poll(&mut p.ctx()).requests.is_empty(), "one in flight");
        let ok = Ok((ResponseBody::Metadata(metadata_response(&[(0, 1, 1)])), 12));
        assert!(m.on_response(&mut p.ctx(), token, ok.clone()));
        let r = m.poll(&mut p.ctx());
        assert!(r.requests.is_empty());
        assert_eq!(r.next_poll_at, Some(p.now + Duration::from_millis(10_000)));

        p.subscriptions
            .assign_from_user(&[TopicPartition::new("t", 0)].into_iter().collect());
        p.advance_ms(100);
        let r = m.poll(&mut p.ctx());
        let RequestBody::Metadata(req) = &r.requests[0].body else {
            panic!()
        };
        assert_eq!(
            req.topics.as_ref().unwrap()[0]
                .name
                .as_ref()
                .unwrap()
                .0
                .as_str(),
            "t"
        );
        assert!(m.on_response(&mut p.ctx(), r.requests[0].token, ok.clone()));
        assert!(m.poll(&mut p.ctx()).requests.is_empty());

        m.request_refresh();
        let r = m.poll(&mut p.ctx());
        assert!(r.requests.is_empty(), "not right after the last refresh");
        assert_eq!(r.next_poll_at, Some(p.now + Duration::from_millis(100)));
        p.advance_ms(100);
        let r = m.poll(&mut p.ctx());
        assert_eq!(r.requests.len(), 1, "on request");
        m.on_response(&mut p.ctx(), r.requests[0].token, ok);
        p.advance_ms(10_000);
        assert_eq!(m.poll(&mut p.ctx()).requests.len(), 1, "on max age");
    }

    /// A subscription made while the startup refresh (of no topic) is in flight is refreshed
    /// as soon as that answer arrives, not `retry.backoff.ms` later (Java's
    /// `requestUpdateForNewTopics`); once covered, the topics wait for the backoff again, also
    /// when the broker does not know them, and a failed refresh of new topics backs off.
    #[test]
    fn new_topics_skip_the_refresh_backoff_once() {
        let mut p = Parts::new(ConsumerSettings::default());
        let mut m = TopicMetadataRequestManager::new(10_000, 100, 1_000, false);
        let startup = m.poll(&mut p.ctx()).requests[0].token;
        p.subscriptions
            .subscribe(["t".to_owned()].into_iter().collect());
        assert!(m.poll(&mut p.ctx()).requests.is_empty(), "one in flight");
        p.advance_ms(3);
        assert!(m.on_response(&mut p.ctx(), startup, answer(&[])));
        let r = m.poll(&mut p.ctx());
        assert_eq!(r.requests.len(), 1, "the new topic at once");
        let unknown = answer(&[("t", ResponseError::UnknownTopicOrPartition)]);
        assert!(m.on_response(&mut p.ctx(), r.requests[0].token, unknown));
        m.request_refresh();
        let r = m.poll(&mut p.ctx());
        assert!(r.requests.is_empty(), "covered: the backoff applies");
        assert_eq!(r.next_poll_at, Some(p.now + Duration::from_millis(100)));

        p.subscriptions
            .subscribe(["t".to_owned(), "u".to_owned()].into_iter().collect());
        let r = m.poll(&mut p.ctx());
        assert_eq!(r.requests.len(), 1, "another new topic at once");
        let failed = Err(NetworkError::NoNodeAvailable);
        assert!(!m.on_response(&mut p.ctx(), r.requests[0].token, failed));
        let r = m.poll(&mut p.ctx());
        assert!(r.requests.is_empty(), "a failed refresh backs off");
        assert!(r.next_poll_at.is_some_and(|at| at > p.now));
    }

    /// `allow.auto.create.topics` goes into every request for named topics (the refresh and
    /// `partitions_for`); a request for every topic never asks for creation.
    #[test]
    fn named_topic_requests_carry_allow_auto_create_topics() {
        let allows = |r: &PollResult| match &r.requests[0].body {
            RequestBody::Metadata(request) => request.allow_auto_topic_creation,
            other => panic!("expected Metadata, got {other:?}"),
        };
        for allow in [false, true] {
            let mut p = Parts::new(ConsumerSettings::default());
            let mut m = TopicMetadataRequestManager::new(10_000, 100, 1_000, allow);
            let r = m.poll(&mut p.ctx());
            assert_eq!(allows(&r), allow, "the refresh");
            let (c, _rx) = Completion::new(
                "partitions_for",
                Some(p.now + Duration::from_secs(5)),
                5_000,
            );
            m.topic_metadata(Some(vec!["x".to_owned()]), c);
            let r = m.poll(&mut p.ctx());
            assert_eq!(allows(&r), allow, "partitions_for");
            let (c, _rx) =
                Completion::new("list_topics", Some(p.now + Duration::from_secs(5)), 5_000);
            m.topic_metadata(None, c);
            let r = m.poll(&mut p.ctx());
            assert!(!allows(&r), "list_topics asks for every topic");
        }
    }

    #[test]
    fn partitions_for_answers_from_its_own_request() {
        let mut p = Parts::new(ConsumerSettings::default());
        let mut m = TopicMetadataRequestManager::new(10_000, 100, 1_000, false);
        m.poll(&mut p.ctx());
        let (c, rx) = Completion::new(
            "partitions_for",
            Some(p.now + Duration::from_secs(1)),
            1_000,
        );
        m.topic_metadata(Some(vec!["t".into()]), c);
        let r = m.poll(&mut p.ctx());
        let token = r.requests[0].token;
        let ok = Ok((
            ResponseBody::Metadata(metadata_response(&[(0, 1, 1), (1, 2, 1)])),
            12,
        ));
        assert!(!m.on_response(&mut p.ctx(), token, ok));
        let answer = rx.borrow().clone().unwrap().unwrap();
        let leaders: Vec<_> = answer["t"].iter().map(|p| p.leader).collect();
        assert_eq!(leaders, [Some(1), Some(2)]);
    }
    /// A response naming `topics` with their error codes (0: a one-partition topic).
    fn answer(topics: &[(&str, ResponseError)]) -> Result<(ResponseBody, i16), NetworkError> {
        let mut body = metadata_response(&[]);
        body.topics = topics
            .iter()
            .map(|(name, code)| {
                kafka_protocol::messages::metadata_response::MetadataResponseTopic::default()
                    .with_name(Some(kafka_protocol::messages::TopicName(
                        kafka_protocol::protocol::StrBytes::from_string((*name).to_owned()),
                    )))
                    .with_error_code(code.code())
            })
            .collect();
        Ok((ResponseBody::Metadata(body), 12))
    }

    /// Refreshes once: the startup refresh (nothing subscribed) is answered empty first.
    fn refresh(
        m: &mut TopicMetadataRequestManager,
        p: &mut Parts,
        topics: &[(&str, ResponseError)],
    ) -> Vec<Error> {
        let r = m.poll(&mut p.ctx());
        assert_eq!(r.requests.len(), 1, "one refresh");
        assert!(m.on_response(&mut p.ctx(), r.requests[0].token, answer(topics)));
        std::mem::take(&mut p.effects.errors)
    }

    #[test]
    fn a_refused_subscribed_topic_fails_poll_once_per_refresh() {
        let mut p = Parts::new(ConsumerSettings::default());
        let mut m = TopicMetadataRequestManager::new(10_000, 100, 1_000, false);
        assert!(refresh(&mut m, &mut p, &[]).is_empty());
        p.subscriptions
            .subscribe(["bad".to_owned(), "t".to_owned()].into_iter().collect());
        p.advance_ms(100);
        let errors = refresh(
            &mut m,
            &mut p,
            &[
                ("bad", ResponseError::InvalidTopicException),
                ("t", ResponseError::UnknownTopicOrPartition),
                // Not needed by this consumer: not its business.
                ("other", ResponseError::InvalidTopicException),
            ],
        );
        let [Error::InvalidTopic { topics, .. }] = errors.as_slice() else {
            panic!("one InvalidTopic error, got {errors:?}");
        };
        assert_eq!(topics, &["bad"]);
        // Reported, then cleared: no request storm and no repeat until the next refresh.
        for _ in 0..3 {
            p.advance_ms(1_000);
            assert!(m.poll(&mut p.ctx()).requests.is_empty());
        }
        assert!(p.effects.errors.is_empty());
        p.advance_ms(10_000);
        let errors = refresh(
            &mut m,
            &mut p,
            &[
                ("bad", ResponseError::InvalidTopicException),
                ("t", ResponseError::TopicAuthorizationFailed),
            ],
        );
        // Java's order: an authorization failure is raised ahead of invalid topics.
        let [Error::Authorization { code, message }] = errors.as_slice() else {
            panic!("one authorization error, got {errors:?}");
        };
        assert_eq!(*code, crate::error::ErrorCode::TOPIC_AUTHORIZATION_FAILED);
        assert!(message.contains("[t]"), "{message}");
        p.subscriptions.unsubscribe();
        p.subscriptions
            .subscribe(["t".to_owned()].into_iter().collect());
        m.request_refresh(); // as the background task does on every subscription change
        p.advance_ms(100);
        assert!(refresh(&mut m, &mut p, &[("t", ResponseError::LeaderNotAvailable)]).is_empty());
    }

    #[test]
    fn a_pattern_reports_only_the_refused_topics_it_matches() {
        let mut p = Parts::new(ConsumerSettings::default());
        let mut m = TopicMetadataRequestManager::new(10_000, 100, 1_000, false);
        assert!(refresh(&mut m, &mut p, &[]).is_empty());
        p.subscriptions.subscribe_pattern(
            crate::internals::subscription_state::TopicPattern::new("orders-.*").unwrap(),
        );
        p.advance_ms(10_000);
        let errors = refresh(
            &mut m,
            &mut p,
            &[
                ("orders-eu", ResponseError::TopicAuthorizationFailed),
                ("payments", ResponseError::TopicAuthorizationFailed),
            ],
        );
        let [Error::Authorization { message, .. }] = errors.as_slice() else {
            panic!("one authorization error, got {errors:?}");
        };
        assert!(message.contains("[orders-eu]"), "{message}");
    }

    #[test]
    fn partitions_for_an_invalid_topic_fails_naming_it() {
        let mut p = Parts::new(ConsumerSettings::default());
        let mut m = TopicMetadataRequestManager::new(10_000, 100, 1_000, false);
        m.poll(&mut p.ctx());
        let (c, rx) = Completion::new(
            "partitions_for",
            Some(p.now + Duration::from_secs(1)),
            1_000,
        );
        m.topic_metadata(Some(vec!["bad!topic".into()]), c);
        let r = m.poll(&mut p.ctx());
        let token = r.requests[0].token;
        let answer = answer(&[("bad!topic", ResponseError::InvalidTopicException)]);
        assert!(!m.on_response(&mut p.ctx(), token, answer));
        let result = rx.borrow().clone().expect("completed");
        let Err(Error::InvalidTopic { topics, .. }) = result else {
            panic!("expected InvalidTopic, got {result:?}");
        };
        assert_eq!(topics, ["bad!topic"]);
        assert!(
            p.effects.errors.is_empty(),
            "partitions_for answers its caller only"
        );
    }
}
