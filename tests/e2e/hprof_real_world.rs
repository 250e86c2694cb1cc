//! Real Java and Android dumps from other projects' test suites (`fixtures/java/real-world/`),
//! checked against those projects' own expectations: Eclipse MAT's instance sizes against
//! `jmap -histo` and its two-dumps-in-one-file test, hprof-slurp's golden counts, LeakCanary's
//! leak trace.

use crate::support::{fixture, heapgraph, json, path_str};
use heapgraph_import::{Contents, hprof};
use heapgraph_model::{EdgeKind, EdgeName, HeapGraph, NodeId};
use rustc_hash::FxHashMap as HashMap;
use std::num::NonZeroUsize;

fn real(name: &str) -> String {
    path_str(&fixture(&format!("java/real-world/{name}"))).to_owned()
}

fn load(name: &str, options: hprof::Options) -> HeapGraph {
    let mut import = heapgraph_import::Options::default();
    import.hprof = options;
    match heapgraph_import::import_path(&fixture(&format!("java/real-world/{name}")), &import)
        .expect("the dump loads")
    {
        Contents::HeapGraph(graph) => graph,
        _ => panic!("not a heap graph"),
    }
}

/// A `jmap -histo` class name as heapgraph and MAT name it: `[C` → `char[]`,
/// `[Ljava.lang.Object;` → `java.lang.Object[]`.
fn source_form(name: &str) -> String {
    let dims = name.bytes().take_while(|&b| b == b'[').count();
    if dims == 0 {
        return name.to_owned();
    }
    let base = match &name[dims..] {
        "Z" => "boolean",
        "B" => "byte",
        "C" => "char",
        "S" => "short",
        "I" => "int",
        "J" => "long",
        "F" => "float",
        "D" => "double",
        other => other.trim_start_matches('L').trim_end_matches(';'),
    };
    format!("{base}{}", "[]".repeat(dims))
}

/// `jmap -histo` rows: class (in source form), instances, bytes.
fn histogram(name: &str) -> Vec<(String, u64, u64)> {
    let text =
        std::fs::read_to_string(fixture(&format!("java/real-world/{name}"))).expect("histogram");
    text.lines()
        .filter_map(|line| {
            let mut tokens = line.split_whitespace().skip_while(|t| t.ends_with(':'));
            let count = tokens.next()?.parse().ok()?;
            let bytes = tokens.next()?.parse().ok()?;
            Some((source_form(tokens.next()?), count, bytes))
        })
        .collect()
}

/// Instances and bytes per type of the real objects, class objects aside.
fn counts_by_type(graph: &HeapGraph) -> HashMap<String, (u64, u64)> {
    let mut counts: HashMap<String, (u64, u64)> = HashMap::default();
    for node in graph.nodes() {
        if graph.is_synthetic(node) || graph.kind(node).name == "class" {
            continue;
        }
        let entry = counts.entry(graph.type_name(node).to_owned()).or_default();
        entry.0 += 1;
        entry.1 += graph.shallow_size(node);
    }
    counts
}

/// MAT's `TestInstanceSizes` rule: for every histogram class but the VM's own `<…>` rows and
/// `java.lang.Class`, an instance's size equals the histogram's bytes per instance; an array
/// class's total equals the histogram's where the counts agree. Returns the mismatches and how
/// many classes were compared.
fn size_errors(
    graph: &HeapGraph,
    rows: &[(String, u64, u64)],
    by_nature: &dyn Fn(&str, u64, u64) -> bool,
) -> (Vec<String>, usize) {
    let counts = counts_by_type(graph);
    let mut errors = Vec::new();
    let mut compared = 0;
    for (class, count, bytes) in rows {
        if class.starts_with('<') || class == "java.lang.Class" {
            continue;
        }
        let Some(&(ours_count, ours_bytes)) = counts.get(class) else {
            continue;
        };
        compared += 1;
        let (expected, ours) = if class.ends_with("[]") {
            if ours_count != *count {
                continue;
            }
            (*bytes, ours_bytes)
        } else {
            (bytes / count, ours_bytes / ours_count)
        };
        if expected != ours && !by_nature(class, expected, ours) {
            errors.push(format!("{class}: jmap {expected}, heapgraph {ours}"));
        }
    }
    (errors, compared)
}

