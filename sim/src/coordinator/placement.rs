//! Which `__consumer_offsets` partition owns a group, exactly as Kafka computes it.

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + … + s[n-1]` over UTF-16 code units, wrapping.
pub fn java_string_hash_code(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// Kafka's `Utils.abs`: `Math.abs` except that `Integer.MIN_VALUE` maps to 0 (where
/// `Math.abs` would stay negative).
pub fn kafka_utils_abs(n: i32) -> i32 {
    if n == i32::MIN {
        0
    } else {
        n.abs()
    }
}

/// `GroupCoordinatorService.partitionFor`:
/// `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`.
pub fn offsets_partition_for(group_id: &str, offsets_partitions: i32) -> i32 {
    kafka_utils_abs(java_string_hash_code(group_id)) % offsets_partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_java_for_known_strings() {
        assert_eq!(java_string_hash_code(""), 0);
        assert_eq!(java_string_hash_code("hello"), 99_162_322);
        assert_eq!(java_string_hash_code("Aa"), java_string_hash_code("BB"));
        assert_eq!(java_string_hash_code("Aa"), 2112);
        // The famous string whose hashCode is Integer.MIN_VALUE.
        assert_eq!(java_string_hash_code("polygenelubricants"), i32::MIN);
        assert_eq!(offsets_partition_for("polygenelubricants", 50), 0);
        // Non-BMP characters hash as two UTF-16 surrogates: "😀" = D83D DE00.
        assert_eq!(java_string_hash_code("😀"), 0xD83D * 31 + 0xDE00);
        assert_eq!(offsets_partition_for("hello", 50), 99_162_322 % 50);
    }
}
