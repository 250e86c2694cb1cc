//! Assembly: the records' addresses resolved to nodes, types named from the class records,
//! object sizes, the roots a PHD does not record, and the notes on what the dump lacked.

use super::FORMAT;
use super::parse::{End, Kind, Parsed, UNSPECIFIED};
use crate::ImportError;
use heapgraph_model::{
    EdgeKind, EdgeKinds, EdgeNames, EdgeOffsets, GraphMeta, HeapGraph, HeapGraphParts,
    NodeKindInfo, NodeKinds, NodeNames, NodeTypes, PackedU64, Runtime, StringId, StringTable,
};
use rustc_hash::FxHashMap;

/// Node kinds, in the order of [`node_kinds`]: the HPROF importer's, so that Java views treat
/// both alike.
const KIND_INSTANCE: u8 = 0;
const KIND_CLASS: u8 = 1;
const KIND_OBJECT_ARRAY: u8 = 2;
const KIND_PRIMITIVE_ARRAY: u8 = 3;
const KIND_ROOT: u8 = 4;

fn node_kinds() -> Vec<NodeKindInfo> {
    [
        ("instance", false),
        ("class", false),
        ("object-array", false),
        ("primitive-array", false),
        ("root", true),
    ]
    .into_iter()
    .map(|(name, synthetic)| NodeKindInfo {
        name: name.to_owned(),
        synthetic,
    })
    .collect()
}

/// Primitive array element types by the record's type code: source name, the VM's name of the
/// array class, element bytes.
const PRIMITIVES: [(&str, &str, u64); 8] = [
    ("boolean[]", "[Z", 1),
    ("char[]", "[C", 2),
    ("float[]", "[F", 4),
    ("double[]", "[D", 8),
    ("byte[]", "[B", 1),
    ("short[]", "[S", 2),
    ("int[]", "[I", 4),
    ("long[]", "[J", 8),
];

/// A class's name in source form, as `jcmd GC.class_histogram` and the HPROF importer print it:
/// `java/util/HashMap` → `java.util.HashMap`, `[Ljava/lang/String;` → `java.lang.String[]`,
/// `[[I` → `int[][]`. The `/0x…` suffix of a hidden class stays.
fn source_name(name: &str) -> String {
    let dims = name.bytes().take_while(|&b| b == b'[').count();
    let element = &name[dims..];
    let element = match (dims, element) {
        (0, _) => element,
        (_, "Z") => "boolean",
        (_, "C") => "char",
        (_, "F") => "float",
        (_, "D") => "double",
        (_, "B") => "byte",
        (_, "S") => "short",
        (_, "I") => "int",
        (_, "J") => "long",
        _ => element
            .strip_prefix('L')
            .and_then(|inner| inner.strip_suffix(';'))
            .unwrap_or(element),
    };
    let (package, hidden) = match element.rfind("/0x") {
        Some(at) => element.split_at(at),
        None => (element, ""),
    };
    let mut out = package.replace('/', ".");
    out.push_str(hidden);
    for _ in 0..dims {
        out.push_str("[]");
    }
    out
}

/// The VM's name of the class of arrays of `element` (named as the VM names it).
fn array_class_name(element: &str) -> String {
    if element.starts_with('[') {
        format!("[{element}")
    } else {
        format!("[L{element};")
    }
}

/// Counts of what the dump lacked, for the notes.
#[derive(Default)]
struct Gaps {
    /// References to addresses with no record.
    dangling: u64,
    /// Objects and arrays whose class has no class record.
    unknown_class: u64,
}

/// The graph's columns while they are built.
#[derive(Default)]
struct Columns {
    node_kind: Vec<u8>,
    node_type: Vec<StringId>,
    shallow: Vec<u64>,
    labels: Vec<(u32, StringId)>,
    first_edge: Vec<u64>,
    edge_to: Vec<u32>,
    edge_kind: Vec<EdgeKind>,
    edge_name: Vec<u32>,
}

impl Columns {
    fn edge(&mut self, to: u32, kind: EdgeKind, name: u32) {
        self.edge_to.push(to);
        self.edge_kind.push(kind);
        self.edge_name.push(name);
    }
}

