//! The Kafka release a simulated broker runs: which APIs its ApiVersions lists, at which
//! versions, and so which versions it accepts.
//!
//! Brokers of one cluster differ during a rolling upgrade, so each broker has its own release
//! (`ClusterConfig::kafka_version`, `ClusterConfig::broker_versions`) and a restart may bring
//! it back on another ([`Fault::UpgradeBroker`](crate::fault::Fault::UpgradeBroker)).
//!
//! The tables come from Kafka itself. 4.1 and 4.4: the ApiVersions answers of real Kafka 4.1.1
//! and 4.4.0 brokers (`org.apache.kafka.tools.BrokerApiVersionsCommand`); 4.1's is also what
//! `kafka-protocol` 0.18 speaks, so 4.4's newer versions (ListOffsets v11, OffsetCommit and
//! OffsetFetch v10, DeleteGroups v3, ApiVersions v5) are listed but cut, and a 4.4 broker of the
//! simulator serves 4.1's versions. 3.9: `validVersions` of `clients/src/main/resources/common/message/*.json` at
//! the 3.9.0 tag, without ConsumerGroupHeartbeat and ConsumerGroupDescribe: 3.9 lists those
//! (KIP-848, early access there) only when `group.coordinator.rebalance.protocols` includes
//! `consumer`, and its default is `classic`. A range is cut to what `kafka-protocol` can
//! decode (the simulator cannot serve a version it cannot read): 3.9's lowest versions of
//! Produce, Fetch, ListOffsets, OffsetCommit and friends, which no current client sends, are
//! left out.

use std::fmt;
use std::str::FromStr;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Message, VersionRange};

/// A Kafka release whose ApiVersions table the simulator can serve.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KafkaVersion {
    /// Kafka 3.9: KRaft, classic groups only (KIP-848 not enabled by default).
    V3_9,
    /// Kafka 4.1 (4.1.1): KIP-848 generally available, the old versions KIP-896 removed gone.
    #[default]
    V4_1,
    /// Kafka 4.4 (4.4.0): consumer groups start at epoch 1 (KAFKA-20268) and compute target
    /// assignments at most every `group.consumer.assignment.interval.ms`.
    V4_4,
}

/// `(api, 3.9's validVersions)`, before the cut to what `kafka-protocol` decodes.
const KAFKA_3_9: [(ApiKey, VersionRange); 28] = [
    (ApiKey::Produce, range(0, 11)),
    (ApiKey::Fetch, range(0, 17)),
    (ApiKey::ListOffsets, range(0, 9)),
    (ApiKey::Metadata, range(0, 12)),
    (ApiKey::OffsetCommit, range(0, 9)),
    (ApiKey::OffsetFetch, range(0, 9)),
    (ApiKey::FindCoordinator, range(0, 6)),
    (ApiKey::JoinGroup, range(0, 9)),
    (ApiKey::Heartbeat, range(0, 4)),
    (ApiKey::LeaveGroup, range(0, 5)),
    (ApiKey::SyncGroup, range(0, 5)),
    (ApiKey::DescribeGroups, range(0, 5)),
    (ApiKey::ListGroups, range(0, 5)),
    (ApiKey::ApiVersions, range(0, 4)),
    (ApiKey::CreateTopics, range(0, 7)),
    (ApiKey::DeleteTopics, range(0, 6)),
    (ApiKey::InitProducerId, range(0, 5)),
    (ApiKey::OffsetForLeaderEpoch, range(0, 4)),
    (ApiKey::CreatePartitions, range(0, 3)),
    (ApiKey::DeleteGroups, range(0, 2)),
    (ApiKey::SaslHandshake, range(0, 1)),
    (ApiKey::SaslAuthenticate, range(0, 2)),
    (ApiKey::DeleteRecords, range(0, 2)),
    (ApiKey::DescribeConfigs, range(0, 4)),
    (ApiKey::AlterConfigs, range(0, 2)),
    (ApiKey::IncrementalAlterConfigs, range(0, 1)),
    (ApiKey::OffsetDelete, range(0, 0)),
    (ApiKey::DescribeCluster, range(0, 1)),
];

