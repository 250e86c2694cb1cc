//! Golden JSON: every `heapgraph.*/1` schema, written on one committed fixture per runtime
//! (V8, Java, tracemalloc, a CUDA snapshot, a recording), kept as insta snapshots, so that a
//! change to the contract shows in review; and every field those documents hold is documented
//! in `docs/json.md`, and every field `docs/json.md` lists for a schema appears in one of them.
//! The Python dump is written afresh by the peers tier (its ids and sizes change from run to
//! run), so its golden keeps the shape only.

use crate::support::{heapgraph_ok, repo_root, temp_dir, tool};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const V8_BEFORE: &str = "fixtures/v8/app-before.heapsnapshot.gz";
const V8: &str = "fixtures/v8/app-after.heapsnapshot.gz";
const V8_FINAL: &str = "fixtures/v8/app-final.heapsnapshot.gz";
const JAVA: &str = "fixtures/java/default.hprof.gz";
const TRACEMALLOC_BEFORE: &str = "fixtures/tracemalloc/before.tracemalloc";
const TRACEMALLOC: &str = "fixtures/tracemalloc/after.tracemalloc";
const CUDA_OOM: &str = "fixtures/torch-cuda/oom_batch_growth.pickle.gz";
const CUDA_A: &str = "fixtures/torch-cuda/train_release_a_leak.pickle.gz";
const CUDA_B: &str = "fixtures/torch-cuda/train_release_b_fixed.pickle.gz";
const TIMELINE: &str = "fixtures/timeline/worker.hgt";

/// Each golden: its name, and the arguments (relative paths, so `dump.file` is the same on
/// every machine; the tests run in the repository's root).
const GOLDENS: &[(&str, &[&str])] = &[
    ("v8_summary", &["summary", V8, "-n", "3"]),
    ("v8_top", &["top", V8, "-n", "3"]),
    (
        "v8_holders",
        &["who-holds", V8, "--type", "LeakyRequest", "--paths", "2"],
    ),
    (
        "v8_dominators",
        &["dominators", V8, "--depth", "2", "--min-share", "5%"],
    ),
    ("v8_suspects", &["suspects", V8]),
    ("v8_strings", &["strings", V8, "-n", "3"]),
    ("v8_diff", &["diff", V8_BEFORE, V8, "-n", "3"]),
    ("v8_leaks", &["leaks", V8_BEFORE, V8, V8_FINAL, "-n", "3"]),
    ("java_summary", &["summary", JAVA, "-n", "3"]),
    ("java_top", &["top", JAVA, "-n", "3"]),
    (
        "java_holders",
        &[
            "who-holds",
            JAVA,
            "--type",
            "com.example.Session",
            "--paths",
            "2",
        ],
    ),
    (
        "java_dominators",
        &["dominators", JAVA, "--depth", "2", "--min-share", "5%"],
    ),
    ("java_suspects", &["suspects", JAVA]),
    (
        "java_holders_soft",
        &[
            "who-holds",
            "fixtures/java/references.hprof.gz",
            "--type",
            "com.example.SoftOnly",
            "--paths",
            "1",
        ],
    ),
    (
        "java_paths",
        &["paths", JAVA, "--type", "com.example.Session", "-n", "3"],
    ),
    (
        "java_dominated_by",
        &[
            "dominated-by",
            JAVA,
            "--type",
            "com.example.Session",
            "--skip",
            "java.util.*",
        ],
    ),
    ("java_waste", &["waste", JAVA, "-n", "3"]),
    (
        "java_groups",
        &["summary", JAVA, "--group-by", "package", "-n", "3"],
    ),
    (
        "java_strings",
        &["strings", JAVA, "--duplicates", "-n", "3"],
    ),
    ("tracemalloc_summary", &["summary", TRACEMALLOC, "-n", "3"]),
    (
        "tracemalloc_top",
        &["top", TRACEMALLOC, "--by", "traceback", "-n", "3"],
    ),
    (
        "tracemalloc_diff",
        &["diff", TRACEMALLOC_BEFORE, TRACEMALLOC, "-n", "3"],
    ),
    ("cuda_gpu", &["gpu", CUDA_OOM, "-n", "3", "--timeline"]),
    ("cuda_top", &["top", CUDA_A, "-n", "3"]),
    ("cuda_diff", &["diff", CUDA_B, CUDA_A, "-n", "3"]),
    ("timeline_summary", &["summary", TIMELINE]),
];

fn document(args: &[&str]) -> (String, Value) {
    let mut args = args.to_vec();
    args.extend(["--format", "json"]);
    let text = heapgraph_ok(&args);
    let value = serde_json::from_str(&text).expect("valid JSON");
    (text, value)
}

