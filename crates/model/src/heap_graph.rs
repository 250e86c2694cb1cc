//! The heap graph: objects as columns, references as a CSR, one root for the analyses.

use crate::array_lengths::{ArrayLengths, CollectionFill};
use crate::columns::{
    EdgeKinds, EdgeNames, EdgeOffsets, NodeKinds, NodeNames, NodeTypes, PackedU64, ParkedEdgeNames,
    U64Column,
};
use crate::parked::Parked;
use crate::reverse::ReverseEdges;
use crate::strings::{StringId, StringTable};
use std::fmt;
use std::sync::OnceLock;

/// An object of a [`HeapGraph`]: a dense index `0..graph.node_count()`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The dense index of this node, to index per-node arrays.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The raw value, for compact per-node arrays of node ids.
    pub fn to_raw(self) -> u32 {
        self.0
    }
}

/// The kind of a reference. The set is V8's, and the other runtimes map onto it: a Java field
/// or a Python attribute is a `Property`, an array slot an `Element`, a weak referent `Weak`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum EdgeKind {
    /// A variable captured by a closure; named.
    Context = 0,
    /// An array or list slot; its name is an index.
    Element = 1,
    /// A named property, field or attribute.
    Property = 2,
    /// An engine-internal link (a map, a class pointer); named.
    Internal = 3,
    /// A numbered engine-internal link; its name is an index.
    Hidden = 4,
    /// A convenience link that skips intermediate objects (V8: root to globals).
    Shortcut = 5,
    /// A reference that does not keep its target alive.
    Weak = 6,
}

impl EdgeKind {
    /// All kinds, in discriminant order.
    pub const ALL: [EdgeKind; 7] = [
        EdgeKind::Context,
        EdgeKind::Element,
        EdgeKind::Property,
        EdgeKind::Internal,
        EdgeKind::Hidden,
        EdgeKind::Shortcut,
        EdgeKind::Weak,
    ];

    /// The kind with discriminant `raw`.
    pub fn from_u8(raw: u8) -> Option<EdgeKind> {
        EdgeKind::ALL.get(raw as usize).copied()
    }

    /// The V8 spelling of the kind (`snapshot.meta.edge_types`).
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Context => "context",
            EdgeKind::Element => "element",
            EdgeKind::Property => "property",
            EdgeKind::Internal => "internal",
            EdgeKind::Hidden => "hidden",
            EdgeKind::Shortcut => "shortcut",
            EdgeKind::Weak => "weak",
        }
    }

    /// The kind spelled `name` in V8's `edge_types`.
    pub fn from_name(name: &str) -> Option<EdgeKind> {
        EdgeKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Whether the edge's name is a number (an index) rather than a string.
    pub fn is_indexed(self) -> bool {
        matches!(self, EdgeKind::Element | EdgeKind::Hidden)
    }
}

/// The runtime a dump came from: it decides id spelling and which edges retain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Runtime {
    /// V8 (Node.js, Chrome, Electron, Deno).
    V8,
    /// A JVM (HPROF).
    Java,
    /// CPython (our dumper).
    Python,
}

impl Runtime {
    /// The lower-case name used in files and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::V8 => "v8",
            Runtime::Java => "java",
            Runtime::Python => "python",
        }
    }

    /// The runtime called `name` by [`Runtime::name`].
    pub fn from_name(name: &str) -> Option<Runtime> {
        [Runtime::V8, Runtime::Java, Runtime::Python]
            .into_iter()
            .find(|runtime| runtime.name() == name)
    }

    /// An object id as users of this runtime read it: `@123` for V8, `0x7f…` elsewhere.
    pub fn format_object_id(self, object_id: u64) -> String {
        match self {
            Runtime::V8 => format!("@{object_id}"),
            Runtime::Java | Runtime::Python => format!("{object_id:#x}"),
        }
    }
}

/// What is known about the dump as a whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphMeta {
    /// The runtime that wrote the dump.
    pub runtime: Runtime,
    /// The file format it was read from (`v8-heapsnapshot`, `hgd`, …).
    pub source_format: String,
    /// The runtime's version, where the dump states it.
    pub runtime_version: Option<String>,
    /// When the dump was taken, in milliseconds since the Unix epoch, where known.
    pub captured_at_ms: Option<u64>,
    /// The process id, where known.
    pub pid: Option<u32>,
    /// Notes about the dump: what was missing, what was repaired, how it was taken.
    pub notes: Vec<String>,
    /// The heap dumps of the file, where its format can hold several (HPROF: the hprof agent
    /// writes one per request into one file); empty for formats that hold one.
    pub dumps: Vec<FileDump>,
}

/// One heap dump of a file that can hold several.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDump {
    /// Its place in the file, 1-based.
    pub index: usize,
    /// Where its records start and end in the (decompressed) file.
    pub bytes: std::ops::Range<u64>,
    /// Objects it holds.
    pub objects: u64,
    /// Whether it ends as its format requires (or was cut short).
    pub complete: bool,
    /// Whether this graph is the one read.
    pub read: bool,
}

impl GraphMeta {
    /// Metadata with only the runtime and format known.
    pub fn new(runtime: Runtime, source_format: &str) -> Self {
        GraphMeta {
            runtime,
            source_format: source_format.to_owned(),
            runtime_version: None,
            captured_at_ms: None,
            pid: None,
            notes: Vec::new(),
            dumps: Vec::new(),
        }
    }
}

/// A node kind: the runtime's own category (V8's node type, `instance`, `class`, …).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeKindInfo {
    /// The runtime's name for the kind.
    pub name: String,
    /// Whether nodes of this kind are synthetic (roots and root groups, not real objects).
    pub synthetic: bool,
}

