//! Each decompressor (gzip, snappy raw and xerial, the LZ4 frame reader, zstd) with its size
//! cap, and the writer's compression round-tripped through it.
//!
//! Input: a selector byte (low 3 bits: codec id 0-4, or 5 for the LZ4 frame reader alone; bit
//! 7: round trip), a 20-bit cap, then the payload.
//!
//! Properties: no panic; the output never passes the cap; live allocation stays within a small
//! multiple of the cap plus the input, whatever sizes the input declares; compressing with the
//! writer and decompressing gives the input back.
#![no_main]

use kafka_consumer::fuzzing::{compress, decompress, decompress_lz4_frame, DecompressFailure};
use kafka_consumer::records::Compression;
use kafka_consumer_fuzz::{with_alloc_cap, Control};
use libfuzzer_sys::fuzz_target;

const MAX_CAP_BYTES: u32 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let mut control = Control::new(data);
    let selector = control.u8();
    let cap_bytes = (control.u32() % (MAX_CAP_BYTES + 1)) as usize;
    let payload = control.rest();
    let codec_id = selector & 0x07;
    let codec = Compression::from_id(codec_id.min(4)).expect("ids 0-4 are codecs");

    if selector & 0x80 != 0 {
        let cap = cap_bytes.max(payload.len());
        let round_trip = if codec_id == 5 {
            let compressed = compress(Compression::Lz4, payload).expect("lz4 in memory");
            decompress_lz4_frame(&compressed, cap)
        } else {
            let compressed = compress(codec, payload).expect("compressing in memory cannot fail");
            decompress(codec, &compressed, cap)
        };
        assert_eq!(round_trip.as_deref(), Ok(payload), "{codec:?} round trip");
        return;
    }

    // Growth keeps the old room while copying into the new one (2x the output), the buffer's
    // chunk is at least 1 MiB, and codec state (gzip's window) is small and fixed.
    let alloc_cap = 3 * cap_bytes + 64 * payload.len() + (3 << 20);
    let (result, _peak) = with_alloc_cap(alloc_cap, || {
        if codec_id == 5 {
            decompress_lz4_frame(payload, cap_bytes)
        } else {
            decompress(codec, payload, cap_bytes)
        }
    });
    match result {
        Ok(out) => assert!(
            out.len() <= cap_bytes,
            "{} bytes past the {cap_bytes}-byte cap",
            out.len()
        ),
        Err(DecompressFailure::TooLarge) => {}
        Err(DecompressFailure::Codec(message)) => assert!(!message.is_empty()),
    }
});