#[test]
fn jdk6_instance_sizes_equal_jmap_as_in_mats_own_test() {
    let graph = load("sun_jdk6_18_x32.hprof.gz", hprof::Options::default());
    let rows = histogram("histogram_sun_jdk6_18_x32.txt");
    let (errors, compared) = size_errors(&graph, &rows, &|_, _, _| false);
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(compared > 100, "only {compared} classes compared");
    let notes = &graph.meta().notes;
    assert!(notes[0].contains("32-bit") && notes[0].contains("as the object addresses show"));
    assert!(
        notes[1].starts_with("fields laid out class by class"),
        "{notes:?}"
    );
    // One HEAP DUMP record is a whole dump: nothing is said to be missing.
    assert!(
        !notes.iter().any(|note| note.contains("cut short")),
        "{notes:?}"
    );

    // The per-class rule is what makes the sizes right: summing the fields flat gets some of
    // them wrong (the class loaders, which add fields at three levels).
    let mut packed = hprof::Options::default();
    packed.fields = Some(hprof::FieldLayout::Packed);
    let flat = load("sun_jdk6_18_x32.hprof.gz", packed);
    let (errors, _) = size_errors(&flat, &rows, &|_, _, _| false);
    assert!(
        errors
            .iter()
            .any(|error| error.starts_with("sun.misc.Launcher$AppClassLoader")),
        "{errors:?}"
    );
}

/// The hprof agent's dump of this JVM differs from the JVM's histogram by nature in two ways
/// (see fixtures/java/real-world/README.md): the agent's `java.lang.Throwable` lacks its
/// `backtrace` field (one reference: 4 bytes, 8 once aligned), and it writes an object array's
/// length only up to its last non-null element, so arrays come out no larger than the JVM's.
fn agent_by_nature(class: &str, expected: u64, ours: u64) -> bool {
    let throwable = class.ends_with("Error") || class.ends_with("Exception");
    (throwable && expected == ours + 8) || (class.ends_with("[]") && ours <= expected)
}

#[test]
fn the_hprof_agents_file_of_two_dumps_is_never_merged() {
    let file = real("sun_jdk6_31_hprofagent_compressedOops.hprof.gz");
    let summary = json(&["summary", &file, "--format", "json"]);
    let dumps = summary["dumps"].as_array().expect("the dumps of the file");
    assert_eq!(dumps.len(), 2);
    assert_eq!(dumps[1]["read"], true, "the last dump is read by default");
    assert!(dumps[0]["end"].as_u64() <= dumps[1]["start"].as_u64());
    let notes = summary["dump"]["notes"].to_string();
    assert!(
        notes.contains("this file holds 2 heap dumps") && notes.contains("--dump N"),
        "{notes}"
    );
    // MAT's MultipleSnapshots: the two dumps differ; each is read alone, not merged.
    let mut objects = Vec::new();
    for n in [1usize, 2] {
        let mut options = hprof::Options::default();
        options.dump = NonZeroUsize::new(n);
        let graph = load("sun_jdk6_31_hprofagent_compressedOops.hprof.gz", options);
        let real_objects = graph
            .nodes()
            .filter(|&node| !graph.is_synthetic(node))
            .count();
        assert_eq!(Some(real_objects as u64), dumps[n - 1]["objects"].as_u64());
        assert!(
            !graph
                .meta()
                .notes
                .iter()
                .any(|note| note.contains("appear more than once")),
            "dump {n} was merged with the other: {:?}",
            graph.meta().notes
        );
        let by_option = json(&[
            "summary",
            &file,
            "--dump",
            &n.to_string(),
            "--format",
            "json",
        ]);
        assert_eq!(by_option["objects"].as_u64(), Some(real_objects as u64));
        objects.push(real_objects);
    }
    assert_ne!(objects[0], objects[1]);

    let out_of_range = heapgraph(&["summary", &file, "--dump", "3"]);
    assert_eq!(out_of_range.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out_of_range.stderr);
    assert!(
        stderr.contains("the file holds 2 (choose 1 to 2)"),
        "{stderr}"
    );
}

