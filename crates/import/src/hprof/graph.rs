//! Pass 2 and assembly: every object's references as edges, the super-root and the stack
//! frames, names for strings and threads, and the notes on what the dump lacked.

use super::bytes::{Cursor, Short, read_id};
use super::classes::{self, ClassInfo};
use super::ids::IdIndex;
use super::scan::{self, Root, RootKind, SegmentIndex, Stop, TopLevel, basic, sub};
use super::{Layout, Options, align8, jvm};
use crate::ImportError;
use heapgraph_model::{
    ArrayLengths, EdgeKind, EdgeKinds, EdgeNames, EdgeOffsets, FileDump, GraphMeta, HeapGraph,
    HeapGraphParts, NodeKindInfo, NodeKinds, NodeNames, NodeTypes, PackedU64, ParkedEdgeNames,
    Runtime, StringId, StringTable, timed,
};
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::ops::Range;

/// Node kinds, in the order of [`node_kinds`].
const KIND_INSTANCE: u8 = 0;
const KIND_CLASS: u8 = 1;
const KIND_OBJECT_ARRAY: u8 = 2;
const KIND_PRIMITIVE_ARRAY: u8 = 3;
const KIND_ROOT: u8 = 4;
const KIND_FRAME: u8 = 5;

/// Characters of a string's value kept as its node's name.
const STRING_NAME_CHARS: usize = 1024;

fn node_kinds() -> Vec<NodeKindInfo> {
    [
        ("instance", false),
        ("class", false),
        ("object-array", false),
        ("primitive-array", false),
        ("root", true),
        ("frame", true),
    ]
    .into_iter()
    .map(|(name, synthetic)| NodeKindInfo {
        name: name.to_owned(),
        synthetic,
    })
    .collect()
}

/// Names of the edges the dump does not name, interned once.
struct LinkNames {
    class: StringId,
    super_class: StringId,
    /// Class loader, signers, protection domain.
    class_references: [StringId; 3],
}

/// What pass 2 reads while it walks a segment.
struct Context<'a> {
    bytes: &'a [u8],
    id_size: usize,
    layout: Layout,
    classes: &'a [ClassInfo],
    class_by_id: &'a FxHashMap<u64, u32>,
    ids: &'a IdIndex<'a>,
    names: &'a LinkNames,
    class_type: StringId,
    /// Instance size of `java.lang.Class`, the base of a class object's size.
    class_object_size: u64,
    /// Type of a primitive array, by element basic type.
    primitive_types: [StringId; 12],
    /// Class object node of a primitive array's class, by element basic type.
    primitive_class_nodes: [Option<u32>; 12],
    /// The type of instances and arrays whose class has no class dump.
    unknown_type: StringId,
    /// Edges that threads get besides their fields: to their frames and direct locals.
    thread_edges: &'a FxHashMap<u32, Vec<(u32, StringId)>>,
}

/// A `java.lang.String` instance and its value array, in 8 bytes (a dump holds millions of
/// strings, all held from the walk to their naming): the two nodes (below 2^31, as the import
/// checks), with a flag each in their high bits.
#[derive(Clone, Copy)]
struct StringRef {
    /// The string's node; [`StringRef::SLICED`] where it views part of its array, whose
    /// offset and count are kept in [`Part::string_slices`].
    node: u32,
    /// Its value array's node; [`StringRef::UTF16`] where its `coder` (JDK 9 and later) says
    /// its bytes are UTF-16.
    array: u32,
}

impl StringRef {
    const SLICED: u32 = 1 << 31;
    const UTF16: u32 = 1 << 31;

    fn new(node: u32, array: u32, utf16: bool, sliced: bool) -> Self {
        StringRef {
            node: node | if sliced { Self::SLICED } else { 0 },
            array: array | if utf16 { Self::UTF16 } else { 0 },
        }
    }

    fn node(self) -> u32 {
        self.node & !Self::SLICED
    }

    fn array(self) -> u32 {
        self.array & !Self::UTF16
    }

    fn utf16(self) -> bool {
        self.array & Self::UTF16 != 0
    }

    fn sliced(self) -> bool {
        self.node & Self::SLICED != 0
    }
}

/// A `byte[]` or `char[]` array, which may be a string's value, in 16 bytes (the 2.5 GB
/// benchmark dump has 6.4 million): its node (below 2^31) with [`TextArray::CHARS`] in the
/// high bit for a `char[]`, its length and where its data starts in the dump.
#[derive(Clone, Copy)]
struct TextArray {
    node: u32,
    length: u32,
    data: u64,
}

impl TextArray {
    const CHARS: u32 = 1 << 31;

    fn new(node: u32, element: u8, length: u32, data: usize) -> Self {
        let chars = if element == basic::CHAR {
            Self::CHARS
        } else {
            0
        };
        TextArray {
            node: node | chars,
            length,
            data: data as u64,
        }
    }

    fn node(self) -> u32 {
        self.node & !Self::CHARS
    }

    fn element(self) -> u8 {
        if self.node & Self::CHARS != 0 {
            basic::CHAR
        } else {
            basic::BYTE
        }
    }

    fn data(self) -> usize {
        self.data as usize
    }
}

/// Pass 2's output for a run of consecutive segments, in the graph's compact columns.
#[derive(Default)]
struct Part {
    node_kind: NodeKinds,
    node_type: NodeTypes,
    /// The part's labelled nodes (class objects): index in the part, label.
    names: Vec<(u32, StringId)>,
    shallow: PackedU64,
    /// Edges of the part after each node.
    edge_end: EdgeOffsets,
    edge_to: Vec<u32>,
    edge_kind: EdgeKinds,
    /// The names of the edges read since the last were parked ([`Part::park_names`]).
    edge_name: EdgeNames,
    /// The names parked, in pieces of about [`NAMES_PER_PIECE`], each with its count.
    parked_names: Vec<(usize, ParkedEdgeNames)>,
    /// `java.lang.String` instances and where their values are.
    strings: Vec<StringRef>,
    /// The strings that view part of their array (before JDK 7u6, and on Android before M,
    /// many strings share one array): node, offset and count, in node order.
    string_slices: Vec<(u32, u32, u32)>,
    /// `byte[]` and `char[]` arrays, in node order.
    text_arrays: Vec<TextArray>,
    /// Object arrays: index in the part, length (for `analyzer::waste`'s capacities).
    array_lengths: Vec<(u32, u32)>,
    /// References to ids with no object in the dump.
    dangling: u64,
    /// Instances and arrays whose class has no class dump.
    unknown_class: u64,
    /// Instances whose field bytes disagree with their class's layout.
    layout_mismatch: u64,
}

impl Part {
    fn with_capacity(n_nodes: usize, max_edges: usize) -> Part {
        Part {
            node_kind: NodeKinds::with_capacity(n_nodes),
            node_type: NodeTypes::with_capacity(n_nodes),
            shallow: PackedU64::with_capacity(n_nodes),
            edge_end: EdgeOffsets::with_capacity(n_nodes),
            edge_to: Vec::with_capacity(max_edges),
            edge_kind: EdgeKinds::with_capacity(max_edges),
            // Which names are wide depends on the run (its arrays); the joined column decides.
            edge_name: EdgeNames::kept_narrow(max_edges),
            ..Part::default()
        }
    }

    /// Parks the names read since the last were parked: the graph's edge names (2 bytes an
    /// edge, 177 MiB on the 2.5 GB benchmark dump, compressed some 30 times) wait compressed
    /// until the parse's end, where the labels are built (`assemble`), rather than beside the
    /// other columns through the pass over the objects, the assembly and the strings' naming,
    /// the parse's largest moments.
    fn park_names(&mut self) {
        if self.edge_name.is_empty() {
            return;
        }
        let names = std::mem::replace(&mut self.edge_name, EdgeNames::kept_narrow(0));
        self.parked_names
            .push((names.len(), ParkedEdgeNames::park(names)));
    }

    fn edge(&mut self, to: u32, kind: EdgeKind, name: u32) {
        self.edge_to.push(to);
        self.edge_kind.push(kind);
        self.edge_name.push(name);
    }

