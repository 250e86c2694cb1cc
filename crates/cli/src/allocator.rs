//! The binary's allocator: the system's, with two things only a heap graph's shape asks for.
//!
//! A heap graph is a few dozen columns of millions of rows, each one block, most of them
//! written end to end once (a dump's columns, the dominator pass's arrays).
//!
//! - **Huge pages.** In 4 KiB pages every block costs a page fault per page: on a 2.5 GB HPROF
//!   dump about 1.3 million faults, 6 of the run's 32 CPU seconds in the kernel. Where
//!   transparent huge pages are on for the regions that ask for them (Linux's `madvise` mode,
//!   the usual default), one fault maps 2 MiB instead: 300 thousand faults, the kernel's share
//!   halved, the peak resident set the same (docs/performance.md). Blocks under
//!   [`HUGE_PAGES_FROM`] are left alone: a huge page there would be resident whole for a few
//!   bytes' use. Nor are any blocks in a virtual machine whose host takes the guest's free
//!   memory back ([`host_reclaims_free_pages`]): the host discards free memory in 2 MiB
//!   blocks, the very blocks a huge page takes, so there each huge page faults on the host as
//!   well, and the kernel's time doubled or tripled where small pages kept it flat.
//! - **Spilling.** Once [`spill_to`] was called (a dump larger than the memory available, or
//!   `--spill always`), blocks of [`SPILL_FROM`] bytes and more (fewer where memory is small,
//!   down to 4 MiB: `load::spill_from`) are pages of an
//!   unnamed file in the temporary directory, mapped shared, instead of anonymous memory: the
//!   kernel writes them out and drops them when memory runs short, and reads them back when
//!   touched, where anonymous memory would end in an out-of-memory kill on a machine without
//!   swap. Disk blocks are reserved when the block is made (`fallocate`), so a full disk means
//!   the block stays in memory, never a fault later; any failure to spill does the same.
//! - **A file's pages as a block.** An `.hgd` file's images lie page-aligned in it, each vector
//!   as it is in memory: [`FileBlocks`] maps them privately as a block of this allocator's,
//!   listed as a spilled block is, so that a column's vector takes the file's pages (shared
//!   with the page cache, never copied or zeroed) and frees them as any vector frees its
//!   buffer; a write to one copies the page, never reaching the file.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// The smallest block advised to take huge pages: two of them, so that at least one aligned
/// huge page lies inside it wherever it starts.
const HUGE_PAGES_FROM: usize = 4 << 20;

/// The smallest block that spills where the memory available is unknown or large: a graph's
/// columns, not the many small buffers around them (`load::spill_from` lowers it where memory
/// is small).
pub(crate) const SPILL_FROM: usize = 64 << 20;

