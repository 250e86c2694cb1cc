//! Compact columns for the heap graph: the per-node and per-edge values that would take 8 bytes
//! (offsets, sizes, object ids) or 4 (labels, edge names) stored in fewer, with an exact
//! fallback for the values that do not fit.
//!
//! A heap graph of tens of millions of objects is mostly these columns, and nearly every value
//! in them is small: offsets below 2³² edges, sizes below 4 GiB, addresses in one heap range,
//! edge names that are field names or small indices, labels that most nodes lack. Each type
//! here stores the common case narrow and keeps the rest beside it, so that no graph is refused
//! and none pays for the rare value. Every type is built by pushing values in order (or from a
//! plain vector) and read by index or in order.
//!
//! One file per type; each states its layout and invariants on the type.

mod edge_kinds;
mod edge_names;
mod node_kinds;
mod node_names;
mod node_types;
mod offsets;
mod packed;
mod u64_column;

pub use edge_kinds::EdgeKinds;
pub use edge_names::{EdgeNames, ParkedEdgeNames};
pub use node_kinds::NodeKinds;
pub use node_names::NodeNames;
pub use node_types::NodeTypes;
pub use offsets::EdgeOffsets;
pub use packed::PackedU64;
pub use u64_column::U64Column;

/// Two exact-size iterators one after the other (`Chain` is not `ExactSizeIterator`).
struct ChainExact<A, B>(A, B);

impl<T, A: ExactSizeIterator<Item = T>, B: ExactSizeIterator<Item = T>> Iterator
    for ChainExact<A, B>
{
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.0.next().or_else(|| self.1.next())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.0.len() + self.1.len();
        (n, Some(n))
    }
}

impl<T, A: ExactSizeIterator<Item = T>, B: ExactSizeIterator<Item = T>> ExactSizeIterator
    for ChainExact<A, B>
{
}

/// Columns are equal when they hold the same values, however each stores them.
macro_rules! equal_by_values {
    ($($column:ty),*) => {$(
        impl PartialEq for $column {
            fn eq(&self, other: &Self) -> bool {
                self.len() == other.len() && self.iter().eq(other.iter())
            }
        }

        impl Eq for $column {}
    )*};
}

equal_by_values!(
    EdgeOffsets,
    U64Column,
    PackedU64,
    NodeNames,
    EdgeNames,
    NodeTypes,
    EdgeKinds,
    NodeKinds
);
