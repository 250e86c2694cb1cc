//! What each thread keeps for the recorder: a guard against recording the recorder's own
//! allocations, its stack's bounds, its sampling countdown, and a small cache from stack hashes
//! to ids so that a stack seen before costs no lock.
//!
//! Everything is const-initialised and has no destructor: touching it never allocates (a
//! thread-local with a destructor registers it, and std's registration allocates, which would
//! re-enter the allocator), and it stays usable while other thread-locals are torn down.

use super::table;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicU64, Ordering};

/// Slots of the per-thread stack cache: 16 KiB a thread, enough for the hot sites of most
/// threads; a miss costs a lock and a probe of the shared index.
const CACHE_SLOTS: usize = 1024;

/// A cached stack: its hash and `id + 1` (0: empty slot).
#[derive(Clone, Copy)]
struct CacheSlot {
    hash: u64,
    tag: u32,
}

/// One thread's state.
pub(crate) struct ThreadState {
    /// Set while the recorder works on this thread (and while a snapshot is written): any
    /// allocation then goes to `System` unrecorded.
    pub(crate) busy: Cell<bool>,
    /// One past the top of this thread's stack; 0 until first needed, 1 when unknown.
    stack_top: Cell<usize>,
    /// Bytes left until the next sample; see `sampling`.
    pub(crate) countdown: Cell<i64>,
    /// The sampling generator's state; 0 until first needed.
    pub(crate) random: Cell<u64>,
    cache: UnsafeCell<[CacheSlot; CACHE_SLOTS]>,
}

thread_local! {
    static STATE: ThreadState = const {
        ThreadState {
            busy: Cell::new(false),
            stack_top: Cell::new(0),
            countdown: Cell::new(0),
            random: Cell::new(0),
            cache: UnsafeCell::new([CacheSlot { hash: 0, tag: 0 }; CACHE_SLOTS]),
        }
    };
}

/// Seeds of successive threads' generators.
static THREAD_SEEDS: AtomicU64 = AtomicU64::new(0x243f_6a88_85a3_08d3);

/// Runs `f` on this thread's state; `None` where the thread has none any more.
#[inline(always)]
pub(crate) fn with<T>(f: impl FnOnce(&ThreadState) -> T) -> Option<T> {
    STATE.try_with(f).ok()
}

impl ThreadState {
    /// One past the top of this thread's stack, 0 when unknown.
    #[inline]
    pub(crate) fn stack_top(&self) -> usize {
        match self.stack_top.get() {
            0 => {
                let top = super::stack::thread_stack_top();
                self.stack_top.set(if top == 0 { 1 } else { top });
                top
            }
            1 => 0,
            top => top,
        }
    }

    /// A seed for this thread's generator: distinct per thread, fixed per process order, so a
    /// rerun of a deterministic program samples the same way.
    pub(crate) fn seed(&self) -> u64 {
        let mut seed = THREAD_SEEDS.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
        let seed = super::sampling::next_random(&mut seed);
        seed.max(1)
    }

    /// The id of the stack `addresses`, from the cache or the shared table; `None` when the
    /// table is full.
    #[inline]
    pub(crate) fn stack_id(&self, addresses: &[usize]) -> Option<u32> {
        let hash = table::hash_addresses(addresses);
        let slot = (hash >> 54) as usize & (CACHE_SLOTS - 1);
        // SAFETY: the cache is this thread's alone and no reference to it outlives this call.
        let cache = unsafe { &mut *self.cache.get() };
        let cached = cache[slot];
        if cached.tag != 0 && cached.hash == hash {
            // SAFETY: cached tags were handed out by the table to this thread.
            let record = unsafe { table::record(cached.tag - 1) };
            if record.addresses() == addresses {
                return Some(cached.tag - 1);
            }
        }
        let id = table::intern(addresses, hash)?;
        cache[slot] = CacheSlot { hash, tag: id + 1 };
        Some(id)
    }
}
