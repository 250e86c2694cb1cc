//! IBM Portable Heap Dumps for tests: a heap described as plain records ([`PhdHeap`]), and a
//! writer that encodes it byte for byte as OpenJ9's `BinaryHeapDumpWriter`
//! (`runtime/rasdump/heapdump.cpp`, PHD version 6 with the new-object-hash flags) does.
//!
//! No OpenJ9 can be installed where the tests run, so the tests write their PHDs with this; the
//! heap they write is taken from a real Java dump ([`PhdHeap::from_java_graph`] on a graph the
//! HPROF importer read from `fixtures/java/`), so that the dump has a real heap's shape: its
//! addresses, classes, reference spans and counts.
//!
//! The writer makes the VM's choices: an object whose address gap fits 2 bytes, with no hash
//! code and at most 3 references, whose class is one of the last 4 that a medium or long record
//! named, is a short record; with at most 7 references a medium record; else a long record.
//! Object arrays are always `0x08` records with their elements last first (the VM's slot
//! iterator order); primitive arrays are short `0x20` records unless hashed; class records come
//! after every object. Gaps and reference offsets are in 4-byte units, each written in the
//! fewest of 1, 2, 4 or 8 bytes that hold it.

use heapgraph_model::{EdgeKind, EdgeName, HeapGraph, NodeId};
use rustc_hash::FxHashMap as HashMap;

/// What a record describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PhdKind {
    /// An instance of the class at `class`.
    Instance {
        /// The address of its class's class object.
        class: u64,
    },
    /// An array of references.
    ObjectArray {
        /// The address of the element class's class object.
        element_class: u64,
        /// The array's length.
        length: u32,
        /// Its size in bytes (a multiple of 4).
        size: u64,
    },
    /// An array of primitives.
    PrimitiveArray {
        /// The type code: 0 `boolean`, 1 `char`, 2 `float`, 3 `double`, 4 `byte`, 5 `short`,
        /// 6 `int`, 7 `long`.
        element: u8,
        /// The array's length.
        length: u32,
        /// Its size in bytes (a multiple of 4).
        size: u64,
    },
    /// A class.
    Class {
        /// The name as the VM spells it: `java/lang/String`, `[Ljava/lang/String;`, `[I`.
        name: String,
        /// The address of the superclass's class object, 0 for none.
        super_class: u64,
        /// The size of an instance in bytes, header included.
        instance_size: u32,
    },
}

/// One record: an address, what it is, its non-null references in order (array elements in
/// index order), and its hash code (0 for none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhdObject {
    /// The object's address.
    pub address: u64,
    /// What it is.
    pub kind: PhdKind,
    /// Addresses it references.
    pub refs: Vec<u64>,
    /// Its hash code, 0 when it has none.
    pub hash: u32,
}

/// A heap to write: the objects in heap order, then the classes (written last, as the VM does).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhdHeap {
    /// Instances and arrays.
    pub objects: Vec<PhdObject>,
    /// Classes.
    pub classes: Vec<PhdObject>,
}

/// The primitive array types by type code, in source form.
pub const PRIMITIVE_ARRAYS: [&str; 8] = [
    "boolean[]",
    "char[]",
    "float[]",
    "double[]",
    "byte[]",
    "short[]",
    "int[]",
    "long[]",
];

/// A source-form class name (`java.lang.String[]`) as the VM spells it (`[Ljava/lang/String;`).
pub fn vm_name(source: &str) -> String {
    let mut base = source;
    let mut dims = 0;
    while let Some(inner) = base.strip_suffix("[]") {
        base = inner;
        dims += 1;
    }
    if dims == 0 {
        return base.replace('.', "/");
    }
    let element = match base {
        "boolean" => "Z".to_owned(),
        "char" => "C".to_owned(),
        "float" => "F".to_owned(),
        "double" => "D".to_owned(),
        "byte" => "B".to_owned(),
        "short" => "S".to_owned(),
        "int" => "I".to_owned(),
        "long" => "J".to_owned(),
        other => format!("L{};", other.replace('.', "/")),
    };
    format!("{}{element}", "[".repeat(dims))
}

