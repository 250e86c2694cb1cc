//! Tests of the V8 heap snapshot importer through its public face: real snapshots against a
//! serde_json oracle, layout variants, every error case, a truncation sweep, tiny reads,
//! gzip, and proptests that bad input never panics.

use crate::fixtures::{fixture, plain_bytes};
use heapgraph_import::{Contents, ImportError, v8};
use heapgraph_model::{EdgeName, HeapGraph};
use proptest::prelude::*;
use rayon::prelude::*;
use serde_json::{Value, json};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The cut-down real snapshot committed beside the tests (see `data/make_v8_tiny.js`).
fn tiny_snapshot() -> Vec<u8> {
    plain_bytes(&data_path("v8-tiny.heapsnapshot.gz"))
}

fn data_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn fixture_path(name: &str) -> PathBuf {
    fixture(&format!("v8/{name}"))
}

fn import(bytes: &[u8]) -> Result<HeapGraph, ImportError> {
    v8::import(bytes, &v8::Options::default())
}

fn graph_of(dump: Contents) -> HeapGraph {
    match dump {
        Contents::HeapGraph(graph) => graph,
        #[allow(unreachable_patterns)]
        _ => panic!("not a heap graph"),
    }
}

/// A scratch directory of this test process.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("heapgraph-v8-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------
// The oracle: an independent reading of the snapshot through serde_json::Value.

/// A node as the oracle reads it: id, summary type, name, self size, kind.
#[derive(Debug, PartialEq)]
struct OracleNode {
    id: u64,
    type_name: String,
    name: String,
    self_size: u64,
    kind: String,
}

/// An edge as the oracle reads it: source and target ordinals, kind, name.
#[derive(Debug, PartialEq)]
struct OracleEdge {
    from: usize,
    to: usize,
    kind: String,
    name: String,
}

/// Replaces `\u` escapes of lone surrogates by `\ufffd`, which serde_json refuses and the
/// importer reads as U+FFFD.
fn replace_lone_surrogates(text: &[u8]) -> Vec<u8> {
    fn unit_at(text: &[u8], at: usize) -> Option<u16> {
        if text.get(at..at + 2)? != b"\\u" {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(text.get(at + 2..at + 6)?).ok()?, 16).ok()
    }
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        if text[at] != b'\\' {
            out.push(text[at]);
            at += 1;
            continue;
        }
        match unit_at(text, at) {
            Some(high @ 0xd800..=0xdbff) => {
                if matches!(unit_at(text, at + 6), Some(0xdc00..=0xdfff)) {
                    out.extend_from_slice(&text[at..at + 12]);
                    at += 12;
                } else {
                    let _ = high;
                    out.extend_from_slice(b"\\ufffd");
                    at += 6;
                }
            }
            Some(0xdc00..=0xdfff) => {
                out.extend_from_slice(b"\\ufffd");
                at += 6;
            }
            _ => {
                out.extend_from_slice(&text[at..(at + 2).min(text.len())]);
                at += 2;
            }
        }
    }
    out
}

