//! The Rust allocation recorder end to end: programs that account for what they allocate
//! (`crates/capture/examples/alloc_demo.rs`, `alloc_sampled_demo.rs`, built with frame
//! pointers as examples of the same `cargo test --workspace`) are run, and their snapshots read
//! with `heapgraph top` and `diff`, which must give each accounted line exactly the bytes and
//! allocations the program says (within a computed statistical bound when sampling), and agree
//! with sums a test makes itself from other groupings.

use crate::support::{heapgraph, json, path_str, temp_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The demo programs: the examples of heapgraph-capture that the same `cargo test --workspace`
/// built beside this test (`target/<profile>/examples`), with the frame pointers that
/// `.cargo/config.toml` asks of every build here.
fn demos() -> &'static Path {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let exe = std::env::current_exe().map_err(|err| format!("no path to this test: {err}"))?;
        // target/<profile>/deps/e2e-… → target/<profile>/examples
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .map(|profile| profile.join("examples"))
            .ok_or_else(|| format!("{} is not in a cargo target folder", exe.display()))?;
        for demo in ["alloc_demo", "alloc_sampled_demo"] {
            if !dir.join(demo).is_file() {
                return Err(format!(
                    "{} is missing: the demos are heapgraph-capture's examples, which \
                     `cargo test --workspace` builds (alone: `cargo build --release -p \
                     heapgraph-capture --examples`)",
                    dir.join(demo).display()
                ));
            }
        }
        Ok(dir)
    });
    match found {
        Ok(dir) => dir,
        Err(message) => panic!("{message}"),
    }
}

/// Runs a demo with `dir` as its argument and returns its account.
fn run_demo(name: &str, dir: &Path) -> Value {
    let output = Command::new(demos().join(name))
        .arg(dir)
        .output()
        .expect("the demo runs");
    assert!(
        output.status.success(),
        "{name} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the demo prints JSON")
}

/// The demo's snapshots and account, made once for all the tests that read them.
fn every_allocation() -> &'static (PathBuf, Value) {
    static RUN: OnceLock<(PathBuf, Value)> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = temp_dir("rust-alloc");
        let account = run_demo("alloc_demo", &dir);
        (dir, account)
    })
}

fn snapshot_path(name: &str) -> String {
    let (dir, _) = every_allocation();
    path_str(&dir.join(name)).to_owned()
}

/// `(size, count)` of each row whose most recent frame is the demo's `file` at a line, by line.
fn by_line(rows: &Value, file: &str, field: (&str, &str)) -> Vec<(u64, i64, i64)> {
    let mut lines = Vec::new();
    for row in rows.as_array().expect("rows") {
        let frame = &row["frames"][0];
        if frame["filename"]
            .as_str()
            .is_some_and(|f| f.ends_with(file))
        {
            lines.push((
                frame["lineno"].as_u64().expect("a line"),
                row[field.0].as_i64().expect("a number"),
                row[field.1].as_i64().expect("a number"),
            ));
        }
    }
    lines
}

/// The account's `(line, bytes, count)` entries for one snapshot.
fn accounted(account: &Value, which: &str) -> Vec<(u64, i64, i64)> {
    account[which]
        .as_array()
        .expect("an account")
        .iter()
        .map(|entry| {
            (
                entry["line"].as_u64().expect("line"),
                entry["bytes"].as_i64().expect("bytes"),
                entry["count"].as_i64().expect("count"),
            )
        })
        .collect()
}

fn top_json(file: &str, extra: &[&str]) -> Value {
    let mut args = vec!["top", file, "--format", "json", "-n", "100000"];
    args.extend_from_slice(extra);
    json(&args)
}