impl PhdHeap {
    /// The heap of `graph`, a graph the HPROF importer built (its node kinds, `<class>` and
    /// `<super>` links and source-form type names): every instance, array and class with the
    /// same address and references. Sizes are the graph's; a class's instance size is that of
    /// its first instance (HotSpot sizes every instance of a class alike), 16 bytes for a class
    /// with none, and that of `java.lang.Class` the smallest class object's.
    pub fn from_java_graph(graph: &HeapGraph) -> PhdHeap {
        let mut class_address_by_name: HashMap<&str, u64> = HashMap::default();
        let mut instance_sizes: HashMap<u64, u64> = HashMap::default();
        let mut smallest_class = u64::MAX;
        for node in graph.nodes() {
            match graph.kind(node).name.as_str() {
                "class" => {
                    class_address_by_name.insert(graph.name(node), graph.object_id(node));
                    smallest_class = smallest_class.min(graph.shallow_size(node));
                }
                "instance" => {
                    if let Some(class) = link(graph, node, "<class>") {
                        instance_sizes
                            .entry(class)
                            .or_insert(graph.shallow_size(node));
                    }
                }
                _ => {}
            }
        }
        let mut heap = PhdHeap::default();
        for node in graph.nodes() {
            let address = graph.object_id(node);
            let kind = graph.kind(node).name.as_str();
            let mut refs = Vec::new();
            for edge in graph.edge_range(node) {
                let is_link = matches!(
                    graph.edge_name(edge),
                    EdgeName::Named("<class>" | "<super>")
                ) && graph.edge_kind(edge) == EdgeKind::Internal;
                // A thread's stack frames are the HPROF importer's, not objects.
                if !is_link && !graph.is_synthetic(graph.edge_target(edge)) {
                    refs.push(graph.object_id(graph.edge_target(edge)));
                }
            }
            let size = graph.shallow_size(node);
            let record_kind = match kind {
                "instance" => PhdKind::Instance {
                    class: link(graph, node, "<class>").unwrap_or(0),
                },
                "object-array" => {
                    let type_name = graph.type_name(node);
                    let element = type_name.strip_suffix("[]").unwrap_or(type_name);
                    PhdKind::ObjectArray {
                        element_class: class_address_by_name.get(element).copied().unwrap_or(0),
                        length: refs.len() as u32,
                        size,
                    }
                }
                "primitive-array" => {
                    let element = PRIMITIVE_ARRAYS
                        .iter()
                        .position(|&name| name == graph.type_name(node))
                        .expect("a primitive array type") as u8;
                    // The graph keeps no length; the one a 16-byte array header implies.
                    let element_bytes = [1, 2, 4, 8, 1, 2, 4, 8][usize::from(element)];
                    PhdKind::PrimitiveArray {
                        element,
                        length: (size.saturating_sub(16) / element_bytes) as u32,
                        size,
                    }
                }
                "class" => {
                    let name = graph.name(node);
                    let instance_size = if name == "java.lang.Class" {
                        smallest_class
                    } else {
                        instance_sizes.get(&address).copied().unwrap_or(16)
                    };
                    heap.classes.push(PhdObject {
                        address,
                        kind: PhdKind::Class {
                            name: vm_name(name),
                            super_class: link(graph, node, "<super>").unwrap_or(0),
                            instance_size: instance_size as u32,
                        },
                        refs,
                        hash: 0,
                    });
                    continue;
                }
                _ => continue,
            };
            heap.objects.push(PhdObject {
                address,
                kind: record_kind,
                refs,
                hash: 0,
            });
        }
        heap
    }

    /// The dump as OpenJ9 writes it: version 6, 64- or 32-bit words, `full_version` in the
    /// header.
    pub fn write(&self, is_64_bit: bool, full_version: &str) -> Vec<u8> {
        let mut writer = PhdWriter::new(is_64_bit, full_version);
        for object in self.objects.iter().chain(&self.classes) {
            writer.record(object);
        }
        writer.finish()
    }
}

/// The address of the target of `node`'s internal edge named `name`.
fn link(graph: &HeapGraph, node: NodeId, name: &str) -> Option<u64> {
    graph.edge_range(node).find_map(|edge| {
        (graph.edge_kind(edge) == EdgeKind::Internal
            && graph.edge_name(edge) == EdgeName::Named(name))
        .then(|| graph.object_id(graph.edge_target(edge)))
    })
}

