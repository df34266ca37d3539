//! What every fuzz target shares: a counting global allocator with a per-input cap.
//!
//! "No panic" is not enough for code that sizes buffers from untrusted bytes: a length field
//! that drives a 4 GiB allocation is a denial of service even when it is later rejected. Each
//! target runs its input under [`with_alloc_cap`], which fails the input (an allocation failure
//! aborts the process, and libFuzzer saves the input as a crash) as soon as the bytes allocated
//! through Rust's allocator and still live pass the cap, and returns the peak it saw.
//!
//! Only Rust allocations are counted: libzstd's own `malloc`s are covered by libFuzzer's
//! `-malloc_limit_mb` (see `fuzz/README.md`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting live bytes and refusing to pass the armed cap.
pub struct CountingAllocator;

/// Bytes allocated through the global allocator and not yet freed.
static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
/// The most `LIVE_BYTES` reached since the current input started.
static PEAK_BYTES: AtomicUsize = AtomicUsize::new(0);
/// Live bytes past which an allocation fails; `usize::MAX` while no input runs.
static LIMIT_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);

impl CountingAllocator {
    /// Counts `grow` more bytes, `false` (counting nothing) if that passes the limit.
    fn reserve(grow: usize) -> bool {
        let live = LIVE_BYTES.fetch_add(grow, Ordering::Relaxed) + grow;
        if live > LIMIT_BYTES.load(Ordering::Relaxed) {
            LIVE_BYTES.fetch_sub(grow, Ordering::Relaxed);
            return false;
        }
        PEAK_BYTES.fetch_max(live, Ordering::Relaxed);
        true
    }

    fn release(shrink: usize) {
        LIVE_BYTES.fetch_sub(shrink, Ordering::Relaxed);
    }
}

// SAFETY: every call forwards to `System` with the caller's layout unchanged; the counters
// only decide whether to forward (returning null, which callers must handle, when not).
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Self::reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        let ptr = System.alloc(layout);
        if ptr.is_null() {
            Self::release(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !Self::reserve(layout.size()) {
            return std::ptr::null_mut();
        }
        let ptr = System.alloc_zeroed(layout);
        if ptr.is_null() {
            Self::release(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        Self::release(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old_size = layout.size();
        if new_size > old_size && !Self::reserve(new_size - old_size) {
            return std::ptr::null_mut();
        }
        let new = System.realloc(ptr, layout, new_size);
        if new.is_null() {
            if new_size > old_size {
                Self::release(new_size - old_size);
            }
        } else if new_size < old_size {
            Self::release(old_size - new_size);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Runs `run` with at most `cap_bytes` more live bytes than when it started; passing the cap
/// aborts the process with "memory allocation of N bytes failed". Returns `run`'s result and
/// the peak extra live bytes it reached.
pub fn with_alloc_cap<T>(cap_bytes: usize, run: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE_BYTES.load(Ordering::Relaxed);
    PEAK_BYTES.store(base, Ordering::Relaxed);
    LIMIT_BYTES.store(base.saturating_add(cap_bytes), Ordering::Relaxed);
    let result = run();
    LIMIT_BYTES.store(usize::MAX, Ordering::Relaxed);
    let peak = PEAK_BYTES.load(Ordering::Relaxed).saturating_sub(base);
    (result, peak)
}

/// A little-endian cursor over a fuzz input's leading control bytes; missing bytes read as 0,
/// so every input is usable.
pub struct Control<'a> {
    bytes: &'a [u8],
}

impl<'a> Control<'a> {
    /// Reads from the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// The next `N` bytes, zero-padded at the end of input.
    pub fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.bytes.len());
        out[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        out
    }

    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    pub fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.array())
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The next `n` bytes, fewer at the end of input.
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (taken, rest) = self.bytes.split_at(n.min(self.bytes.len()));
        self.bytes = rest;
        taken
    }

    /// Everything not read yet.
    pub fn rest(self) -> &'a [u8] {
        self.bytes
    }
}
