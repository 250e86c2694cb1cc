//! What holds the objects the strong references do not reach (issue 22, item 7), on real Java
//! dumps, against the independent Python reader's plain searches, one per reference strength
//! (`reachability_facts` in `fixtures/java/make_fixtures.py`, whose answers are in
//! `expected.json` and `references.json`), and against what the programs planted:
//!
//! - the LeakFixture dumps: live (a full collection first), so soft references alone hold
//!   anything, among them the 20 planted `SoftTarget`s;
//! - `references.hprof.gz`: dumped with `-all` before any collection, with objects that only
//!   soft, weak, final (a pending `finalize`) or phantom references hold, and garbage;
//! - `javac.hprof.gz`: javac paused in an annotation processor, whose file manager holds the
//!   text of the sources it read through soft references only (the case of the issue).
//!
//! The summary, `who-holds` and the HTML report's cards are checked to say the same.

use crate::support::{fixture, heapgraph_ok, json, path_str};
use heapgraph_analyzer::{
    Analysis, ChainOrder, EdgeRule, HeldBy, Options, ReferenceKind, analyze, summary, who_holds,
};
use heapgraph_import::Contents;
use heapgraph_model::{HeapGraph, NodeId};
use heapgraph_report::human_bytes;
use rustc_hash::FxHashMap as HashMap;

fn load(file: &str) -> HeapGraph {
    match heapgraph_import::import_path(&fixture(file), &Default::default()).expect("loads") {
        Contents::HeapGraph(graph) => graph,
        _ => panic!("{file}: not a heap graph"),
    }
}

fn analysis(graph: &HeapGraph) -> Analysis {
    let edge_rule = EdgeRule::for_runtime(graph.meta().runtime);
    analyze(graph, &Options { edge_rule })
}

fn load_json(file: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(file)).expect("read")).expect("JSON")
}

/// The oracle's name of a class in the form heapgraph gives types: `[Ljava.lang.Object;` →
/// `java.lang.Object[]` (primitive arrays are `byte[]` in both), and a hidden class's
/// `LambdaForm$DMH+0x…` (HPROF's) → `LambdaForm$DMH/0x…` (`Class.getName`'s).
fn source_form(name: &str) -> String {
    let name = name.replace("+0x", "/0x");
    let dims = name.bytes().take_while(|&b| b == b'[').count();
    if dims == 0 || name.ends_with("[]") {
        return name;
    }
    let element = name[dims..].trim_start_matches('L').trim_end_matches(';');
    format!("{element}{}", "[]".repeat(dims))
}

/// The oracle's label of a node: its class, or `class X` for a class object.
fn label(graph: &HeapGraph, node: NodeId) -> String {
    if graph.kind(node).name == "class" {
        format!("class {}", graph.name(node))
    } else {
        graph.type_name(node).to_owned()
    }
}

fn held_name(held: HeldBy) -> &'static str {
    match held {
        HeldBy::Nothing => "garbage",
        other => other.name(),
    }
}

