//! The `.hgd` heap-graph codec's tests: round trips, cuts at every offset, foreign writers,
//! corrupt records, and arbitrary bytes.

use super::write::{Layout, write_as, write_in_chunks};
use super::*;
use crate::{Contents, ImportError};
use heapgraph_format::{EdgeColumns, Header, KIND_HEAP_GRAPH, NodeColumns, Writer};
use heapgraph_model::{
    AccumulatedTypes, ChildLists, EdgeKind, GraphMeta, HeapGraph, HeapGraphParts, NodeKindInfo,
    Runtime, StoredAnalysis, StringId, StringTable, TypePathNode, TypePaths, TypeTotals,
};
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
        idom: vec![StoredAnalysis::NONE, 0, 0, 1, 1, 1],
        retained_size: vec![
            u64::from(u32::MAX) + 161,
            16 + 48 + 64 + 1 + u64::from(u32::MAX),
            32,
            48,
            64,
            1 << 32,
        ]
        .into(),
        distance: vec![0, 1, 1, 2, 2, StoredAnalysis::NONE],
        retained_count: vec![6, 4, 1, 1, 1, 1],
        chain_parent: vec![StoredAnalysis::NONE, 0, 0, 1, 1, StoredAnalysis::NONE],
        // Node 0's children 1 and 2, node 1's 3, 4 and 5, as zigzagged distances.
        dominator_children: Some(ChildLists {
            parent_bits: vec![0b11],
            parents_before: vec![0],
            first: vec![0, 2, 5],
            bytes: vec![2, 4, 4, 6, 8],
        }),
        type_totals: Some(TypeTotals {
            types: type_name.clone(),
            count: vec![2, 1, 1, 1],
            shallow: vec![64, 32, 64, 1 << 32],
            retained: vec![16 + 48 + 64 + 1 + u64::from(u32::MAX), 32, 64, 1 << 32],
        }),
        // The two `Object`s: node 1 (by edge 0 from the root), node 3 below it (by edge 2);
        // and the `🦀`, node 5 (by edge 4 from node 1), whose tree has two rows.
        type_paths: vec![
            TypePaths {
                type_name: type_name[0],
                branches: 20,
                objects: 2,
                reached: 2,
                retained_size: 16 + 48 + 64 + 1 + u64::from(u32::MAX),
                nodes: vec![
                    TypePathNode {
                        node: 1,
                        edge: Some(0),
                        parent: None,
                        depth: 1,
                        indent: 0,
                        is_target: true,
                        targets: 2,
                        targets_retained_size: 16 + 48 + 64 + 1 + u64::from(u32::MAX),
                        ..TypePathNode::default()
                    },
                    TypePathNode {
                        node: 3,
                        edge: Some(2),
                        parent: Some(0),
                        depth: 2,
                        indent: 0,
                        is_target: true,
                        targets: 1,
                        targets_retained_size: 48,
                        skipped_steps: 1 << 40,
                        hidden_children: 3,
                        hidden_targets: 1 << 33,
                        hidden_retained_size: u64::MAX - 1,
                    },
                ],
            },
            TypePaths {
                type_name: type_name[3],
                branches: 1,
                objects: 1,
                reached: 1,
                retained_size: 1 << 32,
                nodes: vec![
                    TypePathNode {
                        node: 1,
                        edge: None,
                        parent: None,
                        depth: 1,
                        targets: 1,
                        targets_retained_size: 1 << 32,
                        ..TypePathNode::default()
                    },
                    TypePathNode {
                        node: 5,
                        edge: Some(4),
                        parent: Some(0),
                        depth: 2,
                        indent: 1,
                        is_target: true,
                        targets: 1,
                        targets_retained_size: 1 << 32,
                        ..TypePathNode::default()
                    },
                ],
            },
        ],
        // Below node 1: nodes 3 (`Object`), 4 (`größe`) and 5 (`🦀`), the largest first.
        accumulated: vec![AccumulatedTypes {
            point: 1,
            representative: 5,
            types: vec![type_name[3], type_name[2], type_name[0]],
            count: vec![1, 1, 1],
            retained: vec![1 << 32, 64, 48],
        }],
    }
}

