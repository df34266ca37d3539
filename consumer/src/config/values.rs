//! Typed values of the enumerated and structured keys, parsed with Java's exact rules
//! (case sensitivity included: only `group.protocol` and `metadata.recovery.strategy` are
//! case-insensitive among these, because Java validates them with `CaseInsensitiveValidString`
//! and the others with `ValidString`).

use std::fmt;
use std::time::Duration;

/// `group.protocol`: how the consumer takes part in its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum GroupProtocol {
    /// JoinGroup/SyncGroup with client-side assignment.
    #[default]
    Classic,
    /// KIP-848: ConsumerGroupHeartbeat with server-side assignment.
    Consumer,
}

impl GroupProtocol {
    /// Parses case-insensitively, as Java's `CaseInsensitiveValidString` does.
    pub fn parse(text: &str) -> Option<Self> {
        if text.eq_ignore_ascii_case("classic") {
            Some(Self::Classic)
        } else if text.eq_ignore_ascii_case("consumer") {
            Some(Self::Consumer)
        } else {
            None
        }
    }

    /// The configuration value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Classic => "classic",
            Self::Consumer => "consumer",
        }
    }

    /// The Java enum constant name, used in Java's error messages.
    pub fn java_name(self) -> &'static str {
        match self {
            Self::Classic => "CLASSIC",
            Self::Consumer => "CONSUMER",
        }
    }
}

/// `metadata.recovery.strategy` (KIP-899): what the client does once it cannot reach any broker
/// it knows from Metadata, or gets no metadata for `metadata.recovery.rebootstrap.trigger.ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MetadataRecoveryStrategy {
    /// Keep trying the brokers it knows.
    None,
    /// Forget them and start over from `bootstrap.servers` (Java's default since Kafka 4.0).
    #[default]
    Rebootstrap,
}

impl MetadataRecoveryStrategy {
    /// Parses case-insensitively, as Java's `CaseInsensitiveValidString` does.
    pub fn parse(text: &str) -> Option<Self> {
        if text.eq_ignore_ascii_case("none") {
            Some(Self::None)
        } else if text.eq_ignore_ascii_case("rebootstrap") {
            Some(Self::Rebootstrap)
        } else {
            None
        }
    }

    /// The configuration value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Rebootstrap => "rebootstrap",
        }
    }
}

/// `isolation.level`: which transactional records a fetch returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IsolationLevel {
    /// Everything, aborted and open transactions included.
    #[default]
    ReadUncommitted,
    /// Only committed records, up to the last stable offset.
    ReadCommitted,
}

impl IsolationLevel {
    /// Parses exactly (Java's `ValidString` is case-sensitive).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "read_uncommitted" => Some(Self::ReadUncommitted),
            "read_committed" => Some(Self::ReadCommitted),
            _ => None,
        }
    }

    /// The configuration value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadUncommitted => "read_uncommitted",
            Self::ReadCommitted => "read_committed",
        }
    }

    /// The wire value in Fetch and ListOffsets.
    pub(crate) fn wire(self) -> i8 {
        match self {
            Self::ReadUncommitted => 0,
            Self::ReadCommitted => 1,
        }
    }
}

/// `auto.offset.reset`: where to start without a valid committed offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AutoOffsetReset {
    /// The log start offset.
    Earliest,
    /// The log end offset.
    #[default]
    Latest,
    /// Fail with an error the application must handle.
    None,
    /// The first offset whose timestamp is at least this long before now (KIP-1106).
    ByDuration(Duration),
}

impl AutoOffsetReset {
    /// Parses as Java's `AutoOffsetResetStrategy.fromString`: exact, lower-case names, or
    /// `by_duration:` followed by a non-negative ISO-8601 duration (`java.time.Duration`
    /// syntax, e.g. `P1DT2H`, `PT0.5S`).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "earliest" => Some(Self::Earliest),
            "latest" => Some(Self::Latest),
            "none" => Some(Self::None),
            _ => text
                .strip_prefix("by_duration:")
                .and_then(parse_iso_duration)
                .map(Self::ByDuration),
        }
    }

    /// The ListOffsets timestamp this strategy asks for when `now_ms` is the wall-clock time
    /// (Java's `AutoOffsetResetStrategy.timestamp()`): the earliest/latest sentinels, or
    /// `now - duration` for [`AutoOffsetReset::ByDuration`]. `None` asks for nothing.
    pub(crate) fn list_offsets_timestamp(self, now_ms: i64) -> Option<i64> {
        match self {
            Self::Earliest => Some(EARLIEST_TIMESTAMP),
            Self::Latest => Some(LATEST_TIMESTAMP),
            Self::None => None,
            Self::ByDuration(duration) => {
                let millis = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
                // Never below 0: negative timestamps are the ListOffsets sentinels.
                Some(now_ms.saturating_sub(millis).max(0))
            }
        }
    }
}

