//! The PHD importer on IBM Portable Heap Dumps: two small dumps written out byte by byte here
//! and checked by hand, a real-shaped dump checked against the heap it was written from, that
//! dump cut at every offset of its start and at intervals after, malformed headers and records,
//! and proptests over arbitrary and mutated bytes.
//!
//! No OpenJ9 can be installed where the tests run. The real-shaped dump stands for the PHD that
//! OpenJ9 would write of `fixtures/java/default.hprof.gz`'s heap (the `LeakFixture` program): it
//! is that dump's heap, read by the HPROF importer, written by `heapgraph_test_support::phd`,
//! which encodes records as OpenJ9's `heapdump.cpp` does. The oracle is the writer's input: every
//! address, type, size and reference it was given.

use heapgraph_import::{ImportError, phd};
use heapgraph_model::{EdgeKind, HeapGraph, NodeId};
use heapgraph_test_support::phd::{PRIMITIVE_ARRAYS, PhdHeap, PhdKind, vm_name};
use proptest::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

fn import(bytes: &[u8]) -> Result<HeapGraph, ImportError> {
    phd::import_slice(bytes, &Default::default())
}

/// Node at `address`, which must be there.
fn node(graph: &HeapGraph, address: u64) -> NodeId {
    graph
        .find_object(address)
        .unwrap_or_else(|| panic!("no node at {address:#x}"))
}

/// A node's edges as `(kind, name, target address)`.
fn edges(graph: &HeapGraph, node: NodeId) -> Vec<(EdgeKind, String, u64)> {
    graph
        .edge_range(node)
        .map(|edge| {
            (
                graph.edge_kind(edge),
                graph.edge_name(edge).to_string(),
                graph.object_id(graph.edge_target(edge)),
            )
        })
        .collect()
}

/// A Java modified-UTF string: 2-byte length, bytes.
fn utf(text: &str) -> Vec<u8> {
    let mut bytes = (text.len() as u16).to_be_bytes().to_vec();
    bytes.extend_from_slice(text.as_bytes());
    bytes
}

/// A version-4 dump of an IBM Java 1.4.2 VM (32-bit, not J9: gaps in 8-byte units), with every
/// kind of record, written out by hand from DTFJ's `HeapdumpReader`.
fn hand_written_v4() -> Vec<u8> {
    let mut b = utf("portable heap dump");
    b.extend_from_slice(&4u32.to_be_bytes()); // version 4
    b.extend_from_slice(&0u32.to_be_bytes()); // flags: 32-bit, not J9
    b.push(1); // start of header
    b.push(1); // totals: 9 objects, 5 references
    b.extend_from_slice(&9u32.to_be_bytes());
    b.extend_from_slice(&5u32.to_be_bytes());
    b.push(4); // full version
    b.extend(utf("J2RE 1.4.2 IBM build cxia32142-20060421"));
    b.push(2); // end of header
    b.push(2); // start of dump
    // Class java/lang/Object at 0x1000: flags 0x40 (2-byte gap), gap 0x200 (× 8), instance
    // size 12, superclass 0, name, no references.
    b.extend_from_slice(&[6, 0x40, 0x02, 0x00, 0, 0, 0, 12, 0, 0, 0, 0]);
    b.extend(utf("java/lang/Object"));
    b.extend_from_slice(&0u32.to_be_bytes());
    // Class com/example/Node at 0x1010: flags 0x10 (1-byte gap, 2-byte references), gap 2,
    // size 20, superclass 0x1000, one reference (a static) to 0x2000: (0x2000 - 0x1010) / 8.
    b.extend_from_slice(&[6, 0x10, 2, 0, 0, 0, 20, 0, 0, 0x10, 0x00]);
    b.extend(utf("com/example/Node"));
    b.extend_from_slice(&1u32.to_be_bytes());
    b.extend_from_slice(&0x1feu16.to_be_bytes());
    // Class [Lcom/example/Node; at 0x1020, size 16, superclass 0x1000, no references.
    b.extend_from_slice(&[6, 0x00, 2, 0, 0, 0, 16, 0, 0, 0x10, 0x00]);
    b.extend(utf("[Lcom/example/Node;"));
    b.extend_from_slice(&0u32.to_be_bytes());
    // Long object at 0x2000: flags 0x42 (2-byte gap, 1-byte references, a hash code), gap
    // 0x1fc, class 0x1010, hash, 2 references: +2 → 0x2010, +4 → 0x2020.
    b.extend_from_slice(&[4, 0x42, 0x01, 0xfc, 0, 0, 0x10, 0x10]);
    b.extend_from_slice(&0xdead_beefu32.to_be_bytes());
    b.extend_from_slice(&2u32.to_be_bytes());
    b.extend_from_slice(&[2, 4]);
    // Medium object at 0x2010: tag 0x48 (1 reference, 1-byte gap and references), gap 2,
    // class 0x1010, reference -2 → 0x2000.
    b.extend_from_slice(&[0x48, 2, 0, 0, 0x10, 0x10, 0xfe]);
    // Short object at 0x2020: tag 0x80 (class cache slot 0, the long record's 0x1010), gap 2.
    b.extend_from_slice(&[0x80, 2]);
    // Object array at 0x2030 (tag 8): flags 0x01, gap 2, element class 0x1010, 2 references
    // written last first, -2 → 0x2020 and -6 → 0x2000, length 3 (one null).
    b.extend_from_slice(&[
        8, 0x01, 2, 0, 0, 0x10, 0x10, 0, 0, 0, 2, 0xfe, 0xfa, 0, 0, 0, 3,
    ]);
    // Primitive array at 0x2040, short form: tag 0x30 (byte[], 1-byte fields), gap 2, length 10.
    b.extend_from_slice(&[0x30, 2, 10]);
    // Primitive array at 0x2050, long form: flags 0xd0 (int[], word fields), gap 2, length 1000.
    b.extend_from_slice(&[7, 0xd0, 0, 0, 0, 2, 0, 0, 0x03, 0xe8]);
    b.push(3); // end of dump
    b
}

