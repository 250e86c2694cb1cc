//! Node labels, dense or sparse.

use crate::image::{ColumnImage, ImageSource, Imaged, PartValues, expect_repr};
use crate::strings::StringId;

/// Node labels: one [`StringId`] per node, stored per node (`Dense`) where most nodes have one
/// (V8), and as a sorted list of the labelled nodes (`Sparse`) where most have none (Java
/// objects other than strings, classes and threads; Python objects).
///
/// Invariants: `Dense` has `len` entries; `Sparse`'s `nodes` are sorted, distinct and below
/// `len`, `names` has as many entries and none is [`StringId::EMPTY`]. Ids are kept raw, for
/// the image (a slice of ids is no slice of `u32`s).
#[derive(Clone, Debug)]
pub struct NodeNames {
    len: usize,
    repr: NamesRepr,
}

#[derive(Clone, Debug)]
enum NamesRepr {
    Dense(Vec<u32>),
    Sparse { nodes: Vec<u32>, names: Vec<u32> },
}

impl Default for NodeNames {
    fn default() -> Self {
        NodeNames::from_pairs(0, Vec::new())
    }
}

impl NodeNames {
    /// One label per node as a string id's raw value (for an importer that reads them so,
    /// [`crate::HeapGraph::from_parts`] checking them against the table); stored sparse when
    /// most are empty.
    pub fn from_raw_ids(dense: Vec<u32>) -> Self {
        let len = dense.len();
        let empty = StringId::EMPTY.to_raw();
        let n_named = dense.iter().filter(|&&name| name != empty).count();
        if Self::dense_is_smaller(len, n_named) {
            return NodeNames {
                len,
                repr: NamesRepr::Dense(dense),
            };
        }
        let pairs = dense
            .iter()
            .enumerate()
            .filter(|&(_, &name)| name != empty)
            .map(|(node, &name)| (node as u32, StringId(name)))
            .collect();
        NodeNames::from_pairs(len, pairs)
    }