/// The smallest block that spills in this run, set by [`spill_to`]; none before.
static SPILL_FROM_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The smallest block ever listed (spilled, or a file's pages): blocks freed or moved are
/// looked up in the list from this size on, and none is before the first is listed.
static LISTED_FROM_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The file descriptor a listed block of a file's pages, mapped privately, has in the list:
/// none of its own (the file is its owner's), and its bytes never count as spilled.
const FILE_PAGES: i32 = -2;

/// As [`FILE_PAGES`], for a scratch file's pages mapped shared (written through to the file,
/// so that its resident pages may be dropped at any time: [`forget_resident_pages`]).
const SHARED_FILE_PAGES: i32 = -3;

/// Whether a listed block with this file descriptor spilled (its file is the allocator's own).
#[inline]
fn spilled_to(fd: i32) -> bool {
    fd >= 0
}

/// At most this many blocks spill at once; past it, blocks stay in memory. A graph has a few
/// dozen columns and its analysis as many again.
const MOST_SPILLED: usize = 1024;

const PAGE: usize = 4096;

/// [`System`], with huge pages for large blocks and, once asked, spilling.
pub(crate) struct Allocator;

#[global_allocator]
static ALLOCATOR: Allocator = Allocator;

/// Whether blocks spill; set once by [`spill_to`], never cleared.
static SPILLING: AtomicBool = AtomicBool::new(false);

/// The directory spilled blocks' files are made in, as the `open` call takes it.
static SPILL_DIR: OnceLock<(PathBuf, CString)> = OnceLock::new();

/// The blocks that spilled: (address, file descriptor, mapped length); address 0 is a free
/// slot. A fixed table, since the allocator may not allocate for itself.
static SPILLED: Mutex<[(usize, i32, usize); MOST_SPILLED]> = Mutex::new([FREE; MOST_SPILLED]);

/// Bytes spilled now, their most at once, and the blocks ever spilled.
static SPILLED_BYTES: AtomicUsize = AtomicUsize::new(0);
static SPILLED_PEAK: AtomicUsize = AtomicUsize::new(0);
static SPILLED_BLOCKS: AtomicUsize = AtomicUsize::new(0);

/// From now on, blocks of `from` bytes and more (at least a page) spill to unnamed files in
/// `dir`.
///
/// # Errors
/// When `dir` is not a directory a file can be made in (checked by making one).
pub(crate) fn spill_to(dir: &Path, from: usize) -> anyhow::Result<()> {
    let (dir, c_dir) = SPILL_DIR.get_or_init(|| {
        let c_dir = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap_or_default();
        (dir.to_path_buf(), c_dir)
    });
    let fd = unnamed_file(c_dir).ok_or_else(|| {
        anyhow::anyhow!(
            "cannot make a temporary file in {} to spill to ({}); name a directory on a local \
             file system with --temp-dir",
            dir.display(),
            std::io::Error::last_os_error()
        )
    })?;
    // SAFETY: `fd` was just opened here and is closed once.
    unsafe { libc::close(fd) };
    // Only ever lowered: a block that spilled is at least the smallest size, which is what
    // `dealloc` and `realloc` look it up by.
    SPILL_FROM_BYTES.fetch_min(from.max(PAGE), Ordering::Relaxed);
    LISTED_FROM_BYTES.fetch_min(from.max(PAGE), Ordering::Relaxed);
    SPILLING.store(true, Ordering::Release);
    Ok(())
}

/// What spilled in this run, for `--timings`: (blocks, most bytes at once, the directory).
pub(crate) fn spilled() -> Option<(usize, usize, &'static Path)> {
    let (dir, _) = SPILL_DIR.get()?;
    SPILLING.load(Ordering::Acquire).then(|| {
        (
            SPILLED_BLOCKS.load(Ordering::Relaxed),
            SPILLED_PEAK.load(Ordering::Relaxed),
            dir.as_path(),
        )
    })
}

// SAFETY: every block is the system allocator's, passed through with the caller's arguments,
// a mapping of its own ([`own_mapping`]: told apart by its layout, which the caller passes back
// unchanged), or a whole shared mapping made here and listed in `SPILLED` until it is
// unmapped; `dealloc` and `realloc` look a block up in that list before they go by its layout.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(block) = spill(layout) {
            return block;
        }
        // SAFETY: as `GlobalAlloc::alloc`, whose contract the caller keeps.
        unsafe { alloc_unlisted(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // A new file's pages, and new anonymous ones, read as zeros.
        if let Some(block) = spill(layout) {
            return block;
        }
        if own_mapping(layout.size(), layout.align()) {
            return map_own(layout.size());
        }
        // SAFETY: as `GlobalAlloc::alloc_zeroed`, whose contract the caller keeps.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if layout.size() >= listed_from()
            && let Some((fd, mapped)) = unlist(block as usize)
        {
            unmap(block, fd, mapped);
            return;
        }
        // SAFETY: as `GlobalAlloc::dealloc`: `block` is not listed, so it is a mapping of its
        // own where its layout says so, the system allocator's otherwise.
        unsafe { free_unlisted(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller keeps `new_size` within `isize::MAX` once rounded up to the
        // alignment, which `layout` came with.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if layout.size() >= listed_from() {
            // The list stays locked while a listed block moves, so that its slot is its own.
            let mut spilled = SPILLED.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(slot) = spilled.iter_mut().find(|slot| slot.0 == block as usize) {
                let (_, fd, mapped) = *slot;
                // A file's pages are not this allocator's file to grow: they move out.
                if new_size >= spill_from()
                    && spilled_to(fd)
                    && let Some((moved, new_mapped)) = remap(block, fd, mapped, new_size)
                {
                    *slot = (moved as usize, fd, new_mapped);
                    count_spilled(mapped, new_mapped);
                    return moved;
                }
                // Too small to stay spilled, or the file could not grow: moved out of the list.
                // SAFETY: `new_layout` is the caller's, valid as said above.
                let moved = unsafe { alloc_unlisted(new_layout) };
                if moved.is_null() {
                    return moved;
                }
                // SAFETY: both blocks are live and distinct, each at least this long.
                unsafe { std::ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size)) };
                *slot = FREE;
                if spilled_to(fd) {
                    count_spilled(mapped, 0);
                }
                drop(spilled);
                unmap(block, fd, mapped);
                return moved;
            }
        }
        if new_size >= spill_from()
            && let Some(moved) = spill(new_layout)
        {
            // SAFETY: `block` is live and not listed, `moved` a new mapping; each is at least
            // `layout.size()` long (the block grows).
            unsafe {
                std::ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                free_unlisted(block, layout);
            }
            return moved;
        }
        match (
            own_mapping(layout.size(), layout.align()),
            own_mapping(new_size, layout.align()),
        ) {
            // SAFETY: `block` is a live mapping of its own of `layout.size()` bytes.
            (true, true) => unsafe { remap_own(block, layout.size(), new_size) },
            // SAFETY: as `GlobalAlloc::realloc`: `block` is the system allocator's, since it
            // is neither listed nor a mapping of its own.
            (false, false) => unsafe { System.realloc(block, layout, new_size) },
            _ => {
                // SAFETY: `new_layout` is the caller's, valid as said above.
                let moved = unsafe { alloc_unlisted(new_layout) };
                if !moved.is_null() {
                    // SAFETY: both blocks are live and distinct, each at least this long;
                    // `block` is not listed, and freed as its layout says.
                    unsafe {
                        std::ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                        free_unlisted(block, layout);
                    }
                }
                moved
            }
        }
    }
}

/// Blocks from this size on are mappings of their own, given back to the system whole when
/// freed. glibc maps blocks this large too ([`fix_mmap_threshold`]), but only where no free
/// chunk of its heaps fits: a block made from a free chunk, freed, stays in the heap, resident,
/// until a trim. An import frees such blocks by the hundred (each run's copy of a column once
/// joined): with these mappings, and the first pass's small blocks handed back
/// (`heapgraph_model::memory_freed`), the parse of the 2.5 GB benchmark dump peaks 220 MiB
/// lower (docs/performance.md).
const OWN_MAPPING_FROM: usize = 1 << 20;

/// Whether a block of `size` bytes aligned to `align` is a mapping of its own.
#[inline]
fn own_mapping(size: usize, align: usize) -> bool {
    size >= OWN_MAPPING_FROM && align <= PAGE
}

/// A new mapping of its own for `size` bytes (at least [`OWN_MAPPING_FROM`]), zeroed; null
/// where the system has no memory to map.
fn map_own(size: usize) -> *mut u8 {
    // SAFETY: a new private anonymous mapping; the kernel picks the address.
    let block = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size.next_multiple_of(PAGE),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if block == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    advise(block.cast(), size);
    block.cast()
}

/// Moves the mapping of its own at `block` from `size` to `new_size` bytes (both at least
/// [`OWN_MAPPING_FROM`]); null, the block left as it was, where it cannot.
///
/// # Safety
/// `block` is a live mapping of its own of `size` bytes, whose address only the caller holds.
unsafe fn remap_own(block: *mut u8, size: usize, new_size: usize) -> *mut u8 {
    // SAFETY: as the caller promises; the mapping may move, and the caller replaces the
    // address it holds with the one returned.
    let moved = unsafe {
        libc::mremap(
            block.cast(),
            size.next_multiple_of(PAGE),
            new_size.next_multiple_of(PAGE),
            libc::MREMAP_MAYMOVE,
        )
    };
    if moved == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    if new_size > size {
        advise(moved.cast(), new_size);
    }
    moved.cast()
}

