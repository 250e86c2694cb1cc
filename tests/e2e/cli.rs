//! The verbs on the real V8 fixtures, checked against facts that follow from how
//! `fixtures/v8/make_fixtures.js` built the heap.

use crate::support::{V8_FIXTURES, fixture, heapgraph_ok, json, path_str, temp_dir};
// `flate2` reads the fixtures themselves, as an oracle independent of our importers.
use serde_json::Value;
use std::path::Path;

fn expected() -> Value {
    let text = std::fs::read_to_string(fixture("v8/expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json parses")
}

fn type_row<'a>(summary: &'a Value, type_name: &str) -> &'a Value {
    summary["types"]
        .as_array()
        .expect("types")
        .iter()
        .find(|row| row["type"] == type_name)
        .unwrap_or_else(|| panic!("no row for {type_name}"))
}

#[test]
fn summary_counts_the_planted_classes() {
    let expected = expected();
    for name in V8_FIXTURES {
        let path = fixture(name);
        let summary = json(&["summary", path_str(&path), "--format", "json"]);
        assert_eq!(summary["schema"], "heapgraph.summary/1");
        let stem = name
            .trim_start_matches("v8/")
            .trim_end_matches(".heapsnapshot.gz");
        let counts = expected["snapshots"][stem]["counts"]
            .as_object()
            .expect("counts");
        for (class, count) in counts {
            // A class with no instances left has no row.
            let rows = summary["types"].as_array().expect("types");
            let row = rows.iter().find(|row| row["type"] == *class);
            let found = row.map_or(0, |row| row["count"].as_u64().expect("count"));
            assert_eq!(Some(found), count.as_u64(), "{name}: count of {class}");
        }
        let total = summary["total_shallow_size"].as_u64().expect("total");
        let reachable = summary["reachable_size"].as_u64().expect("reachable");
        let unreachable = summary["unreachable_size"].as_u64().expect("unreachable");
        assert_eq!(reachable + unreachable, total, "{name}: sizes add up");
        // The cache holds every planted request, its headers and its body.
        let cache = type_row(&summary, "LeakyCache")["retained_size"]
            .as_u64()
            .expect("cache");
        let requests = type_row(&summary, "LeakyRequest")["shallow_size"]
            .as_u64()
            .expect("requests");
        let headers = type_row(&summary, "RequestHeaders")["shallow_size"]
            .as_u64()
            .expect("headers");
        assert!(
            cache >= requests + headers,
            "{name}: cache retains {cache} < {requests} + {headers}"
        );
    }
}

#[test]
fn who_holds_a_planted_request_names_the_cache() {
    let path = fixture("v8/app-after.heapsnapshot.gz");
    let holders = json(&[
        "who-holds",
        path_str(&path),
        "--type",
        "LeakyRequest",
        "--format",
        "json",
    ]);
    assert_eq!(holders["schema"], "heapgraph.holders/1");
    assert_eq!(holders["target"]["type"], "LeakyRequest");
    assert_eq!(holders["matches"], 300);
    let chain: Vec<&str> = holders["dominator_chain"]
        .as_array()
        .expect("chain")
        .iter()
        .map(|o| o["type"].as_str().expect("type"))
        .collect();
    assert!(chain.contains(&"LeakyCache"), "dominators {chain:?}");
    // One chain per root: from `global`, then from V8's own root groups ("(GC roots)" and
    // Node's environment, ten references long).
    let paths = holders["paths"].as_array().expect("paths");
    assert_eq!(paths.len(), 3, "{holders:#}");
    assert_eq!(paths[0][1]["type"], "global");
    let shortest = json(&[
        "who-holds",
        path_str(&path),
        "--type",
        "LeakyRequest",
        "--order",
        "shortest",
        "--format",
        "json",
    ]);
    assert_eq!(shortest["paths"].as_array().map(Vec::len), Some(3));
    for path in paths
        .iter()
        .chain(shortest["paths"].as_array().expect("paths"))
    {
        let steps = path.as_array().expect("steps");
        assert_eq!(
            steps[0]["edge"],
            Value::Null,
            "the root has no edge into it"
        );
        assert_eq!(steps.last().expect("target")["id"], holders["target"]["id"]);
        assert!(
            steps.iter().any(|s| s["type"] == "LeakyCache"),
            "chain misses the cache: {path}"
        );
        assert!(
            steps
                .iter()
                .any(|s| s["type"] == "Map" && s["edge"] == "entries"),
            "chain misses LeakyCache.entries: {path}"
        );
    }
    // The shortest chain goes through the global's own property; the others through the
    // property cell that V8 also keeps for it.
    let shortest = paths[0].as_array().expect("steps");
    assert_eq!(shortest[1]["type"], "global");
    assert_eq!(shortest[2]["edge"], "requestCache");
    // Asking by id gives the same answer as by type; all three spellings agree.
    let id = holders["target"]["id"].as_u64().expect("id");
    for spelling in [format!("@{id}"), id.to_string(), format!("{id:#x}")] {
        let by_id = json(&["who-holds", path_str(&path), &spelling, "--format", "json"]);
        assert_eq!(by_id["dominator_chain"], holders["dominator_chain"]);
    }
    let text = heapgraph_ok(&["who-holds", path_str(&path), &format!("@{id}")]);
    assert!(
        text.contains("global.requestCache → LeakyCache.entries → Map"),
        "{text}"
    );
}

