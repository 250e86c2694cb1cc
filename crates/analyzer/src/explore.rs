//! Paged views for exploring a dump a step at a time (`heapgraph serve`): an object's
//! references out and in, the instances of a type biggest first, and the dominator tree one
//! level at a time, each page cut from lists of any length.
//!
//! An [`Explorer`] holds the indexes that make each step cheap, each built once per dump on
//! first use: the dominator tree's child lists; the nodes in id order, unless the dump's object
//! ids already rise with the node index; the objects in order of type and size, so that a page
//! of instances is a slice; and the distances the holder chains are searched by
//! ([`crate::ChainIndex`]). A page of a node's children is chosen with a bounded heap, so that the
//! first page of a million-long list costs one pass over it and no list-sized buffer.

use crate::queries::{edge_text, object_view};
use crate::view::{DominatorTreeNode, ObjectView};
use crate::{Analysis, ChainOrder, HoldersView};
use heapgraph_model::{HeapGraph, NodeId};
use rayon::slice::ParallelSliceMut;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::OnceLock;

/// Which part of a list to show: `limit` items from position `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// The position of the first item shown, from 0.
    pub offset: usize,
    /// The most items shown.
    pub limit: usize,
}

/// A page of the instances of one type, by retained size (then shallow size), largest first.
#[derive(Clone, Debug, PartialEq)]
pub struct InstancesView {
    /// The type.
    pub type_name: String,
    /// Instances of the type in the dump (real objects only).
    pub total: u64,
    /// The position of the first instance listed.
    pub offset: usize,
    /// The instances listed.
    pub objects: Vec<ObjectView>,
}

/// One reference, seen from one of its ends.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    /// The edge's name: a property name or `[index]`.
    pub edge: String,
    /// The edge's kind (`property`, `element`, `weak`, …).
    pub edge_kind: &'static str,
    /// The object at the other end: the target of a reference out, the holder of one in.
    pub object: ObjectView,
}

/// A page of an object's references out of it (its fields) or into it (its referrers), in
/// the dump's edge order.
#[derive(Clone, Debug, PartialEq)]
pub struct ReferencesView {
    /// The object.
    pub object: ObjectView,
    /// Its references in that direction.
    pub total: u64,
    /// The position of the first reference listed.
    pub offset: usize,
    /// The references listed.
    pub references: Vec<Reference>,
}

/// A page of one node's children in the dominator tree, by retained size, largest first.
#[derive(Clone, Debug, PartialEq)]
pub struct ChildrenView {
    /// The parent.
    pub parent: ObjectView,
    /// The parent's depth below the root (the root is 0).
    pub depth: u32,
    /// The root's retained size, which shares are taken of (as in the dominator tree view).
    pub total_retained: u64,
    /// The parent's children in the tree.
    pub total: u64,
    /// The position of the first child listed.
    pub offset: usize,
    /// The children listed; each one's `hidden_children` is the number of its own children,
    /// none of which are listed here.
    pub children: Vec<DominatorTreeNode>,
}

/// How to find a node by its runtime object id.
enum IdIndex {
    /// The ids rise (not strictly) with the node index: a binary search over the column.
    Ascending,
    /// Node indices in order of (id, index).
    Sorted(Vec<u32>),
}

/// The indexes behind the paged views of one graph and its analysis, each built on first use
/// (or all at once by [`Explorer::warm`], on a thread of its own while the first pages are
/// already answered): a view waits only for the index it reads.
#[derive(Default)]
pub struct Explorer {
    ids: OnceLock<IdIndex>,
    /// The real objects in order of (type, retained size largest first, shallow size largest
    /// first, node index): a type's instances are one run of it, already in page order.
    by_type: OnceLock<Vec<u32>>,
}

impl Explorer {
    /// An explorer with no index built yet.
    pub fn new() -> Explorer {
        Explorer::default()
    }