#[test]
fn a_hand_written_version_4_dump_reads_as_written() {
    let graph = import(&hand_written_v4()).expect("the dump");
    assert_eq!(graph.node_count(), 10);
    assert_eq!(graph.meta().source_format, "phd");
    assert_eq!(
        graph.meta().runtime_version.as_deref(),
        Some("J2RE 1.4.2 IBM build cxia32142-20060421")
    );
    let expected: [(u64, &str, &str, &str, u64); 9] = [
        (0x1000, "class", "java.lang.Class", "java.lang.Object", 0),
        (0x1010, "class", "java.lang.Class", "com.example.Node", 0),
        (0x1020, "class", "java.lang.Class", "com.example.Node[]", 0),
        (0x2000, "instance", "com.example.Node", "", 20),
        (0x2010, "instance", "com.example.Node", "", 20),
        (0x2020, "instance", "com.example.Node", "", 20),
        // Before version 6 an array's size is two words, 8 bytes and the elements (DTFJ's).
        (
            0x2030,
            "object-array",
            "com.example.Node[]",
            "",
            8 + 8 + 3 * 4,
        ),
        (0x2040, "primitive-array", "byte[]", "", 8 + 8 + 10),
        (0x2050, "primitive-array", "int[]", "", 8 + 8 + 4000),
    ];
    for (address, kind, type_name, name, size) in expected {
        let n = node(&graph, address);
        assert_eq!(graph.kind(n).name, kind, "{address:#x}");
        assert_eq!(graph.type_name(n), type_name, "{address:#x}");
        assert_eq!(graph.name(n), name, "{address:#x}");
        assert_eq!(graph.shallow_size(n), size, "{address:#x}");
    }
    let property = |name: &str, to: u64| (EdgeKind::Property, name.to_owned(), to);
    let internal = |name: &str, to: u64| (EdgeKind::Internal, name.to_owned(), to);
    let element = |index: u32, to: u64| (EdgeKind::Element, format!("[{index}]"), to);
    assert_eq!(edges(&graph, node(&graph, 0x1000)), []);
    assert_eq!(
        edges(&graph, node(&graph, 0x1010)),
        [internal("<super>", 0x1000), property("<class ref>", 0x2000)]
    );
    assert_eq!(
        edges(&graph, node(&graph, 0x2000)),
        [
            internal("<class>", 0x1010),
            property("<field>", 0x2010),
            property("<field>", 0x2020)
        ]
    );
    assert_eq!(
        edges(&graph, node(&graph, 0x2010)),
        [internal("<class>", 0x1010), property("<field>", 0x2000)]
    );
    assert_eq!(
        edges(&graph, node(&graph, 0x2020)),
        [internal("<class>", 0x1010)]
    );
    assert_eq!(
        edges(&graph, node(&graph, 0x2030)),
        [
            internal("<class>", 0x1020),
            element(0, 0x2000),
            element(1, 0x2020)
        ]
    );
    assert_eq!(edges(&graph, node(&graph, 0x2050)), []);
    // No roots in a PHD: the classes, then what nothing references.
    let root = graph.root();
    assert!(graph.is_synthetic(root));
    assert_eq!(
        edges(&graph, root),
        [
            internal("<loaded class>", 0x1000),
            internal("<loaded class>", 0x1010),
            internal("<loaded class>", 0x1020),
            internal("<unreferenced>", 0x2030),
            internal("<unreferenced>", 0x2040),
            internal("<unreferenced>", 0x2050),
        ]
    );
    let notes = &graph.meta().notes;
    assert_eq!(notes[0], "IBM portable heap dump version 4, 32-bit");
    assert!(
        notes[1]
            .contains("the 3 classes, the 3 objects no other object references, and 0 object(s)"),
        "{notes:?}"
    );
    assert_eq!(notes.len(), 2, "{notes:?}");
}

