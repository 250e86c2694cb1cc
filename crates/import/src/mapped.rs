//! Memory-mapped inputs whose pages are handed back to the kernel once read, so that a dump's
//! bytes do not stay in the process's resident memory beside what was built from them.

/// Hands the whole pages of `map[range]` back to the kernel; the next read of them, if any,
/// faults the same bytes back in from the file. Bytes outside the map are ignored.
pub(crate) fn release_range(map: &memmap2::Mmap, range: std::ops::Range<usize>) {
    const PAGE: usize = 4096;
    let start = range.start.next_multiple_of(PAGE);
    let end = range.end.min(map.len()) / PAGE * PAGE;
    if end > start {
        #[cfg(unix)]
        // SAFETY: the map is a read-only mapping of a file, so dropping its pages only makes
        // the next read of them fault the same bytes back in from the file; no reference
        // into the map sees anything change.
        unsafe {
            let _ =
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start);
        }
    }
}

/// [`release_range`] for a sub-slice of the map, found by its address; a slice that is not
/// inside the map is ignored.
pub(crate) fn release_slice(map: &memmap2::Mmap, part: &[u8]) {
    let base = map.as_ptr() as usize;
    let start = part.as_ptr() as usize;
    if start >= base && start + part.len() <= base + map.len() {
        release_range(map, start - base..start - base + part.len());
    }
}

/// Makes stretches of a file the buffer of a vector without copying them: what the binary's
/// allocator does, which alone can hand out a block that it is later asked to free.
pub trait BlockMapper: Sync {
    /// A block of `len` bytes (a multiple of a page, or less in its last page) whose bytes are
    /// the file's `pieces` (offset in the file, length) back to back, each offset a multiple of
    /// 4096 and each length but the last's too; a private mapping, so that writes to the block
    /// never reach the file. `None` when it cannot be had.
    ///
    /// The block is the global allocator's own, of `len` bytes aligned to a page: a vector
    /// whose buffer it is frees it through the global allocator when dropped.
    fn map(
        &self,
        file: &std::fs::File,
        pieces: &[(u64, usize)],
        len: usize,
    ) -> Option<std::ptr::NonNull<u8>>;
}

/// The binary's [`BlockMapper`], once set.
static BLOCK_MAPPER: std::sync::OnceLock<&'static dyn BlockMapper> = std::sync::OnceLock::new();

/// Vectors smaller than this are copied, not mapped: the allocator looks every freed block of a
/// mapped block's size or more up in its list, which only large blocks may cost.
pub(crate) const MAP_FROM_BYTES: usize = 4 << 20;

/// Lets `.hgd` files' images be mapped as the columns' buffers by `mapper` from now on.
///
/// # Safety
/// Every block `mapper` returns must be one the global allocator frees as its own, of the
/// size and at least the alignment the contract of [`BlockMapper::map`] gives, for as long as
/// the process runs.
pub unsafe fn set_block_mapper(mapper: &'static dyn BlockMapper) {
    let _ = BLOCK_MAPPER.set(mapper);
}

/// The stretches `pieces` of `file` (offset in the file, length in bytes, each a whole number
/// of `T`s) as a vector of `T`s whose buffer maps them, where a mapper is set and the stretches
/// lie as [`BlockMapper::map`] needs them; `None` otherwise, and the caller copies.
pub(crate) fn mapped_vec<T: heapgraph_model::image::Plain>(
    file: &std::fs::File,
    pieces: &[(u64, usize)],
) -> Option<Vec<T>> {
    const PAGE: u64 = 4096;
    let mapper = BLOCK_MAPPER.get()?;
    let len: usize = pieces.iter().map(|&(_, bytes)| bytes).sum();
    let (last, whole) = pieces.split_last()?;
    let laid_out = cfg!(target_endian = "little")
        && len >= MAP_FROM_BYTES
        && len.is_multiple_of(T::WIDTH)
        && last.0.is_multiple_of(PAGE)
        && whole.iter().all(|&(offset, bytes)| {
            offset.is_multiple_of(PAGE) && (bytes as u64).is_multiple_of(PAGE)
        });
    if !laid_out {
        return None;
    }
    let block = mapper.map(file, pieces, len)?;
    let n = len / T::WIDTH;
    // SAFETY: the block is the global allocator's own, `len` = `n * size_of::<T>()` bytes,
    // aligned to a page (more than any `T`'s alignment), which it frees as its own when the
    // vector is dropped (`set_block_mapper`'s contract); every one of its bytes is initialised
    // (the file's, privately mapped), and every pattern of bytes is a `T` (`Plain`). Capacity
    // is length, so the layout the vector frees it with is the block's.
    Some(unsafe { Vec::from_raw_parts(block.as_ptr().cast::<T>(), n, n) })
}