/// ListOffsets timestamp for the log start offset.
pub(crate) const EARLIEST_TIMESTAMP: i64 = -2;
/// ListOffsets timestamp for the log end offset (or the last stable offset in read_committed).
pub(crate) const LATEST_TIMESTAMP: i64 = -1;

impl fmt::Display for AutoOffsetReset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Earliest => f.write_str("earliest"),
            Self::Latest => f.write_str("latest"),
            Self::None => f.write_str("none"),
            Self::ByDuration(duration) => {
                write!(f, "by_duration:PT{}", duration.as_secs())?;
                if duration.subsec_nanos() > 0 {
                    let fraction = format!("{:09}", duration.subsec_nanos());
                    write!(f, ".{}", fraction.trim_end_matches('0'))?;
                }
                f.write_str("S")
            }
        }
    }
}

/// Parses `java.time.Duration` ISO-8601 text (`[-+]P[nD][T[nH][nM][n[.f]S]]`, letters in any
/// case, each number signed). Returns `None` when malformed or negative overall, because
/// Java rejects negative reset durations.
fn parse_iso_duration(text: &str) -> Option<Duration> {
    const NANOS_PER_SECOND: i128 = 1_000_000_000;
    let mut cursor = Cursor {
        bytes: text.as_bytes(),
        at: 0,
    };
    let negate = cursor.sign();
    if !cursor.letter(b'P') {
        return None;
    }
    let mut total: i128 = 0;
    let mut any = false;
    if let Some(days) = cursor.component(b'D') {
        total += days.checked_mul(86_400 * NANOS_PER_SECOND)?;
        any = true;
    }
    if cursor.letter(b'T') {
        let mut any_time = false;
        for (unit, seconds) in [(b'H', 3_600), (b'M', 60)] {
            if let Some(value) = cursor.component(unit) {
                total = total.checked_add(value.checked_mul(seconds * NANOS_PER_SECOND)?)?;
                any_time = true;
            }
        }
        if let Some(nanos) = cursor.seconds() {
            total = total.checked_add(nanos)?;
            any_time = true;
        }
        if !any_time {
            return None;
        }
        any = true;
    }
    if !any || cursor.at != cursor.bytes.len() {
        return None;
    }
    let total = if negate { -total } else { total };
    let seconds = u64::try_from(total.div_euclid(NANOS_PER_SECOND)).ok()?;
    let nanos = u32::try_from(total.rem_euclid(NANOS_PER_SECOND)).ok()?;
    Some(Duration::new(seconds, nanos))
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Consumes an optional sign; true if it was `-`.
    fn sign(&mut self) -> bool {
        match self.peek() {
            Some(b'-') => {
                self.at += 1;
                true
            }
            Some(b'+') => {
                self.at += 1;
                false
            }
            _ => false,
        }
    }

    fn letter(&mut self, upper: u8) -> bool {
        let found = self.peek().is_some_and(|b| b.eq_ignore_ascii_case(&upper));
        if found {
            self.at += 1;
        }
        found
    }

    fn digits(&mut self) -> &[u8] {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        &self.bytes[start..self.at]
    }

    /// A signed integer; `None` (position restored) if there is none or it is absurdly long.
    fn integer(&mut self) -> Option<(bool, i128)> {
        let start = self.at;
        let negative = self.sign();
        let digits = self.digits();
        let value = (!digits.is_empty() && digits.len() <= 19)
            .then(|| std::str::from_utf8(digits).ok()?.parse::<i128>().ok())
            .flatten();
        match value {
            Some(value) => Some((negative, if negative { -value } else { value })),
            None => {
                self.at = start;
                None
            }
        }
    }

    /// `<integer><unit>`; position restored if the unit does not follow.
    fn component(&mut self, unit: u8) -> Option<i128> {
        let start = self.at;
        match self.integer() {
            Some((_, value)) if self.letter(unit) => Some(value),
            _ => {
                self.at = start;
                None
            }
        }
    }

    /// `<integer>[.|,<up to 9 digits>]S` in nanoseconds; the fraction takes the integer's sign.
    fn seconds(&mut self) -> Option<i128> {
        let start = self.at;
        let (negative, whole) = self.integer()?;
        let mut fraction: i128 = 0;
        if matches!(self.peek(), Some(b'.' | b',')) {
            self.at += 1;
            let digits = self.digits();
            if digits.len() > 9 {
                self.at = start;
                return None;
            }
            for position in 0..9 {
                let digit = digits.get(position).map_or(0, |d| i128::from(d - b'0'));
                fraction = fraction * 10 + digit;
            }
        }
        if !self.letter(b'S') {
            self.at = start;
            return None;
        }
        let fraction = if negative { -fraction } else { fraction };
        Some(whole * 1_000_000_000 + fraction)
    }
}

