//! The questions users ask, answered as view structs: summary, top, who holds, dominator tree.

use crate::Analysis;
use crate::chains::{ChainIndex, ChainOrder, RankedChain, ranked_chains_with};
use crate::paths::{Chain, shortest_weak_chains};
use crate::suspects::{self, DEFAULT_MIN_DROP};
use crate::view::{
    DominatorTreeNode, DominatorTreeView, HELD_THROUGH_ROWS, HeldThroughRow, HoldersView,
    ObjectView, PathStep, RankBy, SummaryView, SuspectsView, TypeRow, WeaklyHeld,
};
use crate::weak::{HeldBy, ReferenceKind, ReferenceKinds};
use heapgraph_model::{EdgeKind, EdgeName, HeapGraph, NodeId, TypeTotals};
use rayon::prelude::*;
use std::cmp::Reverse;

/// The view of one object.
pub fn object_view(graph: &HeapGraph, analysis: &Analysis, node: NodeId) -> ObjectView {
    let reachable = analysis.dominators.reachable[node.index()];
    let distance = if reachable {
        analysis.view_distance(graph, node)
    } else {
        None
    };
    object_view_at(graph, analysis, node, distance)
}

/// [`object_view`] with the distance given (a chain's depth, where the distances of the whole
/// graph are not needed).
pub(crate) fn object_view_at(
    graph: &HeapGraph,
    analysis: &Analysis,
    node: NodeId,
    distance: Option<u32>,
) -> ObjectView {
    let tree = &analysis.dominators;
    let reachable = tree.reachable[node.index()];
    let object_id = graph.object_id(node);
    ObjectView {
        node,
        id: object_id,
        id_text: graph.meta().runtime.format_object_id(object_id),
        kind: graph.kind(node).name.clone(),
        type_name: graph.type_name(node).to_owned(),
        name: graph.name(node).to_owned(),
        shallow_size: graph.shallow_size(node),
        retained_size: reachable.then(|| tree.retained_size.get(node.index())),
        distance,
        retained_count: if reachable {
            u64::from(tree.retained_count[node.index()])
        } else {
            0
        },
    }
}

/// Totals of the graph and its types, by retained size.
pub fn summary(graph: &HeapGraph, analysis: &Analysis) -> SummaryView {
    summary_of(graph, analysis, None)
}

/// [`summary`] over the objects of one kind only (by name: `object` for the objects Python's
/// garbage collector tracks, `string` for V8's strings, …). `None` when no node has that kind.
pub fn summary_of_kind(graph: &HeapGraph, analysis: &Analysis, kind: &str) -> Option<SummaryView> {
    let index = graph
        .parts()
        .node_kinds
        .iter()
        .position(|info| info.name == kind)?;
    Some(summary_of(graph, analysis, Some(index as u8)))
}

fn summary_of(graph: &HeapGraph, analysis: &Analysis, kind: Option<u8>) -> SummaryView {
    heapgraph_model::timed("summary view", || {
        let parts = graph.parts();
        let kept = |node: usize| kind.is_none_or(|kind| parts.node_kind[node] == kind);
        let view = summary_counts(graph, analysis, kind, &kept);
        let filtered;
        let totals = match kind {
            None => analysis.type_totals(graph),
            Some(_) => {
                filtered = crate::histogram::type_totals_where(
                    graph,
                    &analysis.dominators,
                    || analysis.dominator_children(graph),
                    &kept,
                );
                &filtered
            }
        };
        with_type_rows(graph, view, totals)
    })
}