    /// An edge to object `id` unless it is null; a dangling id is counted and left out.
    fn edge_to_id(&mut self, ids: &IdIndex<'_>, id: u64, kind: EdgeKind, name: u32) {
        if id == 0 {
            return;
        }
        match ids.get(id) {
            Some(to) => self.edge(to, kind, name),
            None => self.dangling += 1,
        }
    }

    fn node(&mut self, kind: u8, type_name: StringId, name: StringId, shallow: u64) {
        if name != StringId::EMPTY {
            self.names.push((self.node_kind.len() as u32, name));
        }
        self.node_kind.push(kind);
        self.node_type.push(type_name);
        self.shallow.push(shallow);
    }

    fn end_node(&mut self) {
        self.edge_end.push(self.edge_to.len() as u64);
    }
}

/// Imports `bytes` as described in [`super::import_slice`]; `release` is told of each byte
/// range pass 2 has finished with, and of the strings' value arrays after each batch of
/// strings named, which reads across `batches.string_span` bytes at most ([`BATCH_SPAN`]).
///
/// Where the layout is only assumed (the ids are not addresses, or they did not tell), the
/// system properties of the graph built under the assumption check it, and a graph is built
/// again under the layout they imply if it differs: such dumps are rare and small (the hprof
/// agent's), so the second import costs less than a pass that reads strings before pass 2.
pub(super) fn build(
    bytes: &[u8],
    options: &Options,
    release: &(dyn Fn(Range<usize>) + Sync),
    batches: Batches,
) -> Result<HeapGraph, ImportError> {
    let (mut graph, mut decision, header, ids_are_addresses) =
        build_with(bytes, options, release, batches, None)?;
    if decision.is_provisional() {
        let properties = jvm::system_properties(&graph);
        if let Some(implied) = jvm::implied_by(&properties) {
            let mut better = decision.clone();
            if better.layout_source == jvm::Source::Unknown {
                better.layout = implied.layout;
                better.layout_source = implied.layout_source;
            }
            if better.fields_source == jvm::Source::Unknown {
                better.fields = implied.fields;
                better.fields_source = implied.fields_source;
            }
            if (better.layout, better.fields) != (decision.layout, decision.fields) {
                graph = build_with(bytes, options, release, batches, Some(better.clone()))?.0;
            }
            decision = better;
        }
    }
    let mut notes = decision.notes(&header, ids_are_addresses);
    notes.append(&mut graph.meta_mut().notes);
    graph.meta_mut().notes = notes;
    Ok(graph)
}