#[test]
fn every_schema_on_one_fixture_per_runtime_is_as_committed_and_documented() {
    let mut by_schema: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    for (name, args) in GOLDENS {
        let (text, value) = document(args);
        insta::assert_snapshot!(*name, text);
        let schema = value["schema"].as_str().expect("a schema").to_owned();
        by_schema
            .entry(schema)
            .or_default()
            .push(((*name).to_owned(), value));
    }
    // `leaking` reads Python dumps only: its golden is the peers tier's.
    let expected: BTreeSet<&str> = SCHEMAS
        .iter()
        .copied()
        .filter(|s| *s != "heapgraph.leaking/1")
        .collect();
    let written: BTreeSet<&str> = by_schema.keys().map(String::as_str).collect();
    assert_eq!(written, expected, "a schema without its golden");
    let problems: Vec<String> = by_schema
        .iter()
        .flat_map(|(schema, documents)| check_documented(schema, documents))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The Python dump of `fixtures/python/leaky_service.py`, written now: `summary`, `who-holds`
/// and `leaking` (the one schema only Python dumps have), with every number, id and string
/// value replaced by its type and every array cut to its first element, so the golden holds
/// the shape, which does not change from run to run.
#[test]
#[cfg_attr(not(feature = "peers"), ignore = "peers tier: needs python3")]
fn the_python_documents_keep_their_shape_and_are_documented() {
    let dir = temp_dir("golden-python");
    let status = tool("python3")
        .arg(repo_root().join("fixtures/python/leaky_service.py"))
        .arg(&dir)
        .arg("--no-oracle")
        .status()
        .expect("python3 runs");
    assert!(status.success(), "leaky_service.py failed");
    let dump = dir.join("after.hgd");
    let dump = dump.to_str().expect("utf-8 path");
    let mut by_schema: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    for (name, args) in [
        ("python_summary", vec!["summary", dump, "-n", "3"]),
        (
            "python_holders",
            vec![
                "who-holds",
                dump,
                "--type",
                "__main__.Request",
                "--paths",
                "2",
            ],
        ),
        ("python_leaking", vec!["leaking", dump, "-n", "3"]),
    ] {
        let (_, value) = document(&args);
        let shape = shape(&value);
        insta::assert_snapshot!(name, serde_json::to_string_pretty(&shape).unwrap());
        let schema = value["schema"].as_str().expect("a schema").to_owned();
        by_schema
            .entry(schema)
            .or_default()
            .push((name.to_owned(), value));
    }
    for (schema, documents) in &by_schema {
        let documented = documented(schema);
        for (name, value) in documents {
            let mut keys = BTreeSet::new();
            keys_of(value, &mut keys);
            let missing: Vec<_> = keys
                .iter()
                .filter(|key| !is_documented(&documented, key))
                .collect();
            assert!(
                missing.is_empty(),
                "{name}: fields of {schema} that docs/json.md does not document: {missing:?}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The value with its leaves replaced by their JSON type (the schema string kept) and arrays
/// cut to their first element.
fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let value = if key == "schema" {
                        value.clone()
                    } else {
                        shape(value)
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().take(1).map(shape).collect()),
        Value::String(_) => Value::from("<string>"),
        Value::Number(_) => Value::from("<number>"),
        Value::Bool(_) => Value::from("<bool>"),
        Value::Null => Value::Null,
    }
}

/// Every schema `docs/json.md` has a section for.
const SCHEMAS: [&str; 16] = [
    "heapgraph.summary/1",
    "heapgraph.top/1",
    "heapgraph.holders/1",
    "heapgraph.paths/1",
    "heapgraph.immediate_dominators/1",
    "heapgraph.dominators/1",
    "heapgraph.suspects/1",
    "heapgraph.strings/1",
    "heapgraph.waste/1",
    "heapgraph.groups/1",
    "heapgraph.sites/1",
    "heapgraph.gpu/1",
    "heapgraph.diff/1",
    "heapgraph.leaking/1",
    "heapgraph.leaks/1",
    "heapgraph.timeline/1",
];

/// The schemas only `heapgraph serve`'s API answers with (`docs/api.md`); `tests/e2e/serve.rs`
/// checks them against the CLI's answers.
const SERVE_SCHEMAS: [&str; 4] = [
    "heapgraph.instances/1",
    "heapgraph.references/1",
    "heapgraph.children/1",
    "heapgraph.error/1",
];

/// The schema only `heapgraph mcp` answers with (`docs/mcp.md`); `tests/e2e/mcp.rs` and its
/// Python client check it.
const MCP_SCHEMAS: [&str; 1] = ["heapgraph.opened/1"];

#[test]
fn json_md_has_a_section_for_every_schema_and_no_other() {
    let sections: BTreeSet<String> = sections()
        .into_keys()
        .filter(|heading| heading.starts_with("`heapgraph."))
        .flat_map(|heading| {
            heading
                .split(", ")
                .map(|name| name.trim_matches('`').to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    let schemas: BTreeSet<String> = SCHEMAS
        .iter()
        .chain(&SERVE_SCHEMAS)
        .chain(&MCP_SCHEMAS)
        .map(|s| (*s).to_owned())
        .collect();
    assert_eq!(sections, schemas);
}

/// `docs/json.md` by its `## ` sections: heading to the lines below it.
fn sections() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(repo_root().join("docs/json.md")).expect("docs/json.md");
    let mut sections: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            current = heading.trim().to_owned();
        }
        sections
            .entry(current.clone())
            .or_default()
            .push(line.to_owned());
    }
    sections
}

/// The names between backticks in the table rows of `lines`: in the first column only, or in
/// every column (where the third names the fields of a nested object, `{type, count}`).
fn table_names(lines: &[String], first_column_only: bool) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in lines.iter().filter(|line| line.starts_with('|')) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let cells = if first_column_only {
            &cells[..1]
        } else {
            &cells[..]
        };
        for cell in cells {
            for (i, span) in cell.split('`').enumerate() {
                if i % 2 == 1 {
                    names.extend(
                        span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '*'))
                            .filter(|word| !word.is_empty())
                            .map(str::to_owned),
                    );
                }
            }
        }
    }
    names
}

