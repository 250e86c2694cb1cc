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

    /// The modules the dumper imports. A capture imports them in the process before it takes
    /// the list of its objects, so that they are in that dump and every later one alike; the
    /// dumper's own import lines name the same (a test checks).
    pub const CAPTURE_IMPORTS: [&str; 9] = [
        "_signal", "_thread", "_weakref", "array", "gc", "opcode", "os", "sys", "time",
    ];

    /// What a capture runs in the process (Python), `{dumper}` and `{output}` replaced by the
    /// paths as the process names them. In order, each step before the next for a reason:
    ///
    /// 1. a copy of `sys.modules`, so that the dump can say which modules the capture imported;
    /// 2. the imports the dumper needs ([`CAPTURE_IMPORTS`]), so that the first capture's
    ///    imports are in its own dump, not new in the next one; then the collector's state;
    /// 3. a collection of the youngest generation, if the collector is on: what the collector
    ///    would do at the program's next allocations anyway once the imports have counted
    ///    towards its threshold. It settles, before the list is taken, the garbage the first
    ///    imports leave (`array` imports `collections` on an interpreter that has not, whose
    ///    first import leaves garbage cycles) and the young tuples a collection untracks (an
    ///    untracked tuple no dumped object refers to is not in the list);
    /// 4. the collector turned off, until the dumper is done and its namespace freed; each
    ///    running frame's `f_locals` read, which up to 3.12 makes the dict of a function's
    ///    locals that the frame keeps and the dumper reads (so that the first dump has it too);
    /// 5. the dumper's source read, and the list of objects, `gc.get_objects()`, bound to no
    ///    name of the bootstrap's namespace (which is in the list: a cycle);
    /// 6. only then the dumper compiled and run, so that nothing it makes is in the list.
    ///
    /// The dumper gets the frame the capture interrupted (two frames up: the bootstrap runs in
    /// a namespace of its own, under the statement that gdb or `sys.remote_exec` ran) and the
    /// bootstrap's own frame, whose objects it leaves out.
    pub const CAPTURE_BOOTSTRAP: &str = "\
import sys
modules = dict(sys.modules)
import {imports}
collector = gc.isenabled()
if collector:
    gc.collect(0)
gc.disable()
try:
    for frame in sys._current_frames().values():
        while frame is not None:
            frame.f_locals
            frame = frame.f_back
    with open('{dumper}', 'rb') as file:
        source = file.read()
    del file
    namespace = {'__name__': 'heapgraph_dump', '__capture__': (
        '{output}', gc.get_objects(), modules, collector, sys._getframe(1).f_back,
        sys._getframe(0))}
    exec(compile(source, '{dumper}', 'exec'), namespace)
except BaseException:
    if collector:
        gc.enable()
    raise
";

    /// The Python statement that runs [`CAPTURE_BOOTSTRAP`] in a process, with the dumper
    /// from the file `dumper`, to write `output` (both as the process names them, without
    /// quotes or backslashes): one line that binds no name (gdb runs it in `__main__`'s
    /// namespace), with the bootstrap in a namespace of its own.
    pub fn capture_statement(dumper: &str, output: &str) -> String {
        let bootstrap = CAPTURE_BOOTSTRAP
            .replace("{imports}", &CAPTURE_IMPORTS.join(", "))
            .replace("{dumper}", dumper)
            .replace("{output}", output);
        format!(
            "exec(compile({}, '<heapgraph capture>', 'exec'), {{}})",
            python_string(&bootstrap)
        )
    }

    /// `text` as a Python string literal (single quotes, escapes for quotes, backslashes and
    /// line ends).
    fn python_string(text: &str) -> String {
        let mut literal = String::with_capacity(text.len() + 2);
        literal.push('\'');
        for character in text.chars() {
            match character {
                '\\' => literal.push_str("\\\\"),
                '\'' => literal.push_str("\\'"),
                '\n' => literal.push_str("\\n"),
                other => literal.push(other),
            }
        }
        literal.push('\'');
        literal
    }
}

#[cfg(test)]
mod tests {
    use super::python::{CAPTURE_IMPORTS, DUMPER_SOURCE, capture_statement};
    use std::collections::BTreeSet;

    /// The dumper's top-level imports are the ones a capture makes first: a module the dumper
    /// imported that the capture had not would be new in the second capture's dump.
    #[test]
    fn a_capture_imports_what_the_dumper_imports() {
        let imported: BTreeSet<&str> = DUMPER_SOURCE
            .lines()
            .filter_map(|line| {
                let line = line.strip_prefix("import ").or_else(|| {
                    line.strip_prefix("from ")
                        .and_then(|rest| rest.split(" import ").next())
                })?;
                Some(line.split_whitespace().next().unwrap_or(line))
            })
            .collect();
        let captured: BTreeSet<&str> = CAPTURE_IMPORTS.into_iter().collect();
        assert_eq!(imported, captured);
    }

    /// The statement is one line, so that gdb can pass it to `PyRun_SimpleString`.
    #[test]
    fn the_capture_statement_is_one_line() {
        let statement = capture_statement("/tmp/d.py", "/tmp/out.hgd");
        assert!(!statement.contains('\n'), "{statement}");
        assert!(statement.contains("/tmp/out.hgd") && statement.contains("import _signal, "));
    }
}
