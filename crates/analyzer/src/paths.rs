//! Retainer chains: the k shortest distinct chains from the root to a node.
//!
//! A best-first search walks retainers backwards from the target. Each partial chain is ranked
//! by its length so far plus the exact breadth-first distance of its head from the root, so
//! complete chains come out shortest first; among equal ranks the longest partial chain is
//! extended first, which makes the search dive to the root instead of widening.

use crate::NO_DISTANCE;
use crate::distances::distances_over;
use crate::edge_rule::{EdgeRule, StrongEdges};
use crate::weak::{ReferenceKind, ReferenceKinds};
use heapgraph_model::{EdgeKind, HeapGraph, NodeId};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One chain: `(node, edge into it from the previous node)`, root first, target last.
pub(crate) type Chain = Vec<(NodeId, Option<usize>)>;

/// Bounds the search on graphs with a combinatorial number of equal-length chains: past this
/// many expansions beyond the `k` chains' own length the chains found so far are returned.
const MAX_EXTRA_EXPANSIONS: usize = 2_000_000;

/// Bounds the memory of that search: past this many partial chains beyond the `k` chains' own
/// length (24 bytes each, and a frontier entry) the chains found so far are returned. An object with thousands of retainers
/// makes each expansion add thousands.
const MAX_PARTIALS: usize = 8_000_000;

struct Partial {
    node: u32,
    /// Index of the partial chain this one extends (towards the target), or `u32::MAX`.
    towards_target: u32,
    /// The edge from `node` to the head of `towards_target`.
    edge: usize,
    length: u32,
    /// The smallest root distance of any node on this partial chain: a retainer closer to the
    /// root than that cannot already be on it, which spares the walk that checks for cycles.
    min_distance: u32,
}

/// Up to `k` distinct simple chains from the root to `target` over retaining edges, shortest
/// first. Empty when the root does not reach `target`.
///
/// # Complexity
/// O(V + E) for the distances, then O(X · (d + log X)) for X expansions of chains of length d,
/// with X at most k · d + [`MAX_EXTRA_EXPANSIONS`].
pub(crate) fn shortest_chains(
    graph: &HeapGraph,
    rule: &EdgeRule,
    target: NodeId,
    k: usize,
) -> Vec<Chain> {
    shortest_chains_entering(graph, rule, target, k, &|_| true)
}

/// [`shortest_chains`] through the root's edges that `enters` accepts only (a chain from a
/// module or a static field, say, rather than from a running frame).
pub(crate) fn shortest_chains_entering(
    graph: &HeapGraph,
    rule: &EdgeRule,
    target: NodeId,
    k: usize,
    enters: &dyn Fn(usize) -> bool,
) -> Vec<Chain> {
    shortest_chains_entering_with(graph, rule, target, k, enters, None)
}

/// [`shortest_chains_entering`] with the distances over the same edges already computed
/// ([`distances_entering`] with the same `enters`), which spares the search its O(V + E)
/// first pass.
pub(crate) fn shortest_chains_entering_with(
    graph: &HeapGraph,
    rule: &EdgeRule,
    target: NodeId,
    k: usize,
    enters: &dyn Fn(usize) -> bool,
    distance: Option<&dyn Fn(usize) -> u32>,
) -> Vec<Chain> {
    let strong = StrongEdges::new(graph, rule);
    let root = graph.root().to_raw();
    chains_over(graph, target, k, distance, |from, edge, to| {
        strong.retains(from, edge, to) && (from != root || enters(edge))
    })
}

/// The breadth-first distances [`shortest_chains_entering`] ranks its chains by: from the
/// root over the retaining edges, entering through the root's edges that `enters` accepts.
///
/// # Complexity
/// O(V + E) time, 4 bytes per node.
pub(crate) fn distances_entering(
    graph: &HeapGraph,
    rule: &EdgeRule,
    enters: &dyn Fn(usize) -> bool,
) -> Vec<u32> {
    let strong = StrongEdges::new(graph, rule);
    let root = graph.root().to_raw();
    distances_over(graph, |from, edge, to| {
        strong.retains(from, edge, to) && (from != root || enters(edge))
    })
}

