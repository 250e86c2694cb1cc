//! memlab's three-snapshot method: objects allocated between the baseline and the target that
//! are still alive in the final snapshot, matched by object id (V8 ids stay with their object
//! within one process), grouped by retainer-path signature in the final snapshot.

use crate::Analysis;
use crate::diff::{signature_steps, signature_text, signatures};
use crate::queries::object_view;
use crate::view::ObjectView;
use heapgraph_model::{HeapGraph, NodeId, Runtime};
use rustc_hash::{FxHashMap, FxHashSet};

/// Leaked objects that share a retainer-path signature.
#[derive(Clone, Debug)]
pub struct LeakCluster {
    /// The path from the root, as [`crate::diff::HolderDelta::signature`].
    pub signature: String,
    /// The same path as steps, the root first.
    pub path: Vec<crate::findings::HolderStep>,
    /// Leaked objects with this signature.
    pub count: u64,
    /// Their retained sizes in the final snapshot, summed.
    pub retained_size: u64,
    /// The one that retains the most.
    pub representative: ObjectView,
}

/// Leaked objects by node type and name, as memlab's "Alive objects allocated in target page".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeakKind {
    /// The object's name (V8: the constructor name, or the node's own name).
    pub name: String,
    /// The node kind (V8's node type).
    pub kind: String,
    /// How many.
    pub count: u64,
    /// Their retained sizes, summed.
    pub retained_size: u64,
}

/// The result of [`leaks`].
#[derive(Clone, Debug)]
pub struct LeaksView {
    /// Objects new in the target and alive in the final snapshot, before any filter.
    pub leaked: u64,
    /// Clusters by signature, the largest retained size first (then by signature).
    pub clusters: Vec<LeakCluster>,
    /// By name and kind, the largest retained size first (then by name and kind).
    pub kinds: Vec<LeakKind>,
}

/// Whether memlab would show the node (its `isDebuggableNode`): V8's engine internals, arrays,
/// strings, numbers, code and contexts are left out, and native objects. Other runtimes keep
/// every real object.
fn debuggable(graph: &HeapGraph, node: NodeId) -> bool {
    if graph.meta().runtime != Runtime::V8 {
        return true;
    }
    let kind = graph.kind(node).name.as_str();
    !matches!(
        kind,
        "native"
            | "hidden"
            | "array"
            | "string"
            | "number"
            | "concatenated string"
            | "sliced string"
            | "code"
    ) && graph.name(node) != "system / Context"
}

/// The leaks of `final_` (analysed as `analysis`): objects whose ids are in `target` and not in
/// `baseline`. At most `n` clusters are kept (all kinds).
///
/// Complexity: O(V + E) for the final snapshot, O(V) for the others.
pub fn leaks(
    baseline: &HeapGraph,
    target: &HeapGraph,
    final_: &HeapGraph,
    analysis: &Analysis,
    n: usize,
) -> LeaksView {
    let baseline_ids: FxHashSet<u64> = baseline.parts().node_object_id.iter().collect();
    let new_in_target: FxHashSet<u64> = target
        .parts()
        .node_object_id
        .iter()
        .filter(|id| !baseline_ids.contains(id))
        .collect();
    drop(baseline_ids);
    let leaked: Vec<NodeId> = final_
        .nodes()
        .filter(|&node| new_in_target.contains(&final_.object_id(node)))
        .collect();
    let retained = &analysis.dominators.retained_size;
    let mut kinds: FxHashMap<(String, String), (u64, u64)> = FxHashMap::default();
    for &node in &leaked {
        if !debuggable(final_, node) {
            continue;
        }
        let entry = kinds
            .entry((final_.name(node).to_owned(), final_.kind(node).name.clone()))
            .or_default();
        entry.0 += 1;
        entry.1 += retained.get(node.index());
    }
    let mut kinds: Vec<LeakKind> = kinds
        .into_iter()
        .map(|((name, kind), (count, retained_size))| LeakKind {
            name,
            kind,
            count,
            retained_size,
        })
        .collect();
    kinds.sort_by(|a, b| {
        b.retained_size
            .cmp(&a.retained_size)
            .then_with(|| (&a.name, &a.kind).cmp(&(&b.name, &b.kind)))
    });

    let signatures = signatures(final_, analysis);
    let mut clusters: FxHashMap<u64, (u64, u64, NodeId)> = FxHashMap::default();
    for &node in &leaked {
        let hash = signatures.hash[node.index()];
        if hash == 0 || !debuggable(final_, node) || final_.is_synthetic(node) {
            continue;
        }
        let size = retained.get(node.index());
        let entry = clusters.entry(hash).or_insert((0, 0, node));
        entry.0 += 1;
        entry.1 += size;
        if size > retained.get(entry.2.index()) {
            entry.2 = node;
        }
    }
    let mut clusters: Vec<LeakCluster> = clusters
        .into_values()
        .map(|(count, retained_size, node)| {
            let path = signature_steps(final_, &signatures, node.to_raw());
            LeakCluster {
                signature: signature_text(&path),
                path,
                count,
                retained_size,
                representative: object_view(final_, analysis, node),
            }
        })
        .collect();
    clusters.sort_by(|a, b| {
        b.retained_size
            .cmp(&a.retained_size)
            .then_with(|| a.signature.cmp(&b.signature))
    });
    clusters.truncate(n);
    LeaksView {
        leaked: leaked.len() as u64,
        clusters,
        kinds,
    }
}
