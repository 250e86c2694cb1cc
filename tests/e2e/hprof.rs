//! Java heap dumps written by `jcmd GC.heap_dump` (see `fixtures/java/`), checked against the
//! JVM's own `GC.class_histogram` taken in the same state, and against a second, independent
//! reading of the same dumps: the Python reader and dominator computation of
//! `fixtures/java/make_fixtures.py`, whose answers are in `expected.json`.

use crate::support::fixture;
use heapgraph_analyzer::{Analysis, EdgeRule, Options, analyze};
use heapgraph_import::{Contents, hprof};
use heapgraph_model::{EdgeKind, EdgeName, HeapGraph, NodeId};
use rustc_hash::FxHashMap as HashMap;
use std::io::Read;

pub(crate) const VARIANTS: [&str; 3] = ["default", "nocoops", "nocompressed"];

pub(crate) fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture("java/expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("valid JSON")
}

/// The uncompressed bytes of a variant's dump.
fn dump_bytes(variant: &str) -> Vec<u8> {
    let file = std::fs::File::open(fixture(&format!("java/{variant}.hprof.gz"))).expect("fixture");
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(file)
        .read_to_end(&mut bytes)
        .expect("gzip");
    bytes
}

pub(crate) fn load(variant: &str) -> HeapGraph {
    let path = fixture(&format!("java/{variant}.hprof.gz"));
    match heapgraph_import::import_path(&path, &Default::default()).expect("the dump loads") {
        Contents::HeapGraph(graph) => graph,
        _ => panic!("not a heap graph"),
    }
}

pub(crate) fn analysis(graph: &HeapGraph, include_weak: bool) -> Analysis {
    let mut edge_rule = EdgeRule::for_runtime(graph.meta().runtime);
    edge_rule.include_weak = include_weak;
    analyze(graph, &Options { edge_rule })
}

/// A histogram class name in source form: `[B` → `byte[]`, `[Ljava.lang.Object;` →
/// `java.lang.Object[]`.
fn source_form(name: &str) -> String {
    let dims = name.bytes().take_while(|&b| b == b'[').count();
    if dims == 0 {
        return name.to_owned();
    }
    let element = &name[dims..];
    let base = match element {
        "Z" => "boolean",
        "B" => "byte",
        "C" => "char",
        "S" => "short",
        "I" => "int",
        "J" => "long",
        "F" => "float",
        "D" => "double",
        other => other.trim_start_matches('L').trim_end_matches(';'),
    };
    format!("{base}{}", "[]".repeat(dims))
}

/// Instance count and bytes per type, over real objects other than class objects (what the
/// histogram counts, `java.lang.Class` aside).
fn counts_by_type(graph: &HeapGraph) -> HashMap<String, (u64, u64)> {
    let mut counts: HashMap<String, (u64, u64)> = HashMap::default();
    for node in graph.nodes() {
        if graph.is_synthetic(node) || graph.kind(node).name == "class" {
            continue;
        }
        let entry = counts.entry(graph.type_name(node).to_owned()).or_default();
        entry.0 += 1;
        entry.1 += graph.shallow_size(node);
    }
    counts
}

#[test]
fn instance_counts_and_bytes_equal_the_class_histogram() {
    let expected = expected();
    for variant in VARIANTS {
        let graph = load(variant);
        let counts = counts_by_type(&graph);
        let facts = &expected["variants"][variant];
        // Where the dump and the histogram differ by nature (fields the VM injects, @Contended
        // padding, objects made between the histogram and the dump), the independent reader's
        // counts and sizes of the dump are the oracle.
        let mut by_nature: HashMap<String, (u64, u64)> = HashMap::default();
        for row in facts["size_formula_vs_histogram"]["classes_that_differ"]
            .as_array()
            .expect("rows")
        {
            let name = source_form(row[0].as_str().expect("name"));
            let dump = (
                row[3].as_u64().expect("count"),
                row[4].as_u64().expect("bytes"),
            );
            by_nature.insert(name, dump);
        }
        let histogram = facts["histogram"].as_object().expect("histogram");
        let mut compared = 0;
        for (name, row) in histogram {
            if name == "java.lang.Class" {
                continue;
            }
            let name = source_form(name);
            let jvm = (
                row[0].as_u64().expect("count"),
                row[1].as_u64().expect("bytes"),
            );
            let ours = counts.get(&name).copied().unwrap_or_default();
            let oracle = by_nature.get(&name).copied().unwrap_or(jvm);
            assert_eq!(ours, oracle, "{variant}: {name} (histogram says {jvm:?})");
            compared += 1;
        }
        for (name, &ours) in &counts {
            if !histogram.keys().any(|key| source_form(key) == *name) {
                assert_eq!(
                    by_nature.get(name),
                    Some(&ours),
                    "{variant}: {name} is not in the histogram"
                );
            }
        }
        assert!(
            compared > 200,
            "{variant}: only {compared} classes compared"
        );
        // The planted classes, by name, for a failure message a person can read.
        assert_eq!(counts["com.example.Session"].0, 400);
        assert_eq!(counts["com.example.ChainLink"].0, 5000);
    }
}

