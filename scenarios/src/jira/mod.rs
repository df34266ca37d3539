//! Scenarios replaying Jira issues of the Kafka consumer, one file per issue or family
//! (`/work/shared/reference/jira-catalog.md`).

pub mod kafka_10134;
pub mod kafka_10337;
pub mod kafka_10793;
pub mod kafka_13310;
pub mod kafka_13563;
pub mod kafka_13840;
pub mod kafka_14024;
pub mod kafka_14196;
pub mod kafka_14639;
pub mod kafka_14729;
pub mod kafka_16033;
pub mod kafka_16103;
pub mod kafka_16165;
pub mod kafka_16243;
pub mod kafka_16375;
pub mod kafka_17293;
pub mod kafka_18160;
pub mod kafka_18641;
pub mod kafka_19357;
pub mod kafka_20426;
pub mod kafka_2942;
pub mod kafka_4160;
pub mod kafka_6362;
pub mod kafka_8104;
