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
//! Where step 3 attached nothing, the numbering is a true depth-first numbering and steps 4
//! and 5 run as semi-NCA instead of with Lengauer–Tarjan's buckets: the same dominators
//! (unique for a graph), from half the `eval` calls and a forest half the size. A test
//! compares the two on thousands of random graphs.
//!
//! Steps 2 and 3 run only under [`EdgeRule::orphans_under_root`] (V8); without it, as in
//! Eclipse MAT, unreachable nodes stay out of the tree and their references are ignored.
//! Either way, nodes first reached in step 1 are *reachable*; the others are not, have no
//! dominator in the views, and do not count in the root's retained size. Which edges retain
//! is the [`EdgeRule`]'s; memlab also filters edges into "page-owned" objects, a rule that
//! never fires on Node.js snapshots and that `decisions.md` leaves out.

use crate::edge_rule::EdgeRule;
use heapgraph_model::{EdgeKind, HeapGraph, HeapGraphParts, NodeId};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};

/// The marker for "no node" in per-node arrays of node indices.
pub const NO_NODE: u32 = u32::MAX;

/// Immediate dominators and retained sizes of every node.
///
/// Invariants: all vectors have `node_count` entries; `idom[root] == root`; for a reachable
/// node other than the root, `idom` is reachable; `retained_size[v] >= shallow_size[v]`.
pub struct DominatorTree {
    /// Immediate dominator per node. Unreachable nodes carry the dominator memlab gives them
    /// (the root or another unreachable node) under [`EdgeRule::orphans_under_root`], and
    /// [`NO_NODE`] otherwise.
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
/// The search numbers the nodes 1, 2, … in DFS order (0 is "none", as in memlab), and steps 4
/// and 5 run on arrays indexed by that number, so that they walk memory in order. The
/// retaining predecessors are gathered on another rayon worker while step 1 runs, then
/// translated to DFS numbers in place, in parallel (they stay grouped by node index, so only
/// one copy of them is ever held). The forest reads of step 4 and the visited checks
/// of step 1 go to addresses known a few steps ahead, which are prefetched.
///
/// # Arguments
/// `graph`: any heap graph; `rule`: which edges retain.
///
/// # Returns
/// The [`DominatorTree`], with retained sizes.
///
/// # Complexity
/// O((V + E) log V) time for the semidominators (path compression without balancing), plus,
/// under semi-NCA, walks up the dominators found so far that are O(V²) in theory and short on
/// every heap graph we have measured; near-linear in practice. O(V + E') auxiliary space where
/// E' is the number of retaining edges (their predecessor lists, E' `u32` and V + 1 offsets,
/// `u32` when E < 2³²), plus a link-eval
/// forest of two (semi-NCA) or four `u32` per vertex, six more `u32` arrays of V + 1 entries
/// and a DFS stack of at most V entries.
pub fn dominators(graph: &HeapGraph, rule: &EdgeRule) -> DominatorTree {
    if u32::try_from(graph.parts().edge_to.len()).is_ok() {
        dominators_with::<u32>(graph, rule, true)
    } else {
        dominators_with::<u64>(graph, rule, true)
    }
}

/// An offset into the predecessor lists: `u32` halves the offsets when the edges allow it.
trait Offset: Copy + Send + Sync {
    const ZERO: Self;
    /// `value`, which the caller knows to fit.
    fn new(value: usize) -> Self;
    fn get(self) -> usize;
}

impl Offset for u32 {
    const ZERO: Self = 0;
    #[inline]
    fn new(value: usize) -> Self {
        value as u32
    }
    #[inline]
    fn get(self) -> usize {
        self as usize
    }
}

impl Offset for u64 {
    const ZERO: Self = 0;
    #[inline]
    fn new(value: usize) -> Self {
        value as u64
    }
    #[inline]
    fn get(self) -> usize {
        self as usize
    }
}

/// [`dominators`] with predecessor offsets of type `O`, which must hold the edge count;
/// `allow_semi_nca: false` forces Lengauer–Tarjan's step 5 (tests compare the two).
fn dominators_with<O: Offset>(
    graph: &HeapGraph,
    rule: &EdgeRule,
    allow_semi_nca: bool,
) -> DominatorTree {
    let parts = graph.parts();
    let n_nodes = graph.node_count();
    let root_ordinal = graph.root().to_raw();
    let mut search = Search::new(parts, rule, root_ordinal);

    // Step 1, while another worker gathers the predecessors.
    let (_, (first_pred, pred_from, non_weak_referrers)) = rayon::join(
        || search.run(root_ordinal, 0),
        || retaining_predecessors::<O>(parts, rule, root_ordinal),
    );
    let n_reachable = search.n_numbered;

    // Step 2: nodes with only weak or shortcut referrers, and their unvisited descendants.
    if rule.orphans_under_root && (search.n_numbered as usize) < n_nodes {
        for ordinal in 0..n_nodes {
            if search.number[ordinal] != 0 {
                continue;
            }
            let only_weak_referrers = match &non_weak_referrers {
                Some(counts) => counts[ordinal] == 0,
                // Under the plain rule, an edge into a node the root does not reach retains
                // exactly when it is neither weak nor a shortcut and not a self edge (an edge
                // from the root would have reached it), so the retaining predecessors and the
                // node's own edges tell.
                None => {
                    first_pred[ordinal].get() == first_pred[ordinal + 1].get()
                        && !has_strong_self_edge(parts, ordinal)
                }
            };
            if only_weak_referrers {
                search.run(ordinal as u32, ROOT);
            }
        }
    }
    let Search {
        number,
        vertex,
        mut parent,
        n_numbered: mut n,
        stack,
        ..
    } = search;
    drop(stack);
    let n_searched = n;
    let mut number = number;
    let mut vertex = vertex;
    // Step 3: whatever is left hangs under the root.
    if rule.orphans_under_root && (n as usize) < n_nodes {
        for (ordinal, slot) in number.iter_mut().enumerate() {
            if *slot == 0 {
                n += 1;
                *slot = n;
                vertex[n as usize] = ordinal as u32;
                parent[n as usize] = ROOT;
            }
        }
    }
    // Without step 3, the numbering is a true depth-first numbering (of the graph with an
    // edge from the root to each node of step 2), and the immediate dominators follow from
    // the semidominators by semi-NCA, which needs no buckets and half the `eval` calls.
    // Step 3's nodes break that property, and only Lengauer–Tarjan's buckets then reproduce
    // memlab's result.
    let method = if allow_semi_nca && n == n_searched {
        IdomMethod::SemiNca
    } else {
        IdomMethod::LengauerTarjan
    };

    // Predecessor sources translated to DFS numbers in place; unnumbered ones (left out by the
    // rule) become 0.
    let len = n as usize + 1;
    let mut pred_from = pred_from;
    to_numbers(&mut pred_from, &number);
    let preds = Preds {
        first: &first_pred,
        from: &pred_from,
        vertex: &vertex[..len],
    };
    parent.truncate(len);
    // Steps 4 and 5.
    let dom = match method {
        IdomMethod::LengauerTarjan => lengauer_tarjan(&preds, &parent),
        IdomMethod::SemiNca => semi_nca(&preds, &parent),
    };
    drop(first_pred);
    drop(pred_from);
    drop(parent);
    // Retained sizes, summed up the tree in reverse DFS order, by DFS number.
    let mut size_by_number: Vec<u64> = vertex[..len]
        .par_iter()
        .enumerate()
        .map(|(w, &ordinal)| {
            if w == 0 {
                0
            } else {
                parts.node_shallow_size[ordinal as usize]
            }
        })
        .collect();
    let mut count_by_number = vec![1u32; len];
    for w in (2..len).rev() {
        let dominator = dom[w] as usize;
        if dominator == ROOT as usize && w > n_reachable as usize {
            continue;
        }
        size_by_number[dominator] += size_by_number[w];
        count_by_number[dominator] += count_by_number[w];
    }
    // Back to node indices, gathered by DFS number in parallel; vertex[0] = NO_NODE maps "no
    // dominator" through.
    vertex[0] = NO_NODE;
    let mut idom = vec![NO_NODE; n_nodes];
    let mut reachable = vec![false; n_nodes];
    let mut retained_size = vec![0u64; n_nodes];
    let mut retained_count = vec![1u64; n_nodes];
    idom.par_chunks_mut(NODES_PER_JOB)
        .zip(reachable.par_chunks_mut(NODES_PER_JOB))
        .zip(retained_size.par_chunks_mut(NODES_PER_JOB))
        .zip(retained_count.par_chunks_mut(NODES_PER_JOB))
        .zip(number.par_chunks(NODES_PER_JOB))
        .zip(parts.node_shallow_size.par_chunks(NODES_PER_JOB))
        .for_each(|(((((idom, reachable), size), count), number), shallow)| {
            for i in 0..idom.len() {
                let w = number[i] as usize;
                if w == 0 {
                    size[i] = shallow[i];
                    continue;
                }
                idom[i] = vertex[dom[w] as usize];
                reachable[i] = w <= n_reachable as usize;
                size[i] = size_by_number[w];
                count[i] = u64::from(count_by_number[w]);
            }
        });
    DominatorTree {
        idom,
        retained_size,
        retained_count,
        reachable,
    }
}

/// How step 5 turns semidominators into immediate dominators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdomMethod {
    /// Buckets filled in step 4, then a pass in DFS order (memlab's way).
    LengauerTarjan,
    /// A walk up the dominators found so far (Georgiadis' semi-NCA); exact only when every
    /// vertex was numbered by a depth-first search.
    SemiNca,
}