/// [`summary`] (with `kind`, [`summary_of_kind`]) and [`suspects`](crate::suspects) at
/// `threshold`, as `summary` shows them together: the per-type totals and the types below the
/// suspects' accumulation points are found in one walk of the dominator tree, where each
/// alone walks it. `None` when no node has that kind. Call it from a thread that is not
/// rayon's ([`crate::side_by_side`]).
pub fn summary_and_suspects(
    graph: &HeapGraph,
    analysis: &Analysis,
    kind: Option<&str>,
    threshold: f64,
) -> Option<(SummaryView, SuspectsView)> {
    let parts = graph.parts();
    let kind = match kind {
        None => None,
        Some(name) => Some(parts.node_kinds.iter().position(|info| info.name == name)? as u8),
    };
    if kind.is_none() && analysis.type_totals.get().is_some() {
        // The totals are known (stored with the dump, or asked for before): no walk is shared.
        return Some(crate::side_by_side(
            || summary_of(graph, analysis, kind),
            || crate::suspects(graph, analysis, threshold),
        ));
    }
    let kept = |node: usize| kind.is_none_or(|kind| parts.node_kind[node] == kind);
    let (groups, (view, counted)) = crate::side_by_side(
        || {
            // What the view's counts wait on last, first.
            analysis.weak_reach(graph);
            suspects::top_level_groups(graph, analysis)
        },
        || {
            let view = heapgraph_model::timed("summary view", || {
                summary_counts(graph, analysis, kind, &kept)
            });
            let counted = match (kind, analysis.type_counts.get()) {
                (None, Some(counts)) => counts.dense_types(graph),
                _ => crate::histogram::type_counts(graph, &kept),
            };
            (view, counted)
        },
    );
    let tree = &analysis.dominators;
    let big = suspects::big_objects(graph, analysis, view.heap_size, threshold, DEFAULT_MIN_DROP);
    let points = big.points();
    let (totals, mut below) = heapgraph_model::timed("type totals and the suspects' types", || {
        let children = analysis.dominator_children(graph);
        crate::histogram::type_totals_and_tallies(graph, tree, children, counted, &points)
    });
    let accumulated = (big.points_in_order())
        .map(|point| {
            let at = (points.binary_search(&point.to_raw()))
                .expect("each object's accumulation point is one of the points");
            let walked = std::mem::take(&mut below[at]);
            suspects::accumulated_view(
                graph,
                &suspects::accumulated_rows(graph, tree, point, walked),
            )
        })
        .collect();
    let filtered;
    let totals = match kind {
        None => analysis.type_totals.get_or_init(|| totals),
        Some(_) => {
            filtered = totals;
            &filtered
        }
    };
    Some(crate::side_by_side(
        || with_type_rows(graph, view, totals),
        || {
            heapgraph_model::timed("suspects", || {
                suspects::suspects_from(graph, analysis, threshold, big, accumulated, groups)
            })
        },
    ))
}

/// The summary's counts and sizes (all but the per-type rows) over the objects `kept` accepts,
/// all of `kind` where one is given.
fn summary_counts(
    graph: &HeapGraph,
    analysis: &Analysis,
    kind: Option<u8>,
    kept: &impl Fn(usize) -> bool,
) -> SummaryView {
    let tree = &analysis.dominators;
    let parts = graph.parts();
    let mut view = SummaryView {
        objects: 0,
        references: graph.edge_count() as u64,
        total_shallow_size: 0,
        reachable_objects: 0,
        reachable_size: 0,
        unreachable_objects: 0,
        unreachable_size: 0,
        weakly_held: Vec::new(),
        garbage_objects: 0,
        garbage_size: 0,
        heap_size: 0,
        kind: kind.map(|kind| parts.node_kinds[usize::from(kind)].name.clone()),
        types: Vec::new(),
    };
    // Every node's size in one decoding pass; the few synthetic nodes are found apart and
    // skipped by position.
    let synthetic = graph.synthetic_nodes();
    let mut next_synthetic = synthetic.iter().copied().peekable();
    for (node, size) in parts.node_shallow_size.iter().enumerate() {
        if next_synthetic.next_if_eq(&node).is_some() {
            continue;
        }
        let reachable = tree.reachable[node];
        if reachable {
            view.heap_size += size;
        }
        if !kept(node) {
            continue;
        }
        view.objects += 1;
        view.total_shallow_size += size;
        if reachable {
            view.reachable_objects += 1;
            view.reachable_size += size;
        } else {
            view.unreachable_objects += 1;
            view.unreachable_size += size;
        }
    }
    held_apart(graph, analysis, kept, &mut view);
    view
}