/// The field names `docs/json.md` documents for `schema`: those in the table rows of its
/// section and of the shared parts (`dump`, `findings`, Object).
fn documented(schema: &str) -> BTreeSet<String> {
    let sections = sections();
    let own = sections
        .get(&format!("`{schema}`"))
        .unwrap_or_else(|| panic!("docs/json.md has no section for {schema}"));
    let mut names = table_names(own, false);
    names.extend(table_names(&sections["Shared parts"], false));
    // "Every document starts with `schema`" (the Conventions), and the shared parts' own
    // headings (`dump`, `findings`) name the objects every schema that carries them shares.
    names.insert("schema".to_owned());
    names.extend(
        sections["Shared parts"]
            .iter()
            .filter_map(|line| line.strip_prefix("### `"))
            .filter_map(|line| line.strip_suffix('`'))
            .map(str::to_owned),
    );
    names
}

fn keys_of(value: &Value, keys: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                keys.insert(key.clone());
                keys_of(value, keys);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| keys_of(item, keys)),
        _ => {}
    }
}

/// Fields a schema's table lists that no golden of it holds, each with the reason.
const NOT_IN_THE_GOLDENS: &[(&str, &str, &str)] = &[];

/// What is wrong between the goldens of `schema` and `docs/json.md`: a field the documents hold
/// that the page does not name, or a field its tables list that no golden holds.
fn check_documented(schema: &str, documents: &[(String, Value)]) -> Vec<String> {
    let documented = documented(schema);
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (name, value) in documents {
        let mut keys = BTreeSet::new();
        keys_of(value, &mut keys);
        let missing: Vec<_> = keys
            .iter()
            .filter(|key| !is_documented(&documented, key))
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "{name}: fields of {schema} that docs/json.md does not document: {missing:?}"
            ));
        }
        seen.extend(keys);
    }
    // And the other way: what the schema's own tables list (first column) is in a golden.
    let sections = sections();
    let listed = table_names(&sections[&format!("`{schema}`")], true);
    let excused: BTreeSet<&str> = NOT_IN_THE_GOLDENS
        .iter()
        .filter(|(s, _, _)| *s == schema)
        .map(|(_, field, _)| *field)
        .collect();
    let unseen: Vec<_> = listed
        .iter()
        .filter(|field| !excused.contains(field.as_str()))
        .filter(|field| match field.strip_suffix('*') {
            Some(prefix) => !seen.iter().any(|key| key.starts_with(prefix)),
            None => !seen.contains(*field),
        })
        .collect();
    if !unseen.is_empty() {
        problems.push(format!(
            "{schema}: docs/json.md lists fields that no golden holds: {unseen:?}"
        ));
    }
    problems
}

/// Whether `key` is among `documented`, where a name ending in `*` stands for every name it
/// begins (`objects_*`).
fn is_documented(documented: &BTreeSet<String>, key: &str) -> bool {
    documented.contains(key)
        || documented
            .iter()
            .filter_map(|name| name.strip_suffix('*'))
            .any(|prefix| key.starts_with(prefix))
}
