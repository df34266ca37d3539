//! Kafka's lz4 batches: the LZ4 frame format, decoded block by block with `lz4_flex::block`
//! straight into the output buffer.
//!
//! Why not `lz4_flex::frame::FrameDecoder`: it decodes each block into a buffer of its own and
//! copies it out through `std::io::Read`, into a zero-filled `Vec` per batch; reading the frame
//! here costs one pass over the output and no allocation of our own.
//!
//! The format (lz4's `lz4_Frame_format.md`), as Java's `KafkaLZ4BlockOutputStream` and
//! librdkafka write it: magic `0x184D2204` (little-endian), a descriptor (FLG, BD, an optional
//! 8-byte content size, a header checksum byte), then blocks, each a little-endian u32 size
//! (high bit set: the block is stored uncompressed), its data and an optional 4-byte xxHash32
//! of that data; a zero size ends the frame, followed by an optional 4-byte xxHash32 of the
//! whole content. Frames may follow one another. The header checksum is always the standard
//! one: Kafka's old broken variant only ever appears in message format v0/v1 batches, which the
//! batch reader rejects before decompressing.

use super::compression::DecompressError;
use super::decompression_buffer::DecompressionBuffer;
use super::xxhash32::xxh32;

const MAGIC: u32 = 0x184D_2204;
/// FLG and BD.
const DESCRIPTOR_BYTES: usize = 2;
const CONTENT_SIZE_BYTES: usize = 8;
const CHECKSUM_BYTES: usize = 4;

const FLG_VERSION_MASK: u8 = 0b1100_0000;
const FLG_VERSION_01: u8 = 0b0100_0000;
const FLG_BLOCK_INDEPENDENCE: u8 = 0b0010_0000;
const FLG_BLOCK_CHECKSUM: u8 = 0b0001_0000;
const FLG_CONTENT_SIZE: u8 = 0b0000_1000;
const FLG_CONTENT_CHECKSUM: u8 = 0b0000_0100;
/// A reserved bit and the dictionary-id flag: no Kafka producer sets either.
const FLG_UNSUPPORTED: u8 = 0b0000_0011;
const BD_BLOCK_MAX_SHIFT: u32 = 4;
const BD_RESERVED: u8 = 0b1000_1111;
const BLOCK_UNCOMPRESSED_BIT: u32 = 0x8000_0000;
/// How far back a block of a linked (dependent) frame may refer into earlier blocks' output.
const LINKED_WINDOW_BYTES: usize = 64 * 1024;

/// One frame's descriptor.
#[derive(Debug, Clone, Copy)]
struct FrameHeader {
    independent_blocks: bool,
    block_checksums: bool,
    content_checksum: bool,
    content_size_bytes: Option<u64>,
    block_max_bytes: usize,
}

/// One block's data.
#[derive(Debug, Clone, Copy)]
struct Block<'a> {
    data: &'a [u8],
    compressed: bool,
}

