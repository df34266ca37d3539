//! Member id generation: `prefix + "-" + UUID`, as `ClassicGroup.generateMemberId`.
//!
//! Kafka uses `UUID.randomUUID()`. The simulation needs the same ids for the same seed, so the
//! UUID bits come from a SplitMix64 stream owned by the coordinator and seeded at construction.

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

    /// `prefix-xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`; the prefix is the group instance id for
    /// static members and the client id otherwise.
    pub fn generate(&mut self, prefix: &str) -> String {
        let hi = (self.next_u64() & !0xF000) | 0x4000;
        let lo = (self.next_u64() & !(0xC << 60)) | (0x8 << 60);
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
}
