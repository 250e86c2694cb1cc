//! A hint to the processor that memory will be read soon, for searches whose next nodes are
//! known several steps ahead (a breadth-first queue) but lie anywhere in a large column.

/// Hints that `slice[index]` will be read soon (a no-op off x86-64 and out of range).
#[inline]
pub fn prefetch<T>(slice: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(item) = slice.get(index) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of every x86-64 target, and a prefetch reads nothing: it is a
        // hint about a valid address that cannot fault or change memory.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(item).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, index);
}
