//! Recorders that run inside or beside a live process:
//!
//! - the **Rust allocation recorder** ([`Recorder`], feature `alloc-recorder`, on by default): a
//!   global allocator that records live allocations by call stack, cheaply (return addresses
//!   from frame pointers), and [`snapshot`] to write them as an `.hgd` allocation snapshot that
//!   `heapgraph top` and `heapgraph diff` read as they read tracemalloc dumps;
//! - the **Python dumper**, a standard-library-only `.py` file that writes a process's object
//!   graph as a `.hgd`, embedded here so that the `heapgraph` binary can print it or inject it
//!   into a running interpreter with nothing installed in the target;
//! - the **memory sampler** of `heapgraph record` ([`sampler`], feature `sampler`, which the
//!   binary turns on): a process tree's host and GPU memory over time, the `.hgt` timeline
//!   writer, thresholds, and the triggers that take a dump of a running runtime.
//!
//! Adding the recorder to a program takes one line, and a build flag so that stacks can be
//! walked (`RUSTFLAGS="-C force-frame-pointers=yes"`, with debug info for line numbers):
//!
//! ```no_run
//! #[global_allocator]
//! static ALLOC: heapgraph_capture::Recorder = heapgraph_capture::Recorder::new();
//! // Or, in production, a Poisson sample of one allocation every 512 KiB on average:
//! // static ALLOC: heapgraph_capture::Recorder = heapgraph_capture::Recorder::sampling(512 * 1024);
//!
//! fn main() -> Result<(), heapgraph_capture::SnapshotError> {
//!     let cache: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
//!     let info = heapgraph_capture::snapshot("before.hgd")?;
//!     println!("{} bytes live in {} sites", info.bytes, info.sites);
//!     drop(cache);
//!     heapgraph_capture::snapshot("after.hgd")?;
//!     Ok(())
//! }
//! ```
//!
//! ```
//! assert!(heapgraph_capture::python::DUMPER_SOURCE.contains("def dump("));
//! ```
#![deny(missing_docs)]

#[cfg(feature = "alloc-recorder")]
mod alloc_recorder;
#[cfg(feature = "sampler")]
pub mod sampler;

#[cfg(feature = "alloc-recorder")]
pub use alloc_recorder::{
    DEFAULT_MAX_FRAMES, MAX_FRAMES, Recorder, SnapshotError, SnapshotInfo, snapshot,
};

/// The Python dumper.
pub mod python {
    /// The source of `heapgraph_dump.py` (Python 3.9 to 3.14, standard library only).
    pub const DUMPER_SOURCE: &str = include_str!("../python/heapgraph_dump.py");

    /// The Python versions the dumper supports, `(major, minor)` inclusive.
    pub const SUPPORTED: ((u32, u32), (u32, u32)) = ((3, 9), (3, 14));
}