/// A version-5 dump of a J9 VM whose objects are all hashed (flags 0x06): every record carries a
/// 2-byte hash code, gaps are in 4-byte units, and the class leads an object's references.
fn hand_written_j9_hashed() -> Vec<u8> {
    let mut b = utf("portable heap dump");
    b.extend_from_slice(&5u32.to_be_bytes());
    b.extend_from_slice(&6u32.to_be_bytes());
    b.extend_from_slice(&[1, 2, 2]); // start of header, end of header, start of dump
    // Class Foo at 0x100: 1-byte gap 0x40 (× 4), size 16, hash, superclass 0, no references.
    b.extend_from_slice(&[6, 0x00, 0x40, 0, 0, 0, 16, 0x12, 0x34, 0, 0, 0, 0]);
    b.extend(utf("Foo"));
    b.extend_from_slice(&0u32.to_be_bytes());
    // Medium object at 0x110: tag 0x50 (2 references), gap 4, class 0x100, hash, references
    // -4 → 0x100 (the class, which J9 writes first: dropped) and +4 → 0x120.
    b.extend_from_slice(&[0x50, 4, 0, 0, 1, 0, 0x56, 0x78, 0xfc, 4]);
    // Short object at 0x120 of the cached class, gap 4, hash.
    b.extend_from_slice(&[0x80, 4, 0x9a, 0xbc]);
    b.push(3);
    b
}

#[test]
fn a_hashed_j9_dump_skips_hash_codes_and_the_leading_class_reference() {
    let graph = import(&hand_written_j9_hashed()).expect("the dump");
    assert_eq!(graph.node_count(), 4);
    assert_eq!(graph.type_name(node(&graph, 0x120)), "Foo");
    assert_eq!(graph.shallow_size(node(&graph, 0x120)), 16);
    assert_eq!(
        edges(&graph, node(&graph, 0x110)),
        [
            (EdgeKind::Internal, "<class>".to_owned(), 0x100),
            (EdgeKind::Property, "<field>".to_owned(), 0x120)
        ]
    );
    assert_eq!(
        graph.meta().notes[0],
        "IBM portable heap dump version 5, 32-bit, J9"
    );
}

/// The HPROF fixture's heap, as the HPROF importer reads it.
fn fixture_graph() -> &'static HeapGraph {
    static GRAPH: OnceLock<HeapGraph> = OnceLock::new();
    GRAPH.get_or_init(|| {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/java/default.hprof.gz");
        let file = std::fs::File::open(&path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
        let mut bytes = Vec::new();
        flate2::read::MultiGzDecoder::new(file)
            .read_to_end(&mut bytes)
            .expect("gzip");
        heapgraph_import::hprof::import_slice(&bytes, &Default::default()).expect("the fixture")
    })
}

fn real_shaped_heap() -> &'static PhdHeap {
    static HEAP: OnceLock<PhdHeap> = OnceLock::new();
    HEAP.get_or_init(|| PhdHeap::from_java_graph(fixture_graph()))
}

/// The real-shaped dump, as a 64-bit OpenJ9 writes it.
fn real_shaped_dump() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| real_shaped_heap().write(true, FULL_VERSION))
}

/// The full version in the real-shaped dump's header.
const FULL_VERSION: &str =
    "JRE 17 Linux amd64-64-Bit Compressed References (heapgraph test writer)";

