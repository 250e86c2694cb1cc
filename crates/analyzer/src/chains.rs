//! Chains that explain: of the chains from the roots to an object, the ones a person needs
//! first. A chain from a named root (a module global, a static field, a thread's local, a JNI
//! global, a V8 global property) says who holds the object; one from an anonymous root (Python's
//! "held outside the dump", a running frame's stack, V8's internal root groups, a busy monitor)
//! is often shorter and says little. So the chains from named roots come first, each shortest
//! first, then the others; each root gives at most one chain; and chains that print the same
//! are one, with a count. This is objgraph's `find_backref_chain(obj, is_proper_module)`
//! generalised: when a module reaches the object, its chain is among the answer.

use crate::edge_rule::{EdgeRule, StrongEdges};
use crate::merged_paths::{Bits, edge_into};
use crate::paths::{Chain, distances_entering, shortest_chains, shortest_chains_entering_with};
use crate::{Analysis, NO_DISTANCE, NO_NODE};
use heapgraph_model::{EdgeKind, EdgeName, HeapGraph, NodeId, Runtime};
use rustc_hash::{FxHashMap, FxHashSet};

/// How the chains of `who-holds` are ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChainOrder {
    /// Chains from named roots first, one per root, equal ones merged (the default).
    #[default]
    Explain,
    /// The k shortest distinct chains, shortest first.
    Shortest,
}

/// A chain, and how many chains print as it does.
pub(crate) struct RankedChain {
    pub(crate) chain: Chain,
    pub(crate) count: u64,
}

/// Root edges that say nothing of who holds an object, by runtime.
const ANONYMOUS_JAVA_ROOTS: [&str; 11] = [
    "<unknown root>",
    "<busy monitor>",
    "<native stack>",
    "<thread block>",
    "<VM internal>",
    "<reference cleanup>",
    "<finalizable>",
    "<debugger>",
    "<JNI local>",
    "<JNI monitor>",
    "<interned string>",
];
const ANONYMOUS_PYTHON_ROOTS: [&str; 3] = ["held outside the dump", "thread", "gc.garbage"];

/// Whether the root's edge `edge` enters by a root that names a holder.
pub(crate) fn is_named_root_edge(graph: &HeapGraph, edge: usize) -> bool {
    let name = match graph.edge_name(edge) {
        EdgeName::Named(name) => name,
        EdgeName::Index(_) => "",
    };
    match graph.meta().runtime {
        Runtime::Java => !ANONYMOUS_JAVA_ROOTS.contains(&name),
        Runtime::Python => !ANONYMOUS_PYTHON_ROOTS.contains(&name),
        // The root's shortcuts lead to the user roots (`global`); its other edges to V8's own
        // groups of roots (`(GC roots)`), which hold the engine's handles and stacks.
        Runtime::V8 => {
            graph.edge_kind(edge) == EdgeKind::Shortcut
                || graph
                    .node(graph.edge_target(edge).index())
                    .is_some_and(|node| !graph.is_synthetic(node))
        }
    }
}

/// Named roots sought per chain asked for: chains that print the same are merged, so a few
/// more than asked are looked for.
const CANDIDATES_PER_CHAIN: usize = 4;

/// The breadth-first distances the one chain of [`ChainOrder::Explain`] is searched by, from
/// the named roots and from the others, computed once: a search for one chain then costs the
/// chain it walks instead of two passes over the whole graph (suspects, findings and the
/// explorer ask for the holders of one object after another). Several chains are found by
/// one bounded search backwards from the object, which needs no distances.
pub struct ChainIndex {
    named: CompactDistances,
    anonymous: CompactDistances,
}

impl ChainIndex {
    /// Both distance columns, one after the other (so that one full-width column and one
    /// search's queue are held at a time beside the compact ones).
    ///
    /// Complexity: two breadth-first searches, O(V + E) time each; about 4 bytes per node kept.
    pub fn new(graph: &HeapGraph, analysis: &Analysis) -> ChainIndex {
        ChainIndex::for_rule(graph, &analysis.edge_rule)
    }

    /// [`ChainIndex::new`] before the analysis exists: the searches need its edge rule only.
    pub(crate) fn for_rule(graph: &HeapGraph, rule: &EdgeRule) -> ChainIndex {
        let named = CompactDistances::new(distances_entering(graph, rule, &|edge| {
            is_named_root_edge(graph, edge)
        }));
        let anonymous = CompactDistances::new(distances_entering(graph, rule, &|edge| {
            !is_named_root_edge(graph, edge)
        }));
        ChainIndex { named, anonymous }
    }

