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

use crate::heap_graph::EdgeKind;
use crate::strings::StringId;
use rustc_hash::FxHashMap;
use std::ops::{Index, Range};

/// Offsets per block of an [`EdgeOffsets`], as a power of two.
const OFFSET_BLOCK_BITS: u32 = 6;

/// Marks an offset of a block kept whole beside the steps.
const WIDE_BLOCK: u16 = u16::MAX;

/// CSR offsets (`first_edge`, a string table's ends): about two bytes per entry whatever the
/// edge count.
///
/// Offsets never decrease and a node has few edges, so each block of 64 offsets stores its
/// first offset (`bases`, 8 bytes) and each offset its step above it (`steps`, a `u16`). A
/// block whose offsets span 2¹⁶ − 1 or more (a node with that many edges) keeps all its
/// offsets beside instead, at 8 bytes each, and marks its steps `WIDE_BLOCK`.
///
/// Invariants: `bases` has one entry per started block; a block's steps are all
/// `WIDE_BLOCK` exactly when its number is in `wide_blocks` (sorted), whose position there
/// times 64 is where its offsets start in `wide`; `last` is the last offset pushed;
/// `decreases_at` is the first position whose offset was below the one before (the column is
/// then not a valid CSR, and [`EdgeOffsets::first_decrease`] says so).
#[derive(Clone, Debug, Default)]
pub struct EdgeOffsets {
    bases: Vec<u64>,
    steps: Vec<u16>,
    wide_blocks: Vec<u32>,
    wide: Vec<u64>,
    last: u64,
    decreases_at: Option<usize>,
}

impl EdgeOffsets {
    /// An empty column.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty column with room for `n` offsets.
    pub fn with_capacity(n: usize) -> Self {
        EdgeOffsets {
            bases: Vec::with_capacity((n >> OFFSET_BLOCK_BITS) + 1),
            steps: Vec::with_capacity(n),
            ..Self::default()
        }
    }

    /// Appends `offset`, which should be at least the last one.
    pub fn push(&mut self, offset: u64) {
        let position = self.steps.len();
        if offset < self.last {
            self.decreases_at.get_or_insert(position);
        }
        self.last = offset;
        let in_block = position & ((1 << OFFSET_BLOCK_BITS) - 1);
        if in_block == 0 {
            self.bases.push(offset);
        }
        let block = (position >> OFFSET_BLOCK_BITS) as u32;
        if self.wide_blocks.last() == Some(&block) {
            self.steps.push(WIDE_BLOCK);
            self.wide.push(offset);
            return;
        }
        let base = self.bases[block as usize];
        match offset
            .checked_sub(base)
            .and_then(|step| u16::try_from(step).ok())
        {
            Some(step) if step != WIDE_BLOCK => self.steps.push(step),
            _ => {
                // The block goes beside whole: its offsets so far, then this one.
                let start = position - in_block;
                self.wide_blocks.push(block);
                for at in start..position {
                    self.wide.push(base + u64::from(self.steps[at]));
                    self.steps[at] = WIDE_BLOCK;
                }
                self.steps.push(WIDE_BLOCK);
                self.wide.push(offset);
            }
        }
    }

    /// Reserves room for `additional` more offsets.
    pub fn reserve_exact(&mut self, additional: usize) {
        self.steps.reserve_exact(additional);
        self.bases
            .reserve_exact((additional >> OFFSET_BLOCK_BITS) + 1);
    }

    /// How many offsets fit without reallocating.
    pub fn capacity(&self) -> usize {
        self.steps.capacity()
    }

    /// The number of offsets.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The offset at `position`.
    ///
    /// Panics if `position` is out of range.
    #[inline]
    pub fn get(&self, position: usize) -> u64 {
        match self.steps[position] {
            WIDE_BLOCK => self.wide_at(position),
            step => self.bases[position >> OFFSET_BLOCK_BITS] + u64::from(step),
        }
    }

    #[cold]
    fn wide_at(&self, position: usize) -> u64 {
        let block = (position >> OFFSET_BLOCK_BITS) as u32;
        let at = self.wide_blocks.partition_point(|&b| b < block);
        self.wide[(at << OFFSET_BLOCK_BITS) + (position & ((1 << OFFSET_BLOCK_BITS) - 1))]
    }

    /// The last offset, if any.
    pub fn last(&self) -> Option<u64> {
        (!self.is_empty()).then_some(self.last)
    }

    /// The edge indices of node `node`: `get(node)..get(node + 1)`.
    #[inline]
    pub fn range(&self, node: usize) -> Range<usize> {
        self.get(node) as usize..self.get(node + 1) as usize
    }

    /// The offsets in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        (0..self.len()).map(move |position| self.get(position))
    }

    /// The offsets as plain `u64`s.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }

    /// The first position whose offset is below the one before, if any.
    pub fn first_decrease(&self) -> Option<usize> {
        self.decreases_at
    }

    /// The number of leading offsets for which `pred` holds, `pred` being true then false
    /// along the column (a binary search, as [`slice::partition_point`]).
    pub fn partition_point(&self, mut pred: impl FnMut(u64) -> bool) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            if pred(self.get(mid)) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }
}

impl From<Vec<u64>> for EdgeOffsets {
    fn from(offsets: Vec<u64>) -> Self {
        let mut column = EdgeOffsets::with_capacity(offsets.len());
        for offset in offsets {
            column.push(offset);
        }
        column
    }
}

impl FromIterator<u64> for EdgeOffsets {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut column = EdgeOffsets::with_capacity(iter.size_hint().0);
        for offset in iter {
            column.push(offset);
        }
        column
    }
}

/// A per-node column of `u64` values (sizes, object ids) stored as `value = base + (narrow <<
/// shift)` in a `u32` where that fits, the others beside it.
///
/// Shallow sizes use `base` 0 and `shift` 0, and only objects of 4 GiB or more go beside.
/// Object ids (addresses) are compacted after they are all known ([`U64Column::compact`]):
/// `base` is the least id and `shift` the alignment they share, so a heap of up to 32 GiB of
/// 8-byte-aligned objects fits, and ids outside it (0 for synthetic nodes) go beside.
///
/// Invariants: `narrow[i] == u32::MAX` exactly when value `i` is beside, at the position of `i`
/// in `wide_at` (sorted), with the value at the same position of `wide`.
#[derive(Clone, Debug, Default)]
pub struct U64Column {
    base: u64,
    shift: u32,
    narrow: Vec<u32>,
    wide_at: Vec<u32>,
    wide: Vec<u64>,
}

/// Marks a value of a [`U64Column`] kept beside the narrow ones.
const BESIDE: u32 = u32::MAX;

impl U64Column {
    /// An empty column of plain values (base 0, shift 0).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty column of plain values with room for `n`.
    pub fn with_capacity(n: usize) -> Self {
        U64Column {
            narrow: Vec::with_capacity(n),
            ..Self::default()
        }
    }

