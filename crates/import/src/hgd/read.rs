//! Reading an `.hgd` heap graph, streamed one record at a time or from memory (a mapped file,
//! its columns decoded in parallel by `bulk`), into the model's [`HeapGraph`], with the stored
//! analysis where it fits; a cut-short file is repaired into a consistent graph and a note.

mod bulk;
mod image;
mod python;

pub(super) use image::names as image_names;

use super::{
    FORMAT, Options, TOTAL_EDGES, TOTAL_NODES, alloc, import_error, inconsistent, malformed,
    timeline,
};
use crate::{Contents, ImportError};
use bulk::{BulkColumns, Located, bad_edge_kind, error_offset, file_strings_of};
use heapgraph_format::{
    self as format, Chunk, Header, KIND_ALLOC_SNAPSHOT, KIND_HEAP_GRAPH, KIND_TIMELINE, Reader,
    SliceReader, Truncation, column_len, decode_column,
};
use heapgraph_model::{
    AccumulatedTypes, ArrayLengths, ChildLists, CollectionFill, EdgeKind, EdgeNames, EdgeOffsets,
    Fill, GraphMeta, HeapGraph, HeapGraphParts, NodeKindInfo, NodeNames, NodeTypes, PackedU64,
    Runtime, StoredAnalysis, StringId, StringTable, TypePathNode, TypePaths, TypeTotals, U64Column,
};
use image::{ImagedGraph, Images};
use std::collections::BTreeMap;
use std::io::BufRead;

/// The name of the node kind given to nodes of a cut-short file whose kind did not arrive.
const UNKNOWN_KIND: &str = "(unknown)";

/// The Python dumper's chunk of data buffers (docs/formats.md), which this version skips.
const BUFFERS: &str = "buffers";

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
    let mut images = std::mem::take(&mut columns.images);
    // In the slice reader's order, so that both report the same error first.
    columns.adopt_graph_images(&mut images, truncation.as_ref())?;
    let (mut graph, pending) =
        columns.finish(file_strings, &header, runtime, truncation.as_ref())?;
    columns.adopt_analysis_images(&mut images)?;
    let analysis = columns.stored_analysis(pending, &mut graph);
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
    import_slice_with(bytes, Images::releasing(&|_| {}))
}

/// Hands a part of the input that has been decoded, and is not read again, back to the kernel
/// (a memory-mapped file's pages), or does nothing.
type Release<'r> = &'r (dyn Fn(&[u8]) + Sync);

