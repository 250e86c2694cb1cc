//! heapgraph's own `.hgd` dumps: the codec between `heapgraph_format`'s records and the model's
//! [`HeapGraph`], both ways, with the optional stored analysis (dominators, retained sizes,
//! distances) beside the graph, so that a converted file reopens without recomputing; allocation
//! snapshots (header kind `alloc-snapshot`, what the Rust allocation recorder writes), both ways;
//! and the reader of timelines (`.hgt`, header kind `timeline`).
//!
//! Reading copies each column blob straight into the model's columns (no per-element serde).
//! A file that was cut short yields what arrived as a consistent graph, with a note in
//! [`GraphMeta::notes`] saying what was lost. The byte layout is in `docs/formats.md`.

mod alloc;
mod timeline;

pub use alloc::write_alloc_snapshot;

use crate::{Contents, ImportError};
use heapgraph_format::{
    self as format, AnalysisColumns, Chunk, EdgeColumns, Header, KIND_ALLOC_SNAPSHOT,
    KIND_HEAP_GRAPH, KIND_TIMELINE, NodeColumns, Reader, SliceReader, Truncation,
    TypeTotalsColumns, Writer, decode_column,
};
use heapgraph_model::{
    EdgeKind, EdgeNames, EdgeOffsets, GraphMeta, HeapGraph, HeapGraphParts, NodeKindInfo,
    NodeNames, NodeTypes, PackedU64, Runtime, StringId, StringTable,
};
use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};

/// The format name in errors.
const FORMAT: &str = "heapgraph .hgd";

/// The name of the node kind given to nodes of a cut-short file whose kind did not arrive.
const UNKNOWN_KIND: &str = "(unknown)";

/// The Python dumper's chunk of data buffers (docs/formats.md), which this version skips.
const BUFFERS: &str = "buffers";

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

/// Imports an `.hgd` file holding a heap graph; a stored analysis, if any, is dropped.
///
/// # Errors
/// As [`import_with_analysis`].
pub fn import<R: BufRead>(reader: R, options: &Options) -> Result<Contents, ImportError> {
    import_with_analysis(reader, options).map(|(dump, _)| dump)
}

