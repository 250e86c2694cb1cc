//! objgraph's questions that need no dominators: the references into an object, some levels
//! up (`show_backrefs`), and the objects nothing dumped refers to (`get_leaking_objects`).

use crate::Analysis;
use crate::queries::{edge_text, object_view};
use crate::view::ObjectView;
use heapgraph_model::{EdgeKind, HeapGraph, NodeId};
use std::collections::VecDeque;

/// The objects that refer to a target, up to some depth, as a small graph.
#[derive(Clone, Debug)]
pub struct BackrefsView {
    /// The target first, then the referrers in breadth-first order.
    pub objects: Vec<ObjectView>,
    /// `(from, to, edge name, weak)`, indices into `objects`.
    pub references: Vec<(usize, usize, String, bool)>,
    /// Objects left out because the graph reached its size bound.
    pub truncated: usize,
}

/// The referrers of `target`, breadth first, `depth` references up, at most `max_objects`
/// objects. Synthetic roots are shown but not followed further.
///
/// Complexity: O(visited objects + their references), one `VecDeque` and a visited map.
pub fn backrefs(
    graph: &HeapGraph,
    analysis: &Analysis,
    target: NodeId,
    depth: u32,
    max_objects: usize,
) -> BackrefsView {
    let reverse = graph.reverse();
    let mut position = rustc_hash::FxHashMap::default();
    let mut order: Vec<NodeId> = vec![target];
    position.insert(target, 0usize);
    let mut references = Vec::new();
    let mut truncated = 0;
    let mut queue = VecDeque::from([(target, 0u32)]);
    while let Some((node, level)) = queue.pop_front() {
        if level >= depth || (graph.is_synthetic(node) && node != target) {
            continue;
        }
        let to = position[&node];
        for (from, edge) in reverse.retainers(node) {
            let at = match position.get(&from) {
                Some(&at) => at,
                None if order.len() < max_objects => {
                    position.insert(from, order.len());
                    order.push(from);
                    queue.push_back((from, level + 1));
                    order.len() - 1
                }
                None => {
                    truncated += 1;
                    continue;
                }
            };
            let weak = graph.edge_kind(edge) == EdgeKind::Weak;
            references.push((at, to, edge_text(graph, edge), weak));
        }
    }
    BackrefsView {
        objects: order
            .into_iter()
            .map(|node| object_view(graph, analysis, node))
            .collect(),
        references,
        truncated,
    }
}

/// Objects that no dumped object of their own kind refers to: objgraph's
/// `get_leaking_objects`, which for a Python dump (kind `object`: what the garbage collector
/// tracks) finds objects held only by C code, or leaked by a missing `Py_DECREF`. Weak
/// references do not count as referring. Largest first (by shallow size, then node index).
///
/// Complexity: O(V + E).
pub fn unreferenced(graph: &HeapGraph, kind: &str) -> Option<Vec<NodeId>> {
    let parts = graph.parts();
    let kind = parts.node_kinds.iter().position(|info| info.name == kind)? as u8;
    let mut referred = vec![false; graph.node_count()];
    for node in graph.nodes() {
        if parts.node_kind[node.index()] != kind {
            continue;
        }
        for edge in graph.edge_range(node) {
            if graph.edge_kind(edge) != EdgeKind::Weak {
                referred[graph.edge_target(edge).index()] = true;
            }
        }
    }
    let mut found: Vec<NodeId> = graph
        .nodes()
        .filter(|node| parts.node_kind[node.index()] == kind && !referred[node.index()])
        .collect();
    found.sort_by_key(|&node| (std::cmp::Reverse(graph.shallow_size(node)), node));
    Some(found)
}

