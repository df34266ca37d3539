//! The scenario library: each scenario is a cluster, subjects, producers, a fault plan and the
//! checkers it asserts ([`scenario::Scenario`]). Subjects are driven through
//! [`subject::Subject`]: the legacy model of Kafka 3.1's classic consumer ([`legacy`]) and our
//! consumer ([`consumer_subject`]). The runner ([`runner`]) exists in simulation mode only.

pub mod app;
pub mod checks;
pub mod consumer_subject;
pub mod explore_report;
pub mod families;
pub mod golden;
pub mod jira;
pub mod legacy;
pub mod own;
pub mod regression;
#[cfg(madsim)]
pub mod runner;
pub mod sabotage;
pub mod scenario;
pub mod subject;
pub mod timeline;
pub mod trace_events;

use scenario::Scenario;

/// One registered scenario, as the CLI lists it.
#[derive(Debug, Clone, Copy)]
pub struct ScenarioInfo {
    /// The name used on the command line, e.g. `kafka-13563`.
    pub name: &'static str,
    /// Builds the scenario.
    pub build: fn() -> Scenario,
}

/// Every scenario the library knows, in CLI order.
pub fn registry() -> &'static [ScenarioInfo] {
    &[
        ScenarioInfo {
            name: jira::kafka_13563::NAME,
            build: jira::kafka_13563::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_13840::NAME,
            build: jira::kafka_13840::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_13310::NAME,
            build: jira::kafka_13310::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_10337::NAME,
            build: jira::kafka_10337::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_10134::NAME,
            build: jira::kafka_10134::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_14024::NAME,
            build: jira::kafka_14024::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_14196::NAME,
            build: jira::kafka_14196::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_14729::NAME,
            build: jira::kafka_14729::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_4160::NAME,
            build: jira::kafka_4160::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_17293::NAME,
            build: jira::kafka_17293::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_19357::NAME,
            build: jira::kafka_19357::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_20426::NAME,
            build: jira::kafka_20426::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_16243::NAME,
            build: jira::kafka_16243::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_16103::NAME,
            build: jira::kafka_16103::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_18641::NAME,
            build: jira::kafka_18641::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_18160::NAME,
            build: jira::kafka_18160::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_16375::NAME,
            build: jira::kafka_16375::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_16165::NAME,
            build: jira::kafka_16165::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_16033::NAME,
            build: jira::kafka_16033::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_6362::NAME,
            build: jira::kafka_6362::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_2942::NAME,
            build: jira::kafka_2942::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_8104::NAME,
            build: jira::kafka_8104::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_10793::NAME,
            build: jira::kafka_10793::scenario,
        },
        ScenarioInfo {
            name: jira::kafka_14639::NAME,
            build: jira::kafka_14639::scenario,
        },
        ScenarioInfo {
            name: families::rebalance_storm::NAME,
            build: families::rebalance_storm::scenario,
        },
        ScenarioInfo {
            name: families::coordinator_failover::NAME,
            build: families::coordinator_failover::scenario,
        },
        ScenarioInfo {
            name: families::network_partition::NAME,
            build: families::network_partition::scenario,
        },
        ScenarioInfo {
            name: families::rolling_restart::NAME,
            build: families::rolling_restart::scenario,
        },
        ScenarioInfo {
            name: families::zombie::NAME,
            build: families::zombie::scenario,
        },
        ScenarioInfo {
            name: families::lost_commits::NAME,
            build: families::lost_commits::scenario,
        },
        ScenarioInfo {
            name: families::static_members::NAME,
            build: families::static_members::scenario,
        },
        ScenarioInfo {
            name: families::close_outage::NAME,
            build: families::close_outage::scenario,
        },
        ScenarioInfo {
            name: families::mixed_protocols::NAME,
            build: families::mixed_protocols::scenario,
        },
        ScenarioInfo {
            name: families::pattern_topics::NAME,
            build: families::pattern_topics::scenario,
        },
        ScenarioInfo {
            name: families::invalid_topic::NAME,
            build: families::invalid_topic::scenario,
        },
        ScenarioInfo {
            name: families::data_path_late_topic::NAME,
            build: families::data_path_late_topic::scenario,
        },
        ScenarioInfo {
            name: own::seek_reset::NAME,
            build: own::seek_reset::scenario,
        },
        ScenarioInfo {
            name: own::committed_after_move::NAME,
            build: own::committed_after_move::scenario,
        },
        ScenarioInfo {
            name: families::request_storm::NAME,
            build: families::request_storm::scenario,
        },
        ScenarioInfo {
            name: families::rolling_upgrade::NAME,
            build: families::rolling_upgrade::scenario,
        },
        ScenarioInfo {
            name: families::auth::NAME,
            build: families::auth::scenario,
        },
        ScenarioInfo {
            name: families::data_path_delete_records::NAME,
            build: families::data_path_delete_records::scenario,
        },
        ScenarioInfo {
            name: families::data_path_recreate::NAME,
            build: families::data_path_recreate::scenario,
        },
        ScenarioInfo {
            name: families::data_path_pause_seek::NAME,
            build: families::data_path_pause_seek::scenario,
        },
        ScenarioInfo {
            name: families::data_path_large_records::NAME,
            build: families::data_path_large_records::scenario,
        },
        ScenarioInfo {
            name: families::data_path_leader_churn::NAME,
            build: families::data_path_leader_churn::scenario,
        },
        ScenarioInfo {
            name: families::data_path_unclean_election::NAME,
            build: families::data_path_unclean_election::scenario,
        },
        ScenarioInfo {
            name: families::data_path_transactions::NAME,
            build: families::data_path_transactions::scenario,
        },
        ScenarioInfo {
            name: families::data_path_compacted::NAME,
            build: families::data_path_compacted::scenario,
        },
        ScenarioInfo {
            name: own::stall_regain::NAME,
            build: own::stall_regain::scenario,
        },
    ]
}

/// The scenario registered as `name`.
pub fn find(name: &str) -> Option<&'static ScenarioInfo> {
    registry().iter().find(|s| s.name == name)
}
