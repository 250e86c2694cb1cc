//! heapgraph against the peers on every node of the real fixtures: retained sizes and
//! dominators equal memlab's, distances equal Chrome DevTools' (its own worker code, from the
//! `heap-snapshot-toolkit` bundle), per-type counts equal an independent count.
//!
//! The peers are installed by `npm ci --ignore-scripts` in `tests/oracle` (`.ci/run` does it).

use crate::support::{V8_FIXTURES, fixture, repo_root, temp_dir, tool};
use heapgraph_analyzer::{Analysis, EdgeRule, NO_DISTANCE, Options, analyze};
use heapgraph_import::Contents;
use heapgraph_model::HeapGraph;
use rustc_hash::FxHashMap as HashMap;

pub(crate) fn load(name: &str) -> HeapGraph {
    match heapgraph_import::import_path(&fixture(name), &Default::default()).expect("fixture loads")
    {
        Contents::HeapGraph(graph) => graph,
        _ => panic!("{name} is not a heap graph"),
    }
}

pub(crate) fn load_and_analyze(name: &str) -> (HeapGraph, Analysis) {
    let graph = load(name);
    let edge_rule = EdgeRule::for_runtime(graph.meta().runtime);
    let analysis = analyze(&graph, &Options { edge_rule });
    (graph, analysis)
}

/// Runs `tests/oracle/<script>` on a fixture and parses its JSON.
pub(crate) fn run_oracle(script: &str, name: &str) -> serde_json::Value {
    run_oracle_with(script, &[], name)
}

/// [`run_oracle`] with extra arguments for the script.
pub(crate) fn run_oracle_with(script: &str, args: &[&str], name: &str) -> serde_json::Value {
    let oracle_dir = repo_root().join("tests/oracle");
    assert!(
        oracle_dir.join("node_modules").exists(),
        "the peer tools are not installed: run tests/setup.sh (npm ci --ignore-scripts in tests/oracle)"
    );
    let out = temp_dir("oracle").join(format!(
        "{script}{}-{}.json",
        args.concat(),
        name.replace('/', "_")
    ));
    let status = tool("node")
        .arg("--max-old-space-size=4000")
        .arg(oracle_dir.join(script))
        .args(args)
        .arg("-o")
        .arg(&out)
        .arg(fixture(name))
        .status()
        .expect("node runs");
    assert!(status.success(), "{script} failed on {name}");
    let text = std::fs::read_to_string(&out).expect("oracle output");
    serde_json::from_str(&text).expect("oracle JSON")
}

pub(crate) fn numbers(value: &serde_json::Value, key: &str) -> Vec<i64> {
    value[key]
        .as_array()
        .unwrap_or_else(|| panic!("oracle output has no {key}"))
        .iter()
        .map(|v| v.as_f64().expect("number") as i64)
        .collect()
}

/// An id as memlab and DevTools hold it: they keep the `nodes` array in a `Uint32Array`, so an
/// id above `u32::MAX` (Julia's addresses) reaches them as its low 32 bits.
pub(crate) fn peer_id(id: u64) -> i64 {
    i64::from(id as u32)
}

