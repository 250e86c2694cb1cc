//! Distance from the root of every node, by breadth-first search.
//!
//! For V8 the rules are Chrome DevTools' (`HeapSnapshot.calculateDistances` with
//! `JSHeapSnapshot`'s edge filter): user roots (the non-synthetic targets of the root's edges,
//! such as the global object, and a browser's `(Document DOM trees)`) are searched first at
//! distance 1; everything they do not reach
//! is then searched from the root, whose distance is [`BASE_SYSTEM_DISTANCE`] in that pass.
//! Only weak edges are skipped (shortcuts count), plus the filter's few engine links. Other
//! runtimes use one search over the retaining edges of their [`EdgeRule`].

use crate::NO_DISTANCE;
use crate::edge_rule::{EdgeRule, StrongEdges};
use crate::merged_paths::Bits;
use heapgraph_model::{EdgeKind, EdgeName, HeapGraph, HeapGraphParts, prefetch};

/// DevTools' distance of the root in its second, system-roots pass: nodes reached only from
/// system roots have distances at or above it.
pub const BASE_SYSTEM_DISTANCE: u32 = 100_000_000;

/// Distances from the root, per node; [`NO_DISTANCE`] where the search does not reach.
///
/// # Complexity
/// O(V + E) time, O(V) auxiliary space (the queue).
pub fn bfs_distances(graph: &HeapGraph, rule: &EdgeRule) -> Vec<u32> {
    if rule.devtools_distances {
        devtools_distances(graph)
    } else {
        strong_distances(graph, rule)
    }
}

/// Plain breadth-first distances over the retaining edges.
pub(crate) fn strong_distances(graph: &HeapGraph, rule: &EdgeRule) -> Vec<u32> {
    let strong = StrongEdges::new(graph, rule);
    distances_over(graph, |from, edge, to| strong.retains(from, edge, to))
}

/// Plain breadth-first distances from the root over the edges `follows` keeps.
pub(crate) fn distances_over(
    graph: &HeapGraph,
    follows: impl FnMut(u32, usize, u32) -> bool,
) -> Vec<u32> {
    let mut distance = vec![NO_DISTANCE; graph.node_count()];
    let root = graph.root().to_raw();
    distance[root as usize] = 0;
    let mut queue = vec![root];
    bfs(graph, &mut distance, &mut queue, follows);
    distance
}

fn devtools_distances(graph: &HeapGraph) -> Vec<u32> {
    let parts = graph.parts();
    let mut filter = DevToolsFilter::new(graph);
    let mut follows = |from: u32, edge: usize, _to: u32| {
        parts.edge_kind[edge] != EdgeKind::Weak && filter.allows(graph, from, edge)
    };
    let mut distance = vec![NO_DISTANCE; graph.node_count()];
    let mut queue: Vec<u32> = Vec::with_capacity(graph.node_count().min(1 << 20));
    let root = graph.root();
    for edge in graph.edge_range(root) {
        let to = parts.edge_to[edge];
        let node = graph.node(to as usize).unwrap_or(root);
        // DevTools' `isUserRoot`: any non-synthetic target, and a browser's DOM trees.
        if !graph.is_synthetic(node) || graph.name(node) == "(Document DOM trees)" {
            distance[to as usize] = 1;
            queue.push(to);
        }
    }
    let found_user_roots = !queue.is_empty();
    bfs(graph, &mut distance, &mut queue, &mut follows);
    distance[root.index()] = if found_user_roots {
        BASE_SYSTEM_DISTANCE
    } else {
        0
    };
    queue.clear();
    queue.push(root.to_raw());
    bfs(graph, &mut distance, &mut queue, &mut follows);
    distance
}

/// Breadth-first search from the nodes in `queue` (their distances already set), giving each
/// unvisited target one more than its source. `follows` is asked only about edges into
/// unvisited nodes, in search order (DevTools' filter keeps state, so the order matters).
fn bfs(
    graph: &HeapGraph,
    distance: &mut [u32],
    queue: &mut Vec<u32>,
    mut follows: impl FnMut(u32, usize, u32) -> bool,
) {
    let parts = graph.parts();
    let targets = graph.edge_targets();
    // A bit per node says which were reached: it stays in cache, where the distances would
    // cost a miss per reference.
    let mut reached = Bits::new(distance.len());
    for (node, &at) in distance.iter().enumerate() {
        if at != NO_DISTANCE {
            reached.set(node);
        }
    }
    let mut head = 0;
    while head < queue.len() {
        prefetch_queued(parts, &targets, queue, head);
        let node = queue[head];
        head += 1;
        let next = distance[node as usize] + 1;
        let range = parts.first_edge.range(node as usize);
        for edge in range {
            let to = targets[edge];
            if !reached.get(to as usize) && follows(node, edge, to) {
                reached.set(to as usize);
                distance[to as usize] = next;
                queue.push(to);
            }
        }
    }
}

/// How far ahead of a breadth-first search's head the offsets of a queued node's references
/// are hinted, and how far its first references and their kinds: a node's references lie
/// anywhere in the columns, and by the time the search reaches it the hints have brought them
/// in (without the kinds', the chain parents' search stalled on the kind of each reference
/// into a node not yet reached: 29% of its samples on `app-rhino-acorn`).
const OFFSETS_AHEAD: usize = 16;
const REFERENCES_AHEAD: usize = 8;

