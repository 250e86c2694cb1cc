//! Merged paths to the roots: for a set of objects (the instances of a type, the objects new
//! since a baseline), the tree of shortest chains from the root to each of them, merged by
//! node, each node with how many of the objects it leads to and what they retain. Eclipse MAT's
//! "Merge Shortest Paths to GC Roots" and dotMemory's merged retention paths answer the same
//! question: who holds the 30,000 leaked records, in one screen.
//!
//! One breadth-first search from the root over the retaining edges gives every object its
//! parent on a shortest chain; it stops once every object asked about is found. In the
//! [`ChainOrder::Explain`] order the search first enters through named roots only (a module, a
//! static field, a thread, V8's `global`), then through the others, as `who-holds` ranks its
//! chains. That order's parents of the whole graph are stored with a converted dump
//! ([`Analysis::chain_parents`]); where they are known, the chains are read up from the objects
//! instead of searched, which costs what the chains hold rather than what the graph holds. The
//! nodes on a chain to an object are then counted bottom-up, children before parents.

use crate::Analysis;
use crate::NO_NODE;
use crate::chains::{ChainOrder, is_named_root_edge};
use crate::distances::prefetch_queued;
use crate::edge_rule::{EdgeRule, StrongEdges};
use crate::queries::edge_text;
use crate::view::ObjectView;
use heapgraph_model::{HeapGraph, NodeId, StringId, TypePathNode, TypePaths};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use std::cmp::Reverse;

/// Nodes a merged tree lists at most; the rest are counted in their parents' hidden totals.
pub const MAX_NODES: usize = 200;

/// A type with at least one instance in this many objects has its merged paths (at
/// [`TYPE_PATHS_BRANCHES`], in the explaining order) kept with the analysis
/// ([`crate::Analysis::type_paths`]): merging the chains of millions of instances takes
/// seconds (1.4 s for 6.4 million of 35 million objects), and the answer never changes. At
/// most this many types qualify, with at most every object among them, so keeping them all
/// costs at most this many merges of the whole graph's chains, in practice a few (13 types on
/// the benchmark's large HPROF dump).
pub const TYPE_PATHS_SHARE: u64 = 1024;

/// Children listed per node in the kept merged paths: what `paths` lists by default.
pub const TYPE_PATHS_BRANCHES: usize = 20;

/// A run of nodes with one child each that is longer than this is shown by its first
/// [`RUN_HEAD`] and last [`RUN_TAIL`] nodes, with the steps between counted.
const MAX_RUN: usize = 8;
const RUN_HEAD: usize = 3;
const RUN_TAIL: usize = 3;

/// One node of a merged tree.
#[derive(Clone, Debug, PartialEq)]
pub struct MergedPathNode {
    /// The object.
    pub object: ObjectView,
    /// The reference into it from its parent (a field, key, variable or root kind).
    pub edge: Option<String>,
    /// That reference's index among the graph's edges.
    pub edge_index: Option<usize>,
    /// That reference's kind (`property`, `element`, …).
    pub edge_kind: Option<&'static str>,
    /// The parent's index in [`MergedPathsView::nodes`]; `None` for the root's children.
    pub parent: Option<usize>,
    /// Edges from the root on this chain (the root's children are at 1).
    pub depth: u32,
    /// How far in it is printed: a node whose parent has no other child on the tree continues
    /// its parent's line of descent at the same indent.
    pub indent: u32,
    /// Objects asked about at or below it.
    pub targets: u64,
    /// What those objects retain together, each byte counted once (an object that another of
    /// them below this node dominates adds nothing).
    pub retained_size: u64,
    /// Whether the node is itself one of the objects asked about.
    pub is_target: bool,
    /// Steps of a long single-child run left out just above this node.
    pub skipped_steps: u64,
    /// Children left out (past the branch limit or [`MAX_NODES`]).
    pub hidden_children: u64,
    /// Objects asked about below those children.
    pub hidden_targets: u64,
    /// What those objects retain.
    pub hidden_retained: u64,
}

/// The merged tree of shortest chains from the root to a set of objects.
#[derive(Clone, Debug, PartialEq)]
pub struct MergedPathsView {
    /// Objects asked about.
    pub targets: u64,
    /// Those with a chain from the root (the others are unreachable).
    pub reached: u64,
    /// What the reached objects retain, each byte counted once.
    pub retained_size: u64,
    /// Children listed per node, at most.
    pub branches: usize,
    /// The order the chains were chosen in.
    pub order: ChainOrder,
    /// The tree in pre-order below the root (the root itself is left out), the children of a
    /// node by the objects they lead to, most first.
    pub nodes: Vec<MergedPathNode>,
}

/// The real objects of type `type_name` (none when no object has it).
///
/// Complexity: O(V), on every core.
pub fn objects_of_type(graph: &HeapGraph, type_name: &str) -> Vec<NodeId> {
    let Some(type_id) = graph.strings().find(type_name) else {
        return Vec::new();
    };
    (0..graph.node_count())
        .into_par_iter()
        .with_min_len(1 << 16)
        .filter_map(|index| graph.node(index))
        .filter(|&node| graph.type_id(node) == type_id && !graph.is_synthetic(node))
        .collect()
}

/// The real objects of `after` whose object id `before` does not have: the objects allocated
/// between the two dumps, as `leaks` and `diff` match objects (V8 ids stay with their object
/// for the life of a process; Java and Python ids are addresses, which a collector may reuse
/// or move, so there "new" is an upper bound).
///
/// Complexity: O(V_before + V_after) expected time, O(V_before) auxiliary space.
pub fn new_objects(before: &HeapGraph, after: &HeapGraph) -> Vec<NodeId> {
    let before_ids: FxHashSet<u64> = before.parts().node_object_id.iter().collect();
    after
        .nodes()
        .filter(|&node| !after.is_synthetic(node) && !before_ids.contains(&after.object_id(node)))
        .collect()
}

/// The merged shortest chains from the root to `targets`, at most `branches` children listed
/// per node, chains chosen in `order`.
///
/// # Complexity
/// O(V + E) time for the search (less when it finds every target early), O(V) auxiliary space
/// (a parent and a place in the search order per node, and three bits), then O(P) for the P
/// nodes on the chains, and O(c log c) to rank the c children of each of the listed nodes.
/// With the chain parents stored or already built ([`Analysis::chain_parents`]) there is no
/// search: O(P + V/64) time, and O(U + T + V/64) space for the U chain nodes that two targets'
/// chains share and the T targets (each target's own line below them is read up again when
/// shown): a peak 386 MB lower for the 6.4 million `byte[]` of a 35 million object dump.
pub fn merged_paths(
    graph: &HeapGraph,
    analysis: &Analysis,
    targets: &[NodeId],
    branches: usize,
    order: ChainOrder,
) -> MergedPathsView {
    merged_paths_placed(
        graph,
        analysis,
        targets_bits(graph, targets),
        branches,
        order,
        Places::for_targets,
    )
}

/// `targets` as a bit per node of `graph`.
fn targets_bits(graph: &HeapGraph, targets: &[NodeId]) -> Bits {
    let mut is_target = Bits::new(graph.node_count());
    for &node in targets {
        is_target.set(node.index());
    }
    is_target
}

