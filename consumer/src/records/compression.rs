//! Batch codecs: bounded decompression for the reader, compression for the writer.
//!
//! Decompression never sizes an allocation from a length on the wire alone: every buffer is
//! capped by both the configured maximum and, where the codec allows, a bound derived from the
//! compressed input size. A zip bomb therefore ends in [`DecompressError::TooLarge`], not an OOM.

use std::io::{self, Read, Write};

use bytes::Bytes;
use zstd::zstd_safe::{InBuffer, OutBuffer, ResetDirective};

use super::decompression_buffer::DecompressionBuffer;
use super::lz4_frame;

/// The codec of a batch (attributes bits 0-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Uncompressed: records are slices of the fetch response itself.
    None,
    /// gzip (`flate2`).
    Gzip,
    /// Snappy, xerial-framed as Java writes it, or raw.
    Snappy,
    /// LZ4 frame format.
    Lz4,
    /// Zstandard.
    Zstd,
}

impl Compression {
    /// The codec for attribute bits 0-2, or `None` for an unknown id.
    pub fn from_id(id: u8) -> Option<Self> {
        Some(match id {
            0 => Self::None,
            1 => Self::Gzip,
            2 => Self::Snappy,
            3 => Self::Lz4,
            4 => Self::Zstd,
            _ => return None,
        })
    }

    /// The attribute bits 0-2 for this codec.
    pub fn id(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Gzip => 1,
            Self::Snappy => 2,
            Self::Lz4 => 3,
            Self::Zstd => 4,
        }
    }
}

/// How the writer frames snappy output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SnappyFraming {
    /// Java's `SnappyOutputStream` framing, which Java consumers require.
    #[default]
    Xerial,
    /// One raw snappy block, as some non-Java clients write.
    Raw,
}

/// Why decompression failed; the caller adds topic/partition/offset.
#[derive(Debug)]
pub(crate) enum DecompressError {
    /// The codec rejected the input.
    Codec(String),
    /// Output would exceed the limit.
    TooLarge,
}

/// `\x82SNAPPY\x00`: the xerial stream magic.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Magic plus the version and compatible-version i32s.
const XERIAL_HEADER_BYTES: usize = 16;
/// Java's `SnappyOutputStream` default block size.
const XERIAL_BLOCK_BYTES: usize = 32 * 1024;
/// A snappy copy element of 3 bytes yields at most 64 bytes, so no valid block expands more
/// than ~21.4×; 32× leaves margin and still rejects absurd declared lengths before allocating.
const SNAPPY_MAX_EXPANSION: usize = 32;
/// Slack for the block's own length preamble on tiny inputs.
const SNAPPY_EXPANSION_SLACK_BYTES: usize = 64;
/// First guess at the output size for streaming codecs, relative to the input; the buffer grows
/// as needed up to the limit, so this is a hint only.
const STREAMING_INITIAL_EXPANSION: usize = 4;
/// The least room a streaming codec starts or grows with, so tiny inputs still progress.
const STREAMING_MIN_ROOM_BYTES: usize = 4096;
/// zstd level the writer uses (Kafka's default `compression.zstd.level`).
const ZSTD_LEVEL: i32 = 3;

/// Decompresses a batch's records section into `out`, producing at most `max_bytes` bytes.
pub(crate) fn decompress(
    codec: Compression,
    input: &[u8],
    max_bytes: usize,
    out: &mut DecompressionBuffer,
) -> Result<Bytes, DecompressError> {
    match codec {
        Compression::None => {
            if input.len() > max_bytes {
                return Err(DecompressError::TooLarge);
            }
            out.room_at_least(0, input.len())[..input.len()].copy_from_slice(input);
            Ok(out.take(input.len()))
        }
        Compression::Gzip => read_bounded(
            flate2::read::MultiGzDecoder::new(input),
            input.len(),
            max_bytes,
            out,
        ),
        Compression::Snappy => decompress_snappy(input, max_bytes, out),
        Compression::Lz4 => lz4_frame::decompress(input, max_bytes, out),
        Compression::Zstd => decompress_zstd(input, max_bytes, out),
    }
}