/// Encodes records as OpenJ9's `BinaryHeapDumpWriter`.
#[derive(Debug)]
pub struct PhdWriter {
    out: Vec<u8>,
    is_64_bit: bool,
    /// The previous record's address (`_CurrentObject`).
    current: u64,
    /// The classes of the last four medium and long object records (`ClassCache`).
    cache: [u64; 4],
    cache_next: usize,
}

impl PhdWriter {
    /// Writes the header: identifier, version 6, flags (`0x05` 64-bit J9, `0x04` 32-bit J9),
    /// the full-version record, end of header, start of dump.
    pub fn new(is_64_bit: bool, full_version: &str) -> PhdWriter {
        let mut writer = PhdWriter {
            out: Vec::new(),
            is_64_bit,
            current: 0,
            cache: [0; 4],
            cache_next: 0,
        };
        writer.utf("portable heap dump");
        writer.number(6, 4);
        writer.number(if is_64_bit { 5 } else { 4 }, 4);
        writer.number(1, 1);
        writer.number(4, 1);
        writer.utf(full_version);
        writer.number(2, 1);
        writer.number(2, 1);
        writer
    }

    /// Writes the end-of-dump tag and hands the bytes over.
    pub fn finish(mut self) -> Vec<u8> {
        self.number(3, 1);
        self.out
    }

    /// Writes one record.
    pub fn record(&mut self, object: &PhdObject) {
        match &object.kind {
            PhdKind::Instance { class } => self.instance(object, *class),
            PhdKind::ObjectArray {
                element_class,
                length,
                size,
            } => self.object_array(object, *element_class, *length, *size),
            PhdKind::PrimitiveArray {
                element,
                length,
                size,
            } => self.primitive_array(object, *element, *length, *size),
            PhdKind::Class {
                name,
                super_class,
                instance_size,
            } => self.class(object, name, *super_class, *instance_size),
        }
        self.current = object.address;
    }

    /// `writeNumber`: the low `length` bytes of `value`, big-endian.
    fn number(&mut self, value: i64, length: usize) {
        self.out
            .extend_from_slice(&value.to_be_bytes()[8 - length..]);
    }

    fn utf(&mut self, text: &str) {
        self.number(text.len() as i64, 2);
        self.out.extend_from_slice(text.as_bytes());
    }

    fn word(&mut self, value: u64) {
        let size = if self.is_64_bit { 8 } else { 4 };
        self.number(value as i64, size);
    }

    /// `numberSize`: the fewest bytes of 1, 2, 4 (and 8 on 64-bit) that hold `number`.
    fn number_size(&self, number: i64) -> usize {
        if i8::try_from(number).is_ok() {
            1
        } else if i16::try_from(number).is_ok() {
            2
        } else if !self.is_64_bit || i32::try_from(number).is_ok() {
            4
        } else {
            8
        }
    }

    /// `numberSizeEncoding`.
    fn encoding(size: usize) -> u8 {
        match size {
            1 => 0,
            2 => 1,
            4 => 2,
            _ => 3,
        }
    }

    /// The gap from the previous record, in 4-byte units, and its size in bytes.
    fn gap(&self, address: u64) -> (i64, usize) {
        let gap = (address as i64).wrapping_sub(self.current as i64) / 4;
        (gap, self.number_size(gap))
    }

    /// `ReferenceTraits`: each reference's offset from `address` in 4-byte units, and the size
    /// that holds the largest (`-128` counts as needing 2 bytes, as in the VM).
    fn offsets(&self, address: u64, refs: &[u64]) -> (Vec<i64>, usize) {
        let offsets: Vec<i64> = refs
            .iter()
            .map(|&target| (target as i64).wrapping_sub(address as i64))
            .collect();
        let largest = offsets
            .iter()
            .fold(0i64, |largest, &offset| largest.max(offset).max(-offset));
        (
            offsets.iter().map(|offset| offset / 4).collect(),
            self.number_size(largest / 4),
        )
    }

