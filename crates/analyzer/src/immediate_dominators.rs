//! Immediate dominators grouped: a set of objects (the instances of a type) grouped by the type
//! of the object that keeps each alive alone, its immediate dominator, as Eclipse MAT's
//! "Immediate Dominators" query (`ISnapshot.getDominatorsOf`) and guppy3's grouping by
//! referrers answer "what holds these". Types to look through (the runtime's containers:
//! `java.util.*`, `builtins.dict`) are skipped upwards: an object whose dominator has such a
//! type is counted under the first dominator above it that has not, as MAT's `-skip` does.

use crate::Analysis;
use crate::NO_NODE;
use crate::view::ObjectView;
use heapgraph_model::{HeapGraph, NodeId};
use regex::Regex;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;

/// Type names to look through, as globs: `*` stands for any run of characters, `?` for one,
/// everything else for itself (`java.util.*` is every type whose name starts `java.util.`).
#[derive(Clone, Debug, Default)]
pub struct TypeGlobs {
    globs: Vec<String>,
    regex: Option<Regex>,
}

impl TypeGlobs {
    /// The globs, none of which may be empty.
    ///
    /// # Errors
    /// A message naming an empty glob.
    pub fn new(globs: &[String]) -> Result<TypeGlobs, String> {
        if globs.iter().any(|glob| glob.trim().is_empty()) {
            return Err(
                "an empty type pattern; write a type name or a glob like java.util.*".into(),
            );
        }
        if globs.is_empty() {
            return Ok(TypeGlobs::default());
        }
        let alternatives: Vec<String> = globs
            .iter()
            .map(|glob| {
                glob.trim()
                    .chars()
                    .map(|c| match c {
                        '*' => ".*".to_owned(),
                        '?' => ".".to_owned(),
                        other => regex::escape(&other.to_string()),
                    })
                    .collect()
            })
            .collect();
        let regex = Regex::new(&format!("^(?:{})$", alternatives.join("|")))
            .map_err(|error| format!("type patterns {globs:?}: {error}"))?;
        Ok(TypeGlobs {
            globs: globs.iter().map(|glob| glob.trim().to_owned()).collect(),
            regex: Some(regex),
        })
    }

    /// Whether `type_name` matches one of the globs.
    pub fn matches(&self, type_name: &str) -> bool {
        self.regex
            .as_ref()
            .is_some_and(|regex| regex.is_match(type_name))
    }

    /// The globs as given.
    pub fn globs(&self) -> &[String] {
        &self.globs
    }
}

/// The objects whose (first unskipped) immediate dominator has one type.
#[derive(Clone, Debug, PartialEq)]
pub struct DominatorGroup {
    /// The dominators' type (the root's own type for objects only the root dominates).
    pub type_name: String,
    /// Whether the dominator is the graph's root (MAT's `<ROOT>`): nothing but the roots
    /// together holds these objects.
    pub is_root: bool,
    /// Distinct dominators.
    pub dominators: u64,
    /// Their shallow sizes.
    pub dominators_shallow: u64,
    /// Objects of the set they dominate.
    pub dominated: u64,
    /// Those objects' shallow sizes.
    pub dominated_shallow: u64,
    /// What those objects retain, each byte counted once over the whole table (an object below
    /// another of the set adds nothing).
    pub dominated_retained: u64,
    /// The dominator that dominates the most of the set (then retains the most).
    pub example: ObjectView,
}

/// A set of objects grouped by the type of their immediate dominators.
#[derive(Clone, Debug, PartialEq)]
pub struct ImmediateDominatorsView {
    /// Objects asked about.
    pub objects: u64,
    /// Those the root does not reach (they have no dominator).
    pub unreachable: u64,
    /// The type globs looked through.
    pub skip: Vec<String>,
    /// Groups, the most retained first (then the most objects, then by type).
    pub groups: Vec<DominatorGroup>,
}