/// [`import_slice_with_analysis`], gathering the file's images into `images`, and calling its
/// release with each bulk column and strings blob once it is decoded.
fn import_slice_with<'a>(
    bytes: &'a [u8],
    mut images: Images<'a>,
) -> Result<(Contents, Option<StoredAnalysis>), ImportError> {
    let release = images.release();
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
    let mut analysis_chunks = Vec::new();
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
            Chunk::Nodes(_) | Chunk::Edges(_) => bulk.push(Located {
                record,
                start,
                chunk,
            }),
            Chunk::Analysis(_) => analysis_chunks.push(Located {
                record,
                start,
                chunk,
            }),
            Chunk::Strings(chunk) => string_chunks.push(Located {
                record,
                start,
                chunk,
            }),
            Chunk::ImageData(chunk) => images.add_borrowed(chunk),
            Chunk::Image(chunk) => {
                if let Err(message) = images.add_column(chunk) {
                    framing_error = Some(malformed(start, format!("record {record}: {message}")));
                    break;
                }
            }
            other => {
                if let Err(message) = columns.add(other) {
                    framing_error = Some(malformed(start, format!("record {record}: {message}")));
                    break;
                }
            }
        }
    }
    // The graph first, the analysis after it is built: the graph's columns are decoded straight
    // into their compact forms, and the analysis's are not held beside the graph's wide ones
    // (on a 2.5 GB HPROF's `.hgd`, 2965 MiB peak when everything was decoded at once).
    let (file_strings, bulk_columns) = rayon::join(
        || file_strings_of(&string_chunks, release),
        || BulkColumns::decode(&bulk, release),
    );
    let analysis_check = bulk::check_columns(&analysis_chunks);
    let (file_strings, bulk_columns) =
        match (file_strings, bulk_columns, analysis_check, framing_error) {
            (Ok(file_strings), Ok(bulk_columns), Ok(()), None) => (file_strings, bulk_columns),
            (file_strings, bulk_columns, analysis_check, framing_error) => {
                let earliest = [
                    file_strings.err(),
                    bulk_columns.err(),
                    analysis_check.err(),
                    framing_error,
                ]
                .into_iter()
                .flatten()
                .min_by_key(error_offset);
                return Err(earliest.unwrap_or_else(|| malformed(0, "unreadable".to_owned())));
            }
        };
    bulk_columns.move_into(&mut columns);
    let truncation = reader.truncation().cloned();
    columns.adopt_graph_images(&mut images, truncation.as_ref())?;
    let (mut graph, pending) =
        columns.finish(file_strings, &header, runtime, truncation.as_ref())?;
    // The graph's checks read every page of its columns: those mapped from the file go back
    // to the page cache before the analysis's come in (on the 2.5 GB benchmark dump's `.hgd`,
    // 1.1 GiB), whose own checks read every page of theirs.
    graph.forget_read_pages();
    columns.adopt_analysis_images(&mut images)?;
    // A file of images brought its analysis with its graph.
    if !analysis_chunks.is_empty() {
        BulkColumns::decode(&analysis_chunks, release)?.move_analysis_into(&mut columns);
    }
    let analysis = columns.stored_analysis(pending, &mut graph);
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
    let release = |part: &[u8]| crate::mapped::release_slice(&map, part);
    import_slice_with(&map, Images::mapping(&release, &file, &map))
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
    /// Object ids, packed as they are read (see [`Columns::push_object_ids`]).
    object_id: PackedU64,
    node_kind: Vec<u8>,
    node_type: Vec<u32>,
    node_name: Vec<u32>,
    shallow_size: PackedU64,
    /// Reference counts as the runtime keeps them, when the file gives them (Python).
    refcount: Vec<u32>,
    /// CSR offsets: the prefix sums of the nodes' edge counts, starting at 0, compact as read.
    first_edges: EdgeOffsets,
    /// The same, plain, for the repairs that rewrite them (see [`Columns::finish`]); empty
    /// otherwise.
    first_edge: Vec<u64>,
    edge_to: Vec<u32>,
    /// Edge targets named by object id (the Python dumper's edges), resolved in `finish`.
    edge_to_object: Vec<u64>,
    /// Object ids that more than one node has, found while resolving `edge_to_object`.
    repeated_ids: u64,
    edge_kind: Vec<EdgeKind>,
    /// Edge names, compact as read.
    edge_names: EdgeNames,
    /// The same, plain, for the repairs (as `first_edge`); empty otherwise.
    edge_name: Vec<u32>,
    root: Option<u32>,
    dominator: Vec<u32>,
    retained_size: U64Column,
    distance: Vec<u32>,
    retained_count: Vec<u32>,
    /// Whether an analysis chunk came without retained counts.
    retained_count_missing: bool,
    chain_parent: Vec<u32>,
    /// Whether an analysis chunk came without chain parents.
    chain_parent_missing: bool,
    /// The dominator tree's children, from an image (plain chunks never hold them).
    dominator_children: Option<ChildLists>,
    type_totals: RawTypeTotals,
    /// The stored merged paths to the instances of some types, each with its type's name still
    /// in the file's string numbering.
    type_paths: Vec<(u32, TypePaths)>,
    /// The stored types below the suspects' accumulation points, their names still in the
    /// file's string numbering.
    accumulated: Vec<(AccumulatedTypes, Vec<u32>)>,
    /// Object arrays' lengths (node, length), and the bytes of one slot.
    array_lengths: Vec<(u32, u32)>,
    slot_bytes: u32,
    /// Collections' fill, by node.
    fill: Vec<(u32, Fill)>,
    /// Chunks of types this version does not read, counted by type.
    unknown: BTreeMap<String, u64>,
    /// A streamed file's image chunks, copied as they arrive.
    images: Images<'static>,
    /// The graph's columns, where the file holds them as images.
    imaged: Option<ImagedGraph>,
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            string_text: String::new(),
            string_lengths: Vec::new(),
            n_strings: 0,
            node_kinds: Vec::new(),
            object_id: PackedU64::new(),
            node_kind: Vec::new(),
            node_type: Vec::new(),
            node_name: Vec::new(),
            shallow_size: PackedU64::new(),
            first_edges: EdgeOffsets::from(vec![0]),
            first_edge: Vec::new(),
            edge_to: Vec::new(),
            edge_to_object: Vec::new(),
            repeated_ids: 0,
            refcount: Vec::new(),
            edge_kind: Vec::new(),
            edge_names: EdgeNames::new(),
            edge_name: Vec::new(),
            root: None,
            dominator: Vec::new(),
            retained_size: U64Column::new(),
            distance: Vec::new(),
            retained_count: Vec::new(),
            retained_count_missing: false,
            chain_parent: Vec::new(),
            chain_parent_missing: false,
            dominator_children: None,
            type_totals: RawTypeTotals::default(),
            type_paths: Vec::new(),
            accumulated: Vec::new(),
            array_lengths: Vec::new(),
            slot_bytes: 0,
            fill: Vec::new(),
            unknown: BTreeMap::new(),
            images: Images::default(),
            imaged: None,
        }
    }
}