/// Steps 4 and 5 as memlab runs them, over DFS numbers 1..=n (`parent.len() == n + 1`):
/// semidominators with path-compressed `eval`/`link`, buckets, then a pass in DFS order.
/// Returns the immediate dominator of every DFS number (the root's own, and the root for 0).
fn lengauer_tarjan<O: Offset>(preds_of: &Preds<'_, O>, parent: &[u32]) -> Vec<u32> {
    let len = parent.len();
    // Initially every vertex is its own label and semidominator (numbers are DFS numbers).
    let mut forest: Vec<Link> = (0..len as u32)
        .map(|k| Link {
            ancestor: 0,
            label: k,
            label_semi: k,
            semi: k,
        })
        .collect();
    let mut dom = vec![0u32; len];
    // Buckets are intrusive singly linked lists: each vertex is in at most one.
    let mut bucket_head = vec![0u32; len];
    let mut bucket_next = vec![0u32; len];
    let mut compression_stack: Vec<u32> = Vec::new();
    for w in (2..len).rev() {
        let preds = preds_of.of(w);
        let mut semi = w as u32;
        if preds.is_empty() {
            // memlab: an orphan is retained by the root.
            semi = ROOT;
        }
        for &v in preds {
            // 0: an unreachable referrer, left out of the tree by the rule. A vertex below `w`
            // is not processed yet, hence not linked: `eval` would return its own number, so
            // it is taken without touching the forest.
            let v_semi = match v {
                0 => continue,
                v if (v as usize) < w => v,
                v => evaluate(v, &mut forest, &mut compression_stack).1,
            };
            semi = semi.min(v_semi);
        }
        let w_parent = parent[w];
        let link = &mut forest[w];
        link.semi = semi;
        link.label_semi = semi;
        link.ancestor = w_parent;
        bucket_next[w] = bucket_head[semi as usize];
        bucket_head[semi as usize] = w as u32;
        let mut v = bucket_head[w_parent as usize];
        bucket_head[w_parent as usize] = 0;
        while v != 0 {
            let (u, u_semi) = evaluate(v, &mut forest, &mut compression_stack);
            dom[v as usize] = if u_semi < forest[v as usize].semi {
                u
            } else {
                w_parent
            };
            v = bucket_next[v as usize];
        }
    }
    drop(bucket_head);
    drop(bucket_next);
    dom[0] = ROOT;
    dom[ROOT as usize] = ROOT;
    for w in 2..len {
        if dom[w] != forest[w].semi {
            dom[w] = dom[dom[w] as usize];
        }
    }
    dom
}