    /// The breadth-first distance of every node from the root over the retaining edges, which
    /// is the nearer of its distances from the named and from the other roots: the search
    /// from all of the root's edges reaches each node first through one of the two. Not V8's
    /// distances, which DevTools counts by rules of its own ([`crate::bfs_distances`]).
    ///
    /// Complexity: O(V).
    pub(crate) fn plain_distances(&self) -> Vec<u32> {
        (0..self.named.near.len())
            .map(|node| self.named.get(node).min(self.anonymous.get(node)))
            .collect()
    }
}

/// Breadth-first distances in 2 bytes each: heap chains are short, and the few distances
/// past [`FAR`] (a long linked list's tail) are kept in a map.
struct CompactDistances {
    near: Vec<u16>,
    far: FxHashMap<u32, u32>,
}

/// In [`CompactDistances::near`]: the search did not reach the node.
const UNREACHED: u16 = u16::MAX;
/// In [`CompactDistances::near`]: the distance is in the map.
const FAR: u16 = u16::MAX - 1;

impl CompactDistances {
    fn new(distances: Vec<u32>) -> CompactDistances {
        let mut far = FxHashMap::default();
        let near = distances
            .iter()
            .enumerate()
            .map(|(node, &distance)| {
                if distance == NO_DISTANCE {
                    UNREACHED
                } else if let Ok(near) = u16::try_from(distance)
                    && near < FAR
                {
                    near
                } else {
                    far.insert(node as u32, distance);
                    FAR
                }
            })
            .collect();
        CompactDistances {
            near: heapgraph_model::file_pages::page_out(near),
            far,
        }
    }

    #[inline]
    fn get(&self, node: usize) -> u32 {
        match self.near[node] {
            UNREACHED => NO_DISTANCE,
            FAR => self.far.get(&(node as u32)).copied().unwrap_or(NO_DISTANCE),
            near => u32::from(near),
        }
    }
}

/// At most `k` chains from the root to `target`, in `order`; searched by the analysis's
/// [`ChainIndex`] when it was built ([`Analysis::chain_index`]), else by distances computed
/// for this search alone (the same chains).
pub(crate) fn ranked_chains(
    graph: &HeapGraph,
    analysis: &Analysis,
    target: NodeId,
    k: usize,
    order: ChainOrder,
) -> Vec<RankedChain> {
    ranked_chains_with(graph, analysis, target, k, order, analysis.chains.get())
}

/// [`ranked_chains`], with the distances of `index`, when given, for a search for one chain.
pub(crate) fn ranked_chains_with(
    graph: &HeapGraph,
    analysis: &Analysis,
    target: NodeId,
    k: usize,
    order: ChainOrder,
    index: Option<&ChainIndex>,
) -> Vec<RankedChain> {
    let rule = &analysis.edge_rule;
    if order == ChainOrder::Shortest {
        return shortest_chains(graph, rule, target, k)
            .into_iter()
            .map(|chain| RankedChain { chain, count: 1 })
            .collect();
    }
    // Up to `k` shortest chains entering through the named roots, or through the others.
    let search = |k: usize, named: bool| {
        let column = index.map(|index| {
            if named {
                &index.named
            } else {
                &index.anonymous
            }
        });
        let lookup = column.map(|column| move |node: usize| column.get(node));
        shortest_chains_entering_with(
            graph,
            rule,
            target,
            k,
            &|edge| is_named_root_edge(graph, edge) == named,
            lookup
                .as_ref()
                .map(|lookup| lookup as &dyn Fn(usize) -> u32),
        )
    };
    if k == 1 || target == graph.root() {
        // The first chain is the shortest from a named root, or else from any: the one the
        // explaining search's tree holds, which `paths` merges too (suspects and findings ask
        // for one per object, and read them all from that one search).
        if let Some(chain) = chain_from_parents(graph, analysis, target) {
            return vec![RankedChain { chain, count: 1 }];
        }
        let named = search(1, true);
        let chains = if named.is_empty() {
            search(1, false)
        } else {
            named
        };
        return chains
            .into_iter()
            .map(|chain| RankedChain { chain, count: 1 })
            .collect();
    }
    let candidates = (k * CANDIDATES_PER_CHAIN).max(16);
    let (named, anonymous) = chains_per_root_child(graph, analysis, target, candidates);
    let mut by_text: FxHashMap<String, usize> = FxHashMap::default();
    let mut ranked: Vec<RankedChain> = Vec::new();
    for chain in named.into_iter().chain(anonymous) {
        let text = chain_text(graph, &chain);
        if let Some(&at) = by_text.get(&text) {
            ranked[at].count += 1;
            continue;
        }
        if ranked.len() == k {
            continue;
        }
        by_text.insert(text, ranked.len());
        ranked.push(RankedChain { chain, count: 1 });
    }
    ranked
}