#[test]
fn every_accounted_line_holds_exactly_what_the_program_says() {
    let (_, account) = every_allocation();
    let file = account["file"].as_str().expect("file");
    for which in ["before", "after"] {
        let ours = top_json(&snapshot_path(&format!("{which}.hgd")), &[]);
        assert_eq!(ours["schema"], "heapgraph.sites/1");
        assert_eq!(ours["by"], "lineno");
        assert_eq!(ours["dump"]["format"], "heapgraph-alloc");
        assert_eq!(ours["dump"]["runtime"], "rust");
        assert_eq!(
            ours["total"]["size"],
            account[format!("{which}_bytes")],
            "{which}: the total is what the recorder said it wrote"
        );
        let rows = by_line(&ours["rows"], file, ("size", "count"));
        let expected = accounted(account, which);
        assert!(expected.len() >= 12, "{which}: {expected:?}");
        for (line, bytes, count) in expected {
            let found: Vec<_> = rows.iter().filter(|row| row.0 == line).collect();
            if count == 0 {
                assert!(
                    found.is_empty(),
                    "{which}: line {line} freed all: {found:?}"
                );
            } else {
                assert_eq!(
                    found,
                    [&(line, bytes, count)],
                    "{which}: line {line} (rows of the demo: {rows:?})"
                );
            }
        }
    }
}

#[test]
fn diff_gives_each_lines_change_exactly() {
    let (_, account) = every_allocation();
    let file = account["file"].as_str().expect("file");
    let before = accounted(account, "before");
    let after = accounted(account, "after");
    let ours = json(&[
        "diff",
        &snapshot_path("before.hgd"),
        &snapshot_path("after.hgd"),
        "--format",
        "json",
    ]);
    let changes = by_line(&ours["rows"], file, ("size_diff", "count_diff"));
    let mut checked = 0;
    for &(line, bytes, count) in &after {
        let (old_bytes, old_count) = before
            .iter()
            .find(|entry| entry.0 == line)
            .map_or((0, 0), |entry| (entry.1, entry.2));
        let change = (line, bytes - old_bytes, count - old_count);
        if change.1 == 0 && change.2 == 0 {
            continue;
        }
        let found: Vec<_> = changes.iter().filter(|row| row.0 == line).collect();
        assert_eq!(found, [&change], "line {line}");
        checked += 1;
    }
    // Half the Vecs, the Boxes, the stress threads' blocks (two lines) and the new line.
    assert!(checked >= 5, "{checked}");
}

/// The test's own folding of whole stacks: the first frame in the demo's file.
fn own_fold(traceback: &Value, file: &str) -> Vec<(u64, i64, i64)> {
    let mut sums: Vec<(u64, i64, i64)> = Vec::new();
    for row in traceback["rows"].as_array().expect("rows") {
        let frames = row["frames"].as_array().expect("frames");
        let Some(first) = frames
            .iter()
            .find(|f| f["filename"].as_str().is_some_and(|n| n.ends_with(file)))
        else {
            continue;
        };
        // Only stacks whose innermost frames are all library ones fold to that frame.
        let line = first["lineno"].as_u64().expect("line");
        let (size, count) = (
            row["size"].as_i64().unwrap(),
            row["count"].as_i64().unwrap(),
        );
        match sums.iter_mut().find(|entry| entry.0 == line) {
            Some(entry) => {
                entry.1 += size;
                entry.2 += count;
            }
            None => sums.push((line, size, count)),
        }
    }
    sums.sort_unstable();
    sums
}

