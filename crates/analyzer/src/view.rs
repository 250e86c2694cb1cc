//! Plain result structs that cross the analyzer's boundary: public fields, names resolved.
//!
//! report and cli render these; they never look inside the graph or the analysis.

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
    /// Types, by retained size (then shallow size, then name).
    pub types: Vec<TypeRow>,
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
    /// Distinct chains from the root to the target, shortest first, root and target included.
    pub paths: Vec<Vec<PathStep>>,
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
