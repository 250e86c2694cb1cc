//! An analysis as plain columns, stored beside a graph (the `.hgd` format's trailing section)
//! so that a converted dump reopens without recomputing: the one type that the importer reads
//! and writes and the analyzer produces and adopts, neither seeing the other.

use crate::columns::U64Column;
use crate::strings::StringId;

/// Analysis results, one entry per node in node order.
///
/// [`StoredAnalysis::NONE`] (`u32::MAX`) marks a node with no dominator or no distance
/// (unreachable nodes, and the root's dominator).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredAnalysis {
    /// Immediate dominator's node index, per node.
    pub idom: Vec<u32>,
    /// Retained size in bytes, per node, in the analyzer's own compact form (4 bytes a node
    /// below 4 GiB), so that neither reopening a file nor storing an analysis holds a second,
    /// wide copy.
    pub retained_size: U64Column,
    /// Nodes in each node's dominator subtree, itself included; empty when not stored, and
    /// then rebuilt from `idom`.
    pub retained_count: Vec<u32>,
    /// Distance from the root per node, as the analyzer computed it (for V8, DevTools' raw
    /// distance, which counts from 100000000 for nodes reached only from system roots).
    pub distance: Vec<u32>,
    /// Per-type totals, where stored.
    pub type_totals: Option<TypeTotals>,
    /// Each node's parent on the chain from the root that `paths` merges (the breadth-first
    /// search that enters through named roots first), [`StoredAnalysis::NONE`] for the root and
    /// where the search does not reach; empty when not stored.
    pub chain_parent: Vec<u32>,
    /// The dominator tree's children, where stored.
    pub dominator_children: Option<ChildLists>,
    /// The merged paths to the instances of the types with the most instances, where stored.
    pub type_paths: Vec<TypePaths>,
    /// The types below the suspects' accumulation points at the default threshold, by point
    /// in increasing order, where stored.
    pub accumulated: Vec<AccumulatedTypes>,
}

impl StoredAnalysis {
    /// "None": no dominator, or no distance.
    pub const NONE: u32 = u32::MAX;

    /// Drops the resident pages of the columns that are mapped from a file and were only read
    /// ([`crate::file_pages::forget_read_pages`]): an `.hgd` file's, once its reading checked
    /// them. The values are unchanged.
    pub fn forget_read_pages(&self) {
        use crate::file_pages::{forget_read_column_pages, forget_read_pages};
        forget_read_pages(&self.idom);
        forget_read_column_pages(&self.retained_size);
        forget_read_pages(&self.retained_count);
        forget_read_pages(&self.distance);
        forget_read_pages(&self.chain_parent);
        if let Some(lists) = &self.dominator_children {
            forget_read_pages(&lists.parent_bits);
            forget_read_pages(&lists.parents_before);
            forget_read_pages(&lists.first);
            forget_read_pages(&lists.bytes);
        }
    }
}

/// Per-type totals over real (non-synthetic) objects, one row per type: column `i` of each
/// vector describes type `types[i]`. Rows are in order of first appearance in node order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TypeTotals {
    /// The type's name, in the graph's string table (findable).
    pub types: Vec<StringId>,
    /// Objects of the type.
    pub count: Vec<u64>,
    /// Their shallow sizes, summed.
    pub shallow: Vec<u64>,
    /// Their retained sizes, with each retained byte counted once (an instance inside the
    /// dominator subtree of another instance of its type is not added again).
    pub retained: Vec<u64>,
}

/// The merged paths from the root to the instances of one type (`heapgraph_analyzer`'s
/// `MergedPathsView` in the order that explains each chain first), as plain numbers: what
/// `paths --type` lists, stored for the types with the most instances, whose chains take
/// seconds to merge. The objects' names, sizes and the references' names are the graph's and
/// the analysis's; only what the merge found is here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypePaths {
    /// The type's name, in the graph's string table (findable).
    pub type_name: StringId,
    /// Children listed per node at most.
    pub branches: u32,
    /// Objects of the type.
    pub objects: u64,
    /// Those with a chain from the root.
    pub reached: u64,
    /// What the reached objects retain, each byte counted once.
    pub retained_size: u64,
    /// The listed nodes, in the tree's pre-order.
    pub nodes: Vec<TypePathNode>,
}

/// One listed node of [`TypePaths`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TypePathNode {
    /// Its node index.
    pub node: u32,
    /// The edge into it from its parent on its chain, an edge index.
    pub edge: Option<u64>,
    /// Its parent's place among the listed nodes (an earlier one); `None` for the root's
    /// children.
    pub parent: Option<u32>,
    /// Edges from the root on its chain.
    pub depth: u32,
    /// How far in it is printed.
    pub indent: u32,
    /// Whether it is itself one of the type's instances.
    pub is_target: bool,
    /// Instances at or below it.
    pub targets: u64,
    /// What they retain, each byte counted once.
    pub targets_retained_size: u64,
    /// Steps of a long single-child run left out just above it.
    pub skipped_steps: u64,
    /// Children left out.
    pub hidden_children: u64,
    /// Instances below those children.
    pub hidden_targets: u64,
    /// What those instances retain.
    pub hidden_retained_size: u64,
}

