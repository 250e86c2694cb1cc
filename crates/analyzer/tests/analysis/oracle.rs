//! The analyzer against simple oracles on thousands of random graphs: petgraph's
//! `simple_fast` for dominators, brute force for retained sizes, type totals and chains.

use heapgraph_analyzer::{
    ChainOrder, EdgeRule, HeldBy, Options, RankBy, ReferenceKind, analyze, summary, top, who_holds,
};
use heapgraph_model::{EdgeKind, HeapGraph, NodeId, Runtime};
use heapgraph_test_support::{graph, graph_from_edges};
use petgraph::algo::dominators::simple_fast;
use petgraph::visit::EdgeFiltered;
use proptest::prelude::*;
use rustc_hash::FxHashSet as HashSet;
use std::collections::VecDeque;

fn options() -> Options {
    Options {
        edge_rule: EdgeRule::for_runtime(Runtime::Java),
    }
}

fn random_graph() -> impl Strategy<Value = HeapGraph> {
    graphs_up_to(40, 3)
}

/// Graphs small enough to enumerate every simple chain (that count grows exponentially).
fn small_graph() -> impl Strategy<Value = HeapGraph> {
    graphs_up_to(10, 2)
}

fn graphs_up_to(max_nodes: usize, edges_per_node: usize) -> impl Strategy<Value = HeapGraph> {
    (1usize..max_nodes).prop_flat_map(move |n| {
        let sizes = proptest::collection::vec(0u64..100, n);
        let edges = proptest::collection::vec(
            (0..n as u32, 0..n as u32, prop_oneof![8 => Just(EdgeKind::Property), 1 => Just(EdgeKind::Weak), 1 => Just(EdgeKind::Element)]),
            0..n * edges_per_node,
        );
        (sizes, edges).prop_map(|(sizes, edges)| graph_from_edges(&sizes, &edges))
    })
}

/// Breadth-first distances over non-weak edges, the oracle for distances.
fn oracle_distances(graph: &HeapGraph) -> Vec<Option<u32>> {
    let mut distance = vec![None; graph.node_count()];
    distance[0] = Some(0);
    let mut queue = VecDeque::from([graph.root()]);
    while let Some(node) = queue.pop_front() {
        for edge in graph.edge_range(node) {
            let to = graph.edge_target(edge);
            if graph.edge_kind(edge) != EdgeKind::Weak && distance[to.index()].is_none() {
                distance[to.index()] = Some(distance[node.index()].unwrap_or(0) + 1);
                queue.push_back(to);
            }
        }
    }
    distance
}

/// Which nodes a search from the root reaches over non-weak edges, and over all edges: the
/// oracle for what holds each object (strong references, weak ones only, or nothing).
fn oracle_held_by(graph: &HeapGraph) -> Vec<HeldBy> {
    let reach = |weak_too: bool| {
        let mut seen = vec![false; graph.node_count()];
        seen[0] = true;
        let mut stack = vec![graph.root()];
        while let Some(node) = stack.pop() {
            for edge in graph.edge_range(node) {
                let to = graph.edge_target(edge);
                let follows = weak_too || graph.edge_kind(edge) != EdgeKind::Weak;
                if follows && to != node && !seen[to.index()] {
                    seen[to.index()] = true;
                    stack.push(to);
                }
            }
        }
        seen
    };
    let (strong, any) = (reach(false), reach(true));
    (0..graph.node_count())
        .map(|node| match (strong[node], any[node]) {
            (true, _) => HeldBy::Strong,
            (false, true) => HeldBy::Only(ReferenceKind::Weak),
            (false, false) => HeldBy::Nothing,
        })
        .collect()
}

/// All simple chain lengths from the root to `target` (brute force), over non-weak edges or,
/// with `weak_too`, over all.
fn chain_lengths(graph: &HeapGraph, target: NodeId, weak_too: bool) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut stack = vec![(graph.root(), vec![graph.root()])];
    while let Some((node, chain)) = stack.pop() {
        if node == target {
            lengths.push(chain.len() - 1);
            continue;
        }
        for edge in graph.edge_range(node) {
            let to = graph.edge_target(edge);
            let follows = weak_too || graph.edge_kind(edge) != EdgeKind::Weak;
            if follows && !chain.contains(&to) {
                let mut longer = chain.clone();
                longer.push(to);
                stack.push((to, longer));
            }
        }
    }
    lengths.sort_unstable();
    lengths
}