/// `(api, 4.1.1's ApiVersions range)`.
const KAFKA_4_1: [(ApiKey, VersionRange); 30] = [
    (ApiKey::Produce, range(0, 13)),
    (ApiKey::Fetch, range(4, 18)),
    (ApiKey::ListOffsets, range(1, 10)),
    (ApiKey::Metadata, range(0, 13)),
    (ApiKey::OffsetCommit, range(2, 9)),
    (ApiKey::OffsetFetch, range(1, 9)),
    (ApiKey::FindCoordinator, range(0, 6)),
    (ApiKey::JoinGroup, range(0, 9)),
    (ApiKey::Heartbeat, range(0, 4)),
    (ApiKey::LeaveGroup, range(0, 5)),
    (ApiKey::SyncGroup, range(0, 5)),
    (ApiKey::DescribeGroups, range(0, 6)),
    (ApiKey::ListGroups, range(0, 5)),
    (ApiKey::ApiVersions, range(0, 4)),
    (ApiKey::CreateTopics, range(2, 7)),
    (ApiKey::DeleteTopics, range(1, 6)),
    (ApiKey::InitProducerId, range(0, 5)),
    (ApiKey::OffsetForLeaderEpoch, range(2, 4)),
    (ApiKey::CreatePartitions, range(0, 3)),
    (ApiKey::DeleteGroups, range(0, 2)),
    (ApiKey::ConsumerGroupHeartbeat, range(0, 1)),
    (ApiKey::ConsumerGroupDescribe, range(0, 1)),
    (ApiKey::SaslHandshake, range(0, 1)),
    (ApiKey::SaslAuthenticate, range(0, 2)),
    (ApiKey::DeleteRecords, range(0, 2)),
    (ApiKey::DescribeConfigs, range(1, 4)),
    (ApiKey::AlterConfigs, range(0, 2)),
    (ApiKey::IncrementalAlterConfigs, range(0, 1)),
    (ApiKey::OffsetDelete, range(0, 0)),
    (ApiKey::DescribeCluster, range(0, 2)),
];

/// `(api, 4.4.0's ApiVersions range)`: 4.1.1's, with newer ListOffsets, OffsetCommit,
/// OffsetFetch, DeleteGroups and ApiVersions.
const KAFKA_4_4: [(ApiKey, VersionRange); 30] = with_maxima(
    KAFKA_4_1,
    &[
        (ApiKey::ListOffsets, 11),
        (ApiKey::OffsetCommit, 10),
        (ApiKey::OffsetFetch, 10),
        (ApiKey::DeleteGroups, 3),
        (ApiKey::ApiVersions, 5),
    ],
);

/// `table` with the newest version of each API in `maxima` raised to the one given there.
const fn with_maxima<const N: usize>(
    mut table: [(ApiKey, VersionRange); N],
    maxima: &[(ApiKey, i16)],
) -> [(ApiKey, VersionRange); N] {
    let mut i = 0;
    while i < N {
        let mut j = 0;
        while j < maxima.len() {
            if table[i].0 as i16 == maxima[j].0 as i16 {
                table[i].1.max = maxima[j].1;
            }
            j += 1;
        }
        i += 1;
    }
    table
}

const fn range(min: i16, max: i16) -> VersionRange {
    VersionRange { min, max }
}

/// The versions of `api` `kafka-protocol` can decode and encode: the simulator serves no
/// version outside them, whatever the release lists.
pub fn decodable(api: ApiKey) -> Option<VersionRange> {
    Some(match api {
        ApiKey::Produce => ProduceRequest::VERSIONS,
        ApiKey::Fetch => FetchRequest::VERSIONS,
        ApiKey::ListOffsets => ListOffsetsRequest::VERSIONS,
        ApiKey::Metadata => MetadataRequest::VERSIONS,
        ApiKey::OffsetCommit => OffsetCommitRequest::VERSIONS,
        ApiKey::OffsetFetch => OffsetFetchRequest::VERSIONS,
        ApiKey::FindCoordinator => FindCoordinatorRequest::VERSIONS,
        ApiKey::JoinGroup => JoinGroupRequest::VERSIONS,
        ApiKey::Heartbeat => HeartbeatRequest::VERSIONS,
        ApiKey::LeaveGroup => LeaveGroupRequest::VERSIONS,
        ApiKey::SyncGroup => SyncGroupRequest::VERSIONS,
        ApiKey::DescribeGroups => DescribeGroupsRequest::VERSIONS,
        ApiKey::ListGroups => ListGroupsRequest::VERSIONS,
        ApiKey::ApiVersions => ApiVersionsRequest::VERSIONS,
        ApiKey::CreateTopics => CreateTopicsRequest::VERSIONS,
        ApiKey::DeleteTopics => DeleteTopicsRequest::VERSIONS,
        ApiKey::InitProducerId => InitProducerIdRequest::VERSIONS,
        ApiKey::OffsetForLeaderEpoch => OffsetForLeaderEpochRequest::VERSIONS,
        ApiKey::CreatePartitions => CreatePartitionsRequest::VERSIONS,
        ApiKey::DeleteGroups => DeleteGroupsRequest::VERSIONS,
        ApiKey::ConsumerGroupHeartbeat => ConsumerGroupHeartbeatRequest::VERSIONS,
        ApiKey::ConsumerGroupDescribe => ConsumerGroupDescribeRequest::VERSIONS,
        ApiKey::SaslHandshake => SaslHandshakeRequest::VERSIONS,
        ApiKey::SaslAuthenticate => SaslAuthenticateRequest::VERSIONS,
        ApiKey::DeleteRecords => DeleteRecordsRequest::VERSIONS,
        ApiKey::DescribeConfigs => DescribeConfigsRequest::VERSIONS,
        ApiKey::AlterConfigs => AlterConfigsRequest::VERSIONS,
        ApiKey::IncrementalAlterConfigs => IncrementalAlterConfigsRequest::VERSIONS,
        ApiKey::OffsetDelete => OffsetDeleteRequest::VERSIONS,
        ApiKey::DescribeCluster => DescribeClusterRequest::VERSIONS,
        _ => return None,
    })
}

