//! `waste`, `summary --group-by` and `redact` on the Java fixtures (`fixtures/java/`), checked
//! against the JVM's own `GC.class_histogram` taken in the same state, against what the
//! fixture program built (`LeakFixture.java`), and against a second, simpler algorithm.

use crate::support::{fixture, heapgraph, heapgraph_ok, json, path_str, repo_root, temp_dir};
use heapgraph_analyzer::groups::{GroupBy, group_by, package_of};
use heapgraph_analyzer::{EdgeRule, NO_NODE, Options, analyze};
use heapgraph_import::Contents;
use heapgraph_model::HeapGraph;
use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;
use std::io::Read;

/// Each variant, with its array header and reference bytes (fixtures/README.md).
const VARIANTS: [(&str, u64, u64); 3] = [
    ("default", 16, 4),
    ("nocoops", 16, 8),
    ("nocompressed", 24, 8),
];

fn histogram(variant: &str) -> Value {
    let text = std::fs::read_to_string(fixture("java/expected.json")).expect("expected.json");
    let expected: Value = serde_json::from_str(&text).expect("valid JSON");
    expected["variants"][variant]["histogram"].clone()
}

fn histogram_count(histogram: &Value, class: &str) -> (u64, u64) {
    let row = &histogram[class];
    (row[0].as_u64().unwrap_or(0), row[1].as_u64().unwrap_or(0))
}

fn row<'a>(waste: &'a Value, type_name: &str) -> &'a Value {
    waste["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|row| row["type"] == type_name && row["arrays"] == false)
        .unwrap_or_else(|| panic!("no row for {type_name}"))
}

/// The JVM counts every hash entry and every table: the entries `waste` chains from the tables
/// are the histogram's `HashMap$Node`s (of maps and of sets' maps), `ConcurrentHashMap$Node`s
/// and `Hashtable$Entry`s, and the capacities are the lengths the histogram's bytes of the
/// tables imply (each table's length is a power of two, so header + length × reference needs
/// no padding).
#[test]
fn hash_tables_hold_what_the_jvm_counted() {
    for (variant, array_header, reference) in VARIANTS {
        let file = fixture(&format!("java/{variant}.hprof.gz"));
        let waste = json(&["waste", path_str(&file), "--format", "json", "-n", "100000"]);
        let histogram = histogram(variant);
        let elements = |type_name: &str| row(&waste, type_name)["elements"].as_u64().unwrap();
        let capacity = |type_name: &str| row(&waste, type_name)["capacity"].as_u64().unwrap();
        let count = |type_name: &str| row(&waste, type_name)["count"].as_u64().unwrap();
        let (nodes, _) = histogram_count(&histogram, "java.util.HashMap$Node");
        assert_eq!(
            elements("java.util.HashMap") + elements("java.util.HashSet"),
            nodes,
            "{variant}: HashMap entries"
        );
        let (maps, _) = histogram_count(&histogram, "java.util.HashMap");
        assert_eq!(
            count("java.util.HashMap") + count("java.util.HashSet"),
            maps
        );
        let (chm_nodes, _) =
            histogram_count(&histogram, "java.util.concurrent.ConcurrentHashMap$Node");
        assert_eq!(
            elements("java.util.concurrent.ConcurrentHashMap"),
            chm_nodes
        );
        let (entries, _) = histogram_count(&histogram, "java.util.Hashtable$Entry");
        assert_eq!(elements("java.util.Hashtable"), entries);
        for (table, owners) in [
            (
                "[Ljava.util.HashMap$Node;",
                &["java.util.HashMap", "java.util.HashSet"][..],
            ),
            (
                "[Ljava.util.concurrent.ConcurrentHashMap$Node;",
                &["java.util.concurrent.ConcurrentHashMap"][..],
            ),
        ] {
            let (n_tables, bytes) = histogram_count(&histogram, table);
            let slots = (bytes - array_header * n_tables) / reference;
            let measured: u64 = owners.iter().map(|owner| capacity(owner)).sum();
            assert_eq!(measured, slots, "{variant}: slots of {table}");
        }
    }
}