    /// Builds every index, and everything the views read that is otherwise computed on first
    /// use (the reverse edges, the distances, the per-type totals), so that no page is slow
    /// because it came first: one after the other, so that one builder's scratch memory is
    /// held at a time (each uses every core itself), the ones the first pages read first.
    /// Call it from a thread that is not rayon's: a builder sorts with rayon while it holds
    /// its cell, and a rayon worker that waited on a cell could be holding, lower on its
    /// stack, the very sort job the cell's builder waits for (a work-stealing deadlock).
    ///
    /// Complexity: O(V log V + E) time (the sorts by id and by type, the searches of
    /// [`crate::ChainIndex`]); auxiliary space about a byte per reachable node for the child lists,
    /// 4 bytes per object for the type order, 4 per node for the chain distances, plus 4 bytes
    /// per node for the id order when it is needed.
    pub fn warm(&self, graph: &HeapGraph, analysis: &Analysis) {
        self.id_index(graph);
        graph.reverse();
        analysis.dominator_children(graph);
        self.type_order(graph, analysis);
        // The distances after the index, which gives them without a search of their own.
        analysis.chain_index(graph);
        analysis.distances(graph);
        analysis.type_totals(graph);
    }

    fn id_index(&self, graph: &HeapGraph) -> &IdIndex {
        self.ids
            .get_or_init(|| heapgraph_model::timed("id index", || id_index(graph)))
    }

    fn type_order(&self, graph: &HeapGraph, analysis: &Analysis) -> &[u32] {
        self.by_type.get_or_init(|| {
            heapgraph_model::timed("type order", || {
                heapgraph_model::file_pages::page_out(type_order(graph, analysis))
            })
        })
    }

    /// The first node (in node order) whose runtime object id is `object_id`.
    ///
    /// Complexity: O(log V) once the id index is built.
    pub fn find(&self, graph: &HeapGraph, object_id: u64) -> Option<NodeId> {
        let ids = &graph.parts().node_object_id;
        let n_nodes = graph.node_count();
        let position = match self.id_index(graph) {
            IdIndex::Ascending => {
                let at = partition(n_nodes, |i| ids.get(i) < object_id);
                (at < n_nodes && ids.get(at) == object_id).then_some(at)
            }
            IdIndex::Sorted(order) => {
                let at = partition(order.len(), |i| ids.get(order[i] as usize) < object_id);
                (at < order.len() && ids.get(order[at] as usize) == object_id)
                    .then(|| order[at] as usize)
            }
        };
        position.and_then(|index| graph.node(index))
    }

    /// The node indices of every instance of `type_name` (real objects), in [`Self::instances`]'
    /// order; `None` when no string of the dump is that name.
    ///
    /// Complexity: O(log V) once the type order is built.
    pub fn instances_of(
        &self,
        graph: &HeapGraph,
        analysis: &Analysis,
        type_name: &str,
    ) -> Option<&[u32]> {
        let type_id = graph.strings().find(type_name)?;
        let types = &graph.parts().node_type;
        let order = self.type_order(graph, analysis);
        let start = partition(order.len(), |i| types.get(order[i] as usize) < type_id);
        let end = partition(order.len(), |i| types.get(order[i] as usize) <= type_id);
        Some(&order[start..end])
    }

    /// The instances of `type_name` (real objects), largest retained size first, then largest
    /// shallow size, then node order; `None` when no string of the dump is that name.
    ///
    /// Complexity: O(log V + limit) once the type order is built.
    pub fn instances(
        &self,
        graph: &HeapGraph,
        analysis: &Analysis,
        type_name: &str,
        page: Page,
    ) -> Option<InstancesView> {
        let run = self.instances_of(graph, analysis, type_name)?;
        Some(InstancesView {
            type_name: type_name.to_owned(),
            total: run.len() as u64,
            offset: page.offset,
            objects: run
                .iter()
                .skip(page.offset)
                .take(page.limit)
                .filter_map(|&node| graph.node(node as usize))
                .map(|node| object_view(graph, analysis, node))
                .collect(),
        })
    }

    /// [`crate::who_holds`] of `target`, from the analysis's chain index (built on first use):
    /// the same answer, in the time of the chains it walks.
    pub fn holders(
        &self,
        graph: &HeapGraph,
        analysis: &Analysis,
        target: NodeId,
        n_paths: usize,
        order: ChainOrder,
    ) -> HoldersView {
        crate::who_holds_indexed(graph, analysis, target, n_paths, order)
    }