/// Builds the graph from the parsed records; `file_len` is for the notes of a cut dump.
pub(super) fn build(parsed: Parsed, file_len: usize) -> Result<HeapGraph, ImportError> {
    let objects = &parsed.objects;
    let n_objects = objects.len();
    if n_objects >= (u32::MAX / 2) as usize {
        return Err(ImportError::malformed(
            FORMAT,
            0,
            format!("the dump holds {n_objects} objects; heapgraph handles fewer than 2^31"),
        ));
    }

    // Address → node, sorted once: the records come mostly in address order, so this is cheap,
    // and 12 bytes an object where a hash map would take twice that.
    let mut by_address: Vec<(u64, u32)> = objects
        .iter()
        .enumerate()
        .map(|(node, object)| (object.address, node as u32))
        .collect();
    by_address.sort_unstable();
    let n_records = by_address.len();
    // The first record at an address keeps it.
    by_address.dedup_by_key(|&mut (address, _)| address);
    let duplicates = n_records - by_address.len();
    let node_at = |address: u64| -> Option<u32> {
        by_address
            .binary_search_by_key(&address, |&(address, _)| address)
            .ok()
            .map(|at| by_address[at].1)
    };

    let mut strings = StringTable::new();
    let pointer: u64 = if parsed.is_64_bit { 8 } else { 4 };
    // DTFJ's repair for IBM Java 1.4.2 dumps, whose class sizes leave the header out (some are
    // 0): there, a header of three words is added, and primitive arrays have a 4-byte length
    // field after two words.
    let sizes_without_header = parsed.classes.iter().map(|c| c.instance_size).min() == Some(0);
    let instance_size = |recorded: i32| -> u64 {
        let recorded = i64::from(recorded);
        if sizes_without_header && recorded >= 0 {
            recorded as u64 + 3 * pointer
        } else {
            recorded.unsigned_abs()
        }
    };
    // Each class record's type name and instance size, and the record by the address of its
    // class object and by its name.
    let mut class_by_address: FxHashMap<u64, usize> = FxHashMap::default();
    let mut class_node_by_name: FxHashMap<&str, u32> = FxHashMap::default();
    let mut class_labels: Vec<(u32, StringId)> = Vec::with_capacity(parsed.classes.len());
    let mut class_types: Vec<StringId> = Vec::with_capacity(parsed.classes.len());
    let mut class_sizes: Vec<u64> = Vec::with_capacity(parsed.classes.len());
    let mut class_object_size = 0;
    for (index, class) in parsed.classes.iter().enumerate() {
        let node = class.object as u32;
        let name = strings.intern(&source_name(&class.name));
        class_labels.push((node, name));
        class_types.push(name);
        class_sizes.push(instance_size(class.instance_size));
        class_by_address
            .entry(objects[class.object].address)
            .or_insert(index);
        class_node_by_name.entry(&class.name).or_insert(node);
        if class.name == "java/lang/Class" {
            class_object_size = instance_size(class.instance_size);
        }
    }
    // Object arrays: type and array class node, by element class address.
    let mut array_types: FxHashMap<u64, (StringId, Option<u32>)> = FxHashMap::default();
    let primitive_types: Vec<(StringId, Option<u32>)> = PRIMITIVES
        .iter()
        .map(|&(source, vm, _)| (strings.intern(source), class_node_by_name.get(vm).copied()))
        .collect();
    let unknown_type = strings.intern("<unknown class>");
    let class_type = strings.intern("java.lang.Class");
    let link_class = strings.intern("<class>").to_raw();
    let link_super = strings.intern("<super>").to_raw();
    let field = strings.intern("<field>").to_raw();
    let class_ref = strings.intern("<class ref>").to_raw();
    let array_size = |element_bytes: u64, primitive: bool, length: u64| -> u64 {
        let length_field = if sizes_without_header && primitive {
            4
        } else {
            8
        };
        (2 * pointer + length_field).saturating_add(length.saturating_mul(element_bytes))
    };

    let mut columns = Columns {
        node_kind: Vec::with_capacity(n_objects + 1),
        node_type: Vec::with_capacity(n_objects + 1),
        shallow: Vec::with_capacity(n_objects + 1),
        labels: class_labels,
        first_edge: Vec::with_capacity(n_objects + 2),
        edge_to: Vec::with_capacity(parsed.refs.len() + n_objects),
        edge_kind: Vec::with_capacity(parsed.refs.len() + n_objects),
        edge_name: Vec::with_capacity(parsed.refs.len() + n_objects),
    };
    columns.first_edge.push(0);
    let mut gaps = Gaps::default();
    let mut refs_start = 0;
    for object in objects {
        let refs = &parsed.refs[refs_start..object.refs_end];
        refs_start = object.refs_end;
        let (kind, type_name, size, class_node, ref_kind) = match object.kind {
            Kind::Instance => {
                let (type_name, size) = match class_by_address.get(&object.class) {
                    Some(&index) => (class_types[index], class_sizes[index]),
                    None => {
                        gaps.unknown_class += 1;
                        (unknown_type, 0)
                    }
                };
                (
                    KIND_INSTANCE,
                    type_name,
                    size,
                    node_at(object.class),
                    EdgeKind::Property,
                )
            }
            Kind::ObjectArray => {
                let (type_name, class_node) =
                    *array_types.entry(object.class).or_insert_with(|| {
                        match class_by_address
                            .get(&object.class)
                            .map(|&index| &parsed.classes[index])
                        {
                            Some(element) => (
                                strings.intern(&format!("{}[]", source_name(&element.name))),
                                class_node_by_name
                                    .get(array_class_name(&element.name).as_str())
                                    .copied(),
                            ),
                            None => (unknown_type, None),
                        }
                    });
                if type_name == unknown_type {
                    gaps.unknown_class += 1;
                }
                let size = if object.size == UNSPECIFIED {
                    array_size(pointer, false, object.length)
                } else {
                    object.size
                };
                (
                    KIND_OBJECT_ARRAY,
                    type_name,
                    size,
                    class_node,
                    EdgeKind::Element,
                )
            }
            Kind::PrimitiveArray => {
                let code = (object.class & 7) as usize;
                let (type_name, class_node) = primitive_types[code];
                let size = if object.size == UNSPECIFIED {
                    array_size(PRIMITIVES[code].2, true, object.length)
                } else {
                    object.size
                };
                (
                    KIND_PRIMITIVE_ARRAY,
                    type_name,
                    size,
                    class_node,
                    EdgeKind::Element,
                )
            }
            Kind::Class => {
                // A class's `class` is its superclass; 0 for java/lang/Object and primitives.
                let super_node = node_at(object.class);
                if super_node.is_none() && object.class != 0 {
                    gaps.dangling += 1;
                }
                (
                    KIND_CLASS,
                    class_type,
                    class_object_size,
                    super_node,
                    EdgeKind::Property,
                )
            }
        };
        columns.node_kind.push(kind);
        columns.node_type.push(type_name);
        columns.shallow.push(size);
        if let Some(class_node) = class_node {
            let link = if kind == KIND_CLASS {
                link_super
            } else {
                link_class
            };
            columns.edge(class_node, EdgeKind::Internal, link);
        }
        let name = if kind == KIND_CLASS { class_ref } else { field };
        for (index, &target) in refs.iter().enumerate() {
            match node_at(target) {
                Some(to) if ref_kind == EdgeKind::Element => {
                    columns.edge(to, ref_kind, index as u32)
                }
                Some(to) => columns.edge(to, ref_kind, name),
                None => gaps.dangling += 1,
            }
        }
        columns.first_edge.push(columns.edge_to.len() as u64);
    }
    drop(by_address);

    let roots = add_roots(&mut columns, &mut strings, n_objects);

    let mut meta = GraphMeta::new(Runtime::Java, "phd");
    meta.runtime_version = parsed.full_version.clone();
    meta.notes.push(format!(
        "IBM portable heap dump version {}, {}-bit{}",
        parsed.version,
        if parsed.is_64_bit { 64 } else { 32 },
        if parsed.flags & 4 != 0 { ", J9" } else { "" },
    ));
    meta.notes.push(format!(
        "a PHD records no GC roots and no field names: the roots are the {} classes, the {} objects no other object references, and {} object(s) standing for groups that only reference each other, as Eclipse MAT roots a PHD",
        roots.classes, roots.unreferenced, roots.cycles
    ));
    notes(&parsed, &gaps, duplicates, file_len, &mut meta.notes);

    let n_nodes = columns.node_kind.len();
    let mut addresses: Vec<u64> = objects.iter().map(|object| object.address).collect();
    addresses.push(0);
    let parts = HeapGraphParts {
        node_object_id: PackedU64::from(addresses),
        node_kind: NodeKinds::from(columns.node_kind),
        node_type: NodeTypes::from(columns.node_type),
        node_name: NodeNames::from_pairs(n_nodes, columns.labels),
        node_shallow_size: PackedU64::from(columns.shallow),
        first_edge: EdgeOffsets::from(columns.first_edge),
        edge_to: columns.edge_to,
        edge_kind: EdgeKinds::from(columns.edge_kind),
        edge_name: EdgeNames::from(columns.edge_name),
        node_kinds: node_kinds(),
        root: (n_nodes - 1) as u32,
    };
    HeapGraph::from_parts(meta, strings, parts)
        .map_err(|err| ImportError::inconsistent(FORMAT, err.to_string()))
}