#[test]
fn the_object_layout_is_read_from_the_addresses() {
    for (variant, layout) in [
        ("default", "12-byte headers, 4-byte references"),
        ("nocoops", "12-byte headers, 8-byte references"),
        ("nocompressed", "16-byte headers, 8-byte references"),
    ] {
        let graph = load(variant);
        let note = &graph.meta().notes[0];
        assert!(
            note.contains(layout) && note.contains("as the object addresses show"),
            "{variant}: {note}"
        );
    }
}

/// The node a static field of class `class` points to.
pub(crate) fn static_target(graph: &HeapGraph, class: &str, field: &str) -> NodeId {
    let class_node = graph
        .nodes()
        .find(|&node| graph.kind(node).name == "class" && graph.name(node) == class)
        .unwrap_or_else(|| panic!("no class {class}"));
    graph
        .edge_range(class_node)
        .find(|&edge| graph.edge_name(edge) == EdgeName::Named(field))
        .map(|edge| graph.edge_target(edge))
        .unwrap_or_else(|| panic!("{class} has no static {field}"))
}

#[test]
fn planted_retained_sizes_equal_an_independent_dominator_computation() {
    let expected = expected();
    for variant in VARIANTS {
        let graph = load(variant);
        for (include_weak, rule) in [(false, "referent_excluded"), (true, "all_strong")] {
            let analysis = analysis(&graph, include_weak);
            let tree = &analysis.dominators;
            let facts = &expected["variants"][variant]["dominators"][rule];
            for (key, fact) in facts.as_object().expect("facts") {
                let Some((class, field)) = key.split_once('.') else {
                    continue;
                };
                let class = match class {
                    "SessionCache" => "com.example.SessionCache",
                    "LeakFixture" => "com.example.LeakFixture",
                    _ => continue,
                };
                let node = static_target(&graph, class, field).index();
                let retained = (
                    tree.retained_size.get(node),
                    u64::from(tree.retained_count[node]),
                );
                let oracle = (
                    fact["retained_bytes"].as_u64().expect("bytes"),
                    fact["retained_objects"].as_u64().expect("objects"),
                );
                assert_eq!(retained, oracle, "{variant}, {rule}: {key}");
            }
            let unreachable = graph
                .nodes()
                .filter(|&node| !graph.is_synthetic(node) && !tree.reachable[node.index()])
                .count() as u64;
            assert_eq!(
                unreachable,
                facts["unreachable_objects"].as_u64().expect("count"),
                "{variant}, {rule}"
            );
        }
    }
}

#[test]
fn weak_referents_do_not_retain_unless_asked() {
    let graph = load("default");
    let weak_target = |node: NodeId| graph.type_name(node) == "com.example.WeakTarget";
    for include_weak in [false, true] {
        let analysis = analysis(&graph, include_weak);
        let strong_array = static_target(&graph, "com.example.LeakFixture", "STRONG_TARGETS");
        let targets: Vec<NodeId> = graph.nodes().filter(|&node| weak_target(node)).collect();
        assert_eq!(targets.len(), 30);
        for target in targets {
            let dominator = analysis
                .dominators
                .immediate_dominator(&graph, target)
                .expect("reachable");
            if include_weak {
                // Held by the list and by a WeakReference: only the class dominates it.
                assert_eq!(graph.kind(dominator).name, "class");
            } else {
                // Held by STRONG_TARGETS' array alone.
                assert_eq!(graph.type_name(dominator), "java.lang.Object[]");
                let list_array = graph
                    .edge_range(strong_array)
                    .map(|edge| graph.edge_target(edge))
                    .find(|&node| graph.type_name(node) == "java.lang.Object[]");
                assert_eq!(Some(dominator), list_array);
            }
        }
    }
    // The referent edge itself is weak, and named.
    let weak_edges = (0..graph.edge_count())
        .filter(|&edge| graph.edge_kind(edge) == EdgeKind::Weak)
        .filter(|&edge| graph.edge_name(edge) == EdgeName::Named("referent"))
        .count();
    assert!(weak_edges >= 50, "{weak_edges} weak referent edges");
}