/// [`merged_paths`] of the nodes `is_target` marks, with the chain nodes' places for stored
/// parents chosen by `places` (from the graph's node count and the targets').
fn merged_paths_placed(
    graph: &HeapGraph,
    analysis: &Analysis,
    is_target: Bits,
    branches: usize,
    order: ChainOrder,
    places: fn(usize, usize) -> Places,
) -> MergedPathsView {
    let n_nodes = graph.node_count();
    let n_targets = is_target.count() as u64;
    let stored = match order {
        ChainOrder::Explain => analysis.known_chain_parents(),
        ChainOrder::Shortest => None,
    };
    let ChainNodes {
        nodes: chain_nodes,
        parent: chain_parent,
        place,
        tails,
    } = stored
        .and_then(|parents| {
            let places = places(n_nodes, n_targets as usize);
            chains_up_from(graph, parents, &is_target, places)
        })
        .unwrap_or_else(|| {
            let search = search(
                graph,
                &analysis.edge_rule,
                Some((&is_target, n_targets)),
                (order, Visited::Kept),
            );
            chains_in_search_order(graph, search, &is_target)
        });
    let root = graph.root().to_raw();
    let tree = &analysis.dominators;
    // What the targets below a node retain, each byte once: a target adds its retained size
    // from itself up to, not including, the nearest target that dominates it (which already
    // counts those bytes). That target lies on every chain to it, so it is an ancestor here.
    let mut nearest_target_dominator = vec![NO_NODE; chain_nodes.len()];
    for (at, &node) in chain_nodes.iter().enumerate() {
        let dominator = tree.idom[node as usize];
        if node == root || dominator == root || dominator == NO_NODE {
            continue;
        }
        let above = place.get(dominator);
        if (above as usize) < at && chain_nodes[above as usize] == dominator {
            nearest_target_dominator[at] = if is_target.get(dominator as usize) {
                above
            } else {
                nearest_target_dominator[above as usize]
            };
        }
    }
    let mut counts = vec![0u32; chain_nodes.len()];
    // Sums that a subtraction may take below zero on the way; the totals are exact.
    let mut retained = vec![0u64; chain_nodes.len()];
    let mut reached = 0u64;
    for (at, &node) in chain_nodes.iter().enumerate() {
        if is_target.get(node as usize) {
            let size = tree.retained_size.get(node as usize);
            reached += 1;
            counts[at] = 1;
            retained[at] = retained[at].wrapping_add(size);
            if let Some(cancel) = retained.get_mut(nearest_target_dominator[at] as usize) {
                *cancel = cancel.wrapping_sub(size);
            }
        }
    }
    // A tail's target counts at the upper node it hangs from. The targets that dominate it
    // lie on its chain, above the tail (whose other nodes are no targets): its dominators are
    // followed up to the first upper node.
    for at in 0..chain_nodes.len() {
        for &target in tails.of(at as u32) {
            let size = tree.retained_size.get(target as usize);
            reached += 1;
            counts[at] += 1;
            retained[at] = retained[at].wrapping_add(size);
            let mut dominator = tree.idom[target as usize];
            let nearest = loop {
                if dominator == root || dominator == NO_NODE {
                    break NO_NODE;
                }
                let above = place.get(dominator);
                if (above as usize) < chain_nodes.len() && chain_nodes[above as usize] == dominator
                {
                    break if is_target.get(dominator as usize) {
                        above
                    } else {
                        nearest_target_dominator[above as usize]
                    };
                }
                dominator = tree.idom[dominator as usize];
            };
            if let Some(cancel) = retained.get_mut(nearest as usize) {
                *cancel = cancel.wrapping_sub(size);
            }
        }
    }
    // The places' allocation holds the children's offsets next; the nearest dominators' holds
    // the children.
    let mut first = place.into_zeroed(chain_nodes.len() + 1);
    // Children before parents; each node's children counted as it is added to its parent.
    for at in (1..chain_nodes.len()).rev() {
        let above = chain_parent[at] as usize;
        counts[above] += counts[at];
        retained[above] = retained[above].wrapping_add(retained[at]);
        first[above + 1] += 1;
    }
    // Children per chain node (a CSR): offsets summed, then each child put at its parent's
    // next slot, which leaves `first[p]` at the start of `p + 1`; one shift puts them back.
    for at in 1..first.len() {
        first[at] += first[at - 1];
    }
    let mut kids = nearest_target_dominator;
    kids.truncate(chain_nodes.len().saturating_sub(1));
    for (at, &above) in chain_parent.iter().enumerate().skip(1) {
        kids[first[above as usize] as usize] = at as u32;
        first[above as usize] += 1;
    }
    first.rotate_right(1);
    first[0] = 0;
    // Sorted when listed: only the listed nodes' children are ever ranked.
    let children = Children { first, kids };
    let mut builder = TreeBuilder {
        graph,
        analysis,
        chain_nodes: &chain_nodes,
        chain_parent: &chain_parent,
        children: &children,
        tails: &tails,
        parents: stored.unwrap_or_default(),
        counts: &counts,
        retained: &retained,
        is_target: &is_target,
        branches: branches.max(1),
        order,
        nodes: Vec::new(),
    };
    if !chain_nodes.is_empty() {
        builder.build();
    }
    MergedPathsView {
        targets: n_targets,
        reached,
        retained_size: retained.first().copied().unwrap_or(0),
        branches: branches.max(1),
        order,
        nodes: builder.nodes,
    }
}

fn node_id(graph: &HeapGraph, raw: u32) -> NodeId {
    // Raw indices here come from the graph's own edges.
    graph.node(raw as usize).unwrap_or(graph.root())
}

/// The nodes on a chain to a target, every parent before its children (the root first, when
/// any target is reached), each one's parent by its place among them, and, per node of the
/// graph, a chain node's place (other nodes' entries are meaningless: a place is trusted only
/// where it is below the asking node's and the node there is the one asked about).
///
/// Read up from stored parents, only the *upper* chain nodes are listed so: the root and
/// those on the chains of two targets or more. Below them hang the *tails*, each a line of
/// nodes that leads to one target, kept as that target alone (its nodes are read up from the
/// parents when a tail is shown). The instances of a type are mostly the ends of such lines
/// (a million `byte[]`, each under its own entry and record): this keeps a few bytes a target
/// where listing every chain node took 24 a node.
struct ChainNodes {
    nodes: Vec<u32>,
    parent: Vec<u32>,
    place: Places,
    tails: Tails,
}

/// The targets whose tails hang from each upper chain node: those of the node at place `at`
/// are `targets[first[at]..first[at + 1]]`, in node order. Empty where every chain node is
/// listed.
#[derive(Default)]
struct Tails {
    first: Vec<u32>,
    targets: Vec<u32>,
}

impl Tails {
    fn of(&self, at: u32) -> &[u32] {
        match self.first.get(at as usize..at as usize + 2) {
            Some(&[start, end]) => &self.targets[start as usize..end as usize],
            _ => &[],
        }
    }
}

/// Each chain node's place among the chain nodes, by node: a column of the graph's length (a
/// search's), or, for chains read up through stored parents, a hash map for a few targets'
/// (filling a column of 35M entries took most of an answer for a type of a thousand objects)
/// and ranks for many targets'.
enum Places {
    Dense(Vec<u32>),
    Sparse(FxHashMap<u32, u32>),
    /// The chain nodes as a bit per node of the graph, the number of them before each word of
    /// 64 bits, and the place of each by its rank among them in node order: 4 bytes a chain
    /// node and a bit a node, where the column takes 4 bytes a node (the 6.4 million `byte[]`
    /// of a 35 million object dump have 7.3 million upper nodes).
    Ranked {
        chain: Bits,
        before: Vec<u32>,
        place_of_rank: Vec<u32>,
    },
}