/// A block for `layout` that is not listed: a mapping of its own, or the system allocator's.
///
/// # Safety
/// As [`GlobalAlloc::alloc`].
unsafe fn alloc_unlisted(layout: Layout) -> *mut u8 {
    if own_mapping(layout.size(), layout.align()) {
        return map_own(layout.size());
    }
    // SAFETY: as the caller promises.
    unsafe { System.alloc(layout) }
}

/// Frees a block that is not listed, as its layout says it was made.
///
/// # Safety
/// As [`GlobalAlloc::dealloc`], for a block [`alloc_unlisted`] (or the same rule) made.
unsafe fn free_unlisted(block: *mut u8, layout: Layout) {
    if own_mapping(layout.size(), layout.align()) {
        // SAFETY: a live mapping of its own of this many bytes, given back by its owner.
        unsafe { libc::munmap(block.cast(), layout.size().next_multiple_of(PAGE)) };
        return;
    }
    // SAFETY: as the caller promises: the system allocator's block.
    unsafe { System.dealloc(block, layout) }
}

/// The smallest block that spills: `usize::MAX` until spilling starts, then at least a page.
#[inline]
fn spill_from() -> usize {
    SPILL_FROM_BYTES.load(Ordering::Relaxed)
}

/// The smallest block listed so far: blocks of this size and more are looked up in the list
/// when freed or moved.
#[inline]
fn listed_from() -> usize {
    LISTED_FROM_BYTES.load(Ordering::Relaxed)
}

/// The directory scratch files are made in ([`FileBlocks`]), as the `open` call takes it.
static SCRATCH_DIR: OnceLock<CString> = OnceLock::new();

/// Scratch files for the indexes kept in files (`heapgraph_model::file_pages`) are made in
/// `dir` (the first directory given is kept).
pub(crate) fn scratch_in(dir: &Path) {
    let _ = SCRATCH_DIR.set(CString::new(dir.as_os_str().as_encoded_bytes()).unwrap_or_default());
}

/// Maps the stretches of files that `heapgraph_model::file_pages` asks for (an `.hgd` file's
/// images, scratch files' indexes) as blocks of this allocator's, and makes the scratch files.
pub(crate) struct FileBlocks;

impl heapgraph_model::file_pages::BlockMapper for FileBlocks {
    fn scratch_file(&self) -> Option<std::fs::File> {
        use std::os::fd::FromRawFd;
        let fd = unnamed_file(SCRATCH_DIR.get()?)?;
        // SAFETY: `fd` was just opened here, and is owned by the file from now on.
        Some(unsafe { std::fs::File::from_raw_fd(fd) })
    }

    fn map(
        &self,
        file: &std::fs::File,
        pieces: &[(u64, usize)],
        len: usize,
        shared: bool,
    ) -> Option<std::ptr::NonNull<u8>> {
        use std::os::fd::AsRawFd;
        let whole_pages = pieces.split_last().is_some_and(|(last, whole)| {
            last.0 % PAGE as u64 == 0
                && whole
                    .iter()
                    .all(|&(offset, bytes)| offset % PAGE as u64 == 0 && bytes % PAGE == 0)
        });
        if len == 0 || !whole_pages || pieces.iter().map(|piece| piece.1).sum::<usize>() != len {
            return None;
        }
        let mapped = len.next_multiple_of(PAGE);
        // SAFETY: a new reservation of address space, inaccessible until the pieces are
        // mapped over it; the kernel picks the address.
        let block = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if block == libc::MAP_FAILED {
            return None;
        }
        let mut at = 0;
        for &(offset, bytes) in pieces {
            let Ok(offset) = libc::off_t::try_from(offset) else {
                // SAFETY: the reservation made above, not handed out.
                unsafe { libc::munmap(block, mapped) };
                return None;
            };
            // Every piece but the last is whole pages, so each lands on a page of the
            // reservation and the last one's rounding ends at the reservation's end; the last
            // page holds at least one byte of the file, so none lies wholly past its end.
            let piece_mapped = bytes.next_multiple_of(PAGE);
            let sharing = if shared {
                libc::MAP_SHARED
            } else {
                libc::MAP_PRIVATE
            };
            // SAFETY: replaces pages `at..at + piece_mapped` of the reservation, which is
            // this function's alone, with a mapping of the file's pages there.
            let piece = unsafe {
                libc::mmap(
                    block.cast::<u8>().add(at).cast(),
                    piece_mapped,
                    libc::PROT_READ | libc::PROT_WRITE,
                    sharing | libc::MAP_FIXED,
                    file.as_raw_fd(),
                    offset,
                )
            };
            if piece == libc::MAP_FAILED {
                // SAFETY: as above.
                unsafe { libc::munmap(block, mapped) };
                return None;
            }
            at += bytes;
        }
        // Listed before it is handed out, so that freeing it finds it.
        LISTED_FROM_BYTES.fetch_min(len, Ordering::Relaxed);
        let marker = if shared {
            SHARED_FILE_PAGES
        } else {
            FILE_PAGES
        };
        if !list(block as usize, marker, mapped) {
            // SAFETY: as above.
            unsafe { libc::munmap(block, mapped) };
            return None;
        }
        std::ptr::NonNull::new(block.cast())
    }

    fn forget_resident(&self) {
        forget_resident_pages();
    }

    fn maps_a_file(&self, bytes: &[u8]) -> bool {
        let start = bytes.as_ptr() as usize;
        let spilled = SPILLED.lock().unwrap_or_else(PoisonError::into_inner);
        spilled.iter().any(|&(block, fd, mapped)| {
            block != 0 && fd == FILE_PAGES && (block..block + mapped).contains(&start)
        })
    }

    fn forget_unwritten(&self, bytes: &[u8]) {
        let start = bytes.as_ptr() as usize;
        forget_unwritten_file_pages_within(start..start + bytes.len());
    }
}

