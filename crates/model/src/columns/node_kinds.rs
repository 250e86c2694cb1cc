//! Node kinds, two to a byte while they fit.

use crate::image::{ColumnImage, ImageSource, Imaged, PartValues, expect_repr};
use std::ops::{Index, Range};

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

    /// The nodes whose kind `is_kind` picks, in order: a kind-by-byte table over the column's
    /// bytes, so that a graph's few synthetic nodes are found in a read of the column.
    pub fn nodes_where(&self, is_kind: impl Fn(u8) -> bool) -> Vec<usize> {
        match &self.0 {
            KindsRepr::Nibbles { nibbles, len } => {
                let picked: [bool; 16] = std::array::from_fn(|kind| is_kind(kind as u8));
                let either: [bool; 256] =
                    std::array::from_fn(|byte| picked[byte & 0xf] || picked[byte >> 4]);
                let mut nodes = Vec::new();
                for (at, &byte) in nibbles.iter().enumerate() {
                    if either[usize::from(byte)] {
                        for node in [2 * at, 2 * at + 1] {
                            if node < *len && picked[usize::from(byte >> (4 * (node % 2)) & 0xf)] {
                                nodes.push(node);
                            }
                        }
                    }
                }
                nodes
            }
            KindsRepr::Bytes(kinds) => (0..kinds.len())
                .filter(|&node| is_kind(kinds[node]))
                .collect(),
        }
    }

    /// The largest kind, in a read of the column's bytes (`None` for an empty column).
    pub fn largest(&self) -> Option<u8> {
        if self.is_empty() {
            return None;
        }
        // An unused high half is 0, which is no larger than any kind.
        match &self.0 {
            KindsRepr::Nibbles { nibbles, .. } => nibbles
                .iter()
                .map(|&byte| (byte & 0xf).max(byte >> 4))
                .max(),
            KindsRepr::Bytes(kinds) => kinds.iter().copied().max(),
        }
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
    /// Two kinds to a byte in one loop over pairs, rather than a push per kind (the parse of
    /// a V8 snapshot converts millions).
    fn from(kinds: Vec<u8>) -> Self {
        if kinds.iter().any(|&kind| kind >= 16) {
            return NodeKinds(KindsRepr::Bytes(kinds));
        }
        let (pairs, last) = kinds.as_chunks::<2>();
        let mut nibbles = Vec::with_capacity(kinds.len().div_ceil(2));
        nibbles.extend(pairs.iter().map(|&[low, high]| low | high << 4));
        nibbles.extend(last);
        NodeKinds(KindsRepr::Nibbles {
            nibbles,
            len: kinds.len(),
        })
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

/// The representations' names in an image.
const NIBBLES: &str = "nibbles";
const BYTES_REPR: &str = "bytes";

impl Imaged for NodeKinds {
    fn image(&self) -> ColumnImage<'_> {
        match &self.0 {
            KindsRepr::Nibbles { nibbles, len } => ColumnImage {
                repr: NIBBLES,
                scalars: vec![("len", *len as u64)],
                parts: vec![("nibbles", PartValues::U8(nibbles))],
            },
            KindsRepr::Bytes(bytes) => ColumnImage {
                repr: BYTES_REPR,
                scalars: Vec::new(),
                parts: vec![("bytes", PartValues::U8(bytes))],
            },
        }
    }

    fn from_image(source: &mut impl ImageSource) -> Result<Self, String> {
        expect_repr(source, &[NIBBLES, BYTES_REPR])?;
        if source.repr() == BYTES_REPR {
            // Kinds are checked against the kinds table with the graph.
            return Ok(NodeKinds(KindsRepr::Bytes(source.take("bytes")?)));
        }
        let len = source.scalar("len")?;
        let nibbles: Vec<u8> = source.take("nibbles")?;
        let len = usize::try_from(len).map_err(|_| format!("{len} kinds"))?;
        if nibbles.len() != len.div_ceil(2) {
            return Err(format!("{} bytes for {len} kinds", nibbles.len()));
        }
        // A push ORs the next kind into it.
        if !len.is_multiple_of(2) && nibbles.last().is_some_and(|&last| last >> 4 != 0) {
            return Err("the unused half of the last byte is not 0".to_owned());
        }
        Ok(NodeKinds(KindsRepr::Nibbles { nibbles, len }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn node_kinds_pack_until_a_kind_needs_a_byte() {
        let kinds: Vec<u8> = (0..999).map(|i| (i % 6) as u8).collect();
        let column = NodeKinds::from(kinds.clone());
        assert!(matches!(column.0, KindsRepr::Nibbles { .. }));
        assert_eq!(column.to_vec(), kinds);
        for n in [998, 999] {
            let pushed: NodeKinds = kinds[..n].iter().copied().collect();
            let (
                KindsRepr::Nibbles { nibbles, len },
                KindsRepr::Nibbles {
                    nibbles: by_pairs,
                    len: by_pairs_len,
                },
            ) = (&pushed.0, &NodeKinds::from(kinds[..n].to_vec()).0)
            else {
                panic!("nibbles");
            };
            assert_eq!((nibbles, len), (by_pairs, by_pairs_len));
        }
        assert_eq!(column.largest(), Some(5));
        assert_eq!(NodeKinds::from(Vec::new()).largest(), None);
        let mut joined = column.clone();
        joined.extend_from(&column);
        joined.push(200);
        assert!(matches!(joined.0, KindsRepr::Bytes(_)));
        assert_eq!(joined.to_vec(), [&kinds[..], &kinds[..], &[200]].concat());
        assert_eq!(joined[998 + 999 + 1], 200);
        assert_eq!(joined.largest(), Some(200));
        // An odd count leaves the last byte's high half unused: kind 0 there is no node.
        for column in [&column, &joined, &NodeKinds::from(kinds[..998].to_vec())] {
            for picked in [0u8, 3, 5, 200] {
                let plain: Vec<usize> = (0..column.len())
                    .filter(|&node| column[node] == picked)
                    .collect();
                assert_eq!(column.nodes_where(|kind| kind == picked), plain);
            }
        }
    }

    #[test]
    fn images_give_the_column_back_and_lies_are_refused() {
        use crate::image::testing::{Copied, Lie};
        let kinds: Vec<u8> = (0..999).map(|i| (i % 13) as u8).collect();
        let wide: Vec<u8> = (0..1000).map(|i| (i % 40) as u8).collect();
        for kinds in [
            kinds.clone(),
            kinds[..998].to_vec(),
            wide,
            vec![],
            vec![200],
        ] {
            let column = NodeKinds::from(kinds.clone());
            let mut back = NodeKinds::from_image(&mut Copied::new(&column.image())).unwrap();
            assert_eq!(back.to_vec(), kinds);
            assert_eq!(back, column);
            assert_eq!(
                std::mem::discriminant(&back.0),
                std::mem::discriminant(&column.0)
            );
            back.push(5);
            assert_eq!(back.to_vec(), [&kinds[..], &[5]].concat());
        }
        // 999 kinds: the high half of byte 499 is unused.
        let column = NodeKinds::from(kinds);
        assert!(matches!(column.0, KindsRepr::Nibbles { .. }));
        // A lie: what it is, and how the file tells it.
        let lies: [Lie; 4] = [
            ("more kinds than bytes", |image| {
                image.set_scalar("len", 1001)
            }),
            ("fewer kinds than bytes", |image| {
                image.set_scalar("len", 997)
            }),
            ("a byte too many", |image| {
                image.edit_part("nibbles", |bytes| bytes.push(0))
            }),
            ("the unused half set", |image| {
                image.edit_part("nibbles", |bytes| bytes[499] |= 0x30)
            }),
        ];
        for (lie, tell) in lies {
            let mut image = Copied::new(&column.image());
            tell(&mut image);
            assert!(NodeKinds::from_image(&mut image).is_err(), "{lie}");
        }
    }
}