    /// The references out of `node`, in the dump's order.
    ///
    /// Complexity: O(limit).
    pub fn references(
        &self,
        graph: &HeapGraph,
        analysis: &Analysis,
        node: NodeId,
        page: Page,
    ) -> ReferencesView {
        let edges = graph.edge_range(node);
        let total = edges.len() as u64;
        let references = edges
            .skip(page.offset)
            .take(page.limit)
            .map(|edge| Reference {
                edge: edge_text(graph, edge),
                edge_kind: graph.edge_kind(edge).name(),
                object: object_view(graph, analysis, graph.edge_target(edge)),
            })
            .collect();
        ReferencesView {
            object: object_view(graph, analysis, node),
            total,
            offset: page.offset,
            references,
        }
    }

    /// The references into `node`, by holder in node order.
    ///
    /// Complexity: O(offset + limit).
    pub fn referrers(
        &self,
        graph: &HeapGraph,
        analysis: &Analysis,
        node: NodeId,
        page: Page,
    ) -> ReferencesView {
        let retainers = graph.reverse().retainers(node);
        let total = retainers.len() as u64;
        let references = retainers
            .skip(page.offset)
            .take(page.limit)
            .map(|(holder, edge)| Reference {
                edge: edge_text(graph, edge),
                edge_kind: graph.edge_kind(edge).name(),
                object: object_view(graph, analysis, holder),
            })
            .collect();
        ReferencesView {
            object: object_view(graph, analysis, node),
            total,
            offset: page.offset,
            references,
        }
    }

    /// `node`'s children in the dominator tree, largest retained size first (then node
    /// order), as [`crate::dominator_tree`] orders them. An unreachable node has none.
    ///
    /// Complexity: O(c log(offset + limit)) for c children, plus the children's own child
    /// counts for the page's children.
    pub fn children(
        &self,
        graph: &HeapGraph,
        analysis: &Analysis,
        node: NodeId,
        page: Page,
    ) -> ChildrenView {
        let tree = &analysis.dominators;
        let total_retained = tree.retained_size.get(graph.root().index());
        let share_of = |index: usize| {
            if total_retained == 0 {
                0.0
            } else {
                tree.retained_size.get(index) as f64 / total_retained as f64
            }
        };
        let mut depth = 0u32;
        let mut up = node;
        while let Some(parent) = tree.immediate_dominator(graph, up) {
            depth += 1;
            up = parent;
        }
        let mut total = 0u64;
        let keys = self.kids(graph, analysis, node).map(|kid| {
            total += 1;
            let key = (Reverse(tree.retained_size.get(kid as usize)), kid);
            (key, kid)
        });
        let chosen = smallest(keys, page);
        let children = chosen
            .into_iter()
            .filter_map(|kid| graph.node(kid as usize))
            .map(|kid| DominatorTreeNode {
                object: object_view(graph, analysis, kid),
                depth: depth + 1,
                share: share_of(kid.index()),
                hidden_children: self.kids(graph, analysis, kid).count() as u64,
            })
            .collect();
        ChildrenView {
            parent: object_view(graph, analysis, node),
            depth,
            total_retained,
            total,
            offset: page.offset,
            children,
        }
    }

    /// The dominator-tree children of `node` by index, in index order.
    fn kids<'a>(
        &self,
        graph: &HeapGraph,
        analysis: &'a Analysis,
        node: NodeId,
    ) -> impl Iterator<Item = u32> + 'a {
        analysis.dominator_children(graph).of(node.index())
    }
}

/// The nodes in order of (object id, index), or [`IdIndex::Ascending`] when that is node
/// order already (as in dumps whose ids are addresses written in order, and V8's).
fn id_index(graph: &HeapGraph) -> IdIndex {
    let ids = &graph.parts().node_object_id;
    let mut previous = 0u64;
    let ascending = ids.iter().all(|id| {
        let rising = id >= previous;
        previous = id;
        rising
    });
    if ascending {
        return IdIndex::Ascending;
    }
    let mut order: Vec<u32> = (0..graph.node_count() as u32).collect();
    // The index breaks ties, so the first node of an id sorts first (as `find_object` finds).
    order.par_sort_unstable_by_key(|&node| (ids.get(node as usize), node));
    IdIndex::Sorted(heapgraph_model::file_pages::page_out(order))
}

