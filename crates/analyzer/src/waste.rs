//! Waste in collections, as Eclipse MAT's "Collection Fill Ratio" and "Array Fill Ratio" and
//! dotMemory's sparse-array inspection: for each collection, its elements against its capacity,
//! whether it is empty, and the bytes a collection sized for its elements would save.
//!
//! What a dump tells decides what is measured. Java (HPROF): a collection's capacity is the
//! length of its backing array (`HashMap.table`, `ArrayList.elementData`), which the importer
//! records (`HeapGraph::array_lengths`); its elements are counted from the references, since
//! the graph keeps no primitive field (`size`): the entries chained from the table through
//! `next`, the slots of an `ArrayList` up to its last non-null element. Python: the dumper
//! records each `list`'s, `dict`'s and `set`'s elements, slots and table bytes as CPython sized
//! them, and the bytes a right-sized copy would not have (`HeapGraph::fill`; the rules, cited,
//! are in the dumper). V8 snapshots give a hash table's bytes, not its slots, so they get a note.

use crate::Analysis;
use crate::queries::object_view;
use crate::view::ObjectView;
use heapgraph_model::{EdgeKind, EdgeName, HeapGraph, NodeId, Runtime, StringId};

/// How a collection type keeps its elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A hash table in field `table`, entries chained through `next` (`HashMap`,
    /// `ConcurrentHashMap`, `Hashtable`, `WeakHashMap`).
    Hashed,
    /// A set over the map in its field `map` (`HashSet`, `LinkedHashSet`).
    MapBacked,
    /// An array in field `elementData`, filled from slot 0 (`ArrayList`, `Vector`).
    Listed,
}

/// The Java collections measured, and their shapes.
const JAVA_COLLECTIONS: [(&str, Shape); 8] = [
    ("java.util.HashMap", Shape::Hashed),
    ("java.util.LinkedHashMap", Shape::Hashed),
    ("java.util.concurrent.ConcurrentHashMap", Shape::Hashed),
    ("java.util.Hashtable", Shape::Hashed),
    ("java.util.WeakHashMap", Shape::Hashed),
    ("java.util.HashSet", Shape::MapBacked),
    ("java.util.LinkedHashSet", Shape::MapBacked),
    ("java.util.ArrayList", Shape::Listed),
];

/// `java.util.Vector` keeps its elements as `ArrayList` does.
const JAVA_VECTOR: &str = "java.util.Vector";

/// The load factor of Java's hash tables (`HashMap`'s default, and `ConcurrentHashMap`'s fixed
/// one): a table holding `n` entries without growing has `n / 0.75` slots, rounded up to a
/// power of two.
const JAVA_LOAD_FACTOR: f64 = 0.75;

/// One type's collections, or one type's plain object arrays.
#[derive(Clone, Debug, PartialEq)]
pub struct WasteRow {
    /// The collection's type (`java.util.HashMap`), or the array's (`java.lang.Object[]`).
    pub type_name: String,
    /// Whether the row is of plain arrays (MAT's "Array Fill Ratio") rather than collections.
    pub arrays: bool,
    /// Collections (or arrays) of the type.
    pub count: u64,
    /// Those holding no element.
    pub empty: u64,
    /// Elements they hold, summed.
    pub elements: u64,
    /// Slots they have, summed (the backing arrays' lengths).
    pub capacity: u64,
    /// Bytes of the backing arrays (of the arrays themselves for an array row).
    pub backing_bytes: u64,
    /// Bytes that collections sized for their elements would save: the slots past what the
    /// elements need (for a hash table, past the power of two that holds them at load factor
    /// 0.75), and the whole backing array of an empty one. For arrays, the null slots.
    pub wasted_bytes: u64,
    /// How many have a fill ratio (elements / capacity) in each tenth: `[0]` for 0 (empty),
    /// `[k]` for (10(k-1)%, 10k%], k = 1..=10.
    pub fill_histogram: [u64; 11],
}

