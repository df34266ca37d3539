//! Output space for decompressed batches, reused from batch to batch.
//!
//! Why: decompressing each batch into a fresh `Vec` costs an allocation, a zero-fill and the
//! first touch of new pages per batch (the recorded profile of the 1 KiB lz4 workload spent
//! about 10 % of its samples there). Here one chunk serves many batches: a batch is written at
//! the front of the chunk's unused *room* and split off as a frozen [`Bytes`], so the records
//! of earlier batches keep pointing at their own bytes (the chunk lives as long as any of them)
//! while later batches write after them. Nothing is ever overwritten while a record can see it.
//!
//! The room is always initialized memory: a chunk is zeroed once when it is allocated (through
//! `calloc`, which gets fresh pages from the kernel already zeroed), so the codecs write into
//! plain `&mut [u8]` without `unsafe` and without a zero-fill per batch.

use bytes::{Bytes, BytesMut};
use zstd::zstd_safe::DCtx;

/// Size of a shared chunk: room for several batches of Java's default 16–64 KiB compressed
/// batches at typical ratios, small enough that a chunk pinned by a few unconsumed records
/// costs little memory.
const SHARED_CHUNK_BYTES: usize = 1 << 20;

/// Reusable output space (and zstd context) for decompressing batches; see the module docs.
///
/// The consumer keeps one and passes it to [`RecordBatch::records_in`]; one per thread that
/// decompresses is the intended use.
///
/// [`RecordBatch::records_in`]: super::RecordBatch::records_in
pub struct DecompressionBuffer {
    /// Initialized bytes not handed out yet: the unused end of the current chunk.
    room: BytesMut,
    /// The least a new chunk holds; 0 sizes chunks to the batch that needs them.
    chunk_bytes: usize,
    /// Created on the first zstd batch and reset before each one, so its window buffers are
    /// allocated once.
    zstd: Option<DCtx<'static>>,
}

impl std::fmt::Debug for DecompressionBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecompressionBuffer")
            .field("room_bytes", &self.room.len())
            .field("chunk_bytes", &self.chunk_bytes)
            .finish_non_exhaustive()
    }
}

impl Default for DecompressionBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl DecompressionBuffer {
    /// A buffer that allocates 1 MiB chunks (or larger, for a larger batch) and fills each
    /// with as many batches as fit.
    pub fn new() -> Self {
        Self::with_chunk_bytes(SHARED_CHUNK_BYTES)
    }

    /// A buffer for a single batch: chunks are sized to what the batch needs.
    pub(crate) fn one_shot() -> Self {
        Self::with_chunk_bytes(0)
    }

    fn with_chunk_bytes(chunk_bytes: usize) -> Self {
        Self {
            room: BytesMut::new(),
            chunk_bytes,
            zstd: None,
        }
    }

    /// The room, at least `bytes` long; when the current room is shorter, a new chunk replaces
    /// it and the first `keep` bytes (the batch's output so far) are copied over.
    pub(crate) fn room_at_least(&mut self, keep: usize, bytes: usize) -> &mut [u8] {
        if self.room.len() < bytes {
            let mut chunk = BytesMut::zeroed(bytes.max(self.chunk_bytes));
            chunk[..keep].copy_from_slice(&self.room[..keep]);
            self.room = chunk;
        }
        &mut self.room[..]
    }

    /// The batch's output, the first `written` bytes of the room, which it leaves.
    pub(crate) fn take(&mut self, written: usize) -> Bytes {
        self.room.split_to(written).freeze()
    }

    /// [`room_at_least`](Self::room_at_least) together with the zstd decompression context,
    /// which is created on first use.
    pub(crate) fn room_and_zstd_context(
        &mut self,
        keep: usize,
        bytes: usize,
    ) -> (&mut [u8], &mut DCtx<'static>) {
        self.room_at_least(keep, bytes);
        let context = self.zstd.get_or_insert_with(DCtx::create);
        (&mut self.room[..], context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_share_a_chunk_without_overwriting_each_other() {
        let mut buffer = DecompressionBuffer::with_chunk_bytes(16);
        buffer.room_at_least(0, 4)[..4].copy_from_slice(b"abcd");
        let first = buffer.take(4);
        buffer.room_at_least(0, 4)[..4].copy_from_slice(b"efgh");
        let second = buffer.take(4);
        assert_eq!((&first[..], &second[..]), (&b"abcd"[..], &b"efgh"[..]));
        // Same chunk: the second batch starts where the first ended.
        assert_eq!(first.as_ptr().wrapping_add(4), second.as_ptr());
    }

    #[test]
    fn growing_keeps_the_output_so_far_and_leaves_earlier_batches_alone() {
        let mut buffer = DecompressionBuffer::with_chunk_bytes(8);
        buffer.room_at_least(0, 8)[..8].copy_from_slice(b"earlier!");
        let earlier = buffer.take(8);
        buffer.room_at_least(0, 2)[..2].copy_from_slice(b"xy");
        let room = buffer.room_at_least(2, 32);
        assert!(room.len() >= 32);
        assert_eq!(&room[..2], b"xy");
        room[2..5].copy_from_slice(b"zzz");
        assert_eq!(&buffer.take(5)[..], b"xyzzz");
        assert_eq!(&earlier[..], b"earlier!");
    }
}
