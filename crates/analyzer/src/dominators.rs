//! Dominator tree and retained sizes by Lengauer–Tarjan, iterative, over the retaining edges.
//!
//! The procedure follows memlab's `computeDominatorsAndRetainedSizes` (itself Chrome DevTools'
//! algorithm) step for step, including its treatment of nodes the root does not reach, so that
//! retained sizes equal theirs for every node:
//! 1. depth-first search from the root over retaining edges, in edge order;
//! 2. every node still unvisited whose referrers are all weak or shortcut edges (or that has
//!    none) becomes a child of the root and is searched from, in index order;
//! 3. every node still unvisited is attached under the root without a search;
//! 4. semi-dominators in decreasing DFS number, with path-compressed `eval`/`link`; a node
//!    without a retaining predecessor takes the root's number;
//! 5. immediate dominators, then retained sizes summed up the tree in reverse DFS order.
//!
//! Steps 2 and 3 run only under [`EdgeRule::orphans_under_root`] (V8); without it, as in
//! Eclipse MAT, unreachable nodes stay out of the tree and their references are ignored.
//! Either way, nodes first reached in step 1 are *reachable*; the others are not, have no
//! dominator in the views, and do not count in the root's retained size. Which edges retain
//! is the [`EdgeRule`]'s; memlab also filters edges into "page-owned" objects, a rule that
//! never fires on Node.js snapshots and that `decisions.md` leaves out.

use crate::edge_rule::{EdgeRule, StrongEdges};
use heapgraph_model::{EdgeKind, HeapGraph, NodeId};

/// The marker for "no node" in per-node arrays of node indices.
pub const NO_NODE: u32 = u32::MAX;

/// Immediate dominators and retained sizes of every node.
///
/// Invariants: all vectors have `node_count` entries; `idom[root] == root`; for a reachable
/// node other than the root, `idom` is reachable; `retained_size[v] >= shallow_size[v]`.
pub struct DominatorTree {
    /// Immediate dominator per node. Unreachable nodes carry the dominator memlab gives them
    /// (the root or another unreachable node).
    pub idom: Vec<u32>,
    /// Retained size per node. The root's counts reachable nodes only.
    pub retained_size: Vec<u64>,
    /// Nodes in their dominator subtree, the node itself included.
    pub retained_count: Vec<u64>,
    /// Whether the root reaches the node through retaining edges.
    pub reachable: Vec<bool>,
}

impl DominatorTree {
    /// The immediate dominator of `node`; `None` for the root and for unreachable nodes.
    pub fn immediate_dominator(&self, graph: &HeapGraph, node: NodeId) -> Option<NodeId> {
        if node == graph.root() || !self.reachable[node.index()] {
            return None;
        }
        graph.node(self.idom[node.index()] as usize)
    }
}

