//! What holds the objects that the strong references do not reach: references of one kind or
//! another (soft, weak, final or phantom: Java's reachability), or nothing at all (garbage).
//!
//! An object's reference kind is the strongest over the chains that reach it from the root, a
//! chain being as strong as its weakest reference (Java's `java.lang.ref` package: "softly
//! reachable" is reachable through soft references and strong ones, without a weak one). The
//! order is the collector's, strongest first: soft, weak, final (objects waiting for their
//! `finalize`), phantom. Runtimes that have one kind of weak reference (V8, Python's weakrefs)
//! have only "weak".

use crate::dominators::DominatorTree;
use crate::edge_rule::{EdgeRule, StrongEdges};
use heapgraph_model::{EdgeKind, EdgeName, HeapGraph, NodeId, Runtime, StringId};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;

/// The kind of a reference that does not keep its target alive, strongest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReferenceKind {
    /// `java.lang.ref.SoftReference`: cleared when memory runs short (caches).
    Soft,
    /// `java.lang.ref.WeakReference`, a V8 weak edge (WeakMap, WeakRef), a Python weakref.
    Weak,
    /// `java.lang.ref.FinalReference`: the object waits for its `finalize` to run.
    Final,
    /// `java.lang.ref.PhantomReference` (cleaners): the object is already unreachable.
    Phantom,
}

impl ReferenceKind {
    /// All kinds, strongest first.
    pub const ALL: [ReferenceKind; 4] = [
        ReferenceKind::Soft,
        ReferenceKind::Weak,
        ReferenceKind::Final,
        ReferenceKind::Phantom,
    ];

    /// The kind's name in output: `soft`, `weak`, `final`, `phantom`.
    pub fn name(self) -> &'static str {
        match self {
            ReferenceKind::Soft => "soft",
            ReferenceKind::Weak => "weak",
            ReferenceKind::Final => "final",
            ReferenceKind::Phantom => "phantom",
        }
    }

    /// The level of [`WeakReach::level`]: 1 for soft … 4 for phantom.
    fn level(self) -> u8 {
        self as u8 + 1
    }

    fn from_level(level: u8) -> Option<ReferenceKind> {
        ReferenceKind::ALL
            .get(usize::from(level).wrapping_sub(1))
            .copied()
    }
}

/// What holds an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldBy {
    /// A chain of strong (retaining) references from the root.
    Strong,
    /// No strong chain; the strongest chains cross references of this kind.
    Only(ReferenceKind),
    /// Nothing: no chain from the root at all (garbage).
    Nothing,
}

impl HeldBy {
    /// The name in output: `strong`, the reference kind's name, or `nothing`.
    pub fn name(self) -> &'static str {
        match self {
            HeldBy::Strong => "strong",
            HeldBy::Only(kind) => kind.name(),
            HeldBy::Nothing => "nothing",
        }
    }
}

/// The Java classes whose instances' `referent` is a reference of each kind (the HPROF
/// importer makes `java.lang.ref.Reference.referent` a weak edge); a subclass of none of them
/// counts as weak. Android's finalizer queue is a `FinalizerReference`.
const JAVA_REFERENCE_CLASSES: [(&str, ReferenceKind); 5] = [
    ("java.lang.ref.SoftReference", ReferenceKind::Soft),
    ("java.lang.ref.WeakReference", ReferenceKind::Weak),
    ("java.lang.ref.FinalReference", ReferenceKind::Final),
    ("java.lang.ref.FinalizerReference", ReferenceKind::Final),
    ("java.lang.ref.PhantomReference", ReferenceKind::Phantom),
];

/// Bounds the walk up a class's superclasses, should a dump's be circular.
const MAX_CLASS_DEPTH: usize = 256;

/// The kind of each weak edge, from the object it leaves. For Java, the class of that object
/// (its `<class>` edge) and its superclasses (their `<super>` edges), up to one of
/// [`JAVA_REFERENCE_CLASSES`], remembered per class; every other runtime's weak edges are
/// weak.
pub(crate) struct ReferenceKinds<'a> {
    graph: &'a HeapGraph,
    java: bool,
    by_class: FxHashMap<u32, ReferenceKind>,
}

impl<'a> ReferenceKinds<'a> {
    pub(crate) fn new(graph: &'a HeapGraph) -> Self {
        ReferenceKinds {
            graph,
            java: graph.meta().runtime == Runtime::Java,
            by_class: FxHashMap::default(),
        }
    }

    /// The kind of the weak references that node `from` holds.
    pub(crate) fn of(&mut self, from: u32) -> ReferenceKind {
        if !self.java {
            return ReferenceKind::Weak;
        }
        let Some(class) = self.target_named(from, "<class>") else {
            return ReferenceKind::Weak;
        };
        if let Some(&kind) = self.by_class.get(&class) {
            return kind;
        }
        let mut kind = ReferenceKind::Weak;
        let mut node = Some(class);
        for _ in 0..MAX_CLASS_DEPTH {
            let Some(current) = node.and_then(|raw| self.graph.node(raw as usize)) else {
                break;
            };
            let name = self.graph.name(current);
            if let Some(&(_, found)) = JAVA_REFERENCE_CLASSES
                .iter()
                .find(|(java, _)| *java == name)
            {
                kind = found;
                break;
            }
            node = self.target_named(current.to_raw(), "<super>");
        }
        self.by_class.insert(class, kind);
        kind
    }