/// Drains a streaming decoder into `out`, failing once the output passes `max_bytes`.
fn read_bounded(
    mut decoder: impl Read,
    input_bytes: usize,
    max_bytes: usize,
    out: &mut DecompressionBuffer,
) -> Result<Bytes, DecompressError> {
    let limit = max_bytes.saturating_add(1);
    let mut wanted = input_bytes
        .saturating_mul(STREAMING_INITIAL_EXPANSION)
        .max(STREAMING_MIN_ROOM_BYTES)
        .min(limit);
    let mut written = 0;
    loop {
        let room = out.room_at_least(written, wanted);
        let room_len = room.len().min(limit);
        if written == room_len {
            if written > max_bytes {
                return Err(DecompressError::TooLarge);
            }
            wanted = room_len
                .saturating_mul(2)
                .max(STREAMING_MIN_ROOM_BYTES)
                .min(limit);
            continue;
        }
        match decoder.read(&mut room[written..room_len]) {
            Ok(0) => break,
            Ok(n) => written += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(codec_error(error)),
        }
    }
    Ok(out.take(written))
}

/// Streams zstd frames (Kafka's carry no content size) into `out` with the buffer's reused
/// context, failing once the output passes `max_bytes`.
fn decompress_zstd(
    input: &[u8],
    max_bytes: usize,
    out: &mut DecompressionBuffer,
) -> Result<Bytes, DecompressError> {
    let limit = max_bytes.saturating_add(1);
    let mut source = InBuffer::around(input);
    let mut wanted = input
        .len()
        .saturating_mul(STREAMING_INITIAL_EXPANSION)
        .max(STREAMING_MIN_ROOM_BYTES)
        .min(limit);
    let mut written = 0;
    let mut first_call = true;
    // Whether the last call ended a frame: input that runs out anywhere else is truncated.
    let mut frame_done = false;
    while source.pos() < input.len() || !frame_done {
        let (room, context) = out.room_and_zstd_context(written, wanted);
        if first_call {
            // A batch that failed earlier may have left the context mid-frame.
            context
                .reset(ResetDirective::SessionOnly)
                .map_err(zstd_error)?;
            first_call = false;
        }
        let room_len = room.len().min(limit);
        if written == room_len {
            if written > max_bytes {
                return Err(DecompressError::TooLarge);
            }
            wanted = room_len
                .saturating_mul(2)
                .max(STREAMING_MIN_ROOM_BYTES)
                .min(limit);
            continue;
        }
        let consumed_before = source.pos();
        let mut destination = OutBuffer::around_pos(&mut room[..room_len], written);
        let hint = context
            .decompress_stream(&mut destination, &mut source)
            .map_err(zstd_error)?;
        let progressed = destination.pos() > written || source.pos() > consumed_before;
        written = destination.pos();
        frame_done = hint == 0;
        if !progressed && written < room_len {
            return Err(DecompressError::Codec("zstd frame is truncated".to_owned()));
        }
    }
    if written > max_bytes {
        return Err(DecompressError::TooLarge);
    }
    Ok(out.take(written))
}

/// Snappy, raw or xerial-framed: every block declares its exact output size, so the whole
/// output is sized (and checked against `max_bytes`) before anything is decompressed.
fn decompress_snappy(
    input: &[u8],
    max_bytes: usize,
    out: &mut DecompressionBuffer,
) -> Result<Bytes, DecompressError> {
    let mut total = 0usize;
    for_each_snappy_block(input, |block| {
        total = total.saturating_add(snappy_declared_len(block)?);
        Ok(())
    })?;
    if total > max_bytes {
        return Err(DecompressError::TooLarge);
    }
    let room = &mut out.room_at_least(0, total)[..total];
    let mut written = 0;
    let mut decoder = snap::raw::Decoder::new();
    for_each_snappy_block(input, |block| {
        let declared = snappy_declared_len(block)?;
        let destination = &mut room[written..written + declared];
        written += decoder
            .decompress(block, destination)
            .map_err(codec_error)?;
        Ok(())
    })?;
    Ok(out.take(written))
}

/// Calls `visit` with each raw snappy block of `input`: the whole input unless it starts with
/// the xerial magic, else the blocks of `[i32 BE compressed length][raw snappy block]` after the
/// 16-byte header.
fn for_each_snappy_block(
    input: &[u8],
    mut visit: impl FnMut(&[u8]) -> Result<(), DecompressError>,
) -> Result<(), DecompressError> {
    if !input.starts_with(&XERIAL_MAGIC) {
        return visit(input);
    }
    let mut rest = input
        .get(XERIAL_HEADER_BYTES..)
        .ok_or_else(|| DecompressError::Codec("xerial snappy header is truncated".to_owned()))?;
    while !rest.is_empty() {
        let (len_bytes, after) = rest.split_first_chunk::<4>().ok_or_else(|| {
            DecompressError::Codec("xerial snappy block length is truncated".to_owned())
        })?;
        let block_len = i32::from_be_bytes(*len_bytes);
        let block = usize::try_from(block_len)
            .ok()
            .and_then(|len| after.get(..len))
            .ok_or_else(|| {
                DecompressError::Codec(format!(
                    "xerial snappy block length {block_len} exceeds the {} remaining bytes",
                    after.len()
                ))
            })?;
        visit(block)?;
        rest = &after[block.len()..];
    }
    Ok(())
}