/// The columns of a heap graph, as an importer fills them; [`HeapGraph::from_parts`] checks them.
///
/// Edges of node `i` are `first_edge[i]..first_edge[i + 1]`. An edge's `edge_name` is a
/// [`StringId`] in `strings` unless its kind [`is_indexed`](EdgeKind::is_indexed), when it is
/// a plain number.
///
/// The 64-bit columns, the types, the labels and the edge names are compact columns
/// (`columns.rs`): 4 bytes per offset, about 2 per object id or size (a step from the first of
/// its block of 256), 2 per type or edge name, labels only for the nodes that have one, each
/// with an exact fallback for the values that do not fit (more than 2³² edges, a large object
/// among small ones, a jump in the addresses, more than 65,534 types, names past 16 bits).
#[derive(Clone, Debug, Default)]
pub struct HeapGraphParts {
    /// Runtime object id (V8 node id, HPROF address, Python `id()`), per node.
    pub node_object_id: PackedU64,
    /// Index into `node_kinds`, per node.
    pub node_kind: NodeKinds,
    /// Type name to group by, per node.
    pub node_type: NodeTypes,
    /// The object's own label, per node.
    pub node_name: NodeNames,
    /// Shallow size in bytes, per node.
    pub node_shallow_size: PackedU64,
    /// CSR offsets, `node_count + 1` long, starting at 0, monotone.
    pub first_edge: EdgeOffsets,
    /// Target node index, per edge.
    pub edge_to: Vec<u32>,
    /// Kind, per edge (two to a byte).
    pub edge_kind: EdgeKinds,
    /// Name (a [`StringId`]'s raw value) or index, per edge.
    pub edge_name: EdgeNames,
    /// The node kinds that `node_kind` indexes.
    pub node_kinds: Vec<NodeKindInfo>,
    /// The root of the analyses (V8's node 0, or a synthetic super-root).
    pub root: u32,
}

/// A column failed [`HeapGraph::from_parts`]'s checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidGraph(pub String);

impl fmt::Display for InvalidGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid heap graph: {}", self.0)
    }
}

impl std::error::Error for InvalidGraph {}

/// A heap graph: objects, the references between them, and a single root.
///
/// Invariants (checked by [`HeapGraph::from_parts`]):
/// - every per-node column has `node_count` entries, every per-edge column `edge_count`;
/// - `first_edge` has `node_count + 1` entries, starts at 0, is monotone and ends at `edge_count`;
/// - every `edge_to` is below `node_count`; every string id is in the table;
/// - every `node_kind` indexes `node_kinds`; `root` is a node; there are fewer than 2³² nodes.
pub struct HeapGraph {
    meta: GraphMeta,
    strings: StringTable,
    parts: HeapGraphParts,
    reverse: OnceLock<ReverseEdges>,
    /// Object array lengths, where the importer recorded them (empty otherwise).
    array_lengths: ArrayLengths,
    /// Collections' fill, where the dump recorded it (empty otherwise).
    fill: CollectionFill,
    /// The columns [`HeapGraph::park_columns`] compressed, until [`HeapGraph::unpark_columns`].
    parked: Option<ParkedColumns>,
}

/// The columns of a graph compressed in memory while a pass runs that reads none of them.
/// The ids, edge names and edge targets are in blocks small enough to be read a value at a
/// time ([`Parked::park_for_reads`]): they may stay parked after the pass
/// ([`HeapGraph::unpark_columns_but_ids_and_edges`]), and the chains' searches beside it
/// read the names of the root's edges.
struct ParkedColumns {
    object_ids: Parked<PackedU64>,
    labels: Option<Parked<NodeNames>>,
    edge_names: Option<ParkedEdgeNames>,
    /// Parked by [`HeapGraph::park_edge_targets`], once a pass has read them out of order
    /// for the last time.
    edge_targets: Option<Parked<Vec<u32>>>,
    types: Option<Parked<NodeTypes>>,
    shallow_sizes: Option<Parked<PackedU64>>,
}

/// The name of an edge: a string, or an index for array-like edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeName<'a> {
    /// A property, field, variable or internal name.
    Named(&'a str),
    /// An element or hidden-slot index.
    Index(u32),
}

impl fmt::Display for EdgeName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EdgeName::Named(name) => f.write_str(name),
            EdgeName::Index(index) => write!(f, "[{index}]"),
        }
    }
}

impl HeapGraph {
    /// Checks the columns' invariants and builds the graph.
    ///
    /// # Errors
    /// [`InvalidGraph`] naming the first column that breaks an invariant.
    pub fn from_parts(
        meta: GraphMeta,
        strings: StringTable,
        parts: HeapGraphParts,
    ) -> Result<HeapGraph, InvalidGraph> {
        crate::timed("graph checked", || Self::checked(meta, strings, parts))
    }

