//! IBM Portable Heap Dumps through the analyses and the binary.
//!
//! No OpenJ9 can be installed where the tests run, so the dump stands for the PHD OpenJ9 would
//! write of `fixtures/java/default.hprof.gz`'s heap (the `LeakFixture` program): that heap, read
//! by the HPROF importer and written by `heapgraph_test_support::phd`, which encodes records as
//! OpenJ9's `heapdump.cpp` does. The oracles are the JVM's own `GC.class_histogram`, taken with
//! the HPROF dump, and the independent dominator computation of `fixtures/java/make_fixtures.py`
//! (`expected.json`) with every reference strong: a PHD cannot tell a weak referent from a field.

use crate::support::{fixture, heapgraph_ok, json, path_str, temp_dir};
use heapgraph_analyzer::{EdgeRule, Options, analyze};
use heapgraph_import::Contents;
use heapgraph_model::{HeapGraph, NodeId};
use heapgraph_test_support::phd::PhdHeap;
use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The PHD of the default fixture's heap, written once per test run.
pub(crate) fn phd_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let hprof = match heapgraph_import::import_path(
            &fixture("java/default.hprof.gz"),
            &Default::default(),
        )
        .expect("the HPROF fixture")
        {
            Contents::HeapGraph(graph) => graph,
            _ => panic!("not a heap graph"),
        };
        let bytes = PhdHeap::from_java_graph(&hprof).write(true, "JRE 17 (heapgraph test writer)");
        let path = temp_dir("phd").join("default.phd");
        std::fs::write(&path, bytes).expect("write the PHD");
        path
    })
}

fn load() -> HeapGraph {
    match heapgraph_import::import_path(phd_path(), &Default::default()).expect("the PHD") {
        Contents::HeapGraph(graph) => graph,
        _ => panic!("not a heap graph"),
    }
}

fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture("java/expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("valid JSON")
}

#[test]
fn planted_instance_counts_and_bytes_equal_the_class_histogram() {
    let graph = load();
    let mut counts: HashMap<&str, (u64, u64)> = HashMap::default();
    for node in graph.nodes() {
        if graph.is_synthetic(node) || graph.kind(node).name == "class" {
            continue;
        }
        let entry = counts.entry(graph.type_name(node)).or_default();
        entry.0 += 1;
        entry.1 += graph.shallow_size(node);
    }
    let expected = expected();
    let histogram = expected["variants"]["default"]["histogram"]
        .as_object()
        .expect("histogram");
    let mut compared = 0;
    for (name, row) in histogram {
        // The program's own classes: the JVM neither injects fields into them nor makes any
        // between the histogram and the dump (`formats.md` lists the classes where it does).
        if !name.starts_with("com.example.") || name.contains("$$Lambda") {
            continue;
        }
        let jvm = (
            row[0].as_u64().expect("count"),
            row[1].as_u64().expect("bytes"),
        );
        assert_eq!(counts.get(name.as_str()).copied(), Some(jvm), "{name}");
        compared += 1;
    }
    assert!(compared >= 10, "{compared} classes compared");
    assert_eq!(counts["com.example.Session"].0, 400);
}

/// The only target of class `class`'s references whose type is `type_name`.
fn class_ref_of_type(graph: &HeapGraph, class: &str, type_name: &str) -> NodeId {
    let class_node = graph
        .nodes()
        .find(|&node| graph.kind(node).name == "class" && graph.name(node) == class)
        .unwrap_or_else(|| panic!("no class {class}"));
    let targets: Vec<NodeId> = graph
        .edge_range(class_node)
        .map(|edge| graph.edge_target(edge))
        .filter(|&target| graph.type_name(target) == type_name)
        .collect();
    assert_eq!(targets.len(), 1, "{class} → {type_name}");
    targets[0]
}

#[test]
fn planted_retained_sizes_equal_an_independent_dominator_computation() {
    let graph = load();
    let analysis = analyze(
        &graph,
        &Options {
            edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
        },
    );
    let tree = &analysis.dominators;
    let expected = expected();
    let facts = &expected["variants"]["default"]["dominators"]["all_strong"];
    // A PHD names no fields: each static is found by its type among its class's references.
    for (fact, class, type_name) in [
        (
            "SessionCache.INSTANCE",
            "com.example.SessionCache",
            "com.example.SessionCache",
        ),
        (
            "LeakFixture.CHAIN_HEAD",
            "com.example.LeakFixture",
            "com.example.ChainLink",
        ),
        (
            "LeakFixture.RING",
            "com.example.LeakFixture",
            "com.example.RingNode",
        ),
        (
            "LeakFixture.DUP_STRINGS",
            "com.example.LeakFixture",
            "java.lang.String[]",
        ),
    ] {
        let node = class_ref_of_type(&graph, class, type_name);
        let ours = (
            tree.retained_size.get(node.index()),
            u64::from(tree.retained_count[node.index()]),
        );
        let oracle = (
            facts[fact]["retained_bytes"].as_u64().expect("bytes"),
            facts[fact]["retained_objects"].as_u64().expect("objects"),
        );
        assert_eq!(ours, oracle, "{fact}");
    }
    // Every object is reachable: what nothing references is a root, as in MAT.
    assert!(
        graph
            .nodes()
            .all(|node| tree.reachable[node.index()] || graph.is_synthetic(node))
    );
}

#[test]
fn the_binary_reads_a_phd_and_says_how_it_rooted_it() {
    let path = path_str(phd_path());
    let summary = json(&["summary", path, "--format", "json"]);
    let text = summary.to_string();
    assert!(
        text.contains("IBM portable heap dump version 6, 64-bit, J9"),
        "{text}"
    );
    assert!(text.contains("a PHD records no GC roots"), "{text}");
    let holders = heapgraph_ok(&[
        "who-holds",
        path,
        "--type",
        "com.example.Session",
        "--paths",
        "1",
    ]);
    assert!(holders.contains("com.example.SessionCache"), "{holders}");
    assert!(holders.contains("java.util.HashMap"), "{holders}");
    let help = heapgraph_ok(&["--help"]);
    assert!(help.contains("IBM portable heap dump (.phd)"), "{help}");
}
