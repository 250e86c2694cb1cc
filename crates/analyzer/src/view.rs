//! Plain result structs that cross the analyzer's boundary: public fields, names resolved.
//!
//! report and cli render these; they never look inside the graph or the analysis.

use crate::weak::{HeldBy, ReferenceKind};
use heapgraph_model::NodeId;

/// One object, with everything a table row or a chain element shows.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectView {
    /// The dense node index (for follow-up queries in the same process).
    pub node: NodeId,
    /// The runtime's own object id (V8 node id, HPROF id, Python `id()`).
    pub id: u64,
    /// The id as users of the runtime write it (`@123`, `0x7f…`).
    pub id_text: String,
    /// The runtime's category of the object (V8 node type, `instance`, …).
    pub kind: String,
    /// The type users group by (constructor or class name, `(string)`, …).
    pub type_name: String,
    /// The object's own label (a V8 node name, a string's text, a function name).
    pub name: String,
    /// Bytes of the object alone.
    pub shallow_size: u64,
    /// Bytes freed if the object were released; `None` when it is unreachable.
    pub retained_size: Option<u64>,
    /// Edges on the chain from the root that the runtime's own tool measures (for V8, DevTools'
    /// distance less its system-root offset); `None` when unreachable.
    pub distance: Option<u32>,
    /// How many objects its dominator subtree holds, itself included (0 when unreachable).
    pub retained_count: u64,
}

/// Per-type totals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeRow {
    /// The type name.
    pub type_name: String,
    /// Number of objects of the type.
    pub count: u64,
    /// Sum of their shallow sizes.
    pub shallow_size: u64,
    /// Bytes the instances retain together, each retained byte counted once even where
    /// instances dominate each other.
    pub retained_size: u64,
}

/// Totals of a heap graph and its types.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryView {
    /// Real objects (synthetic roots and root groups left out).
    pub objects: u64,
    /// All references, weak ones included.
    pub references: u64,
    /// Sum of shallow sizes of all real objects.
    pub total_shallow_size: u64,
    /// Real objects reachable from the root through strong edges.
    pub reachable_objects: u64,
    /// Their shallow size.
    pub reachable_size: u64,
    /// Real objects not reachable through strong edges.
    pub unreachable_objects: u64,
    /// Their shallow size.
    pub unreachable_size: u64,
    /// The unreachable objects that references of one kind reach (soft, weak, final,
    /// phantom), one row per kind that has any, strongest kind first.
    pub weakly_held: Vec<WeaklyHeld>,
    /// The unreachable objects that nothing reaches: garbage.
    pub garbage_objects: u64,
    /// Their shallow size.
    pub garbage_size: u64,
    /// The shallow size of every reachable real object of the dump: what a type's share is taken
    /// of, also when the counts above cover one kind of object only.
    pub heap_size: u64,
    /// The kind the counts are restricted to, if any.
    pub kind: Option<String>,
    /// Types, by retained size (then shallow size, then name).
    pub types: Vec<TypeRow>,
}

/// The objects that only references of one kind hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeaklyHeld {
    /// The strongest kind of reference that reaches them.
    pub kind: ReferenceKind,
    /// Real objects.
    pub objects: u64,
    /// Their shallow size.
    pub size: u64,
    /// Through which references, largest first (at most [`HELD_THROUGH_ROWS`]; none when the
    /// summary is restricted to one kind of object).
    pub through: Vec<HeldThroughRow>,
}

/// At most this many [`HeldThroughRow`]s per reference kind in a summary.
pub const HELD_THROUGH_ROWS: usize = 10;

/// The weakly held objects that one kind of reference reaches first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldThroughRow {
    /// The type of the object holding the reference (`java.lang.ref.SoftReference`, a
    /// `WeakMap`'s table, `weakref.ReferenceType`).
    pub reference_type: String,
    /// What keeps that object: the type of the first of its dominators that is not a piece of
    /// the runtime's containers (an array, a `java.util` map's node, a dict), or for a class
    /// object (its statics) the class; `None` when the root or a synthetic node is first.
    pub holder_type: Option<String>,
    /// Real objects reached first through such references.
    pub objects: u64,
    /// Their shallow size.
    pub size: u64,
}

/// How `top` ranks objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankBy {
    /// Bytes retained.
    Retained,
    /// Bytes of the object alone.
    Shallow,
    /// Objects retained (the dominator subtree's size).
    Count,
}

/// One element of a chain from the root to a target.
#[derive(Clone, Debug, PartialEq)]
pub struct PathStep {
    /// The object at this step.
    pub object: ObjectView,
    /// The name of the edge leading into this object from the previous step; `None` at the root.
    pub edge: Option<String>,
    /// The kind of that edge (`property`, `element`, …); `None` at the root.
    pub edge_kind: Option<&'static str>,
    /// When that edge is a weak reference, its kind (`soft`, `weak`, `final`, `phantom`).
    pub reference_kind: Option<ReferenceKind>,
}