/// The output size a raw snappy block declares, rejected when no valid block of its size could
/// produce it (so a lying preamble never sizes an allocation).
fn snappy_declared_len(block: &[u8]) -> Result<usize, DecompressError> {
    let declared = snap::raw::decompress_len(block).map_err(codec_error)?;
    let plausible = block
        .len()
        .saturating_mul(SNAPPY_MAX_EXPANSION)
        .saturating_add(SNAPPY_EXPANSION_SLACK_BYTES);
    if declared > plausible {
        return Err(DecompressError::Codec(format!(
            "snappy block of {} bytes declares an impossible {declared} bytes of output",
            block.len()
        )));
    }
    Ok(declared)
}

fn zstd_error(code: usize) -> DecompressError {
    DecompressError::Codec(format!("zstd: {}", zstd::zstd_safe::get_error_name(code)))
}

fn codec_error(error: impl std::fmt::Display) -> DecompressError {
    DecompressError::Codec(error.to_string())
}

/// Compresses a batch's records section with `codec`.
pub(crate) fn compress(
    codec: Compression,
    snappy: SnappyFraming,
    input: &[u8],
) -> io::Result<Vec<u8>> {
    match codec {
        Compression::None => Ok(input.to_vec()),
        Compression::Gzip => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            encoder.write_all(input)?;
            encoder.finish()
        }
        Compression::Snappy => compress_snappy(snappy, input),
        Compression::Lz4 => {
            // Java's KafkaLZ4BlockOutputStream: 64 KiB independent blocks, no content size.
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut encoder = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            encoder.write_all(input)?;
            encoder.finish().map_err(io::Error::other)
        }
        // Streaming, like Java's producer, so the frame carries no content size.
        Compression::Zstd => zstd::stream::encode_all(input, ZSTD_LEVEL),
    }
}