/// `view` with the per-type rows of `totals`, largest retained size first.
fn with_type_rows(graph: &HeapGraph, mut view: SummaryView, totals: &TypeTotals) -> SummaryView {
    let strings = graph.strings();
    view.types = (0..totals.types.len())
        .map(|dense| TypeRow {
            type_name: strings.get(totals.types[dense]).to_owned(),
            count: totals.count[dense],
            shallow_size: totals.shallow[dense],
            retained_size: totals.retained[dense],
        })
        .collect();
    view.types.sort_by(|a, b| {
        (
            Reverse(a.retained_size),
            Reverse(a.shallow_size),
            &a.type_name,
        )
            .cmp(&(
                Reverse(b.retained_size),
                Reverse(b.shallow_size),
                &b.type_name,
            ))
    });
    view
}

/// Splits the summary's unreachable objects into those references of each kind hold and the
/// garbage, and (over the whole dump) says through which references.
fn held_apart(
    graph: &HeapGraph,
    analysis: &Analysis,
    kept: &impl Fn(usize) -> bool,
    view: &mut SummaryView,
) {
    if view.unreachable_objects == 0 {
        return;
    }
    let reach = analysis.weak_reach(graph);
    let mut by_kind = [(0u64, 0u64); 4];
    for (index, held) in reach.not_strongly_held() {
        let Some(node) = graph.node(index) else {
            continue;
        };
        if graph.is_synthetic(node) || !kept(index) {
            continue;
        }
        let size = graph.shallow_size(node);
        match held {
            HeldBy::Strong => {}
            HeldBy::Only(kind) => {
                let (objects, bytes) = &mut by_kind[kind as usize];
                *objects += 1;
                *bytes += size;
            }
            HeldBy::Nothing => {
                view.garbage_objects += 1;
                view.garbage_size += size;
            }
        }
    }
    let strings = graph.strings();
    view.weakly_held = ReferenceKind::ALL
        .into_iter()
        .zip(by_kind)
        .filter(|(_, (objects, _))| *objects > 0)
        .map(|(kind, (objects, size))| WeaklyHeld {
            kind,
            objects,
            size,
            through: if view.kind.is_some() {
                Vec::new()
            } else {
                reach
                    .through
                    .iter()
                    .filter(|row| row.kind == kind)
                    .take(HELD_THROUGH_ROWS)
                    .map(|row| HeldThroughRow {
                        reference_type: strings.get(row.reference_type).to_owned(),
                        holder_type: row.holder_type.map(|holder| strings.get(holder).to_owned()),
                        objects: row.objects,
                        size: row.size,
                    })
                    .collect()
            },
        })
        .collect();
}

/// The `n` real objects ranked highest by `by`, ties broken by node index.
pub fn top(graph: &HeapGraph, analysis: &Analysis, by: RankBy, n: usize) -> Vec<ObjectView> {
    let tree = &analysis.dominators;
    let key = |node: usize| -> u64 {
        match by {
            RankBy::Shallow => graph.parts().node_shallow_size.get(node),
            RankBy::Retained if tree.reachable[node] => tree.retained_size.get(node),
            RankBy::Count if tree.reachable[node] => u64::from(tree.retained_count[node]),
            RankBy::Retained | RankBy::Count => 0,
        }
    };
    let mut candidates: Vec<(Reverse<u64>, u32)> = graph
        .nodes()
        .filter(|&node| !graph.is_synthetic(node))
        .map(|node| (Reverse(key(node.index())), node.to_raw()))
        .collect();
    if n < candidates.len() {
        candidates.select_nth_unstable(n);
        candidates.truncate(n);
    }
    candidates.sort_unstable();
    candidates
        .into_iter()
        .filter_map(|(_, raw)| graph.node(raw as usize))
        .map(|node| object_view(graph, analysis, node))
        .collect()
}