/// One import under `decided` layouts, or those the first pass chooses; returns the graph (its
/// notes lack the layout's), the layouts and why, the header, and whether the ids are
/// addresses.
fn build_with(
    bytes: &[u8],
    options: &Options,
    release: &(dyn Fn(Range<usize>) + Sync),
    batches: Batches,
    decided: Option<jvm::Decision>,
) -> Result<(HeapGraph, jvm::Decision, scan::Header, bool), ImportError> {
    let header = scan::header(bytes)?;
    let id_size = header.id_size;
    let top = timed("hprof: top-level records", || {
        scan::top_level(bytes, header.body_start, id_size, release)
    })?;
    let cut_in_segment = top.cut.is_some_and(|cut| {
        matches!(
            cut.tag,
            Some(scan::tag::HEAP_DUMP | scan::tag::HEAP_DUMP_SEGMENT)
        ) && cut.declared.is_some()
    });
    let chosen = match options.dump {
        None => top.dumps.len().saturating_sub(1),
        Some(n) if n.get() <= top.dumps.len() => n.get() - 1,
        Some(n) => {
            return Err(ImportError::no_such_dump(
                super::FORMAT,
                n.get(),
                top.dumps.len(),
            ));
        }
    };
    let empty = scan::HeapDump::default();
    let dump = top.dumps.get(chosen).unwrap_or(&empty);
    let segments = &dump.segments;
    // Only the file's last segment can be cut short, and only the last dump holds it.
    let is_last_dump = chosen + 1 == top.dumps.len();
    let n_segments = segments.len();
    let index = |body: &Range<usize>, is_cut: bool| {
        let index = scan::index_segment(bytes, body.clone(), id_size, is_cut);
        release(body.clone());
        index
    };
    let mut indexes: Vec<SegmentIndex> = timed("hprof: objects' ids, classes and roots", || {
        segments
            .par_iter()
            .enumerate()
            .map(|(i, body)| index(body, cut_in_segment && is_last_dump && i + 1 == n_segments))
            .collect()
    });
    if let Some((offset, message)) = indexes.iter().find_map(|index| match &index.stop {
        Some(Stop::Corrupt { offset, message }) => Some((*offset, message.clone())),
        _ => None,
    }) {
        return Err(scan::malformed(offset, message));
    }
    let n_objects: usize = indexes.iter().map(|index| index.object_ids.len()).sum();
    let mut meta = GraphMeta::new(Runtime::Java, "hprof");
    meta.captured_at_ms = Some(header.timestamp_ms).filter(|&ms| ms > 0);
    meta.dumps = file_dumps(bytes, &top, id_size, chosen, n_objects, cut_in_segment);
    if top.dumps.len() > 1 {
        meta.notes.push(format!(
            "this file holds {} heap dumps (the hprof agent writes one per request); this is dump {} of them, {}: --dump N reads another",
            top.dumps.len(),
            chosen + 1,
            if options.dump.is_some() { "as --dump asks" } else { "the last" },
        ));
    }

    let mut strings = StringTable::new();
    let class_dumps: Vec<scan::ClassDump> = indexes
        .iter_mut()
        .flat_map(|index| std::mem::take(&mut index.classes))
        .collect();
    let (mut classes, class_by_id, broken_chains) =
        classes::build_classes(&class_dumps, &top, id_size, &mut strings);
    drop(class_dumps);

    let instance_gaps: Vec<(u64, u64)> = indexes
        .iter_mut()
        .flat_map(|index| std::mem::take(&mut index.instance_gaps))
        .collect();
    let mut id_evidence = jvm::IdEvidence {
        objects: n_objects as u64,
        unaligned: indexes.iter().map(|index| index.unaligned_ids).sum(),
        votes: [0; 5],
        instance_gaps: &instance_gaps,
    };
    for index in &indexes {
        for (total, vote) in id_evidence.votes.iter_mut().zip(index.layout_votes) {
            *total += vote;
        }
    }
    let ids_are_addresses = id_evidence.are_addresses();
    let decision = decided
        .unwrap_or_else(|| jvm::decide(options, &header, &id_evidence, &classes, &class_by_id));
    drop(instance_gaps);
    let layout = decision.layout.sizes();
    classes::size_classes(&mut classes, layout, decision.fields);

    // Objects are nodes 0.. in file order; the frames follow, and the super-root comes last, so
    // that the columns pass 2 built need no shifting.
    if n_objects >= (u32::MAX / 2) as usize {
        return Err(scan::malformed(
            0,
            format!("the dump holds {n_objects} objects; heapgraph handles fewer than 2^31"),
        ));
    }
    let objects_per_segment: Vec<usize> =
        indexes.iter().map(|index| index.object_ids.len()).collect();
    // Ids are addresses in allocation order: about 2 bytes each as steps from the first of
    // their block, gathered segment by segment so that they are never held at 8 bytes each.
    let object_ids = timed("hprof: ids packed", || {
        let alignment = PackedU64::alignment(
            indexes
                .iter()
                .flat_map(|index| index.object_ids.iter().copied()),
        );
        let mut object_ids = PackedU64::with_shift(n_objects, alignment);
        for index in &mut indexes {
            for &id in &index.object_ids {
                object_ids.push(id);
            }
            index.object_ids = Vec::new();
        }
        object_ids
    });
    // The smallest object takes 16 bytes on a 64-bit JVM (8-byte ids), 8 on a 32-bit one;
    // serial numbers are 1 apart.
    let granule_shift = match (ids_are_addresses, id_size) {
        (false, _) => 0,
        (true, 8) => 4,
        (true, _) => 3,
    };
    let (ids, duplicate_ids) = timed("hprof: id lookup index", || {
        IdIndex::new(&object_ids, 0, granule_shift)
    });
    let roots: Vec<Root> = indexes
        .iter_mut()
        .flat_map(|index| std::mem::take(&mut index.roots))
        .collect();

    drop(indexes);

    let plan = RootPlan::new(
        &roots,
        &top,
        &ids,
        &classes,
        &class_by_id,
        &mut strings,
        n_objects,
    );
    drop(roots);
    // The first pass's per-segment indexes are gone: hundreds of MiB in blocks too small to be
    // mappings of their own (230 MiB on the 2.5 GB benchmark dump), which the allocator would
    // otherwise keep resident through the second pass, the parse's peak.
    heapgraph_model::memory_freed();
    let names = LinkNames {
        class: strings.intern("<class>"),
        super_class: strings.intern("<super>"),
        class_references: [
            strings.intern("<classloader>"),
            strings.intern("<signers>"),
            strings.intern("<protection domain>"),
        ],
    };
    let mut primitive_types = [StringId::EMPTY; 12];
    let mut primitive_class_nodes = [None; 12];
    for code in [
        basic::BOOLEAN,
        basic::CHAR,
        basic::FLOAT,
        basic::DOUBLE,
        basic::BYTE,
        basic::SHORT,
        basic::INT,
        basic::LONG,
    ] {
        let name = classes::primitive_array_name(code);
        primitive_types[usize::from(code)] = strings.intern(name);
        primitive_class_nodes[usize::from(code)] = classes
            .iter()
            .find(|class| strings.get(class.name) == name)
            .and_then(|class| ids.get(class.id));
    }
    let class_object_size = classes
        .iter()
        .find(|class| strings.get(class.name) == "java.lang.Class")
        .map_or(align8(layout.header), |class| class.instance_size);
    let slot_bytes = layout.reference as u32;
    let context = Context {
        bytes,
        id_size,
        layout,
        classes: &classes,
        class_by_id: &class_by_id,
        ids: &ids,
        names: &names,
        class_type: strings.intern("java.lang.Class"),
        class_object_size,
        primitive_types,
        primitive_class_nodes,
        unknown_type: strings.intern("<unknown class>"),
        thread_edges: &plan.thread_edges,
    };

    // Pass 2 over runs of consecutive segments of about equal bytes, one per task.
    // Runs of about an eighth of the segments per thread: enough to balance the threads, and
    // small, because assembling the graph holds one run's copy beside it.
    let runs = split_runs(segments, rayon::current_num_threads() * 4);
    let parts: Vec<Result<Part, ImportError>> = timed("hprof: objects and references", || {
        runs
            .par_iter()
            .map(|run| {
                let n_nodes: usize = run.clone().map(|segment| objects_per_segment[segment]).sum();
                let n_bytes: usize = run.clone().map(|segment| segments[segment].len()).sum();
                // Sized once for the most the run can hold, so that the columns never move while
                // they grow; untouched capacity costs address space, not memory.
                let mut part = Part::with_capacity(n_nodes, n_nodes + n_bytes / id_size);
                for segment in run.clone() {
                    let before = part.node_kind.len();
                    walk_segment(&context, segments[segment].clone(), &mut part, release);
                    if part.edge_name.len() >= batches.names_per_piece {
                        part.park_names();
                    }
                    let walked = part.node_kind.len() - before;
                    if walked != objects_per_segment[segment] {
                        return Err(scan::malformed(
                            segments[segment].start,
                            format!(
                                "the second pass read {walked} objects in this segment where the first read {}",
                                objects_per_segment[segment]
                            ),
                        ));
                    }
                }
                part.park_names();
                Ok(part)
            })
            .collect()
    });
    let parts = parts
        .into_iter()
        .collect::<Result<Vec<Part>, ImportError>>()?;
    drop(ids);

    let (mut graph_parts, array_lengths) = timed("hprof: columns assembled", || {
        assemble(
            bytes,
            Handback {
                release,
                string_batch_span: batches.string_span,
            },
            parts,
            &plan,
            object_ids,
            &mut strings,
            &mut meta,
        )
    });
    graph_parts.node_kinds = node_kinds();
    if let Some(cut) = top.cut.filter(|_| is_last_dump) {
        meta.notes.push(cut_note(&cut, bytes.len()));
    } else if top.dumps.is_empty() {
        meta.notes.push(format!(
            "the dump ends at byte {} after a complete record, before any heap dump record: it may have been cut short, and its heap is missing",
            bytes.len()
        ));
    } else if !dump.complete && is_last_dump {
        meta.notes.push(format!(
            "the dump ends at byte {} after a complete record but without the HEAP DUMP END record: it may have been cut short, and what came after is missing",
            bytes.len()
        ));
    } else if !dump.complete {
        meta.notes.push(format!(
            "heap dump {}'s segments end at byte {} without the HEAP DUMP END record",
            chosen + 1,
            dump.bytes.end
        ));
    }
    for (tag, count) in &top.skipped {
        meta.notes.push(format!(
            "skipped {count} record(s) of tag {tag:#04x}, which heapgraph does not read"
        ));
    }
    if duplicate_ids > 0 {
        meta.notes.push(format!(
            "{duplicate_ids} object id(s) appear more than once; references go to the first"
        ));
    }
    if broken_chains > 0 {
        meta.notes.push(format!(
            "{broken_chains} class(es) have a superclass with no class dump, or a cycle of superclasses; their inherited fields are unknown"
        ));
    }
    let inconsistent = |err: heapgraph_model::InvalidGraph| {
        ImportError::inconsistent(super::FORMAT, err.to_string())
    };
    let mut graph = HeapGraph::from_parts(meta, strings, graph_parts).map_err(inconsistent)?;
    graph
        .set_array_lengths(ArrayLengths::from_pairs(array_lengths, slot_bytes))
        .map_err(inconsistent)?;
    Ok((graph, decision, header, ids_are_addresses))
}

/// The heap dumps of the file, for `summary`: the chosen one with the objects read, the
/// others counted by a walk of their segments.
fn file_dumps(
    bytes: &[u8],
    top: &TopLevel<'_>,
    id_size: usize,
    chosen: usize,
    chosen_objects: usize,
    cut_in_segment: bool,
) -> Vec<FileDump> {
    let last = top.dumps.len().saturating_sub(1);
    top.dumps
        .iter()
        .enumerate()
        .map(|(i, dump)| {
            let objects = if i == chosen {
                chosen_objects
            } else {
                let n = dump.segments.len();
                dump.segments
                    .iter()
                    .enumerate()
                    .map(|(k, body)| {
                        let is_cut = cut_in_segment && i == last && k + 1 == n;
                        scan::index_segment(bytes, body.clone(), id_size, is_cut)
                            .object_ids
                            .len()
                    })
                    .sum()
            };
            FileDump {
                index: i + 1,
                bytes: dump.bytes.start as u64..dump.bytes.end as u64,
                objects: objects as u64,
                complete: dump.complete,
                read: i == chosen,
            }
        })
        .collect()
}

/// Splits segments into at most `n_runs` runs of consecutive segments with about equal bytes.
fn split_runs(segments: &[Range<usize>], n_runs: usize) -> Vec<Range<usize>> {
    let total: usize = segments.iter().map(ExactSizeIterator::len).sum();
    let target = total / n_runs.max(1) + 1;
    let mut runs = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, segment) in segments.iter().enumerate() {
        bytes += segment.len();
        if bytes >= target {
            runs.push(start..i + 1);
            start = i + 1;
            bytes = 0;
        }
    }
    if start < segments.len() {
        runs.push(start..segments.len());
    }
    runs
}

/// The edge names a run of pass 2 holds before it parks them ([`Part::park_names`]), checked
/// after each segment: 4 MiB of names, about a segment's of the 2.5 GB benchmark dump (32 MiB),
/// so that the parse's end decodes a piece this size beside the joined column.
const NAMES_PER_PIECE: usize = 2 << 20;

/// How much the parse reads or holds before it hands back or parks what it is done with.
#[derive(Clone, Copy)]
pub(super) struct Batches {
    /// The most bytes of the dump a batch of strings reads across ([`BATCH_SPAN`]).
    pub(super) string_span: usize,
    /// The edge names a run of pass 2 holds before it parks them ([`NAMES_PER_PIECE`]).
    pub(super) names_per_piece: usize,
}