    /// [`HeapGraph::from_parts`], untimed.
    fn checked(
        meta: GraphMeta,
        strings: StringTable,
        parts: HeapGraphParts,
    ) -> Result<HeapGraph, InvalidGraph> {
        let n_nodes = parts.node_kind.len();
        let n_edges = parts.edge_to.len();
        let bad = |what: String| Err(InvalidGraph(what));
        if u32::try_from(n_nodes).is_err() {
            return bad(format!("{n_nodes} nodes is more than 2^32"));
        }
        for (name, len) in [
            ("node_object_id", parts.node_object_id.len()),
            ("node_type", parts.node_type.len()),
            ("node_name", parts.node_name.len()),
            ("node_shallow_size", parts.node_shallow_size.len()),
        ] {
            if len != n_nodes {
                return bad(format!("{name} has {len} entries for {n_nodes} nodes"));
            }
        }
        for (name, len) in [
            ("edge_kind", parts.edge_kind.len()),
            ("edge_name", parts.edge_name.len()),
        ] {
            if len != n_edges {
                return bad(format!("{name} has {len} entries for {n_edges} edges"));
            }
        }
        if parts.first_edge.len() != n_nodes + 1 {
            return bad(format!(
                "first_edge has {} entries for {n_nodes} nodes",
                parts.first_edge.len()
            ));
        }
        if let Some(pos) = parts.first_edge.first_decrease() {
            return bad(format!("first_edge decreases at node {}", pos - 1));
        }
        if parts.first_edge.get(0) != 0 || parts.first_edge.get(n_nodes) != n_edges as u64 {
            return bad("first_edge does not run from 0 to the edge count".to_owned());
        }
        let n_strings = strings.len();
        // Node and string counts fit in u32 (checked above; string ids are u32).
        let node_limit = n_nodes as u32;
        let targets_out_of_range = |edges: std::ops::Range<usize>| {
            crate::first_in_stretches(
                &parts.edge_to[edges.clone()],
                |to| to,
                node_limit,
                |_, to| to >= node_limit,
            )
            .map(|at| edges.start + at)
        };
        let string_limit = u32::try_from(n_strings).unwrap_or(u32::MAX);
        // The passes over every edge on two threads where there are many, each reading half
        // the targets, one the edges' names besides and the other the nodes' kinds: a std
        // thread, not a rayon task, since this runs on the V8 parser's own thread, which a
        // rayon worker may be waiting on (architecture.md, "Performance").
        let half = n_edges / 2;
        let low = || (targets_out_of_range(0..half), parts.node_kind.largest());
        let high = || {
            let targets = targets_out_of_range(half..n_edges);
            let names = parts
                .edge_name
                .first_at_or_past(string_limit, |edge| !parts.edge_kind[edge].is_indexed());
            (targets, names)
        };
        let ((low_targets, largest_kind), (high_targets, named_edge_out_of_range)) =
            if n_edges >= 1 << 20 {
                std::thread::scope(|scope| {
                    let low_thread = std::thread::Builder::new().spawn_scoped(scope, low).ok();
                    let high = high();
                    let low = match low_thread {
                        Some(thread) => thread
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                        None => low(),
                    };
                    (low, high)
                })
            } else {
                (low(), high())
            };
        if let Some(pos) = low_targets.or(high_targets) {
            return bad(format!(
                "edge {pos} points to node {} of {n_nodes}",
                parts.edge_to[pos]
            ));
        }
        let string_ok = |id: &StringId| id.index() < n_strings;
        let types_ok = match parts.node_type.distinct() {
            Some(distinct) => distinct.iter().all(string_ok),
            None => parts.node_type.iter().all(|id| string_ok(&id)),
        };
        // A node without a label has the empty string's id, the least, whatever the table.
        let names_ok = parts
            .node_name
            .largest_raw()
            .is_none_or(|raw| raw == StringId::EMPTY.to_raw() || (raw as usize) < n_strings);
        if !types_ok || !names_ok {
            return bad("a node names a string outside the table".to_owned());
        }
        if let Some(pos) = named_edge_out_of_range {
            return bad(format!("edge {pos} names a string outside the table"));
        }
        let n_kinds = parts.node_kinds.len();
        if largest_kind.is_some_and(|kind| usize::from(kind) >= n_kinds) {
            return bad(format!("a node has a kind outside the {n_kinds} kinds"));
        }
        if parts.root as usize >= n_nodes {
            return bad(format!("root {} is not one of {n_nodes} nodes", parts.root));
        }
        Ok(HeapGraph {
            meta,
            strings,
            parts,
            reverse: OnceLock::new(),
            parked: None,
            array_lengths: ArrayLengths::default(),
            fill: CollectionFill::default(),
        })
    }

    /// The dump's metadata, to change: importers and loaders add notes after the graph is
    /// built. Nothing in it bears on the graph's invariants.
    pub fn meta_mut(&mut self) -> &mut GraphMeta {
        &mut self.meta
    }

    /// The dump's metadata.
    #[inline]
    pub fn meta(&self) -> &GraphMeta {
        &self.meta
    }

    /// Adds a note (something missing or repaired) to the metadata.
    pub fn add_note(&mut self, note: String) {
        self.meta.notes.push(note);
    }

    /// Makes the given edges weak, so that analyses do not count them as retaining (a view of
    /// the heap that leaves some references out, such as Python's references to modules and
    /// classes). Edge indices out of range are ignored.
    pub fn weaken_edges(&mut self, edges: &[usize]) {
        for &edge in edges {
            if edge < self.parts.edge_kind.len() {
                self.parts.edge_kind.set(edge, EdgeKind::Weak);
            }
        }
    }

    /// The string table.
    #[inline]
    pub fn strings(&self) -> &StringTable {
        &self.strings
    }

    /// The columns, read-only, for algorithms that want plain slices and for serialisation.
    #[inline]
    pub fn parts(&self) -> &HeapGraphParts {
        &self.parts
    }

    /// The number of nodes, synthetic ones included.
    #[inline]
    pub fn node_count(&self) -> usize {
        self.parts.node_kind.len()
    }

    /// The number of edges.
    #[inline]
    pub fn edge_count(&self) -> usize {
        // The kinds are never parked, the targets may be.
        self.parts.edge_kind.len()
    }