/// Checks reachability, retained sizes and dominators of every node of fixture `name`
/// against memlab's, comparing at least `min_compared` nodes.
pub(crate) fn check_against_memlab(name: &str, min_compared: usize) {
    let (graph, analysis) = load_and_analyze(name);
    let memlab = run_oracle("memlab_oracle.js", name);
    let ids = numbers(&memlab, "ids");
    let retained = numbers(&memlab, "retained");
    let dominator = numbers(&memlab, "dominator");
    let reach = numbers(&memlab, "reach");
    assert_eq!(ids.len(), graph.node_count(), "{name}: node count");
    let tree = &analysis.dominators;
    let root = graph.root().index();
    let mut unreachable_total = 0i64;
    let mut compared = 0;
    for node in graph.nodes() {
        let i = node.index();
        assert_eq!(
            ids[i],
            peer_id(graph.object_id(node)),
            "{name}: node {i} id"
        );
        assert_eq!(
            tree.reachable[i],
            reach[i] == 1,
            "{name}: reachability of @{}",
            ids[i]
        );
        if i == root {
            continue;
        }
        if !tree.reachable[i] && tree.idom[i] as usize == root {
            unreachable_total += retained[i];
        }
        assert_eq!(
            tree.retained_size.get(i) as i64,
            retained[i],
            "{name}: retained size of @{}",
            ids[i]
        );
        let our_dominator = graph.object_id(
            graph
                .node(tree.idom[i] as usize)
                .expect("dominator is a node"),
        );
        assert_eq!(
            peer_id(our_dominator),
            dominator[i],
            "{name}: dominator of @{}",
            ids[i]
        );
        compared += 1;
    }
    let memlab_root = memlab["root_retained"].as_f64().expect("root_retained") as i64;
    assert_eq!(
        tree.retained_size.get(root) as i64,
        memlab_root - unreachable_total,
        "{name}: root"
    );
    assert!(
        compared >= min_compared,
        "{name}: compared only {compared} nodes"
    );
}

/// Checks the distance of every node of fixture `name` against DevTools'.
pub(crate) fn check_distances_against_devtools(name: &str) {
    let (graph, analysis) = load_and_analyze(name);
    let devtools = run_oracle("devtools_oracle.js", name);
    let distance = numbers(&devtools, "distance");
    let no_distance = devtools["no_distance"].as_i64().expect("no_distance");
    assert_eq!(distance.len(), graph.node_count());
    for node in graph.nodes() {
        let ours = analysis.distances(&graph)[node.index()];
        let expected = distance[node.index()];
        let ours = if ours == NO_DISTANCE {
            no_distance
        } else {
            i64::from(ours)
        };
        assert_eq!(
            ours,
            expected,
            "{name}: distance of @{}",
            graph.object_id(node)
        );
    }
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs node and memlab")]
fn retained_sizes_and_dominators_equal_memlabs_on_every_node() {
    for name in V8_FIXTURES {
        check_against_memlab(name, 40_000);
    }
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs node and DevTools' worker"
)]
fn distances_equal_devtools_on_every_node() {
    for name in V8_FIXTURES {
        check_distances_against_devtools(name);
    }
}

#[test]
fn per_type_counts_equal_an_independent_count_of_the_nodes_array() {
    // The oracle reads the raw JSON with serde_json and applies DevTools' class-name rule.
    for name in V8_FIXTURES {
        let (graph, analysis) = load_and_analyze(name);
        let summary = heapgraph_analyzer::summary(&graph, &analysis);
        let raw = {
            let file = std::fs::File::open(fixture(name)).expect("fixture");
            let reader = flate2::read::GzDecoder::new(file);
            let value: serde_json::Value = serde_json::from_reader(reader).expect("JSON");
            value
        };
        let meta = &raw["snapshot"]["meta"];
        let fields: Vec<&str> = meta["node_fields"]
            .as_array()
            .expect("fields")
            .iter()
            .map(|f| f.as_str().expect("str"))
            .collect();
        let at = |field: &str| fields.iter().position(|f| *f == field).expect("field");
        let (type_at, name_at, size_at) = (at("type"), at("name"), at("self_size"));
        let types: Vec<&str> = meta["node_types"][0]
            .as_array()
            .expect("types")
            .iter()
            .map(|t| t.as_str().expect("str"))
            .collect();
        let strings = raw["strings"].as_array().expect("strings");
        let nodes = raw["nodes"].as_array().expect("nodes");
        let mut expected: HashMap<String, (u64, u64)> = HashMap::default();
        for node in nodes.chunks(fields.len()) {
            let kind = types[node[type_at].as_u64().expect("type") as usize];
            if kind == "synthetic" {
                continue;
            }
            let class = match kind {
                "hidden" => "(system)".to_owned(),
                "object" | "native" => strings[node[name_at].as_u64().expect("name") as usize]
                    .as_str()
                    .expect("str")
                    .to_owned(),
                "code" => "(compiled code)".to_owned(),
                other => format!("({other})"),
            };
            let entry = expected.entry(class).or_default();
            entry.0 += 1;
            entry.1 += node[size_at].as_u64().expect("size");
        }
        assert_eq!(
            summary.types.len(),
            expected.len(),
            "{name}: number of types"
        );
        for row in &summary.types {
            assert_eq!(
                expected.get(&row.type_name),
                Some(&(row.count, row.shallow_size)),
                "{name}: type {}",
                row.type_name
            );
        }
    }
}

