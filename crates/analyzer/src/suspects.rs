//! Leak suspects, as Eclipse MAT's report finds them, and duplicate strings.
//!
//! Suspects follow two rules. A single object that retains at least `threshold` of the heap
//! (the topmost such object on its dominator chain) is a suspect; from it the walk goes down
//! the dominator tree while one child keeps at least [`ACCUMULATION_SHARE`] of its parent's
//! retained size, and stops at the accumulation point, whose dominated objects are grouped by
//! type. And a type whose top-level instances (dominated by no real object: held from many
//! places) together retain at least `threshold` is a suspect, with its largest instance.
//!
//! Big drops in the dominator tree (Eclipse MAT's "Big Drops in Dominator Tree",
//! `org.eclipse.mat.inspections.BigDropsQuery`) list every accumulation point, not only those
//! below a suspect: the objects that retain much while each of their children retains much
//! less, where the memory of many small objects gathers under one.

use crate::Analysis;
use crate::chains::{ChainOrder, ranked_chains};
use crate::histogram::{
    DominatorChildren, PerType, SPLIT_WALKS_FROM, TypeTally, Walk, WalkPart, walk_parts,
};
use crate::queries::{object_view, path_steps};
use crate::view::{
    AccumulatedType, DuplicateString, ObjectView, PathStep, StringsView, Suspect, SuspectRule,
    SuspectsView,
};
use hashbrown::HashTable;
use heapgraph_model::{
    AccumulatedTypes, EdgeName, HeapGraph, NodeId, Runtime, StoredAnalysis, StringId,
};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHasher};
use std::cmp::Reverse;
use std::hash::Hasher;

/// Share of its parent's retained size that a child must keep for the walk down to continue.
pub const ACCUMULATION_SHARE: f64 = 0.8;

/// The share of its retained size that an accumulation point's largest child must fall short
/// of unless told otherwise (`--min-drop`): the walk to an accumulation point stops where the
/// largest child keeps less than [`ACCUMULATION_SHARE`].
pub const DEFAULT_MIN_DROP: f64 = 1.0 - ACCUMULATION_SHARE;

/// Types listed per accumulation point.
const ACCUMULATED_TYPES: usize = 10;

/// The share of the reachable heap a suspect must retain unless told otherwise, as in Eclipse
/// MAT's leak-suspects report.
pub const DEFAULT_SUSPECT_THRESHOLD: f64 = 0.1;

/// The leak suspects of `graph`: objects and types retaining at least `threshold` (a share, 0
/// to 1) of the reachable heap, largest first.
pub fn suspects(graph: &HeapGraph, analysis: &Analysis, threshold: f64) -> SuspectsView {
    suspects_with_drop(graph, analysis, threshold, DEFAULT_MIN_DROP)
}

/// [`suspects`], with each suspect's accumulation point where its largest child falls
/// `min_drop` (a share, 0 to 1) or more short of it.
pub fn suspects_with_drop(
    graph: &HeapGraph,
    analysis: &Analysis,
    threshold: f64,
    min_drop: f64,
) -> SuspectsView {
    heapgraph_model::timed("suspects", || {
        suspects_untimed(graph, analysis, threshold, min_drop)
    })
}

fn suspects_untimed(
    graph: &HeapGraph,
    analysis: &Analysis,
    threshold: f64,
    min_drop: f64,
) -> SuspectsView {
    let total = analysis.heap_size(graph);
    let big = big_objects(graph, analysis, total, threshold, min_drop);
    let children = analysis.dominator_children(graph);
    // A converted dump brings the rows below the default threshold's points: read, not walked.
    let accumulated = (big.points_in_order())
        .map(|point| match analysis.stored_accumulated(point) {
            Some(stored) => accumulated_view(graph, stored),
            None => accumulated_view(
                graph,
                &accumulated_types(graph, &analysis.dominators, children, point),
            ),
        })
        .collect();
    let groups = top_level_groups(graph, analysis);
    suspects_from(graph, analysis, threshold, big, accumulated, groups)
}

/// The types below an accumulation point, the largest first, and the topmost instance of the
/// first (where a chain to the entries ends).
pub(crate) type Accumulated = (Vec<AccumulatedType>, Option<NodeId>);

/// Rule 1's suspects before the types below them are tallied: the topmost objects that retain
/// `limit` bytes or more, in node order, each with its accumulation point; and the reachable
/// heap they are shares of.
pub(crate) struct BigObjects {
    total: u64,
    limit: u64,
    tops: Vec<(NodeId, NodeId)>,
}

impl BigObjects {
    /// The accumulation points, sorted, as a [`Walk`] takes them; none is below another.
    pub(crate) fn points(&self) -> Vec<u32> {
        let mut points: Vec<u32> = self.tops.iter().map(|(_, point)| point.to_raw()).collect();
        points.sort_unstable();
        points
    }

    /// The accumulation points in the order of the objects.
    pub(crate) fn points_in_order(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.tops.iter().map(|&(_, point)| point)
    }
}

