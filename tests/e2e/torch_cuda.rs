//! PyTorch CUDA snapshots from an H200 (`fixtures/torch-cuda/`) against torch's own counters
//! (`truth.json`, `large_truth.json`) and an independent Python reading of the same pickles
//! (`expected.json`, written by `expected_by_stack.py`).

use crate::support::{fixture, json, path_str};
use serde_json::Value;

fn load_json(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name)).unwrap()).unwrap()
}

fn gpu(name: &str, extra: &[&str]) -> Value {
    let file = fixture(&format!("torch-cuda/{name}.pickle.gz"));
    let mut args = vec!["gpu", path_str(&file), "--format", "json"];
    args.extend(extra);
    json(&args)
}

#[test]
fn every_fixture_matches_torchs_counters() {
    let truth = load_json("torch-cuda/truth.json");
    let mut scenarios: Vec<(String, Value)> = truth["scenarios"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, facts)| (name.clone(), facts.clone()))
        .collect();
    scenarios.push((
        "transformer_train_large".to_owned(),
        load_json("torch-cuda/large_truth.json"),
    ));
    assert_eq!(scenarios.len(), 7);
    for (name, facts) in scenarios {
        let ours = gpu(&name, &[]);
        assert_eq!(ours["schema"], "heapgraph.gpu/1");
        assert_eq!(ours["allocated_bytes"], facts["memory_allocated"], "{name}");
        assert_eq!(ours["reserved_bytes"], facts["memory_reserved"], "{name}");
        assert_eq!(ours["segments"], facts["segments"], "{name}");
        assert_eq!(ours["blocks"], facts["blocks"], "{name}");
        assert_eq!(ours["trace"]["entries"], facts["trace_entries"], "{name}");
        let peak = ours["trace"]["peak_allocated"].as_i64().unwrap();
        let max = facts["max_memory_allocated"].as_i64().unwrap();
        // The trace counts requested bytes, torch's peak rounded blocks: close, never above.
        assert!(
            peak <= max && peak * 100 >= max * 95,
            "{name}: peak {peak} vs {max}"
        );
    }
}

#[test]
fn by_stack_and_fragmentation_match_an_independent_reading() {
    let expected = load_json("torch-cuda/expected.json");
    for (name, facts) in expected["files"].as_object().unwrap() {
        let ours = gpu(name, &["--all-frames", "-n", "100000"]);
        for field in [
            "allocated_bytes",
            "requested_bytes",
            "reserved_bytes",
            "active_blocks",
            "inactive_bytes",
            "largest_free_block",
        ] {
            assert_eq!(ours[field], facts[field], "{name}: {field}");
        }
        let python = facts["by_stack"].as_array().unwrap();
        let rows = ours["by_stack"].as_array().unwrap();
        assert_eq!(rows.len(), python.len(), "{name}: stacks");
        for (i, (p, o)) in python.iter().zip(rows).enumerate() {
            assert_eq!(o["bytes"], p["bytes"], "{name}: stack {i}");
            assert_eq!(o["blocks"], p["blocks"], "{name}: stack {i}");
            let frames: Vec<Value> = o["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| serde_json::json!([f["filename"], f["lineno"], f["name"]]))
                .collect();
            assert_eq!(Value::Array(frames), p["frames"], "{name}: stack {i}");
        }
        let actions: serde_json::Map<String, Value> = ours["trace"]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|pair| (pair[0].as_str().unwrap().to_owned(), pair[1].clone()))
            .collect();
        assert_eq!(
            Value::Object(actions),
            facts["trace_actions"],
            "{name}: actions"
        );
    }
}