impl KafkaVersion {
    /// Every release the simulator models, oldest first.
    pub const ALL: [KafkaVersion; 3] = [KafkaVersion::V3_9, KafkaVersion::V4_1, KafkaVersion::V4_4];

    /// The newest release modelled.
    pub const NEWEST: KafkaVersion = KafkaVersion::V4_4;

    fn table(self) -> &'static [(ApiKey, VersionRange)] {
        match self {
            KafkaVersion::V3_9 => &KAFKA_3_9,
            KafkaVersion::V4_1 => &KAFKA_4_1,
            KafkaVersion::V4_4 => &KAFKA_4_4,
        }
    }

    /// The release whose ApiVersions table a real broker lists, given `listed` (the broker's
    /// range of an API, `None` when it lists none): every API of the release's table at exactly
    /// its range. `None` when no modelled release matches. The differential tests use it to run
    /// the simulator as the release they compare it with.
    pub fn identify(listed: impl Fn(ApiKey) -> Option<VersionRange>) -> Option<KafkaVersion> {
        Self::ALL.into_iter().find(|version| {
            version
                .table()
                .iter()
                .all(|(api, range)| listed(*api) == Some(*range))
        })
    }

    /// Whether a new consumer group starts at group epoch 1 with an empty target assignment at
    /// epoch 1, so that the first computed assignment is epoch 2 (Kafka 4.4's
    /// `ModernGroup` constructor, KAFKA-20268: a member joining before an offloaded first
    /// assignment needs an epoch above 0 and below the group's). Before 4.4 groups start at 0.
    pub fn consumer_groups_start_at_epoch_one(self) -> bool {
        self >= KafkaVersion::V4_4
    }

    /// Whether an OffsetCommit at a member epoch older than the member's is judged partition
    /// by partition against the epoch each was assigned at (KIP-1251, Kafka 4.4's
    /// `createAssignmentEpochValidator`) instead of refused with STALE_MEMBER_EPOCH.
    pub fn fences_commits_by_assignment_epoch(self) -> bool {
        self >= KafkaVersion::V4_4
    }

    /// Whether ConsumerGroupDescribe's member assignment includes the partitions pending
    /// revocation (Kafka 4.4's `asConsumerGroupDescribeMember`); before 4.4 only the assigned.
    pub fn describes_partitions_pending_revocation(self) -> bool {
        self >= KafkaVersion::V4_4
    }

    /// Whether the coordinator honours `group.consumer.assignment.interval.ms` (Kafka 4.4's
    /// `GroupMetadataManager.canComputeNextTargetAssignment`); earlier releases recompute the
    /// target assignment on every heartbeat that finds the group epoch ahead of it.
    pub fn batches_consumer_group_assignments(self) -> bool {
        self >= KafkaVersion::V4_4
    }

    /// The versions of `api` a broker of this release serves: its listed range cut to what
    /// the simulator can decode; `None` when this release does not list the API.
    pub fn api_range(self, api: ApiKey) -> Option<VersionRange> {
        let (_, listed) = self.table().iter().find(|(key, _)| *key == api)?;
        let served = listed.intersect(&decodable(api)?);
        (!served.is_empty()).then_some(served)
    }

    /// Every API this release serves, with its range, in API key order.
    pub fn apis(self) -> Vec<(ApiKey, VersionRange)> {
        let mut apis: Vec<(ApiKey, VersionRange)> = self
            .table()
            .iter()
            .filter_map(|(key, _)| Some((*key, self.api_range(*key)?)))
            .collect();
        apis.sort_by_key(|(key, _)| *key as i16);
        apis
    }
}

impl fmt::Display for KafkaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KafkaVersion::V3_9 => "3.9",
            KafkaVersion::V4_1 => "4.1",
            KafkaVersion::V4_4 => "4.4",
        })
    }
}

