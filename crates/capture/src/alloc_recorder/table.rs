//! Every stack seen so far, stored once, with the bytes and allocations live under it.
//!
//! A stack is a list of return addresses; its id is its place in a table that only grows.
//! Records live in segments that never move (segment `k` holds `FIRST_SEGMENT << k` records),
//! so a thread that knows an id reads the record's counters and addresses without a lock:
//! allocation and free only touch atomics. Only a stack never seen before takes the lock, to
//! be added. Memory for the table comes straight from `System`, never through the global
//! allocator that the recorder itself is.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hash::Hasher;
use std::ptr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// Records in the first segment; each later segment doubles.
const FIRST_SEGMENT: usize = 1024;
/// Segments: enough for every `u32` id (`1024 · (2²³ − 1)` records is more).
const SEGMENTS: usize = 23;
/// Words of return addresses per arena block (each stack's addresses sit in one block).
const ARENA_BLOCK_WORDS: usize = 1 << 16;

/// One stack: its return addresses and what is live under it. Aligned to a cache line so that
/// the counters of two stacks never share one (threads allocating at different sites would
/// otherwise contend).
#[repr(C, align(64))]
pub(crate) struct StackRecord {
    /// Bytes live (estimated, when sampling). Updated with wrapping adds and subtracts: a free
    /// on one thread may land before the allocation's add from another is visible, so a reader
    /// takes the value as signed.
    pub(crate) bytes: AtomicU64,
    /// Allocations live, in units of [`COUNT_ONE`](super::sampling::COUNT_ONE).
    pub(crate) count: AtomicU64,
    hash: u64,
    addresses: *const usize,
    len: usize,
}

impl StackRecord {
    /// The stack's return addresses, innermost first.
    pub(crate) fn addresses(&self) -> &[usize] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: written once before the record was published, in an arena block that is
        // never freed or moved.
        unsafe { std::slice::from_raw_parts(self.addresses, self.len) }
    }
}

static SEGMENT_STARTS: [AtomicPtr<StackRecord>; SEGMENTS] =
    [const { AtomicPtr::new(ptr::null_mut()) }; SEGMENTS];

/// Stacks published so far: ids below it have complete records.
static PUBLISHED: AtomicU32 = AtomicU32::new(0);

/// Allocations that could not be given a stack (the recorder could not get memory for its
/// table); they are not counted.
pub(crate) static LOST: AtomicU64 = AtomicU64::new(0);

/// The segment and slot of `id`.
fn locate(id: u32) -> (usize, usize) {
    let id = id as usize;
    let group = id / FIRST_SEGMENT + 1;
    let segment = (usize::BITS - 1 - group.leading_zeros()) as usize;
    let offset = id - FIRST_SEGMENT * ((1 << segment) - 1);
    (segment, offset)
}

/// The record of a published stack.
///
/// # Safety
/// `id` must have been handed out by [`intern`] (so its segment exists and its record is
/// complete), and the caller must have learnt it through a chain that orders it after the
/// publication (the lock, [`published`], or a header written by the allocating thread and
/// passed on with the block).
pub(crate) unsafe fn record(id: u32) -> &'static StackRecord {
    let (segment, offset) = locate(id);
    let start = SEGMENT_STARTS[segment].load(Ordering::Acquire);
    // SAFETY: by the contract, the segment holds `offset` and the record is initialised; it is
    // never freed.
    unsafe { &*start.add(offset) }
}

/// The number of stacks whose records are complete.
pub(crate) fn published() -> u32 {
    PUBLISHED.load(Ordering::Acquire)
}

/// The hash of a list of return addresses.
pub(crate) fn hash_addresses(addresses: &[usize]) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write_usize(addresses.len());
    for &address in addresses {
        hasher.write_usize(address);
    }
    hasher.finish()
}

/// The open-addressing index from hashes to ids, and the arena the addresses go into.
struct Index {
    /// `id + 1` per slot, 0 for empty; `mask + 1` slots, a power of two.
    slots: *mut u32,
    mask: usize,
    arena_next: *mut usize,
    arena_left: usize,
}

// SAFETY: the raw pointers are owned by the index, reached only under its mutex.
unsafe impl Send for Index {}

static INDEX: Mutex<Index> = Mutex::new(Index {
    slots: ptr::null_mut(),
    mask: 0,
    arena_next: ptr::null_mut(),
    arena_left: 0,
});

