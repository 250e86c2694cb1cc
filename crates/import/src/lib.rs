//! Readers of dump files into heapgraph's model, one module per format, all with the same
//! face: `sniff` (does this prefix look like my format?), `Options`, and `import`.
//!
//! [`import_path`] opens a file, undoes gzip, recognises the format by content and calls the
//! right importer, all from one table of formats (`formats.rs`; [`Format`] names each): how
//! each is recognised, whether its reader wants the whole input in memory or a stream, and
//! what its files hold.
//!
//! ```no_run
//! # fn main() -> Result<(), heapgraph_import::ImportError> {
//! let dump = heapgraph_import::import_path("app.heapsnapshot".as_ref(), &Default::default())?;
//! if let heapgraph_import::Contents::HeapGraph(graph) = dump {
//!     println!("{} objects", graph.node_count());
//! }
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod error;
mod formats;
pub mod hgd;
pub mod hprof;
mod mapped;
pub mod phd;
mod pickle;
pub mod redact;
pub mod torch_cuda;
pub mod tracemalloc;
pub mod v8;

pub use error::ImportError;
pub use formats::{Format, Holds, sniff};

use formats::{Bytes, Input, Recognised};
use heapgraph_model::{AllocSnapshot, HeapGraph, Timeline};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Receives progress of a long import, in bytes of the file read so far.
pub trait Progress: Sync {
    /// The file's size, when known, before reading starts.
    fn start(&self, total_bytes: Option<u64>);
    /// `bytes` more bytes were read.
    fn advance(&self, bytes: u64);
}

/// Settings shared by every importer, and those of the formats that have any.
#[derive(Clone, Copy, Default)]
#[non_exhaustive]
pub struct Options<'a> {
    /// Where to report progress, if anywhere.
    pub progress: Option<&'a dyn Progress>,
    /// For HPROF dumps: which dump of a file that holds several, and the layouts to assume.
    pub hprof: hprof::Options,
}

/// What a file holds: a heap graph (objects and references), an allocation snapshot
/// (tracemalloc, a CUDA memory snapshot with its allocator's state, the Rust allocation
/// recorder's `.hgd`) or a timeline (`heapgraph record`'s `.hgt`). Not every file is a heap
/// dump, hence the name.
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "a dump is made once per file and unpacked at once: moving a graph's few hundred bytes of column headers costs nothing, and boxing would change every match on it"
)]
pub enum Contents {
    /// Objects and references.
    HeapGraph(HeapGraph),
    /// Live allocations by allocating stack (tracemalloc, CUDA snapshots, the Rust recorder).
    Alloc(AllocSnapshot),
    /// Memory sampled over time (`heapgraph record`'s `.hgt`).
    Timeline(Timeline),
}

/// The gzip magic bytes.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Bytes of buffer between the file and the parsers: large enough that a read is rarely the
/// cost, small enough to stay in L2 with the parser's tables.
const READ_BUFFER_BYTES: usize = 1 << 20;

/// Opens `path`, decompresses gzip (all members), detects the format and imports it.
///
/// # Errors
/// [`ImportError`] when the file cannot be read, is of no known format, or is malformed.
pub fn import_path(path: &Path, options: &Options<'_>) -> Result<Contents, ImportError> {
    let file = std::fs::File::open(path)?;
    if let Some(progress) = options.progress {
        progress.start(file.metadata().ok().map(|meta| meta.len()));
    }
    let counted = CountingReader {
        inner: file,
        progress: options.progress,
    };
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, counted);
    let prefix = reader.fill_buf()?;
    // Sniffed once: the formats read from memory, or once from the front where a file is
    // mapped, are mapped, the others streamed; a gzipped file is sniffed again inside.
    let map_file = || -> Result<memmap2::Mmap, ImportError> {
        let file = std::fs::File::open(path)?;
        // SAFETY: the map is only read, and dropped before this returns. Another process
        // could change the file meanwhile, as with any memory-mapped input; every byte read
        // is checked as if it were hostile.
        let map = unsafe { memmap2::MmapOptions::new().map(&file)? };
        if let Some(progress) = options.progress {
            progress.advance(map.len() as u64);
        }
        Ok(map)
    };
    match sniffed(prefix) {
        Some(Input::InMemory(import)) => {
            drop(reader);
            import(Bytes::Mapped(&map_file()?), options)
        }
        Some(Input::MappedElseStreamed(import, _)) => {
            drop(reader);
            import(&map_file()?, options)
        }
        Some(Input::Streamed(import)) => import(&mut reader, options),
        None if prefix.starts_with(&GZIP_MAGIC) => {
            let decoder = flate2::bufread::MultiGzDecoder::new(reader);
            let reader = BufReader::with_capacity(READ_BUFFER_BYTES, decoder);
            import_reader(reader, options)
        }
        None => Err(unknown_format(prefix)),
    }
}

/// Detects the format of an uncompressed stream and imports it.
///
/// # Errors
/// As [`import_path`].
pub fn import_reader<R: BufRead>(
    mut reader: R,
    options: &Options<'_>,
) -> Result<Contents, ImportError> {
    let prefix = reader.fill_buf()?;
    match sniffed(prefix) {
        Some(Input::InMemory(import)) => {
            let mut bytes = Vec::new();
            reader.read_to_end(&mut bytes)?;
            import(Bytes::Read(&bytes), options)
        }
        Some(Input::Streamed(import) | Input::MappedElseStreamed(_, import)) => {
            import(&mut reader, options)
        }
        None => Err(unknown_format(prefix)),
    }
}

/// How the reader of the format that `prefix` starts takes its input.
fn sniffed(prefix: &[u8]) -> Option<Input> {
    match sniff(prefix)?.row().recognised {
        Recognised::Sniffed(_, input) => Some(input),
        // `sniff` answers only with formats that it recognises by their first bytes.
        Recognised::Inside(_) => None,
    }
}

/// The error for content no reader recognises.
fn unknown_format(prefix: &[u8]) -> ImportError {
    ImportError::UnknownFormat {
        prefix: error::describe_prefix(prefix, 24),
    }
}

/// Reads a pickled allocation snapshot: a tracemalloc dump or a CUDA memory snapshot.
///
/// # Errors
/// [`ImportError::UnsupportedPickle`] for any other pickle; malformed and truncated pickles as
/// the other formats.
pub fn import_pickle(bytes: &[u8]) -> Result<Contents, ImportError> {
    let (parsed, fold) = pickle::parse(
        bytes,
        &tracemalloc::is_tracemalloc_global,
        tracemalloc::TraceFold::default(),
    )?;
    if tracemalloc::is_snapshot(&parsed) {
        return tracemalloc::build(&parsed, fold).map(Contents::Alloc);
    }
    if torch_cuda::is_snapshot(&parsed) && fold.is_empty() {
        return torch_cuda::build(&parsed).map(Contents::Alloc);
    }
    Err(ImportError::UnsupportedPickle)
}

/// Reports bytes read from the file to a [`Progress`].
struct CountingReader<'a, R> {
    inner: R,
    progress: Option<&'a dyn Progress>,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(progress) = self.progress {
            progress.advance(n as u64);
        }
        Ok(n)
    }
}
