//! Per-type totals, with a type's retained size counting each retained byte once.

use crate::dominators::DominatorTree;
use heapgraph_model::HeapGraph;

/// Per-type totals indexed by the type's raw string id.
pub(crate) struct TypeTotals {
    pub(crate) count: Vec<u64>,
    pub(crate) shallow: Vec<u64>,
    pub(crate) retained: Vec<u64>,
}

/// The children of every reachable node in the dominator tree, as a CSR over node indices,
/// children in index order.
pub(crate) struct DominatorChildren {
    pub(crate) first: Vec<u64>,
    pub(crate) child: Vec<u32>,
}

impl DominatorChildren {
    pub(crate) fn build(graph: &HeapGraph, tree: &DominatorTree) -> Self {
        let n_nodes = graph.node_count();
        let root = graph.root().index();
        let mut first = vec![0u64; n_nodes + 1];
        for node in 0..n_nodes {
            if node != root && tree.reachable[node] {
                first[tree.idom[node] as usize + 1] += 1;
            }
        }
        for i in 0..n_nodes {
            first[i + 1] += first[i];
        }
        let mut cursor = first.clone();
        let mut child = vec![0u32; first[n_nodes] as usize];
        for node in 0..n_nodes {
            if node != root && tree.reachable[node] {
                let slot = &mut cursor[tree.idom[node] as usize];
                child[*slot as usize] = node as u32;
                *slot += 1;
            }
        }
        DominatorChildren { first, child }
    }

    pub(crate) fn of(&self, node: usize) -> &[u32] {
        &self.child[self.first[node] as usize..self.first[node + 1] as usize]
    }
}

/// Counts, shallow and retained sizes per type over real (non-synthetic) objects.
///
/// A type's retained size is the sum of the retained sizes of its reachable instances that
/// have no instance of the same type above them in the dominator tree, so nested instances
/// (a linked list of one class) are not counted twice.
///
/// Complexity: O(V) time, O(V + T) space for T types.
pub(crate) fn type_totals(
    graph: &HeapGraph,
    tree: &DominatorTree,
    children: &DominatorChildren,
) -> TypeTotals {
    let n_types = graph.strings().len();
    let parts = graph.parts();
    let mut totals = TypeTotals {
        count: vec![0; n_types],
        shallow: vec![0; n_types],
        retained: vec![0; n_types],
    };
    for node in graph.nodes() {
        if graph.is_synthetic(node) {
            continue;
        }
        let type_index = parts.node_type[node.index()].index();
        totals.count[type_index] += 1;
        totals.shallow[type_index] += parts.node_shallow_size[node.index()];
    }
    // Depth-first over the dominator tree, with the number of open instances per type.
    let mut open = vec![0u32; n_types];
    let root = graph.root().index();
    let mut stack: Vec<(u32, u32)> = vec![(root as u32, 0)];
    enter(graph, tree, root, &mut open, &mut totals);
    while let Some(top) = stack.last_mut() {
        let (node, next_child) = (top.0 as usize, top.1 as usize);
        let kids = children.of(node);
        if next_child < kids.len() {
            top.1 += 1;
            let child = kids[next_child] as usize;
            enter(graph, tree, child, &mut open, &mut totals);
            stack.push((child as u32, 0));
        } else {
            stack.pop();
            if !graph.is_synthetic(graph.node(node).unwrap_or(graph.root())) {
                open[parts.node_type[node].index()] -= 1;
            }
        }
    }
    totals
}

fn enter(
    graph: &HeapGraph,
    tree: &DominatorTree,
    node: usize,
    open: &mut [u32],
    totals: &mut TypeTotals,
) {
    let node_id = graph.node(node).unwrap_or(graph.root());
    if graph.is_synthetic(node_id) {
        return;
    }
    let type_index = graph.parts().node_type[node].index();
    if open[type_index] == 0 {
        totals.retained[type_index] += tree.retained_size[node];
    }
    open[type_index] += 1;
}