/// The id of the stack `addresses` (whose hash is `hash`), adding it if it is new; `None`
/// when the table cannot grow (no memory, or 2³² stacks).
pub(crate) fn intern(addresses: &[usize], hash: u64) -> Option<u32> {
    let mut index = INDEX
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let n_stacks = PUBLISHED.load(Ordering::Relaxed);
    if (n_stacks as usize + 1) * 2 > index.mask + 1 {
        index.grow(n_stacks)?;
    }
    let mut slot = hash as usize & index.mask;
    loop {
        // SAFETY: `slot` is masked into the table.
        let tag = unsafe { *index.slots.add(slot) };
        if tag == 0 {
            break;
        }
        // SAFETY: tags are published ids.
        let existing = unsafe { record(tag - 1) };
        if existing.hash == hash && existing.addresses() == addresses {
            return Some(tag - 1);
        }
        slot = (slot + 1) & index.mask;
    }
    if n_stacks == u32::MAX - 1 {
        return None;
    }
    let id = n_stacks;
    let stored = index.store_addresses(addresses)?;
    let (segment, offset) = locate(id);
    let mut start = SEGMENT_STARTS[segment].load(Ordering::Relaxed);
    if start.is_null() {
        start = allocate_zeroed::<StackRecord>(FIRST_SEGMENT << segment)?;
        SEGMENT_STARTS[segment].store(start, Ordering::Release);
    }
    // SAFETY: the slot is inside the segment, unused (ids are handed out once, under the
    // lock), and zeroed; nobody reads it before `PUBLISHED` says so.
    unsafe {
        start.add(offset).write(StackRecord {
            bytes: AtomicU64::new(0),
            count: AtomicU64::new(0),
            hash,
            addresses: stored,
            len: addresses.len(),
        });
        *index.slots.add(slot) = id + 1;
    }
    PUBLISHED.store(id + 1, Ordering::Release);
    Some(id)
}

impl Index {
    /// Doubles the slots (at least 4096) and files every published stack again.
    fn grow(&mut self, n_stacks: u32) -> Option<()> {
        let n_slots = ((self.mask + 1) * 2).max(4096);
        let slots = allocate_zeroed::<u32>(n_slots)?;
        let mask = n_slots - 1;
        for id in 0..n_stacks {
            // SAFETY: ids below `PUBLISHED` are complete; we hold the lock.
            let hash = unsafe { record(id) }.hash;
            let mut slot = hash as usize & mask;
            // SAFETY: masked slots of the new table.
            unsafe {
                while *slots.add(slot) != 0 {
                    slot = (slot + 1) & mask;
                }
                *slots.add(slot) = id + 1;
            }
        }
        if !self.slots.is_null() {
            let old = Layout::array::<u32>(self.mask + 1).ok()?;
            // SAFETY: allocated by `allocate_zeroed` with this layout.
            unsafe { System.dealloc(self.slots.cast(), old) };
        }
        self.slots = slots;
        self.mask = mask;
        Some(())
    }

    /// Copies `addresses` into the arena, where they never move.
    fn store_addresses(&mut self, addresses: &[usize]) -> Option<*const usize> {
        if addresses.is_empty() {
            return Some(ptr::null());
        }
        if self.arena_left < addresses.len() {
            let words = ARENA_BLOCK_WORDS.max(addresses.len());
            self.arena_next = allocate_zeroed::<usize>(words)?;
            self.arena_left = words;
        }
        let at = self.arena_next;
        // SAFETY: the block has `arena_left >= addresses.len()` words left at `at`.
        unsafe {
            ptr::copy_nonoverlapping(addresses.as_ptr(), at, addresses.len());
            self.arena_next = at.add(addresses.len());
        }
        self.arena_left -= addresses.len();
        Some(at)
    }
}

/// `n` zeroed values of `T` from `System`, never freed unless the caller frees them.
fn allocate_zeroed<T>(n: usize) -> Option<*mut T> {
    let layout = Layout::array::<T>(n).ok()?;
    // SAFETY: `layout` has a non-zero size (n > 0 at every call).
    let start = unsafe { System.alloc_zeroed(layout) };
    (!start.is_null()).then_some(start.cast())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_map_to_segments_without_gaps() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(1023), (0, 1023));
        assert_eq!(locate(1024), (1, 0));
        assert_eq!(locate(3071), (1, 2047));
        assert_eq!(locate(3072), (2, 0));
        assert_eq!(locate(u32::MAX).0, SEGMENTS - 1);
        let (segment, offset) = locate(u32::MAX);
        assert!(offset < FIRST_SEGMENT << segment);
    }

    #[test]
    fn stacks_are_stored_once_even_from_many_threads() {
        // Addresses no real stack has, so that this test's stacks are its own even in a
        // process where the recorder is installed.
        let stacks: Vec<Vec<usize>> = (0..3000usize)
            .map(|i| {
                (0..=(i % 70))
                    .map(|j| 0xdead_0000_0000 + i * 4096 + j)
                    .collect()
            })
            .collect();
        let ids: Vec<Vec<u32>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|thread| {
                    let stacks = &stacks;
                    scope.spawn(move || {
                        // Each thread walks the stacks in its own order.
                        let mut ids = vec![0u32; stacks.len()];
                        for k in 0..stacks.len() {
                            let i = (k * 7 + thread * 331) % stacks.len();
                            let hash = hash_addresses(&stacks[i]);
                            let id = intern(&stacks[i], hash).expect("room");
                            // SAFETY: just handed out.
                            let stored = unsafe { record(id) };
                            stored.bytes.fetch_add(i as u64, Ordering::Relaxed);
                            ids[i] = id;
                        }
                        ids
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("no panic"))
                .collect()
        });
        for thread_ids in &ids[1..] {
            assert_eq!(thread_ids, &ids[0]);
        }
        let mut distinct = ids[0].clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), stacks.len());
        for (i, &id) in ids[0].iter().enumerate() {
            // SAFETY: handed out above.
            let stored = unsafe { record(id) };
            assert_eq!(stored.addresses(), &stacks[i][..]);
            assert_eq!(stored.bytes.load(Ordering::Relaxed), 8 * i as u64);
        }
        assert!(published() as usize >= stacks.len());
    }
}