/// The planted collections, as Java's growth rules size them: `SessionCache.sessions` took
/// 400 entries (a table of 16 doubles past 0.75 full: 1024 slots, and a right-sized one needs
/// as many); each `Session.attrs` took 3 (16 slots, 4 would do); `LISTENERS` took 53 elements
/// (10, then ×1.5: 15, 22, 33, 49, 73).
#[test]
fn planted_collections_are_sized_as_java_grows_them() {
    for (variant, _, reference) in VARIANTS {
        let file = fixture(&format!("java/{variant}.hprof.gz"));
        let waste = json(&["waste", path_str(&file), "--format", "json", "-n", "100000"]);
        let collections = waste["worst"].as_array().expect("worst");
        let with = |type_name: &str, elements: u64, capacity: u64| -> Vec<&Value> {
            collections
                .iter()
                .filter(|c| {
                    c["object"]["type"] == type_name
                        && c["elements"] == elements
                        && c["capacity"] == capacity
                })
                .collect()
        };
        let sessions = with("java.util.HashMap", 400, 1024);
        assert_eq!(sessions.len(), 1, "{variant}: the sessions map");
        assert_eq!(sessions[0]["wasted_bytes"], 0);
        let attrs = with("java.util.HashMap", 3, 16);
        assert!(attrs.len() >= 400, "{variant}: {} attrs maps", attrs.len());
        assert!(
            attrs
                .iter()
                .all(|map| map["wasted_bytes"] == 12 * reference)
        );
        let listeners = with("java.util.ArrayList", 53, 73);
        assert_eq!(listeners.len(), 1, "{variant}: LISTENERS");
        assert_eq!(listeners[0]["wasted_bytes"], 20 * reference);
        // Wasted bytes add up, and the rows are the collections listed.
        let total: u64 = collections
            .iter()
            .map(|c| c["wasted_bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(waste["wasted_bytes"], total);
        assert_eq!(waste["collections"], collections.len() as u64);
    }
}

/// An `.hgd` converted from an HPROF keeps the arrays' lengths (its `array_lengths` chunk):
/// `waste` answers on it what it answers on the HPROF, whose answer the tests above check
/// against the JVM's histogram and the fixture's construction.
#[test]
fn converted_dumps_measure_collections_as_the_hprof_does() {
    let dir = temp_dir("waste-converted");
    for (variant, _, _) in VARIANTS {
        let file = fixture(&format!("java/{variant}.hprof.gz"));
        let converted = dir.join(format!("{variant}.hgd"));
        heapgraph_ok(&["convert", path_str(&file), "-o", path_str(&converted)]);
        let args = |dump: &str| json(&["waste", dump, "--format", "json", "-n", "100000"]);
        let (original, again) = (args(path_str(&file)), args(path_str(&converted)));
        assert!(
            again["notes"].as_array().expect("notes").is_empty(),
            "{again:#}"
        );
        assert!(row(&again, "java.util.HashMap")["capacity"].as_u64() > Some(0));
        for field in [
            "collections",
            "empty_collections",
            "wasted_bytes",
            "null_slot_bytes",
            "rows",
        ] {
            assert_eq!(again[field], original[field], "{variant}: {field}");
        }
        let ids = |waste: &Value| -> Vec<Value> {
            waste["worst"]
                .as_array()
                .expect("worst")
                .iter()
                .map(|c| c["object"]["id"].clone())
                .collect()
        };
        assert_eq!(ids(&again), ids(&original), "{variant}");
    }
}

fn load(variant: &str) -> HeapGraph {
    let path = fixture(&format!("java/{variant}.hprof.gz"));
    match heapgraph_import::import_path(&path, &Default::default()).expect("the dump loads") {
        Contents::HeapGraph(graph) => graph,
        _ => panic!("not a heap graph"),
    }
}

/// Whether a dominator of `node` below the root (walked up the idom chain one by one) is a
/// member of its group: the second, simpler algorithm of a group's retained size counts a
/// member's retained size only when none is.
fn under_a_member(
    graph: &HeapGraph,
    tree: &heapgraph_analyzer::DominatorTree,
    node: usize,
    is_member: impl Fn(usize) -> bool,
) -> bool {
    let root = graph.root().to_raw();
    let mut up = tree.idom[node];
    while up != NO_NODE && up != root {
        if is_member(up as usize) {
            return true;
        }
        up = tree.idom[up as usize];
    }
    false
}

/// Each group's retained size by a second, simpler algorithm: a member counts when no other
/// member is among its dominators (walked up the idom chain one by one).
#[test]
fn groups_count_each_retained_byte_once() {
    let graph = load("default");
    let edge_rule = EdgeRule::for_runtime(graph.meta().runtime);
    let analysis = analyze(&graph, &Options { edge_rule });
    let tree = &analysis.dominators;
    let package = |node: usize| {
        let id = graph.node(node).expect("node");
        (!graph.is_synthetic(id)).then(|| package_of(graph.type_name(id)).to_owned())
    };
    let mut expected: HashMap<String, (u64, u64)> = HashMap::default();
    for node in graph.nodes() {
        let Some(group) = package(node.index()) else {
            continue;
        };
        let entry = expected.entry(group.clone()).or_default();
        entry.0 += 1;
        if !tree.reachable[node.index()] {
            continue;
        }
        if !under_a_member(&graph, tree, node.index(), |up| {
            package(up).as_ref() == Some(&group)
        }) {
            entry.1 += tree.retained_size.get(node.index());
        }
    }
    let view = group_by(&graph, &analysis, GroupBy::Package).expect("Java has packages");
    assert_eq!(view.rows.len(), expected.len());
    for row in &view.rows {
        assert_eq!(
            (row.count, row.retained_size),
            expected[&row.group],
            "{}",
            row.group
        );
    }
    // The planted classes: com.example holds SessionCache.INSTANCE's 330,576 bytes at least.
    let planted = view
        .rows
        .iter()
        .find(|row| row.group == "com.example")
        .expect("com.example");
    assert!(planted.retained_size >= 330_576);
    // Classes of the application loader are the planted ones (and their lambda), the rest
    // the bootstrap loader's.
    let loaders = group_by(&graph, &analysis, GroupBy::ClassLoader).expect("loaders");
    let app = loaders
        .rows
        .iter()
        .find(|row| {
            row.group
                .starts_with("jdk.internal.loader.ClassLoaders$AppClassLoader")
        })
        .expect("the application class loader");
    let com_example_count = view
        .rows
        .iter()
        .find(|row| row.group == "com.example")
        .unwrap()
        .count;
    assert!(
        app.count >= com_example_count,
        "{} < {com_example_count}",
        app.count
    );
    let total: u64 = loaders.rows.iter().map(|row| row.count).sum();
    let by_package: u64 = view.rows.iter().map(|row| row.count).sum();
    assert_eq!(total, by_package);
}

fn search(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// A redacted dump answers `summary`, `top`, `who-holds` and `waste` with the same numbers,
/// and none of the planted values are left in it: the duplicate strings' text, the session
/// ids, and the 256-byte payload of session 0 (bytes 0, 1, …, 255, as `LeakFixture` fills it).
/// Another reader opens it too.
#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3")]
fn redacted_dumps_keep_the_numbers_and_lose_the_values() {
    let dir = temp_dir("redact");
    let original = dir.join("original.hprof");
    let redacted = dir.join("redacted.hprof");
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(
        std::fs::File::open(fixture("java/default.hprof.gz")).expect("fixture"),
    )
    .read_to_end(&mut bytes)
    .expect("gzip");
    std::fs::write(&original, &bytes).expect("write");
    let payload: Vec<u8> = (0..=255u8).collect();
    let secrets: [&[u8]; 3] = [b"duplicate-value-0123456789", b"sess-0000-", &payload];
    for secret in secrets {
        assert!(search(&bytes, secret), "the fixture holds the secret");
    }
    heapgraph_ok(&["redact", path_str(&original), "-o", path_str(&redacted)]);
    let out = std::fs::read(&redacted).expect("redacted");
    assert_eq!(out.len(), bytes.len());
    for secret in secrets {
        assert!(!search(&out, secret), "a secret is left");
    }
    let strip = |mut value: Value| {
        value["dump"]["file"] = Value::Null;
        value
    };
    for verb in [
        &["summary"][..],
        &["top", "-n", "50"],
        &["waste"],
        &["summary", "--group-by", "classloader"],
    ] {
        let run = |file: &str| {
            let mut args = verb.to_vec();
            args.extend([file, "--format", "json"]);
            strip(json(&args))
        };
        assert_eq!(
            run(path_str(&original)),
            run(path_str(&redacted)),
            "{verb:?}"
        );
    }
    // who-holds names threads by their name strings, which are values: only names differ.
    let numbers = |file: &str| {
        let mut value = strip(json(&[
            "who-holds",
            "--type",
            "com.example.Session",
            file,
            "--format",
            "json",
        ]));
        blank_names(&mut value);
        value
    };
    assert_eq!(numbers(path_str(&original)), numbers(path_str(&redacted)));
    // A second reader, the fixture generator's own HPROF parser (make_fixtures.py), reads the
    // redacted file record for record as the JVM wrote the original.
    let script = format!(
        "import sys, json; sys.path.insert(0, {dir:?}); import make_fixtures as m; \
         print(json.dumps(m.record_counts(m.Hprof(open({file:?}, 'rb').read()))))",
        dir = path_str(&fixture("java")),
        file = path_str(&redacted),
    );
    let output = crate::support::tool("python3")
        .args(["-c", &script])
        .output()
        .expect("python3 runs (it is required, as for the fixtures)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let counts: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let text = std::fs::read_to_string(fixture("java/expected.json")).expect("expected.json");
    let expected: Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(counts, expected["variants"]["default"]["hprof"]["records"]);
    // --keep-strings-matching keeps what matches.
    let kept = dir.join("kept.hprof");
    heapgraph_ok(&[
        "redact",
        path_str(&original),
        "-o",
        path_str(&kept),
        "--keep-strings-matching",
        "^duplicate-value-",
    ]);
    let out = std::fs::read(&kept).expect("kept");
    assert!(search(&out, b"duplicate-value-0123456789"));
    assert!(!search(&out, b"sess-0000-"));
    std::fs::remove_dir_all(&dir).ok();
}

fn blank_names(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if key == "name" {
                    *item = Value::Null;
                } else {
                    blank_names(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(blank_names),
        _ => {}
    }
}

/// The bytes of `path`, gunzipped when gzip (a planted value must be absent from the content,
/// whatever the packing).
fn plain_bytes(path: &std::path::Path) -> Vec<u8> {
    let raw = std::fs::read(path).expect("readable");
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .expect("gzip");
        out
    } else {
        raw
    }
}

/// `verb` on `file` as JSON, without the file name and the string texts (which redaction
/// replaces on purpose): the numbers.
fn numbers_of(verb: &[&str], file: &str) -> Value {
    let mut args = verb.to_vec();
    args.extend([file, "--format", "json"]);
    let mut value = json(&args);
    value["dump"]["file"] = Value::Null;
    if let Some(rows) = value["values"].as_array_mut() {
        for row in rows {
            row["value"] = Value::Null;
        }
    }
    value
}

fn assert_same_numbers(original: &str, redacted: &str, verbs: &[&[&str]]) {
    for verb in verbs {
        assert_eq!(
            numbers_of(verb, original),
            numbers_of(verb, redacted),
            "{verb:?}"
        );
    }
}

/// A redacted V8 snapshot keeps every number (`summary`, `top`, `strings`' counts, who holds
/// the planted requests) and loses the planted values: each request's url
/// (`/api/items/ID?page=`) and body (`{"id":…,"payload":"ppp…"}`, 64 `p`s and more, as
/// `make_fixtures.js` builds it). A second reader, Python's `json`, reads the copy with the node
/// and edge counts V8 wrote in the header and the planted classes' counts (`expected.json`).
#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3")]
fn redacted_v8_snapshots_keep_the_numbers_and_lose_the_values() {
    let dir = temp_dir("redact-v8");
    let original = fixture("v8/app-after.heapsnapshot.gz");
    let redacted = dir.join("redacted.heapsnapshot");
    let p64 = "p".repeat(64);
    let secrets: [&[u8]; 2] = [b"/api/items/", p64.as_bytes()];
    let before = plain_bytes(&original);
    for secret in secrets {
        assert!(search(&before, secret), "the fixture holds the secret");
    }
    heapgraph_ok(&["redact", path_str(&original), "-o", path_str(&redacted)]);
    let after = plain_bytes(&redacted);
    for secret in secrets {
        assert!(!search(&after, secret), "a secret is left");
    }
    assert_same_numbers(
        path_str(&original),
        path_str(&redacted),
        &[
            &["summary"],
            &["top", "-n", "50"],
            &["strings"],
            &["who-holds", "--type", "LeakyRequest"],
        ],
    );
    let script = format!(
        "import json; d = json.load(open({file:?})); m = d['snapshot']['meta']; \
         nf = len(m['node_fields']); ef = len(m['edge_fields']); \
         types = m['node_types'][0]; names = d['strings']; \
         counts = {{}}; \
         [counts.__setitem__(names[d['nodes'][i + 1]], counts.get(names[d['nodes'][i + 1]], 0) + 1) \
          for i in range(0, len(d['nodes']), nf) if types[d['nodes'][i]] == 'object']; \
         print(json.dumps([len(d['nodes']) // nf, len(d['edges']) // ef, \
                           {{k: counts.get(k, 0) for k in ['LeakyCache', 'LeakyRequest', 'RequestHeaders']}}]))",
        file = path_str(&redacted),
    );
    let output = crate::support::tool("python3")
        .args(["-c", &script])
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let read: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let text = std::fs::read_to_string(fixture("v8/expected.json")).expect("expected.json");
    let expected: Value = serde_json::from_str(&text).expect("valid JSON");
    let snapshot = &expected["snapshots"]["app-after"];
    assert_eq!(read[0], snapshot["node_count"]);
    assert_eq!(read[1], snapshot["edge_count"]);
    for class in ["LeakyCache", "LeakyRequest", "RequestHeaders"] {
        assert_eq!(read[2][class], snapshot["counts"][class], "{class}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A Python dump (written by the dumper in `leaky_service.py`, at test time) redacted to
/// `.hgd`: the same numbers, and none of the planted values: the requests' paths
/// (`/v1/complete/N`), their bytes payloads ("summarise the quarterly report") and the token
/// streams' chunks (`stream-N-token-M`). The program's own `objgraph.typestats` (written
/// beside the dump) counts the redacted dump's types as it counted the original's.
#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3")]
fn redacted_python_dumps_keep_the_numbers_and_lose_the_values() {
    let dir = temp_dir("redact-python");
    let status = crate::support::tool("python3")
        .arg(repo_root().join("fixtures/python/leaky_service.py"))
        .arg(&dir)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "leaky_service.py failed");
    let original = dir.join("after.hgd");
    let redacted = dir.join("redacted.hgd");
    let secrets: [&[u8]; 3] = [
        b"/v1/complete/",
        b"summarise the quarterly report",
        b"stream-0-token-",
    ];
    let before = plain_bytes(&original);
    for secret in secrets {
        assert!(search(&before, secret), "the dump holds the secret");
    }
    heapgraph_ok(&["redact", path_str(&original), "-o", path_str(&redacted)]);
    let after = plain_bytes(&redacted);
    for secret in secrets {
        assert!(!search(&after, secret), "a secret is left");
    }
    assert_same_numbers(
        path_str(&original),
        path_str(&redacted),
        &[
            &["summary"],
            &["top", "-n", "50"],
            &["strings"],
            &["who-holds", "--type", "__main__.Request"],
            &["waste", "-n", "100000"],
        ],
    );
    let typestats: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("after.typestats.json")).expect("typestats"),
    )
    .expect("JSON");
    let summary = json(&[
        "summary",
        path_str(&redacted),
        "--kind",
        "object",
        "--format",
        "json",
        "-n",
        "100000",
    ]);
    let count = |type_name: &str| {
        summary["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["type"] == type_name)
            .map_or(0, |row| row["count"].as_u64().unwrap())
    };
    for name in ["Request", "SessionCache"] {
        let name = format!("__main__.{name}");
        let expected = typestats[&name].as_u64().expect("objgraph counted it");
        assert_eq!(count(&name), expected, "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The report's waste section shows, row for row, what `heapgraph waste` measures (itself
/// checked against the JVM's histogram above): each type's count, empty collections and wasted
/// bytes, in the cells' sort values.
#[test]
fn the_report_shows_the_waste_of_collections() {
    let dir = temp_dir("waste-report");
    let file = fixture("java/default.hprof.gz");
    let page = dir.join("report.html");
    heapgraph_ok(&["report", path_str(&file), "-o", path_str(&page)]);
    let html = std::fs::read_to_string(&page).expect("the page");
    let section = &html[html
        .find("<h2>Waste in collections</h2>")
        .expect("a waste section")..];
    let section = &section[..section.find("</table>").expect("its table")];
    let waste = json(&["waste", path_str(&file), "--format", "json"]);
    let rows = waste["rows"].as_array().expect("rows");
    assert!(!rows.is_empty());
    for row in rows {
        let name = row["type"].as_str().unwrap();
        let label = if row["arrays"] == true {
            format!("{name} (arrays)")
        } else {
            name.to_owned()
        };
        let cells = format!(
            "<tr><td>{label}</td><td class=\"n\" data-v=\"{count}\">{count}</td><td class=\"n\" data-v=\"{empty}\">{empty}</td>",
            count = row["count"],
            empty = row["empty"],
        );
        assert!(section.contains(&cells), "{cells}");
        let wasted = format!("data-v=\"{}\"", row["wasted_bytes"]);
        let at = section.find(&cells).unwrap();
        let row_end = at + section[at..].find("</tr>").unwrap();
        assert!(section[at..row_end].contains(&wasted), "{label}: {wasted}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Each V8 node's script by a second walk, over the snapshot's own arrays rather than the
/// imported graph: an object's `__proto__` → `constructor` closure, a closure itself, then
/// `shared` → `script_or_debug_info` (`script` in older V8), whose node names the script.
/// Keyed by object id; the engine's synthetic nodes are left out, as the grouping leaves them.
fn raw_v8_scripts(snapshot: &Value) -> HashMap<u64, (String, u64)> {
    let meta = &snapshot["snapshot"]["meta"];
    let names = |list: &Value| -> Vec<String> {
        list.as_array()
            .expect("a list of names")
            .iter()
            .map(|name| name.as_str().expect("a name").to_owned())
            .collect()
    };
    let (node_fields, edge_fields) = (names(&meta["node_fields"]), names(&meta["edge_fields"]));
    let kinds = names(&meta["node_types"][0]);
    let edge_kinds = names(&meta["edge_types"][0]);
    let numbers = |key: &str| -> Vec<u64> {
        snapshot[key]
            .as_array()
            .expect("numbers")
            .iter()
            .map(|n| n.as_u64().expect("a number"))
            .collect()
    };
    let (nodes, edges) = (numbers("nodes"), numbers("edges"));
    let strings: Vec<&str> = snapshot["strings"]
        .as_array()
        .expect("strings")
        .iter()
        .map(|s| s.as_str().expect("a string"))
        .collect();
    let field = |name: &str| node_fields.iter().position(|f| f == name).expect(name);
    let (n_fields, e_fields) = (node_fields.len(), edge_fields.len());
    let (kind_at, name_at, id_at, size_at, count_at) = (
        field("type"),
        field("name"),
        field("id"),
        field("self_size"),
        field("edge_count"),
    );
    let n_nodes = nodes.len() / n_fields;
    let mut first_edge = Vec::with_capacity(n_nodes);
    let mut at = 0;
    for node in 0..n_nodes {
        first_edge.push(at);
        at += nodes[node * n_fields + count_at] as usize * e_fields;
    }
    let kind = |node: usize| kinds[nodes[node * n_fields + kind_at] as usize].as_str();
    let name = |node: usize| strings[nodes[node * n_fields + name_at] as usize];
    let named = |node: usize, wanted: &str| -> Option<usize> {
        (0..nodes[node * n_fields + count_at] as usize).find_map(|k| {
            let edge = first_edge[node] + k * e_fields;
            let edge_kind = edge_kinds[edges[edge] as usize].as_str();
            (edge_kind != "element"
                && edge_kind != "hidden"
                && strings[edges[edge + 1] as usize] == wanted)
                .then(|| edges[edge + 2] as usize / n_fields)
        })
    };
    let script_of = |function: usize| -> String {
        named(function, "shared")
            .and_then(|info| named(info, "script_or_debug_info").or_else(|| named(info, "script")))
            .filter(|&script| kind(script) == "code" && !name(script).is_empty())
            .map_or_else(|| "(built-in)".to_owned(), |script| name(script).to_owned())
    };
    let mut groups = HashMap::default();
    for node in 0..n_nodes {
        let group = match kind(node) {
            "synthetic" => continue,
            "closure" => script_of(node),
            "object" => match named(node, "__proto__") {
                None => "(no script)".to_owned(),
                Some(prototype) => match named(prototype, "constructor") {
                    Some(function) if kind(function) == "closure" => script_of(function),
                    _ => "(built-in)".to_owned(),
                },
            },
            _ => "(no script)".to_owned(),
        };
        let size = nodes[node * n_fields + size_at];
        groups.insert(nodes[node * n_fields + id_at], (group, size));
    }
    groups
}

/// `--group-by script` on a Node 20 snapshot: each group's members, shallow and retained
/// sizes as the second walk over the snapshot's own arrays finds them (retained by the idom
/// walk of `groups_count_each_retained_byte_once`); the fixture program's planted classes in
/// its own script's group.
#[test]
fn v8_objects_group_by_the_script_that_defined_their_constructor() {
    let path = fixture("v8/app-after.heapsnapshot.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("the fixture"))
        .read_to_string(&mut text)
        .expect("gzip");
    let raw = raw_v8_scripts(&serde_json::from_str(&text).expect("JSON"));
    drop(text);
    let graph = match heapgraph_import::import_path(&path, &Default::default()).expect("loads") {
        Contents::HeapGraph(graph) => graph,
        _ => panic!("not a heap graph"),
    };
    let analysis = analyze(
        &graph,
        &Options {
            edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
        },
    );
    let tree = &analysis.dominators;
    let mut group_of_node: HashMap<u32, &str> = HashMap::default();
    for node in graph.nodes() {
        if let Some((group, _)) = raw.get(&graph.object_id(node)) {
            group_of_node.insert(node.to_raw(), group.as_str());
        }
    }
    assert_eq!(
        group_of_node.len(),
        raw.len(),
        "every raw node is a node of the graph"
    );
    let mut expected: HashMap<&str, (u64, u64, u64)> = HashMap::default();
    for node in graph.nodes() {
        let Some(&group) = group_of_node.get(&node.to_raw()) else {
            continue;
        };
        let entry = expected.entry(group).or_default();
        entry.0 += 1;
        entry.1 += raw[&graph.object_id(node)].1;
        if !tree.reachable[node.index()] {
            continue;
        }
        if !under_a_member(&graph, tree, node.index(), |up| {
            group_of_node.get(&(up as u32)) == Some(&group)
        }) {
            entry.2 += tree.retained_size.get(node.index());
        }
    }
    let view = group_by(&graph, &analysis, GroupBy::Script).expect("V8 has scripts");
    assert_eq!(view.rows.len(), expected.len());
    for row in &view.rows {
        assert_eq!(
            (row.count, row.shallow_size, row.retained_size),
            expected[row.group.as_str()],
            "{}",
            row.group
        );
    }

    // The classes the fixture program planted are all in its script's group, as the command
    // line prints it.
    let text = std::fs::read_to_string(fixture("v8/expected.json")).expect("expected.json");
    let planted: Value = serde_json::from_str(&text).expect("JSON");
    let counts = planted["snapshots"]["app-after"]["counts"]
        .as_object()
        .expect("counts");
    let report = json(&[
        "summary",
        path_str(&path),
        "--group-by",
        "script",
        "--format",
        "json",
    ]);
    assert_eq!(report["by"], "script");
    let script = report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|group| {
            group["group"]
                .as_str()
                .is_some_and(|name| name.ends_with("/make_fixtures.js"))
        })
        .unwrap_or_else(|| panic!("no group of make_fixtures.js: {report}"));
    let planted_total: u64 = counts.values().map(|n| n.as_u64().expect("a count")).sum();
    let script_count = script["count"].as_u64().expect("count");
    assert!(
        script_count >= planted_total,
        "{script_count} < {planted_total}"
    );
    for node in graph.nodes() {
        if counts.contains_key(graph.type_name(node)) && graph.kind(node).name == "object" {
            let group = group_of_node[&node.to_raw()];
            assert!(
                group.ends_with("/make_fixtures.js"),
                "{} in {group}",
                graph.type_name(node)
            );
        }
    }
    // A Java dump has no scripts, and a snapshot no packages: each refusal says what applies.
    let java = fixture("java/default.hprof.gz");
    for (file, by, hint) in [
        (path_str(&java), "script", "only V8 snapshots"),
        (path_str(&path), "package", "--group-by script"),
    ] {
        let out = heapgraph(&["summary", file, "--group-by", by]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(hint), "{stderr}");
    }
}