/// One entry of `partition.assignment.strategy`: Java's four built-in assignors, or one the
/// application registered with
/// [`ConsumerConfigBuilder::assignor`](crate::config::ConsumerConfigBuilder::assignor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Assignor {
    /// `RangeAssignor` (`range`).
    Range,
    /// `RoundRobinAssignor` (`roundrobin`).
    RoundRobin,
    /// `StickyAssignor` (`sticky`).
    Sticky,
    /// `CooperativeStickyAssignor` (`cooperative-sticky`).
    CooperativeSticky,
    /// An application's own assignor, by the name it sends in JoinGroup
    /// ([`ConsumerPartitionAssignor::name`](crate::assignor::ConsumerPartitionAssignor::name)).
    Custom(&'static str),
}

impl Assignor {
    const ALL: [Self; 4] = [
        Self::Range,
        Self::RoundRobin,
        Self::Sticky,
        Self::CooperativeSticky,
    ];

    /// Accepts the Java class name (exact, as Java's class loading is) or the assignor's
    /// protocol name (any case, as librdkafka users write them).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| text == a.class_name() || text.eq_ignore_ascii_case(a.name()))
    }

    /// The protocol name sent in JoinGroup, as Java's `ConsumerPartitionAssignor.name()`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Range => "range",
            Self::RoundRobin => "roundrobin",
            Self::Sticky => "sticky",
            Self::CooperativeSticky => "cooperative-sticky",
            Self::Custom(name) => name,
        }
    }

    /// The Java class name (a custom assignor's name).
    pub fn class_name(self) -> &'static str {
        match self {
            Self::Range => "org.apache.kafka.clients.consumer.RangeAssignor",
            Self::RoundRobin => "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            Self::Sticky => "org.apache.kafka.clients.consumer.StickyAssignor",
            Self::CooperativeSticky => {
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
            }
            Self::Custom(name) => name,
        }
    }
}

/// Validates a bootstrap address as Java's `ClientUtils.parseAndValidateAddresses` does
/// (optional `scheme://`, optional `[...]` around the host, `:port`) and returns it as
/// `host:port`, IPv6 hosts bracketed. Unlike Java we also refuse an empty host and a port
/// beyond 65535 here rather than at connect time.
pub(crate) fn normalize_address(address: &str) -> Option<String> {
    let is_host_char = |c: char| c.is_ascii_alphanumeric() || "-%._:".contains(c);
    let without_scheme = match address.split_once("://") {
        Some((scheme, rest)) if scheme.chars().all(|c| is_host_char(c) && c != ':') => rest,
        Some(_) => return None,
        None => address,
    };
    let (host, port) = without_scheme.rsplit_once(':')?;
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let port: u16 = port.parse().ok()?;
    let host = host.strip_prefix('[').unwrap_or(host);
    let host = host.strip_suffix(']').unwrap_or(host);
    if host.is_empty() || !host.chars().all(is_host_char) {
        return None;
    }
    Some(if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    })
}

