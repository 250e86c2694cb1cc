//! Recorders that run beside or inside a live process. For now: the Python dumper, a
//! standard-library-only `.py` file that writes a process's object graph as a `.hgd`, embedded
//! here so that the `heapgraph` binary can print it or inject it into a running interpreter
//! with nothing installed in the target.
//!
//! ```
//! assert!(heapgraph_capture::python::DUMPER_SOURCE.contains("def dump("));
//! ```
#![deny(missing_docs)]

#[cfg(feature = "sampler")]
pub mod record;

/// The Python dumper.
pub mod python {
    /// The source of `heapgraph_dump.py` (Python 3.9 to 3.14, standard library only).
    pub const DUMPER_SOURCE: &str = include_str!("../python/heapgraph_dump.py");

    /// The Python versions the dumper supports, `(major, minor)` inclusive.
    pub const SUPPORTED: ((u32, u32), (u32, u32)) = ((3, 9), (3, 14));
}
