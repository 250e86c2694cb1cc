//! The dominator tree's compact per-node columns: retained counts in a byte per node (most
//! objects dominate nothing or little, so a count below 255 is a byte and the rest are kept
//! beside) and reachability in a bit per node. Both index like slices.

use fixedbitset::{Block, FixedBitSet};
use rustc_hash::FxHashMap;
use std::ops::Index;

/// The byte that says "beside".
const BESIDE: u8 = u8::MAX;

/// The counts a byte holds, as `u32`s to index into (so that [`Index`] can return a reference).
static SMALL: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = i as u32;
        i += 1;
    }
    table
};

/// One count per node: `narrow[i]` when below 255, otherwise `beside[i]`.
///
/// Invariants: `beside` holds exactly the nodes whose `narrow` entry is `BESIDE`.
#[derive(Clone, Debug, Default)]
pub struct NodeCounts {
    narrow: Vec<u8>,
    beside: FxHashMap<u32, u32>,
}

impl NodeCounts {
    /// The counts moved into scratch files ([`Analysis::page_out_columns`](crate::Analysis::page_out_columns)).
    pub(crate) fn page_out(&mut self) {
        self.narrow = heapgraph_model::file_pages::page_out(std::mem::take(&mut self.narrow));
    }

    /// `n` counts of 1 (every node retains itself).
    pub fn ones(n: usize) -> Self {
        NodeCounts {
            narrow: vec![1; n],
            beside: FxHashMap::default(),
        }
    }

    /// The number of counts.
    pub fn len(&self) -> usize {
        self.narrow.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.narrow.is_empty()
    }

    /// The count of `node`.
    ///
    /// Panics if `node` is out of range.
    #[inline]
    pub fn get(&self, node: usize) -> u32 {
        self[node]
    }

    /// Replaces the count of `node`.
    ///
    /// Panics if `node` is out of range.
    #[inline]
    pub fn set(&mut self, node: usize, count: u32) {
        match u8::try_from(count) {
            Ok(small) if small != BESIDE => {
                if self.narrow[node] == BESIDE {
                    self.beside.remove(&(node as u32));
                }
                self.narrow[node] = small;
            }
            _ => {
                self.narrow[node] = BESIDE;
                self.beside.insert(node as u32, count);
            }
        }
    }

    /// Hints that the count of `node` will be read soon.
    #[inline]
    pub fn prefetch(&self, node: usize) {
        heapgraph_model::prefetch(&self.narrow, node);
    }

    /// Adds `more` to the count of `node`.
    #[inline]
    pub fn add(&mut self, node: usize, more: u32) {
        let count = self.get(node) + more;
        self.set(node, count);
    }

    /// The counts in node order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        (0..self.len()).map(move |node| self[node])
    }

    /// The counts as a plain vector.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

impl Index<usize> for NodeCounts {
    type Output = u32;

    #[inline]
    fn index(&self, node: usize) -> &u32 {
        match self.narrow[node] {
            BESIDE => &self.beside[&(node as u32)],
            small => &SMALL[usize::from(small)],
        }
    }
}

impl From<Vec<u32>> for NodeCounts {
    /// On every core: reopening a dump of 35 million objects made its counts compact in
    /// 0.10–0.13 s on one.
    fn from(counts: Vec<u32>) -> Self {
        use rayon::prelude::*;
        let narrow = counts
            .par_iter()
            .with_min_len(1 << 16)
            .map(|&count| match u8::try_from(count) {
                Ok(small) if small != BESIDE => small,
                _ => BESIDE,
            })
            .collect();
        let beside: Vec<(u32, u32)> = counts
            .par_iter()
            .with_min_len(1 << 16)
            .enumerate()
            .filter(|&(_, &count)| count >= u32::from(BESIDE))
            .map(|(node, &count)| (node as u32, count))
            .collect();
        NodeCounts {
            narrow,
            beside: beside.into_iter().collect(),
        }
    }
}

impl PartialEq for NodeCounts {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for NodeCounts {}

/// One flag per node, a bit each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeFlags(FixedBitSet);

impl NodeFlags {
    /// `n` flags, all clear.
    pub fn new(n: usize) -> Self {
        NodeFlags(FixedBitSet::with_capacity(n))
    }

    /// The number of flags.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets the flag of `node` to `value`.
    ///
    /// Panics if `node` is out of range.
    #[inline]
    pub fn set(&mut self, node: usize, value: bool) {
        self.0.set(node, value);
    }

    /// The flags in node order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = bool> + '_ {
        (0..self.len()).map(move |node| self[node])
    }

    /// How many flags are set.
    pub fn count_set(&self) -> usize {
        self.0.count_ones(..)
    }

    /// A flag per entry of `column`, set where `flag` says: a word of 64 flags at a time,
    /// where collecting them one by one grows the set per flag.
    pub fn of_column<T>(column: &[T], flag: impl Fn(&T) -> bool) -> Self {
        let words = column.chunks(Block::BITS as usize).map(|stretch| {
            stretch
                .iter()
                .enumerate()
                .fold(0, |word: Block, (at, value)| {
                    word | Block::from(flag(value)) << at
                })
        });
        NodeFlags(FixedBitSet::with_capacity_and_blocks(column.len(), words))
    }
}

impl Index<usize> for NodeFlags {
    type Output = bool;

    #[inline]
    fn index(&self, node: usize) -> &bool {
        assert!(node < self.len(), "node {node} of {}", self.len());
        if self.0.contains(node) { &true } else { &false }
    }
}

impl FromIterator<bool> for NodeFlags {
    fn from_iter<I: IntoIterator<Item = bool>>(iter: I) -> Self {
        let iter = iter.into_iter();
        // Sized once from the hint (exact for the analyzer's iterators); grown past it if need be.
        let mut bits = FixedBitSet::with_capacity(iter.size_hint().0);
        for (node, value) in iter.enumerate() {
            bits.grow(node + 1);
            bits.set(node, value);
        }
        NodeFlags(bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_cross_the_byte_both_ways() {
        let mut counts = NodeCounts::ones(4);
        counts.add(0, 253);
        assert_eq!((counts[0], counts.beside.len()), (254, 0));
        counts.add(0, 1);
        assert_eq!((counts[0], counts.beside.len()), (255, 1));
        counts.add(0, 1 << 30);
        assert_eq!(counts.get(0), (1 << 30) + 255);
        counts.set(0, 7);
        assert_eq!((counts[0], counts.beside.len()), (7, 0));
        let plain = vec![1, 300, 0, u32::MAX];
        assert_eq!(NodeCounts::from(plain.clone()).to_vec(), plain);
    }

    #[test]
    fn flags_read_back() {
        let values: Vec<bool> = (0..200).map(|i| i % 3 == 0).collect();
        let mut flags: NodeFlags = values.iter().copied().collect();
        assert_eq!(flags.iter().collect::<Vec<_>>(), values);
        assert_eq!(flags.count_set(), 67);
        flags.set(0, false);
        flags.set(1, true);
        assert!(!flags[0] && flags[1] && flags[3]);
        assert_eq!(NodeFlags::new(70).count_set(), 0);
    }
}
