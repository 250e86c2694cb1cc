//! The HTML report: self-contained (nothing fetched), bounded in size, the same bytes for the
//! same inputs, and holding what the issue asks for on real dumps.

use crate::support::{V8_FIXTURES, fixture, heapgraph_ok, path_str, temp_dir};
use std::process::Command;

fn report(args: &[&str], name: &str) -> String {
    let dir = temp_dir("report");
    let out = dir.join(name);
    let mut all = vec!["report"];
    all.extend(args);
    all.extend(["-o", path_str(&out)]);
    heapgraph_ok(&all);
    std::fs::read_to_string(&out).unwrap()
}

/// Nothing in the page may make the browser fetch anything.
fn assert_self_contained(html: &str) {
    for needle in [
        "<link",
        "<img",
        "src=",
        "@import",
        "url(",
        "<iframe",
        "fetch(",
        "XMLHttpRequest",
    ] {
        assert!(!html.contains(needle), "the page contains {needle}");
    }
    // Namespaces name, they do not fetch: the only http in the page is SVG's.
    let without_ns = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
    assert!(html.len() < 2 << 20, "{} bytes", html.len());
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
}

/// The headline, the first thing on the page.
fn headline(html: &str) -> &str {
    let start = html.find("<div class=\"headline\">").expect("a headline");
    let end = html[start..]
        .find("</div></div>")
        .map_or(html.len(), |end| start + end);
    &html[start..end]
}

#[test]
fn the_first_screen_names_the_culprit_in_a_developers_words() {
    // A series: the container that grew, and the entries it grew by.
    let series = report(
        &[
            path_str(&fixture(V8_FIXTURES[0])),
            path_str(&fixture(V8_FIXTURES[1])),
            "--no-timestamp",
        ],
        "series-headline.html",
    );
    let text = headline(&series);
    assert!(
        text.contains(
            "What grew: <code>entries</code> of <code>LeakyCache</code> (a <code>Map</code>)"
        ) && text.contains("+200 <code>LeakyRequest</code> objects (100 → 300)")
            && text.contains("global.requestCache → LeakyCache.entries → Map.table → (array)"),
        "{text}"
    );
    // One dump: the object where the bytes accumulate, and the chain to it.
    let java = report(
        &[
            path_str(&fixture("java/default.hprof.gz")),
            "--no-timestamp",
        ],
        "java-headline.html",
    );
    let text = headline(&java);
    assert!(
        text.contains("What holds the memory: <code>sessions</code> of <code>com.example.SessionCache</code> (a <code>java.util.HashMap</code>)")
            && text.contains("mostly 400 <code>com.example.Session</code> objects")
            && text.contains("com.example.SessionCache.sessions → java.util.HashMap.table"),
        "{text}"
    );
    // A CUDA snapshot: the failed request, and the line that allocated the most.
    let gpu = report(
        &[
            path_str(&fixture("torch-cuda/oom_batch_growth.pickle.gz")),
            "--no-timestamp",
        ],
        "gpu-headline.html",
    );
    let text = headline(&gpu);
    assert!(
        text.contains("Out of memory: a request for 256.0 MiB failed")
            && text.contains(
                "the allocations made at <code>/srv/trainer/make_fixtures.py:59 (forward)</code>"
            ),
        "{text}"
    );
    // Two tracemalloc dumps: the line whose allocations grew most.
    let sites = report(
        &[
            "--baseline",
            path_str(&fixture("tracemalloc/before.tracemalloc")),
            path_str(&fixture("tracemalloc/after.tracemalloc")),
            "--no-timestamp",
        ],
        "sites-headline.html",
    );
    assert_self_contained(&sites);
    let text = headline(&sites);
    assert!(
        text.contains("What grew: the allocations made at <code>")
            && text.contains("make_fixtures.py:106</code>, by +102.3 KiB"),
        "{text}"
    );
    assert!(sites.contains("Allocation sites that changed since"));
    // A recording alone: how high, how fast, and the dump to open.
    let timeline = report(
        &[path_str(&fixture("timeline/worker.hgt")), "--no-timestamp"],
        "timeline-headline.html",
    );
    let text = headline(&timeline);
    assert!(
        text.contains("Memory reached") && text.contains("a python-hgd dump was taken at"),
        "{text}"
    );
}

#[test]
fn one_dump_gives_cards_types_tree_and_suspects() {
    let file = fixture("java/default.hprof.gz");
    let html = report(&[path_str(&file), "--no-timestamp"], "one.html");
    assert_self_contained(&html);
    for part in [
        "class=\"cards\"",
        "<h2>Leak suspects</h2>",
        "com.example.SessionCache",
        "<h2>Types (click a column to sort)</h2>",
        "table class=\"sortable\"",
        "<h2>Dominator tree",
        "<details open><summary>",
    ] {
        assert!(html.contains(part), "{part} missing");
    }
    // Bounded: a few hundred tree nodes at most.
    assert!(html.matches("<summary>").count() + html.matches("class=\"leaf\"").count() <= 500);
}

#[test]
fn a_series_adds_a_growth_chart_and_tables() {
    let files: Vec<String> = V8_FIXTURES
        .iter()
        .map(|name| path_str(&fixture(name)).to_owned())
        .collect();
    let mut args: Vec<&str> = files.iter().map(String::as_str).collect();
    args.push("--no-timestamp");
    let html = report(&args, "series.html");
    assert_self_contained(&html);
    assert!(html.contains("<h2>Growth over the dumps</h2>"));
    let svg = html.find("<svg").expect("a chart");
    assert!(html[svg..].contains("</svg>"));
    assert!(html.contains("Retained size of the types that grew most"));
    assert!(html.contains(">LeakyCache<"), "the growing cache is drawn");
    assert!(html.contains("<h2>Holders that changed"));
    assert!(html.contains("global.requestCache → LeakyCache"));
}

