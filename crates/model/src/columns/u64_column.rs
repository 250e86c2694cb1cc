//! A per-node `u64` column in a `u32` where that fits.

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
}