impl Places {
    /// For the chains of `targets` objects of a graph of `n_nodes`, read up through stored
    /// parents: the kind of places, to be filled by [`Places::indexed`].
    fn for_targets(n_nodes: usize, targets: usize) -> Places {
        // A chain is tens of nodes at most, and chains share their upper parts.
        if targets.saturating_mul(64) < n_nodes {
            Places::Sparse(FxHashMap::default())
        } else {
            Places::Ranked {
                chain: Bits::new(0),
                before: Vec::new(),
                place_of_rank: Vec::new(),
            }
        }
    }

    /// Places of this kind for `nodes` (each at its index), which `chain` marks, in a graph of
    /// `n_nodes`.
    fn indexed(self, n_nodes: usize, nodes: &[u32], chain: Bits) -> Places {
        match self {
            Places::Dense(_) => {
                let mut places = vec![NO_NODE; n_nodes];
                for (at, &node) in nodes.iter().enumerate() {
                    places[node as usize] = at as u32;
                }
                Places::Dense(places)
            }
            Places::Sparse(mut places) => {
                places.extend(
                    nodes
                        .iter()
                        .enumerate()
                        .map(|(at, &node)| (node, at as u32)),
                );
                Places::Sparse(places)
            }
            Places::Ranked { .. } => {
                let mut before = Vec::with_capacity(chain.0.len());
                let mut count = 0u32;
                for word in &chain.0 {
                    before.push(count);
                    count += word.count_ones();
                }
                let mut place_of_rank = vec![0; nodes.len()];
                for (at, &node) in nodes.iter().enumerate() {
                    place_of_rank[rank(&chain, &before, node) as usize] = at as u32;
                }
                Places::Ranked {
                    chain,
                    before,
                    place_of_rank,
                }
            }
        }
    }

    /// The place of `node`, or [`NO_NODE`] where none was set (in a dense column, meaningless
    /// where none was set: [`ChainNodes`]).
    #[inline]
    fn get(&self, node: u32) -> u32 {
        match self {
            Places::Dense(places) => places[node as usize],
            Places::Sparse(places) => places.get(&node).copied().unwrap_or(NO_NODE),
            Places::Ranked {
                chain,
                before,
                place_of_rank,
            } => {
                if chain.get(node as usize) {
                    place_of_rank[rank(chain, before, node) as usize]
                } else {
                    NO_NODE
                }
            }
        }
    }

    /// A zeroed column of `len`, in the dense column's allocation where there is one (touched
    /// already: a fresh allocation of 4 bytes per node costs its page faults).
    fn into_zeroed(self, len: usize) -> Vec<u32> {
        match self {
            Places::Dense(mut places) => {
                places.clear();
                places.resize(len, 0);
                places
            }
            other => {
                drop(other);
                vec![0; len]
            }
        }
    }
}

/// The number of `chain`'s bits set below `node` (`before`: the number below each word).
#[inline]
fn rank(chain: &Bits, before: &[u32], node: u32) -> u32 {
    let (word, bit) = (node as usize / 64, node % 64);
    before[word] + (chain.0[word] & ((1u64 << bit) - 1)).count_ones()
}

/// The chain nodes of a search: those on the way up from each target, in search order.
fn chains_in_search_order(graph: &HeapGraph, search: SearchTree, is_target: &Bits) -> ChainNodes {
    let n_nodes = graph.node_count();
    let mut on_path = Bits::new(n_nodes);
    for &node in &search.visited {
        if !is_target.get(node as usize) {
            continue;
        }
        let mut current = node;
        while !on_path.get(current as usize) {
            on_path.set(current as usize);
            let parent = search.parent[current as usize];
            if parent == current {
                break;
            }
            current = parent;
        }
    }
    let SearchTree {
        mut parent,
        visited,
    } = search;
    let nodes: Vec<u32> = visited
        .iter()
        .copied()
        .filter(|&node| on_path.get(node as usize))
        .collect();
    drop(visited);
    drop(on_path);
    // Each chain node's parent by its place among the chain nodes; the parent column, no
    // longer needed, then maps a chain node to its place (array reads, not a hash map: on a
    // million targets this part is most of the time).
    let root = graph.root().to_raw();
    let mut chain_parent: Vec<u32> = nodes
        .iter()
        .map(|&node| {
            if node == root {
                NO_NODE
            } else {
                parent[node as usize]
            }
        })
        .collect();
    for (at, &node) in nodes.iter().enumerate() {
        parent[node as usize] = at as u32;
    }
    let place = parent;
    for above in &mut chain_parent {
        if *above != NO_NODE {
            *above = place[*above as usize];
        }
    }
    ChainNodes {
        nodes,
        parent: chain_parent,
        place: Places::Dense(place),
        tails: Tails::default(),
    }
}

/// The chain nodes read from known [`Analysis::chain_parents`], in three walks up the
/// parents: from each target to the first node an earlier walk passed, which marks that node
/// as one where two chains meet; from each such node to the upper nodes already listed, which
/// lists the upper nodes, parents first; from each target not listed to the upper node its
/// tail hangs from. None where the parents do not lead to the root (a stored column that is
/// not a tree), for the caller to search.
///
/// Complexity: O(P + T) time for the P chain nodes and T targets; three bits per node of the
/// graph, and O(U + T) for the U upper nodes (their places in a map or by rank).
fn chains_up_from(
    graph: &HeapGraph,
    parents: &[u32],
    is_target: &Bits,
    place: Places,
) -> Option<ChainNodes> {
    let n_nodes = graph.node_count();
    if parents.len() != n_nodes {
        return None;
    }
    let root = graph.root().to_raw();
    let reached = |node: u32| node == root || parents[node as usize] != NO_NODE;
    let mut seen = Bits::new(n_nodes);
    let mut meets = Bits::new(n_nodes);
    let mut any_reached = false;
    let mut walk = Vec::new();
    for target in is_target.ones() {
        let mut node = target as u32;
        // Only a target itself may be unreached: a reached node's parent is reached.
        if !reached(node) {
            continue;
        }
        any_reached = true;
        walk.clear();
        while node != root && !seen.get(node as usize) {
            seen.set(node as usize);
            walk.push(node);
            node = parents[node as usize];
            if node == NO_NODE {
                return None;
            }
        }
        // A walk that comes back to a node of its own goes round a cycle; one that comes to
        // an earlier walk's node is where two chains meet.
        if node != root && walk.contains(&node) {
            return None;
        }
        meets.set(node as usize);
    }
    let mut nodes = Vec::new();
    if !any_reached {
        return Some(ChainNodes {
            nodes,
            parent: Vec::new(),
            place: Places::Sparse(FxHashMap::default()),
            tails: Tails::default(),
        });
    }
    nodes.push(root);
    let mut upper = Bits::new(n_nodes);
    upper.set(root as usize);
    for meet in meets.ones() {
        let mut node = meet as u32;
        walk.clear();
        while !upper.get(node as usize) {
            upper.set(node as usize);
            walk.push(node);
            node = parents[node as usize];
        }
        nodes.extend(walk.iter().rev());
    }
    drop(seen);
    drop(meets);
    let place = place.indexed(n_nodes, &nodes, upper);
    let chain_parent: Vec<u32> = nodes
        .iter()
        .map(|&node| {
            if node == root {
                NO_NODE
            } else {
                place.get(parents[node as usize])
            }
        })
        .collect();
    // Each tail's upper node, by place, in the targets' order; then the targets grouped by it
    // (counted at `first[at + 1]`, summed, then each put at its node's next slot, which leaves
    // `first[at]` at the start of `at + 1`; one shift puts them back).
    let tail_targets = || {
        is_target
            .ones()
            .map(|target| target as u32)
            .filter(|&target| reached(target) && place.get(target) == NO_NODE)
    };
    let hangs_from: Vec<u32> = tail_targets()
        .map(|target| {
            let mut node = target;
            while place.get(node) == NO_NODE {
                node = parents[node as usize];
            }
            place.get(node)
        })
        .collect();
    let mut first = vec![0u32; nodes.len() + 1];
    for &at in &hangs_from {
        first[at as usize + 1] += 1;
    }
    for at in 1..first.len() {
        first[at] += first[at - 1];
    }
    let mut targets = vec![0u32; hangs_from.len()];
    for (target, &at) in tail_targets().zip(&hangs_from) {
        let slot = &mut first[at as usize];
        targets[*slot as usize] = target;
        *slot += 1;
    }
    first.rotate_right(1);
    first[0] = 0;
    Some(ChainNodes {
        nodes,
        parent: chain_parent,
        place,
        tails: Tails { first, targets },
    })
}