/// Rule 1's objects, of a reachable heap of `total` bytes (builds the dominator tree's
/// children).
pub(crate) fn big_objects(
    graph: &HeapGraph,
    analysis: &Analysis,
    total: u64,
    threshold: f64,
    min_drop: f64,
) -> BigObjects {
    let keep_share = 1.0 - min_drop.clamp(0.0, 1.0);
    let tree = &analysis.dominators;
    let root = graph.root();
    let limit = (threshold * total as f64).ceil().max(1.0) as u64;
    let big = |node: usize| {
        tree.reachable[node] && tree.retained_size.get(node) >= limit && node != root.index()
    };
    let children = analysis.dominator_children(graph);
    // The topmost big objects (their dominator is the root or synthetic, or not big). A big
    // object's dominators retain at least as much, so all are big: they are found down the
    // tree from the root through big objects only, and taken in node order.
    let mut topmost_big = Vec::new();
    let mut stack = vec![root.to_raw()];
    while let Some(parent) = stack.pop() {
        let parent_is_big_object = big(parent as usize)
            && graph
                .node(parent as usize)
                .is_some_and(|p| !graph.is_synthetic(p));
        for child in children.of(parent as usize) {
            if !big(child as usize) {
                continue;
            }
            stack.push(child);
            if !parent_is_big_object
                && graph
                    .node(child as usize)
                    .is_some_and(|c| !graph.is_synthetic(c))
            {
                topmost_big.push(child);
            }
        }
    }
    topmost_big.sort_unstable();
    let tops = (topmost_big.into_iter())
        .filter_map(|node| graph.node(node as usize))
        .map(|node| {
            let point = accumulation_point(graph, tree, children, node, keep_share);
            (node, point)
        })
        .collect();
    BigObjects { total, limit, tops }
}

/// The suspects: rule 1's from `big`, with the types below each accumulation point in
/// `accumulated` (in `big`'s order, with the topmost instance of the type that retains the
/// most), and rule 2's from `groups`.
pub(crate) fn suspects_from(
    graph: &HeapGraph,
    analysis: &Analysis,
    threshold: f64,
    big: BigObjects,
    accumulated: Vec<Accumulated>,
    groups: TopLevelGroups,
) -> SuspectsView {
    let tree = &analysis.dominators;
    let root = graph.root();
    let BigObjects { total, limit, tops } = big;
    let big = |node: usize| {
        tree.reachable[node] && tree.retained_size.get(node) >= limit && node != root.index()
    };
    let mut found = Vec::new();
    // Per suspect, in order: the node its chain leads to, and its entry's, if any.
    let mut chains: Vec<(NodeId, Option<NodeId>)> = Vec::new();
    // Per suspect, in order: its object, and its accumulation point, if any. Their views are
    // made once the chain parents and the distances are built, beside each other.
    let mut objects: Vec<(NodeId, Option<NodeId>)> = Vec::new();
    // Rule 1.
    for ((node, point), (accumulated, representative)) in tops.into_iter().zip(accumulated) {
        let index = node.index();
        found.push(Suspect {
            rule: SuspectRule::SingleObject,
            share: share(tree.retained_size.get(index), total),
            object: None,
            type_name: graph.type_name(node).to_owned(),
            count: 1,
            retained_size: tree.retained_size.get(index),
            accumulation_point: None,
            accumulated,
            path: Vec::new(),
            entry_path: Vec::new(),
            point_dominators: dominators_of(graph, tree, point),
        });
        chains.push((point, representative));
        objects.push((node, Some(point)));
    }
    // Rule 2: types whose top-level instances (held by no real object alone, so their
    // retained sets are disjoint) together retain much.
    // By type, so that suspects as large come in one order whatever the map's.
    let mut groups: Vec<_> = groups.0.into_iter().collect();
    groups.sort_unstable_by_key(|&(type_id, _)| type_id);
    for (_, (count, retained, largest)) in groups {
        if count < 2 || retained < limit {
            continue;
        }
        // Instances whose bulk is one of them, itself a suspect of its own, say nothing more.
        let largest_retained = tree.retained_size.get(largest.index());
        if big(largest.index()) && largest_retained as f64 >= ACCUMULATION_SHARE * retained as f64 {
            continue;
        }
        found.push(Suspect {
            rule: SuspectRule::ManyInstances,
            share: share(retained, total),
            object: None,
            type_name: graph.type_name(largest).to_owned(),
            count,
            retained_size: retained,
            accumulation_point: None,
            accumulated: Vec::new(),
            path: Vec::new(),
            entry_path: Vec::new(),
            point_dominators: Vec::new(),
        });
        chains.push((largest, None));
        objects.push((largest, None));
    }
    // Every chain is read from one search's tree, and its steps' distances from another: both
    // at once, before the first chain asks for either.
    if !chains.is_empty() {
        analysis.prepare_chains(graph);
    }
    for ((suspect, (node, entry)), (object, point)) in found.iter_mut().zip(chains).zip(objects) {
        suspect.object = Some(object_view(graph, analysis, object));
        suspect.accumulation_point = point.map(|point| object_view(graph, analysis, point));
        suspect.path = chain_to(graph, analysis, node);
        suspect.entry_path = entry
            .map(|entry| chain_to(graph, analysis, entry))
            .unwrap_or_default();
    }
    found.sort_by_key(|suspect| (Reverse(suspect.retained_size), suspect.rule));
    SuspectsView {
        runtime: graph.meta().runtime,
        threshold,
        total_retained: total,
        suspects: found,
    }
}

/// Rule 2's groups: per type (by raw id), the count and retained size of its top-level
/// instances (held by no real object alone), and the first of the largest of them.
pub(crate) struct TopLevelGroups(FxHashMap<u32, (u64, u64, NodeId)>);

