//! The one table of formats: for each, its name in errors, how help names its files, what its
//! files hold, and how it is recognised and read. [`sniff`], [`import_path`](crate::import_path)
//! and [`import_reader`](crate::import_reader) walk it; adding a format is a variant of
//! [`Format`] and its row in [`FORMATS`].

use crate::{Contents, ImportError, Options, hgd, hprof, phd, pickle, v8};
use std::fmt;
use std::io::BufRead;

/// The formats heapgraph reads, named for what the user has.
///
/// Most are told by their first bytes ([`sniff`]). A pickle is not: only parsing it tells a
/// tracemalloc dump from a CUDA memory snapshot, so [`sniff`] says [`Format::Pickle`] and the
/// two it may hold are formats of their own, found inside the pickle ([`Format::inside`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// A V8 `.heapsnapshot` (Node.js, Chrome).
    V8HeapSnapshot,
    /// A Java heap dump (HPROF).
    Hprof,
    /// An IBM Portable Heap Dump (`.phd`, OpenJ9 and IBM SDKs).
    Phd,
    /// heapgraph's own `.hgd` holding a heap graph (the Python dumper's, or `convert`'s).
    Hgd,
    /// A Python pickle, before parsing tells which of the next two it is.
    Pickle,
    /// A tracemalloc dump (`Snapshot.dump`), a pickle.
    Tracemalloc,
    /// A PyTorch CUDA memory snapshot (`torch.cuda.memory._dump_snapshot`), a pickle.
    TorchCuda,
    /// An `.hgd` holding an allocation snapshot (the Rust allocation recorder's).
    HgdAllocSnapshot,
    /// A timeline (`.hgt`, `heapgraph record`'s): an `.hgd` stream of kind `timeline`.
    Timeline,
}

/// What a format's files hold, as far as which questions can be asked of them.
///
/// Deliberately exhaustive: a new kind of contents must make every caller (the CLI's table of
/// which verbs read what) decide what to do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Holds {
    /// Objects and references: a heap dump.
    HeapGraph,
    /// Allocations by stack with a CUDA allocator's segments and blocks.
    CudaSnapshot,
    /// Allocations by stack alone (tracemalloc, the Rust recorder).
    Allocations,
    /// Memory over time (`heapgraph record`).
    Timeline,
}

impl Holds {
    /// Every kind, in the order help lists them.
    pub const ALL: [Holds; 4] = [
        Holds::HeapGraph,
        Holds::CudaSnapshot,
        Holds::Allocations,
        Holds::Timeline,
    ];

    /// What such a file is called, with its article (`a heap dump`).
    pub fn noun(self) -> &'static str {
        match self {
            Holds::HeapGraph => "a heap dump",
            Holds::CudaSnapshot => "a CUDA memory snapshot",
            Holds::Allocations => "an allocation snapshot",
            Holds::Timeline => "a recording",
        }
    }

    /// The files that hold this, for help, from the table of formats: `a heap dump (V8 .heapsnapshot,
    /// Java .hprof, …; each plain or gzipped)`.
    pub fn files(self) -> String {
        let labels: Vec<&str> = FORMATS
            .iter()
            .filter(|row| row.holds == Some(self))
            .filter_map(|row| row.label)
            .collect();
        let each = if labels.len() > 1 { "each " } else { "" };
        format!(
            "{} ({}; {each}plain or gzipped)",
            self.noun(),
            or_list(&labels)
        )
    }
}

/// `a, b, or c`; `a or b`; `a`.
pub(crate) fn or_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [first, second] => format!("{first} or {second}"),
        [rest @ .., last] => format!("{}, or {last}", rest.join(", ")),
    }
}

/// Whether a prefix starts a format: `Some(true)` when it does, `Some(false)` when it cannot,
/// `None` when more bytes are needed to tell.
pub(crate) type Sniffer = fn(&[u8]) -> Option<bool>;