/// Each node's parent on the chain that explains it first ([`Analysis::chain_parents`]):
/// one search over the whole graph in the [`ChainOrder::Explain`] order.
///
/// Complexity: O(V + E) time, O(V) auxiliary space.
pub fn chain_parents(graph: &HeapGraph, rule: &EdgeRule) -> Vec<u32> {
    let mut parent = search(graph, rule, None, (ChainOrder::Explain, Visited::Dropped)).parent;
    parent[graph.root().index()] = NO_NODE;
    parent
}

/// The edge a search in `order` took from `parent` into `child`: the first retaining edge
/// between them, through a named root where the search entered through one.
pub(crate) fn edge_into(
    strong: &StrongEdges,
    parent: u32,
    child: u32,
    order: ChainOrder,
) -> Option<usize> {
    let graph = strong.graph;
    let parts = graph.parts();
    let mut edges = parts.first_edge.range(parent as usize).filter(|&edge| {
        graph.edge_target(edge).to_raw() == child && strong.retains(parent, edge, child)
    });
    let first = edges.next()?;
    if parent != graph.root().to_raw() || order == ChainOrder::Shortest {
        return Some(first);
    }
    Some(
        std::iter::once(first)
            .chain(edges)
            .find(|&edge| is_named_root_edge(graph, edge))
            .unwrap_or(first),
    )
}

/// The children of each chain node, by place: those of `at` are
/// `kids[first[at]..first[at + 1]]`.
struct Children {
    first: Vec<u32>,
    kids: Vec<u32>,
}

impl Children {
    fn of(&self, at: u32) -> &[u32] {
        &self.kids[self.first[at as usize] as usize..self.first[at as usize + 1] as usize]
    }
}

/// A bit per node.
pub(crate) struct Bits(Vec<u64>);

impl Bits {
    pub(crate) fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    #[inline]
    pub(crate) fn get(&self, at: usize) -> bool {
        self.0[at / 64] >> (at % 64) & 1 == 1
    }
    #[inline]
    pub(crate) fn set(&mut self, at: usize) {
        self.0[at / 64] |= 1 << (at % 64);
    }
    fn count(&self) -> usize {
        self.0.iter().map(|word| word.count_ones() as usize).sum()
    }
    /// The set bits, in order.
    fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(at, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    at * 64 + bit
                })
            })
        })
    }
}

/// A breadth-first search tree: each visited node's parent (the root's is itself), and the
/// visited nodes in the order found, where [`Visited::Kept`].
struct SearchTree {
    parent: Vec<u32>,
    visited: Vec<u32>,
}

/// Whether a search keeps the nodes it visited, in the order found, for its caller.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Visited {
    Kept,
    /// Only those not searched from yet, its queue: the chain parents of the whole graph,
    /// made beside the dominator pass's search, held 4 bytes a node more there, its peak on
    /// the 2.5 GB Java dump.
    Dropped,
}

/// Queue entries searched from, at least, before [`Visited::Dropped`] drops them: 4 MiB.
const DROP_SEARCHED_FROM: usize = 1 << 20;

/// The search tree in `order`, stopping once it has found the `targets` (a bit per node and
/// how many are set) when given.
fn search(
    graph: &HeapGraph,
    rule: &EdgeRule,
    targets: Option<(&Bits, u64)>,
    (order, kept): (ChainOrder, Visited),
) -> SearchTree {
    let strong = StrongEdges::new(graph, rule);
    let parts = graph.parts();
    let edge_to = graph.edge_targets();
    let root = graph.root().to_raw();
    let mut parent = vec![NO_NODE; graph.node_count()];
    parent[root as usize] = root;
    // The visited nodes are the queue: each pass takes the root's edges into nodes the passes
    // before did not reach, then searches from them.
    let mut visited = Vec::with_capacity(graph.node_count());
    visited.push(root);
    // A bit per node says which were reached: an eighth of a megabyte per million nodes stays
    // in cache, where the parent column would cost a miss per edge.
    let mut reached = Bits::new(graph.node_count());
    reached.set(root as usize);
    let (is_target, mut remaining) = match targets {
        Some((is_target, count)) => (Some(is_target), count),
        None => (None, u64::MAX),
    };
    let named = |edge: usize| is_named_root_edge(graph, edge);
    let anything = |_: usize| true;
    let passes: &[&dyn Fn(usize) -> bool] = match order {
        ChainOrder::Explain => &[&named, &anything],
        ChainOrder::Shortest => &[&anything],
    };
    'passes: for enters in passes {
        let mut head = visited.len();
        let mut node = root;
        loop {
            for edge in parts.first_edge.range(node as usize) {
                let to = edge_to[edge];
                if reached.get(to as usize)
                    || !strong.retains(node, edge, to)
                    || (node == root && !enters(edge))
                {
                    continue;
                }
                reached.set(to as usize);
                parent[to as usize] = node;
                visited.push(to);
                if is_target.is_some_and(|is_target| is_target.get(to as usize)) {
                    remaining -= 1;
                    if remaining == 0 {
                        break 'passes;
                    }
                }
            }
            if remaining == 0 || head == visited.len() {
                break;
            }
            prefetch_queued(parts, &edge_to, &visited, head);
            node = visited[head];
            head += 1;
            // Moving the queue down costs no more than the pushes it follows: at most half of
            // it is left.
            if kept == Visited::Dropped && head >= DROP_SEARCHED_FROM && 2 * head >= visited.len() {
                visited.drain(..head);
                visited.shrink_to_fit();
                head = 0;
            }
        }
    }
    SearchTree { parent, visited }
}

struct TreeBuilder<'a> {
    graph: &'a HeapGraph,
    analysis: &'a Analysis,
    chain_nodes: &'a [u32],
    chain_parent: &'a [u32],
    children: &'a Children,
    tails: &'a Tails,
    /// The stored parents the tails are read up from (empty where there are no tails).
    parents: &'a [u32],
    counts: &'a [u32],
    retained: &'a [u64],
    is_target: &'a Bits,
    branches: usize,
    order: ChainOrder,
    nodes: Vec<MergedPathNode>,
}

/// A node of the merged tree: an upper chain node by its place, or a node of a tail, with its
/// parent on the chain and the tail's target.
#[derive(Clone, Copy)]
enum Step {
    Upper(u32),
    Tail { node: u32, parent: u32, target: u32 },
}

/// A node waiting to be listed, with its listed parent, indent and depth.
struct Pending {
    at: Step,
    parent: Option<usize>,
    indent: u32,
    depth: u32,
}

