//! Memory-mapped inputs whose pages are handed back to the kernel once read, so that a dump's
//! bytes do not stay in the process's resident memory beside what was built from them.

/// The bytes Linux maps around a page a read faults in, where they are in the page cache
/// (`fault_around_bytes`, 64 KiB by default), aligned to their size.
const FAULT_AROUND: usize = 64 << 10;

/// Hands the whole pages of `map[range]` back to the kernel, and those of the [`FAULT_AROUND`]
/// bytes before it; the next read of them, if any, faults the same bytes back in from the
/// file. Bytes outside the map are ignored. The pages before: a reader that hands back each
/// stretch it is done with faults the next one's first page in with the pages around it,
/// some of the stretch before, already handed back; they stayed resident (on the 2.5 GB
/// benchmark dump, 71 MiB through the parse, a sixteenth of every 1 MiB segment).
pub(crate) fn release_range(map: &memmap2::Mmap, range: std::ops::Range<usize>) {
    const PAGE: usize = 4096;
    let start = range
        .start
        .saturating_sub(FAULT_AROUND)
        .next_multiple_of(PAGE);
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
