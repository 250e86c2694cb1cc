//! V8-format snapshots as other writers make them (issue 15): Node 8's, whose nodes use a type
//! its meta does not list, and Julia's, whose ids are 64-bit addresses. Each is read as
//! memlab and DevTools read it: node counts, ids, names, dominators and distances on every node.

use crate::oracle::{
    check_against_memlab, check_distances_against_devtools, load, run_oracle_with,
};
use crate::support::fixture;
use heapgraph_model::EdgeName;

/// Written by Node 8.17.0 (V8 6.2) itself: `fixtures/v8/make_node8_fixture.sh`.
const NODE8: &str = "v8/node8-symbols.heapsnapshot.gz";

/// Stands for a snapshot of Julia's `Profile.take_heap_snapshot`: a real Node.js graph with
/// Julia's header and address ids (`fixtures/v8/make_julia_shaped.py` says what it rewrites).
const JULIA_SHAPED: &str = "v8/julia-shaped.heapsnapshot.gz";

/// The raw JSON of a fixture, read by serde_json (exact for every integer up to `u64::MAX`).
fn raw(name: &str) -> serde_json::Value {
    let file = std::fs::File::open(fixture(name)).expect("fixture");
    serde_json::from_reader(flate2::read::GzDecoder::new(file)).expect("JSON")
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs node, memlab and DevTools' worker"
)]
fn node8_unknown_node_types_are_named_as_devtools_names_them() {
    let graph = load(NODE8);
    let devtools = run_oracle_with("devtools_oracle.js", &["--classes"], NODE8);
    let types = devtools["type"].as_array().expect("types");
    let classes = devtools["class_name"].as_array().expect("class names");
    assert_eq!(types.len(), graph.node_count(), "node count");
    let mut unknown = 0u64;
    for node in graph.nodes() {
        let i = node.index();
        let kind = &graph.kind(node).name;
        match types[i].as_str() {
            // DevTools' `nodeTypes[12]` is `undefined` where the meta lists 12 types.
            None => {
                unknown += 1;
                assert_eq!(kind, "undefined", "kind of node {i}");
            }
            Some(devtools_kind) => assert_eq!(kind, devtools_kind, "kind of node {i}"),
        }
        let class = classes[i].as_str().expect("class name");
        match kind.as_str() {
            // This DevTools names closures `Function` and regexps `RegExp`; heapgraph keeps
            // `(closure)` and `(regexp)`, the names DevTools gave them until 2023.
            "closure" => assert_eq!(class, "Function"),
            "regexp" => assert_eq!(class, "RegExp"),
            // And it names a plain `Object` by its properties (`{a, b}`) where it infers an
            // interface.
            "object" if graph.type_name(node) == "Object" && class.starts_with('{') => {}
            _ => assert_eq!(graph.type_name(node), class, "class of node {i}"),
        }
    }
    // Node 8's own symbols and the 40 planted ones.
    assert!(unknown >= 40, "{unknown} nodes of unknown type");
    let notes = &graph.meta().notes;
    assert!(
        notes.iter().any(|note| note.starts_with(&format!(
            "{unknown} nodes have a type that `snapshot.meta.node_types` does not list"
        )) && note.contains(&format!("type 12 ({unknown} nodes)"))),
        "{notes:?}"
    );

    // The planted symbols: the 40 elements of `global.plantedSymbols` are of the new kind.
    let global = graph
        .nodes()
        .find(|&node| graph.type_name(node).starts_with("global"))
        .expect("global");
    let array = graph
        .edge_range(global)
        .find(|&edge| graph.edge_name(edge) == EdgeName::Named("plantedSymbols"))
        .map(|edge| graph.edge_target(edge))
        .expect("global.plantedSymbols");
    let elements: Vec<_> = graph
        .edge_range(array)
        .filter(|&edge| matches!(graph.edge_name(edge), EdgeName::Index(_)))
        .map(|edge| graph.edge_target(edge))
        .collect();
    assert_eq!(elements.len(), 40);
    for element in elements {
        assert_eq!(graph.kind(element).name, "undefined");
        assert_eq!(graph.type_name(element), "(undefined)");
    }
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs node, memlab and DevTools' worker"
)]
fn node8_dominators_and_distances_equal_the_peers_on_every_node() {
    check_against_memlab(NODE8, 28_000);
    check_distances_against_devtools(NODE8);
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs node, memlab and DevTools' worker"
)]
fn julia_shaped_ids_are_read_exactly_and_the_peers_agree() {
    let graph = load(JULIA_SHAPED);
    let doc = raw(JULIA_SHAPED);
    let nodes = doc["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), graph.node_count() * 7);
    let mut above_u32 = 0;
    for node in graph.nodes() {
        let id = nodes[node.index() * 7 + 2].as_u64().expect("id");
        assert_eq!(graph.object_id(node), id, "node {}", node.index());
        above_u32 += usize::from(id > u64::from(u32::MAX));
    }
    assert_eq!(above_u32, graph.node_count() - 1, "every id but the root's");
    // An id is found again, as `who-holds @ID` finds it.
    let last = graph.node(graph.node_count() - 1).expect("a node");
    assert_eq!(graph.find_object(graph.object_id(last)), Some(last));
    assert!(graph.meta().notes.is_empty(), "{:?}", graph.meta().notes);
    // memlab and DevTools hold ids in 32 bits; everything else they compute agrees.
    check_against_memlab(JULIA_SHAPED, 250);
    check_distances_against_devtools(JULIA_SHAPED);
}
