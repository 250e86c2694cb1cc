//! The binary's allocator: the system's, asking the kernel to back large blocks with huge pages.
//!
//! A heap graph is a few dozen columns of millions of rows, each one block, and most of them
//! are written end to end once (a dump's columns, the dominator pass's arrays). In 4 KiB pages
//! every block costs a page fault per page: on a 2.5 GB HPROF dump about 1.3 million faults,
//! 6 of the run's 32 CPU seconds in the kernel. Where transparent huge pages are on for the
//! regions that ask for them (Linux's `madvise` mode, the usual default), one fault maps 2 MiB
//! instead: 300 thousand faults, the kernel's share halved, the peak resident set the same
//! (measured with glibc's own switch for this, `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`, which a
//! program cannot set for itself; docs/performance.md). Blocks under [`LARGE`] are left alone:
//! a huge page there would be resident whole for a few bytes' use.

use std::alloc::{GlobalAlloc, Layout, System};

/// The smallest block that is advised: two huge pages, so that at least one aligned huge page
/// lies inside it wherever it starts.
const LARGE: usize = 4 << 20;

/// [`System`], with `madvise(MADV_HUGEPAGE)` on every block of at least [`LARGE`] bytes.
pub(crate) struct HugePages;

#[global_allocator]
static ALLOCATOR: HugePages = HugePages;

// SAFETY: every call is the system allocator's, with the caller's arguments; the advice only
// says how to back the block's pages, never what they hold.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `GlobalAlloc::alloc`, whose contract the caller keeps.
        let block = unsafe { System.alloc(layout) };
        advise(block, layout.size());
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `GlobalAlloc::alloc_zeroed`, whose contract the caller keeps.
        let block = unsafe { System.alloc_zeroed(layout) };
        advise(block, layout.size());
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: as `GlobalAlloc::dealloc`: `block` came from this allocator, which is
        // the system's.
        unsafe { System.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `GlobalAlloc::realloc`, whose contract the caller keeps.
        let moved = unsafe { System.realloc(block, layout, new_size) };
        if new_size > layout.size() {
            advise(moved, new_size);
        }
        moved
    }
}

/// Advises the pages that `block`'s `size` bytes lie on, when the block is large.
#[inline]
fn advise(block: *mut u8, size: usize) {
    #[cfg(target_os = "linux")]
    if size >= LARGE && !block.is_null() {
        const PAGE: usize = 4096;
        let start = block as usize & !(PAGE - 1);
        let end = (block as usize + size).next_multiple_of(PAGE);
        // SAFETY: the range covers only pages that hold part of the block, which is mapped;
        // MADV_HUGEPAGE changes how those pages are backed, never their contents, and a
        // kernel without transparent huge pages answers with an error that is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (block, size);
}
