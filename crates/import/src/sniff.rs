//! Format detection by content: each importer's `sniff` is asked about the first bytes.

use crate::{hgd, hprof, phd, pickle, v8};

/// The formats heapgraph reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// A V8 `.heapsnapshot` (Node.js, Chrome).
    V8HeapSnapshot,
    /// heapgraph's own `.hgd`.
    Hgd,
    /// A Java heap dump (HPROF).
    Hprof,
    /// An IBM Portable Heap Dump (`.phd`, OpenJ9 and IBM SDKs).
    Phd,
    /// A Python pickle: a tracemalloc dump or a PyTorch CUDA memory snapshot.
    Pickle,
}

/// The format that `prefix` (the first bytes of an uncompressed stream) starts, if any importer
/// says yes.
pub fn sniff(prefix: &[u8]) -> Option<Format> {
    if v8::sniff(prefix) == Some(true) {
        return Some(Format::V8HeapSnapshot);
    }
    if hgd::sniff(prefix) == Some(true) {
        return Some(Format::Hgd);
    }
    if hprof::sniff(prefix) == Some(true) {
        return Some(Format::Hprof);
    }
    if phd::sniff(prefix) == Some(true) {
        return Some(Format::Phd);
    }
    if pickle::sniff(prefix) {
        return Some(Format::Pickle);
    }
    None
}