#[test]
fn the_chain_links_dominate_each_other() {
    let path = fixture("v8/app-before.heapsnapshot.gz");
    let top = json(&[
        "top",
        path_str(&path),
        "--by",
        "retained",
        "-n",
        "50",
        "--format",
        "json",
    ]);
    assert_eq!(top["schema"], "heapgraph.top/1");
    let objects = top["objects"].as_array().expect("objects");
    assert_eq!(objects.len(), 50);
    let sizes: Vec<u64> = objects
        .iter()
        .map(|o| o["retained_size"].as_u64().expect("size"))
        .collect();
    assert!(
        sizes.windows(2).all(|w| w[0] >= w[1]),
        "ranked by retained size"
    );
    // The head of the 2000-link chain retains all links: it is among the biggest holders.
    let summary = json(&["summary", path_str(&path), "--format", "json"]);
    let links = type_row(&summary, "ChainLink");
    assert_eq!(links["count"], 2000);
    let head = objects
        .iter()
        .find(|o| o["type"] == "ChainLink")
        .expect("the chain head ranks");
    assert!(head["retained_size"].as_u64() >= links["shallow_size"].as_u64());
    // ChainLink's type total counts the nested links once: it equals the head's retained size.
    assert_eq!(links["retained_size"], head["retained_size"]);
}

#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs node and memlab")]
fn top_json_gives_the_objects_held_that_the_text_shows_and_memlab_implies() {
    // The oracle: the size of each object's subtree in memlab's dominator tree.
    let name = V8_FIXTURES[1];
    let path = fixture(name);
    let top = json(&["top", path_str(&path), "--format", "json", "-n", "10"]);
    let text = heapgraph_ok(&["top", path_str(&path), "-n", "10"]);
    let memlab = crate::oracle::run_oracle("memlab_oracle.js", name);
    let ids = crate::oracle::numbers(&memlab, "ids");
    let dominator = crate::oracle::numbers(&memlab, "dominator");
    let ordinal: rustc_hash::FxHashMap<i64, usize> =
        ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let parent: Vec<usize> = dominator.iter().map(|id| ordinal[id]).collect();
    let root = (0..parent.len()).find(|&i| parent[i] == i).expect("root");
    // Subtree sizes, children before parents: order the nodes by depth, deepest first.
    let mut depth = vec![usize::MAX; parent.len()];
    depth[root] = 0;
    for start in 0..parent.len() {
        let mut chain = vec![start];
        while depth[*chain.last().unwrap()] == usize::MAX {
            chain.push(parent[*chain.last().unwrap()]);
        }
        let mut at = depth[chain.pop().unwrap()];
        while let Some(node) = chain.pop() {
            at += 1;
            depth[node] = at;
        }
    }
    let mut order: Vec<usize> = (0..parent.len()).collect();
    order.sort_by_key(|&node| std::cmp::Reverse(depth[node]));
    let mut held = vec![1u64; parent.len()];
    for node in order {
        if node != root {
            held[parent[node]] += held[node];
        }
    }
    let rows: Vec<&str> = text.lines().skip(4).collect();
    let objects = top["objects"].as_array().expect("objects");
    assert_eq!(objects.len(), 10);
    for (object, row) in objects.iter().zip(rows) {
        let id = object["id"].as_i64().expect("id");
        let count = object["retained_count"].as_u64().expect("retained_count");
        assert_eq!(count, held[ordinal[&id]], "@{id}");
        assert!(row.trim_start().starts_with(&format!("@{id} ")), "{row}");
        let columns: Vec<&str> = row.split_whitespace().collect();
        // `objects held` is the second column from the right, before `distance`.
        assert_eq!(columns[columns.len() - 2], count.to_string(), "{row}");
    }
}