#[test]
fn the_same_inputs_give_the_same_bytes() {
    let file = fixture("v8/app-after.heapsnapshot.gz");
    let a = report(&[path_str(&file), "--no-timestamp"], "a.html");
    let b = report(&[path_str(&file), "--no-timestamp"], "b.html");
    assert_eq!(a, b);
    assert!(!a.contains("report generated"));
    // SOURCE_DATE_EPOCH sets the time shown.
    let dir = temp_dir("report-epoch");
    let out = dir.join("epoch.html");
    let status = Command::new(env!("CARGO_BIN_EXE_heapgraph"))
        .args(["report", path_str(&file), "-o", path_str(&out)])
        .env("SOURCE_DATE_EPOCH", "0")
        .status()
        .unwrap();
    assert!(status.success());
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("report generated 1970-01-01 00:00:00 UTC"));
}

/// Without `-o` the page goes beside the first file, named after it, so that the hint
/// `heapgraph report FILE` (which `record` and the findings print) works as written.
#[test]
fn without_o_the_page_goes_beside_its_file() {
    let dir = temp_dir("report-beside");
    for (fixture_name, page) in [
        ("v8/app-after.heapsnapshot.gz", "app-after.html"),
        ("timeline/worker.hgt", "worker.html"),
    ] {
        let file = dir.join(fixture_name.rsplit('/').next().unwrap());
        std::fs::copy(fixture(fixture_name), &file).unwrap();
        let said = heapgraph_ok(&["report", path_str(&file), "--no-timestamp"]);
        let out = dir.join(page);
        assert!(
            said.starts_with(&format!("wrote {} (", out.display())),
            "{said}"
        );
        let html = std::fs::read_to_string(&out).unwrap();
        assert_self_contained(&html);
        // The same page as with -o.
        assert_eq!(html, report(&[path_str(&file), "--no-timestamp"], page));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_cuda_snapshot_gives_its_timeline_and_stacks() {
    let file = fixture("torch-cuda/oom_batch_growth.pickle.gz");
    let html = report(&[path_str(&file), "--no-timestamp"], "gpu.html");
    assert_self_contained(&html);
    assert!(html.contains("Out of memory: a request for 256.0 MiB failed"));
    assert!(html.contains("<h2>GPU memory over time</h2>"));
    assert!(html.contains("<svg"));
    assert!(html.contains("/srv/trainer/make_fixtures.py:59 (forward)"));
}

#[test]
fn a_recording_gives_memory_over_time_with_its_thresholds_and_dumps() {
    let file = fixture("timeline/worker.hgt");
    let html = report(&[path_str(&file), "--no-timestamp"], "timeline.html");
    assert_self_contained(&html);
    assert!(html.contains("<h2>Memory over time</h2>"));
    assert!(html.contains("Host memory of the recorded processes"));
    // The thresholds are drawn and listed; the dump is marked on the chart and tabled.
    assert!(html.contains("act 120MiB"));
    assert!(html.contains(">dump 1<"));
    assert!(html.contains("python-hgd"));
    // The machine's memory is far above a small worker: named under the chart, not drawn.
    assert!(html.contains("above the chart: limit (physical memory)"));
    assert!(html.contains("The process exited with code 0"));
}

#[test]
fn reports_work_in_a_real_browser() {
    // Chromium and chromedriver come from Debian (.ci/run installs them).
    for tool in ["chromium", "chromedriver"] {
        assert!(
            Command::new(tool)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success()),
            "{tool} is needed: apt-get install chromium chromium-driver (.ci/run does)"
        );
    }
    let dir = temp_dir("report-browser");
    let files: Vec<String> = V8_FIXTURES
        .iter()
        .map(|name| path_str(&fixture(name)).to_owned())
        .collect();
    let pages = [
        (vec![files[1].clone()], "one-dump.html"),
        (files.clone(), "series.html"),
        (
            vec![path_str(&fixture("torch-cuda/oom_batch_growth.pickle.gz")).to_owned()],
            "gpu.html",
        ),
        (
            vec![path_str(&fixture("timeline/worker.hgt")).to_owned()],
            "timeline.html",
        ),
    ];
    let mut paths = Vec::new();
    for (inputs, name) in &pages {
        let out = dir.join(name);
        let mut args = vec!["report".to_owned()];
        args.extend(inputs.iter().cloned());
        args.extend(["-o".to_owned(), path_str(&out).to_owned()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        heapgraph_ok(&args);
        paths.push(path_str(&out).to_owned());
    }
    // Screenshots are kept under target/ to look at.
    let shots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/report-screenshots");
    let output = Command::new("python3")
        .arg(crate::support::repo_root().join("tests/browser/check_report.py"))
        .arg(&shots)
        .args(&paths)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.lines().count(), 4, "{stdout}");
    for line in stdout.lines() {
        let facts: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(facts["requests"].as_array().unwrap().len(), 1, "{line}");
        // Every table of two rows or more sorted both ways (the script fails otherwise).
        assert!(facts["sorted_tables"].as_u64().unwrap() >= 1, "{line}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
