//! Calling API handlers in unit tests: a broker of an in-memory cluster and a request context,
//! and a way to run a handler that never waits (every handler but the group ones answers on its
//! first poll), so the same tests run on real tokio and under madsim without a runtime.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use kafka_protocol::messages::RequestHeader;

use crate::broker::dispatch::{ClientInfo, RequestCtx};
use crate::broker::Broker;
use crate::config::ClusterConfig;
use crate::controller::Controller;

/// Broker 1 of a cluster of `brokers` with `topics` (name, partitions), replication factor 1
/// (so partition p of a topic is led by broker p % brokers + 1).
pub(super) struct TestBroker {
    pub broker: Broker,
    client: ClientInfo,
}

impl TestBroker {
    pub(super) fn new(brokers: i32, topics: &[(&str, i32)]) -> Self {
        let mut config = ClusterConfig {
            default_replication_factor: 1,
            offsets_topic_replication_factor: 1,
            ..ClusterConfig::default()
        };
        for (name, partitions) in topics {
            config.topics.insert((*name).to_owned(), *partitions);
        }
        let addresses: Vec<(i32, String, u16)> = (1..=brokers)
            .map(|id| (id, "127.0.0.1".to_owned(), 9091 + id as u16))
            .collect();
        let controller = Controller::new(config, &addresses);
        Self {
            broker: Broker::for_tests(1, controller),
            client: ClientInfo {
                host: "/127.0.0.1".to_owned(),
                connection_id: 1,
            },
        }
    }

    pub(super) fn controller(&self) -> &Controller {
        &self.broker.controller
    }

    /// A request context at `version`.
    pub(super) fn ctx(&self, version: i16) -> RequestCtx<'_> {
        RequestCtx {
            broker: &self.broker,
            version,
            header: RequestHeader::default(),
            client: &self.client,
        }
    }
}

/// Runs `future` to completion on its first poll; a handler that waits is a test bug.
pub(super) fn answer<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the handler waited; only group handlers may"),
    }
}
