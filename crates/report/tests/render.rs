//! The text and JSON renderers on the views of a graph small enough to read by hand: the JSON
//! holds the view's numbers under the names `docs/json.md` gives them, `null` where the view
//! has none; the text says the same numbers in the words, units and order the README shows.
//! Every expected value is worked out from the graph's notation in the comments.

use heapgraph_analyzer::leaks::leaks;
use heapgraph_analyzer::{
    Analysis, ChainOrder, DEFAULT_MIN_DROP, EdgeRule, Options, RankBy, analyze, big_drops,
    dominator_tree, strings, summary, suspects, top, who_holds,
};
use heapgraph_model::{HeapGraph, NodeId};
use heapgraph_report::{DumpInfo, json, text};
use heapgraph_test_support::graph;
use serde_json::{Value, json};

/// A cache of two items that share a blob (the cache dominates it), an item held from the
/// root, a blob reached only weakly and an object nothing holds. Retained: Blob#1 100, Item#1
/// 20, Item#2 30, Cache#1 160, Item#3 5, the root 165; unreachable: Blob#2 (50) and lone (7).
const CACHE: &str = "root -> Cache#1: 10; Cache#1 -> Item#1: 20; Cache#1 -> Item#2: 30;
    Item#1 -> Blob#1: 100; Item#2 -> Blob#1; root -> Item#3: 5; Item#3 -w> Blob#2: 50; lone: 7";

fn analysed(notation: &str) -> (HeapGraph, Analysis) {
    let graph = graph(notation);
    let options = Options {
        edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
    };
    let analysis = analyze(&graph, &options);
    (graph, analysis)
}

fn info(graph: &HeapGraph) -> DumpInfo {
    DumpInfo::new("cache.hprof", graph.meta())
}