/// The parse's batches in use.
pub(super) const BATCHES: Batches = Batches {
    string_span: BATCH_SPAN,
    names_per_piece: NAMES_PER_PIECE,
};

/// The edge names pass 2 parked, in edge order, in pieces ([`Part::park_names`]).
#[derive(Default)]
struct ParkedNames {
    pieces: Vec<ParkedEdgeNames>,
    /// The edge after each piece's last.
    ends: Vec<usize>,
}

impl ParkedNames {
    fn extend(&mut self, pieces: Vec<(usize, ParkedEdgeNames)>) {
        for (count, piece) in pieces {
            self.ends
                .push(self.ends.last().copied().unwrap_or(0) + count);
            self.pieces.push(piece);
        }
    }

    /// The name of edge `edge`, one of the pieces', decoded with its block.
    fn get(&self, edge: usize) -> u32 {
        let piece = self.ends.partition_point(|&end| end <= edge);
        let start = piece.checked_sub(1).map_or(0, |before| self.ends[before]);
        self.pieces[piece].get(edge - start)
    }

    /// The names as one column of room for `total`, the pieces decoded a core's each at a time
    /// and appended in turn, each dropped once appended.
    fn unpark(self, total: usize) -> EdgeNames {
        let mut column = EdgeNames::kept_narrow(total);
        let mut pieces = self.pieces.into_iter();
        loop {
            let batch: Vec<ParkedEdgeNames> =
                pieces.by_ref().take(rayon::current_num_threads()).collect();
            if batch.is_empty() {
                return column;
            }
            let decoded: Vec<EdgeNames> =
                batch.into_par_iter().map(ParkedEdgeNames::unpark).collect();
            for piece in decoded {
                column.extend_from(&piece);
            }
        }
    }
}

/// The bytes of a segment pass 2 reads before it hands them back: HotSpot's segments are
/// about 1 MiB, but a dump may hold far larger ones (the 2.5 GB benchmark dump's reach 32 MiB,
/// and a dump written as one HEAP DUMP record is one segment), whose pages read stayed
/// resident until the segment's end.
const WALK_RELEASE_SPAN: usize = 4 << 20;

/// Pass 2 over one segment: nodes and edges for its objects, in file order; the bytes read are
/// handed back (`release`) every [`WALK_RELEASE_SPAN`] and at the end.
fn walk_segment(
    context: &Context<'_>,
    body: Range<usize>,
    part: &mut Part,
    release: &(dyn Fn(Range<usize>) + Sync),
) {
    let mut cursor = Cursor::new(context.bytes, body.start, body.end, context.id_size);
    let mut released_to = body.start;
    while cursor.remaining() > 0 {
        // Pass 1 read the same sub-records: a short one ends a cut segment there.
        if walk_sub_record(context, &mut cursor, part).is_err() {
            break;
        }
        if cursor.pos() - released_to >= WALK_RELEASE_SPAN {
            release(released_to..cursor.pos());
            released_to = cursor.pos();
        }
    }
    release(released_to..body.end);
}

/// Reads one sub-record; objects become nodes of `part`.
fn walk_sub_record(
    context: &Context<'_>,
    cursor: &mut Cursor<'_>,
    part: &mut Part,
) -> Result<(), Short> {
    let id_size = context.id_size;
    let sub_tag = cursor.u1()?;
    match sub_tag {
        sub::ROOT_UNKNOWN
        | sub::ROOT_STICKY_CLASS
        | sub::ROOT_MONITOR_USED
        | sub::ROOT_INTERNED_STRING
        | sub::ROOT_FINALIZING
        | sub::ROOT_DEBUGGER
        | sub::ROOT_REFERENCE_CLEANUP
        | sub::ROOT_VM_INTERNAL
        | sub::ROOT_UNREACHABLE => cursor.skip(id_size)?,
        sub::ROOT_JNI_GLOBAL => cursor.skip(2 * id_size)?,
        sub::ROOT_JNI_LOCAL | sub::ROOT_JAVA_FRAME | sub::ROOT_JNI_MONITOR => {
            cursor.skip(id_size + 8)?;
        }
        sub::ROOT_NATIVE_STACK | sub::ROOT_THREAD_BLOCK | sub::HEAP_DUMP_INFO => {
            cursor.skip(id_size + 4)?;
        }
        sub::ROOT_THREAD_OBJECT => cursor.skip(id_size + 8)?,
        sub::CLASS_DUMP => {
            let dump = scan::class_dump(cursor).map_err(|_| Short)?;
            class_node(context, dump.id, part);
        }
        sub::INSTANCE_DUMP => {
            let id = cursor.id()?;
            cursor.u4()?;
            let class_id = cursor.id()?;
            let n_bytes = cursor.u4()? as usize;
            let values = cursor.take(n_bytes)?;
            instance_node(context, id, class_id, values, part);
        }
        sub::OBJ_ARRAY_DUMP => {
            cursor.id()?;
            cursor.u4()?;
            let length = cursor.u4()?;
            let class_id = cursor.id()?;
            let elements = cursor.take((length as usize).checked_mul(id_size).ok_or(Short)?)?;
            object_array_node(context, class_id, elements, part);
        }
        sub::PRIM_ARRAY_DUMP | sub::PRIM_ARRAY_NODATA => {
            let id = cursor.id()?;
            cursor.u4()?;
            let length = cursor.u4()?;
            let element = cursor.u1()?;
            let size = scan::value_size(element, id_size).ok_or(Short)?;
            let data_start = cursor.pos();
            if sub_tag == sub::PRIM_ARRAY_DUMP {
                cursor.skip((length as usize).checked_mul(size).ok_or(Short)?)?;
            }
            let node = context.ids.get(id);
            if sub_tag == sub::PRIM_ARRAY_DUMP
                && matches!(element, basic::BYTE | basic::CHAR)
                && let Some(node) = node
            {
                part.text_arrays
                    .push(TextArray::new(node, element, length, data_start));
            }
            let code = usize::from(element).min(11);
            part.node(
                KIND_PRIMITIVE_ARRAY,
                context.primitive_types[code],
                StringId::EMPTY,
                context.layout.array_size(element, u64::from(length)),
            );
            if let Some(class_node) = context.primitive_class_nodes[code] {
                part.edge(class_node, EdgeKind::Internal, context.names.class.to_raw());
            }
            part.end_node();
        }
        _ => return Err(Short),
    }
    Ok(())
}

/// A class object: its superclass, loader, signers, protection domain and static references.
fn class_node(context: &Context<'_>, id: u64, part: &mut Part) {
    let names = context.names;
    let Some(&index) = context.class_by_id.get(&id) else {
        part.node(
            KIND_CLASS,
            context.class_type,
            context.unknown_type,
            context.class_object_size,
        );
        part.end_node();
        return;
    };
    let class = &context.classes[index as usize];
    part.node(
        KIND_CLASS,
        context.class_type,
        class.name,
        context.class_object_size + class.static_bytes,
    );
    part.edge_to_id(
        context.ids,
        class.super_id,
        EdgeKind::Internal,
        names.super_class.to_raw(),
    );
    for (&reference, name) in class.references.iter().zip(names.class_references) {
        part.edge_to_id(context.ids, reference, EdgeKind::Internal, name.to_raw());
    }
    for &(name, target) in &class.static_refs {
        part.edge_to_id(context.ids, target, EdgeKind::Property, name.to_raw());
    }
    part.end_node();
}

