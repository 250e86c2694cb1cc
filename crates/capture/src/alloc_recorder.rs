//! The Rust allocation recorder: a global allocator that wraps `System` and records every live
//! allocation (or a Poisson sample of them) under the call stack that made it.
//!
//! Each block gets a small header in front of it: 8 bytes for alignments up to 8, `align`
//! bytes above (only its last 8 are used). The header holds the block's stack id (0: not
//! recorded), so a free finds its stack without a lookup and takes no lock: it subtracts the
//! block's weight from the stack's atomic counters. When sampling, only sampled blocks carry
//! one (for alignments up to 8): every block is asked of `System` 16-aligned, and a sampled
//! block is handed out 8 bytes past that, after its header, so the address alone tells a free
//! whether there is a header to read, and an unsampled block costs nothing but the countdown. An allocation walks the frame pointers
//! (`stack`), finds its stack's id in a per-thread cache (`thread`) or, for a stack never seen,
//! in the shared table under a lock (`table`), and adds to its counters. Nothing is resolved
//! to symbols until [`snapshot`](crate::snapshot) writes a file.

mod sampling;
mod snapshot;
mod stack;
mod table;
mod thread;

pub use snapshot::{SnapshotError, SnapshotInfo, snapshot};
pub use stack::MAX_FRAMES;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes of the header in front of every block.
const HEADER_BYTES: usize = 8;

/// Frames kept by default: deep enough for the user's frames under std's runtime and a few
/// layers of library code, shallow enough that the walk stays a small part of the cost.
pub const DEFAULT_MAX_FRAMES: usize = 64;

/// The installed recorder's sampling period plus one, 0 until a first allocation went through
/// a [`Recorder`]: how [`snapshot`](crate::snapshot) knows the mode, and that one is installed.
static MODE: AtomicU64 = AtomicU64::new(0);

/// A global allocator that records live allocations by call stack.
///
/// Install it with `#[global_allocator]`, build with `RUSTFLAGS="-C force-frame-pointers=yes"`
/// (stacks are found by walking frame pointers) and with debug info for line numbers, and call
/// [`snapshot`](crate::snapshot) to write what is live:
///
/// ```no_run
/// #[global_allocator]
/// static ALLOC: heapgraph_capture::Recorder = heapgraph_capture::Recorder::new();
///
/// fn main() -> Result<(), heapgraph_capture::SnapshotError> {
///     let kept: Vec<Vec<u8>> = (0..100).map(|_| Vec::with_capacity(1000)).collect();
///     heapgraph_capture::snapshot("live.hgd")?;
///     drop(kept);
///     Ok(())
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Recorder {
    /// Mean bytes between samples; 0 records every allocation.
    period: u64,
    max_frames: usize,
}

impl Recorder {
    /// Records every allocation, with exact bytes and counts.
    pub const fn new() -> Recorder {
        Recorder {
            period: 0,
            max_frames: DEFAULT_MAX_FRAMES,
        }
    }

    /// Records a Poisson sample of allocations, one every `mean_bytes` allocated bytes on
    /// average (at least 1), as tcmalloc and pprof do: an allocation of `size` bytes is
    /// sampled with probability `1 - exp(-size / mean_bytes)` and then counts for
    /// `size / p` bytes and `1 / p` allocations, so totals are unbiased estimates. An
    /// allocation that is not sampled costs a subtraction and a comparison.
    /// `512 * 1024` suits production.
    pub const fn sampling(mean_bytes: u64) -> Recorder {
        Recorder {
            period: if mean_bytes == 0 { 1 } else { mean_bytes },
            max_frames: DEFAULT_MAX_FRAMES,
        }
    }

    /// Keeps at most `frames` frames per stack (1 to [`MAX_FRAMES`], default
    /// [`DEFAULT_MAX_FRAMES`]), the innermost ones.
    pub const fn max_frames(mut self, frames: usize) -> Recorder {
        self.max_frames = if frames == 0 {
            1
        } else if frames > MAX_FRAMES {
            MAX_FRAMES
        } else {
            frames
        };
        self
    }

