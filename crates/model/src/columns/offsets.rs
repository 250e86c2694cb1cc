//! CSR offsets in about two bytes each.

use crate::image::{ColumnImage, ImageSource, Imaged, ONLY, PartValues, expect_repr};
use std::ops::Range;

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

    /// Hints that the offset at `position` will be read soon ([`crate::prefetch`]).
    #[inline]
    pub fn prefetch(&self, position: usize) {
        crate::prefetch(&self.steps, position);
        crate::prefetch(&self.bases, position >> OFFSET_BLOCK_BITS);
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

impl Imaged for EdgeOffsets {
    fn image(&self) -> ColumnImage<'_> {
        // `last` and `decreases_at` follow from the offsets, and are found again on reading.
        ColumnImage {
            repr: ONLY,
            scalars: Vec::new(),
            parts: vec![
                ("bases", PartValues::U64(&self.bases)),
                ("steps", PartValues::U16(&self.steps)),
                ("wide_blocks", PartValues::U32(&self.wide_blocks)),
                ("wide", PartValues::U64(&self.wide)),
            ],
        }
    }

    fn from_image(source: &mut impl ImageSource) -> Result<Self, String> {
        expect_repr(source, &[ONLY])?;
        let bases: Vec<u64> = source.take("bases")?;
        let steps: Vec<u16> = source.take("steps")?;
        let wide_blocks: Vec<u32> = source.take("wide_blocks")?;
        let wide: Vec<u64> = source.take("wide")?;
        if bases.len() != steps.len().div_ceil(1 << OFFSET_BLOCK_BITS) {
            return Err(format!(
                "{} block bases for {} offsets",
                bases.len(),
                steps.len()
            ));
        }
        if u32::try_from(bases.len().saturating_sub(1)).is_err() {
            return Err(format!("{} blocks, past 32-bit block numbers", bases.len()));
        }
        // One pass over the blocks in order, the listed ones met in turn: each listed block
        // is all markers with its offsets next in `wide`, each other one has no marker and
        // reaches its offsets without overflow. The last offset and the first decrease are
        // found on the way.
        let (mut listed, mut beside) = (0, 0);
        let mut last = None;
        let mut decreases_at = None;
        for (block, (&base, block_steps)) in bases
            .iter()
            .zip(steps.chunks(1 << OFFSET_BLOCK_BITS))
            .enumerate()
        {
            let start = block << OFFSET_BLOCK_BITS;
            let is_wide = wide_blocks
                .get(listed)
                .is_some_and(|&b| b as usize == block);
            let offsets = if is_wide {
                if let Some(at) = block_steps.iter().position(|&step| step != WIDE_BLOCK) {
                    return Err(format!(
                        "offset {} is in a block beside but is not marked so",
                        start + at
                    ));
                }
                let offsets = wide
                    .get(beside..beside + block_steps.len())
                    .ok_or_else(|| {
                        format!("{} offsets beside, too few for block {block}", wide.len())
                    })?;
                listed += 1;
                beside += block_steps.len();
                offsets
            } else {
                &[][..]
            };
            for (at, &step) in block_steps.iter().enumerate() {
                let offset = if is_wide {
                    offsets[at]
                } else if step == WIDE_BLOCK {
                    return Err(format!(
                        "offset {} is marked beside but its block is not listed",
                        start + at
                    ));
                } else {
                    base.checked_add(u64::from(step)).ok_or_else(|| {
                        format!("offset {} overflows its block's base", start + at)
                    })?
                };
                if last.is_some_and(|last| offset < last) {
                    decreases_at.get_or_insert(start + at);
                }
                last = Some(offset);
            }
        }
        if listed != wide_blocks.len() {
            return Err(format!(
                "the blocks beside are not in increasing order within the {} blocks",
                bases.len()
            ));
        }
        if beside != wide.len() {
            return Err(format!(
                "{} offsets beside for blocks of {beside}",
                wide.len()
            ));
        }
        Ok(EdgeOffsets {
            bases,
            steps,
            wide_blocks,
            wide,
            last: last.unwrap_or(0),
            decreases_at,
        })
    }
}

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
    fn images_give_the_column_back_and_lies_are_refused() {
        use crate::image::testing::{Copied, Lie};
        // Blocks 1 and 7 beside, the last block (15) partial and beside, and a decrease.
        let mut degrees: Vec<u64> = (0..1000).map(|i| i % 5).collect();
        degrees[70] = 1 << 20;
        degrees[500] = 70_000;
        degrees[990] = 100_000;
        let offsets: Vec<u64> = std::iter::once(0)
            .chain(degrees.iter().scan(0, |sum, d| {
                *sum += d;
                Some(*sum)
            }))
            .collect();
        let mut decreasing = offsets[..300].to_vec();
        decreasing[200] = 3;
        for values in [offsets.clone(), decreasing, vec![0, 2, 2, 9], vec![]] {
            let column = EdgeOffsets::from(values.clone());
            let mut back = EdgeOffsets::from_image(&mut Copied::new(&column.image())).unwrap();
            assert_eq!(back.to_vec(), values);
            assert_eq!(back.wide_blocks, column.wide_blocks);
            assert_eq!(back.last(), column.last());
            assert_eq!(back.first_decrease(), column.first_decrease());
            // Pushing goes on as on the column written.
            let mut pushed = column.clone();
            for offset in [1 << 40, (1 << 40) + 1, 7] {
                back.push(offset);
                pushed.push(offset);
            }
            assert_eq!(back.to_vec(), pushed.to_vec());
            assert_eq!(back.first_decrease(), pushed.first_decrease());
        }
        let column = EdgeOffsets::from(offsets);
        assert_eq!(column.wide_blocks, [1, 7, 15]);
        // Each would make `get` panic or read another offset, or a later `push` go astray.
        let lies: [Lie; 7] = [
            ("bases", |image| {
                image.edit_part("bases", |bytes| bytes.truncate(8))
            }),
            ("a marker in a block not listed", |image| {
                image.edit_part("steps", |bytes| {
                    bytes[1900..1902].copy_from_slice(&[0xff, 0xff])
                })
            }),
            ("a block listed unmarked", |image| {
                image.edit_part("wide_blocks", |bytes| bytes[8] = 14)
            }),
            ("blocks beside out of order", |image| {
                image.edit_part("wide_blocks", |bytes| bytes.swap(0, 4))
            }),
            ("too few beside", |image| {
                image.edit_part("wide", |bytes| bytes.truncate(8 * 64))
            }),
            ("too many beside", |image| {
                image.edit_part("wide", |bytes| bytes.extend([0; 8]))
            }),
            ("a base past the steps' reach", |image| {
                image.edit_part("bases", |bytes| {
                    bytes[..8].copy_from_slice(&u64::MAX.to_le_bytes())
                })
            }),
        ];
        for (lie, tell) in lies {
            let mut image = Copied::new(&column.image());
            tell(&mut image);
            assert!(EdgeOffsets::from_image(&mut image).is_err(), "{lie}");
        }
    }
}
