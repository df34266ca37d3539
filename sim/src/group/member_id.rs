//! Member id generation, as Kafka 4.1.1 does it, from a seeded stream.
//!
//! - Members of classic groups: `prefix + "-" + UUID` (`ClassicGroup.generateMemberId`, a
//!   `java.util.UUID` in its 36-character form), the prefix being the group instance id of a
//!   static member and the client id otherwise.
//! - Members the KIP-848 coordinator names (a classic JoinGroup without a member id to a
//!   consumer group, `classicGroupJoinToConsumerGroup`; a v0 ConsumerGroupHeartbeat without
//!   one): `Uuid.randomUuid().toString()`, Kafka's own `Uuid` — the same random bits in
//!   URL-safe base64 without padding (22 characters), never starting with `-`.
//!
//! Kafka draws from `UUID.randomUUID()`. The simulation needs the same ids for the same seed, so
//! the bits come from a SplitMix64 stream owned by the coordinator and seeded at construction.

/// A seeded source of version-4-shaped UUID strings.
#[derive(Debug, Clone)]
pub struct MemberIdGenerator {
    state: u64,
}

impl MemberIdGenerator {
    /// A generator whose sequence is fully determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// SplitMix64: a tiny, well-mixed generator; quality is ample for unique ids.
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The bits of a version-4 `java.util.UUID.randomUUID()`: (most, least) significant.
    fn next_uuid_bits(&mut self) -> (u64, u64) {
        let hi = (self.next_u64() & !0xF000) | 0x4000;
        let lo = (self.next_u64() & !(0xC << 60)) | (0x8 << 60);
        (hi, lo)
    }

    /// Kafka's `Uuid.randomUuid().toString()`: URL-safe base64 of the 16 bytes, unpadded. Ids
    /// Kafka reserves (zero, the metadata topic's 1) or starting with `-` are drawn again; a
    /// version-4 UUID is never reserved, so only the `-` check can fire.
    pub fn generate_uuid(&mut self) -> String {
        loop {
            let (hi, lo) = self.next_uuid_bits();
            let mut bytes = [0_u8; 16];
            bytes[..8].copy_from_slice(&hi.to_be_bytes());
            bytes[8..].copy_from_slice(&lo.to_be_bytes());
            let encoded = base64_url_unpadded(&bytes);
            if !encoded.starts_with('-') {
                return encoded;
            }
        }
    }

    /// `prefix-xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`; the prefix is the group instance id for
    /// static members and the client id otherwise.
    pub fn generate(&mut self, prefix: &str) -> String {
        let (hi, lo) = self.next_uuid_bits();
        format!(
            "{prefix}-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            hi >> 32,
            (hi >> 16) & 0xFFFF,
            hi & 0xFFFF,
            lo >> 48,
            lo & 0xFFFF_FFFF_FFFF
        )
    }
}

/// `Base64.getUrlEncoder().withoutPadding()`.
fn base64_url_unpadded(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0_u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 0x3F) as usize]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuid_shaped_seeded_and_distinct() {
        let mut a = MemberIdGenerator::new(1);
        let mut b = MemberIdGenerator::new(1);
        let first = a.generate("client");
        assert_eq!(first, b.generate("client"));
        assert_ne!(first, a.generate("client"));
        let uuid = first.strip_prefix("client-").unwrap_or_default();
        let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12]);
        assert_eq!(&uuid[14..15], "4", "version nibble");
    }

    #[test]
    fn kafka_uuids_are_22_url_safe_characters() {
        let mut a = MemberIdGenerator::new(7);
        let mut b = MemberIdGenerator::new(7);
        for _ in 0..200 {
            let id = a.generate_uuid();
            assert_eq!(id, b.generate_uuid());
            assert_eq!(id.len(), 22, "{id}");
            assert!(!id.starts_with('-'), "{id}");
            assert!(id
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
        }
    }

    #[test]
    fn base64_matches_javas_url_encoder() {
        // Java: Base64.getUrlEncoder().withoutPadding().encodeToString(...)
        assert_eq!(base64_url_unpadded(b"f"), "Zg");
        assert_eq!(base64_url_unpadded(b"fo"), "Zm8");
        assert_eq!(base64_url_unpadded(b"foo"), "Zm9v");
        assert_eq!(base64_url_unpadded(&[0xFB, 0xFF]), "-_8");
        // Kafka's METADATA_TOPIC_ID, Uuid(0, 1), prints as AAAAAAAAAAAAAAAAAAAAAQ.
        let mut one = [0_u8; 16];
        one[15] = 1;
        assert_eq!(base64_url_unpadded(&one), "AAAAAAAAAAAAAAAAAAAAAQ");
    }
}