/// Steps 4 and 5 by semi-NCA (Georgiadis), which [`lengauer_tarjan`] equals wherever the
/// numbering is a true depth-first numbering: the same semidominators, from a forest of 8
/// bytes per vertex (only the least semidominator on a path matters here, not its vertex),
/// then each immediate dominator as the nearest ancestor of the DFS parent, among the
/// dominators found so far, that is not below the semidominator.
fn semi_nca<O: Offset>(preds_of: &Preds<'_, O>, parent: &[u32]) -> Vec<u32> {
    let len = parent.len();
    // `best` is the least semidominator on the vertex's compressed path; own number at first.
    let mut forest: Vec<CompactLink> = (0..len as u32)
        .map(|k| CompactLink {
            ancestor: 0,
            best: k,
        })
        .collect();
    let mut semi: Vec<u32> = (0..len as u32).collect();
    let mut compression_stack: Vec<u32> = Vec::new();
    for w in (2..len).rev() {
        let preds = preds_of.of(w);
        // memlab: an orphan is retained by the root.
        let mut w_semi = if preds.is_empty() { ROOT } else { w as u32 };
        for (i, &v) in preds.iter().enumerate() {
            if let Some(&ahead) = preds.get(i + PREFETCH_DISTANCE) {
                prefetch(&forest, ahead as usize);
            }
            // As in `lengauer_tarjan`: 0 is left out, a vertex below `w` is its own answer.
            let v_semi = match v {
                0 => continue,
                v if (v as usize) < w => v,
                v => evaluate_compact(v, &mut forest, &mut compression_stack),
            };
            w_semi = w_semi.min(v_semi);
        }
        semi[w] = w_semi;
        forest[w] = CompactLink {
            ancestor: parent[w],
            best: w_semi,
        };
    }
    drop(forest);
    let mut dom = semi;
    dom[0] = ROOT;
    dom[ROOT as usize] = ROOT;
    for w in 2..len {
        let w_semi = dom[w];
        let mut candidate = parent[w];
        while candidate > w_semi {
            candidate = dom[candidate as usize];
        }
        dom[w] = candidate;
    }
    dom
}