    /// `values`, with the base and shift that fit the most of them: all of them when they span
    /// fewer than 2³² − 1 steps of their common alignment, otherwise those above the least
    /// nonzero one (zeros, as synthetic nodes' ids, go beside), provided no more than 4096 or
    /// one in 16 go beside; otherwise plain.
    pub fn compact(values: &[u64]) -> Self {
        let fit = |values: &mut dyn Iterator<Item = u64>| {
            let (mut min, mut max, mut bits) = (u64::MAX, 0u64, 0u64);
            for value in values {
                min = min.min(value);
                max = max.max(value);
                bits |= value;
            }
            (min, max, bits)
        };
        let mut all = values.iter().copied();
        let (min, max, _) = fit(&mut all);
        let shift_for = |base: u64, values: &mut dyn Iterator<Item = u64>| {
            let differences = values.fold(0u64, |bits, value| bits | (value - base));
            if differences == 0 {
                0
            } else {
                differences.trailing_zeros()
            }
        };
        let spans = |base: u64, max: u64, shift: u32| (max - base) >> shift < u64::from(BESIDE);
        let mut column = U64Column::with_capacity(values.len());
        if values.is_empty() {
            return column;
        }
        let shift = shift_for(min, &mut values.iter().copied());
        if spans(min, max, shift) {
            column.base = min;
            column.shift = shift;
        } else {
            let mut nonzero = values.iter().copied().filter(|&value| value != 0);
            let (base, max, _) = fit(&mut nonzero);
            let n_zero = values.iter().filter(|&&value| value == 0).count();
            if base != u64::MAX && n_zero <= (values.len() / 16).max(4096) {
                let shift = shift_for(
                    base,
                    &mut values.iter().copied().filter(|&value| value != 0),
                );
                if spans(base, max, shift) {
                    column.base = base;
                    column.shift = shift;
                }
            }
        }
        for &value in values {
            column.push(value);
        }
        column
    }

    /// Appends `value`.
    pub fn push(&mut self, value: u64) {
        let narrow = self.narrow_of(value);
        if narrow == BESIDE {
            self.wide_at.push(self.narrow.len() as u32);
            self.wide.push(value);
        }
        self.narrow.push(narrow);
    }

    /// The narrow form of `value`, or `BESIDE`.
    #[inline]
    fn narrow_of(&self, value: u64) -> u32 {
        match value.checked_sub(self.base) {
            Some(offset)
                if offset & ((1u64 << self.shift) - 1) == 0
                    && offset >> self.shift < u64::from(BESIDE) =>
            {
                (offset >> self.shift) as u32
            }
            _ => BESIDE,
        }
    }

    /// Reserves room for `additional` more values.
    pub fn reserve_exact(&mut self, additional: usize) {
        self.narrow.reserve_exact(additional);
    }

    /// How many values fit without reallocating.
    pub fn capacity(&self) -> usize {
        self.narrow.capacity()
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.narrow.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.narrow.is_empty()
    }

    /// The value at `index`.
    ///
    /// Panics if `index` is out of range.
    #[inline]
    pub fn get(&self, index: usize) -> u64 {
        let narrow = self.narrow[index];
        if narrow != BESIDE {
            self.base + (u64::from(narrow) << self.shift)
        } else {
            self.beside(index)
        }
    }

    #[cold]
    fn beside(&self, index: usize) -> u64 {
        let at = self.wide_at.partition_point(|&i| (i as usize) < index);
        self.wide[at]
    }

    /// Replaces the value at `index`.
    ///
    /// Panics if `index` is out of range.
    #[inline]
    pub fn set(&mut self, index: usize, value: u64) {
        let narrow = self.narrow_of(value);
        if narrow != BESIDE && self.narrow[index] != BESIDE {
            self.narrow[index] = narrow;
        } else {
            self.set_beside(index, value, narrow);
        }
    }

    /// [`U64Column::set`] where the old or the new value is beside.
    #[cold]
    fn set_beside(&mut self, index: usize, value: u64, narrow: u32) {
        let at = self.wide_at.partition_point(|&i| (i as usize) < index);
        let was_beside = self.narrow[index] == BESIDE;
        match (was_beside, narrow == BESIDE) {
            (true, true) => self.wide[at] = value,
            (true, false) => {
                self.wide_at.remove(at);
                self.wide.remove(at);
            }
            (false, true) => {
                self.wide_at.insert(at, index as u32);
                self.wide.insert(at, value);
            }
            (false, false) => {}
        }
        self.narrow[index] = narrow;
    }

    /// The values in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        let mut beside = self.wide.iter();
        self.narrow.iter().map(move |&narrow| {
            if narrow != BESIDE {
                self.base + (u64::from(narrow) << self.shift)
            } else {
                // One wide value per marker, in order.
                beside.next().copied().unwrap_or(0)
            }
        })
    }

    /// The values as a plain vector.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }

    /// The sum of the values.
    pub fn sum(&self) -> u64 {
        self.iter().sum()
    }

    /// Appends every value of `other`.
    pub fn extend_from(&mut self, other: &U64Column) {
        if other.base == self.base && other.shift == self.shift {
            let offset = self.narrow.len() as u32;
            self.narrow.extend_from_slice(&other.narrow);
            self.wide_at
                .extend(other.wide_at.iter().map(|&i| i + offset));
            self.wide.extend_from_slice(&other.wide);
        } else {
            for value in other.iter() {
                self.push(value);
            }
        }
    }
}

impl From<Vec<u64>> for U64Column {
    /// Plain values (base 0, shift 0); see [`U64Column::compact`] for ids.
    fn from(values: Vec<u64>) -> Self {
        values.into_iter().collect()
    }
}

impl FromIterator<u64> for U64Column {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut column = U64Column::with_capacity(iter.size_hint().0);
        for value in iter {
            column.push(value);
        }
        column
    }
}

/// Values per block of a [`PackedU64`], as a power of two: small enough that a block's values
/// stay within 2¹⁵ steps of its first (256 consecutive objects of a heap span kilobytes).
const BLOCK_BITS: u32 = 8;

/// Marks a value of a [`PackedU64`] kept beside the packed ones.
const BESIDE_STEP: i16 = i16::MIN;

/// A per-node column of `u64` values in about 2 bytes each, for values that change little
/// from node to node: object ids (addresses in allocation order, V8's ids that count up) and
/// shallow sizes. Each block of 256 values stores its first value once, and each value its
/// signed difference from it in units of `1 << shift` (the alignment all values share) as an
/// `i16`; values outside that window go beside. When more than one value in 8 would go beside
/// (ids scattered over the address space), the column turns plain, 8 bytes a value.
///
/// Invariants: in `Packed`, `bases` has one entry per started block; `steps[i] == BESIDE_STEP`
/// exactly when value `i` is beside, at the position of `i` in `wide_at` (sorted), with the
/// value at the same position of `wide`.
#[derive(Clone, Debug)]
pub struct PackedU64(PackedRepr);

#[derive(Clone, Debug)]
enum PackedRepr {
    Packed {
        shift: u32,
        bases: Vec<u64>,
        steps: Vec<i16>,
        wide_at: Vec<u32>,
        wide: Vec<u64>,
    },
    Plain(Vec<u64>),
}

impl Default for PackedU64 {
    fn default() -> Self {
        PackedU64::with_capacity(0)
    }
}

impl PackedU64 {
    /// An empty column (steps of 1).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty column with room for `n` values (steps of 1).
    pub fn with_capacity(n: usize) -> Self {
        PackedU64::with_shift(n, 0)
    }