impl TreeBuilder<'_> {
    fn build(&mut self) {
        // The root (chain node 0) is not listed: its children start the tree.
        let mut stack: Vec<Pending> = Vec::new();
        self.push_children(&mut stack, Step::Upper(0), None, 0, 1);
        'pending: while let Some(pending) = stack.pop() {
            let Some(mut listed) = self.list(&pending, 0) else {
                continue;
            };
            let (mut at, mut depth) = (pending.at, pending.depth);
            // A line of descent without branches stays on one indent, its middle left out
            // where it is long.
            while let Some(only) = self.only_child(at) {
                let run = self.run_from(only);
                let keep_all = run.len() <= MAX_RUN;
                let mut skipped = 0u64;
                for (index, &step) in run.iter().enumerate() {
                    if !keep_all && index >= RUN_HEAD && index < run.len() - RUN_TAIL {
                        skipped += 1;
                        continue;
                    }
                    let next = Pending {
                        at: step,
                        parent: Some(listed),
                        indent: pending.indent,
                        depth: depth + 1 + index as u32,
                    };
                    let Some(index) = self.list(&next, skipped) else {
                        continue 'pending;
                    };
                    listed = index;
                    skipped = 0;
                }
                depth += run.len() as u32;
                at = *run.last().expect("a run has a node");
            }
            self.push_children(&mut stack, at, Some(listed), pending.indent + 1, depth + 1);
        }
    }

    /// The child of `at` where it has exactly one.
    fn only_child(&self, at: Step) -> Option<Step> {
        match at {
            Step::Upper(at) => {
                let (kids, tails) = (self.children.of(at), self.tails.of(at));
                match (kids, tails) {
                    (&[kid], []) => Some(Step::Upper(kid)),
                    ([], &[target]) => Some(self.tail_top(at, target)),
                    _ => None,
                }
            }
            Step::Tail { node, target, .. } if node != target => {
                self.tail_below(node, target).first().copied()
            }
            Step::Tail { .. } => None,
        }
    }

    /// The nodes of one child each from `start` on, and the node that ends them (one with
    /// none or several).
    fn run_from(&self, start: Step) -> Vec<Step> {
        let mut run = vec![start];
        let mut at = start;
        loop {
            match at {
                Step::Upper(_) => match self.only_child(at) {
                    Some(next) => {
                        run.push(next);
                        at = next;
                    }
                    None => return run,
                },
                // A tail goes on to its target, one child each.
                Step::Tail { node, target, .. } => {
                    run.extend(self.tail_below(node, target));
                    return run;
                }
            }
        }
    }

    /// The first node of the tail to `target` below the upper node at place `at`.
    fn tail_top(&self, at: u32, target: u32) -> Step {
        let upper = self.chain_nodes[at as usize];
        let mut node = target;
        while self.parents[node as usize] != upper {
            node = self.parents[node as usize];
        }
        Step::Tail {
            node,
            parent: upper,
            target,
        }
    }

    /// The nodes of a tail below its node `node`, down to its target.
    fn tail_below(&self, node: u32, target: u32) -> Vec<Step> {
        let mut up = Vec::new();
        let mut at = target;
        while at != node {
            up.push(at);
            at = self.parents[at as usize];
        }
        let mut parent = node;
        up.iter()
            .rev()
            .map(|&node| {
                let step = Step::Tail {
                    node,
                    parent,
                    target,
                };
                parent = node;
                step
            })
            .collect()
    }

    /// The node of the graph at `at`.
    fn raw(&self, at: Step) -> u32 {
        match at {
            Step::Upper(at) => self.chain_nodes[at as usize],
            Step::Tail { node, .. } => node,
        }
    }

    /// The targets at or below `at`, and what they retain.
    fn below(&self, at: Step) -> (u32, u64) {
        match at {
            Step::Upper(at) => (self.counts[at as usize], self.retained[at as usize]),
            Step::Tail { target, .. } => (
                1,
                self.analysis.dominators.retained_size.get(target as usize),
            ),
        }
    }

    /// Pushes the listed children of `at`, those leading to the most targets (then retaining
    /// the most, then by object id) first, and counts the others in `listed`'s hidden totals.
    fn push_children(
        &mut self,
        stack: &mut Vec<Pending>,
        at: Step,
        listed: Option<usize>,
        indent: u32,
        depth: u32,
    ) {
        let mut kids: Vec<Step> = match at {
            Step::Upper(at) => {
                let upper = self.children.of(at).iter().map(|&kid| Step::Upper(kid));
                let tails = self.tails.of(at).iter();
                upper
                    .chain(tails.map(|&target| self.tail_top(at, target)))
                    .collect()
            }
            // A tail's node has its one child, or none.
            Step::Tail { .. } => self.only_child(at).into_iter().collect(),
        };
        let graph = self.graph;
        let key = |kid: &Step| {
            let (count, retained) = self.below(*kid);
            let raw = self.raw(*kid);
            (
                Reverse(count),
                Reverse(retained),
                graph.object_id(node_id(graph, raw)),
                raw,
            )
        };
        let shown = kids.len().min(self.branches);
        if shown < kids.len() {
            kids.select_nth_unstable_by_key(shown, key);
        }
        kids[..shown].sort_by_key(key);
        if let Some(listed) = listed {
            for &kid in &kids[shown..] {
                self.hide(listed, kid);
            }
        }
        for &kid in kids[..shown].iter().rev() {
            stack.push(Pending {
                at: kid,
                parent: listed,
                indent,
                depth,
            });
        }
    }

    fn hide(&mut self, listed: usize, kid: Step) {
        let (count, retained) = self.below(kid);
        let node = &mut self.nodes[listed];
        node.hidden_children += 1;
        node.hidden_targets += u64::from(count);
        node.hidden_retained += retained;
    }

    /// The edge the search took into `at` ([`edge_into`]).
    fn edge_into(&self, at: Step) -> Option<usize> {
        let (raw, parent) = match at {
            Step::Upper(at) => {
                let parent = *self.chain_parent.get(at as usize)?;
                (
                    self.chain_nodes[at as usize],
                    *self.chain_nodes.get(parent as usize)?,
                )
            }
            Step::Tail { node, parent, .. } => (node, parent),
        };
        let strong = StrongEdges::new(self.graph, &self.analysis.edge_rule);
        edge_into(&strong, parent, raw, self.order)
    }

    /// Lists a node, or, past [`MAX_NODES`], counts it in its parent's hidden totals.
    fn list(&mut self, pending: &Pending, skipped_steps: u64) -> Option<usize> {
        if self.nodes.len() >= MAX_NODES {
            if let Some(parent) = pending.parent {
                self.hide(parent, pending.at);
            }
            return None;
        }
        let graph = self.graph;
        let raw = self.raw(pending.at);
        let node = node_id(graph, raw);
        let edge = self.edge_into(pending.at);
        let (targets, retained_size) = self.below(pending.at);
        self.nodes.push(MergedPathNode {
            object: chain_object(graph, self.analysis, node, pending.depth),
            edge: edge.map(|edge| edge_text(graph, edge)),
            edge_index: edge,
            edge_kind: edge.map(|edge| graph.edge_kind(edge).name()),
            parent: pending.parent,
            depth: pending.depth,
            indent: pending.indent,
            targets: u64::from(targets),
            retained_size,
            is_target: self.is_target.get(raw as usize),
            skipped_steps,
            hidden_children: 0,
            hidden_targets: 0,
            hidden_retained: 0,
        });
        Some(self.nodes.len() - 1)
    }
}