/// The root's DFS number: it is always searched first.
const ROOT: u32 = 1;

/// Whether the edge from `from` to `to` of kind `kind` retains, `from_is_root` telling
/// whether `from` is the root (see `StrongEdges::retains`).
#[inline]
fn retains(rule: &EdgeRule, from: u32, from_is_root: bool, kind: EdgeKind, to: u32) -> bool {
    from != to && rule.kind_retains(kind, from_is_root)
}

/// The iterative depth-first search of steps 1 and 2, numbering nodes in visiting order.
///
/// Invariants: `number[o]` is the DFS number of node `o` (0 while unvisited);
/// `vertex[number[o]] == o`; `parent[k]` is the DFS number of node `k`'s tree parent (0 for
/// the root); `n_numbered` nodes carry numbers 1..=n_numbered.
struct Search<'a> {
    parts: &'a HeapGraphParts,
    rule: &'a EdgeRule,
    root_ordinal: u32,
    number: Vec<u32>,
    vertex: Vec<u32>,
    parent: Vec<u32>,
    n_numbered: u32,
    /// Per open node: its index, its DFS number, the next edge to look at and its edge end.
    stack: Vec<(u32, u32, u64, u64)>,
}

impl<'a> Search<'a> {
    fn new(parts: &'a HeapGraphParts, rule: &'a EdgeRule, root_ordinal: u32) -> Self {
        let n_nodes = parts.first_edge.len() - 1;
        Search {
            parts,
            rule,
            root_ordinal,
            number: vec![0; n_nodes],
            vertex: vec![0; n_nodes + 1],
            parent: vec![0; n_nodes + 1],
            n_numbered: 0,
            stack: Vec::new(),
        }
    }

    /// Numbers `start` (an unvisited node index) as a child of DFS number `start_parent`,
    /// then every node it reaches that is unvisited, depth first, in edge order.
    fn run(&mut self, start: u32, start_parent: u32) {
        let first_edge = &self.parts.first_edge;
        let edge_to = &self.parts.edge_to;
        let edge_kind = &self.parts.edge_kind;
        let number = &mut self.number;
        let vertex = &mut self.vertex;
        let parent = &mut self.parent;
        let stack = &mut self.stack;
        let mut n = self.n_numbered + 1;
        number[start as usize] = n;
        vertex[n as usize] = start;
        parent[n as usize] = start_parent;
        stack.push((
            start,
            n,
            first_edge[start as usize],
            first_edge[start as usize + 1],
        ));
        while let Some(top) = stack.last_mut() {
            let (v, v_number, mut edge, end) = *top;
            let from_is_root = v == self.root_ordinal;
            let mut next = None;
            while edge < end {
                let ahead = edge + PREFETCH_DISTANCE as u64;
                if ahead < end {
                    prefetch(number, edge_to[ahead as usize] as usize);
                }
                let w = edge_to[edge as usize];
                let kind = edge_kind[edge as usize];
                edge += 1;
                if retains(self.rule, v, from_is_root, kind, w) && number[w as usize] == 0 {
                    next = Some(w);
                    break;
                }
            }
            top.2 = edge;
            match next {
                Some(w) => {
                    n += 1;
                    number[w as usize] = n;
                    vertex[n as usize] = w;
                    parent[n as usize] = v_number;
                    stack.push((w, n, first_edge[w as usize], first_edge[w as usize + 1]));
                }
                None => {
                    stack.pop();
                }
            }
        }
        self.n_numbered = n;
    }
}