/// As [`shortest_chains`], over the retaining edges and the weak references of kind `kind` or
/// a stronger one: for an object only such references reach, its strongest chains (no chain
/// over retaining and stronger references reaches it, by [`crate::weak_reach`]).
///
/// # Complexity
/// As [`shortest_chains`].
pub(crate) fn shortest_weak_chains(
    graph: &HeapGraph,
    rule: &EdgeRule,
    kind: ReferenceKind,
    target: NodeId,
    k: usize,
) -> Vec<Chain> {
    let strong = StrongEdges::new(graph, rule);
    let mut kinds = ReferenceKinds::new(graph);
    chains_over(graph, target, k, None, |from, edge, to| {
        strong.retains(from, edge, to)
            || (from != to && graph.edge_kind(edge) == EdgeKind::Weak && kinds.of(from) <= kind)
    })
}

/// Up to `k` distinct simple chains from the root to `target` over the edges `follows`
/// keeps, shortest first; `distance`, when given, must give the breadth-first distance of a
/// node over those same edges (else the distances are computed here).
fn chains_over(
    graph: &HeapGraph,
    target: NodeId,
    k: usize,
    distance: Option<&dyn Fn(usize) -> u32>,
    mut follows: impl FnMut(u32, usize, u32) -> bool,
) -> Vec<Chain> {
    let computed: Vec<u32>;
    let plain;
    let distance: &dyn Fn(usize) -> u32 = match distance {
        Some(distance) => distance,
        None => {
            computed = distances_over(graph, &mut follows);
            plain = |node: usize| computed[node];
            &plain
        }
    };
    if k == 0 || distance(target.index()) == NO_DISTANCE {
        return Vec::new();
    }
    let reverse = graph.reverse();
    let root = graph.root().to_raw();
    let mut partials: Vec<Partial> = vec![Partial {
        node: target.to_raw(),
        towards_target: u32::MAX,
        edge: usize::MAX,
        length: 0,
        min_distance: distance(target.index()),
    }];
    // (rank, longer chains first, newer first) -> partial index
    let mut frontier: BinaryHeap<(Reverse<u32>, u32, u32)> = BinaryHeap::new();
    frontier.push((Reverse(distance(target.index())), 0, 0));
    let mut chains = Vec::new();
    let mut expansions = 0usize;
    let max_expansions = MAX_EXTRA_EXPANSIONS + k * (distance(target.index()) as usize + 1);
    let max_partials = MAX_PARTIALS + k * (distance(target.index()) as usize + 1);
    while let Some((_, _, index)) = frontier.pop() {
        let partial = &partials[index as usize];
        if partial.node == root {
            chains.push(unwind(graph, &partials, index));
            if chains.len() == k {
                break;
            }
            continue;
        }
        expansions += 1;
        if expansions > max_expansions || partials.len() > max_partials {
            break;
        }
        let (node, length, min_distance) = (partial.node, partial.length, partial.min_distance);
        let node_id = graph.node(node as usize).unwrap_or(graph.root());
        for (from, edge) in reverse.retainers(node_id) {
            let from_raw = from.to_raw();
            let from_distance = distance(from.index());
            if from_distance == NO_DISTANCE || !follows(from_raw, edge, node) {
                continue;
            }
            if from_distance >= min_distance && chain_contains(&partials, index, from_raw) {
                continue;
            }
            let new_index = partials.len() as u32;
            partials.push(Partial {
                node: from_raw,
                towards_target: index,
                edge,
                length: length + 1,
                min_distance: min_distance.min(from_distance),
            });
            frontier.push((Reverse(length + 1 + from_distance), length + 1, new_index));
        }
    }
    chains
}

fn chain_contains(partials: &[Partial], mut index: u32, node: u32) -> bool {
    while index != u32::MAX {
        let partial = &partials[index as usize];
        if partial.node == node {
            return true;
        }
        index = partial.towards_target;
    }
    false
}

fn unwind(graph: &HeapGraph, partials: &[Partial], mut index: u32) -> Chain {
    let mut chain = Vec::new();
    let mut edge_into_this: Option<usize> = None;
    // From the root towards the target; each partial holds the edge to the next one.
    while index != u32::MAX {
        let partial = &partials[index as usize];
        let node = graph
            .node(partial.node as usize)
            .expect("chain nodes come from the graph's own edges");
        chain.push((node, edge_into_this));
        edge_into_this = (partial.edge != usize::MAX).then_some(partial.edge);
        index = partial.towards_target;
    }
    chain
}