/// The references that make Python's module and class objects hold "a great deal" (meliae's
/// "expensive references"): references to a module from anything but the root, an instance's
/// reference to its class (`__class__`), and references to a module's namespace from anything
/// but its module (functions' `__globals__`, frames' `f_locals`). Leaving them out of the
/// dominator tree shows what user code itself holds.
///
/// Complexity: O(V + E).
pub fn expensive_references(graph: &HeapGraph) -> Vec<usize> {
    let root = graph.root();
    let is_module: Vec<bool> = graph
        .nodes()
        .map(|node| graph.type_name(node) == "builtins.module")
        .collect();
    let named = |edge: usize, name: &str| matches!(graph.edge_name(edge), heapgraph_model::EdgeName::Named(text) if text == name);
    let mut is_namespace = vec![false; graph.node_count()];
    for node in graph.nodes().filter(|node| is_module[node.index()]) {
        for edge in graph.edge_range(node) {
            if named(edge, "__dict__") {
                is_namespace[graph.edge_target(edge).index()] = true;
            }
        }
    }
    let mut expensive = Vec::new();
    for node in graph.nodes() {
        if node == root {
            continue;
        }
        for edge in graph.edge_range(node) {
            let target = graph.edge_target(edge).index();
            let own_namespace = is_module[node.index()] && named(edge, "__dict__");
            if is_module[target]
                || named(edge, "__class__")
                || (is_namespace[target] && !own_namespace)
            {
                expensive.push(edge);
            }
        }
    }
    expensive
}

/// Objects no dumped object refers to, by type, and the largest of them.
#[derive(Clone, Debug)]
pub struct LeakingView {
    /// How many there are.
    pub count: u64,
    /// Their shallow sizes.
    pub shallow_size: u64,
    /// By type: `(type, count, shallow size)`, most first (then by name).
    pub by_type: Vec<(String, u64, u64)>,
    /// The largest, at most the number asked for.
    pub objects: Vec<ObjectView>,
}

/// [`unreferenced`] objects of `kind` as a view with the `n` largest; `None` when no node has
/// that kind.
pub fn leaking(
    graph: &HeapGraph,
    analysis: &Analysis,
    kind: &str,
    n: usize,
) -> Option<LeakingView> {
    let found = unreferenced(graph, kind)?;
    let mut by_type: rustc_hash::FxHashMap<&str, (u64, u64)> = rustc_hash::FxHashMap::default();
    let mut shallow_size = 0;
    for &node in &found {
        let size = graph.shallow_size(node);
        shallow_size += size;
        let entry = by_type.entry(graph.type_name(node)).or_default();
        entry.0 += 1;
        entry.1 += size;
    }
    let mut by_type: Vec<(String, u64, u64)> = by_type
        .into_iter()
        .map(|(name, (count, size))| (name.to_owned(), count, size))
        .collect();
    by_type.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Some(LeakingView {
        count: found.len() as u64,
        shallow_size,
        by_type,
        objects: found
            .iter()
            .take(n)
            .map(|&node| object_view(graph, analysis, node))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EdgeRule, Options, analyze};
    use heapgraph_test_support::graph;

    #[test]
    fn unreferenced_objects_are_those_no_object_of_their_kind_refers_to() {
        // Weak references do not count as referring.
        let g = graph("root -> a: 8; a -> b: 8; root -> c: 8; a -w> c");
        let names: Vec<&str> = unreferenced(&g, "object")
            .expect("the notation's kind")
            .into_iter()
            .map(|n| g.name(n))
            .collect();
        assert_eq!(names, ["a", "c"]);
        assert!(unreferenced(&g, "no such kind").is_none());
    }

    #[test]
    fn backrefs_walk_up_to_the_depth() {
        let g = graph("root -> a: 8; a -> b: 8; b -> c: 8; root -> d: 8; d -> c: 8");
        let analysis = analyze(
            &g,
            &Options {
                edge_rule: EdgeRule::for_runtime(g.meta().runtime),
            },
        );
        let c = g.nodes().find(|&n| g.name(n) == "c").unwrap();
        let one = backrefs(&g, &analysis, c, 1, 100);
        let names: Vec<&str> = one.objects.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["c", "b", "d"]);
        assert_eq!(one.references.len(), 2);
        let all = backrefs(&g, &analysis, c, 10, 100);
        assert_eq!(all.objects.len(), 5, "c, b, d, a and the root");
        let capped = backrefs(&g, &analysis, c, 10, 2);
        assert_eq!(capped.objects.len(), 2);
        assert!(capped.truncated > 0);
    }
}