/// The type a record's node should have, from the writer's input: its class record's name, in
/// the source form the HPROF graph it came from spells it.
fn expected_type(
    class_names: &HashMap<u64, String>,
    source_names: &HashMap<String, String>,
    kind: &PhdKind,
) -> String {
    let source = |address: &u64| class_names.get(address).map(|vm| source_names[vm].clone());
    match kind {
        PhdKind::Instance { class } => source(class).unwrap_or("<unknown class>".to_owned()),
        PhdKind::ObjectArray { element_class, .. } => {
            source(element_class).map_or("<unknown class>".to_owned(), |name| format!("{name}[]"))
        }
        PhdKind::PrimitiveArray { element, .. } => PRIMITIVE_ARRAYS[*element as usize].to_owned(),
        PhdKind::Class { .. } => "java.lang.Class".to_owned(),
    }
}

#[test]
fn a_real_shaped_dump_reads_back_as_the_heap_it_was_written_from() {
    let heap = real_shaped_heap();
    let graph = import(real_shaped_dump()).expect("the dump");
    assert!(heap.objects.len() > 10_000, "{}", heap.objects.len());
    assert_eq!(
        graph.node_count(),
        heap.objects.len() + heap.classes.len() + 1
    );
    let class_names: HashMap<u64, String> = heap
        .classes
        .iter()
        .map(|class| match &class.kind {
            PhdKind::Class { name, .. } => (class.address, name.clone()),
            _ => unreachable!("classes are classes"),
        })
        .collect();
    let class_sizes: HashMap<u64, u64> = heap
        .classes
        .iter()
        .map(|class| match &class.kind {
            PhdKind::Class { instance_size, .. } => (class.address, u64::from(*instance_size)),
            _ => unreachable!("classes are classes"),
        })
        .collect();
    let class_object_size = heap
        .classes
        .iter()
        .find_map(|class| match &class.kind {
            PhdKind::Class {
                name,
                instance_size,
                ..
            } if name == "java/lang/Class" => Some(u64::from(*instance_size)),
            _ => None,
        })
        .expect("java/lang/Class");
    let fixture = fixture_graph();
    let source_names: HashMap<String, String> = fixture
        .nodes()
        .filter(|&n| fixture.kind(n).name == "class")
        .map(|n| (vm_name(fixture.name(n)), fixture.name(n).to_owned()))
        .collect();
    let mut checked_edges = 0;
    for object in heap.objects.iter().chain(&heap.classes) {
        let n = node(&graph, object.address);
        let want_type = expected_type(&class_names, &source_names, &object.kind);
        assert_eq!(graph.type_name(n), want_type, "{:#x}", object.address);
        let (want_size, link, link_name, element_edges) = match &object.kind {
            PhdKind::Instance { class } => (
                class_sizes.get(class).copied().unwrap_or(0),
                Some(*class).filter(|class| class_names.contains_key(class)),
                "<class>",
                false,
            ),
            PhdKind::ObjectArray {
                size,
                element_class,
                ..
            } => (
                *size,
                class_names
                    .get(element_class)
                    .map(|name| {
                        let array = if name.starts_with('[') {
                            format!("[{name}")
                        } else {
                            format!("[L{name};")
                        };
                        class_names
                            .iter()
                            .find(|(_, class)| **class == array)
                            .map(|(&address, _)| address)
                    })
                    .unwrap_or(None),
                "<class>",
                true,
            ),
            PhdKind::PrimitiveArray { size, element, .. } => (
                *size,
                class_names
                    .iter()
                    .find(|(_, class)| **class == vm_name(PRIMITIVE_ARRAYS[*element as usize]))
                    .map(|(&address, _)| address),
                "<class>",
                true,
            ),
            PhdKind::Class {
                name, super_class, ..
            } => {
                assert_eq!(
                    vm_name(graph.name(n)),
                    *name,
                    "class name at {:#x}",
                    object.address
                );
                (
                    class_object_size,
                    Some(*super_class).filter(|&address| address != 0),
                    "<super>",
                    false,
                )
            }
        };
        assert_eq!(graph.shallow_size(n), want_size, "{:#x}", object.address);
        let mut want: Vec<(EdgeKind, String, u64)> = Vec::new();
        if let Some(link) = link {
            want.push((EdgeKind::Internal, link_name.to_owned(), link));
        }
        // DTFJ's rule, which the reader keeps: in a J9 dump, a first reference (as written, so
        // an array's last element) to the object's class (an array's element class) is taken
        // for the class pointer some J9 versions write first, and dropped.
        let mut refs = object.refs.clone();
        let written_first = if element_edges {
            refs.last()
        } else {
            refs.first()
        }
        .copied();
        let class = match &object.kind {
            PhdKind::Instance { class } => Some(*class),
            PhdKind::ObjectArray { element_class, .. } => Some(*element_class),
            _ => None,
        };
        if written_first.is_some() && written_first == class {
            if element_edges {
                refs.pop();
            } else {
                refs.remove(0);
            }
        }
        for (index, &target) in refs.iter().enumerate() {
            want.push(if element_edges {
                (EdgeKind::Element, format!("[{index}]"), target)
            } else if link_name == "<super>" {
                (EdgeKind::Property, "<class ref>".to_owned(), target)
            } else {
                (EdgeKind::Property, "<field>".to_owned(), target)
            });
        }
        checked_edges += want.len();
        assert_eq!(edges(&graph, n), want, "{:#x}", object.address);
    }
    assert!(checked_edges > 20_000, "{checked_edges}");
    let notes = &graph.meta().notes;
    assert_eq!(notes[0], "IBM portable heap dump version 6, 64-bit, J9");
    assert_eq!(notes.len(), 2, "{notes:?}");
}