/// The objects of `objects` grouped by the type of their immediate dominator, looking through
/// dominators whose type `skip` matches (never past the root).
///
/// # Complexity
/// O(V) time and a byte per node of auxiliary space (which objects another of the set
/// dominates, settled once per node), plus the walks through skipped dominators.
pub fn immediate_dominators(
    graph: &HeapGraph,
    analysis: &Analysis,
    objects: &[NodeId],
    skip: &TypeGlobs,
) -> ImmediateDominatorsView {
    let tree = &analysis.dominators;
    let root = graph.root();
    let covered = Covered::new(graph, analysis, objects);
    let mut skipped_types: FxHashMap<u32, bool> = FxHashMap::default();
    let mut skips = |node: NodeId| -> bool {
        *skipped_types
            .entry(graph.type_id(node).to_raw())
            .or_insert_with(|| skip.matches(graph.type_name(node)))
    };
    // Per dominator: its group and how many of the set it dominates.
    let mut per_dominator: FxHashMap<u32, u64> = FxHashMap::default();
    struct Totals {
        dominators: u64,
        dominators_shallow: u64,
        dominated: u64,
        dominated_shallow: u64,
        dominated_retained: u64,
    }
    let mut groups: FxHashMap<(u32, bool), Totals> = FxHashMap::default();
    let mut unreachable = 0u64;
    for &object in objects {
        let Some(mut dominator) = tree.immediate_dominator(graph, object) else {
            unreachable += 1;
            continue;
        };
        while dominator != root && skips(dominator) {
            dominator = tree.immediate_dominator(graph, dominator).unwrap_or(root);
        }
        let key = (graph.type_id(dominator).to_raw(), dominator == root);
        let totals = groups.entry(key).or_insert(Totals {
            dominators: 0,
            dominators_shallow: 0,
            dominated: 0,
            dominated_shallow: 0,
            dominated_retained: 0,
        });
        let seen = per_dominator.entry(dominator.to_raw()).or_insert(0);
        if *seen == 0 {
            totals.dominators += 1;
            totals.dominators_shallow += graph.shallow_size(dominator);
        }
        *seen += 1;
        totals.dominated += 1;
        totals.dominated_shallow += graph.shallow_size(object);
        if !covered.is_covered(object) {
            totals.dominated_retained += tree.retained_size.get(object.index());
        }
    }
    // The example of each group: the dominator with the most of the set, then the largest.
    let mut examples: FxHashMap<(u32, bool), (u64, u64, u32)> = FxHashMap::default();
    for (&raw, &count) in &per_dominator {
        let Some(dominator) = graph.node(raw as usize) else {
            continue;
        };
        let key = (graph.type_id(dominator).to_raw(), dominator == root);
        let rank = (count, tree.retained_size.get(raw as usize), raw);
        let best = examples.entry(key).or_insert(rank);
        if (rank.0, rank.1, Reverse(rank.2)) > (best.0, best.1, Reverse(best.2)) {
            *best = rank;
        }
    }
    let mut rows: Vec<DominatorGroup> = groups
        .into_iter()
        .filter_map(|(key, totals)| {
            let example = graph.node(examples.get(&key)?.2 as usize)?;
            Some(DominatorGroup {
                type_name: graph.type_name(example).to_owned(),
                is_root: key.1,
                dominators: totals.dominators,
                dominators_shallow: totals.dominators_shallow,
                dominated: totals.dominated,
                dominated_shallow: totals.dominated_shallow,
                dominated_retained: totals.dominated_retained,
                example: crate::queries::object_view(graph, analysis, example),
            })
        })
        .collect();
    rows.sort_by(|a, b| {
        (
            Reverse(a.dominated_retained),
            Reverse(a.dominated),
            &a.type_name,
            a.is_root,
        )
            .cmp(&(
                Reverse(b.dominated_retained),
                Reverse(b.dominated),
                &b.type_name,
                b.is_root,
            ))
    });
    ImmediateDominatorsView {
        objects: objects.len() as u64,
        unreachable,
        skip: skip.globs().to_vec(),
        groups: rows,
    }
}

