//! The examples of `examples/`, run as a user runs them, leaking and fixed: the gate fails on
//! the leaking version and passes on the fixed one; the report's first screen names the
//! container that grew; under `heapgraph record --act` with a real memory budget, the leaking
//! version is dumped before it runs out of memory and the dump names the same holder, while
//! the fixed version finishes. The GPU scenarios run on the committed CUDA snapshots.

use crate::support::{fixture, heapgraph, json, path_str, repo_root, temp_dir, tool};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// One example and what its analysis must name.
struct Case {
    /// The program, under `examples/`.
    program: &'static str,
    /// The name the growing container is held under.
    container: &'static str,
    /// What the leaking version's `end.hgd` grew by: the type of the entries, or, for an
    /// object that grew itself, `None`.
    entries: Option<&'static str>,
    /// `record --act`'s threshold: low enough that the dumper, whose own memory grows with the
    /// heap's object count, fits under the program's budget beside the heap.
    act: &'static str,
}

const CASES: [Case; 7] = [
    Case {
        program: "model_loading/load_model.py",
        container: "_checkpoints",
        entries: Some("dict"),
        act: "150MiB",
    },
    Case {
        program: "batch_pileup/batch_server.py",
        container: "pending",
        entries: Some("__main__.InferenceRequest"),
        act: "150MiB",
    },
    Case {
        program: "vector_store/vector_store.py",
        container: "token_vectors",
        entries: None,
        act: "150MiB",
    },
    Case {
        program: "async_tasks/async_service.py",
        container: "background",
        entries: Some("_asyncio.Task"),
        act: "150MiB",
    },
    Case {
        program: "growing_cache/prompt_cache.py",
        container: "_TOKEN_CACHE",
        entries: Some("tuple"),
        act: "150MiB",
    },
    Case {
        program: "unclosed_stream/stream_server.py",
        container: "open_streams",
        entries: Some("generator"),
        act: "150MiB",
    },
    Case {
        program: "parsed_json/catalog_service.py",
        container: "shutdown_hooks",
        entries: Some("function"),
        // A million small objects (the parsed documents' strings, dicts and floats): the
        // dumper needs nearly as much again as the heap, 165 MB at 180 MB.
        act: "100MiB",
    },
];

fn case(program: &str) -> &'static Case {
    CASES
        .iter()
        .find(|case| case.program == program)
        .expect("a listed example")
}

/// Runs an example with `args`, expects it to finish, and returns its folder of dumps.
fn run_example(case: &Case, fixed: bool, dir: &Path) -> PathBuf {
    let dumps = dir.join(if fixed { "fixed" } else { "leaking" });
    let mut command = tool("python3");
    command
        .arg(repo_root().join("examples").join(case.program))
        .arg("--dumps")
        .arg(&dumps);
    if fixed {
        command.arg("--fixed");
    }
    let output = command.output().expect("python3 runs");
    assert!(
        output.status.success(),
        "{} failed: {}",
        case.program,
        String::from_utf8_lossy(&output.stderr)
    );
    dumps
}