#[test]
fn the_roots_of_a_real_shaped_dump_are_its_classes_then_what_nothing_references() {
    let graph = import(real_shaped_dump()).expect("the dump");
    let root = graph.root();
    let mut referenced = vec![false; graph.node_count()];
    for n in graph.nodes().filter(|&n| n != root) {
        for edge in graph.edge_range(n) {
            let to = graph.edge_target(edge);
            if to != n {
                referenced[to.index()] = true;
            }
        }
    }
    let mut by_name: HashMap<String, Vec<NodeId>> = HashMap::default();
    for edge in graph.edge_range(root) {
        by_name
            .entry(graph.edge_name(edge).to_string())
            .or_default()
            .push(graph.edge_target(edge));
    }
    let classes: Vec<NodeId> = graph
        .nodes()
        .filter(|&n| graph.kind(n).name == "class")
        .collect();
    assert_eq!(by_name["<loaded class>"], classes);
    let unreferenced: Vec<NodeId> = graph
        .nodes()
        .filter(|&n| n != root && graph.kind(n).name != "class" && !referenced[n.index()])
        .collect();
    assert_eq!(by_name["<unreferenced>"], unreferenced);
    assert!(!unreferenced.is_empty());
    // Everything is reached from the roots (what is left over is rooted by cycle).
    let mut reached = vec![false; graph.node_count()];
    let mut stack = vec![root];
    reached[root.index()] = true;
    while let Some(n) = stack.pop() {
        for edge in graph.edge_range(n) {
            let to = graph.edge_target(edge);
            if !reached[to.index()] {
                reached[to.index()] = true;
                stack.push(to);
            }
        }
    }
    assert!(reached.iter().all(|&r| r));
    let cycles = by_name.get("<unreferenced cycle>").map_or(0, Vec::len);
    assert!(graph.meta().notes[1].contains(&format!(
        "the {} classes, the {} objects no other object references, and {cycles} object(s)",
        classes.len(),
        unreferenced.len()
    )));
}

#[test]
fn a_cut_dump_is_read_as_far_as_it_goes() {
    let bytes = real_shaped_dump();
    let header_end = 20 + 4 + 4 + 1 + 1 + 2 + FULL_VERSION.len() + 1 + 1;
    assert_eq!(bytes[header_end - 1], 2, "start of dump");
    let mut cuts: Vec<usize> = (0..4096).collect();
    cuts.extend((4096..bytes.len()).step_by(997));
    let mut nodes_before = 0;
    for cut in cuts {
        match import(&bytes[..cut]) {
            Ok(graph) => {
                assert!(cut >= header_end, "cut at {cut}");
                let notes = &graph.meta().notes;
                let note = notes
                    .iter()
                    .find(|note| note.starts_with("the dump ends at byte"))
                    .unwrap_or_else(|| panic!("cut at {cut}: no note in {notes:?}"));
                assert!(
                    note.contains(&format!("byte {cut}")),
                    "cut at {cut}: {note}"
                );
                assert!(graph.node_count() >= nodes_before, "cut at {cut}");
                nodes_before = graph.node_count();
            }
            Err(ImportError::Truncated { offset, .. }) => {
                assert!(cut < header_end, "cut at {cut}");
                assert_eq!(offset, cut as u64);
            }
            Err(err) => panic!("cut at {cut}: {err}"),
        }
    }
    let whole = import(bytes).expect("whole");
    assert!(nodes_before > whole.node_count() * 9 / 10);
    // Cut before the class records: the objects stay, typed <unknown class>, and a note says why.
    let cut = import(&bytes[..bytes.len() / 2]).expect("cut");
    assert!(
        cut.meta()
            .notes
            .iter()
            .any(|note| note.contains("no class record (the VM writes the class records last")),
        "{:?}",
        cut.meta().notes
    );
}