fn node(graph: &HeapGraph, name: &str) -> NodeId {
    graph
        .nodes()
        .find(|&node| graph.name(node) == name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

fn parse(text: &str) -> Value {
    assert!(text.ends_with('\n'), "the JSON ends with a newline");
    serde_json::from_str(text).expect("valid JSON")
}

/// The text's lines with runs of spaces made one, so a test reads a table row by its cells.
fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn summary_json_and_text_give_the_totals_and_the_types() {
    let (graph, analysis) = analysed(CACHE);
    let view = summary(&graph, &analysis);
    let document = parse(&json::summary(&view, &info(&graph), &[], Some(2)));
    assert_eq!(document["schema"], "heapgraph.summary/1");
    assert_eq!(
        document["dump"],
        json!({"file": "cache.hprof", "format": "test-notation", "runtime": "java", "notes": []})
    );
    for (field, value) in [
        ("objects", 7),
        ("references", 7),
        ("total_shallow_size", 222),
        ("reachable_objects", 5),
        ("reachable_size", 165),
        ("unreachable_objects", 2),
        ("unreachable_size", 57),
        ("heap_size", 165),
    ] {
        assert_eq!(document[field], value, "{field}");
    }
    assert_eq!(document["kind"], Value::Null);
    assert_eq!(document["findings"], json!([]));
    // Two types asked for: the largest retained first.
    assert_eq!(
        document["types"],
        json!([
            {"type": "Cache", "count": 1, "shallow_size": 10, "retained_size": 160},
            {"type": "Blob", "count": 2, "shallow_size": 150, "retained_size": 100},
        ])
    );
    let all = parse(&json::summary(&view, &info(&graph), &[], None));
    assert_eq!(all["types"].as_array().unwrap().len(), 4);

    let text = lines(&text::summary(&view, &info(&graph), &[], 2));
    assert_eq!(text[0], "cache.hprof (test-notation, java)");
    assert_eq!(text[1], "7 objects, 7 references, 222 B shallow in all");
    assert_eq!(text[2], "reachable: 5 objects, 165 B");
    assert_eq!(
        text[3],
        "unreachable: 2 objects, 57 B (held only by weak references, or by nothing)"
    );
    // Blob#2 (50 B) only Item#3's weak reference holds; lone (7 B) nothing.
    assert_eq!(
        text[4],
        "only weak references hold 1 object, 50 B, through:"
    );
    assert_eq!(text[5], "50 B 1 object Item");
    assert_eq!(text[6], "nothing holds 1 object, 7 B (garbage)");
    // Shares of the reachable heap: 160/165 = 97.0%, 100/165 = 60.6%.
    let header = text
        .iter()
        .position(|line| line == "type count shallow retained % of heap")
        .expect("the type table");
    assert_eq!(text[header + 1], "Cache 1 10 B 160 B 97.0%");
    assert_eq!(text[header + 2], "Blob 2 150 B 100 B 60.6%");
    assert_eq!(text[header + 3], "… 2 more types (raise -n to see them)");
    assert_eq!(text.len(), header + 4);
}

#[test]
fn top_writes_null_for_what_an_unreachable_object_lacks() {
    let (graph, analysis) = analysed(CACHE);
    let objects = top(&graph, &analysis, RankBy::Shallow, 2);
    let document = parse(&json::top(&objects, RankBy::Shallow, &info(&graph)));
    assert_eq!(document["schema"], "heapgraph.top/1");
    assert_eq!(document["by"], "shallow");
    // Blob#1 is node 4, id 5; Blob#2 node 6, id 7.
    assert_eq!(
        document["objects"],
        json!([
            {"id": 5, "kind": "object", "type": "Blob", "name": "Blob#1", "shallow_size": 100,
             "retained_size": 100, "retained_count": 1, "distance": 3},
            {"id": 7, "kind": "object", "type": "Blob", "name": "Blob#2", "shallow_size": 50,
             "retained_size": null, "retained_count": 0, "distance": null},
        ])
    );
    let text = lines(&text::top(&objects, RankBy::Shallow, &info(&graph)));
    assert_eq!(text[1], "top 2 objects by shallow");
    assert_eq!(
        text[3],
        "id type name shallow retained objects held distance"
    );
    // Java ids are written in hex; what is unknown is a dash.
    assert_eq!(text[4], "0x5 Blob Blob#1 100 B 100 B 1 3");
    assert_eq!(text[5], "0x7 Blob Blob#2 50 B - 0 -");
}

#[test]
fn holders_name_the_dominators_and_chains_and_say_when_nothing_holds() {
    let (graph, analysis) = analysed(CACHE);
    let mut view = who_holds(
        &graph,
        &analysis,
        node(&graph, "Item#1"),
        3,
        ChainOrder::Shortest,
    );
    let document = parse(&json::holders(&view, &info(&graph)));
    assert_eq!(document["schema"], "heapgraph.holders/1");
    assert!(document.get("matches").is_none(), "absent when named by id");
    let chain: Vec<_> = document["dominator_chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|object| object["name"].as_str().unwrap())
        .collect();
    assert_eq!(chain, ["root", "Cache#1", "Item#1"]);
    // One chain: root → Cache#1 → Item#1; property edges named after their targets.
    assert_eq!(
        document["paths"],
        json!([[
            {"id": 1, "type": "root", "name": "root", "edge": null, "edge_kind": null},
            {"id": 2, "type": "Cache", "name": "Cache#1", "edge": "Cache#1", "edge_kind": "property"},
            {"id": 3, "type": "Item", "name": "Item#1", "edge": "Item#1", "edge_kind": "property"},
        ]])
    );
    assert_eq!(document["path_counts"], json!([1]));
    view.matches = Some(3);
    let document = parse(&json::holders(&view, &info(&graph)));
    assert_eq!(document["matches"], 3);
    let text = text::holders(&view, &info(&graph));
    assert!(
        text.contains("(3 objects of this type; this one retains the most)"),
        "{text}"
    );
    assert!(text.contains("chain 1 of 1 (2 references):"), "{text}");

    let weak = who_holds(
        &graph,
        &analysis,
        node(&graph, "Blob#2"),
        3,
        ChainOrder::Explain,
    );
    let document = parse(&json::holders(&weak, &info(&graph)));
    assert_eq!(document["dominator_chain"], json!([]));
    // Its one chain crosses the weak reference, which says its kind.
    assert_eq!(document["held_by"], "weak");
    let steps = document["paths"][0].as_array().expect("a chain");
    let names: Vec<_> = steps.iter().map(|step| step["name"].clone()).collect();
    assert_eq!(names, [json!("root"), json!("Item#3"), json!("Blob#2")]);
    assert_eq!(steps[2]["reference_kind"], "weak");
    assert_eq!(document["target"]["retained_size"], Value::Null);
    let text = text::holders(&weak, &info(&graph));
    assert!(
        text.contains("the root does not reach this object through strong references"),
        "{text}"
    );
}

#[test]
fn the_dominator_tree_is_indented_by_depth_with_its_hidden_children() {
    let (graph, analysis) = analysed(CACHE);
    let view = dominator_tree(&graph, &analysis, 1, 0.5);
    let document = parse(&json::dominators(&view, &info(&graph)));
    assert_eq!(document["total_retained"], 165);
    let nodes = document["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    // The object's fields sit beside the tree's own.
    assert_eq!(nodes[1]["name"], "Cache#1");
    assert_eq!(nodes[1]["depth"], 1);
    assert_eq!(nodes[1]["hidden_children"], 3);
    assert_eq!(nodes[0]["share"], 1.0);
    let text = lines(&text::dominators(&view, &info(&graph)));
    assert_eq!(text[1], "dominator tree, 165 B retained at the root");
    assert_eq!(text[4], "165 B 100.0% root 0x1 (+1 smaller)");
    // 160/165 = 97.0%.
    assert_eq!(text[5], "160 B 97.0% Cache 0x2 \"Cache#1\" (+3 smaller)");
}

/// A cache whose map holds three entries of 100 bytes, and three items of 40 held from the
/// root: the cache retains 330 of 480 (68.75%), the items 120 together (25%).
const SUSPECTS: &str = "root -> Cache#1: 10; Cache#1 -> Map#1: 20; Map#1 -> Entry#1: 100;
    Map#1 -> Entry#2: 100; Map#1 -> Entry#3: 100; root -> Item#1: 40; root -> Item#2: 40;
    root -> Item#3: 40; root -> small: 30";

#[test]
fn suspects_say_where_the_bytes_accumulate_and_what_is_there() {
    let (graph, analysis) = analysed(SUSPECTS);
    let view = suspects(&graph, &analysis, 0.1);
    let drops = big_drops(&graph, &analysis, 0.1, DEFAULT_MIN_DROP);
    let document = parse(&json::suspects(&view, &drops, &info(&graph), &[]));
    assert_eq!(document["schema"], "heapgraph.suspects/1");
    let found = document["suspects"].as_array().unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found[0]["rule"], "single-object");
    assert_eq!(found[0]["retained_size"], 330);
    assert_eq!(found[0]["accumulation_point"]["name"], "Map#1");
    assert_eq!(
        found[0]["accumulated"],
        json!([{"type": "Entry", "count": 3, "retained_size": 300}])
    );
    assert_eq!(found[1]["rule"], "many-instances");
    assert_eq!(found[1]["count"], 3);
    assert_eq!(found[1]["accumulation_point"], Value::Null);
    let text = lines(&text::suspects(&view, &drops, &info(&graph), &[]));
    assert_eq!(
        text[1],
        "2 leak suspect(s): objects or types retaining at least 10% of 480 B reachable"
    );
    let text = text.join("\n");
    assert!(
        text.contains("suspect 1: one object retains 330 B (68.8%)"),
        "{text}"
    );
    assert!(
        text.contains("bytes accumulate in: Map 0x3 \"Map#1\" shallow 20 B, retained 320 B"),
        "{text}"
    );
    assert!(text.contains("3 300 B Entry"), "{text}");
    assert!(
        text.contains(
            "suspect 2: 3 instances of Item, held from different places, retain 120 B (25.0%)"
        ),
        "{text}"
    );
}

#[test]
fn strings_list_values_with_their_bytes() {
    // Two strings share one 40-byte array; it counts in the total only.
    let (graph, _) = analysed(
        "root -> java.lang.String#a: 24; root -> java.lang.String#b: 24;
         java.lang.String#a -> value: 40; java.lang.String#b -> value",
    );
    let view = strings(&graph, false, 10);
    let document = parse(&json::strings(&view, false, &info(&graph)));
    assert_eq!(document["schema"], "heapgraph.strings/1");
    assert_eq!(document["strings"], 2);
    assert_eq!(document["total_bytes"], 88);
    let text = lines(&text::strings(&view, false, &info(&graph)));
    assert_eq!(
        text[1],
        "2 strings, 88 B with their characters; 2 distinct values, 0 held more than once, wasting 0 B"
    );
    let duplicates = strings(&graph, true, 10);
    let text = text::strings(&duplicates, true, &info(&graph));
    assert!(
        text.contains("no value is held by more than one string"),
        "{text}"
    );
}

#[test]
fn leaks_give_the_clusters_and_the_kinds() {
    let baseline = graph("root -> App#1: 10");
    let target = graph("root -> App#1: 10; App#1 -e> Req#1: 30; App#1 -e> Req#2: 40");
    let (final_, analysis) =
        analysed("root -> App#1: 10; App#1 -e> Req#1: 30; App#1 -e> Req#2: 40; Req#1 -> Buf#1: 8");
    let view = leaks(&baseline, &target, &final_, &analysis, 5);
    let document = parse(&json::leaks(&view, &info(&final_)));
    assert_eq!(document["schema"], "heapgraph.leaks/1");
    assert_eq!(document["leaked"], 2);
    assert_eq!(document["clusters"][0]["count"], 2);
    assert_eq!(document["clusters"][0]["retained_size"], 78);
    assert_eq!(document["clusters"][0]["representative"]["name"], "Req#2");
    let kinds: Vec<_> = document["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kind| {
            (
                kind["name"].as_str().unwrap().to_owned(),
                kind["count"].as_u64().unwrap(),
                kind["retained_size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [("Req#2".to_owned(), 1, 40), ("Req#1".to_owned(), 1, 38)]
    );
    let text = text::leaks(&view, &info(&final_));
    assert!(text.contains("78 B"), "{text}");
}
