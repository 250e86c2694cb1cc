//! Which verbs read which files (issue 15, item 9): every verb runs on a heap dump, a CUDA
//! snapshot, a tracemalloc dump and a recording; each refusal must name exactly the verbs that
//! did read that file, so that a user sent elsewhere is sent to every verb that helps, and each
//! verb's `--help` must list exactly the kinds of file it did read (issue 22, item 5).

use crate::support::{fixture, heapgraph, path_str, temp_dir};
use std::collections::BTreeSet;

/// Every verb that reads a file, with arguments that make it run on `file` (`root` is an
/// object id to name, which only heap dumps have).
fn invocations(file: &str, out: &str, root: &str) -> Vec<(&'static str, Vec<String>)> {
    let args = |list: &[&str]| list.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>();
    let html = format!("{out}.html");
    let hgd = format!("{out}.hgd");
    vec![
        ("summary", args(&["summary", file])),
        ("top", args(&["top", file])),
        ("who-holds", args(&["who-holds", file, root])),
        ("dominators", args(&["dominators", file])),
        ("suspects", args(&["suspects", file])),
        ("strings", args(&["strings", file])),
        ("paths", args(&["paths", file, "--ids", root])),
        ("dominated-by", args(&["dominated-by", file, "--ids", root])),
        ("diff", args(&["diff", file, file])),
        ("gpu", args(&["gpu", file])),
        ("leaking", args(&["leaking", file])),
        ("leaks", args(&["leaks", file, file, file])),
        ("graph", args(&["graph", file, "--backrefs", root])),
        ("report", args(&["report", file, "-o", &html])),
        ("convert", args(&["convert", file, "-o", &hgd])),
        (
            "export",
            args(&["export", file, "-o", &format!("{out}.parquet")]),
        ),
    ]
}

/// The verbs a refusal names: `` `heapgraph a`, `b` and `c` read it ``.
fn named_verbs(message: &str) -> BTreeSet<String> {
    let list = message
        .rsplit_once("; ")
        .and_then(|(_, tail)| tail.strip_suffix(" read it"))
        .unwrap_or_else(|| panic!("not a refusal that names verbs: {message}"));
    list.split('`')
        .skip(1)
        .step_by(2)
        .map(|verb| verb.trim_start_matches("heapgraph ").to_owned())
        .collect()
}

#[test]
fn refusals_name_every_verb_that_reads_the_file() {
    let dir = temp_dir("refusals");
    let mut helps = std::collections::BTreeMap::new();
    for (verb, _) in invocations("FILE", "OUT", "@0") {
        let help = heapgraph(&[verb, "--help"]);
        assert!(help.status.success(), "{verb} --help");
        helps.insert(verb, String::from_utf8_lossy(&help.stdout).into_owned());
    }
    for (name, root, named_in_help) in [
        // A heap dump (V8's format, written as Julia writes it; its root's id is 0).
        ("v8/julia-shaped.heapsnapshot.gz", "@0", "a heap dump ("),
        (
            "torch-cuda/load_fp32.pickle.gz",
            "@0",
            "a CUDA memory snapshot (",
        ),
        (
            "tracemalloc/before.tracemalloc",
            "@0",
            "an allocation snapshot (",
        ),
        ("timeline/worker.hgt", "@0", "a recording ("),
    ] {
        let path = fixture(name);
        let out = dir.join(name.replace('/', "_"));
        let mut read = BTreeSet::new();
        let mut refusals = Vec::new();
        for (verb, args) in invocations(path_str(&path), path_str(&out), root) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let output = heapgraph(&args);
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
            if output.status.success() {
                read.insert(verb.to_owned());
            } else {
                assert_eq!(output.status.code(), Some(2), "{name}: {verb}: {stderr}");
                refusals.push((verb, stderr));
            }
        }
        assert!(!read.is_empty() && !refusals.is_empty(), "{name}");
        for (verb, help) in &helps {
            let files = help
                .split("Arguments:")
                .nth(1)
                .and_then(|rest| rest.split("Options:").next())
                .unwrap_or_else(|| panic!("{verb} --help has no arguments"));
            assert_eq!(
                files.contains(named_in_help),
                read.contains(*verb),
                "{verb} --help and what it reads disagree on {name}:{files}"
            );
        }
        for (verb, message) in &refusals {
            assert!(
                message.contains(path_str(&path)),
                "{name}: {verb}: {message}"
            );
            assert_eq!(
                named_verbs(message),
                read,
                "{name}: `{verb}` refused with {message:?}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