/// How a reader takes its input.
#[derive(Clone, Copy)]
pub(crate) enum Input {
    /// All of it in memory: a file is mapped (so the reader may hand pages back once read, see
    /// [`crate::mapped`]), a gzipped one decompressed into memory first.
    InMemory(fn(Bytes<'_>, &Options<'_>) -> Result<Contents, ImportError>),
    /// A stream, read once from the front.
    Streamed(fn(&mut dyn BufRead, &Options<'_>) -> Result<Contents, ImportError>),
    /// A file mapped (the first), else a stream (the second): for a reader that goes through
    /// its input once from the front, which a file spares copying, and a stream (a gzipped
    /// file) need not hold whole.
    MappedElseStreamed(
        fn(&memmap2::Mmap, &Options<'_>) -> Result<Contents, ImportError>,
        fn(&mut dyn BufRead, &Options<'_>) -> Result<Contents, ImportError>,
    ),
}

/// The whole input of an [`Input::InMemory`] reader.
#[derive(Clone, Copy)]
pub(crate) enum Bytes<'a> {
    /// A memory-mapped file.
    Mapped(&'a memmap2::Mmap),
    /// Bytes read into memory (a decompressed file, a stream).
    Read(&'a [u8]),
}

impl std::ops::Deref for Bytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(map) => map,
            Bytes::Read(bytes) => bytes,
        }
    }
}

/// How a format is recognised.
#[derive(Clone, Copy)]
pub(crate) enum Recognised {
    /// By its first bytes, and then read so.
    Sniffed(Sniffer, Input),
    /// Only by parsing a file of another format (which is sniffed and read).
    Inside(Format),
}

/// One row of [`FORMATS`].
pub(crate) struct Row {
    pub(crate) format: Format,
    /// The name errors give it (`hprof: at byte 12: …`).
    name: &'static str,
    /// How help names its files (`Java .hprof`); `None` for a format only ever seen as the
    /// container of another.
    label: Option<&'static str>,
    /// What its files hold; `None` where only parsing tells.
    holds: Option<Holds>,
    pub(crate) recognised: Recognised,
}

/// Every format, in [`Format`]'s order (a test checks), and so the order [`sniff`] asks them
/// in. Their first bytes exclude each other, so the order decides nothing but which is asked
/// first.
pub(crate) const FORMATS: [Row; 9] = [
    Row {
        format: Format::V8HeapSnapshot,
        name: "v8 heap snapshot",
        label: Some("V8 .heapsnapshot"),
        holds: Some(Holds::HeapGraph),
        recognised: Recognised::Sniffed(
            v8::sniff,
            Input::MappedElseStreamed(
                |map, _| v8::import_mapped(map, &v8::Options::default()).map(Contents::HeapGraph),
                |reader, _| v8::import(reader, &v8::Options::default()).map(Contents::HeapGraph),
            ),
        ),
    },
    Row {
        format: Format::Hprof,
        name: "hprof",
        label: Some("Java .hprof"),
        holds: Some(Holds::HeapGraph),
        recognised: Recognised::Sniffed(
            hprof::sniff,
            Input::InMemory(|bytes, options| {
                match bytes {
                    Bytes::Mapped(map) => hprof::import_mapped(map, &options.hprof),
                    Bytes::Read(bytes) => hprof::import_slice(bytes, &options.hprof),
                }
                .map(Contents::HeapGraph)
            }),
        ),
    },
    Row {
        format: Format::Phd,
        name: "phd",
        label: Some("IBM portable heap dump (.phd)"),
        holds: Some(Holds::HeapGraph),
        recognised: Recognised::Sniffed(
            phd::sniff,
            Input::InMemory(|bytes, _| {
                phd::import_slice(&bytes, &phd::Options::default()).map(Contents::HeapGraph)
            }),
        ),
    },
    Row {
        format: Format::Hgd,
        name: "heapgraph .hgd",
        label: Some("a .hgd of a Python process or of `convert`"),
        holds: Some(Holds::HeapGraph),
        recognised: Recognised::Sniffed(hgd::sniff_heap_graph, Input::Streamed(import_hgd)),
    },
    Row {
        format: Format::Pickle,
        name: "pickle",
        label: None,
        holds: None,
        recognised: Recognised::Sniffed(
            |prefix| Some(pickle::sniff(prefix)),
            Input::InMemory(|bytes, _| crate::import_pickle(&bytes)),
        ),
    },
    Row {
        format: Format::Tracemalloc,
        name: "tracemalloc snapshot",
        label: Some("a tracemalloc dump (Snapshot.dump)"),
        holds: Some(Holds::Allocations),
        recognised: Recognised::Inside(Format::Pickle),
    },
    Row {
        format: Format::TorchCuda,
        name: "CUDA memory snapshot",
        label: Some("a PyTorch .pickle from torch.cuda.memory._dump_snapshot"),
        holds: Some(Holds::CudaSnapshot),
        recognised: Recognised::Inside(Format::Pickle),
    },
    Row {
        format: Format::HgdAllocSnapshot,
        name: "heapgraph .hgd",
        label: Some("a Rust allocation recorder's .hgd"),
        holds: Some(Holds::Allocations),
        recognised: Recognised::Sniffed(hgd::sniff_alloc_snapshot, Input::Streamed(import_hgd)),
    },
    Row {
        format: Format::Timeline,
        name: "heapgraph .hgd",
        label: Some("a .hgt from `heapgraph record`"),
        holds: Some(Holds::Timeline),
        recognised: Recognised::Sniffed(hgd::sniff_timeline, Input::Streamed(import_hgd)),
    },
];

/// The `.hgd` reader, which reads the header's kind again and reads what it says.
fn import_hgd(reader: &mut dyn BufRead, _: &Options<'_>) -> Result<Contents, ImportError> {
    hgd::import(reader, &hgd::Options::default())
}

impl Format {
    /// Every format, in the table's order.
    pub const ALL: [Format; FORMATS.len()] = {
        let mut all = [Format::V8HeapSnapshot; FORMATS.len()];
        let mut at = 0;
        while at < FORMATS.len() {
            all[at] = FORMATS[at].format;
            at += 1;
        }
        all
    };

    /// This format's row.
    pub(crate) fn row(self) -> &'static Row {
        &FORMATS[self as usize]
    }

    /// What its files hold; `None` for a pickle, whose contents only parsing tells.
    pub fn holds(self) -> Option<Holds> {
        self.row().holds
    }

    /// How help names its files (`Java .hprof`); `None` for a pickle, which help names by
    /// what it holds.
    pub fn label(self) -> Option<&'static str> {
        self.row().label
    }

