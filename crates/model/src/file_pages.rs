//! Columns whose buffers are a file's pages, so that only the pages read are in memory: an
//! `.hgd` file's images, mapped instead of copied, and the indexes a server builds to answer
//! one question at a time (the retainers, the chain distances, the objects in type order),
//! kept in unnamed scratch files where [`keep_indexes_in_files`] was called.
//!
//! Only the binary's global allocator can hand out a block that a vector later frees, so the
//! binary makes these blocks ([`BlockMapper`]); without one, every column stays in memory.

use crate::image::{ImageSource, Imaged, Plain, as_bytes, as_bytes_mut, scalar_named, zeroed};
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Makes stretches of a file the buffer of a vector without copying them: what the binary's
/// allocator does, which alone can hand out a block that it is later asked to free.
pub trait BlockMapper: Sync {
    /// A block of `len` bytes (a multiple of a page, or less in its last page) whose bytes are
    /// the file's `pieces` (offset in the file, length) back to back, each offset a multiple of
    /// 4096 and each length but the last's too; `None` when it cannot be had. A private
    /// mapping, so that writes to the block never reach the file, unless `shared` (a scratch
    /// file of this process's, written through, whose pages [`BlockMapper::forget_resident`]
    /// may then drop).
    ///
    /// The block is the global allocator's own, of `len` bytes aligned to a page: a vector
    /// whose buffer it is frees it through the global allocator when dropped.
    fn map(
        &self,
        file: &std::fs::File,
        pieces: &[(u64, usize)],
        len: usize,
        shared: bool,
    ) -> Option<std::ptr::NonNull<u8>>;

    /// Drops the resident pages of every block mapped shared, which the kernel then keeps
    /// only in its page cache, to read them back on the next access.
    fn forget_resident(&self);

    /// Drops the pages under `bytes` of the blocks mapped privately from a file (an `.hgd`
    /// file's columns) that this process never wrote: each maps the page cache's copy of the
    /// file's page, read again unchanged on the next access. Its caller reads `bytes`, which
    /// no thread may write meanwhile.
    fn forget_unwritten(&self, bytes: &[u8]);

    /// Whether `bytes` lie in a block mapped privately from a file ([`BlockMapper::map`]).
    fn maps_a_file(&self, bytes: &[u8]) -> bool;

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

/// Whether [`keep_indexes_in_files`] was called.
pub fn indexes_in_files() -> bool {
    INDEXES_IN_FILES.load(Ordering::Relaxed)
}

/// The stretches `pieces` of `file` (offset in the file, length in bytes, each a whole number
/// of `T`s, little-endian) as a vector of `T`s whose buffer maps them, where a mapper is set
/// and the stretches lie as [`BlockMapper::map`] needs them; `None` otherwise, and the caller
/// copies.
pub fn mapped_vec<T: Plain>(file: &std::fs::File, pieces: &[(u64, usize)]) -> Option<Vec<T>> {
    if cfg!(target_endian = "little") {
        map_vec(file, pieces, false)
    } else {
        None
    }
}

/// [`mapped_vec`] for a file of this process's own, whose bytes are in its byte order, mapped
/// shared where `shared` (a scratch file).
fn map_vec<T: Plain>(
    file: &std::fs::File,
    pieces: &[(u64, usize)],
    shared: bool,
) -> Option<Vec<T>> {
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
    let block = mapper.map(file, pieces, len, shared)?;
    let n = len / T::WIDTH;
    // SAFETY: the block is the global allocator's own, `len` = `n * size_of::<T>()` bytes,
    // aligned to a page (more than any `T`'s alignment), which it frees as its own when the
    // vector is dropped (`set_block_mapper`'s contract); every one of its bytes is initialised
    // (the file's, privately mapped), and every pattern of bytes is a `T` (`Plain`). Capacity
    // is length, so the layout the vector frees it with is the block's.
    Some(unsafe { Vec::from_raw_parts(block.as_ptr().cast::<T>(), n, n) })
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
        let mut column = zeroed::<T>(self.len);
        self.file.seek(SeekFrom::Start(0))?;
        self.file.read_exact(as_bytes_mut(&mut column))?;
        Ok(column)
    }

