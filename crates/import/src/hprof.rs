//! The HPROF importer: Java heap dumps (`jcmd GC.heap_dump`, `jmap`, `-XX:+HeapDumpOnOutOfMemoryError`,
//! Android's `1.0.3`), plain or gzipped, into a [`HeapGraph`].
//!
//! The dump is read from memory (a memory-mapped file, or the decompressed bytes) in two passes,
//! each parallel over heap segments: pass 1 (`scan`) reads the top-level records and indexes each
//! segment's sub-records (roots, class dumps, object ids); then the class layouts are built
//! (`classes`), the ids indexed (`ids`), and pass 2 (`graph`) decodes every object's references
//! into edges. `docs/formats.md` §2 says what is read and how sizes are computed.
//!
//! Objects are the nodes in file order; synthetic frame nodes
//! (`com.example.Worker.run(Worker.java:42)`) follow, holding the thread-local roots under their
//! threads, and the synthetic super-root comes last, with an edge to every other GC root, named
//! by root kind.

mod bytes;
mod classes;
mod graph;
mod ids;
mod jvm;
pub(crate) mod redact;
mod scan;

use crate::{Format, ImportError};
use heapgraph_model::HeapGraph;
use std::io::Read;
use std::num::NonZeroUsize;

/// The format name in errors.
const FORMAT: Format = Format::Hprof;

/// Whether `prefix` starts an HPROF dump (`JAVA PROFILE 1.0.`); `None` when it is too short to
/// tell.
pub fn sniff(prefix: &[u8]) -> Option<bool> {
    scan::sniff(prefix)
}

/// Settings of the HPROF importer.
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct Options {
    /// Which heap dump to read, 1-based, of a file that holds several (the hprof agent writes
    /// such files); `None` reads the last.
    pub dump: Option<NonZeroUsize>,
    /// The object layout to assume, instead of the one the dump shows or implies.
    pub layout: Option<ObjectLayout>,
    /// The field layout to assume, instead of the one the dump shows or implies.
    pub fields: Option<FieldLayout>,
}

/// How a JVM laid its objects out: header and array header sizes and the size of a reference.
/// HPROF does not say; the importer reads it from the object addresses or from what the dump
/// says about the JVM, and this overrides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectLayout {
    /// 64-bit with compressed oops and class pointers: 12-byte headers, 4-byte references (the
    /// default for heaps under 32 GB since JDK 6u23).
    CompressedOops,
    /// 64-bit with compressed class pointers only: 12-byte headers, 8-byte references
    /// (`-XX:-UseCompressedOops` from JDK 8).
    CompressedClassPointers,
    /// 64-bit, nothing compressed: 16-byte headers, 8-byte references.
    Uncompressed,
    /// 64-bit with compressed oops only: 16-byte headers, 4-byte references
    /// (`-XX:-UseCompressedClassPointers`).
    CompressedOopsOnly,
    /// 32-bit: 8-byte headers, 4-byte references.
    ThirtyTwoBit,
}

impl ObjectLayout {
    /// Every layout, in the order of their names.
    pub const ALL: [ObjectLayout; 5] = [
        ObjectLayout::CompressedOops,
        ObjectLayout::CompressedClassPointers,
        ObjectLayout::Uncompressed,
        ObjectLayout::CompressedOopsOnly,
        ObjectLayout::ThirtyTwoBit,
    ];

    /// The name users give it (`--layout`).
    pub fn name(self) -> &'static str {
        match self {
            ObjectLayout::CompressedOops => "compressed-oops",
            ObjectLayout::CompressedClassPointers => "compressed-class-pointers",
            ObjectLayout::Uncompressed => "uncompressed",
            ObjectLayout::CompressedOopsOnly => "compressed-oops-only",
            ObjectLayout::ThirtyTwoBit => "32-bit",
        }
    }

    fn sizes(self) -> Layout {
        Layout::CANDIDATES[self as usize]
    }
}

/// How HotSpot placed an object's fields, which changed in JDK 15.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldLayout {
    /// Up to JDK 14: each class of the hierarchy on its own, starting at a reference-aligned
    /// boundary after its superclass's fields, grouped by size.
    PerClass,
    /// From JDK 15: a subclass's fields may fill the gaps its superclasses left.
    Packed,
}

impl FieldLayout {
    /// The name users give it (`--field-layout`).
    pub fn name(self) -> &'static str {
        match self {
            FieldLayout::PerClass => "per-class",
            FieldLayout::Packed => "packed",
        }
    }
}