    /// An empty column with room for `n` values in steps of `1 << shift` (the alignment all
    /// the values will share, as [`PackedU64::alignment`] finds it; others go beside).
    pub fn with_shift(n: usize, shift: u32) -> Self {
        PackedU64(PackedRepr::Packed {
            shift,
            bases: Vec::with_capacity(n >> BLOCK_BITS),
            steps: Vec::with_capacity(n),
            wide_at: Vec::new(),
            wide: Vec::new(),
        })
    }

    /// The alignment, as a shift, that `values` share relative to the first of them (63 at
    /// most; 0 for none).
    pub fn alignment(values: impl IntoIterator<Item = u64>) -> u32 {
        let mut values = values.into_iter();
        let Some(first) = values.next() else {
            return 0;
        };
        let differences = values.fold(0u64, |bits, value| bits | value.wrapping_sub(first));
        if differences == 0 {
            0
        } else {
            differences.trailing_zeros()
        }
    }

    /// `values`, in steps of the alignment they share (relative to the first).
    pub fn compact(values: &[u64]) -> Self {
        let shift = PackedU64::alignment(values.iter().copied());
        let mut column = PackedU64::with_shift(values.len(), shift);
        for &value in values {
            column.push(value);
        }
        column
    }

    /// Whether the values are packed (rather than plain).
    pub fn is_packed(&self) -> bool {
        matches!(self.0, PackedRepr::Packed { .. })
    }

    /// Appends `value`.
    pub fn push(&mut self, value: u64) {
        let crowded = match &mut self.0 {
            PackedRepr::Packed {
                shift,
                bases,
                steps,
                wide_at,
                wide,
            } => {
                let index = steps.len();
                if index & ((1 << BLOCK_BITS) - 1) == 0 {
                    bases.push(value);
                }
                let base = bases.last().copied().unwrap_or(value);
                let difference = value.wrapping_sub(base) as i64;
                let step = (difference & ((1i64 << *shift) - 1) == 0)
                    .then_some(difference >> *shift)
                    .and_then(|step| i16::try_from(step).ok())
                    .filter(|&step| step != BESIDE_STEP);
                match step {
                    Some(step) => {
                        steps.push(step);
                        false
                    }
                    None => {
                        steps.push(BESIDE_STEP);
                        wide_at.push(index as u32);
                        wide.push(value);
                        wide.len() > 4096 && wide.len() > steps.len() / 8
                    }
                }
            }
            PackedRepr::Plain(values) => {
                values.push(value);
                false
            }
        };
        if crowded {
            let plain = self.to_vec();
            self.0 = PackedRepr::Plain(plain);
        }
    }

    /// Reserves room for `additional` more values.
    pub fn reserve_exact(&mut self, additional: usize) {
        match &mut self.0 {
            PackedRepr::Packed { steps, bases, .. } => {
                steps.reserve_exact(additional);
                bases.reserve_exact((additional >> BLOCK_BITS) + 1);
            }
            PackedRepr::Plain(values) => values.reserve_exact(additional),
        }
    }

    /// How many values fit without reallocating.
    pub fn capacity(&self) -> usize {
        match &self.0 {
            PackedRepr::Packed { steps, .. } => steps.capacity(),
            PackedRepr::Plain(values) => values.capacity(),
        }
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        match &self.0 {
            PackedRepr::Packed { steps, .. } => steps.len(),
            PackedRepr::Plain(values) => values.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value at `index`.
    ///
    /// Panics if `index` is out of range.
    #[inline]
    pub fn get(&self, index: usize) -> u64 {
        match &self.0 {
            PackedRepr::Packed {
                shift,
                bases,
                steps,
                wide_at,
                wide,
            } => match steps[index] {
                BESIDE_STEP => wide[wide_at.partition_point(|&at| (at as usize) < index)],
                step => bases[index >> BLOCK_BITS].wrapping_add((i64::from(step) << shift) as u64),
            },
            PackedRepr::Plain(values) => values[index],
        }
    }

    /// The values in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        const NONE: (u32, &[u64], &[i16], &[u64]) = (0, &[], &[], &[]);
        let ((shift, bases, steps, wide), plain) = match &self.0 {
            PackedRepr::Packed {
                shift,
                bases,
                steps,
                wide,
                ..
            } => ((*shift, &bases[..], &steps[..], &wide[..]), &[][..]),
            PackedRepr::Plain(values) => (NONE, &values[..]),
        };
        let mut beside = wide.iter();
        let packed = steps
            .iter()
            .enumerate()
            .map(move |(index, &step)| match step {
                // One value beside per marker, in order.
                BESIDE_STEP => beside.next().copied().unwrap_or(0),
                step => bases[index >> BLOCK_BITS].wrapping_add((i64::from(step) << shift) as u64),
            });
        // One of the two is empty.
        ChainExact(packed, plain.iter().copied())
    }

    /// The values as a plain vector.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }

    /// The sum of the values.
    pub fn sum(&self) -> u64 {
        self.iter().sum()
    }

    /// Appends every value of `other`.
    pub fn extend_from(&mut self, other: &PackedU64) {
        self.reserve_exact(other.len());
        for value in other.iter() {
            self.push(value);
        }
    }
}

impl From<Vec<u64>> for PackedU64 {
    fn from(values: Vec<u64>) -> Self {
        values.into_iter().collect()
    }
}

impl FromIterator<u64> for PackedU64 {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut column = PackedU64::with_capacity(iter.size_hint().0);
        for value in iter {
            column.push(value);
        }
        column
    }
}

/// Node labels: one [`StringId`] per node, stored per node (`Dense`) where most nodes have one
/// (V8), and as a sorted list of the labelled nodes (`Sparse`) where most have none (Java
/// objects other than strings, classes and threads; Python objects).
///
/// Invariants: `Dense` has `len` entries; `Sparse`'s `nodes` are sorted, distinct and below
/// `len`, `names` has as many entries and none is [`StringId::EMPTY`].
#[derive(Clone, Debug)]
pub struct NodeNames {
    len: usize,
    repr: NamesRepr,
}

#[derive(Clone, Debug)]
enum NamesRepr {
    Dense(Vec<StringId>),
    Sparse {
        nodes: Vec<u32>,
        names: Vec<StringId>,
    },
}

impl Default for NodeNames {
    fn default() -> Self {
        NodeNames::from_pairs(0, Vec::new())
    }
}