/// Computes the dominator tree of `graph` from its root over the edges `rule` keeps.
///
/// # Arguments
/// `graph`: any heap graph; `rule`: which edges retain.
///
/// # Returns
/// The [`DominatorTree`], with retained sizes.
///
/// # Complexity
/// O((V + E) log V) time in the worst case (path compression without balancing), near-linear
/// in practice; O(V + E') auxiliary space where E' is the number of retaining edges (their
/// predecessor lists), plus eight `u32` arrays of V + 1 entries.
pub fn dominators(graph: &HeapGraph, rule: &EdgeRule) -> DominatorTree {
    let strong = StrongEdges::new(graph, rule);
    let parts = graph.parts();
    let n_nodes = graph.node_count();
    let root_ordinal = graph.root().to_raw();
    // Vertices are numbered 1..=n_nodes; 0 is "none", as in memlab.
    let len = n_nodes + 1;
    let root = root_ordinal + 1;
    let mut parent = vec![0u32; len];
    let mut ancestor = vec![0u32; len];
    let mut vertex = vec![0u32; len];
    let mut label = vec![0u32; len];
    let mut semi = vec![0u32; len];
    let mut dom = vec![0u32; len];
    // Next edge to look at, per ordinal, for the resumable iterative DFS.
    let mut next_edge = vec![0u64; n_nodes];
    let mut n_numbered = 0u32;

    let mut dfs = |start: u32,
                   parent: &mut [u32],
                   vertex: &mut [u32],
                   label: &mut [u32],
                   semi: &mut [u32],
                   n_numbered: &mut u32| {
        next_edge[(start - 1) as usize] = parts.first_edge[(start - 1) as usize];
        let mut v = start;
        while v != 0 {
            if semi[v as usize] == 0 {
                *n_numbered += 1;
                semi[v as usize] = *n_numbered;
                vertex[*n_numbered as usize] = v;
                label[v as usize] = v;
            }
            let mut v_next = parent[v as usize];
            let v_ordinal = (v - 1) as usize;
            let edges_end = parts.first_edge[v_ordinal + 1];
            while next_edge[v_ordinal] < edges_end {
                let edge = next_edge[v_ordinal] as usize;
                let w_ordinal = parts.edge_to[edge];
                if strong.retains(v_ordinal as u32, edge, w_ordinal) {
                    let w = w_ordinal + 1;
                    if semi[w as usize] == 0 {
                        parent[w as usize] = v;
                        next_edge[w_ordinal as usize] = parts.first_edge[w_ordinal as usize];
                        v_next = w;
                        break;
                    }
                }
                next_edge[v_ordinal] += 1;
            }
            v = v_next;
        }
    };

    // Step 1.
    dfs(
        root,
        &mut parent,
        &mut vertex,
        &mut label,
        &mut semi,
        &mut n_numbered,
    );
    let n_reachable = n_numbered;
    let mut reachable = vec![false; n_nodes];
    for &v in &vertex[1..=n_reachable as usize] {
        reachable[(v - 1) as usize] = true;
    }

    // Step 2: nodes with only weak or shortcut referrers, and their unvisited descendants.
    if rule.orphans_under_root && (n_numbered as usize) < n_nodes {
        let non_weak_referrers = count_non_weak_referrers(graph);
        for v in 1..=n_nodes as u32 {
            if semi[v as usize] == 0 && non_weak_referrers[(v - 1) as usize] == 0 {
                parent[v as usize] = root;
                dfs(
                    v,
                    &mut parent,
                    &mut vertex,
                    &mut label,
                    &mut semi,
                    &mut n_numbered,
                );
            }
        }
    }
    drop(next_edge);
    // Step 3: whatever is left hangs under the root.
    if rule.orphans_under_root && (n_numbered as usize) < n_nodes {
        for v in 1..=n_nodes as u32 {
            if semi[v as usize] == 0 {
                parent[v as usize] = root;
                n_numbered += 1;
                semi[v as usize] = n_numbered;
                vertex[n_numbered as usize] = v;
                label[v as usize] = v;
            }
        }
    }

    // Predecessors over retaining edges, as a CSR over ordinals.
    let (first_pred, pred_from) = retaining_predecessors(graph, &strong);

    // Step 4. Buckets are intrusive singly linked lists: each vertex is in at most one.
    let mut bucket_head = vec![0u32; len];
    let mut bucket_next = vec![0u32; len];
    let mut compression_stack: Vec<u32> = Vec::new();
    for i in (2..=n_numbered).rev() {
        let w = vertex[i as usize];
        let w_ordinal = (w - 1) as usize;
        let preds = &pred_from[first_pred[w_ordinal] as usize..first_pred[w_ordinal + 1] as usize];
        if preds.is_empty() {
            // memlab: an orphan is retained by the root.
            semi[w as usize] = semi[root as usize];
        }
        for &v_ordinal in preds {
            if semi[v_ordinal as usize + 1] == 0 {
                // An unreachable referrer, left out of the tree by the rule.
                continue;
            }
            let u = evaluate(
                v_ordinal + 1,
                &mut ancestor,
                &mut label,
                &semi,
                &mut compression_stack,
            );
            if semi[u as usize] < semi[w as usize] {
                semi[w as usize] = semi[u as usize];
            }
        }
        let semidominator = vertex[semi[w as usize] as usize];
        bucket_next[w as usize] = bucket_head[semidominator as usize];
        bucket_head[semidominator as usize] = w;
        let w_parent = parent[w as usize];
        ancestor[w as usize] = w_parent;
        let mut v = bucket_head[w_parent as usize];
        bucket_head[w_parent as usize] = 0;
        while v != 0 {
            let u = evaluate(v, &mut ancestor, &mut label, &semi, &mut compression_stack);
            dom[v as usize] = if semi[u as usize] < semi[v as usize] {
                u
            } else {
                w_parent
            };
            v = bucket_next[v as usize];
        }
    }
    drop(first_pred);
    drop(pred_from);
    drop(ancestor);
    drop(label);
    drop(bucket_head);
    drop(bucket_next);

    // Step 5.
    dom[0] = root;
    dom[root as usize] = root;
    for i in 2..=n_numbered {
        let w = vertex[i as usize] as usize;
        if dom[w] != vertex[semi[w] as usize] {
            dom[w] = dom[dom[w] as usize];
        }
    }
    drop(semi);
    drop(parent);

    let mut idom = vec![NO_NODE; n_nodes];
    for (ordinal, slot) in idom.iter_mut().enumerate() {
        // Vertices never numbered (unreachable, when orphans are left out) have dom 0.
        *slot = dom[ordinal + 1].checked_sub(1).unwrap_or(NO_NODE);
    }
    drop(dom);
    let mut retained_size = parts.node_shallow_size.clone();
    let mut retained_count = vec![1u64; n_nodes];
    for i in (2..=n_numbered).rev() {
        let ordinal = (vertex[i as usize] - 1) as usize;
        let dominator = idom[ordinal] as usize;
        if dominator == root_ordinal as usize && !reachable[ordinal] {
            continue;
        }
        retained_size[dominator] += retained_size[ordinal];
        retained_count[dominator] += retained_count[ordinal];
    }
    if !reachable[root_ordinal as usize] {
        // The root is always numbered first; this cannot happen.
        reachable[root_ordinal as usize] = true;
    }
    DominatorTree {
        idom,
        retained_size,
        retained_count,
        reachable,
    }
}