/// [`TopLevelGroups`] of the analysis (builds the dominator tree's children).
pub(crate) fn top_level_groups(graph: &HeapGraph, analysis: &Analysis) -> TopLevelGroups {
    let tree = &analysis.dominators;
    let children = analysis.dominator_children(graph);
    let mut groups: FxHashMap<u32, (u64, u64, NodeId)> = FxHashMap::default();
    let java = graph.meta().runtime == Runtime::Java;
    let loader_edge = graph.strings().find("<classloader>");
    for_each_top_level_object(graph, children, |node| {
        let index = node.index();
        // The JDK's own classes (loaded by the boot loader, which has no object) are every
        // Java heap's: together they retain much and point nowhere.
        if java
            && graph.kind(node).name == "class"
            && !graph.edge_range(node).any(|edge| {
                loader_edge.is_some_and(|name| {
                    graph.edge_name(edge) == EdgeName::Named(graph.strings().get(name))
                })
            })
        {
            return;
        }
        let retained = tree.retained_size.get(index);
        let group = groups
            .entry(graph.type_id(node).to_raw())
            .or_insert((0, 0, node));
        group.0 += 1;
        group.1 += retained;
        // The largest, the first in node order of those as large.
        let largest = tree.retained_size.get(group.2.index());
        if retained > largest || (retained == largest && node < group.2) {
            group.2 = node;
        }
    });
    TopLevelGroups(groups)
}

fn share(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 / total as f64
    }
}

/// The objects above `point` in the dominator tree, its immediate dominator first, the root
/// left out: those whose release would free it.
///
/// Complexity: O(depth of `point` in the dominator tree).
fn dominators_of(graph: &HeapGraph, tree: &crate::DominatorTree, point: NodeId) -> Vec<NodeId> {
    let root = graph.root().index();
    let mut out = Vec::new();
    let mut at = point.index();
    // The depth bounds the walk; the length check guards a malformed tree against a cycle.
    while out.len() < tree.idom.len() {
        let Some(&up) = tree.idom.get(at) else { break };
        let up = up as usize;
        if up == at || up == root {
            break;
        }
        let Some(node) = graph.node(up) else { break };
        out.push(node);
        at = up;
    }
    out
}

/// Down the dominator tree from `start` while the largest child keeps `keep_share` or more of
/// the retained size.
fn accumulation_point(
    graph: &HeapGraph,
    tree: &crate::DominatorTree,
    children: &DominatorChildren,
    start: NodeId,
    keep_share: f64,
) -> NodeId {
    let mut node = start.index();
    loop {
        let retained = tree.retained_size.get(node) as f64;
        let largest = children
            .of(node)
            .max_by_key(|&child| (tree.retained_size.get(child as usize), Reverse(child)));
        match largest {
            Some(child)
                if tree.retained_size.get(child as usize) as f64 >= keep_share * retained =>
            {
                node = child as usize;
            }
            _ => break,
        }
    }
    // The tree's indices are the graph's, so the fallback is never taken.
    graph.node(node).unwrap_or(start)
}

/// The objects dominated by `point` (itself excluded), grouped by type: count, and retained
/// size of the topmost instances (those not below another instance of their type, so that no
/// byte counts twice), largest first; and the topmost instance of the first type that retains
/// the most (where a chain to the entries ends).
///
/// A walk of every node below `point`, cut into [`WalkPart`]s that rayon's threads walk at
/// once (a node's topmost-ness depends only on the types above it, which each part is given),
/// merged in the walk's order.
fn accumulated_types(
    graph: &HeapGraph,
    tree: &crate::DominatorTree,
    children: &DominatorChildren,
    point: NodeId,
) -> AccumulatedTypes {
    let threads = rayon::current_num_threads() as u32;
    let parts = walk_parts(tree, children, point, threads, SPLIT_WALKS_FROM);
    tally_parts(graph, tree, children, point, parts)
}

/// [`accumulated_types`] from the walk below `point` cut into `parts` ([`walk_parts`]).
fn tally_parts(
    graph: &HeapGraph,
    tree: &crate::DominatorTree,
    children: &DominatorChildren,
    point: NodeId,
    parts: Vec<WalkPart>,
) -> AccumulatedTypes {
    let points = [point.to_raw()];
    let walk = Walk {
        totals: None,
        points: &points,
        above: &points,
    };
    let walked: Vec<PerType<TypeTally>> = parts
        .into_par_iter()
        .filter_map(|part| walk.part(graph, tree, children, &part).below.pop())
        .collect();
    accumulated_rows(graph, tree, point, walked)
}

/// The rows of [`accumulated_types`] below `point` from the tallies of each part of the walk
/// below it, in the walk's order.
pub(crate) fn accumulated_rows(
    graph: &HeapGraph,
    tree: &crate::DominatorTree,
    point: NodeId,
    walked: Vec<PerType<TypeTally>>,
) -> AccumulatedTypes {
    let types = &graph.parts().node_type;
    let strings = graph.strings();
    // In the walk's order, so that the largest instance is the first of the largest, as one
    // walk would find it.
    let mut merged: FxHashMap<u32, TypeTally> = FxHashMap::default();
    for tallies in walked {
        for (type_id, tally) in tallies.into_seen(types) {
            let into = merged.entry(type_id).or_default();
            into.count += tally.count;
            into.retained += tally.retained;
            if let Some(largest) = tally.largest
                && into.largest.is_none_or(|before| {
                    tree.retained_size.get(largest as usize)
                        > tree.retained_size.get(before as usize)
                })
            {
                into.largest = Some(largest);
            }
        }
    }
    let mut rows: Vec<(StringId, TypeTally)> = merged
        .into_iter()
        .map(|(type_id, tally)| {
            let type_name = strings.id_from_raw(type_id).unwrap_or(StringId::EMPTY);
            (type_name, tally)
        })
        .collect();
    rows.sort_by(|(a, a_tally), (b, b_tally)| {
        (Reverse(a_tally.retained), strings.get(*a))
            .cmp(&(Reverse(b_tally.retained), strings.get(*b)))
    });
    rows.truncate(ACCUMULATED_TYPES);
    let representative = rows
        .first()
        .and_then(|&(_, tally)| tally.largest)
        .unwrap_or(StoredAnalysis::NONE);
    AccumulatedTypes {
        point: point.to_raw(),
        representative,
        types: rows.iter().map(|&(type_name, _)| type_name).collect(),
        count: rows.iter().map(|(_, tally)| tally.count).collect(),
        retained: rows.iter().map(|(_, tally)| tally.retained).collect(),
    }
}