/// One collection and what it wastes.
#[derive(Clone, Debug, PartialEq)]
pub struct WastedCollection {
    /// The collection (or array).
    pub object: ObjectView,
    /// Elements it holds.
    pub elements: u64,
    /// Slots it has.
    pub capacity: u64,
    /// Bytes a right-sized one would save.
    pub wasted_bytes: u64,
}

/// The waste of one dump.
#[derive(Clone, Debug, PartialEq)]
pub struct WasteView {
    /// The runtime, which decides what could be measured.
    pub runtime: Runtime,
    /// Collections measured (arrays not counted).
    pub collections: u64,
    /// Of them, empty.
    pub empty_collections: u64,
    /// Bytes right-sized collections would save, summed over the collection rows.
    pub wasted_bytes: u64,
    /// Bytes of null slots in plain object arrays, summed over the array rows.
    pub null_slot_bytes: u64,
    /// Rows by wasted bytes, largest first (ties by type name).
    pub rows: Vec<WasteRow>,
    /// The collections by the bytes they waste, largest first (ties by node), those that
    /// waste nothing last.
    pub worst: Vec<WastedCollection>,
    /// What the dump does not tell, where it limits the answer.
    pub notes: Vec<String>,
}

/// Measures every reachable collection and object array of `graph`; the first `n_worst`
/// collections by wasted bytes are listed one by one.
///
/// Complexity: O(V + E) time (each node once, each hash entry once per table that chains to
/// it), O(T + n_worst) space beside the caller's graph.
pub fn waste(graph: &HeapGraph, analysis: &Analysis, n_worst: usize) -> WasteView {
    let mut view = WasteView {
        runtime: graph.meta().runtime,
        collections: 0,
        empty_collections: 0,
        wasted_bytes: 0,
        null_slot_bytes: 0,
        rows: Vec::new(),
        worst: Vec::new(),
        notes: Vec::new(),
    };
    if view.runtime == Runtime::Python {
        python(graph, analysis, n_worst, &mut view);
        return view;
    }
    if view.runtime != Runtime::Java {
        view.notes.push(format!(
            "{} dumps record no capacity of their collections that heapgraph keeps (V8 gives a hash table's bytes, not its slots): only Java and Python collections are measured",
            view.runtime.name()
        ));
        return view;
    }
    let lengths = graph.array_lengths();
    if lengths.is_empty() {
        view.notes.push(
            "this graph holds no array lengths (an .hgd written before heapgraph kept them, in its array_lengths chunk): convert the HPROF file again, or read it itself, to measure its collections".to_owned(),
        );
        return view;
    }
    let java = JavaNames::find(graph);
    let tree = &analysis.dominators;
    let slot = u64::from(lengths.slot_bytes());
    let mut rows: Vec<WasteRow> = Vec::new();
    let mut row_of_type: rustc_hash::FxHashMap<StringId, usize> = Default::default();
    // Backing arrays are measured with their collection, not again as plain arrays.
    let mut backing = vec![false; graph.node_count()];
    // A set's map is measured as the set, not again as a map.
    let mut set_maps = vec![false; graph.node_count()];
    for node in graph.nodes() {
        if java.sets.contains(&graph.type_id(node))
            && let Some(map) = field(graph, node, java.map)
        {
            set_maps[map.index()] = true;
        }
    }
    let mut measured: Vec<(NodeId, StringId, Measure)> = Vec::new();
    for node in graph.nodes() {
        if !tree.reachable[node.index()] || graph.is_synthetic(node) {
            continue;
        }
        let Some(shape) = java.shape(graph.type_id(node)) else {
            continue;
        };
        let (collection_type, measure) = match shape {
            Shape::MapBacked => {
                let Some(map) = field(graph, node, java.map) else {
                    continue;
                };
                (graph.type_id(node), hashed(graph, map, &java, &mut backing))
            }
            Shape::Hashed => {
                if set_maps[node.index()] {
                    continue;
                }
                (
                    graph.type_id(node),
                    hashed(graph, node, &java, &mut backing),
                )
            }
            Shape::Listed => (
                graph.type_id(node),
                listed(graph, node, &java, &mut backing),
            ),
        };
        measured.push((node, collection_type, measure));
    }
    let mut worst: Vec<(u64, NodeId, Measure)> = Vec::new();
    for (node, type_id, measure) in measured {
        let row = row_for(graph, &mut rows, &mut row_of_type, type_id, false);
        let wasted = measure.wasted_bytes(slot);
        add(row, &measure, wasted);
        view.collections += 1;
        view.empty_collections += u64::from(measure.elements == 0);
        view.wasted_bytes += wasted;
        worst.push((wasted, node, measure));
    }
    let object_array = graph
        .parts()
        .node_kinds
        .iter()
        .position(|kind| kind.name == "object-array");
    for node in graph.nodes() {
        let index = node.index();
        if !tree.reachable[index]
            || backing[index]
            || Some(usize::from(graph.parts().node_kind[index])) != object_array
        {
            continue;
        }
        let Some(length) = lengths.get(index) else {
            continue;
        };
        let elements = graph
            .edge_range(node)
            .filter(|&edge| graph.edge_kind(edge) == EdgeKind::Element)
            .count() as u64;
        let measure = Measure {
            elements,
            capacity: u64::from(length),
            needed: elements,
            backing_bytes: graph.shallow_size(node),
        };
        let wasted = (measure.capacity - elements.min(measure.capacity)) * slot;
        let row = row_for(
            graph,
            &mut rows,
            &mut row_of_type,
            graph.type_id(node),
            true,
        );
        add(row, &measure, wasted);
        view.null_slot_bytes += wasted;
    }
    finish(graph, analysis, n_worst, &mut view, rows, worst);
    view
}

