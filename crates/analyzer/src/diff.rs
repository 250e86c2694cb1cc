//! What grew between two heap dumps, by type: counts, shallow and retained sizes before and
//! after, as objgraph's `show_growth` does by count, with the sizes it never had.

use crate::Analysis;
use crate::edge_rule::StrongEdges;
use crate::findings::HolderStep;
use crate::view::RankBy;
use heapgraph_model::{EdgeName, HeapGraph, Runtime, StringId, TypeTotals};
use rustc_hash::{FxHashMap, FxHasher};
use std::cmp::Reverse;
use std::hash::{Hash, Hasher};

/// One type's change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeDelta {
    /// The type, as the dumps name it.
    pub type_name: String,
    /// Objects before and after.
    pub count_before: u64,
    /// See `count_before`.
    pub count_after: u64,
    /// Shallow bytes before and after.
    pub shallow_before: u64,
    /// See `shallow_before`.
    pub shallow_after: u64,
    /// Retained bytes before and after (each byte once per type).
    pub retained_before: u64,
    /// See `retained_before`.
    pub retained_after: u64,
}

impl TypeDelta {
    /// `count_after - count_before`.
    pub fn count_delta(&self) -> i64 {
        delta(self.count_before, self.count_after)
    }
    /// `shallow_after - shallow_before`.
    pub fn shallow_delta(&self) -> i64 {
        delta(self.shallow_before, self.shallow_after)
    }
    /// `retained_after - retained_before`.
    pub fn retained_delta(&self) -> i64 {
        delta(self.retained_before, self.retained_after)
    }
}

fn delta(before: u64, after: u64) -> i64 {
    let signed = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
    signed(after) - signed(before)
}

/// Totals of one dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpTotals {
    /// Real objects.
    pub objects: u64,
    /// Their shallow sizes.
    pub shallow: u64,
    /// Bytes reachable from the root (the root's retained size).
    pub reachable: u64,
}

/// Two dumps compared by type.
#[derive(Clone, Debug)]
pub struct GraphDiffView {
    /// The runtime of the newer dump, whose rules name holders.
    pub runtime: Runtime,
    /// The older dump's totals.
    pub before: DumpTotals,
    /// The newer dump's totals.
    pub after: DumpTotals,
    /// Every type of either dump, the largest change by `by` first.
    pub types: Vec<TypeDelta>,
    /// Holders matched across the dumps by retainer-path signature, the largest change first.
    pub holders: Vec<HolderDelta>,
}

/// How a holder changed between the dumps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HolderStatus {
    /// Only in the newer dump.
    New,
    /// Only in the older dump.
    Gone,
    /// Retains more.
    Grown,
    /// Retains less.
    Shrunk,
    /// Retains the same.
    Same,
}

impl HolderStatus {
    /// The name used in output.
    pub fn name(self) -> &'static str {
        match self {
            HolderStatus::New => "new",
            HolderStatus::Gone => "gone",
            HolderStatus::Grown => "grown",
            HolderStatus::Shrunk => "shrunk",
            HolderStatus::Same => "same",
        }
    }
}

/// The objects at one retainer-path signature (the types and edge names on the first
/// breadth-first path from the root, array indices left out), in both dumps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderDelta {
    /// `(root).module __main__ → module.__dict__ → dict.cache → __main__.SessionCache`.
    pub signature: String,
    /// The same path as steps, the root first.
    pub path: Vec<HolderStep>,
    /// New, gone, grown, shrunk or the same.
    pub status: HolderStatus,
    /// Objects with this signature before and after.
    pub count_before: u64,
    /// See `count_before`.
    pub count_after: u64,
    /// Their retained sizes, summed, before and after.
    pub retained_before: u64,
    /// See `retained_before`.
    pub retained_after: u64,
    /// The signature of what holds them (their breadth-first parent's); `None` under the root.
    pub container: Option<String>,
}

impl HolderDelta {
    /// `retained_after - retained_before`.
    pub fn retained_delta(&self) -> i64 {
        delta(self.retained_before, self.retained_after)
    }
}

