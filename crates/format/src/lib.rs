//! heapgraph's native dump format, `.hgd`: the records, a streaming [`Writer`], a [`Reader`]
//! that survives a cut-short file, and bulk codecs for little-endian integer columns.
//!
//! A stream is a sequence of MessagePack maps: a [`Header`], then any number of [`Chunk`]s, then
//! an end record. Chunks are columnar (`bin` blobs of little-endian integers); a reader
//! concatenates chunks of the same type in order. `docs/formats.md` gives the byte layout, field
//! by field, for writers in other languages. This crate knows nothing of heapgraph's model: the
//! codec between records and the model lives in `heapgraph_import::hgd`.
//!
//! ```
//! use heapgraph_format::{Chunk, Header, KIND_HEAP_GRAPH, NodeColumns, Reader, Writer};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut file = Vec::new();
//! let mut writer = Writer::new(&mut file, &Header::new(KIND_HEAP_GRAPH, "example", "v8"))?;
//! writer.write_strings(["", "Object"])?;
//! writer.write_node_kinds([("object", false)])?;
//! writer.write_root(0)?;
//! writer.write_nodes(&NodeColumns {
//!     object_id: &[1],
//!     kind: &[0],
//!     type_name: &[1],
//!     name: &[1],
//!     shallow_size: &[16],
//!     edge_count: &[0],
//! })?;
//! writer.finish()?;
//!
//! let mut reader = Reader::new(file.as_slice())?;
//! assert_eq!(reader.header().runtime, "v8");
//! let mut shallow_sizes: Vec<u64> = Vec::new();
//! while let Some(chunk) = reader.next_chunk()? {
//!     if let Chunk::Nodes(nodes) = chunk {
//!         heapgraph_format::decode_column(nodes.shallow_size, &mut shallow_sizes)?;
//!     }
//! }
//! assert_eq!(shallow_sizes, [16]);
//! assert!(reader.truncation().is_none());
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod column;
mod error;
mod frame;
mod reader;
mod records;
mod timeline;
pub mod units;
mod writer;

pub use column::{LeInt, column_len, decode_column, encode_column};
pub use error::{ColumnError, Error};
pub use reader::{Reader, SliceReader, Truncation};
pub use records::{
    AccumulatedChunk, AnalysisChunk, ArrayLengthsChunk, Chunk, EdgesChunk, FillChunk, FramesChunk,
    Header, IMAGE_ALIGN, ImageChunk, ImageDataChunk, KIND_ALLOC_SNAPSHOT, KIND_HEAP_GRAPH,
    LITTLE_ENDIAN, MAGIC, NO_NAME, NodeKindsChunk, NodesChunk, RootChunk, SitesChunk, StacksChunk,
    StringsChunk, StringsIter, TypePathsChunk, TypeTotalsChunk, UnknownChunk, VERSION,
    VERSION_IMAGES,
};
pub use timeline::{
    EventChunk, EventKind, GpuInfo, KIND_TIMELINE, NOT_MEASURED, Resource, SampleColumns,
    SamplesChunk, ThresholdInfo, ThresholdLevel, TimelineInfoChunk,
};
pub use writer::{
    AccumulatedColumns, AnalysisColumns, ArrayLengthColumns, EdgeColumns, FillColumns,
    FrameColumns, NodeColumns, SiteColumns, StackColumns, TypePathsColumns, TypeTotalsColumns,
    Writer,
};

/// The most bytes one record may hold. A reader refuses a record that would be larger before
/// reserving anything; writers keep chunks far below it (about 1M rows is 30 MB of nodes).
pub const MAX_RECORD_BYTES: u64 = 1 << 30;

/// Rows per chunk that [`Writer`] cuts typed columns into: small enough that a cut-short file
/// loses little and a streaming reader holds one chunk at a time, large enough that per-chunk
/// costs vanish.
pub const DEFAULT_CHUNK_ROWS: usize = 1 << 20;

/// The header's first entry, after the map marker: the key `magic` and the value `heapgraph`,
/// both as MessagePack fixstr.
const MAGIC_ENTRY: &[u8] = b"\xa5magic\xa9heapgraph";

/// Whether `prefix` (the first bytes of a stream) starts a `.hgd` header: `Some(true)` when it
/// does, `Some(false)` when it cannot, `None` when more bytes are needed to tell.
///
/// The header is a map (`fixmap`, `map16` or `map32`) whose first entry is `magic` =
/// `heapgraph`, so 17 bytes (with a `fixmap`) decide.
pub fn sniff(prefix: &[u8]) -> Option<bool> {
    let marker_len = match *prefix.first()? {
        0x80..=0x8f => 1,
        0xde => 3,
        0xdf => 5,
        _ => return Some(false),
    };
    let rest = prefix.get(marker_len..)?;
    let n_compared = rest.len().min(MAGIC_ENTRY.len());
    if rest[..n_compared] != MAGIC_ENTRY[..n_compared] {
        Some(false)
    } else if n_compared < MAGIC_ENTRY.len() {
        None
    } else {
        Some(true)
    }
}