    /// The root of the analyses.
    #[inline]
    pub fn root(&self) -> NodeId {
        NodeId(self.parts.root)
    }

    /// The node at dense index `index`, if there is one.
    #[inline]
    pub fn node(&self, index: usize) -> Option<NodeId> {
        (index < self.node_count()).then_some(NodeId(index as u32))
    }

    /// All nodes in index order.
    #[inline]
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = NodeId> + '_ {
        (0..self.node_count() as u32).map(NodeId)
    }

    /// The first node whose runtime object id is `object_id` (a linear scan; where the ids are
    /// parked, the scan decodes their blocks in turn: the verbs that find objects get the ids
    /// whole).
    pub fn find_object(&self, object_id: u64) -> Option<NodeId> {
        let position = match &self.parked {
            Some(parked) => {
                (0..self.node_count()).position(|node| parked.object_ids.get(node) == object_id)
            }
            None => self
                .parts
                .node_object_id
                .iter()
                .position(|id| id == object_id),
        };
        position.map(|pos| NodeId(pos as u32))
    }

    /// The runtime's id of `node`: read from its parked block where the ids are parked
    /// ([`HeapGraph::unpark_columns_but_ids_and_edges`]).
    #[inline]
    pub fn object_id(&self, node: NodeId) -> u64 {
        match &self.parked {
            Some(parked) => parked.object_ids.get(node.index()),
            None => self.parts.node_object_id.get(node.index()),
        }
    }

    /// The kind of `node`.
    #[inline]
    pub fn kind(&self, node: NodeId) -> &NodeKindInfo {
        &self.parts.node_kinds[self.parts.node_kind[node.index()] as usize]
    }

    /// Whether `node` is synthetic (a root or a root group) rather than a real object.
    #[inline]
    pub fn is_synthetic(&self, node: NodeId) -> bool {
        self.kind(node).synthetic
    }

    /// The synthetic nodes (the root, a dump's groups of roots), by index in order: a read of
    /// the kinds column, for passes over every node that skip the few synthetic ones without
    /// asking each node its kind.
    pub fn synthetic_nodes(&self) -> Vec<usize> {
        let kinds = &self.parts.node_kinds;
        self.parts.node_kind.nodes_where(|kind| {
            kinds
                .get(usize::from(kind))
                .is_some_and(|kind| kind.synthetic)
        })
    }

    /// The type name of `node`.
    #[inline]
    pub fn type_id(&self, node: NodeId) -> StringId {
        self.parts.node_type.get(node.index())
    }

    /// The type name of `node`, as text.
    #[inline]
    pub fn type_name(&self, node: NodeId) -> &str {
        self.strings.get(self.type_id(node))
    }

    /// The label of `node`, as text.
    #[inline]
    pub fn name(&self, node: NodeId) -> &str {
        self.strings.get(self.parts.node_name.get(node.index()))
    }

    /// The shallow size of `node` in bytes.
    #[inline]
    pub fn shallow_size(&self, node: NodeId) -> u64 {
        self.parts.node_shallow_size.get(node.index())
    }

    /// The edge indices of `node`'s references.
    #[inline]
    pub fn edge_range(&self, node: NodeId) -> std::ops::Range<usize> {
        self.parts.first_edge.range(node.index())
    }

    /// The target of edge `edge`: read from its parked block where the targets are parked
    /// ([`HeapGraph::park_edge_targets`]).
    #[inline]
    pub fn edge_target(&self, edge: usize) -> NodeId {
        match self
            .parked
            .as_ref()
            .and_then(|parked| parked.edge_targets.as_ref())
        {
            Some(targets) => NodeId(
                targets
                    .value::<u32>("values", edge)
                    .expect("an edge of the graph has a parked target"),
            ),
            None => NodeId(self.parts.edge_to[edge]),
        }
    }

    /// Gives back the edges' targets [`HeapGraph::park_edge_targets`] parked, whole,
    /// for a caller that reads many of them in no order; nothing where they are not parked.
    pub fn unpark_edge_targets(&mut self) {
        let Some(targets) = (self.parked.as_mut()).and_then(|parked| parked.edge_targets.take())
        else {
            return;
        };
        self.parts.edge_to = crate::timed("edge targets unparked", || targets.unpark());
    }

    /// Every edge's target by edge: the column, or, where the targets are parked
    /// ([`HeapGraph::park_edge_targets`]), a copy decoded from their blocks, for a search
    /// over the whole graph after a pass that parked them (none of `summary`'s, which read the
    /// targets of a few thousand edges).
    pub fn edge_targets(&self) -> std::borrow::Cow<'_, [u32]> {
        match self
            .parked
            .as_ref()
            .and_then(|parked| parked.edge_targets.as_ref())
        {
            Some(targets) => std::borrow::Cow::Owned(targets.unparked_copy()),
            None => std::borrow::Cow::Borrowed(&self.parts.edge_to),
        }
    }

    /// Whether the edges' targets are parked ([`HeapGraph::park_edge_targets`]): meanwhile
    /// the parts' `edge_to` is empty, and [`HeapGraph::edge_target`] reads them.
    pub fn edge_targets_parked(&self) -> bool {
        self.parked_edge_targets().is_some()
    }

    /// The edges' targets, by edge, where they are parked ([`HeapGraph::park_edge_targets`]),
    /// for a pass that reads them in runs ([`Parked::in_order`]).
    pub fn parked_edge_targets(&self) -> Option<&Parked<Vec<u32>>> {
        (self.parked.as_ref()).and_then(|parked| parked.edge_targets.as_ref())
    }

    /// The kind of edge `edge`.
    #[inline]
    pub fn edge_kind(&self, edge: usize) -> EdgeKind {
        self.parts.edge_kind[edge]
    }

    /// The name of edge `edge`.
    #[inline]
    pub fn edge_name(&self, edge: usize) -> EdgeName<'_> {
        self.edge_name_of(edge, self.raw_edge_name(edge))
    }

    /// The raw name of edge `edge` (a [`StringId`]'s raw value, or an index): read from its
    /// parked block where the names are parked.
    #[inline]
    pub fn raw_edge_name(&self, edge: usize) -> u32 {
        match self
            .parked
            .as_ref()
            .and_then(|parked| parked.edge_names.as_ref())
        {
            Some(names) => names.get(edge),
            None => self.parts.edge_name.get(edge),
        }
    }

    /// The name of edge `edge`, whose raw name is `raw`.
    #[inline]
    fn edge_name_of(&self, edge: usize, raw: u32) -> EdgeName<'_> {
        if self.parts.edge_kind[edge].is_indexed() {
            EdgeName::Index(raw)
        } else {
            EdgeName::Named(self.strings.get(StringId(raw)))
        }
    }

    /// The node that edge `edge` leaves (a binary search over the CSR offsets).
    #[inline]
    pub fn edge_source(&self, edge: usize) -> NodeId {
        let edge = edge as u64;
        let after = self.parts.first_edge.partition_point(|first| first <= edge);
        NodeId((after - 1) as u32)
    }

    /// Drops the resident pages of the graph's columns that are mapped from a file and were
    /// only read ([`crate::file_pages::forget_read_column_pages`]): an `.hgd` file's, once
    /// its reading checked every one of them. The values are unchanged; the pages a pass reads
    /// come back from the page cache.
    pub fn forget_read_pages(&self) {
        use crate::file_pages::{forget_read_column_pages, forget_read_pages};
        let parts = &self.parts;
        forget_read_pages(&parts.edge_to);
        forget_read_column_pages(&parts.edge_name);
        forget_read_column_pages(&parts.first_edge);
        forget_read_column_pages(&parts.edge_kind);
        forget_read_column_pages(&parts.node_object_id);
        forget_read_column_pages(&parts.node_shallow_size);
        forget_read_column_pages(&parts.node_type);
        forget_read_column_pages(&parts.node_name);
        forget_read_column_pages(&parts.node_kind);
        self.strings.forget_read_pages();
    }

    /// Moves the graph's columns into scratch files, where indexes are kept in files
    /// ([`crate::file_pages::page_out_column`]): a server that holds a dump for as long as it
    /// runs then has in memory only the pages its answers read. The values are unchanged. The
    /// pages each column's checks read on its way back are dropped as it goes, so that at most
    /// one column is in memory twice.
    pub fn page_out_columns(&mut self) {
        use crate::file_pages::{forget_resident, page_out_column};
        crate::timed("columns kept in scratch files", || {
            let parts = &mut self.parts;
            page_out_column(&mut parts.edge_to);
            forget_resident();
            page_out_column(&mut parts.edge_name);
            forget_resident();
            page_out_column(&mut parts.first_edge);
            page_out_column(&mut parts.edge_kind);
            forget_resident();
            page_out_column(&mut parts.node_object_id);
            page_out_column(&mut parts.node_shallow_size);
            forget_resident();
            page_out_column(&mut parts.node_type);
            page_out_column(&mut parts.node_name);
            page_out_column(&mut parts.node_kind);
            forget_resident();
            self.strings.page_out();
            self.array_lengths.page_out();
            forget_resident();
        });
    }

    /// Compresses in memory, until [`HeapGraph::unpark_columns`], the columns that the dominator
    /// pass and the searches beside it never read: the object ids, and, with `names`, the
    /// objects' labels, the edges' names (the chains' searches read those of the root's edges,
    /// DevTools' distances many more: a name or an id is decoded with its block), and the
    /// nodes' types and shallow sizes, which only the pass's last step reads (a copy of the
    /// sizes, [`HeapGraph::shallow_sizes_copy`]); a read of a parked label, type or size
    /// panics. With `names`, the strings' text is parked too, for good: a string read is
    /// decoded with the block of text around it ([`StringTable::park_text`]). On the 2.5 GB
    /// benchmark dump the ids, labels, edge names and text are 437 MiB (a Java dump's strings
    /// are mostly its `String` objects' text, which labels them) and take under 100 MiB
    /// parked, the types and sizes 137 MiB more, which take 15 (docs/performance.md). Parking
    /// parked columns again, or unparking none, does nothing.
    pub fn park_columns(&mut self, names: bool) {
        if self.parked.is_some() {
            return;
        }
        crate::timed("columns parked", || {
            let parts = &mut self.parts;
            let object_ids = Parked::park_for_reads(std::mem::take(&mut parts.node_object_id));
            let mut parked = ParkedColumns {
                object_ids,
                labels: None,
                edge_names: None,
                edge_targets: None,
                types: None,
                shallow_sizes: None,
            };
            if names {
                self.strings.park_text();
                parked.labels = Some(Parked::park(std::mem::take(&mut parts.node_name)));
                parked.edge_names =
                    Some(ParkedEdgeNames::park(std::mem::take(&mut parts.edge_name)));
                parked.types = Some(Parked::park(std::mem::take(&mut parts.node_type)));
                parked.shallow_sizes =
                    Some(Parked::park(std::mem::take(&mut parts.node_shallow_size)));
            }
            self.parked = Some(parked);
        });
    }

    /// Parks the object ids alone, in blocks read an id at a time, for good unless
    /// [`HeapGraph::unpark_columns`] gives them back: for a graph whose analysis is stored,
    /// which a summary reads a few hundred ids of (as
    /// [`HeapGraph::unpark_columns_but_ids_and_edges`] leaves them after a pass). Nothing
    /// where columns are parked already, or where the ids are a file's pages (a reopened
    /// `.hgd`'s), which the kernel drops once read ([`HeapGraph::forget_read_pages`]): parking
    /// would read them all and keep the blocks beside.
    pub fn park_ids(&mut self) {
        if self.parked.is_some() || crate::file_pages::in_file_pages(&self.parts.node_object_id) {
            return;
        }
        crate::timed("object ids parked", || {
            let ids = std::mem::take(&mut self.parts.node_object_id);
            self.parked = Some(ParkedColumns {
                object_ids: Parked::park_for_reads(ids),
                labels: None,
                edge_names: None,
                edge_targets: None,
                types: None,
                shallow_sizes: None,
            });
        });
    }

    /// Parks the strings' text for good ([`StringTable::park_text`]), as
    /// [`HeapGraph::park_columns`] does with its names.
    pub fn park_text(&mut self) {
        crate::timed("strings' text parked", || self.strings.park_text());
    }

    /// Makes parked text whole again, for a reader of every string: decoded at once (on every
    /// core), the parked blocks go, where reading each string would keep them beside.
    pub fn unpark_text(&mut self) {
        crate::timed("strings' text unparked", || self.strings.unpark_text());
    }

    /// Whether columns [`HeapGraph::park_columns`] compressed are not given back yet: where
    /// they are, memory is worth more than the little time parking takes, to the caller that
    /// parked them.
    pub fn columns_parked(&self) -> bool {
        self.parked.is_some()
    }

    /// Gives back the columns [`HeapGraph::park_columns`] compressed, as they were (the text
    /// stays parked); nothing where none are parked ([`HeapGraph::columns_parked`]).
    pub fn unpark_columns(&mut self) {
        self.unpark_columns_but_ids_and_edges();
        if let Some(parked) = self.parked.take() {
            crate::timed("columns unparked", || {
                let parts = &mut self.parts;
                parts.node_object_id = parked.object_ids.unpark();
                if let Some(names) = parked.edge_names {
                    parts.edge_name = names.unpark();
                }
                if let Some(targets) = parked.edge_targets {
                    parts.edge_to = targets.unpark();
                }
            });
        }
    }

    /// Gives back the labels, types and shallow sizes [`HeapGraph::park_columns`] compressed;
    /// the object ids, the edge names and, where parked, the edge targets stay so, read a
    /// block at a time by [`HeapGraph::object_id`], [`HeapGraph::edge_name`] and
    /// [`HeapGraph::edge_target`], for a caller that reads a few thousand of them (a
    /// summary): on the 2.5 GB benchmark dump, whose ids, edge names and edge targets take
    /// 69, 177 and 353 MiB as columns, what the run holds after the pass is some 480 MiB less
    /// (docs/performance.md). Until [`HeapGraph::unpark_columns`], the parts'
    /// `node_object_id`, `edge_name` and (where parked) `edge_to` are empty.
    pub fn unpark_columns_but_ids_and_edges(&mut self) {
        let Some(parked) = self.parked.as_mut() else {
            return;
        };
        let (labels, types, sizes) = (
            parked.labels.take(),
            parked.types.take(),
            parked.shallow_sizes.take(),
        );
        if labels.is_none() && types.is_none() && sizes.is_none() {
            return;
        }
        let parts = &mut self.parts;
        crate::timed("labels, types and sizes unparked", || {
            if let Some(labels) = labels {
                parts.node_name = labels.unpark();
            }
            if let Some(types) = types {
                parts.node_type = types.unpark();
            }
            if let Some(sizes) = sizes {
                parts.node_shallow_size = sizes.unpark();
            }
        });
    }

    /// Parks the edges' targets beside the columns [`HeapGraph::park_columns`] compressed, on
    /// every core, in blocks read a target at a time ([`HeapGraph::edge_target`]) or in runs
    /// ([`HeapGraph::parked_edge_targets`]), from the back, the column shrinking as its blocks
    /// are made ([`Parked::park_for_reads_from_the_back`]): for a pass past its last read of
    /// them out of order (the dominator pass once its search has numbered the nodes, whose
    /// predecessor lists are then filled from them in order), whose callers read a few
    /// thousand after it. They compress about three times (a Java dump's objects mostly refer
    /// to their neighbours and to a few classes): on the 2.5 GB benchmark dump, 353 MiB to
    /// some 110. Nothing where no columns are parked, where the targets are parked already, or
    /// where they are a file's pages (a reopened `.hgd`'s), which the kernel drops once read
    /// ([`HeapGraph::forget_read_pages`]).
    pub fn park_edge_targets(&mut self) {
        if let Some(targets) = self.targets_to_park() {
            let parked = crate::timed("edge targets parked", || {
                Parked::park_for_reads_from_the_back(targets, crate::Cores::Every)
            });
            if let Some(columns) = self.parked.as_mut() {
                columns.edge_targets = Some(parked);
            }
        }
    }

    /// [`HeapGraph::park_edge_targets`] on one core, beside `work`, which cannot read the graph
    /// (the dominator pass's semidominators, one core's, once its lists are filled): no time
    /// on the caller's path. With one thread (`RAYON_NUM_THREADS=1`) the parking comes first.
    pub fn park_edge_targets_beside<R>(&mut self, work: impl FnOnce() -> R) -> R {
        let Some(targets) = self.targets_to_park() else {
            return work();
        };
        let park = move || {
            crate::timed("edge targets parked", || {
                Parked::park_for_reads_from_the_back(targets, crate::Cores::One)
            })
        };
        let (parked, result) = crate::side_by_side(park, work);
        if let Some(columns) = self.parked.as_mut() {
            columns.edge_targets = Some(parked);
        }
        result
    }

    /// The edges' targets taken out of the parts, to be parked, where
    /// [`HeapGraph::park_edge_targets`] parks them.
    fn targets_to_park(&mut self) -> Option<Vec<u32>> {
        let parked = self.parked.as_ref()?;
        if parked.edge_targets.is_some() || crate::file_pages::in_file_pages(&self.parts.edge_to) {
            return None;
        }
        Some(std::mem::take(&mut self.parts.edge_to))
    }

    /// Whether the nodes' types and shallow sizes are parked ([`HeapGraph::park_columns`]):
    /// meanwhile they read as empty columns.
    pub fn types_and_sizes_parked(&self) -> bool {
        (self.parked.as_ref()).is_some_and(|parked| parked.types.is_some())
    }

    /// The shallow sizes, as a column of their own: decoded from their parked blocks where
    /// they are parked (the seed of the dominator pass's retained sizes, which starts after
    /// the pass's other columns are gone).
    pub fn shallow_sizes_copy(&self) -> U64Column {
        match self
            .parked
            .as_ref()
            .and_then(|parked| parked.shallow_sizes.as_ref())
        {
            Some(parked) => parked.unparked_copy().iter().collect(),
            None => self.parts.node_shallow_size.iter().collect(),
        }
    }

    /// The retainers of every node: the CSR transpose, built once on first use (in parallel).
    pub fn reverse(&self) -> &ReverseEdges {
        self.reverse
            .get_or_init(|| crate::timed("reverse edges", || ReverseEdges::build(&self.parts)))
    }

    /// Records the lengths of the graph's object arrays (`ArrayLengths`), which only some
    /// formats hold.
    ///
    /// # Errors
    /// [`InvalidGraph`] when a length names a node outside the graph.
    pub fn set_array_lengths(&mut self, lengths: ArrayLengths) -> Result<(), InvalidGraph> {
        if let Some(last) = lengths.last_node()
            && last as usize >= self.node_count()
        {
            return Err(InvalidGraph(format!(
                "an array length names node {last} of {}",
                self.node_count()
            )));
        }
        self.array_lengths = lengths;
        Ok(())
    }

    /// The object array lengths the importer recorded (empty where the format has none).
    #[inline]
    pub fn array_lengths(&self) -> &ArrayLengths {
        &self.array_lengths
    }

    /// Records the fill of the graph's collections ([`CollectionFill`]), which only some dumps
    /// hold.
    ///
    /// # Errors
    /// [`InvalidGraph`] when a row names a node outside the graph.
    pub fn set_fill(&mut self, fill: CollectionFill) -> Result<(), InvalidGraph> {
        if let Some(last) = fill.last_node()
            && last as usize >= self.node_count()
        {
            return Err(InvalidGraph(format!(
                "a collection's fill names node {last} of {}",
                self.node_count()
            )));
        }
        self.fill = fill;
        Ok(())
    }

    /// The collections' fill the importer recorded (empty where the dump has none).
    #[inline]
    pub fn fill(&self) -> &CollectionFill {
        &self.fill
    }

    /// Total shallow size of all nodes.
    pub fn total_shallow_size(&self) -> u64 {
        self.parts.node_shallow_size.sum()
    }
}