/// Signatures of one dump: per node its signature hash (0: not reached) and its breadth-first
/// parent and edge, and per signature hash the objects' count, retained sum and the node that
/// retains the most.
pub(crate) struct Signatures {
    pub(crate) hash: Vec<u64>,
    parent: Vec<(u32, u32)>,
    totals: FxHashMap<u64, (u64, u64, u32)>,
}

/// Whether an edge name is a slot number (V8 names a hash table's slots `"341"`), or no name
/// at all (a Python set's members): slots are written `[]` in signatures, so that one
/// container's entries share one.
fn is_slot(name: &str) -> bool {
    name.bytes().all(|b| b.is_ascii_digit())
}

fn text_hash(text: &str) -> u64 {
    let mut hasher = FxHasher::default();
    text.hash(&mut hasher);
    hasher.finish()
}

/// The breadth-first tree over retaining edges, each node's signature hashed from its parent's,
/// its type and the edge's name (indices as `[]`, so that list slots match across dumps).
///
/// Complexity: O(V + E) time, O(V) space.
pub(crate) fn signatures(graph: &HeapGraph, analysis: &Analysis) -> Signatures {
    let n = graph.node_count();
    let strong = StrongEdges::new(graph, &analysis.edge_rule);
    let mut text_hashes: FxHashMap<StringId, u64> = FxHashMap::default();
    let mut type_hash = |id: StringId| {
        *text_hashes
            .entry(id)
            .or_insert_with(|| text_hash(graph.strings().get(id)))
    };
    let mut hash = vec![0u64; n];
    let mut parent = vec![(u32::MAX, 0u32); n];
    let root = graph.root();
    hash[root.index()] = text_hash("(root)") | 1;
    let mut queue = std::collections::VecDeque::from([root.to_raw()]);
    while let Some(from) = queue.pop_front() {
        let from_node = graph.node(from as usize).unwrap_or(root);
        for edge in graph.edge_range(from_node) {
            let to = graph.parts().edge_to[edge];
            if hash[to as usize] != 0 || !strong.retains(from, edge, to) {
                continue;
            }
            let edge_hash = match graph.edge_name(edge) {
                EdgeName::Named(name) if !is_slot(name) => text_hash(name),
                _ => text_hash("[]"),
            };
            let to_node = graph.node(to as usize).unwrap_or(root);
            let mut hasher = FxHasher::default();
            (
                hash[from as usize],
                edge_hash,
                type_hash(graph.type_id(to_node)),
            )
                .hash(&mut hasher);
            // 0 marks "not reached".
            hash[to as usize] = hasher.finish() | 1;
            parent[to as usize] = (from, edge as u32);
            queue.push_back(to);
        }
    }
    let mut totals: FxHashMap<u64, (u64, u64, u32)> = FxHashMap::default();
    let tree = &analysis.dominators;
    for node in graph.nodes() {
        let sig = hash[node.index()];
        if sig == 0 || graph.is_synthetic(node) {
            continue;
        }
        let retained = tree.retained_size.get(node.index());
        let entry = totals.entry(sig).or_insert((0, 0, node.to_raw()));
        entry.0 += 1;
        entry.1 += retained;
        if retained > tree.retained_size.get(entry.2 as usize) {
            entry.2 = node.to_raw();
        }
    }
    Signatures {
        hash,
        parent,
        totals,
    }
}