impl NodeNames {
    /// Labels from `(node, name)` pairs, any order, for nodes `0..len`; where a node appears
    /// more than once the last pair wins, and nodes without a pair have no label. Pairs for
    /// nodes at or past `len` are ignored.
    pub fn from_pairs(len: usize, mut pairs: Vec<(u32, StringId)>) -> Self {
        // Stable: equal nodes stay in the order given, so the last one is the later pair.
        pairs.sort_by_key(|&(node, _)| node);
        let mut nodes: Vec<u32> = Vec::with_capacity(pairs.len());
        let mut names: Vec<StringId> = Vec::with_capacity(pairs.len());
        for (node, name) in pairs {
            if node as usize >= len {
                break;
            }
            if nodes.last() == Some(&node) {
                if let Some(last) = names.last_mut() {
                    *last = name;
                }
            } else {
                nodes.push(node);
                names.push(name);
            }
        }
        let mut kept = 0;
        for i in 0..nodes.len() {
            if names[i] != StringId::EMPTY {
                nodes[kept] = nodes[i];
                names[kept] = names[i];
                kept += 1;
            }
        }
        nodes.truncate(kept);
        names.truncate(kept);
        if Self::dense_is_smaller(len, kept) {
            let mut dense = vec![StringId::EMPTY; len];
            for (&node, &name) in nodes.iter().zip(&names) {
                dense[node as usize] = name;
            }
            return NodeNames {
                len,
                repr: NamesRepr::Dense(dense),
            };
        }
        nodes.shrink_to_fit();
        names.shrink_to_fit();
        NodeNames {
            len,
            repr: NamesRepr::Sparse { nodes, names },
        }
    }

    /// A sparse list costs 8 bytes per labelled node, a dense one 4 per node.
    fn dense_is_smaller(len: usize, n_named: usize) -> bool {
        n_named * 2 > len
    }

    /// The number of nodes (labelled or not).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The label of `node` ([`StringId::EMPTY`] for none).
    ///
    /// Panics if `node` is out of range.
    #[inline]
    pub fn get(&self, node: usize) -> StringId {
        assert!(node < self.len, "node {node} of {}", self.len);
        match &self.repr {
            NamesRepr::Dense(dense) => dense[node],
            NamesRepr::Sparse { nodes, names } => match nodes.binary_search(&(node as u32)) {
                Ok(at) => names[at],
                Err(_) => StringId::EMPTY,
            },
        }
    }

    /// The labels of every node in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = StringId> + '_ {
        let (dense, sparse) = match &self.repr {
            NamesRepr::Dense(dense) => (Some(dense.iter()), None),
            NamesRepr::Sparse { nodes, names } => (None, Some((nodes, names))),
        };
        let mut dense = dense;
        let mut at = 0;
        (0..self.len).map(move |node| {
            if let Some(dense) = &mut dense {
                return dense.next().copied().unwrap_or(StringId::EMPTY);
            }
            match sparse {
                Some((nodes, names)) if nodes.get(at) == Some(&(node as u32)) => {
                    at += 1;
                    names[at - 1]
                }
                _ => StringId::EMPTY,
            }
        })
    }

    /// The labelled nodes and their labels, in node order.
    pub fn named(&self) -> Box<dyn Iterator<Item = (u32, StringId)> + '_> {
        match &self.repr {
            NamesRepr::Dense(dense) => Box::new(
                dense
                    .iter()
                    .enumerate()
                    .filter(|&(_, &name)| name != StringId::EMPTY)
                    .map(|(node, &name)| (node as u32, name)),
            ),
            NamesRepr::Sparse { nodes, names } => {
                Box::new(nodes.iter().copied().zip(names.iter().copied()))
            }
        }
    }

    /// The labels as one id per node.
    pub fn to_vec(&self) -> Vec<StringId> {
        self.iter().collect()
    }
}

impl From<Vec<StringId>> for NodeNames {
    /// One label per node; stored sparse when most are empty.
    fn from(dense: Vec<StringId>) -> Self {
        let len = dense.len();
        let n_named = dense
            .iter()
            .filter(|&&name| name != StringId::EMPTY)
            .count();
        if Self::dense_is_smaller(len, n_named) {
            return NodeNames {
                len,
                repr: NamesRepr::Dense(dense),
            };
        }
        let pairs = dense
            .iter()
            .enumerate()
            .filter(|&(_, &name)| name != StringId::EMPTY)
            .map(|(node, &name)| (node as u32, name))
            .collect();
        NodeNames::from_pairs(len, pairs)
    }
}

/// Edge names (a [`StringId`]'s raw value, or an index): two bytes per edge while nearly all
/// fit in 16 bits (Java's field names and the indices of all but huge arrays), the rest beside;
/// four bytes per edge otherwise (V8, whose property names are spread over its whole string
/// table). The column turns plain by itself once too many names are beside, unless it was
/// made [`EdgeNames::kept_narrow`] (a part of a larger column, whose own share of wide names
/// says little about the whole's; [`EdgeNames::settle`] decides then).
#[derive(Clone, Debug)]
pub struct EdgeNames(NamesOfEdges, Widening);

/// Whether an [`EdgeNames`] may turn plain as names arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Widening {
    Automatic,
    OnSettle,
}

/// Invariants: in `Narrow`, `narrow[e] == u16::MAX` exactly when the name of edge `e` is beside,
/// at the position of `e` in `wide_at` (sorted), with the name at the same position of `wide`.
#[derive(Clone, Debug)]
enum NamesOfEdges {
    Narrow {
        narrow: Vec<u16>,
        wide_at: Vec<u64>,
        wide: Vec<u32>,
    },
    Wide(Vec<u32>),
}

impl Default for EdgeNames {
    fn default() -> Self {
        EdgeNames::new()
    }
}

/// Whether an [`EdgeNames`] with `n_beside` of `n_edges` names beside should turn plain: past
/// one in 8 (at 12 bytes each, one in 6 would cost the 2 bytes saved per edge).
fn too_many_beside(n_beside: usize, n_edges: usize) -> bool {
    n_beside > 4096 && n_beside > n_edges / 8
}

impl EdgeNames {
    /// An empty column (16-bit until shown otherwise).
    pub fn new() -> Self {
        EdgeNames::with_capacity(0)
    }

    /// An empty column with room for `n` names.
    pub fn with_capacity(n: usize) -> Self {
        EdgeNames(
            NamesOfEdges::Narrow {
                narrow: Vec::with_capacity(n),
                wide_at: Vec::new(),
                wide: Vec::new(),
            },
            Widening::Automatic,
        )
    }

    /// An empty column with room for `n` names that stays 16-bit until [`EdgeNames::settle`],
    /// for the parts of a column built in pieces and joined with [`EdgeNames::extend_from`].
    pub fn kept_narrow(n: usize) -> Self {
        let mut column = EdgeNames::with_capacity(n);
        column.1 = Widening::OnSettle;
        column
    }

    /// Turns the column plain if too many of its names are beside, and lets it do so by itself
    /// from now on.
    pub fn settle(&mut self) {
        self.1 = Widening::Automatic;
        if let NamesOfEdges::Narrow { narrow, wide, .. } = &self.0
            && too_many_beside(wide.len(), narrow.len())
        {
            self.widen();
        }
    }

    /// Whether the names are stored in 16 bits (with a few beside).
    pub fn is_narrow(&self) -> bool {
        matches!(self.0, NamesOfEdges::Narrow { .. })
    }

    /// Appends `name`.
    pub fn push(&mut self, name: u32) {
        let crowded = match &mut self.0 {
            NamesOfEdges::Narrow {
                narrow,
                wide_at,
                wide,
            } => match u16::try_from(name) {
                Ok(short) if short != u16::MAX => {
                    narrow.push(short);
                    false
                }
                _ => {
                    wide_at.push(narrow.len() as u64);
                    wide.push(name);
                    narrow.push(u16::MAX);
                    self.1 == Widening::Automatic && too_many_beside(wide.len(), narrow.len())
                }
            },
            NamesOfEdges::Wide(names) => {
                names.push(name);
                false
            }
        };
        if crowded {
            self.widen();
        }
    }