#[test]
fn malformed_input_names_its_offset() {
    let good = hand_written_v4();
    let error = |bytes: &[u8]| import(bytes).expect_err("malformed").to_string();
    let mut version = good.clone();
    version[23] = 7;
    assert_eq!(
        error(&version),
        "phd: at byte 20: version 7; heapgraph reads versions 4, 5 and 6 of the format"
    );
    let mut identifier = good.clone();
    identifier[2] = b'P';
    assert!(error(&identifier).starts_with("phd: at byte 0: the header is \"Portable"));
    // The first record's tag (the class record at 0x1000) replaced by an unknown one.
    let first_record = good.len() - hand_written_v4_body_len();
    let mut tag = good.clone();
    tag[first_record] = 0x11;
    assert_eq!(
        error(&tag),
        format!("phd: at byte {first_record}: unknown record tag 0x11 (after 0 records)")
    );
    // A negative reference count in the first class record.
    let count_at = first_record + 12 + 2 + "java/lang/Object".len();
    let mut count = good.clone();
    count[count_at..count_at + 4].copy_from_slice(&(-5i32).to_be_bytes());
    assert_eq!(
        error(&count),
        format!("phd: at byte {count_at}: a negative reference count, -5")
    );
    let mut header_tag = good.clone();
    header_tag[29] = 9;
    assert!(error(&header_tag).starts_with("phd: at byte 29: unknown header tag 9"));
    assert!(matches!(
        import(&good[..10]),
        Err(ImportError::Truncated { offset: 10, .. })
    ));
}

/// Bytes of [`hand_written_v4`] after its header.
fn hand_written_v4_body_len() -> usize {
    let header = 20 + 8 + 1 + 9 + 1 + 2 + "J2RE 1.4.2 IBM build cxia32142-20060421".len() + 2;
    hand_written_v4().len() - header
}

#[test]
fn sniffing_knows_a_phd_by_its_identifier() {
    assert_eq!(phd::sniff(&hand_written_v4()), Some(true));
    assert_eq!(phd::sniff(b"\x00\x12portable"), None);
    assert_eq!(phd::sniff(b""), None);
    assert_eq!(phd::sniff(b"JAVA PROFILE 1.0.2"), Some(false));
    assert_eq!(
        heapgraph_import::sniff(real_shaped_dump()),
        Some(heapgraph_import::Format::Phd)
    );
}

#[test]
fn a_gzipped_dump_reads_as_the_plain_one() {
    let dir = std::env::temp_dir().join(format!("heapgraph-phd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let plain = dir.join("heap.phd");
    std::fs::write(&plain, real_shaped_dump()).expect("write");
    let gzipped = dir.join("heap.phd.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, real_shaped_dump()).expect("gzip");
    std::fs::write(&gzipped, encoder.finish().expect("gzip")).expect("write");
    let load = |path: &Path| match heapgraph_import::import_path(path, &Default::default()) {
        Ok(heapgraph_import::Contents::HeapGraph(graph)) => graph,
        Ok(_) => panic!("not a heap graph"),
        Err(err) => panic!("{path:?}: {err}"),
    };
    let (a, b) = (load(&plain), load(&gzipped));
    assert_eq!(a.node_count(), b.node_count());
    assert_eq!(a.edge_count(), b.edge_count());
    assert_eq!(a.total_shallow_size(), b.total_shallow_size());
    std::fs::remove_dir_all(&dir).ok();
}

/// A valid header: 64-bit J9, version 6.
fn header() -> Vec<u8> {
    let mut bytes = utf("portable heap dump");
    bytes.extend_from_slice(&6u32.to_be_bytes());
    bytes.extend_from_slice(&5u32.to_be_bytes());
    bytes.extend_from_slice(&[1, 2, 2]);
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn arbitrary_records_never_panic(body in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut bytes = header();
        bytes.extend_from_slice(&body);
        let _ = import(&bytes);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = import(&bytes);
    }

    #[test]
    fn a_mutated_real_shaped_dump_never_panics(
        changes in proptest::collection::vec((0usize..200_000, any::<u8>()), 1..8),
    ) {
        let mut bytes = real_shaped_dump()[..200_000].to_vec();
        for (at, byte) in changes {
            bytes[at] = byte;
        }
        let _ = import(&bytes);
    }
}