/// How many roots of each kind the super-root got.
struct Roots {
    classes: u64,
    unreferenced: u64,
    cycles: u64,
}

/// Adds the super-root, the last node, with its edges. A PHD has no roots; as Eclipse MAT does
/// for one (`DTFJIndexBuilder`: no roots from DTFJ, so system classes, then every object
/// nothing references, then `keep_unreachable_objects` for what is left), the roots are every
/// class, every object that no other object references, and then, for each group of objects
/// still unreached (they only reference each other), its first in file order.
fn add_roots(columns: &mut Columns, strings: &mut StringTable, n_objects: usize) -> Roots {
    let mut referenced = vec![false; n_objects];
    for node in 0..n_objects {
        let edges = columns.first_edge[node] as usize..columns.first_edge[node + 1] as usize;
        for &to in &columns.edge_to[edges] {
            if to as usize != node {
                referenced[to as usize] = true;
            }
        }
    }
    let root_type = strings.intern("(GC roots)");
    let class_root = strings.intern("<loaded class>").to_raw();
    let unreferenced_root = strings.intern("<unreferenced>").to_raw();
    let cycle_root = strings.intern("<unreferenced cycle>").to_raw();
    let mut roots = Roots {
        classes: 0,
        unreferenced: 0,
        cycles: 0,
    };
    let mut root_edges: Vec<(u32, u32)> = Vec::new();
    for (node, &kind) in columns.node_kind.iter().enumerate() {
        if kind == KIND_CLASS {
            root_edges.push((node as u32, class_root));
            roots.classes += 1;
        }
    }
    for (node, (&kind, &referenced)) in columns.node_kind.iter().zip(&referenced).enumerate() {
        if kind != KIND_CLASS && !referenced {
            root_edges.push((node as u32, unreferenced_root));
            roots.unreferenced += 1;
        }
    }
    drop(referenced);
    // Reached from the roots so far; every unreached node then starts a group of its own.
    let mut reached = vec![false; n_objects];
    let mut stack: Vec<u32> = Vec::new();
    let visit = |start: u32, reached: &mut Vec<bool>, stack: &mut Vec<u32>| {
        if reached[start as usize] {
            return;
        }
        reached[start as usize] = true;
        stack.push(start);
        while let Some(node) = stack.pop() {
            let node = node as usize;
            let edges = columns.first_edge[node] as usize..columns.first_edge[node + 1] as usize;
            for &to in &columns.edge_to[edges] {
                if !reached[to as usize] {
                    reached[to as usize] = true;
                    stack.push(to);
                }
            }
        }
    };
    for &(node, _) in &root_edges {
        visit(node, &mut reached, &mut stack);
    }
    for node in 0..n_objects as u32 {
        if !reached[node as usize] {
            root_edges.push((node, cycle_root));
            roots.cycles += 1;
            visit(node, &mut reached, &mut stack);
        }
    }
    columns.node_kind.push(KIND_ROOT);
    columns.node_type.push(root_type);
    columns.shallow.push(0);
    columns.labels.push((n_objects as u32, root_type));
    for (to, name) in root_edges {
        columns.edge(to, EdgeKind::Internal, name);
    }
    columns.first_edge.push(columns.edge_to.len() as u64);
    roots
}