/// Nodes per parallel job when translating predecessors: large enough to amortise a job.
const NODES_PER_JOB: usize = 1 << 16;

/// Replaces each source node index in `from` by its DFS `number` (0 for nodes left
/// unnumbered), in place and in parallel: the lists keep their node-index grouping, so that no
/// second copy of them is ever held.
fn to_numbers(from: &mut [u32], number: &[u32]) {
    from.par_chunks_mut(NODES_PER_JOB * 4).for_each(|sources| {
        for source in sources {
            *source = number[*source as usize];
        }
    });
}

/// The retaining predecessors, by DFS number, of each vertex: lists grouped by node index
/// (`first`, `from`, sources already DFS numbers), found through `vertex`.
struct Preds<'a, O> {
    first: &'a [O],
    from: &'a [u32],
    vertex: &'a [u32],
}

impl<O: Offset> Preds<'_, O> {
    /// The predecessors of DFS number `w` (at least 1), as DFS numbers.
    #[inline]
    fn of(&self, w: usize) -> &[u32] {
        let node = self.vertex[w] as usize;
        &self.from[self.first[node].get()..self.first[node + 1].get()]
    }
}

/// One vertex of the link-eval forest of step 4, by DFS number; kept together so that a
/// path step touches one cache line.
#[derive(Clone, Copy)]
struct Link {
    /// Forest parent; 0 while the vertex is not linked.
    ancestor: u32,
    /// The vertex of least semidominator on the compressed path.
    label: u32,
    /// `semi` of `label`, cached (final once the vertex is linked).
    label_semi: u32,
    /// Semidominator, as a DFS number (the vertex's own until step 4 reaches it).
    semi: u32,
}

/// memlab's `eval` with iterative path compression: the label of `v` and its semidominator.
#[inline]
fn evaluate(v: u32, forest: &mut [Link], stack: &mut Vec<u32>) -> (u32, u32) {
    let link = forest[v as usize];
    if link.ancestor == 0 {
        return (v, link.semi);
    }
    // compress(v)
    let mut node = v;
    stack.clear();
    while forest[forest[node as usize].ancestor as usize].ancestor != 0 {
        stack.push(node);
        node = forest[node as usize].ancestor;
    }
    while let Some(w) = stack.pop() {
        let above = forest[forest[w as usize].ancestor as usize];
        let link = &mut forest[w as usize];
        if above.label_semi < link.label_semi {
            link.label = above.label;
            link.label_semi = above.label_semi;
        }
        link.ancestor = above.ancestor;
    }
    let link = forest[v as usize];
    (link.label, link.label_semi)
}

/// One vertex of semi-NCA's link-eval forest, by DFS number: 8 bytes, so that twice as many
/// fit in cache as [`Link`]s.
#[derive(Clone, Copy)]
struct CompactLink {
    /// Forest parent; 0 while the vertex is not linked.
    ancestor: u32,
    /// The least semidominator on the compressed path (final once the vertex is linked).
    best: u32,
}

/// [`evaluate`] over a [`CompactLink`] forest: the least semidominator on the path from `v`.
#[inline]
fn evaluate_compact(v: u32, forest: &mut [CompactLink], stack: &mut Vec<u32>) -> u32 {
    let link = forest[v as usize];
    if link.ancestor == 0 {
        return link.best;
    }
    let mut node = v;
    stack.clear();
    while forest[forest[node as usize].ancestor as usize].ancestor != 0 {
        stack.push(node);
        node = forest[node as usize].ancestor;
    }
    while let Some(w) = stack.pop() {
        let above = forest[forest[w as usize].ancestor as usize];
        let link = &mut forest[w as usize];
        link.best = link.best.min(above.best);
        link.ancestor = above.ancestor;
    }
    forest[v as usize].best
}