#[test]
fn the_hprof_agents_serial_ids_do_not_make_a_64_bit_jvm_32_bit() {
    let graph = load(
        "sun_jdk6_31_hprofagent_compressedOops.hprof.gz",
        hprof::Options::default(),
    );
    let notes = &graph.meta().notes;
    assert!(
        notes[0].contains("compressed oops") && notes[0].contains("system properties"),
        "{notes:?}"
    );
    assert!(notes[1].contains("serial numbers"), "{notes:?}");
    let rows = histogram("sun_jdk6_31_hprofagent_compressedOops.txt");
    let (errors, compared) = size_errors(&graph, &rows, &agent_by_nature);
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(compared > 100, "only {compared} classes compared");
    let strings = counts_by_type(&graph)["java.lang.String"];
    assert_eq!(strings.1 / strings.0, 32, "jmap: 750 strings, 24,000 bytes");

    // Where the assumption is wrong, --layout says what the JVM did.
    let mut uncompressed = hprof::Options::default();
    uncompressed.layout = Some(hprof::ObjectLayout::Uncompressed);
    let graph = load(
        "sun_jdk6_31_hprofagent_compressedOops.hprof.gz",
        uncompressed,
    );
    let strings = counts_by_type(&graph)["java.lang.String"];
    assert_eq!(strings.1 / strings.0, 40);
    assert!(graph.meta().notes[0].contains("as --layout says"));
}

/// hprof-slurp's class names: object arrays get one `[]` too many (`java.lang.Object[][]` is
/// `java.lang.Object[]`).
fn slurp_class(name: &str) -> String {
    let primitive = [
        "boolean[]",
        "char[]",
        "float[]",
        "double[]",
        "byte[]",
        "short[]",
        "int[]",
        "long[]",
    ];
    match name.strip_suffix("[]") {
        Some(element) if !primitive.contains(&name) => element.to_owned(),
        _ => name.to_owned(),
    }
}