    /// Turns the column plain.
    fn widen(&mut self) {
        let NamesOfEdges::Narrow { narrow, .. } = &self.0 else {
            return;
        };
        let mut plain = Vec::with_capacity(narrow.capacity());
        plain.extend(self.iter());
        self.0 = NamesOfEdges::Wide(plain);
        self.1 = Widening::Automatic;
    }

    /// Reserves room for `additional` more names.
    pub fn reserve_exact(&mut self, additional: usize) {
        match &mut self.0 {
            NamesOfEdges::Narrow { narrow, .. } => narrow.reserve_exact(additional),
            NamesOfEdges::Wide(names) => names.reserve_exact(additional),
        }
    }

    /// The number of names.
    pub fn len(&self) -> usize {
        match &self.0 {
            NamesOfEdges::Narrow { narrow, .. } => narrow.len(),
            NamesOfEdges::Wide(names) => names.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name of edge `edge`.
    ///
    /// Panics if `edge` is out of range.
    #[inline]
    pub fn get(&self, edge: usize) -> u32 {
        match &self.0 {
            NamesOfEdges::Narrow {
                narrow,
                wide_at,
                wide,
            } => match narrow[edge] {
                u16::MAX => wide[wide_at.partition_point(|&at| (at as usize) < edge)],
                short => u32::from(short),
            },
            NamesOfEdges::Wide(names) => names[edge],
        }
    }

    /// Replaces the name of edge `edge`.
    ///
    /// Panics if `edge` is out of range.
    pub fn set(&mut self, edge: usize, name: u32) {
        match &mut self.0 {
            NamesOfEdges::Narrow {
                narrow,
                wide_at,
                wide,
            } => {
                let at = wide_at.partition_point(|&at| (at as usize) < edge);
                let was_beside = narrow[edge] == u16::MAX;
                let short = u16::try_from(name).ok().filter(|&short| short != u16::MAX);
                match (was_beside, short) {
                    (true, None) => wide[at] = name,
                    (true, Some(short)) => {
                        wide_at.remove(at);
                        wide.remove(at);
                        narrow[edge] = short;
                    }
                    (false, None) => {
                        wide_at.insert(at, edge as u64);
                        wide.insert(at, name);
                        narrow[edge] = u16::MAX;
                    }
                    (false, Some(short)) => narrow[edge] = short,
                }
            }
            NamesOfEdges::Wide(names) => names[edge] = name,
        }
    }

    /// The names in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        let (narrow, wide, plain): (&[u16], &[u32], &[u32]) = match &self.0 {
            NamesOfEdges::Narrow { narrow, wide, .. } => (narrow, wide, &[]),
            NamesOfEdges::Wide(names) => (&[], &[], names),
        };
        let mut beside = wide.iter();
        let narrow = narrow.iter().map(move |&short| match short {
            // One name beside per marker, in order.
            u16::MAX => beside.next().copied().unwrap_or(0),
            short => u32::from(short),
        });
        // One of the two is empty.
        ChainExact(narrow, plain.iter().copied())
    }

    /// The names as a plain vector.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }

    /// Appends every name of `other`.
    pub fn extend_from(&mut self, other: &EdgeNames) {
        if let (
            NamesOfEdges::Narrow {
                narrow,
                wide_at,
                wide,
            },
            NamesOfEdges::Narrow {
                narrow: other_narrow,
                wide_at: other_at,
                wide: other_wide,
            },
        ) = (&mut self.0, &other.0)
        {
            let offset = narrow.len() as u64;
            narrow.extend_from_slice(other_narrow);
            wide_at.extend(other_at.iter().map(|&at| at + offset));
            wide.extend_from_slice(other_wide);
            if self.1 == Widening::Automatic && too_many_beside(wide.len(), narrow.len()) {
                self.widen();
            }
            return;
        }
        self.widen();
        if let NamesOfEdges::Wide(names) = &mut self.0 {
            names.extend(other.iter());
        }
    }
}

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

impl From<Vec<u32>> for EdgeNames {
    fn from(names: Vec<u32>) -> Self {
        let n_beside = names
            .iter()
            .filter(|&&name| name >= u32::from(u16::MAX))
            .count();
        if too_many_beside(n_beside, names.len()) {
            return EdgeNames(NamesOfEdges::Wide(names), Widening::Automatic);
        }
        let mut column = EdgeNames::with_capacity(names.len());
        for name in names {
            column.push(name);
        }
        column
    }
}

/// Node types: a table of the distinct types and a 2-byte index into it per node while there
/// are at most 2¹⁶ − 1 of them (a Java dump has hundreds to tens of thousands of classes), one
/// [`StringId`] per node past that.
///
/// Invariants: in `Narrow`, every `index` entry is below `table.len()`, `table` holds distinct
/// ids, and `find` maps each of them to its position.
#[derive(Clone, Debug)]
pub struct NodeTypes(TypesRepr);

#[derive(Clone, Debug)]
enum TypesRepr {
    Narrow {
        table: Vec<StringId>,
        index: Vec<u16>,
        find: FxHashMap<StringId, u16>,
        /// The last type pushed and its index: neighbours are often of one type.
        last: Option<(StringId, u16)>,
    },
    Wide(Vec<StringId>),
}

impl Default for NodeTypes {
    fn default() -> Self {
        NodeTypes::with_capacity(0)
    }
}

impl NodeTypes {
    /// An empty column.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty column with room for `n` nodes.
    pub fn with_capacity(n: usize) -> Self {
        NodeTypes(TypesRepr::Narrow {
            table: Vec::new(),
            index: Vec::with_capacity(n),
            find: FxHashMap::default(),
            last: None,
        })
    }

    /// Whether the types are stored as 2-byte indices.
    pub fn is_narrow(&self) -> bool {
        matches!(self.0, TypesRepr::Narrow { .. })
    }

    /// The table index of `type_id`, added to the table if new; `None` when the column is
    /// plain or its table is full.
    fn slot_of(&mut self, type_id: StringId) -> Option<u16> {
        let TypesRepr::Narrow {
            table, find, last, ..
        } = &mut self.0
        else {
            return None;
        };
        if let Some((id, slot)) = *last
            && id == type_id
        {
            return Some(slot);
        }
        let slot = match find.get(&type_id) {
            Some(&slot) => slot,
            None => {
                let slot = u16::try_from(table.len())
                    .ok()
                    .filter(|&slot| slot != u16::MAX)?;
                table.push(type_id);
                find.insert(type_id, slot);
                slot
            }
        };
        *last = Some((type_id, slot));
        Some(slot)
    }

    /// Appends `type_id`.
    pub fn push(&mut self, type_id: StringId) {
        match self.slot_of(type_id) {
            Some(slot) => {
                if let TypesRepr::Narrow { index, .. } = &mut self.0 {
                    index.push(slot);
                }
            }
            None => {
                self.widen();
                if let TypesRepr::Wide(types) = &mut self.0 {
                    types.push(type_id);
                }
            }
        }
    }