/// What a suspect shows of the types below its accumulation point.
pub(crate) fn accumulated_view(graph: &HeapGraph, types: &AccumulatedTypes) -> Accumulated {
    let rows = (types.types.iter().zip(&types.count).zip(&types.retained))
        .map(|((&type_name, &count), &retained_size)| AccumulatedType {
            type_name: graph.strings().get(type_name).to_owned(),
            count,
            retained_size,
        })
        .collect();
    let representative = (types.representative != StoredAnalysis::NONE)
        .then(|| graph.node(types.representative as usize))
        .flatten();
    (rows, representative)
}

/// The types below the accumulation points of the suspects at the default threshold and
/// drop, by point, for storing with the analysis ([`Analysis::into_stored`]): the walk below
/// each point, or, where the type totals are not known yet, their walk of the whole tree,
/// which tallies below the points as it goes and sets them.
pub(crate) fn accumulated_to_store(
    graph: &HeapGraph,
    analysis: &Analysis,
) -> Vec<AccumulatedTypes> {
    let total = analysis.heap_size(graph);
    let big = big_objects(
        graph,
        analysis,
        total,
        DEFAULT_SUSPECT_THRESHOLD,
        DEFAULT_MIN_DROP,
    );
    let mut points = big.points();
    points.dedup();
    let points: Vec<NodeId> = points
        .into_iter()
        .filter_map(|point| graph.node(point as usize))
        .collect();
    let tree = &analysis.dominators;
    let children = analysis.dominator_children(graph);
    if analysis.type_totals.get().is_some() {
        return (points.into_iter())
            .map(|point| accumulated_types(graph, tree, children, point))
            .collect();
    }
    let raw: Vec<u32> = points.iter().map(|point| point.to_raw()).collect();
    let (totals, below) = crate::histogram::type_totals_and_tallies_of_every_node(
        graph,
        tree,
        children,
        analysis.type_counts.get(),
        &raw,
    );
    // Set here, or by a walk on another thread with the same result.
    let _ = analysis.type_totals.set(totals);
    (points.into_iter().zip(below))
        .map(|(point, walked)| accumulated_rows(graph, tree, point, walked))
        .collect()
}

/// Checks stored types below accumulation points against `tree`: by point, each point and
/// representative a reachable node, at most the rows a suspect shows.
pub(crate) fn checked_accumulated(
    graph: &HeapGraph,
    tree: &crate::DominatorTree,
    accumulated: &[AccumulatedTypes],
) -> Result<(), String> {
    let reachable =
        |node: u32| (node as usize) < graph.node_count() && tree.reachable[node as usize];
    let mut before: Option<u32> = None;
    for types in accumulated {
        if before.is_some_and(|before| before >= types.point) {
            return Err("the stored accumulation points are not in increasing order".to_owned());
        }
        before = Some(types.point);
        if !reachable(types.point)
            || (types.representative != StoredAnalysis::NONE && !reachable(types.representative))
        {
            return Err(format!(
                "the stored types below node {} name a node that is not reachable",
                types.point
            ));
        }
        let rows = types.types.len();
        if rows > ACCUMULATED_TYPES || types.count.len() != rows || types.retained.len() != rows {
            return Err(format!(
                "the stored types below node {} do not fit together",
                types.point
            ));
        }
    }
    Ok(())
}

/// An accumulation point: an object that retains much while its largest child retains much less.
#[derive(Clone, Debug, PartialEq)]
pub struct BigDrop {
    /// The accumulation point.
    pub object: ObjectView,
    /// Its retained size as a share of the reachable heap.
    pub share: f64,
    /// Its children in the dominator tree (the objects it alone keeps alive directly).
    pub children: u64,
    /// What the largest of them retains.
    pub largest_child: u64,
    /// The share of its retained size that its largest child does not keep: 1 − largest /
    /// retained.
    pub drop: f64,
    /// The first of its dominators whose type is the program's own, not the runtime's (MAT's
    /// "first interesting dominator", whose default skips `java.*` and `com.sun.*`); `None`
    /// when only the runtime's objects and the roots lie above.
    pub dominator: Option<ObjectView>,
}

/// The big drops of a dominator tree, largest first.
#[derive(Clone, Debug, PartialEq)]
pub struct BigDropsView {
    /// The share of the heap an accumulation point retains at least.
    pub threshold: f64,
    /// The share of its retained size its largest child falls short of at least.
    pub min_drop: f64,
    /// The reachable heap's size.
    pub total_retained: u64,
    /// The accumulation points.
    pub drops: Vec<BigDrop>,
}