/// The dominator tree, retained sizes and distances against petgraph's `simple_fast`, brute
/// force and breadth-first search.
fn check_dominators(graph: &HeapGraph) -> Result<(), TestCaseError> {
    let analysis = analyze(graph, &options());
    let tree = &analysis.dominators;
    let strong = EdgeFiltered::from_fn(graph, |edge: heapgraph_model::EdgeView| {
        edge.kind() != EdgeKind::Weak
    });
    let oracle = simple_fast(&strong, graph.root());
    for node in graph.nodes() {
        let oracle_reachable = oracle.immediate_dominator(node).is_some() || node == graph.root();
        prop_assert_eq!(
            tree.reachable[node.index()],
            oracle_reachable,
            "reachability of {:?}",
            node
        );
        if oracle_reachable {
            prop_assert_eq!(
                tree.immediate_dominator(graph, node),
                oracle.immediate_dominator(node)
            );
        }
    }
    // Retained size: the shallow sizes of everything a node dominates, by brute force.
    for node in graph.nodes().filter(|n| tree.reachable[n.index()]) {
        let mut expected = 0;
        for other in graph.nodes().filter(|n| tree.reachable[n.index()]) {
            if oracle
                .dominators(other)
                .is_some_and(|mut chain| chain.any(|d| d == node))
            {
                expected += graph.shallow_size(other);
            }
        }
        prop_assert_eq!(tree.retained_size.get(node.index()), expected);
    }
    let reachable_size: u64 = graph
        .nodes()
        .filter(|n| tree.reachable[n.index()])
        .map(|n| graph.shallow_size(n))
        .sum();
    prop_assert_eq!(tree.retained_size.get(graph.root().index()), reachable_size);
    let expected_distance = oracle_distances(graph);
    for node in graph.nodes() {
        let got = (analysis.distances(graph)[node.index()] != heapgraph_analyzer::NO_DISTANCE)
            .then_some(analysis.distances(graph)[node.index()]);
        prop_assert_eq!(got, expected_distance[node.index()]);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn dominators_match_petgraph(graph in random_graph()) {
        check_dominators(&graph)?;
    }

    #[test]
    fn type_retained_counts_nested_instances_once(graph in random_graph()) {
        let analysis = analyze(&graph, &options());
        let tree = &analysis.dominators;
        let view = summary(&graph, &analysis);
        for row in &view.types {
            let mut count = 0;
            let mut shallow = 0;
            let mut retained = 0;
            for node in graph.nodes().filter(|&n| !graph.is_synthetic(n) && graph.type_name(n) == row.type_name) {
                count += 1;
                shallow += graph.shallow_size(node);
                if !tree.reachable[node.index()] {
                    continue;
                }
                let mut above = tree.immediate_dominator(&graph, node);
                let mut nested = false;
                while let Some(ancestor) = above {
                    if !graph.is_synthetic(ancestor) && graph.type_name(ancestor) == row.type_name {
                        nested = true;
                    }
                    above = tree.immediate_dominator(&graph, ancestor);
                }
                if !nested {
                    retained += tree.retained_size.get(node.index());
                }
            }
            prop_assert_eq!((row.count, row.shallow_size, row.retained_size), (count, shallow, retained), "type {}", row.type_name);
        }
    }

    #[test]
    fn held_by_and_the_summary_split_match_two_searches(graph in random_graph()) {
        let analysis = analyze(&graph, &options());
        let oracle = oracle_held_by(&graph);
        let (mut weak, mut garbage) = ((0u64, 0u64), (0u64, 0u64));
        for node in graph.nodes() {
            prop_assert_eq!(analysis.held_by(&graph, node), oracle[node.index()], "{:?}", node);
            if graph.is_synthetic(node) {
                continue;
            }
            let size = graph.shallow_size(node);
            match oracle[node.index()] {
                HeldBy::Only(_) => weak = (weak.0 + 1, weak.1 + size),
                HeldBy::Nothing => garbage = (garbage.0 + 1, garbage.1 + size),
                HeldBy::Strong => {}
            }
        }
        let view = summary(&graph, &analysis);
        let rows: Vec<(ReferenceKind, u64, u64)> =
            view.weakly_held.iter().map(|row| (row.kind, row.objects, row.size)).collect();
        let expected: Vec<(ReferenceKind, u64, u64)> = if weak.0 > 0 {
            vec![(ReferenceKind::Weak, weak.0, weak.1)]
        } else {
            Vec::new()
        };
        prop_assert_eq!(rows, expected);
        prop_assert_eq!((view.garbage_objects, view.garbage_size), garbage);
        // Every weakly held object is counted once among the rows that say through what.
        let through: u64 = view.weakly_held.iter().flat_map(|row| &row.through).map(|row| row.objects).sum();
        prop_assert!(through <= weak.0);
        prop_assert_eq!(view.unreachable_objects, weak.0 + garbage.0);
    }

    #[test]
    fn chains_are_the_shortest_simple_chains(graph in small_graph(), k in 1usize..5) {
        let analysis = analyze(&graph, &options());
        for target in graph.nodes().skip(1).take(6) {
            let view = who_holds(&graph, &analysis, target, k, ChainOrder::Shortest);
            // Objects that weak references alone hold get the chains that cross them.
            let weakly_held = view.held_by == HeldBy::Only(ReferenceKind::Weak);
            let lengths = chain_lengths(&graph, target, weakly_held);
            let expected: Vec<usize> = lengths.iter().copied().take(k).collect();
            let got: Vec<usize> = view.paths.iter().map(|path| path.len() - 1).collect();
            prop_assert_eq!(&got, &expected, "chain lengths to {:?}", target);
            let mut distinct = HashSet::default();
            for path in &view.paths {
                prop_assert_eq!(path[0].object.node, graph.root());
                prop_assert_eq!(path.last().map(|step| step.object.node), Some(target));
                prop_assert!(path[0].edge.is_none());
                let nodes: Vec<NodeId> = path.iter().map(|step| step.object.node).collect();
                let unique: HashSet<_> = nodes.iter().collect();
                prop_assert_eq!(unique.len(), nodes.len(), "chain repeats a node");
                let steps: Vec<(NodeId, Option<String>)> = path.iter().map(|step| (step.object.node, step.edge.clone())).collect();
                prop_assert!(distinct.insert(steps), "chain returned twice");
                for pair in nodes.windows(2) {
                    let linked = graph.edge_range(pair[0]).any(|e| graph.edge_target(e) == pair[1] && (weakly_held || graph.edge_kind(e) != EdgeKind::Weak));
                    prop_assert!(linked, "no strong edge between chain steps");
                }
                for step in path {
                    let weak_step = step.edge_kind == Some("weak");
                    prop_assert_eq!(step.reference_kind.is_some(), weak_step);
                }
                if weakly_held {
                    prop_assert!(path.iter().any(|step| step.reference_kind == Some(ReferenceKind::Weak)));
                }
            }
        }
    }
}

proptest! {
    #[test]
    fn chains_that_explain_are_real_chains_one_per_root(graph in small_graph(), k in 1usize..5) {
        let analysis = analyze(&graph, &options());
        for target in graph.nodes().skip(1).take(6) {
            let view = who_holds(&graph, &analysis, target, k, ChainOrder::Explain);
            let shortest = who_holds(&graph, &analysis, target, 1, ChainOrder::Shortest);
            // A target the root reaches gets a chain either way, and none that it does not.
            prop_assert_eq!(view.paths.is_empty(), shortest.paths.is_empty());
            prop_assert!(view.paths.len() <= k);
            prop_assert_eq!(view.path_counts.len(), view.paths.len());
            // Only what weak references alone hold is reached through them.
            let crosses_weak = view.held_by != HeldBy::Strong;
            let mut roots = HashSet::default();
            for path in &view.paths {
                prop_assert_eq!(path[0].object.node, graph.root());
                prop_assert_eq!(path.last().map(|step| step.object.node), Some(target));
                prop_assert!(roots.insert(path[1].object.node), "two chains from one root");
                for pair in path.windows(2) {
                    let linked = graph.edge_range(pair[0].object.node).any(|e| {
                        graph.edge_target(e) == pair[1].object.node
                            && (crosses_weak || graph.edge_kind(e) != EdgeKind::Weak)
                    });
                    prop_assert!(linked, "no edge it may cross between chain steps");
                }
            }
        }
    }
}

#[test]
fn a_ten_million_link_chain_does_not_overflow_the_stack() {
    let n = 10_000_000u32;
    let sizes = vec![1u64; n as usize];
    let edges: Vec<(u32, u32, EdgeKind)> =
        (0..n - 1).map(|i| (i, i + 1, EdgeKind::Property)).collect();
    let graph = graph_from_edges(&sizes, &edges);
    drop(edges);
    let analysis = analyze(&graph, &options());
    assert_eq!(analysis.dominators.retained_size.get(0), u64::from(n));
    assert_eq!(analysis.dominators.retained_size.get(1), u64::from(n - 1));
    assert_eq!(analysis.distances(&graph)[(n - 1) as usize], n - 1);
    let last = graph.node((n - 1) as usize).expect("last node");
    let view = who_holds(&graph, &analysis, last, 1, ChainOrder::Shortest);
    assert_eq!(view.dominator_chain.len(), n as usize);
    assert_eq!(view.paths[0].len(), n as usize);
}

#[test]
fn weak_edges_do_not_retain_and_top_ranks_by_retained_size() {
    let graph = graph(
        "root -> cache: 8; cache -> Item#1: 16; cache -> Item#2: 16; root -> index: 4; index -w> Item#1",
    );
    let analysis = analyze(&graph, &options());
    let ranked = top(&graph, &analysis, RankBy::Retained, 2);
    assert_eq!(ranked[0].name, "cache");
    assert_eq!(ranked[0].retained_size, Some(40));
    assert_eq!(ranked[1].retained_size, Some(16));
    let view = summary(&graph, &analysis);
    let item = view
        .types
        .iter()
        .find(|row| row.type_name == "Item")
        .expect("Item row");
    assert_eq!(
        (item.count, item.shallow_size, item.retained_size),
        (2, 32, 32)
    );
}

#[test]
fn unreachable_objects_are_counted_apart() {
    let graph = graph("root -> a: 1; orphan: 7; orphan -> b: 2; a -w> c: 3");
    let analysis = analyze(&graph, &options());
    let view = summary(&graph, &analysis);
    assert_eq!((view.reachable_objects, view.reachable_size), (1, 1));
    assert_eq!((view.unreachable_objects, view.unreachable_size), (3, 12));
    assert_eq!(analysis.dominators.retained_size.get(0), 1);
    let orphan = graph.find_object(3).expect("orphan");
    let holders = who_holds(&graph, &analysis, orphan, 3, ChainOrder::Explain);
    assert!(holders.dominator_chain.is_empty());
    assert!(holders.paths.is_empty());
    assert_eq!(holders.held_by, HeldBy::Nothing);
    assert_eq!(holders.target.distance, None);
    // c is held by a's weak reference only; orphan and b by nothing.
    let weak: Vec<_> = view
        .weakly_held
        .iter()
        .map(|row| (row.kind, row.objects, row.size))
        .collect();
    assert_eq!(weak, [(ReferenceKind::Weak, 1, 3)]);
    assert_eq!((view.garbage_objects, view.garbage_size), (2, 9));
    let c = graph
        .nodes()
        .find(|&node| graph.name(node) == "c")
        .expect("c");
    let holders = who_holds(&graph, &analysis, c, 3, ChainOrder::Explain);
    assert_eq!(holders.held_by, HeldBy::Only(ReferenceKind::Weak));
    assert!(holders.dominator_chain.is_empty());
    let chain: Vec<_> = holders.paths[0]
        .iter()
        .map(|step| (step.object.name.as_str(), step.reference_kind))
        .collect();
    assert_eq!(
        chain,
        [
            ("root", None),
            ("a", None),
            ("c", Some(ReferenceKind::Weak))
        ]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Dense graphs, where many vertices have 16 predecessors or more (which the lean order of
    /// the dominator pass packs; the unit tests check that order against this one).
    #[test]
    fn dominators_match_petgraph_on_dense_graphs(graph in graphs_up_to(80, 24)) {
        check_dominators(&graph)?;
    }
}