/// Which objects of a set another object of the set dominates, settled for each node once: a
/// walk up the dominator tree stops at the first node already settled, and settles the nodes
/// it passed.
pub(crate) struct Covered {
    /// Per node: 0 unsettled, 1 not below a member, 2 below a member, 3 a member not below one,
    /// 4 a member below one.
    state: Vec<u8>,
}

const UNSETTLED: u8 = 0;
const FREE: u8 = 1;
const BELOW_MEMBER: u8 = 2;
const MEMBER_FREE: u8 = 3;
const MEMBER_BELOW: u8 = 4;

impl Covered {
    pub(crate) fn new(graph: &HeapGraph, analysis: &Analysis, members: &[NodeId]) -> Covered {
        let tree = &analysis.dominators;
        let root = graph.root().index();
        let mut state = vec![UNSETTLED; graph.node_count()];
        for &member in members {
            state[member.index()] = MEMBER_FREE;
        }
        let mut path: Vec<usize> = Vec::new();
        for &member in members {
            let start = member.index();
            if !tree.reachable[start] || start == root {
                continue;
            }
            // Walk up to the first settled ancestor (members start settled, as "free", until
            // their own ancestors are known; `path` remembers whom to settle).
            path.clear();
            let mut at = tree.idom[start] as usize;
            let below = loop {
                if at == root || at >= state.len() || tree.idom[at] == NO_NODE {
                    break false;
                }
                match state[at] {
                    UNSETTLED => {
                        path.push(at);
                        at = tree.idom[at] as usize;
                    }
                    MEMBER_FREE | MEMBER_BELOW | BELOW_MEMBER => break true,
                    _ => break false,
                }
            };
            // A member above a member may itself be unsettled as to what is above it, but it
            // shields what is below either way.
            for &node in path.iter().rev() {
                state[node] = if below { BELOW_MEMBER } else { FREE };
            }
            if below {
                state[start] = MEMBER_BELOW;
            }
        }
        Covered { state }
    }

    /// Whether another member dominates `node`.
    pub(crate) fn is_covered(&self, node: NodeId) -> bool {
        self.state[node.index()] == MEMBER_BELOW
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EdgeRule, Options, analyze};
    use heapgraph_test_support::graph;

    #[test]
    fn globs_match_whole_names() {
        let globs = TypeGlobs::new(&["java.util.*".into(), "builtins.dict".into()]).unwrap();
        assert!(globs.matches("java.util.HashMap$Node[]"));
        assert!(globs.matches("builtins.dict"));
        assert!(!globs.matches("builtins.dictionary"));
        assert!(!globs.matches("xjava.util.HashMap"));
        assert!(!TypeGlobs::default().matches("anything"));
        assert!(TypeGlobs::new(&[" ".into()]).is_err());
    }

    #[test]
    fn members_below_members_add_no_retained_bytes() {
        // a → b → c, all of type T; d of type T held by the root directly.
        let graph = graph("root -> T#a: 1; T#a -> T#b: 2; T#b -> T#c: 4; root -> T#d: 8");
        let analysis = analyze(
            &graph,
            &Options {
                edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
            },
        );
        let members: Vec<NodeId> = graph
            .nodes()
            .filter(|&node| graph.type_name(node) == "T")
            .collect();
        let view = immediate_dominators(&graph, &analysis, &members, &TypeGlobs::default());
        let t = view.groups.iter().find(|g| g.type_name == "T").unwrap();
        assert_eq!((t.dominated, t.dominators, t.dominated_retained), (2, 2, 0));
        let root = view.groups.iter().find(|g| g.is_root).unwrap();
        assert_eq!((root.dominated, root.dominated_retained), (2, 7 + 8));
        // Looking through T, every member is the root's.
        let skip = TypeGlobs::new(&["T".into()]).unwrap();
        let view = immediate_dominators(&graph, &analysis, &members, &skip);
        assert_eq!(view.groups.len(), 1);
        assert!(view.groups[0].is_root);
        assert_eq!(view.groups[0].dominated, 4);
        assert_eq!(view.groups[0].dominated_retained, 15);
    }
}
