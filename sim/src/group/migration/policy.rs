//! `group.consumer.migration.policy` (Kafka's `ConsumerGroupMigrationPolicy`): whether a
//! non-empty group may change protocol online.

use std::fmt;
use std::str::FromStr;

/// Which online conversions between classic and consumer groups the coordinator allows. Kafka
/// 4.1 defaults to [`Self::Bidirectional`] (`GroupCoordinatorConfig.CONSUMER_GROUP_MIGRATION_POLICY_DEFAULT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConsumerGroupMigrationPolicy {
    /// No conversion of non-empty groups.
    Disabled,
    /// Classic → consumer only (a ConsumerGroupHeartbeat joining a classic group).
    Upgrade,
    /// Consumer → classic only (the last consumer-protocol member leaving).
    Downgrade,
    /// Both directions.
    #[default]
    Bidirectional,
}

impl ConsumerGroupMigrationPolicy {
    /// `isUpgradeEnabled`.
    pub fn is_upgrade_enabled(self) -> bool {
        matches!(self, Self::Upgrade | Self::Bidirectional)
    }

    /// `isDowngradeEnabled`.
    pub fn is_downgrade_enabled(self) -> bool {
        matches!(self, Self::Downgrade | Self::Bidirectional)
    }
}

impl fmt::Display for ConsumerGroupMigrationPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Disabled => "disabled",
            Self::Upgrade => "upgrade",
            Self::Downgrade => "downgrade",
            Self::Bidirectional => "bidirectional",
        })
    }
}

/// The broker config value is matched case-insensitively (`CaseInsensitiveValidString`).
impl FromStr for ConsumerGroupMigrationPolicy {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "disabled" => Ok(Self::Disabled),
            "upgrade" => Ok(Self::Upgrade),
            "downgrade" => Ok(Self::Downgrade),
            "bidirectional" => Ok(Self::Bidirectional),
            _ => Err(format!(
                "Invalid value {value} for configuration group.consumer.migration.policy"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ConsumerGroupMigrationPolicy as Policy;

    #[test]
    fn directions_and_parsing_follow_kafka() {
        assert_eq!(Policy::default(), Policy::Bidirectional);
        let table = [
            ("DISABLED", false, false),
            ("upgrade", true, false),
            ("Downgrade", false, true),
            ("bidirectional", true, true),
        ];
        for (name, up, down) in table {
            let policy: Policy = name.parse().unwrap();
            assert_eq!(
                (policy.is_upgrade_enabled(), policy.is_downgrade_enabled()),
                (up, down),
                "{name}"
            );
            assert_eq!(policy.to_string(), name.to_ascii_lowercase());
        }
        assert!("sideways".parse::<Policy>().is_err());
    }
}
