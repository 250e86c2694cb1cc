//! The views (`summary`, `top`, `who_holds`, `dominator_tree`, `suspects`, `strings`, `leaks`)
//! on graphs small enough to answer by hand: every expected number below is worked out in the
//! comment beside it from the graph's notation, not taken from the code's output.

use heapgraph_analyzer::leaks::leaks;
use heapgraph_analyzer::{
    Analysis, ChainOrder, EdgeRule, HeldBy, Options, RankBy, ReferenceKind, SuspectRule, analyze,
    dominator_tree, find_largest_of_type, object_view, strings, summary, summary_of_kind, suspects,
    top, who_holds,
};
use heapgraph_model::{HeapGraph, NodeId};
use heapgraph_test_support::graph;

fn analysis_of(graph: &HeapGraph) -> Analysis {
    let options = Options {
        edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
    };
    analyze(graph, &options)
}

fn node(graph: &HeapGraph, name: &str) -> NodeId {
    graph
        .nodes()
        .find(|&node| graph.name(node) == name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

/// A cache of two items that share a blob, an item held from the root, a blob only a weak
/// reference reaches, and an object nothing references. Node order (and ids 1..=8): root,
/// Cache#1, Item#1, Item#2, Blob#1, Item#3, Blob#2, lone.
///
/// Dominators: Blob#1 is reached through both cached items, so the cache dominates it.
/// Retained: Blob#1 100, Item#1 20, Item#2 30, Cache#1 10+20+30+100 = 160, Item#3 5, the root
/// 165. Blob#2 (weak only) and lone are unreachable: 50 + 7 = 57 bytes.
const CACHE: &str = "root -> Cache#1: 10; Cache#1 -> Item#1: 20; Cache#1 -> Item#2: 30;
    Item#1 -> Blob#1: 100; Item#2 -> Blob#1; root -> Item#3: 5; Item#3 -w> Blob#2: 50; lone: 7";

#[test]
fn summary_counts_reachable_and_unreachable_objects_and_each_type_once() {
    let graph = graph(CACHE);
    let analysis = analysis_of(&graph);
    let view = summary(&graph, &analysis);
    assert_eq!(view.objects, 7, "every node but the synthetic root");
    assert_eq!(view.references, 7, "the weak one included");
    assert_eq!(view.total_shallow_size, 222);
    assert_eq!((view.reachable_objects, view.reachable_size), (5, 165));
    assert_eq!((view.unreachable_objects, view.unreachable_size), (2, 57));
    assert_eq!(view.heap_size, 165);
    assert_eq!(view.kind, None);
    let rows: Vec<_> = view
        .types
        .iter()
        .map(|row| {
            (
                row.type_name.as_str(),
                row.count,
                row.shallow_size,
                row.retained_size,
            )
        })
        .collect();
    // Items retain 20 + 30 + 5; of the blobs only the reachable one retains; lone retains
    // nothing, being unreachable. Largest retained first.
    assert_eq!(
        rows,
        [
            ("Cache", 1, 10, 160),
            ("Blob", 2, 150, 100),
            ("Item", 3, 55, 55),
            ("lone", 1, 7, 0),
        ]
    );
    // Every real node is of kind "object" in the notation: the same counts, named.
    let objects = summary_of_kind(&graph, &analysis, "object").expect("a kind");
    assert_eq!(objects.kind.as_deref(), Some("object"));
    assert_eq!(objects.objects, 7);
    assert_eq!(objects.types, view.types);
    assert!(summary_of_kind(&graph, &analysis, "no such kind").is_none());
}

#[test]
fn top_ranks_by_retained_shallow_and_count_with_unreachable_objects_last() {
    let graph = graph(CACHE);
    let analysis = analysis_of(&graph);
    let names = |by, n| -> Vec<String> {
        top(&graph, &analysis, by, n)
            .into_iter()
            .map(|object| object.name)
            .collect()
    };
    assert_eq!(names(RankBy::Retained, 3), ["Cache#1", "Blob#1", "Item#2"]);
    // Shallow ranks the unreachable Blob#2 (50) too.
    assert_eq!(names(RankBy::Shallow, 2), ["Blob#1", "Blob#2"]);
    // The cache's subtree holds four objects; the four of one object tie and go in node order.
    assert_eq!(
        names(RankBy::Count, 5),
        ["Cache#1", "Item#1", "Item#2", "Blob#1", "Item#3"]
    );
    // Never the synthetic root, and never more than there are.
    assert_eq!(top(&graph, &analysis, RankBy::Retained, 100).len(), 7);
    let last = top(&graph, &analysis, RankBy::Retained, 7);
    let unreachable: Vec<_> = last[5..]
        .iter()
        .map(|object| object.name.as_str())
        .collect();
    assert_eq!(
        unreachable,
        ["Blob#2", "lone"],
        "unreachable rank as 0, in node order"
    );
}

#[test]
fn an_object_view_says_what_the_object_retains_and_how_far_it_is() {
    let graph = graph(CACHE);
    let analysis = analysis_of(&graph);
    let blob = object_view(&graph, &analysis, node(&graph, "Blob#1"));
    assert_eq!(blob.id, 5, "ids are 1.. in node order");
    assert_eq!(blob.type_name, "Blob");
    assert_eq!(blob.kind, "object");
    assert_eq!(blob.shallow_size, 100);
    assert_eq!(blob.retained_size, Some(100));
    assert_eq!(blob.retained_count, 1);
    assert_eq!(blob.distance, Some(3), "root → Cache#1 → Item#1 → Blob#1");
    let cache = object_view(&graph, &analysis, node(&graph, "Cache#1"));
    assert_eq!((cache.retained_size, cache.retained_count), (Some(160), 4));
    assert_eq!(cache.distance, Some(1));
    let weak = object_view(&graph, &analysis, node(&graph, "Blob#2"));
    assert_eq!(
        (weak.retained_size, weak.retained_count, weak.distance),
        (None, 0, None)
    );
}

#[test]
fn the_largest_instance_of_a_type_is_found_with_the_number_of_matches() {
    let graph = graph(CACHE);
    let analysis = analysis_of(&graph);
    let found = |type_name| {
        find_largest_of_type(&graph, &analysis, type_name)
            .map(|(node, matches)| (graph.name(node).to_owned(), matches))
    };
    assert_eq!(found("Item"), Some(("Item#2".to_owned(), 3)));
    // The unreachable Blob#2 is larger but retains nothing.
    assert_eq!(found("Blob"), Some(("Blob#1".to_owned(), 2)));
    assert_eq!(found("Nothing"), None);
}

#[test]
fn who_holds_gives_the_dominators_and_every_chain() {
    let graph = graph(CACHE);
    let analysis = analysis_of(&graph);
    let held = who_holds(
        &graph,
        &analysis,
        node(&graph, "Blob#1"),
        5,
        ChainOrder::Shortest,
    );
    assert_eq!(held.target.name, "Blob#1");
    assert_eq!(held.matches, None);
    let chain: Vec<_> = held
        .dominator_chain
        .iter()
        .map(|object| object.name.as_str())
        .collect();
    assert_eq!(chain, ["root", "Cache#1", "Blob#1"]);
    // Two simple chains, one through each item, each of four steps; edges are named after
    // their targets in the notation, and the root's step has none.
    let mut paths: Vec<Vec<(String, Option<String>)>> = held
        .paths
        .iter()
        .map(|path| {
            path.iter()
                .map(|step| (step.object.name.clone(), step.edge.clone()))
                .collect()
        })
        .collect();
    paths.sort();
    let step = |name: &str, edge: Option<&str>| (name.to_owned(), edge.map(str::to_owned));
    assert_eq!(
        paths,
        [
            vec![
                step("root", None),
                step("Cache#1", Some("Cache#1")),
                step("Item#1", Some("Item#1")),
                step("Blob#1", Some("Blob#1")),
            ],
            vec![
                step("root", None),
                step("Cache#1", Some("Cache#1")),
                step("Item#2", Some("Item#2")),
                step("Blob#1", Some("Blob#1")),
            ],
        ]
    );
    assert_eq!(held.path_counts, [1, 1]);
    // One chain when one is asked for.
    let one = who_holds(
        &graph,
        &analysis,
        node(&graph, "Blob#1"),
        1,
        ChainOrder::Shortest,
    );
    assert_eq!(one.paths.len(), 1);
    // What only a weak reference reaches has no dominators; its one chain crosses the weak
    // reference, marked with its kind: root → Item#3 -w> Blob#2.
    let weak = who_holds(
        &graph,
        &analysis,
        node(&graph, "Blob#2"),
        5,
        ChainOrder::Explain,
    );
    assert!(weak.dominator_chain.is_empty());
    assert_eq!(weak.held_by, HeldBy::Only(ReferenceKind::Weak));
    let chain: Vec<_> = weak.paths[0]
        .iter()
        .map(|step| (step.object.name.as_str(), step.reference_kind))
        .collect();
    assert_eq!(
        chain,
        [
            ("root", None),
            ("Item#3", None),
            ("Blob#2", Some(ReferenceKind::Weak))
        ]
    );
    assert_eq!(weak.paths.len(), 1);
    // The lone object: nothing holds it.
    let lone = who_holds(
        &graph,
        &analysis,
        node(&graph, "lone"),
        5,
        ChainOrder::Explain,
    );
    assert_eq!(lone.held_by, HeldBy::Nothing);
    assert!(lone.paths.is_empty());
}

#[test]
fn the_dominator_tree_stops_at_its_depth_and_hides_small_children() {
    let graph = graph(CACHE);
    let analysis = analysis_of(&graph);
    let tree = dominator_tree(&graph, &analysis, 1, 0.5);
    assert_eq!(tree.total_retained, 165);
    let rows: Vec<_> = tree
        .nodes
        .iter()
        .map(|row| (row.object.name.as_str(), row.depth, row.hidden_children))
        .collect();
    // The root shows the cache (160/165) and hides Item#3 (5/165); at depth 1 the cache's
    // three children (two items and the blob) are all beyond the depth.
    assert_eq!(rows, [("root", 0, 1), ("Cache#1", 1, 3)]);
    assert!((tree.nodes[1].share - 160.0 / 165.0).abs() < 1e-12);
    // Deeper and with no share limit: every reachable node, each child after its parent,
    // larger first.
    let all = dominator_tree(&graph, &analysis, 5, 0.0);
    let names: Vec<_> = all
        .nodes
        .iter()
        .map(|row| (row.object.name.as_str(), row.depth))
        .collect();
    assert_eq!(
        names,
        [
            ("root", 0),
            ("Cache#1", 1),
            ("Blob#1", 2),
            ("Item#2", 2),
            ("Item#1", 2),
            ("Item#3", 1),
        ]
    );
}

/// A cache whose map holds three entries, and three items held from the root each alone.
/// Retained: Map#1 20 + 3 × 100 = 320, Cache#1 330, the root 330 + 3 × 40 + 30 = 480. At the
/// default 10% threshold a suspect retains at least 48 bytes.
const SUSPECTS: &str = "root -> Cache#1: 10; Cache#1 -> Map#1: 20; Map#1 -> Entry#1: 100;
    Map#1 -> Entry#2: 100; Map#1 -> Entry#3: 100; root -> Item#1: 40; root -> Item#2: 40;
    root -> Item#3: 40; root -> small: 30";

#[test]
fn suspects_are_the_big_object_and_the_type_of_many_instances() {
    let graph = graph(SUSPECTS);
    let analysis = analysis_of(&graph);
    let view = suspects(&graph, &analysis, 0.1);
    assert_eq!(view.total_retained, 480);
    assert_eq!(view.suspects.len(), 2, "{:#?}", view.suspects);
    // The cache retains 330 (69%); the walk goes down to the map, which keeps 320 of it (over
    // 80%), and stops there: no entry keeps 80% of the map's 320.
    let cache = &view.suspects[0];
    assert_eq!(cache.rule, SuspectRule::SingleObject);
    assert_eq!(cache.object.as_ref().unwrap().name, "Cache#1");
    assert_eq!((cache.count, cache.retained_size), (1, 330));
    assert!((cache.share - 330.0 / 480.0).abs() < 1e-12);
    assert_eq!(cache.accumulation_point.as_ref().unwrap().name, "Map#1");
    let accumulated: Vec<_> = cache
        .accumulated
        .iter()
        .map(|row| (row.type_name.as_str(), row.count, row.retained_size))
        .collect();
    assert_eq!(accumulated, [("Entry", 3, 300)]);
    let path: Vec<_> = cache
        .path
        .iter()
        .map(|step| step.object.name.as_str())
        .collect();
    assert_eq!(path, ["root", "Cache#1", "Map#1"]);
    let entry_path = &cache.entry_path;
    assert_eq!(entry_path.len(), 4, "root, cache, map and one entry");
    assert_eq!(entry_path[3].object.type_name, "Entry");
    // No item reaches 48 bytes alone; the three together retain 120 (25%).
    let items = &view.suspects[1];
    assert_eq!(items.rule, SuspectRule::ManyInstances);
    assert_eq!(items.type_name, "Item");
    assert_eq!((items.count, items.retained_size), (3, 120));
    assert!(items.accumulation_point.is_none());
    // At 70% nothing qualifies: the cache holds 69%.
    assert!(suspects(&graph, &analysis, 0.7).suspects.is_empty());
}

/// Java strings: two that share one `value` array (as strings sliced from one `char[]` did
/// before JDK 7u6), and one with an array of its own. Every token is its own string value in
/// the notation, so no value repeats.
const STRINGS: &str = "root -> java.lang.String#a: 24; root -> java.lang.String#b: 24;
    root -> java.lang.String#c: 24; java.lang.String#a -> value: 40;
    java.lang.String#b -> value; java.lang.String#c -> other: 16";

#[test]
fn strings_count_a_shared_array_in_the_total_and_in_no_value() {
    let graph = graph(STRINGS);
    // The edges are named after their targets: rename nothing, the `value` edge is the array.
    let view = strings(&graph, false, 10);
    assert_eq!(view.strings, 3);
    // 3 × 24 for the strings, the shared array once (40) and c's array (16)... but only an
    // edge named `value` is a string's array: c's `other` is not.
    assert_eq!(view.total_bytes, 3 * 24 + 40);
    assert_eq!((view.distinct_values, view.duplicated_values), (3, 0));
    assert_eq!(view.wasted_bytes, 0);
    let rows: Vec<_> = view
        .values
        .iter()
        .map(|row| (row.value.as_str(), row.count, row.total_bytes))
        .collect();
    // The shared array belongs to neither value; equal sizes go by value.
    assert_eq!(
        rows,
        [
            ("java.lang.String#a", 1, 24),
            ("java.lang.String#b", 1, 24),
            ("java.lang.String#c", 1, 24),
        ]
    );
    assert_eq!(strings(&graph, false, 1).values.len(), 1);
    assert!(strings(&graph, true, 10).values.is_empty());
}

/// memlab's three snapshots of one process: ids are 1.. in node order, so an object keeps its
/// id across the three when it is named at the same place.
#[test]
fn leaks_are_what_the_target_added_and_the_final_still_holds() {
    // Ids: root 1, App#1 2.
    let baseline = graph("root -> App#1: 10");
    // Two requests, ids 3 and 4.
    let target = graph("root -> App#1: 10; App#1 -e> Req#1: 30; App#1 -e> Req#2: 40");
    // Both requests still held, Req#1 now with a buffer (id 5), and a later object (id 6)
    // that was not in the target.
    let final_ = graph(
        "root -> App#1: 10; App#1 -e> Req#1: 30; App#1 -e> Req#2: 40; Req#1 -> Buf#1: 8;
         root -> Late#1: 3",
    );
    let analysis = analysis_of(&final_);
    let view = leaks(&baseline, &target, &final_, &analysis, 10);
    assert_eq!(view.leaked, 2);
    let kinds: Vec<_> = view
        .kinds
        .iter()
        .map(|kind| (kind.name.as_str(), kind.count, kind.retained_size))
        .collect();
    // Req#1 retains its buffer: 38; Req#2 40. Largest first.
    assert_eq!(kinds, [("Req#2", 1, 40), ("Req#1", 1, 38)]);
    // Both are held in slots of the app, so they share one signature.
    assert_eq!(view.clusters.len(), 1);
    let cluster = &view.clusters[0];
    assert_eq!(
        cluster.signature, "(root).App#1 → App[] → Req",
        "the root is written (root)"
    );
    assert_eq!((cluster.count, cluster.retained_size), (2, 78));
    assert_eq!(cluster.representative.name, "Req#2");
    // `n` bounds the clusters, not the count or the kinds.
    let none = leaks(&baseline, &target, &final_, &analysis, 0);
    assert!(none.clusters.is_empty());
    assert_eq!((none.leaked, none.kinds.len()), (2, 2));
}

/// Finds the accumulation findings of a Python-shaped graph at the default threshold.
fn accumulations_of(notation: &str) -> Vec<heapgraph_analyzer::findings::Finding> {
    let graph = heapgraph_test_support::graph_for(heapgraph_model::Runtime::Python, notation);
    let analysis = analysis_of(&graph);
    heapgraph_analyzer::findings::accumulations(&suspects(&graph, &analysis, 0.1))
}

/// The shape of `examples/async_tasks`' end dump: a service keeps its pending tasks in a set
/// (`background`), and its semaphore's waiters refer to the same tasks, so the set holds them
/// without retaining them. Retained: each task 100 + 1000 = 1100; the set 200 alone; the
/// service 56 + 200 + (50 + 50) + 2 × 1100 = 2556 (the point: no child keeps 80% of it); the
/// heap 2556 + 30.
const TASKS: &str = "root -> __main__.Service#service: 56; root -> small: 30
    __main__.Service#service -> set#background: 200
    set#background -e> _asyncio.Task#1: 100; set#background -e> _asyncio.Task#2: 100
    _asyncio.Task#1 -> bytes#1: 1000; _asyncio.Task#2 -> bytes#2: 1000
    __main__.Service#service -> asyncio.Semaphore#sem: 50
    asyncio.Semaphore#sem -> collections.deque#waiters: 50
    collections.deque#waiters -e> _asyncio.Task#1; collections.deque#waiters -e> _asyncio.Task#2";

#[test]
fn a_set_that_holds_tasks_others_hold_too_is_not_said_to_retain_them() {
    use heapgraph_analyzer::findings::Finding;
    let findings = accumulations_of(TASKS);
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let Finding::Accumulation {
        holder,
        retained,
        retained_by,
        ..
    } = &findings[0]
    else {
        panic!("an accumulation: {findings:#?}")
    };
    assert_eq!(holder.name(), Some("set#background"));
    // The 2556 bytes are the service's (worked out above), not the set's 200.
    assert_eq!(*retained, 2556);
    let by = retained_by.expect("whose figure it is");
    assert_ne!(by, holder.named, "the set does not retain them");
    assert_eq!(holder.path[by].type_name, "__main__.Service");
}

/// The shape of `examples/model_loading`'s dump taken mid-conversion (the README's "At the
/// out-of-memory moment"): the loader's `_checkpoints` keeps two checkpoints alone, and a
/// third that the running conversion's frame (a thread's, a longer chain) holds too. Retained:
/// each checkpoint 272 + its arrays (2 × 1000, 2 × 1000, 1000); `_checkpoints` 224 + 2 × 2272
/// = 4768 (the third is not its alone); the loader 56 + 4768 = 4824; the third checkpoint 1272,
/// a suspect of its own (over 10% of 4824 + 1272 + 3 × 10 = 6126), named by the same
/// container. One holder: one finding, with one figure, the 1272 bytes it holds besides.
const CHECKPOINTS: &str = "root -> __main__.ModelLoader#loader: 56
    __main__.ModelLoader#loader -> dict#_checkpoints: 224
    dict#_checkpoints -e> dict#v1: 272; dict#_checkpoints -e> dict#v2: 272
    dict#_checkpoints -e> dict#v3: 272
    dict#v1 -> numpy.ndarray#a: 1000; dict#v1 -> numpy.ndarray#b: 1000
    dict#v2 -> numpy.ndarray#c: 1000; dict#v2 -> numpy.ndarray#d: 1000
    dict#v3 -> numpy.ndarray#e: 1000
    root -> threading.Thread#main: 10; threading.Thread#main -> frame#run: 10
    frame#run -> frame#to_fp16: 10; frame#to_fp16 -> dict#v3";

#[test]
fn a_holder_two_suspects_name_is_one_finding_with_one_figure() {
    use heapgraph_analyzer::findings::Finding;
    let findings = accumulations_of(CHECKPOINTS);
    let named: Vec<_> = findings
        .iter()
        .filter_map(|finding| match finding {
            Finding::Accumulation {
                holder,
                retained,
                retained_by,
                also_holds,
                ..
            } => Some((
                holder.name().map(str::to_owned),
                *retained,
                retained_by.map(|at| holder.path[at].label.clone()),
                *also_holds,
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        named,
        [(
            Some("dict#_checkpoints".to_owned()),
            4768,
            Some(Some("dict#_checkpoints".to_owned())),
            1272
        )]
    );
}
