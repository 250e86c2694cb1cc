//! The dumper on each version: every object of a live program is reachable unless the
//! collector finds it garbage (the collector itself says which, with `gc.DEBUG_SAVEALL`), and
//! `fixtures/python/leaky_service.py` reads on each as on this machine's python3: counts equal
//! to `objgraph.typestats`, `leaking` equal to `objgraph.get_leaking_objects`, the planted
//! chains and the diff.

use crate::interpreters::{Python, per_version};
use crate::python_checks as checks;
use crate::support::{json, path_str};
use serde_json::Value;

/// Runs `script` in `python` with the dumper importable; returns its stdout.
pub(crate) fn run(
    python: &Python,
    dir: &crate::interpreters::Shared,
    script: &str,
    args: &[&str],
) -> String {
    let output = python
        .command()
        .arg("-c")
        .arg(script)
        .args(args)
        .env("PYTHONPATH", Python::dumper_path(dir))
        .output()
        .expect("the interpreter runs");
    assert!(
        output.status.success(),
        "python{} failed: {}",
        python.version,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// A live program: a chain of nodes, then `sys.argv[2]` garbage cycles (two nodes and a dict
/// each) made with the collector off. It dumps the object list, then lets the collector find
/// the garbage with `DEBUG_SAVEALL` (kept in `gc.garbage`, not freed) and prints, as JSON, the
/// ids of the garbage it had dumped, one live node's id, and its version.
const GARBAGE: &str = r#"
import gc, json, sys, heapgraph_dump
class Node:
    def __init__(self, n):
        self.n = n
        self.peer = None
live = [Node(i) for i in range(50)]
for a, b in zip(live, live[1:]):
    a.peer = b
gc.collect()
gc.disable()
for i in range(int(sys.argv[2])):
    a, b = Node(i), Node(-i)
    a.peer, b.peer = b, {"back": a}
a = b = None
objs = gc.get_objects()
heapgraph_dump.dump(sys.argv[1], objects=objs)
dumped = set(map(id, objs))
objs = None
gc.set_debug(gc.DEBUG_SAVEALL)
gc.collect()
garbage = sorted(id(o) for o in gc.garbage if id(o) in dumped)
print(json.dumps({"garbage": garbage, "live": id(live[7]),
                  "version": "%d.%d" % sys.version_info[:2]}))
"#;

fn unreachable_objects_are_the_collectors_garbage(python: &Python) {
    let dir = python.shared_dir("garbage");
    for planted in [0, 25] {
        let name = format!("planted{planted}.hgd");
        let said: Value = serde_json::from_str(&run(
            python,
            &dir,
            GARBAGE,
            &[&dir.inner(&name), &planted.to_string()],
        ))
        .unwrap();
        assert_eq!(said["version"], python.version);
        let garbage: Vec<u64> = serde_json::from_value(said["garbage"].clone()).unwrap();
        let dump = dir.outer(&name);
        let tracked = json(&[
            "summary",
            path_str(&dump),
            "--kind",
            "object",
            "--format",
            "json",
        ]);
        let all = json(&["summary", path_str(&dump), "--format", "json"]);
        if planted == 0 {
            // Garbage collected first: nothing is unreachable, tracked or not.
            assert!(garbage.is_empty(), "{garbage:?}");
            assert_eq!(
                all["unreachable_objects"], 0,
                "python{}: {all:#}",
                python.version
            );
        } else {
            // Two nodes and a dict a cycle, and each node's __dict__ before 3.11 (or 3.12).
            assert!(
                garbage.len() >= 3 * planted,
                "{} garbage objects",
                garbage.len()
            );
        }
        // The unreachable gc-tracked objects are as many as the collector's garbage, and
        // each of the garbage is unreachable: the same objects.
        assert_eq!(
            tracked["unreachable_objects"].as_u64(),
            Some(garbage.len() as u64),
            "python{} with {planted} planted cycles",
            python.version
        );
        for id in garbage.iter().take(8) {
            let holders = json(&[
                "who-holds",
                path_str(&dump),
                &id.to_string(),
                "--format",
                "json",
            ]);
            assert!(
                holders["paths"].as_array().unwrap().is_empty(),
                "{holders:#}"
            );
            assert!(holders["target"]["retained_size"].is_null());
        }
        let live = said["live"].to_string();
        let holders = json(&["who-holds", path_str(&dump), &live, "--format", "json"]);
        assert!(
            !holders["paths"].as_array().unwrap().is_empty(),
            "{holders:#}"
        );
    }
}

fn service_dumps_read_as_objgraph_reads_them(python: &Python) {
    let dir = python.shared_dir("service");
    let status = python
        .command()
        .arg(dir.inner("fixtures/python/leaky_service.py"))
        .arg(dir.inner("out"))
        .status()
        .expect("the interpreter runs");
    assert!(
        status.success(),
        "leaky_service.py failed on python{}",
        python.version
    );
    let out = dir.outer("out");
    let facts = checks::read_json(&out.join("facts.json"));
    assert!(
        facts["python"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}.", python.version)),
        "{facts:#}"
    );
    assert!(
        facts["oracle"]
            .as_str()
            .is_some_and(|oracle| oracle.starts_with("objgraph")),
        "python{} has no objgraph: {facts:#}",
        python.version
    );
    checks::nothing_is_unreachable(&out);
    checks::tracked_objects_by_type_equal_objgraph_typestats(&out);
    checks::leaking_objects_equal_objgraph_get_leaking_objects(&out);
    checks::the_planted_request_is_held_through_the_cache_history(&out);
    checks::collapse_modules_puts_the_module_over_what_its_code_holds(&out);
    checks::diff_ranks_the_planted_types_first(&out);
    checks::diff_matches_holders_by_their_path_from_the_root(&out);
}

per_version!(
    unreachable_objects_are_the_collectors_garbage,
    service_dumps_read_as_objgraph_reads_them,
);