/// Every real object's reference kind, per kind and per class, equals the oracle's: the
/// counts and shallow bytes of each kind and of the garbage, and the counts of each class the
/// oracle lists (its twelve largest and every planted one). The summary's rows say the same.
fn check_against_oracle(file: &str, oracle: &serde_json::Value) {
    let graph = load(file);
    let analysis = analysis(&graph);
    let mut counts: HashMap<&'static str, u64> = HashMap::default();
    let mut bytes: HashMap<&'static str, u64> = HashMap::default();
    let mut by_class: HashMap<(&'static str, String), u64> = HashMap::default();
    for node in graph.nodes().filter(|&node| !graph.is_synthetic(node)) {
        let held = analysis.held_by(&graph, node);
        if held == HeldBy::Strong {
            continue;
        }
        let name = held_name(held);
        *counts.entry(name).or_default() += 1;
        // The oracle counts class objects as 0 bytes.
        if graph.kind(node).name != "class" {
            *bytes.entry(name).or_default() += graph.shallow_size(node);
        }
        *by_class.entry((name, label(&graph, node))).or_default() += 1;
    }
    let view = summary(&graph, &analysis);
    for (name, facts) in oracle.as_object().expect("kinds") {
        let name: &'static str = ["soft", "weak", "final", "phantom", "garbage"]
            .into_iter()
            .find(|kind| kind == name)
            .expect("a kind");
        let objects = facts["objects"].as_u64().expect("objects");
        assert_eq!(
            counts.get(name).copied().unwrap_or(0),
            objects,
            "{file}: {name}"
        );
        assert_eq!(
            bytes.get(name).copied().unwrap_or(0),
            facts["bytes"].as_u64().expect("bytes"),
            "{file}: {name} bytes"
        );
        for (class, count) in facts["by_class"].as_object().expect("classes") {
            let ours = by_class
                .get(&(name, source_form(class)))
                .copied()
                .unwrap_or(0);
            assert_eq!(
                ours,
                count.as_u64().expect("count"),
                "{file}: {name} {class}"
            );
        }
        let summarised = if name == "garbage" {
            view.garbage_objects
        } else {
            view.weakly_held
                .iter()
                .find(|row| row.kind.name() == name)
                .map_or(0, |row| row.objects)
        };
        assert_eq!(summarised, objects, "{file}: the summary's {name} row");
    }
    assert_eq!(
        view.unreachable_objects,
        counts.values().sum::<u64>(),
        "{file}: the kinds and the garbage make up the unreachable objects"
    );
}

#[test]
fn reference_kinds_equal_an_independent_computation_on_the_leak_fixtures() {
    let expected = load_json("java/expected.json");
    for variant in ["default", "nocoops", "nocompressed"] {
        let facts = &expected["variants"][variant];
        check_against_oracle(&format!("java/{variant}.hprof.gz"), &facts["reachability"]);
        // The planted SoftTargets are held by soft references only.
        let soft = &facts["reachability"]["soft"]["by_class"]["com.example.SoftTarget"];
        assert_eq!(soft, 20, "{variant}");
    }
}

#[test]
fn reference_kinds_equal_an_independent_computation_on_every_kind() {
    let expected = load_json("java/references.json");
    for fixture in ["references", "javac"] {
        let facts = &expected[fixture];
        check_against_oracle(
            &format!("java/{}", facts["file"].as_str().expect("file")),
            &facts["reachability"],
        );
    }
    // What References.java planted, as the oracle found it.
    let reach = &expected["references"]["reachability"];
    for (kind, planted) in expected["references"]["planted"]
        .as_object()
        .expect("planted")
    {
        for (class, count) in planted.as_object().expect("classes") {
            assert_eq!(reach[kind]["by_class"][class], *count, "{kind} {class}");
        }
    }
}

/// The one object of class `class`.
fn the_one(graph: &HeapGraph, class: &str) -> NodeId {
    let mut found = graph
        .nodes()
        .filter(|&node| graph.type_name(node) == class && graph.kind(node).name != "class");
    let node = found.next().unwrap_or_else(|| panic!("no {class}"));
    assert!(found.next().is_none(), "more than one {class}");
    node
}

/// `who-holds` on an object no strong chain reaches shows its strongest chains, each weak
/// reference with its kind, as References.java built them: a `BehindSoft` hangs behind a soft
/// then a weak reference (weak: the weakest of its only chain), a `BothWays` behind a weak
/// reference and, more strongly, a soft one (soft), a `Finalizable` behind the finalizer's
/// reference; a `Garbage` behind nothing.
#[test]
fn who_holds_shows_the_strongest_chain_through_weak_references() {
    let graph = load("java/references.hprof.gz");
    let analysis = analysis(&graph);
    for (class, held, crossed) in [
        (
            "com.example.BehindSoft",
            HeldBy::Only(ReferenceKind::Weak),
            vec![ReferenceKind::Soft, ReferenceKind::Weak],
        ),
        (
            "com.example.BothWays",
            HeldBy::Only(ReferenceKind::Soft),
            vec![ReferenceKind::Soft],
        ),
        (
            "com.example.SoftHolder",
            HeldBy::Only(ReferenceKind::Soft),
            vec![ReferenceKind::Soft],
        ),
        (
            "com.example.WeakBox",
            HeldBy::Only(ReferenceKind::Weak),
            vec![ReferenceKind::Weak],
        ),
    ] {
        let target = the_one(&graph, class);
        let view = who_holds(&graph, &analysis, target, 3, ChainOrder::Shortest);
        assert_eq!(view.held_by, held, "{class}");
        assert!(view.dominator_chain.is_empty(), "{class}");
        assert!(!view.paths.is_empty(), "{class}: no chain");
        for path in &view.paths {
            let kinds: Vec<ReferenceKind> =
                path.iter().filter_map(|step| step.reference_kind).collect();
            if path == &view.paths[0] {
                assert_eq!(kinds, crossed, "{class}: the shortest chain");
            }
            // No chain crosses a reference weaker than what holds the target.
            let HeldBy::Only(kind) = held else {
                unreachable!()
            };
            assert!(kinds.iter().all(|&k| k <= kind), "{class}: {kinds:?}");
            assert_eq!(path.last().map(|step| step.object.node), Some(target));
        }
    }
    for node in graph.nodes() {
        let class = graph.type_name(node);
        let expected = match class {
            "com.example.Finalizable" => HeldBy::Only(ReferenceKind::Final),
            "com.example.PhantomOnly" => HeldBy::Only(ReferenceKind::Phantom),
            "com.example.Garbage" => HeldBy::Nothing,
            _ => continue,
        };
        let view = who_holds(&graph, &analysis, node, 1, ChainOrder::Shortest);
        assert_eq!(view.held_by, expected, "{class}");
        match expected {
            HeldBy::Nothing => assert!(view.paths.is_empty(), "{class}"),
            _ => {
                let last = view.paths[0].last().expect("a chain");
                // The target's own referent edge is the kind's reference.
                let into = &view.paths[0][view.paths[0].len() - 1];
                assert_eq!(last.object.node, node);
                assert_eq!(
                    into.reference_kind.map(HeldBy::Only),
                    Some(expected),
                    "{class}"
                );
            }
        }
    }
}

/// The case, in words: the summary says which soft references hold javac's sources,
/// and `who-holds` on a source's text shows the chain through the file manager's cache,
/// marking the soft reference, in text and JSON.
#[test]
fn javac_sources_are_said_to_be_held_softly_by_its_file_manager() {
    let expected = load_json("java/references.json");
    let cache = &expected["javac"]["content_cache"];
    let entries = cache["entries"].as_u64().expect("entries");
    let file = fixture("java/javac.hprof.gz");
    let file = file.to_str().expect("path");
    let summary = json(&["summary", file, "--format", "json", "-n", "1"]);
    let soft = summary["weakly_held"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|row| row["kind"] == "soft")
        .expect("a soft row");
    let through = soft["through"]
        .as_array()
        .expect("through")
        .iter()
        .find(|row| {
            row["holder_type"] == "com.sun.tools.javac.file.BaseFileManager$ContentCacheEntry"
        })
        .expect("the content cache's row");
    assert_eq!(through["reference_type"], "java.lang.ref.SoftReference");
    // A HeapCharBuffer and its char[] per source.
    assert_eq!(through["objects"], 2 * entries);
    let text = heapgraph_ok(&["summary", file, "-n", "0"]);
    assert!(
        text.contains(&format!(
            "only soft references hold {} objects",
            soft["objects"]
        )) && text.contains(
            "java.lang.ref.SoftReference held by \
             com.sun.tools.javac.file.BaseFileManager$ContentCacheEntry"
        ),
        "{text}"
    );
    let holders = heapgraph_ok(&["who-holds", file, "--type", "java.nio.HeapCharBuffer"]);
    assert!(
        holders.contains("only soft references hold it")
            && holders.contains(".referent (soft)")
            && holders.contains("ContentCacheEntry"),
        "{holders}"
    );
    let holders = json(&[
        "who-holds",
        file,
        "--type",
        "java.nio.HeapCharBuffer",
        "--format",
        "json",
    ]);
    assert_eq!(holders["held_by"], "soft");
    let kinds: Vec<&str> = holders["paths"][0]
        .as_array()
        .expect("a chain")
        .iter()
        .filter_map(|step| step["reference_kind"].as_str())
        .collect();
    assert_eq!(kinds, ["soft"]);
}

/// A dump converted to `.hgd` (with its analysis stored) says the same: the reference kinds
/// come from the graph's own `<class>` and `<super>` edges, which the conversion keeps.
#[test]
fn a_converted_dump_splits_the_unreachable_objects_alike() {
    let dir = crate::support::temp_dir("references-convert");
    let hgd = dir.join("references.hgd");
    let file = fixture("java/references.hprof.gz");
    let file = file.to_str().expect("path");
    heapgraph_ok(&["convert", file, "-o", hgd.to_str().expect("path")]);
    let split = |path: &str| {
        let summary = json(&["summary", path, "--format", "json", "-n", "0"]);
        (
            summary["weakly_held"].clone(),
            summary["garbage_objects"].clone(),
            summary["garbage_size"].clone(),
        )
    };
    let original = split(file);
    assert_eq!(original.0.as_array().map(Vec::len), Some(4));
    assert_eq!(split(hgd.to_str().expect("path")), original);
    std::fs::remove_dir_all(&dir).ok();
}

/// Python's weakrefs: a garbage cycle that a weakref still points at (the collector has not run)
/// is held only weakly, with its payload; a cycle nothing points at is garbage. A real dump of
/// a program that builds both with the collector off.
#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3")]
fn a_python_cycle_behind_a_weakref_is_weakly_held_and_one_without_is_garbage() {
    let dir = crate::support::temp_dir("references-python");
    let out = dir.join("weak.hgd");
    let script = "import gc, sys, weakref, heapgraph_dump\n\
                  gc.disable()\n\
                  class Cyclic:\n\
                  \x20   def __init__(self):\n\
                  \x20       self.me = self\n\
                  \x20       self.payload = bytearray(5000)\n\
                  class Lost:\n\
                  \x20   def __init__(self):\n\
                  \x20       self.me = self\n\
                  cyclic = Cyclic()\n\
                  ref = weakref.ref(cyclic)\n\
                  payload = id(cyclic.payload)\n\
                  del cyclic\n\
                  lost = id(Lost())\n\
                  heapgraph_dump.dump(sys.argv[1])\n\
                  print(id(ref()), payload, lost)\n";
    let output = crate::support::tool("python3")
        .arg("-c")
        .arg(script)
        .arg(&out)
        .env(
            "PYTHONPATH",
            crate::support::repo_root().join("crates/capture/python"),
        )
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    let ids: Vec<&str> = stdout.split_whitespace().collect();
    let path = out.to_str().expect("path");
    for (id, held) in [(ids[0], "weak"), (ids[1], "weak"), (ids[2], "nothing")] {
        let holders = json(&["who-holds", path, id, "--format", "json"]);
        assert_eq!(holders["held_by"], held, "{id}: {holders:#}");
        if held == "weak" {
            let chain = holders["paths"][0].as_array().expect("a chain");
            let weak: Vec<&serde_json::Value> = chain
                .iter()
                .filter(|step| step.get("reference_kind").is_some())
                .collect();
            assert_eq!(weak.len(), 1, "{chain:#?}");
            assert_eq!(weak[0]["edge"], "referent");
            assert_eq!(weak[0]["reference_kind"], "weak");
        } else {
            assert!(holders["paths"].as_array().expect("paths").is_empty());
        }
    }
    let summary = json(&["summary", path, "--format", "json", "-n", "0"]);
    let weak = &summary["weakly_held"][0];
    assert_eq!(weak["kind"], "weak");
    let through = weak["through"].as_array().expect("through");
    assert!(
        through
            .iter()
            .any(|row| row["reference_type"] == "weakref.ReferenceType"),
        "{through:#?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The HTML report's cards split "unreachable" as the summary does: one card per reference
/// kind that holds anything, with its bytes, and one for the garbage, which add up to the
/// unreachable bytes; a dump with nothing unreachable keeps its single card.
#[test]
fn the_reports_cards_split_the_unreachable_bytes_by_what_holds_them() {
    let dir = crate::support::temp_dir("references-report");
    let cards = |file: &str| {
        let page = dir.join("page.html");
        heapgraph_ok(&["report", file, "-o", path_str(&page), "--no-timestamp"]);
        let html = std::fs::read_to_string(&page).expect("the page");
        html.split("<div class=\"card\"><b>")
            .skip(1)
            .map(|card| {
                let (value, rest) = card.split_once("</b><span>").expect("a card");
                let label = rest.split_once("</span>").expect("a label").0;
                (value.to_owned(), label.to_owned())
            })
            .collect::<Vec<(String, String)>>()
    };
    let file = fixture("java/references.hprof.gz");
    let file = path_str(&file);
    let summary = json(&["summary", file, "--format", "json", "-n", "0"]);
    let mut expected = Vec::new();
    let mut total = 0;
    for (row, kind) in summary["weakly_held"]
        .as_array()
        .expect("rows")
        .iter()
        .zip(["soft", "weak", "final", "phantom"])
    {
        assert_eq!(row["kind"], kind, "every kind holds some, strongest first");
        let size = row["size"].as_u64().expect("size");
        total += size;
        expected.push((human_bytes(size), format!("held only by {kind} references")));
    }
    let garbage = summary["garbage_size"].as_u64().expect("garbage");
    assert_eq!(total + garbage, summary["unreachable_size"]);
    expected.push((
        human_bytes(garbage),
        "garbage (nothing holds it)".to_owned(),
    ));
    let got: Vec<(String, String)> = cards(file)
        .into_iter()
        .filter(|(_, label)| label.starts_with("held only by") || label.starts_with("garbage"))
        .map(|(value, label)| (value, label.replace(" (to finalize)", "")))
        .collect();
    assert_eq!(got, expected);
    // A V8 snapshot, taken after a full collection: nothing unreachable, one card says so.
    let v8 = fixture(crate::support::V8_FIXTURES[0]);
    let v8 = cards(path_str(&v8));
    assert!(
        v8.contains(&("0 B".to_owned(), "unreachable".to_owned())),
        "{v8:?}"
    );
    assert!(
        !v8.iter().any(|(_, label)| label.starts_with("garbage")),
        "{v8:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