/// Drops from this process's memory the pages of every block mapped shared from a file (a
/// spilled block, a scratch file's pages), without changing a byte: they stay in the page
/// cache, written through to their file, and come back on the next read. Private mappings (an
/// `.hgd` file's pages) are left alone, since a page written there lives only in memory
/// ([`forget_unwritten_file_pages`] drops their other pages).
pub(crate) fn forget_resident_pages() {
    // Locked throughout, so that no listed block is unmapped (and its addresses reused) while
    // its pages are dropped.
    let spilled = SPILLED.lock().unwrap_or_else(PoisonError::into_inner);
    for &(block, fd, mapped) in spilled.iter() {
        if block != 0 && (spilled_to(fd) || fd == SHARED_FILE_PAGES) {
            // SAFETY: `block` is a live shared mapping of `mapped` bytes made here, listed
            // and so not unmapped while the list is locked; dropping a shared mapping's pages
            // keeps their contents in the file (written back if dirty), read again on the
            // next access.
            unsafe {
                libc::madvise(block as *mut libc::c_void, mapped, libc::MADV_DONTNEED);
            }
        }
    }
}

/// Drops from this process's memory the pages of every private mapping of a file (an `.hgd`
/// file's columns) that were never written: those still map the file's page in the page cache,
/// and come back unchanged on the next read. A written page is this process's own copy and
/// stays. The page map (`/proc/self/pagemap`: a word per page, bit 63 present, bit 61 a file's
/// page) says which are which.
///
/// No thread may write to such a block meanwhile: a page written between the page map's
/// reading and the drop would lose the write. `serve` calls it once its dumps are loaded and
/// read-only.
pub(crate) fn forget_unwritten_file_pages() {
    forget_unwritten_file_pages_within(0..usize::MAX);
}

/// [`forget_unwritten_file_pages`] for the pages that overlap the addresses `within` (a
/// vector's bytes, which its owner reads and no thread writes meanwhile).
pub(crate) fn forget_unwritten_file_pages_within(within: std::ops::Range<usize>) {
    use std::os::unix::fs::FileExt;
    let Ok(page_map) = std::fs::File::open("/proc/self/pagemap") else {
        return;
    };
    let spilled = SPILLED.lock().unwrap_or_else(PoisonError::into_inner);
    for &(block, fd, mapped) in spilled.iter() {
        if block == 0 || fd != FILE_PAGES {
            continue;
        }
        // The block's pages that `within` overlaps, counted from the block's first.
        let from = within.start.saturating_sub(block) / PAGE;
        let to = (within.end.saturating_sub(block).div_ceil(PAGE)).min(mapped / PAGE);
        if from >= to {
            continue;
        }
        let first_page = block / PAGE;
        // Nothing is allocated while the list is locked (an allocation may spill and list
        // itself): the page map is read into the stack, a stretch of pages at a time.
        let mut words = [0u8; 8 * 512];
        let mut run_start = None;
        let mut at = from;
        while at < to {
            let n = (to - at).min(512);
            let bytes = &mut words[..8 * n];
            if page_map
                .read_exact_at(bytes, ((first_page + at) * 8) as u64)
                .is_err()
            {
                return;
            }
            for (k, word) in bytes.chunks_exact(8).enumerate() {
                let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
                let unwritten = word >> 63 == 1 && (word >> 61) & 1 == 1;
                match (unwritten, run_start) {
                    (true, None) => run_start = Some(at + k),
                    (false, Some(start)) => {
                        forget_pages(block, start, at + k);
                        run_start = None;
                    }
                    _ => {}
                }
            }
            at += n;
        }
        if let Some(start) = run_start {
            forget_pages(block, start, to);
        }
    }
}

/// Drops pages `start..end` of the listed private file mapping at `block`, each of which maps
/// the file's page unwritten ([`forget_unwritten_file_pages`]).
fn forget_pages(block: usize, start: usize, end: usize) {
    // SAFETY: the pages lie inside a live mapping made here, listed and so not unmapped while
    // the caller holds the list; each maps the file's own page, never written by this process,
    // so dropping it loses nothing: the next read maps the same page again.
    unsafe {
        libc::madvise(
            (block + start * PAGE) as *mut libc::c_void,
            (end - start) * PAGE,
            libc::MADV_DONTNEED,
        );
    }
}

/// A new spilled block for `layout`, when spilling is on, the block is large, and a file and
/// its disk blocks could be had.
fn spill(layout: Layout) -> Option<*mut u8> {
    if layout.size() < spill_from() || layout.align() > PAGE || !SPILLING.load(Ordering::Acquire) {
        return None;
    }
    let (_, dir) = SPILL_DIR.get()?;
    let fd = unnamed_file(dir)?;
    let mapped = layout.size().next_multiple_of(PAGE);
    let block = reserve(fd, mapped).then(|| {
        // SAFETY: a new shared mapping of `fd`'s first `mapped` bytes, which `reserve` made
        // exist on disk; the kernel picks the address.
        unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        }
    });
    match block {
        Some(block) if block != libc::MAP_FAILED && list(block as usize, fd, mapped) => {
            SPILLED_BLOCKS.fetch_add(1, Ordering::Relaxed);
            Some(block.cast())
        }
        Some(block) => {
            if block != libc::MAP_FAILED {
                // SAFETY: the mapping was just made here and is not handed out.
                unsafe { libc::munmap(block, mapped) };
            }
            // SAFETY: `fd` was opened here and is closed once.
            unsafe { libc::close(fd) };
            None
        }
        None => {
            // SAFETY: as above.
            unsafe { libc::close(fd) };
            None
        }
    }
}