    /// Turns the column into one id per node.
    fn widen(&mut self) {
        let TypesRepr::Narrow { index, .. } = &self.0 else {
            return;
        };
        let mut plain = Vec::with_capacity(index.capacity());
        plain.extend(self.iter());
        self.0 = TypesRepr::Wide(plain);
    }

    /// Reserves room for `additional` more nodes.
    pub fn reserve_exact(&mut self, additional: usize) {
        match &mut self.0 {
            TypesRepr::Narrow { index, .. } => index.reserve_exact(additional),
            TypesRepr::Wide(types) => types.reserve_exact(additional),
        }
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        match &self.0 {
            TypesRepr::Narrow { index, .. } => index.len(),
            TypesRepr::Wide(types) => types.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The type of node `node`.
    ///
    /// Panics if `node` is out of range.
    #[inline]
    pub fn get(&self, node: usize) -> StringId {
        match &self.0 {
            TypesRepr::Narrow { table, index, .. } => table[usize::from(index[node])],
            TypesRepr::Wide(types) => types[node],
        }
    }

    /// The position of node `node`'s type in [`NodeTypes::distinct`], where the column keeps a
    /// table.
    ///
    /// Panics if `node` is out of range.
    #[inline]
    pub fn slot(&self, node: usize) -> Option<usize> {
        match &self.0 {
            TypesRepr::Narrow { index, .. } => Some(usize::from(index[node])),
            TypesRepr::Wide(_) => None,
        }
    }

    /// The distinct types, each once, where the column keeps a table of them.
    pub fn distinct(&self) -> Option<&[StringId]> {
        match &self.0 {
            TypesRepr::Narrow { table, .. } => Some(table),
            TypesRepr::Wide(_) => None,
        }
    }

    /// The types in node order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = StringId> + '_ {
        (0..self.len()).map(move |node| self.get(node))
    }

    /// The types as one id per node.
    pub fn to_vec(&self) -> Vec<StringId> {
        self.iter().collect()
    }

    /// Appends every type of `other`.
    pub fn extend_from(&mut self, other: &NodeTypes) {
        if let TypesRepr::Narrow {
            table: other_table,
            index: other_index,
            ..
        } = &other.0
        {
            // Each of the other table's types, once, then its indices through the mapping.
            let remap: Option<Vec<u16>> = other_table
                .iter()
                .map(|&type_id| self.slot_of(type_id))
                .collect();
            if let (Some(remap), TypesRepr::Narrow { index, .. }) = (remap, &mut self.0) {
                index.extend(other_index.iter().map(|&i| remap[usize::from(i)]));
                return;
            }
        }
        self.widen();
        if let TypesRepr::Wide(types) = &mut self.0 {
            types.extend(other.iter());
        }
    }
}

impl From<Vec<StringId>> for NodeTypes {
    /// Narrow when the types are few enough, the vector itself otherwise.
    fn from(types: Vec<StringId>) -> Self {
        let mut column = NodeTypes::with_capacity(types.len());
        for &type_id in &types {
            column.push(type_id);
            if !column.is_narrow() {
                return NodeTypes(TypesRepr::Wide(types));
            }
        }
        column
    }
}

impl FromIterator<StringId> for NodeTypes {
    fn from_iter<I: IntoIterator<Item = StringId>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut column = NodeTypes::with_capacity(iter.size_hint().0);
        for type_id in iter {
            column.push(type_id);
        }
        column
    }
}

/// The kinds in discriminant order, to return references to.
static KINDS: [EdgeKind; 7] = EdgeKind::ALL;

/// Edge kinds, two to a byte (a kind takes three bits). Indexing returns a reference into a
/// table of the kinds, so `edge_kind[e]` reads as with a slice.
///
/// Invariants: `nibbles` holds `len.div_ceil(2)` bytes; nibble `e` (the low half of byte
/// `e / 2` for even `e`) is the discriminant of edge `e`'s kind; an unused high half is 0.
#[derive(Clone, Debug, Default)]
pub struct EdgeKinds {
    nibbles: Vec<u8>,
    len: usize,
}

impl EdgeKinds {
    /// An empty column.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty column with room for `n` kinds.
    pub fn with_capacity(n: usize) -> Self {
        EdgeKinds {
            nibbles: Vec::with_capacity(n.div_ceil(2)),
            len: 0,
        }
    }

    /// Appends `kind`.
    #[inline]
    pub fn push(&mut self, kind: EdgeKind) {
        if self.len.is_multiple_of(2) {
            self.nibbles.push(kind as u8);
        } else if let Some(last) = self.nibbles.last_mut() {
            *last |= (kind as u8) << 4;
        }
        self.len += 1;
    }

    /// Reserves room for `additional` more kinds.
    pub fn reserve_exact(&mut self, additional: usize) {
        self.nibbles.reserve_exact(additional.div_ceil(2) + 1);
    }

    /// The number of kinds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The kind of edge `edge`.
    ///
    /// Panics if `edge` is out of range.
    #[inline]
    pub fn get(&self, edge: usize) -> EdgeKind {
        self[edge]
    }

    /// Replaces the kind of edge `edge`.
    ///
    /// Panics if `edge` is out of range.
    pub fn set(&mut self, edge: usize, kind: EdgeKind) {
        assert!(edge < self.len, "edge {edge} of {}", self.len);
        let byte = &mut self.nibbles[edge / 2];
        let shift = (edge % 2) * 4;
        *byte = (*byte & !(0xf << shift)) | (kind as u8) << shift;
    }

    /// The kinds in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = EdgeKind> + '_ {
        (0..self.len).map(move |edge| self[edge])
    }

    /// The kinds of edges `range`, in order.
    pub fn range(&self, range: Range<usize>) -> impl ExactSizeIterator<Item = EdgeKind> + '_ {
        range.map(move |edge| self[edge])
    }

    /// The kinds as a plain vector.
    pub fn to_vec(&self) -> Vec<EdgeKind> {
        self.iter().collect()
    }

    /// Appends every kind of `other`.
    pub fn extend_from(&mut self, other: &EdgeKinds) {
        if self.len.is_multiple_of(2) {
            self.nibbles.extend_from_slice(&other.nibbles);
            self.len += other.len;
        } else {
            self.reserve_exact(other.len);
            for kind in other.iter() {
                self.push(kind);
            }
        }
    }
}

impl Index<usize> for EdgeKinds {
    type Output = EdgeKind;

    #[inline]
    fn index(&self, edge: usize) -> &EdgeKind {
        assert!(edge < self.len, "edge {edge} of {}", self.len);
        let nibble = (self.nibbles[edge / 2] >> ((edge % 2) * 4)) & 0xf;
        &KINDS[usize::from(nibble)]
    }
}

impl From<Vec<EdgeKind>> for EdgeKinds {
    fn from(kinds: Vec<EdgeKind>) -> Self {
        kinds.into_iter().collect()
    }
}

impl FromIterator<EdgeKind> for EdgeKinds {
    fn from_iter<I: IntoIterator<Item = EdgeKind>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut column = EdgeKinds::with_capacity(iter.size_hint().0);
        for kind in iter {
            column.push(kind);
        }
        column
    }
}