#[test]
fn a_complete_trace_replays_from_zero_and_a_late_one_says_so() {
    // All of release A's history was recorded: the replay starts at nothing.
    let complete = gpu("train_release_a_leak", &["--timeline"]);
    assert_eq!(complete["trace"]["allocated_before"], 0);
    assert_eq!(complete["trace"]["reserved_before"], 0);
    let timeline = complete["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), 459);
    let last = timeline.last().unwrap();
    assert_eq!(last[1], complete["requested_bytes"]);
    assert_eq!(last[2], complete["reserved_bytes"]);
    // The KV-cache trace is the last 6000 events of a ring buffer.
    let late = gpu("kv_cache_cat_growth", &[]);
    assert!(late["trace"]["allocated_before"].as_i64().unwrap() != 0);
}

#[test]
fn the_oom_fixture_names_the_failed_request() {
    let truth = load_json("torch-cuda/truth.json");
    let ours = gpu("oom_batch_growth", &[]);
    let oom = &ours["oom"];
    assert_eq!(oom["requested_bytes"], truth["oom_observer"]["alloc"]);
    assert_eq!(oom["device_free"], truth["oom_observer"]["device_free"]);
    // torch's trace holds the request and the device's free bytes, not the cap (decisions.md).
    assert_eq!(oom["cap_bytes"], Value::Null);
    assert_eq!(oom["events_after"], 0);
    let frames = oom["frames"].as_array().unwrap();
    assert_eq!(frames[0]["filename"], "/srv/trainer/make_fixtures.py");
    assert_eq!(frames[0]["lineno"], 59);
    // The largest free block could not have served it.
    assert!(ours["largest_free_block"].as_u64() < oom["requested_bytes"].as_u64());
    // What held memory at that moment: the batch's activations come first.
    assert_eq!(ours["by_stack"][0]["frames"][0]["lineno"], 59);
    assert_eq!(ours["by_stack"][0]["frames"][1]["lineno"], 119);
}

#[test]
fn release_a_against_release_b_grows_at_the_kept_loss_graphs() {
    let fixed = fixture("torch-cuda/train_release_b_fixed.pickle.gz");
    let leak = fixture("torch-cuda/train_release_a_leak.pickle.gz");
    let diff = json(&[
        "diff",
        path_str(&fixed),
        path_str(&leak),
        "--format",
        "json",
    ]);
    assert_eq!(diff["schema"], "heapgraph.sites/1");
    assert_eq!(diff["by"], "traceback");
    let top = &diff["rows"][0];
    // The activations saved for backward of every kept loss: allocated in the model's forward,
    // called from the training step's loss line; library frames folded away.
    let frames: Vec<(String, u64)> = top["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_owned(),
                f["lineno"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        frames,
        [
            ("forward".to_owned(), 59),
            ("train_steps".to_owned(), 69),
            ("<module>".to_owned(), 80)
        ]
    );
    let growth = top["size_diff"].as_i64().unwrap();
    assert_eq!(growth, 336_592_896 - 34_603_008);
    assert_eq!(
        diff["total"]["size_diff"].as_i64().unwrap(),
        487_643_136 - 269_582_336
    );
}

#[test]
fn the_gate_fails_on_the_leaking_release_and_passes_on_the_fixed_one() {
    let fixed = fixture("torch-cuda/train_release_b_fixed.pickle.gz");
    let leak = fixture("torch-cuda/train_release_a_leak.pickle.gz");
    let rule = "size(site~make_fixtures.py:69) > +100MiB";
    let gate = |old: &str, new: &str| {
        crate::support::heapgraph(&[
            "diff",
            old,
            new,
            "--fail-if",
            rule,
            "--fail-if",
            "total > +50%",
        ])
    };
    // B -> A: the kept graphs grow the loss line's allocations by 288 MiB.
    let failed = gate(path_str(&fixed), path_str(&leak));
    assert_eq!(failed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains(&format!("gate FAILED: {rule}: measured +872.7%")),
        "{stderr}"
    );
    assert!(stderr.contains("gate FAILED: total > +50%"), "{stderr}");
    // B -> B: nothing grew.
    let passed = gate(path_str(&fixed), path_str(&fixed));
    assert_eq!(
        passed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&passed.stderr)
    );
    assert!(String::from_utf8_lossy(&passed.stderr).contains(&format!("gate passed: {rule}")));
    // A rule for heap dumps is a usage error here.
    let wrong = crate::support::heapgraph(&[
        "diff",
        path_str(&fixed),
        path_str(&leak),
        "--fail-if",
        "retained > 1",
    ]);
    assert_eq!(wrong.status.code(), Some(2));
}

/// `train_release_a_leak` as `stacks="all"` records it (C++ frames interleaved with the
/// Python ones): `fixtures/torch-cuda/make_cpp_stacks.py` says what it rewrites.
const CPP_STACKS: &str = "train_release_a_leak_cpp_stacks";

fn alloc_snapshot(name: &str) -> heapgraph_model::AllocSnapshot {
    let path = fixture(&format!("torch-cuda/{name}.pickle.gz"));
    match heapgraph_import::import_path(&path, &Default::default()).expect("fixture loads") {
        heapgraph_import::Contents::Alloc(snapshot) => snapshot,
        _ => panic!("{name} is not an allocation snapshot"),
    }
}

#[test]
fn cpp_frames_that_torchs_viewer_hides_are_hidden() {
    // The oracle: torch's own `_frame_filter` on the same frames (`expected_frame_filter.py`).
    use heapgraph_analyzer::sites::{is_torch_hidden_frame, site_frames};
    let expected = load_json("torch-cuda/cpp_stacks_expected.json");
    let snapshot = alloc_snapshot(CPP_STACKS);
    let cuda = snapshot.cuda.as_ref().expect("allocator state");
    let kept = |stack| -> Value {
        let frames = site_frames(&snapshot, stack);
        let positions: Vec<usize> = (0..frames.len())
            .filter(|&i| !is_torch_hidden_frame(frames[i].name.as_deref(), &frames[i].filename))
            .collect();
        serde_json::json!({ "frames": frames.len(), "kept": positions })
    };
    let patterns = expected["kept"].as_array().unwrap();
    let blocks = expected["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), cuda.blocks.len());
    let mut frames_checked = 0;
    for entry in blocks {
        let address = entry[0].as_u64().unwrap();
        let block = cuda
            .blocks
            .iter()
            .find(|block| block.address == address)
            .expect("block");
        let pattern = &patterns[entry[1].as_u64().unwrap() as usize];
        assert_eq!(kept(block.stack), *pattern, "block {address:#x}");
        frames_checked += pattern["frames"].as_u64().unwrap();
    }
    let trace = expected["trace"].as_array().unwrap();
    assert_eq!(trace.len(), cuda.trace.len());
    for (i, (event, pattern)) in cuda.trace.iter().zip(trace).enumerate() {
        let pattern = &patterns[pattern.as_u64().unwrap() as usize];
        assert_eq!(kept(event.stack), *pattern, "trace event {i}");
    }
    assert!(frames_checked > 5_000, "{frames_checked}");
}

#[test]
fn cpp_stacks_fold_to_the_rows_of_the_same_programs_python_stacks() {
    // The same program recorded with `stacks="python"` (the real fixture): once torch's hidden
    // frames and the library frames are folded, every view shows the same rows and frames.
    let without_file = |mut value: Value| {
        value["dump"]["file"] = Value::Null;
        value
    };
    let cpp = without_file(gpu(CPP_STACKS, &["-n", "1000", "--timeline"]));
    let python = without_file(gpu("train_release_a_leak", &["-n", "1000", "--timeline"]));
    assert_eq!(cpp, python);
    let top = |name: &str| {
        let file = fixture(&format!("torch-cuda/{name}.pickle.gz"));
        without_file(json(&[
            "top",
            path_str(&file),
            "--format",
            "json",
            "-n",
            "1000",
        ]))
    };
    assert_eq!(top(CPP_STACKS), top("train_release_a_leak"));
    // The first frame shown is the user's, where the raw stack starts with torch's unwinder.
    let first = &cpp["by_stack"][0]["frames"][0];
    assert_eq!(
        first["filename"], "/srv/trainer/make_fixtures.py",
        "{first}"
    );
    // `--all-frames` keeps every frame as recorded.
    let all = gpu(CPP_STACKS, &["-n", "1000", "--all-frames"]);
    let frames = all["by_stack"][0]["frames"].as_array().unwrap();
    assert_eq!(frames[0]["name"], "torch::unwind::unwind()");
    assert_eq!(frames[0]["filename"], "??");
    assert!(frames.len() > 40, "{}", frames.len());
}

/// Issue 22: the diff numbered its sites `#1`, `(no stack recorded)`, `#3`, and the report left
/// the stack cell of that site empty. A number points at a stack listed below the table, so the
/// numbers follow one another; each listed stack is the row's own, as the JSON of the same
/// comparison gives it; the site without a stack says so in the text and in the report.
#[test]
fn a_diff_numbers_its_listed_stacks_one_after_the_other() {
    let leak = fixture("torch-cuda/train_release_a_leak.pickle.gz");
    let fixed = fixture("torch-cuda/train_release_b_fixed.pickle.gz");
    let (old, new) = (path_str(&leak), path_str(&fixed));
    let text = crate::support::heapgraph_ok(&["diff", old, new]);
    let rows = json(&["diff", old, new, "--format", "json"])["rows"]
        .as_array()
        .unwrap()
        .clone();
    let frame = |f: &Value| {
        format!(
            "{}:{} ({})",
            f["filename"].as_str().unwrap(),
            f["lineno"],
            f["name"].as_str().unwrap()
        )
    };
    // The stacks the text must number, in the table's order.
    let listed: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row["frames"].as_array().unwrap())
        .filter(|frames| frames.len() > 1)
        .map(|frames| frames.iter().map(frame).collect())
        .collect();
    assert!(listed.len() >= 3, "{text}");
    assert!(
        rows.iter()
            .any(|row| row["frames"].as_array().unwrap().is_empty()),
        "the comparison has a site without a stack: {text}"
    );
    let (table, stacks) = text
        .split_once("stacks, most recent call first:\n")
        .expect("stacks listed");
    // In the table: #1, #2, … in order, and the site without a stack unnumbered.
    let numbers: Vec<usize> = table
        .lines()
        .filter_map(|line| line.split_once(" #"))
        .map(|(_, rest)| rest.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(numbers, (1..=listed.len()).collect::<Vec<_>>(), "{text}");
    assert!(table.contains("  (no stack recorded)\n"), "{text}");
    // Below it, each number's stack is the row's own.
    let mut blocks: Vec<(String, Vec<String>)> = Vec::new();
    for line in stacks.lines() {
        match line.strip_prefix("    ") {
            Some(frame) => blocks.last_mut().unwrap().1.push(frame.to_owned()),
            None => blocks.push((line.to_owned(), Vec::new())),
        }
    }
    let expected: Vec<(String, Vec<String>)> = listed
        .into_iter()
        .enumerate()
        .map(|(i, frames)| (format!("#{}", i + 1), frames))
        .collect();
    assert_eq!(blocks, expected);
    // The report's table says it too, where it left the cell empty.
    let dir = crate::support::temp_dir("cuda-diff-report");
    let out = dir.join("diff.html");
    crate::support::heapgraph_ok(&["report", "--baseline", old, new, "-o", path_str(&out)]);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        html.contains("<span class=\"chain\">(no stack recorded)</span>"),
        "an empty stack cell"
    );
    assert!(!html.contains("<span class=\"chain\"></span>"));
    std::fs::remove_dir_all(&dir).ok();
}

/// `gpu` takes the `--by`, `--filter` and `--exclude` that `top` and `diff` take (issue 22,
/// item 5): its table by site, grouped by line or by file and filtered on the most recent
/// frame's file, equals the independent Python reading's stacks regrouped and filtered the same
/// way. A block allocated before recording has no stack: no glob matches it, so `--exclude`
/// keeps it, as `tracemalloc.Filter(False, …)` keeps a trace it does not match.
#[test]
fn gpu_groups_and_filters_its_sites_as_top_does() {
    type Rows = Vec<(Option<(String, u64)>, u64, u64)>;
    let expected = load_json("torch-cuda/expected.json");
    let ours_by = |name: &str, extra: &[&str]| -> Rows {
        let mut args = vec!["--all-frames", "-n", "100000"];
        args.extend(extra);
        let view = gpu(name, &args);
        let mut rows: Rows = view["by_stack"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| {
                let key = row["frames"].as_array().unwrap().first().map(|frame| {
                    (
                        frame["filename"].as_str().unwrap().to_owned(),
                        frame["lineno"].as_u64().unwrap(),
                    )
                });
                (
                    key,
                    row["bytes"].as_u64().unwrap(),
                    row["blocks"].as_u64().unwrap(),
                )
            })
            .collect();
        rows.sort();
        rows
    };
    for (name, facts) in expected["files"].as_object().unwrap() {
        for (by, exclude) in [("lineno", None), ("filename", Some("module.py"))] {
            let mut sums: std::collections::BTreeMap<Option<(String, u64)>, (u64, u64)> =
                Default::default();
            for row in facts["by_stack"].as_array().unwrap() {
                let first = row["frames"].as_array().unwrap().first().map(|frame| {
                    let file = frame[0].as_str().unwrap().to_owned();
                    // tracemalloc's `filename` key shows line 0.
                    let line = if by == "filename" {
                        0
                    } else {
                        frame[1].as_u64().unwrap()
                    };
                    (file, line)
                });
                if exclude.is_some_and(|suffix| {
                    first
                        .as_ref()
                        .is_some_and(|(file, _)| file.ends_with(suffix))
                }) {
                    continue;
                }
                let sum = sums.entry(first).or_default();
                sum.0 += row["bytes"].as_u64().unwrap();
                sum.1 += row["blocks"].as_u64().unwrap();
            }
            let mut python: Rows = sums
                .into_iter()
                .map(|(key, (bytes, blocks))| (key, bytes, blocks))
                .collect();
            python.sort();
            let mut args = vec!["--by", by];
            if exclude.is_some() {
                args.extend(["--exclude", "*module.py"]);
            }
            assert_eq!(ours_by(name, &args), python, "{name}: gpu {args:?}");
        }
        // The same rows as `top` on the same snapshot, with the same options.
        let file = fixture(&format!("torch-cuda/{name}.pickle.gz"));
        let top = json(&[
            "top",
            path_str(&file),
            "--format",
            "json",
            "--all-frames",
            "--by",
            "lineno",
            "--filter",
            "/srv/*",
            "-n",
            "100000",
        ]);
        let top_rows: Vec<(Value, Value)> = top["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| (row["frames"][0]["lineno"].clone(), row["size"].clone()))
            .collect();
        let gpu_rows: Vec<(Value, Value)> = gpu(
            name,
            &[
                "--all-frames",
                "--by",
                "lineno",
                "--filter",
                "/srv/*",
                "-n",
                "100000",
            ],
        )["by_stack"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| (row["frames"][0]["lineno"].clone(), row["bytes"].clone()))
            .collect();
        assert_eq!(gpu_rows, top_rows, "{name}");
    }
}