/// The chain from the root to `target` in the explaining search's tree
/// ([`Analysis::chain_parents`], built on the first call unless stored): up through each node's
/// parent, each step entered by the first retaining edge from its parent, a named root's where
/// the search entered through one. Of the shortest chains through a named root (or, where none
/// reaches `target`, through any) it is the one the search met first. `None` where the search
/// did not reach `target`, or where stored parents do not lead to the root along retaining
/// edges (a damaged file).
///
/// Complexity: O(the chain's length × its nodes' out-degrees).
pub(crate) fn chain_from_parents(
    graph: &HeapGraph,
    analysis: &Analysis,
    target: NodeId,
) -> Option<Chain> {
    let root = graph.root().to_raw();
    let mut up = vec![target.to_raw()];
    let mut at = target.to_raw();
    while at != root {
        at = analysis.chain_parent(graph, at)?;
        // Parents that go round a cycle never reach the root: the walk's length tells.
        if at == NO_NODE || up.len() > graph.node_count() {
            return None;
        }
        up.push(at);
    }
    let strong = StrongEdges::new(graph, &analysis.edge_rule);
    let mut chain: Chain = Vec::with_capacity(up.len());
    chain.push((graph.root(), None));
    for step in up.windows(2).rev() {
        let (child, parent) = (step[0], step[1]);
        let edge = edge_into(&strong, parent, child, ChainOrder::Explain)?;
        chain.push((graph.node(child as usize)?, Some(edge)));
    }
    Some(chain)
}

/// Bounds the search of [`chains_per_root_child`]: past this many objects visited the chains
/// found so far are returned (an object that the whole heap reaches, in a dump of tens of
/// millions, would otherwise cost a pass over all of it per question).
const MAX_VISITED: usize = 2_000_000;

/// The shortest chain through each child of the root that reaches `target`, those entering by
/// a named root edge and the others, each shortest first: one breadth-first search backwards
/// from the target over the retaining edges, which meets the root's children in the order of
/// their distance to the target. It stops once `wanted` named ones are found, or after
/// [`MAX_VISITED`] objects.
///
/// One search, not an enumeration of the k shortest chains filtered to one per root: when fewer
/// roots than asked reach the target, that enumeration must exhaust every longer chain first
/// (an object deep in a long linked list took 40 s on a 4 MB snapshot).
///
/// Complexity: O(V' + E') time for the V' objects visited and their retainers E'; a bit per
/// node and 16 bytes per object visited.
fn chains_per_root_child(
    graph: &HeapGraph,
    analysis: &Analysis,
    target: NodeId,
    wanted: usize,
) -> (Vec<Chain>, Vec<Chain>) {
    let strong = StrongEdges::new(graph, &analysis.edge_rule);
    let reverse = graph.reverse();
    let root = graph.root();
    // The visited objects in the order found (the search's queue, never shortened), each with
    // the place in it of its next step towards the target and its edge to that step: a bit
    // per node and a list, where a hash map of the visited cost three times the time.
    let mut seen = Bits::new(graph.node_count());
    seen.set(target.index());
    let mut visits = vec![Visit {
        node: target.to_raw(),
        next: NO_STEP,
        edge: usize::MAX,
    }];
    // The root's children met, each with the place of its visit and the root's edge into
    // it, and which were met.
    let mut named: Vec<(u32, usize)> = Vec::new();
    let mut anonymous: Vec<(u32, usize)> = Vec::new();
    let mut met: FxHashSet<(bool, u32)> = FxHashSet::default();
    let mut head = 0;
    while head < visits.len() {
        let at = head as u32;
        let node = graph.node(visits[head].node as usize).unwrap_or(root);
        head += 1;
        for (from, edge) in reverse.retainers(node) {
            if !strong.retains(from.to_raw(), edge, node.to_raw()) {
                continue;
            }
            if from == root {
                let is_named = is_named_root_edge(graph, edge);
                if met.insert((is_named, node.to_raw())) {
                    let entered = if is_named { &mut named } else { &mut anonymous };
                    entered.push((at, edge));
                }
                continue;
            }
            if !seen.get(from.index()) {
                seen.set(from.index());
                visits.push(Visit {
                    node: from.to_raw(),
                    next: at,
                    edge,
                });
            }
        }
        if named.len() >= wanted || visits.len() > MAX_VISITED {
            break;
        }
    }
    // A child entered both ways counts as named.
    anonymous.retain(|&(at, _)| !met.contains(&(true, visits[at as usize].node)));
    let chain = |&(at, root_edge): &(u32, usize)| -> Chain {
        let node_at = |at: u32| {
            graph
                .node(visits[at as usize].node as usize)
                .unwrap_or(root)
        };
        let mut chain = vec![(root, None), (node_at(at), Some(root_edge))];
        let mut step = &visits[at as usize];
        while step.next != NO_STEP {
            chain.push((node_at(step.next), Some(step.edge)));
            step = &visits[step.next as usize];
        }
        chain
    };
    (
        named.iter().map(chain).collect(),
        anonymous.iter().map(chain).collect(),
    )
}