/// A Kafka release the simulator has no table for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKafkaVersion(pub String);

impl fmt::Display for UnknownKafkaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown Kafka version `{}`: the simulator models 3.9, 4.1 and 4.4",
            self.0
        )
    }
}

impl std::error::Error for UnknownKafkaVersion {}

impl FromStr for KafkaVersion {
    type Err = UnknownKafkaVersion;

    /// `3.9`, `4.1`, `4.4`, or a patch release of them (`3.9.1`, `4.1.1`, `4.4.0`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let minor: Vec<&str> = s.split('.').take(2).collect();
        match minor.as_slice() {
            ["3", "9"] => Ok(KafkaVersion::V3_9),
            ["4", "1"] => Ok(KafkaVersion::V4_1),
            ["4", "4"] => Ok(KafkaVersion::V4_4),
            _ => Err(UnknownKafkaVersion(s.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_3_9_has_no_kip_848_heartbeat_and_older_maxima() {
        let old = KafkaVersion::V3_9;
        assert_eq!(old.api_range(ApiKey::ConsumerGroupHeartbeat), None);
        assert_eq!(old.api_range(ApiKey::ConsumerGroupDescribe), None);
        assert_eq!(old.api_range(ApiKey::Fetch), Some(range(4, 17)));
        assert_eq!(old.api_range(ApiKey::ListOffsets), Some(range(1, 9)));
        assert_eq!(old.api_range(ApiKey::Metadata), Some(range(0, 12)));
        assert_eq!(old.api_range(ApiKey::Produce), Some(range(3, 11)));
        let new = KafkaVersion::V4_1;
        assert_eq!(
            new.api_range(ApiKey::ConsumerGroupHeartbeat),
            Some(range(0, 1))
        );
        assert_eq!(new.api_range(ApiKey::Fetch), Some(range(4, 18)));
        assert_eq!(new.api_range(ApiKey::Produce), Some(range(3, 13)));
        assert_eq!(new.apis().len(), 30);
        assert_eq!(old.apis().len(), 28);
        assert_eq!(old.api_range(ApiKey::DescribeConfigs), Some(range(1, 4)));
        assert_eq!(old.api_range(ApiKey::DescribeCluster), Some(range(0, 1)));
        assert_eq!(new.api_range(ApiKey::DescribeCluster), Some(range(0, 2)));
    }

    #[test]
    fn the_4_1_table_is_what_kafka_protocol_speaks() {
        for (api, listed) in KAFKA_4_1 {
            let ours = decodable(api).unwrap();
            assert_eq!(listed.max, ours.max, "{api:?}");
        }
    }

    #[test]
    fn kafka_4_4_serves_what_kafka_protocol_decodes_of_its_newer_versions() {
        let v44 = KafkaVersion::V4_4;
        assert_eq!(v44.api_range(ApiKey::ListOffsets), Some(range(1, 10)));
        assert_eq!(v44.api_range(ApiKey::OffsetCommit), Some(range(2, 9)));
        assert_eq!(v44.api_range(ApiKey::ApiVersions), Some(range(0, 4)));
        assert_eq!(v44.apis(), KafkaVersion::V4_1.apis());
    }

    #[test]
    fn a_broker_is_identified_by_its_exact_table() {
        for version in KafkaVersion::ALL {
            let listed = |api| {
                version
                    .table()
                    .iter()
                    .find(|(key, _)| *key == api)
                    .map(|(_, r)| *r)
            };
            assert_eq!(KafkaVersion::identify(listed), Some(version));
        }
        // A 4.4 table with one range off (a release the simulator does not model).
        let other = |api| match api {
            ApiKey::ListOffsets => Some(range(1, 12)),
            _ => KAFKA_4_4
                .iter()
                .find(|(key, _)| *key == api)
                .map(|(_, r)| *r),
        };
        assert_eq!(KafkaVersion::identify(other), None);
    }

    #[test]
    fn versions_parse_and_print() {
        for v in KafkaVersion::ALL {
            assert_eq!(v.to_string().parse::<KafkaVersion>(), Ok(v));
        }
        assert_eq!("4.1.1".parse(), Ok(KafkaVersion::V4_1));
        assert_eq!("3.9.0".parse(), Ok(KafkaVersion::V3_9));
        assert_eq!("4.4.0".parse(), Ok(KafkaVersion::V4_4));
        let err = "4.2.0".parse::<KafkaVersion>().unwrap_err();
        assert!(err.to_string().contains("4.2.0"), "{err}");
        assert!("x".parse::<KafkaVersion>().is_err());
    }
}
