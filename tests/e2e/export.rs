//! `heapgraph export` (issue 19): every kind of input becomes its tables, a dump that cannot be
//! read is named and the others are still written, a dump already exported is left alone; and
//! DuckDB, reading a fleet's export as docs/sql.md says, gives the rows the CLI's own JSON
//! gives (`summary`, `diff`), which are themselves checked against the fixtures' oracles (the
//! JVM's class histogram, objgraph's typestats, the planted counts of the READMEs).

use crate::support::{fixture, heapgraph, heapgraph_ok, json, path_str, repo_root, temp_dir, tool};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The rows per table that `export` reports for one file: `FILE: dump_id=ID (objects 12, …)`.
fn reported_rows(report: &str, file: &str) -> (String, BTreeMap<String, u64>) {
    let line = report
        .lines()
        .find(|line| line.starts_with(&format!("{file}: ")))
        .unwrap_or_else(|| panic!("no line for {file} in {report}"));
    let id = line
        .split("dump_id=")
        .nth(1)
        .and_then(|rest| rest.split([' ', '\n']).next())
        .expect("dump_id=")
        .to_owned();
    let rows = line
        .split_once('(')
        .map(|(_, rest)| rest.trim_end_matches(')'))
        .unwrap_or("")
        .split(", ")
        .filter(|part| !part.is_empty())
        .map(|part| {
            let (table, rows) = part.rsplit_once(' ').expect("TABLE ROWS");
            (table.to_owned(), rows.parse().expect("a row count"))
        })
        .collect();
    (id, rows)
}

fn summary(file: &str) -> Value {
    json(&["summary", file, "--format", "json"])
}

#[test]
fn every_input_is_exported_a_bad_one_is_named_and_a_second_export_rewrites_nothing() {
    let dir = temp_dir("export-kinds");
    let out = dir.join("exported");
    let bad = dir.join("not-a-dump.hprof");
    // The first bytes of a real HPROF header, cut short: a dump that fails to read.
    std::fs::write(&bad, b"JAVA PROFILE 1.0.2\0\0\0\0\x08").unwrap();
    let heap = fixture("java/default.hprof.gz");
    let v8 = fixture("v8/app-after.heapsnapshot.gz");
    let tracemalloc = fixture("tracemalloc/after.tracemalloc");
    let cuda = fixture("torch-cuda/load_fp32.pickle.gz");
    let timeline = fixture("timeline/worker.hgt");
    let files = [&heap, &bad, &v8, &tracemalloc, &cuda, &timeline];
    let mut args = vec!["export", "-o", path_str(&out), "--label", "release=2.4"];
    args.extend(files.iter().map(|file| path_str(file)));
    let output = heapgraph(&args);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains(path_str(&bad)), "{stderr}");
    assert!(stdout.contains("5 of 6 dumps"), "{stdout}");

    for graph in [&heap, &v8] {
        let (id, rows) = reported_rows(&stdout, path_str(graph));
        let summary = summary(path_str(graph));
        assert_eq!(rows["dumps"], 1);
        assert_eq!(rows["references"], summary["references"].as_u64().unwrap());
        assert_eq!(
            rows["types"],
            summary["types"].as_array().unwrap().len() as u64
        );
        // A table without rows is not in the report (V8's `app-after` has no finding).
        assert_eq!(
            rows.get("findings").copied().unwrap_or(0),
            summary["findings"].as_array().unwrap().len() as u64
        );
        // Every real object, and the synthetic nodes (the root and V8's subroots).
        assert!(rows["objects"] > summary["objects"].as_u64().unwrap());
        assert!(rows["objects"] < summary["objects"].as_u64().unwrap() + 100);
        assert!(rows["holders"] > 0 && rows["roots"] > 0, "{rows:?}");
        assert!(!rows.contains_key("sites") && !rows.contains_key("gpu_blocks"));
        for table in [
            "dumps",
            "objects",
            "references",
            "roots",
            "types",
            "holders",
            "findings",
            "sites",
            "gpu_blocks",
        ] {
            let file = out
                .join(table)
                .join(format!("dump_id={id}"))
                .join("part-0.parquet");
            let bytes = std::fs::read(&file).unwrap_or_else(|_| panic!("{}", file.display()));
            assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
        }
    }
    // Allocation snapshots: their sites (tracemalloc's statistics by traceback), and a CUDA
    // snapshot's blocks (`gpu`'s active blocks).
    let (_, rows) = reported_rows(&stdout, path_str(&tracemalloc));
    assert!(
        rows["sites"] > 0 && !rows.contains_key("objects"),
        "{rows:?}"
    );
    let (_, rows) = reported_rows(&stdout, path_str(&cuda));
    let gpu = json(&["gpu", path_str(&cuda), "--format", "json"]);
    assert_eq!(
        rows["gpu_blocks"],
        gpu["active_blocks"].as_u64().unwrap(),
        "{rows:?}"
    );
    let (_, rows) = reported_rows(&stdout, path_str(&timeline));
    assert_eq!(rows["dumps"], 1);
    assert!(
        rows.keys()
            .all(|table| table == "dumps" || table == "findings")
    );

    // Again, with the same files: the ids are the same, nothing is rewritten.
    let before: Vec<_> = parquet_files(&out)
        .into_iter()
        .map(|file| (std::fs::metadata(&file).unwrap().modified().unwrap(), file))
        .collect();
    let again = heapgraph(&[
        "export",
        "-o",
        path_str(&out),
        path_str(&heap),
        path_str(&v8),
    ]);
    assert!(again.status.success());
    let again = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.matches("already in the folder").count(), 2, "{again}");
    for (modified, file) in before {
        assert_eq!(
            std::fs::metadata(&file).unwrap().modified().unwrap(),
            modified
        );
    }
    // --summary-only: every table but objects and references.
    let small = dir.join("summary-only");
    let report = heapgraph_ok(&[
        "export",
        "--summary-only",
        "-o",
        path_str(&small),
        path_str(&heap),
    ]);
    let (_, rows) = reported_rows(&report, path_str(&heap));
    assert!(!rows.contains_key("objects") && !rows.contains_key("references"));
    assert!(!small.join("objects").exists() && !small.join("references").exists());
    assert!(rows["types"] > 0 && rows["holders"] > 0);
    let wrong = heapgraph(&["export", "-o", path_str(&small), "--label", "release"]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("KEY=VALUE"));
    std::fs::remove_dir_all(&dir).ok();
}

fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "parquet") {
                files.push(path);
            }
        }
    }
    files
}

/// One dump of the fleet: the file, its labels, and where its oracle is.
struct FleetDump {
    file: PathBuf,
    labels: Vec<String>,
    /// objgraph's typestats of a Python dump (gc-tracked objects per type).
    typestats: Option<PathBuf>,
}

/// Runs `fixtures/python/leaky_service.py` for `rounds` rounds, leaking or fixed, into `dir`:
/// two dumps (before and after the growth phase) with objgraph's typestats of each.
fn service_run(dir: &Path, rounds: u32, fixed: bool) -> std::process::Child {
    let mut command = tool("python3");
    command
        .arg(repo_root().join("fixtures/python/leaky_service.py"))
        .arg(dir)
        .args(["--rounds", &rounds.to_string()]);
    if fixed {
        command.arg("--fixed");
    }
    command
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("python3 runs")
}

/// The fleet: the Python fixture program at 11 sizes in two releases (44 dumps), the three
/// Java fixtures (one program under three JVM settings) and the three V8 fixtures.
fn fleet(dir: &Path) -> Vec<FleetDump> {
    let mut dumps = Vec::new();
    let mut runs = Vec::new();
    for release in ["leaky", "fixed"] {
        for rounds in 1..=11u32 {
            let run = dir.join(format!("python-{release}-{rounds}"));
            runs.push((run, release, rounds));
        }
    }
    // Four at a time: each is a second or two of one core.
    for chunk in runs.chunks(4) {
        let children: Vec<_> = chunk
            .iter()
            .map(|(run, release, rounds)| service_run(run, *rounds, *release == "fixed"))
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success(), "leaky_service.py failed");
        }
    }
    for (run, release, rounds) in &runs {
        for phase in ["before", "after"] {
            dumps.push(FleetDump {
                file: run.join(format!("{phase}.hgd")),
                labels: vec![
                    format!("release={release}"),
                    format!("rounds={rounds}"),
                    format!("phase={phase}"),
                ],
                typestats: Some(run.join(format!("{phase}.typestats.json"))),
            });
        }
    }
    for variant in ["default", "nocoops", "nocompressed"] {
        dumps.push(FleetDump {
            file: fixture(&format!("java/{variant}.hprof.gz")),
            labels: vec![format!("jvm={variant}")],
            typestats: None,
        });
    }
    for phase in ["before", "after", "final"] {
        dumps.push(FleetDump {
            file: fixture(&format!("v8/app-{phase}.heapsnapshot.gz")),
            labels: vec![format!("phase={phase}")],
            typestats: None,
        });
    }
    dumps
}

fn as_u64(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("not a count: {value}"))
}