    /// The sampling period in bytes, `None` when every allocation is recorded.
    pub const fn sampling_period(&self) -> Option<u64> {
        if self.period == 0 {
            None
        } else {
            Some(self.period)
        }
    }

    /// The tag for a new block of `size` bytes: `id + 1` of its stack, or 0 when it is not
    /// recorded (not sampled, the recorder's own, or no room in the table).
    #[inline]
    fn tag_for(&self, size: usize) -> u64 {
        thread::with(|state| {
            if state.busy.get() {
                return 0;
            }
            if self.period != 0 && !self.sample(state, size) {
                return 0;
            }
            state.busy.set(true);
            let tag = self.record(state, size);
            state.busy.set(false);
            tag
        })
        .unwrap_or(0)
    }

    /// Whether to sample this allocation of `size` bytes: the countdown of this thread.
    #[inline]
    fn sample(&self, state: &thread::ThreadState, size: usize) -> bool {
        let left = state.countdown.get().saturating_sub(size as i64);
        if left > 0 {
            state.countdown.set(left);
            return false;
        }
        let mut random = state.random.get();
        if random == 0 {
            // First allocation of this thread: draw its first distance, then judge this one.
            // (Also where `snapshot` learns that a sampling recorder is installed: the fast
            // path stays one subtraction.)
            self.installed();
            random = state.seed();
            let first = sampling::next_distance(&mut random, self.period);
            state.random.set(random);
            let left = first.saturating_sub(size as i64);
            if left > 0 {
                state.countdown.set(left);
                return false;
            }
        }
        state
            .countdown
            .set(sampling::next_distance(&mut random, self.period));
        state.random.set(random);
        true
    }

    /// Tells [`snapshot`](crate::snapshot) that this recorder is installed, and its mode.
    #[inline]
    fn installed(&self) {
        if MODE.load(Ordering::Relaxed) == 0 {
            MODE.store(self.period + 1, Ordering::Relaxed);
        }
    }

    /// Captures the stack and adds the block's weight to it.
    #[inline(never)]
    fn record(&self, state: &thread::ThreadState, size: usize) -> u64 {
        self.installed();
        let mut addresses = [0usize; MAX_FRAMES];
        let n_frames = stack::capture(&mut addresses[..self.max_frames], state.stack_top());
        let Some(id) = state.stack_id(&addresses[..n_frames]) else {
            table::LOST.fetch_add(1, Ordering::Relaxed);
            return 0;
        };
        let weight = sampling::weight(size, self.period);
        // SAFETY: handed out by the table just now.
        let record = unsafe { table::record(id) };
        record.bytes.fetch_add(weight.bytes, Ordering::Relaxed);
        record.count.fetch_add(weight.count, Ordering::Relaxed);
        u64::from(id) + 1
    }