#[test]
fn dominators_equal_petgraphs_simple_fast_on_the_fixtures() {
    use heapgraph_model::{EdgeKind, EdgeView};
    use petgraph::visit::{EdgeFiltered, EdgeRef};
    for name in V8_FIXTURES {
        let (graph, analysis) = load_and_analyze(name);
        let root = graph.root();
        // The V8 rule: weak edges never retain, shortcuts only from the root, self edges never.
        let strong = EdgeFiltered::from_fn(&graph, |edge: EdgeView| {
            edge.source() != edge.target()
                && match edge.kind() {
                    EdgeKind::Weak => false,
                    EdgeKind::Shortcut => edge.source() == root,
                    _ => true,
                }
        });
        let oracle = petgraph::algo::dominators::simple_fast(&strong, root);
        let tree = &analysis.dominators;
        for node in graph.nodes() {
            if node == root || !tree.reachable[node.index()] {
                continue;
            }
            assert_eq!(
                tree.immediate_dominator(&graph, node),
                oracle.immediate_dominator(node),
                "{name}: @{}",
                graph.object_id(node)
            );
        }
    }
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs node and memlab")]
fn leaks_alive_from_the_target_equal_memlabs_find_leaks() {
    let oracle_dir = repo_root().join("tests/oracle");
    assert!(
        oracle_dir.join("node_modules").exists(),
        "run `npm ci --ignore-scripts` in tests/oracle"
    );
    let out = temp_dir("oracle").join("memlab-leaks.json");
    let status = tool("node")
        .arg("--max-old-space-size=4000")
        .arg(oracle_dir.join("memlab_leaks.js"))
        .arg("-o")
        .arg(&out)
        .args(V8_FIXTURES.map(fixture))
        .stdout(std::process::Stdio::null())
        .status()
        .expect("node runs");
    assert!(status.success(), "memlab_leaks.js failed");
    let memlab: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let files: Vec<String> = V8_FIXTURES
        .iter()
        .map(|name| crate::support::path_str(&fixture(name)).to_owned())
        .collect();
    let ours =
        crate::support::json(&["leaks", &files[0], &files[1], &files[2], "--format", "json"]);
    let kinds: HashMap<(String, String), (u64, u64)> = ours["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                (
                    row["name"].as_str().unwrap().to_owned(),
                    row["kind"].as_str().unwrap().to_owned(),
                ),
                (
                    row["count"].as_u64().unwrap(),
                    row["retained_size"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    let rows = memlab["kinds"].as_array().unwrap();
    assert_eq!(rows.len(), 20, "memlab shows its top 20");
    for row in rows {
        let key = (
            row["name"].as_str().unwrap().to_owned(),
            row["type"].as_str().unwrap().to_owned(),
        );
        let expected = (
            row["count"].as_u64().unwrap(),
            row["retainedSize"].as_u64().unwrap(),
        );
        assert_eq!(kinds.get(&key), Some(&expected), "{key:?}");
    }
    // The planted leak is one cluster: the requests kept in the cache's map.
    let first = &ours["clusters"][0];
    assert_eq!(first["count"], 100);
    assert!(
        first["signature"]
            .as_str()
            .unwrap()
            .ends_with("LeakyCache.entries → Map.table → (array)[] → LeakyRequest")
    );
}