/// How many predecessors ahead [`semi_nca`] asks for a forest entry: the forest is far larger
/// than the cache and the predecessors' numbers are known in advance, so their first loads
/// can overlap.
const PREFETCH_DISTANCE: usize = 8;

/// Hints that `slice[index]` will be read soon (a no-op off x86-64 and out of range).
#[inline]
fn prefetch<T>(slice: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(item) = slice.get(index) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of every x86-64 target, and a prefetch reads nothing: it is a
        // hint about a valid address that cannot fault or change memory.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(item).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, index);
}

/// The sources of retaining edges into each node, as a CSR (`first`, `from`) over node
/// indices, sources in index order; and, where step 2 cannot tell it from them (under
/// [`EdgeRule::orphans_under_root`] with weak or non-root shortcut edges retaining), per node
/// how many referrers reach it by an edge that is neither weak nor a shortcut (memlab's
/// `hasOnlyWeakReferrers` is "none").
///
/// The sources are split in two halves of about equal edge counts, each counted and filled by
/// its own rayon job into disjoint slots (the low half's first), so the output is the same
/// whichever worker runs which job.
fn retaining_predecessors<O: Offset>(
    parts: &HeapGraphParts,
    rule: &EdgeRule,
    root_ordinal: u32,
) -> (Vec<O>, Vec<u32>, Option<Vec<u32>>) {
    let n_nodes = parts.first_edge.len() - 1;
    let n_edges = parts.edge_to.len() as u64;
    let mid = parts
        .first_edge
        .partition_point(|&first| first < n_edges / 2)
        .min(n_nodes) as u32;
    let low = 0..mid;
    let high = mid..n_nodes as u32;
    let ((mut cursor_low, mut cursor_high), non_weak) = rayon::join(
        || {
            rayon::join(
                || count_retaining::<O>(parts, rule, root_ordinal, low.clone()),
                || count_retaining::<O>(parts, rule, root_ordinal, high.clone()),
            )
        },
        || {
            (rule.orphans_under_root && (rule.include_weak || rule.include_non_root_shortcuts))
                .then(|| count_non_weak_referrers(parts))
        },
    );
    // Counts become cursors: the low half's sources go first in each list.
    let mut first = vec![O::ZERO; n_nodes + 1];
    let mut running = 0;
    for to in 0..n_nodes {
        first[to] = O::new(running);
        let (count_low, count_high) = (cursor_low[to].get(), cursor_high[to].get());
        cursor_low[to] = O::new(running);
        cursor_high[to] = O::new(running + count_low);
        running += count_low + count_high;
    }
    first[n_nodes] = O::new(running);
    let from_column: Vec<AtomicU32> = (0..running).map(|_| AtomicU32::new(0)).collect();
    rayon::join(
        || {
            fill_retaining(
                parts,
                rule,
                root_ordinal,
                low,
                &mut cursor_low,
                &from_column,
            )
        },
        || {
            fill_retaining(
                parts,
                rule,
                root_ordinal,
                high,
                &mut cursor_high,
                &from_column,
            )
        },
    );
    drop(cursor_low);
    drop(cursor_high);
    let from_column = from_column.into_iter().map(AtomicU32::into_inner).collect();
    (first, from_column, non_weak)
}

/// Per node, how many retaining edges from the sources `sources` reach it.
fn count_retaining<O: Offset>(
    parts: &HeapGraphParts,
    rule: &EdgeRule,
    root_ordinal: u32,
    sources: Range<u32>,
) -> Vec<O> {
    let mut counts = vec![O::ZERO; parts.first_edge.len() - 1];
    for from in sources {
        let range =
            parts.first_edge[from as usize] as usize..parts.first_edge[from as usize + 1] as usize;
        let from_is_root = from == root_ordinal;
        for (&to, &kind) in parts.edge_to[range.clone()]
            .iter()
            .zip(&parts.edge_kind[range])
        {
            if retains(rule, from, from_is_root, kind, to) {
                counts[to as usize] = O::new(counts[to as usize].get() + 1);
            }
        }
    }
    counts
}