/// Who holds an object: its dominators and its shortest retainer chains.
#[derive(Clone, Debug, PartialEq)]
pub struct HoldersView {
    /// The object asked about.
    pub target: ObjectView,
    /// With a type query: how many objects matched.
    pub matches: Option<u64>,
    /// Immediate-dominator chain from the root down to the target, both included. Releasing
    /// any element frees the target. Empty when the target is unreachable.
    pub dominator_chain: Vec<ObjectView>,
    /// What holds the target: strong references, only references of one kind (then `paths`
    /// are the strongest chains, which cross such references), or nothing.
    pub held_by: HeldBy,
    /// Chains from the root to the target, root and target included: those from named roots
    /// first, one per root, or the shortest first (as asked).
    pub paths: Vec<Vec<PathStep>>,
    /// For each chain, how many chains print as it does (merged into it).
    pub path_counts: Vec<u64>,
}

/// One node of a printed dominator tree.
#[derive(Clone, Debug, PartialEq)]
pub struct DominatorTreeNode {
    /// The object.
    pub object: ObjectView,
    /// Its depth below the root (the root is 0).
    pub depth: u32,
    /// Its retained size as a share of the root's.
    pub share: f64,
    /// Children left out for being below the share threshold or the depth limit.
    pub hidden_children: u64,
}

/// The upper dominator tree, in depth-first order (children by retained size).
#[derive(Clone, Debug, PartialEq)]
pub struct DominatorTreeView {
    /// The root's retained size, which shares are taken of.
    pub total_retained: u64,
    /// Nodes in pre-order; a node's children follow it with `depth + 1`.
    pub nodes: Vec<DominatorTreeNode>,
}

/// Which rule made a leak suspect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SuspectRule {
    /// One object retains a large share of the heap.
    SingleObject,
    /// The top-level instances of one type (each held from several places, by no single
    /// object) together retain a large share.
    ManyInstances,
}

impl SuspectRule {
    /// The rule's name in JSON: `single-object`, `many-instances`.
    pub fn name(self) -> &'static str {
        match self {
            SuspectRule::SingleObject => "single-object",
            SuspectRule::ManyInstances => "many-instances",
        }
    }
}

/// Objects of one type below an accumulation point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccumulatedType {
    /// The type.
    pub type_name: String,
    /// How many of its objects the accumulation point dominates.
    pub count: u64,
    /// What they retain, each byte counted once.
    pub retained_size: u64,
}

/// A leak suspect.
#[derive(Clone, Debug, PartialEq)]
pub struct Suspect {
    /// The rule that found it.
    pub rule: SuspectRule,
    /// Its retained size as a share of the reachable heap.
    pub share: f64,
    /// The suspect object (single object), or the largest of the instances (many instances).
    pub object: Option<ObjectView>,
    /// The suspect's type, or the type of the instances.
    pub type_name: String,
    /// 1, or the number of instances.
    pub count: u64,
    /// Bytes retained.
    pub retained_size: u64,
    /// Single object: where the retained bytes accumulate, down the dominator tree.
    pub accumulation_point: Option<ObjectView>,
    /// Single object: the objects the accumulation point dominates, by type, largest first.
    pub accumulated: Vec<AccumulatedType>,
    /// The shortest chain from the root to the accumulation point (single object) or to the
    /// largest instance (many instances); empty when there is none.
    pub path: Vec<PathStep>,
    /// Single object: the shortest chain to the largest of the first accumulated type's
    /// objects, which names the container the entries are held in; empty otherwise.
    pub entry_path: Vec<PathStep>,
    /// Single object: the objects whose release would free the accumulation point (its
    /// dominators, the nearest first, the root left out), so that a holder on a chain can be
    /// told to retain the point's bytes or only to hold them; empty otherwise.
    pub point_dominators: Vec<NodeId>,
}

/// Leak suspects, largest first.
#[derive(Clone, Debug, PartialEq)]
pub struct SuspectsView {
    /// The dump's runtime, whose rules name holders.
    pub runtime: heapgraph_model::Runtime,
    /// The share of the heap a suspect must retain.
    pub threshold: f64,
    /// The reachable heap's size (the root's retained size).
    pub total_retained: u64,
    /// The suspects.
    pub suspects: Vec<Suspect>,
}

/// One string value and the strings that hold it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DuplicateString {
    /// The value, as the dump names the strings.
    pub value: String,
    /// Strings with this value.
    pub count: u64,
    /// Their bytes, with their character data.
    pub total_bytes: u64,
    /// The bytes of every copy but one.
    pub wasted_bytes: u64,
}

/// Strings grouped by value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StringsView {
    /// String objects in the heap.
    pub strings: u64,
    /// Their bytes, with their character data.
    pub total_bytes: u64,
    /// Distinct values.
    pub distinct_values: u64,
    /// Values held by two strings or more.
    pub duplicated_values: u64,
    /// Bytes all copies beyond the first waste.
    pub wasted_bytes: u64,
    /// The values listed, ranked as asked.
    pub values: Vec<DuplicateString>,
}