    /// Takes a freed block of `size` bytes off the stack `tag` names.
    #[inline]
    fn forget(&self, tag: u64, size: usize) {
        if tag == 0 {
            return;
        }
        let weight = sampling::weight(size, self.period);
        // SAFETY: a non-zero tag in a header was written by `record` for a published id.
        let record = unsafe { table::record((tag - 1) as u32) };
        record.bytes.fetch_sub(weight.bytes, Ordering::Relaxed);
        record.count.fetch_sub(weight.count, Ordering::Relaxed);
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

/// Bytes in front of a block of alignment `align`: the header, padded to keep the block
/// aligned.
#[inline]
fn prefix(align: usize) -> usize {
    align.max(HEADER_BYTES)
}

/// The layout `System` sees for a block of `size` bytes and alignment `align`.
#[inline]
fn outer_layout(size: usize, align: usize) -> Option<Layout> {
    let prefix = prefix(align);
    Layout::from_size_align(size.checked_add(prefix)?, prefix).ok()
}

/// The header of the block at `block`.
///
/// # Safety
/// `block` must come from this allocator.
#[inline]
unsafe fn header(block: *mut u8) -> *mut u64 {
    // SAFETY: every block has at least 8 bytes in front of it, and the prefix keeps them
    // 8-aligned.
    unsafe { block.sub(HEADER_BYTES).cast() }
}

/// Alignment of every block `System` gives a sampling recorder for alignments up to 8: an
/// unsampled block is `System`'s own, at a multiple of it, and a sampled one starts 8 bytes
/// past one (after its header), so a free tells them apart by the address alone.
const SAMPLING_ALIGN: usize = 16;

/// The layout `System` sees for an unsampled block of `size` bytes (alignment at most 8).
#[inline]
fn unsampled_layout(size: usize) -> Option<Layout> {
    Layout::from_size_align(size.max(SAMPLING_ALIGN), SAMPLING_ALIGN).ok()
}

/// The layout `System` sees for a sampled block of `size` bytes (alignment at most 8).
#[inline]
fn sampled_layout(size: usize) -> Option<Layout> {
    Layout::from_size_align(size.checked_add(SAMPLING_ALIGN)?, SAMPLING_ALIGN).ok()
}

/// Whether a block of a sampling recorder with alignment at most 8 was sampled.
#[inline]
fn is_sampled(block: *mut u8) -> bool {
    block as usize % SAMPLING_ALIGN == HEADER_BYTES
}

impl Recorder {
    /// Whether blocks of `layout` take the sampling path: no header unless sampled.
    #[inline]
    fn sampling_path(&self, layout: Layout) -> bool {
        self.period != 0 && layout.align() <= HEADER_BYTES
    }

    /// A block on the sampling path; `zeroed` as `alloc_zeroed`.
    #[inline]
    fn sampled_alloc(&self, size: usize, zeroed: bool) -> *mut u8 {
        self.sampled_alloc_tagged(size, zeroed, self.tag_for(size))
    }

    /// A block on the sampling path whose sampling was decided already: `tag` 0 for not
    /// sampled.
    #[inline]
    fn sampled_alloc_tagged(&self, size: usize, zeroed: bool, tag: u64) -> *mut u8 {
        let get = |layout: Layout| {
            // SAFETY: both layouts have a non-zero size.
            unsafe {
                if zeroed {
                    System.alloc_zeroed(layout)
                } else {
                    System.alloc(layout)
                }
            }
        };
        if tag == 0 {
            return unsampled_layout(size).map_or(std::ptr::null_mut(), get);
        }
        let base = sampled_layout(size).map_or(std::ptr::null_mut(), get);
        if base.is_null() {
            self.forget(tag, size);
            return base;
        }
        // SAFETY: the block has 16 bytes in front of the caller's; the header is the second 8.
        unsafe {
            let block = base.add(HEADER_BYTES);
            header(block).write(tag);
            block
        }
    }

    /// Frees a block of the sampling path.
    ///
    /// # Safety
    /// As `GlobalAlloc::dealloc`, for a block of the sampling path.
    #[inline]
    unsafe fn sampled_dealloc(&self, block: *mut u8, size: usize) {
        // SAFETY: both layouts were valid when the block was made from the same size.
        unsafe {
            if is_sampled(block) {
                self.forget(header(block).read(), size);
                let layout =
                    Layout::from_size_align_unchecked(size + SAMPLING_ALIGN, SAMPLING_ALIGN);
                System.dealloc(block.sub(HEADER_BYTES), layout);
            } else {
                let layout =
                    Layout::from_size_align_unchecked(size.max(SAMPLING_ALIGN), SAMPLING_ALIGN);
                System.dealloc(block, layout);
            }
        }
    }

    /// Resizes a block of the sampling path: the resized block is sampled afresh, as a new
    /// allocation would be (tracemalloc's rule: it belongs to the resizing stack).
    ///
    /// # Safety
    /// As `GlobalAlloc::realloc`, for a block of the sampling path.
    #[inline]
    unsafe fn sampled_realloc(&self, block: *mut u8, old_size: usize, new_size: usize) -> *mut u8 {
        // One decision for the new block: deciding twice would sample it with p².
        let tag = self.tag_for(new_size);
        if tag == 0 && !is_sampled(block) {
            let (Some(old), Some(new)) = (unsampled_layout(old_size), unsampled_layout(new_size))
            else {
                return std::ptr::null_mut();
            };
            // SAFETY: the block was made with layout `old`; `new` is valid.
            return unsafe { System.realloc(block, old, new.size()) };
        }
        // Sampled before or after: a new block of the right kind, then a copy.
        let moved = self.sampled_alloc_tagged(new_size, false, tag);
        if !moved.is_null() {
            // SAFETY: both blocks hold at least the smaller size; they are distinct.
            unsafe {
                std::ptr::copy_nonoverlapping(block, moved, old_size.min(new_size));
                self.sampled_dealloc(block, old_size);
            }
        }
        moved
    }
}

// SAFETY: every block is a `System` block of a layout derived from the caller's by the rules
// above (a header prefix that keeps the requested alignment, or, on the sampling path,
// 16-byte alignment with an 8-byte header for sampled blocks), freed with the same layout;
// the caller's bytes are never written. Tags only ever index the table.
unsafe impl GlobalAlloc for Recorder {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if self.sampling_path(layout) {
            return self.sampled_alloc(layout.size(), false);
        }
        let Some(outer) = outer_layout(layout.size(), layout.align()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: `outer` has a non-zero size (it includes the header).
        let base = unsafe { System.alloc(outer) };
        if base.is_null() {
            return base;
        }
        // SAFETY: the prefix lies inside the block.
        let block = unsafe { base.add(outer.align()) };
        let tag = self.tag_for(layout.size());
        // SAFETY: `block` is this allocator's.
        unsafe { header(block).write(tag) };
        block
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if self.sampling_path(layout) {
            return self.sampled_alloc(layout.size(), true);
        }
        let Some(outer) = outer_layout(layout.size(), layout.align()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: as in `alloc`.
        let base = unsafe { System.alloc_zeroed(outer) };
        if base.is_null() {
            return base;
        }
        // SAFETY: as in `alloc`.
        let block = unsafe { base.add(outer.align()) };
        let tag = self.tag_for(layout.size());
        // SAFETY: as in `alloc`.
        unsafe { header(block).write(tag) };
        block
    }

    #[inline]
    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if self.sampling_path(layout) {
            // SAFETY: the caller hands back a block of ours with its layout.
            return unsafe { self.sampled_dealloc(block, layout.size()) };
        }
        // SAFETY: the caller hands back a block of ours with its layout.
        let tag = unsafe { header(block).read() };
        self.forget(tag, layout.size());
        let prefix = prefix(layout.align());
        // SAFETY: the outer layout was valid when the block was made, with the same size and
        // alignment.
        unsafe {
            let outer = Layout::from_size_align_unchecked(layout.size() + prefix, prefix);
            System.dealloc(block.sub(prefix), outer);
        }
    }

    #[inline]
    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if self.sampling_path(layout) {
            // SAFETY: the caller hands back a block of ours with its layout.
            return unsafe { self.sampled_realloc(block, layout.size(), new_size) };
        }
        let prefix = prefix(layout.align());
        let Some(new_outer) = outer_layout(new_size, layout.align()) else {
            return std::ptr::null_mut();
        };
        // SAFETY: the caller hands back a block of ours with its layout.
        let old_tag = unsafe { header(block).read() };
        // SAFETY: as in `dealloc`; `new_outer` is valid, and the header moves with the bytes.
        let base = unsafe {
            let outer = Layout::from_size_align_unchecked(layout.size() + prefix, prefix);
            System.realloc(block.sub(prefix), outer, new_outer.size())
        };
        if base.is_null() {
            return base;
        }
        // tracemalloc's rule: the block now belongs to the stack that resized it.
        self.forget(old_tag, layout.size());
        // SAFETY: as in `alloc`.
        let block = unsafe { base.add(prefix) };
        let tag = self.tag_for(new_size);
        // SAFETY: as in `alloc`.
        unsafe { header(block).write(tag) };
        block
    }
}