#[test]
fn a_thread_local_hangs_under_its_thread_and_frame() {
    let graph = load("default");
    let analysis = analysis(&graph, false);
    let state = graph
        .nodes()
        .find(|&node| graph.type_name(node) == "com.example.WorkerState")
        .expect("the WorkerState");
    let frame = analysis
        .dominators
        .immediate_dominator(&graph, state)
        .expect("reachable");
    assert_eq!(graph.kind(frame).name, "frame");
    // Worker is a nested class of LeakFixture.java.
    assert!(
        graph
            .name(frame)
            .starts_with("com.example.Worker.run(LeakFixture.java:"),
        "{}",
        graph.name(frame)
    );
    let thread = analysis
        .dominators
        .immediate_dominator(&graph, frame)
        .expect("reachable");
    assert_eq!(graph.type_name(thread), "java.lang.Thread");
    assert_eq!(graph.name(thread), "worker-3");
    assert_eq!(
        analysis.dominators.retained_size.get(state.index()),
        expected()["variants"]["default"]["dominators"]["referent_excluded"]["the WorkerState"]
            ["retained_bytes"]
            .as_u64()
            .expect("bytes")
    );
}

#[test]
fn strings_are_named_by_their_value_in_either_coder() {
    let expected = expected();
    let planted = &expected["planted"]["duplicate_strings"];
    let graph = load("default");
    for coder in ["latin1", "utf16"] {
        let content = planted[coder]["content"].as_str().expect("content");
        let count = graph
            .nodes()
            .filter(|&node| {
                graph.type_name(node) == "java.lang.String" && graph.name(node) == content
            })
            .count() as u64;
        assert_eq!(
            count,
            planted[coder]["count"].as_u64().expect("count"),
            "{coder}"
        );
    }
}

#[test]
fn a_dump_cut_anywhere_reads_what_arrived_or_says_why_not() {
    let bytes = dump_bytes("default");
    let full = hprof::import_slice(&bytes, &Default::default()).expect("the whole dump");
    let mut previous_nodes = 0;
    let mut cuts: Vec<usize> = (0..200).collect();
    cuts.extend((200..bytes.len()).step_by(bytes.len() / 300));
    cuts.push(bytes.len() - 1);
    for cut in cuts {
        match hprof::import_slice(&bytes[..cut], &Default::default()) {
            Ok(graph) => {
                assert!(
                    graph
                        .meta()
                        .notes
                        .iter()
                        .any(|note| note.starts_with("the dump ends at byte")),
                    "cut at {cut}: {:?}",
                    graph.meta().notes
                );
                assert!(graph.node_count() >= previous_nodes, "cut at {cut}");
                assert!(graph.node_count() <= full.node_count());
                previous_nodes = graph.node_count();
            }
            Err(heapgraph_import::ImportError::Truncated { offset, .. }) => {
                assert!(cut < 64, "cut at {cut}: truncated at {offset}");
            }
            Err(err) => panic!("cut at {cut}: {err}"),
        }
    }
}

#[test]
fn suspects_find_the_growing_map_and_what_accumulates_in_it() {
    let file = fixture("java/default.hprof.gz");
    let file = file.to_str().expect("utf-8 path");
    let report = crate::support::json(&["suspects", file, "--format", "json"]);
    assert_eq!(report["schema"], "heapgraph.suspects/1");
    let suspects = report["suspects"].as_array().expect("suspects");
    let cache = suspects
        .iter()
        .find(|suspect| {
            suspect["accumulated"]
                .as_array()
                .is_some_and(|rows| rows.iter().any(|row| row["type"] == "com.example.Session"))
        })
        .expect("a suspect holding the sessions");
    assert_eq!(cache["rule"], "single-object");
    let point = &cache["accumulation_point"];
    assert_eq!(point["type"], "java.util.HashMap$Node[]");
    let sessions = cache["accumulated"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|row| row["type"] == "com.example.Session")
        .expect("sessions");
    assert_eq!(sessions["count"], 400);
    // The chain runs from the root to the accumulation point, through the cache's map.
    let path = cache["path"].as_array().expect("path");
    assert_eq!(path[0]["edge"], serde_json::Value::Null);
    assert_eq!(path.last().expect("a step")["id"], point["id"]);
    let edges: Vec<&str> = path
        .iter()
        .filter_map(|step| step["edge"].as_str())
        .collect();
    assert!(
        edges.ends_with(&["INSTANCE", "sessions", "table"]),
        "{edges:?}"
    );
    // Shares are of the reachable heap, at or above the threshold.
    for suspect in suspects {
        assert!(suspect["share"].as_f64().expect("share") >= 0.1);
    }
    let lower = crate::support::json(&["suspects", file, "--threshold", "1%", "--format", "json"]);
    assert!(lower["suspects"].as_array().expect("suspects").len() > suspects.len());
    // The JDK's own classes (596 class objects of the boot loader) point nowhere: no suspect.
    assert!(
        !suspects
            .iter()
            .any(|suspect| suspect["rule"] == "many-instances"
                && suspect["type"] == "java.lang.Class"),
        "{report:#}"
    );
    // The first finding names the program's own field, and what the bytes mostly are.
    let finding = &report["findings"][0];
    assert_eq!(finding["kind"], "accumulation");
    assert_eq!(finding["holder"]["name"], "sessions");
    assert_eq!(finding["holder"]["owner"], "com.example.SessionCache");
    assert_eq!(finding["holder"]["type"], "java.util.HashMap");
    assert_eq!(finding["mostly"]["type"], "com.example.Session");
    assert_eq!(finding["mostly"]["count"], 400);
    let named = finding["holder"]["named_step"].as_u64().expect("an index") as usize;
    assert_eq!(finding["holder"]["path"][named]["edge"], "sessions");
    // The class `LeakFixture` keeps 180 KiB in several static fields, none most of it: the
    // finding names the largest, `CHAIN_HEAD`, with what that field retains (its chain of
    // links, as many and as large as the program that made the dump says), not the class's.
    let facts = &expected()["variants"]["default"];
    let chain = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|finding| finding["holder"]["name"] == "CHAIN_HEAD")
        .expect("a finding names CHAIN_HEAD");
    let links = facts["dump_facts"]["chain_length"]
        .as_u64()
        .expect("chain length")
        * facts["shallow_bytes"]["com.example.ChainLink"]
            .as_u64()
            .expect("a link's size");
    assert_eq!(chain["retained_size"], links, "{chain:#}");
    let total = report["total_retained"].as_u64().expect("total");
    assert!(
        (chain["share"].as_f64().expect("share") - links as f64 / total as f64).abs() < 1e-9,
        "{chain:#}"
    );
    let mostly = chain["mostly"]["retained_size"].as_u64().unwrap_or(0);
    assert!(mostly <= links, "{chain:#}");
}