/// `graph` (and `analysis`) written as images, each vector in pieces of `piece_bytes`.
fn write_images(
    graph: &HeapGraph,
    analysis: Option<&StoredAnalysis>,
    piece_bytes: usize,
) -> Vec<u8> {
    let mut file = Vec::new();
    write_as(graph, analysis, &mut file, Layout::Images { piece_bytes }).expect("written");
    file
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
    assert_same_columns(read, written);
}

/// Every column and the string table are equal (the metadata may differ by a note).
fn assert_same_columns(read: &HeapGraph, written: &HeapGraph) {
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
        if chunk_rows == 1 << 20 {
            assert_eq!(analysis.as_ref(), Some(&stored));
        } else {
            assert_eq!(analysis, Some(in_plain_chunks(&stored)));
        }
    }
}

/// What plain chunks hold of `stored`: all but the dominator tree's children, which only an
/// image holds.
fn in_plain_chunks(stored: &StoredAnalysis) -> StoredAnalysis {
    StoredAnalysis {
        dominator_children: None,
        ..stored.clone()
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

/// Stored types below an accumulation point that name a node or a type outside the graph are
/// left out with a note, in plain chunks and in images alike; the rest of the analysis stays.
#[test]
fn hgd_accumulated_types_outside_the_graph_are_ignored_with_a_note() {
    let graph = sample_graph();
    let lies: [fn(&mut StoredAnalysis); 3] = [
        |stored| stored.accumulated[0].point = 6,
        |stored| stored.accumulated[0].representative = 99,
        |stored| {
            // A string past the sample's few, from a larger table.
            let mut larger = StringTable::new();
            let past = (0..1000).map(|at| larger.intern(&at.to_string())).last();
            stored.accumulated[0].types[1] = past.expect("a string");
        },
    ];
    for (at, lie) in lies.into_iter().enumerate() {
        let mut stored = sample_analysis();
        lie(&mut stored);
        for file in [
            write(&graph, Some(&stored), 2),
            write_images(&graph, Some(&stored), 8),
        ] {
            let (back, analysis) = read(&file).expect("read back");
            let analysis = analysis.expect("the rest of the analysis");
            assert!(analysis.accumulated.is_empty(), "lie {at}");
            assert_eq!(analysis.type_paths, stored.type_paths, "lie {at}");
            assert!(
                back.meta().notes.iter().any(|note| note.contains(
                    "accumulation points name a node or a type outside the graph; they are ignored"
                )),
                "lie {at}: {:?}",
                back.meta().notes
            );
        }
    }
}

#[test]
fn hgd_analysis_of_the_wrong_length_is_refused() {
    let mut stored = sample_analysis();
    stored.distance.pop();
    let err =
        write_heap_graph(&sample_graph(), Some(&stored), Vec::new()).expect_err("a short column");
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn hgd_cut_at_every_offset_reads_what_arrived_or_says_truncated() {
    let graph = sample_graph();
    let stored = in_plain_chunks(&sample_analysis());
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
                    // The type totals, the type paths and then the types below accumulation
                    // points come last: a cut before them leaves them out, each tree or
                    // point's types whole or not at all.
                    if analysis.type_totals.is_none() {
                        analysis.type_totals.clone_from(&stored.type_totals);
                    }
                    assert!(stored.type_paths.starts_with(&analysis.type_paths));
                    analysis.type_paths.clone_from(&stored.type_paths);
                    assert!(stored.accumulated.starts_with(&analysis.accumulated));
                    analysis.accumulated.clone_from(&stored.accumulated);
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

/// A file of images (the default layout) holds no `nodes` or `edges` chunk, says version 2,
/// and reads back the same graph and analysis whether its vectors come whole or in pieces of
/// a few bytes.
#[test]
fn hgd_images_round_trip_in_any_pieces() {
    let graph = sample_graph();
    let stored = sample_analysis();
    let mut default = Vec::new();
    write_heap_graph(&graph, Some(&stored), &mut default).expect("written");
    let reader = heapgraph_format::SliceReader::new(&default).expect("header");
    assert_eq!(reader.header().version, heapgraph_format::VERSION_IMAGES);
    let mut reader = reader;
    let mut types = Vec::new();
    while let Some(chunk) = reader.next_chunk().expect("chunk") {
        types.push(chunk.type_name().to_owned());
    }
    assert!(
        !types.iter().any(|name| name == "nodes" || name == "edges"),
        "{types:?}"
    );
    assert!(types.iter().any(|name| name == "image"), "{types:?}");
    for (file, analysis) in [
        (default, Some(&stored)),
        (write_images(&graph, Some(&stored), 8), Some(&stored)),
        (write_images(&graph, Some(&stored), 1), Some(&stored)),
        (write_images(&graph, None, 3), None),
    ] {
        let (back, back_analysis) = read(&file).expect("read back");
        assert_same(&back, &graph);
        assert_eq!(back_analysis.as_ref(), analysis);
        // Types stay findable by name, as from plain columns.
        assert_eq!(back.strings().find("größe"), graph.strings().find("größe"));
    }
}

/// The plain writer writes what every reader reads: version 1, `nodes` and `edges` chunks, no
/// image; and it reads back the same graph and analysis.
#[test]
fn hgd_plain_files_are_version_1_and_round_trip() {
    let graph = sample_graph();
    let stored = sample_analysis();
    let mut file = Vec::new();
    super::write_heap_graph_plain(&graph, Some(&stored), &mut file).expect("written");
    let mut reader = heapgraph_format::SliceReader::new(&file).expect("header");
    assert_eq!(reader.header().version, heapgraph_format::VERSION);
    let mut types = Vec::new();
    while let Some(chunk) = reader.next_chunk().expect("chunk") {
        types.push(chunk.type_name().to_owned());
    }
    assert!(types.iter().any(|name| name == "nodes"), "{types:?}");
    assert!(
        !types.iter().any(|name| name.starts_with("image")),
        "{types:?}"
    );
    let (back, analysis) = read(&file).expect("read back");
    assert_same(&back, &graph);
    assert_eq!(analysis, Some(in_plain_chunks(&stored)));
}

/// Cut anywhere, a file of images reads with its whole graph and a note (its analysis only if
/// that arrived whole too), or fails as cut short: its columns are read only whole.
#[test]
fn hgd_images_cut_at_every_offset_read_whole_or_say_truncated() {
    let graph = sample_graph();
    let stored = sample_analysis();
    let file = write_images(&graph, Some(&stored), 16);
    // The filler before each image's bytes makes the file mostly zeros: cut around every
    // record's end, and every 61st byte between.
    let mut cuts: Vec<usize> = (0..file.len()).step_by(61).collect();
    let mut reader = heapgraph_format::SliceReader::new(&file).expect("header");
    cuts.push(reader.offset() as usize);
    while reader.next_chunk().expect("chunk").is_some() {
        let end = reader.offset() as usize;
        cuts.extend([end - 1, end, end + 1]);
    }
    cuts.retain(|&cut| cut < file.len());
    let (mut whole, mut refused) = (0, 0);
    for cut in cuts {
        match read(&file[..cut]) {
            Ok((back, analysis)) => {
                whole += 1;
                assert_same_columns(&back, &graph);
                let notes = &back.meta().notes;
                assert!(
                    notes
                        .iter()
                        .any(|note| note.starts_with("the file ends after")),
                    "cut at {cut}: {notes:?}"
                );
                if let Some(mut analysis) = analysis {
                    // The optional columns come after the required ones, and the type totals
                    // last: a cut before them leaves them out, and the rest is whole.
                    if analysis.type_totals.is_none() {
                        analysis.type_totals.clone_from(&stored.type_totals);
                    }
                    if analysis.dominator_children.is_none() {
                        analysis
                            .dominator_children
                            .clone_from(&stored.dominator_children);
                    }
                    if analysis.chain_parent.is_empty() {
                        analysis.chain_parent.clone_from(&stored.chain_parent);
                        if analysis.retained_count.is_empty() {
                            analysis.retained_count.clone_from(&stored.retained_count);
                        }
                    }
                    // The type paths and then the types below accumulation points come
                    // last, each tree or point's types whole or not at all.
                    assert!(stored.type_paths.starts_with(&analysis.type_paths));
                    analysis.type_paths.clone_from(&stored.type_paths);
                    assert!(stored.accumulated.starts_with(&analysis.accumulated));
                    analysis.accumulated.clone_from(&stored.accumulated);
                    assert_eq!(analysis, stored, "cut at {cut}");
                }
            }
            Err(ImportError::Truncated { offset, .. }) => {
                refused += 1;
                assert!(offset <= cut as u64);
            }
            Err(err) => panic!("cut at {cut}: {err}"),
        }
    }
    assert!(whole > 0 && refused > 0, "{whole} read, {refused} refused");
}

/// An image whose vectors do not make a graph (an edge to no node, offsets that run past the
/// edges) is refused by name, by both readers.
/// A stored merged tree is in pre-order, each row's parent an earlier row, and a row is an
/// instance or not: a file that says otherwise is refused, naming the chunk and its offset.
#[test]
fn hgd_type_paths_out_of_order_or_not_yes_or_no_are_refused() {
    let graph = sample_graph();
    let mut stored = sample_analysis();
    stored.type_paths[0].nodes[1].parent = Some(1);
    let file = write(&graph, Some(&stored), 1 << 20);
    let err = read(&file).map(drop).expect_err("a parent after its child");
    let ImportError::Malformed { offset, .. } = &err else {
        panic!("{err}");
    };
    assert!(*offset > 0, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("a type_paths chunk: row 1 has parent row 1, not an earlier one"),
        "{text}"
    );

    let file = write(&graph, Some(&sample_analysis()), 1 << 20);
    // The first tree's `is_target` blob: the key, bin8 of 2 bytes, then 1 1.
    let is_target = [&b"\xa9is_target\xc4\x02\x01\x01"[..]].concat();
    let at = file
        .windows(is_target.len())
        .position(|window| window == is_target)
        .expect("the first tree's is_target");
    let mut lie = file;
    lie[at + is_target.len() - 1] = 2;
    let text = read(&lie).map(drop).expect_err("a 2").to_string();
    assert!(text.contains("row 1 has is_target 2, not 0 or 1"), "{text}");
}

#[test]
fn hgd_images_that_lie_are_refused() {
    let graph = sample_graph();
    let file = write_images(&graph, None, 1 << 20);
    // The bytes of `edge_to` (1 2 3 4 5 1 2 0 as u32) and of the offsets' steps.
    let edge_to: Vec<u8> = [1u32, 2, 3, 4, 5, 1, 2, 0]
        .iter()
        .flat_map(|to| to.to_le_bytes())
        .collect();
    let at = file
        .windows(edge_to.len())
        .position(|window| window == edge_to)
        .expect("edge_to's bytes");
    let mut lie = file.clone();
    lie[at + 4] = 6;
    let err = read(&lie)
        .map(drop)
        .expect_err("an edge to no node")
        .to_string();
    assert!(err.contains("edge"), "{err}");
    let mut lie = file;
    lie[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(read(&lie).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn hgd_changed_bytes_of_images_never_panic(
        changes in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        let mut file = write_images(&sample_graph(), Some(&sample_analysis()), 8);
        for (at, byte) in changes {
            let at = at % file.len();
            file[at] = byte;
        }
        if let Ok((graph, Some(analysis))) = read(&file) {
            prop_assert_eq!(analysis.idom.len(), graph.node_count());
        }
    }

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
            prop_assert_eq!(analysis.idom.len(), graph.node_count());
        }
    }
}