#[test]
fn groupings_agree_with_the_tests_own_sums() {
    let (_, account) = every_allocation();
    let file = account["file"].as_str().expect("file");
    let before = snapshot_path("before.hgd");
    // By line (folded) against whole stacks (unfolded), folded here.
    let mut lines = by_line(&top_json(&before, &[])["rows"], file, ("size", "count"));
    lines.sort_unstable();
    let traceback = top_json(&before, &["--by", "traceback", "--all-frames"]);
    assert_eq!(own_fold(&traceback, file), lines);
    // Library frames are there when asked for: Vec's own, under /rustc/.
    assert!(
        traceback["rows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|row| row["frames"][0]["filename"]
                .as_str()
                .is_some_and(|f| f.starts_with("/rustc/") && f.ends_with("raw_vec/mod.rs"))),
        "no raw_vec frame with --all-frames"
    );
    // By file: the demo's file holds the sum of its lines.
    let files = top_json(&before, &["--by", "filename"]);
    let demo_file: Vec<&Value> = files["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| {
            row["frames"][0]["filename"]
                .as_str()
                .unwrap()
                .ends_with(file)
        })
        .collect();
    assert_eq!(demo_file.len(), 1);
    assert_eq!(demo_file[0]["frames"][0]["lineno"], 0);
    let sum: i64 = lines.iter().map(|line| line.1).sum();
    assert_eq!(demo_file[0]["size"].as_i64(), Some(sum));
    // --filter keeps the demo's rows, --exclude the rest; together they are the whole.
    let pattern = format!("*{file}");
    let kept = top_json(&before, &["--filter", &pattern]);
    let dropped = top_json(&before, &["--exclude", &pattern]);
    assert_eq!(kept["total"]["size"].as_i64(), Some(sum));
    let whole = top_json(&before, &[])["total"]["size"].as_i64().unwrap();
    assert_eq!(
        kept["total"]["size"].as_i64().unwrap() + dropped["total"]["size"].as_i64().unwrap(),
        whole
    );
    // --cumulative: the stress threads' closure in main carries every byte allocated under
    // it, which is the sum of the stacks that pass through it. (Rows key on the function
    // too: main's own frame at that line, which spawns the threads, is another row.)
    // As the legacy symbol mangling (stable Rust's default) and v0 (nightly's) demangle it.
    let closure = [
        "alloc_demo::main::{{closure}}::{{closure}}",
        "alloc_demo::main::{closure#0}::{closure#0}",
    ];
    let is_closure = |frame: &Value| {
        frame["filename"].as_str().unwrap().ends_with(file)
            && closure.iter().any(|name| frame["name"] == *name)
    };
    let rows_through = |view: &Value| -> Vec<Value> {
        view["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| row["frames"].as_array().unwrap().iter().any(is_closure))
            .cloned()
            .collect()
    };
    let through: i64 = rows_through(&traceback)
        .iter()
        .map(|row| row["size"].as_i64().unwrap())
        .sum();
    let cumulative = rows_through(&top_json(&before, &["--cumulative"]));
    assert_eq!(cumulative.len(), 1, "{cumulative:?}");
    assert_eq!(cumulative[0]["size"].as_i64(), Some(through));
    assert!(through > 100_000_000, "{through}");
}

#[test]
fn text_output_names_the_users_line_and_gates_fire_on_growth() {
    let (_, account) = every_allocation();
    let file = account["file"].as_str().expect("file");
    let after = accounted(account, "after");
    // The line between the snapshots that made 30 blocks of 4 KiB (120 KiB).
    let &(new_line, new_bytes, _) = after
        .iter()
        .find(|entry| entry.1 == 30 * 4096)
        .expect("the new line");
    let text = crate::support::heapgraph_ok(&["top", &snapshot_path("after.hgd"), "-n", "100"]);
    assert!(
        text.contains(&format!("{file}:{new_line} (alloc_demo::main)")),
        "{text}"
    );
    assert!(
        !text.contains("raw_vec"),
        "library frames fold away: {text}"
    );
    let gate = |rule: &str| {
        heapgraph(&[
            "diff",
            &snapshot_path("before.hgd"),
            &snapshot_path("after.hgd"),
            "--fail-if",
            rule,
        ])
    };
    let rule = format!("size(site~alloc_demo.rs:{new_line}$) > +100KiB");
    let failed = gate(&rule);
    assert_eq!(failed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(
        stderr.contains(&format!("gate FAILED: {rule}: measured +{new_bytes} B"))
            || stderr.contains(&format!("gate FAILED: {rule}")),
        "{stderr}"
    );
    let passed = gate(&format!("size(site~alloc_demo.rs:{new_line}$) > +200KiB"));
    assert_eq!(
        passed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&passed.stderr)
    );
}

