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
pub use write::write_heap_graph;

use crate::ImportError;
use heapgraph_format as format;
use heapgraph_model::StringId;
use std::io;

/// The format name in errors.
const FORMAT: &str = "heapgraph .hgd";

/// The `totals` keys of the header.
const TOTAL_NODES: &str = "nodes";
const TOTAL_EDGES: &str = "edges";
const TOTAL_STRINGS: &str = "strings";

/// Whether `prefix` starts an `.hgd` header (see [`heapgraph_format::sniff`]).
pub fn sniff(prefix: &[u8]) -> Option<bool> {
    format::sniff(prefix)
}

/// Settings of the `.hgd` importer (none yet).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Options {}

/// Analysis results stored in an `.hgd` file, one entry per node in node order.
///
/// Plain columns, so that the analyzer can adopt them without this crate knowing its types.
/// [`StoredAnalysis::NONE`] (`u32::MAX`) marks a node with no dominator or no distance
/// (unreachable nodes, and the root's dominator).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredAnalysis {
    /// Immediate dominator's node index, per node.
    pub dominator: Vec<u32>,
    /// Retained size in bytes, per node.
    pub retained_size: Vec<u64>,
    /// Distance from the root per node, as the analyzer computed it (for V8, DevTools' raw
    /// distance, which counts from 100000000 for nodes reached only from system roots).
    pub distance: Vec<u32>,
    /// Nodes in each node's dominator subtree, itself included; empty when not stored.
    pub retained_count: Vec<u32>,
    /// Per-type totals, where stored.
    pub type_totals: Option<StoredTypeTotals>,
}

/// Per-type totals stored in an `.hgd` file, one row per type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredTypeTotals {
    /// The type's name, in the graph's string table (findable).
    pub type_name: Vec<StringId>,
    /// Real objects of the type.
    pub count: Vec<u64>,
    /// Their shallow sizes, summed.
    pub shallow_size: Vec<u64>,
    /// Their retained sizes, each byte counted once.
    pub retained_size: Vec<u64>,
}

impl StoredAnalysis {
    /// "None": no dominator, or no distance.
    pub const NONE: u32 = u32::MAX;
}

/// A complete record that breaks the format, at `offset`.
fn malformed(offset: u64, message: String) -> ImportError {
    ImportError::Malformed {
        format: FORMAT,
        offset,
        message,
    }
}

/// Columns that do not make a consistent graph.
fn inconsistent(message: String) -> ImportError {
    ImportError::Inconsistent {
        format: FORMAT,
        message,
    }
}

/// The importer's error for a reader's error.
fn import_error(err: format::Error) -> ImportError {
    match err {
        format::Error::Io { source, .. } => ImportError::Io(source),
        format::Error::TruncatedHeader { offset } => ImportError::Truncated {
            format: FORMAT,
            offset,
            expected: "the header".to_owned(),
        },
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