/// A spilled block moved to `new_size` bytes (its file grown first) and its new mapped
/// length, or `None`, with the block as it was, when the disk or the address space says no.
fn remap(block: *mut u8, fd: i32, mapped: usize, new_size: usize) -> Option<(*mut u8, usize)> {
    let new_mapped = new_size.next_multiple_of(PAGE);
    if new_mapped > mapped && !reserve(fd, new_mapped) {
        return None;
    }
    // SAFETY: `block` is the start of a live shared mapping of `mapped` bytes of `fd`, whose
    // file is at least `new_mapped` long; the mapping may move, and only this block's owner
    // holds its address, which it replaces with the one returned.
    let moved = unsafe { libc::mremap(block.cast(), mapped, new_mapped, libc::MREMAP_MAYMOVE) };
    (moved != libc::MAP_FAILED).then_some((moved.cast(), new_mapped))
}

/// An unnamed file in `dir`, open for reading and writing, gone from the disk when closed.
fn unnamed_file(dir: &CString) -> Option<i32> {
    // SAFETY: `dir` is a NUL-terminated path; the call allocates nothing in this process.
    let fd = unsafe {
        libc::open(
            dir.as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
        )
    };
    (fd >= 0).then_some(fd)
}

/// Makes `fd`'s file `len` bytes long with its disk blocks reserved.
fn reserve(fd: i32, len: usize) -> bool {
    let Ok(len) = libc::off_t::try_from(len) else {
        return false;
    };
    // SAFETY: `fd` is an open file of this module's; mode 0 only allocates and extends.
    unsafe { libc::fallocate(fd, 0, 0, len) == 0 }
}

/// A free slot of [`SPILLED`].
const FREE: (usize, i32, usize) = (0, -1, 0);

/// Adds a spilled block to the list; `false` when the list is full.
fn list(block: usize, fd: i32, mapped: usize) -> bool {
    let mut spilled = SPILLED.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(slot) = spilled.iter_mut().find(|slot| **slot == FREE) else {
        return false;
    };
    *slot = (block, fd, mapped);
    if spilled_to(fd) {
        count_spilled(0, mapped);
    }
    true
}

/// Takes a block off the list, if it spilled: its file and mapped length.
fn unlist(block: usize) -> Option<(i32, usize)> {
    let mut spilled = SPILLED.lock().unwrap_or_else(PoisonError::into_inner);
    let slot = spilled.iter_mut().find(|slot| slot.0 == block)?;
    let (_, fd, mapped) = std::mem::replace(slot, FREE);
    if spilled_to(fd) {
        count_spilled(mapped, 0);
    }
    Some((fd, mapped))
}

/// Counts a spilled block's change of mapped length (0 for none), keeping the peak.
fn count_spilled(before: usize, after: usize) {
    let now = if after >= before {
        SPILLED_BYTES.fetch_add(after - before, Ordering::Relaxed) + (after - before)
    } else {
        SPILLED_BYTES.fetch_sub(before - after, Ordering::Relaxed) - (before - after)
    };
    SPILLED_PEAK.fetch_max(now, Ordering::Relaxed);
}

/// Unmaps a listed block (taken off the list) and closes its file, which frees its disk (a
/// file's pages have no file of their own).
fn unmap(block: *mut u8, fd: i32, mapped: usize) {
    // SAFETY: `block` is a whole mapping of `mapped` bytes made here, no longer listed and no
    // longer used by its owner, who gave it back; `fd` is its file, closed once.
    unsafe {
        libc::munmap(block.cast(), mapped);
        if spilled_to(fd) {
            libc::close(fd);
        }
    }
}

/// Whether large blocks are advised to take huge pages ([`choose_page_size`]).
static HUGE_PAGES: AtomicBool = AtomicBool::new(true);

/// Decides, once at start, whether large blocks take huge pages: not where the host reclaims
/// the guest's free memory (the module's docs say why).
pub(crate) fn choose_page_size() {
    HUGE_PAGES.store(!host_reclaims_free_pages(), Ordering::Relaxed);
}

/// Fixes the size from which glibc gives a block a mapping of its own, for the blocks that
/// still reach it from C code (zstd's buffers): by default glibc raises that size to each such
/// block freed (up to 32 MiB), so that later blocks up to that size came from the heap, where a
/// zeroed block is written whole when it is made and a freed one may stay resident (the
/// dominator pass's peak on a V8 snapshot rose 23 MiB so, docs/performance.md).
pub(crate) fn fix_mmap_threshold() {
    #[cfg(target_env = "gnu")]
    // SAFETY: `mallopt` only sets a parameter of glibc's allocator, which may be set at any
    // time; the value is a size glibc accepts (below its maximum of 32 MiB).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, OWN_MAPPING_FROM as libc::c_int);
    }
}

/// Where Linux lists the virtio balloon devices, each with its negotiated features.
const BALLOON_DEVICES: &str = "/sys/bus/virtio/drivers/virtio_balloon";

/// The balloon's feature bit for free page reporting (Linux's `VIRTIO_BALLOON_F_REPORTING`):
/// the guest tells the host of its free memory in 2 MiB blocks (`page_reporting_order` 9),
/// which the host then discards and backs anew, on a fault, when the guest uses them again.
const BALLOON_REPORTING_BIT: usize = 5;

/// Whether a virtio balloon device reports this machine's free memory to its host.
fn host_reclaims_free_pages() -> bool {
    let Ok(devices) = std::fs::read_dir(BALLOON_DEVICES) else {
        return false;
    };
    devices.flatten().any(|device| {
        std::fs::read_to_string(device.path().join("features"))
            .is_ok_and(|features| reports_free_pages(&features))
    })
}

/// Whether a virtio device's `features` (sysfs: a `0` or `1` per feature bit, bit 0 first)
/// has the balloon's free page reporting on.
fn reports_free_pages(features: &str) -> bool {
    features.as_bytes().get(BALLOON_REPORTING_BIT) == Some(&b'1')
}