fn oracle(text: &[u8]) -> (Vec<OracleNode>, Vec<OracleEdge>) {
    let doc: Value = serde_json::from_slice(&replace_lone_surrogates(text)).unwrap();
    let meta = &doc["snapshot"]["meta"];
    let names = |list: &str| -> Vec<String> {
        meta[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    let node_fields = names("node_fields");
    let edge_fields = names("edge_fields");
    let field = |fields: &[String], name: &str| fields.iter().position(|f| f == name).unwrap();
    let node_types: Vec<&str> = meta["node_types"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let edge_types: Vec<&str> = meta["edge_types"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let numbers = |key: &str| -> Vec<u64> {
        doc[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect()
    };
    let nodes = numbers("nodes");
    let edges = numbers("edges");
    let strings: Vec<&str> = doc["strings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let nf = node_fields.len();
    let ef = edge_fields.len();
    let mut oracle_nodes = Vec::new();
    let mut oracle_edges = Vec::new();
    let mut next_edge = 0;
    for (ordinal, record) in nodes.chunks(nf).enumerate() {
        // A type the meta does not list is `undefined`, as DevTools' `nodeTypes[n]` is.
        let kind = node_types
            .get(record[field(&node_fields, "type")] as usize)
            .copied()
            .unwrap_or("undefined");
        let name = strings[record[field(&node_fields, "name")] as usize];
        let type_name = match kind {
            "hidden" => "(system)".to_owned(),
            "object" | "native" => name.to_owned(),
            "code" => "(compiled code)".to_owned(),
            other => format!("({other})"),
        };
        oracle_nodes.push(OracleNode {
            id: record[field(&node_fields, "id")],
            type_name,
            name: name.to_owned(),
            self_size: record[field(&node_fields, "self_size")],
            kind: kind.to_owned(),
        });
        for _ in 0..record[field(&node_fields, "edge_count")] {
            let edge = &edges[next_edge * ef..next_edge * ef + ef];
            next_edge += 1;
            let kind = edge_types[edge[field(&edge_fields, "type")] as usize];
            let name_or_index = edge[field(&edge_fields, "name_or_index")];
            let name = match kind {
                "element" | "hidden" => format!("[{name_or_index}]"),
                _ => strings[name_or_index as usize].to_owned(),
            };
            let to = edge[field(&edge_fields, "to_node")] as usize;
            assert_eq!(to % nf, 0);
            oracle_edges.push(OracleEdge {
                from: ordinal,
                to: to / nf,
                kind: kind.to_owned(),
                name,
            });
        }
    }
    assert_eq!(next_edge * ef, edges.len());
    (oracle_nodes, oracle_edges)
}

/// Checks every node and edge of `graph` against the oracle's reading of `text`.
fn check_against_oracle(text: &[u8], graph: &HeapGraph) {
    let (nodes, edges) = oracle(text);
    assert_eq!(graph.node_count(), nodes.len());
    assert_eq!(graph.edge_count(), edges.len());
    assert_eq!(graph.root().index(), 0);
    for (node, expected) in graph.nodes().zip(&nodes) {
        let got = OracleNode {
            id: graph.object_id(node),
            type_name: graph.type_name(node).to_owned(),
            name: graph.name(node).to_owned(),
            self_size: graph.shallow_size(node),
            kind: graph.kind(node).name.clone(),
        };
        assert_eq!(&got, expected, "node {}", node.index());
        assert_eq!(graph.is_synthetic(node), expected.kind == "synthetic");
    }
    let mut got_edges = Vec::new();
    for node in graph.nodes() {
        for edge in graph.edge_range(node) {
            got_edges.push(OracleEdge {
                from: node.index(),
                to: graph.edge_target(edge).index(),
                kind: graph.edge_kind(edge).name().to_owned(),
                name: match graph.edge_name(edge) {
                    EdgeName::Named(name) => name.to_owned(),
                    EdgeName::Index(index) => format!("[{index}]"),
                },
            });
        }
    }
    for (index, (got, expected)) in got_edges.iter().zip(&edges).enumerate() {
        assert_eq!(got, expected, "edge {index}");
    }
    assert_eq!(graph.meta().source_format, "v8-heapsnapshot");
    assert_eq!(graph.meta().runtime, heapgraph_model::Runtime::V8);
}

/// Everything a graph holds, for comparing two imports of the same snapshot.
fn fingerprint(graph: &HeapGraph) -> impl PartialEq + std::fmt::Debug + use<> {
    let parts = graph.parts();
    (
        (
            parts.node_object_id.clone(),
            parts.node_kind.clone(),
            parts.node_type.clone(),
            parts.node_name.clone(),
            parts.node_shallow_size.clone(),
            parts.first_edge.clone(),
        ),
        (
            parts.edge_to.clone(),
            parts.edge_kind.clone(),
            parts.edge_name.clone(),
            parts.node_kinds.clone(),
            parts.root,
        ),
        graph
            .strings()
            .iter()
            .map(|(_, text)| text.to_owned())
            .collect::<Vec<_>>(),
        graph.meta().clone(),
    )
}

// ---------------------------------------------------------------------------------------
// Real snapshots.

#[test]
fn tiny_snapshot_matches_the_oracle() {
    let text = tiny_snapshot();
    let graph = import(&text).unwrap();
    check_against_oracle(&text, &graph);
    assert!(graph.meta().notes.is_empty());
}

#[test]
fn odd_strings_are_decoded_and_never_fail() {
    let graph = import(&tiny_snapshot()).unwrap();
    // Names are not findable by text (only types are), so look through every string.
    let has = |text: &str| graph.strings().iter().any(|(_, string)| string == text);
    assert!(has(
        "quote \" backslash \\ slash / \u{8}\u{c}\n\r\t control \u{1} end"
    ));
    assert!(has("pair \u{1f600} and U+F600 \u{f600}"));
    assert!(has("lone high \u{fffd} then text"));
    assert!(has("lone low \u{fffd} and high at end \u{fffd}"));
    assert!(has("low then high \u{fffd}\u{fffd}"));
    assert!(has("caf\u{e9} \u{4e2d}\u{6587}"));
    assert!(has(&"x".repeat(3000)));
}

#[test]
fn committed_fixtures_match_the_oracle_through_import_path() {
    for name in [
        "app-before.heapsnapshot.gz",
        "app-after.heapsnapshot.gz",
        "app-final.heapsnapshot.gz",
    ] {
        let path = fixture_path(name);
        let graph = graph_of(heapgraph_import::import_path(&path, &Default::default()).unwrap());
        check_against_oracle(&plain_bytes(&path), &graph);
    }
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs node")]
fn a_snapshot_node_writes_now_matches_the_oracle() {
    let dir = scratch_dir("fresh");
    let path = dir.join("fresh.heapsnapshot");
    let node = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("node").is_file()));
    assert!(
        node,
        "node is needed by this test and is not on PATH: run tests/setup.sh (apt-get install nodejs)"
    );
    let status = std::process::Command::new("node")
        .arg("-e")
        .arg("require('v8').writeHeapSnapshot(process.argv[1])")
        .arg(&path)
        .status()
        .expect("node runs");
    assert!(status.success());
    let text = std::fs::read(&path).unwrap();
    let graph = graph_of(heapgraph_import::import_path(&path, &Default::default()).unwrap());
    check_against_oracle(&text, &graph);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gzip_input_reads_through_import_path() {
    let dir = scratch_dir("gzip");
    let path = dir.join("tiny.heapsnapshot.gz");
    std::fs::copy(data_path("v8-tiny.heapsnapshot.gz"), &path).unwrap();
    let from_gzip = graph_of(heapgraph_import::import_path(&path, &Default::default()).unwrap());
    let plain = dir.join("tiny.heapsnapshot");
    std::fs::write(&plain, tiny_snapshot()).unwrap();
    let from_plain = graph_of(heapgraph_import::import_path(&plain, &Default::default()).unwrap());
    assert_eq!(fingerprint(&from_gzip), fingerprint(&from_plain));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A reader that hands out at most `step` bytes per call.
struct Trickle<'a> {
    bytes: &'a [u8],
    step: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
fn tiny_reads_give_the_same_graph_as_one_read() {
    let text = tiny_snapshot();
    let whole = fingerprint(&import(&text).unwrap());
    for capacity in 1..=7 {
        let reader = BufReader::with_capacity(capacity, &text[..]);
        let graph = v8::import(reader, &v8::Options::default()).unwrap();
        assert_eq!(fingerprint(&graph), whole, "capacity {capacity}");
        let trickle = Trickle {
            bytes: &text,
            step: capacity,
        };
        let reader = BufReader::with_capacity(capacity, trickle);
        let graph = v8::import(reader, &v8::Options::default()).unwrap();
        assert_eq!(fingerprint(&graph), whole, "trickle {capacity}");
    }
}

// ---------------------------------------------------------------------------------------
// Layout variants, rewritten from the tiny snapshot through serde_json.

/// The tiny snapshot as a JSON value (lone surrogates replaced, which the tests here do not
/// look at).
fn tiny_value() -> Value {
    serde_json::from_slice(&replace_lone_surrogates(&tiny_snapshot())).unwrap()
}

fn to_text(doc: &Value) -> Vec<u8> {
    serde_json::to_vec(doc).unwrap()
}

/// Drops node field `name` from the meta and every record.
fn drop_node_field(doc: &mut Value, name: &str) {
    let fields = doc["snapshot"]["meta"]["node_fields"]
        .as_array_mut()
        .unwrap();
    let position = fields.iter().position(|f| f == name).unwrap();
    let nf = fields.len();
    fields.remove(position);
    doc["snapshot"]["meta"]["node_types"]
        .as_array_mut()
        .unwrap()
        .remove(position);
    let nodes: Vec<Value> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(index, _)| index % nf != position)
        .map(|(_, v)| v.clone())
        .collect();
    doc["nodes"] = Value::Array(nodes);
    // `to_node` is an offset in the nodes array, so it shrinks with the records.
    let ef = doc["snapshot"]["meta"]["edge_fields"]
        .as_array()
        .unwrap()
        .len();
    let to_field = doc["snapshot"]["meta"]["edge_fields"]
        .as_array()
        .unwrap()
        .iter()
        .position(|f| f == "to_node")
        .unwrap();
    for (index, value) in doc["edges"].as_array_mut().unwrap().iter_mut().enumerate() {
        if index % ef == to_field {
            *value = json!(value.as_u64().unwrap() / nf as u64 * (nf as u64 - 1));
        }
    }
}

#[test]
fn six_and_five_node_field_layouts_read_the_same() {
    let text = tiny_snapshot();
    let seven = import(&text).unwrap();
    let mut doc = tiny_value();
    drop_node_field(&mut doc, "detachedness");
    let six_text = to_text(&doc);
    let six = import(&six_text).unwrap();
    check_against_oracle(&six_text, &six);
    drop_node_field(&mut doc, "trace_node_id");
    let five_text = to_text(&doc);
    let five = import(&five_text).unwrap();
    check_against_oracle(&five_text, &five);
    assert_eq!(five.node_count(), seven.node_count());
    assert_eq!(five.parts().edge_to, seven.parts().edge_to);
    assert_eq!(six.parts().edge_to, seven.parts().edge_to);
}

#[test]
fn fields_are_found_by_name_in_any_order() {
    let mut doc = tiny_value();
    // Swap `name` and `id` in the meta and in every record; add an unknown field.
    let nf = doc["snapshot"]["meta"]["node_fields"]
        .as_array()
        .unwrap()
        .len();
    let fields = doc["snapshot"]["meta"]["node_fields"]
        .as_array_mut()
        .unwrap();
    fields.swap(1, 2);
    for record in doc["nodes"].as_array_mut().unwrap().chunks_mut(nf) {
        record.swap(1, 2);
    }
    let edge_fields = doc["snapshot"]["meta"]["edge_fields"]
        .as_array_mut()
        .unwrap();
    edge_fields.reverse();
    edge_fields.push(json!("future_field"));
    doc["snapshot"]["meta"]["edge_types"]
        .as_array_mut()
        .unwrap()
        .push(json!("number"));
    let edges: Vec<Value> = doc["edges"]
        .as_array()
        .unwrap()
        .chunks(3)
        .flat_map(|record| {
            [
                record[2].clone(),
                record[1].clone(),
                record[0].clone(),
                json!(7),
            ]
        })
        .collect();
    doc["edges"] = Value::Array(edges);
    let text = to_text(&doc);
    let graph = import(&text).unwrap();
    check_against_oracle(&text, &graph);
}

#[test]
fn sections_in_any_order_and_whitespace_anywhere_read_the_same() {
    let expected = fingerprint(&import(&to_text(&tiny_value())).unwrap());
    // serde_json writes object keys sorted: `edges`, `locations`, `nodes`, …, `snapshot`,
    // `strings`, so the arrays come before the header that describes them.
    let sorted = to_text(&tiny_value());
    assert!(sorted.starts_with(b"{\"edges\""));
    assert_eq!(fingerprint(&import(&sorted).unwrap()), expected);
    let pretty = serde_json::to_vec_pretty(&tiny_value()).unwrap();
    assert_eq!(fingerprint(&import(&pretty).unwrap()), expected);
    // A byte-order mark and whitespace around everything.
    let mut padded = b"\xef\xbb\xbf \r\n\t".to_vec();
    padded.extend_from_slice(&tiny_snapshot());
    padded.extend_from_slice(b" \n");
    let direct = import(&tiny_snapshot()).unwrap();
    assert_eq!(fingerprint(&import(&padded).unwrap()), fingerprint(&direct));
    assert_eq!(v8::sniff(&padded), Some(true));
}

#[test]
fn root_index_moves_the_root() {
    let mut doc = tiny_value();
    let nf = doc["snapshot"]["meta"]["node_fields"]
        .as_array()
        .unwrap()
        .len();
    doc["snapshot"]["root_index"] = json!(2 * nf);
    let graph = import(&to_text(&doc)).unwrap();
    assert_eq!(graph.root().index(), 2);
    doc["snapshot"]["root_index"] = json!(2 * nf + 1);
    expect_malformed(&to_text(&doc), "root_index");
}

#[test]
fn unknown_edge_types_read_as_internal_with_one_note() {
    let mut doc = tiny_value();
    doc["snapshot"]["meta"]["edge_types"][0][3] = json!("ephemeron");
    doc["snapshot"]["meta"]["edge_types"][0]
        .as_array_mut()
        .unwrap()
        .push(json!("sideways"));
    let graph = import(&to_text(&doc)).unwrap();
    let original = import(&tiny_snapshot()).unwrap();
    assert_eq!(graph.parts().edge_kind, original.parts().edge_kind);
    assert_eq!(graph.meta().notes.len(), 1, "{:?}", graph.meta().notes);
    assert!(graph.meta().notes[0].contains("ephemeron, sideways"));
}

// ---------------------------------------------------------------------------------------
// Errors.

fn expect_malformed(text: &[u8], fragment: &str) -> u64 {
    match import(text) {
        Err(ImportError::Malformed {
            format,
            offset,
            message,
        }) => {
            assert_eq!(format, heapgraph_import::Format::V8HeapSnapshot);
            assert_eq!(format.to_string(), "v8 heap snapshot");
            assert!(
                message.contains(fragment),
                "{message:?} does not mention {fragment:?}"
            );
            assert!(!message.ends_with('.'), "{message}");
            assert!(
                !message.starts_with(|c: char| c.is_uppercase()),
                "{message}"
            );
            offset
        }
        other => panic!("expected a malformed error about {fragment:?}, got {other:?}"),
    }
}

fn expect_inconsistent(text: &[u8], fragment: &str) {
    match import(text) {
        Err(ImportError::Inconsistent { message, .. }) => {
            assert!(message.contains(fragment), "{message:?}");
        }
        other => panic!("expected an inconsistency about {fragment:?}, got {other:?}"),
    }
}

/// A small valid snapshot built by hand: three nodes, three edges, a 5-field layout.
fn hand_made(nodes: &str, edges: &str, strings: &str, node_count: u32, edge_count: u32) -> Vec<u8> {
    format!(
        r#"{{"snapshot":{{"meta":{{"node_fields":["type","name","id","self_size","edge_count"],"node_types":[["hidden","object","synthetic"],"string","number","number","number"],"edge_fields":["type","name_or_index","to_node"],"edge_types":[["context","element","property","internal","hidden","shortcut","weak"],"string_or_number","node"]}},"node_count":{node_count},"edge_count":{edge_count}}},
"nodes":[{nodes}],
"edges":[{edges}],
"strings":[{strings}]}}"#
    )
    .into_bytes()
}

const NODES: &str = "2,1,1,0,2,1,2,3,16,1,0,3,5,24,0";
const EDGES: &str = "1,0,5,2,4,10,2,3,10";
const STRINGS: &str = r#""<dummy>","","Thing","other","next""#;

fn valid_hand_made() -> Vec<u8> {
    hand_made(NODES, EDGES, STRINGS, 3, 3)
}

/// The offset of the first occurrence of `needle` in `text`.
fn offset_of(text: &[u8], needle: &str) -> u64 {
    text.windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .unwrap() as u64
}

#[test]
fn hand_made_snapshot_reads_as_built() {
    let text = valid_hand_made();
    let graph = import(&text).unwrap();
    check_against_oracle(&text, &graph);
    let types: Vec<&str> = graph.nodes().map(|n| graph.type_name(n)).collect();
    assert_eq!(types, ["(synthetic)", "Thing", "(system)"]);
    assert_eq!(graph.total_shallow_size(), 40);
}

#[test]
fn not_json_is_malformed_at_its_first_byte() {
    assert_eq!(expect_malformed(b"hello", "expected `{`"), 0);
    assert_eq!(expect_malformed(b"  [1,2]", "expected `{`"), 2);
    assert_eq!(expect_malformed(b"{nodes:[]}", "key"), 1);
}

#[test]
fn empty_and_cut_input_is_truncated() {
    for text in [
        &b""[..],
        b"   ",
        b"{",
        b"{\"snapshot\"",
        b"{\"snapshot\":{\"meta\":",
    ] {
        match import(text) {
            Err(ImportError::Truncated { offset, .. }) => assert_eq!(offset, text.len() as u64),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_meta_without_a_needed_field_is_malformed() {
    let text = String::from_utf8(valid_hand_made()).unwrap();
    let text = text.replace(r#""self_size","#, r#""size","#);
    expect_malformed(text.as_bytes(), "`self_size`");
    let text = String::from_utf8(valid_hand_made()).unwrap();
    let text = text.replace(r#""to_node"]"#, r#""target"]"#);
    expect_malformed(text.as_bytes(), "`to_node`");
    let text = String::from_utf8(valid_hand_made()).unwrap();
    let text = text.replace(r#","edge_count":3"#, "");
    expect_malformed(text.as_bytes(), "edge_count");
    let text = String::from_utf8(valid_hand_made()).unwrap();
    let text = text.replace(
        r#""node_types":[["hidden","object","synthetic"],"#,
        r#""node_types":["hidden","#,
    );
    expect_malformed(text.as_bytes(), "node_types");
}

#[test]
fn counts_that_disagree_with_the_arrays_are_inconsistent() {
    expect_inconsistent(&hand_made(NODES, EDGES, STRINGS, 4, 3), "node_count");
    expect_inconsistent(&hand_made(NODES, EDGES, STRINGS, 2, 3), "node_count");
    expect_inconsistent(&hand_made(NODES, EDGES, STRINGS, 3, 2), "edge_count");
    // The nodes' edge counts add up to 4, the array holds 3 edges.
    let nodes = "2,1,1,0,2,1,2,3,16,1,0,3,5,24,1";
    expect_inconsistent(&hand_made(nodes, EDGES, STRINGS, 3, 3), "add up to 4");
    // A hostile count sizes nothing.
    expect_inconsistent(
        &hand_made(NODES, EDGES, STRINGS, u32::MAX, u32::MAX),
        "node_count",
    );
}

#[test]
fn arrays_cut_mid_record_are_malformed() {
    let text = hand_made("2,1,1,0,2,1,2,3,16,1,0,3,5,24", EDGES, STRINGS, 3, 3);
    let offset = expect_malformed(&text, "multiple of 5");
    assert_eq!(&text[offset as usize..offset as usize + 2], b"],");
    let text = hand_made(NODES, "1,0,5,2,4,10,2,3", STRINGS, 3, 3);
    expect_malformed(&text, "multiple of 3");
}

#[test]
fn bad_references_are_malformed_at_their_array() {
    // Edge target past the last node (offset 15 = node 3 of 3).
    let text = hand_made(NODES, "1,0,5,2,4,15,2,3,10", STRINGS, 3, 3);
    let offset = expect_malformed(&text, "past the last of 3 nodes");
    assert_eq!(offset, offset_of(&text, "[1,0,5"));
    // Edge target not a multiple of the node fields.
    let text = hand_made(NODES, "1,0,5,2,4,11,2,3,10", STRINGS, 3, 3);
    expect_malformed(&text, "not a multiple of the 5 node fields");
    // Edge name string out of range (property edge naming string 9 of 5).
    let text = hand_made(NODES, "1,0,5,2,9,10,2,3,10", STRINGS, 3, 3);
    assert_eq!(
        expect_malformed(&text, "edge 1 is named by string 9"),
        offset_of(&text, "[1,0,5")
    );
    // The largest name a number may hold, which a name's id would wrap past.
    let text = hand_made(NODES, "1,0,5,2,4294967295,10,2,3,10", STRINGS, 3, 3);
    expect_malformed(&text, "edge 1 is named by string 4294967295");
    let text = hand_made(
        "2,1,1,0,2,1,4294967295,3,16,1,0,3,5,24,0",
        EDGES,
        STRINGS,
        3,
        3,
    );
    expect_malformed(&text, "node 1 is named by string 4294967295");
    // An element edge's name is an index, never a string.
    let text = hand_made(NODES, "1,99,5,2,4,10,2,3,10", STRINGS, 3, 3);
    let graph = import(&text).unwrap();
    assert_eq!(graph.edge_name(0), EdgeName::Index(99));
    // Node name out of range.
    let text = hand_made("2,1,1,0,2,1,7,3,16,1,0,3,5,24,0", EDGES, STRINGS, 3, 3);
    assert_eq!(
        expect_malformed(&text, "node 1 is named by string 7"),
        offset_of(&text, "[2,1,1")
    );
    // An edge type out of range (a node's is read as a kind of its own, below).
    let text = hand_made(NODES, "1,0,5,7,4,10,2,3,10", STRINGS, 3, 3);
    expect_malformed(&text, "edge 1 has type 7");
}

#[test]
fn numbers_that_are_not_unsigned_integers_are_malformed_where_they_start() {
    // In a node's `self_size`, which may be any integer up to `u64::MAX`.
    for (bad, fragment) in [
        ("1.5", "fraction"),
        ("1e3", "fraction"),
        ("-1", "negative"),
        ("18446744073709551616", "larger than 18446744073709551615"),
        ("99999999999999999999999999", "26-digit"),
        ("\"16\"", "expected an unsigned integer"),
        ("null", "expected an unsigned integer"),
        ("016", "leading zero"),
    ] {
        let nodes = format!("2,1,1,0,2,1,2,3,{bad},1,0,3,5,24,0");
        let text = hand_made(&nodes, EDGES, STRINGS, 3, 3);
        let offset = expect_malformed(&text, fragment);
        let expected = offset_of(&text, &format!(",{bad},")) + 1;
        let expected = if fragment == "fraction" {
            expected + 1
        } else {
            expected
        };
        assert_eq!(offset, expected, "{bad}");
    }
    // Fields that hold 32-bit values: a node's name and edge count, an edge's type, name and
    // target.
    for (nodes, edges, field) in [
        (
            "2,1,1,0,2,1,4294967296,3,16,1,0,3,5,24,0",
            EDGES,
            "a node's `name`",
        ),
        (
            "2,1,1,0,2,1,2,3,16,4294967296,0,3,5,24,0",
            EDGES,
            "a node's `edge_count`",
        ),
        (NODES, "1,0,5,2,4,10,2,3,4294967300", "an edge's `to_node`"),
        (
            NODES,
            "1,0,5,2,99999999999,10,2,3,10",
            "an edge's `name_or_index`",
        ),
        (NODES, "1,0,5,4294967296,4,10,2,3,10", "an edge's `type`"),
    ] {
        let text = hand_made(nodes, edges, STRINGS, 3, 3);
        let offset = expect_malformed(&text, &format!("largest value heapgraph reads in {field}"));
        let number = ["4294967296", "4294967300", "99999999999"]
            .into_iter()
            .find(|number| text.windows(number.len()).any(|w| w == number.as_bytes()))
            .unwrap();
        assert_eq!(offset, offset_of(&text, number), "{field}");
    }
    // `u32::MAX` itself is an ordinary value there.
    let nodes = "2,1,1,0,2,1,2,4294967295,4294967295,1,0,3,5,24,0";
    let graph = import(&hand_made(nodes, EDGES, STRINGS, 3, 3)).unwrap();
    assert_eq!(graph.object_id(graph.node(1).unwrap()), u64::from(u32::MAX));
    let graph = import(&hand_made(
        NODES,
        "1,4294967295,5,2,4,10,2,3,10",
        STRINGS,
        3,
        3,
    ))
    .unwrap();
    assert_eq!(graph.edge_name(0), EdgeName::Index(u32::MAX));
}

#[test]
fn ids_and_sizes_up_to_u64_max_are_read_exactly() {
    // Julia writes addresses as ids; JSON integers above 2^53 are exact all the same.
    let nodes =
        "2,1,18446744073709551615,0,2,1,2,9007199254740993,4294967296,1,0,3,4775375728,24,0";
    let text = hand_made(nodes, EDGES, STRINGS, 3, 3);
    // The same with `nodes` and `edges` before the header (decoded once the layout is known).
    let text = String::from_utf8(text).unwrap();
    let header_end = text.find("\n\"nodes\"").unwrap();
    let strings_at = text.find("\n\"strings\"").unwrap();
    let reordered = format!(
        "{{{}{}{}",
        &text[header_end + 1..strings_at],
        &text[1..header_end],
        &text[strings_at..]
    );
    for text in [text.as_bytes(), reordered.as_bytes()] {
        let graph = import(text).unwrap();
        check_against_oracle(text, &graph);
        let ids: Vec<u64> = graph.nodes().map(|node| graph.object_id(node)).collect();
        assert_eq!(ids, [u64::MAX, (1 << 53) + 1, 4_775_375_728]);
        assert_eq!(graph.shallow_size(graph.node(1).unwrap()), 1 << 32);
        assert_eq!(graph.find_object(u64::MAX), graph.node(0));
    }
}

#[test]
fn a_julia_shaped_snapshot_matches_the_oracle() {
    // `fixtures/v8/make_julia_shaped.py` says which real file it stands for.
    let path = fixture_path("julia-shaped.heapsnapshot.gz");
    let graph = graph_of(heapgraph_import::import_path(&path, &Default::default()).unwrap());
    let text = plain_bytes(&path);
    check_against_oracle(&text, &graph);
    assert!(
        graph
            .nodes()
            .skip(1)
            .all(|node| graph.object_id(node) > u64::from(u32::MAX))
    );
    assert!(graph.meta().notes.is_empty(), "{:?}", graph.meta().notes);
}

/// The tiny snapshot with `node_types` cut to the 12 types that V8 6.x listed (Node 8), so
/// that its nodes of later types (`symbol`, `object shape`, …) have types the meta does not
/// list, as in `fixtures/v8/node8-symbols.heapsnapshot.gz`.
fn tiny_with_node8_types() -> Vec<u8> {
    let mut doc = tiny_value();
    doc["snapshot"]["meta"]["node_types"][0]
        .as_array_mut()
        .unwrap()
        .truncate(12);
    to_text(&doc)
}

#[test]
fn node_types_the_meta_does_not_list_read_as_a_kind_of_their_own() {
    let text = tiny_with_node8_types();
    let graph = import(&text).unwrap();
    check_against_oracle(&text, &graph);
    let unknown = graph
        .nodes()
        .filter(|&node| graph.kind(node).name == "undefined")
        .count();
    assert!(unknown > 0);
    assert!(
        graph
            .nodes()
            .filter(|&node| graph.kind(node).name == "undefined")
            .all(|node| graph.type_name(node) == "(undefined)")
    );
    let notes = &graph.meta().notes;
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with(&format!("{unknown} node")),
        "{notes:?}"
    );
    assert!(
        notes[0].contains(
            "a type that `snapshot.meta.node_types` does not list (it lists 12 types): type "
        ),
        "{notes:?}"
    );
    // One node of an unknown type, and many numbers: at most 8 listed, the rest summed.
    let text = hand_made("2,1,1,0,2,1,2,3,16,1,7,3,5,24,0", EDGES, STRINGS, 3, 3);
    let graph = import(&text).unwrap();
    assert_eq!(graph.kind(graph.node(2).unwrap()).name, "undefined");
    assert_eq!(
        graph.meta().notes[0],
        "1 node has a type that `snapshot.meta.node_types` does not list (it lists 3 types): \
         type 7 (1 node); they are read as a kind of their own, `undefined`, summarised as \
         `(undefined)`, as DevTools and memlab name them"
    );
    let many: Vec<String> = (0..12)
        .map(|i| format!("{},0,{i},1,0", 10 + i))
        .chain(["2,1,99,0,0".to_owned()])
        .collect();
    let text = hand_made(&many.join(","), "", r#""","x""#, 13, 0);
    let graph = import(&text).unwrap();
    let note = &graph.meta().notes[0];
    assert!(note.starts_with("12 nodes have a type"), "{note}");
    assert!(
        note.contains("type 17 (1 node), and 4 of other types;"),
        "{note}"
    );
}

#[test]
fn missing_sections_are_errors() {
    // Cut short after the edges: `strings` never comes.
    let text = valid_hand_made();
    let cut = offset_of(&text, "\n\"strings\"") as usize;
    match import(&text[..cut]) {
        Err(ImportError::Truncated {
            offset, expected, ..
        }) => {
            assert_eq!(offset, cut as u64);
            assert!(expected.contains("strings"), "{expected}");
        }
        other => panic!("{other:?}"),
    }
    // A closed object without `strings`, or without `nodes`.
    let mut closed = text[..cut - 1].to_vec();
    closed.push(b'}');
    expect_malformed(&closed, "without its `strings` section");
    let text = String::from_utf8(valid_hand_made()).unwrap();
    let text = text.replace(&format!("\n\"nodes\":[{NODES}],"), "");
    expect_malformed(text.as_bytes(), "without its `nodes` section");
}

#[test]
fn other_structural_errors_are_malformed() {
    let text = String::from_utf8(valid_hand_made()).unwrap();
    // A duplicate key.
    let twice = text.replace(
        "\"strings\":[",
        &format!("\"nodes\":[{NODES}],\"strings\":["),
    );
    expect_malformed(twice.as_bytes(), "appears twice");
    // Data after the object.
    let trailing = format!("{text} x");
    let offset = expect_malformed(trailing.as_bytes(), "after the end");
    assert_eq!(offset, text.len() as u64 + 1);
    // A bad escape and a bad hex digit.
    let escape = text.replace("\"other\"", "\"oth\\qer\"");
    expect_malformed(escape.as_bytes(), "unknown escape `\\q`");
    let hex = text.replace("\"other\"", "\"oth\\u12g4\"");
    expect_malformed(hex.as_bytes(), "hex digit");
    // Something other than strings in `strings`.
    let number = text.replace("\"other\"", "7");
    expect_malformed(number.as_bytes(), "expected a string in `strings`");
    // Unbalanced brackets in a skipped section.
    let skipped = text.replace("\"strings\":[", "\"samples\":[[1,2],3}],\"strings\":[");
    expect_malformed(skipped.as_bytes(), "unbalanced");
    // A trailing comma.
    let comma = text.replace("\"next\"]", "\"next\",]");
    expect_malformed(comma.as_bytes(), "expected a string");
    // A header that is not an object of the right shape.
    let header = text.replace("\"node_count\":3", "\"node_count\":\"3\"");
    expect_malformed(header.as_bytes(), "in the `snapshot` header");
}

#[test]
fn a_snapshot_without_nodes_is_inconsistent() {
    expect_inconsistent(&hand_made("", "", STRINGS, 0, 0), "no nodes");
}

#[test]
fn unknown_sections_of_every_shape_are_skipped() {
    let text = String::from_utf8(valid_hand_made()).unwrap();
    let extra = r#""trace_tree":[1,0,0,0,[2,1,5,6,[],3,1,2,3,[[]]]],"samples":[],"odd":{"a":[true,false,null,-1.5e3,"]}\"["],"b":{}},"n":-0.5,"s":"x","#;
    let with_extra = text.replace("\"strings\":[", &format!("{extra}\"strings\":["));
    let graph = import(with_extra.as_bytes()).unwrap();
    assert_eq!(
        fingerprint(&graph),
        fingerprint(&import(text.as_bytes()).unwrap())
    );
}

// ---------------------------------------------------------------------------------------
// Sniffing.

#[test]
fn sniff_says_yes_no_or_not_yet() {
    let text = tiny_snapshot();
    let yes_from = b"{\"snapshot\":{\"meta\":".len();
    for len in 0..60 {
        let expected = if len < yes_from { None } else { Some(true) };
        assert_eq!(v8::sniff(&text[..len]), expected, "prefix of {len}");
    }
    assert_eq!(v8::sniff(b"{ \"snapshot\" :\n{ \"meta\" :"), Some(true));
    assert_eq!(v8::sniff(b"\xef\xbb"), None);
    assert_eq!(v8::sniff(b"   "), None);
    assert_eq!(v8::sniff(b"JAVA PROFILE 1.0.2\0"), Some(false));
    assert_eq!(v8::sniff(b"{\"nodes\":[]}"), Some(false));
    assert_eq!(v8::sniff(b"{\"snapshot\":{\"node_count\":1"), Some(false));
    assert_eq!(v8::sniff(&[0x1f, 0x8b]), Some(false));
    assert_eq!(
        heapgraph_import::sniff(&text),
        Some(heapgraph_import::Format::V8HeapSnapshot)
    );
}

// ---------------------------------------------------------------------------------------
// Bad input never panics.

#[test]
fn every_cut_of_a_real_snapshot_is_truncated() {
    // Node.js's, Julia's (wide ids) and Node 8's shape (types the meta does not list).
    let julia = plain_bytes(&fixture_path("julia-shaped.heapsnapshot.gz"));
    for text in [tiny_snapshot(), julia, tiny_with_node8_types()] {
        let cuts: Vec<usize> = (0..4096.min(text.len()))
            .chain((4096..text.len()).step_by(7))
            .collect();
        cuts.into_par_iter()
            .for_each(|cut| match import(&text[..cut]) {
                Err(ImportError::Truncated { offset, .. }) => {
                    assert_eq!(offset, cut as u64, "cut at {cut}")
                }
                other => panic!("cut at {cut}: {other:?}"),
            });
        assert!(import(&text).is_ok());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = import(&bytes);
        let mut prefixed = b"{\"snapshot\":{\"meta\":".to_vec();
        prefixed.extend_from_slice(&bytes);
        let _ = import(&prefixed);
    }

    #[test]
    fn json_like_bytes_never_panic(
        bytes in proptest::collection::vec(
            proptest::sample::select(&b"{}[]\",:0123456789 \\u-.e\nabnodesstring"[..]), 0..256)
    ) {
        let mut text = valid_hand_made();
        let at = bytes.len() % text.len();
        text.splice(at..at, bytes.iter().copied());
        let _ = import(&text);
    }

    #[test]
    fn mutated_real_snapshots_never_panic(
        which in 0..3u8,
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..8)
    ) {
        let mut text = match which {
            0 => tiny_snapshot(),
            1 => plain_bytes(&fixture_path("julia-shaped.heapsnapshot.gz")),
            _ => tiny_with_node8_types(),
        };
        for (index, byte, how) in edits {
            let at = index.index(text.len());
            match how {
                0 => text[at] = byte,
                1 => text[at] ^= 1 << (byte % 8),
                _ => { text.remove(at); }
            }
        }
        if let Ok(graph) = import(&text) {
            // Whatever was read is a valid graph (from_parts checked it).
            prop_assert!(graph.node_count() > 0);
        }
    }
}
