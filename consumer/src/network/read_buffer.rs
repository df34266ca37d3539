//! A connection's read buffer, which reuses the allocations that large responses were read into.
//!
//! Why: a fetch response is read into one allocation of its whole size (see
//! `FrameDecoder::read_reservation`) and the records handed to the application are slices of it
//! (zero-copy), so that allocation lives until the application drops the last of them — by then
//! the next response is being read into another one. Left to the allocator, these alternating
//! allocations of ~12 MiB (12 partitions × `max.partition.fetch.bytes`), each a slightly
//! different size, fragmented glibc's arena of the network thread: a consumer reading 1 KiB
//! records held 42–54 MiB of RSS for a peak heap of 25 MB (heaptrack; with
//! `MALLOC_MMAP_THRESHOLD_` fixed at 1 MiB the same run stayed at 30 MiB, at the price of fresh
//! pages, and their faults, for every response). Keeping the allocation the previous response
//! left behind and reading the next large response into it, once the application has released
//! it, holds a connection at two such allocations, reused, instead.

use bytes::BytesMut;

/// Large allocations are rounded up to a multiple of this (small ones to a power of two), so
/// that a response a little larger than the one before still fits an allocation kept from it.
const ALLOCATION_QUANTUM_BYTES: usize = 1024 * 1024;

/// Allocations kept besides the current one. One is enough when the application drains a
/// response before the next is fetched, as our fetcher arranges (it fetches from a broker only
/// once nothing of that broker's last response is buffered).
const MAX_SPARES: usize = 1;

/// The bytes read from the connection and not yet split off as frames, plus one spare
/// allocation.
#[derive(Debug, Default)]
pub(crate) struct ReadBuffer {
    current: BytesMut,
    /// The capacity `current` was allocated with (its own capacity shrinks as frames are split
    /// off the front), so that the smaller of two allocations is the one let go.
    current_allocation_bytes: usize,
    spares: Vec<(usize, BytesMut)>,
}

impl ReadBuffer {
    /// The unread bytes, for the frame decoder.
    pub fn bytes(&self) -> &BytesMut {
        &self.current
    }

    /// The unread bytes, for reading into and splitting frames off.
    pub fn bytes_mut(&mut self) -> &mut BytesMut {
        &mut self.current
    }

    /// Makes room for `additional` more bytes: in the current allocation when it has the room
    /// or can take it back (every frame split off it has been dropped), else in the spare when
    /// the application has released it, else in a new allocation. The unread bytes move along.
    pub fn reserve(&mut self, additional: usize) {
        if self.current.try_reclaim(additional) {
            return;
        }
        let needed = self.current.len() + additional;
        let reusable = self
            .spares
            .iter_mut()
            .position(|(_, spare)| spare.try_reclaim(needed));
        let (allocation_bytes, mut next) = match reusable {
            Some(i) => self.spares.swap_remove(i),
            None => {
                let allocation_bytes = if needed < ALLOCATION_QUANTUM_BYTES {
                    needed.next_power_of_two()
                } else {
                    needed.next_multiple_of(ALLOCATION_QUANTUM_BYTES)
                };
                (allocation_bytes, BytesMut::with_capacity(allocation_bytes))
            }
        };
        next.extend_from_slice(&self.current);
        let mut previous = std::mem::replace(&mut self.current, next);
        let previous_allocation_bytes =
            std::mem::replace(&mut self.current_allocation_bytes, allocation_bytes);
        previous.clear();
        self.spares.push((previous_allocation_bytes, previous));
        if self.spares.len() > MAX_SPARES {
            let smallest = (0..self.spares.len())
                .min_by_key(|&i| self.spares[i].0)
                .unwrap_or(0);
            self.spares.swap_remove(smallest);
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::BufMut;

    use super::*;

    const MIB: usize = 1024 * 1024;

    /// Reads a frame of `size_bytes` into `buffer` as the connection does and splits it off.
    fn read_frame(buffer: &mut ReadBuffer, size_bytes: usize) -> bytes::Bytes {
        buffer.reserve(size_bytes);
        buffer.bytes_mut().put_bytes(7, size_bytes);
        buffer.bytes_mut().split_to(size_bytes).freeze()
    }

    #[test]
    fn a_large_response_is_read_into_the_allocation_the_application_released() {
        let mut buffer = ReadBuffer::default();
        let first = read_frame(&mut buffer, 12 * MIB - 8192);
        let first_allocation = first.as_ptr();
        let second = read_frame(&mut buffer, 12 * MIB - 8192);
        assert_ne!(
            second.as_ptr(),
            first_allocation,
            "the first response is still held, so the second needs its own allocation"
        );
        drop(first);
        let third = read_frame(&mut buffer, 12 * MIB - 8192);
        assert_eq!(
            third.as_ptr(),
            first_allocation,
            "the third response goes where the released first one was"
        );
        let second_allocation = second.as_ptr();
        drop(second);
        let fourth = read_frame(&mut buffer, 12 * MIB - 100);
        assert_eq!(
            fourth.as_ptr(),
            second_allocation,
            "a slightly larger response still fits the rounded-up allocation"
        );
    }

    #[test]
    fn bytes_read_before_the_switch_move_to_the_new_allocation() {
        let mut buffer = ReadBuffer::default();
        let held = read_frame(&mut buffer, 2 * MIB);
        buffer.reserve(8);
        buffer.bytes_mut().put_slice(b"\x00\x20\x00\x00abcd");
        buffer.reserve(2 * MIB);
        assert_eq!(&buffer.bytes()[..], b"\x00\x20\x00\x00abcd");
        assert!(buffer.bytes().capacity() >= 2 * MIB + 8);
        drop(held);
    }

    #[test]
    fn at_most_two_allocations_are_kept_when_the_application_holds_more() {
        let mut buffer = ReadBuffer::default();
        let held: Vec<_> = (0..4).map(|_| read_frame(&mut buffer, 3 * MIB)).collect();
        assert_eq!(buffer.spares.len(), MAX_SPARES);
        let held_allocations: Vec<_> = held.iter().map(|frame| frame.as_ptr()).collect();
        drop(held);
        let next = read_frame(&mut buffer, 3 * MIB);
        let next_too = read_frame(&mut buffer, 3 * MIB);
        for frame in [&next, &next_too] {
            assert!(
                held_allocations.contains(&frame.as_ptr()),
                "once released, the kept allocations are reused"
            );
        }
        assert_ne!(next.as_ptr(), next_too.as_ptr());
    }

    #[test]
    fn small_frames_reuse_the_room_left_in_the_current_allocation() {
        let mut buffer = ReadBuffer::default();
        let large = read_frame(&mut buffer, 5 * MIB - 100);
        let allocation_end = large.as_ptr() as usize + 5 * MIB;
        let small = read_frame(&mut buffer, 50);
        let small_at = small.as_ptr() as usize;
        assert!(
            (large.as_ptr() as usize..allocation_end).contains(&small_at),
            "a heartbeat response fits the rounded-up tail"
        );
    }
}