/// Writes the sources `sources` of retaining edges at `cursor[to]` in `from_column`, advancing
/// the cursors; the slots are this job's alone.
fn fill_retaining<O: Offset>(
    parts: &HeapGraphParts,
    rule: &EdgeRule,
    root_ordinal: u32,
    sources: Range<u32>,
    cursor: &mut [O],
    from_column: &[AtomicU32],
) {
    for from in sources {
        let range =
            parts.first_edge[from as usize] as usize..parts.first_edge[from as usize + 1] as usize;
        let from_is_root = from == root_ordinal;
        for (&to, &kind) in parts.edge_to[range.clone()]
            .iter()
            .zip(&parts.edge_kind[range])
        {
            if retains(rule, from, from_is_root, kind, to) {
                let slot = &mut cursor[to as usize];
                from_column[slot.get()].store(from, Ordering::Relaxed);
                *slot = O::new(slot.get() + 1);
            }
        }
    }
}

/// Whether `node` has an edge to itself that is neither weak nor a shortcut.
fn has_strong_self_edge(parts: &HeapGraphParts, node: usize) -> bool {
    let range = parts.first_edge[node] as usize..parts.first_edge[node + 1] as usize;
    parts.edge_to[range.clone()]
        .iter()
        .zip(&parts.edge_kind[range])
        .any(|(&to, &kind)| {
            to as usize == node && !matches!(kind, EdgeKind::Weak | EdgeKind::Shortcut)
        })
}

/// Per node, how many referrers reach it by an edge that is neither weak nor a shortcut.
fn count_non_weak_referrers(parts: &HeapGraphParts) -> Vec<u32> {
    let mut counts = vec![0u32; parts.first_edge.len() - 1];
    for (&to, &kind) in parts.edge_to.iter().zip(&parts.edge_kind) {
        if !matches!(kind, EdgeKind::Weak | EdgeKind::Shortcut) {
            counts[to as usize] = counts[to as usize].saturating_add(1);
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use heapgraph_model::Runtime;
    use heapgraph_test_support::graph_from_edges;

    /// The `u64` offsets, used only past 2³² edges, give the same tree as the `u32` ones, and
    /// semi-NCA gives the same tree as Lengauer–Tarjan's buckets wherever it is used.
    #[test]
    fn offsets_and_idom_methods_give_the_same_tree() {
        let kinds = [
            EdgeKind::Property,
            EdgeKind::Element,
            EdgeKind::Weak,
            EdgeKind::Shortcut,
            EdgeKind::Internal,
        ];
        // A fixed linear congruential sequence: sparse graphs with orphans, cycles, weak and
        // shortcut edges, and self edges.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % bound
        };
        for _ in 0..5000 {
            let n_nodes = 1 + next(40) as u32;
            let sizes: Vec<u64> = (0..n_nodes).map(|_| 1 + next(100)).collect();
            let n_edges = next(u64::from(n_nodes) * 3);
            let edges: Vec<(u32, u32, EdgeKind)> = (0..n_edges)
                .map(|_| {
                    let from = next(u64::from(n_nodes)) as u32;
                    let to = next(u64::from(n_nodes)) as u32;
                    (from, to, kinds[next(kinds.len() as u64) as usize])
                })
                .collect();
            let graph = graph_from_edges(&sizes, &edges);
            for runtime in [Runtime::V8, Runtime::Java] {
                let rule = EdgeRule::for_runtime(runtime);
                let narrow = dominators_with::<u32>(&graph, &rule, true);
                let wide = dominators_with::<u64>(&graph, &rule, true);
                let lengauer_tarjan = dominators_with::<u32>(&graph, &rule, false);
                if runtime == Runtime::V8 {
                    // Step 2's test without a count of non-weak referrers.
                    let parts = graph.parts();
                    let (first, _, counted) =
                        retaining_predecessors::<u32>(parts, &rule, graph.root().to_raw());
                    assert!(counted.is_none());
                    let counts = count_non_weak_referrers(parts);
                    for node in (0..graph.node_count()).filter(|&node| !narrow.reachable[node]) {
                        assert_eq!(
                            counts[node] == 0,
                            first[node] == first[node + 1] && !has_strong_self_edge(parts, node)
                        );
                    }
                }
                for other in [&wide, &lengauer_tarjan] {
                    assert_eq!(narrow.idom, other.idom);
                    assert_eq!(narrow.retained_size, other.retained_size);
                    assert_eq!(narrow.retained_count, other.retained_count);
                    assert_eq!(narrow.reachable, other.reachable);
                }
            }
        }
    }
}