/// The instance of type `type_name` with the largest retained size, and how many matched.
pub fn find_largest_of_type(
    graph: &HeapGraph,
    analysis: &Analysis,
    type_name: &str,
) -> Option<(NodeId, u64)> {
    let type_id = graph.strings().find(type_name)?;
    let tree = &analysis.dominators;
    let mut best: Option<(u64, NodeId)> = None;
    let mut matches = 0u64;
    for node in graph.nodes() {
        if graph.type_id(node) != type_id || graph.is_synthetic(node) {
            continue;
        }
        matches += 1;
        let retained = if tree.reachable[node.index()] {
            tree.retained_size.get(node.index())
        } else {
            0
        };
        if best.is_none_or(|(size, _)| retained > size) {
            best = Some((retained, node));
        }
    }
    best.map(|(_, node)| (node, matches))
}

/// Who holds `target`: its dominator chain and up to `n_paths` retainer chains in `order`
/// (by default the chains that explain: see [`ChainOrder`]), searched by the analysis's
/// [`ChainIndex`] if it was built, else by distances computed for this object alone.
pub fn who_holds(
    graph: &HeapGraph,
    analysis: &Analysis,
    target: NodeId,
    n_paths: usize,
    order: ChainOrder,
) -> HoldersView {
    who_holds_with(
        graph,
        analysis,
        target,
        n_paths,
        order,
        analysis.chains.get(),
    )
}

/// [`who_holds`] with the analysis's [`ChainIndex`] for the strong chains, built on the first
/// call: the same answer, without the two whole-graph searches per object that a search for
/// one strong chain otherwise starts with (several chains are one bounded search backwards
/// from the object either way; the chains of weakly held objects are still searched in full).
/// For a program that asks for the holders of one object after another.
pub fn who_holds_indexed(
    graph: &HeapGraph,
    analysis: &Analysis,
    target: NodeId,
    n_paths: usize,
    order: ChainOrder,
) -> HoldersView {
    let index = analysis.chain_index(graph);
    who_holds_with(graph, analysis, target, n_paths, order, Some(index))
}

/// [`who_holds`], the strong chains searched by `index` when given.
fn who_holds_with(
    graph: &HeapGraph,
    analysis: &Analysis,
    target: NodeId,
    n_paths: usize,
    order: ChainOrder,
    index: Option<&ChainIndex>,
) -> HoldersView {
    let tree = &analysis.dominators;
    let mut dominators = Vec::new();
    if tree.reachable[target.index()] {
        let mut node = Some(target);
        while let Some(current) = node {
            dominators.push(current);
            node = tree.immediate_dominator(graph, current);
        }
        dominators.reverse();
    }
    let dominator_chain = object_views(graph, analysis, &dominators);
    let held_by = analysis.held_by(graph, target);
    let ranked = match held_by {
        HeldBy::Strong => ranked_chains_with(graph, analysis, target, n_paths, order, index),
        HeldBy::Only(kind) => {
            // As for strong chains: in the explaining order, at most one per root object.
            let mut roots = Vec::new();
            shortest_weak_chains(graph, &analysis.edge_rule, kind, target, n_paths)
                .into_iter()
                .filter(|chain| {
                    let root = chain.get(1).map(|step| step.0);
                    let first = !roots.contains(&root);
                    roots.push(root);
                    first || order == ChainOrder::Shortest
                })
                .map(|chain| RankedChain { chain, count: 1 })
                .collect()
        }
        HeldBy::Nothing => Vec::new(),
    };
    let path_counts = ranked.iter().map(|ranked| ranked.count).collect();
    let paths = ranked
        .into_iter()
        .map(|ranked| path_steps(graph, analysis, ranked.chain))
        .collect();
    HoldersView {
        target: object_view(graph, analysis, target),
        matches: None,
        dominator_chain,
        held_by,
        paths,
        path_counts,
    }
}