    /// The column as a vector whose buffer is the file's pages, where they can be mapped.
    fn mapped(&mut self) -> std::io::Result<Option<Vec<T>>> {
        let bytes = self.len * T::WIDTH;
        self.file.set_len(bytes as u64)?;
        Ok(map_vec(&self.file, &[(0, bytes)], true))
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

/// Moves `column`'s vectors into a scratch file, each its buffer there, where indexes are kept
/// in files: a server then holds in memory only the pages its answers read, and the kernel
/// can drop those again ([`forget_resident`]). Where the file cannot be had or written, or the
/// column is too small to be mapped, `column` stays as it is.
///
/// The column is made again from its image ([`Imaged::from_image`]), every invariant checked,
/// and replaces the one in memory, which is freed.
pub fn page_out_column<C: Imaged>(column: &mut C) {
    if !INDEXES_IN_FILES.load(Ordering::Relaxed) || cfg!(target_endian = "big") {
        return;
    }
    if let Some(paged) = paged_copy(column) {
        *column = paged;
    }
}

/// Drops the resident pages of every vector kept in a scratch file ([`page_out`],
/// [`page_out_column`], [`FileColumn`]), without changing a value: the kernel keeps them in its
/// page cache, reads them back on the next access, and can reclaim them when memory runs
/// short, which it cannot do with anonymous memory on a machine without swap.
pub fn forget_resident() {
    if let Some(mapper) = BLOCK_MAPPER.get() {
        mapper.forget_resident();
    }
}

/// Drops the resident pages of `values`, where they lie in a vector mapped from a file
/// ([`mapped_vec`]) and were only read: once a file's columns are checked, the pages that the
/// check read are in memory, and only those a pass reads again need to be. Nothing where no
/// mapper is set or `values` are not mapped.
pub fn forget_read_pages<T: Plain>(values: &[T]) {
    if let Some(mapper) = BLOCK_MAPPER.get() {
        mapper.forget_unwritten(as_bytes(values));
    }
}

/// Whether the largest vector of `column` is a file's pages ([`mapped_vec`]): the kernel can
/// drop those it read ([`forget_read_column_pages`]), where compressing them would read every
/// one and keep the compressed blocks beside.
pub fn in_file_pages<C: Imaged>(column: &C) -> bool {
    let Some(mapper) = BLOCK_MAPPER.get() else {
        return false;
    };
    let image = column.image();
    let largest = (image.parts.iter()).max_by_key(|(_, values)| values.bytes().len());
    largest.is_some_and(|(_, values)| mapper.maps_a_file(values.bytes()))
}

/// [`forget_read_pages`] of each vector of `column`.
pub fn forget_read_column_pages<C: Imaged>(column: &C) {
    if let Some(mapper) = BLOCK_MAPPER.get() {
        for (_, values) in column.image().parts {
            mapper.forget_unwritten(values.bytes());
        }
    }
}

/// `column` written to a scratch file and made again from it; `None` where it cannot be.
fn paged_copy<C: Imaged>(column: &C) -> Option<C> {
    let image = column.image();
    let bytes: usize = image
        .parts
        .iter()
        .map(|(_, values)| values.len() * values.width())
        .sum();
    if bytes < MAP_FROM_BYTES {
        return None;
    }
    let mut file = BLOCK_MAPPER.get()?.scratch_file()?;
    let mut parts = Vec::with_capacity(image.parts.len());
    let mut at = 0u64;
    for (name, values) in &image.parts {
        let bytes = values.bytes();
        file.seek(SeekFrom::Start(at)).ok()?;
        file.write_all(bytes).ok()?;
        parts.push(ScratchPart {
            name,
            width: values.width(),
            at,
            bytes: bytes.len(),
            taken: false,
        });
        // Each vector starts on a page, as a mapping needs.
        at = (at + bytes.len() as u64).next_multiple_of(PAGE);
    }
    let mut source = ScratchImage {
        repr: image.repr,
        scalars: image.scalars.clone(),
        parts,
        file,
    };
    C::from_image(&mut source).ok()
}

/// One vector of a column written by [`paged_copy`]: where it lies in the scratch file.
struct ScratchPart {
    name: &'static str,
    width: usize,
    at: u64,
    bytes: usize,
    taken: bool,
}

/// A column's image in a scratch file, read back as vectors whose buffers are its pages.
struct ScratchImage {
    repr: &'static str,
    scalars: Vec<(&'static str, u64)>,
    parts: Vec<ScratchPart>,
    file: std::fs::File,
}

impl ImageSource for ScratchImage {
    fn repr(&self) -> &str {
        self.repr
    }

    fn scalar(&self, name: &str) -> Result<u64, String> {
        scalar_named(&self.scalars, name)
    }

    fn take<T: Plain>(&mut self, name: &str) -> Result<Vec<T>, String> {
        let part = self
            .parts
            .iter_mut()
            .find(|part| part.name == name)
            .ok_or_else(|| format!("no vector {name:?}"))?;
        if part.width != T::WIDTH || std::mem::replace(&mut part.taken, true) {
            return Err(format!("the vector {name:?} is not there to take"));
        }
        if let Some(mapped) = map_vec(&self.file, &[(part.at, part.bytes)], true) {
            return Ok(mapped);
        }
        // Too small to map: read back.
        let mut values = zeroed::<T>(part.bytes / T::WIDTH);
        self.file
            .seek(SeekFrom::Start(part.at))
            .and_then(|_| self.file.read_exact(as_bytes_mut(&mut values)))
            .map_err(|error| format!("the vector {name:?} cannot be read back: {error}"))?;
        Ok(values)
    }
}