/// Reads a whole HPROF stream into memory and imports it (see [`import_slice`]).
///
/// # Errors
/// As [`import_slice`], and [`ImportError::Io`] when reading fails.
pub fn import<R: Read>(mut reader: R, options: &Options) -> Result<HeapGraph, ImportError> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes)?;
    import_slice(&bytes, options)
}

/// Imports the HPROF dump `bytes`.
///
/// Node kinds are `instance`, `class`, `object-array` and `primitive-array`, plus the synthetic
/// `root` and `frame`. A node's type is its Java class name as `jcmd GC.class_histogram` prints
/// it, with arrays in source form (`byte[]`, `java.lang.Object[]`); class objects have type
/// `java.lang.Class` and their class's name as name. Strings are named by their value and
/// threads by their name. Instance fields are `property` edges named by field, array slots
/// `element` edges, the `referent` of `java.lang.ref.Reference` a `weak` edge, and links to
/// the class, superclass, loader and frames `internal` edges (`<class>`, `<super>`, …).
///
/// A dump cut short (a crash during the dump) is read as far as it goes, with a note saying
/// where it ends and what was lost.
///
/// # Errors
/// [`ImportError::Malformed`] with a byte offset for a header or record that is not well formed
/// (a corrupt length, an unknown sub-record); [`ImportError::Truncated`] when not even the
/// header arrived.
pub fn import_slice(bytes: &[u8], options: &Options) -> Result<HeapGraph, ImportError> {
    graph::build(bytes, options, &|_| {}, graph::BATCHES)
}

/// [`import_slice`] on a memory-mapped dump, handing each run of heap segments back to the
/// kernel once pass 2 is done with it, so that the dump's pages do not stay in the process's
/// memory beside the graph built from them.
pub(crate) fn import_mapped(
    map: &memmap2::Mmap,
    options: &Options,
) -> Result<HeapGraph, ImportError> {
    let release = |range: std::ops::Range<usize>| crate::mapped::release_range(map, range);
    graph::build(map, options, &release, graph::BATCHES)
}

/// The sizes of an [`ObjectLayout`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Bytes of an object header.
    pub(crate) header: u64,
    /// Where an array's elements start.
    pub(crate) array_base: u64,
    /// Bytes of a reference field or element.
    pub(crate) reference: u64,
    /// How the layout is described in notes.
    pub(crate) description: &'static str,
}

impl Layout {
    /// The sizes of each [`ObjectLayout`], in its order: the layouts a 64-bit HotSpot uses
    /// (8-byte ids), most common first, then the 32-bit one.
    pub(crate) const CANDIDATES: [Layout; 5] = [
        Layout {
            header: 12,
            array_base: 16,
            reference: 4,
            description: "64-bit, compressed oops and class pointers (12-byte headers, 4-byte references)",
        },
        Layout {
            header: 12,
            array_base: 16,
            reference: 8,
            description: "64-bit, compressed class pointers only (12-byte headers, 8-byte references)",
        },
        Layout {
            header: 16,
            array_base: 24,
            reference: 8,
            description: "64-bit, uncompressed (16-byte headers, 8-byte references)",
        },
        Layout {
            header: 16,
            array_base: 24,
            reference: 4,
            description: "64-bit, compressed oops only (16-byte headers, 4-byte references)",
        },
        Layout {
            header: 8,
            array_base: 12,
            reference: 4,
            description: "32-bit (8-byte headers, 4-byte references)",
        },
    ];

    /// Shallow size of an array of `length` elements of basic type `element`.
    pub(crate) fn array_size(&self, element: u8, length: u64) -> u64 {
        let element_size = match element {
            scan::basic::OBJECT => self.reference,
            code => scan::value_size(code, 8).unwrap_or(0) as u64,
        };
        align8(self.array_base + length * element_size)
    }
}

/// `n` rounded up to a multiple of 8, HotSpot's object alignment.
fn align8(n: u64) -> u64 {
    n.div_ceil(8) * 8
}

/// A dump a JVM wrote for the fixtures (`fixtures/java/NAME.hprof.gz`), uncompressed.
#[cfg(test)]
fn fixture_dump(name: &str) -> Vec<u8> {
    use std::io::Read;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../fixtures/java/{name}.hprof.gz"));
    let gzipped = std::fs::read(&path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(&gzipped[..])
        .read_to_end(&mut bytes)
        .expect("gzip");
    bytes
}
