//! Kafka's framing: every request and response is an i32 big-endian length followed by that many
//! bytes.
//!
//! The decoder works over a read buffer and trusts a length prefix for an allocation only after
//! validating it against the configured maximum (see [`FrameDecoder::read_reservation`]).

use bytes::{Buf, Bytes, BytesMut};

use super::ProtocolError;

/// Bytes in the length prefix.
pub const LENGTH_PREFIX_BYTES: usize = 4;

/// Default largest response frame we accept, like the Java client's implicit limit on a receive
/// (a fetch response is bounded by `fetch.max.bytes`, 50 MiB by default, plus overhead).
pub const DEFAULT_MAX_FRAME_SIZE_BYTES: usize = 100 * 1024 * 1024;

/// The least a single read reserves, so small responses need few syscalls.
const MIN_READ_CHUNK_BYTES: usize = 8 * 1024;

/// Splits complete frames off the front of a read buffer.
#[derive(Debug, Clone, Copy)]
pub struct FrameDecoder {
    max_frame_size_bytes: usize,
}

impl FrameDecoder {
    /// A decoder that rejects frames longer than `max_frame_size_bytes` (excluding the prefix).
    pub fn new(max_frame_size_bytes: usize) -> Self {
        Self {
            max_frame_size_bytes,
        }
    }

    /// Takes one complete frame (without its length prefix) off the front of `buf`, or returns
    /// `None` when more bytes are needed. A bad length prefix is an error: the stream cannot be
    /// resynchronised after it, so the caller must close the connection.
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<Bytes>, ProtocolError> {
        let Some(size_bytes) = self.peek_size(buf)? else {
            return Ok(None);
        };
        if buf.len() < LENGTH_PREFIX_BYTES + size_bytes {
            return Ok(None);
        }
        buf.advance(LENGTH_PREFIX_BYTES);
        Ok(Some(buf.split_to(size_bytes).freeze()))
    }

    /// How many bytes the next read should make room for: the whole rest of the current frame
    /// once its length prefix has arrived, and at least 8 KiB.
    ///
    /// Why the whole frame at once: a fetch response of several MiB read into a buffer grown
    /// 1 MiB at a time was reallocated and copied as it grew (`BytesMut::reserve_inner` under
    /// `memmove` in the recorded profile); one reservation per response costs one allocation
    /// and no copy. The prefix was validated against the maximum frame size first, and the
    /// reserved capacity is only address space until bytes arrive, so a lying prefix costs at
    /// most that maximum in virtual memory, as in Java's `NetworkReceive`.
    pub fn read_reservation(&self, buf: &BytesMut) -> usize {
        let missing = match self.peek_size(buf) {
            Ok(Some(size_bytes)) => (LENGTH_PREFIX_BYTES + size_bytes).saturating_sub(buf.len()),
            Ok(None) | Err(_) => 0,
        };
        missing.max(MIN_READ_CHUNK_BYTES)
    }

    /// The error for a stream that ended with `buf` holding a partial frame, if it holds any.
    pub fn check_clean_eof(&self, buf: &BytesMut) -> Result<(), ProtocolError> {
        if buf.is_empty() {
            return Ok(());
        }
        let expected_bytes = match self.peek_size(buf) {
            Ok(Some(size_bytes)) => LENGTH_PREFIX_BYTES + size_bytes,
            Ok(None) => LENGTH_PREFIX_BYTES,
            Err(e) => return Err(e),
        };
        Err(ProtocolError::TruncatedFrame {
            expected_bytes,
            received_bytes: buf.len(),
        })
    }

    /// The validated size of the frame at the front of `buf`, once its prefix has arrived.
    fn peek_size(&self, buf: &BytesMut) -> Result<Option<usize>, ProtocolError> {
        let Some(prefix) = buf.get(..LENGTH_PREFIX_BYTES) else {
            return Ok(None);
        };
        let length = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        let size_bytes =
            usize::try_from(length).map_err(|_| ProtocolError::NegativeFrameLength { length })?;
        if size_bytes > self.max_frame_size_bytes {
            return Err(ProtocolError::FrameTooLarge {
                size_bytes,
                max_bytes: self.max_frame_size_bytes,
            });
        }
        Ok(Some(size_bytes))
    }
}

#[cfg(test)]
mod tests {
    use bytes::BufMut;

    use super::*;

    fn framed(bodies: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for body in bodies {
            out.put_i32(body.len() as i32);
            out.extend_from_slice(body);
        }
        out
    }