#[test]
fn duplicate_strings_and_the_bytes_they_waste() {
    let file = fixture("java/default.hprof.gz");
    let file = file.to_str().expect("utf-8 path");
    let report = crate::support::json(&["strings", file, "--duplicates", "--format", "json"]);
    assert_eq!(report["schema"], "heapgraph.strings/1");
    let values = report["values"].as_array().expect("values");
    let planted = &expected()["planted"]["duplicate_strings"];
    // Each copy is a 24-byte String and its own value array of 16 + 26 bytes, aligned to 48:
    // all but one waste 72 bytes.
    for (row, coder) in values.iter().zip(["latin1", "utf16"]) {
        let count = planted[coder]["count"].as_u64().expect("count");
        assert_eq!(row["value"], planted[coder]["content"]);
        assert_eq!(row["count"], count);
        assert_eq!(row["wasted_bytes"], (count - 1) * 72);
        assert_eq!(row["total_bytes"], count * 72);
    }
    assert!(
        values
            .iter()
            .all(|row| row["count"].as_u64().expect("count") > 1)
    );
    let wasted: u64 = values
        .iter()
        .map(|row| row["wasted_bytes"].as_u64().expect("bytes"))
        .sum();
    assert!(report["wasted_bytes"].as_u64().expect("total") >= wasted);
    assert_eq!(report["strings"], 4073);
}

#[test]
fn a_plain_dump_reads_as_its_gzipped_copy() {
    // The plain file is memory-mapped and its pages handed back as the passes finish with them;
    // the gzipped one is decompressed into memory: the answers are the same.
    let plain = crate::support::temp_dir("hprof").join("default.hprof");
    std::fs::write(&plain, dump_bytes("default")).expect("written");
    let gzipped = fixture("java/default.hprof.gz");
    let mut outputs = Vec::new();
    for path in [&plain, &gzipped] {
        let path = path.to_str().expect("utf-8 path");
        let mut summary = crate::support::json(&["summary", path, "--format", "json"]);
        summary["dump"]["file"] = serde_json::Value::Null;
        let mut suspects = crate::support::json(&["suspects", path, "--format", "json"]);
        suspects["dump"]["file"] = serde_json::Value::Null;
        outputs.push((summary, suspects));
    }
    assert_eq!(outputs[0], outputs[1]);
    let convert_to = plain.with_extension("hgd");
    crate::support::heapgraph_ok(&[
        "convert",
        plain.to_str().expect("utf-8"),
        "-o",
        convert_to.to_str().expect("utf-8"),
    ]);
    let mut reopened = crate::support::json(&[
        "summary",
        convert_to.to_str().expect("utf-8"),
        "--format",
        "json",
    ]);
    reopened["dump"]["file"] = serde_json::Value::Null;
    reopened["dump"]["format"] = outputs[0].0["dump"]["format"].clone();
    // The HPROF file lists the heap dumps it holds; the .hgd holds the one that was read.
    let mut original = outputs[0].0.clone();
    let dumps = original
        .as_object_mut()
        .and_then(|summary| summary.remove("dumps"))
        .expect("an HPROF summary lists the file's dumps");
    assert_eq!(dumps.as_array().map(Vec::len), Some(1));
    assert_eq!(reopened, original);
}