/// memlab's `eval` with iterative path compression.
#[inline]
fn evaluate(
    v: u32,
    ancestor: &mut [u32],
    label: &mut [u32],
    semi: &[u32],
    stack: &mut Vec<u32>,
) -> u32 {
    if ancestor[v as usize] == 0 {
        return v;
    }
    // compress(v)
    let mut node = v;
    stack.clear();
    while ancestor[ancestor[node as usize] as usize] != 0 {
        stack.push(node);
        node = ancestor[node as usize];
    }
    while let Some(w) = stack.pop() {
        let w = w as usize;
        let a = ancestor[w] as usize;
        if semi[label[a] as usize] < semi[label[w] as usize] {
            label[w] = label[a];
        }
        ancestor[w] = ancestor[a];
    }
    label[v as usize]
}

/// Per node, how many referrers reach it by an edge that is neither weak nor a shortcut
/// (memlab's `hasOnlyWeakReferrers` is "none").
fn count_non_weak_referrers(graph: &HeapGraph) -> Vec<u32> {
    let parts = graph.parts();
    let mut counts = vec![0u32; graph.node_count()];
    for (edge, &to) in parts.edge_to.iter().enumerate() {
        if !matches!(parts.edge_kind[edge], EdgeKind::Weak | EdgeKind::Shortcut) {
            counts[to as usize] = counts[to as usize].saturating_add(1);
        }
    }
    counts
}

/// The sources of retaining edges into each node, as a CSR (`first`, `from`).
fn retaining_predecessors(graph: &HeapGraph, strong: &StrongEdges<'_>) -> (Vec<u64>, Vec<u32>) {
    let parts = graph.parts();
    let n_nodes = graph.node_count();
    let mut first = vec![0u64; n_nodes + 1];
    for from in 0..n_nodes {
        let range = parts.first_edge[from] as usize..parts.first_edge[from + 1] as usize;
        for edge in range {
            let to = parts.edge_to[edge];
            if strong.retains(from as u32, edge, to) {
                first[to as usize + 1] += 1;
            }
        }
    }
    for i in 0..n_nodes {
        first[i + 1] += first[i];
    }
    let mut cursor = first.clone();
    let mut from_column = vec![0u32; first[n_nodes] as usize];
    for from in 0..n_nodes {
        let range = parts.first_edge[from] as usize..parts.first_edge[from + 1] as usize;
        for edge in range {
            let to = parts.edge_to[edge];
            if strong.retains(from as u32, edge, to) {
                let slot = &mut cursor[to as usize];
                from_column[*slot as usize] = from as u32;
                *slot += 1;
            }
        }
    }
    (first, from_column)
}