/// Python's collections, from the fill the dumper recorded.
fn python(graph: &HeapGraph, analysis: &Analysis, n_worst: usize, view: &mut WasteView) {
    let fill = graph.fill();
    if fill.is_empty() {
        view.notes.push(
            "this dump records no fill of its collections (a dumper older than heapgraph's waste, or a dump with no list, dict or set): dump again with this heapgraph's dumper (capture python)".to_owned(),
        );
        return;
    }
    let reachable = &analysis.dominators.reachable;
    let mut rows: Vec<WasteRow> = Vec::new();
    let mut row_of_type: rustc_hash::FxHashMap<StringId, usize> = Default::default();
    let mut worst: Vec<(u64, NodeId, Measure)> = Vec::new();
    for (node, row) in fill.iter() {
        if !reachable[node.index()] || graph.is_synthetic(node) {
            continue;
        }
        let measure = Measure {
            elements: row.elements,
            capacity: row.capacity,
            needed: row.elements,
            backing_bytes: row.table_bytes,
        };
        let wasted = row.spare_bytes;
        add(
            row_for(
                graph,
                &mut rows,
                &mut row_of_type,
                graph.type_id(node),
                false,
            ),
            &measure,
            wasted,
        );
        view.collections += 1;
        view.empty_collections += u64::from(row.elements == 0);
        view.wasted_bytes += wasted;
        worst.push((wasted, node, measure));
    }
    finish(graph, analysis, n_worst, view, rows, worst);
}

