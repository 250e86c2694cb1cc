//! Checks of the dumps that `fixtures/python/leaky_service.py` writes (`before.hgd`,
//! `after.hgd`, objgraph's answers and `facts.json` in one directory), against objgraph run in
//! the same process on the same object list: shared by the tests on this machine's python3
//! (`python.rs`) and by the Python version tier, which runs them on every CPython the dumper
//! claims (`tests/python_versions`).

use crate::support::{json, path_str};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

pub(crate) fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path)
        .unwrap_or_else(|err| panic!("{}: {err} (is objgraph installed?)", path.display()));
    serde_json::from_slice(&bytes).unwrap()
}

/// The edge names of a `who-holds` path, without the step from an instance to its own
/// `__dict__`: up to Python 3.10 an instance's attributes live in that separate dict
/// (`cache` → `__dict__` → `history`); from 3.11 they are the instance's own (`cache` →
/// `history`). A module's `__dict__` stays.
fn edges_of(path: &Value) -> Vec<String> {
    let steps = path.as_array().unwrap();
    let mut edges = Vec::new();
    for (at, step) in steps.iter().enumerate() {
        let Some(edge) = step["edge"].as_str() else {
            continue;
        };
        let from_instance = at > 0
            && !steps[at - 1]["type"]
                .as_str()
                .is_some_and(|kind| kind == "builtins.module" || kind == "(root)");
        if edge == "__dict__" && from_instance {
            continue;
        }
        edges.push(edge.to_owned());
    }
    edges
}

/// A holder signature of `diff`, with the instance-to-`__dict__` steps of Python 3.10 and
/// older folded as [`edges_of`] folds them: `T.__dict__ → dict.name` reads `T.name`.
fn signature_without_instance_dicts(signature: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    for part in signature.split(" → ") {
        if let Some(last) = parts.last_mut()
            && let Some(owner) = last.strip_suffix(".__dict__")
            && !owner.ends_with("module")
            && let Some(name) = part.strip_prefix("dict.")
        {
            *last = format!("{owner}.{name}");
            continue;
        }
        parts.push(part.to_owned());
    }
    parts.join(" → ")
}

fn dump(dir: &Path, name: &str) -> String {
    path_str(&dir.join(format!("{name}.hgd"))).to_owned()
}

/// Every type's count of gc-tracked objects equals `objgraph.typestats`.
pub(crate) fn tracked_objects_by_type_equal_objgraph_typestats(dir: &Path) {
    for name in ["before", "after"] {
        let typestats = read_json(&dir.join(format!("{name}.typestats.json")));
        let summary = json(&[
            "summary",
            &dump(dir, name),
            "--kind",
            "object",
            "--format",
            "json",
        ]);
        let ours: BTreeMap<String, u64> = summary["types"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                (
                    row["type"].as_str().unwrap().to_owned(),
                    row["count"].as_u64().unwrap(),
                )
            })
            .collect();
        let theirs: BTreeMap<String, u64> = typestats
            .as_object()
            .unwrap()
            .iter()
            .map(|(name, count)| (name.clone(), count.as_u64().unwrap()))
            .collect();
        assert!(
            theirs.len() > 100,
            "{name}: objgraph saw {} types",
            theirs.len()
        );
        assert_eq!(
            ours, theirs,
            "{name}: heapgraph's object counts against objgraph's"
        );
        assert_eq!(summary["kind"], "object");
    }
}

