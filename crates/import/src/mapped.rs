//! Memory-mapped inputs whose pages are handed back to the kernel once read, so that a dump's
//! bytes do not stay in the process's resident memory beside what was built from them.

/// The bytes Linux maps around a page a read faults in, where they are in the page cache
/// (`fault_around_bytes`, 64 KiB by default), aligned to their size.
const FAULT_AROUND: usize = 64 << 10;

/// The pages handed back are whole pages of this size.
const PAGE: usize = 4096;

/// Hands the whole pages of `map[range]` back to the kernel, and those of the [`FAULT_AROUND`]
/// bytes before it; the next read of them, if any, faults the same bytes back in from the
/// file. Bytes outside the map are ignored. The pages before: a reader that hands back each
/// stretch it is done with faults the next one's first page in with the pages around it,
/// some of the stretch before, already handed back; they stayed resident (on the 2.5 GB
/// benchmark dump, 71 MiB through the parse, a sixteenth of every 1 MiB segment).
pub(crate) fn release_range(map: &memmap2::Mmap, range: std::ops::Range<usize>) {
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// How many of the pages of `bytes` are mapped in this process now (Linux's page map: a
    /// word per page, bit 63 for present).
    fn resident_pages(bytes: &[u8]) -> usize {
        use std::io::{Read, Seek, SeekFrom};
        let start = bytes.as_ptr() as usize / PAGE;
        let end = (bytes.as_ptr() as usize + bytes.len()).div_ceil(PAGE);
        let mut map = std::fs::File::open("/proc/self/pagemap").expect("Linux's page map");
        map.seek(SeekFrom::Start(start as u64 * 8)).expect("seek");
        let mut words = vec![0u8; (end - start) * 8];
        map.read_exact(&mut words).expect("read");
        (words.chunks_exact(8))
            .filter(|word| u64::from_le_bytes((*word).try_into().expect("8 bytes")) >> 63 == 1)
            .count()
    }

    /// A range handed back takes with it the pages of the 64 KiB before it, which the kernel
    /// maps back around the next range's first read, and no others.
    #[test]
    fn a_range_handed_back_takes_the_pages_mapped_around_its_start() {
        let path = std::env::temp_dir().join(format!("heapgraph-mapped-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 1 << 20]).expect("written");
        let file = std::fs::File::open(&path).expect("opened");
        // SAFETY: the file is this test's own, and nothing changes it while it is mapped.
        let map = unsafe { memmap2::Mmap::map(&file) }.expect("mapped");
        let _ = std::fs::remove_file(&path);
        let read: u64 = map.iter().step_by(PAGE).map(|&byte| u64::from(byte)).sum();
        assert_eq!(read, 7 * 256, "a byte of every page read");
        assert_eq!(resident_pages(&map), 256);
        release_range(&map, 512 << 10..1 << 20);
        let kept = (512 << 10) - FAULT_AROUND;
        assert_eq!(
            resident_pages(&map[kept..]),
            0,
            "the range and the 64 KiB before"
        );
        assert_eq!(
            resident_pages(&map[..kept]),
            kept / PAGE,
            "the pages before those"
        );
    }
}