/// Java's `Topic.validate` rules, which `JoinGroupRequest.validateGroupInstanceId` applies to
/// `group.instance.id`.
pub(crate) fn is_valid_group_instance_id(id: &str) -> bool {
    !id.is_empty()
        && id != "."
        && id != ".."
        && id.len() <= 249
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Option<Duration> {
        Some(Duration::from_secs(s))
    }

    #[test]
    fn iso_durations_like_java() {
        assert_eq!(parse_iso_duration("PT0S"), secs(0));
        assert_eq!(parse_iso_duration("P1D"), secs(86_400));
        assert_eq!(parse_iso_duration("pt1h"), secs(3_600));
        assert_eq!(parse_iso_duration("P1DT2H3M4S"), secs(93_784));
        assert_eq!(parse_iso_duration("PT1H-30M"), secs(1_800));
        assert_eq!(parse_iso_duration("-PT-5S"), secs(5));
        assert_eq!(parse_iso_duration("+PT5S"), secs(5));
        assert_eq!(
            parse_iso_duration("PT1.5S"),
            Some(Duration::from_millis(1_500))
        );
        assert_eq!(
            parse_iso_duration("PT1,000000001S"),
            Some(Duration::new(1, 1))
        );
        assert_eq!(parse_iso_duration("PT2.S"), secs(2));
        // Negative overall, malformed, or empty sections.
        for bad in [
            "",
            "P",
            "PT",
            "P1DT",
            "PT-1S",
            "-PT1S",
            "PT-0.5S",
            "1D",
            "P1H",
            "PT1D",
            "PT1S1M",
            "PT1.0000000001S",
            "PTS",
            "P1DX",
            "PT1H ",
            " PT1H",
        ] {
            assert_eq!(parse_iso_duration(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn auto_offset_reset_is_case_sensitive_and_supports_by_duration() {
        assert_eq!(
            AutoOffsetReset::parse("earliest"),
            Some(AutoOffsetReset::Earliest)
        );
        assert_eq!(AutoOffsetReset::parse("none"), Some(AutoOffsetReset::None));
        assert_eq!(AutoOffsetReset::parse("Earliest"), None);
        assert_eq!(AutoOffsetReset::parse("by_duration"), None);
        assert_eq!(AutoOffsetReset::parse("BY_DURATION:PT1S"), None);
        let reset = AutoOffsetReset::parse("by_duration:P1DT0.25S").unwrap();
        assert_eq!(
            reset,
            AutoOffsetReset::ByDuration(Duration::from_millis(86_400_250))
        );
        assert_eq!(reset.to_string(), "by_duration:PT86400.25S");
        assert_eq!(AutoOffsetReset::parse(&reset.to_string()), Some(reset));
    }

    #[test]
    fn reset_strategies_map_to_list_offsets_timestamps() {
        let now = 1_700_000_000_000;
        assert_eq!(
            AutoOffsetReset::Earliest.list_offsets_timestamp(now),
            Some(-2)
        );
        assert_eq!(
            AutoOffsetReset::Latest.list_offsets_timestamp(now),
            Some(-1)
        );
        assert_eq!(AutoOffsetReset::None.list_offsets_timestamp(now), None);
        let hour = AutoOffsetReset::ByDuration(Duration::from_secs(3_600));
        assert_eq!(hour.list_offsets_timestamp(now), Some(now - 3_600_000));
        let forever = AutoOffsetReset::ByDuration(Duration::MAX);
        assert_eq!(forever.list_offsets_timestamp(now), Some(0));
    }

    #[test]
    fn enums_follow_java_case_rules() {
        assert_eq!(
            GroupProtocol::parse("CoNsUmEr"),
            Some(GroupProtocol::Consumer)
        );
        assert_eq!(
            GroupProtocol::parse("classic"),
            Some(GroupProtocol::Classic)
        );
        assert_eq!(GroupProtocol::parse("eager"), None);
        assert_eq!(
            IsolationLevel::parse("read_committed"),
            Some(IsolationLevel::ReadCommitted)
        );
        assert_eq!(IsolationLevel::parse("READ_COMMITTED"), None);
    }

    #[test]
    fn assignors_by_class_or_protocol_name() {
        for assignor in Assignor::ALL {
            assert_eq!(Assignor::parse(assignor.class_name()), Some(assignor));
            assert_eq!(Assignor::parse(assignor.name()), Some(assignor));
        }
        assert_eq!(
            Assignor::parse("Cooperative-Sticky"),
            Some(Assignor::CooperativeSticky)
        );
        assert_eq!(Assignor::parse("RangeAssignor"), None);
        assert_eq!(
            Assignor::parse("org.apache.kafka.clients.consumer.rangeassignor"),
            None
        );
    }

    #[test]
    fn bootstrap_addresses() {
        let ok = [
            ("localhost:9092", "localhost:9092"),
            ("PLAINTEXT://broker-1.example:9093", "broker-1.example:9093"),
            ("[::1]:9092", "[::1]:9092"),
            ("::1:9092", "[::1]:9092"),
            ("10.0.0.1:0", "10.0.0.1:0"),
        ];
        for (given, normalized) in ok {
            assert_eq!(
                normalize_address(given).as_deref(),
                Some(normalized),
                "{given}"
            );
        }
        for bad in [
            "localhost",
            "localhost:",
            ":9092",
            "host:port",
            "host:65536",
            "ho st:1",
            "a/b://h:1",
        ] {
            assert_eq!(normalize_address(bad), None, "{bad}");
        }
    }

    #[test]
    fn group_instance_ids_follow_topic_rules() {
        assert!(is_valid_group_instance_id("instance-1.a_b"));
        assert!(is_valid_group_instance_id(&"a".repeat(249)));
        for bad in ["", ".", "..", "a b", "é", &"a".repeat(250)] {
            assert!(!is_valid_group_instance_id(bad), "{bad}");
        }
    }
}
