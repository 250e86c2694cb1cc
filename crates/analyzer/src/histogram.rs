//! Per-type totals, with a type's retained size counting each retained byte once.

use crate::dominators::DominatorTree;
use heapgraph_model::{HeapGraph, StringId};

/// Per-type totals over real (non-synthetic) objects, one row per type: column `i` of each
/// vector describes type `types[i]`. Rows are in order of first appearance in node order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TypeTotals {
    /// The type's name.
    pub types: Vec<StringId>,
    /// Objects of the type.
    pub count: Vec<u64>,
    /// Their shallow sizes, summed.
    pub shallow: Vec<u64>,
    /// Their retained sizes, with each retained byte counted once (an instance inside the
    /// dominator subtree of another instance of its type is not added again).
    pub retained: Vec<u64>,
}

/// Computes [`TypeTotals`] from the dominator tree.
///
/// Complexity: O(V) time and space.
pub(crate) fn type_totals(graph: &HeapGraph, tree: &DominatorTree) -> TypeTotals {
    type_totals_where(graph, tree, &|_| true)
}

/// [`type_totals`] over the real objects that `keep` accepts (by node index); the others count
/// nowhere, and the each-byte-once rule applies among the kept instances.
pub(crate) fn type_totals_where(
    graph: &HeapGraph,
    tree: &DominatorTree,
    keep: &(dyn Fn(usize) -> bool + Sync),
) -> TypeTotals {
    let (children, (types, mut totals)) = rayon::join(
        || DominatorChildren::build(graph, tree),
        || type_counts(graph, keep),
    );
    add_retained(graph, tree, &children, &types, &mut totals);
    totals
}

/// The children of every reachable node in the dominator tree, as a CSR, children in index
/// order. Most nodes of a heap dominate nothing, so the offsets are kept only for the nodes
/// that have children (`parents`, a bit per node with a running count per 64 nodes, says which
/// and at what position): 4 bytes per child and per parent, not per node. Offsets are `u32`:
/// a tree has fewer edges than the graph has nodes.
pub(crate) struct DominatorChildren {
    parents: ParentBits,
    first: Vec<u32>,
    child: Vec<u32>,
}

/// Which nodes have children, with a rank: `words` holds a bit per node, `before[k]` the number
/// of bits set in `words[..k]`.
struct ParentBits {
    words: Vec<u64>,
    before: Vec<u32>,
}

impl ParentBits {
    /// The position of `node` among the parents, if it is one.
    #[inline]
    fn rank(&self, node: usize) -> Option<usize> {
        let (word, bit) = (node / 64, node % 64);
        let bits = self.words[word];
        (bits & (1 << bit) != 0)
            .then(|| self.before[word] as usize + (bits & ((1 << bit) - 1)).count_ones() as usize)
    }
}

impl DominatorChildren {
    pub(crate) fn build(graph: &HeapGraph, tree: &DominatorTree) -> Self {
        let n_nodes = graph.node_count();
        let root = graph.root().index();
        let has_parent = |node: usize| node != root && tree.reachable[node];
        let mut words = vec![0u64; n_nodes.div_ceil(64)];
        for node in 0..n_nodes {
            if has_parent(node) {
                let parent = tree.idom[node] as usize;
                words[parent / 64] |= 1 << (parent % 64);
            }
        }
        let mut before = Vec::with_capacity(words.len());
        let mut running = 0u32;
        for &bits in &words {
            before.push(running);
            running += bits.count_ones();
        }
        let parents = ParentBits { words, before };
        // Counts at `first[rank + 2]`, so that after the prefix sums `first[rank + 1]` is
        // where the parent's children start and can serve as the fill cursor; the fill leaves
        // it where the children end.
        let mut first = vec![0u32; running as usize + 2];
        let rank_of_parent = |node: usize| {
            parents
                .rank(tree.idom[node] as usize)
                .expect("every dominator was marked as a parent")
        };
        for node in 0..n_nodes {
            if has_parent(node) {
                first[rank_of_parent(node) + 2] += 1;
            }
        }
        for i in 2..first.len() {
            first[i] += first[i - 1];
        }
        let mut child = vec![0u32; first[first.len() - 1] as usize];
        for node in 0..n_nodes {
            if has_parent(node) {
                let slot = &mut first[rank_of_parent(node) + 1];
                child[*slot as usize] = node as u32;
                *slot += 1;
            }
        }
        first.pop();
        DominatorChildren {
            parents,
            first,
            child,
        }
    }

    pub(crate) fn of(&self, node: usize) -> &[u32] {
        match self.parents.rank(node) {
            Some(rank) => &self.child[self.first[rank] as usize..self.first[rank + 1] as usize],
            None => &[],
        }
    }
}