/// An instance: its class, then its non-null reference fields in layout order.
fn instance_node(context: &Context<'_>, id: u64, class_id: u64, values: &[u8], part: &mut Part) {
    let id_size = context.id_size;
    let Some(&class_index) = context.class_by_id.get(&class_id) else {
        part.unknown_class += 1;
        part.node(
            KIND_INSTANCE,
            context.unknown_type,
            StringId::EMPTY,
            align8(context.layout.header + values.len() as u64),
        );
        part.end_node();
        return;
    };
    let class = &context.classes[class_index as usize];
    if class.instance_bytes != values.len() as u64 {
        part.layout_mismatch += 1;
    }
    part.node(
        KIND_INSTANCE,
        class.name,
        StringId::EMPTY,
        class.instance_size,
    );
    part.edge_to_id(
        context.ids,
        class_id,
        EdgeKind::Internal,
        context.names.class.to_raw(),
    );
    for field in &class.ref_fields {
        let at = field.offset as usize;
        let Some(bytes) = values.get(at..at + id_size) else {
            continue;
        };
        let kind = if field.weak {
            EdgeKind::Weak
        } else {
            EdgeKind::Property
        };
        part.edge_to_id(context.ids, read_id(bytes), kind, field.name.to_raw());
    }
    if let Some(fields) = class.string_fields {
        let at = fields.value as usize;
        let value = values.get(at..at + id_size).map_or(0, read_id);
        let utf16 = fields.coder.and_then(|at| values.get(at as usize).copied()) == Some(1);
        let int_at = |at: u32| {
            values
                .get(at as usize..at as usize + 4)
                .map(|bytes| u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
        };
        let slice = fields
            .slice
            .and_then(|(offset, count)| int_at(offset).zip(int_at(count)));
        if let (Some(node), Some(array)) = (context.ids.get(id), context.ids.get(value)) {
            if let Some((offset, count)) = slice {
                part.string_slices.push((node, offset, count));
            }
            part.strings
                .push(StringRef::new(node, array, utf16, slice.is_some()));
        }
    }
    if let Some(node) = context.ids.get(id)
        && let Some(extra) = context.thread_edges.get(&node)
    {
        for &(to, name) in extra {
            part.edge(to, EdgeKind::Internal, name.to_raw());
        }
    }
    part.end_node();
}

/// An object array: its class, then its non-null elements by index.
fn object_array_node(context: &Context<'_>, class_id: u64, elements: &[u8], part: &mut Part) {
    let id_size = context.id_size;
    let type_name = match context.class_by_id.get(&class_id) {
        Some(&index) => context.classes[index as usize].name,
        None => {
            part.unknown_class += 1;
            context.unknown_type
        }
    };
    let length = (elements.len() / id_size) as u64;
    part.array_lengths
        .push((part.node_kind.len() as u32, length as u32));
    part.node(
        KIND_OBJECT_ARRAY,
        type_name,
        StringId::EMPTY,
        context.layout.array_size(basic::OBJECT, length),
    );
    part.edge_to_id(
        context.ids,
        class_id,
        EdgeKind::Internal,
        context.names.class.to_raw(),
    );
    for (index, element) in elements.chunks_exact(id_size).enumerate() {
        part.edge_to_id(
            context.ids,
            read_id(element),
            EdgeKind::Element,
            index as u32,
        );
    }
    part.end_node();
}

/// Where the GC roots go: edges from the super-root, and the stack frames of threads.
struct RootPlan {
    /// Super-root edges: target node and name, one per target.
    root_edges: Vec<(u32, StringId)>,
    /// Extra edges of thread nodes, to their frames and their frameless locals.
    thread_edges: FxHashMap<u32, Vec<(u32, StringId)>>,
    /// Frame nodes, after the objects: label and locals (node, edge name).
    frames: Vec<(StringId, Vec<(u32, StringId)>)>,
    /// Thread objects (roots) by node.
    thread_nodes: Vec<u32>,
    /// Roots whose object is not in the dump.
    missing: u64,
    type_root: StringId,
    type_frame: StringId,
}

impl RootPlan {
    fn new(
        roots: &[Root],
        top: &TopLevel<'_>,
        ids: &IdIndex<'_>,
        classes: &[ClassInfo],
        class_by_id: &FxHashMap<u64, u32>,
        strings: &mut StringTable,
        n_objects: usize,
    ) -> RootPlan {
        // Threads by serial: node and stack trace.
        let mut threads: FxHashMap<u32, (u32, Option<u32>)> = FxHashMap::default();
        for root in roots {
            if root.kind == RootKind::ThreadObject
                && let (Some(serial), Some(node)) = (root.thread_serial, ids.get(root.object))
            {
                threads.entry(serial).or_insert((node, root.trace_serial));
            }
        }
        let mut plan = RootPlan {
            root_edges: Vec::new(),
            thread_edges: FxHashMap::default(),
            frames: Vec::new(),
            thread_nodes: threads.values().map(|&(node, _)| node).collect(),
            missing: 0,
            type_root: strings.intern("(GC roots)"),
            type_frame: strings.intern("frame"),
        };
        let mut labels: FxHashMap<RootKind, StringId> = FxHashMap::default();
        let mut label = |kind: RootKind, strings: &mut StringTable| {
            *labels
                .entry(kind)
                .or_insert_with(|| strings.intern(kind.label()))
        };
        let mut frame_of: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut seen_root: FxHashMap<u32, ()> = FxHashMap::default();
        let mut seen_thread_edge: FxHashMap<(u32, u32), ()> = FxHashMap::default();
        let local = strings.intern("<local>");
        let first_frame_node = n_objects as u32;
        for root in roots {
            let Some(node) = ids.get(root.object) else {
                plan.missing += 1;
                continue;
            };
            let thread = root
                .thread_serial
                .filter(|_| root.kind != RootKind::ThreadObject)
                .and_then(|serial| threads.get(&serial).map(|&thread| (serial, thread)));
            match (thread, root.frame_depth) {
                (Some((serial, (thread_node, trace))), Some(depth)) => {
                    let frame = *frame_of.entry((serial, depth)).or_insert_with(|| {
                        let text = frame_label(top, classes, class_by_id, trace, depth, strings);
                        let frame_name = strings.push(&text);
                        plan.frames.push((frame_name, Vec::new()));
                        let frame = (plan.frames.len() - 1) as u32;
                        let edge_name = strings.intern(&format!("<frame {depth}>"));
                        plan.thread_edges
                            .entry(thread_node)
                            .or_default()
                            .push((first_frame_node + frame, edge_name));
                        frame
                    });
                    let name = if root.kind == RootKind::JavaFrame {
                        local
                    } else {
                        label(root.kind, strings)
                    };
                    plan.frames[frame as usize].1.push((node, name));
                }
                (Some((_, (thread_node, _))), None) => {
                    if seen_thread_edge.insert((thread_node, node), ()).is_none() {
                        let name = label(root.kind, strings);
                        plan.thread_edges
                            .entry(thread_node)
                            .or_default()
                            .push((node, name));
                    }
                }
                (None, _) => {
                    if seen_root.insert(node, ()).is_none() {
                        let name = label(root.kind, strings);
                        plan.root_edges.push((node, name));
                    }
                }
            }
        }
        for edges in plan.thread_edges.values_mut() {
            // Frames by depth (their names sort so), then direct locals; stable for equal names.
            edges.sort_by_key(|&(to, _)| to < first_frame_node);
        }
        plan
    }
}

/// `com.example.Worker.run(Worker.java:42)`: frame `depth` of stack trace `trace`.
fn frame_label(
    top: &TopLevel<'_>,
    classes: &[ClassInfo],
    class_by_id: &FxHashMap<u64, u32>,
    trace: Option<u32>,
    depth: u32,
    strings: &StringTable,
) -> String {
    let frame = trace
        .and_then(|serial| top.traces.get(&serial))
        .and_then(|trace| trace.frames.get(depth as usize))
        .and_then(|frame_id| top.frames.get(frame_id));
    let Some(frame) = frame else {
        return format!("frame {depth} (no stack trace in the dump)");
    };
    let class = top
        .class_by_serial
        .get(&frame.class_serial)
        .and_then(|class_id| class_by_id.get(class_id))
        .map_or_else(
            || "<unknown class>".to_owned(),
            |&index| strings.get(classes[index as usize].name).to_owned(),
        );
    let method = classes::utf8_text(top, frame.method).unwrap_or_else(|| "<unknown>".to_owned());
    let location = match frame.line {
        line if line > 0 => format!(
            "{}:{line}",
            classes::utf8_text(top, frame.source).unwrap_or_else(|| "Unknown Source".to_owned())
        ),
        -2 => "Compiled Code".to_owned(),
        -3 => "Native Method".to_owned(),
        _ => classes::utf8_text(top, frame.source).unwrap_or_else(|| "Unknown Source".to_owned()),
    };
    format!("{class}.{method}({location})")
}

/// Each part's copy of every column, in part order.
#[derive(Default)]
struct PartColumns {
    node_kind: Vec<NodeKinds>,
    node_type: Vec<NodeTypes>,
    shallow: Vec<PackedU64>,
    edge_end: Vec<EdgeOffsets>,
    edge_to: Vec<Vec<u32>>,
    edge_kind: Vec<EdgeKinds>,
    edge_name: ParkedNames,
    names: Vec<Vec<(u32, StringId)>>,
    array_lengths: Vec<Vec<(u32, u32)>>,
    strings: Vec<Vec<StringRef>>,
    string_slices: Vec<Vec<(u32, u32, u32)>>,
    text_arrays: Vec<Vec<TextArray>>,
}

impl PartColumns {
    fn push(&mut self, part: Part) {
        self.node_kind.push(part.node_kind);
        self.node_type.push(part.node_type);
        self.shallow.push(part.shallow);
        self.edge_end.push(part.edge_end);
        self.edge_to.push(part.edge_to);
        self.edge_kind.push(part.edge_kind);
        self.edge_name.extend(part.parked_names);
        self.names.push(part.names);
        self.array_lengths.push(part.array_lengths);
        self.strings.push(part.strings);
        self.string_slices.push(part.string_slices);
        self.text_arrays.push(part.text_arrays);
    }
}

/// A column the parts' copies of which are joined end to end.
trait Joined: Default {
    fn len(&self) -> usize;
    fn reserve_exact(&mut self, additional: usize);
    fn append(&mut self, part: &Self);
}

macro_rules! joined {
    ($($column:ty),*) => {$(
        impl Joined for $column {
            fn len(&self) -> usize {
                <$column>::len(self)
            }
            fn reserve_exact(&mut self, additional: usize) {
                <$column>::reserve_exact(self, additional);
            }
            fn append(&mut self, part: &Self) {
                self.extend_from(part);
            }
        }
    )*};
}
joined!(NodeKinds, NodeTypes, PackedU64, EdgeKinds);

impl Joined for Vec<u32> {
    fn len(&self) -> usize {
        <[u32]>::len(self)
    }
    fn reserve_exact(&mut self, additional: usize) {
        Vec::reserve_exact(self, additional);
    }
    fn append(&mut self, part: &Self) {
        self.extend_from_slice(part);
    }
}

/// The parts' copies of one column joined in order into a column of `total` entries: the first
/// part's copy becomes the column, and each later copy is dropped once appended.
fn join_column<C: Joined>(parts: Vec<C>, total: usize) -> C {
    let mut parts = parts.into_iter();
    let mut column = parts.next().unwrap_or_default();
    column.reserve_exact(total.saturating_sub(column.len()));
    for part in parts {
        column.append(&part);
    }
    column
}

/// Joins the parts, adds the frames and the super-root, and names strings and threads.
///
/// Each column is joined on a task of its own ([`join_column`]): the first part's copy becomes
/// the graph's and the others are appended in order, each dropped once copied, so that the
/// parts and the graph are not all held at once.
fn assemble(
    bytes: &[u8],
    handback: Handback<'_>,
    parts: Vec<Part>,
    plan: &RootPlan,
    object_ids: PackedU64,
    strings: &mut StringTable,
    meta: &mut GraphMeta,
) -> (HeapGraphParts, Vec<(u32, u32)>) {
    let n_objects = object_ids.len();
    let n_frames = plan.frames.len();
    let n_nodes = n_objects + n_frames + 1;
    let n_edges = plan.root_edges.len()
        + parts.iter().map(|part| part.edge_to.len()).sum::<usize>()
        + plan
            .frames
            .iter()
            .map(|(_, locals)| locals.len())
            .sum::<usize>();
    let mut graph = HeapGraphParts {
        node_object_id: object_ids,
        root: (n_nodes - 1) as u32,
        ..HeapGraphParts::default()
    };
    let (mut dangling, mut unknown_class, mut layout_mismatch) = (0, 0, 0);
    let mut columns = PartColumns::default();
    for part in parts {
        dangling += part.dangling;
        unknown_class += part.unknown_class;
        layout_mismatch += part.layout_mismatch;
        columns.push(part);
    }
    let mut names: Vec<(u32, StringId)> =
        Vec::with_capacity(columns.names.iter().map(Vec::len).sum());
    let mut array_lengths: Vec<(u32, u32)> =
        Vec::with_capacity(columns.array_lengths.iter().map(Vec::len).sum());
    let mut string_refs: Vec<StringRef> =
        Vec::with_capacity(columns.strings.iter().map(Vec::len).sum());
    let mut string_slices: Vec<(u32, u32, u32)> =
        Vec::with_capacity(columns.string_slices.iter().map(Vec::len).sum());
    let mut text_arrays: Vec<TextArray> =
        Vec::with_capacity(columns.text_arrays.iter().map(Vec::len).sum());
    let HeapGraphParts {
        node_kind,
        node_type,
        node_shallow_size,
        first_edge,
        edge_to,
        edge_kind,
        ..
    } = &mut graph;
    let PartColumns {
        node_kind: part_kinds,
        node_type: part_types,
        shallow: part_shallow,
        edge_end: part_ends,
        edge_to: part_to,
        edge_kind: part_edge_kinds,
        edge_name: part_edge_names,
        names: part_names,
        array_lengths: part_array_lengths,
        strings: part_strings,
        string_slices: part_string_slices,
        text_arrays: part_text_arrays,
    } = columns;
    let node_bases: Vec<u32> = part_kinds
        .iter()
        .scan(0u32, |base, kinds| {
            let this = *base;
            *base += kinds.len() as u32;
            Some(this)
        })
        .collect();
    let edge_bases: Vec<u64> = part_to
        .iter()
        .scan(0u64, |base, to| {
            let this = *base;
            *base += to.len() as u64;
            Some(this)
        })
        .collect();
    rayon::scope(|scope| {
        scope.spawn(|_| {
            *node_kind = join_column(part_kinds, n_nodes);
        });
        scope.spawn(|_| {
            *node_type = join_column(part_types, n_nodes);
        });
        scope.spawn(|_| {
            *node_shallow_size = join_column(part_shallow, n_nodes);
        });
        scope.spawn(|_| {
            *first_edge = EdgeOffsets::with_capacity(n_nodes + 1);
            first_edge.push(0);
            for (ends, base) in part_ends.into_iter().zip(&edge_bases) {
                for end in ends.iter() {
                    first_edge.push(base + end);
                }
            }
        });
        scope.spawn(|_| {
            *edge_to = join_column(part_to, n_edges);
        });
        scope.spawn(|_| {
            *edge_kind = join_column(part_edge_kinds, n_edges);
        });
        for (part, &node_base) in part_names.into_iter().zip(&node_bases) {
            names.extend(
                part.into_iter()
                    .map(|(node, name)| (node_base + node, name)),
            );
        }
        for (part, &node_base) in part_array_lengths.into_iter().zip(&node_bases) {
            array_lengths.extend(
                part.into_iter()
                    .map(|(node, length)| (node_base + node, length)),
            );
        }
        for part in part_strings {
            string_refs.extend_from_slice(&part);
        }
        for part in part_string_slices {
            string_slices.extend_from_slice(&part);
        }
        for part in part_text_arrays {
            text_arrays.extend_from_slice(&part);
        }
    });
    let push_node =
        |graph: &mut HeapGraphParts, names: &mut Vec<(u32, StringId)>, kind, type_name, name| {
            names.push((graph.node_kind.len() as u32, name));
            graph.node_object_id.push(0);
            graph.node_kind.push(kind);
            graph.node_type.push(type_name);
            graph.node_shallow_size.push(0);
        };
    // The frames' and the root's edges come after the objects', whose names are parked: theirs
    // join them at the end.
    let mut last_names: Vec<u32> = Vec::new();
    let mut push_edges = |graph: &mut HeapGraphParts, edges: &[(u32, StringId)]| {
        for &(to, name) in edges {
            graph.edge_to.push(to);
            graph.edge_kind.push(EdgeKind::Internal);
            last_names.push(name.to_raw());
        }
        graph.first_edge.push(graph.edge_to.len() as u64);
    };
    for (label, locals) in &plan.frames {
        push_node(&mut graph, &mut names, KIND_FRAME, plan.type_frame, *label);
        push_edges(&mut graph, locals);
    }
    push_node(
        &mut graph,
        &mut names,
        KIND_ROOT,
        plan.type_root,
        plan.type_root,
    );
    push_edges(&mut graph, &plan.root_edges);
    timed("hprof: strings named", || {
        name_strings(
            &mut names,
            bytes,
            handback,
            (string_refs, &string_slices),
            text_arrays,
            strings,
        )
    });
    // Gone before the labels' column is sorted and built, which holds its pairs twice.
    drop(string_slices);
    let thread_names = thread_names(&graph, &part_edge_names, plan, strings, &names);
    // Last, they win over any label the threads had, as a later pair does.
    names.extend(thread_names);
    graph.node_name = NodeNames::from_pairs(n_nodes, names);
    graph.edge_name = timed("hprof: edge names unparked", || {
        let mut edge_names = part_edge_names.unpark(n_edges);
        edge_names.extend(last_names);
        edge_names.settle();
        edge_names
    });
    // The parked names' blocks, a few hundred KiB each, too small to be mappings of their
    // own (some 60 MiB on the 2.5 GB benchmark dump): handed back before the columns are
    // parked beside the graph, the parse's end.
    heapgraph_model::memory_freed();
    if dangling > 0 {
        meta.notes.push(format!(
            "{dangling} reference(s) point to objects the dump does not hold (VM-internal or archived ones); they are left out"
        ));
    }
    if plan.missing > 0 {
        meta.notes.push(format!(
            "{} GC root record(s) name objects the dump does not hold",
            plan.missing
        ));
    }
    if unknown_class > 0 {
        meta.notes.push(format!(
            "{unknown_class} object(s) have a class with no class dump: typed <unknown class>, without their fields"
        ));
    }
    if layout_mismatch > 0 {
        meta.notes.push(format!(
            "{layout_mismatch} instance(s) hold a different number of field bytes than their class declares"
        ));
    }
    (graph, array_lengths)
}

/// How the assembly hands the dump's pages back: whom it tells of each range it is done with,
/// and the most bytes of the dump a batch of strings reads across ([`BATCH_SPAN`]) before it
/// tells.
#[derive(Clone, Copy)]
struct Handback<'a> {
    release: &'a (dyn Fn(Range<usize>) + Sync),
    string_batch_span: usize,
}

