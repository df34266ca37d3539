//! Kafka 4.1.1's topic configs (`LogConfig.nonInternalConfigNames`) with their types, validators,
//! defaults and the broker configs that stand behind them.
//!
//! The data was read off Kafka 4.1.1 itself: names, types and validators from
//! `LogConfig.configKeys()`, defaults and synonyms from a real broker's DescribeConfigs answer
//! (`kafka-configs.sh --describe --all`) for a topic without overrides. A synonym is listed only
//! where Kafka lists one: `ConfigHelper.configSynonyms` drops the broker synonyms before the
//! first one named like the topic config's broker config, so `retention.ms` (whose
//! `log.retention.ms` has no default; only `log.retention.hours` has) shows none.

use super::{Check, ConfigSource, ConfigType, TopicConfigDef};

use ConfigSource::{DefaultConfig, DynamicDefaultBrokerConfig};
use ConfigType::{Boolean, Double, Int, List, Long, String as Str};

const LONG_MAX: &str = "9223372036854775807";

const fn def(
    name: &'static str,
    kind: ConfigType,
    default: &'static str,
    check: Check,
    synonyms: &'static [(&'static str, &'static str, ConfigSource)],
) -> TopicConfigDef {
    TopicConfigDef {
        name,
        kind,
        default,
        check,
        synonyms,
    }
}

/// Every topic config, sorted by name.
pub(crate) const TOPIC_CONFIGS: [TopicConfigDef; 33] = [
    def(
        "cleanup.policy",
        List,
        "delete",
        Check::EachOneOf(&["compact", "delete"]),
        &[("log.cleanup.policy", "delete", DefaultConfig)],
    ),
    def(
        "compression.gzip.level",
        Int,
        "-1",
        Check::GzipLevel,
        &[("compression.gzip.level", "-1", DefaultConfig)],
    ),
    def(
        "compression.lz4.level",
        Int,
        "9",
        Check::Between(1, 17),
        &[("compression.lz4.level", "9", DefaultConfig)],
    ),
    def(
        "compression.type",
        Str,
        "producer",
        Check::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
        &[("compression.type", "producer", DefaultConfig)],
    ),
    def(
        "compression.zstd.level",
        Int,
        "3",
        Check::Between(-131_072, 22),
        &[("compression.zstd.level", "3", DefaultConfig)],
    ),
    def(
        "delete.retention.ms",
        Long,
        "86400000",
        Check::AtLeast(0),
        &[("log.cleaner.delete.retention.ms", "86400000", DefaultConfig)],
    ),
    def(
        "file.delete.delay.ms",
        Long,
        "60000",
        Check::AtLeast(0),
        &[("log.segment.delete.delay.ms", "60000", DefaultConfig)],
    ),
    def(
        "flush.messages",
        Long,
        LONG_MAX,
        Check::AtLeast(1),
        &[("log.flush.interval.messages", LONG_MAX, DefaultConfig)],
    ),
    def("flush.ms", Long, LONG_MAX, Check::AtLeast(0), &[]),
    def(
        "follower.replication.throttled.replicas",
        List,
        "",
        Check::ThrottledReplicas,
        &[],
    ),
    def(
        "index.interval.bytes",
        Int,
        "4096",
        Check::AtLeast(0),
        &[("log.index.interval.bytes", "4096", DefaultConfig)],
    ),
    def(
        "leader.replication.throttled.replicas",
        List,
        "",
        Check::ThrottledReplicas,
        &[],
    ),
    def(
        "local.retention.bytes",
        Long,
        "-2",
        Check::AtLeast(-2),
        &[("log.local.retention.bytes", "-2", DefaultConfig)],
    ),
    def(
        "local.retention.ms",
        Long,
        "-2",
        Check::AtLeast(-2),
        &[("log.local.retention.ms", "-2", DefaultConfig)],
    ),
    def(
        "max.compaction.lag.ms",
        Long,
        LONG_MAX,
        Check::AtLeast(1),
        &[("log.cleaner.max.compaction.lag.ms", LONG_MAX, DefaultConfig)],
    ),
    def(
        "max.message.bytes",
        Int,
        "1048588",
        Check::AtLeast(0),
        &[("message.max.bytes", "1048588", DefaultConfig)],
    ),
    def(
        "message.timestamp.after.max.ms",
        Long,
        "3600000",
        Check::AtLeast(0),
        &[(
            "log.message.timestamp.after.max.ms",
            "3600000",
            DefaultConfig,
        )],
    ),
    def(
        "message.timestamp.before.max.ms",
        Long,
        LONG_MAX,
        Check::AtLeast(0),
        &[(
            "log.message.timestamp.before.max.ms",
            LONG_MAX,
            DefaultConfig,
        )],
    ),
    def(
        "message.timestamp.type",
        Str,
        "CreateTime",
        Check::OneOf(&["CreateTime", "LogAppendTime"]),
        &[("log.message.timestamp.type", "CreateTime", DefaultConfig)],
    ),
    def(
        "min.cleanable.dirty.ratio",
        Double,
        "0.5",
        Check::Ratio,
        &[("log.cleaner.min.cleanable.ratio", "0.5", DefaultConfig)],
    ),
    def(
        "min.compaction.lag.ms",
        Long,
        "0",
        Check::AtLeast(0),
        &[("log.cleaner.min.compaction.lag.ms", "0", DefaultConfig)],
    ),
    // A KRaft cluster formatted by Kafka 4.x holds a cluster-level `min.insync.replicas=1`, so
    // this one comes from the dynamic cluster default.
    def(
        "min.insync.replicas",
        Int,
        "1",
        Check::AtLeast(1),
        &[
            ("min.insync.replicas", "1", DynamicDefaultBrokerConfig),
            ("min.insync.replicas", "1", DefaultConfig),
        ],
    ),
    def(
        "preallocate",
        Boolean,
        "false",
        Check::None,
        &[("log.preallocate", "false", DefaultConfig)],
    ),
    def(
        "remote.log.copy.disable",
        Boolean,
        "false",
        Check::None,
        &[],
    ),
    def(
        "remote.log.delete.on.disable",
        Boolean,
        "false",
        Check::None,
        &[],
    ),
    def("remote.storage.enable", Boolean, "false", Check::None, &[]),
    def(
        "retention.bytes",
        Long,
        "-1",
        Check::None,
        &[("log.retention.bytes", "-1", DefaultConfig)],
    ),
    def("retention.ms", Long, "604800000", Check::AtLeast(-1), &[]),
    def(
        "segment.bytes",
        Int,
        "1073741824",
        Check::AtLeast(1_048_576),
        &[("log.segment.bytes", "1073741824", DefaultConfig)],
    ),
    def(
        "segment.index.bytes",
        Int,
        "10485760",
        Check::AtLeast(4),
        &[("log.index.size.max.bytes", "10485760", DefaultConfig)],
    ),
    def("segment.jitter.ms", Long, "0", Check::AtLeast(0), &[]),
    def("segment.ms", Long, "604800000", Check::AtLeast(1), &[]),
    def(
        "unclean.leader.election.enable",
        Boolean,
        "false",
        Check::None,
        &[("unclean.leader.election.enable", "false", DefaultConfig)],
    ),
];

