//! heapgraph's own `.hgd` dumps: the codec between `heapgraph_format`'s records and the model's
//! [`HeapGraph`](heapgraph_model::HeapGraph), both ways, with the optional stored analysis
//! (dominators, retained sizes, distances) beside the graph, so that a converted file reopens
//! without recomputing; allocation snapshots (header kind `alloc-snapshot`, what the Rust
//! allocation recorder writes), both ways; and the reader of timelines (`.hgt`, header kind
//! `timeline`).
//!
//! Reading copies each column blob straight into the model's columns (no per-element serde).
//! A file that was cut short yields what arrived as a consistent graph, with a note in
//! [`GraphMeta::notes`](heapgraph_model::GraphMeta::notes) saying what was lost. The byte layout
//! is in `docs/formats.md`.
//!
//! The parts: `read` (heap graphs, streamed or in memory; `read/bulk.rs` decodes a mapped
//! file's columns in parallel, `read/python.rs` is the repair only the Python dumper's files
//! need), `write` (heap graphs), `alloc` (allocation snapshots, both ways) and `timeline`.

mod alloc;
mod read;
#[cfg(test)]
mod tests;
mod timeline;
mod write;

pub use alloc::write_alloc_snapshot;
pub use read::{
    import, import_path_with_analysis, import_slice_with_analysis, import_with_analysis,
};
pub use write::{write_heap_graph, write_heap_graph_plain};

use crate::{Format, ImportError};
use heapgraph_format as format;
use std::io;

/// The format name in errors.
const FORMAT: Format = Format::Hgd;

/// The `totals` keys of the header.
const TOTAL_NODES: &str = "nodes";
const TOTAL_EDGES: &str = "edges";
const TOTAL_STRINGS: &str = "strings";

/// Whether `prefix` starts an `.hgd` header (see [`heapgraph_format::sniff`]), of any kind.
pub fn sniff(prefix: &[u8]) -> Option<bool> {
    format::sniff(prefix)
}

/// The kind its header names, when `prefix` starts an `.hgd` and holds its whole header
/// (a few hundred bytes); `Err` when it does not hold it, or holds a header that is not well
/// formed.
fn sniffed_kind(prefix: &[u8]) -> Option<Result<String, ()>> {
    match format::sniff(prefix)? {
        false => None,
        true => Some(
            format::Reader::new(prefix)
                .map(|reader| reader.header().kind.clone())
                .map_err(|_| ()),
        ),
    }
}

/// Whether `prefix` starts an `.hgd` heap graph. A header that the prefix does not hold whole,
/// or that is not well formed, counts as one: the reader reads the header again and says
/// what is wrong with it.
pub(crate) fn sniff_heap_graph(prefix: &[u8]) -> Option<bool> {
    match sniffed_kind(prefix) {
        None => format::sniff(prefix),
        Some(Ok(kind)) => {
            Some(kind != format::KIND_ALLOC_SNAPSHOT && kind != format::KIND_TIMELINE)
        }
        Some(Err(())) => Some(true),
    }
}

/// Whether `prefix` starts an `.hgd` allocation snapshot.
pub(crate) fn sniff_alloc_snapshot(prefix: &[u8]) -> Option<bool> {
    sniff_kind(prefix, format::KIND_ALLOC_SNAPSHOT)
}

/// Whether `prefix` starts a timeline (`.hgt`).
pub(crate) fn sniff_timeline(prefix: &[u8]) -> Option<bool> {
    sniff_kind(prefix, format::KIND_TIMELINE)
}

/// Whether `prefix` starts an `.hgd` whose header names `kind`.
fn sniff_kind(prefix: &[u8], kind: &str) -> Option<bool> {
    match sniffed_kind(prefix) {
        None => format::sniff(prefix),
        Some(Ok(found)) => Some(found == kind),
        Some(Err(())) => Some(false),
    }
}

/// Settings of the `.hgd` importer (none yet).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Options {}

/// A complete record that breaks the format, at `offset`.
fn malformed(offset: u64, message: String) -> ImportError {
    ImportError::malformed(FORMAT, offset, message)
}

/// Columns that do not make a consistent graph.
fn inconsistent(message: String) -> ImportError {
    ImportError::inconsistent(FORMAT, message)
}

/// The importer's error for a reader's error.
fn import_error(err: format::Error) -> ImportError {
    match err {
        format::Error::Io { source, .. } => ImportError::Io(source),
        format::Error::TruncatedHeader { offset } => {
            ImportError::truncated(FORMAT, offset, "the header")
        }
        format::Error::Malformed {
            record,
            offset,
            message,
        } => malformed(offset, format!("record {record}: {message}")),
        other => malformed(other.offset().unwrap_or(0), other.to_string()),
    }
}

/// The writer's error as an `io::Error`: the stream's own error where it is one.
fn write_error(err: format::Error) -> io::Error {
    match err {
        format::Error::Io { source, .. } => source,
        other => io::Error::new(io::ErrorKind::InvalidInput, other.to_string()),
    }
}