/// Strings named per batch at most: decoded in parallel, then added to the table in order.
const STRINGS_PER_BATCH: usize = 1 << 16;

/// Bytes of the dump a batch of strings reads across at most (from its first value array to
/// its last): the pages read are handed back after each batch, and where strings are few and
/// far apart a batch of [`STRINGS_PER_BATCH`] would hold much of the dump resident (javac's
/// 105,807 strings in 474 MB: two batches, each across half of it). Nearly every page of the
/// span is read where strings are that sparse (the kernel maps the pages around each one
/// read): at 32 MiB, javac's parse peaked 13 MiB higher.
const BATCH_SPAN: usize = 8 << 20;

/// How many times the naming of strings hands back the strings it named and the value arrays
/// behind them, each a move of what is left to the front: the table's text grows as they
/// shrink, where held to the end they met it whole (the 2.5 GB benchmark dump's 4.8M strings
/// and 6.4M arrays, 135 MiB, beside its text, 148).
const RELEASES: usize = 8;

/// Strings a task decodes into one buffer.
const STRINGS_PER_TASK: usize = 1 << 10;

/// One task's decoded strings: their texts end to end, and each string's node and end.
#[derive(Default)]
struct Decoded {
    text: String,
    ends: Vec<(u32, usize)>,
    /// Where the last value array read starts in the dump.
    read_to: usize,
}