/// Sorts the rows and keeps the `n_worst` collections that waste most.
fn finish(
    graph: &HeapGraph,
    analysis: &Analysis,
    n_worst: usize,
    view: &mut WasteView,
    mut rows: Vec<WasteRow>,
    mut worst: Vec<(u64, NodeId, Measure)>,
) {
    rows.sort_by(|a, b| {
        (a.arrays, std::cmp::Reverse(a.wasted_bytes), &a.type_name).cmp(&(
            b.arrays,
            std::cmp::Reverse(b.wasted_bytes),
            &b.type_name,
        ))
    });
    worst.sort_by_key(|&(wasted, node, _)| (std::cmp::Reverse(wasted), node.index()));
    worst.truncate(n_worst);
    view.worst = worst
        .into_iter()
        .map(|(wasted, node, measure)| WastedCollection {
            object: object_view(graph, analysis, node),
            elements: measure.elements,
            capacity: measure.capacity,
            wasted_bytes: wasted,
        })
        .collect();
    view.rows = rows;
}

/// The row of `type_id` (collections and arrays apart), added where new.
fn row_for<'a>(
    graph: &HeapGraph,
    rows: &'a mut Vec<WasteRow>,
    row_of_type: &mut rustc_hash::FxHashMap<StringId, usize>,
    type_id: StringId,
    arrays: bool,
) -> &'a mut WasteRow {
    let at = *row_of_type.entry(type_id).or_insert_with(|| {
        rows.push(WasteRow {
            type_name: graph.strings().get(type_id).to_owned(),
            arrays,
            count: 0,
            empty: 0,
            elements: 0,
            capacity: 0,
            backing_bytes: 0,
            wasted_bytes: 0,
            fill_histogram: [0; 11],
        });
        rows.len() - 1
    });
    &mut rows[at]
}

fn add(row: &mut WasteRow, measure: &Measure, wasted: u64) {
    row.count += 1;
    row.empty += u64::from(measure.elements == 0);
    row.elements += measure.elements;
    row.capacity += measure.capacity;
    row.backing_bytes += measure.backing_bytes;
    row.wasted_bytes += wasted;
    let bucket = if measure.elements == 0 || measure.capacity == 0 {
        0
    } else {
        // (10(k-1)%, 10k%] → k, in integers: ceil(10 · elements / capacity).
        ((10 * measure.elements).div_ceil(measure.capacity)).clamp(1, 10) as usize
    };
    row.fill_histogram[bucket] += 1;
}

/// What one collection holds and has.
#[derive(Clone, Copy, Debug)]
struct Measure {
    elements: u64,
    capacity: u64,
    /// Slots a right-sized collection would have.
    needed: u64,
    /// Bytes of the backing array.
    backing_bytes: u64,
}

impl Measure {
    /// Bytes a right-sized collection would save: the slots past `needed`, or the whole
    /// backing array of an empty collection.
    fn wasted_bytes(&self, slot: u64) -> u64 {
        if self.elements == 0 {
            self.backing_bytes
        } else {
            self.capacity.saturating_sub(self.needed) * slot
        }
    }
}

/// A hash table: its `table`'s length, and the entries chained from its slots.
fn hashed(graph: &HeapGraph, map: NodeId, java: &JavaNames, backing: &mut [bool]) -> Measure {
    let Some(table) = field(graph, map, java.table) else {
        return Measure {
            elements: 0,
            capacity: 0,
            needed: 0,
            backing_bytes: 0,
        };
    };
    backing[table.index()] = true;
    let capacity = u64::from(graph.array_lengths().get(table.index()).unwrap_or(0));
    let mut elements = 0u64;
    for edge in graph.edge_range(table) {
        if graph.edge_kind(edge) != EdgeKind::Element {
            continue;
        }
        let mut entry = graph.edge_target(edge);
        // A ConcurrentHashMap bin of many entries is a TreeBin over its list of TreeNodes.
        if Some(graph.type_id(entry)) == java.tree_bin
            && let Some(first) = field(graph, entry, java.first)
        {
            entry = first;
        }
        // Chains end at a null `next`; the bound keeps a corrupt cycle finite.
        let mut steps = 0usize;
        loop {
            elements += 1;
            steps += 1;
            match field(graph, entry, java.next) {
                Some(next) if steps < graph.node_count() => entry = next,
                _ => break,
            }
        }
    }
    let needed = if elements == 0 {
        0
    } else {
        ((elements as f64 / JAVA_LOAD_FACTOR).ceil() as u64).next_power_of_two()
    };
    Measure {
        elements,
        capacity,
        needed: needed.min(capacity),
        backing_bytes: graph.shallow_size(table),
    }
}