    /// The target of `node`'s first edge named `name` (the HPROF importer writes `<class>`
    /// first, and `<super>` first of a class object's). By text: a string read from an `.hgd`
    /// is not findable by it.
    fn target_named(&self, node: u32, name: &str) -> Option<u32> {
        let node = self.graph.node(node as usize)?;
        self.graph
            .edge_range(node)
            .find(|&edge| self.graph.edge_name(edge) == EdgeName::Named(name))
            .map(|edge| self.graph.edge_target(edge).to_raw())
    }
}

/// The objects of one reference kind that one kind of reference reaches first: the type of
/// the object that holds the reference, and what keeps that object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldThrough {
    /// The reference kind.
    pub kind: ReferenceKind,
    /// The type of the object holding the reference (`java.lang.ref.SoftReference`, …).
    pub reference_type: StringId,
    /// What keeps that object: the type of the first of its dominators that is not a piece of
    /// the runtime's containers (an array, a `java.util` map's node, a dict), or for a class
    /// object the class; `None` when the root or a synthetic node is first.
    pub holder_type: Option<StringId>,
    /// Real objects reached first through such references.
    pub objects: u64,
    /// Their shallow size.
    pub size: u64,
}

/// How every object is held, where the strong references do not reach it ([`weak_reach`]).
#[derive(Clone, Debug, Default)]
pub struct WeakReach {
    /// Per node: 0 for strongly reachable, a [`ReferenceKind`]'s level (1 soft … 4 phantom),
    /// or [`NOTHING`]. Empty when the root reaches every node strongly.
    level: Vec<u8>,
    /// The weakly held real objects by kind and by the references that first reach them,
    /// each kind's largest first (then by type names, for a stable order).
    pub through: Vec<HeldThrough>,
}

/// The level of a node no chain reaches.
const NOTHING: u8 = 5;

impl WeakReach {
    /// What holds `node`.
    pub fn held_by(&self, node: NodeId) -> HeldBy {
        held_at(self.level.get(node.index()).copied().unwrap_or(0))
    }

    /// The nodes the strong references do not reach, by index in order, with what holds
    /// each: a read of a byte a node, for passes that count only those.
    pub fn not_strongly_held(&self) -> impl Iterator<Item = (usize, HeldBy)> + '_ {
        self.level
            .iter()
            .enumerate()
            .filter(|&(_, &level)| level != 0)
            .map(|(node, &level)| (node, held_at(level)))
    }
}

/// What holds a node of `level`.
fn held_at(level: u8) -> HeldBy {
    match level {
        0 => HeldBy::Strong,
        NOTHING => HeldBy::Nothing,
        level => ReferenceKind::from_level(level).map_or(HeldBy::Nothing, HeldBy::Only),
    }
}

/// Classifies the nodes the strong references do not reach by the strongest reference kind
/// that reaches them, and sums the weakly held objects by the references that reach them.
///
/// Seeds are the weak edges from strongly reachable nodes into the rest; then one search per
/// kind, strongest first, each from its seeds over retaining edges and over weak edges no
/// weaker than its kind. A weak edge of a weaker kind becomes a seed of that kind's search, so
/// each node is classified once, by the first search to reach it, and its edges are read once.
/// The object holding the reference a search entered through is carried along, to say what
/// holds each weakly held object.
///
/// # Complexity
/// O(V + E) time: one pass over the edge kinds, a binary search for the source of each weak
/// edge into the unreached part, and the searches, which read the edges of unreached nodes
/// only. O(V) auxiliary space (a byte per node, and the search stacks), none when the root
/// reaches every node strongly.
pub fn weak_reach(graph: &HeapGraph, rule: &EdgeRule, tree: &DominatorTree) -> WeakReach {
    let n_nodes = graph.node_count();
    if tree.reachable.count_set() == n_nodes {
        return WeakReach::default();
    }
    let parts = graph.parts();
    let mut level: Vec<u8> = tree
        .reachable
        .iter()
        .map(|reachable| if reachable { 0 } else { NOTHING })
        .collect();
    let mut kinds = ReferenceKinds::new(graph);
    let mut groups = Groups::default();
    // Stacks of (node, group) per level; index 0 unused.
    let mut pending: [Vec<(u32, u32)>; 5] = Default::default();
    // What keeps a reference depends on its immediate dominator alone, which the references
    // of one map or list share.
    let mut holders: FxHashMap<Option<NodeId>, Option<StringId>> = FxHashMap::default();
    if !rule.include_weak {
        for edge in parts.edge_kind.positions_of(EdgeKind::Weak) {
            let to = graph.edge_target(edge);
            if level[to.index()] != NOTHING {
                continue;
            }
            let from = graph.edge_source(edge);
            if level[from.index()] != 0 {
                continue;
            }
            let kind = kinds.of(from.to_raw());
            let kept_by = *holders
                .entry(tree.immediate_dominator(graph, from))
                .or_insert_with_key(|&dominator| holder(graph, tree, dominator));
            let group = groups.id(kind, graph.type_id(from), kept_by);
            pending[usize::from(kind.level())].push((to.to_raw(), group));
        }
    }
    let strong = StrongEdges::new(graph, rule);
    for kind in ReferenceKind::ALL {
        let current = kind.level();
        let mut stack = std::mem::take(&mut pending[usize::from(current)]);
        while let Some((node, group)) = stack.pop() {
            if level[node as usize] != NOTHING {
                continue;
            }
            level[node as usize] = current;
            let node_id = graph.node(node as usize).unwrap_or(graph.root());
            if !graph.is_synthetic(node_id) {
                groups.add(group, graph.shallow_size(node_id));
            }
            for edge in graph.edge_range(node_id) {
                let to = graph.edge_target(edge).to_raw();
                if level[to as usize] != NOTHING {
                    continue;
                }
                if strong.retains(node, edge, to) {
                    stack.push((to, group));
                } else if to != node
                    && !rule.include_weak
                    && parts.edge_kind[edge] == EdgeKind::Weak
                {
                    // The chain is as strong as its weakest reference.
                    let weaker = kinds.of(node).max(kind);
                    if weaker == kind {
                        stack.push((to, group));
                    } else {
                        pending[usize::from(weaker.level())].push((to, group));
                    }
                }
            }
        }
    }
    WeakReach {
        level,
        through: groups.into_rows(graph),
    }
}