/// An object visited by [`chains_per_root_child`]'s search.
struct Visit {
    node: u32,
    /// The place in the visits of the object it refers to, one step nearer the target
    /// ([`NO_STEP`] for the target).
    next: u32,
    /// Its reference to that object.
    edge: usize,
}

/// [`Visit::next`] of the target.
const NO_STEP: u32 = u32::MAX;

/// What a chain prints as: each object's type and name, and the edge into it.
fn chain_text(graph: &HeapGraph, chain: &Chain) -> String {
    let mut text = String::new();
    for &(node, edge) in chain {
        if let Some(edge) = edge {
            match graph.edge_name(edge) {
                EdgeName::Named(name) => {
                    text.push('.');
                    text.push_str(name);
                }
                EdgeName::Index(index) => text.push_str(&format!("[{index}]")),
            }
        }
        text.push_str(" → ");
        text.push_str(graph.type_name(node));
        text.push(' ');
        text.push_str(graph.name(node));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EdgeRule, Options, analyze};
    use heapgraph_test_support::graph;

    #[test]
    fn compact_distances_give_back_every_distance() {
        let distances = vec![0, 5, 65_533, 65_534, 65_535, 1_000_000, NO_DISTANCE];
        let compact = CompactDistances::new(distances.clone());
        for (node, &distance) in distances.iter().enumerate() {
            assert_eq!(compact.get(node), distance, "node {node}");
        }
        assert_eq!(compact.far.len(), 3, "the three past 2 bytes' range");
    }

    #[test]
    fn a_chain_from_a_named_root_comes_before_a_shorter_anonymous_one() {
        // The target is held by a busy monitor (anonymous, 2 references) and, further down, by
        // a class's static field (named, 4 references), and twice by the thread's stack.
        let graph = graph(
            "root -> <busy monitor>; <busy monitor> -> Target#t;
             root -> <system class>; <system class> -> Registry#r; Registry#r -> listeners;
             listeners -> Target#t;
             root -> <native stack>; <native stack> -> Frame#a; Frame#a -> Target#t;
             root -> <thread block>; <thread block> -> Frame#b; Frame#b -> Target#t",
        );
        let analysis = analyze(
            &graph,
            &Options {
                edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
            },
        );
        let target = graph
            .nodes()
            .find(|&node| graph.type_name(node) == "Target")
            .expect("the target");
        let root_edge = |ranked: &RankedChain| match ranked.chain[1].1.map(|e| graph.edge_name(e)) {
            Some(EdgeName::Named(name)) => name.to_owned(),
            _ => String::new(),
        };
        let explain = ranked_chains(&graph, &analysis, target, 3, ChainOrder::Explain);
        let roots: Vec<String> = explain.iter().map(root_edge).collect();
        assert_eq!(roots[0], "<system class>", "{roots:?}");
        assert_eq!(explain[0].chain.len(), 5);
        // The shortest order puts the monitor first.
        let shortest = ranked_chains(&graph, &analysis, target, 3, ChainOrder::Shortest);
        assert_eq!(root_edge(&shortest[0]), "<busy monitor>");
        // One chain per root, whatever is asked.
        let all = ranked_chains(&graph, &analysis, target, 10, ChainOrder::Explain);
        assert_eq!(all.len(), 4);
    }
}