/// The accumulation points of the dominator tree: real objects retaining at least `threshold`
/// of the reachable heap whose largest child retains less than `1 − min_drop` of them.
///
/// This is MAT's `BigDropsQuery` walk with relative drops: MAT walks down from the root into
/// every child above its size threshold (1% of the heap) and reports a node when its retained
/// size less its largest child's exceeds that same threshold (a leaf above it counts, its drop
/// being all of it). An absolute drop of 1% reports a node of half the heap whose child keeps
/// 48%; here the drop is a share of the node itself, the rule `suspects` already walks down by
/// (`min_drop` 20%: a child keeping 80% continues the walk), and the size threshold is the
/// suspects' own, so that every suspect's accumulation point that retains that much is a big
/// drop.
///
/// # Complexity
/// O(V) for the dominator tree's children, then O(K · c) for the K nodes above the threshold
/// and their c children each.
pub fn big_drops(
    graph: &HeapGraph,
    analysis: &Analysis,
    threshold: f64,
    min_drop: f64,
) -> BigDropsView {
    let tree = &analysis.dominators;
    let root = graph.root();
    let total = tree.retained_size.get(root.index());
    let limit = (threshold * total as f64).ceil().max(1.0) as u64;
    let children = analysis.dominator_children(graph);
    let mut drops = Vec::new();
    let mut stack = vec![root.to_raw()];
    while let Some(node) = stack.pop() {
        let index = node as usize;
        let retained = tree.retained_size.get(index);
        let mut n_children = 0u64;
        let mut largest = 0u64;
        for child in children.of(index) {
            let child_retained = tree.retained_size.get(child as usize);
            n_children += 1;
            largest = largest.max(child_retained);
            if child_retained >= limit {
                stack.push(child);
            }
        }
        let Some(node_id) = graph.node(index) else {
            continue;
        };
        if graph.is_synthetic(node_id) || retained < limit {
            continue;
        }
        let drop = 1.0 - largest as f64 / retained.max(1) as f64;
        if drop < min_drop {
            continue;
        }
        drops.push(BigDrop {
            object: object_view(graph, analysis, node_id),
            share: share(retained, total),
            children: n_children,
            largest_child: largest,
            drop,
            dominator: programs_dominator(graph, analysis, node_id)
                .map(|dominator| object_view(graph, analysis, dominator)),
        });
    }
    drops.sort_by_key(|drop| {
        (
            Reverse(drop.object.retained_size.unwrap_or(0)),
            drop.object.node.to_raw(),
        )
    });
    BigDropsView {
        threshold,
        min_drop,
        total_retained: total,
        drops,
    }
}

/// The first dominator above `node` whose type is the program's own.
fn programs_dominator(graph: &HeapGraph, analysis: &Analysis, node: NodeId) -> Option<NodeId> {
    let tree = &analysis.dominators;
    let runtime = graph.meta().runtime;
    let mut current = tree.immediate_dominator(graph, node)?;
    loop {
        if current == graph.root() {
            return None;
        }
        if !graph.is_synthetic(current)
            && crate::findings::is_programs_type(graph.type_name(current), runtime)
        {
            return Some(current);
        }
        current = tree.immediate_dominator(graph, current)?;
    }
}

/// Visits the reachable real objects every dominator of which is synthetic (the root, V8's
/// root groups, frames), down the dominator tree from the root through synthetic nodes only.
///
/// Complexity: O(the synthetic nodes' children).
fn for_each_top_level_object(
    graph: &HeapGraph,
    children: &DominatorChildren,
    mut visit: impl FnMut(NodeId),
) {
    let mut stack = vec![graph.root().to_raw()];
    while let Some(parent) = stack.pop() {
        for child in children.of(parent as usize) {
            let Some(node) = graph.node(child as usize) else {
                continue;
            };
            if graph.is_synthetic(node) {
                stack.push(child);
            } else {
                visit(node);
            }
        }
    }
}

/// The chain from the root to `node` that explains it best: through a named root (a module, a
/// thread, a class) before an anonymous one ([`ChainOrder::Explain`]).
fn chain_to(graph: &HeapGraph, analysis: &Analysis, node: NodeId) -> Vec<PathStep> {
    ranked_chains(graph, analysis, node, 1, ChainOrder::Explain)
        .into_iter()
        .next()
        .map(|ranked| path_steps(graph, analysis, ranked.chain))
        .unwrap_or_default()
}

/// The types a runtime's strings have, and the edge to their character data, if separate.
fn string_types(runtime: Runtime) -> (&'static [&'static str], Option<&'static str>) {
    match runtime {
        Runtime::Java => (&["java.lang.String"], Some("value")),
        Runtime::V8 => (
            &["(string)", "(concatenated string)", "(sliced string)"],
            None,
        ),
        Runtime::Python => (&["builtins.str", "str"], None),
    }
}

/// Strings grouped by value: with `duplicates_only`, only values held by two strings or more,
/// ranked by the bytes the copies waste; otherwise every value, ranked by the bytes all its
/// strings take. At most `n` values are listed; the totals cover all.
///
/// A string's size is its own shallow size plus, for Java, its `value` array's, each array
/// counted once: strings that share an array share its bytes. An array that strings of
/// different values share (before JDK 7u6 and on Android before M, a `String` views a slice of
/// a `char[]`: hundreds of time-zone names in one array) belongs to no one value: it counts in
/// the total, not in any value's bytes. Wasted bytes are those of every copy but one: the
/// strings beyond the first, and the value's own distinct arrays beyond the first. Values are
/// compared as the dump names them: Java strings longer than 1024 characters by their first
/// 1024 and their length.
pub fn strings(graph: &HeapGraph, duplicates_only: bool, n: usize) -> StringsView {
    StringValues::of(graph).ranked(duplicates_only, n)
}

/// A dump's strings grouped by value, for [`strings`]' two rankings (one pass over the dump
/// gives both).
pub struct StringValues<'a> {
    strings: u64,
    total_bytes: u64,
    values: Vec<StringValue<'a>>,
}

/// One value's strings.
struct StringValue<'a> {
    value: &'a str,
    count: u64,
    total_bytes: u64,
    wasted_bytes: u64,
}