/// The dominator tree's children as the analyzer keeps them (`heapgraph_analyzer`'s
/// `DominatorChildren`), stored beside the tree so that reopening a converted dump skips their
/// three passes over every node. A bit per node that has children (`parent_bits`, 64 nodes a
/// word, the low bit first) and, per word, how many bits are set before it
/// (`parents_before`); per such node, in index order, where its list starts in `bytes`
/// (`first`: one more entry than there are parents, the last the bytes' length); and the
/// lists: each child as its signed distance from its parent, zigzag-encoded in 7-bit groups
/// (LEB128), children in index order.
///
/// Invariants ([`ChildLists::check_layout`], when made from a file): the counts before each
/// word are the bits' running count, `first` starts at 0, rises strictly (every parent has a
/// child) and ends at the bytes' length. That the lists are the dominators' children is the
/// analyzer's check, when it adopts them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChildLists {
    /// A bit per node: whether it has children.
    pub parent_bits: Vec<u64>,
    /// Per word of `parent_bits`, the bits set in the words before it.
    pub parents_before: Vec<u32>,
    /// Per parent, where its list starts in `bytes`; then the bytes' length.
    pub first: Vec<u32>,
    /// The lists.
    pub bytes: Vec<u8>,
}

impl ChildLists {
    /// The representation's name in a file's images.
    pub const REPR: &str = "leb128-deltas";

    /// Checks the invariants of the layout (the type's documentation): the counts before each
    /// word are the bits' running count, and `first` starts at 0, rises strictly and ends at
    /// the bytes' length.
    ///
    /// # Errors
    /// A message naming the first rule broken.
    pub fn check_layout(&self) -> Result<(), String> {
        if self.parents_before.len() != self.parent_bits.len() {
            return Err(format!(
                "{} counts before {} words of parent bits",
                self.parents_before.len(),
                self.parent_bits.len()
            ));
        }
        let mut running = 0u64;
        for (word, (&bits, &before)) in self
            .parent_bits
            .iter()
            .zip(&self.parents_before)
            .enumerate()
        {
            if u64::from(before) != running {
                return Err(format!(
                    "word {word} of the parent bits counts {before} parents before it, not {running}"
                ));
            }
            running += u64::from(bits.count_ones());
        }
        if self.first.len() as u64 != running + 1 {
            return Err(format!(
                "{} list offsets for {running} parents",
                self.first.len()
            ));
        }
        if self.first.first() != Some(&0) {
            return Err("the first list does not start at byte 0".to_owned());
        }
        if let Some(at) = self.first.windows(2).position(|pair| pair[0] >= pair[1]) {
            return Err(format!("list {at} is empty or ends before it starts"));
        }
        if self.first.last().map(|&end| end as usize) != Some(self.bytes.len()) {
            return Err(format!(
                "the lists end at byte {:?} of {}",
                self.first.last(),
                self.bytes.len()
            ));
        }
        Ok(())
    }
}

impl crate::image::Imaged for ChildLists {
    fn image(&self) -> crate::image::ColumnImage<'_> {
        use crate::image::PartValues;
        crate::image::ColumnImage {
            repr: Self::REPR,
            scalars: Vec::new(),
            parts: vec![
                ("parent_bits", PartValues::U64(&self.parent_bits)),
                ("parents_before", PartValues::U32(&self.parents_before)),
                ("first", PartValues::U32(&self.first)),
                ("bytes", PartValues::U8(&self.bytes)),
            ],
        }
    }

    fn from_image(source: &mut impl crate::image::ImageSource) -> Result<Self, String> {
        crate::image::expect_repr(source, &[Self::REPR])?;
        let lists = ChildLists {
            parent_bits: source.take("parent_bits")?,
            parents_before: source.take("parents_before")?,
            first: source.take("first")?,
            bytes: source.take("bytes")?,
        };
        lists.check_layout()?;
        Ok(lists)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::Imaged;
    use crate::image::testing::{Copied, Lie};

    /// Node 0 has children 1 and 2, node 2 has child 3 (deltas +1, +2, +1, zigzagged).
    fn sample() -> ChildLists {
        ChildLists {
            parent_bits: vec![0b101],
            parents_before: vec![0],
            first: vec![0, 2, 3],
            bytes: vec![2, 4, 2],
        }
    }

    #[test]
    fn child_lists_read_back_and_lies_are_refused() {
        let lists = sample();
        let back = ChildLists::from_image(&mut Copied::new(&lists.image())).expect("read back");
        assert_eq!(back, lists);
        let lies: [Lie; 6] = [
            ("another representation", |copied| {
                *copied = Copied::new(&crate::image::ColumnImage {
                    repr: "other",
                    ..sample().image()
                });
            }),
            (
                "a count before a word that is not the running count",
                |copied| {
                    copied.edit_part("parents_before", |bytes| bytes[0] = 1);
                },
            ),
            ("an offset too few", |copied| {
                copied.edit_part("first", |bytes| bytes.truncate(8));
            }),
            ("an empty list", |copied| {
                copied.edit_part("first", |bytes| bytes[4] = 0);
            }),
            ("lists that end before the bytes do", |copied| {
                copied.edit_part("bytes", |bytes| bytes.push(0));
            }),
            ("a first list that does not start at 0", |copied| {
                copied.edit_part("first", |bytes| bytes[0] = 1);
            }),
        ];
        for (lie, tell) in lies {
            let mut copied = Copied::new(&sample().image());
            tell(&mut copied);
            assert!(ChildLists::from_image(&mut copied).is_err(), "{lie}");
        }
    }
}

/// The types of the objects below one node of the dominator tree (a suspect's accumulation
/// point), as the suspects list them: the largest retained size first, at most the few a
/// suspect shows; row `i` of each vector describes type `types[i]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccumulatedTypes {
    /// The node below which the types are tallied (a node index).
    pub point: u32,
    /// The topmost instance of the first type with the largest retained size, where a chain
    /// to the point's entries ends; [`StoredAnalysis::NONE`] for none.
    pub representative: u32,
    /// The type's name, in the graph's string table.
    pub types: Vec<StringId>,
    /// Objects of the type below the point.
    pub count: Vec<u64>,
    /// What they retain, each byte counted once.
    pub retained: Vec<u64>,
}