/// The instances per class of a `jcmd GC.class_histogram` (the JVM's own count).
fn histogram(path: &Path) -> BTreeMap<String, u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                [index, count, _bytes, class, ..] if index.ends_with(':') => {
                    Some(((*class).to_owned(), count.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 with duckdb and objgraph (tests/setup.sh)"
)]
fn duckdb_reads_a_fleet_export_as_the_cli_answers() {
    let dir = temp_dir("export-fleet");
    let out = dir.join("exported");
    let dumps = fleet(&dir);
    assert!(dumps.len() >= 50, "{}", dumps.len());
    for dump in &dumps {
        let mut args = vec!["export", "-o", path_str(&out), path_str(&dump.file)];
        for label in &dump.labels {
            args.extend(["--label", label.as_str()]);
        }
        heapgraph_ok(&args);
    }
    let answer = tool("python3")
        .arg(repo_root().join("tests/oracle/duckdb_export.py"))
        .arg(&out)
        .output()
        .expect("python3 runs");
    assert!(
        answer.status.success(),
        "DuckDB failed (tests/setup.sh installs duckdb): {}",
        String::from_utf8_lossy(&answer.stderr)
    );
    let duck: Value = serde_json::from_slice(&answer.stdout).expect("JSON from DuckDB");
    assert_eq!(duck["dumps"].as_object().unwrap().len(), dumps.len());

    let mut label_totals: BTreeMap<String, [u64; 4]> = BTreeMap::new();
    let mut label_types: BTreeMap<(String, String), u64> = BTreeMap::new();
    for dump in &dumps {
        let file = path_str(&dump.file);
        let cli = summary(file);
        let row = &duck["dumps"][file];
        // 3. The per-dump totals.
        for (column, field) in [
            ("objects", "objects"),
            ("references", "references"),
            ("total_shallow_size", "total_shallow_size"),
            ("reachable_size", "reachable_size"),
        ] {
            assert_eq!(row[column], cli[field], "{file}: {column}");
        }
        assert_eq!(
            as_u64(&duck["reference_rows"][file]),
            as_u64(&cli["references"])
        );
        assert_eq!(row["label"], dump.labels.join(","));
        assert_eq!(row["format"], cli["dump"]["format"]);
        let label = dump.labels.join(",");
        let totals = label_totals.entry(label.clone()).or_default();
        totals[0] += 1;
        totals[1] += as_u64(&cli["objects"]);
        totals[2] += as_u64(&cli["total_shallow_size"]);
        totals[3] += as_u64(&cli["reachable_size"]);

        // 1. Objects per type: the types table is summary's, every row; counting the objects
        //    table gives the same counts.
        let types = duck["types"][file].as_object().unwrap();
        let cli_types = cli["types"].as_array().unwrap();
        assert_eq!(types.len(), cli_types.len(), "{file}");
        for entry in cli_types {
            let name = entry["type"].as_str().unwrap();
            let row = &types[name];
            assert_eq!(row[0], entry["count"], "{file}: {name}");
            assert_eq!(row[1], entry["shallow_size"], "{file}: {name}");
            assert_eq!(row[2], entry["retained_size"], "{file}: {name}");
            *label_types
                .entry((label.clone(), name.to_owned()))
                .or_default() += as_u64(&entry["count"]);
        }
        let by_kind = duck["objects_per_kind_and_type"][file].as_object().unwrap();
        let mut counted: BTreeMap<&str, u64> = BTreeMap::new();
        let mut total_rows = 0;
        // The synthetic nodes (the root, V8's subroots, Java's frames) are rows of `objects`
        // too, under types of their own (`(GC roots)`, `frame`), which `summary` leaves out.
        for (key, count) in by_kind {
            let (_, type_name) = key.split_once('/').unwrap();
            total_rows += as_u64(count);
            *counted.entry(type_name).or_default() += as_u64(count);
        }
        assert_eq!(total_rows, as_u64(&duck["object_rows"][file]));
        for entry in cli_types {
            let name = entry["type"].as_str().unwrap();
            assert_eq!(
                counted.get(name).copied().unwrap_or(0),
                as_u64(&entry["count"]),
                "{file}: objects of {name}"
            );
        }
        // … and both are the oracle's: objgraph's typestats (gc-tracked objects, kind
        // `object`), the JVM's class histogram.
        if let Some(typestats) = &dump.typestats {
            let oracle: BTreeMap<String, u64> =
                serde_json::from_str(&std::fs::read_to_string(typestats).unwrap()).unwrap();
            for (name, count) in &oracle {
                let ours = by_kind.get(&format!("object/{name}")).map_or(0, as_u64);
                assert_eq!(ours, *count, "{file}: tracked {name} (objgraph)");
            }
        }
    }
    for variant in ["default", "nocoops", "nocompressed"] {
        let file = fixture(&format!("java/{variant}.hprof.gz"));
        let types = duck["types"][path_str(&file)].as_object().unwrap();
        let jvm = histogram(&fixture(&format!("java/{variant}.histogram.txt")));
        let planted: Vec<_> = jvm
            .iter()
            .filter(|(class, _)| class.starts_with("com.example.") && !class.contains("$$Lambda"))
            .collect();
        assert!(planted.len() >= 8, "{planted:?}");
        for (class, count) in planted {
            assert_eq!(types[class.as_str()][0], *count, "{variant}: {class}");
        }
    }
    // The V8 fixtures' planted counts (fixtures/README.md), objects of V8's type `object`.
    let v8 = |phase: &str| {
        duck["objects_per_kind_and_type"]
            [path_str(&fixture(&format!("v8/app-{phase}.heapsnapshot.gz")))]
        .clone()
    };
    for (class, counts) in [
        ("LeakyRequest", [100, 300, 150]),
        ("RequestHeaders", [100, 300, 150]),
        ("ListenerPayload", [20, 60, 0]),
        ("ChainLink", [2000, 2000, 2000]),
        ("RingNode", [100, 100, 100]),
    ] {
        for (phase, count) in ["before", "after", "final"].into_iter().zip(counts) {
            let ours = v8(phase).get(format!("object/{class}")).map_or(0, as_u64);
            assert_eq!(ours, count, "{phase}: {class}");
        }
    }

    // 2. Retained size per holder: DuckDB's holders are diff's, for every holder diff chose
    //    from the newer dump (the holder of the planted Requests among them).
    for (release, rounds) in [("leaky", 3), ("fixed", 3), ("leaky", 11)] {
        let run = dir.join(format!("python-{release}-{rounds}"));
        let (before, after) = (run.join("before.hgd"), run.join("after.hgd"));
        let diff = json(&[
            "diff",
            path_str(&before),
            path_str(&after),
            "--format",
            "json",
        ]);
        let exported = duck["holders"][path_str(&after)].as_object().unwrap();
        let mut matched = 0;
        for holder in diff["holders"].as_array().unwrap() {
            let signature = holder["signature"].as_str().unwrap();
            if let Some(row) = exported.get(signature) {
                assert_eq!(row[0], holder["count_after"], "{signature}");
                assert_eq!(row[1], holder["retained_after"], "{signature}");
                matched += 1;
            }
        }
        assert!(
            matched >= 10,
            "{release} {rounds}: {matched} holders matched"
        );
        let facts: Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("facts.json")).unwrap())
                .unwrap();
        let requests = exported
            .iter()
            .filter(|(signature, _)| signature.ends_with("→ __main__.Request"))
            .map(|(_, row)| as_u64(&row[0]))
            .max()
            .unwrap_or(0);
        assert_eq!(
            requests,
            as_u64(&facts["after"]["Request"]),
            "{release} {rounds}"
        );
    }

    // The fleet questions, over all the dumps at once.
    let fleet = &duck["fleet"];
    let totals: BTreeMap<String, [u64; 4]> = fleet["totals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let row = row.as_array().unwrap();
            (
                row[0].as_str().unwrap().to_owned(),
                [
                    as_u64(&row[1]),
                    as_u64(&row[2]),
                    as_u64(&row[3]),
                    as_u64(&row[4]),
                ],
            )
        })
        .collect();
    assert_eq!(totals, label_totals);
    let per_type: BTreeMap<(String, String), u64> = fleet["objects_per_type"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let row = row.as_array().unwrap();
            (
                (
                    row[0].as_str().unwrap().to_owned(),
                    row[1].as_str().unwrap().to_owned(),
                ),
                as_u64(&row[2]),
            )
        })
        .collect();
    assert_eq!(per_type, label_types);
    // The leaking release's after-dumps hold the Requests its cache keeps (100 + 50 per
    // round); the fixed release's hold the 100 of the baseline.
    let grew = fleet["holder_growth"][0][0].as_str().unwrap();
    assert!(grew.ends_with("→ __main__.Request"), "{grew}");
    for rounds in 1..=11u64 {
        let key = |release: &str| {
            (
                format!("release={release},rounds={rounds},phase=after"),
                "__main__.Request".to_owned(),
            )
        };
        assert!(per_type[&key("leaky")] >= 100 + 50 * rounds);
        assert!(per_type[&key("fixed")] < 100 + 50 * rounds);
    }
    std::fs::remove_dir_all(&dir).ok();
}
