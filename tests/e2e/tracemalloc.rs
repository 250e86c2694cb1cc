//! tracemalloc dumps against Python's own answers: every row of `Snapshot.statistics` and
//! `Snapshot.compare_to`, in Python's order, for the committed fixtures and for dumps that
//! python3 writes afresh when the test runs.

use crate::support::{fixture, heapgraph, json, path_str, temp_dir, tool};
use serde_json::Value;
use std::path::Path;

/// `[[filename, lineno], …]` from Python against `[{filename, lineno}, …]` from heapgraph.
fn frames_match(python: &Value, ours: &Value) -> bool {
    let (Some(python), Some(ours)) = (python.as_array(), ours.as_array()) else {
        return false;
    };
    python.len() == ours.len()
        && python.iter().zip(ours).all(|(p, o)| {
            p[0].as_str() == o["filename"].as_str() && p[1].as_u64() == o["lineno"].as_u64()
        })
}

fn site_args(case: &Value, args: &mut Vec<String>) {
    args.extend(["--by".to_owned(), case["by"].as_str().unwrap().to_owned()]);
    if case["cumulative"].as_bool().unwrap() {
        args.push("--cumulative".to_owned());
    }
    for pattern in case["filter"].as_array().unwrap() {
        args.extend(["--filter".to_owned(), pattern.as_str().unwrap().to_owned()]);
    }
    for pattern in case["exclude"].as_array().unwrap() {
        args.extend(["--exclude".to_owned(), pattern.as_str().unwrap().to_owned()]);
    }
    args.extend(["--format", "json", "-n", "1000000"].map(str::to_owned));
}

fn compare_rows(what: &str, python: &Value, ours: &Value, diff: bool) {
    let python = python.as_array().unwrap();
    let ours = ours.as_array().unwrap();
    assert_eq!(ours.len(), python.len(), "{what}: row count");
    assert!(!python.is_empty(), "{what}: Python gave no rows");
    for (i, (p, o)) in python.iter().zip(ours).enumerate() {
        assert!(
            frames_match(&p["frames"], &o["frames"]),
            "{what}: row {i}: frames {} against Python's {}",
            o["frames"],
            p["frames"]
        );
        let mut fields = vec!["size", "count"];
        if diff {
            fields.extend(["size_diff", "count_diff"]);
        }
        for field in fields {
            assert_eq!(o[field], p[field], "{what}: row {i}: {field}");
        }
    }
}

/// Runs every case of `expected.json` in `dir` through heapgraph.
fn check_against_python(dir: &Path) {
    let expected: Value =
        serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
    let dump = |name: &str| path_str(&dir.join(format!("{name}.tracemalloc"))).to_owned();
    for (name, facts) in expected["dumps"].as_object().unwrap() {
        let ours = json(&["top", &dump(name), "--format", "json"]);
        assert_eq!(ours["total"]["count"], facts["traces"], "{name}: traces");
        assert_eq!(ours["total"]["size"], facts["total_size"], "{name}: bytes");
    }
    let mut cases = 0;
    for case in expected["statistics"].as_array().unwrap() {
        let mut args = vec!["top".to_owned(), dump(case["dump"].as_str().unwrap())];
        site_args(case, &mut args);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let ours = json(&args);
        assert_eq!(ours["schema"], "heapgraph.sites/1");
        compare_rows(&format!("{args:?}"), &case["rows"], &ours["rows"], false);
        cases += 1;
    }
    for case in expected["compare"].as_array().unwrap() {
        let mut args = vec![
            "diff".to_owned(),
            dump(case["old"].as_str().unwrap()),
            dump(case["new"].as_str().unwrap()),
        ];
        site_args(case, &mut args);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        compare_rows(
            &format!("{args:?}"),
            &case["rows"],
            &json(&args)["rows"],
            true,
        );
        cases += 1;
    }
    assert!(cases >= 30, "only {cases} cases in {}", dir.display());
}

#[test]
fn committed_dumps_give_pythons_statistics_and_comparisons() {
    check_against_python(&fixture("tracemalloc"));
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3")]
fn fresh_dumps_from_this_python_give_its_answers() {
    let dir = temp_dir("tracemalloc");
    let status = tool("python3")
        .arg(fixture("tracemalloc/make_fixtures.py"))
        .arg(&dir)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "make_fixtures.py failed");
    check_against_python(&dir);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cumulative_by_traceback_is_refused_as_python_refuses_it() {
    let dump = fixture("tracemalloc/after.tracemalloc");
    let output = heapgraph(&["top", path_str(&dump), "--by", "traceback", "--cumulative"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--cumulative"));
}

#[test]
fn heap_dump_rankings_are_not_allocation_groupings() {
    let dump = fixture("tracemalloc/after.tracemalloc");
    let output = heapgraph(&["top", path_str(&dump), "--by", "retained"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("filename, lineno or traceback"), "{stderr}");
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3")]
fn three_tuple_traces_of_python_3_8_and_older_read_the_same() {
    // No interpreter of 3.8 or older is here; python3 rewrites a real dump's traces as the
    // (domain, size, traceback) 3-tuples those versions pickle, which no statistic depends on.
    let dir = temp_dir("tracemalloc-3tuple");
    let three = dir.join("three.tracemalloc");
    let original = fixture("tracemalloc/after.tracemalloc");
    let script = "import pickle, sys, tracemalloc\n\
                  snap = tracemalloc.Snapshot.load(sys.argv[1])\n\
                  snap.traces._traces = [t[:3] for t in snap.traces._traces]\n\
                  pickle.dump(snap, open(sys.argv[2], 'wb'), pickle.HIGHEST_PROTOCOL)\n";
    let status = tool("python3")
        .args(["-c", script, path_str(&original), path_str(&three)])
        .status()
        .expect("python3 runs");
    assert!(status.success());
    for by in ["lineno", "traceback"] {
        let args = |file: &Path| {
            json(&[
                "top",
                path_str(file),
                "--by",
                by,
                "-n",
                "1000",
                "--format",
                "json",
            ])
        };
        let (ours, theirs) = (args(&three), args(&original));
        assert_eq!(ours["rows"], theirs["rows"], "--by {by}");
        assert_eq!(ours["total"], theirs["total"]);
    }
    std::fs::remove_dir_all(&dir).ok();
}