impl<'a> StringValues<'a> {
    /// The strings of `graph`, grouped by value ([`strings`]).
    ///
    /// Complexity: O(V) time, and O(S log S) to sort the S strings' value arrays; 4 bytes of
    /// hash table and a group per distinct value, 8 bytes per string.
    pub fn of(graph: &'a HeapGraph) -> StringValues<'a> {
        let (types, value_edge) = string_types(graph.meta().runtime);
        let type_ids: Vec<u32> = types
            .iter()
            .filter_map(|name| graph.strings().find(name))
            .map(|id| id.to_raw())
            .collect();
        #[derive(Default)]
        struct Group {
            count: u64,
            string_bytes: u64,
            array_bytes: u64,
            /// The copy kept when the others go: the largest of the value's own arrays.
            kept_array_size: u64,
        }
        // Each value's group, found through a table of group numbers hashed by the value's
        // text (4 bytes a value, where a map keyed by the text took 24), and each string's
        // value array with its value, sorted by array after the pass (8 bytes a string, where
        // a map by array took about 40): on tens of millions of objects these were most of
        // the pass's memory.
        let hash = |text: &str| {
            let mut hasher = FxHasher::default();
            hasher.write(text.as_bytes());
            hasher.finish()
        };
        let is_string =
            |node| !graph.is_synthetic(node) && type_ids.contains(&graph.type_id(node).to_raw());
        // Sized ahead: growing the table rehashed every value's text again.
        let n_strings = graph.nodes().filter(|&node| is_string(node)).count();
        let mut lookup: HashTable<u32> = HashTable::with_capacity(n_strings);
        let mut groups: Vec<(&str, Group)> = Vec::with_capacity(n_strings);
        let mut held: Vec<(u32, u32)> =
            Vec::with_capacity(if value_edge.is_some() { n_strings } else { 0 });
        let mut total_bytes = 0u64;
        for node in graph.nodes() {
            if !is_string(node) {
                continue;
            }
            let name = graph.name(node);
            let name_hash = hash(name);
            let found = lookup
                .find(name_hash, |&group| groups[group as usize].0 == name)
                .copied();
            let value = found.unwrap_or_else(|| {
                groups.push((name, Group::default()));
                let group = (groups.len() - 1) as u32;
                lookup.insert_unique(name_hash, group, |&group| hash(groups[group as usize].0));
                group
            });
            let group = &mut groups[value as usize].1;
            group.count += 1;
            group.string_bytes += graph.shallow_size(node);
            total_bytes += graph.shallow_size(node);
            if let Some(value_edge) = value_edge
                && let Some(edge) = graph
                    .edge_range(node)
                    .find(|&edge| graph.edge_name(edge) == EdgeName::Named(value_edge))
            {
                held.push((graph.edge_target(edge).to_raw(), value));
            }
        }
        drop(lookup);
        // Each array once: its bytes in the total, and in its value's unless strings of
        // different values share it.
        held.par_sort_unstable();
        for run in held.chunk_by(|a, b| a.0 == b.0) {
            let (array, value) = run[0];
            let size = graph.shallow_size(graph.node(array as usize).unwrap_or(graph.root()));
            total_bytes += size;
            if run.iter().all(|&(_, other)| other == value) {
                let group = &mut groups[value as usize].1;
                group.kept_array_size = group.kept_array_size.max(size);
                group.array_bytes += size;
            }
        }
        drop(held);
        let values = groups
            .into_iter()
            .map(|(value, group)| {
                let string_size = group.string_bytes / group.count.max(1);
                StringValue {
                    value,
                    count: group.count,
                    total_bytes: group.string_bytes + group.array_bytes,
                    wasted_bytes: group.string_bytes - string_size + group.array_bytes
                        - group.kept_array_size,
                }
            })
            .collect();
        StringValues {
            strings: n_strings as u64,
            total_bytes,
            values,
        }
    }

    /// The first `n` values in [`strings`]' ranking, with the totals of all.
    ///
    /// Complexity: O(D) time for D distinct values, and O(n log n) to order the listed ones.
    pub fn ranked(&self, duplicates_only: bool, n: usize) -> StringsView {
        let duplicated_values = self.values.iter().filter(|row| row.count > 1).count() as u64;
        let wasted_bytes = self.values.iter().map(|row| row.wasted_bytes).sum();
        // Most bytes first, then most copies, then the value: a total order, so the first n
        // are found by a partial selection and only they are sorted and copied.
        let key = |row: &StringValue<'a>| {
            let bytes = if duplicates_only {
                row.wasted_bytes
            } else {
                row.total_bytes
            };
            (Reverse(bytes), Reverse(row.count), row.value)
        };
        let mut rows: Vec<&StringValue> = self
            .values
            .iter()
            .filter(|row| !duplicates_only || row.count > 1)
            .collect();
        if rows.len() > n && n > 0 {
            rows.select_nth_unstable_by(n - 1, |a, b| key(a).cmp(&key(b)));
        }
        rows.truncate(n);
        rows.sort_unstable_by(|a, b| key(a).cmp(&key(b)));
        StringsView {
            strings: self.strings,
            total_bytes: self.total_bytes,
            distinct_values: self.values.len() as u64,
            duplicated_values,
            wasted_bytes,
            values: rows
                .into_iter()
                .map(|row| DuplicateString {
                    value: row.value.to_owned(),
                    count: row.count,
                    total_bytes: row.total_bytes,
                    wasted_bytes: row.wasted_bytes,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::MOST_DESCENTS;
    use crate::{EdgeRule, Options, analyze};
    use heapgraph_model::{EdgeKind, Runtime};
    use heapgraph_test_support::graph_from_edges;

    /// A type's group names the first in node order of its largest top-level instances, in
    /// whatever order the walk down the synthetic nodes meets them: here the root's own child
    /// `B` (node 3) before `A` (node 2), found below a second synthetic node.
    #[test]
    fn a_groups_largest_is_the_first_of_those_as_large() {
        use heapgraph_model::{GraphMeta, HeapGraphParts, StringTable};
        let mut strings = StringTable::new();
        let [root, gc_roots, item] = ["(root)", "(GC roots)", "Item"].map(|t| strings.intern(t));
        let parts = HeapGraphParts {
            node_object_id: (1..=4u64).collect(),
            node_kind: vec![0u8, 0, 1, 1].into(),
            node_type: vec![root, gc_roots, item, item].into(),
            node_name: vec![root, gc_roots, item, item].into(),
            node_shallow_size: vec![0u64, 0, 10, 10].into(),
            first_edge: vec![0u64, 2, 3, 3, 3].into(),
            edge_to: vec![1, 3, 2],
            edge_kind: vec![EdgeKind::Property; 3].into(),
            edge_name: vec![gc_roots.to_raw(), item.to_raw(), item.to_raw()].into(),
            node_kinds: heapgraph_test_support::root_and_object_kinds(),
            root: 0,
        };
        let graph =
            HeapGraph::from_parts(GraphMeta::new(Runtime::Java, "test"), strings, parts).unwrap();
        let options = Options {
            edge_rule: EdgeRule::for_runtime(Runtime::Java),
        };
        let analysis = analyze(&graph, &options);
        let groups = top_level_groups(&graph, &analysis);
        let (count, retained, largest) = groups.0[&item.to_raw()];
        assert_eq!((count, retained, largest.index()), (2, 20, 2));
    }

    /// The walk below an accumulation point cut into parts as finely as it goes (a run of one
    /// node, the largest child descended into at every level) tallies what one walk tallies,
    /// largest instances included, on random graphs whose four types nest in one another.
    #[test]
    fn a_walk_in_parts_tallies_as_one_walk() {
        let mut lcg = heapgraph_test_support::Lcg::new(0x9e37_79b9_7f4a_7c15u64);
        let mut next = |bound: u64| lcg.below(bound);
        let options = Options {
            edge_rule: EdgeRule::for_runtime(Runtime::Java),
        };
        let mut split = 0;
        for _ in 0..300 {
            let n_nodes = 2 + next(120) as u32;
            let sizes: Vec<u64> = (0..n_nodes).map(|_| 1 + next(4)).collect();
            // A tree from the root, so that most nodes are reached, then edges anywhere.
            let mut edges: Vec<(u32, u32, EdgeKind)> = (1..n_nodes)
                .map(|to| (next(u64::from(to)) as u32, to, EdgeKind::Property))
                .collect();
            for _ in 0..next(u64::from(n_nodes)) {
                let (from, to) = (next(u64::from(n_nodes)), next(u64::from(n_nodes)));
                edges.push((from as u32, to as u32, EdgeKind::Property));
            }
            let graph = graph_from_edges(&sizes, &edges);
            let analysis = analyze(&graph, &options);
            let (tree, children) = (&analysis.dominators, analysis.dominator_children(&graph));
            for point in graph.nodes() {
                let one = walk_parts(tree, children, point, 1, u32::MAX);
                let parts = walk_parts(tree, children, point, 4, 1);
                split += usize::from(parts.len() > 1);
                assert_eq!(
                    tally_parts(&graph, tree, children, point, parts),
                    tally_parts(&graph, tree, children, point, one),
                    "below {point:?} of {edges:?}"
                );
            }
        }
        assert!(split > 1000, "only {split} walks were cut into parts");
        // A chain of 200,000 links is descended a few levels only, and still tallied whole.
        let n_nodes = 200_000u32;
        let sizes = vec![1; n_nodes as usize];
        let edges: Vec<(u32, u32, EdgeKind)> = (1..n_nodes)
            .map(|to| (to - 1, to, EdgeKind::Property))
            .collect();
        let graph = graph_from_edges(&sizes, &edges);
        let analysis = analyze(&graph, &options);
        let (tree, children) = (&analysis.dominators, analysis.dominator_children(&graph));
        let point = graph.root();
        let parts = walk_parts(tree, children, point, 4, 1);
        assert!(
            parts.len() <= 2 * MOST_DESCENTS + 2,
            "{} parts",
            parts.len()
        );
        let one = walk_parts(tree, children, point, 1, u32::MAX);
        assert_eq!(
            tally_parts(&graph, tree, children, point, parts),
            tally_parts(&graph, tree, children, point, one)
        );
    }

    /// The type totals' walk from the root, cut into parts as finely as it goes, tallies below
    /// each of some disjoint points what a walk below each point alone tallies (largest
    /// instances included), and its totals are those of a walk with no points; on random
    /// graphs with points chosen anywhere.
    #[test]
    fn the_type_totals_walk_tallies_below_points_as_walks_below_each() {
        use crate::histogram::{type_counts, type_totals_and_tallies};
        let mut lcg = heapgraph_test_support::Lcg::new(0x5eed_0f7a);
        let rule = EdgeRule::for_runtime(Runtime::Java);
        let mut tallied = 0;
        for round in 0..200 {
            let graph = heapgraph_test_support::long_lines(&mut lcg, round % 2 == 0);
            let analysis = analyze(
                &graph,
                &Options {
                    edge_rule: rule.clone(),
                },
            );
            let (tree, children) = (&analysis.dominators, analysis.dominator_children(&graph));
            // Points anywhere, none below another: a node is taken unless one of its
            // dominators was.
            let mut points: Vec<u32> = Vec::new();
            let mut chosen = vec![false; graph.node_count()];
            for node in graph.nodes() {
                if !tree.reachable[node.index()] || lcg.below(6) != 0 {
                    continue;
                }
                let mut above = tree.immediate_dominator(&graph, node);
                let mut free = true;
                while let Some(dominator) = above {
                    free &= !chosen[dominator.index()];
                    above = tree.immediate_dominator(&graph, dominator);
                }
                let below_one = points.iter().any(|&point| {
                    let mut above =
                        tree.immediate_dominator(&graph, graph.node(point as usize).unwrap());
                    while let Some(dominator) = above {
                        if dominator == node {
                            return true;
                        }
                        above = tree.immediate_dominator(&graph, dominator);
                    }
                    false
                });
                if free && !below_one {
                    chosen[node.index()] = true;
                    points.push(node.to_raw());
                }
            }
            points.sort_unstable();
            let every = |_: usize| true;
            let in_parts = |points: &[u32], threads: u32, split_from: u32| {
                let counted = type_counts(&graph, &every);
                let parts = walk_parts(tree, children, graph.root(), threads, split_from);
                let (types, mut totals) = counted;
                let below = crate::histogram::add_retained(
                    &graph,
                    tree,
                    children,
                    &types,
                    &mut totals,
                    points,
                    parts,
                );
                (totals, below)
            };
            let (plain, _) =
                type_totals_and_tallies(&graph, tree, children, type_counts(&graph, &every), &[]);
            let (totals, below) = in_parts(&points, 4, 1);
            assert_eq!(totals, plain, "round {round}");
            for (&point, walked) in points.iter().zip(below) {
                let point = graph.node(point as usize).unwrap();
                let alone = walk_parts(tree, children, point, 1, u32::MAX);
                assert_eq!(
                    accumulated_rows(&graph, tree, point, walked),
                    tally_parts(&graph, tree, children, point, alone),
                    "round {round}, below {point:?}"
                );
                tallied += 1;
            }
        }
        assert!(tallied > 500, "only {tallied} points tallied");
    }

    /// `summary_and_suspects` shows what `summary` and `suspects` show, each alone, with and
    /// without a kind, on random graphs whose suspects have accumulation points, whether the
    /// type counts were found beside the dominator pass or not.
    #[test]
    fn summary_and_suspects_together_are_each_alone() {
        let mut lcg = heapgraph_test_support::Lcg::new(0x00c0_ffee);
        let options = Options {
            edge_rule: EdgeRule::for_runtime(Runtime::Java),
        };
        let mut accumulated = 0;
        for round in 0..100 {
            let mut graph = heapgraph_test_support::long_lines(&mut lcg, round % 2 == 0);
            let kinds: Vec<String> = (graph.parts().node_kinds.iter())
                .map(|info| info.name.clone())
                .collect();
            for kind in std::iter::once(None).chain(kinds.iter().map(|kind| Some(kind.as_str()))) {
                // Half the time with the type counts found beside the dominator pass.
                let together = if round % 2 == 0 {
                    analyze(&graph, &options)
                } else {
                    crate::analyze_before_chains(&mut graph, &options, crate::ViewDistances::Shown)
                };
                let alone = analyze(&graph, &options);
                let (view, found) =
                    crate::summary_and_suspects(&graph, &together, kind, 0.05).expect("a kind");
                let view_alone = match kind {
                    None => crate::summary(&graph, &alone),
                    Some(kind) => crate::summary_of_kind(&graph, &alone, kind).expect("a kind"),
                };
                assert_eq!(view, view_alone, "round {round}, {kind:?}");
                assert_eq!(
                    found,
                    suspects(&graph, &alone, 0.05),
                    "round {round}, {kind:?}"
                );
                // Again, the totals now known.
                let again = crate::summary_and_suspects(&graph, &together, kind, 0.05);
                assert_eq!(
                    again,
                    Some((view, found.clone())),
                    "round {round}, {kind:?}"
                );
                accumulated += found
                    .suspects
                    .iter()
                    .filter(|suspect| !suspect.accumulated.is_empty())
                    .count();
            }
        }
        assert!(
            accumulated > 100,
            "only {accumulated} suspects with types below"
        );
    }

    /// The first n of the partial selection are the first n of a full sort, for every n, with
    /// ties on bytes and counts broken by the value.
    #[test]
    fn ranked_strings_are_the_first_of_a_full_sort() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        let texts: Vec<String> = (0..300).map(|i| format!("v{i}")).collect();
        let values = StringValues {
            strings: 0,
            total_bytes: 0,
            values: texts
                .iter()
                .map(|text| StringValue {
                    value: text,
                    count: 1 + next(3),
                    total_bytes: 8 * next(6),
                    wasted_bytes: 8 * next(4),
                })
                .collect(),
        };
        for duplicates_only in [false, true] {
            let mut expected: Vec<&StringValue> = values
                .values
                .iter()
                .filter(|row| !duplicates_only || row.count > 1)
                .collect();
            expected.sort_by_key(|row| {
                let bytes = if duplicates_only {
                    row.wasted_bytes
                } else {
                    row.total_bytes
                };
                (Reverse(bytes), Reverse(row.count), row.value)
            });
            for n in [0, 1, 2, 17, 150, 299, 300, 1000] {
                let view = values.ranked(duplicates_only, n);
                let listed: Vec<&str> = view.values.iter().map(|row| row.value.as_str()).collect();
                let want: Vec<&str> = expected.iter().take(n).map(|row| row.value).collect();
                assert_eq!(listed, want, "duplicates_only {duplicates_only}, n {n}");
            }
        }
    }
}