/// Broker configs a broker describes besides the ones the cluster settings give
/// (`describe_configs::broker_entries`): the broker side of every topic config above, with
/// Kafka 4.1.1's default, source and read-only flag (`None`: no default, described as null).
pub(crate) const BROKER_LOG_CONFIGS: [(&str, ConfigType, Option<&str>, bool); 31] = [
    ("compression.gzip.level", Int, Some("-1"), false),
    ("compression.lz4.level", Int, Some("9"), false),
    ("compression.type", Str, Some("producer"), false),
    ("compression.zstd.level", Int, Some("3"), false),
    (
        "log.cleaner.delete.retention.ms",
        Long,
        Some("86400000"),
        false,
    ),
    (
        "log.cleaner.max.compaction.lag.ms",
        Long,
        Some(LONG_MAX),
        false,
    ),
    (
        "log.cleaner.min.cleanable.ratio",
        Double,
        Some("0.5"),
        false,
    ),
    ("log.cleaner.min.compaction.lag.ms", Long, Some("0"), false),
    ("log.cleanup.policy", List, Some("delete"), false),
    ("log.flush.interval.messages", Long, Some(LONG_MAX), false),
    ("log.flush.interval.ms", Long, None, false),
    (
        "log.flush.scheduler.interval.ms",
        Long,
        Some(LONG_MAX),
        true,
    ),
    ("log.index.interval.bytes", Int, Some("4096"), false),
    ("log.index.size.max.bytes", Int, Some("10485760"), false),
    ("log.local.retention.bytes", Long, Some("-2"), false),
    ("log.local.retention.ms", Long, Some("-2"), false),
    (
        "log.message.timestamp.after.max.ms",
        Long,
        Some("3600000"),
        false,
    ),
    (
        "log.message.timestamp.before.max.ms",
        Long,
        Some(LONG_MAX),
        false,
    ),
    ("log.message.timestamp.type", Str, Some("CreateTime"), false),
    ("log.preallocate", Boolean, Some("false"), false),
    ("log.retention.bytes", Long, Some("-1"), false),
    ("log.retention.hours", Int, Some("168"), true),
    ("log.retention.minutes", Int, None, true),
    ("log.retention.ms", Long, None, false),
    ("log.roll.hours", Int, Some("168"), true),
    ("log.roll.jitter.hours", Int, Some("0"), true),
    ("log.roll.jitter.ms", Long, None, false),
    ("log.roll.ms", Long, None, false),
    ("log.segment.bytes", Int, Some("1073741824"), false),
    ("log.segment.delete.delay.ms", Long, Some("60000"), false),
    (
        "unclean.leader.election.enable",
        Boolean,
        Some("false"),
        false,
    ),
];
