//! What holds a set of objects: `paths` (merged shortest paths to the roots), `dominated-by`
//! (immediate dominators grouped by type) and the big drops of `suspects`, on the real fixtures,
//! against what their construction plants (`fixtures/README.md`) and the independent readings
//! of `expected.json` (the Java dumps' dominator facts come from `make_fixtures.py`'s own
//! Cooper–Harvey–Kennedy computation).

use crate::support::{fixture, json, path_str};
use serde_json::Value;

const JAVA_VARIANTS: [&str; 3] = ["default", "nocoops", "nocompressed"];

fn java_expected() -> Value {
    let text = std::fs::read_to_string(fixture("java/expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("valid JSON")
}

fn v8_expected() -> Value {
    let text = std::fs::read_to_string(fixture("v8/expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("valid JSON")
}

fn nodes(report: &Value) -> &Vec<Value> {
    report["nodes"].as_array().expect("nodes")
}

/// The chain of nodes from a root's child to `at`, following `parent`.
fn chain_to(report: &Value, at: usize) -> Vec<&Value> {
    let nodes = nodes(report);
    let mut chain = vec![&nodes[at]];
    while let Some(parent) = chain.last().and_then(|node| node["parent"].as_u64()) {
        chain.push(&nodes[parent as usize]);
    }
    chain.reverse();
    chain
}

fn group<'a>(report: &'a Value, type_name: &str) -> &'a Value {
    report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|group| group["type"] == type_name)
        .unwrap_or_else(|| panic!("no group of {type_name}: {report:#}"))
}

/// Construction: `SessionCache.INSTANCE.sessions` is the only holder of the 400 sessions, so
/// every chain to one runs through the class's static field, the map and its table, and the
/// tree branches first at the table.
#[test]
fn the_sessions_paths_merge_into_the_caches_map() {
    for variant in JAVA_VARIANTS {
        let file = fixture(&format!("java/{variant}.hprof.gz"));
        let report = json(&[
            "paths",
            path_str(&file),
            "--type",
            "Session",
            "--format",
            "json",
        ]);
        assert_eq!(report["schema"], "heapgraph.paths/1");
        assert_eq!(report["selection"]["type"], "com.example.Session");
        assert_eq!(
            (report["targets"].as_u64(), report["reached"].as_u64()),
            (Some(400), Some(400))
        );
        let nodes = nodes(&report);
        let table = nodes
            .iter()
            .position(|node| node["edge"] == "table")
            .expect("the map's table");
        let chain = chain_to(&report, table);
        let edges: Vec<&str> = chain
            .iter()
            .filter_map(|node| node["edge"].as_str())
            .collect();
        assert!(
            edges.ends_with(&["INSTANCE", "sessions", "table"]),
            "{edges:?}"
        );
        let types: Vec<&str> = chain
            .iter()
            .filter_map(|node| node["type"].as_str())
            .collect();
        assert!(
            types.ends_with(&[
                "java.lang.Class",
                "com.example.SessionCache",
                "java.util.HashMap",
                "java.util.HashMap$Node[]"
            ]),
            "{types:?}"
        );
        assert_eq!(chain[chain.len() - 4]["name"], "com.example.SessionCache");
        for node in &chain {
            assert_eq!(node["targets"], 400, "{node:#}");
        }
        // No line of descent branches above the table.
        for node in &chain[..chain.len() - 1] {
            assert_eq!(node["hidden_children"], 0, "{node:#}");
        }
        // Below the table: the map's nodes, each leading to the sessions of its bucket.
        let below: Vec<&Value> = nodes
            .iter()
            .filter(|node| node["parent"].as_u64() == Some(table as u64))
            .collect();
        assert!(
            below
                .iter()
                .all(|node| node["type"] == "java.util.HashMap$Node")
        );
        let listed: u64 = below
            .iter()
            .map(|node| node["targets"].as_u64().unwrap())
            .sum();
        assert_eq!(
            listed + nodes[table]["hidden_targets"].as_u64().unwrap(),
            400
        );
        // A session is held by its node's `value` and retains what the generator measured for
        // the first one; no session dominates another, so their bytes add up.
        let sessions: Vec<&Value> = nodes
            .iter()
            .filter(|node| node["is_target"] == true)
            .collect();
        assert!(
            sessions
                .iter()
                .all(|node| node["edge"] == "value" && node["targets"] == 1)
        );
        let expected = java_expected();
        let first = &expected["variants"][variant]["dominators"]["referent_excluded"]["the Session sess-0000-63fb662e"];
        assert_eq!(first["idom"], "java.util.HashMap$Node");
        let total = report["retained_size"].as_u64().unwrap();
        let table_total = nodes[table]["targets_retained_size"].as_u64().unwrap();
        assert_eq!(total, table_total);
        let cache = &expected["variants"][variant]["dominators"]["referent_excluded"]["SessionCache.INSTANCE"];
        // The sessions are most of what the cache retains, and each about the first's size.
        assert!(total < cache["retained_bytes"].as_u64().unwrap());
        let each = first["retained_bytes"].as_u64().unwrap();
        assert!(
            total >= 400 * each * 9 / 10 && total <= 400 * each * 11 / 10,
            "{total} vs {each}"
        );
    }
}

/// Construction: the 5000 links hang one below the other from `LeakFixture.CHAIN_HEAD`; the
/// head retains them all (expected.json), and each link what follows it.
#[test]
fn a_chain_of_objects_is_one_line_with_its_middle_left_out() {
    let expected = java_expected();
    let file = fixture("java/default.hprof.gz");
    let report = json(&[
        "paths",
        path_str(&file),
        "--type",
        "ChainLink",
        "--format",
        "json",
    ]);
    let nodes = nodes(&report);
    let head = nodes
        .iter()
        .position(|node| node["edge"] == "CHAIN_HEAD")
        .expect("the head");
    let head_retained = expected["variants"]["default"]["dominators"]["referent_excluded"]
        ["LeakFixture.CHAIN_HEAD"]["retained_bytes"]
        .as_u64()
        .unwrap();
    assert_eq!(nodes[head]["targets"], 5000);
    assert_eq!(nodes[head]["targets_retained_size"], head_retained);
    assert_eq!(report["retained_size"], head_retained);
    let links = &nodes[head..];
    assert!(
        links
            .iter()
            .all(|node| node["indent"] == nodes[head]["indent"])
    );
    let skipped: u64 = links
        .iter()
        .map(|node| node["skipped_steps"].as_u64().unwrap())
        .sum();
    assert_eq!(skipped + links.len() as u64, 5000);
    let last = links.last().unwrap();
    assert_eq!(
        (last["targets"].as_u64(), last["depth"].as_u64()),
        (Some(1), Some(nodes[head]["depth"].as_u64().unwrap() + 4999))
    );
    // Each link retains itself and the links after it: 24 bytes each in this layout.
    assert_eq!(last["targets_retained_size"], 24);
    let text = crate::support::heapgraph_ok(&["paths", path_str(&file), "--type", "ChainLink"]);
    assert!(text.contains("… 4995 steps of one child each"), "{text}");
}

/// Construction (`make_fixtures.js`): the cache grew from requests 0..99 to 0..299 between the
/// snapshots of one process, whose ids V8 keeps; every request sits in
/// `global.requestCache.entries`.
#[test]
fn the_objects_new_since_a_baseline_lead_to_the_cache_that_grew() {
    let expected = v8_expected();
    let before = fixture("v8/app-before.heapsnapshot.gz");
    let after = fixture("v8/app-after.heapsnapshot.gz");
    let counts = &expected["snapshots"]["app-after"]["counts"];
    let all = json(&[
        "paths",
        path_str(&after),
        "--type",
        "LeakyRequest",
        "--format",
        "json",
    ]);
    assert_eq!(all["targets"], counts["LeakyRequest"]);
    let new = json(&[
        "paths",
        path_str(&after),
        "--baseline",
        path_str(&before),
        "--type",
        "LeakyRequest",
        "--format",
        "json",
    ]);
    let grown = counts["LeakyRequest"].as_u64().unwrap()
        - expected["snapshots"]["app-before"]["counts"]["LeakyRequest"]
            .as_u64()
            .unwrap();
    assert_eq!(new["targets"].as_u64(), Some(grown));
    assert_eq!(new["selection"]["baseline"], path_str(&before));
    for report in [&all, &new] {
        let nodes = nodes(report);
        assert_eq!(nodes[0]["type"], "global", "{report:#}");
        assert_eq!(nodes[0]["edge_kind"], "shortcut");
        let edges: Vec<&str> = nodes[..3]
            .iter()
            .filter_map(|node| node["edge"].as_str())
            .collect();
        assert_eq!(edges[1..], ["requestCache", "entries"]);
        assert_eq!(nodes[2]["targets"], report["targets"]);
    }
    // Everything new: the grown requests and their headers and bodies among them.
    let everything = json(&[
        "paths",
        path_str(&after),
        "--baseline",
        path_str(&before),
        "--new",
        "--format",
        "json",
    ]);
    assert!(everything["targets"].as_u64().unwrap() >= 3 * grown);
    // Shortest chains may enter through another root, but reach the same objects.
    let shortest = json(&[
        "paths",
        path_str(&after),
        "--type",
        "LeakyRequest",
        "--order",
        "shortest",
        "--format",
        "json",
    ]);
    assert_eq!(shortest["reached"], all["reached"]);
    assert_eq!(shortest["retained_size"], all["retained_size"]);
}

/// A converted dump stores each object's parent on its explaining chain, and `paths` reads the
/// chains up from the objects instead of searching the graph; it also stores the merged trees
/// of the types with the most instances, which `paths` at its default `-n` reads as they are.
/// Either way the tree must be the one the search finds in the dump it came from, node for
/// node (the search is the oracle).
#[test]
fn a_converted_dump_merges_the_paths_its_source_does() {
    let dir = crate::support::temp_dir("holding-converted");
    let cases = [
        ("java/default.hprof.gz", "Session"),
        ("java/nocoops.hprof.gz", "ChainLink"),
        ("java/default.hprof.gz", "java.lang.String"),
        ("v8/app-after.heapsnapshot.gz", "LeakyRequest"),
        ("v8/app-after.heapsnapshot.gz", "Object"),
    ];
    for (name, type_name) in cases {
        let source = fixture(name);
        let converted = dir.join(format!("{}.hgd", name.replace('/', "-")));
        let wrote = crate::support::heapgraph_ok(&[
            "convert",
            path_str(&source),
            "-o",
            path_str(&converted),
        ]);
        assert!(!wrote.contains("of the 0 types"), "{wrote}");
        for n in ["50", "20"] {
            let paths = |file: &std::path::Path| {
                let report = json(&[
                    "paths",
                    path_str(file),
                    "--type",
                    type_name,
                    "-n",
                    n,
                    "--format",
                    "json",
                ]);
                let keep = ["targets", "reached", "retained_size", "nodes"];
                keep.map(|key| report[key].clone())
            };
            let searched = paths(&source);
            assert!(searched[1].as_u64().unwrap() > 0, "{name} {type_name}");
            assert_eq!(paths(&converted), searched, "{name} {type_name} -n {n}");
        }
    }
}

/// A converted dump stores the chain parents and the distances, and its suspects' chains are
/// read up the stored parents with no search of the graph: they must be the chains the dump
/// it came from gives, where the parents are searched for afresh (the oracle), suspect for
/// suspect and step for step.
#[test]
fn a_converted_dump_finds_the_suspects_its_source_does() {
    let dir = crate::support::temp_dir("suspects-converted");
    let cases = [
        "java/default.hprof.gz",
        "java/nocoops.hprof.gz",
        "java/javac.hprof.gz",
        "v8/app-after.heapsnapshot.gz",
        "v8/julia-shaped.heapsnapshot.gz",
    ];
    // The converted files store the types below the accumulation points, which their
    // suspects then read instead of walking the tree.
    let mut stored_points = 0;
    for name in cases {
        let source = fixture(name);
        let converted = dir.join(format!("{}.hgd", name.replace('/', "-")));
        let said = crate::support::heapgraph_ok(&[
            "convert",
            path_str(&source),
            "-o",
            path_str(&converted),
        ]);
        stored_points += usize::from(said.contains("accumulation point"));
        let suspects = |file: &std::path::Path| {
            let mut report = json(&["suspects", path_str(file), "--format", "json"]);
            report.as_object_mut().map(|report| report.remove("dump"));
            report
        };
        let searched = suspects(&source);
        let paths = searched["suspects"].as_array().map(|suspects| {
            suspects
                .iter()
                .filter(|suspect| {
                    suspect["path"]
                        .as_array()
                        .is_some_and(|path| path.len() > 1)
                })
                .count()
        });
        assert!(
            paths.is_some_and(|n| n > 0),
            "{name}: no suspect with a chain"
        );
        assert_eq!(suspects(&converted), searched, "{name}");
    }
    assert!(
        stored_points >= 3,
        "{stored_points} files store accumulation points"
    );
}

/// The dominator facts of `expected.json` (make_fixtures.py's own dominator tree), grouped.
#[test]
fn immediate_dominators_group_the_planted_objects_by_their_holders() {
    let expected = java_expected();
    for variant in JAVA_VARIANTS {
        let file = fixture(&format!("java/{variant}.hprof.gz"));
        let file = path_str(&file);
        let facts = &expected["variants"][variant]["dominators"]["referent_excluded"];
        let by = |type_name: &str, skip: &[&str]| {
            let mut args = vec![
                "dominated-by",
                file,
                "--type",
                type_name,
                "--format",
                "json",
            ];
            for glob in skip {
                args.extend(["--skip", glob]);
            }
            json(&args)
        };
        // Each Session's idom is its map node; through java.util.* it is the one cache.
        let sessions = by("Session", &[]);
        assert_eq!(sessions["schema"], "heapgraph.immediate_dominators/1");
        assert_eq!(
            facts["the Session sess-0000-63fb662e"]["idom"],
            "java.util.HashMap$Node"
        );
        let nodes = group(&sessions, "java.util.HashMap$Node");
        assert_eq!(
            (nodes["dominated"].as_u64(), nodes["dominators"].as_u64()),
            (Some(400), Some(400))
        );
        let through = by("Session", &["java.util.*"]);
        let cache = group(&through, "com.example.SessionCache");
        assert_eq!(
            (cache["dominated"].as_u64(), cache["dominators"].as_u64()),
            (Some(400), Some(1))
        );
        assert_eq!(through["groups"].as_array().unwrap().len(), 1);
        // The listeners: all 50 under LISTENERS' element array, each retaining 440 bytes or so.
        let listeners = by("Listener", &[]);
        let array = group(&listeners, "java.lang.Object[]");
        assert_eq!(facts["a Listener"]["idom"], "[Ljava.lang.Object;");
        assert_eq!(
            (array["dominated"].as_u64(), array["dominators"].as_u64()),
            (Some(50), Some(1))
        );
        assert_eq!(
            array["dominated_retained_size"].as_u64(),
            Some(50 * facts["a Listener"]["retained_bytes"].as_u64().unwrap())
        );
        // The chain: the head under the class LeakFixture, every other link under the one
        // before; the head's group carries all the bytes, counted once.
        assert_eq!(
            facts["LeakFixture.CHAIN_HEAD"]["idom"],
            "class com.example.LeakFixture"
        );
        let links = by("ChainLink", &[]);
        let class = group(&links, "java.lang.Class");
        assert_eq!(class["dominated"], 1);
        assert_eq!(class["example"]["name"], "com.example.LeakFixture");
        assert_eq!(
            class["dominated_retained_size"],
            facts["LeakFixture.CHAIN_HEAD"]["retained_bytes"]
        );
        let previous = group(&links, "com.example.ChainLink");
        assert_eq!(
            (
                previous["dominated"].as_u64(),
                previous["dominators"].as_u64()
            ),
            (Some(4999), Some(4999))
        );
        assert_eq!(previous["dominated_retained_size"], 0);
        // The ring: one node held by the class, the 99 others under it alone (two disjoint
        // ways round the ring meet only there).
        let ring = by("RingNode", &[]);
        let held = group(&ring, "com.example.RingNode");
        assert_eq!(
            (held["dominated"].as_u64(), held["dominators"].as_u64()),
            (Some(99), Some(1))
        );
        assert_eq!(
            group(&ring, "java.lang.Class")["dominated_retained_size"],
            facts["LeakFixture.RING"]["retained_bytes"]
        );
    }
}

/// V8 (`make_fixtures.js`): each `RequestHeaders` is its request's own; each `ListenerPayload`'s
/// dominator is its closure's context.
#[test]
fn immediate_dominators_of_a_v8_snapshot_follow_its_construction() {
    let file = fixture("v8/app-after.heapsnapshot.gz");
    let file = path_str(&file);
    let counts = &v8_expected()["snapshots"]["app-after"]["counts"];
    let headers = json(&[
        "dominated-by",
        file,
        "--type",
        "RequestHeaders",
        "--format",
        "json",
    ]);
    let requests = group(&headers, "LeakyRequest");
    assert_eq!(requests["dominated"], counts["RequestHeaders"]);
    assert_eq!(requests["dominators"], counts["LeakyRequest"]);
    let payloads = json(&[
        "dominated-by",
        file,
        "--type",
        "ListenerPayload",
        "--format",
        "json",
    ]);
    let contexts = group(&payloads, "system / Context");
    assert_eq!(contexts["dominated"], counts["ListenerPayload"]);
    // Looking through the contexts and closures leads to the one emitter's listener list.
    let through = json(&[
        "dominated-by",
        file,
        "--type",
        "ListenerPayload",
        "--skip",
        "system / Context,(closure),onTick,Array,(array)",
        "--format",
        "json",
    ]);
    let groups = through["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{through:#}");
    assert_eq!(groups[0]["dominated"], counts["ListenerPayload"]);
    assert_eq!(groups[0]["dominators"], 1);
}

/// Big drops (MAT's "Big Drops in Dominator Tree"): the session map's table is where 400
/// small sessions gather under one object; the class `LeakFixture`, whose largest child is the
/// chain's head (expected.json), drops by less.
#[test]
fn big_drops_find_where_the_sessions_accumulate() {
    let expected = java_expected();
    let facts = &expected["variants"]["default"]["dominators"]["referent_excluded"];
    let file = fixture("java/default.hprof.gz");
    let file = path_str(&file);
    let report = json(&["suspects", file, "--format", "json"]);
    assert_eq!(report["min_drop"], 0.2);
    let drops = report["big_drops"].as_array().expect("big drops");
    let table = drops
        .iter()
        .find(|drop| drop["object"]["type"] == "java.util.HashMap$Node[]")
        .expect("the session map's table");
    assert!(table["children"].as_u64().unwrap() >= 300, "{table:#}");
    assert!(table["drop"].as_f64().unwrap() > 0.9);
    assert_eq!(table["dominator"]["type"], "com.example.SessionCache");
    // It is the accumulation point of the suspect that holds the sessions.
    assert!(
        report["suspects"]
            .as_array()
            .unwrap()
            .iter()
            .any(|suspect| { suspect["accumulation_point"]["id"] == table["object"]["id"] })
    );
    let class = drops
        .iter()
        .find(|drop| drop["object"]["name"] == "com.example.LeakFixture")
        .expect("the class LeakFixture");
    assert_eq!(
        class["largest_child_retained_size"],
        facts["LeakFixture.CHAIN_HEAD"]["retained_bytes"]
    );
    let drop = class["drop"].as_f64().unwrap();
    assert!(drop > 0.2 && drop < 0.5, "{drop}");
    // A larger --min-drop keeps the table and leaves the class out.
    let strict = json(&["suspects", file, "--min-drop", "50%", "--format", "json"]);
    let strict_drops = strict["big_drops"].as_array().unwrap();
    assert!(
        strict_drops
            .iter()
            .any(|drop| drop["object"]["id"] == table["object"]["id"])
    );
    assert!(
        !strict_drops
            .iter()
            .any(|drop| drop["object"]["id"] == class["object"]["id"])
    );
    // The sessions' suspect still comes to rest at the table, whose drop is far larger.
    assert_eq!(
        strict["suspects"][0]["accumulation_point"]["id"],
        table["object"]["id"]
    );
}

#[test]
fn a_set_of_objects_must_be_named() {
    let file = fixture("java/default.hprof.gz");
    let output = crate::support::heapgraph(&["paths", path_str(&file)]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--type NAME, --ids"), "{stderr}");
    let output =
        crate::support::heapgraph(&["dominated-by", path_str(&file), "--type", "NoSuchType"]);
    assert_eq!(output.status.code(), Some(2));
}

/// The report shows who holds the top suspect's objects: the 400 sessions, under the map's
/// table.
#[test]
fn the_report_shows_who_holds_the_top_suspects_objects() {
    let dir = crate::support::temp_dir("holding-report");
    let page = dir.join("page.html");
    let file = fixture("java/default.hprof.gz");
    crate::support::heapgraph_ok(&[
        "report",
        path_str(&file),
        "-o",
        path_str(&page),
        "--no-timestamp",
    ]);
    let html = std::fs::read_to_string(&page).expect("the page");
    let card = html
        .split("<h2>Who holds the 400 objects of type com.example.Session</h2>")
        .nth(1)
        .expect("the card")
        .split("</table>")
        .next()
        .unwrap();
    assert!(card.contains(".table java.util.HashMap$Node[]"), "{card}");
    assert!(card.contains("◆"), "{card}");
    std::fs::remove_dir_all(&dir).ok();
}

/// guppy3's grouping by referrers (`byrcs`, "Referrers by Kind") in the process that made the
/// objects, against `dominated-by` on that process's dump. The two agree where each object has
/// one referrer, which is then its immediate dominator: `byrcs` groups by the kinds of all of an
/// object's referrers (an object held by a list and a dict is "list, dict"), `dominated-by` by
/// the one object that alone keeps it alive, which exists also where there are several. guppy
/// names a module-level dict "dict (no owner)" and an instance's "dict of CLASS"; the dump
/// names both `builtins.dict`, so the planted holders are a list, a tuple and a module's dict.
#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 with guppy3"
)]
fn immediate_dominators_agree_with_guppy_byrcs_where_each_object_has_one_referrer() {
    let guppy = crate::support::tool("python3")
        .args(["-c", "import guppy"])
        .status()
        .expect("python3 runs");
    assert!(
        guppy.success(),
        "guppy3 is the oracle of this test: tests/setup.sh installs it"
    );
    let dir = crate::support::temp_dir("holding-guppy");
    let dump = dir.join("guppy.hgd");
    let answers = dir.join("byrcs.json");
    let script = r#"
import gc, json, sys, heapgraph_dump
from guppy import hpy

class Rec:
    pass

class Holder:
    pass

HOLDER = Holder()
HOLDER.items = [Rec() for _ in range(50)]
REGISTRY = {i: Rec() for i in range(30)}
PAIRS = tuple(Rec() for _ in range(20))

def byrcs():
    hp = hpy()
    recs = hp.iso(*HOLDER.items, *REGISTRY.values(), *PAIRS)
    parts = recs.byrcs.parts
    return {str(part.kind): part.count for part in parts}

answers = byrcs()
gc.collect()
with open(sys.argv[2], "w") as out:
    json.dump(answers, out)
heapgraph_dump.dump(sys.argv[1])
"#;
    let status = crate::support::tool("python3")
        .arg("-c")
        .arg(script)
        .arg(&dump)
        .arg(&answers)
        .env(
            "PYTHONPATH",
            crate::support::repo_root().join("crates/capture/python"),
        )
        .status()
        .expect("python3 runs");
    assert!(status.success(), "the guppy program failed");
    let guppy: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&answers).expect("guppy's answers"))
            .expect("JSON");
    let ours = json(&[
        "dominated-by",
        path_str(&dump),
        "--type",
        "Rec",
        "--format",
        "json",
    ]);
    assert_eq!(ours["objects"], 100);
    for (kind, type_name) in [
        ("<referred by: list>", "builtins.list"),
        ("<referred by: tuple>", "builtins.tuple"),
        ("<referred by: dict (no owner)>", "builtins.dict"),
    ] {
        let count = guppy
            .get(kind)
            .unwrap_or_else(|| panic!("guppy: {guppy:?}"));
        let group = group(&ours, type_name);
        assert_eq!(&group["dominated"], count, "{type_name}: {ours:#}");
        assert_eq!(group["dominators"], 1);
    }
    assert_eq!(guppy.len(), 3, "{guppy:?}");
    assert_eq!(ours["groups"].as_array().unwrap().len(), 3, "{ours:#}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Eclipse MAT's own dominator test (`DominatorTreeTest`, over the Lengauer–Tarjan example that
/// its `CreateSampleDump` builds as `DominatorTestData`): R immediately dominates A, B, C, D, E,
/// H, I and K; C dominates F and G; D dominates L; G dominates J; and R retains the 13 objects.
/// The first of the two heap dumps in MAT's `sun_jdk6_31_hprofagent_compressedOops` holds that
/// structure, held from main()'s frame (in the second it is already garbage).
#[test]
fn immediate_dominators_are_those_of_mats_dominator_tree_test() {
    let file = fixture("java/real-world/sun_jdk6_31_hprofagent_compressedOops.hprof.gz");
    let file = path_str(&file);
    let class =
        |letter: &str| format!("org.eclipse.mat.tests.CreateSampleDump$DominatorTestData${letter}");
    let parents = [
        ("A", "R"),
        ("B", "R"),
        ("C", "R"),
        ("D", "R"),
        ("E", "R"),
        ("H", "R"),
        ("I", "R"),
        ("K", "R"),
        ("F", "C"),
        ("G", "C"),
        ("L", "D"),
        ("J", "G"),
    ];
    for (child, parent) in parents {
        let report = json(&[
            "dominated-by",
            file,
            "--dump",
            "1",
            "--type",
            &class(child),
            "--format",
            "json",
        ]);
        let groups = report["groups"].as_array().expect("groups");
        assert_eq!(groups.len(), 1, "{child}: {report}");
        let group = group(&report, &class(parent));
        assert_eq!(group["dominated"], 1, "{child}: {group}");
        assert_eq!(group["dominators"], 1, "{child}: {group}");
    }
    // R retains itself and the twelve: its retained size is their shallow sizes' sum.
    let summary = json(&[
        "summary", file, "--dump", "1", "-n", "100000", "--format", "json",
    ]);
    let shallow: u64 = summary["types"]
        .as_array()
        .expect("types")
        .iter()
        .filter(|row| {
            row["type"].as_str().is_some_and(|name| {
                name.strip_prefix(&class(""))
                    .is_some_and(|letter| letter.len() == 1)
            })
        })
        .map(|row| {
            assert_eq!(row["count"], 1, "{row}");
            row["shallow_size"].as_u64().expect("bytes")
        })
        .sum();
    let holders = json(&[
        "who-holds",
        file,
        "--dump",
        "1",
        "--type",
        &class("R"),
        "--format",
        "json",
    ]);
    assert_eq!(holders["target"]["retained_size"].as_u64(), Some(shallow));
    assert_eq!(
        shallow,
        6 * 24 + 7 * 16,
        "13 objects, as this dump's layout sizes them"
    );
}