    /// The format that holds it, where only parsing a file of that format tells this one (a
    /// tracemalloc dump is a pickle); `None` for a format its first bytes tell.
    pub fn inside(self) -> Option<Format> {
        match self.row().recognised {
            Recognised::Sniffed(..) => None,
            Recognised::Inside(container) => Some(container),
        }
    }

    /// Whether it is one of heapgraph's own `.hgd` streams (a heap graph, an allocation
    /// snapshot or a timeline).
    pub fn is_hgd(self) -> bool {
        matches!(
            self,
            Format::Hgd | Format::HgdAllocSnapshot | Format::Timeline
        )
    }
}

/// The name users see in errors (`hprof`, `v8 heap snapshot`, `heapgraph .hgd`).
impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.row().name)
    }
}

/// The format that `prefix` (the first bytes of an uncompressed stream) starts, if any reader
/// says yes.
pub fn sniff(prefix: &[u8]) -> Option<Format> {
    FORMATS
        .iter()
        .find(|row| match row.recognised {
            Recognised::Sniffed(sniff, _) => sniff(prefix) == Some(true),
            Recognised::Inside(_) => false,
        })
        .map(|row| row.format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_in_the_order_of_the_formats() {
        for (at, row) in FORMATS.iter().enumerate() {
            assert_eq!(row.format as usize, at, "{:?}", row.format);
        }
    }

    #[test]
    fn a_format_found_inside_another_is_inside_one_that_is_sniffed() {
        for row in &FORMATS {
            if let Recognised::Inside(container) = row.recognised {
                assert!(matches!(
                    container.row().recognised,
                    Recognised::Sniffed(..)
                ));
                assert_eq!(
                    container.holds(),
                    None,
                    "{container:?} holds what parsing tells"
                );
            }
        }
    }

    #[test]
    fn help_lists_every_format_that_holds_each_kind() {
        assert_eq!(
            Holds::HeapGraph.files(),
            "a heap dump (V8 .heapsnapshot, Java .hprof, IBM portable heap dump (.phd), or a .hgd \
             of a Python process or of `convert`; each plain or gzipped)"
        );
        assert_eq!(
            Holds::Allocations.files(),
            "an allocation snapshot (a tracemalloc dump (Snapshot.dump) or a Rust allocation \
             recorder's .hgd; each plain or gzipped)"
        );
        assert_eq!(
            Holds::Timeline.files(),
            "a recording (a .hgt from `heapgraph record`; plain or gzipped)"
        );
    }
}
