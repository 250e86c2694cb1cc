//! The HTML report: self-contained (nothing fetched), bounded in size, the same bytes for the
//! same inputs, and holding what the issue asks for on real dumps.

use crate::support::{V8_FIXTURES, fixture, heapgraph_ok, need, path_str, temp_dir, tool};
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
    // Issue 22: a process that ended is not projected to the limit.
    assert!(!html.contains("reaches the limit"));
}

/// The retained bytes of `type_name` in `dump`, as `summary --format json` gives them.
fn retained_in(dump: &str, type_name: &str) -> u64 {
    let summary = crate::support::json(&["summary", dump, "--format", "json"]);
    summary["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["type"] == type_name)
        .map_or(0, |row| row["retained_size"].as_u64().unwrap())
}

/// The lines of data a page's charts draw (2 pixels wide; axes, grids and levels are thinner).
fn data_lines(html: &str) -> usize {
    html.split("<polyline")
        .skip(1)
        .filter(|rest| {
            rest.split('>')
                .next()
                .unwrap()
                .contains("stroke-width=\"2\"")
        })
        .count()
}

/// The texts of a page's SVG charts, in order.
fn svg_texts(html: &str) -> Vec<String> {
    html.split("<text")
        .skip(1)
        .filter_map(|rest| {
            let (_, inner) = rest.split_once('>')?;
            let (text, _) = inner.split_once("</text>")?;
            Some(text.trim().replace("&amp;", "&"))
        })
        .collect()
}

/// Issue 22: a comparison of two dumps is drawn as bars before and after (a line between two
/// points says nothing a bar does not), each labelled with its bytes in that dump, as
/// `summary` reads each dump; the page's title names both files; the notes follow the
/// headline.
#[test]
fn two_dumps_are_drawn_as_bars_before_and_after_under_a_title_naming_both() {
    let before = path_str(&fixture(V8_FIXTURES[0])).to_owned();
    let after = path_str(&fixture(V8_FIXTURES[1])).to_owned();
    let html = report(
        &["--baseline", &before, &after, "--no-timestamp"],
        "pair.html",
    );
    assert!(html.contains(&format!("<h1>Memory report: {before} → {after}</h1>")));
    assert!(html.contains(&format!("<title>heapgraph: {before} → {after}</title>")));
    assert!(html.contains("first dump: app-before.heapsnapshot.gz"));
    assert!(html.contains("last dump: app-after.heapsnapshot.gz"));
    assert_eq!(data_lines(&html), 0, "a line chart of two dumps");
    // The cache that grew has its two bars, and their labels are its bytes in each dump.
    let texts = svg_texts(&html);
    let at = texts
        .iter()
        .position(|text| text == "LeakyCache")
        .expect("LeakyCache has its bars");
    assert_eq!(
        texts[at + 1..at + 3],
        [
            heapgraph_report::human_bytes(retained_in(&before, "LeakyCache")),
            heapgraph_report::human_bytes(retained_in(&after, "LeakyCache")),
        ]
    );
    // Three dumps: lines, each dump a labelled point.
    let files: Vec<String> = V8_FIXTURES
        .iter()
        .map(|name| path_str(&fixture(name)).to_owned())
        .collect();
    let mut args: Vec<&str> = files.iter().map(String::as_str).collect();
    args.push("--no-timestamp");
    let series = report(&args, "three.html");
    assert!(series.contains(&format!(
        "<h1>Memory report: {} → {} (3 dumps)</h1>",
        files[0], files[2]
    )));
    assert_eq!(data_lines(&series), 8, "a line per type that grew");
    let texts = svg_texts(&series);
    for label in [
        "1 app-before.heapsnapshot.gz",
        "2 app-after.heapsnapshot.gz",
        "3 app-final.heapsnapshot.gz",
    ] {
        assert!(texts.iter().any(|text| text == label), "{label}: {texts:?}");
    }
}

/// Issue 22: the notes say how a file was read; the headline, what it means: it comes first.
#[test]
fn the_notes_follow_the_headline() {
    let html = report(
        &[path_str(&fixture("timeline/worker.hgt")), "--no-timestamp"],
        "notes.html",
    );
    let headline = html.find("<div class=\"headline\">").expect("a headline");
    let note = html.find("<div class=\"notes\">").expect("a note");
    assert!(headline < note);
    assert!(html[note..].contains("GPU sampling is off"));
}

/// Issue 22: lines that coincide are drawn once and named together. In the worker's recording
/// PSS and USS are within half a percent of the axis of each other at every sample (the
/// test's own reading of the samples, from `summary --format json`), RSS is not: the chart
/// has one line for the two, named "PSS ≈ USS (private)", and RSS alone.
#[test]
fn coinciding_lines_are_drawn_once_and_named_together() {
    let file = fixture("timeline/worker.hgt");
    let summary = crate::support::json(&["summary", path_str(&file), "--format", "json"]);
    let series = &summary["series"];
    let values = |name: &str| -> Vec<Option<f64>> {
        series[name]
            .as_array()
            .unwrap()
            .iter()
            .map(serde_json::Value::as_f64)
            .collect()
    };
    let (rss, pss, uss) = (
        values("rss_bytes"),
        values("pss_bytes"),
        values("uss_bytes"),
    );
    // The chart's axis reaches 8% over the highest line (the thresholds are below it).
    let top = rss.iter().flatten().copied().fold(0.0, f64::max) * 1.08;
    let apart = |a: &[Option<f64>], b: &[Option<f64>]| {
        a.iter()
            .zip(b)
            .filter_map(|pair| match pair {
                (Some(a), Some(b)) => Some((a - b).abs()),
                _ => None,
            })
            .fold(0.0, f64::max)
            / top
    };
    assert!(apart(&pss, &uss) <= 0.005, "{}", apart(&pss, &uss));
    assert!(apart(&rss, &pss) > 0.005, "{}", apart(&rss, &pss));
    let html = report(&[path_str(&file), "--no-timestamp"], "coincide.html");
    assert!(html.contains("</i>PSS ≈ USS (private)</span>"));
    assert!(html.contains("</i>RSS</span>"));
    assert!(!html.contains("</i>PSS</span>"));
    assert_eq!(data_lines(&html), 2, "RSS, and PSS with USS");
}

/// Runs `tests/browser/check_report.py` on `pages` (screenshots and PDFs under `shots`), and
/// returns its output.
fn check_in_browser(shots: &std::path::Path, pages: &[String]) -> std::process::Output {
    need("chromium");
    need("chromedriver");
    tool("python3")
        .arg(crate::support::repo_root().join("tests/browser/check_report.py"))
        .arg(shots)
        .args(pages)
        .output()
        .expect("python3 runs")
}

/// Two dumps of a real Python process, `before.hgd` and `after.hgd`, written by the dumper in
/// `fixtures/python/leaky_service.py` (objgraph's answers are not needed here).
fn python_dumps(dir: &std::path::Path) -> (String, String) {
    let status = tool("python3")
        .arg(crate::support::repo_root().join("fixtures/python/leaky_service.py"))
        .arg(dir)
        .arg("--no-oracle")
        .status()
        .expect("python3 runs");
    assert!(status.success(), "leaky_service.py failed");
    let path = |name: &str| path_str(&dir.join(name)).to_owned();
    (path("before.hgd"), path("after.hgd"))
}

/// Every kind of report, opened in Chromium: what a reader sees is checked there (no label cut
/// off or drawn over another, nothing wider than its box, every chart as wide as its card, the
/// notes after the headline, tables that sort, a page that prints, nothing fetched), and a
/// screenshot of each is kept under `target/report-screenshots/` to look at.
#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs chromium, chromedriver and python3"
)]
fn reports_work_in_a_real_browser() {
    let dir = temp_dir("report-browser");
    let v8: Vec<String> = V8_FIXTURES
        .iter()
        .map(|name| path_str(&fixture(name)).to_owned())
        .collect();
    let (py_before, py_after) = python_dumps(&dir.join("python"));
    let fixture = |name: &str| path_str(&fixture(name)).to_owned();
    let strings = |args: &[&str]| args.iter().map(|&arg| arg.to_owned()).collect::<Vec<_>>();
    let recording = fixture("timeline/worker.hgt");
    let pages: Vec<(Vec<String>, &str)> = vec![
        // One dump per runtime.
        (vec![v8[1].clone()], "v8.html"),
        (vec![fixture("java/default.hprof.gz")], "hprof.html"),
        (
            vec![path_str(crate::phd::phd_path()).to_owned()],
            "phd.html",
        ),
        (vec![py_after.clone()], "python.html"),
        // A series, and baseline pairs: lines over three dumps, bars before and after for two.
        (v8.clone(), "series.html"),
        (strings(&["--baseline", &v8[0], &v8[1]]), "v8-baseline.html"),
        (
            strings(&["--baseline", &py_before, &py_after]),
            "python-baseline.html",
        ),
        // A CUDA snapshot, and two compared.
        (
            vec![fixture("torch-cuda/oom_batch_growth.pickle.gz")],
            "cuda.html",
        ),
        (
            strings(&[
                "--baseline",
                &fixture("torch-cuda/train_release_a_leak.pickle.gz"),
                &fixture("torch-cuda/train_release_b_fixed.pickle.gz"),
            ]),
            "cuda-pair.html",
        ),
        // tracemalloc: one snapshot, and two compared.
        (
            vec![fixture("tracemalloc/after.tracemalloc")],
            "tracemalloc.html",
        ),
        (
            strings(&[
                "--baseline",
                &fixture("tracemalloc/before.tracemalloc"),
                &fixture("tracemalloc/after.tracemalloc"),
            ]),
            "tracemalloc-pair.html",
        ),
        // A recording, and a recording with a dump.
        (vec![recording.clone()], "recording.html"),
        (vec![recording, py_after], "recording-dump.html"),
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
    // Screenshots are kept under target/ to look at, this run's alone.
    let shots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/report-screenshots");
    std::fs::remove_dir_all(&shots).ok();
    let output = check_in_browser(&shots, &paths);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.lines().count(), pages.len(), "{stdout}");
    let mut charts = 0;
    for line in stdout.lines() {
        let facts: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(facts["requests"].as_array().unwrap().len(), 1, "{line}");
        // Every table of two rows or more sorted both ways (the script fails otherwise).
        assert!(facts["sorted_tables"].as_u64().unwrap() >= 1, "{line}");
        charts += facts["charts"].as_u64().unwrap();
        if facts["charts"].as_u64().unwrap() > 0 {
            assert!(facts["texts_checked"].as_u64().unwrap() > 5, "{line}");
        }
    }
    // The series, the two pairs of heap dumps, the CUDA trace, the two recordings.
    assert_eq!(charts, 6, "{stdout}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The browser's checks fail where they should: on a page whose chart label reaches outside
/// its chart, whose labels overlap, whose chart leaves most of its card empty, whose card is
/// narrower than its content, and whose note comes before the headline. (The page is made by
/// hand: no report of ours is broken this way any more.)
#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs chromium, chromedriver and python3"
)]
fn the_browser_checks_catch_what_a_reader_would_see_broken() {
    let dir = temp_dir("report-browser-broken");
    let lines: String = (0..12)
        .map(|i| format!("<line x1=\"{i}0\" y1=\"0\" x2=\"{i}0\" y2=\"90\" stroke=\"black\"/>"))
        .collect();
    let page = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>\
         .chart{{width:1000px;padding:6px}}.card{{width:120px}}</style></head><body><main>\
         <div class=\"notes\">note: read with care</div><div class=\"headline\">What grew</div>\
         <div class=\"chart\"><svg width=\"400\" height=\"200\" viewBox=\"0 0 400 200\" \
         xmlns=\"http://www.w3.org/2000/svg\">{lines}\
         <text x=\"370\" y=\"100\" font-size=\"14\">2 end.hgd</text>\
         <text x=\"20\" y=\"50\" font-size=\"14\">collections.deque</text>\
         <text x=\"30\" y=\"52\" font-size=\"14\">numpy.ndarray</text></svg></div>\
         <div class=\"card\">__main__.InferenceRequest.pending.collections.deque</div>\
         </main></body></html>"
    );
    let path = dir.join("broken.html");
    std::fs::write(&path, page).unwrap();
    let output = check_in_browser(&dir, &[path_str(&path).to_owned()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    for problem in [
        "chart 1: \"2 end.hgd\" reaches outside the chart",
        "chart 1: \"collections.deque\" overlaps \"numpy.ndarray\"",
        "chart 1 is 400 px wide in a card of 1000",
        "card overflows",
        "a note comes before the headline",
    ] {
        assert!(stderr.contains(problem), "{problem} not caught: {stderr}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