/// A cursor over the frames and blocks of `input`.
struct Cursor<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, bytes: usize, what: &str) -> Result<&'a [u8], DecompressError> {
        let taken = self
            .input
            .get(self.pos..)
            .and_then(|rest| rest.get(..bytes))
            .ok_or_else(|| {
                codec(format!(
                    "lz4 frame is truncated: {what} needs {bytes} bytes at byte {}, {} left",
                    self.pos,
                    self.input.len().saturating_sub(self.pos)
                ))
            })?;
        self.pos += bytes;
        Ok(taken)
    }

    fn take_u32(&mut self, what: &str) -> Result<u32, DecompressError> {
        let bytes = self.take(4, what)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    fn at_end(&self) -> bool {
        self.pos >= self.input.len()
    }

    fn header(&mut self) -> Result<FrameHeader, DecompressError> {
        let magic = self.take_u32("the magic number")?;
        if magic != MAGIC {
            return Err(codec(format!("lz4 frame magic is {magic:#010x}")));
        }
        let descriptor_start = self.pos;
        let descriptor = self.take(DESCRIPTOR_BYTES, "the frame descriptor")?;
        let (flg, bd) = (descriptor[0], descriptor[1]);
        if flg & FLG_VERSION_MASK != FLG_VERSION_01 {
            return Err(codec(format!("lz4 frame version bits in FLG {flg:#04x}")));
        }
        if flg & FLG_UNSUPPORTED != 0 {
            return Err(codec(format!(
                "lz4 frame FLG {flg:#04x} sets a reserved bit or a dictionary id"
            )));
        }
        let block_max_bytes = match (bd & !BD_RESERVED) >> BD_BLOCK_MAX_SHIFT {
            4 => 64 << 10,
            5 => 256 << 10,
            6 => 1 << 20,
            7 => 4 << 20,
            _ => return Err(codec(format!("lz4 frame BD {bd:#04x} is invalid"))),
        };
        if bd & BD_RESERVED != 0 {
            return Err(codec(format!("lz4 frame BD {bd:#04x} sets reserved bits")));
        }
        let content_size_bytes = if flg & FLG_CONTENT_SIZE != 0 {
            let bytes = self.take(CONTENT_SIZE_BYTES, "the content size")?;
            Some(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
        } else {
            None
        };
        let described = &self.input[descriptor_start..self.pos];
        let stored = self.take(1, "the header checksum")?[0];
        let computed = (xxh32(described) >> 8) as u8;
        if stored != computed {
            return Err(codec(format!(
                "lz4 frame header checksum is {stored:#04x}, computed {computed:#04x}"
            )));
        }
        Ok(FrameHeader {
            independent_blocks: flg & FLG_BLOCK_INDEPENDENCE != 0,
            block_checksums: flg & FLG_BLOCK_CHECKSUM != 0,
            content_checksum: flg & FLG_CONTENT_CHECKSUM != 0,
            content_size_bytes,
            block_max_bytes,
        })
    }

    /// The next block of a frame, `None` at its end mark (the content checksum, if any, is
    /// left for the caller).
    fn block(&mut self, header: &FrameHeader) -> Result<Option<Block<'a>>, DecompressError> {
        let size = self.take_u32("a block size")?;
        if size == 0 {
            return Ok(None);
        }
        let compressed = size & BLOCK_UNCOMPRESSED_BIT == 0;
        let len = (size & !BLOCK_UNCOMPRESSED_BIT) as usize;
        if len > header.block_max_bytes {
            return Err(codec(format!(
                "lz4 block of {len} bytes exceeds the frame's {} byte blocks",
                header.block_max_bytes
            )));
        }
        let data = self.take(len, "a block")?;
        if header.block_checksums {
            let stored = self.take_u32("a block checksum")?;
            let computed = xxh32(data);
            if stored != computed {
                return Err(codec(format!(
                    "lz4 block checksum is {stored:#010x}, computed {computed:#010x}"
                )));
            }
        }
        Ok(Some(Block { data, compressed }))
    }
}

/// The most output `input`'s frames can produce (each compressed block at most its frame's
/// block size, each stored block exactly its length); also checks the framing end to end.
fn output_bound(input: &[u8]) -> Result<usize, DecompressError> {
    let mut cursor = Cursor { input, pos: 0 };
    let mut bound = 0usize;
    while !cursor.at_end() {
        let header = cursor.header()?;
        while let Some(block) = cursor.block(&header)? {
            let most = if block.compressed {
                header.block_max_bytes
            } else {
                block.data.len()
            };
            bound = bound.saturating_add(most);
        }
        if header.content_checksum {
            cursor.take(CHECKSUM_BYTES, "the content checksum")?;
        }
    }
    Ok(bound)
}

/// Decompresses `input` (one or more frames) into `out`, producing at most `max_bytes`.
pub(crate) fn decompress(
    input: &[u8],
    max_bytes: usize,
    out: &mut DecompressionBuffer,
) -> Result<bytes::Bytes, DecompressError> {
    let bound = output_bound(input)?;
    let capacity = bound.min(max_bytes);
    let room = &mut out.room_at_least(0, capacity)[..capacity];
    let mut cursor = Cursor { input, pos: 0 };
    let mut written = 0;
    while !cursor.at_end() {
        let header = cursor.header()?;
        let frame_start = written;
        while let Some(block) = cursor.block(&header)? {
            let (done, rest) = room.split_at_mut(written);
            if !block.compressed {
                let destination = rest
                    .get_mut(..block.data.len())
                    .ok_or(DecompressError::TooLarge)?;
                destination.copy_from_slice(block.data);
                written += block.data.len();
                continue;
            }
            let limit = rest.len().min(header.block_max_bytes);
            let destination = &mut rest[..limit];
            let result = if header.independent_blocks {
                lz4_flex::block::decompress_into(block.data, destination)
            } else {
                let window_start = frame_start.max(written.saturating_sub(LINKED_WINDOW_BYTES));
                lz4_flex::block::decompress_into_with_dict(
                    block.data,
                    destination,
                    &done[window_start..],
                )
            };
            written += result.map_err(|error| match error {
                // Only the max_bytes cap can make the destination shorter than a block.
                lz4_flex::block::DecompressError::OutputTooSmall { .. }
                    if limit < header.block_max_bytes =>
                {
                    DecompressError::TooLarge
                }
                error => codec(format!("lz4 block: {error}")),
            })?;
        }
        let content = &room[frame_start..written];
        if let Some(declared) = header.content_size_bytes {
            if declared != content.len() as u64 {
                return Err(codec(format!(
                    "lz4 frame declares {declared} bytes of content, holds {}",
                    content.len()
                )));
            }
        }
        if header.content_checksum {
            let stored = cursor.take_u32("the content checksum")?;
            let computed = xxh32(content);
            if stored != computed {
                return Err(codec(format!(
                    "lz4 content checksum is {stored:#010x}, computed {computed:#010x}"
                )));
            }
        }
    }
    Ok(out.take(written))
}

