//! Python dumps from the embedded dumper, against objgraph in the same process: every type's
//! count of gc-tracked objects equals `objgraph.typestats`, `leaking` equals
//! `objgraph.get_leaking_objects`, and the planted leaks show where they were planted. Also the
//! dumper injected from outside (`capture python --pid`), and dumps cut short.

use crate::python_checks::{self as checks, read_json};
use crate::support::{
    assert_gdb_refusal, gdb_calls_functions, heapgraph, heapgraph_ok, json, need, path_str,
    repo_root, temp_dir, tool,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Runs `fixtures/python/leaky_service.py` once: `before.hgd`, `after.hgd` and objgraph's
/// answers for each, written by one process.
fn service_dumps() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let objgraph = tool("python3")
            .args(["-c", "import objgraph"])
            .status()
            .expect("python3 runs");
        assert!(
            objgraph.success(),
            "objgraph is the oracle of these tests: run tests/setup.sh (pip install objgraph==3.6.2)"
        );
        let dir = temp_dir("python-service");
        let status = tool("python3")
            .arg(repo_root().join("fixtures/python/leaky_service.py"))
            .arg(&dir)
            .status()
            .expect("python3 runs");
        assert!(status.success(), "leaky_service.py failed");
        dir
    })
}

/// How many gc-tracked objects of `type_name` a dump holds (`summary --kind object`); 0 when
/// none.
fn tracked_count(dump: &Path, type_name: &str) -> u64 {
    let summary = json(&[
        "summary",
        path_str(dump),
        "--kind",
        "object",
        "--format",
        "json",
    ]);
    summary["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["type"] == type_name)
        .map_or(0, |row| row["count"].as_u64().unwrap())
}

fn dump(name: &str) -> String {
    path_str(&service_dumps().join(format!("{name}.hgd"))).to_owned()
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn tracked_objects_by_type_equal_objgraph_typestats() {
    checks::tracked_objects_by_type_equal_objgraph_typestats(service_dumps());
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn leaking_objects_equal_objgraph_get_leaking_objects() {
    checks::leaking_objects_equal_objgraph_get_leaking_objects(service_dumps());
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn the_planted_request_is_held_through_the_cache_history() {
    checks::the_planted_request_is_held_through_the_cache_history(service_dumps());
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn nothing_is_unreachable_in_the_service_dumps() {
    checks::nothing_is_unreachable(service_dumps());
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn diff_ranks_the_planted_types_first() {
    checks::diff_ranks_the_planted_types_first(service_dumps());
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn backrefs_draw_the_chain_as_dot() {
    let facts = read_json(&service_dumps().join("facts.json"));
    let id = facts["planted_request_hex"].as_str().unwrap();
    let dot = heapgraph_ok(&["graph", &dump("after"), "--backrefs", id, "--depth", "3"]);
    assert!(dot.starts_with("digraph backrefs {"), "{dot}");
    for label in [
        "[label=\"[41]\"]",
        "[label=\"history\"]",
        "[label=\"cache\"]",
    ] {
        assert!(dot.contains(label), "{label} missing from:\n{dot}");
    }
    assert!(dot.contains("__main__.SessionCache"));
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn a_dump_cut_short_reads_as_far_as_it_goes() {
    let bytes = std::fs::read(dump("after")).unwrap();
    let dir = temp_dir("python-cut");
    for share in [60, 90, 99] {
        let cut = dir.join(format!("cut{share}.hgd"));
        std::fs::write(&cut, &bytes[..bytes.len() * share / 100]).unwrap();
        let summary = json(&["summary", path_str(&cut), "--format", "json"]);
        let notes = summary["dump"]["notes"].to_string();
        assert!(
            notes.contains("the file ends after chunk"),
            "{share}%: {notes}"
        );
        assert!(summary["objects"].as_u64().unwrap() > 0);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn print_dumper_prints_the_embedded_module() {
    let printed = heapgraph_ok(&["capture", "python", "--print-dumper"]);
    let source =
        std::fs::read_to_string(repo_root().join("crates/capture/python/heapgraph_dump.py"))
            .unwrap();
    assert_eq!(printed, source);
}

/// A child of `interpreter` that holds 500 `Planted` objects and waits to be dumped.
fn python_child(interpreter: &str) -> std::process::Child {
    let mut child = Command::new(interpreter)
        .args([
            "-c",
            "import sys, time\n\
             class Planted: pass\n\
             keep = [Planted() for _ in range(500)]\n\
             print('ready', flush=True)\n\
             time.sleep(120)\n",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("the interpreter runs");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    child
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and gdb")]
fn capture_injects_the_dumper_through_gdb() {
    need("gdb");
    let mut child = python_child("python3");
    let dir = temp_dir("python-capture");
    let out = dir.join("live.hgd");
    let pid = child.id().to_string();
    let output = heapgraph(&["capture", "python", "--pid", &pid, "-o", path_str(&out)]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let running_after = child.try_wait().unwrap().is_none();
    child.kill().ok();
    child.wait().ok();
    if !gdb_calls_functions() {
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_gdb_refusal(&stderr);
        assert!(running_after, "the process died of the refusal");
        return;
    }
    assert!(output.status.success(), "capture failed: {stderr}");
    assert_eq!(tracked_count(&out, "__main__.Planted"), 500);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn capture_of_a_process_that_is_not_python_says_so() {
    let mut child = Command::new("sleep").arg("30").spawn().expect("sleep runs");
    let output = heapgraph(&[
        "capture",
        "python",
        "--pid",
        &child.id().to_string(),
        "-o",
        "/tmp/never.hgd",
    ]);
    child.kill().ok();
    child.wait().ok();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is not a Python interpreter"), "{stderr}");
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn collapse_modules_puts_the_module_over_what_its_code_holds() {
    checks::collapse_modules_puts_the_module_over_what_its_code_holds(service_dumps());
}

/// Runs `script` in python3 with the dumper importable; returns its stdout.
fn run_python(script: &str, args: &[&str]) -> String {
    let output = tool("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .env("PYTHONPATH", repo_root().join("crates/capture/python"))
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3")]
fn install_dumps_on_sigusr2() {
    let dir = temp_dir("python-install");
    let out = dir.join("on-signal.hgd");
    let script = "import os, signal, sys, heapgraph_dump\n\
                  class Marker: pass\n\
                  keep = [Marker() for _ in range(7)]\n\
                  heapgraph_dump.install(path=sys.argv[1])\n\
                  os.kill(os.getpid(), signal.SIGUSR2)\n\
                  print(os.path.getsize(sys.argv[1]) > 0)\n";
    assert_eq!(run_python(script, &[path_str(&out)]).trim(), "True");
    assert_eq!(tracked_count(&out, "__main__.Marker"), 7);
    std::fs::remove_dir_all(&dir).ok();
}

/// A dump that does not fit the process's memory budget (`RLIMIT_AS`, as the examples'
/// `--budget-mib` sets it) fails with a MemoryError that the handler reports, leaves no file,
/// and the program goes on.
#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3")]
fn a_dump_past_the_memory_budget_fails_clearly_and_the_program_goes_on() {
    let dir = temp_dir("python-over-budget");
    let out = dir.join("over-budget.hgd");
    let script = "import os, resource, signal, sys, heapgraph_dump\n\
                  keep = [(str(i), (i, i + 1)) for i in range(300000)]\n\
                  heapgraph_dump.install(path=sys.argv[1])\n\
                  vm = [int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmSize:')][0]\n\
                  resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 20), vm + (1 << 20)))\n\
                  os.kill(os.getpid(), signal.SIGUSR2)\n\
                  print('went on', os.path.exists(sys.argv[1]), len(keep))\n";
    let output = tool("python3")
        .arg("-c")
        .arg(script)
        .arg(path_str(&out))
        .env("PYTHONPATH", repo_root().join("crates/capture/python"))
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "went on False 300000"
    );
    assert!(
        stderr.contains(&format!("could not write {}: MemoryError", path_str(&out))),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A signal that comes while `tuple(<generator>)` runs the generator finds a tuple the
/// collector tracks with empty slots: the dumper iterated it and CPython died of SIGSEGV (one
/// `heapgraph record --act` run of `examples/growing_cache` in four, whose tokenizer builds
/// such tuples). The dump is written with the filled slots, says so, and the program goes on.
#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3")]
fn a_dump_while_a_tuple_is_being_filled_writes_its_filled_slots() {
    let dir = temp_dir("python-half-filled");
    let out = dir.join("half-filled.hgd");
    let script = "import os, signal, sys, heapgraph_dump\n\
                  class Marker: pass\n\
                  heapgraph_dump.install(path=sys.argv[1])\n\
                  def markers():\n\
                  \x20   yield Marker()\n\
                  \x20   os.kill(os.getpid(), signal.SIGUSR2)\n\
                  \x20   yield Marker()\n\
                  print(len(tuple(markers())), os.path.getsize(sys.argv[1]) > 0)\n";
    assert_eq!(run_python(script, &[path_str(&out)]).trim(), "2 True");
    // One marker was in the tuple when the signal came; the second was made after the dump.
    assert_eq!(tracked_count(&out, "__main__.Marker"), 1);
    let summary = heapgraph_ok(&["summary", path_str(&out)]);
    assert!(
        summary.contains("1 list(s) or tuple(s) were being filled when the dump was taken"),
        "{summary}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn weak_references_do_not_retain() {
    // `item` is held by the list and by a WeakValueDictionary; `other` only by a weakref and
    // a list. Neither weak holder may dominate, or retain, them.
    let dir = temp_dir("python-weak");
    let out = dir.join("weak.hgd");
    let script = "import sys, weakref, heapgraph_dump\n\
                  class Item:\n\
                  \x20   def __init__(self): self.payload = bytearray(100000)\n\
                  strong = [Item(), Item()]\n\
                  index = weakref.WeakValueDictionary({'a': strong[0]})\n\
                  ref = weakref.ref(strong[1])\n\
                  heapgraph_dump.dump(sys.argv[1])\n\
                  print(id(strong[0]), id(strong[1]), id(index))\n";
    let ids = run_python(script, &[path_str(&out)]);
    let ids: Vec<&str> = ids.split_whitespace().collect();
    for item in &ids[..2] {
        let holders = json(&["who-holds", path_str(&out), item, "--format", "json"]);
        let chain: Vec<&str> = holders["dominator_chain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|object| object["type"].as_str().unwrap())
            .collect();
        assert!(
            !chain.iter().any(|t| t.starts_with("weakref.")),
            "a weak holder dominates: {chain:?}"
        );
        assert_eq!(chain[chain.len() - 2], "builtins.list", "{chain:?}");
    }
    // The WeakValueDictionary retains its own structure, not the 100 kB payload.
    let index = json(&["who-holds", path_str(&out), ids[2], "--format", "json"]);
    assert!(index["target"]["retained_size"].as_u64().unwrap() < 50_000);
    // With --include-weak, the weakref edges count again and the list is no longer the only
    // holder of the first item.
    let weak = json(&[
        "who-holds",
        path_str(&out),
        ids[0],
        "--include-weak",
        "--format",
        "json",
    ]);
    let chain = weak["dominator_chain"].as_array().unwrap();
    assert_ne!(chain[chain.len() - 2]["type"], "builtins.list");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn the_gate_measures_type_growth_between_python_dumps() {
    let (before, after) = (dump("before"), dump("after"));
    let output = heapgraph(&[
        "diff",
        &before,
        &after,
        "--fail-if",
        "count(type=__main__.Request) >= +200",
        "--fail-if",
        "retained(type~^__main__\\.SessionCache$) > +1MiB",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "gate FAILED: count(type=__main__.Request) >= +200: measured +200.0% (+200, 100 → 300)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("gate passed: retained(type~^__main__\\.SessionCache$) > +1MiB"),
        "{stderr}"
    );
    let same = heapgraph(&["diff", &after, &after, "--fail-if", "total > 0"]);
    assert_eq!(same.status.code(), Some(0));
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn diff_matches_holders_by_their_path_from_the_root() {
    checks::diff_matches_holders_by_their_path_from_the_root(service_dumps());
    // A holder gate over the cache's own signature.
    let gate = heapgraph(&[
        "diff",
        &dump("before"),
        &dump("after"),
        "--collapse-modules",
        "--fail-if",
        "retained(holder~SessionCache$) > +100%",
    ]);
    assert_eq!(
        gate.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&gate.stderr)
    );
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn the_gate_fails_on_the_leaking_release_and_passes_on_the_fixed_one() {
    // The same service, released fixed: the growth phase does the same work and keeps nothing.
    let fixed = temp_dir("python-service-fixed");
    let status = tool("python3")
        .arg(repo_root().join("fixtures/python/leaky_service.py"))
        .arg(&fixed)
        .args(["--fixed", "--no-oracle"])
        .status()
        .expect("python3 runs");
    assert!(status.success());
    let gates = [
        "--fail-if",
        "count(type=__main__.Request) >= +100",
        "--fail-if",
        "retained(holder~SessionCache$) > +50%",
    ];
    let gate = |dir: &Path| {
        let (before, after) = (dir.join("before.hgd"), dir.join("after.hgd"));
        let mut args = vec!["diff", path_str(&before), path_str(&after)];
        args.extend(gates);
        heapgraph(&args)
    };
    let leaking = gate(service_dumps());
    assert_eq!(
        leaking.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&leaking.stderr)
    );
    let passed = gate(&fixed);
    let stderr = String::from_utf8_lossy(&passed.stderr);
    assert_eq!(passed.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("gate passed").count(), 2, "{stderr}");
    std::fs::remove_dir_all(&fixed).ok();
}

/// objgraph's `find_backref_chain(obj, is_proper_module)` is the behaviour `who-holds` matches:
/// the session is held by a module global through a registry of listeners (the chain that
/// explains the leak), and also, more shortly, by the running frame's local list. The default
/// answer leads with the module's chain, object for object as objgraph finds it; the shortest
/// order does not.
#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 and objgraph"
)]
fn who_holds_leads_with_the_chain_objgraph_finds_from_a_module() {
    let dir = temp_dir("python-backref-chain");
    let out = dir.join("registry.hgd");
    let script = r#"
import gc, json, sys, objgraph, heapgraph_dump

class LeakedSession:
    def __init__(self, n):
        self.buffer = bytearray(1024)
    def on_event(self):
        return self.buffer

class Listener:
    def __init__(self, callback):
        self.callback = callback

class Registry:
    def __init__(self):
        self.listeners = []

REGISTRY = Registry()

def main(path):
    sessions = [LeakedSession(n) for n in range(50)]
    for session in sessions:
        REGISTRY.listeners.append(Listener(session.on_event))
    target = sessions[7]
    gc.collect()
    chain = objgraph.find_backref_chain(target, objgraph.is_proper_module)
    heapgraph_dump.dump(path)
    print(json.dumps({"id": id(target), "chain": [type(o).__name__ for o in chain]}))

main(sys.argv[1])
"#;
    let facts: serde_json::Value =
        serde_json::from_str(run_python(script, &[path_str(&out)]).trim()).expect("facts");
    let id = facts["id"].to_string();
    let types_of = |path: &serde_json::Value| -> Vec<String> {
        path.as_array()
            .expect("a chain")
            .iter()
            .skip(1)
            .map(|step| {
                let name = step["type"].as_str().unwrap_or_default();
                name.rsplit('.').next().unwrap_or(name).to_owned()
            })
            .filter(|name| name != "dict")
            .collect()
    };
    let objgraph_chain: Vec<String> = facts["chain"]
        .as_array()
        .expect("objgraph's chain")
        .iter()
        .map(|name| name.as_str().unwrap_or_default().to_owned())
        .filter(|name| name != "dict")
        .collect();
    assert_eq!(objgraph_chain.first().map(String::as_str), Some("module"));
    let holders = json(&["who-holds", path_str(&out), &id, "--format", "json"]);
    assert_eq!(
        types_of(&holders["paths"][0]),
        objgraph_chain,
        "{holders:#}"
    );
    let edges: Vec<&str> = holders["paths"][0]
        .as_array()
        .expect("a chain")
        .iter()
        .filter_map(|step| step["edge"].as_str())
        .collect();
    assert!(
        edges.contains(&"REGISTRY") && edges.contains(&"listeners"),
        "{edges:?}"
    );
    // The shortest chain enters elsewhere (the running frame, or C code): what the default
    // order puts behind the module's.
    let shortest = json(&[
        "who-holds",
        path_str(&out),
        &id,
        "--order",
        "shortest",
        "--paths",
        "1",
        "--format",
        "json",
    ]);
    assert_ne!(
        types_of(&shortest["paths"][0]),
        objgraph_chain,
        "{shortest:#}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
