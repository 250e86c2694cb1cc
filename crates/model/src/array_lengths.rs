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