    fn instance(&mut self, object: &PhdObject, class: u64) {
        let (gap, gap_size) = self.gap(object.address);
        let gap_encoding = Self::encoding(gap_size);
        let (offsets, offset_size) = self.offsets(object.address, &object.refs);
        let offset_encoding = Self::encoding(offset_size);
        let cached = self.cache.iter().position(|&cached| cached == class);
        let n_refs = offsets.len();
        if let (true, Some(index)) = (gap_encoding <= 1 && n_refs <= 3 && object.hash == 0, cached)
        {
            let tag = 0x80 | (index as u8) << 5 | (n_refs as u8) << 3 | gap_encoding << 2;
            self.number(i64::from(tag | offset_encoding), 1);
            self.number(gap, gap_size);
        } else if gap_encoding <= 1 && n_refs <= 7 && object.hash == 0 {
            let tag = 0x40 | (n_refs as u8) << 3 | gap_encoding << 2 | offset_encoding;
            self.number(i64::from(tag), 1);
            self.number(gap, gap_size);
            self.word(class);
            self.cache_class(class);
        } else {
            let mut flags = 1 | gap_encoding << 6 | offset_encoding << 4;
            if object.hash != 0 {
                flags |= 2;
            }
            self.number(4, 1);
            self.number(i64::from(flags), 1);
            self.number(gap, gap_size);
            self.word(class);
            if object.hash != 0 {
                self.number(i64::from(object.hash), 4);
            }
            self.number(n_refs as i64, 4);
            self.cache_class(class);
        }
        for offset in offsets {
            self.number(offset, offset_size);
        }
    }

    fn cache_class(&mut self, class: u64) {
        self.cache[self.cache_next] = class;
        self.cache_next = (self.cache_next + 1) % 4;
    }

    fn object_array(&mut self, object: &PhdObject, element_class: u64, length: u32, size: u64) {
        let (gap, gap_size) = self.gap(object.address);
        // The VM's slot iterator hands the elements over last first.
        let reversed: Vec<u64> = object.refs.iter().rev().copied().collect();
        let (offsets, offset_size) = self.offsets(object.address, &reversed);
        let mut flags = 1 | Self::encoding(gap_size) << 6 | Self::encoding(offset_size) << 4;
        if object.hash != 0 {
            flags |= 2;
        }
        self.number(8, 1);
        self.number(i64::from(flags), 1);
        self.number(gap, gap_size);
        self.word(element_class);
        if object.hash != 0 {
            self.number(i64::from(object.hash), 4);
        }
        self.number(offsets.len() as i64, 4);
        for offset in offsets {
            self.number(offset, offset_size);
        }
        self.number(i64::from(length), 4);
        self.number((size / 4) as i64, 4);
    }

    fn primitive_array(&mut self, object: &PhdObject, element: u8, length: u32, size: u64) {
        let (gap, gap_size) = self.gap(object.address);
        let overall = gap_size.max(self.number_size(i64::from(length)));
        let encoding = Self::encoding(overall);
        if object.hash == 0 {
            self.number(i64::from(0x20 | (element << 2) & 0x1c | encoding), 1);
            self.number(gap, overall);
            self.number(i64::from(length), overall);
        } else {
            let mut flags = element << 5 | 2;
            if encoding != 0 {
                flags |= 0x10;
            }
            self.number(7, 1);
            self.number(i64::from(flags), 1);
            let field = if encoding == 0 {
                1
            } else if self.is_64_bit {
                8
            } else {
                4
            };
            self.number(gap, field);
            self.number(i64::from(length), field);
            self.number(i64::from(object.hash), 4);
        }
        self.number((size / 4) as i64, 4);
    }

    fn class(&mut self, object: &PhdObject, name: &str, super_class: u64, instance_size: u32) {
        let (gap, gap_size) = self.gap(object.address);
        let (offsets, offset_size) = self.offsets(object.address, &object.refs);
        let mut flags = Self::encoding(gap_size) << 6 | Self::encoding(offset_size) << 4;
        if object.hash != 0 {
            flags |= 8;
        }
        self.number(6, 1);
        self.number(i64::from(flags), 1);
        self.number(gap, gap_size);
        self.number(i64::from(instance_size), 4);
        if object.hash != 0 {
            self.number(i64::from(object.hash), 4);
        }
        self.word(super_class);
        self.utf(name);
        self.number(offsets.len() as i64, 4);
        for offset in offsets {
            self.number(offset, offset_size);
        }
    }
}
