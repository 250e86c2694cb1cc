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