/// The steps of `node`'s signature, from the root down: types (`builtins.` left out), and the
/// edges as signatures write them (a slot as `[]`).
pub(crate) fn signature_steps(
    graph: &HeapGraph,
    signatures: &Signatures,
    node: u32,
) -> Vec<HolderStep> {
    let type_of = |raw: u32| {
        let name = graph
            .node(raw as usize)
            .map_or("?", |node| graph.type_name(node));
        name.strip_prefix("builtins.").unwrap_or(name).to_owned()
    };
    let mut steps: Vec<HolderStep> = Vec::new();
    let mut at = node;
    while signatures.parent[at as usize].0 != u32::MAX {
        let (from, edge) = signatures.parent[at as usize];
        steps.push(HolderStep {
            type_name: type_of(at),
            label: None,
            edge: Some(match graph.edge_name(edge as usize) {
                EdgeName::Named(name) if !is_slot(name) => name.to_owned(),
                _ => "[]".to_owned(),
            }),
            edge_kind: Some(graph.edge_kind(edge as usize).name()),
        });
        at = from;
    }
    steps.push(HolderStep {
        type_name: "(root)".to_owned(),
        label: None,
        edge: None,
        edge_kind: None,
    });
    steps.reverse();
    steps
}

/// A path's text as signatures write it: `(root).module m → module.__dict__ → dict`.
pub fn signature_text(steps: &[HolderStep]) -> String {
    let mut text = String::new();
    for (i, step) in steps.iter().enumerate() {
        text.push_str(&step.type_name);
        if let Some(next) = steps.get(i + 1) {
            match next.edge.as_deref() {
                Some(edge) if edge != "[]" => {
                    text.push('.');
                    text.push_str(edge);
                }
                _ => text.push_str("[]"),
            }
            text.push_str(" → ");
        }
    }
    text
}

/// The objects at one retainer-path signature of one dump (what `diff` matches across dumps).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderTotal {
    /// The signature, as [`HolderDelta::signature`] writes it.
    pub signature: String,
    /// Real objects with this signature.
    pub objects: u64,
    /// Their retained sizes, summed.
    pub retained_size: u64,
}