/// Hints the memory a breadth-first search will read for the nodes queued after `head`, whose
/// references' targets are `targets`.
#[inline]
pub(crate) fn prefetch_queued(parts: &HeapGraphParts, targets: &[u32], queue: &[u32], head: usize) {
    if let Some(&ahead) = queue.get(head + OFFSETS_AHEAD) {
        parts.first_edge.prefetch(ahead as usize);
    }
    if let Some(&ahead) = queue.get(head + REFERENCES_AHEAD) {
        let first = parts.first_edge.get(ahead as usize) as usize;
        prefetch(targets, first);
        parts.edge_kind.prefetch(first);
    }
}

/// `JSHeapSnapshot`'s distance filter: skips descriptor-array links that maps share, the
/// native context's `sloppy_function_map`, and the first-seen of the two edges V8 writes to
/// each WeakMap value (one from the key, one from the table), so that a value's distance
/// follows whichever of key and table is reached last (crbug.com/1290800).
struct DevToolsFilter<'g> {
    hidden_kind: Option<u8>,
    array_kind: Option<u8>,
    /// The shared part of ephemeron edge names seen once so far.
    pending_ephemerons: rustc_hash::FxHashSet<&'g str>,
}

impl<'g> DevToolsFilter<'g> {
    fn new(graph: &HeapGraph) -> Self {
        let kinds = &graph.parts().node_kinds;
        let find = |name: &str| {
            kinds
                .iter()
                .position(|kind| kind.name == name)
                .map(|i| i as u8)
        };
        DevToolsFilter {
            hidden_kind: find("hidden"),
            array_kind: find("array"),
            pending_ephemerons: Default::default(),
        }
    }

    #[inline]
    fn allows(&mut self, graph: &'g HeapGraph, node: u32, edge: usize) -> bool {
        let parts = graph.parts();
        let kind = Some(parts.node_kind[node as usize]);
        if kind == self.hidden_kind || kind == self.array_kind {
            let node_id = graph.node(node as usize).unwrap_or(graph.root());
            let name = graph.name(node_id);
            if kind == self.hidden_kind
                && name == "system / NativeContext"
                && graph.edge_name(edge) == EdgeName::Named("sloppy_function_map")
            {
                return false;
            }
            if kind == self.array_kind && name == "(map descriptors)" {
                let index = match graph.edge_name(edge) {
                    EdgeName::Index(index) => Some(index),
                    EdgeName::Named(text) => text.parse::<u32>().ok(),
                };
                // DevTools: `index < 2 || (index % 3) !== 1`; a name that is not a number
                // compares false on both sides in JavaScript, so the edge is skipped.
                return index.is_some_and(|index| index < 2 || index % 3 != 1);
            }
        }
        if parts.edge_kind[edge] == EdgeKind::Internal
            && let EdgeName::Named(edge_name) = graph.edge_name(edge)
            && let Some(shared) = ephemeron_shared_part(edge_name)
            && !self.pending_ephemerons.remove(shared)
        {
            self.pending_ephemerons.insert(shared);
            return false;
        }
        true
    }
}

/// For an edge named like V8's WeakMap entries,
/// `12 / part of key (Object @5) -> value (Object @7) pair in WeakMap (table @9)`, the part
/// after the leading number, which the key's edge and the table's edge share; DevTools'
/// pattern is `^\d+( \/ part of key \(.*? @\d+\) -> value \(.*? @\d+\) pair in WeakMap
/// \(table @\d+\))$`.
fn ephemeron_shared_part(name: &str) -> Option<&str> {
    let digits = name.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || !name.ends_with(')') {
        return None;
    }
    let shared = &name[digits..];
    let rest = shared.strip_prefix(" / part of key (")?;
    let (key_and_value, table) = rest.rsplit_once(") pair in WeakMap (table @")?;
    let table_id = table.strip_suffix(')')?;
    if !is_number(table_id) {
        return None;
    }
    // `(.*? @\d+\) -> value \(.*? @\d+` : some split at ") -> value (" must leave both
    // sides ending in " @<digits>".
    let ends_with_id = |text: &str| text.rsplit_once(" @").is_some_and(|(_, id)| is_number(id));
    let matched = key_and_value
        .match_indices(") -> value (")
        .any(|(at, sep)| {
            ends_with_id(&key_and_value[..at]) && ends_with_id(&key_and_value[at + sep.len()..])
        });
    matched.then_some(shared)
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// The number of edges on the chain DevTools measured: its system-pass distances count from
/// [`BASE_SYSTEM_DISTANCE`].
pub fn edges_from_root(raw_distance: u32) -> Option<u32> {
    match raw_distance {
        NO_DISTANCE => None,
        d if d >= BASE_SYSTEM_DISTANCE => Some(d - BASE_SYSTEM_DISTANCE),
        d => Some(d),
    }
}

#[cfg(test)]
mod tests {
    use super::ephemeron_shared_part;

    #[test]
    fn ephemeron_edge_names_share_their_tail() {
        let key_side =
            "3 / part of key (Object @5) -> value (Object @7) pair in WeakMap (table @9)";
        let table_side =
            "4 / part of key (Object @5) -> value (Object @7) pair in WeakMap (table @9)";
        assert_eq!(
            ephemeron_shared_part(key_side),
            ephemeron_shared_part(table_side)
        );
        assert!(ephemeron_shared_part(key_side).is_some());
        assert_eq!(ephemeron_shared_part("map"), None);
        assert_eq!(
            ephemeron_shared_part("3 / part of key (Object @5) pair in WeakMap (table @9)"),
            None
        );
        assert_eq!(
            ephemeron_shared_part(
                "x / part of key (A @5) -> value (B @7) pair in WeakMap (table @9)"
            ),
            None
        );
    }
}
