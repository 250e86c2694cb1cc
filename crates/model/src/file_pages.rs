//! Columns whose buffers are a file's pages, so that only the pages read are in memory: an
//! `.hgd` file's images, mapped instead of copied, and the indexes a server builds to answer
//! one question at a time (the retainers, the chain distances, the objects in type order),
//! kept in unnamed scratch files where [`keep_indexes_in_files`] was called.
//!
//! Only the binary's global allocator can hand out a block that a vector later frees, so the
//! binary makes these blocks ([`BlockMapper`]); without one, every column stays in memory.

use crate::image::Plain;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicBool, Ordering};

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

    /// A new unnamed file, open for reading and writing and gone from the disk once closed,
    /// in the directory the user chose for temporary files; `None` when none can be made.
    fn scratch_file(&self) -> Option<std::fs::File>;
}

/// The binary's [`BlockMapper`], once set.
static BLOCK_MAPPER: std::sync::OnceLock<&'static dyn BlockMapper> = std::sync::OnceLock::new();

/// Whether [`keep_indexes_in_files`] was called.
static INDEXES_IN_FILES: AtomicBool = AtomicBool::new(false);

/// Vectors smaller than this are copied or kept in memory, not mapped: the allocator looks
/// every freed block of a mapped block's size or more up in its list, which only large blocks
/// may cost.
pub const MAP_FROM_BYTES: usize = 4 << 20;

const PAGE: u64 = 4096;

/// Lets columns' buffers be files' pages mapped by `mapper` from now on.
///
/// # Safety
/// Every block `mapper` returns must be one the global allocator frees as its own, of the
/// size and at least the alignment the contract of [`BlockMapper::map`] gives, for as long as
/// the process runs.
pub unsafe fn set_block_mapper(mapper: &'static dyn BlockMapper) {
    let _ = BLOCK_MAPPER.set(mapper);
}

/// From now on, the indexes built to answer one question at a time ([`FileColumn`],
/// [`page_out`]) are kept in scratch files where a [`BlockMapper`] is set: a server holds for
/// as long as it runs what a one-shot command drops at its end, and reads a few pages of it
/// per answer. The kernel keeps the pages read in memory, and can drop them again.
pub fn keep_indexes_in_files() {
    INDEXES_IN_FILES.store(true, Ordering::Relaxed);
}

/// The stretches `pieces` of `file` (offset in the file, length in bytes, each a whole number
/// of `T`s, little-endian) as a vector of `T`s whose buffer maps them, where a mapper is set
/// and the stretches lie as [`BlockMapper::map`] needs them; `None` otherwise, and the caller
/// copies.
pub fn mapped_vec<T: Plain>(file: &std::fs::File, pieces: &[(u64, usize)]) -> Option<Vec<T>> {
    if cfg!(target_endian = "little") {
        map_vec(file, pieces)
    } else {
        None
    }
}

/// [`mapped_vec`] for a file of this process's own, whose bytes are in its byte order.
fn map_vec<T: Plain>(file: &std::fs::File, pieces: &[(u64, usize)]) -> Option<Vec<T>> {
    let mapper = BLOCK_MAPPER.get()?;
    let len: usize = pieces.iter().map(|&(_, bytes)| bytes).sum();
    let (last, whole) = pieces.split_last()?;
    let laid_out = len >= MAP_FROM_BYTES
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

/// The bytes of `values`, in this process's byte order.
fn as_bytes<T: Plain>(values: &[T]) -> &[u8] {
    // SAFETY: `Plain` values are `WIDTH` bytes each with no padding, so the slice's memory is
    // `len * WIDTH` initialised bytes; `u8` has no alignment to keep.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

/// A column of `len` values written a stretch at a time into a scratch file, then read as a
/// vector whose buffer is the file's pages ([`FileColumn::finish`]): built this way, an index
/// larger than the memory at hand never needs all of it at once.
pub struct FileColumn<T: Plain> {
    file: std::fs::File,
    len: usize,
    values: std::marker::PhantomData<T>,
}

impl<T: Plain> FileColumn<T> {
    /// A column of `len` values in a new scratch file, when indexes are kept in files, a
    /// mapper is set, the column is large enough to be mapped, and the file could be made.
    pub fn new(len: usize) -> Option<FileColumn<T>> {
        if !INDEXES_IN_FILES.load(Ordering::Relaxed)
            || len.saturating_mul(T::WIDTH) < MAP_FROM_BYTES
        {
            return None;
        }
        let file = BLOCK_MAPPER.get()?.scratch_file()?;
        Some(FileColumn {
            file,
            len,
            values: std::marker::PhantomData,
        })
    }

    /// Writes `values` as the column's values from position `at`.
    ///
    /// # Errors
    /// When the file cannot be written (a full disk), or `values` reach past the column's end.
    pub fn write_at(&mut self, at: usize, values: &[T]) -> std::io::Result<()> {
        if at
            .checked_add(values.len())
            .is_none_or(|end| end > self.len)
        {
            return Err(std::io::Error::other("values past the column's end"));
        }
        self.file.seek(SeekFrom::Start((at * T::WIDTH) as u64))?;
        self.file.write_all(as_bytes(values))
    }

    /// The column as a vector: the file's pages where they can be mapped, else read back into
    /// memory. Values never written read as zeros.
    ///
    /// # Errors
    /// When the file cannot be sized or read.
    pub fn finish(mut self) -> std::io::Result<Vec<T>> {
        if let Some(mapped) = self.mapped()? {
            return Ok(mapped);
        }
        let zero = T::from_le(&[0; 8][..T::WIDTH]);
        let mut column = vec![zero; self.len];
        self.file.seek(SeekFrom::Start(0))?;
        // SAFETY: the vector's `len * WIDTH` bytes are initialised (zeros), a `u8` has no
        // alignment to keep, and any bytes read over them are `T`s (`Plain`).
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(column.as_mut_ptr().cast::<u8>(), self.len * T::WIDTH)
        };
        self.file.read_exact(bytes)?;
        Ok(column)
    }

    /// The column as a vector whose buffer is the file's pages, where they can be mapped.
    fn mapped(&mut self) -> std::io::Result<Option<Vec<T>>> {
        let bytes = self.len * T::WIDTH;
        self.file.set_len(bytes as u64)?;
        Ok(map_vec(&self.file, &[(0, bytes)]))
    }
}

/// `column` kept in a scratch file, its buffer the file's pages ([`FileColumn`]), where
/// indexes are kept in files; else, or when the file cannot be had, `column` as it is.
pub fn page_out<T: Plain>(column: Vec<T>) -> Vec<T> {
    let Some(mut file) = FileColumn::new(column.len()) else {
        return column;
    };
    match file.write_at(0, &column).and_then(|()| file.mapped()) {
        Ok(Some(mapped)) => mapped,
        _ => column,
    }
}