    /// Labels from `(node, name)` pairs, any order, for nodes `0..len`; where a node appears
    /// more than once the last pair wins, and nodes without a pair have no label. Pairs for
    /// nodes at or past `len` are ignored.
    pub fn from_pairs(len: usize, mut pairs: Vec<(u32, StringId)>) -> Self {
        // Stable: equal nodes stay in the order given, so the last one is the later pair.
        pairs.sort_by_key(|&(node, _)| node);
        let mut nodes: Vec<u32> = Vec::with_capacity(pairs.len());
        let mut names: Vec<u32> = Vec::with_capacity(pairs.len());
        for (node, name) in pairs {
            if node as usize >= len {
                break;
            }
            if nodes.last() == Some(&node) {
                if let Some(last) = names.last_mut() {
                    *last = name.0;
                }
            } else {
                nodes.push(node);
                names.push(name.0);
            }
        }
        let mut kept = 0;
        for i in 0..nodes.len() {
            if names[i] != StringId::EMPTY.0 {
                nodes[kept] = nodes[i];
                names[kept] = names[i];
                kept += 1;
            }
        }
        nodes.truncate(kept);
        names.truncate(kept);
        if Self::dense_is_smaller(len, kept) {
            let mut dense = vec![StringId::EMPTY.0; len];
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
            NamesRepr::Dense(dense) => StringId(dense[node]),
            NamesRepr::Sparse { nodes, names } => match nodes.binary_search(&(node as u32)) {
                Ok(at) => StringId(names[at]),
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
                return StringId(dense.next().copied().unwrap_or(StringId::EMPTY.0));
            }
            match sparse {
                Some((nodes, names)) if nodes.get(at) == Some(&(node as u32)) => {
                    at += 1;
                    StringId(names[at - 1])
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
                    .filter(|&(_, &name)| name != StringId::EMPTY.0)
                    .map(|(node, &name)| (node as u32, StringId(name))),
            ),
            NamesRepr::Sparse { nodes, names } => Box::new(
                nodes
                    .iter()
                    .copied()
                    .zip(names.iter().map(|&name| StringId(name))),
            ),
        }
    }

    /// The largest label's raw id, in a read of the ids (`None` where no node has a label;
    /// [`StringId::EMPTY`], the least id, may come back where some have none).
    pub fn largest_raw(&self) -> Option<u32> {
        match &self.repr {
            NamesRepr::Dense(dense) => dense.iter().copied().max(),
            NamesRepr::Sparse { names, .. } => names.iter().copied().max(),
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
        // In place: the same allocation.
        NodeNames::from_raw_ids(dense.into_iter().map(StringId::to_raw).collect())
    }
}

/// The representations' names in an image.
const DENSE: &str = "dense";
const SPARSE: &str = "sparse";

/// The most nodes an image may have: nodes are `u32`s, so `get` past 2³² would read another
/// node's label.
const MAX_LEN: u64 = 1 << 32;

impl Imaged for NodeNames {
    fn image(&self) -> ColumnImage<'_> {
        match &self.repr {
            NamesRepr::Dense(dense) => ColumnImage {
                repr: DENSE,
                scalars: Vec::new(),
                parts: vec![("names", PartValues::U32(dense))],
            },
            NamesRepr::Sparse { nodes, names } => ColumnImage {
                repr: SPARSE,
                scalars: vec![("len", self.len as u64)],
                parts: vec![
                    ("nodes", PartValues::U32(nodes)),
                    ("names", PartValues::U32(names)),
                ],
            },
        }
    }

    fn from_image(source: &mut impl ImageSource) -> Result<Self, String> {
        expect_repr(source, &[DENSE, SPARSE])?;
        // Ids are checked against the string table with the graph.
        if source.repr() == DENSE {
            let dense: Vec<u32> = source.take("names")?;
            if dense.len() as u64 > MAX_LEN {
                return Err(format!("{} nodes", dense.len()));
            }
            return Ok(NodeNames {
                len: dense.len(),
                repr: NamesRepr::Dense(dense),
            });
        }
        let len = source.scalar("len")?;
        let nodes: Vec<u32> = source.take("nodes")?;
        let names: Vec<u32> = source.take("names")?;
        if len > MAX_LEN {
            return Err(format!("{len} nodes"));
        }
        if nodes.len() != names.len() {
            return Err(format!(
                "{} names for {} labelled nodes",
                names.len(),
                nodes.len()
            ));
        }
        // `get` searches the list, `iter` walks it in step with the nodes.
        let mut previous = None;
        for &node in &nodes {
            if previous.is_some_and(|previous| node <= previous) || u64::from(node) >= len {
                return Err(format!("labelled node {node} is out of order or of range"));
            }
            previous = Some(node);
        }
        // A node without a label is not listed (`named` lists what is).
        if let Some(at) = names.iter().position(|&name| name == StringId::EMPTY.0) {
            return Err(format!("labelled node {} has the empty label", nodes[at]));
        }
        Ok(NodeNames {
            len: len as usize,
            repr: NamesRepr::Sparse { nodes, names },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn images_give_the_column_back_and_lies_are_refused() {
        use crate::image::testing::{Copied, Lie};
        let empty = StringId::EMPTY;
        let sparse: Vec<StringId> = (0..3000u32)
            .map(|i| if i % 5 == 1 { StringId(i) } else { empty })
            .collect();
        let dense: Vec<StringId> = (0..3000u32).map(|i| StringId(i % 3)).collect();
        for labels in [sparse.clone(), dense, vec![], vec![empty; 10]] {
            let column = NodeNames::from(labels.clone());
            let back = NodeNames::from_image(&mut Copied::new(&column.image())).unwrap();
            assert_eq!(back.to_vec(), labels);
            assert_eq!(back, column);
            assert_eq!(back.len(), labels.len());
            assert!((0..labels.len()).all(|node| back.get(node) == labels[node]));
            assert!(back.named().eq(column.named()));
            assert_eq!(
                std::mem::discriminant(&back.repr),
                std::mem::discriminant(&column.repr)
            );
        }
        // Nodes 1, 6, 11…, 2996 are labelled.
        let column = NodeNames::from(sparse);
        assert!(matches!(column.repr, NamesRepr::Sparse { .. }));
        // A lie: what it is, and how the file tells it.
        let lies: [Lie; 6] = [
            ("more nodes than a u32 counts", |image| {
                image.set_scalar("len", MAX_LEN + 10)
            }),
            ("a name short", |image| {
                image.edit_part("names", |bytes| bytes.truncate(4))
            }),
            ("nodes out of order", |image| {
                image.edit_part("nodes", |bytes| bytes[..8].rotate_left(4))
            }),
            ("a node twice", |image| {
                image.edit_part("nodes", |bytes| bytes.copy_within(0..4, 4))
            }),
            ("a node past the end", |image| image.set_scalar("len", 2996)),
            ("an empty label listed", |image| {
                image.edit_part("names", |bytes| bytes[..4].copy_from_slice(&[0; 4]))
            }),
        ];
        for (lie, tell) in lies {
            let mut image = Copied::new(&column.image());
            tell(&mut image);
            assert!(NodeNames::from_image(&mut image).is_err(), "{lie}");
        }
    }
}