/// The real objects in order of (type, retained size largest first, shallow size largest
/// first, node index); an unreachable object's retained size counts as 0.
fn type_order(graph: &HeapGraph, analysis: &Analysis) -> Vec<u32> {
    let parts = graph.parts();
    let tree = &analysis.dominators;
    // By type first, counting (node order within a type); then each type's run by its sizes,
    // read once per object into a run-long buffer: a sort that read them per comparison made
    // two random reads of three columns each time, 18 s on 35M objects.
    let mut first_of_type = vec![0u32; graph.strings().len() + 1];
    for node in graph.nodes().filter(|&node| !graph.is_synthetic(node)) {
        first_of_type[parts.node_type.get(node.index()).to_raw() as usize + 1] += 1;
    }
    let mut running = 0u32;
    for first in &mut first_of_type {
        running += *first;
        *first = running;
    }
    let mut order = vec![0u32; running as usize];
    let mut next = first_of_type.clone();
    for node in graph.nodes().filter(|&node| !graph.is_synthetic(node)) {
        let at = &mut next[parts.node_type.get(node.index()).to_raw() as usize];
        order[*at as usize] = node.to_raw();
        *at += 1;
    }
    drop(next);
    let mut keys = Vec::new();
    for run in first_of_type.windows(2) {
        let run = &mut order[run[0] as usize..run[1] as usize];
        if run.len() < 2 {
            continue;
        }
        keys.clear();
        keys.extend(run.iter().map(|&node| {
            let index = node as usize;
            let retained = if tree.reachable[index] {
                tree.retained_size.get(index)
            } else {
                0
            };
            (
                Reverse(retained),
                Reverse(parts.node_shallow_size.get(index)),
                node,
            )
        }));
        keys.par_sort_unstable();
        for (slot, key) in run.iter_mut().zip(&keys) {
            *slot = key.2;
        }
    }
    order
}

/// The first position in `0..n` where `before` is false (`before` is true, then false).
fn partition(n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut low, mut high) = (0, n);
    while low < high {
        let middle = low + (high - low) / 2;
        if before(middle) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    low
}

/// The items at positions `page.offset..page.offset + page.limit` of `items` sorted by key
/// (keys are distinct), chosen with a max-heap of `offset + limit` entries.
fn smallest<K: Ord, T>(items: impl Iterator<Item = (K, T)>, page: Page) -> Vec<T> {
    let keep = page.offset.saturating_add(page.limit);
    if keep == 0 {
        items.for_each(drop);
        return Vec::new();
    }
    let mut heap: BinaryHeap<Entry<K, T>> = BinaryHeap::new();
    for (key, item) in items {
        if heap.len() < keep {
            heap.push(Entry(key, item));
        } else if heap.peek().is_some_and(|largest| key < largest.0) {
            heap.pop();
            heap.push(Entry(key, item));
        }
    }
    let sorted = heap.into_sorted_vec();
    sorted
        .into_iter()
        .skip(page.offset)
        .map(|Entry(_, item)| item)
        .collect()
}

/// A heap entry ordered by its key alone.
struct Entry<K, T>(K, T);