/// A chain of (node, edge into it) from the root as path steps, each weak edge with its
/// reference kind.
pub(crate) fn path_steps(graph: &HeapGraph, analysis: &Analysis, chain: Chain) -> Vec<PathStep> {
    let mut kinds = ReferenceKinds::new(graph);
    let mut previous: Option<NodeId> = None;
    let reference_kinds: Vec<Option<ReferenceKind>> = chain
        .iter()
        .map(|&(node, edge)| {
            let reference_kind = edge
                .filter(|&edge| graph.edge_kind(edge) == EdgeKind::Weak)
                .zip(previous)
                .map(|(_, from)| kinds.of(from.to_raw()));
            previous = Some(node);
            reference_kind
        })
        .collect();
    let nodes: Vec<NodeId> = chain.iter().map(|&(node, _)| node).collect();
    object_views(graph, analysis, &nodes)
        .into_iter()
        .zip(chain)
        .zip(reference_kinds)
        .map(|((object, (_, edge)), reference_kind)| PathStep {
            object,
            edge: edge.map(|edge| edge_text(graph, edge)),
            edge_kind: edge.map(|edge| graph.edge_kind(edge).name()),
            reference_kind,
        })
        .collect()
}

/// The views of `nodes`, in order. A chain down a linked list runs to millions of steps (a
/// view is a few small strings each), so long chains are viewed on every core.
fn object_views(graph: &HeapGraph, analysis: &Analysis, nodes: &[NodeId]) -> Vec<ObjectView> {
    const ON_EVERY_CORE: usize = 1 << 14;
    if nodes.len() < ON_EVERY_CORE {
        return nodes
            .iter()
            .map(|&node| object_view(graph, analysis, node))
            .collect();
    }
    // Computed here, once: a rayon worker must not wait on a cell that another fills with
    // rayon's help (docs/architecture.md, "Performance").
    analysis.prepare_views(graph);
    nodes
        .par_iter()
        .with_min_len(ON_EVERY_CORE / 4)
        .map(|&node| object_view(graph, analysis, node))
        .collect()
}

/// An edge's name as chains print it: a property name, or `[index]`.
pub(crate) fn edge_text(graph: &HeapGraph, edge: usize) -> String {
    match graph.edge_name(edge) {
        EdgeName::Named(name) => name.to_owned(),
        EdgeName::Index(index) => format!("[{index}]"),
    }
}

/// The upper dominator tree: children by retained size, down to `max_depth`, keeping nodes
/// whose retained size is at least `min_share` of the root's.
pub fn dominator_tree(
    graph: &HeapGraph,
    analysis: &Analysis,
    max_depth: u32,
    min_share: f64,
) -> DominatorTreeView {
    let tree = &analysis.dominators;
    let children = analysis.dominator_children(graph);
    let root = graph.root();
    let total = tree.retained_size.get(root.index());
    let share_of = |node: usize| {
        if total == 0 {
            0.0
        } else {
            tree.retained_size.get(node) as f64 / total as f64
        }
    };
    let mut nodes = Vec::new();
    // Pre-order with an explicit stack; children pushed largest-last so they pop largest-first.
    let mut stack: Vec<(u32, u32)> = vec![(root.to_raw(), 0)];
    while let Some((node, depth)) = stack.pop() {
        let node_index = node as usize;
        let mut kids: Vec<u32> = children.of(node_index).collect();
        kids.sort_unstable_by_key(|&kid| (Reverse(tree.retained_size.get(kid as usize)), kid));
        let shown: Vec<u32> = if depth < max_depth {
            kids.iter()
                .copied()
                .filter(|&kid| share_of(kid as usize) >= min_share)
                .collect()
        } else {
            Vec::new()
        };
        let Some(node_id) = graph.node(node_index) else {
            continue;
        };
        nodes.push(DominatorTreeNode {
            object: object_view(graph, analysis, node_id),
            depth,
            share: share_of(node_index),
            hidden_children: (kids.len() - shown.len()) as u64,
        });
        for &kid in shown.iter().rev() {
            stack.push((kid, depth + 1));
        }
    }
    DominatorTreeView {
        total_retained: total,
        nodes,
    }
}