/// Bounds the walk up the dominator tree past containers.
const MAX_HOLDER_STEPS: usize = 32;

/// What keeps a reference object whose immediate dominator is `dominator`, by name: the first
/// of its dominators that is not a piece of the runtime's containers (an array, a `java.util`
/// map's node, a dict), so that a reference in a map of a cache is said to be the cache's. A
/// class object is named by its class (its statics hold the reference). `None` when only the
/// root or synthetic nodes are above it.
fn holder(graph: &HeapGraph, tree: &DominatorTree, dominator: Option<NodeId>) -> Option<StringId> {
    let runtime = graph.meta().runtime;
    let mut node = dominator?;
    for _ in 0..MAX_HOLDER_STEPS {
        if graph.is_synthetic(node) {
            return None;
        }
        if graph.kind(node).name == "class" && !graph.name(node).is_empty() {
            return Some(graph.parts().node_name.get(node.index()));
        }
        if !is_container(graph.type_name(node), runtime) {
            return Some(graph.type_id(node));
        }
        node = tree.immediate_dominator(graph, node)?;
    }
    Some(graph.type_id(node))
}

/// Whether objects of this type are parts of the runtime's containers, which hold what a
/// program puts in them.
fn is_container(type_name: &str, runtime: Runtime) -> bool {
    match runtime {
        Runtime::Java => {
            type_name.ends_with("[]")
                || type_name.starts_with("java.util.")
                || type_name.starts_with("java.lang.ref.")
        }
        Runtime::Python => {
            let name = type_name.strip_prefix("builtins.").unwrap_or(type_name);
            matches!(
                name,
                "dict" | "list" | "set" | "frozenset" | "tuple" | "cell"
            ) || name.starts_with("collections.")
                || name.starts_with("weakref.")
        }
        Runtime::V8 => {
            type_name.starts_with('(')
                || type_name.starts_with("system / ")
                || matches!(type_name, "Map" | "Set" | "WeakMap" | "WeakSet" | "Array")
        }
    }
}

/// The `HeldThrough` rows as they are summed, by (kind, reference type, holder type).
#[derive(Default)]
struct Groups {
    index: FxHashMap<(ReferenceKind, StringId, Option<StringId>), u32>,
    rows: Vec<HeldThrough>,
}

impl Groups {
    fn id(&mut self, kind: ReferenceKind, reference: StringId, holder: Option<StringId>) -> u32 {
        let rows = &mut self.rows;
        *self
            .index
            .entry((kind, reference, holder))
            .or_insert_with(|| {
                rows.push(HeldThrough {
                    kind,
                    reference_type: reference,
                    holder_type: holder,
                    objects: 0,
                    size: 0,
                });
                (rows.len() - 1) as u32
            })
    }

    fn add(&mut self, group: u32, size: u64) {
        let row = &mut self.rows[group as usize];
        row.objects += 1;
        row.size += size;
    }

    /// The rows that hold objects, by kind, then largest first, then by type names.
    fn into_rows(self, graph: &HeapGraph) -> Vec<HeldThrough> {
        let strings = graph.strings();
        let mut rows: Vec<HeldThrough> = self
            .rows
            .into_iter()
            .filter(|row| row.objects > 0)
            .collect();
        rows.sort_by_cached_key(|row| {
            (
                row.kind,
                Reverse(row.size),
                Reverse(row.objects),
                strings.get(row.reference_type).to_owned(),
                row.holder_type.map(|holder| strings.get(holder).to_owned()),
            )
        });
        rows
    }
}