fn codec(message: String) -> DecompressError {
    DecompressError::Codec(message)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use lz4_flex::frame::{BlockMode, BlockSize, FrameEncoder, FrameInfo};

    use super::*;

    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 997) as u8)
            .collect()
    }

    fn encode(input: &[u8], info: FrameInfo) -> Vec<u8> {
        let mut encoder = FrameEncoder::with_frame_info(info, Vec::new());
        encoder.write_all(input).unwrap();
        encoder.finish().unwrap()
    }

    fn decode(input: &[u8], max_bytes: usize) -> Result<bytes::Bytes, DecompressError> {
        decompress(input, max_bytes, &mut DecompressionBuffer::new())
    }

    #[test]
    fn decodes_every_frame_option_lz4_flex_writes() {
        let input = sample(300 * 1024);
        for block_size in [BlockSize::Max64KB, BlockSize::Max256KB, BlockSize::Max4MB] {
            for block_mode in [BlockMode::Independent, BlockMode::Linked] {
                for (content_checksum, block_checksums, content_size) in [
                    (false, false, false),
                    (true, true, true),
                    (true, false, false),
                ] {
                    let mut info = FrameInfo::new()
                        .block_size(block_size)
                        .block_mode(block_mode)
                        .content_checksum(content_checksum)
                        .block_checksums(block_checksums);
                    if content_size {
                        info = info.content_size(Some(input.len() as u64));
                    }
                    let frame = encode(&input, info);
                    let output = decode(&frame, 1 << 20).unwrap();
                    assert_eq!(
                        output.as_ref(),
                        &input[..],
                        "{block_size:?} {block_mode:?} {content_checksum} {block_checksums}"
                    );
                }
            }
        }
    }

    #[test]
    fn decodes_uncompressed_blocks_and_concatenated_frames() {
        // Incompressible data: lz4 stores such blocks with the high bit set.
        let mut state = 0x1234_5678_9abc_def0u64;
        let noise: Vec<u8> = (0..100_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let info = FrameInfo::new().block_size(BlockSize::Max64KB);
        let first = encode(&noise, info.clone());
        let block_size = u32::from_le_bytes(first[7..11].try_into().unwrap());
        assert_ne!(block_size & BLOCK_UNCOMPRESSED_BIT, 0, "stored block");
        let second = encode(b"and a second frame", info);
        let both = [first, second].concat();
        let output = decode(&both, 1 << 20).unwrap();
        assert_eq!(
            output.as_ref(),
            [&noise[..], b"and a second frame"].concat()
        );
    }

    #[test]
    fn truncated_and_corrupt_frames_are_codec_errors() {
        let input = sample(150 * 1024);
        let info = FrameInfo::new()
            .block_size(BlockSize::Max64KB)
            .content_checksum(true)
            .block_checksums(true);
        let frame = encode(&input, info);
        for cut in [
            1,
            4,
            5,
            6,
            7,
            10,
            100,
            frame.len() / 2,
            frame.len() - 5,
            frame.len() - 1,
        ] {
            let result = decode(&frame[..cut], 1 << 20);
            assert!(
                matches!(result, Err(DecompressError::Codec(_))),
                "cut at {cut}: {result:?}"
            );
        }
        for at in [0, 4, 5, 6, 12, frame.len() / 2, frame.len() - 1] {
            let mut corrupt = frame.clone();
            corrupt[at] ^= 0x41;
            let result = decode(&corrupt, 1 << 20);
            assert!(
                matches!(result, Err(DecompressError::Codec(_))),
                "flip at {at}: {result:?}"
            );
        }
    }

    #[test]
    fn corrupt_block_data_without_checksums_is_an_error_not_a_panic() {
        let frame = encode(&sample(200 * 1024), FrameInfo::new());
        let mut state = 7u64;
        for _ in 0..500 {
            let mut corrupt = frame.clone();
            for _ in 0..3 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                let at = 7 + (state >> 33) as usize % (corrupt.len() - 7);
                corrupt[at] = (state >> 13) as u8;
            }
            let _ = decode(&corrupt, 1 << 20);
        }
    }

    #[test]
    fn output_is_capped() {
        let zeros = vec![0u8; 4 << 20];
        let frame = encode(&zeros, FrameInfo::new());
        assert!(matches!(
            decode(&frame, (1 << 20) + 7),
            Err(DecompressError::TooLarge)
        ));
        assert_eq!(decode(&frame, 4 << 20).unwrap().len(), 4 << 20);
    }
}