/// Names each `java.lang.String` by its value (up to [`STRING_NAME_CHARS`] characters).
///
/// The strings go in the order of their value arrays, which is file order, so the dump's pages
/// are read once, front to back, and handed back (`handback`) behind the reading, after each
/// batch of strings whose arrays lie within its span of the batch's first.
fn name_strings(
    names: &mut Vec<(u32, StringId)>,
    bytes: &[u8],
    handback: Handback<'_>,
    (mut string_refs, string_slices): (Vec<StringRef>, &[(u32, u32, u32)]),
    mut text_arrays: Vec<TextArray>,
    strings: &mut StringTable,
) {
    string_refs.par_sort_unstable_by_key(|string| string.array());
    let release_every = string_refs.len() / RELEASES + 1;
    let mut released_to = 0;
    let (mut start, mut named_since_release) = (0, 0);
    while start < string_refs.len() {
        if named_since_release >= release_every {
            // The strings named go, and the arrays before the next one's: what they hold
            // moves into the table as it grows.
            let next_array = string_refs[start].array();
            let arrays_behind = text_arrays.partition_point(|array| array.node() < next_array);
            text_arrays.drain(..arrays_behind);
            text_arrays.shrink_to_fit();
            string_refs.drain(..start);
            string_refs.shrink_to_fit();
            (start, named_since_release) = (0, 0);
        }
        let (n, decoded) = decode_batch(
            bytes,
            handback.string_batch_span,
            &string_refs[start..],
            string_slices,
            &text_arrays,
        );
        start += n;
        named_since_release += n;
        let mut read_to = released_to;
        for task in &decoded {
            let mut from = 0;
            for &(node, end) in &task.ends {
                names.push((node, strings.push(&task.text[from..end])));
                from = end;
            }
            read_to = read_to.max(task.read_to);
        }
        (handback.release)(released_to..read_to);
        released_to = read_to;
    }
}

/// Decodes the strings of `rest` whose value arrays lie within `span` bytes of the first's:
/// how many strings it took (one at least), and their text by task.
fn decode_batch(
    bytes: &[u8],
    span: usize,
    rest: &[StringRef],
    string_slices: &[(u32, u32, u32)],
    text_arrays: &[TextArray],
) -> (usize, Vec<Decoded>) {
    // Where each string's value array lies in the dump (arrays are sorted by node, and node
    // order is file order), `None` for a string whose value is no array of text.
    let data_of = |string: &StringRef| {
        let at = text_arrays.partition_point(|array| array.node() < string.array());
        text_arrays
            .get(at)
            .filter(|array| array.node() == string.array())
            .map(|array| array.data())
    };
    let slice_of = |string: StringRef| {
        string.sliced().then(|| {
            let at = string_slices.partition_point(|slice| slice.0 < string.node());
            let (_, offset, count) = string_slices[at];
            (offset, count)
        })
    };
    let most = &rest[..rest.len().min(STRINGS_PER_BATCH)];
    let first = most.iter().find_map(data_of).unwrap_or(0);
    // The first string is always taken, so that each batch moves on.
    let n = 1 + most[1..].partition_point(|string| {
        data_of(string).is_none_or(|data| data.saturating_sub(first) <= span)
    });
    let batch = &rest[..n];
    // Arrays come in node order within each part, and parts in order: sorted by node, as
    // the strings now are by array, so each task finds its first array and walks on.
    let decoded: Vec<Decoded> = batch
        .par_chunks(STRINGS_PER_TASK)
        .map(|task| {
            let mut out = Decoded::default();
            let mut at = task.first().map_or(0, |first| {
                text_arrays.partition_point(|array| array.node() < first.array())
            });
            for &string in task {
                while at < text_arrays.len() && text_arrays[at].node() < string.array() {
                    at += 1;
                }
                let Some(&array) = text_arrays.get(at) else {
                    break;
                };
                if array.node() != string.array() {
                    continue;
                }
                let (data, length, element) = (array.data(), array.length, array.element());
                // A string that views part of a shared `char[]` is its slice, kept inside
                // the array however its fields disagree with it.
                let (start, length) = match slice_of(string) {
                    Some((offset, count)) if element == basic::CHAR => {
                        let offset = offset.min(length);
                        (data + 2 * offset as usize, count.min(length - offset))
                    }
                    _ => (data, length),
                };
                decode_string(bytes, start, length, element, string.utf16(), &mut out.text);
                out.ends.push((string.node(), out.text.len()));
                out.read_to = out.read_to.max(data);
            }
            out
        })
        .collect();
    (n, decoded)
}