/// The view of an object on a merged tree, `depth` edges from the root: the chain's depth
/// stands for the distance (the distances of the whole graph are not needed here, and on a
/// large dump they cost more than this query).
fn chain_object(graph: &HeapGraph, analysis: &Analysis, node: NodeId, depth: u32) -> ObjectView {
    crate::queries::object_view_at(graph, analysis, node, Some(depth))
}

/// The merged paths of the types with at least one instance in [`TYPE_PATHS_SHARE`] objects,
/// most instances first, at [`TYPE_PATHS_BRANCHES`] in the explaining order.
///
/// Complexity: O(V) to find the types' instances, in one pass on every core, then per type a
/// read of two bytes a node and a merge ([`merged_paths`]); at most [`TYPE_PATHS_SHARE`]
/// types. Space: two bytes a node, and the scratch of one merge at a time, or of one per core
/// with `merges` [`Merges::OnePerCore`] (a merge's is in proportion to its type's instances:
/// about 370 MB for 6.4 million of 35 million objects).
pub(crate) fn type_paths(graph: &HeapGraph, analysis: &Analysis, merges: Merges) -> Vec<TypePaths> {
    let totals = analysis.type_totals(graph);
    let objects: u64 = totals.count.iter().sum();
    let mut types: Vec<(u64, StringId)> = totals
        .types
        .iter()
        .zip(&totals.count)
        .filter(|&(_, &count)| count > 0 && count.saturating_mul(TYPE_PATHS_SHARE) >= objects)
        .map(|(&id, &count)| (count, id))
        .collect();
    let strings = graph.strings();
    types.sort_unstable_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| strings.get(a.1).cmp(strings.get(b.1)))
    });
    let names: Vec<StringId> = types.iter().map(|&(_, name)| name).collect();
    let of_type = type_places(graph, &names);
    let merge = |(place, type_name): (usize, StringId)| {
        // At most TYPE_PATHS_SHARE types qualify, so a place fits in 16 bits.
        let place = place as u16;
        let is_target = Bits(
            of_type
                .par_chunks(64)
                .map(|nodes| {
                    let bits = nodes.iter().enumerate();
                    bits.filter(|&(_, &of)| of == place)
                        .fold(0u64, |word, (bit, _)| word | 1 << bit)
                })
                .collect(),
        );
        let view = merged_paths_placed(
            graph,
            analysis,
            is_target,
            TYPE_PATHS_BRANCHES,
            ChainOrder::Explain,
            Places::for_targets,
        );
        stored_paths(type_name, &view)
    };
    match merges {
        Merges::OneAtATime => names.into_iter().enumerate().map(merge).collect(),
        Merges::OnePerCore => names
            .into_par_iter()
            .enumerate()
            .with_max_len(1)
            .map(merge)
            .collect(),
    }
}

/// How many merges [`crate::Analysis::type_paths`] runs at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merges {
    /// One: the least memory, where the dump's columns are in memory beside them.
    OneAtATime,
    /// One per core: where memory is to spare (a server whose columns live in files).
    OnePerCore,
}

/// Per node, the place among `types` of its type where it is a real object of one of them,
/// else `u16::MAX`: one pass finds every type's instances, which each merge then reads from
/// two bytes a node instead of the graph's columns. At most [`TYPE_PATHS_SHARE`] types.
fn type_places(graph: &HeapGraph, types: &[StringId]) -> Vec<u16> {
    let mut places: Vec<(StringId, u16)> = types.iter().copied().zip(0..).collect();
    places.sort_unstable();
    (0..graph.node_count())
        .into_par_iter()
        .with_min_len(1 << 16)
        .map(|index| {
            let Some(node) = graph.node(index) else {
                return u16::MAX;
            };
            match places.binary_search_by_key(&graph.type_id(node), |&(id, _)| id) {
                Ok(at) if !graph.is_synthetic(node) => places[at].1,
                _ => u16::MAX,
            }
        })
        .collect()
}

/// A merged tree as plain numbers, for storing.
fn stored_paths(type_name: StringId, view: &MergedPathsView) -> TypePaths {
    TypePaths {
        type_name,
        branches: view.branches as u32,
        objects: view.targets,
        reached: view.reached,
        retained_size: view.retained_size,
        nodes: view
            .nodes
            .iter()
            .map(|node| TypePathNode {
                node: node.object.node.to_raw(),
                edge: node.edge_index.map(|edge| edge as u64),
                parent: node.parent.map(|parent| parent as u32),
                depth: node.depth,
                indent: node.indent,
                is_target: node.is_target,
                targets: node.targets,
                targets_retained_size: node.retained_size,
                skipped_steps: node.skipped_steps,
                hidden_children: node.hidden_children,
                hidden_targets: node.hidden_targets,
                hidden_retained_size: node.hidden_retained,
            })
            .collect(),
    }
}

/// The merged tree that `paths` stored, as [`merged_paths`] gives it: each listed object's
/// view and reference read from the graph and the analysis.
pub(crate) fn stored_view(
    graph: &HeapGraph,
    analysis: &Analysis,
    paths: &TypePaths,
) -> MergedPathsView {
    MergedPathsView {
        targets: paths.objects,
        reached: paths.reached,
        retained_size: paths.retained_size,
        branches: paths.branches as usize,
        order: ChainOrder::Explain,
        nodes: paths
            .nodes
            .iter()
            .map(|row| {
                let node = node_id(graph, row.node);
                let edge = row.edge.map(|edge| edge as usize);
                MergedPathNode {
                    object: chain_object(graph, analysis, node, row.depth),
                    edge: edge.map(|edge| edge_text(graph, edge)),
                    edge_index: edge,
                    edge_kind: edge.map(|edge| graph.edge_kind(edge).name()),
                    parent: row.parent.map(|parent| parent as usize),
                    depth: row.depth,
                    indent: row.indent,
                    targets: row.targets,
                    retained_size: row.targets_retained_size,
                    is_target: row.is_target,
                    skipped_steps: row.skipped_steps,
                    hidden_children: row.hidden_children,
                    hidden_targets: row.hidden_targets,
                    hidden_retained: row.hidden_retained_size,
                }
            })
            .collect(),
    }
}

