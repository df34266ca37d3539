//! xxHash32 (seed 0), the checksum of the LZ4 frame format's header, blocks and content.
//!
//! Twenty lines here instead of a dependency: only the lz4 frame reader needs it, on short
//! inputs (a header) or rarely (producers seldom set the block and content checksum flags).

const PRIME_1: u32 = 0x9E37_79B1;
const PRIME_2: u32 = 0x85EB_CA77;
const PRIME_3: u32 = 0xC2B2_AE3D;
const PRIME_4: u32 = 0x27D4_EB2F;
const PRIME_5: u32 = 0x1656_67B1;
const STRIPE_BYTES: usize = 16;

fn read_u32(bytes: &[u8]) -> u32 {
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn round(acc: u32, lane: u32) -> u32 {
    acc.wrapping_add(lane.wrapping_mul(PRIME_2))
        .rotate_left(13)
        .wrapping_mul(PRIME_1)
}

/// The xxHash32 of `data` with seed 0.
pub(crate) fn xxh32(data: &[u8]) -> u32 {
    let stripes = data.chunks_exact(STRIPE_BYTES);
    let tail = stripes.remainder();
    let mut hash = if data.len() >= STRIPE_BYTES {
        let mut lanes = [
            PRIME_1.wrapping_add(PRIME_2),
            PRIME_2,
            0,
            0u32.wrapping_sub(PRIME_1),
        ];
        for stripe in stripes {
            for (i, lane) in lanes.iter_mut().enumerate() {
                *lane = round(*lane, read_u32(&stripe[i * 4..]));
            }
        }
        lanes[0]
            .rotate_left(1)
            .wrapping_add(lanes[1].rotate_left(7))
            .wrapping_add(lanes[2].rotate_left(12))
            .wrapping_add(lanes[3].rotate_left(18))
    } else {
        PRIME_5
    };
    hash = hash.wrapping_add(data.len() as u32);
    let words = tail.chunks_exact(4);
    let bytes = words.remainder();
    for word in words {
        hash = hash
            .wrapping_add(read_u32(word).wrapping_mul(PRIME_3))
            .rotate_left(17)
            .wrapping_mul(PRIME_4);
    }
    for &byte in bytes {
        hash = hash
            .wrapping_add(u32::from(byte).wrapping_mul(PRIME_5))
            .rotate_left(11)
            .wrapping_mul(PRIME_1);
    }
    hash ^= hash >> 15;
    hash = hash.wrapping_mul(PRIME_2);
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(PRIME_3);
    hash ^ (hash >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_vectors() {
        assert_eq!(xxh32(b""), 0x02CC_5D05);
        assert_eq!(xxh32(b"a"), 0x550D_7456);
        assert_eq!(xxh32(b"abc"), 0x32D1_53FF);
    }
}
