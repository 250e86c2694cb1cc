//! The model's columns as the arrays fill them (nodes, edges), and the final step
//! that checks them against each other and the header and builds the [`HeapGraph`].

use super::header::Layout;
use super::numbers::{WIDE, Wide};
use super::strings::{ID_OF_FIRST_STRING, raw_id, v8_index};
use super::{NumberSection, Sections, inconsistent, malformed};
use crate::ImportError;
use heapgraph_model::{
    EdgeKind, EdgeKinds, EdgeNames, EdgeOffsets, GraphMeta, HeapGraph, HeapGraphParts,
    NodeKindInfo, NodeKinds, NodeNames, NodeTypes, PackedU64, Runtime, StringId, StringTable,
};
use rustc_hash::FxHashMap;

/// Entries a column grows by at least, so that small inputs do not reallocate per record.
const MIN_GROWTH: usize = 1 << 10;

/// Records decoded into buffers on the stack at a time, before the columns take them.
const RECORDS_PER_STRETCH: usize = 256;

/// Records handed to the columns at a time when decoding a flat array.
const FLAT_RECORDS_PER_PUSH: usize = 1 << 14;

/// A column that grows: a vector, or one of the model's compact columns.
trait Growing {
    fn len(&self) -> usize;
    fn capacity(&self) -> usize;
    fn reserve_exact(&mut self, additional: usize);
    /// Has the memory of the room made for entries to come mapped now ([`populate`]).
    fn populate_room(&mut self) {}
}

impl<T> Growing for Vec<T> {
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn capacity(&self) -> usize {
        Vec::capacity(self)
    }
    fn reserve_exact(&mut self, additional: usize) {
        Vec::reserve_exact(self, additional);
    }
    fn populate_room(&mut self) {
        populate(self.spare_capacity_mut());
    }
}

/// Room of less than this is left to be faulted in as it is written.
const POPULATE_FROM_BYTES: usize = 1 << 20;