/// One dump's holders, chosen as `diff` chooses them from each dump: the `candidates`
/// signatures that retain the most, and the `candidates` that stand for more than one object
/// (a container's entries) that retain the most; the largest first (then by signature). With
/// [`HOLDER_CANDIDATES`] every holder `diff` lists from this dump is here, with the same
/// objects and retained size.
///
/// Complexity: O(V + E) for the signatures, then O(S log S) over the distinct signatures and
/// the chosen ones' path lengths.
pub fn holder_totals(
    graph: &HeapGraph,
    analysis: &Analysis,
    candidates: usize,
) -> Vec<HolderTotal> {
    let sigs = signatures(graph, analysis);
    let mut all: Vec<(u64, u64)> = sigs.totals.iter().map(|(&h, t)| (t.1, h)).collect();
    all.sort_unstable_by(|a, b| b.cmp(a));
    let mut chosen: Vec<u64> = all.iter().take(candidates).map(|&(_, h)| h).collect();
    chosen.extend(
        all.iter()
            .filter(|(_, h)| sigs.totals[h].0 > 1)
            .take(candidates)
            .map(|&(_, h)| h),
    );
    chosen.sort_unstable();
    chosen.dedup();
    let mut rows: Vec<HolderTotal> = chosen
        .into_iter()
        .map(|sig| {
            let (objects, retained_size, node) = sigs.totals[&sig];
            HolderTotal {
                signature: signature_text(&signature_steps(graph, &sigs, node)),
                objects,
                retained_size,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        Reverse(a.retained_size)
            .cmp(&Reverse(b.retained_size))
            .then_with(|| a.signature.cmp(&b.signature))
    });
    rows
}

/// Holders in either dump: the `candidates` signatures that retain the most in each, matched by
/// signature, the largest change of retained size first (then by signature).
fn holder_deltas(
    before: (&HeapGraph, &Analysis),
    after: (&HeapGraph, &Analysis),
    candidates: usize,
) -> Vec<HolderDelta> {
    let (old, new) = rayon::join(
        || signatures(before.0, before.1),
        || signatures(after.0, after.1),
    );
    // The signatures that retain the most, and as many of those that stand for more than one
    // object (a container's entries): a long chain of single links (each its own signature)
    // would otherwise crowd out the entries of a growing map.
    let top = |sigs: &Signatures| -> Vec<u64> {
        let mut all: Vec<(u64, u64)> = sigs.totals.iter().map(|(&h, t)| (t.1, h)).collect();
        all.sort_unstable_by(|a, b| b.cmp(a));
        let mut chosen: Vec<u64> = all.iter().take(candidates).map(|&(_, h)| h).collect();
        chosen.extend(
            all.iter()
                .filter(|(_, h)| sigs.totals[h].0 > 1)
                .take(candidates)
                .map(|&(_, h)| h),
        );
        chosen
    };
    let mut chosen = top(&old);
    chosen.extend(top(&new));
    chosen.sort_unstable();
    chosen.dedup();
    let mut rows: Vec<HolderDelta> = chosen
        .into_iter()
        .map(|sig| {
            let (count_before, retained_before, old_node) =
                old.totals.get(&sig).copied().unwrap_or((0, 0, u32::MAX));
            let (count_after, retained_after, new_node) =
                new.totals.get(&sig).copied().unwrap_or((0, 0, u32::MAX));
            let (graph, sigs, node) = if new_node != u32::MAX {
                (after.0, &new, new_node)
            } else {
                (before.0, &old, old_node)
            };
            let path = signature_steps(graph, sigs, node);
            let signature = signature_text(&path);
            // The container is the breadth-first parent: the path without its last step.
            let container = (path.len() > 2).then(|| signature_text(&path[..path.len() - 1]));
            let status = if count_before == 0 {
                HolderStatus::New
            } else if count_after == 0 {
                HolderStatus::Gone
            } else if retained_after > retained_before {
                HolderStatus::Grown
            } else if retained_after < retained_before {
                HolderStatus::Shrunk
            } else {
                HolderStatus::Same
            };
            HolderDelta {
                signature,
                path,
                status,
                count_before,
                count_after,
                retained_before,
                retained_after,
                container,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        Reverse(a.retained_delta().unsigned_abs())
            .cmp(&Reverse(b.retained_delta().unsigned_abs()))
            .then_with(|| a.signature.cmp(&b.signature))
    });
    rows
}

/// What a diff points at: the holder that grew, and the entries it grew by when it grew by many
/// objects of one kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrowthCulprit {
    /// The holder's signature: the container of `entries`, or the one object that grew itself.
    pub holder_signature: String,
    /// The holder's path from the root.
    pub holder_path: Vec<HolderStep>,
    /// The holder's row, when it is among the holders compared.
    pub holder: Option<HolderDelta>,
    /// The entries: the objects at one signature under the holder, when they are what grew.
    pub entries: Option<HolderDelta>,
}

/// Where a diff's growth comes to rest: walking down the holders from the root, a holder whose
/// growth is not mostly that of one holder below it. Of those, the one that grew the most by
/// retained size:
///
/// - many objects at one signature (a container's entries share one, their indices and keys
///   left out) that grew in number: the culprit is their container, grown by them;
/// - one object that grew, with no child holder accounting for half its growth (a buffer, an
///   array, an object whose growth is spread over many small entries): the culprit is itself.
///   "Below" counts every holder whose path goes through this one, not only its children: the
///   entries of a set may be retained by the set's owner, when something else (an event loop's
///   callbacks) also refers to them.
///
/// The root's own children (modules, globals, GC root groups) and the engine's own objects
/// (V8's compiled code and hidden classes) are never the culprit.
///
/// Complexity: O(H log H + H · D) over the diff's H holders, with D the most holders below
/// one.
pub fn growth_culprit(view: &GraphDiffView) -> Option<GrowthCulprit> {
    // The largest growth below each holder, among the holders whose path from the root goes
    // through it (their signature extends its own by an edge): sorted, they follow it.
    let mut by_signature: Vec<&HolderDelta> = view.holders.iter().collect();
    by_signature.sort_unstable_by(|a, b| a.signature.cmp(&b.signature));
    let mut largest_below: FxHashMap<&str, i64> = FxHashMap::default();
    for (i, holder) in by_signature.iter().enumerate() {
        let prefix = holder.signature.as_str();
        let below = by_signature[i + 1..]
            .iter()
            .take_while(|other| other.signature.starts_with(prefix))
            .filter(|other| {
                matches!(
                    other.signature.as_bytes().get(prefix.len()),
                    Some(b'.' | b'[')
                )
            })
            .map(|other| other.retained_delta())
            .max()
            .unwrap_or(0);
        largest_below.insert(prefix, below);
    }
    let point = view
        .holders
        .iter()
        .filter(|holder| {
            holder.retained_delta() > 0
                && holder
                    .container
                    .as_deref()
                    .is_some_and(|container| !is_engine_internal(last_type(container)))
                && !is_engine_internal(last_type(&holder.signature))
        })
        .filter(|holder| {
            let entries = holder.count_after > 1 && holder.count_after > holder.count_before;
            let below = largest_below
                .get(holder.signature.as_str())
                .copied()
                .unwrap_or(0);
            entries || below * 2 < holder.retained_delta()
        })
        .max_by_key(|holder| (holder.retained_delta(), Reverse(holder.signature.as_str())))?;
    let entries = point.count_after > 1 && point.count_after > point.count_before;
    let (holder_signature, holder_path) = if entries {
        (
            point.container.clone()?,
            point.path[..point.path.len() - 1].to_vec(),
        )
    } else {
        (point.signature.clone(), point.path.clone())
    };
    let holder = view
        .holders
        .iter()
        .find(|holder| holder.signature == holder_signature)
        .cloned();
    Some(GrowthCulprit {
        holder_signature,
        holder_path,
        holder,
        entries: entries.then(|| point.clone()),
    })
}

/// The type a signature ends at.
fn last_type(signature: &str) -> &str {
    signature
        .rsplit_once(" → ")
        .map_or(signature, |(_, last)| last)
}

/// Whether objects of `type_name` belong to the engine rather than to the program: V8's
/// compiled code, hidden classes, system objects and its groups of GC roots. Their growth (a
/// warmed-up JIT, the string table) is no leak a developer can fix, so it never names a
/// culprit.
fn is_engine_internal(type_name: &str) -> bool {
    matches!(
        type_name,
        "(compiled code)" | "(system)" | "(object shape)" | "(synthetic)"
    ) || type_name.starts_with("system / ")
}

/// How many signatures of each dump, by retained size, are compared as holders.
pub const HOLDER_CANDIDATES: usize = 500;

fn totals_of(graph: &HeapGraph, analysis: &Analysis) -> DumpTotals {
    let totals = analysis.type_totals(graph);
    DumpTotals {
        objects: totals.count.iter().sum(),
        shallow: totals.shallow.iter().sum(),
        reachable: analysis.dominators.retained_size.get(graph.root().index()),
    }
}

/// Compares two analysed dumps type by type, ranked by the absolute change of `by` (then the
/// other measures, then the name).
///
/// Complexity: O(T) over the types of both dumps, after their per-type totals.
pub fn diff_types(
    before: (&HeapGraph, &Analysis),
    after: (&HeapGraph, &Analysis),
    by: RankBy,
) -> GraphDiffView {
    let mut rows: Vec<TypeDelta> = Vec::new();
    let mut index: FxHashMap<String, usize> = FxHashMap::default();
    let mut add = |graph: &HeapGraph, totals: &TypeTotals, is_after: bool| {
        for dense in 0..totals.types.len() {
            let name = graph.strings().get(totals.types[dense]);
            let at = *index.entry(name.to_owned()).or_insert_with(|| {
                rows.push(TypeDelta {
                    type_name: name.to_owned(),
                    count_before: 0,
                    count_after: 0,
                    shallow_before: 0,
                    shallow_after: 0,
                    retained_before: 0,
                    retained_after: 0,
                });
                rows.len() - 1
            });
            let row = &mut rows[at];
            if is_after {
                row.count_after += totals.count[dense];
                row.shallow_after += totals.shallow[dense];
                row.retained_after += totals.retained[dense];
            } else {
                row.count_before += totals.count[dense];
                row.shallow_before += totals.shallow[dense];
                row.retained_before += totals.retained[dense];
            }
        }
    };
    add(before.0, before.1.type_totals(before.0), false);
    add(after.0, after.1.type_totals(after.0), true);
    let key = |row: &TypeDelta| {
        let (count, shallow, retained) = (
            row.count_delta().unsigned_abs(),
            row.shallow_delta().unsigned_abs(),
            row.retained_delta().unsigned_abs(),
        );
        match by {
            RankBy::Retained => (retained, shallow, count),
            RankBy::Shallow => (shallow, retained, count),
            RankBy::Count => (count, retained, shallow),
        }
    };
    rows.sort_by(|a, b| {
        Reverse(key(a))
            .cmp(&Reverse(key(b)))
            .then_with(|| a.type_name.cmp(&b.type_name))
    });
    GraphDiffView {
        runtime: after.0.meta().runtime,
        before: totals_of(before.0, before.1),
        after: totals_of(after.0, after.1),
        types: rows,
        holders: holder_deltas(before, after, HOLDER_CANDIDATES),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EdgeRule, Options, analyze};
    use heapgraph_test_support::graph;

    #[test]
    fn growth_is_ranked_and_signed() {
        let before = graph("root -> cache: 8; cache -e> Item#1: 16");
        let after = graph(
            "root -> cache: 8; cache -e> Item#1: 16; cache -e> Item#2: 16; cache -e> Item#3: 16; root -> Extra#9: 4",
        );
        let options = |g: &HeapGraph| Options {
            edge_rule: EdgeRule::for_runtime(g.meta().runtime),
        };
        let (a, b) = (
            analyze(&before, &options(&before)),
            analyze(&after, &options(&after)),
        );
        let view = diff_types((&before, &a), (&after, &b), RankBy::Retained);
        // Item and cache both retain 32 bytes more; Item's own bytes grew too, so it ranks first.
        let names: Vec<&str> = view.types.iter().map(|t| t.type_name.as_str()).collect();
        assert_eq!(names[..2], ["Item", "cache"]);
        let item = &view.types[0];
        assert_eq!((item.count_before, item.count_after), (1, 3));
        assert_eq!((item.count_delta(), item.retained_delta()), (2, 32));
        assert_eq!(view.types[1].retained_delta(), 32);
        let extra = view.types.iter().find(|t| t.type_name == "Extra").unwrap();
        assert_eq!((extra.count_before, extra.count_after), (0, 1));
        let by_count = diff_types((&before, &a), (&after, &b), RankBy::Count);
        assert_eq!(by_count.types[0].type_name, "Item");
        // Holders: the cache grew (two more items at one signature), Extra is new.
        let sigs: Vec<&str> = view.holders.iter().map(|h| h.signature.as_str()).collect();
        let holder = |sig: &str| {
            view.holders
                .iter()
                .find(|h| h.signature == sig)
                .unwrap_or_else(|| panic!("{sig} not in {sigs:?}"))
        };
        let cache = holder("(root).cache → cache");
        assert_eq!(cache.status, HolderStatus::Grown);
        assert_eq!(cache.retained_delta(), 32);
        let items = holder("(root).cache → cache[] → Item");
        assert_eq!((items.count_before, items.count_after), (1, 3));
        assert_eq!(holder("(root).Extra#9 → Extra").status, HolderStatus::New);
        assert_eq!(view.after.shallow - view.before.shallow, 36);
    }

    fn row(
        signature: &str,
        container: Option<&str>,
        counts: (u64, u64),
        retained: (u64, u64),
    ) -> HolderDelta {
        HolderDelta {
            signature: signature.to_owned(),
            path: steps_of(signature),
            status: HolderStatus::Grown,
            count_before: counts.0,
            count_after: counts.1,
            retained_before: retained.0,
            retained_after: retained.1,
            container: container.map(str::to_owned),
        }
    }

    /// The steps of a test's signature, whose types have no dots.
    fn steps_of(signature: &str) -> Vec<HolderStep> {
        let parts: Vec<&str> = signature.split(" → ").collect();
        let mut steps = Vec::new();
        let mut edge = None;
        for part in parts {
            let (type_name, next_edge) = match part.strip_suffix("[]") {
                Some(type_name) => (type_name, Some("[]".to_owned())),
                None => match part.split_once('.') {
                    Some((type_name, edge)) => (type_name, Some(edge.to_owned())),
                    None => (part, None),
                },
            };
            steps.push(HolderStep {
                type_name: type_name.to_owned(),
                label: None,
                edge: edge.take(),
                edge_kind: None,
            });
            edge = next_edge;
        }
        assert_eq!(signature_text(&steps), signature);
        steps
    }

    fn view_of(holders: Vec<HolderDelta>) -> GraphDiffView {
        let totals = DumpTotals {
            objects: 0,
            shallow: 0,
            reachable: 0,
        };
        GraphDiffView {
            runtime: Runtime::Python,
            before: totals,
            after: totals,
            types: Vec::new(),
            holders,
        }
    }

    #[test]
    fn growth_comes_to_rest_at_a_containers_entries() {
        let module = "(root).module m → module";
        let dict = "(root).module m → module.__dict__ → dict";
        let cache = "(root).module m → module.__dict__ → dict.cache → list";
        let entries = "(root).module m → module.__dict__ → dict.cache → list[] → Request";
        let other = "(root).module m → module.__dict__ → dict.tasks → set[] → Task";
        let culprit = growth_culprit(&view_of(vec![
            row(module, None, (1, 1), (100, 1100)),
            row(dict, Some(module), (1, 1), (90, 1090)),
            row(cache, Some(dict), (1, 1), (10, 710)),
            row(entries, Some(cache), (10, 70), (10, 700)),
            row(
                other,
                Some("(root).module m → module.__dict__ → dict.tasks → set"),
                (2, 5),
                (20, 300),
            ),
        ]))
        .unwrap();
        assert_eq!(culprit.holder_signature, cache);
        assert_eq!(culprit.entries.unwrap().signature, entries);
        assert_eq!(culprit.holder.unwrap().retained_after, 710);
    }

    #[test]
    fn growth_comes_to_rest_at_one_object_that_grew_itself() {
        let store = "(root).module m → module.__dict__ → dict.STORE → VectorStore";
        let vectors =
            "(root).module m → module.__dict__ → dict.STORE → VectorStore.vectors → ndarray";
        let ids = "(root).module m → module.__dict__ → dict.STORE → VectorStore.ids → list[] → str";
        let culprit = growth_culprit(&view_of(vec![
            row(
                store,
                Some("(root).module m → module.__dict__ → dict"),
                (1, 1),
                (1000, 9000),
            ),
            row(vectors, Some(store), (1, 1), (900, 8800)),
            row(
                ids,
                Some("(root).module m → module.__dict__ → dict.STORE → VectorStore.ids → list"),
                (10, 50),
                (100, 300),
            ),
        ]))
        .unwrap();
        // The store's growth is mostly its array's, and the array has no child that grew.
        assert_eq!(culprit.holder_signature, vectors);
        assert!(culprit.entries.is_none());
    }

    #[test]
    fn the_roots_children_and_the_engines_objects_are_never_the_culprit() {
        let view = view_of(vec![
            row("(root)[] → global", None, (1, 1), (0, 5000)),
            row(
                "(root)[] → (synthetic)[] → (synthetic)",
                Some("(root)[] → (synthetic)"),
                (1, 1),
                (0, 4000),
            ),
            row(
                "(root)[] → global.f → (closure).code → (compiled code)",
                Some("(root)[] → global.f → (closure)"),
                (3, 9),
                (0, 3000),
            ),
        ]);
        assert_eq!(growth_culprit(&view), None);
    }
}