/// Appends a string value to `text`, keeping its first [`STRING_NAME_CHARS`] characters:
/// Latin-1 (no `coder`, or `coder` 0) or, where `utf16` (`coder` 1), UTF-16 in the JVM's byte
/// order, little-endian on the platforms HotSpot runs on, for a `byte[]`; big-endian UTF-16
/// code units for a `char[]` (JDK 8 and before; HPROF writes every value big-endian). The
/// array's data was bounds-checked by the pass that found it.
fn decode_string(
    bytes: &[u8],
    data: usize,
    length: u32,
    element: u8,
    utf16: bool,
    text: &mut String,
) {
    let length = length as usize;
    let decode_utf16 = |text: &mut String, units: &[u8], unit: fn([u8; 2]) -> u16| {
        text.extend(
            char::decode_utf16(units.chunks_exact(2).map(|pair| unit([pair[0], pair[1]])))
                .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)),
        );
    };
    let n_chars = match (element, utf16) {
        (basic::BYTE, true) => {
            let n_units = length / 2;
            let kept = n_units.min(STRING_NAME_CHARS);
            decode_utf16(text, &bytes[data..data + 2 * kept], u16::from_le_bytes);
            n_units
        }
        (basic::BYTE, _) => {
            let kept = length.min(STRING_NAME_CHARS);
            let latin1 = &bytes[data..data + kept];
            // Most values are ASCII, which is already UTF-8: one check and one copy instead
            // of a char at a time.
            if latin1.is_ascii() {
                text.push_str(std::str::from_utf8(latin1).unwrap_or_default());
            } else {
                text.extend(latin1.iter().map(|&b| char::from(b)));
            }
            length
        }
        _ => {
            let kept = length.min(STRING_NAME_CHARS);
            decode_utf16(text, &bytes[data..data + 2 * kept], u16::from_be_bytes);
            length
        }
    };
    if n_chars > STRING_NAME_CHARS {
        use std::fmt::Write;
        let _ = write!(text, "… ({n_chars} chars)");
    }
}

/// The label of each thread object: the text of the string its `name` field holds, found among
/// the labels' `pairs` (so that the labels' column is built once, with the threads').
fn thread_names(
    graph: &HeapGraphParts,
    edge_names: &ParkedNames,
    plan: &RootPlan,
    strings: &StringTable,
    pairs: &[(u32, StringId)],
) -> Vec<(u32, StringId)> {
    let Some(name_field) = strings.find("name") else {
        return Vec::new();
    };
    // Each thread's name string, then one pass over the labels for their texts.
    let name_strings: Vec<(u32, u32)> = (plan.thread_nodes.iter())
        .filter_map(|&thread| {
            let mut fields = graph.first_edge.range(thread as usize);
            let field = fields.find(|&edge| {
                graph.edge_kind[edge] == EdgeKind::Property
                    && edge_names.get(edge) == name_field.to_raw()
            })?;
            Some((thread, graph.edge_to[field]))
        })
        .collect();
    if name_strings.is_empty() {
        return Vec::new();
    }
    let mut label_of: FxHashMap<u32, StringId> = (name_strings.iter())
        .map(|&(_, string)| (string, StringId::EMPTY))
        .collect();
    // A string labelled twice takes its last label, as the column would.
    for &(node, label) in pairs {
        if let Some(found) = label_of.get_mut(&node) {
            *found = label;
        }
    }
    (name_strings.into_iter())
        .map(|(thread, string)| (thread, label_of[&string]))
        .collect()
}

/// The note for a dump cut short.
fn cut_note(cut: &scan::Cut, file_len: usize) -> String {
    let what = match cut.tag {
        Some(scan::tag::HEAP_DUMP | scan::tag::HEAP_DUMP_SEGMENT) => "a heap dump segment",
        Some(scan::tag::UTF8) => "a name (UTF8) record",
        Some(_) => "a record",
        None => "a record header",
    };
    match cut.declared {
        Some(declared) => format!(
            "the dump ends at byte {file_len}, inside {what} that starts at byte {} and declares {declared} bytes of which {} arrived; objects after the last complete one are missing, and references to them are left out",
            cut.record_offset, cut.available
        ),
        None => format!(
            "the dump ends at byte {file_len}, inside {what} at byte {}; everything after it is missing",
            cut.record_offset
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Names parked in pieces, some with names beside (past 16 bits), read back one at a time
    /// across the pieces' ends, and joined, as they were.
    #[test]
    fn parked_names_read_across_pieces_as_they_were() {
        let names: Vec<u32> = (0..10_000u32)
            .map(|i| if i % 97 == 0 { 70_000 + i } else { i % 300 })
            .collect();
        let mut parked = ParkedNames::default();
        for chunk in names.chunks(1_234) {
            let piece = ParkedEdgeNames::park(EdgeNames::from(chunk.to_vec()));
            parked.extend(vec![(chunk.len(), piece)]);
        }
        assert_eq!(parked.pieces.len(), 9);
        for (edge, &name) in names.iter().enumerate() {
            assert_eq!(parked.get(edge), name, "{edge}");
        }
        assert_eq!(parked.unpark(names.len()).to_vec(), names);
    }

    /// Edge names parked in pieces of a thousand (a run's cut after each segment past it: a
    /// piece a segment here) join, and label the threads, as in pieces of 2Mi (one a run on
    /// this dump): on javac's dump in the fixtures.
    #[test]
    fn edge_names_parked_in_small_pieces_join_as_in_large_ones() {
        let bytes = super::super::fixture_dump("javac");
        let import = |names_per_piece| {
            let batches = Batches {
                names_per_piece,
                ..BATCHES
            };
            build(&bytes, &Options::default(), &|_| {}, batches).expect("javac's dump")
        };
        let (small, large) = (import(1000), import(NAMES_PER_PIECE));
        assert!(large.edge_count() > 100_000, "{}", large.edge_count());
        assert!(small.parts().edge_name == large.parts().edge_name);
        let mut threads_named = 0;
        for node in large.nodes() {
            assert_eq!(small.name(node), large.name(node), "{node:?}");
            threads_named += usize::from(
                large.type_name(node) == "java.lang.Thread" && !large.name(node).is_empty(),
            );
        }
        assert!(threads_named > 3, "{threads_named} threads named");
    }

    /// Strings named in batches that each read a short stretch of the dump (64 KiB here; 32 MiB
    /// in use, the whole of this one) name every object as one batch does, and each batch
    /// hands the pages it read back: on javac's dump in the fixtures (12 MB, a JVM's own).
    #[test]
    fn strings_named_in_short_batches_are_named_as_in_one() {
        let bytes = super::super::fixture_dump("javac");
        let import = |span: usize| {
            let released = Mutex::new(0usize);
            let batches = Batches {
                string_span: span,
                ..BATCHES
            };
            let graph = build(
                &bytes,
                &Options::default(),
                &|_| *released.lock().expect("not poisoned") += 1,
                batches,
            )
            .expect("javac's dump");
            (graph, released.into_inner().expect("not poisoned"))
        };
        let (whole, released_whole) = import(BATCH_SPAN);
        let (short, released_short) = import(64 << 10);
        assert!(
            released_short > released_whole + 50,
            "{released_short} ranges handed back in short batches, {released_whole} in one"
        );
        let mut strings = 0;
        for node in whole.nodes() {
            assert_eq!(short.name(node), whole.name(node), "{node:?}");
            strings += usize::from(whole.type_name(node) == "java.lang.String");
        }
        assert!(strings > 10_000, "{strings} strings");
        assert_eq!(short.strings().len(), whole.strings().len());
    }
}
