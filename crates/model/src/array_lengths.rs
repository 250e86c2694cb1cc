//! The lengths of object arrays, where a dump records them: a sparse column beside the graph,
//! for the questions that need a collection's capacity (`analyzer::waste`). An array's length
//! cannot be read back from its shallow size, which the JVM rounds up to 8 bytes.

/// Lengths of some nodes (object arrays), sorted by node, with the bytes of one slot.
///
/// Invariants: `nodes` is strictly increasing and as long as `lengths`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArrayLengths {
    nodes: Vec<u32>,
    lengths: Vec<u32>,
    slot_bytes: u32,
}

impl ArrayLengths {
    /// The lengths of `pairs` (node index, length), each slot `slot_bytes` wide (a reference).
    /// The pairs are sorted here; a node given twice keeps its first length.
    pub fn from_pairs(mut pairs: Vec<(u32, u32)>, slot_bytes: u32) -> ArrayLengths {
        pairs.sort_by_key(|&(node, _)| node);
        pairs.dedup_by_key(|&mut (node, _)| node);
        let (nodes, lengths) = pairs.into_iter().unzip();
        ArrayLengths {
            nodes,
            lengths,
            slot_bytes,
        }
    }

    /// The lengths' vectors moved into scratch files (`HeapGraph::page_out_columns`); the
    /// lengths are unchanged.
    pub(crate) fn page_out(&mut self) {
        use crate::file_pages::page_out;
        self.nodes = page_out(std::mem::take(&mut self.nodes));
        self.lengths = page_out(std::mem::take(&mut self.lengths));
    }

    /// The length of the array at node index `node`, where it was recorded.
    pub fn get(&self, node: usize) -> Option<u32> {
        let node = u32::try_from(node).ok()?;
        let at = self.nodes.binary_search(&node).ok()?;
        Some(self.lengths[at])
    }

    /// Bytes of one slot (a reference); 0 where no length is recorded.
    pub fn slot_bytes(&self) -> u32 {
        self.slot_bytes
    }

    /// Whether no length is recorded.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The largest node index recorded, to check against the graph.
    pub(crate) fn last_node(&self) -> Option<u32> {
        self.nodes.last().copied()
    }
}

impl ArrayLengths {
    /// The recorded nodes and their lengths, both in node order.
    pub fn columns(&self) -> (&[u32], &[u32]) {
        (&self.nodes, &self.lengths)
    }
}

use crate::heap_graph::NodeId;

/// How full one collection is, as its runtime sized it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fill {
    /// Elements it holds.
    pub elements: u64,
    /// Slots it has room for.
    pub capacity: u64,
    /// Bytes of its table (part of the collection's shallow size).
    pub table_bytes: u64,
    /// Bytes a right-sized copy would not have.
    pub spare_bytes: u64,
}

/// The fill of some collections (the Python dumper's lists, dicts and sets), where a dump
/// records it: a sparse column beside the graph, as [`ArrayLengths`] is.
///
/// Invariants: `nodes` is strictly increasing and as long as `fills`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollectionFill {
    nodes: Vec<u32>,
    fills: Vec<Fill>,
}

impl CollectionFill {
    /// The fill of `rows` (node index, fill), sorted here; a node given twice keeps its first.
    pub fn from_rows(mut rows: Vec<(u32, Fill)>) -> CollectionFill {
        rows.sort_by_key(|&(node, _)| node);
        rows.dedup_by_key(|&mut (node, _)| node);
        let (nodes, fills) = rows.into_iter().unzip();
        CollectionFill { nodes, fills }
    }

    /// The collections, in node order, with their fill.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (NodeId, &Fill)> + '_ {
        self.nodes.iter().map(|&node| NodeId(node)).zip(&self.fills)
    }

    /// Whether no collection's fill is recorded.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The largest node index recorded, to check against the graph.
    pub(crate) fn last_node(&self) -> Option<u32> {
        self.nodes.last().copied()
    }
}