/// The notes on how the dump ended and what it lacked.
fn notes(
    parsed: &Parsed,
    gaps: &Gaps,
    duplicates: usize,
    file_len: usize,
    notes: &mut Vec<String>,
) {
    match parsed.end {
        End::Complete => {}
        End::BetweenRecords => notes.push(format!(
            "the dump ends at byte {file_len} after a complete record but without the end-of-dump record: it may have been cut short, and what came after is missing"
        )),
        End::InRecord { start, record } => notes.push(format!(
            "the dump ends at byte {file_len}, {} byte(s) into {} {record} record that starts at byte {start}: it was cut short, and that record and all after it are missing",
            file_len - start,
            if record.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" },
        )),
    }
    if gaps.unknown_class > 0 {
        let why = if parsed.end == End::Complete {
            ""
        } else {
            " (the VM writes the class records last, so a dump cut short loses them)"
        };
        notes.push(format!(
            "{} object(s) name a class with no class record{why}: their type is <unknown class> and instances count 0 bytes",
            gaps.unknown_class
        ));
    }
    if gaps.dangling > 0 {
        notes.push(format!(
            "{} reference(s) point to addresses with no record in the dump; they are left out",
            gaps.dangling
        ));
    }
    if duplicates > 0 {
        notes.push(format!(
            "{duplicates} record(s) share an address with an earlier one; references go to the first"
        ));
    }
    if let Some((objects, _)) = parsed.totals
        && parsed.end == End::Complete
        && objects as usize != parsed.objects.len()
    {
        notes.push(format!(
            "the header counts {objects} objects, the records {}",
            parsed.objects.len()
        ));
    }
}