/// Asks the kernel for the pages of `room` (a column's capacity past its entries, to be
/// written entry by entry) in one call, ahead of the writes: a page fault per 4 KiB page took
/// a quarter of the parsing thread's time on `app-tsc`'s edges (the fault, its accounting, and
/// the other thread's TLB flushed as the column grew), and one call maps the same pages for
/// about two thirds of the cost. The room is what [`reserve_toward`] makes, up to the header's
/// count and never past twice what was read: a well-formed file's columns are mapped once,
/// whole, and a lying header's never past twice what the file holds.
fn populate<T>(room: &mut [std::mem::MaybeUninit<T>]) {
    #[cfg(target_os = "linux")]
    if size_of_val(room) >= POPULATE_FROM_BYTES {
        const PAGE: usize = 4096;
        let start = room.as_mut_ptr() as usize;
        let (first, end) = (
            start.next_multiple_of(PAGE),
            (start + size_of_val(room)) & !(PAGE - 1),
        );
        // SAFETY: the pages lie inside `room`, borrowed mutably here and holding no value yet.
        // MADV_POPULATE_WRITE maps them as a write would, writing nothing; a kernel before
        // 5.14 answers EINVAL, and the pages are then faulted in as they are written.
        unsafe {
            libc::madvise(
                first as *mut libc::c_void,
                end - first,
                libc::MADV_POPULATE_WRITE,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = room;
}

impl Growing for PackedU64 {
    fn len(&self) -> usize {
        PackedU64::len(self)
    }
    fn capacity(&self) -> usize {
        PackedU64::capacity(self)
    }
    fn reserve_exact(&mut self, additional: usize) {
        PackedU64::reserve_exact(self, additional);
    }
}

impl Growing for EdgeNames {
    fn len(&self) -> usize {
        EdgeNames::len(self)
    }
    fn capacity(&self) -> usize {
        EdgeNames::capacity(self)
    }
    fn reserve_exact(&mut self, additional: usize) {
        EdgeNames::reserve_exact(self, additional);
    }
}

impl Growing for EdgeOffsets {
    fn len(&self) -> usize {
        EdgeOffsets::len(self)
    }
    fn capacity(&self) -> usize {
        EdgeOffsets::capacity(self)
    }
    fn reserve_exact(&mut self, additional: usize) {
        EdgeOffsets::reserve_exact(self, additional);
    }
}

/// Makes room for `additional` more entries in `column`.
///
/// The column doubles, which the data already read justifies (it holds `len` entries), but
/// never grows past `claimed` (the header's count) while the data stays within it, so a
/// well-formed file ends with exactly-sized columns and a lying header sizes nothing.
fn reserve_toward(column: &mut impl Growing, additional: usize, claimed: u64) {
    let needed = column.len().saturating_add(additional);
    if needed <= column.capacity() {
        return;
    }
    let doubled = column
        .capacity()
        .saturating_mul(2)
        .max(needed)
        .max(MIN_GROWTH);
    let target = match usize::try_from(claimed) {
        Ok(claimed) if needed <= claimed => doubled.min(claimed),
        _ => doubled,
    };
    column.reserve_exact(target - column.len());
    column.populate_room();
}

/// Distinct type numbers that a note lists for nodes whose type `node_types` does not list;
/// nodes of further numbers are counted together.
const UNKNOWN_TYPES_LISTED: usize = 8;

/// Nodes whose type number `node_types` does not list.
#[derive(Debug, Default)]
struct UnknownTypes {
    /// (type number, nodes), in the order first seen; at most [`UNKNOWN_TYPES_LISTED`].
    listed: Vec<(u32, u64)>,
    /// Nodes of any unknown type.
    total: u64,
}

impl UnknownTypes {
    fn add(&mut self, type_number: u32) {
        self.total += 1;
        if let Some(entry) = self
            .listed
            .iter_mut()
            .find(|(number, _)| *number == type_number)
        {
            entry.1 += 1;
        } else if self.listed.len() < UNKNOWN_TYPES_LISTED {
            self.listed.push((type_number, 1));
        }
    }

    /// The note for these nodes, given the types the meta lists.
    fn note(&self, kind_names: &[String]) -> String {
        let listed: Vec<String> = self
            .listed
            .iter()
            .map(|(number, nodes)| format!("type {number} ({nodes} {})", plural(*nodes, "node")))
            .collect();
        let in_listed: u64 = self.listed.iter().map(|(_, nodes)| nodes).sum();
        let others = if in_listed < self.total {
            format!(", and {} of other types", self.total - in_listed)
        } else {
            String::new()
        };
        // V8 6.x (Node 8, Chrome of 2017) numbered symbols 12 but listed only the 12 types
        // before `symbol` (seen in a snapshot of Node 8.17.0, V8 6.2).
        let symbols = if kind_names.len() == 12
            && kind_names
                .last()
                .is_some_and(|name| name == "sliced string")
            && self.listed.iter().any(|(number, _)| *number == 12)
        {
            "; V8 of that age (Node 8) wrote its symbols as type 12"
        } else {
            ""
        };
        let (nodes, have) = if self.total == 1 {
            ("node", "has")
        } else {
            ("nodes", "have")
        };
        format!(
            "{} {nodes} {have} a type that `snapshot.meta.node_types` does not list (it lists {} \
             types): {}{others}; they are read as a kind of their own, `{UNKNOWN_KIND}`, \
             summarised as `({UNKNOWN_KIND})`, as DevTools and memlab name them{symbols}",
            self.total,
            kind_names.len(),
            listed.join(", "),
        )
    }
}

/// The kind of nodes whose type `node_types` does not list: what DevTools and memlab call
/// their type (`nodeTypes[n]` is `undefined` in JavaScript), so that the summary's class name
/// is theirs, `(undefined)`.
const UNKNOWN_KIND: &str = "undefined";

/// `word`, or its plural for a count other than one.
fn plural(count: u64, word: &str) -> String {
    if count == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

/// The node columns, filled record by record.
///
/// Invariants: all per-node vectors have the same length; `first_edge` has one more entry,
/// starts at 0 and is the running sum of the nodes' edge counts.
pub(super) struct NodeColumns {
    /// Index into the layout's node kinds; the kinds' count for a type they do not list.
    kind: Vec<u8>,
    /// Our raw string id of the name: V8's string index plus [`ID_OF_FIRST_STRING`],
    /// wrapping (`strings_named` holds the index past the last string, which `assemble`
    /// checks).
    name: Vec<u32>,
    /// V8 `id`.
    object_id: PackedU64,
    /// `self_size`.
    shallow_size: PackedU64,
    /// CSR offsets: prefix sums of `edge_count`.
    first_edge: EdgeOffsets,
    /// The header's node count, a cap on growth (not trusted for sizing).
    claimed: u64,
    /// The largest string index of a name, plus one (0 when there are no nodes).
    strings_named: u32,
    /// Nodes of types that the layout does not list.
    unknown_types: UnknownTypes,
}

impl NodeColumns {
    /// Empty columns for the nodes of `layout`.
    pub(super) fn new(layout: &Layout) -> Self {
        NodeColumns {
            kind: Vec::new(),
            name: Vec::new(),
            object_id: PackedU64::new(),
            shallow_size: PackedU64::new(),
            first_edge: EdgeOffsets::from(vec![0]),
            claimed: layout.node_count,
            strings_named: 0,
            unknown_types: UnknownTypes::default(),
        }
    }

    /// Decodes a flat `nodes` array read before the layout was known.
    fn from_flat(
        layout: &Layout,
        values: &[u32],
        wide: &mut Wide,
        offset: u64,
    ) -> Result<Self, ImportError> {
        let fields = layout.node_fields;
        if !values.len().is_multiple_of(fields) {
            return Err(malformed(
                offset,
                format!(
                    "`nodes` holds {} numbers, not a multiple of the {fields} node fields",
                    values.len()
                ),
            ));
        }
        let mut nodes = NodeColumns::new(layout);
        for records in values.chunks(fields.saturating_mul(FLAT_RECORDS_PER_PUSH)) {
            nodes.push(layout, records, wide, offset)?;
        }
        Ok(nodes)
    }

    /// Appends whole node records (`records.len()` is a multiple of the node field count),
    /// taking from `wide` the numbers that their [`WIDE`]s stand for.
    ///
    /// # Errors
    /// [`ImportError::Malformed`] for a type, name or edge count over `u32::MAX` (at the
    /// number), which no snapshot writes.
    pub(super) fn push(
        &mut self,
        layout: &Layout,
        records: &[u32],
        wide: &mut Wide,
        array_offset: u64,
    ) -> Result<(), ImportError> {
        let count = records.len() / layout.node_fields;
        reserve_toward(&mut self.kind, count, self.claimed);
        reserve_toward(&mut self.name, count, self.claimed);
        reserve_toward(&mut self.object_id, count, self.claimed);
        reserve_toward(&mut self.shallow_size, count, self.claimed);
        reserve_toward(&mut self.first_edge, count, self.claimed.saturating_add(1));
        let fields = layout.node_fields;
        // Ids and sizes of `u32::MAX` or more, by record in this batch.
        let (wide_ids, wide_sizes) = if wide.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            take_wide_nodes(layout, records, wide, array_offset)?
        };
        let n_kinds = layout.node_kinds.len();
        if records
            .chunks_exact(fields)
            .any(|record| record[layout.node_type] as usize >= n_kinds)
        {
            for record in records.chunks_exact(fields) {
                if record[layout.node_type] as usize >= n_kinds {
                    self.unknown_types.add(record[layout.node_type]);
                }
            }
        }
        // A pass over each stretch of the (cache-hot) batch reads each record's fields once and
        // writes to buffers on the stack, whose stretches the columns then take whole. A type
        // the layout does not list becomes kind `n_kinds`, which fits in a byte (the layout has
        // at most 255 kinds).
        let unknown_kind = n_kinds as u32;
        let mut strings_named = self.strings_named;
        let mut edge_total = self.first_edge.last().unwrap_or(0);
        let (mut wide_ids, mut wide_sizes) =
            (wide_ids.iter().peekable(), wide_sizes.iter().peekable());
        let mut kind_of = [0u8; RECORDS_PER_STRETCH];
        let mut name_of = [0u32; RECORDS_PER_STRETCH];
        let mut id_of = [0u64; RECORDS_PER_STRETCH];
        let mut size_of = [0u64; RECORDS_PER_STRETCH];
        let mut end_of = [0u64; RECORDS_PER_STRETCH];
        for (stretch_at, stretch) in records.chunks(fields * RECORDS_PER_STRETCH).enumerate() {
            let n = stretch.len() / fields;
            for (i, record) in stretch.chunks_exact(fields).enumerate() {
                let name = record[layout.node_name];
                kind_of[i] = record[layout.node_type].min(unknown_kind) as u8;
                name_of[i] = raw_id(name);
                strings_named = strings_named.max(name.saturating_add(1));
                id_of[i] = u64::from(record[layout.node_id]);
                size_of[i] = u64::from(record[layout.node_self_size]);
                edge_total = edge_total.saturating_add(u64::from(record[layout.node_edge_count]));
                end_of[i] = edge_total;
            }
            // The numbers that this stretch's `WIDE`s stand for.
            let stretch_end = stretch_at * RECORDS_PER_STRETCH + n;
            for (wide, values) in [(&mut wide_ids, &mut id_of), (&mut wide_sizes, &mut size_of)] {
                while let Some(&(at, value)) = wide.next_if(|&&(at, _)| at < stretch_end) {
                    values[at - stretch_at * RECORDS_PER_STRETCH] = value;
                }
            }
            self.kind.extend_from_slice(&kind_of[..n]);
            self.name.extend_from_slice(&name_of[..n]);
            self.object_id.extend(id_of[..n].iter().copied());
            self.shallow_size.extend(size_of[..n].iter().copied());
            for &end in &end_of[..n] {
                self.first_edge.push(end);
            }
        }
        self.strings_named = strings_named;
        Ok(())
    }
}

/// Values of `u32::MAX` or more of one field, as (record in the batch, value), in record order.
type WideValues = Vec<(usize, u64)>;

/// The ids and self sizes of `u32::MAX` or more in `records`, taken from `wide`.
///
/// # Errors
/// [`ImportError::Malformed`] for a type, name or edge count over `u32::MAX`, or (never while
/// `wide` keeps its invariant) a [`WIDE`] without a wide number, at the array's offset.
fn take_wide_nodes(
    layout: &Layout,
    records: &[u32],
    wide: &mut Wide,
    array_offset: u64,
) -> Result<(WideValues, WideValues), ImportError> {
    let (mut ids, mut sizes) = (Vec::new(), Vec::new());
    for (index, record) in records.chunks_exact(layout.node_fields).enumerate() {
        for (field, &number) in record.iter().enumerate() {
            if number != WIDE {
                continue;
            }
            let (offset, value) = take_one(wide, "nodes", array_offset)?;
            if field == layout.node_id {
                ids.push((index, value));
            } else if field == layout.node_self_size {
                sizes.push((index, value));
            } else if value > u64::from(u32::MAX) {
                let name = if field == layout.node_type {
                    "type"
                } else if field == layout.node_name {
                    "name"
                } else if field == layout.node_edge_count {
                    "edge_count"
                } else {
                    // A field heapgraph does not read (`trace_node_id`, `detachedness`).
                    continue;
                };
                return Err(too_wide(offset, value, "nodes", "a node's", name));
            }
        }
    }
    Ok((ids, sizes))
}

/// The next wide number of `wide`, which the records promise.
fn take_one(wide: &mut Wide, array: &str, array_offset: u64) -> Result<(u64, u64), ImportError> {
    wide.take().ok_or_else(|| {
        malformed(
            array_offset,
            format!("`{array}`: a number of 4294967295 or more was lost (a bug in heapgraph)"),
        )
    })
}

/// The error for `value`, at `offset` in `array`, in a field (`what`'s `field`) that holds
/// 32-bit values only.
fn too_wide(offset: u64, value: u64, array: &str, what: &str, field: &str) -> ImportError {
    malformed(
        offset,
        format!(
            "{value} in `{array}` is larger than {}, the largest value heapgraph reads in {what} `{field}`",
            u32::MAX
        ),
    )
}

impl NodeColumns {
    /// How many strings the names seen so far need at least.
    pub(super) fn strings_named(&self) -> u32 {
        self.strings_named
    }
}

/// The edge columns, filled record by record.
///
/// Invariants: all vectors have the same length; `to` holds node ordinals (the record's
/// `to_node` divided by the node field count).
pub(super) struct EdgeColumns {
    /// Target node ordinal.
    to: Vec<u32>,
    /// Kind.
    kind: Vec<EdgeKind>,
    /// Element index (indexed kinds), or our raw string id of the name: V8's string index
    /// plus [`ID_OF_FIRST_STRING`], wrapping (`strings_named` holds the index past the last
    /// string, which `assemble` checks). In the model's compact column as the edges are read,
    /// which spares the assembly a pass over every edge; kept narrow until `assemble` settles
    /// it, so that its form depends on all the names.
    name: EdgeNames,
    /// The header's edge count, a cap on growth (not trusted for sizing).
    claimed: u64,
    /// The largest string index of a named edge's name, plus one (0 when there is none).
    strings_named: u32,
    /// The largest target ordinal (0 when there is no edge).
    most_to: u32,
}

impl EdgeColumns {
    /// Empty columns for the edges of `layout`.
    pub(super) fn new(layout: &Layout) -> Self {
        EdgeColumns {
            to: Vec::new(),
            kind: Vec::new(),
            name: EdgeNames::kept_narrow(0),
            claimed: layout.edge_count,
            strings_named: 0,
            most_to: 0,
        }
    }

    /// Decodes a flat `edges` array read before the layout was known.
    fn from_flat(
        layout: &Layout,
        values: &[u32],
        wide: &mut Wide,
        offset: u64,
    ) -> Result<Self, ImportError> {
        let fields = layout.edge_fields;
        if !values.len().is_multiple_of(fields) {
            return Err(malformed(
                offset,
                format!(
                    "`edges` holds {} numbers, not a multiple of the {fields} edge fields",
                    values.len()
                ),
            ));
        }
        let mut edges = EdgeColumns::new(layout);
        for records in values.chunks(fields.saturating_mul(FLAT_RECORDS_PER_PUSH)) {
            edges.push(layout, records, wide, offset)?;
        }
        Ok(edges)
    }

    /// Appends whole edge records (`records.len()` is a multiple of the edge field count),
    /// taking from `wide` the numbers that their [`WIDE`]s stand for.
    ///
    /// # Errors
    /// [`ImportError::Malformed`], at the array's offset `array_offset`, for an edge type
    /// outside `edge_types` or a `to_node` that is not a multiple of the node field count; at
    /// the number, for a type, name or `to_node` over `u32::MAX`.
    pub(super) fn push(
        &mut self,
        layout: &Layout,
        records: &[u32],
        wide: &mut Wide,
        array_offset: u64,
    ) -> Result<(), ImportError> {
        if !wide.is_empty() {
            check_wide_edges(layout, records, wide, array_offset)?;
        }
        // A constant divisor turns the per-edge division into a multiplication.
        match layout.node_fields {
            7 => self.push_records::<7>(layout, records, array_offset),
            6 => self.push_records::<6>(layout, records, array_offset),
            5 => self.push_records::<5>(layout, records, array_offset),
            _ => self.push_records::<0>(layout, records, array_offset),
        }
    }

    /// [`Self::push`] for `NODE_FIELDS` node fields (0: the layout's count, whatever it is).
    fn push_records<const NODE_FIELDS: u32>(
        &mut self,
        layout: &Layout,
        records: &[u32],
        array_offset: u64,
    ) -> Result<(), ImportError> {
        let node_fields = if NODE_FIELDS == 0 {
            u32::try_from(layout.node_fields).unwrap_or(u32::MAX)
        } else {
            NODE_FIELDS
        };
        let count = records.len() / layout.edge_fields;
        reserve_toward(&mut self.to, count, self.claimed);
        reserve_toward(&mut self.kind, count, self.claimed);
        reserve_toward(&mut self.name, count, self.claimed);
        let fields = layout.edge_fields;
        let (type_at, name_at, to_at) = (layout.edge_type, layout.edge_name, layout.edge_to);
        let kinds = layout.edge_kinds.as_slice();
        let first = self.to.len();
        let (mut most_to, mut strings_named) = (self.most_to, self.strings_named);
        // A pass over each stretch of the (cache-hot) batch reads each record's fields once and
        // writes to buffers on the stack, whose stretches the columns then take whole.
        let mut bad = None;
        let mut to_of = [0u32; RECORDS_PER_STRETCH];
        let mut kind_of = [EdgeKind::Internal; RECORDS_PER_STRETCH];
        let mut name_of = [0u32; RECORDS_PER_STRETCH];
        for (stretch_at, stretch) in records.chunks(fields * RECORDS_PER_STRETCH).enumerate() {
            let n = stretch.len() / fields;
            let mut invalid = false;
            for (((record, to_slot), kind_slot), name_slot) in stretch
                .chunks_exact(fields)
                .zip(&mut to_of)
                .zip(&mut kind_of)
                .zip(&mut name_of)
            {
                let (type_number, name, to) = (record[type_at], record[name_at], record[to_at]);
                let kind = kinds.get(type_number as usize).copied();
                invalid |= kind.is_none() | (to % node_fields != 0);
                let kind = kind.unwrap_or(EdgeKind::Internal);
                let to = to / node_fields;
                most_to = most_to.max(to);
                let named = u32::from(!kind.is_indexed());
                // `raw_id(name)` for a named edge, without a branch.
                *name_slot = name.wrapping_add(named * ID_OF_FIRST_STRING);
                strings_named = strings_named.max(named * name.saturating_add(1));
                (*to_slot, *kind_slot) = (to, kind);
            }
            if invalid {
                bad = stretch.chunks_exact(fields).position(|record| {
                    record[type_at] as usize >= kinds.len() || record[to_at] % node_fields != 0
                });
                bad = bad.map(|bad| stretch_at * RECORDS_PER_STRETCH + bad);
                break;
            }
            self.to.extend_from_slice(&to_of[..n]);
            self.kind.extend_from_slice(&kind_of[..n]);
            self.name.extend(name_of[..n].iter().copied());
        }
        if let Some(bad) = bad {
            let record = &records[bad * fields..bad * fields + fields];
            let edge = first + bad;
            let type_number = record[type_at];
            let message = if type_number as usize >= kinds.len() {
                format!(
                    "edge {edge} has type {type_number}, but `snapshot.meta.edge_types` lists {} types",
                    kinds.len()
                )
            } else {
                format!(
                    "edge {edge} has `to_node` {}, which is not a multiple of the {node_fields} node fields",
                    record[to_at]
                )
            };
            return Err(malformed(array_offset, message));
        }
        (self.most_to, self.strings_named) = (most_to, strings_named);
        Ok(())
    }
}

/// Takes from `wide` the numbers that the [`WIDE`]s of `records` stand for: an edge holds
/// none over `u32::MAX` in the fields heapgraph reads (a graph has fewer than 2^32 nodes).
///
/// # Errors
/// [`ImportError::Malformed`] at the number for one that is over `u32::MAX`.
fn check_wide_edges(
    layout: &Layout,
    records: &[u32],
    wide: &mut Wide,
    array_offset: u64,
) -> Result<(), ImportError> {
    for record in records.chunks_exact(layout.edge_fields) {
        for (field, &number) in record.iter().enumerate() {
            if number != WIDE {
                continue;
            }
            let (offset, value) = take_one(wide, "edges", array_offset)?;
            if value <= u64::from(u32::MAX) {
                continue;
            }
            let name = if field == layout.edge_type {
                "type"
            } else if field == layout.edge_name {
                "name_or_index"
            } else if field == layout.edge_to {
                "to_node"
            } else {
                continue;
            };
            return Err(too_wide(offset, value, "edges", "an edge's", name));
        }
    }
    Ok(())
}

impl EdgeColumns {
    /// How many strings the names seen so far need at least.
    pub(super) fn strings_named(&self) -> u32 {
        self.strings_named
    }
}

/// A section the snapshot object ended without.
fn missing_section(key: &str, end_offset: u64) -> ImportError {
    malformed(
        end_offset,
        format!("the snapshot object ends without its `{key}` section"),
    )
}

/// Checks the sections against each other and the header and builds the graph.
///
/// `end_offset` is where the top-level object ended, for errors about missing sections.
///
/// # Errors
/// [`ImportError::Malformed`] for a missing section or an index out of range (at the offset
/// of the array holding it), [`ImportError::Inconsistent`] when counts disagree.
pub(super) fn assemble(sections: Sections, end_offset: u64) -> Result<HeapGraph, ImportError> {
    let layout = sections
        .layout
        .ok_or_else(|| missing_section("snapshot", end_offset))?;
    let (nodes_offset, nodes) = sections
        .nodes
        .ok_or_else(|| missing_section("nodes", end_offset))?;
    let nodes = match nodes {
        NumberSection::Columns(nodes) => nodes,
        NumberSection::Flat(values, mut wide) => {
            NodeColumns::from_flat(&layout, &values, &mut wide, nodes_offset)?
        }
    };
    let (edges_offset, edges) = sections
        .edges
        .ok_or_else(|| missing_section("edges", end_offset))?;
    let edges = match edges {
        NumberSection::Columns(edges) => edges,
        NumberSection::Flat(values, mut wide) => {
            EdgeColumns::from_flat(&layout, &values, &mut wide, edges_offset)?
        }
    };
    let strings = sections
        .strings
        .ok_or_else(|| missing_section("strings", end_offset))?;

    let n_nodes = nodes.kind.len();
    let n_edges = edges.to.len();
    if n_nodes as u64 != layout.node_count {
        return Err(inconsistent(format!(
            "`snapshot.node_count` is {} but `nodes` holds {n_nodes} nodes",
            layout.node_count
        )));
    }
    if n_edges as u64 != layout.edge_count {
        return Err(inconsistent(format!(
            "`snapshot.edge_count` is {} but `edges` holds {n_edges} edges",
            layout.edge_count
        )));
    }
    let edge_total = nodes.first_edge.last().unwrap_or(0);
    if edge_total != n_edges as u64 {
        return Err(inconsistent(format!(
            "the nodes' `edge_count` fields add up to {edge_total} but `edges` holds {n_edges} edges"
        )));
    }
    if n_nodes == 0 {
        return Err(inconsistent("the snapshot has no nodes, not even a root"));
    }
    let n_strings = strings.len();
    let mut table = strings.into_table();
    check_edges(&edges, n_nodes, n_strings, layout.node_fields, edges_offset)?;
    let mut kind_names = layout.node_kinds.clone();
    if nodes.unknown_types.total > 0 {
        kind_names.push(UNKNOWN_KIND.to_owned());
    }
    check_node_names(&nodes, n_strings, nodes_offset)?;
    let root = match layout.root_index {
        None => 0,
        Some(root_index) => {
            let fields = layout.node_fields as u64;
            let ordinal = root_index / fields;
            if root_index % fields != 0 || ordinal >= n_nodes as u64 {
                return Err(malformed(
                    layout.offset,
                    format!(
                        "`snapshot.root_index` {root_index} is not the offset of one of the {n_nodes} nodes"
                    ),
                ));
            }
            // Below `n_nodes`, which the model requires to fit in u32.
            u32::try_from(ordinal).unwrap_or(u32::MAX)
        }
    };

    let mut meta = GraphMeta::new(Runtime::V8, "v8-heapsnapshot");
    if nodes.unknown_types.total > 0 {
        meta.notes
            .push(nodes.unknown_types.note(&layout.node_kinds));
    }
    if !layout.unknown_edge_types.is_empty() {
        meta.notes.push(format!(
            "edges of types unknown to heapgraph were read as `internal`: {}",
            layout.unknown_edge_types.join(", ")
        ));
    }
    // The edges' kinds made compact on a thread of their own while this one finds the nodes'
    // types, names and kinds, never in rayon's pool: the parse runs on a thread that the
    // caller waits on, and the caller may be a rayon worker (two dumps loaded at once), so a
    // rayon job here could wait on workers that all wait on it.
    let EdgeColumns {
        to: edge_to,
        kind: edge_kinds,
        name: mut edge_name,
        ..
    } = edges;
    edge_name.settle();
    // Taken by whichever thread runs the job: the helper, or this one where none started.
    let edge_kinds = std::sync::Mutex::new(Some(edge_kinds));
    let compact_edge_kinds = || -> Option<EdgeKinds> {
        let edge_kinds = edge_kinds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        edge_kinds.map(EdgeKinds::from)
    };
    let (compacted, (node_type, node_name, node_kind)) = std::thread::scope(|scope| {
        let job = std::thread::Builder::new()
            .name("heapgraph-v8-compact".to_owned())
            .spawn_scoped(scope, compact_edge_kinds)
            .ok();
        let node_type = summary_types(&kind_names, &nodes.kind, &nodes.name, &mut table);
        let nodes = (
            node_type,
            NodeNames::from_raw_ids(nodes.name),
            NodeKinds::from(nodes.kind),
        );
        let compacted = job.and_then(|job| match job.join() {
            Ok(compacted) => compacted,
            Err(panic) => std::panic::resume_unwind(panic),
        });
        (compacted.or_else(compact_edge_kinds), nodes)
    });
    let edge_kind = compacted.unwrap_or_default();
    let node_kinds = kind_names
        .into_iter()
        .map(|name| NodeKindInfo {
            synthetic: name == "synthetic",
            name,
        })
        .collect();
    let parts = HeapGraphParts {
        node_object_id: nodes.object_id,
        node_kind,
        node_type,
        node_name,
        node_shallow_size: nodes.shallow_size,
        first_edge: nodes.first_edge,
        edge_to,
        edge_kind,
        edge_name,
        node_kinds,
        root,
    };
    HeapGraph::from_parts(meta, table, parts).map_err(|error| inconsistent(error.to_string()))
}

/// Checks that every edge points to a node (`n_nodes` of them) and that every named edge names
/// one of the `n_strings` strings, from what the parse noted; only where one does not, finds
/// the first for the error.
///
/// # Errors
/// [`ImportError::Malformed`], at the offset of the `edges` array, for the first edge that
/// points past the last node or names a string past the last.
fn check_edges(
    edges: &EdgeColumns,
    n_nodes: usize,
    n_strings: usize,
    node_fields: usize,
    edges_offset: u64,
) -> Result<(), ImportError> {
    if !edges.to.is_empty()
        && edges.most_to as usize >= n_nodes
        && let Some(edge) = edges.to.iter().position(|&to| to as usize >= n_nodes)
    {
        let to = edges.to[edge];
        return Err(malformed(
            edges_offset,
            format!(
                "edge {edge} points to node {to} (`to_node` {}), past the last of {n_nodes} nodes",
                u64::from(to).saturating_mul(node_fields as u64)
            ),
        ));
    }
    if edges.strings_named as usize > n_strings {
        let past_last = edges
            .kind
            .iter()
            .zip(edges.name.iter())
            .position(|(kind, name)| !kind.is_indexed() && v8_index(name) as usize >= n_strings);
        if let Some(edge) = past_last {
            let index = v8_index(edges.name.get(edge));
            return Err(malformed(
                edges_offset,
                string_out_of_range(&format!("edge {edge}"), index, n_strings),
            ));
        }
    }
    Ok(())
}

/// Checks that every node's name is one of the `n_strings` strings, from what the parse
/// noted; only where one is not, finds the first for the error.
///
/// # Errors
/// [`ImportError::Malformed`], at the offset of the `nodes` array, for the first name past
/// the last string.
fn check_node_names(
    nodes: &NodeColumns,
    n_strings: usize,
    nodes_offset: u64,
) -> Result<(), ImportError> {
    if nodes.strings_named as usize <= n_strings {
        return Ok(());
    }
    match nodes
        .name
        .iter()
        .position(|&name| v8_index(name) as usize >= n_strings)
    {
        Some(node) => Err(malformed(
            nodes_offset,
            string_out_of_range(
                &format!("node {node}"),
                v8_index(nodes.name[node]),
                n_strings,
            ),
        )),
        None => Ok(()),
    }
}

/// The message for `what` naming string `index` of `n_strings`.
fn string_out_of_range(what: &str, index: u32, n_strings: usize) -> String {
    format!("{what} is named by string {index}, but `strings` has {n_strings} entries")
}

/// DevTools' Summary class name of every node: the node's name for `object` and `native`
/// nodes, `(system)` for `hidden`, `(compiled code)` for `code`, `(T)` for any other type
/// `T`. Each class name is interned once, and only for kinds that occur.
///
/// The strings (pushed, not interned) are findable only once this returns: every type is made
/// findable, and each node's type is the one findable id of its text, so that a type found by
/// name and the per-type totals (keyed by id) see every node of that type. Where several names
/// with one text are types, the lowest id is that text's.
fn summary_types(
    kind_names: &[String],
    node_kind: &[u8],
    node_name: &[u32],
    table: &mut StringTable,
) -> NodeTypes {
    let mut used = [false; 256];
    for &kind in node_kind {
        used[usize::from(kind)] = true;
    }
    // Per kind: `None` when the type is the node's name.
    let kind_types: Vec<Option<StringId>> = kind_names
        .iter()
        .enumerate()
        .map(|(kind, name)| match name.as_str() {
            "object" | "native" => None,
            _ if !used.get(kind).copied().unwrap_or(false) => None,
            "hidden" => Some(table.intern("(system)")),
            "code" => Some(table.intern("(compiled code)")),
            other => Some(table.intern(&format!("({other})"))),
        })
        .collect();
    // A node's key: its name (a string index, checked against the table), or past the
    // strings its kind, where the kind is the type.
    let n_strings = table.len();
    let by_kind: [Option<u32>; 256] = std::array::from_fn(|kind| {
        kind_types
            .get(kind)
            .copied()
            .flatten()
            .map(|_| (n_strings + kind) as u32)
    });
    let key = |(&kind, &name): (&u8, &u32)| by_kind[usize::from(kind)].unwrap_or(name);
    // The names that are types made findable in ascending order, so that of equal texts the
    // lowest id is the one findable: its canonical id by name.
    let mut is_type = vec![0u64; n_strings.div_ceil(64)];
    for (&kind, &name) in node_kind.iter().zip(node_name) {
        if by_kind[usize::from(kind)].is_none() {
            is_type[name as usize / 64] |= 1 << (name % 64);
        }
    }
    let mut canonical: FxHashMap<u32, StringId> = FxHashMap::default();
    for (word_at, &word) in is_type.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            let name = (word_at * 64) as u32 + word.trailing_zeros();
            word &= word - 1;
            let id = table.id_from_raw(name).unwrap_or(StringId::EMPTY);
            canonical.insert(name, table.make_findable(id));
        }
    }
    NodeTypes::from_keys(
        node_kind.iter().zip(node_name).map(key),
        n_strings + kind_types.len(),
        |key| match (key as usize).checked_sub(n_strings) {
            Some(kind) => kind_types[kind].unwrap_or(StringId::EMPTY),
            None => canonical.get(&key).copied().unwrap_or(StringId::EMPTY),
        },
    )
}
