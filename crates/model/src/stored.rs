//! An analysis as plain columns, stored beside a graph (the `.hgd` format's trailing section)
//! so that a converted dump reopens without recomputing: the one type that the importer reads
//! and writes and the analyzer produces and adopts, neither seeing the other.

use crate::columns::U64Column;
use crate::strings::StringId;

/// Analysis results, one entry per node in node order.
///
/// [`StoredAnalysis::NONE`] (`u32::MAX`) marks a node with no dominator or no distance
/// (unreachable nodes, and the root's dominator).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredAnalysis {
    /// Immediate dominator's node index, per node.
    pub idom: Vec<u32>,
    /// Retained size in bytes, per node, in the analyzer's own compact form (4 bytes a node
    /// below 4 GiB), so that neither reopening a file nor storing an analysis holds a second,
    /// wide copy.
    pub retained_size: U64Column,
    /// Nodes in each node's dominator subtree, itself included; empty when not stored, and
    /// then rebuilt from `idom`.
    pub retained_count: Vec<u32>,
    /// Distance from the root per node, as the analyzer computed it (for V8, DevTools' raw
    /// distance, which counts from 100000000 for nodes reached only from system roots).
    pub distance: Vec<u32>,
    /// Per-type totals, where stored.
    pub type_totals: Option<TypeTotals>,
    /// Each node's parent on the chain from the root that `paths` merges (the breadth-first
    /// search that enters through named roots first), [`StoredAnalysis::NONE`] for the root and
    /// where the search does not reach; empty when not stored.
    pub chain_parent: Vec<u32>,
}

impl StoredAnalysis {
    /// "None": no dominator, or no distance.
    pub const NONE: u32 = u32::MAX;
}

/// Per-type totals over real (non-synthetic) objects, one row per type: column `i` of each
/// vector describes type `types[i]`. Rows are in order of first appearance in node order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TypeTotals {
    /// The type's name, in the graph's string table (findable).
    pub types: Vec<StringId>,
    /// Objects of the type.
    pub count: Vec<u64>,
    /// Their shallow sizes, summed.
    pub shallow: Vec<u64>,
    /// Their retained sizes, with each retained byte counted once (an instance inside the
    /// dominator subtree of another instance of its type is not added again).
    pub retained: Vec<u64>,
}
