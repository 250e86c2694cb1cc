//! Edge kinds, two to a byte.

use crate::heap_graph::EdgeKind;
use crate::image::{ColumnImage, ImageSource, Imaged, ONLY, PartValues, expect_repr};
use std::ops::{Index, Range};

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

    /// Hints that the kind of edge `edge` will be read soon ([`crate::prefetch`]).
    #[inline]
    pub fn prefetch(&self, edge: usize) {
        crate::prefetch(&self.nibbles, edge / 2);
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

    /// The edges of `kind`, in order: sixteen kinds are tested at once, so that a scan for a
    /// rare kind costs about a word's test per sixteen edges.
    pub fn positions_of(&self, kind: EdgeKind) -> impl Iterator<Item = usize> + '_ {
        const LOW_BITS: u64 = 0x7777_7777_7777_7777;
        const HIGH_BITS: u64 = 0x8888_8888_8888_8888;
        let pattern = (kind as u64) * 0x1111_1111_1111_1111;
        let len = self.len;
        let (words, tail) = self.nibbles.as_chunks::<8>();
        let tail_word = {
            let mut bytes = [0u8; 8];
            bytes[..tail.len()].copy_from_slice(tail);
            bytes
        };
        words
            .iter()
            .map(|bytes| u64::from_le_bytes(*bytes))
            .chain((!tail.is_empty()).then(|| u64::from_le_bytes(tail_word)))
            .enumerate()
            .flat_map(move |(index, word)| {
                let differs = word ^ pattern;
                // A nibble's high bit here is set where the nibble is not 0: its low three
                // bits plus 7 reach 8, or its own high bit is set; no sum passes a nibble.
                let nonzero = ((differs & LOW_BITS) + LOW_BITS) | differs;
                let mut matches = !nonzero & HIGH_BITS;
                std::iter::from_fn(move || {
                    (matches != 0).then(|| {
                        let nibble = matches.trailing_zeros() as usize / 4;
                        matches &= matches - 1;
                        16 * index + nibble
                    })
                })
            })
            .take_while(move |&edge| edge < len)
    }

    /// The kinds as a plain vector.
    pub fn to_vec(&self) -> Vec<EdgeKind> {
        self.iter().collect()
    }

    /// Appends every kind of `other`.
    pub fn extend_from(&mut self, other: &EdgeKinds) {
        if self.len.is_multiple_of(2) {
            self.nibbles.extend_from_slice(&other.nibbles);
        } else {
            // The last byte's high half is free: each of the other's kinds moves up a half,
            // a byte at a time, and a last byte is left only where the total is odd.
            self.nibbles.reserve_exact(other.nibbles.len());
            let mut carry = self.nibbles.pop().unwrap_or(0);
            for &pair in &other.nibbles {
                self.nibbles.push(carry | pair << 4);
                carry = pair >> 4;
            }
            if other.len.is_multiple_of(2) {
                self.nibbles.push(carry);
            }
        }
        self.len += other.len;
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
    /// Two kinds to a byte in one loop over pairs, rather than a push per kind (the parse of
    /// a V8 snapshot converts tens of millions).
    fn from(kinds: Vec<EdgeKind>) -> Self {
        let (pairs, last) = kinds.as_chunks::<2>();
        let mut nibbles = Vec::with_capacity(kinds.len().div_ceil(2));
        nibbles.extend(
            pairs
                .iter()
                .map(|&[low, high]| low as u8 | (high as u8) << 4),
        );
        nibbles.extend(last.iter().map(|&kind| kind as u8));
        EdgeKinds {
            nibbles,
            len: kinds.len(),
        }
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

impl Imaged for EdgeKinds {
    fn image(&self) -> ColumnImage<'_> {
        ColumnImage {
            repr: ONLY,
            scalars: vec![("len", self.len as u64)],
            parts: vec![("nibbles", PartValues::U8(&self.nibbles))],
        }
    }

    fn from_image(source: &mut impl ImageSource) -> Result<Self, String> {
        expect_repr(source, &[ONLY])?;
        let len = source.scalar("len")?;
        let nibbles: Vec<u8> = source.take("nibbles")?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len.div_ceil(2) == nibbles.len())
            .ok_or_else(|| format!("{len} kinds in {} bytes", nibbles.len()))?;
        // An unused high half is 0, for `push` to fill it; every other half is a kind, for
        // indexing to find.
        if !len.is_multiple_of(2) && nibbles.last().is_some_and(|&byte| byte >> 4 != 0) {
            return Err(format!("the unused half after edge {} is not 0", len - 1));
        }
        let kinds = KINDS.len() as u8;
        if let Some(at) = nibbles
            .iter()
            .position(|&byte| byte & 0xf >= kinds || byte >> 4 >= kinds)
        {
            let (edge, nibble) = match nibbles[at] {
                byte if byte & 0xf >= kinds => (2 * at, byte & 0xf),
                byte => (2 * at + 1, byte >> 4),
            };
            return Err(format!(
                "edge {edge} has the kind {nibble}, past the {kinds} kinds"
            ));
        }
        Ok(EdgeKinds { nibbles, len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind's edges, found sixteen at a time, are those a test of every edge finds, for
    /// lengths around a word's sixteen kinds and an odd one (whose unused half reads as
    /// `Context`'s 0).
    #[test]
    fn positions_of_a_kind_are_those_of_each_edge() {
        let mut lcg = lcg_from(0x2545_f491_4f6c_dd1d);
        for len in (0..50).chain([1001, 4096]) {
            let kinds: Vec<EdgeKind> = (0..len).map(|_| EdgeKind::ALL[lcg() % 7]).collect();
            let column = EdgeKinds::from(kinds.clone());
            for kind in EdgeKind::ALL {
                let each: Vec<usize> = (0..len).filter(|&edge| kinds[edge] == kind).collect();
                let found: Vec<usize> = column.positions_of(kind).collect();
                assert_eq!(found, each, "{kind:?} in {len}");
            }
        }
    }

    /// A small generator of indices for the test above (the model crate has no test support).
    fn lcg_from(seed: u64) -> impl FnMut() -> usize {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize
        }
    }
    #[test]
    fn kinds_pack_two_to_a_byte() {
        let kinds: Vec<EdgeKind> = (0..1001).map(|i| EdgeKind::ALL[i * 5 % 7]).collect();
        let column = EdgeKinds::from(kinds.clone());
        assert_eq!(column.to_vec(), kinds);
        assert_eq!(column.nibbles.len(), 501);
        let pushed: EdgeKinds = kinds.iter().copied().collect();
        assert_eq!(
            (column.nibbles.clone(), column.len),
            (pushed.nibbles, pushed.len)
        );
        let mut joined = column.clone();
        joined.extend_from(&column);
        joined.extend_from(&EdgeKinds::from(kinds[..4].to_vec()));
        // Odd after odd, even after even, odd after even, even and none after odd.
        for part in [&kinds[..3], &kinds[..4], &[], &kinds[..3]] {
            joined.extend_from(&EdgeKinds::from(part.to_vec()));
        }
        let all = [
            &kinds[..],
            &kinds[..],
            &kinds[..4],
            &kinds[..3],
            &kinds[..4],
            &kinds[..3],
        ]
        .concat();
        assert_eq!(joined.to_vec(), all);
        // Byte for byte the column pushed one by one (an unused high half is 0).
        let pushed: EdgeKinds = all.iter().copied().collect();
        assert_eq!((&joined.nibbles, joined.len), (&pushed.nibbles, pushed.len));
        let mut changed = column;
        changed.set(7, EdgeKind::Weak);
        changed.set(8, EdgeKind::Context);
        assert_eq!(
            (changed[7], changed[8], changed[9]),
            (EdgeKind::Weak, EdgeKind::Context, kinds[9])
        );
    }

    #[test]
    fn images_give_the_column_back_and_lies_are_refused() {
        use crate::image::testing::{Copied, Lie};
        let kinds: Vec<EdgeKind> = (0..1001).map(|i| EdgeKind::ALL[i * 5 % 7]).collect();
        for kinds in [kinds.clone(), kinds[..1000].to_vec(), vec![]] {
            let column = EdgeKinds::from(kinds.clone());
            let mut back = EdgeKinds::from_image(&mut Copied::new(&column.image())).unwrap();
            assert_eq!(back.to_vec(), kinds);
            assert_eq!(back.len(), kinds.len());
            // Pushing goes on as on the column written.
            back.push(EdgeKind::Weak);
            back.extend_from(&column);
            assert_eq!(
                back.to_vec(),
                [&kinds[..], &[EdgeKind::Weak], &kinds[..]].concat()
            );
        }
        let column = EdgeKinds::from(kinds);
        // Each would make indexing panic, or a push read another kind.
        let lies: [Lie; 5] = [
            ("len short", |image| image.set_scalar("len", 1000)),
            ("len long", |image| image.set_scalar("len", 1003)),
            ("a low half past the kinds", |image| {
                image.edit_part("nibbles", |bytes| bytes[3] = 0x17)
            }),
            ("a high half past the kinds", |image| {
                image.edit_part("nibbles", |bytes| bytes[3] = 0xf1)
            }),
            ("the unused half", |image| {
                image.edit_part("nibbles", |bytes| bytes[500] |= 0x10)
            }),
        ];
        for (lie, tell) in lies {
            let mut image = Copied::new(&column.image());
            tell(&mut image);
            assert!(EdgeKinds::from_image(&mut image).is_err(), "{lie}");
        }
    }
}
