//! Scenarios replaying Jira issues of the Kafka consumer, one file per issue or family
//! (`/work/shared/reference/jira-catalog.md`).

pub mod kafka_10134;
pub mod kafka_10337;
pub mod kafka_13310;
pub mod kafka_13563;
pub mod kafka_13840;
pub mod kafka_14024;
pub mod kafka_14196;
pub mod kafka_14729;
pub mod kafka_4160;