/// Each node's dense type index: types get dense indices so that the per-type counters of the
/// tree walk stay in cache. Found through the string table rather than stored per node, so
/// that the walk needs no per-node array beside the dominator tree.
struct DenseTypes<'a> {
    graph: &'a HeapGraph,
    keep: &'a (dyn Fn(usize) -> bool + Sync),
    /// Per key (the position of a node's type in the graph's table of distinct types, or the
    /// type's string index where the graph keeps no table), the dense index of the type, or
    /// `u32::MAX`.
    dense_of_key: Vec<u32>,
}

impl DenseTypes<'_> {
    /// The key of `node`'s type (see `dense_of_key`).
    #[inline]
    fn key(graph: &HeapGraph, node: usize) -> usize {
        let types = &graph.parts().node_type;
        types.slot(node).unwrap_or_else(|| types.get(node).index())
    }

    /// The dense type of `node`; `u32::MAX` for synthetic nodes and those not kept.
    #[inline]
    fn of(&self, node: usize) -> u32 {
        let graph = self.graph;
        let Some(id) = graph.node(node) else {
            return u32::MAX;
        };
        if graph.is_synthetic(id) || !(self.keep)(node) {
            return u32::MAX;
        }
        self.dense_of_key[Self::key(graph, node)]
    }
}

/// Counts and shallow sizes per type over real (non-synthetic) objects, with the dense type
/// indices; retained sizes follow in [`add_retained`].
///
/// Complexity: O(V) time, O(T) space for the T distinct types of the graph's table (O(S) for
/// S strings where it keeps none).
fn type_counts<'a>(
    graph: &'a HeapGraph,
    keep: &'a (dyn Fn(usize) -> bool + Sync),
) -> (DenseTypes<'a>, TypeTotals) {
    let parts = graph.parts();
    let n_keys = parts
        .node_type
        .distinct()
        .map_or(graph.strings().len(), <[StringId]>::len);
    let mut dense_of_key = vec![u32::MAX; n_keys];
    let mut types: Vec<StringId> = Vec::new();
    let mut count: Vec<u64> = Vec::new();
    let mut shallow: Vec<u64> = Vec::new();
    for node in graph.nodes() {
        if graph.is_synthetic(node) || !keep(node.index()) {
            continue;
        }
        let slot = &mut dense_of_key[DenseTypes::key(graph, node.index())];
        if *slot == u32::MAX {
            *slot = types.len() as u32;
            types.push(parts.node_type.get(node.index()));
            count.push(0);
            shallow.push(0);
        }
        let dense = *slot as usize;
        count[dense] += 1;
        shallow[dense] += parts.node_shallow_size.get(node.index());
    }
    let n_types = types.len();
    let totals = TypeTotals {
        types,
        count,
        shallow,
        retained: vec![0; n_types],
    };
    let dense = DenseTypes {
        graph,
        keep,
        dense_of_key,
    };
    (dense, totals)
}

/// Adds each type's retained size: the sum of the retained sizes of its reachable instances
/// that have no instance of the same type above them in the dominator tree, so nested
/// instances (a linked list of one class) are not counted twice.
///
/// Complexity: O(V) time (one depth-first walk of the dominator tree), O(T + depth) space.
fn add_retained(
    graph: &HeapGraph,
    tree: &DominatorTree,
    children: &DominatorChildren,
    types: &DenseTypes<'_>,
    totals: &mut TypeTotals,
) {
    let n_types = totals.types.len();
    // Depth-first over the dominator tree, with the number of open instances per type; each
    // entry holds its node, the next child to enter and the node's dense type.
    let mut open = vec![0u32; n_types];
    let root = graph.root().index();
    let root_type = types.of(root);
    enter(tree, root_type, root, &mut open, totals);
    let mut stack: Vec<(u32, u32, u32)> = vec![(root as u32, 0, root_type)];
    while let Some(top) = stack.last_mut() {
        let (node, next_child, dense) = (top.0 as usize, top.1 as usize, top.2);
        let kids = children.of(node);
        if next_child < kids.len() {
            top.1 += 1;
            let child = kids[next_child] as usize;
            let child_type = types.of(child);
            enter(tree, child_type, child, &mut open, totals);
            stack.push((child as u32, 0, child_type));
        } else {
            stack.pop();
            if dense != u32::MAX {
                open[dense as usize] -= 1;
            }
        }
    }
}

fn enter(tree: &DominatorTree, dense: u32, node: usize, open: &mut [u32], totals: &mut TypeTotals) {
    if dense == u32::MAX {
        return;
    }
    let dense = dense as usize;
    if open[dense] == 0 {
        totals.retained[dense] += tree.retained_size.get(node);
    }
    open[dense] += 1;
}