#[test]
fn dominators_tree_respects_depth_and_share() {
    let path = fixture("v8/app-after.heapsnapshot.gz");
    let tree = json(&[
        "dominators",
        path_str(&path),
        "--depth",
        "4",
        "--min-share",
        "1%",
        "--format",
        "json",
    ]);
    let nodes = tree["nodes"].as_array().expect("nodes");
    assert_eq!(nodes[0]["depth"], 0);
    for node in &nodes[1..] {
        assert!(node["depth"].as_u64().expect("depth") <= 4);
        assert!(node["share"].as_f64().expect("share") >= 0.01);
    }
    let text = heapgraph_ok(&["dominators", path_str(&path), "--depth", "2"]);
    assert!(text.contains("dominator tree"), "{text}");
}

#[test]
fn converted_dumps_answer_the_same() {
    let dir = temp_dir("convert");
    for name in V8_FIXTURES {
        let source = fixture(name);
        let native = dir.join(format!("{}.hgd", name.replace('/', "_")));
        heapgraph_ok(&["convert", path_str(&source), "-o", path_str(&native)]);
        for verb in [
            &["summary"][..],
            &["top", "-n", "30"],
            &["who-holds", "--type", "LeakyCache"],
            &["dominators"],
        ] {
            let mut from_source = json(&[verb, &[path_str(&source), "--format", "json"]].concat());
            let mut from_native = json(&[verb, &[path_str(&native), "--format", "json"]].concat());
            from_source["dump"] = Value::Null;
            from_native["dump"] = Value::Null;
            assert_eq!(
                from_source, from_native,
                "{name}: {verb:?} differs after convert"
            );
        }
    }
}

/// The text people read: exact wording, alignment and units are part of the contract.
#[test]
fn text_output_reads_as_designed() {
    let path = fixture("v8/app-after.heapsnapshot.gz");
    let file = path_str(&path);
    let settings = {
        let mut settings = insta::Settings::clone_current();
        settings.add_filter(&regex_escape(file), "[FIXTURE]");
        settings
    };
    settings.bind(|| {
        insta::assert_snapshot!("summary", heapgraph_ok(&["summary", file, "-n", "12"]));
        insta::assert_snapshot!("top", heapgraph_ok(&["top", file, "-n", "8"]));
        insta::assert_snapshot!(
            "who_holds",
            heapgraph_ok(&["who-holds", file, "--type", "LeakyRequest", "--paths", "2"])
        );
        insta::assert_snapshot!(
            "dominators",
            heapgraph_ok(&["dominators", file, "--depth", "3", "--min-share", "2%"])
        );
    });
}