    #[test]
    fn split_at_every_byte_boundary_yields_the_same_frames() {
        let bodies: [&[u8]; 3] = [b"hello", b"", b"a longer third frame"];
        let wire = framed(&bodies);
        let decoder = FrameDecoder::new(1024);
        for split in 0..=wire.len() {
            let mut buf = BytesMut::new();
            let mut frames = Vec::new();
            for chunk in [&wire[..split], &wire[split..]] {
                buf.extend_from_slice(chunk);
                while let Some(frame) = decoder.decode(&mut buf).unwrap() {
                    frames.push(frame);
                }
            }
            let got: Vec<&[u8]> = frames.iter().map(|f| f.as_ref()).collect();
            assert_eq!(got, bodies, "split at byte {split}");
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn byte_by_byte_feeding_yields_each_frame_once_complete() {
        let wire = framed(&[b"abc", b"defg"]);
        let decoder = FrameDecoder::new(1024);
        let mut buf = BytesMut::new();
        let mut completed_at = Vec::new();
        for (i, byte) in wire.iter().enumerate() {
            buf.put_u8(*byte);
            if let Some(frame) = decoder.decode(&mut buf).unwrap() {
                completed_at.push((i, frame));
            }
        }
        assert_eq!(completed_at.len(), 2);
        assert_eq!(completed_at[0], (6, Bytes::from_static(b"abc")));
        assert_eq!(completed_at[1], (14, Bytes::from_static(b"defg")));
    }

    #[test]
    fn several_frames_in_one_read() {
        let wire = framed(&[b"1", b"22", b"333"]);
        let decoder = FrameDecoder::new(1024);
        let mut buf = BytesMut::from(&wire[..]);
        assert_eq!(decoder.decode(&mut buf).unwrap().unwrap(), "1");
        assert_eq!(decoder.decode(&mut buf).unwrap().unwrap(), "22");
        assert_eq!(decoder.decode(&mut buf).unwrap().unwrap(), "333");
        assert_eq!(decoder.decode(&mut buf).unwrap(), None);
    }

    #[test]
    fn negative_length_is_a_typed_error() {
        let decoder = FrameDecoder::new(1024);
        let mut buf = BytesMut::from(&(-5i32).to_be_bytes()[..]);
        assert_eq!(
            decoder.decode(&mut buf),
            Err(ProtocolError::NegativeFrameLength { length: -5 })
        );
    }

    #[test]
    fn oversized_length_is_rejected_before_its_bytes_arrive_and_without_allocating_it() {
        let decoder = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE_BYTES);
        let mut buf = BytesMut::from(&i32::MAX.to_be_bytes()[..]);
        let err = decoder.decode(&mut buf).unwrap_err();
        assert_eq!(
            err,
            ProtocolError::FrameTooLarge {
                size_bytes: i32::MAX as usize,
                max_bytes: DEFAULT_MAX_FRAME_SIZE_BYTES
            }
        );
        assert!(err.to_string().contains("exceeds the maximum"));
        assert!(
            buf.capacity() < 1024,
            "decoder must not reserve by the prefix"
        );
    }

    #[test]
    fn read_reservation_is_the_rest_of_a_valid_frame() {
        let decoder = FrameDecoder::new(DEFAULT_MAX_FRAME_SIZE_BYTES);
        let empty = BytesMut::new();
        assert_eq!(decoder.read_reservation(&empty), MIN_READ_CHUNK_BYTES);
        let mut large = BytesMut::new();
        large.put_i32(90 * 1024 * 1024);
        large.put_bytes(0, 1000);
        assert_eq!(
            decoder.read_reservation(&large),
            90 * 1024 * 1024 + LENGTH_PREFIX_BYTES - 1004
        );
        let mut too_large = BytesMut::new();
        too_large.put_i32(200 * 1024 * 1024);
        assert_eq!(
            decoder.read_reservation(&too_large),
            MIN_READ_CHUNK_BYTES,
            "an invalid prefix reserves nothing more (decode reports it)"
        );
        let mut medium = BytesMut::new();
        medium.put_i32(100_000);
        medium.put_bytes(0, 50_000);
        assert_eq!(decoder.read_reservation(&medium), 50_000);
    }

    #[test]
    fn eof_inside_a_frame_reports_how_much_was_missing() {
        let decoder = FrameDecoder::new(1024);
        assert_eq!(decoder.check_clean_eof(&BytesMut::new()), Ok(()));
        let mut partial = BytesMut::new();
        partial.put_i32(10);
        partial.put_slice(b"abc");
        assert_eq!(
            decoder.check_clean_eof(&partial),
            Err(ProtocolError::TruncatedFrame {
                expected_bytes: 14,
                received_bytes: 7
            })
        );
        let prefix_only = BytesMut::from(&[0u8, 0][..]);
        assert_eq!(
            decoder.check_clean_eof(&prefix_only),
            Err(ProtocolError::TruncatedFrame {
                expected_bytes: 4,
                received_bytes: 2
            })
        );
    }
}