/// Checks stored merged paths against the graph: each listed node is a node, its reference an
/// edge into it, and a node marked as an instance one of the type's objects. What the merge
/// counted is not checked (a merge is what it would cost), only that it reads the graph.
///
/// # Errors
/// A message naming the first row that does not fit.
pub(crate) fn checked_type_paths(graph: &HeapGraph, paths: &[TypePaths]) -> Result<(), String> {
    let (n_nodes, n_edges) = (graph.node_count(), graph.edge_count());
    for tree in paths {
        if tree.type_name.index() >= graph.strings().len() {
            return Err("the stored merged paths name a type that is not a string".to_owned());
        }
        let type_name = graph.strings().get(tree.type_name);
        for (row, stored) in tree.nodes.iter().enumerate() {
            let problem =
                |what: String| format!("the stored merged paths of {type_name}: row {row} {what}");
            let Some(node) = graph.node(stored.node as usize) else {
                return Err(problem(format!(
                    "names node {}, past {n_nodes}",
                    stored.node
                )));
            };
            if let Some(edge) = stored.edge {
                if edge >= n_edges as u64 {
                    return Err(problem(format!("names edge {edge}, past {n_edges}")));
                }
                if graph.edge_target(edge as usize) != node {
                    return Err(problem(format!("names edge {edge}, which leads elsewhere")));
                }
            }
            if stored.is_target
                && (graph.type_id(node) != tree.type_name || graph.is_synthetic(node))
            {
                return Err(problem(format!(
                    "marks node {} as an instance, which it is not",
                    stored.node
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EdgeRule, Options, analyze};
    use heapgraph_model::{EdgeKind, Runtime};
    use heapgraph_test_support::graph_from_edges;
    use std::collections::VecDeque;

    /// Breadth-first distances over the edges Java's rule retains, written plainly.
    fn distances(graph: &HeapGraph) -> Vec<Option<u32>> {
        let parts = graph.parts();
        let root = graph.root().index();
        let mut distance = vec![None; graph.node_count()];
        distance[root] = Some(0);
        let mut queue = VecDeque::from([root]);
        while let Some(node) = queue.pop_front() {
            for edge in parts.first_edge.range(node) {
                let to = parts.edge_to[edge] as usize;
                let retains = match parts.edge_kind[edge] {
                    EdgeKind::Weak => false,
                    EdgeKind::Shortcut => node == root,
                    _ => true,
                };
                if retains && to != node && distance[to].is_none() {
                    distance[to] = Some(distance[node].unwrap() + 1);
                    queue.push_back(to);
                }
            }
        }
        distance
    }

    /// On random graphs, against plain searches: the targets reached, each listed target at its
    /// shortest distance, each node's count the sum of what lies below it, and the total the
    /// retained sizes of the targets no other target dominates (found by walking up `idom`).
    #[test]
    fn merged_paths_agree_with_plain_searches() {
        let kinds = [
            EdgeKind::Property,
            EdgeKind::Element,
            EdgeKind::Weak,
            EdgeKind::Shortcut,
        ];
        let mut lcg = heapgraph_test_support::Lcg::new(0x9e37_79b9_7f4a_7c15u64);
        let mut next = |bound: u64| lcg.below(bound);
        let mut checked_counts = 0;
        for _ in 0..2000 {
            let n_nodes = 2 + next(40) as u32;
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
            let analysis = analyze(
                &graph,
                &Options {
                    edge_rule: EdgeRule::for_runtime(Runtime::Java),
                },
            );
            let targets: Vec<NodeId> = graph
                .nodes()
                .filter(|&node| graph.type_name(node) == "T1")
                .collect();
            let view = merged_paths(&graph, &analysis, &targets, 1000, ChainOrder::Shortest);
            // The explaining order's tree, searched and read up from the stored parents.
            let searched = merged_paths(&graph, &analysis, &targets, 3, ChainOrder::Explain);
            analysis.chain_parents(&graph);
            let read_up = merged_paths(&graph, &analysis, &targets, 3, ChainOrder::Explain);
            assert_eq!(read_up, searched);
            // Small graphs take the column of places; the map must place the same.
            let sparse = |_, _| Places::Sparse(FxHashMap::default());
            let read_up = merged_paths_placed(
                &graph,
                &analysis,
                targets_bits(&graph, &targets),
                3,
                ChainOrder::Explain,
                sparse,
            );
            assert_eq!(read_up, searched);
            assert_eq!(searched.reached, view.reached);
            assert_eq!(searched.retained_size, view.retained_size);
            let distance = distances(&graph);
            let reached: Vec<NodeId> = targets
                .iter()
                .copied()
                .filter(|node| distance[node.index()].is_some())
                .collect();
            assert_eq!(view.targets, targets.len() as u64);
            assert_eq!(view.reached, reached.len() as u64);
            let tree = &analysis.dominators;
            let dominated_by_another = |node: NodeId| {
                let mut at = tree.immediate_dominator(&graph, node);
                while let Some(dominator) = at {
                    if targets.contains(&dominator) {
                        return true;
                    }
                    at = tree.immediate_dominator(&graph, dominator);
                }
                false
            };
            let total: u64 = reached
                .iter()
                .filter(|&&node| !dominated_by_another(node))
                .map(|node| tree.retained_size.get(node.index()))
                .sum();
            assert_eq!(view.retained_size, total);
            for node in &view.nodes {
                assert_eq!(
                    Some(node.depth),
                    distance[node.object.node.index()],
                    "{node:?}"
                );
                assert_eq!(node.is_target, targets.contains(&node.object.node));
            }
            let top: u64 = view
                .nodes
                .iter()
                .filter(|node| node.parent.is_none())
                .map(|node| node.targets)
                .sum();
            assert_eq!(top, view.reached);
            if view.nodes.iter().all(|node| node.skipped_steps == 0) {
                for (at, node) in view.nodes.iter().enumerate() {
                    let below: u64 = view
                        .nodes
                        .iter()
                        .filter(|child| child.parent == Some(at))
                        .map(|child| child.targets)
                        .sum();
                    assert_eq!(
                        node.targets,
                        u64::from(node.is_target) + below + node.hidden_targets
                    );
                    checked_counts += 1;
                }
            }
        }
        assert!(checked_counts > 1000);
    }

    /// Long lines of single references ending in a target (a linked list's last element),
    /// which the stored parents' reading keeps as tails: on random graphs of such lines, the
    /// tree read up from the parents is the searched one, with runs cut short and the tree cut
    /// at [`MAX_NODES`].
    #[test]
    fn trees_with_long_tails_read_up_as_searched() {
        let mut lcg = heapgraph_test_support::Lcg::new(0x005e_ed0f_7a11);
        let (mut runs_cut, mut trees_cut, mut tails) = (0, 0, 0);
        for _ in 0..300 {
            let graph = heapgraph_test_support::long_lines(&mut lcg, true);
            let analysis = analyze(
                &graph,
                &Options {
                    edge_rule: EdgeRule::for_runtime(Runtime::Java),
                },
            );
            let one_in = 1 + lcg.below(40);
            let targets: Vec<NodeId> = graph
                .nodes()
                .skip(1)
                .filter(|_| lcg.below(one_in) == 0)
                .collect();
            let branches = [1, 3, 1000];
            let searched = branches.map(|branches| {
                merged_paths(&graph, &analysis, &targets, branches, ChainOrder::Explain)
            });
            let parents = analysis.chain_parents(&graph);
            for (branches, searched) in branches.into_iter().zip(&searched) {
                let read_up =
                    merged_paths(&graph, &analysis, &targets, branches, ChainOrder::Explain);
                assert_eq!(&read_up, searched, "{branches} branches");
                runs_cut += usize::from(read_up.nodes.iter().any(|node| node.skipped_steps > 0));
                trees_cut += usize::from(read_up.nodes.len() == MAX_NODES);
            }
            let mut is_target = Bits::new(graph.node_count());
            for node in &targets {
                is_target.set(node.index());
            }
            let dense = Places::Dense(Vec::new());
            let chains = chains_up_from(&graph, parents, &is_target, dense).expect("a tree");
            tails += usize::from(!chains.tails.targets.is_empty());
        }
        assert!(
            runs_cut > 50 && trees_cut > 20 && tails > 200,
            "{runs_cut} {trees_cut} {tails}"
        );
    }

    /// The merged paths kept for the types with the most instances read back as the merge
    /// gives them (the merge is the oracle), merged one at a time or one per core, kept in
    /// memory or stored and adopted; on lines long enough to cut runs and trees short. A stored
    /// row naming an edge into another node, or marking a node of another type as an instance,
    /// is refused on adoption.
    #[test]
    fn kept_type_paths_read_back_as_merged() {
        let mut lcg = heapgraph_test_support::Lcg::new(0x7e57_ab1e);
        let (mut runs_cut, mut trees_cut) = (0, 0);
        for _ in 0..100 {
            let graph = heapgraph_test_support::long_lines(&mut lcg, false);
            let rule = EdgeRule::for_runtime(Runtime::Java);
            let options = Options {
                edge_rule: rule.clone(),
            };
            let analysis = analyze(&graph, &options);
            let kept = analysis.type_paths(&graph, Merges::OneAtATime).to_vec();
            // A few hundred objects: every type holds one in 1024.
            assert_eq!(kept.len(), 4);
            let merged: Vec<MergedPathsView> = kept
                .iter()
                .map(|paths| {
                    let name = graph.strings().get(paths.type_name);
                    let targets = objects_of_type(&graph, name);
                    let merged = merged_paths(&graph, &analysis, &targets, 20, ChainOrder::Explain);
                    let known = analysis.known_type_paths(&graph, name, TYPE_PATHS_BRANCHES);
                    assert_eq!(known.as_ref(), Some(&merged), "{name}");
                    assert_eq!(analysis.known_type_paths(&graph, name, 3), None);
                    runs_cut += usize::from(merged.nodes.iter().any(|n| n.skipped_steps > 0));
                    trees_cut += usize::from(merged.nodes.len() == MAX_NODES);
                    merged
                })
                .collect();
            let per_core = analyze(&graph, &options);
            assert_eq!(per_core.type_paths(&graph, Merges::OnePerCore), kept);
            let stored = analyze(&graph, &options).into_stored(&graph);
            assert_eq!(stored.type_paths, kept);
            let adopted =
                Analysis::from_stored(&graph, rule.clone(), stored.clone()).expect("adopted");
            for (paths, merged) in kept.iter().zip(&merged) {
                let name = graph.strings().get(paths.type_name);
                let known = adopted.known_type_paths(&graph, name, TYPE_PATHS_BRANCHES);
                assert_eq!(known.as_ref(), Some(merged), "{name}");
            }

            let refused_for = |lying: heapgraph_model::StoredAnalysis, why: &str| {
                let refused = Analysis::from_stored(&graph, rule.clone(), lying).err();
                assert!(
                    refused.as_ref().is_some_and(|said| said.contains(why)),
                    "{why}: {refused:?}"
                );
            };
            let mut elsewhere = stored.clone();
            let row = &mut elsewhere.type_paths[0].nodes[0];
            let edge = row.edge.expect("a reference from the root") as usize;
            row.edge = Some(
                (0..graph.edge_count())
                    .find(|&other| graph.edge_target(other) != graph.edge_target(edge))
                    .expect("another edge") as u64,
            );
            refused_for(elsewhere, "which leads elsewhere");
            let mut not_one = stored;
            let paths = &mut not_one.type_paths[0];
            let row = paths
                .nodes
                .iter_mut()
                .find(|row| !row.is_target)
                .expect("a chain node of another type");
            row.is_target = true;
            refused_for(not_one, "as an instance, which it is not");
            // A type named by another graph's larger table (an analysis stored for another
            // graph) is no string of this one.
            let mut larger = heapgraph_model::StringTable::new();
            let past = (0..=graph.strings().len())
                .map(|at| larger.intern(&format!("s{at}")))
                .last()
                .expect("a string");
            let mut elsewhere_named = analyze(&graph, &options).into_stored(&graph);
            elsewhere_named.type_paths[0].type_name = past;
            refused_for(elsewhere_named, "name a type that is not a string");
        }
        assert!(runs_cut > 50 && trees_cut > 20, "{runs_cut} {trees_cut}");
    }

    /// The chain parents of the whole graph, whose search drops the queue entries it has
    /// searched from, are those of the search that keeps them, on a graph whose queue passes
    /// [`DROP_SEARCHED_FROM`] many times over: a binary tree of 3Mi nodes under the root, with
    /// references across it that reach nodes from elsewhere first or later.
    #[test]
    fn chain_parents_with_the_queue_dropped_as_searched_are_the_kept_searchs() {
        use EdgeKind::Property as P;
        let n_nodes = 3u32 << 20;
        let mut lcg = heapgraph_test_support::Lcg::new(0x2545_f491_4f6c_dd1d);
        let mut edges: Vec<(u32, u32, EdgeKind)> = vec![(0, 1, P)];
        for from in 1..n_nodes {
            for to in [2 * from, 2 * from + 1] {
                if to < n_nodes {
                    edges.push((from, to, P));
                }
            }
            if lcg.below(4) == 0 {
                edges.push((from, 1 + lcg.below(u64::from(n_nodes - 1)) as u32, P));
            }
        }
        let graph = graph_from_edges(&vec![1; n_nodes as usize], &edges);
        let rule = EdgeRule::for_runtime(graph.meta().runtime);
        let mut kept = search(&graph, &rule, None, (ChainOrder::Explain, Visited::Kept)).parent;
        kept[graph.root().index()] = NO_NODE;
        assert_eq!(chain_parents(&graph, &rule), kept);
        assert_eq!(kept.iter().filter(|&&parent| parent == NO_NODE).count(), 1);
    }

    /// Stored parents that go round a cycle (a damaged file) are not followed: the chains are
    /// searched instead, and come out as from a dump without them.
    #[test]
    fn chain_parents_that_do_not_reach_the_root_are_searched_instead() {
        let graph = heapgraph_test_support::graph(
            "root -> <system class>; <system class> -> Registry#r; Registry#r -> list;
             list -> Target#t: 8; list -> Target#u: 4",
        );
        let rule = EdgeRule::for_runtime(graph.meta().runtime);
        let analysis = analyze(
            &graph,
            &Options {
                edge_rule: rule.clone(),
            },
        );
        let targets = objects_of_type(&graph, "Target");
        let searched = merged_paths(&graph, &analysis, &targets, 20, ChainOrder::Explain);
        assert_eq!(searched.reached, 2);
        let mut stored = analyze(
            &graph,
            &Options {
                edge_rule: rule.clone(),
            },
        )
        .into_stored(&graph);
        let list = objects_of_type(&graph, "list")[0].index();
        let registry = objects_of_type(&graph, "Registry")[0].index();
        assert_eq!(stored.chain_parent[list], registry as u32);
        stored.chain_parent[registry] = list as u32;
        let adopted = Analysis::from_stored(&graph, rule, stored).expect("in range");
        assert_eq!(
            merged_paths(&graph, &adopted, &targets, 20, ChainOrder::Explain),
            searched
        );
    }

    #[test]
    fn explain_enters_through_a_named_root_when_one_reaches() {
        // The target is one reference from a busy monitor (anonymous) and three from a static
        // field (named); the shortest order takes the monitor.
        let graph = heapgraph_test_support::graph(
            "root -> <busy monitor>; <busy monitor> -> Target#t: 8;
             root -> <system class>; <system class> -> Registry#r; Registry#r -> list;
             list -> Target#t",
        );
        let analysis = analyze(
            &graph,
            &Options {
                edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
            },
        );
        let targets = objects_of_type(&graph, "Target");
        let explain = merged_paths(&graph, &analysis, &targets, 20, ChainOrder::Explain);
        let types: Vec<&str> = explain
            .nodes
            .iter()
            .map(|node| node.object.type_name.as_str())
            .collect();
        assert_eq!(types, ["<system class>", "Registry", "list", "Target"]);
        assert!(explain.nodes.iter().all(|node| node.indent == 0));
        let shortest = merged_paths(&graph, &analysis, &targets, 20, ChainOrder::Shortest);
        assert_eq!(shortest.nodes[0].object.type_name, "<busy monitor>");
        assert_eq!(shortest.retained_size, 8);
    }
}