fn compress_snappy(framing: SnappyFraming, input: &[u8]) -> io::Result<Vec<u8>> {
    let mut encoder = snap::raw::Encoder::new();
    match framing {
        SnappyFraming::Raw => encoder.compress_vec(input).map_err(io::Error::other),
        SnappyFraming::Xerial => {
            let mut output = Vec::with_capacity(XERIAL_HEADER_BYTES + input.len());
            output.extend_from_slice(&XERIAL_MAGIC);
            output.extend_from_slice(&1i32.to_be_bytes()); // version
            output.extend_from_slice(&1i32.to_be_bytes()); // minimum compatible version
            for chunk in input.chunks(XERIAL_BLOCK_BYTES) {
                let block = encoder.compress_vec(chunk).map_err(io::Error::other)?;
                let block_len = i32::try_from(block.len()).map_err(io::Error::other)?;
                output.extend_from_slice(&block_len.to_be_bytes());
                output.extend_from_slice(&block);
            }
            Ok(output)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    fn sample_bytes(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 997) as u8)
            .collect()
    }

    #[test]
    fn codec_ids_round_trip() {
        for codec in ALL {
            assert_eq!(Compression::from_id(codec.id()), Some(codec));
        }
        assert_eq!(Compression::from_id(5), None);
    }

    #[test]
    fn every_codec_round_trips_multi_block_input() {
        // 200 KiB spans several xerial (32 KiB) and lz4 (64 KiB) blocks.
        let input = sample_bytes(200 * 1024);
        for codec in ALL {
            for framing in [SnappyFraming::Xerial, SnappyFraming::Raw] {
                let compressed = compress(codec, framing, &input).unwrap();
                let output =
                    decompress(codec, &compressed, 1 << 20, &mut DecompressionBuffer::new())
                        .unwrap();
                assert_eq!(output.as_ref(), &input[..], "{codec:?} {framing:?}");
            }
        }
    }

    #[test]
    fn xerial_output_has_java_header() {
        let compressed = compress(Compression::Snappy, SnappyFraming::Xerial, b"hello").unwrap();
        assert_eq!(&compressed[..8], &XERIAL_MAGIC);
        assert_eq!(&compressed[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn bombs_are_capped_for_every_codec() {
        let input = vec![0u8; 4 << 20];
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let compressed = compress(codec, SnappyFraming::Xerial, &input).unwrap();
            let result = decompress(codec, &compressed, 1 << 20, &mut DecompressionBuffer::new());
            assert!(
                matches!(result, Err(DecompressError::TooLarge)),
                "{codec:?}: {result:?}"
            );
            // Exactly at the limit is allowed.
            assert_eq!(
                decompress(codec, &compressed, 4 << 20, &mut DecompressionBuffer::new())
                    .unwrap()
                    .len(),
                4 << 20
            );
        }
    }

    #[test]
    fn snappy_block_declaring_huge_output_is_rejected_before_allocating() {
        // Preamble varint 0xffffffff0f = 4 GiB, followed by nothing.
        let block = [0xff, 0xff, 0xff, 0xff, 0x0f];
        let result = decompress(
            Compression::Snappy,
            &block,
            usize::MAX,
            &mut DecompressionBuffer::new(),
        );
        assert!(
            matches!(result, Err(DecompressError::Codec(_))),
            "{result:?}"
        );
    }

    #[test]
    fn truncated_and_corrupt_zstd_frames_are_codec_errors() {
        let input = sample_bytes(300 * 1024);
        let frame = compress(Compression::Zstd, SnappyFraming::Xerial, &input).unwrap();
        let mut buffer = DecompressionBuffer::new();
        for cut in [0, 1, 4, 5, 10, frame.len() / 2, frame.len() - 1] {
            let result = decompress(Compression::Zstd, &frame[..cut], 1 << 20, &mut buffer);
            assert!(
                matches!(result, Err(DecompressError::Codec(_))),
                "cut at {cut}: {result:?}"
            );
        }
        for at in 0..4 {
            let mut corrupt = frame.clone();
            corrupt[at] ^= 0x55;
            let result = decompress(Compression::Zstd, &corrupt, 1 << 20, &mut buffer);
            assert!(
                matches!(result, Err(DecompressError::Codec(_))),
                "magic flip at {at}: {result:?}"
            );
        }
        // Flips in the compressed data may or may not be detected (no checksum), but never
        // panic and never pass the cap.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..300 {
            let mut corrupt = frame.clone();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = 4 + (state % (frame.len() as u64 - 4)) as usize;
            corrupt[at] ^= (state >> 40) as u8 | 1;
            if let Ok(output) = decompress(Compression::Zstd, &corrupt, 1 << 20, &mut buffer) {
                assert!(output.len() <= 1 << 20);
            }
        }
        // The reused context recovers from the failures above.
        let output = decompress(Compression::Zstd, &frame, 1 << 20, &mut buffer).unwrap();
        assert_eq!(output.as_ref(), &input[..]);
        // Two frames back to back are one records section.
        let two = [frame.clone(), frame].concat();
        let output = decompress(Compression::Zstd, &two, 1 << 20, &mut buffer).unwrap();
        assert_eq!(output.as_ref(), &[&input[..], &input[..]].concat()[..]);
    }

    #[test]
    fn outputs_from_one_buffer_stay_intact() {
        let mut buffer = DecompressionBuffer::new();
        let inputs: Vec<Vec<u8>> = (1..6).map(|n| sample_bytes(n * 70_000)).collect();
        for codec in ALL {
            let outputs: Vec<Bytes> = inputs
                .iter()
                .map(|input| {
                    let compressed = compress(codec, SnappyFraming::Xerial, input).unwrap();
                    decompress(codec, &compressed, 1 << 20, &mut buffer).unwrap()
                })
                .collect();
            for (input, output) in inputs.iter().zip(&outputs) {
                assert_eq!(output.as_ref(), &input[..], "{codec:?}");
            }
        }
    }

    #[test]
    fn garbage_is_a_codec_error() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let result = decompress(
                codec,
                b"definitely not compressed data",
                1 << 20,
                &mut DecompressionBuffer::new(),
            );
            assert!(
                matches!(result, Err(DecompressError::Codec(_))),
                "{codec:?}: {result:?}"
            );
        }
        let mut truncated_xerial = XERIAL_MAGIC.to_vec();
        truncated_xerial.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0x10, 0]);
        let result = decompress(
            Compression::Snappy,
            &truncated_xerial,
            1 << 20,
            &mut DecompressionBuffer::new(),
        );
        assert!(
            matches!(result, Err(DecompressError::Codec(_))),
            "{result:?}"
        );
    }
}
