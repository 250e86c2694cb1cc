//! The PHD importer: IBM Portable Heap Dumps (`.phd`, written by OpenJ9 and the IBM SDKs with
//! `-Xdump:heap`, `com.ibm.jvm.Dump.heapDump()` or on an OutOfMemoryError), plain or gzipped,
//! into a [`HeapGraph`].
//!
//! The dump is read from memory in one pass (`parse`): the header, then every record, object,
//! array and class, into flat columns with their references as addresses. `graph` then resolves
//! the addresses to nodes, names the types from the class records, sizes the objects and, since
//! a PHD records no GC roots, chooses roots as Eclipse MAT does. `docs/formats.md` ("IBM
//! Portable Heap Dumps") says what is read and which choices are made.

mod graph;
mod parse;

use crate::{Format, ImportError};
use heapgraph_model::HeapGraph;
use std::io::Read;

/// The format name in errors.
const FORMAT: Format = Format::Phd;

/// The identifier every PHD starts with, as a Java modified-UTF string (2-byte length first).
const MAGIC: &[u8] = b"\x00\x12portable heap dump";

/// Whether `prefix` starts a Portable Heap Dump; `None` when it is too short to tell.
pub fn sniff(prefix: &[u8]) -> Option<bool> {
    let shared = prefix.len().min(MAGIC.len());
    if prefix[..shared] != MAGIC[..shared] {
        Some(false)
    } else if shared < MAGIC.len() {
        None
    } else {
        Some(true)
    }
}

/// Settings of the PHD importer (none yet).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Options {}

/// Reads a whole PHD stream into memory and imports it (see [`import_slice`]).
///
/// # Errors
/// As [`import_slice`], and [`ImportError::Io`] when reading fails.
pub fn import<R: Read>(mut reader: R, options: &Options) -> Result<HeapGraph, ImportError> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes)?;
    import_slice(&bytes, options)
}

/// Imports the Portable Heap Dump `bytes` (versions 4, 5 and 6; 32- and 64-bit).
///
/// Node kinds are those of the HPROF importer: `instance`, `class`, `object-array` and
/// `primitive-array`, plus the synthetic `root`. Types are Java names in source form
/// (`java.util.HashMap`, `byte[]`, `java.lang.Object[]`); class objects have type
/// `java.lang.Class` and their class's name as name. A PHD names no fields: an instance's
/// references are `property` edges named `<field>`, an array's non-null elements `element`
/// edges numbered in index order, a class's references (loader, statics, constant-pool classes)
/// `property` edges named `<class ref>`, and the links to an object's class and a class's
/// superclass `internal` edges (`<class>`, `<super>`).
///
/// A PHD records no GC roots. The super-root holds every class, then every object no other
/// object references, then one object of each group still unreached (isolated cycles), as Eclipse
/// MAT roots a PHD; a note says how many of each.
///
/// A dump cut short is read as far as it goes, with a note saying where it ends and what was
/// lost.
///
/// # Errors
/// [`ImportError::Malformed`] with a byte offset for a header, version or record that is not well
/// formed; [`ImportError::Truncated`] when the file ends before its header does.
pub fn import_slice(bytes: &[u8], _options: &Options) -> Result<HeapGraph, ImportError> {
    let parsed = parse::parse(bytes)?;
    graph::build(parsed, bytes.len())
}