/// A recording's summary: the same contract, on the committed real timeline.
#[test]
fn a_recording_reads_as_designed() {
    let path = fixture("timeline/worker.hgt");
    let file = path_str(&path);
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(&regex_escape(file), "[FIXTURE]");
    settings.bind(|| {
        insta::assert_snapshot!("timeline_summary", heapgraph_ok(&["summary", file]));
    });
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

/// `summary` counts objects and `convert` says how many nodes it wrote of which kind (issue 22,
/// item 5): checked against the snapshot itself, read with serde_json, where V8 names the
/// `synthetic` nodes (the root and its groups) by their node type.
#[test]
fn summary_and_convert_agree_on_objects_and_synthetic_nodes() {
    let path = fixture("v8/app-after.heapsnapshot.gz");
    let file = std::fs::File::open(&path).expect("fixture");
    let snapshot: Value =
        serde_json::from_reader(flate2::read::GzDecoder::new(file)).expect("JSON");
    let meta = &snapshot["snapshot"]["meta"];
    let fields = meta["node_fields"].as_array().expect("node_fields").len();
    let types = meta["node_types"][0].as_array().expect("node types");
    let synthetic_type = types
        .iter()
        .position(|name| name == "synthetic")
        .expect("a synthetic node type");
    let nodes = snapshot["nodes"].as_array().expect("nodes");
    let synthetic = nodes
        .chunks(fields)
        .filter(|node| node[0].as_u64() == Some(synthetic_type as u64))
        .count();
    let objects = nodes.len() / fields - synthetic;
    assert!(synthetic > 1);
    let summary = json(&["summary", path_str(&path), "--format", "json"]);
    assert_eq!(summary["objects"].as_u64(), Some(objects as u64));
    let dir = temp_dir("convert-counts");
    let out = dir.join("app-after.hgd");
    let said = heapgraph_ok(&["convert", path_str(&path), "-o", path_str(&out)]);
    assert!(
        said.contains(&format!(
            "({objects} objects, {synthetic} synthetic root nodes that `summary` leaves out, "
        )),
        "{said}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `-n` is one option on every verb that lists rows: the same name, meaning and default.
#[test]
fn every_verb_takes_n_rows_with_the_same_default() {
    for verb in [
        "summary", "top", "diff", "gpu", "leaking", "leaks", "strings",
    ] {
        let help = heapgraph_ok(&[verb, "--help"]);
        let line = help
            .lines()
            .skip_while(|line| !line.trim_start().starts_with("-n <N>"))
            .nth(1)
            .unwrap_or_else(|| panic!("{verb} has no -n <N>:\n{help}"));
        assert!(line.contains("(20 by default"), "{verb}: {line}");
        assert!(!help.contains("--types"), "{verb}");
    }
    // gpu lists 20 rows too: the OOM snapshot has 67 active blocks (an independent Python
    // reading of the pickle counts them).
    let expected: Value = serde_json::from_slice(
        &std::fs::read(fixture("torch-cuda/expected.json")).expect("expected.json"),
    )
    .expect("JSON");
    let file = fixture("torch-cuda/oom_batch_growth.pickle.gz");
    let gpu = json(&["gpu", path_str(&file), "--format", "json"]);
    assert_eq!(
        expected["files"]["oom_batch_growth"]["active_blocks"].as_u64(),
        Some(67)
    );
    assert_eq!(gpu["largest_blocks"].as_array().map(Vec::len), Some(20));
    let summary = json(&["summary", path_str(&file), "--format", "json"]);
    assert_eq!(summary["largest_blocks"], gpu["largest_blocks"]);
}

/// The usage lines say what each argument is.
#[test]
fn usages_name_their_arguments() {
    let usage = |verb: &str| {
        let help = heapgraph_ok(&[verb, "--help"]);
        help.lines()
            .find_map(|line| line.strip_prefix("Usage: "))
            .unwrap_or_else(|| panic!("{verb}: no usage"))
            .to_owned()
    };
    assert_eq!(
        usage("who-holds"),
        "heapgraph who-holds [OPTIONS] <FILE> <OBJECT | --type NAME>"
    );
    assert_eq!(
        usage("leaks"),
        "heapgraph leaks [OPTIONS] <BASELINE> <TARGET> <FINAL>"
    );
    assert_eq!(usage("report"), "heapgraph report [OPTIONS] <FILE>...");
    // And every timeout is a duration, as every other one.
    let capture = heapgraph_ok(&["capture", "python", "--help"]);
    assert!(capture.contains("--timeout <DURATION>"), "{capture}");
}

/// `--timings` lists the passes that ran, on stderr, and changes nothing on stdout: on a Java
/// dump read from its file (the parse's steps, the dominator tree) and from its `.hgd` (the
/// stored analysis adopted, no dominator pass).
#[test]
fn timings_list_the_passes_that_ran_and_leave_the_answer_unchanged() {
    let dump = fixture("java/default.hprof.gz");
    let hgd = temp_dir("timings").join("default.hgd");
    heapgraph_ok(&["convert", path_str(&dump), "-o", path_str(&hgd)]);
    let passes = |file: &str| {
        let plain = heapgraph_ok(&["summary", file, "--format", "json"]);
        let output = crate::support::heapgraph(&["--timings", "summary", file, "--format", "json"]);
        assert!(output.status.success(), "{file}: --timings failed");
        assert_eq!(
            String::from_utf8(output.stdout).expect("utf-8"),
            plain,
            "{file}"
        );
        let stderr = String::from_utf8(output.stderr).expect("utf-8");
        let mut lines = stderr.lines();
        let heading = lines.next().expect("a heading");
        assert!(heading.starts_with("passes ("), "{heading}");
        lines
            .map(|line| {
                // "    0.012 s     0.003 s     12 MiB     15 MiB  hprof: id lookup index"
                let fields: Vec<&str> = line.split_whitespace().collect();
                assert!(
                    fields.len() > 8
                        && fields[1] == "s"
                        && fields[3] == "s"
                        && fields[5] == "MiB"
                        && fields[7] == "MiB",
                    "{line}"
                );
                let start: f64 = fields[0].parse().expect("a start");
                let wall: f64 = fields[2].parse().expect("a wall time");
                assert!(start >= 0.0 && wall >= 0.0, "{line}");
                let resident: u64 = fields[4].parse().expect("resident MiB (Linux)");
                let peak: u64 = fields[6].parse().expect("peak MiB (Linux)");
                assert!(resident > 0 && peak >= resident, "{line}");
                fields[8..].join(" ")
            })
            .collect::<Vec<String>>()
    };
    let lists_all = |passes: &[String], wanted: &[&str]| {
        for pass in wanted {
            assert!(
                passes.iter().any(|name| name == pass),
                "{pass} not in {passes:?}"
            );
        }
    };
    let from_dump = passes(path_str(&dump));
    lists_all(
        &from_dump,
        &[
            "read the dump",
            "hprof: objects and references",
            "hprof: id lookup index",
            "graph checked",
            "dominator tree and retained sizes",
            "dominators: depth-first search",
            "summary view",
            "suspects",
        ],
    );
    let from_hgd = passes(path_str(&hgd));
    lists_all(
        &from_hgd,
        &[
            "read the .hgd",
            "stored analysis adopted",
            "summary view",
            "suspects",
        ],
    );
    assert!(
        !from_hgd
            .iter()
            .any(|name| name == "dominator tree and retained sizes"
                || name.starts_with("dominators:")),
        "the .hgd's analysis is adopted, not computed: {from_hgd:?}"
    );
    // The findings' chains are read up the stored chain parents and their steps' distances
    // are stored: no search of the graph, no reverse edges.
    for pass in ["chain parents", "distances", "chain index", "reverse edges"] {
        assert!(
            !from_hgd.iter().any(|name| name == pass),
            "{pass} in {from_hgd:?}"
        );
    }
    // The chains are read up the chain parents, searched beside the dominator pass; the
    // summary's findings show no distances, so none are searched for.
    lists_all(&from_dump, &["chain parents"]);
    assert!(
        !from_dump.iter().any(|name| name == "distances"),
        "distances in {from_dump:?}"
    );
}

/// Where the graph's columns are parked (`summary` in memory), the dominator pass's predecessor
/// lists, its peak, begin only once the chain parents searched for beside the pass are parked:
/// on the real Java dumps their search can outlast the pass's own, and ended beside the lists
/// (docs/performance.md, "Real applications' dumps", thirtieth session); the pass waits right
/// after its search, before it gathers its numbers. It records its wait even where the search
/// ended first and it waited no time.
#[test]
fn the_predecessor_lists_wait_for_the_chain_parents_to_be_parked() {
    for dump in ["java/javac.hprof.gz", "v8/app-after.heapsnapshot.gz"] {
        let dump = fixture(dump);
        let args = ["--timings", "summary", path_str(&dump), "--format", "json"];
        let output = crate::support::heapgraph(&args);
        let stderr = String::from_utf8(output.stderr).expect("utf-8");
        assert!(output.status.success(), "{dump:?}: {stderr}");
        let span =
            |name: &str| pass_span(&stderr, name).unwrap_or_else(|| panic!("{name} in {stderr}"));
        let parked = span("chain parents parked");
        let waited = span("waiting for the chain parents");
        let lists = span("dominators: predecessor lists");
        // Each printed to the millisecond.
        let at_most = |a: f64, b: f64| a <= b + 0.002;
        assert!(
            at_most(parked.1, waited.1) && at_most(waited.1, lists.0),
            "{dump:?}: {stderr}"
        );
    }
}

/// `summary --kind` with a kind the dump has no object of names the kinds it has, and fails
/// before any analysis is printed.
#[test]
fn summary_of_a_kind_the_dump_lacks_names_the_kinds_it_has() {
    let dump = fixture("v8/app-after.heapsnapshot.gz");
    let output = crate::support::heapgraph(&["summary", path_str(&dump), "--kind", "no-such-kind"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8(output.stderr).expect("utf-8");
    assert!(
        stderr.contains("no object is of kind \"no-such-kind\"")
            && stderr.contains("the kinds in this dump are")
            && stderr.contains("string"),
        "{stderr}"
    );
}

/// The start and the end, in seconds, of the pass `name` in a `--timings` table.
fn pass_span(stderr: &str, name: &str) -> Option<(f64, f64)> {
    let line = stderr
        .lines()
        .find(|line| line.trim_end().ends_with(name))?;
    let mut fields = line.split_whitespace();
    let start: f64 = fields.next()?.parse().ok()?;
    let wall: f64 = fields.nth(1)?.parse().ok()?;
    Some((start, start + wall))
}

/// `--spill always` puts the large blocks in unnamed files under `--temp-dir` (every block of
/// 64 KiB and more here, where the dumps are small) and changes no answer: `summary`, `top`
/// and `convert`'s file are byte for byte those of a run in memory. `summary` searches for
/// its chains' parents after the dominator pass, not beside it, where memory is the bound.
/// The files are gone when the run ends, and a directory where none can be made is refused,
/// named.
#[test]
fn spilled_columns_give_the_answers_kept_in_memory() {
    let dir = temp_dir("spill");
    let spill_dir = dir.join("spill");
    std::fs::create_dir_all(&spill_dir).expect("the spill directory");
    let spilling = [
        "--spill",
        "always",
        "--spill-from",
        "65536",
        "--temp-dir",
        path_str(&spill_dir),
        "--timings",
    ];
    for dump in ["java/javac.hprof.gz", "v8/app-after.heapsnapshot.gz"] {
        let dump = fixture(dump);
        let hgd_in_memory = dir.join("in-memory.hgd");
        let hgd_spilled = dir.join("spilled.hgd");
        // Each run's arguments, and for `convert` the files the two runs write.
        type Outputs<'a> = Option<(&'a Path, &'a Path)>;
        let runs: [(&[&str], Outputs); 3] = [
            (&["summary", path_str(&dump), "--format", "json"], None),
            (
                &["top", path_str(&dump), "--format", "json", "-n", "50"],
                None,
            ),
            (
                &["convert", path_str(&dump), "-o"],
                Some((&hgd_in_memory, &hgd_spilled)),
            ),
        ];
        for (args, outputs) in runs {
            let mut in_memory = args.to_vec();
            let mut spilled = [&spilling[..], args].concat();
            if let Some((memory_file, spilled_file)) = outputs {
                in_memory.push(path_str(memory_file));
                spilled.push(path_str(spilled_file));
            }
            let expected = heapgraph_ok(&in_memory);
            let output = crate::support::heapgraph(&spilled);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success(), "{spilled:?}: {stderr}");
            let mut stdout = String::from_utf8(output.stdout).expect("utf-8");
            if let Some((memory_file, spilled_file)) = outputs {
                stdout = stdout.replace(path_str(spilled_file), path_str(memory_file));
            }
            assert_eq!(stdout, expected, "{spilled:?}");
            let blocks: usize = stderr
                .lines()
                .find_map(|line| line.strip_prefix("spilled: "))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|count| count.parse().ok())
                .unwrap_or_else(|| panic!("no spilled line in {stderr}"));
            assert!(blocks > 0, "{spilled:?} spilled nothing: {stderr}");
            if args[0] == "summary" {
                let pass = |name| {
                    pass_span(&stderr, name).unwrap_or_else(|| panic!("no {name} in {stderr}"))
                };
                let (_, dominators_end) = pass("dominator tree and retained sizes");
                let (chains_start, _) = pass("chain parents");
                // The table rounds each time to the millisecond.
                assert!(
                    chains_start + 0.002 >= dominators_end,
                    "the chain parents beside the dominator pass: {stderr}"
                );
            }
            if let Some((memory_file, spilled_file)) = outputs {
                assert!(
                    std::fs::read(memory_file).expect("the .hgd")
                        == std::fs::read(spilled_file).expect("the spilled run's .hgd"),
                    "{spilled:?}: the .hgd differs"
                );
            }
            assert_eq!(
                std::fs::read_dir(&spill_dir)
                    .expect("the spill directory")
                    .count(),
                0,
                "the spilled blocks' files outlive the run"
            );
        }
    }
    let missing = dir.join("no-such-directory");
    let output = crate::support::heapgraph(&[
        "--spill",
        "always",
        "--temp-dir",
        path_str(&missing),
        "summary",
        path_str(&fixture("java/javac.hprof.gz")),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot make a temporary file in")
            && stderr.contains(path_str(&missing))
            && stderr.contains("--temp-dir"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
