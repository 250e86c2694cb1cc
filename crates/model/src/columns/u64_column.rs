//! A per-node `u64` column in a `u32` where that fits.

use crate::image::{
    ColumnImage, ImageSource, Imaged, ONLY, PartValues, check_places_beside, expect_repr,
};

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

    /// Hints that the value at `index` will be read soon ([`crate::prefetch`]).
    #[inline]
    pub fn prefetch(&self, index: usize) {
        crate::prefetch(&self.narrow, index);
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

impl Imaged for U64Column {
    fn image(&self) -> ColumnImage<'_> {
        ColumnImage {
            repr: ONLY,
            scalars: vec![("base", self.base), ("shift", u64::from(self.shift))],
            parts: vec![
                ("narrow", PartValues::U32(&self.narrow)),
                ("wide_at", PartValues::U32(&self.wide_at)),
                ("wide", PartValues::U64(&self.wide)),
            ],
        }
    }

    fn from_image(source: &mut impl ImageSource) -> Result<Self, String> {
        expect_repr(source, &[ONLY])?;
        let base = source.scalar("base")?;
        let shift = source.scalar("shift")?;
        let narrow: Vec<u32> = source.take("narrow")?;
        let wide_at: Vec<u32> = source.take("wide_at")?;
        let wide: Vec<u64> = source.take("wide")?;
        if shift >= 64 {
            return Err(format!("a shift of {shift} bits"));
        }
        check_places_beside(&narrow, &BESIDE, &wide_at, wide.len(), "value")?;
        let (mut markers, mut most) = (0, 0);
        for &value in &narrow {
            if value == BESIDE {
                markers += 1;
            } else {
                most = most.max(value);
            }
        }
        if markers != wide_at.len() {
            return Err(format!(
                "{markers} values are marked beside, {} listed",
                wide_at.len()
            ));
        }
        // The largest narrow value reaches a value in 64 bits, as every value pushed does.
        if (u128::from(most) << shift) + u128::from(base) > u128::from(u64::MAX) {
            return Err(format!(
                "the narrow value {most} at shift {shift} above {base} is past 64 bits"
            ));
        }
        Ok(U64Column {
            base,
            shift: shift as u32,
            narrow,
            wide_at,
            wide,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn images_give_the_column_back_and_lies_are_refused() {
        use crate::image::testing::{Copied, Lie};
        let ids: Vec<u64> = (0..3000u64)
            .map(|i| match i % 500 {
                7 => 0,
                _ => 0x8_0000_0000 + i * 24,
            })
            .collect();
        let sizes: Vec<u64> = (0..3000u64).map(|i| (i % 7) << (i % 40)).collect();
        for (values, compact) in [(ids.clone(), true), (sizes, false), (vec![], false)] {
            let column = if compact {
                U64Column::compact(&values)
            } else {
                U64Column::from(values.clone())
            };
            let mut back = U64Column::from_image(&mut Copied::new(&column.image())).unwrap();
            assert_eq!(back.to_vec(), values);
            for (i, &value) in values.iter().enumerate() {
                assert_eq!(back.get(i), value);
            }
            // Pushing and setting go on as on the column written.
            let mut pushed = column.clone();
            for value in [0, 0x8_0000_0008, 1 << 63] {
                back.push(value);
                pushed.push(value);
            }
            back.set(1, 5);
            pushed.set(1, 5);
            assert_eq!(back.to_vec(), pushed.to_vec());
        }
        let mut column = U64Column::compact(&ids);
        column.push(u64::MAX);
        assert_eq!(
            (column.base, column.shift, column.wide.len()),
            (0x8_0000_0000, 3, 7)
        );
        // Each would make `get` panic or overflow, read another value or disagree with `iter`.
        let lies: [Lie; 6] = [
            ("shift", |image| image.set_scalar("shift", 64)),
            ("a base too high", |image| {
                image.set_scalar("base", u64::MAX - 8)
            }),
            ("a marker unlisted", |image| {
                image.edit_part("narrow", |bytes| bytes[..4].copy_from_slice(&[0xff; 4]))
            }),
            ("a listed value unmarked", |image| {
                image.edit_part("narrow", |bytes| bytes[28..32].copy_from_slice(&[0; 4]))
            }),
            ("places out of order", |image| {
                image.edit_part("wide_at", |bytes| bytes[..8].rotate_left(4))
            }),
            ("wide", |image| {
                image.edit_part("wide", |bytes| bytes.truncate(8))
            }),
        ];
        for (lie, tell) in lies {
            let mut image = Copied::new(&column.image());
            tell(&mut image);
            assert!(U64Column::from_image(&mut image).is_err(), "{lie}");
        }
    }
}