/// A list: its `elementData`'s length, and its elements up to the last non-null slot (an
/// `ArrayList` fills its array from slot 0).
fn listed(graph: &HeapGraph, list: NodeId, java: &JavaNames, backing: &mut [bool]) -> Measure {
    let Some(array) = field(graph, list, java.element_data) else {
        return Measure {
            elements: 0,
            capacity: 0,
            needed: 0,
            backing_bytes: 0,
        };
    };
    backing[array.index()] = true;
    let capacity = u64::from(graph.array_lengths().get(array.index()).unwrap_or(0));
    let elements = graph
        .edge_range(array)
        .filter_map(|edge| match graph.edge_name(edge) {
            EdgeName::Index(index) if graph.edge_kind(edge) == EdgeKind::Element => {
                Some(u64::from(index) + 1)
            }
            _ => None,
        })
        .max()
        .unwrap_or(0);
    Measure {
        elements,
        capacity,
        needed: elements,
        backing_bytes: graph.shallow_size(array),
    }
}

/// The target of `node`'s field `name`, if it is not null.
fn field(graph: &HeapGraph, node: NodeId, name: Option<StringId>) -> Option<NodeId> {
    let name = name?;
    graph
        .edge_range(node)
        .find(|&edge| {
            graph.edge_kind(edge) == EdgeKind::Property
                && graph.raw_edge_name(edge) == name.to_raw()
        })
        .map(|edge| graph.edge_target(edge))
}

/// The id of the field name `text`. The HPROF importer interns field names, so they are
/// findable; a graph read from an `.hgd` makes only type names findable, but keeps the ids the
/// HPROF importer gave (strings are written in id order), one per text: there the first id of
/// the text is found by a scan, once per name.
fn field_name(graph: &HeapGraph, text: &str) -> Option<StringId> {
    let strings = graph.strings();
    strings.find(text).or_else(|| {
        strings
            .iter()
            .find(|&(_, candidate)| candidate == text)
            .map(|(id, _)| id)
    })
}

/// The strings the Java rules look for, found once.
struct JavaNames {
    shapes: Vec<(StringId, Shape)>,
    sets: Vec<StringId>,
    table: Option<StringId>,
    next: Option<StringId>,
    first: Option<StringId>,
    map: Option<StringId>,
    element_data: Option<StringId>,
    tree_bin: Option<StringId>,
}

impl JavaNames {
    fn find(graph: &HeapGraph) -> JavaNames {
        let strings = graph.strings();
        let mut shapes: Vec<(StringId, Shape)> = JAVA_COLLECTIONS
            .iter()
            .filter_map(|&(name, shape)| Some((strings.find(name)?, shape)))
            .collect();
        if let Some(vector) = strings.find(JAVA_VECTOR) {
            shapes.push((vector, Shape::Listed));
        }
        let sets = shapes
            .iter()
            .filter(|(_, shape)| *shape == Shape::MapBacked)
            .map(|&(id, _)| id)
            .collect();
        JavaNames {
            shapes,
            sets,
            table: field_name(graph, "table"),
            next: field_name(graph, "next"),
            first: field_name(graph, "first"),
            map: field_name(graph, "map"),
            element_data: field_name(graph, "elementData"),
            tree_bin: strings.find("java.util.concurrent.ConcurrentHashMap$TreeBin"),
        }
    }

    fn shape(&self, type_id: StringId) -> Option<Shape> {
        self.shapes
            .iter()
            .find(|&&(id, _)| id == type_id)
            .map(|&(_, shape)| shape)
    }
}