/// `leaking` lists exactly `objgraph.get_leaking_objects`.
pub(crate) fn leaking_objects_equal_objgraph_get_leaking_objects(dir: &Path) {
    for name in ["before", "after"] {
        let theirs: Vec<u64> =
            serde_json::from_value(read_json(&dir.join(format!("{name}.leaking.json")))).unwrap();
        let report = json(&[
            "leaking",
            &dump(dir, name),
            "-n",
            "1000000",
            "--format",
            "json",
        ]);
        let mut ours: Vec<u64> = report["objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|object| object["id"].as_u64().unwrap())
            .collect();
        ours.sort_unstable();
        assert!(!theirs.is_empty());
        assert_eq!(ours, theirs, "{name}");
        assert_eq!(report["count"].as_u64(), Some(theirs.len() as u64));
    }
}

/// The planted request is held through `cache.history[41]` on every chain.
pub(crate) fn the_planted_request_is_held_through_the_cache_history(dir: &Path) {
    let facts = read_json(&dir.join("facts.json"));
    let id = facts["planted_request_id"].as_u64().unwrap().to_string();
    let holders = json(&["who-holds", &dump(dir, "after"), &id, "--format", "json"]);
    let edges: Vec<Vec<String>> = holders["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(edges_of)
        .collect();
    assert!(!edges.is_empty());
    for path in &edges {
        assert!(
            path.ends_with(&["cache".to_owned(), "history".to_owned(), "[41]".to_owned()]),
            "{path:?}"
        );
    }
    assert_eq!(holders["target"]["type"], "__main__.Request");
}

/// With `--collapse-modules`, the module is the namespace's one holder and the chain reads
/// from `module __main__` down, as objgraph's `find_backref_chain` does.
pub(crate) fn collapse_modules_puts_the_module_over_what_its_code_holds(dir: &Path) {
    let facts = read_json(&dir.join("facts.json"));
    let id = facts["planted_request_id"].as_u64().unwrap().to_string();
    let holders = json(&[
        "who-holds",
        &dump(dir, "after"),
        &id,
        "--collapse-modules",
        "--paths",
        "1",
        "--format",
        "json",
    ]);
    let chain: Vec<(String, String)> = holders["dominator_chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|object| {
            (
                object["type"].as_str().unwrap().to_owned(),
                object["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        chain.contains(&("builtins.module".to_owned(), "__main__".to_owned())),
        "{chain:?}"
    );
    let edges = edges_of(&holders["paths"][0]);
    assert_eq!(
        edges,
        ["module __main__", "__dict__", "cache", "history", "[41]"]
    );
}

/// `diff` ranks the planted types first: by retained growth the cache, its requests and the
/// never-awaited tasks; by count (as `objgraph.show_growth`) the requests, exactly as many as
/// were added.
pub(crate) fn diff_ranks_the_planted_types_first(dir: &Path) {
    let facts = read_json(&dir.join("facts.json"));
    let user_types = |by: &str| -> Vec<(String, i64)> {
        let diff = json(&[
            "diff",
            &dump(dir, "before"),
            &dump(dir, "after"),
            "--by",
            by,
            "--format",
            "json",
        ]);
        assert_eq!(diff["schema"], "heapgraph.diff/1");
        diff["types"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| !row["type"].as_str().unwrap().starts_with("builtins."))
            .map(|row| {
                let field = if by == "count" {
                    "count_delta"
                } else {
                    "retained_delta"
                };
                (
                    row["type"].as_str().unwrap().to_owned(),
                    row[field].as_i64().unwrap(),
                )
            })
            .collect()
    };
    let retained = user_types("retained");
    let names: Vec<&str> = retained
        .iter()
        .take(3)
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        names,
        ["__main__.SessionCache", "__main__.Request", "_asyncio.Task"]
    );
    let count = user_types("count");
    assert_eq!(count[0].0, "__main__.Request");
    assert_eq!(count[0].1, facts["added"]["Request"].as_i64().unwrap());
    let tasks = count
        .iter()
        .find(|(name, _)| name == "_asyncio.Task")
        .unwrap();
    assert_eq!(tasks.1, facts["added"]["Task"].as_i64().unwrap());
}

/// `diff --collapse-modules` matches holders by their path from the root: the requests under
/// the cache grew from 100 to 300.
pub(crate) fn diff_matches_holders_by_their_path_from_the_root(dir: &Path) {
    let diff = json(&[
        "diff",
        &dump(dir, "before"),
        &dump(dir, "after"),
        "--collapse-modules",
        "--format",
        "json",
    ]);
    let holders = diff["holders"].as_array().unwrap();
    let find = |signature: &str| {
        holders
            .iter()
            .find(|holder| {
                holder["signature"]
                    .as_str()
                    .is_some_and(|found| signature_without_instance_dicts(found) == signature)
            })
            .unwrap_or_else(|| panic!("{signature} not among {holders:#?}"))
    };
    let requests = find(
        "(root).module __main__ → module.__dict__ → dict.cache → __main__.SessionCache.history → list[] → __main__.Request",
    );
    assert_eq!(requests["status"], "grown");
    assert_eq!(
        (
            requests["count_before"].as_u64(),
            requests["count_after"].as_u64()
        ),
        (Some(100), Some(300))
    );
    let cache =
        find("(root).module __main__ → module.__dict__ → dict.cache → __main__.SessionCache");
    assert_eq!(cache["count_after"], 1);
    assert!(cache["retained_delta"].as_i64().unwrap() > 0);
}

/// No object of either dump is unreachable: the service collected its garbage just before each
/// dump, and every object of a live program is held.
pub(crate) fn nothing_is_unreachable(dir: &Path) {
    for name in ["before", "after"] {
        let summary = json(&["summary", &dump(dir, name), "--format", "json"]);
        assert_eq!(
            summary["unreachable_objects"], 0,
            "{name}: {} of {} objects unreachable",
            summary["unreachable_objects"], summary["objects"]
        );
    }
}