/// Prints the size, then the edges of small graphs (`from -kind-> to`), for test failures.
impl fmt::Debug for HeapGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MAX_EDGES_SHOWN: usize = 200;
        write!(
            f,
            "HeapGraph {{ nodes: {}, edges: {}, root: {}",
            self.node_count(),
            self.edge_count(),
            self.parts.root
        )?;
        if self.edge_count() <= MAX_EDGES_SHOWN {
            write!(
                f,
                ", sizes: {:?}, edges: [",
                self.parts.node_shallow_size.to_vec()
            )?;
            for node in self.nodes() {
                for edge in self.edge_range(node) {
                    let kind = self.edge_kind(edge).name();
                    write!(f, "{} -{kind}-> {}, ", node.0, self.parts.edge_to[edge])?;
                }
            }
            write!(f, "]")?;
        }
        write!(f, " }}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Runtime;

    /// A chain of `n` objects, each holding the next as `next`; its strings and columns.
    fn chain(n: usize) -> (StringTable, HeapGraphParts) {
        let mut strings = StringTable::new();
        let object = strings.intern("Object");
        let next = strings.intern("next");
        let parts = HeapGraphParts {
            node_object_id: (1..=n as u64).collect(),
            node_kind: std::iter::repeat_n(0u8, n).collect(),
            node_type: std::iter::repeat_n(object, n).collect(),
            node_name: vec![object; n].into(),
            node_shallow_size: std::iter::repeat_n(16u64, n).collect(),
            first_edge: (0..=n as u64).map(|node| node.min(n as u64 - 1)).collect(),
            edge_to: (1..n as u32).collect(),
            edge_kind: std::iter::repeat_n(EdgeKind::Property, n - 1).collect(),
            edge_name: EdgeNames::from(vec![next.to_raw(); n - 1]),
            node_kinds: vec![NodeKindInfo {
                name: "object".into(),
                synthetic: false,
            }],
            root: 0,
        };
        (strings, parts)
    }

    /// What `from_parts` says of a chain of `n` changed by `change`.
    fn refusal(n: usize, change: impl FnOnce(&mut HeapGraphParts)) -> Option<String> {
        let (strings, mut parts) = chain(n);
        change(&mut parts);
        let meta = GraphMeta::new(Runtime::Java, "test-chain");
        HeapGraph::from_parts(meta, strings, parts)
            .err()
            .map(|refused| refused.0)
    }

    /// Ids and edge names left parked after the other columns come back, or ids parked
    /// alone, read back one at a time, and the ids are found; the types and shallow sizes,
    /// parked through the pass, come back, and a copy of the sizes is had meanwhile; given
    /// back, each column is what it was.
    #[test]
    fn ids_and_names_left_parked_read_back_and_are_found() {
        let (strings, mut parts) = chain(70_000);
        let every_other = |edge: usize| edge % 2 == 1;
        parts.edge_kind = (0..70_000 - 1)
            .map(|edge| match every_other(edge) {
                true => EdgeKind::Element,
                false => EdgeKind::Property,
            })
            .collect();
        let next = parts.edge_name.get(0);
        let names: Vec<u32> = (0..70_000 - 1)
            .map(|edge| match every_other(edge) {
                true => edge as u32 * 7,
                false => next,
            })
            .collect();
        parts.edge_name = EdgeNames::from(names.clone());
        parts.node_shallow_size = (0..70_000u64).map(|node| 16 + 8 * (node % 5)).collect();
        let ids = parts.node_object_id.clone();
        let (sizes, types) = (parts.node_shallow_size.clone(), parts.node_type.clone());
        let meta = GraphMeta::new(Runtime::Java, "test-chain");
        let mut graph = HeapGraph::from_parts(meta, strings, parts).expect("a valid chain");
        graph.park_columns(true);
        assert!(graph.types_and_sizes_parked());
        assert!(graph.parts().node_shallow_size.is_empty() && graph.parts().node_type.is_empty());
        let copy = graph.shallow_sizes_copy();
        assert!((0..70_000).all(|node| copy.get(node) == sizes.get(node)));
        assert_eq!(graph.edge_name(69_997), EdgeName::Index(69_997 * 7));
        graph.unpark_columns_but_ids_and_edges();
        assert!(graph.columns_parked());
        assert!(!graph.types_and_sizes_parked());
        assert!(graph.parts().node_shallow_size == sizes && graph.parts().node_type == types);
        assert!(graph.parts().node_object_id.is_empty() && graph.parts().edge_name.is_empty());
        assert_eq!(graph.edge_name(4), EdgeName::Named("next"));
        assert_eq!(graph.edge_name(5), EdgeName::Index(35));
        for edge in (0..70_000 - 1).step_by(11) {
            assert_eq!(graph.raw_edge_name(edge), names[edge], "{edge}");
        }
        for node in (0..70_000).step_by(13).chain([69_999]) {
            assert_eq!(graph.object_id(NodeId(node)), ids.get(node as usize));
        }
        assert_eq!(graph.find_object(ids.get(65_537)), Some(NodeId(65_537)));
        assert_eq!(graph.find_object(0), None);
        graph.unpark_columns();
        assert!(!graph.columns_parked());
        assert!(graph.parts().node_object_id == ids);
        assert_eq!(graph.parts().edge_name.to_vec(), names);
        // Parked alone (a stored analysis's summary), likewise.
        graph.park_ids();
        assert!(graph.columns_parked());
        assert_eq!(graph.edge_name(4), EdgeName::Named("next"));
        assert_eq!(graph.object_id(NodeId(65_537)), ids.get(65_537));
        graph.unpark_columns();
        assert!(graph.parts().node_object_id == ids);
    }

    #[test]
    fn every_edge_and_label_is_checked_in_either_half() {
        // Past 2^20 edges each half of the targets is read on a thread of its own.
        for n in [10, (1 << 20) + 10] {
            let last = n - 2;
            assert_eq!(refusal(n, |_| {}), None);
            for edge in [1, last] {
                assert_eq!(
                    refusal(n, |parts| parts.edge_to[edge] = n as u32),
                    Some(format!("edge {edge} points to node {n} of {n}"))
                );
            }
            assert_eq!(
                refusal(n, |parts| {
                    parts.edge_to[last] = u32::MAX;
                    parts.edge_to[1] = n as u32;
                }),
                Some(format!("edge 1 points to node {n} of {n}")),
                "the first is named"
            );
            assert_eq!(
                refusal(n, |parts| parts.edge_name.set(last, 99)),
                Some(format!("edge {last} names a string outside the table"))
            );
            // An index is no string.
            assert_eq!(
                refusal(n, |parts| {
                    parts.edge_kind.set(last, EdgeKind::Element);
                    parts.edge_name.set(last, 99);
                }),
                None
            );
            assert_eq!(
                refusal(n, |parts| {
                    let mut names = vec![StringId::EMPTY; n];
                    names[n - 1] = StringId(99);
                    parts.node_name = names.into();
                }),
                Some("a node names a string outside the table".to_owned())
            );
            assert_eq!(
                refusal(n, |parts| parts.node_name = vec![StringId::EMPTY; n].into()),
                None
            );
            assert_eq!(
                refusal(n, |parts| {
                    parts.node_kind = (0..n).map(|node| u8::from(node == n - 1)).collect();
                }),
                Some("a node has a kind outside the 1 kinds".to_owned())
            );
        }
    }
}