/// Advises the pages that `block`'s `size` bytes lie on to be huge, when the block is large
/// and huge pages are chosen.
#[inline]
fn advise(block: *mut u8, size: usize) {
    if size >= HUGE_PAGES_FROM && !block.is_null() && HUGE_PAGES.load(Ordering::Relaxed) {
        let start = block as usize & !(PAGE - 1);
        let end = (block as usize + size).next_multiple_of(PAGE);
        // SAFETY: the range covers only pages that hold part of the block, which is mapped;
        // MADV_HUGEPAGE changes how those pages are backed, never their contents, and a
        // kernel without transparent huge pages answers with an error that is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The features of a balloon that reports free pages, as a Linux 6.18 guest listed them
    /// (bits 1, 2, 5, 7 and 32: stats, deflate on OOM, free page reporting, one the kernel's
    /// header does not name, and virtio 1.0), the same without reporting, and cut short.
    #[test]
    fn free_page_reporting_is_read_from_the_balloon_features() {
        let reporting = "0110010100000000000000000000000010000000000000000000000000000000\n";
        assert!(reports_free_pages(reporting));
        let without = "0110000100000000000000000000000010000000000000000000000000000000\n";
        assert!(!reports_free_pages(without));
        assert!(!reports_free_pages("01100"));
        assert!(!reports_free_pages(""));
    }

    /// A block keeps its bytes through every move: from the system's into a file as it grows
    /// past the size that spills, within its file as it grows further, and back to the
    /// system's as it shrinks; zeroed blocks read as zeros; and each spilled block is listed
    /// while it lives and unlisted when it is freed. (Spilling stays on for the rest of this
    /// test binary, whose other tests then run on spilled blocks too.)
    #[test]
    fn blocks_keep_their_bytes_as_they_move_in_and_out_of_files() {
        spill_to(&std::env::temp_dir(), 1 << 20).expect("a file in the temporary directory");
        let listed = |block: *const u8| {
            SPILLED
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|slot| slot.0 == block as usize)
        };
        let pattern = |i: usize| (i * 7 + i / 4096) as u8;
        let mut bytes: Vec<u8> = Vec::with_capacity(1000);
        assert!(!listed(bytes.as_ptr()));
        for i in 0..3 << 20 {
            bytes.push(pattern(i));
        }
        assert!(listed(bytes.as_ptr()), "3 MiB spills");
        bytes.reserve_exact(16 << 20);
        assert!(listed(bytes.as_ptr()), "grown in its file");
        bytes.truncate(100_000);
        bytes.shrink_to_fit();
        assert!(!listed(bytes.as_ptr()), "shrunk back to the system's");
        assert!(
            bytes
                .iter()
                .enumerate()
                .all(|(i, &byte)| byte == pattern(i))
        );
        let zeros = vec![0u64; 1 << 20];
        assert!(listed(zeros.as_ptr().cast()));
        assert!(zeros.iter().all(|&word| word == 0));
        let freed = zeros.as_ptr().cast::<u8>();
        drop(zeros);
        assert!(!listed(freed), "unlisted when freed");
    }

    /// A block of 1 MiB or more is a mapping of its own, whose pages go back to the system
    /// when it is freed, even where glibc would have cut it from a free chunk of its heap
    /// (here, the space a hundred thousand small blocks left), which would stay resident.
    #[test]
    fn a_large_block_freed_leaves_no_page_resident() {
        let small: Vec<Vec<u8>> = (0..100_000).map(|_| vec![1u8; 1000]).collect();
        let pinned = vec![2u8; 1000];
        drop(small);
        let layout = Layout::from_size_align(32 << 20, 8).expect("a valid layout");
        // SAFETY: a block of a non-zero size, written within its length, then freed with the
        // layout it was made for; `alloc_unlisted` skips spilling, which another test turns on.
        let block = unsafe {
            let block = alloc_unlisted(layout);
            assert!(!block.is_null());
            std::ptr::write_bytes(block, 3, layout.size());
            block
        };
        // SAFETY: the block made above, `layout.size()` bytes long and live.
        let bytes = unsafe { std::slice::from_raw_parts(block, layout.size()) };
        assert_eq!(resident_pages(bytes), layout.size() / PAGE);
        // SAFETY: the block made above, no longer read.
        unsafe { free_unlisted(block, layout) };
        assert_eq!(resident_pages_in(block as usize, layout.size()), 0);
        assert_eq!(pinned[999], 2);
    }

    /// A file's pages mapped as a block read as the file's stretches back to back, take a
    /// write without passing it to the file, and are listed until the vector that owns them
    /// frees them as any vector frees its buffer.
    #[test]
    fn file_pages_are_blocks_that_read_the_file_and_free_as_any() {
        use heapgraph_model::file_pages::BlockMapper;
        let _alone = FILE_PAGES_TESTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        use std::io::Write;
        let path =
            std::env::temp_dir().join(format!("heapgraph-file-pages-{}", std::process::id()));
        let bytes: Vec<u8> = (0..5 * PAGE + 300).map(|i| (i % 251) as u8).collect();
        std::fs::File::create(&path)
            .and_then(|mut file| file.write_all(&bytes))
            .expect("a file in the temporary directory");
        let file = std::fs::File::open(&path).expect("opened");
        let listed = |block: *const u8| is_file_pages(block as usize);
        // Pages 1 and 2, then 100 bytes from page 4 on.
        let pieces = [(PAGE as u64, 2 * PAGE), (4 * PAGE as u64, 100)];
        let block = FileBlocks
            .map(&file, &pieces, 2 * PAGE + 100, false)
            .expect("mapped");
        let len = 2 * PAGE + 100;
        // SAFETY: as `heapgraph_model::file_pages::mapped_vec`: the allocator's own block of `len` bytes.
        let mut vector = unsafe { Vec::from_raw_parts(block.as_ptr(), len, len) };
        assert!(listed(vector.as_ptr()));
        let expected = [&bytes[PAGE..3 * PAGE], &bytes[4 * PAGE..4 * PAGE + 100]].concat();
        assert_eq!(vector, expected);
        vector[5] ^= 0xff;
        assert_eq!(
            std::fs::read(&path).expect("read"),
            bytes,
            "the file is unchanged"
        );
        let freed = vector.as_ptr();
        drop(vector);
        assert!(!listed(freed), "unlisted when freed");
        // Stretches that do not start on a page, or a middle one that is not whole pages, are
        // refused: the caller copies them.
        assert!(FileBlocks.map(&file, &[(100, PAGE)], PAGE, false).is_none());
        assert!(
            FileBlocks
                .map(
                    &file,
                    &[(0, PAGE + 1), (2 * PAGE as u64, 10)],
                    PAGE + 11,
                    false
                )
                .is_none()
        );
        std::fs::remove_file(&path).expect("removed");
    }

    /// Taken by the tests that count the blocks of files' pages, which the others' would
    /// change under them.
    static FILE_PAGES_TESTS: Mutex<()> = Mutex::new(());

    /// Whether the block at `block` is listed as a file's pages.
    fn is_file_pages(block: usize) -> bool {
        SPILLED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|slot| slot.0 == block && [FILE_PAGES, SHARED_FILE_PAGES].contains(&slot.1))
    }

    /// Whether the block at `block` is listed as a scratch file's pages, mapped shared.
    fn is_shared_file_pages(block: usize) -> bool {
        SPILLED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|slot| slot.0 == block && slot.1 == SHARED_FILE_PAGES)
    }

    /// The blocks of files' pages listed now.
    fn file_pages_listed() -> usize {
        SPILLED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|slot| [FILE_PAGES, SHARED_FILE_PAGES].contains(&slot.1))
            .count()
    }

    /// 1.2M nodes in a chain with a few shortcuts: `edge_to` is 5 MB, past the size that is
    /// mapped.
    fn chain_with_shortcuts() -> heapgraph_model::HeapGraph {
        use heapgraph_model::EdgeKind;
        let n: u32 = 1_200_000;
        let mut edges: Vec<(u32, u32, EdgeKind)> = (0..n - 1)
            .map(|node| (node, node + 1, EdgeKind::Property))
            .collect();
        edges.extend(
            (0..n)
                .step_by(7)
                .map(|node| (node, (node * 13) % n, EdgeKind::Element)),
        );
        edges.sort_by_key(|edge| edge.0);
        heapgraph_test_support::graph_from_edges(&vec![24; n as usize], &edges)
    }

    /// Takes the lock of the tests that count files' pages, with this allocator mapping them
    /// and scratch files in the temporary directory.
    fn scratch_files_alone() -> std::sync::MutexGuard<'static, ()> {
        let alone = FILE_PAGES_TESTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // SAFETY: as in `main`: this allocator is the test binary's global allocator.
        unsafe { heapgraph_model::file_pages::set_block_mapper(&FileBlocks) };
        scratch_in(&std::env::temp_dir());
        alone
    }

    /// Indexes kept in files (as `serve` and `mcp` keep them) are the file's pages, and hold
    /// what the same index built in memory holds: the retainers, built a chunk at a time into
    /// files, and a column paged out.
    #[test]
    fn indexes_kept_in_files_are_the_ones_built_in_memory() {
        use heapgraph_model::file_pages;
        let _alone = scratch_files_alone();
        let graph = chain_with_shortcuts();
        let in_memory = heapgraph_model::ReverseEdges::build(graph.parts());
        let column: Vec<u64> = (0..1u64 << 20).map(|i| i * 31).collect();
        // Kept in files for the rest of this test binary, whose other tests' indexes then are
        // too (the same values, as this test shows).
        file_pages::keep_indexes_in_files();
        let before = file_pages_listed();
        let in_files = heapgraph_model::ReverseEdges::build(graph.parts());
        assert_eq!(
            file_pages_listed(),
            before + 3,
            "the offsets, sources and edges are files' pages"
        );
        for node in graph.nodes() {
            assert!(
                in_files.retainers(node).eq(in_memory.retainers(node)),
                "the retainers of {node:?}"
            );
        }
        let paged = file_pages::page_out(column.clone());
        assert!(
            is_file_pages(paged.as_ptr() as usize),
            "a paged-out column is a file's pages"
        );
        assert_eq!(paged, column);
        drop((in_files, paged));
        assert_eq!(file_pages_listed(), before, "unlisted when freed");
    }

    /// A graph and its analysis moved into scratch files (as `serve` moves a parsed dump's)
    /// hold the same values, their large vectors shared mappings of the files; forgetting
    /// their resident pages leaves none in memory, and the values are still the same.
    #[test]
    fn columns_moved_into_scratch_files_are_unchanged_and_their_pages_can_be_forgotten() {
        use heapgraph_model::file_pages;
        let _alone = scratch_files_alone();
        let (in_memory, mut paged) = (chain_with_shortcuts(), chain_with_shortcuts());
        let options = heapgraph_analyzer::Options {
            edge_rule: heapgraph_analyzer::EdgeRule::for_runtime(in_memory.meta().runtime),
        };
        let (expected, mut analysis) = (
            heapgraph_analyzer::analyze(&in_memory, &options),
            heapgraph_analyzer::analyze(&paged, &options),
        );
        file_pages::keep_indexes_in_files();
        paged.page_out_columns();
        analysis.page_out_columns();
        let edge_to = &paged.parts().edge_to;
        assert!(
            is_shared_file_pages(edge_to.as_ptr() as usize),
            "edge_to is a scratch file's pages"
        );
        let idom = &analysis.dominators.idom;
        assert!(is_shared_file_pages(idom.as_ptr() as usize), "so is idom");
        let same = || {
            let (a, b) = (in_memory.parts(), paged.parts());
            assert_eq!(a.edge_to, b.edge_to);
            assert_eq!(a.edge_name, b.edge_name);
            assert_eq!(a.edge_kind, b.edge_kind);
            assert_eq!(a.first_edge, b.first_edge);
            assert_eq!(a.node_object_id, b.node_object_id);
            assert_eq!(a.node_shallow_size, b.node_shallow_size);
            assert_eq!(a.node_type, b.node_type);
            assert_eq!(a.node_name, b.node_name);
            assert_eq!(a.node_kind, b.node_kind);
            for node in in_memory.nodes() {
                assert_eq!(in_memory.type_name(node), paged.type_name(node));
                assert_eq!(in_memory.name(node), paged.name(node));
            }
            let (a, b) = (&expected.dominators, &analysis.dominators);
            assert_eq!(a.idom, b.idom);
            for node in 0..in_memory.node_count() {
                assert_eq!(a.retained_size.get(node), b.retained_size.get(node));
                assert_eq!(a.retained_count[node], b.retained_count[node]);
            }
        };
        same();
        assert!(resident_pages(edge_to) > 0, "read just now");
        forget_resident_pages();
        assert_eq!(resident_pages(edge_to), 0, "edge_to's pages forgotten");
        assert_eq!(resident_pages(idom), 0, "idom's too");
        same();
    }

    /// A private mapping of a file loses the pages it never wrote to
    /// `forget_unwritten_file_pages`, or those of a stretch of it to
    /// `forget_unwritten_file_pages_within`, and keeps the one it wrote, with the write; every
    /// value reads as before.
    #[test]
    fn unwritten_file_pages_are_forgotten_and_written_ones_kept() {
        use heapgraph_model::file_pages::BlockMapper;
        let _alone = scratch_files_alone();
        let path = std::env::temp_dir().join(format!("heapgraph-unwritten-{}", std::process::id()));
        let bytes: Vec<u8> = (0..8 * PAGE).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &bytes).expect("a file in the temporary directory");
        let file = std::fs::File::open(&path).expect("opened");
        let block = FileBlocks
            .map(&file, &[(0, 8 * PAGE)], 8 * PAGE, false)
            .expect("mapped");
        // SAFETY: as `heapgraph_model::file_pages::mapped_vec`: the allocator's own block.
        let mut vector = unsafe { Vec::from_raw_parts(block.as_ptr(), 8 * PAGE, 8 * PAGE) };
        assert_eq!(vector, bytes, "read whole");
        vector[3 * PAGE + 5] ^= 0xff;
        let mut expected = bytes.clone();
        expected[3 * PAGE + 5] ^= 0xff;
        assert_eq!(resident_pages(&vector), 8);
        // Within a stretch that starts and ends inside pages 5 and 6: those two go.
        let start = vector.as_ptr() as usize + 5 * PAGE + 100;
        forget_unwritten_file_pages_within(start..start + PAGE + 8);
        assert_eq!(resident_pages(&vector), 6, "pages 5 and 6 forgotten");
        assert_eq!(resident_pages(&vector[5 * PAGE..7 * PAGE]), 0);
        assert_eq!(vector, expected, "read again as they were");
        forget_unwritten_file_pages();
        assert_eq!(resident_pages(&vector), 1, "only the written page stays");
        assert_eq!(resident_pages(&vector[3 * PAGE..4 * PAGE]), 1);
        assert_eq!(vector, expected, "the write kept, the rest read again");
        drop(vector);
        std::fs::remove_file(&path).expect("removed");
    }

    /// How many of the pages `values` lie on are mapped in this process now.
    fn resident_pages<T>(values: &[T]) -> usize {
        resident_pages_in(values.as_ptr() as usize, std::mem::size_of_val(values))
    }

    /// How many of the pages the `bytes` from address `start` lie on are mapped in this
    /// process now (`/proc/self/pagemap`: a word per page, bit 63 for present; none for an
    /// address not mapped).
    fn resident_pages_in(start: usize, bytes: usize) -> usize {
        use std::io::{Read, Seek, SeekFrom};
        let end = (start + bytes).div_ceil(PAGE);
        let start = start / PAGE;
        let mut map = std::fs::File::open("/proc/self/pagemap").expect("Linux's page map");
        map.seek(SeekFrom::Start(start as u64 * 8)).expect("seek");
        let mut words = vec![0u8; (end - start) * 8];
        map.read_exact(&mut words).expect("read");
        words
            .chunks_exact(8)
            .filter(|word| u64::from_le_bytes((*word).try_into().expect("8 bytes")) >> 63 == 1)
            .count()
    }

    /// A converted dump whose columns are large enough to be mapped reads back the graph it
    /// was written from, its large vectors the file's pages, none resident once the reading
    /// checked them, nor once forgotten after a read.
    #[test]
    fn a_converted_dump_reads_back_from_its_own_pages() {
        let _alone = FILE_PAGES_TESTS
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // SAFETY: as in `main`: this allocator is the test binary's global allocator.
        unsafe { heapgraph_model::file_pages::set_block_mapper(&FileBlocks) };
        let graph = chain_with_shortcuts();
        let path =
            std::env::temp_dir().join(format!("heapgraph-mapped-{}.hgd", std::process::id()));
        heapgraph_import::hgd::write_heap_graph(
            &graph,
            None,
            std::io::BufWriter::new(std::fs::File::create(&path).expect("created")),
        )
        .expect("written");
        let (contents, _) =
            heapgraph_import::hgd::import_path_with_analysis(&path, &Default::default())
                .expect("read back");
        let heapgraph_import::Contents::HeapGraph(back) = contents else {
            panic!("a heap graph");
        };
        let mapped = |column: *const u32| is_file_pages(column as usize);
        assert!(
            mapped(back.parts().edge_to.as_ptr()),
            "edge_to is the file's pages"
        );
        assert_eq!(
            resident_pages(&back.parts().edge_to),
            0,
            "the pages the reading checked forgotten"
        );
        assert!(heapgraph_model::file_pages::in_file_pages(
            &back.parts().edge_to
        ));
        assert!(!heapgraph_model::file_pages::in_file_pages(
            &graph.parts().edge_to
        ));
        let same = || {
            assert_eq!(back.parts().edge_to, graph.parts().edge_to);
            assert_eq!(back.parts().first_edge, graph.parts().first_edge);
            assert_eq!(back.parts().edge_kind, graph.parts().edge_kind);
            assert_eq!(back.parts().node_object_id, graph.parts().node_object_id);
            assert_eq!(back.parts().node_type, graph.parts().node_type);
        };
        same();
        assert!(resident_pages(&back.parts().edge_to) > 0, "read again");
        back.forget_read_pages();
        assert_eq!(resident_pages(&back.parts().edge_to), 0, "forgotten again");
        same();
        drop(back);
        std::fs::remove_file(&path).expect("removed");
    }
}