/// `heapgraph diff OLD NEW --fail-if RULE`: whether the gate failed (exit 1).
fn gate_fails(old: &Path, new: &Path, rule: &str) -> bool {
    let output = heapgraph(&[
        "diff",
        path_str(old),
        path_str(new),
        "--fail-if",
        rule,
        "--format",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    match output.status.code() {
        Some(1) => true,
        Some(0) => false,
        other => panic!("diff exited {other:?}: {stderr}"),
    }
}

/// The first finding of a heapgraph command's JSON (`diff`, `summary`, `gpu`), checked to be
/// what the report of the same files says first: the report's headline is that sentence.
fn first_finding(args: &[&str], report_files: &[&Path], page: &Path) -> serde_json::Value {
    let mut command = args.to_vec();
    command.extend(["--format", "json"]);
    let finding = json(&command)["findings"][0].clone();
    assert!(finding.is_object(), "{args:?} found nothing");
    let headline = headline_of(report_files, page);
    // Names are `code` in HTML and between backticks in text.
    let mut sentence = String::new();
    for (i, piece) in finding["summary"].as_str().unwrap().split('`').enumerate() {
        let escaped = piece
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;");
        if i % 2 == 1 {
            sentence.push_str(&format!("<code>{escaped}</code>"));
        } else {
            sentence.push_str(&escaped);
        }
    }
    assert!(
        headline.starts_with(&format!("<div class=\"headline\"><b>{sentence}</b>")),
        "the report says first:\n{headline}\nheapgraph {args:?} says:\n{sentence}"
    );
    finding
}

/// The report's first screen: its headline.
fn headline_of(files: &[&Path], out: &Path) -> String {
    let mut args = vec!["report"];
    args.extend(files.iter().map(|file| path_str(file)));
    args.extend(["--no-timestamp", "-o", path_str(out)]);
    let output = heapgraph(&args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let html = std::fs::read_to_string(out).unwrap();
    let start = html.find("<div class=\"headline\">").expect("a headline");
    let end = html[start..]
        .find("</div></div>")
        .map_or(html.len(), |end| start + end);
    html[start..end].to_owned()
}

/// The accumulation findings of one dump: each names its holder once (a holder that two
/// suspects name, a cache whose entry in use is held by a running frame too, is one finding);
/// and a figure said to be the holder's is no more than the holder's own retained size, as
/// `who-holds --type` finds the instance of its type that retains the most.
fn check_findings_of_one_dump(program: &str, dump: &Path) {
    let summary = json(&["summary", path_str(dump), "--format", "json"]);
    let mut named = std::collections::BTreeSet::new();
    for finding in summary["findings"].as_array().unwrap() {
        if finding["kind"] != "accumulation" || finding["rule"] != "single-object" {
            continue;
        }
        let holder = &finding["holder"];
        assert!(
            named.insert((holder["owner"].to_string(), holder["name"].to_string())),
            "{program}: {} is named by two findings: {summary:#}",
            holder["name"]
        );
        if finding["retained_by_step"] == holder["named_step"] {
            // `who-holds --type` picks the instance of the type that retains the most.
            let largest = json(&[
                "who-holds",
                path_str(dump),
                "--type",
                holder["type"].as_str().unwrap(),
                "--paths",
                "1",
                "--format",
                "json",
            ]);
            let largest = largest["target"]["retained_size"].as_u64().unwrap();
            assert!(
                finding["retained_size"].as_u64().unwrap() <= largest,
                "{program}: {finding:#} retains more than any {}",
                holder["type"]
            );
        }
    }
}

/// The end dump of a leaking run: its findings as [`check_findings_of_one_dump`] has them; the
/// set of pending tasks, which the semaphore's waiters hold too, is not said to retain them.
fn check_end_findings(case: &Case, end: &Path) {
    check_findings_of_one_dump(case.program, end);
    if case.container == "background" {
        let summary = json(&["summary", path_str(end), "--format", "json"]);
        let finding = &summary["findings"][0];
        assert_eq!(finding["holder"]["name"], "background", "{finding:#}");
        let by = finding["retained_by_step"].as_u64().expect("whose figure");
        assert_ne!(
            Some(by),
            finding["holder"]["named_step"].as_u64(),
            "{finding:#}"
        );
        assert_eq!(
            finding["holder"]["path"][by as usize]["type"], "__main__.Service",
            "{finding:#}"
        );
        let sentence = finding["summary"].as_str().unwrap();
        assert!(
            !sentence.contains("(a `set`), which retains"),
            "the set is said to retain its tasks: {sentence}"
        );
    }
}

/// The gate a CI job would set on any of these services: the heap may not grow by a fifth
/// over a run. The leaking version fails it, the fixed one passes; and a release comparison,
/// the fixed version's end against the leaking one's, fails it too.
fn check_gate_and_first_screen(program: &str) {
    let case = case(program);
    let dir = temp_dir(&format!("example-{}", program.replace('/', "-")));
    let leaking = run_example(case, false, &dir);
    let fixed = run_example(case, true, &dir);
    let rule = "total > +20%";
    assert!(
        gate_fails(&leaking.join("warm.hgd"), &leaking.join("end.hgd"), rule),
        "{program}: the leaking version passed `{rule}`"
    );
    assert!(
        !gate_fails(&fixed.join("warm.hgd"), &fixed.join("end.hgd"), rule),
        "{program}: the fixed version failed `{rule}`"
    );
    assert!(
        gate_fails(&fixed.join("end.hgd"), &leaking.join("end.hgd"), rule),
        "{program}: the leaking release passed against the fixed one"
    );
    // The first screen names the container, in the program's own words: `diff` finds it, and
    // the report says it first.
    let (warm, end) = (leaking.join("warm.hgd"), leaking.join("end.hgd"));
    let growth = first_finding(
        &["diff", path_str(&warm), path_str(&end)],
        &[&warm, &end],
        &dir.join("report.html"),
    );
    assert_eq!(growth["kind"], "growth", "{program}: {growth:#}");
    assert_eq!(
        growth["holder"]["name"], case.container,
        "{program}: {growth:#}"
    );
    if let Some(entries) = case.entries {
        assert_eq!(growth["entries"]["type"], entries, "{program}: {growth:#}");
    }
    check_end_findings(case, &end);
    // The holder that grew is ranked first among the holders whose count grew (the entries
    // of the container), by retained growth.
    let diff = json(&[
        "diff",
        path_str(&leaking.join("warm.hgd")),
        path_str(&leaking.join("end.hgd")),
        "--format",
        "json",
    ]);
    let holders = diff["holders"].as_array().unwrap();
    assert!(
        holders.iter().take(12).any(|holder| holder["signature"]
            .as_str()
            .unwrap()
            .contains(&format!("{} → ", case.container))
            || holder["signature"]
                .as_str()
                .unwrap()
                .ends_with(&format!(".{} → numpy.ndarray", case.container))),
        "{program}: the container is not among the first holders of the diff"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn model_loading_gate_and_first_screen() {
    check_gate_and_first_screen("model_loading/load_model.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn batch_pileup_gate_and_first_screen() {
    check_gate_and_first_screen("batch_pileup/batch_server.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn vector_store_gate_and_first_screen() {
    check_gate_and_first_screen("vector_store/vector_store.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn async_tasks_gate_and_first_screen() {
    check_gate_and_first_screen("async_tasks/async_service.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn growing_cache_gate_and_first_screen() {
    check_gate_and_first_screen("growing_cache/prompt_cache.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn unclosed_stream_gate_and_first_screen() {
    check_gate_and_first_screen("unclosed_stream/stream_server.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn parsed_json_gate_and_first_screen() {
    check_gate_and_first_screen("parsed_json/catalog_service.py");
}

/// Out-of-memory runs take a few hundred MiB and race the recorder against the leak: one at a
/// time, so that they do not starve each other's recorders on a small machine.
static OUT_OF_MEMORY: Mutex<()> = Mutex::new(());

/// Records an example with a 300 MiB budget and its `--act`; returns the recording's JSON,
/// the exit code and stderr.
fn record_until_out_of_memory(case: &Case, fixed: bool, dir: &Path) -> (serde_json::Value, i32) {
    let _one_at_a_time = OUT_OF_MEMORY
        .lock()
        .unwrap_or_else(|poison| poison.into_inner());
    let timeline = dir.join(if fixed { "fixed.hgt" } else { "leaking.hgt" });
    let mut command = Command::new(env!("CARGO_BIN_EXE_heapgraph"));
    command
        .args(["record", "-q", "--interval", "50ms", "--act", case.act])
        .arg("--dump-dir")
        .arg(dir)
        .arg("-o")
        .arg(&timeline)
        .arg("--")
        .arg("python3")
        .arg(repo_root().join("examples").join(case.program))
        .args(["--budget-mib", "300"]);
    if fixed {
        command.arg("--fixed");
    }
    let output = command.output().expect("heapgraph runs");
    let code = output.status.code().unwrap_or(-1);
    let view = json(&["summary", path_str(&timeline), "--format", "json"]);
    assert!(
        code == 0 || code == 1,
        "{}: exit {code}: {}",
        case.program,
        String::from_utf8_lossy(&output.stderr)
    );
    (view, code)
}

fn check_dumped_before_out_of_memory(program: &str) {
    let case = case(program);
    let dir = temp_dir(&format!("example-oom-{}", program.replace('/', "-")));
    let (leaking, code) = record_until_out_of_memory(case, false, &dir);
    assert_eq!(
        code, 1,
        "{program}: the leaking version did not run out of memory"
    );
    let dumps = leaking["dumps"].as_array().unwrap();
    assert_eq!(dumps.len(), 1, "{program}: {leaking:#}");
    assert_eq!(dumps[0]["kind"], "python-hgd");
    let dump = PathBuf::from(dumps[0]["path"].as_str().unwrap());
    // The dump came before the end: the process went on, and ran out of memory afterwards.
    assert!(
        dumps[0]["t_s"].as_f64().unwrap() < leaking["exit"]["t_s"].as_f64().unwrap(),
        "{program}: {leaking:#}"
    );
    let accumulation = first_finding(
        &["summary", path_str(&dump)],
        &[&dump],
        &dir.join("dump.html"),
    );
    assert_eq!(
        accumulation["kind"], "accumulation",
        "{program}: {accumulation:#}"
    );
    assert_eq!(
        accumulation["holder"]["name"], case.container,
        "{program}: {accumulation:#}"
    );
    check_findings_of_one_dump(program, &dump);
    // The timeline and the dump on one page: the first screen is the dump's culprit.
    first_finding(
        &["summary", path_str(&dump)],
        &[&dir.join("leaking.hgt"), &dump],
        &dir.join("timeline-and-dump.html"),
    );
    let (fixed, code) = record_until_out_of_memory(case, true, &dir);
    assert_eq!(code, 0, "{program}: the fixed version ran out of memory");
    assert!(fixed["dumps"].as_array().unwrap().is_empty(), "{fixed:#}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn model_loading_is_dumped_before_it_runs_out_of_memory() {
    check_dumped_before_out_of_memory("model_loading/load_model.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn batch_pileup_is_dumped_before_it_runs_out_of_memory() {
    check_dumped_before_out_of_memory("batch_pileup/batch_server.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn vector_store_is_dumped_before_it_runs_out_of_memory() {
    check_dumped_before_out_of_memory("vector_store/vector_store.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn async_tasks_are_dumped_before_they_run_out_of_memory() {
    check_dumped_before_out_of_memory("async_tasks/async_service.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn growing_cache_is_dumped_before_it_runs_out_of_memory() {
    check_dumped_before_out_of_memory("growing_cache/prompt_cache.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn unclosed_stream_is_dumped_before_it_runs_out_of_memory() {
    check_dumped_before_out_of_memory("unclosed_stream/stream_server.py");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3 and numpy")]
fn parsed_json_is_dumped_before_it_runs_out_of_memory() {
    check_dumped_before_out_of_memory("parsed_json/catalog_service.py");
}

/// The GPU scenarios on the H200 snapshots of `fixtures/torch-cuda`: loading a model (fp32,
/// then converted to fp16 with the fp32 storage still cached), batches doubled into an OOM,
/// and a training loop that keeps every step's loss (release A) against one that keeps
/// `loss.item()` (release B).
#[test]
fn the_gpu_scenarios_name_their_culprit_on_real_cuda_snapshots() {
    let dir = temp_dir("example-gpu");
    // Model loading: after the conversion, the cache still holds what the fp32 weights freed.
    let converted = json(&[
        "gpu",
        path_str(&fixture("torch-cuda/load_fp16_after_convert.pickle.gz")),
        "--format",
        "json",
    ]);
    let (allocated, reserved) = (
        converted["allocated_bytes"].as_u64().unwrap(),
        converted["reserved_bytes"].as_u64().unwrap(),
    );
    assert!(
        reserved >= allocated + allocated / 2,
        "{allocated} allocated, {reserved} reserved"
    );
    // Batch pile-up: the failed request, and the model's forward that allocated the most.
    let snapshot = fixture("torch-cuda/oom_batch_growth.pickle.gz");
    let oom = first_finding(
        &["gpu", path_str(&snapshot)],
        &[&snapshot],
        &dir.join("oom.html"),
    );
    assert_eq!(oom["kind"], "gpu_oom", "{oom:#}");
    assert_eq!(oom["held_by"]["frames"][0]["name"], "forward", "{oom:#}");
    assert_eq!(oom["held_by"]["frames"][0]["lineno"], 59, "{oom:#}");
    // Two releases: the gate fails on the leaking one and passes on the fixed one.
    let fixed = fixture("torch-cuda/train_release_b_fixed.pickle.gz");
    let leaking = fixture("torch-cuda/train_release_a_leak.pickle.gz");
    assert!(gate_fails(&fixed, &leaking, "size > +64MiB"));
    assert!(!gate_fails(&fixed, &fixed, "size > +64MiB"));
    let growth = first_finding(
        &["diff", path_str(&fixed), path_str(&leaking)],
        &[&fixed, &leaking],
        &dir.join("releases.html"),
    );
    assert_eq!(growth["kind"], "alloc_growth", "{growth:#}");
    assert_eq!(growth["frames"][0]["name"], "forward", "{growth:#}");
    assert_eq!(growth["frames"][0]["lineno"], 59, "{growth:#}");
    std::fs::remove_dir_all(&dir).ok();
}
