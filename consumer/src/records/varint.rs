//! Zig-zag varints as Kafka writes them inside v2 records (`ByteUtils.readVarint` /
//! `readVarlong`).
//!
//! Decoding mirrors Java exactly on the edges that matter for untrusted input: a varint may use
//! at most 5 bytes and a varlong at most 10; a continuation bit on the last allowed byte is an
//! overflow error. Bits beyond 32 (64) in that last byte are dropped, as Java drops them, so a
//! batch Java accepts we accept too.

/// Why a varint could not be read. Context (field, record) is added by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The input ended before the varint's last byte.
    Truncated,
    /// More than 5 (varint) or 10 (varlong) bytes carried a continuation bit.
    Overflow,
}

/// Longest encoding of a 32-bit varint, in bytes.
const MAX_VARINT_BYTES: usize = 5;
/// Longest encoding of a 64-bit varlong, in bytes.
const MAX_VARLONG_BYTES: usize = 10;

/// Reads a zig-zag varint at `*pos`, advancing `*pos` past it.
#[inline]
pub(crate) fn read_varint(buf: &[u8], pos: &mut usize) -> Result<i32, VarintError> {
    // Fast path: most lengths and deltas in real batches fit in one byte.
    let first = *buf.get(*pos).ok_or(VarintError::Truncated)?;
    if first & 0x80 == 0 {
        *pos += 1;
        return Ok(zigzag32(u32::from(first)));
    }
    let raw = read_unsigned(buf, pos, MAX_VARINT_BYTES)?;
    // Truncation to 32 bits is intended: Java's `b << 28` drops the same high bits.
    Ok(zigzag32(raw as u32))
}

/// Reads a zig-zag varlong at `*pos`, advancing `*pos` past it.
#[inline]
pub(crate) fn read_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, VarintError> {
    let first = *buf.get(*pos).ok_or(VarintError::Truncated)?;
    if first & 0x80 == 0 {
        *pos += 1;
        return Ok(zigzag64(u64::from(first)));
    }
    let raw = read_unsigned(buf, pos, MAX_VARLONG_BYTES)?;
    Ok(zigzag64(raw))
}

/// The unsigned base-128 value of at most `max_bytes` bytes; bits past 64 are dropped.
#[cold]
fn read_unsigned(buf: &[u8], pos: &mut usize, max_bytes: usize) -> Result<u64, VarintError> {
    let mut value = 0u64;
    for i in 0..max_bytes {
        let byte = *buf.get(*pos + i).ok_or(VarintError::Truncated)?;
        value |= u64::from(byte & 0x7f).wrapping_shl(7 * i as u32);
        if byte & 0x80 == 0 {
            *pos += i + 1;
            return Ok(value);
        }
    }
    Err(VarintError::Overflow)
}

#[inline]
fn zigzag32(raw: u32) -> i32 {
    ((raw >> 1) as i32) ^ -((raw & 1) as i32)
}

#[inline]
fn zigzag64(raw: u64) -> i64 {
    ((raw >> 1) as i64) ^ -((raw & 1) as i64)
}

/// Appends `value` as a zig-zag varint.
pub(crate) fn write_varint(out: &mut Vec<u8>, value: i32) {
    write_unsigned(out, u64::from(((value << 1) ^ (value >> 31)) as u32));
}

/// Appends `value` as a zig-zag varlong.
pub(crate) fn write_varlong(out: &mut Vec<u8>, value: i64) {
    write_unsigned(out, ((value << 1) ^ (value >> 63)) as u64);
}

fn write_unsigned(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Bytes `value` takes as a zig-zag varint; the writer needs it to prefix a record's length.
pub(crate) fn varint_len(value: i32) -> usize {
    let mut raw = ((value << 1) ^ (value >> 31)) as u32;
    let mut len = 1;
    while raw >= 0x80 {
        raw >>= 7;
        len += 1;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint_round_trip(value: i32) {
        let mut buf = Vec::new();
        write_varint(&mut buf, value);
        assert_eq!(buf.len(), varint_len(value), "length of {value}");
        let mut pos = 0;
        assert_eq!(read_varint(&buf, &mut pos), Ok(value));
        assert_eq!(pos, buf.len());
    }

    fn varlong_round_trip(value: i64) {
        let mut buf = Vec::new();
        write_varlong(&mut buf, value);
        let mut pos = 0;
        assert_eq!(read_varlong(&buf, &mut pos), Ok(value));
        assert_eq!(pos, buf.len());
    }

    #[test]
    fn round_trips_edges() {
        for v in [0, 1, -1, 63, -64, 64, -65, 300, i32::MAX, i32::MIN] {
            varint_round_trip(v);
        }
        for v in [0, 1, -1, 1 << 40, -(1 << 40), i64::MAX, i64::MIN] {
            varlong_round_trip(v);
        }
    }

    #[test]
    fn matches_kafka_encoding() {
        // From Kafka's ByteUtilsTest: zig-zag maps -1 → 1, 1 → 2, 300 → 600 = [0xd8, 0x04].
        let mut buf = Vec::new();
        write_varint(&mut buf, -1);
        write_varint(&mut buf, 1);
        write_varint(&mut buf, 300);
        assert_eq!(buf, [0x01, 0x02, 0xd8, 0x04]);
    }

    #[test]
    fn overflow_and_truncation_are_errors() {
        let six = [0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(read_varint(&six, &mut 0), Err(VarintError::Overflow));
        let eleven = [0xffu8; 11];
        assert_eq!(read_varlong(&eleven, &mut 0), Err(VarintError::Overflow));
        assert_eq!(
            read_varint(&[0x80, 0x80], &mut 0),
            Err(VarintError::Truncated)
        );
        assert_eq!(read_varint(&[], &mut 0), Err(VarintError::Truncated));
        // Five bytes with the last continuation bit clear is fine (the i32::MIN encoding).
        let mut pos = 0;
        assert_eq!(
            read_varint(&[0xff, 0xff, 0xff, 0xff, 0x0f], &mut pos),
            Ok(i32::MIN)
        );
    }
}