#[test]
fn a_single_heap_dump_record_reads_whole_with_hprof_slurps_counts() {
    let text = std::fs::read_to_string(fixture("java/real-world/hprof-32-result.txt"))
        .expect("golden file");
    let golden = |label: &str| -> u64 {
        text.lines()
            .find_map(|line| line.trim().strip_prefix(label)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{label} in the golden file"))
    };
    let graph = load("hprof-32.bin.gz", hprof::Options::default());
    let mut by_kind: HashMap<&str, u64> = HashMap::default();
    for node in graph.nodes().filter(|&node| !graph.is_synthetic(node)) {
        *by_kind.entry(graph.kind(node).name.as_str()).or_default() += 1;
    }
    assert_eq!(by_kind["instance"], golden("..GC instance dump:"));
    assert_eq!(by_kind["object-array"], golden("..GC object array dump:"));
    assert_eq!(
        by_kind["primitive-array"],
        golden("..GC primitive array dump:")
    );
    assert_eq!(by_kind["class"], golden("..GC class dump:"));
    let notes = &graph.meta().notes;
    assert!(
        !notes.iter().any(|note| note.contains("cut short")),
        "{notes:?}"
    );

    // The 20 classes of hprof-slurp's table, by instance count.
    let counts = counts_by_type(&graph);
    let table = text
        .split("Top 20 raw shallow heap classes:")
        .nth(1)
        .expect("the table");
    let mut compared = 0;
    let rows = table
        .lines()
        .skip_while(|line| !line.contains("Total size"))
        .skip(2)
        .take_while(|line| line.starts_with('|'));
    for line in rows {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let instances: u64 = cells[2].parse().expect("instances");
        let class = slurp_class(cells[4]);
        // `java.lang.Class` counts the instance dumps whose class it is (the agent dumps a few
        // class objects so), not the class dumps.
        let ours = counts.get(&class).map_or(0, |&(count, _)| count);
        assert_eq!(ours, instances, "{class}");
        compared += 1;
    }
    assert_eq!(compared, 20);
}

#[test]
fn leakcanarys_leak_trace_on_an_android_dump() {
    let graph = load(
        "leak_service_binder_ignored.hprof.gz",
        hprof::Options::default(),
    );
    // The KeyedWeakReference whose key LeakCanary's test names, and its referent.
    let key = "6e524414-9581-4ce7-8690-e8ddf8b82454";
    let field = |node: NodeId, name: &str| {
        graph.edge_range(node).find_map(|edge| {
            (graph.edge_name(edge) == EdgeName::Named(name)).then(|| graph.edge_target(edge))
        })
    };
    let reference = graph
        .nodes()
        .find(|&node| {
            graph.type_name(node).ends_with("KeyedWeakReference")
                && field(node, "key").is_some_and(|k| graph.name(k) == key)
        })
        .expect("the KeyedWeakReference of the test's key");
    let leaked = field(reference, "referent").expect("a referent");
    assert_eq!(
        graph.type_name(leaked),
        "com.example.leakcanary.LeakyService"
    );

    // Its shortest strong chain from the roots: a GC root holds a LeakyService$MyBinder, whose
    // instance field `service` holds the service.
    let holders = json(&[
        "who-holds",
        &real("leak_service_binder_ignored.hprof.gz"),
        &format!("{:#x}", graph.object_id(leaked)),
        "--paths",
        "1",
        "--format",
        "json",
    ]);
    let steps = holders["paths"][0].as_array().expect("a chain");
    let names: Vec<(&str, &str)> = steps
        .iter()
        .map(|step| {
            (
                step["edge"].as_str().unwrap_or(""),
                step["type"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        names[1..],
        [
            (
                "<JNI global>",
                "com.example.leakcanary.LeakyService$MyBinder"
            ),
            ("service", "com.example.leakcanary.LeakyService"),
        ],
        "{holders}"
    );
    // The edge `service` is an instance field, held by an object (not a class's static).
    let binder = graph
        .edge_range(graph.root())
        .map(|edge| graph.edge_target(edge))
        .find(|&node| graph.type_name(node) == "com.example.leakcanary.LeakyService$MyBinder")
        .expect("the binder is a root");
    assert_eq!(graph.kind(binder).name, "instance");
    let service_edge = graph
        .edge_range(binder)
        .find(|&edge| graph.edge_target(edge) == leaked)
        .expect("binder → service");
    assert_eq!(graph.edge_kind(service_edge), EdgeKind::Property);
}

#[test]
fn android_strings_that_share_one_char_array_are_their_slices() {
    let graph = load(
        "leak_service_binder_ignored.hprof.gz",
        hprof::Options::default(),
    );
    // The array most strings share: the time-zone names.
    let mut sharing: HashMap<NodeId, Vec<NodeId>> = HashMap::default();
    for node in graph.nodes() {
        if graph.type_name(node) != "java.lang.String" {
            continue;
        }
        if let Some(edge) = graph
            .edge_range(node)
            .find(|&edge| graph.edge_name(edge) == EdgeName::Named("value"))
        {
            sharing
                .entry(graph.edge_target(edge))
                .or_default()
                .push(node);
        }
    }
    let (array, strings) = sharing
        .iter()
        .max_by_key(|(_, strings)| strings.len())
        .expect("strings");
    assert!(
        strings.len() >= 577,
        "{} strings share one array",
        strings.len()
    );
    let values: Vec<&str> = strings.iter().map(|&node| graph.name(node)).collect();
    assert!(values.contains(&"Africa/Abidjan") && values.contains(&"Europe/Paris"));
    // Each is its own slice, not the whole array.
    let array_chars = (graph.shallow_size(*array) - 12) / 2;
    assert!(
        values
            .iter()
            .all(|value| (value.len() as u64) < array_chars / 10)
    );

    // So `strings` counts the shared array once, and does not call the names duplicates.
    let file = real("leak_service_binder_ignored.hprof.gz");
    let report = json(&[
        "strings",
        &file,
        "--duplicates",
        "-n",
        "1000",
        "--format",
        "json",
    ]);
    let summary = json(&["summary", &file, "--format", "json"]);
    assert!(
        report["total_bytes"].as_u64() <= summary["total_shallow_size"].as_u64(),
        "strings take more bytes than the heap: {} > {}",
        report["total_bytes"],
        summary["total_shallow_size"]
    );
    let duplicated: Vec<&str> = report["values"]
        .as_array()
        .expect("values")
        .iter()
        .filter_map(|row| row["value"].as_str())
        .collect();
    assert!(!duplicated.iter().any(|value| value.contains("Africa/")));
}