/// What [`Columns::stored_analysis`] checks a stored analysis against, from
/// [`Columns::finish`].
struct Pending {
    n_nodes: usize,
    /// Whether every node and edge the file declares arrived.
    graph_whole: bool,
    /// The types' names of the stored type totals, in the table; `None` if one is not a string.
    type_names: Option<Vec<StringId>>,
    /// The stored merged paths, their types' names in the table; `None` if one is not a
    /// string.
    type_paths: Option<Vec<TypePaths>>,
    /// The stored types below the accumulation points, their names in the table; `None` if
    /// one is not a string.
    accumulated: Option<Vec<AccumulatedTypes>>,
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
                column_len::<u64>(chunk.object_id).map_err(column)?;
                column_len::<u64>(chunk.shallow_size).map_err(column)?;
                if self.object_id.is_empty() {
                    // A stream is read once, so the ids' alignment is the first chunk's; an id
                    // of a later chunk off it is kept beside, whole.
                    self.object_id =
                        PackedU64::with_shift(0, PackedU64::alignment(le_u64s(chunk.object_id)));
                }
                le_u64s(chunk.object_id).for_each(|id| self.object_id.push(id));
                decode_column(chunk.kind, &mut self.node_kind).map_err(column)?;
                decode_column(chunk.type_name, &mut self.node_type).map_err(column)?;
                decode_column(chunk.name, &mut self.node_name).map_err(column)?;
                le_u64s(chunk.shallow_size).for_each(|size| self.shallow_size.push(size));
                decode_column(chunk.refcount, &mut self.refcount).map_err(column)?;
                let (edge_counts, _) = chunk.edge_count.as_chunks::<4>();
                let mut running = self.first_edges.last().unwrap_or_default();
                for count in edge_counts {
                    running += u64::from(u32::from_le_bytes(*count));
                    self.first_edges.push(running);
                }
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
                column_len::<u32>(chunk.name).map_err(column)?;
                le_u32s(chunk.name).for_each(|name| self.edge_names.push(name));
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
                column_len::<u64>(chunk.retained_size).map_err(column)?;
                le_u64s(chunk.retained_size).for_each(|size| self.retained_size.push(size));
                decode_column(chunk.distance, &mut self.distance).map_err(column)?;
                self.retained_count_missing |= chunk.retained_count.is_empty();
                decode_column(chunk.retained_count, &mut self.retained_count).map_err(column)?;
                self.chain_parent_missing |= chunk.chain_parent.is_empty();
                decode_column(chunk.chain_parent, &mut self.chain_parent).map_err(column)?;
            }
            Chunk::TypeTotals(chunk) => {
                let totals = &mut self.type_totals;
                decode_column(chunk.type_name, &mut totals.type_name).map_err(column)?;
                decode_column(chunk.count, &mut totals.count).map_err(column)?;
                decode_column(chunk.shallow_size, &mut totals.shallow_size).map_err(column)?;
                decode_column(chunk.retained_size, &mut totals.retained_size).map_err(column)?;
            }
            Chunk::TypePaths(chunk) => {
                let paths =
                    type_paths(&chunk).map_err(|err| format!("a type_paths chunk: {err}"))?;
                self.type_paths.push((chunk.type_name, paths));
            }
            Chunk::Accumulated(chunk) => {
                let mut type_name: Vec<u32> = Vec::new();
                let mut types = AccumulatedTypes {
                    point: chunk.point,
                    representative: chunk.representative,
                    ..AccumulatedTypes::default()
                };
                decode_column(chunk.type_name, &mut type_name).map_err(column)?;
                decode_column(chunk.count, &mut types.count).map_err(column)?;
                decode_column(chunk.retained_size, &mut types.retained).map_err(column)?;
                self.accumulated.push((types, type_name));
            }
            Chunk::ArrayLengths(chunk) => {
                let (mut node, mut length) = (Vec::new(), Vec::new());
                decode_column(chunk.node, &mut node).map_err(column)?;
                decode_column(chunk.length, &mut length).map_err(column)?;
                self.array_lengths.extend(node.into_iter().zip(length));
                self.slot_bytes = chunk.slot_bytes;
            }
            Chunk::Fill(chunk) => {
                let mut node: Vec<u32> = Vec::new();
                let mut values: [Vec<u64>; 4] = Default::default();
                decode_column(chunk.node, &mut node).map_err(column)?;
                for (blob, out) in [
                    chunk.elements,
                    chunk.capacity,
                    chunk.table_bytes,
                    chunk.spare_bytes,
                ]
                .into_iter()
                .zip(&mut values)
                {
                    decode_column(blob, out).map_err(column)?;
                }
                let [elements, capacity, table_bytes, spare_bytes] = values;
                self.fill.extend((0..node.len()).map(|row| {
                    (
                        node[row],
                        Fill {
                            elements: elements[row],
                            capacity: capacity[row],
                            table_bytes: table_bytes[row],
                            spare_bytes: spare_bytes[row],
                        },
                    )
                }));
            }
            Chunk::Image(chunk) => self.images.add_column(chunk)?,
            Chunk::ImageData(chunk) => self.images.add_copied(chunk),
            other => {
                *self
                    .unknown
                    .entry(other.type_name().to_owned())
                    .or_default() += 1;
            }
        }
        Ok(())
    }

    /// Takes the graph's columns, and the stored analysis's where they arrived whole, from the
    /// file's images, if it has any: a file whose columns are images has no `nodes` or `edges`
    /// chunks, and is read only whole (a cut inside the graph's columns is an error; one inside
    /// the analysis's drops the columns it cut, and the analysis with a required one). Plain
    /// `analysis` chunks, which heapgraph never writes beside images, win over images of it.
    /// Takes the graph's columns from `images`, checked, leaving the analysis's there (and
    /// dropping those a cut file left incomplete) for [`Columns::adopt_analysis_images`].
    fn adopt_graph_images(
        &mut self,
        images: &mut Images<'_>,
        truncation: Option<&Truncation>,
    ) -> Result<(), ImportError> {
        if images.is_empty() {
            return Ok(());
        }
        if let Some(cut) = truncation {
            let missing = images.incomplete(&image_names::GRAPH);
            if !missing.is_empty() {
                return Err(ImportError::truncated(
                    FORMAT,
                    cut.offset,
                    format!(
                        "the graph's columns {} (a file whose columns are images is read only \
                         whole: convert the dump again)",
                        missing.join(", ")
                    ),
                ));
            }
            // The optional columns go alone; without a required one, the analysis goes.
            let incomplete = images.incomplete(&image_names::ANALYSIS);
            let required_missing = incomplete
                .iter()
                .any(|column| image_names::REQUIRED_ANALYSIS.contains(&column.as_str()));
            for column in image_names::ANALYSIS {
                if required_missing || incomplete.iter().any(|missing| missing == column) {
                    images.drop_column(column);
                }
            }
        }
        if !self.object_id.is_empty() || !self.edge_to.is_empty() || !self.edge_to_object.is_empty()
        {
            return Err(inconsistent(
                "the file holds its graph both as images and as nodes and edges chunks".to_owned(),
            ));
        }
        self.imaged = Some(images.graph().map_err(inconsistent)?);
        Ok(())
    }

    /// Takes the analysis's columns from `images`, checked, unless the file's chunks brought
    /// one.
    fn adopt_analysis_images(&mut self, images: &mut Images<'_>) -> Result<(), ImportError> {
        if images.is_empty() {
            return Ok(());
        }
        let analysis = images.analysis().map_err(inconsistent)?;
        if !self.dominator.is_empty() {
            return Ok(());
        }
        self.dominator = analysis.idom;
        self.retained_size = analysis.retained_size;
        self.distance = analysis.distance;
        self.retained_count = analysis.retained_count;
        self.chain_parent = analysis.chain_parent;
        self.dominator_children = analysis.dominator_children;
        Ok(())
    }

    /// Builds the graph, repairing what a cut-short file left dangling; what the stored
    /// analysis is then checked against comes back beside it, for [`Columns::stored_analysis`].
    ///
    /// The CSR offsets and the edge names arrive compact. The repairs rewrite them in place, so
    /// where one may be needed (a file cut short, the Python dumper's edges by object id or its
    /// reference counts, a string table that is renumbered) they are first copied out plain.
    fn finish(
        &mut self,
        file_strings: FileStrings,
        header: &Header,
        runtime: Runtime,
        truncation: Option<&Truncation>,
    ) -> Result<(HeapGraph, Pending), ImportError> {
        if let Some(imaged) = self.imaged.take() {
            return self.finish_imaged(imaged, file_strings, header, runtime, truncation);
        }
        let n_nodes = self.object_id.len();
        let cut_offset = truncation.map_or(0, |cut| cut.offset);
        let unresolved = self.resolve_object_targets()?;
        let repairs = truncation.is_some()
            || unresolved > 0
            || !self.refcount.is_empty()
            || file_strings.file_ids.is_some();
        if repairs {
            self.first_edge = std::mem::take(&mut self.first_edges).to_vec();
            self.edge_name = std::mem::take(&mut self.edge_names).to_vec();
        }
        let mut first_edge = std::mem::take(&mut self.first_edge);
        let edges_declared = if repairs {
            first_edge.last().copied().unwrap_or_default()
        } else {
            self.first_edges.last().unwrap_or_default()
        };
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
        let type_total_names = self.type_total_names(&mut strings, file_ids.as_deref());
        let type_paths = self.type_paths_named(&mut strings, file_ids.as_deref());
        let accumulated = self.accumulated_named(&strings, file_ids.as_deref());
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
                return Err(ImportError::truncated(
                    FORMAT,
                    cut_offset,
                    format!("node {root}, the root; only {n_nodes} nodes arrived"),
                ));
            }
            (None, Some(_)) => {
                return Err(ImportError::truncated(
                    FORMAT,
                    cut_offset,
                    "the root record",
                ));
            }
            (None, None) => return Err(inconsistent("the file has no root record".to_owned())),
        };

        let mut meta = graph_meta(header, runtime);
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
        meta.notes.extend(self.unknown_chunks_notes());

        let graph_whole = losses.edges_kept == losses.edges_declared
            && losses.edges_dropped_for_missing_nodes == 0
            && losses.strings_repaired == 0
            && losses.kinds_repaired == 0;
        let pending = Pending {
            n_nodes,
            graph_whole,
            type_names: type_total_names,
            type_paths,
            accumulated,
        };

        // Into the graph's compact columns, two at a time (one per core), each wide column
        // dropped as soon as it is converted.
        let (first_edge, edge_name) = if repairs {
            (
                EdgeOffsets::from(first_edge),
                EdgeNames::from(std::mem::take(&mut self.edge_name)),
            )
        } else {
            (
                std::mem::take(&mut self.first_edges),
                std::mem::take(&mut self.edge_names),
            )
        };
        let node_kind = std::mem::take(&mut self.node_kind);
        let edge_kind = std::mem::take(&mut self.edge_kind);
        let ((node_name, node_kind), (node_type, edge_kind)) = rayon::join(
            || (NodeNames::from(node_name), node_kind.into()),
            || (NodeTypes::from(node_type), edge_kind.into()),
        );
        let parts = HeapGraphParts {
            node_object_id: std::mem::take(&mut self.object_id),
            node_kind,
            node_type,
            node_name,
            node_shallow_size: std::mem::take(&mut self.shallow_size),
            first_edge,
            edge_to: std::mem::take(&mut self.edge_to),
            edge_kind,
            edge_name,
            node_kinds: std::mem::take(&mut self.node_kinds),
            root,
        };
        let mut graph = HeapGraph::from_parts(meta, strings, parts)
            .map_err(|err| inconsistent(err.to_string()))?;
        self.attach_extras(&mut graph, truncation.is_some())?;
        Ok((graph, pending))
    }

    /// [`Columns::finish`] for a file whose graph's columns are images: nothing to repair, since
    /// such a file is read only whole and is written with its strings in the table's order.
    fn finish_imaged(
        &mut self,
        imaged: ImagedGraph,
        file_strings: FileStrings,
        header: &Header,
        runtime: Runtime,
        truncation: Option<&Truncation>,
    ) -> Result<(HeapGraph, Pending), ImportError> {
        let FileStrings {
            mut strings,
            file_ids,
            ..
        } = file_strings;
        if file_ids.is_some() {
            return Err(inconsistent(
                "the file's columns are images but its first string is not \"\"".to_owned(),
            ));
        }
        // Types are found by name: each type's string is made findable, and must be the only
        // one of its text, as in the table the file was written from.
        let n_strings = strings.len();
        let check_type = |strings: &mut StringTable, id: StringId| {
            if id.index() >= n_strings {
                return Err(inconsistent(format!(
                    "a node's type is string {}, outside the {n_strings} strings of the file",
                    id.to_raw()
                )));
            }
            if strings.make_findable(id) != id {
                return Err(inconsistent(format!(
                    "the type {:?} is written twice in the file's strings",
                    strings.get(id)
                )));
            }
            Ok(())
        };
        match imaged.node_type.distinct() {
            Some(table) => {
                for &id in table {
                    check_type(&mut strings, id)?;
                }
            }
            None => {
                for id in imaged.node_type.iter() {
                    check_type(&mut strings, id)?;
                }
            }
        }
        let type_names = self.type_total_names(&mut strings, None);
        let type_paths = self.type_paths_named(&mut strings, None);
        let accumulated = self.accumulated_named(&strings, None);
        let n_nodes = imaged.object_id.len();
        let root = match (self.root, truncation) {
            (Some(root), _) => root,
            (None, Some(cut)) => {
                return Err(ImportError::truncated(
                    FORMAT,
                    cut.offset,
                    "the root record",
                ));
            }
            (None, None) => return Err(inconsistent("the file has no root record".to_owned())),
        };
        let mut meta = graph_meta(header, runtime);
        if let Some(truncation) = truncation {
            meta.notes.push(format!(
                "{truncation}: the graph's {n_nodes} nodes and {} edges were read whole",
                imaged.edge_to.len()
            ));
        }
        meta.notes.extend(self.unknown_chunks_notes());
        let parts = HeapGraphParts {
            node_object_id: imaged.object_id,
            node_kind: imaged.node_kind,
            node_type: imaged.node_type,
            node_name: imaged.node_name,
            node_shallow_size: imaged.shallow_size,
            first_edge: imaged.first_edge,
            edge_to: imaged.edge_to,
            edge_kind: imaged.edge_kind,
            edge_name: imaged.edge_name,
            node_kinds: std::mem::take(&mut self.node_kinds),
            root,
        };
        let mut graph = HeapGraph::from_parts(meta, strings, parts)
            .map_err(|err| inconsistent(err.to_string()))?;
        self.attach_extras(&mut graph, truncation.is_some())?;
        let pending = Pending {
            n_nodes,
            graph_whole: true,
            type_names,
            type_paths,
            accumulated,
        };
        Ok((graph, pending))
    }

    /// The stored type totals' names in the table (`file_ids`: the table id of each string of
    /// the file, where they differ), each made findable; `None` if one is not a string.
    fn type_total_names(
        &mut self,
        strings: &mut StringTable,
        file_ids: Option<&[u32]>,
    ) -> Option<Vec<StringId>> {
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
    }

    /// The stored merged paths with their types' names in the table (`file_ids` as
    /// [`Columns::type_total_names`]), each made findable; `None` if one is not a string.
    fn type_paths_named(
        &mut self,
        strings: &mut StringTable,
        file_ids: Option<&[u32]>,
    ) -> Option<Vec<TypePaths>> {
        std::mem::take(&mut self.type_paths)
            .into_iter()
            .map(|(raw, paths)| {
                let raw = match file_ids {
                    Some(ids) => *ids.get(raw as usize)?,
                    None => raw,
                };
                let type_name = strings.make_findable(strings.id_from_raw(raw)?);
                Some(TypePaths { type_name, ..paths })
            })
            .collect()
    }

    /// The stored types below the accumulation points with their names in the table
    /// (`file_ids` as [`Columns::type_total_names`]); `None` if one is not a string.
    fn accumulated_named(
        &mut self,
        strings: &StringTable,
        file_ids: Option<&[u32]>,
    ) -> Option<Vec<AccumulatedTypes>> {
        std::mem::take(&mut self.accumulated)
            .into_iter()
            .map(|(types, raw_names)| {
                let names = raw_names
                    .into_iter()
                    .map(|raw| {
                        let raw = match file_ids {
                            Some(ids) => *ids.get(raw as usize)?,
                            None => raw,
                        };
                        strings.id_from_raw(raw)
                    })
                    .collect::<Option<Vec<StringId>>>()?;
                Some(AccumulatedTypes {
                    types: names,
                    ..types
                })
            })
            .collect()
    }

    /// Notes for the chunks of types this version does not read.
    fn unknown_chunks_notes(&self) -> Vec<String> {
        // The Python dumper's `buffers` (tensors' and arrays' data, for linking GPU blocks to
        // their holders) are ours and known; nothing reads them yet, which is no news.
        self.unknown
            .iter()
            .filter(|(name, _)| name.as_str() != BUFFERS)
            .map(|(type_name, count)| {
                format!(
                    "skipped {count} chunk(s) of type {type_name:?}, which this version of heapgraph does not read"
                )
            })
            .collect()
    }

    /// Gives `graph` the object arrays' lengths and the collections' fill. A cut-short file
    /// keeps the rows of the nodes that arrived; in a whole one, a row naming no node is an
    /// error (`set_*` checks).
    fn attach_extras(&mut self, graph: &mut HeapGraph, cut_short: bool) -> Result<(), ImportError> {
        let n_nodes = graph.node_count();
        if cut_short {
            self.array_lengths
                .retain(|&(node, _)| (node as usize) < n_nodes);
            self.fill.retain(|&(node, _)| (node as usize) < n_nodes);
        }
        if !self.array_lengths.is_empty() {
            graph
                .set_array_lengths(ArrayLengths::from_pairs(
                    std::mem::take(&mut self.array_lengths),
                    self.slot_bytes,
                ))
                .map_err(|err| inconsistent(err.to_string()))?;
        }
        if !self.fill.is_empty() {
            graph
                .set_fill(CollectionFill::from_rows(std::mem::take(&mut self.fill)))
                .map_err(|err| inconsistent(err.to_string()))?;
        }
        Ok(())
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

    /// The stored analysis, if the file has one for every node of a graph that arrived whole and
    /// its dominators are nodes; otherwise a note on `graph` says why it is ignored. Retained
    /// counts and type totals (`type_names`: the types' names in the table, `None` if one is
    /// not a string) are kept where they are whole.
    fn stored_analysis(
        &mut self,
        pending: Pending,
        graph: &mut HeapGraph,
    ) -> Option<StoredAnalysis> {
        let mut notes = Vec::new();
        let analysis = self.stored_analysis_noting(pending, &mut notes);
        for note in notes {
            graph.add_note(note);
        }
        analysis
    }

    fn stored_analysis_noting(
        &mut self,
        pending: Pending,
        notes: &mut Vec<String>,
    ) -> Option<StoredAnalysis> {
        let Pending {
            n_nodes,
            graph_whole,
            type_names,
            type_paths,
            accumulated,
        } = pending;
        let n_rows = self.dominator.len();
        if n_rows == 0 && n_nodes > 0 {
            return None;
        }
        let problem = if n_rows != n_nodes {
            Some(format!("covers {n_rows} of {n_nodes} nodes"))
        } else if self.retained_size.len() != n_rows || self.distance.len() != n_rows {
            Some(format!(
                "has {n_rows} dominators but {} retained sizes and {} distances",
                self.retained_size.len(),
                self.distance.len()
            ))
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
        let chain_parent = std::mem::take(&mut self.chain_parent);
        let chain_parent = if self.chain_parent_missing || chain_parent.len() != n_nodes {
            Vec::new()
        } else {
            chain_parent
        };
        let totals = std::mem::take(&mut self.type_totals);
        let n_types = totals.count.len();
        let type_totals = match type_names {
            Some(type_name)
                if type_name.len() == n_types
                    && totals.shallow_size.len() == n_types
                    && totals.retained_size.len() == n_types =>
            {
                (n_types > 0).then_some(TypeTotals {
                    types: type_name,
                    count: totals.count,
                    shallow: totals.shallow_size,
                    retained: totals.retained_size,
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
            idom: std::mem::take(&mut self.dominator),
            retained_size: std::mem::take(&mut self.retained_size),
            distance: std::mem::take(&mut self.distance),
            retained_count,
            type_totals,
            chain_parent,
            dominator_children: self.dominator_children.take(),
            type_paths: type_paths.unwrap_or_else(|| {
                notes.push(
                    "the stored merged paths name a type that is not a string; they are ignored"
                        .to_owned(),
                );
                Vec::new()
            }),
            accumulated: match accumulated {
                Some(accumulated)
                    if accumulated.iter().all(|types| {
                        (types.point as usize) < n_nodes
                            && (types.representative == StoredAnalysis::NONE
                                || (types.representative as usize) < n_nodes)
                    }) =>
                {
                    accumulated
                }
                _ => {
                    notes.push(
                        "the stored types below the suspects' accumulation points name a node or \
                         a type outside the graph; they are ignored"
                            .to_owned(),
                    );
                    Vec::new()
                }
            },
        })
    }
}

/// One `type_paths` chunk's tree, its type's name left for the caller to find in the table.
/// Each row's parent must be an earlier row (the tree is in pre-order); that its nodes and
/// edges are the graph's is the analyzer's check, when it adopts them.
fn type_paths(chunk: &format::TypePathsChunk<'_>) -> Result<TypePaths, String> {
    fn decoded<T: format::LeInt>(blob: &[u8]) -> Result<Vec<T>, String> {
        let mut out = Vec::new();
        decode_column(blob, &mut out).map_err(|err| err.to_string())?;
        Ok(out)
    }
    let node: Vec<u32> = decoded(chunk.node)?;
    let edge: Vec<u64> = decoded(chunk.edge)?;
    let parent: Vec<u32> = decoded(chunk.parent)?;
    let depth: Vec<u32> = decoded(chunk.depth)?;
    let indent: Vec<u32> = decoded(chunk.indent)?;
    let is_target: Vec<u8> = decoded(chunk.is_target)?;
    let [
        targets,
        targets_retained_size,
        skipped_steps,
        hidden_children,
        hidden_targets,
        hidden_retained_size,
    ] = [
        chunk.targets,
        chunk.targets_retained_size,
        chunk.skipped_steps,
        chunk.hidden_children,
        chunk.hidden_targets,
        chunk.hidden_retained_size,
    ]
    .map(decoded::<u64>);
    let (targets, targets_retained_size, skipped_steps) =
        (targets?, targets_retained_size?, skipped_steps?);
    let (hidden_children, hidden_targets, hidden_retained_size) =
        (hidden_children?, hidden_targets?, hidden_retained_size?);
    let nodes = (0..node.len())
        .map(|row| {
            let parent = (parent[row] != u32::MAX).then_some(parent[row]);
            if let Some(up) = parent
                && up as usize >= row
            {
                return Err(format!("row {row} has parent row {up}, not an earlier one"));
            }
            let is_target = match is_target[row] {
                0 => false,
                1 => true,
                other => return Err(format!("row {row} has is_target {other}, not 0 or 1")),
            };
            Ok(TypePathNode {
                node: node[row],
                edge: (edge[row] != u64::MAX).then_some(edge[row]),
                parent,
                depth: depth[row],
                indent: indent[row],
                is_target,
                targets: targets[row],
                targets_retained_size: targets_retained_size[row],
                skipped_steps: skipped_steps[row],
                hidden_children: hidden_children[row],
                hidden_targets: hidden_targets[row],
                hidden_retained_size: hidden_retained_size[row],
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(TypePaths {
        type_name: StringId::EMPTY,
        branches: chunk.branches,
        objects: chunk.objects,
        reached: chunk.reached,
        retained_size: chunk.retained_size,
        nodes,
    })
}

/// The graph's metadata from the file's header.
fn graph_meta(header: &Header, runtime: Runtime) -> GraphMeta {
    let mut meta = GraphMeta::new(runtime, &header.source_format);
    meta.runtime_version.clone_from(&header.runtime_version);
    meta.captured_at_ms = header.captured_at_ms;
    meta.pid = header.pid;
    meta.notes.clone_from(&header.notes);
    meta
}

/// The values of a little-endian `u64` column blob (a remainder, which the caller has refused
/// with [`column_len`], is ignored).
fn le_u64s(blob: &[u8]) -> impl Iterator<Item = u64> + '_ {
    blob.as_chunks::<8>()
        .0
        .iter()
        .map(|bytes| u64::from_le_bytes(*bytes))
}

/// As [`le_u64s`], for `u32`.
fn le_u32s(blob: &[u8]) -> impl Iterator<Item = u32> + '_ {
    blob.as_chunks::<4>()
        .0
        .iter()
        .map(|bytes| u32::from_le_bytes(*bytes))
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