/// Every byte value, to return references to.
static BYTES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = i as u8;
        i += 1;
    }
    table
};

/// Node kinds (indices into a graph's kinds table), two to a byte while there are at most 16
/// kinds (every runtime's so far), a byte each past that. Indexing returns a reference into a
/// table of byte values, so `node_kind[i]` reads as with a slice.
///
/// Invariants: in `Nibbles`, `nibbles` holds `len.div_ceil(2)` bytes, kind `i` in the low half
/// of byte `i / 2` for even `i`, and an unused high half is 0.
#[derive(Clone, Debug)]
pub struct NodeKinds(KindsRepr);

#[derive(Clone, Debug)]
enum KindsRepr {
    Nibbles { nibbles: Vec<u8>, len: usize },
    Bytes(Vec<u8>),
}

impl Default for NodeKinds {
    fn default() -> Self {
        NodeKinds::with_capacity(0)
    }
}

impl NodeKinds {
    /// An empty column.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty column with room for `n` kinds.
    pub fn with_capacity(n: usize) -> Self {
        NodeKinds(KindsRepr::Nibbles {
            nibbles: Vec::with_capacity(n.div_ceil(2)),
            len: 0,
        })
    }

    /// Appends `kind`.
    #[inline]
    pub fn push(&mut self, kind: u8) {
        match &mut self.0 {
            KindsRepr::Nibbles { nibbles, len } if kind < 16 => {
                if len.is_multiple_of(2) {
                    nibbles.push(kind);
                } else if let Some(last) = nibbles.last_mut() {
                    *last |= kind << 4;
                }
                *len += 1;
            }
            KindsRepr::Nibbles { .. } => {
                let mut bytes = Vec::with_capacity(self.len() + 1);
                bytes.extend(self.iter());
                bytes.push(kind);
                self.0 = KindsRepr::Bytes(bytes);
            }
            KindsRepr::Bytes(bytes) => bytes.push(kind),
        }
    }

    /// Reserves room for `additional` more kinds.
    pub fn reserve_exact(&mut self, additional: usize) {
        match &mut self.0 {
            KindsRepr::Nibbles { nibbles, .. } => nibbles.reserve_exact(additional.div_ceil(2) + 1),
            KindsRepr::Bytes(bytes) => bytes.reserve_exact(additional),
        }
    }

    /// The number of kinds.
    pub fn len(&self) -> usize {
        match &self.0 {
            KindsRepr::Nibbles { len, .. } => *len,
            KindsRepr::Bytes(bytes) => bytes.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The kinds in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u8> + '_ {
        (0..self.len()).map(move |node| self[node])
    }

    /// The kinds of nodes `range`, in order.
    pub fn range(&self, range: Range<usize>) -> impl ExactSizeIterator<Item = u8> + '_ {
        range.map(move |node| self[node])
    }

    /// The kinds as a plain vector.
    pub fn to_vec(&self) -> Vec<u8> {
        self.iter().collect()
    }

    /// Appends every kind of `other`.
    pub fn extend_from(&mut self, other: &NodeKinds) {
        match (&mut self.0, &other.0) {
            (
                KindsRepr::Nibbles { nibbles, len },
                KindsRepr::Nibbles {
                    nibbles: other_nibbles,
                    len: other_len,
                },
            ) if len.is_multiple_of(2) => {
                nibbles.extend_from_slice(other_nibbles);
                *len += other_len;
            }
            _ => {
                self.reserve_exact(other.len());
                for kind in other.iter() {
                    self.push(kind);
                }
            }
        }
    }
}

impl Index<usize> for NodeKinds {
    type Output = u8;

    #[inline]
    fn index(&self, node: usize) -> &u8 {
        match &self.0 {
            KindsRepr::Nibbles { nibbles, len } => {
                assert!(node < *len, "node {node} of {len}");
                &BYTES[usize::from((nibbles[node / 2] >> ((node % 2) * 4)) & 0xf)]
            }
            KindsRepr::Bytes(bytes) => &bytes[node],
        }
    }
}

impl From<Vec<u8>> for NodeKinds {
    fn from(kinds: Vec<u8>) -> Self {
        if kinds.iter().any(|&kind| kind >= 16) {
            return NodeKinds(KindsRepr::Bytes(kinds));
        }
        kinds.into_iter().collect()
    }
}

impl FromIterator<u8> for NodeKinds {
    fn from_iter<I: IntoIterator<Item = u8>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut column = NodeKinds::with_capacity(iter.size_hint().0);
        for kind in iter {
            column.push(kind);
        }
        column
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_read_back_whatever_their_size() {
        let values = vec![
            0,
            5,
            u64::from(u32::MAX),
            1 << 32,
            (1 << 32) + 7,
            (3 << 32) + 1,
            3 << 33,
            3 << 33,
        ];
        let column = EdgeOffsets::from(values.clone());
        assert_eq!(column.to_vec(), values);
        for (i, &value) in values.iter().enumerate() {
            assert_eq!(column.get(i), value);
        }
        assert_eq!(column.first_decrease(), None);
        assert_eq!(column.partition_point(|v| v < 1 << 32), 3);
        let small = EdgeOffsets::from(vec![0, 2, 2, 9]);
        assert!(small.wide.is_empty());
        assert_eq!(small.range(1), 2..2);
        // Blocks with a node of many edges go beside whole, the others stay narrow.
        let mut degrees: Vec<u64> = (0..1000).map(|i| i % 5).collect();
        degrees[70] = 1 << 20;
        degrees[500] = 70_000;
        let offsets: Vec<u64> = std::iter::once(0)
            .chain(degrees.iter().scan(0, |sum, d| {
                *sum += d;
                Some(*sum)
            }))
            .collect();
        let column = EdgeOffsets::from(offsets.clone());
        assert_eq!(column.to_vec(), offsets);
        assert_eq!(column.wide_blocks, [1, 7]);
        for (i, &offset) in offsets.iter().enumerate() {
            assert_eq!(column.get(i), offset);
        }
        let decreasing = EdgeOffsets::from(vec![0, (1 << 32) + 1, 3]);
        assert_eq!(decreasing.first_decrease(), Some(2));
    }

    #[test]
    fn u64_columns_keep_every_value() {
        let cases: [Vec<u64>; 5] = [
            vec![
                0,
                16,
                32,
                u64::from(u32::MAX),
                u64::from(u32::MAX) + 1,
                u64::MAX,
            ],
            vec![
                0x6_0000_0000,
                0x6_0000_0010,
                0x7_a2bf_7a00,
                0,
                0x6_0000_0008,
            ],
            vec![1, 3, 5, 7, 9, 1 << 53],
            vec![0, 0, 0],
            vec![],
        ];
        for values in cases {
            for column in [U64Column::compact(&values), U64Column::from(values.clone())] {
                assert_eq!(column.to_vec(), values);
                for (i, &value) in values.iter().enumerate() {
                    assert_eq!(column.get(i), value);
                }
                let mut changed = column.clone();
                for i in 0..values.len() {
                    changed.set(i, values[values.len() - 1 - i]);
                }
                let reversed: Vec<u64> = values.iter().rev().copied().collect();
                assert_eq!(changed.to_vec(), reversed);
                let mut joined = column.clone();
                joined.extend_from(&changed);
                assert_eq!(joined.to_vec(), [values.clone(), reversed].concat());
            }
        }
        // A heap's addresses fit in 32 bits once their alignment and base are taken out; the
        // zero of a synthetic node goes beside.
        let ids = [0x8_0000_0000u64, 0x8_7000_0000, 0x8_0000_0018, 0];
        let column = U64Column::compact(&ids);
        assert_eq!(
            (column.base, column.shift, column.wide.len()),
            (0x8_0000_0000, 3, 1)
        );
        assert_eq!(column.to_vec(), ids);
    }

