//! A per-node `u64` column in about two bytes a value, for values that change little.

use super::ChainExact;
use crate::image::{
    ColumnImage, ImageSource, Imaged, PartValues, check_places_beside, expect_repr,
};

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

    /// Appends `values` as [`PackedU64::push`] would one by one, in one loop (a parse appends
    /// millions, a batch at a time): the column turns plain at the same value.
    pub fn extend(&mut self, values: impl IntoIterator<Item = u64>) {
        let mut values = values.into_iter();
        let PackedRepr::Packed {
            shift,
            bases,
            steps,
            wide_at,
            wide,
        } = &mut self.0
        else {
            if let PackedRepr::Plain(plain) = &mut self.0 {
                plain.extend(values);
            }
            return;
        };
        let shift = *shift;
        let mut base = bases.last().copied().unwrap_or(0);
        let mut crowded = false;
        for value in values.by_ref() {
            let index = steps.len();
            if index & ((1 << BLOCK_BITS) - 1) == 0 {
                bases.push(value);
                base = value;
            }
            let difference = value.wrapping_sub(base) as i64;
            let step = difference >> shift;
            if difference & ((1i64 << shift) - 1) == 0
                && step > i64::from(BESIDE_STEP)
                && step <= i64::from(i16::MAX)
            {
                steps.push(step as i16);
                continue;
            }
            steps.push(BESIDE_STEP);
            wide_at.push(index as u32);
            wide.push(value);
            if wide.len() > 4096 && wide.len() > steps.len() / 8 {
                crowded = true;
                break;
            }
        }
        if crowded {
            let mut plain = self.to_vec();
            plain.extend(values);
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

    /// The sum of the values (wrapping, as a release build's `Iterator::sum`): a block's
    /// packed values add up to its base times their number plus the sum of their steps,
    /// shifted, which takes one vectorized pass over the steps rather than a value at a time.
    pub fn sum(&self) -> u64 {
        match &self.0 {
            PackedRepr::Packed {
                shift,
                bases,
                steps,
                wide,
                ..
            } => {
                let beside = wide
                    .iter()
                    .fold(0u64, |total, &value| total.wrapping_add(value));
                steps
                    .chunks(1 << BLOCK_BITS)
                    .zip(bases)
                    .fold(beside, |total, (block, &base)| {
                        let (count, steps) =
                            block.iter().fold((0u64, 0i64), |(count, sum), &step| {
                                let packed = step != BESIDE_STEP;
                                (
                                    count + u64::from(packed),
                                    sum + i64::from(step) * i64::from(packed),
                                )
                            });
                        total
                            .wrapping_add(base.wrapping_mul(count))
                            .wrapping_add((steps as u64).wrapping_shl(*shift))
                    })
            }
            PackedRepr::Plain(values) => values
                .iter()
                .fold(0u64, |total, &value| total.wrapping_add(value)),
        }
    }

    /// Appends every value of `other`.
    pub fn extend_from(&mut self, other: &PackedU64) {
        self.reserve_exact(other.len());
        self.extend(other.iter());
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

/// The representations' names in an image.
const PACKED: &str = "packed";
const PLAIN: &str = "plain";

impl Imaged for PackedU64 {
    fn image(&self) -> ColumnImage<'_> {
        match &self.0 {
            PackedRepr::Packed {
                shift,
                bases,
                steps,
                wide_at,
                wide,
            } => ColumnImage {
                repr: PACKED,
                scalars: vec![("shift", u64::from(*shift))],
                parts: vec![
                    ("bases", PartValues::U64(bases)),
                    ("steps", PartValues::I16(steps)),
                    ("wide_at", PartValues::U32(wide_at)),
                    ("wide", PartValues::U64(wide)),
                ],
            },
            PackedRepr::Plain(values) => ColumnImage {
                repr: PLAIN,
                scalars: Vec::new(),
                parts: vec![("values", PartValues::U64(values))],
            },
        }
    }

    fn from_image(source: &mut impl ImageSource) -> Result<Self, String> {
        expect_repr(source, &[PACKED, PLAIN])?;
        if source.repr() == PLAIN {
            return Ok(PackedU64(PackedRepr::Plain(source.take("values")?)));
        }
        let shift = source.scalar("shift")?;
        let bases: Vec<u64> = source.take("bases")?;
        let steps: Vec<i16> = source.take("steps")?;
        let wide_at: Vec<u32> = source.take("wide_at")?;
        let wide: Vec<u64> = source.take("wide")?;
        if shift >= 64 {
            return Err(format!("a shift of {shift} bits"));
        }
        if bases.len() != steps.len().div_ceil(1 << BLOCK_BITS) {
            return Err(format!(
                "{} block bases for {} values",
                bases.len(),
                steps.len()
            ));
        }
        check_places_beside(&steps, &BESIDE_STEP, &wide_at, wide.len(), "value")?;
        let markers = steps.iter().filter(|&&step| step == BESIDE_STEP).count();
        if markers != wide_at.len() {
            return Err(format!(
                "{markers} values are marked beside, {} listed",
                wide_at.len()
            ));
        }
        Ok(PackedU64(PackedRepr::Packed {
            shift: shift as u32,
            bases,
            steps,
            wide_at,
            wide,
        }))
    }
}

/// Reads a parked column's values one at a time ([`crate::Parked::park_for_reads`]): what a
/// graph whose ids stay parked after the analysis answers `object_id` from, each read
/// decoding a block or two (a summary asks for a few hundred ids).
impl crate::Parked<PackedU64> {
    /// Value `index`, as [`PackedU64::get`] gives it.
    ///
    /// # Panics
    /// Where `index` is out of bounds, as [`PackedU64::get`] does.
    pub fn get(&self, index: usize) -> u64 {
        let value = if self.repr() == PLAIN {
            self.value::<u64>("values", index)
        } else {
            self.packed_value(index)
        };
        value.unwrap_or_else(|| panic!("no value {index} in a parked column"))
    }

    fn packed_value(&self, index: usize) -> Option<u64> {
        let step = self.value::<i16>("steps", index)?;
        if step == BESIDE_STEP {
            // The wide values' places are sorted: a search over the parked vector.
            let (mut low, mut high) = (0usize, self.len_of::<u32>("wide_at"));
            while low < high {
                let mid = (low + high) / 2;
                if (self.value::<u32>("wide_at", mid)? as usize) < index {
                    low = mid + 1;
                } else {
                    high = mid;
                }
            }
            return self.value::<u64>("wide", low);
        }
        let shift = self.scalar("shift").ok()?;
        let base = self.value::<u64>("bases", index >> BLOCK_BITS)?;
        Some(base.wrapping_add((i64::from(step) << shift) as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each id of a parked column reads back as the column gives it: addresses with values
    /// kept beside (far from their block's first) across several blocks, and ids scattered
    /// over the address space (a plain column).
    #[test]
    fn a_parked_column_reads_back_an_id_at_a_time() {
        let addresses: Vec<u64> = (0..300_000u64)
            .map(|k| {
                if k % 997 == 5 {
                    0x7f00_0000_0000 + (k << 32)
                } else {
                    0x7f00_0000_0000 + 24 * k
                }
            })
            .collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let scattered: Vec<u64> = (0..100_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state >> 8
            })
            .collect();
        for (values, plain) in [(addresses, false), (scattered, true)] {
            let column = PackedU64::from(values.clone());
            assert_eq!(matches!(column.0, PackedRepr::Plain(_)), plain);
            let parked = crate::Parked::park_for_reads(column);
            for index in (0..values.len())
                .step_by(7)
                .chain([5, 997 + 5, values.len() - 1])
            {
                assert_eq!(parked.get(index), values[index], "{index}");
            }
        }
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
            let plain_sum = values
                .iter()
                .fold(0u64, |total, &value| total.wrapping_add(value));
            assert_eq!((compact.sum(), pushed.sum()), (plain_sum, plain_sum));
            let mut joined = compact.clone();
            joined.extend_from(&pushed);
            assert_eq!(joined.to_vec(), [values.clone(), values.clone()].concat());
            // Extended in batches, as a parse does: the same values, plain at the same point.
            for batch in [1, 7, 300, 5000] {
                let mut extended = PackedU64::new();
                let mut one_by_one = PackedU64::new();
                for part in values.chunks(batch) {
                    extended.extend(part.iter().copied());
                    for &value in part {
                        one_by_one.push(value);
                    }
                    assert_eq!(extended.is_packed(), one_by_one.is_packed());
                }
                assert_eq!(extended.to_vec(), values);
            }
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
    fn images_give_the_column_back_and_lies_are_refused() {
        use crate::image::testing::{Copied, Lie};
        let mut ids: Vec<u64> = (0..3000u64).map(|i| 0x6_0000_0000 + i * 24).collect();
        ids[700] = 0;
        ids[2900] = u64::MAX;
        let scattered: Vec<u64> = (0..20_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        for values in [ids.clone(), scattered, vec![]] {
            let column = PackedU64::compact(&values);
            let back = PackedU64::from_image(&mut Copied::new(&column.image())).unwrap();
            assert_eq!(back.to_vec(), values);
            assert_eq!(back.is_packed(), column.is_packed());
        }
        let column = PackedU64::compact(&ids);
        assert!(column.is_packed());
        let lies: [Lie; 5] = [
            ("shift", |image| image.set_scalar("shift", 64)),
            ("bases", |image| {
                image.edit_part("bases", |bytes| bytes.truncate(8))
            }),
            ("a marker unlisted", |image| {
                image.edit_part("steps", |bytes| {
                    bytes[..2].copy_from_slice(&i16::MIN.to_le_bytes())
                })
            }),
            ("a listed value unmarked", |image| {
                image.edit_part("steps", |bytes| bytes[1400..1402].copy_from_slice(&[0, 0]))
            }),
            ("wide", |image| {
                image.edit_part("wide", |bytes| bytes.truncate(8))
            }),
        ];
        for (lie, tell) in lies {
            let mut image = Copied::new(&column.image());
            tell(&mut image);
            assert!(PackedU64::from_image(&mut image).is_err(), "{lie}");
        }
    }
}
