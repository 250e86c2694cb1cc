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

/// Whether a prefix starts a format: `Some(true)` when it does, `Some(false)` when it cannot,
/// `None` when more bytes are needed to tell.
type Sniffer = fn(&[u8]) -> Option<bool>;

/// Every reader's sniffer, in the order [`sniff`] asks them: the one table of which formats
/// are recognised by content. Their magic bytes exclude each other, so the order decides
/// nothing but which is asked first.
const SNIFFERS: [(Format, Sniffer); 5] = [
    (Format::V8HeapSnapshot, v8::sniff),
    (Format::Hgd, hgd::sniff),
    (Format::Hprof, hprof::sniff),
    (Format::Phd, phd::sniff),
    (Format::Pickle, |prefix| Some(pickle::sniff(prefix))),
];

/// The format that `prefix` (the first bytes of an uncompressed stream) starts, if any importer
/// says yes.
pub fn sniff(prefix: &[u8]) -> Option<Format> {
    SNIFFERS
        .iter()
        .find(|(_, sniff)| sniff(prefix) == Some(true))
        .map(|&(format, _)| format)
}