#[test]
fn sampled_estimates_are_within_six_sigma_of_the_truth() {
    let dir = temp_dir("rust-alloc-sampled");
    let account = run_demo("alloc_sampled_demo", &dir);
    let file = account["file"].as_str().expect("file");
    let period = account["period"].as_f64().expect("period");
    let snapshot = path_str(&dir.join("sampled.hgd")).to_owned();
    let ours = top_json(&snapshot, &[]);
    let notes = ours["dump"]["notes"].as_array().expect("notes");
    assert!(
        notes.iter().any(|note| note
            .as_str()
            .is_some_and(|n| n.starts_with("sampled: one allocation every 4096 bytes"))),
        "{notes:?}"
    );
    let rows = by_line(&ours["rows"], file, ("size", "count"));
    let mut checked = 0;
    for entry in account["lines"].as_array().expect("lines") {
        let line = entry["line"].as_u64().unwrap();
        let size = entry["size"].as_f64().unwrap();
        let n = entry["count"].as_f64().unwrap();
        let found = rows.iter().find(|row| row.0 == line);
        if n == 0.0 {
            // Freed blocks leave nothing behind: a sampled block's weight goes as it came.
            assert!(found.is_none(), "line {line}: {found:?}");
            continue;
        }
        let &(_, bytes, count) = found.unwrap_or_else(|| panic!("no row for line {line}"));
        // Each block is sampled with p = 1 - exp(-size/period) and then weighs size/p bytes
        // and 1/p blocks: the estimate of n blocks has standard deviation
        // size * sqrt(n (1 - p) / p) bytes (and that over size blocks).
        let p = -(-size / period).exp_m1();
        let sigma_bytes = size * (n * (1.0 - p) / p).sqrt();
        let true_bytes = size * n;
        // Rounding of the per-sample weights adds at most half a byte per sample.
        let slack = n * p + 1.0;
        assert!(
            (bytes as f64 - true_bytes).abs() <= 6.0 * sigma_bytes + slack,
            "line {line}: {bytes} bytes estimated, {true_bytes} true, sigma {sigma_bytes}"
        );
        assert!(
            (count as f64 - n).abs() <= 6.0 * sigma_bytes / size + slack,
            "line {line}: {count} blocks estimated, {n} true"
        );
        // The bound must mean something: at most 15% of the truth.
        assert!(6.0 * sigma_bytes <= 0.15 * true_bytes, "line {line}");
        checked += 1;
    }
    assert_eq!(checked, 6);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_cut_short_snapshot_reads_as_far_as_it_goes() {
    let dir = temp_dir("rust-alloc-cut");
    let whole = std::fs::read(snapshot_path("before.hgd")).expect("the snapshot");
    // Cut inside the sites chunk (the last before the end record): all sites are lost, the
    // frames and stacks arrived.
    let cut = dir.join("cut.hgd");
    std::fs::write(&cut, &whole[..whole.len() - 40]).expect("written");
    let ours = top_json(path_str(&cut), &[]);
    let notes = ours["dump"]["notes"].as_array().expect("notes");
    assert!(
        notes.iter().any(|note| note
            .as_str()
            .is_some_and(|n| n.starts_with("the file ends after chunk 3")
                && n.contains("inside the next record, which is lost"))),
        "{notes:?}"
    );
    assert_eq!(ours["total"]["count"], 0);
    // Cut inside the header: an error that names the file and the offset.
    let header_cut = dir.join("header-cut.hgd");
    std::fs::write(&header_cut, &whole[..30]).expect("written");
    let output = heapgraph(&["top", path_str(&header_cut)]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(path_str(&header_cut)) && stderr.contains("at byte 30"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
