//! Node labels, dense or sparse.

use crate::strings::StringId;

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
}
