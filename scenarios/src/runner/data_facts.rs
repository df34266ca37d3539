//! The data-path facts of a fault, as the cluster applied it ([`DataEvent`]): recorded by the
//! runner for scenarios that judge the data path ([`crate::checks::DataPathAccounting`]), so
//! each excuse for a missing record comes from what the cluster actually did — a DeleteRecords
//! past the high watermark moves the log start only to it; a deletion of a topic that is not
//! there deletes nothing.

use sim::cluster::Cluster;
use sim::fault::Fault;
use sim::history::Tp;

use crate::checks::DataEvent;

/// What the facts of `fault` depend on, read before it is applied: whether its topic exists.
pub(super) fn before(cluster: &Cluster, fault: &Fault) -> bool {
    match fault {
        Fault::DeleteTopic { topic } | Fault::CreateTopic { topic, .. } => {
            cluster.controller().read().topics.contains_key(topic)
        }
        _ => false,
    }
}

/// The facts of `fault`, read after it was applied; `existed` is [`before`]'s answer.
pub(super) fn after(cluster: &Cluster, fault: &Fault, existed: bool) -> Vec<DataEvent> {
    let state = cluster.controller().read();
    match fault {
        Fault::DeleteRecords {
            topic, partition, ..
        } => state
            .partition(topic, *partition)
            .map(|p| DataEvent::LogStart {
                tp: Tp::new(topic.clone(), *partition),
                offset: p.log.log_start_offset(),
            })
            .into_iter()
            .collect(),
        Fault::UncleanLeaderElection {
            topic, partition, ..
        } => state
            .partition(topic, *partition)
            .map(|p| DataEvent::Truncated {
                tp: Tp::new(topic.clone(), *partition),
                end_offset: p.log.log_end_offset(),
            })
            .into_iter()
            .collect(),
        Fault::DeleteTopic { topic } if existed && !state.topics.contains_key(topic) => {
            vec![DataEvent::TopicDeleted {
                topic: topic.clone(),
            }]
        }
        Fault::CreateTopic { topic, .. } if !existed && state.topics.contains_key(topic) => {
            vec![DataEvent::TopicCreated {
                topic: topic.clone(),
            }]
        }
        _ => Vec::new(),
    }
}