    #[test]
    fn packed_columns_keep_every_value() {
        let mut ids: Vec<u64> = (0..3000u64).map(|i| 0x6_0000_0000 + i * 24).collect();
        ids[700] = 0;
        ids[701] = 0x7_0000_0000;
        ids.extend([0, 0, 0]);
        let sizes: Vec<u64> = (0..3000u64)
            .map(|i| match i % 7 {
                0 => 1 << 40,
                1 => 16,
                _ => i * 8,
            })
            .collect();
        let scattered: Vec<u64> = (0..20_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        for values in [ids, sizes, scattered, vec![], vec![u64::MAX, 0, 1]] {
            let compact = PackedU64::compact(&values);
            let pushed = PackedU64::from(values.clone());
            for column in [&compact, &pushed] {
                assert_eq!(column.to_vec(), values);
                for (i, &value) in values.iter().enumerate() {
                    assert_eq!(column.get(i), value);
                }
            }
            let mut joined = compact.clone();
            joined.extend_from(&pushed);
            assert_eq!(joined.to_vec(), [values.clone(), values.clone()].concat());
        }
        // Scattered values turn the column plain; a heap's addresses stay packed.
        let scattered: Vec<u64> = (0..20_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        assert!(!PackedU64::from(scattered).is_packed());
        let addresses: Vec<u64> = (0..20_000u64).map(|i| 0x8_0000_0000 + i * 56).collect();
        assert!(PackedU64::compact(&addresses).is_packed());
    }

    #[test]
    fn names_dense_or_sparse_read_the_same() {
        let empty = StringId::EMPTY;
        let (a, b) = (StringId(3), StringId(9));
        let dense = vec![empty, a, empty, empty, b, empty];
        let names = NodeNames::from(dense.clone());
        assert!(matches!(names.repr, NamesRepr::Sparse { .. }));
        assert_eq!(names.to_vec(), dense);
        assert_eq!(names.get(4), b);
        assert_eq!(names.named().collect::<Vec<_>>(), [(1, a), (4, b)]);
        let full = NodeNames::from(vec![a, b, a]);
        assert!(matches!(full.repr, NamesRepr::Dense(_)));
        assert_eq!(full.named().count(), 3);
        let pairs = NodeNames::from_pairs(6, vec![(4, a), (1, a), (4, b), (9, a), (2, empty)]);
        assert_eq!(pairs.to_vec(), dense);
    }

    #[test]
    fn kinds_pack_two_to_a_byte() {
        let kinds: Vec<EdgeKind> = (0..1001).map(|i| EdgeKind::ALL[i * 5 % 7]).collect();
        let column = EdgeKinds::from(kinds.clone());
        assert_eq!(column.to_vec(), kinds);
        assert_eq!(column.nibbles.len(), 501);
        let mut joined = column.clone();
        joined.extend_from(&column);
        joined.extend_from(&EdgeKinds::from(kinds[..4].to_vec()));
        assert_eq!(
            joined.to_vec(),
            [&kinds[..], &kinds[..], &kinds[..4]].concat()
        );
        let mut changed = column;
        changed.set(7, EdgeKind::Weak);
        changed.set(8, EdgeKind::Context);
        assert_eq!(
            (changed[7], changed[8], changed[9]),
            (EdgeKind::Weak, EdgeKind::Context, kinds[9])
        );
    }

    #[test]
    fn node_kinds_pack_until_a_kind_needs_a_byte() {
        let kinds: Vec<u8> = (0..999).map(|i| (i % 6) as u8).collect();
        let column = NodeKinds::from(kinds.clone());
        assert!(matches!(column.0, KindsRepr::Nibbles { .. }));
        assert_eq!(column.to_vec(), kinds);
        let mut joined = column.clone();
        joined.extend_from(&column);
        joined.push(200);
        assert!(matches!(joined.0, KindsRepr::Bytes(_)));
        assert_eq!(joined.to_vec(), [&kinds[..], &kinds[..], &[200]].concat());
        assert_eq!(joined[998 + 999 + 1], 200);
    }

    #[test]
    fn types_narrow_or_wide_read_the_same() {
        let ids: Vec<StringId> = (0..200_000u32).map(|i| StringId(i % 70_000)).collect();
        let few: Vec<StringId> = ids.iter().map(|id| StringId(id.0 % 300)).collect();
        let narrow = NodeTypes::from(few.clone());
        assert!(narrow.is_narrow());
        assert_eq!(narrow.to_vec(), few);
        assert_eq!(narrow.distinct().map(<[StringId]>::len), Some(300));
        let wide = NodeTypes::from(ids.clone());
        assert!(!wide.is_narrow());
        assert_eq!(wide.to_vec(), ids);
        let mut joined = narrow.clone();
        joined.extend_from(&NodeTypes::from(few[..1000].to_vec()));
        assert!(joined.is_narrow());
        assert_eq!(
            joined.to_vec(),
            [few.clone(), few[..1000].to_vec()].concat()
        );
        joined.extend_from(&wide);
        assert_eq!(
            joined.to_vec(),
            [few.clone(), few[..1000].to_vec(), ids].concat()
        );
    }

    #[test]
    fn edge_names_narrow_or_wide_read_the_same() {
        let mostly_small: Vec<u32> = (0..20_000)
            .map(|i| if i % 100 == 0 { 70_000 + i } else { i % 1000 })
            .collect();
        let names = EdgeNames::from(mostly_small.clone());
        assert!(names.is_narrow());
        assert_eq!(names.to_vec(), mostly_small);
        assert_eq!(names.get(300), 70_300);
        let spread: Vec<u32> = (0..20_000).map(|i| 100_000 + i).collect();
        let mut pushed = EdgeNames::new();
        for &name in &spread {
            pushed.push(name);
        }
        assert!(!pushed.is_narrow());
        assert_eq!(pushed.to_vec(), spread);
        let mut joined = names.clone();
        joined.extend_from(&pushed);
        assert_eq!(
            joined.to_vec(),
            [mostly_small.clone(), spread.clone()].concat()
        );
        let mut changed = names;
        changed.set(1, 80_000);
        changed.set(300, 5);
        assert_eq!(changed.get(1), 80_000);
        assert_eq!(changed.get(300), 5);
        assert_eq!(changed.get(400), 70_400);
        let mut kept = EdgeNames::kept_narrow(0);
        for &name in &spread {
            kept.push(name);
        }
        assert!(kept.is_narrow());
        kept.settle();
        assert!(!kept.is_narrow());
        assert_eq!(kept.to_vec(), spread);
    }
}