/// Imports an `.hgd` file holding a heap graph, and the analysis stored beside it if the file
/// has a complete one that fits the graph.
///
/// A file cut short yields the nodes and edges that arrived (a node whose edges were cut keeps
/// those that arrived) and a note in the graph's metadata; its stored analysis is kept only if
/// the graph arrived whole.
///
/// # Errors
/// [`ImportError::Truncated`] when the file ends before its header or before any node (or the
/// root) arrived; [`ImportError::Malformed`] for records that break the format, with their
/// byte offset; [`ImportError::Inconsistent`] when a complete file's columns disagree (an edge
/// to no node, a string id outside the table); [`ImportError::Io`].
pub fn import_with_analysis<R: BufRead>(
    reader: R,
    _options: &Options,
) -> Result<(Contents, Option<StoredAnalysis>), ImportError> {
    let mut reader = Reader::new(reader).map_err(import_error)?;
    let header = reader.header().clone();
    if header.kind == KIND_TIMELINE {
        return timeline::import(reader).map(|timeline| (Contents::Timeline(timeline), None));
    }
    if header.kind == KIND_ALLOC_SNAPSHOT {
        return alloc::import(reader, &header).map(|snapshot| (Contents::Alloc(snapshot), None));
    }
    let runtime = check_header(&header)?;
    let mut columns = Columns::default();
    // The strings (written first) are copied into the table on a second thread while the
    // nodes and edges are read.
    let file_strings = std::thread::scope(|scope| -> Result<FileStrings, ImportError> {
        let mut filling = None;
        loop {
            let start = reader.offset();
            let record = reader.chunks_read() + 1;
            let Some(chunk) = reader.next_chunk().map_err(import_error)? else {
                break;
            };
            if filling.is_none()
                && !matches!(chunk, Chunk::Strings(_))
                && !columns.string_lengths.is_empty()
            {
                let (text, lengths) = columns.take_strings();
                filling = Some(scope.spawn(move || {
                    let mut file_strings = FileStrings::with_capacity(lengths.len(), text.len());
                    file_strings.add(&text, &lengths);
                    file_strings
                }));
            }
            columns
                .add(chunk)
                .map_err(|message| malformed(start, format!("record {record}: {message}")))?;
        }
        let (text, lengths) = columns.take_strings();
        let mut file_strings = match filling {
            Some(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => FileStrings::with_capacity(lengths.len(), text.len()),
        };
        // Strings that came after the first other chunk (a streaming writer's), in file order.
        file_strings.add(&text, &lengths);
        Ok(file_strings)
    })?;
    let truncation = reader.truncation().cloned();
    let (graph, analysis) = columns.finish(file_strings, &header, runtime, truncation.as_ref())?;
    Ok((Contents::HeapGraph(graph), analysis))
}

/// The runtime of a heap-graph file, after checking that the header describes one.
fn check_header(header: &Header) -> Result<Runtime, ImportError> {
    if header.kind != KIND_HEAP_GRAPH {
        return Err(malformed(
            0,
            format!(
                "the file holds a {:?}; this version of heapgraph reads {KIND_HEAP_GRAPH:?}, {KIND_ALLOC_SNAPSHOT:?} and {KIND_TIMELINE:?}",
                header.kind
            ),
        ));
    }
    Runtime::from_name(&header.runtime).ok_or_else(|| {
        malformed(
            0,
            format!(
                "the runtime is {:?}; expected \"v8\", \"java\" or \"python\"",
                header.runtime
            ),
        )
    })
}

/// Imports an `.hgd` file that is wholly in memory (a memory-mapped file, say), with its stored
/// analysis: as [`import_with_analysis`], with the same results, but the chunks are borrowed
/// from `bytes` rather than copied, and the columns are decoded in parallel, each straight into
/// a vector of its final size.
///
/// # Errors
/// As [`import_with_analysis`].
pub fn import_slice_with_analysis(
    bytes: &[u8],
    _options: &Options,
) -> Result<(Contents, Option<StoredAnalysis>), ImportError> {
    import_slice_releasing(bytes, &|_| {})
}

/// Hands a part of the input that has been decoded, and is not read again, back to the kernel
/// (a memory-mapped file's pages), or does nothing.
type Release<'r> = &'r (dyn Fn(&[u8]) + Sync);

/// [`import_slice_with_analysis`], calling `release` with each bulk column and strings blob
/// once it is decoded.
fn import_slice_releasing(
    bytes: &[u8],
    release: Release<'_>,
) -> Result<(Contents, Option<StoredAnalysis>), ImportError> {
    let mut reader = SliceReader::new(bytes).map_err(import_error)?;
    let header = reader.header().clone();
    if header.kind == KIND_TIMELINE {
        // Timelines are small: the streaming reader's copy costs nothing worth a second path.
        let reader = Reader::new(bytes).map_err(import_error)?;
        return timeline::import(reader).map(|timeline| (Contents::Timeline(timeline), None));
    }
    if header.kind == KIND_ALLOC_SNAPSHOT {
        return alloc::import(reader, &header).map(|snapshot| (Contents::Alloc(snapshot), None));
    }
    let runtime = check_header(&header)?;
    let mut columns = Columns::default();
    let mut bulk = Vec::new();
    let mut string_chunks = Vec::new();
    // Chunks are checked as they are framed, and their bulk columns decoded after the loop;
    // where several records are bad, the earliest is reported, as by the streaming reader.
    let mut framing_error = None;
    loop {
        let start = reader.offset();
        let record = reader.chunks_read() + 1;
        let chunk = match reader.next_chunk() {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(err) => {
                framing_error = Some(import_error(err));
                break;
            }
        };
        match chunk {
            Chunk::Nodes(_) | Chunk::Edges(_) | Chunk::Analysis(_) => bulk.push(Located {
                record,
                start,
                chunk,
            }),
            Chunk::Strings(chunk) => string_chunks.push(Located {
                record,
                start,
                chunk,
            }),
            other => {
                if let Err(message) = columns.add(other) {
                    framing_error = Some(malformed(start, format!("record {record}: {message}")));
                    break;
                }
            }
        }
    }
    let (file_strings, bulk_columns) = rayon::join(
        || file_strings_of(&string_chunks, release),
        || BulkColumns::decode(&bulk, release),
    );
    let (file_strings, bulk_columns) = match (file_strings, bulk_columns, framing_error) {
        (Ok(file_strings), Ok(bulk_columns), None) => (file_strings, bulk_columns),
        (file_strings, bulk_columns, framing_error) => {
            let earliest = [file_strings.err(), bulk_columns.err(), framing_error]
                .into_iter()
                .flatten()
                .min_by_key(error_offset);
            return Err(earliest.unwrap_or_else(|| malformed(0, "unreadable".to_owned())));
        }
    };
    bulk_columns.move_into(&mut columns);
    let truncation = reader.truncation().cloned();
    let (graph, analysis) = columns.finish(file_strings, &header, runtime, truncation.as_ref())?;
    Ok((Contents::HeapGraph(graph), analysis))
}

/// Imports the uncompressed `.hgd` file at `path`, with its stored analysis, by mapping it into
/// memory and calling [`import_slice_with_analysis`]; each column's pages are handed back to
/// the kernel once decoded, so that the file and the graph decoded from it are not resident at
/// once.
///
/// # Errors
/// [`ImportError::Io`] when the file cannot be opened or mapped; otherwise as
/// [`import_with_analysis`].
pub fn import_path_with_analysis(
    path: &std::path::Path,
    _options: &Options,
) -> Result<(Contents, Option<StoredAnalysis>), ImportError> {
    let file = std::fs::File::open(path)?;
    // SAFETY: the map is only read, and dropped before this returns. Another process could
    // change the file meanwhile, as with any memory-mapped input; heapgraph's inputs are dumps
    // written once and then read, and every byte read is checked as if it were hostile.
    let map = unsafe { memmap2::MmapOptions::new().map(&file)? };
    import_slice_releasing(&map, &|part| crate::mapped::release_slice(&map, part))
}

/// Where an error was found, to report the earliest of several; unplaced errors sort last.
fn error_offset(err: &ImportError) -> u64 {
    match err {
        ImportError::Malformed { offset, .. } | ImportError::Truncated { offset, .. } => *offset,
        _ => u64::MAX,
    }
}

/// A chunk with the record number and byte offset that errors name.
struct Located<C> {
    record: u64,
    start: u64,
    chunk: C,
}

impl<C> Located<C> {
    fn error(&self, message: impl std::fmt::Display) -> ImportError {
        malformed(self.start, format!("record {}: {message}", self.record))
    }
}

/// The string table of the file's strings chunks, in file order.
fn file_strings_of(
    chunks: &[Located<format::StringsChunk<'_>>],
    release: Release<'_>,
) -> Result<FileStrings, ImportError> {
    let mut n_strings = 0u64;
    let mut n_bytes = 0usize;
    for located in chunks {
        n_strings += located.chunk.rows().map_err(|err| located.error(err))? as u64;
        n_bytes += located.chunk.data.len();
    }
    if n_strings > u64::from(u32::MAX) {
        return Err(chunks[chunks.len() - 1].error("the file has more than 2^32 strings"));
    }
    let mut file_strings = FileStrings::with_capacity(n_strings as usize, n_bytes);
    for located in chunks {
        for text in located.chunk.strings().map_err(|err| located.error(err))? {
            file_strings.push(text);
        }
        release(located.chunk.data);
        release(located.chunk.lengths);
    }
    Ok(file_strings)
}

/// The bulk columns of a file (nodes, edges, analysis), decoded one column per task.
#[derive(Default)]
struct BulkColumns {
    object_id: Vec<u64>,
    node_kind: Vec<u8>,
    node_type: Vec<u32>,
    node_name: Vec<u32>,
    shallow_size: Vec<u64>,
    refcount: Vec<u32>,
    first_edge: Vec<u64>,
    edge_to: Vec<u32>,
    edge_to_object: Vec<u64>,
    edge_kind: Vec<EdgeKind>,
    edge_name: Vec<u32>,
    dominator: Vec<u32>,
    retained_size: Vec<u64>,
    distance: Vec<u32>,
    retained_count: Vec<u32>,
    retained_count_missing: bool,
}

impl BulkColumns {
    /// Decodes the columns of `chunks` (nodes, edges and analysis chunks, in file order).
    fn decode(
        chunks: &[Located<Chunk<'_>>],
        release: Release<'_>,
    ) -> Result<BulkColumns, ImportError> {
        let nodes = of_kind(chunks, |chunk| match chunk {
            Chunk::Nodes(chunk) => Some(chunk),
            _ => None,
        });
        let edges = of_kind(chunks, |chunk| match chunk {
            Chunk::Edges(chunk) => Some(chunk),
            _ => None,
        });
        let analysis = of_kind(chunks, |chunk| match chunk {
            Chunk::Analysis(chunk) => Some(chunk),
            _ => None,
        });
        let mut out = BulkColumns::default();
        // Each task reports its error here; `scope` returns once all of them are done.
        let errors: std::sync::Mutex<Vec<ImportError>> = std::sync::Mutex::new(Vec::new());
        let report = |result: Result<(), ImportError>| {
            if let Err(err) = result {
                errors
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(err);
            }
        };
        rayon::scope(|scope| {
            let BulkColumns {
                object_id,
                node_kind,
                node_type,
                node_name,
                shallow_size,
                refcount,
                first_edge,
                edge_to,
                edge_to_object,
                edge_kind,
                edge_name,
                dominator,
                retained_size,
                distance,
                retained_count,
                retained_count_missing,
            } = &mut out;
            let report = &report;
            macro_rules! spawn_column {
                ($chunks:expr, $out:expr, $field:ident) => {{
                    let chunks = &$chunks;
                    let out = $out;
                    scope.spawn(move |_| {
                        report(concat_column(chunks, out, |chunk| chunk.$field, release))
                    });
                }};
            }
            spawn_column!(nodes, object_id, object_id);
            spawn_column!(nodes, node_kind, kind);
            spawn_column!(nodes, node_type, type_name);
            spawn_column!(nodes, node_name, name);
            spawn_column!(nodes, shallow_size, shallow_size);
            spawn_column!(nodes, refcount, refcount);
            spawn_column!(edges, edge_to, to);
            spawn_column!(edges, edge_to_object, to_object);
            spawn_column!(edges, edge_name, name);
            spawn_column!(analysis, dominator, dominator);
            spawn_column!(analysis, retained_size, retained_size);
            spawn_column!(analysis, distance, distance);
            spawn_column!(analysis, retained_count, retained_count);
            *retained_count_missing = analysis
                .iter()
                .any(|located| located.chunk.retained_count.is_empty());
            let nodes = &nodes;
            scope.spawn(move |_| report(prefix_sums_of_edge_counts(nodes, first_edge, release)));
            let edges = &edges;
            scope.spawn(move |_| report(edge_kinds_of(edges, edge_kind, release)));
        });
        // Report the error of the earliest record, as a sequential read would.
        errors
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .into_iter()
            .min_by_key(error_offset)
            .map_or(Ok(out), Err)
    }

    /// Moves the columns into `columns`, which holds none of them yet.
    fn move_into(self, columns: &mut Columns) {
        columns.object_id = self.object_id;
        columns.node_kind = self.node_kind;
        columns.node_type = self.node_type;
        columns.node_name = self.node_name;
        columns.shallow_size = self.shallow_size;
        columns.refcount = self.refcount;
        columns.first_edge = self.first_edge;
        columns.edge_to = self.edge_to;
        columns.edge_to_object = self.edge_to_object;
        columns.edge_kind = self.edge_kind;
        columns.edge_name = self.edge_name;
        columns.dominator = self.dominator;
        columns.retained_size = self.retained_size;
        columns.distance = self.distance;
        columns.retained_count = self.retained_count;
        columns.retained_count_missing = self.retained_count_missing;
    }
}

/// The chunks that `pick` narrows to one type, with their places.
fn of_kind<'c, 'a, C>(
    chunks: &'c [Located<Chunk<'a>>],
    pick: impl Fn(&'c Chunk<'a>) -> Option<&'c C>,
) -> Vec<Located<&'c C>> {
    chunks
        .iter()
        .filter_map(|located| {
            pick(&located.chunk).map(|chunk| Located {
                record: located.record,
                start: located.start,
                chunk,
            })
        })
        .collect()
}

/// Concatenates the column that `blob` picks from each chunk into `out`, sized once.
fn concat_column<'a, C: 'a, T: format::LeInt>(
    chunks: &[Located<&C>],
    out: &mut Vec<T>,
    blob: impl Fn(&C) -> &'a [u8],
    release: Release<'_>,
) -> Result<(), ImportError> {
    let total: usize = chunks
        .iter()
        .map(|located| blob(located.chunk).len() / T::WIDTH)
        .sum();
    out.reserve_exact(total);
    for located in chunks {
        decode_column(blob(located.chunk), out).map_err(|err| located.error(err))?;
        release(blob(located.chunk));
    }
    Ok(())
}

/// The CSR offsets from the nodes chunks' edge counts (`out` is empty): 0, then the running
/// sums.
fn prefix_sums_of_edge_counts(
    chunks: &[Located<&format::NodesChunk<'_>>],
    out: &mut Vec<u64>,
    release: Release<'_>,
) -> Result<(), ImportError> {
    let total: usize = chunks
        .iter()
        .map(|located| located.chunk.edge_count.len() / 4)
        .sum();
    out.reserve_exact(total + 1);
    out.push(0);
    let mut running = 0u64;
    for located in chunks {
        let (edge_counts, _) = located.chunk.edge_count.as_chunks::<4>();
        out.extend(edge_counts.iter().map(|count| {
            running += u64::from(u32::from_le_bytes(*count));
            running
        }));
        release(located.chunk.edge_count);
    }
    Ok(())
}

/// The edge kinds of the edges chunks, each code checked.
fn edge_kinds_of(
    chunks: &[Located<&format::EdgesChunk<'_>>],
    out: &mut Vec<EdgeKind>,
    release: Release<'_>,
) -> Result<(), ImportError> {
    let total: usize = chunks.iter().map(|located| located.chunk.kind.len()).sum();
    out.reserve_exact(total);
    for located in chunks {
        let codes = located.chunk.kind;
        if let Some(pos) = codes
            .iter()
            .position(|&code| EdgeKind::from_u8(code).is_none())
        {
            return Err(located.error(bad_edge_kind(out.len() + pos, codes[pos])));
        }
        out.extend(
            codes
                .iter()
                .map(|&code| EdgeKind::from_u8(code).unwrap_or(EdgeKind::Weak)),
        );
        release(codes);
    }
    Ok(())
}

/// The message for edge number `edge` with the unknown kind code `code`.
fn bad_edge_kind(edge: usize, code: u8) -> String {
    format!(
        "edge {edge} has kind code {code}; the codes are 0 to {}",
        EdgeKind::ALL.len() - 1
    )
}

/// Writes `graph` (and `analysis`, when given) as an `.hgd` stream: header, strings in id order,
/// node kinds, root, then nodes, edges and analysis in chunks of about 1M rows, then the end
/// record.
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`] when `analysis` does not have one entry per node or a node
/// has 2³² edges or more; otherwise the stream's own errors.
pub fn write_heap_graph<W: Write>(
    graph: &HeapGraph,
    analysis: Option<&StoredAnalysis>,
    out: W,
) -> io::Result<()> {
    write_in_chunks(graph, analysis, out, format::DEFAULT_CHUNK_ROWS)
}

/// [`write_heap_graph`] with `chunk_rows` rows per chunk.
fn write_in_chunks<W: Write>(
    graph: &HeapGraph,
    analysis: Option<&StoredAnalysis>,
    out: W,
    chunk_rows: usize,
) -> io::Result<()> {
    let parts = graph.parts();
    let n_nodes = graph.node_count();
    if let Some(analysis) = analysis {
        let lengths = [
            analysis.dominator.len(),
            analysis.retained_size.len(),
            analysis.distance.len(),
        ];
        if lengths.iter().any(|&len| len != n_nodes) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the stored analysis has {lengths:?} entries (dominator, retained size, distance) for {n_nodes} nodes"
                ),
            ));
        }
    }
    let meta = graph.meta();
    let mut header = Header::new(KIND_HEAP_GRAPH, &meta.source_format, meta.runtime.name());
    header.runtime_version.clone_from(&meta.runtime_version);
    header.captured_at_ms = meta.captured_at_ms;
    header.pid = meta.pid;
    header.notes.clone_from(&meta.notes);
    header.totals = BTreeMap::from([
        (TOTAL_NODES.to_owned(), n_nodes as u64),
        (TOTAL_EDGES.to_owned(), graph.edge_count() as u64),
        (TOTAL_STRINGS.to_owned(), graph.strings().len() as u64),
    ]);

    let mut writer = Writer::new(out, &header)
        .map_err(write_error)?
        .with_chunk_rows(chunk_rows);
    let chunk_rows = writer.chunk_rows();
    writer
        .write_strings(graph.strings().iter().map(|(_, text)| text))
        .map_err(write_error)?;
    writer
        .write_node_kinds(
            parts
                .node_kinds
                .iter()
                .map(|kind| (kind.name.as_str(), kind.synthetic)),
        )
        .map_err(write_error)?;
    writer.write_root(parts.root).map_err(write_error)?;

    let mut type_name: Vec<u32> = Vec::with_capacity(chunk_rows.min(n_nodes));
    let mut name: Vec<u32> = Vec::with_capacity(chunk_rows.min(n_nodes));
    let mut object_id: Vec<u64> = Vec::with_capacity(chunk_rows.min(n_nodes));
    let mut shallow_size: Vec<u64> = Vec::with_capacity(chunk_rows.min(n_nodes));
    let mut node_kind: Vec<u8> = Vec::with_capacity(chunk_rows.min(n_nodes));
    let mut edge_count: Vec<u32> = Vec::with_capacity(chunk_rows.min(n_nodes));
    // The compact columns are read in order, a chunk at a time.
    let mut names = parts.node_name.iter();
    let mut object_ids = parts.node_object_id.iter();
    let mut shallow_sizes = parts.node_shallow_size.iter();
    let mut offsets = parts.first_edge.iter();
    let mut offset = offsets.next().unwrap_or(0);
    for start in (0..n_nodes).step_by(chunk_rows) {
        let rows = start..(start + chunk_rows).min(n_nodes);
        type_name.clear();
        type_name.extend(rows.clone().map(|node| parts.node_type.get(node).to_raw()));
        name.clear();
        name.extend(names.by_ref().take(rows.len()).map(|id| id.to_raw()));
        object_id.clear();
        object_id.extend(object_ids.by_ref().take(rows.len()));
        shallow_size.clear();
        shallow_size.extend(shallow_sizes.by_ref().take(rows.len()));
        node_kind.clear();
        node_kind.extend(parts.node_kind.range(rows.clone()));
        edge_count.clear();
        for node in rows.clone() {
            let end = offsets.next().unwrap_or(offset);
            let count = u32::try_from(end - offset).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("node {node} has 2^32 edges or more"),
                )
            })?;
            offset = end;
            edge_count.push(count);
        }
        writer
            .write_nodes(&NodeColumns {
                object_id: &object_id,
                kind: &node_kind,
                type_name: &type_name,
                name: &name,
                shallow_size: &shallow_size,
                edge_count: &edge_count,
            })
            .map_err(write_error)?;
    }

    let n_edges = graph.edge_count();
    let mut edge_kind: Vec<u8> = Vec::with_capacity(chunk_rows.min(n_edges));
    let mut edge_name: Vec<u32> = Vec::with_capacity(chunk_rows.min(n_edges));
    let mut edge_names = parts.edge_name.iter();
    for start in (0..n_edges).step_by(chunk_rows) {
        let rows = start..(start + chunk_rows).min(n_edges);
        edge_kind.clear();
        edge_kind.extend(parts.edge_kind.range(rows.clone()).map(|kind| kind as u8));
        edge_name.clear();
        edge_name.extend(edge_names.by_ref().take(rows.len()));
        writer
            .write_edges(&EdgeColumns {
                to: &parts.edge_to[rows.clone()],
                kind: &edge_kind,
                name: &edge_name,
            })
            .map_err(write_error)?;
    }

    if let Some(analysis) = analysis {
        writer
            .write_analysis(&AnalysisColumns {
                dominator: &analysis.dominator,
                retained_size: &analysis.retained_size,
                distance: &analysis.distance,
                retained_count: &analysis.retained_count,
            })
            .map_err(write_error)?;
        if let Some(totals) = &analysis.type_totals {
            // Strings are written in id order, so an id is its string's index in the file.
            let type_name: Vec<u32> = totals.type_name.iter().map(|id| id.to_raw()).collect();
            writer
                .write_type_totals(&TypeTotalsColumns {
                    type_name: &type_name,
                    count: &totals.count,
                    shallow_size: &totals.shallow_size,
                    retained_size: &totals.retained_size,
                })
                .map_err(write_error)?;
        }
    }
    writer.finish().map_err(write_error)?.flush()
}

/// The file's strings, pushed in file order (not hashed, so not findable; the node types are
/// made findable in [`Columns::finish`]) into a table sized for them ahead.
struct FileStrings {
    strings: StringTable,
    /// The table id of each string of the file, from the first string whose id differs from its
    /// index in the file (all of them when the first string is not `""`, which the table's own
    /// `""` then precedes); `None` while they agree.
    file_ids: Option<Vec<u32>>,
    /// Strings of the file added so far.
    n_file_strings: usize,
}

impl FileStrings {
    fn with_capacity(n_strings: usize, n_bytes: usize) -> FileStrings {
        FileStrings {
            strings: StringTable::with_capacity(n_strings, n_bytes),
            file_ids: None,
            n_file_strings: 0,
        }
    }

    /// Appends the strings whose byte `lengths` cut `text`, after those added before.
    fn add(&mut self, text: &str, lengths: &[u32]) {
        let mut rest = text;
        for &length in lengths {
            // Each length cut its chunk's text on a char boundary when the chunk was checked.
            let (head, tail) = rest.split_at_checked(length as usize).unwrap_or((rest, ""));
            rest = tail;
            self.push(head);
        }
    }

    /// Appends the file's next string.
    fn push(&mut self, text: &str) {
        let index = self.n_file_strings;
        self.n_file_strings += 1;
        // The table's own `""` (id 0) stands for a first string that is `""` too.
        let id = if index == 0 && text.is_empty() {
            StringId::EMPTY.to_raw()
        } else {
            self.strings.push(text).to_raw()
        };
        match &mut self.file_ids {
            Some(file_ids) => file_ids.push(id),
            None if id as usize == index => {}
            None => {
                let mut file_ids: Vec<u32> = (0..index as u32).collect();
                file_ids.push(id);
                self.file_ids = Some(file_ids);
            }
        }
    }
}

/// The columns gathered from the chunks, in the file's numbering.
struct Columns {
    /// The text of the strings not yet handed to [`FileStrings`], back to back.
    string_text: String,
    /// The length in bytes of each of those strings.
    string_lengths: Vec<u32>,
    /// Strings of the file so far.
    n_strings: u64,
    node_kinds: Vec<NodeKindInfo>,
    object_id: Vec<u64>,
    node_kind: Vec<u8>,
    node_type: Vec<u32>,
    node_name: Vec<u32>,
    shallow_size: Vec<u64>,
    /// Reference counts as the runtime keeps them, when the file gives them (Python).
    refcount: Vec<u32>,
    /// CSR offsets: the prefix sums of the nodes' edge counts, starting at 0.
    first_edge: Vec<u64>,
    edge_to: Vec<u32>,
    /// Edge targets named by object id (the Python dumper's edges), resolved in `finish`.
    edge_to_object: Vec<u64>,
    /// Object ids that more than one node has, found while resolving `edge_to_object`.
    repeated_ids: u64,
    edge_kind: Vec<EdgeKind>,
    edge_name: Vec<u32>,
    root: Option<u32>,
    dominator: Vec<u32>,
    retained_size: Vec<u64>,
    distance: Vec<u32>,
    retained_count: Vec<u32>,
    /// Whether an analysis chunk came without retained counts.
    retained_count_missing: bool,
    type_totals: RawTypeTotals,
    /// Chunks of types this version does not read, counted by type.
    unknown: BTreeMap<String, u64>,
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            string_text: String::new(),
            string_lengths: Vec::new(),
            n_strings: 0,
            node_kinds: Vec::new(),
            object_id: Vec::new(),
            node_kind: Vec::new(),
            node_type: Vec::new(),
            node_name: Vec::new(),
            shallow_size: Vec::new(),
            first_edge: vec![0],
            edge_to: Vec::new(),
            edge_to_object: Vec::new(),
            repeated_ids: 0,
            refcount: Vec::new(),
            edge_kind: Vec::new(),
            edge_name: Vec::new(),
            root: None,
            dominator: Vec::new(),
            retained_size: Vec::new(),
            distance: Vec::new(),
            retained_count: Vec::new(),
            retained_count_missing: false,
            type_totals: RawTypeTotals::default(),
            unknown: BTreeMap::new(),
        }
    }
}

/// What a cut-short file lost, for the note.
struct Losses {
    edges_declared: u64,
    edges_kept: u64,
    edges_dropped_for_missing_nodes: u64,
    strings_repaired: u64,
    kinds_repaired: u64,
}

/// Per-type totals as read, type names still in the file's string numbering.
#[derive(Default)]
struct RawTypeTotals {
    type_name: Vec<u32>,
    count: Vec<u64>,
    shallow_size: Vec<u64>,
    retained_size: Vec<u64>,
}

impl Columns {
    /// Appends one chunk's columns. The reader has already checked that the chunk's columns
    /// agree in length.
    fn add(&mut self, chunk: Chunk<'_>) -> Result<(), String> {
        let column = |err: format::ColumnError| err.to_string();
        match chunk {
            Chunk::Strings(chunk) => {
                let strings = chunk.strings()?;
                self.n_strings += strings.len() as u64;
                if self.n_strings > u64::from(u32::MAX) {
                    return Err("the file has more than 2^32 strings".to_owned());
                }
                self.string_lengths.reserve(strings.len());
                for text in strings {
                    self.string_text.push_str(text);
                    // A string of a chunk is shorter than a record, so its length fits a u32.
                    self.string_lengths
                        .push(u32::try_from(text.len()).unwrap_or(u32::MAX));
                }
            }
            Chunk::NodeKinds(chunk) => {
                self.node_kinds.extend(
                    chunk
                        .names
                        .into_iter()
                        .zip(chunk.synthetic)
                        .map(|(name, synthetic)| NodeKindInfo { name, synthetic }),
                );
            }
            Chunk::Nodes(chunk) => {
                decode_column(chunk.object_id, &mut self.object_id).map_err(column)?;
                decode_column(chunk.kind, &mut self.node_kind).map_err(column)?;
                decode_column(chunk.type_name, &mut self.node_type).map_err(column)?;
                decode_column(chunk.name, &mut self.node_name).map_err(column)?;
                decode_column(chunk.shallow_size, &mut self.shallow_size).map_err(column)?;
                decode_column(chunk.refcount, &mut self.refcount).map_err(column)?;
                let (edge_counts, _) = chunk.edge_count.as_chunks::<4>();
                let mut running = self.first_edge.last().copied().unwrap_or_default();
                self.first_edge.extend(edge_counts.iter().map(|count| {
                    running += u64::from(u32::from_le_bytes(*count));
                    running
                }));
            }
            Chunk::Edges(chunk) => {
                if let Some(pos) = chunk
                    .kind
                    .iter()
                    .position(|&code| EdgeKind::from_u8(code).is_none())
                {
                    return Err(bad_edge_kind(self.edge_kind.len() + pos, chunk.kind[pos]));
                }
                self.edge_kind.extend(
                    chunk
                        .kind
                        .iter()
                        .map(|&code| EdgeKind::from_u8(code).unwrap_or(EdgeKind::Weak)),
                );
                decode_column(chunk.to, &mut self.edge_to).map_err(column)?;
                decode_column(chunk.to_object, &mut self.edge_to_object).map_err(column)?;
                decode_column(chunk.name, &mut self.edge_name).map_err(column)?;
            }
            Chunk::Root(root) => {
                if let Some(first) = self.root {
                    return Err(format!(
                        "a second root record (node {}, after node {first})",
                        root.node
                    ));
                }
                self.root = Some(root.node);
            }
            Chunk::Analysis(chunk) => {
                decode_column(chunk.dominator, &mut self.dominator).map_err(column)?;
                decode_column(chunk.retained_size, &mut self.retained_size).map_err(column)?;
                decode_column(chunk.distance, &mut self.distance).map_err(column)?;
                self.retained_count_missing |= chunk.retained_count.is_empty();
                decode_column(chunk.retained_count, &mut self.retained_count).map_err(column)?;
            }
            Chunk::TypeTotals(chunk) => {
                let totals = &mut self.type_totals;
                decode_column(chunk.type_name, &mut totals.type_name).map_err(column)?;
                decode_column(chunk.count, &mut totals.count).map_err(column)?;
                decode_column(chunk.shallow_size, &mut totals.shallow_size).map_err(column)?;
                decode_column(chunk.retained_size, &mut totals.retained_size).map_err(column)?;
            }
            other => {
                *self
                    .unknown
                    .entry(other.type_name().to_owned())
                    .or_default() += 1;
            }
        }
        Ok(())
    }

    /// Builds the graph, repairing what a cut-short file left dangling, and checks the stored
    /// analysis against it.
    fn finish(
        mut self,
        file_strings: FileStrings,
        header: &Header,
        runtime: Runtime,
        truncation: Option<&Truncation>,
    ) -> Result<(HeapGraph, Option<StoredAnalysis>), ImportError> {
        let n_nodes = self.object_id.len();
        let cut_offset = truncation.map_or(0, |cut| cut.offset);
        let unresolved = self.resolve_object_targets()?;
        let mut first_edge = std::mem::take(&mut self.first_edge);
        let edges_declared = first_edge.last().copied().unwrap_or_default();
        let edges_read = self.edge_to.len() as u64;
        let mut losses = Losses {
            edges_declared,
            edges_kept: edges_read.min(edges_declared),
            edges_dropped_for_missing_nodes: 0,
            strings_repaired: 0,
            kinds_repaired: 0,
        };
        if edges_declared != edges_read {
            if truncation.is_none() {
                return Err(inconsistent(format!(
                    "the nodes own {edges_declared} edges but the file holds {edges_read}"
                )));
            }
            if edges_read < edges_declared {
                // The nodes whose edges were cut keep those that arrived.
                for first in &mut first_edge {
                    *first = (*first).min(edges_read);
                }
            } else {
                let kept = edges_declared as usize;
                self.edge_to.truncate(kept);
                self.edge_kind.truncate(kept);
                self.edge_name.truncate(kept);
            }
        }

        let FileStrings {
            mut strings,
            file_ids,
            ..
        } = file_strings;
        if let Some(string_ids) = &file_ids {
            let string_ids = &string_ids;
            let remap =
                |raw: &mut u32| *raw = string_ids.get(*raw as usize).copied().unwrap_or(u32::MAX);
            self.node_type.iter_mut().for_each(remap);
            self.node_name.iter_mut().for_each(remap);
            for (name, kind) in self.edge_name.iter_mut().zip(&self.edge_kind) {
                if !kind.is_indexed() {
                    remap(name);
                }
            }
        }
        let n_strings = strings.len();
        let mut bad_strings = 0u64;
        let mut to_id = |raw: u32| match strings.id_from_raw(raw) {
            Some(id) => id,
            None => {
                bad_strings += 1;
                StringId::EMPTY
            }
        };
        let mut node_type: Vec<StringId> = self.node_type.iter().map(|&raw| to_id(raw)).collect();
        let node_name: Vec<StringId> = self.node_name.iter().map(|&raw| to_id(raw)).collect();
        if bad_strings > 0 {
            if truncation.is_none() {
                let pos = self
                    .node_type
                    .iter()
                    .zip(&self.node_name)
                    .position(|(&ty, &name)| ty as usize >= n_strings || name as usize >= n_strings)
                    .unwrap_or_default();
                return Err(inconsistent(format!(
                    "node {pos} names a string outside the {n_strings} strings of the file"
                )));
            }
            losses.strings_repaired += bad_strings;
        }
        // Types are found by name and totalled by id: one findable id per type name.
        strings.make_findable_all(&mut node_type);
        let type_total_names: Option<Vec<StringId>> = {
            let file_ids = file_ids.as_deref();
            std::mem::take(&mut self.type_totals.type_name)
                .into_iter()
                .map(|raw| {
                    let raw = match file_ids {
                        Some(ids) => *ids.get(raw as usize)?,
                        None => raw,
                    };
                    strings.id_from_raw(raw).map(|id| strings.make_findable(id))
                })
                .collect()
        };
        drop(std::mem::take(&mut self.node_type));
        drop(std::mem::take(&mut self.node_name));

        let mut unresolved_note = None;
        if unresolved > 0 && truncation.is_none() {
            let dropped = self.drop_edges_to_missing(&mut first_edge, n_nodes);
            unresolved_note = Some(format!(
                "{dropped} references to objects that are not in the dump were left out \
                 (objects made while the dump was taken, or past the dumper's bound)"
            ));
        }
        if truncation.is_some() {
            self.repair_edges(&mut first_edge, n_nodes, n_strings, &mut losses);
            let n_kinds = self.node_kinds.len();
            if self.node_kind.iter().any(|&kind| kind as usize >= n_kinds) {
                let unknown = u8::try_from(n_kinds).unwrap_or(u8::MAX);
                self.node_kinds.truncate(usize::from(unknown));
                self.node_kinds.push(NodeKindInfo {
                    name: UNKNOWN_KIND.to_owned(),
                    synthetic: false,
                });
                for kind in &mut self.node_kind {
                    if *kind >= unknown {
                        *kind = unknown;
                        losses.kinds_repaired += 1;
                    }
                }
            }
        }

        let root = match (self.root, truncation) {
            // `from_parts` checks that the root is a node.
            (Some(root), None) => root,
            (Some(root), Some(_)) if (root as usize) < n_nodes => root,
            (Some(root), Some(_)) => {
                return Err(ImportError::Truncated {
                    format: FORMAT,
                    offset: cut_offset,
                    expected: format!("node {root}, the root; only {n_nodes} nodes arrived"),
                });
            }
            (None, Some(_)) => {
                return Err(ImportError::Truncated {
                    format: FORMAT,
                    offset: cut_offset,
                    expected: "the root record".to_owned(),
                });
            }
            (None, None) => return Err(inconsistent("the file has no root record".to_owned())),
        };

        let mut meta = GraphMeta::new(runtime, &header.source_format);
        meta.runtime_version.clone_from(&header.runtime_version);
        meta.captured_at_ms = header.captured_at_ms;
        meta.pid = header.pid;
        meta.notes.clone_from(&header.notes);
        if let Some(truncation) = truncation {
            meta.notes
                .push(truncation_note(truncation, header, n_nodes, &losses));
        }
        meta.notes.extend(unresolved_note);
        if self.repeated_ids > 0 {
            meta.notes.push(format!(
                "{} objects appear twice (the collector changed them while the dump was taken); \
                 references go to the first",
                self.repeated_ids
            ));
        }
        meta.notes.extend(self.root_what_is_held_outside(
            &mut first_edge,
            root as usize,
            &mut strings,
        ));
        // The Python dumper's `buffers` (tensors' and arrays' data, for linking GPU blocks to
        // their holders) are ours and known; nothing reads them yet, which is no news.
        for (type_name, count) in self
            .unknown
            .iter()
            .filter(|(name, _)| name.as_str() != BUFFERS)
        {
            meta.notes.push(format!(
                "skipped {count} chunk(s) of type {type_name:?}, which this version of heapgraph does not read"
            ));
        }

        let graph_whole = losses.edges_kept == losses.edges_declared
            && losses.edges_dropped_for_missing_nodes == 0
            && losses.strings_repaired == 0
            && losses.kinds_repaired == 0;
        let analysis =
            self.stored_analysis(n_nodes, graph_whole, type_total_names, &mut meta.notes);

        // Into the graph's compact columns, two at a time (one per core), each wide column
        // dropped as soon as it is converted.
        let object_id = std::mem::take(&mut self.object_id);
        let shallow_size = std::mem::take(&mut self.shallow_size);
        let edge_name = std::mem::take(&mut self.edge_name);
        let node_kind = std::mem::take(&mut self.node_kind);
        let edge_kind = std::mem::take(&mut self.edge_kind);
        let (
            (node_object_id, node_shallow_size, node_name, node_kind),
            (first_edge, edge_name, node_type, edge_kind),
        ) = rayon::join(
            || {
                let node_object_id = PackedU64::compact(&object_id);
                drop(object_id);
                (
                    node_object_id,
                    PackedU64::from(shallow_size),
                    NodeNames::from(node_name),
                    node_kind.into(),
                )
            },
            || {
                (
                    EdgeOffsets::from(first_edge),
                    EdgeNames::from(edge_name),
                    NodeTypes::from(node_type),
                    edge_kind.into(),
                )
            },
        );
        let parts = HeapGraphParts {
            node_object_id,
            node_kind,
            node_type,
            node_name,
            node_shallow_size,
            first_edge,
            edge_to: self.edge_to,
            edge_kind,
            edge_name,
            node_kinds: self.node_kinds,
            root,
        };
        let graph = HeapGraph::from_parts(meta, strings, parts)
            .map_err(|err| inconsistent(err.to_string()))?;
        Ok((graph, analysis))
    }

    /// Takes the strings not yet added to the table: their text and byte lengths.
    fn take_strings(&mut self) -> (String, Vec<u32>) {
        (
            std::mem::take(&mut self.string_text),
            std::mem::take(&mut self.string_lengths),
        )
    }

    /// In a cut-short file: drops edges to nodes that did not arrive and points named edges
    /// whose string did not arrive at `""`.
    fn repair_edges(
        &mut self,
        first_edge: &mut [u64],
        n_nodes: usize,
        n_strings: usize,
        losses: &mut Losses,
    ) {
        for (name, kind) in self.edge_name.iter_mut().zip(&self.edge_kind) {
            if !kind.is_indexed() && *name as usize >= n_strings {
                *name = StringId::EMPTY.to_raw();
                losses.strings_repaired += 1;
            }
        }
        losses.edges_dropped_for_missing_nodes += self.drop_edges_to_missing(first_edge, n_nodes);
    }

    /// Makes a root of every object that more references point at than the file's edges show
    /// (held by C code or the interpreter, for Python), with an edge from the root named so.
    /// Returns a note on what was done, if there were reference counts.
    fn root_what_is_held_outside(
        &mut self,
        first_edge: &mut [u64],
        root: usize,
        strings: &mut StringTable,
    ) -> Option<String> {
        let n_nodes = self.object_id.len();
        if self.refcount.is_empty() {
            return None;
        }
        if self.refcount.len() != n_nodes {
            return Some(
                "reference counts were not given for every object, so none was used".to_owned(),
            );
        }
        let mut seen = vec![0u32; n_nodes];
        for (&to, kind) in self.edge_to.iter().zip(&self.edge_kind) {
            if *kind != EdgeKind::Weak {
                let slot = &mut seen[to as usize];
                *slot = slot.saturating_add(1);
            }
        }
        let held: Vec<u32> = (0..n_nodes)
            .filter(|&node| node != root && self.refcount[node] > seen[node])
            .map(|node| node as u32)
            .collect();
        drop(seen);
        if held.is_empty() {
            return None;
        }
        let name = strings.intern(HELD_OUTSIDE).to_raw();
        let at = first_edge[root + 1] as usize;
        let added = held.len();
        self.edge_to.splice(at..at, held);
        self.edge_kind
            .splice(at..at, std::iter::repeat_n(EdgeKind::Internal, added));
        self.edge_name
            .splice(at..at, std::iter::repeat_n(name, added));
        for first in &mut first_edge[root + 1..] {
            *first += added as u64;
        }
        Some(format!(
            "{added} objects are referenced from outside the dump (C code, the interpreter) more \
             often than from dumped objects; each is a root ({HELD_OUTSIDE:?})"
        ))
    }

    /// Removes the edges whose target is not a node, keeping the CSR consistent; returns how
    /// many were removed.
    fn drop_edges_to_missing(&mut self, first_edge: &mut [u64], n_nodes: usize) -> u64 {
        if self.edge_to.iter().all(|&to| (to as usize) < n_nodes) {
            return 0;
        }
        let mut kept = 0usize;
        let mut edge = 0usize;
        for node in 0..n_nodes {
            let end = first_edge[node + 1] as usize;
            first_edge[node] = kept as u64;
            while edge < end {
                if (self.edge_to[edge] as usize) < n_nodes {
                    self.edge_to[kept] = self.edge_to[edge];
                    self.edge_kind[kept] = self.edge_kind[edge];
                    self.edge_name[kept] = self.edge_name[edge];
                    kept += 1;
                }
                edge += 1;
            }
        }
        first_edge[n_nodes] = kept as u64;
        let dropped = (self.edge_to.len() - kept) as u64;
        self.edge_to.truncate(kept);
        self.edge_kind.truncate(kept);
        self.edge_name.truncate(kept);
        dropped
    }

    /// Turns edge targets named by object id into node indices. Targets that are not nodes
    /// become `u32::MAX` (dropped later); returns how many there were.
    fn resolve_object_targets(&mut self) -> Result<u64, ImportError> {
        if self.edge_to_object.is_empty() {
            return Ok(0);
        }
        if !self.edge_to.is_empty() {
            return Err(inconsistent(
                "the file names edge targets both by node index and by object id".to_owned(),
            ));
        }
        let mut index: rustc_hash::FxHashMap<u64, u32> = rustc_hash::FxHashMap::default();
        index.reserve(self.object_id.len());
        let mut repeated = 0u64;
        for (node, &object_id) in self.object_id.iter().enumerate() {
            // An object listed twice (a collection untracked it between the listing and the
            // walk): edges go to its first node.
            if let std::collections::hash_map::Entry::Vacant(slot) = index.entry(object_id) {
                slot.insert(node as u32);
            } else {
                repeated += 1;
            }
        }
        if repeated > 0 {
            self.repeated_ids = repeated;
        }
        let mut unresolved = 0u64;
        self.edge_to = std::mem::take(&mut self.edge_to_object)
            .into_iter()
            .map(|object_id| {
                index.get(&object_id).copied().unwrap_or_else(|| {
                    unresolved += 1;
                    u32::MAX
                })
            })
            .collect();
        Ok(unresolved)
    }

    /// The stored analysis, if the file has one for every node of a graph that arrived whole and
    /// its dominators are nodes; otherwise a note says why it is ignored. Retained counts and
    /// type totals (`type_names`: the types' names in the table, `None` if one is not a
    /// string) are kept where they are whole.
    fn stored_analysis(
        &mut self,
        n_nodes: usize,
        graph_whole: bool,
        type_names: Option<Vec<StringId>>,
        notes: &mut Vec<String>,
    ) -> Option<StoredAnalysis> {
        let n_rows = self.dominator.len();
        if n_rows == 0 && n_nodes > 0 {
            return None;
        }
        let problem = if n_rows != n_nodes {
            Some(format!("covers {n_rows} of {n_nodes} nodes"))
        } else if !graph_whole {
            Some("describes the whole graph, and part of it is missing".to_owned())
        } else {
            self.dominator
                .iter()
                .position(|&dominator| {
                    dominator != StoredAnalysis::NONE && dominator as usize >= n_nodes
                })
                .map(|pos| format!("gives node {pos} a dominator outside the graph"))
        };
        if let Some(problem) = problem {
            notes.push(format!(
                "the stored analysis {problem}; it is ignored and will be recomputed"
            ));
            return None;
        }
        let retained_count = std::mem::take(&mut self.retained_count);
        let retained_count = if self.retained_count_missing || retained_count.len() != n_nodes {
            Vec::new()
        } else {
            retained_count
        };
        let totals = std::mem::take(&mut self.type_totals);
        let n_types = totals.count.len();
        let type_totals = match type_names {
            Some(type_name)
                if type_name.len() == n_types
                    && totals.shallow_size.len() == n_types
                    && totals.retained_size.len() == n_types =>
            {
                (n_types > 0).then_some(StoredTypeTotals {
                    type_name,
                    count: totals.count,
                    shallow_size: totals.shallow_size,
                    retained_size: totals.retained_size,
                })
            }
            _ => {
                notes.push(
                    "the stored type totals do not fit together; they are ignored".to_owned(),
                );
                None
            }
        };
        Some(StoredAnalysis {
            dominator: std::mem::take(&mut self.dominator),
            retained_size: std::mem::take(&mut self.retained_size),
            distance: std::mem::take(&mut self.distance),
            retained_count,
            type_totals,
        })
    }
}

/// The note for a cut-short file: where it ends and what was read of what.
fn truncation_note(
    truncation: &Truncation,
    header: &Header,
    n_nodes: usize,
    losses: &Losses,
) -> String {
    let nodes = match header.totals.get(TOTAL_NODES) {
        Some(&total) => format!("{n_nodes} of {total} nodes"),
        None => format!("{n_nodes} nodes"),
    };
    let edges_total = header
        .totals
        .get(TOTAL_EDGES)
        .copied()
        .unwrap_or(0)
        .max(losses.edges_declared);
    let mut note = format!(
        "{truncation}: {nodes} and {} of {edges_total} edges were read",
        losses.edges_kept - losses.edges_dropped_for_missing_nodes
    );
    if losses.edges_dropped_for_missing_nodes > 0 {
        note.push_str(&format!(
            "; {} edges to nodes that did not arrive were dropped",
            losses.edges_dropped_for_missing_nodes
        ));
    }
    if losses.strings_repaired > 0 {
        note.push_str(&format!(
            "; {} names whose string did not arrive are shown empty",
            losses.strings_repaired
        ));
    }
    if losses.kinds_repaired > 0 {
        note.push_str(&format!(
            "; {} nodes whose kind did not arrive have kind {UNKNOWN_KIND}",
            losses.kinds_repaired
        ));
    }
    note
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
/// The name of the root's edges to objects held from outside the dump.
const HELD_OUTSIDE: &str = "held outside the dump";

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Six nodes with every edge kind, unicode strings, an index name beyond the string table,
    /// and a node with no edges.
    fn sample_graph() -> HeapGraph {
        let mut strings = StringTable::new();
        let [root, object, array, size, next, items, crab] =
            ["(root)", "Object", "Array", "größe", "next", "items", "🦀"]
                .map(|text| strings.intern(text));
        let empty = StringId::EMPTY;
        let parts = HeapGraphParts {
            node_object_id: vec![1, 3, 5, 7, 9, 1 << 53].into(),
            node_kind: vec![0, 1, 1, 2, 1, 1].into(),
            node_type: vec![root, object, array, object, size, crab].into(),
            node_name: vec![root, next, empty, items, empty, crab].into(),
            node_shallow_size: vec![0, 16, 32, 48, 64, u64::from(u32::MAX) + 1].into(),
            first_edge: vec![0, 2, 4, 6, 7, 7, 8].into(),
            edge_to: vec![1, 2, 3, 4, 5, 1, 2, 0],
            edge_kind: vec![
                EdgeKind::Shortcut,
                EdgeKind::Property,
                EdgeKind::Element,
                EdgeKind::Weak,
                EdgeKind::Element,
                EdgeKind::Hidden,
                EdgeKind::Context,
                EdgeKind::Internal,
            ]
            .into(),
            edge_name: vec![
                next.to_raw(),
                items.to_raw(),
                1_000_000,
                next.to_raw(),
                0,
                77,
                size.to_raw(),
                object.to_raw(),
            ]
            .into(),
            node_kinds: vec![
                NodeKindInfo {
                    name: "synthetic".to_owned(),
                    synthetic: true,
                },
                NodeKindInfo {
                    name: "object".to_owned(),
                    synthetic: false,
                },
                NodeKindInfo {
                    name: "array".to_owned(),
                    synthetic: false,
                },
            ],
            root: 0,
        };
        let mut meta = GraphMeta::new(Runtime::Python, "python-gc");
        meta.runtime_version = Some("3.11.4".to_owned());
        meta.captured_at_ms = Some(1_700_000_000_123);
        meta.pid = Some(31337);
        meta.notes = vec!["the gil was held".to_owned()];
        HeapGraph::from_parts(meta, strings, parts).expect("a valid graph")
    }

    fn sample_analysis() -> StoredAnalysis {
        let strings = sample_graph().strings().clone();
        let type_name = ["Object", "Array", "größe", "🦀"]
            .map(|text| strings.find(text).expect("a type of the sample"))
            .to_vec();
        StoredAnalysis {
            dominator: vec![StoredAnalysis::NONE, 0, 0, 1, 1, 1],
            retained_size: vec![
                u64::from(u32::MAX) + 161,
                16 + 48 + 64 + 1 + u64::from(u32::MAX),
                32,
                48,
                64,
                1 << 32,
            ],
            distance: vec![0, 1, 1, 2, 2, StoredAnalysis::NONE],
            retained_count: vec![6, 4, 1, 1, 1, 1],
            type_totals: Some(StoredTypeTotals {
                type_name,
                count: vec![2, 1, 1, 1],
                shallow_size: vec![64, 32, 64, 1 << 32],
                retained_size: vec![16 + 48 + 64 + 1 + u64::from(u32::MAX), 32, 64, 1 << 32],
            }),
        }
    }

    fn write(graph: &HeapGraph, analysis: Option<&StoredAnalysis>, chunk_rows: usize) -> Vec<u8> {
        let mut file = Vec::new();
        write_in_chunks(graph, analysis, &mut file, chunk_rows).expect("written");
        file
    }

    /// Reads `bytes` as a stream and as a slice, and checks that both give the same graph,
    /// analysis or error.
    fn read(bytes: &[u8]) -> Result<(HeapGraph, Option<StoredAnalysis>), ImportError> {
        let streamed = import_with_analysis(bytes, &Options::default());
        let sliced = import_slice_with_analysis(bytes, &Options::default());
        match (streamed, sliced) {
            (
                Ok((Contents::HeapGraph(graph), analysis)),
                Ok((Contents::HeapGraph(other), other_analysis)),
            ) => {
                assert_same(&other, &graph);
                assert_eq!(other_analysis, analysis);
                Ok((graph, analysis))
            }
            (Err(err), Err(other)) => {
                assert_eq!(other.to_string(), err.to_string());
                Err(err)
            }
            (streamed, sliced) => panic!(
                "the stream and slice readers disagree: {:?} against {:?}",
                streamed.err().map(|err| err.to_string()),
                sliced.err().map(|err| err.to_string())
            ),
        }
    }

    fn strings_of(graph: &HeapGraph) -> Vec<&str> {
        graph.strings().iter().map(|(_, text)| text).collect()
    }

    /// Every column, the string table and the metadata are equal.
    fn assert_same(read: &HeapGraph, written: &HeapGraph) {
        assert_eq!(read.meta(), written.meta());
        assert_eq!(strings_of(read), strings_of(written));
        let (a, b) = (read.parts(), written.parts());
        assert_eq!(a.node_object_id, b.node_object_id);
        assert_eq!(a.node_kind, b.node_kind);
        assert_eq!(a.node_type, b.node_type);
        assert_eq!(a.node_name, b.node_name);
        assert_eq!(a.node_shallow_size, b.node_shallow_size);
        assert_eq!(a.first_edge, b.first_edge);
        assert_eq!(a.edge_to, b.edge_to);
        assert_eq!(a.edge_kind, b.edge_kind);
        assert_eq!(a.edge_name, b.edge_name);
        assert_eq!(a.node_kinds, b.node_kinds);
        assert_eq!(a.root, b.root);
    }

    #[test]
    fn hgd_graph_round_trips_without_analysis() {
        let graph = sample_graph();
        for chunk_rows in [1, 2, 1 << 20] {
            let file = write(&graph, None, chunk_rows);
            let (back, analysis) = read(&file).expect("read back");
            assert_same(&back, &graph);
            assert_eq!(analysis, None);
        }
    }

    #[test]
    fn hgd_graph_round_trips_with_analysis() {
        let graph = sample_graph();
        let stored = sample_analysis();
        for chunk_rows in [1, 4, 1 << 20] {
            let mut file = Vec::new();
            if chunk_rows == 1 << 20 {
                write_heap_graph(&graph, Some(&stored), &mut file).expect("written");
            } else {
                file = write(&graph, Some(&stored), chunk_rows);
            }
            let (back, analysis) = read(&file).expect("read back");
            assert_same(&back, &graph);
            assert_eq!(analysis.as_ref(), Some(&stored));
        }
    }

    #[test]
    fn hgd_files_are_recognised_by_content() {
        let file = write(&sample_graph(), None, 2);
        assert_eq!(sniff(&file), Some(true));
        assert_eq!(crate::sniff(&file), Some(crate::Format::Hgd));
        let Ok(Contents::HeapGraph(graph)) =
            crate::import_reader(file.as_slice(), &crate::Options::default())
        else {
            panic!("a heap graph");
        };
        assert_eq!(graph.node_count(), 6);
    }

    #[test]
    fn hgd_analysis_of_the_wrong_length_is_refused() {
        let mut stored = sample_analysis();
        stored.distance.pop();
        let err = write_heap_graph(&sample_graph(), Some(&stored), Vec::new())
            .expect_err("a short column");
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn hgd_cut_at_every_offset_reads_what_arrived_or_says_truncated() {
        let graph = sample_graph();
        let stored = sample_analysis();
        let file = write(&graph, Some(&stored), 2);
        let full = graph.parts();
        let mut whole_graphs = 0;
        for cut in 0..file.len() {
            match read(&file[..cut]) {
                Ok((back, analysis)) => {
                    let notes = &back.meta().notes;
                    assert!(
                        notes
                            .iter()
                            .any(|note| note.starts_with("the file ends after")),
                        "cut at {cut}: {notes:?}"
                    );
                    let parts = back.parts();
                    let n = back.node_count();
                    assert!(
                        full.node_object_id
                            .to_vec()
                            .starts_with(&parts.node_object_id.to_vec())
                    );
                    assert_eq!(parts.node_type.to_vec()[..], full.node_type.to_vec()[..n]);
                    assert!(full.edge_to.starts_with(&parts.edge_to) || n < 6);
                    if n == 6 && back.edge_count() == 8 {
                        whole_graphs += 1;
                        assert_eq!(parts.first_edge, full.first_edge);
                    }
                    if let Some(mut analysis) = analysis {
                        // The type totals come last: a cut before them leaves them out.
                        if analysis.type_totals.is_none() {
                            analysis.type_totals.clone_from(&stored.type_totals);
                        }
                        assert_eq!(analysis, stored);
                        assert_eq!((n, back.edge_count()), (6, 8));
                    }
                }
                Err(ImportError::Truncated { offset, .. }) => assert!(offset <= cut as u64),
                Err(err) => panic!("cut at {cut}: {err}"),
            }
        }
        assert!(whole_graphs > 0);
    }

    #[test]
    fn hgd_cut_inside_the_edges_keeps_every_node() {
        let graph = sample_graph();
        let file = write(&graph, None, 2);
        // Cut inside the third edges chunk (edges 4 and 5): records are header, 4 strings
        // chunks, kinds, root, 3 nodes chunks, then edges.
        let mut cut = None;
        for len in (0..file.len()).rev() {
            if let Ok((back, _)) = read(&file[..len])
                && back.node_count() == 6
                && back.edge_count() == 4
            {
                cut = Some((len, back));
                break;
            }
        }
        let (len, back) = cut.expect("a cut with 4 edges");
        assert_eq!(back.parts().first_edge.to_vec(), [0, 2, 4, 4, 4, 4, 4]);
        let note = back.meta().notes.last().cloned().unwrap_or_default();
        assert!(
            note.ends_with(": 6 of 6 nodes and 4 of 8 edges were read"),
            "{note}"
        );
        assert!(
            note.contains("inside the next record, which is lost"),
            "cut at {len}: {note}"
        );
    }

    /// A writer in another language may repeat strings and need not put `""` first: the
    /// strings keep their order (after the table's own `""`), and a type name written twice
    /// still names one type.
    #[test]
    fn hgd_strings_of_a_foreign_writer_are_renumbered() {
        let mut file = Vec::new();
        let header = Header::new(KIND_HEAP_GRAPH, "python-gc", "python");
        let mut writer = Writer::new(&mut file, &header).expect("header");
        writer.write_strings(["a", "", "a", "b"]).expect("strings");
        writer.write_node_kinds([("object", false)]).expect("kinds");
        writer.write_root(0).expect("root");
        writer
            .write_nodes(&NodeColumns {
                object_id: &[10, 20, 30],
                kind: &[0, 0, 0],
                type_name: &[2, 3, 0],
                name: &[1, 0, 2],
                shallow_size: &[8, 8, 8],
                edge_count: &[2, 0, 0],
            })
            .expect("nodes");
        writer
            .write_edges(&EdgeColumns {
                to: &[1, 1],
                kind: &[EdgeKind::Property as u8, EdgeKind::Element as u8],
                name: &[3, 3],
            })
            .expect("edges");
        writer.finish().expect("finish");
        let (graph, _) = read(&file).expect("read");
        assert_eq!(strings_of(&graph), ["", "a", "", "a", "b"]);
        let first = graph.node(0).expect("node 0");
        assert_eq!((graph.type_name(first), graph.name(first)), ("a", ""));
        let second = graph.node(1).expect("node 1");
        assert_eq!((graph.type_name(second), graph.name(second)), ("b", "a"));
        let third = graph.node(2).expect("node 2");
        assert_eq!((graph.type_name(third), graph.name(third)), ("a", "a"));
        assert_eq!(graph.type_id(first), graph.type_id(third));
        assert_eq!(graph.strings().find("a"), Some(graph.type_id(first)));
        assert_eq!(graph.strings().find("b"), Some(graph.type_id(second)));
        assert_eq!(graph.edge_name(0).to_string(), "b");
        assert_eq!(graph.edge_name(1).to_string(), "[3]");
    }

    /// A streaming writer may interleave chunks: cut short, the references to what never
    /// arrived are dropped (edges) or emptied (names), and the note says so.
    #[test]
    fn hgd_a_cut_interleaved_file_drops_dangling_references() {
        let mut file = Vec::new();
        let mut header = Header::new(KIND_HEAP_GRAPH, "python-gc", "python");
        header.totals.insert(TOTAL_NODES.to_owned(), 6);
        let mut writer = Writer::new(&mut file, &header).expect("header");
        writer.write_strings(["", "dict"]).expect("strings");
        writer.write_node_kinds([("object", false)]).expect("kinds");
        writer.write_root(0).expect("root");
        writer
            .write_nodes(&NodeColumns {
                object_id: &[10, 20],
                kind: &[0, 0],
                type_name: &[1, 2],
                name: &[0, 0],
                shallow_size: &[8, 8],
                edge_count: &[2, 2],
            })
            .expect("nodes");
        writer
            .write_edges(&EdgeColumns {
                to: &[1, 3, 0, 4],
                kind: &[2, 2, 1, 2],
                name: &[1, 1, 9, 2],
            })
            .expect("edges");
        let cut = writer.offset() as usize + 10;
        writer.write_strings(["list"]).expect("strings");
        writer.finish().expect("finish");

        let (graph, _) = read(&file[..cut]).expect("read");
        let parts = graph.parts();
        assert_eq!(parts.first_edge.to_vec(), [0, 1, 2]);
        assert_eq!(parts.edge_to, [1, 0]);
        assert_eq!(graph.type_name(graph.node(1).expect("node 1")), "");
        assert_eq!(graph.edge_name(1).to_string(), "[9]");
        let note = graph.meta().notes.last().cloned().unwrap_or_default();
        assert!(
            note.ends_with(
                ": 2 of 6 nodes and 2 of 4 edges were read; 2 edges to nodes that did not \
                 arrive were dropped; 2 names whose string did not arrive are shown empty"
            ),
            "{note}"
        );
    }

    /// A complete file whose parts disagree is an error, not a repaired graph.
    #[test]
    fn hgd_complete_files_must_be_consistent() {
        let write_with = |root: Option<u32>, edge_count: &[u32], to: &[u32]| {
            let mut file = Vec::new();
            let header = Header::new(KIND_HEAP_GRAPH, "test", "v8");
            let mut writer = Writer::new(&mut file, &header).expect("header");
            writer.write_strings([""]).expect("strings");
            writer.write_node_kinds([("object", false)]).expect("kinds");
            if let Some(root) = root {
                writer.write_root(root).expect("root");
            }
            writer
                .write_nodes(&NodeColumns {
                    object_id: &[1, 2],
                    kind: &[0, 0],
                    type_name: &[0, 0],
                    name: &[0, 0],
                    shallow_size: &[1, 1],
                    edge_count,
                })
                .expect("nodes");
            writer
                .write_edges(&EdgeColumns {
                    to,
                    kind: &vec![2; to.len()],
                    name: &vec![0; to.len()],
                })
                .expect("edges");
            writer.finish().expect("finish");
            read(&file).map(drop).map_err(|err| err.to_string())
        };
        assert_eq!(write_with(Some(0), &[1, 0], &[1]), Ok(()));
        assert_eq!(
            write_with(None, &[1, 0], &[1]),
            Err("heapgraph .hgd: the file has no root record".to_owned())
        );
        assert_eq!(
            write_with(Some(0), &[2, 0], &[1]),
            Err("heapgraph .hgd: the nodes own 2 edges but the file holds 1".to_owned())
        );
        assert_eq!(
            write_with(Some(0), &[1, 0], &[2]),
            Err("heapgraph .hgd: invalid heap graph: edge 0 points to node 2 of 2".to_owned())
        );
        assert_eq!(
            write_with(Some(5), &[1, 0], &[1]),
            Err("heapgraph .hgd: invalid heap graph: root 5 is not one of 2 nodes".to_owned())
        );
    }

    #[test]
    fn hgd_unknown_chunks_and_kinds_are_named() {
        let graph = sample_graph();
        let file = write(&graph, None, 1 << 20);
        // Replace the end record (`{type: end, chunks: N}`, the last 17 bytes) by an unknown
        // chunk and a new end record.
        let end = b"\x82\xa4type\xa3end\xa6chunks";
        let at = file.len() - end.len() - 1;
        assert_eq!(&file[at..at + end.len()], end);
        let chunks = file[file.len() - 1];
        let mut patched = file[..at].to_vec();
        patched.extend_from_slice(b"\x81\xa4type\xa6future");
        patched.extend_from_slice(end);
        patched.push(chunks + 1);
        let (back, _) = read(&patched).expect("read");
        assert_eq!(
            back.meta().notes.last().map(String::as_str),
            Some(
                "skipped 1 chunk(s) of type \"future\", which this version of heapgraph does not read"
            )
        );

        let mut header = Header::new("cpu-profile", "profiler", "python");
        header.notes.push("x".to_owned());
        let mut other = Vec::new();
        Writer::new(&mut other, &header)
            .and_then(Writer::finish)
            .expect("written");
        let err = read(&other).map(drop).expect_err("not a heap graph");
        assert!(err.to_string().contains("reads \"heap-graph\""), "{err}");
    }

    #[test]
    fn hgd_a_corrupt_edge_kind_names_its_record_and_offset() {
        let graph = sample_graph();
        let mut file = write(&graph, None, 1 << 20);
        // The edge kinds blob: `kind`, bin8 of 8 bytes, then the codes 5 2 1 6 1 4 0 3.
        let codes = [
            0xa4, b'k', b'i', b'n', b'd', 0xc4, 8, 5, 2, 1, 6, 1, 4, 0, 3,
        ];
        let at = file
            .windows(codes.len())
            .position(|window| window == codes)
            .expect("the edge kinds");
        file[at + 7 + 3] = 9;
        let err = read(&file).map(drop).expect_err("a bad kind").to_string();
        assert!(
            err.contains("edge 3 has kind code 9; the codes are 0 to 6"),
            "{err}"
        );
        assert!(err.starts_with("heapgraph .hgd: at byte "), "{err}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn hgd_arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = read(&bytes);
        }

        #[test]
        fn hgd_a_header_then_arbitrary_bytes_never_panic(
            tail in proptest::collection::vec(any::<u8>(), 0..400),
        ) {
            let mut file = Vec::new();
            Writer::new(&mut file, &Header::new(KIND_HEAP_GRAPH, "test", "v8")).expect("header");
            file.extend(tail);
            let _ = read(&file);
        }

        #[test]
        fn hgd_changed_bytes_never_panic(
            changes in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        ) {
            let mut file = write(&sample_graph(), Some(&sample_analysis()), 2);
            for (at, byte) in changes {
                let at = at % file.len();
                file[at] = byte;
            }
            if let Ok((graph, Some(analysis))) = read(&file) {
                prop_assert_eq!(analysis.dominator.len(), graph.node_count());
            }
        }
    }
}