impl<K: Ord, T> PartialEq for Entry<K, T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<K: Ord, T> Eq for Entry<K, T> {}
impl<K: Ord, T> PartialOrd for Entry<K, T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<K: Ord, T> Ord for Entry<K, T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EdgeRule, Options, analyze, dominator_tree};
    use heapgraph_model::EdgeKind;
    use heapgraph_test_support::{graph, graph_from_edges};
    use proptest::prelude::*;

    fn analysed(graph: &HeapGraph) -> Analysis {
        let options = Options {
            edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
        };
        analyze(graph, &options)
    }

    #[test]
    fn instances_come_largest_first_and_page() {
        let graph = graph(
            "root -> cache: 8; cache -> Item#1: 16; cache -> Item#2: 16; Item#2 -> blob: 100; \
             cache -> Item#3: 40; root -> other: 1",
        );
        let analysis = analysed(&graph);
        let explorer = Explorer::new();
        let names = |offset, limit| {
            let view = explorer
                .instances(&graph, &analysis, "Item", Page { offset, limit })
                .expect("the type exists");
            assert_eq!(view.total, 3);
            view.objects
                .into_iter()
                .map(|object| object.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(0, 10), ["Item#2", "Item#3", "Item#1"]);
        assert_eq!(names(1, 1), ["Item#3"]);
        assert_eq!(names(3, 5), Vec::<String>::new());
        assert!(
            explorer
                .instances(
                    &graph,
                    &analysis,
                    "Nothing",
                    Page {
                        offset: 0,
                        limit: 1
                    }
                )
                .is_none()
        );
    }

    #[test]
    fn references_and_referrers_are_the_two_ends_of_each_edge() {
        let graph = graph("root -> a: 1; root -> b: 1; a -> c: 1; b -> c; a -w> b");
        let analysis = analysed(&graph);
        let explorer = Explorer::new();
        let c = explorer.find(&graph, 4).expect("c has id 4");
        assert_eq!(graph.name(c), "c");
        let page = Page {
            offset: 0,
            limit: 10,
        };
        let into_c = explorer.referrers(&graph, &analysis, c, page);
        let holders: Vec<_> = into_c
            .references
            .iter()
            .map(|r| r.object.name.as_str())
            .collect();
        assert_eq!(holders, ["a", "b"]);
        let a = explorer.find(&graph, 2).expect("a has id 2");
        let out_of_a = explorer.references(&graph, &analysis, a, page);
        let fields: Vec<_> = out_of_a
            .references
            .iter()
            .map(|r| (r.edge.as_str(), r.edge_kind, r.object.name.as_str()))
            .collect();
        assert_eq!(fields, [("c", "property", "c"), ("b", "weak", "b")]);
        let second = explorer.references(
            &graph,
            &analysis,
            a,
            Page {
                offset: 1,
                limit: 1,
            },
        );
        assert_eq!(second.total, 2);
        assert_eq!(second.references.len(), 1);
        assert_eq!(second.references[0].object.name, "b");
    }

    #[test]
    fn find_reads_ids_in_any_order() {
        // The notation numbers ids in node order; reversed ids take the sorted index.
        let mut forward = graph("root -> a; a -> b; b -> c");
        let explorer = Explorer::new();
        assert!(matches!(explorer.id_index(&forward), IdIndex::Ascending));
        assert_eq!(explorer.find(&forward, 3).map(NodeId::index), Some(2));
        assert_eq!(explorer.find(&forward, 99), None);
        let parts = forward.parts().clone();
        let reversed: Vec<u64> = (0..parts.node_object_id.len() as u64).rev().collect();
        let mut parts = parts;
        parts.node_object_id = reversed.into_iter().collect();
        forward = HeapGraph::from_parts(forward.meta().clone(), forward.strings().clone(), parts)
            .expect("same graph, other ids");
        let explorer = Explorer::new();
        assert!(matches!(explorer.id_index(&forward), IdIndex::Sorted(_)));
        for node in forward.nodes() {
            let id = forward.object_id(node);
            assert_eq!(explorer.find(&forward, id), Some(node));
        }
    }

    /// Random graphs of up to 40 nodes.
    fn graphs() -> impl Strategy<Value = HeapGraph> {
        (2usize..40).prop_flat_map(|n| {
            (
                proptest::collection::vec(0u64..50, n),
                proptest::collection::vec((0..n as u32, 0..n as u32), 0..n * 3),
            )
                .prop_map(|(sizes, pairs)| {
                    let edges: Vec<_> = pairs
                        .into_iter()
                        .map(|(from, to)| (from, to, EdgeKind::Property))
                        .collect();
                    graph_from_edges(&sizes, &edges)
                })
        })
    }

    /// Random Java-shaped graphs of up to 30 objects held from named roots (a class's static,
    /// a JNI global) and anonymous ones (a busy monitor, a native stack), with weak references
    /// among them: the shapes whose chains `who-holds` ranks and merges.
    fn rooted_graphs() -> impl Strategy<Value = HeapGraph> {
        const ROOTS: [&str; 4] = [
            "<busy monitor>",
            "<native stack>",
            "<system class>",
            "<JNI global>",
        ];
        (1usize..30).prop_flat_map(|n| {
            (
                proptest::collection::vec((0..ROOTS.len() + n, 0..n), 1..n + 4),
                proptest::collection::vec((0..n, 0..n, 0u8..6), 0..n * 3),
            )
                .prop_map(move |(entries, pairs)| {
                    let name = |i: usize| format!("T{}#{i}", i % 3);
                    let mut notation = String::from("root -> T0#0");
                    for root in ROOTS {
                        notation.push_str(&format!("; root -> {root}"));
                    }
                    for (from, to) in entries {
                        let from = ROOTS
                            .get(from)
                            .map_or_else(|| name(from - ROOTS.len()), |r| (*r).to_owned());
                        notation.push_str(&format!("; {from} -> {}: {}", name(to), to + 1));
                    }
                    for (from, to, kind) in pairs {
                        let arrow = if kind == 0 { "-w>" } else { "->" };
                        notation.push_str(&format!("; {} {arrow} {}", name(from), name(to)));
                    }
                    graph(&notation)
                })
        })
    }

    proptest! {
        /// The objects in type order, runs sorted by sizes read once per object, are the order
        /// one sort of every object by (type, retained size down, shallow size down, index)
        /// gives.
        #[test]
        fn the_type_order_is_one_sort_by_type_and_sizes(graph in rooted_graphs()) {
            let analysis = analysed(&graph);
            let parts = graph.parts();
            let tree = &analysis.dominators;
            let mut oracle: Vec<u32> = graph
                .nodes()
                .filter(|&node| !graph.is_synthetic(node))
                .map(NodeId::to_raw)
                .collect();
            oracle.sort_by_key(|&node| {
                let index = node as usize;
                let retained = if tree.reachable[index] { tree.retained_size.get(index) } else { 0 };
                (
                    parts.node_type.get(index),
                    Reverse(retained),
                    Reverse(parts.node_shallow_size.get(index)),
                    node,
                )
            });
            prop_assert_eq!(type_order(&graph, &analysis), oracle);
        }

        /// Once the chain index is built, the distances come from it (the nearer of each node's
        /// distances from the named and from the other roots); they must be the plain search's.
        #[test]
        fn distances_from_the_chain_index_are_the_search_s(graph in rooted_graphs()) {
            let analysis = analysed(&graph);
            prop_assert!(!analysis.edge_rule.devtools_distances);
            analysis.chain_index(&graph);
            let searched = crate::bfs_distances(&graph, &analysis.edge_rule);
            prop_assert_eq!(analysis.distances(&graph), searched.as_slice());
        }

        /// An object's first chain is read up the chain parents: it must be a chain of
        /// retaining edges from the root to the object, entering by a named root where one
        /// reaches the object, and as short as the search that ignores the parents finds (the
        /// oracle: the shortest chain entering by the named roots, else by any).
        #[test]
        fn the_first_chain_read_up_the_parents_is_a_shortest_explaining_chain(graph in rooted_graphs()) {
            let analysis = analysed(&graph);
            let rule = &analysis.edge_rule;
            let strong = crate::edge_rule::StrongEdges::new(&graph, rule);
            let root = graph.root();
            for target in graph.nodes() {
                let entering = |named: bool| {
                    crate::paths::shortest_chains_entering_with(&graph, rule, target, 1, &|edge| {
                        crate::chains::is_named_root_edge(&graph, edge) == named
                    }, None)
                };
                let named = entering(true);
                let oracle = if named.is_empty() { entering(false) } else { named };
                let first = crate::chains::ranked_chains(&graph, &analysis, target, 1, ChainOrder::Explain);
                prop_assert_eq!(first.len(), oracle.len());
                let (Some(first), Some(oracle)) = (first.first(), oracle.first()) else { continue };
                let chain = &first.chain;
                prop_assert_eq!(chain.len(), oracle.len());
                prop_assert_eq!(chain[0], (root, None));
                prop_assert_eq!(chain.last().map(|step| step.0), Some(target));
                for pair in chain.windows(2) {
                    let edge = pair[1].1.expect("an edge into each step");
                    prop_assert_eq!(graph.edge_source(edge), pair[0].0);
                    prop_assert_eq!(graph.edge_target(edge), pair[1].0);
                    prop_assert!(strong.retains(pair[0].0.to_raw(), edge, pair[1].0.to_raw()));
                }
                if chain.len() > 1 {
                    let entered = chain[1].1.expect("the root's edge");
                    let oracle_entered = oracle[1].1.expect("the root's edge");
                    prop_assert_eq!(
                        crate::chains::is_named_root_edge(&graph, entered),
                        crate::chains::is_named_root_edge(&graph, oracle_entered)
                    );
                }
            }
        }

        /// The holders from the chain index must be `who_holds`' own answer (the oracle: the
        /// same search, whose distances are computed afresh for each object) for every object,
        /// in both orders, for one chain and for several.
        #[test]
        fn holders_from_the_chain_index_are_who_holds(graph in rooted_graphs()) {
            let analysis = analysed(&graph);
            // The oracle's analysis never builds the index: its chains search afresh.
            let oracle = analysed(&graph);
            let explorer = Explorer::new();
            for node in graph.nodes() {
                for k in [1, 2, 5] {
                    for order in [ChainOrder::Explain, ChainOrder::Shortest] {
                        let expected = crate::who_holds(&graph, &oracle, node, k, order);
                        let indexed = explorer.holders(&graph, &analysis, node, k, order);
                        prop_assert_eq!(indexed, expected);
                    }
                }
            }
        }

        /// The chains that explain, against a plain forward search per root child: for each
        /// child of the root, its breadth-first distance to the target over the retaining
        /// edges (never through the root). The answer must hold one chain per child that
        /// reaches the target (up to `k` printed, equal texts merged with a count), each a
        /// real chain of retaining edges as long as that distance plus one, the children
        /// entered by a named root edge first, each kind shortest first.
        #[test]
        fn explained_chains_are_the_shortest_through_each_root_child(graph in rooted_graphs()) {
            let analysis = analysed(&graph);
            let strong = crate::edge_rule::StrongEdges::new(&graph, &analysis.edge_rule);
            let root = graph.root();
            let distance_to = |from: NodeId, target: NodeId| -> Option<usize> {
                let mut seen = vec![false; graph.node_count()];
                let mut level = vec![from];
                seen[from.index()] = true;
                for distance in 0.. {
                    if level.is_empty() {
                        return None;
                    }
                    if level.contains(&target) {
                        return Some(distance);
                    }
                    let mut next = Vec::new();
                    for &node in &level {
                        for edge in graph.edge_range(node) {
                            let to = graph.edge_target(edge);
                            if to != root && !seen[to.index()]
                                && strong.retains(node.to_raw(), edge, to.to_raw()) {
                                seen[to.index()] = true;
                                next.push(to);
                            }
                        }
                    }
                    level = next;
                }
                None
            };
            for target in graph.nodes().filter(|&node| node != root) {
                // Each root child that reaches the target: (named, distance).
                let mut expected: Vec<(NodeId, bool, usize)> = Vec::new();
                for edge in graph.edge_range(root) {
                    let child = graph.edge_target(edge);
                    if !strong.retains(root.to_raw(), edge, child.to_raw()) {
                        continue;
                    }
                    let named = crate::chains::is_named_root_edge(&graph, edge);
                    let Some(distance) = distance_to(child, target) else { continue };
                    match expected.iter_mut().find(|(c, _, _)| *c == child) {
                        Some(entry) => entry.1 |= named,
                        None => expected.push((child, named, distance)),
                    }
                }
                let ranked = crate::chains::ranked_chains(&graph, &analysis, target, 100, ChainOrder::Explain);
                let total: u64 = ranked.iter().map(|r| r.count).sum();
                prop_assert_eq!(total as usize, expected.len());
                let mut previous = (true, 0usize);
                let mut children = Vec::new();
                for ranked in &ranked {
                    let chain = &ranked.chain;
                    prop_assert_eq!(chain[0].0, root);
                    prop_assert_eq!(chain.last().map(|step| step.0), Some(target));
                    for pair in chain.windows(2) {
                        let edge = pair[1].1.expect("an edge into each step");
                        prop_assert_eq!(graph.edge_source(edge), pair[0].0);
                        prop_assert_eq!(graph.edge_target(edge), pair[1].0);
                        prop_assert!(strong.retains(pair[0].0.to_raw(), edge, pair[1].0.to_raw()));
                    }
                    let child = chain[1].0;
                    let &(_, named, distance) = expected
                        .iter()
                        .find(|(c, _, _)| *c == child)
                        .expect("a chain through a child that reaches the target");
                    prop_assert_eq!(chain.len(), distance + 2);
                    prop_assert!(previous.0 || !named, "named chains come first");
                    if previous.0 == named {
                        prop_assert!(previous.1 <= distance, "shortest first");
                    }
                    previous = (named, distance);
                    prop_assert!(!children.contains(&child), "one chain per root child");
                    children.push(child);
                }
            }
        }
    }

    proptest! {
        /// The oracle for the lazy tree is the whole tree that `dominator_tree` prints (its
        /// own explicit-stack walk over the same children): expanding every node level by
        /// level, one small page at a time, must list the same nodes in the same order,
        /// with the same depths and shares; and each node's child count must be the number
        /// of nodes the whole tree prints one level below it.
        #[test]
        fn the_tree_paged_level_by_level_is_the_whole_tree(graph in graphs(), limit in 1usize..4) {
            let analysis = analysed(&graph);
            let explorer = Explorer::new();
            let whole = dominator_tree(&graph, &analysis, u32::MAX, 0.0);
            let mut walked = Vec::new();
            let root = object_view(&graph, &analysis, graph.root());
            let mut stack = vec![(graph.root(), 0u32, 1.0f64, root)];
            while let Some((node, depth, share, object)) = stack.pop() {
                let mut kids = Vec::new();
                let mut offset = 0;
                loop {
                    let view = explorer.children(&graph, &analysis, node, Page { offset, limit });
                    prop_assert_eq!(view.depth, depth);
                    prop_assert_eq!(view.offset, offset);
                    let n = view.children.len();
                    kids.extend(view.children);
                    offset += n;
                    if n < limit {
                        prop_assert_eq!(view.total as usize, kids.len());
                        break;
                    }
                }
                walked.push((object.name.clone(), depth, share, kids.len() as u64));
                for kid in kids.into_iter().rev() {
                    stack.push((kid.object.node, kid.depth, kid.share, kid.object));
                }
            }
            let expected: Vec<_> = whole
                .nodes
                .iter()
                .enumerate()
                .map(|(i, node)| {
                    let below = whole.nodes[i + 1..]
                        .iter()
                        .take_while(|next| next.depth > node.depth)
                        .filter(|next| next.depth == node.depth + 1)
                        .count() as u64;
                    let share = if node.depth == 0 { 1.0 } else { node.share };
                    (node.object.name.clone(), node.depth, share, below)
                })
                .collect();
            prop_assert_eq!(walked, expected);
        }

        /// Instances paged in any page size list each instance of the type once, in the order
        /// of a plain sort of all of them (the oracle).
        #[test]
        fn instances_paged_are_the_sorted_instances(graph in graphs(), limit in 1usize..5) {
            let analysis = analysed(&graph);
            let explorer = Explorer::new();
            let tree = &analysis.dominators;
            let mut expected: Vec<_> = graph
                .nodes()
                .filter(|&node| graph.type_name(node) == "T1" && !graph.is_synthetic(node))
                .map(|node| {
                    let i = node.index();
                    let retained = if tree.reachable[i] { tree.retained_size.get(i) } else { 0 };
                    (Reverse(retained), Reverse(graph.shallow_size(node)), node.index())
                })
                .collect();
            expected.sort();
            let expected: Vec<usize> = expected.into_iter().map(|(_, _, i)| i).collect();
            let mut listed = Vec::new();
            let mut offset = 0;
            while let Some(view) = explorer.instances(&graph, &analysis, "T1", Page { offset, limit }) {
                prop_assert_eq!(view.total as usize, expected.len());
                if view.objects.is_empty() {
                    break;
                }
                offset += view.objects.len();
                listed.extend(view.objects.into_iter().map(|object| object.node.index()));
            }
            prop_assert_eq!(listed, expected);
        }
    }
}
