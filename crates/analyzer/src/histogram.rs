//! Per-type totals, with a type's retained size counting each retained byte once.

use crate::dominators::{DominatorTree, Offset};
use crate::leb128;
use crate::tree_columns::{NodeCounts, NodeFlags};
use fixedbitset::FixedBitSet;
use heapgraph_model::{ChildLists, HeapGraph, NodeId, NodeTypes, StringId, TypeTotals};
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::ops::Range;
use std::sync::atomic::AtomicU8;
use std::sync::{Mutex, PoisonError};

/// Why stored retained counts are refused.
pub(crate) const COUNTS_DO_NOT_FIT: &str =
    "the stored retained counts do not fit the stored dominators";

/// Computes [`TypeTotals`] from the dominator tree, whose children `children` gives (built
/// beside the count of each type, unless `counts` brings them).
///
/// Complexity: O(V) time and space.
pub(crate) fn type_totals<C>(
    graph: &HeapGraph,
    tree: &DominatorTree,
    children: impl FnOnce() -> C + Send,
    counts: Option<&TypeCounts>,
) -> TypeTotals
where
    C: std::ops::Deref<Target = DominatorChildren> + Send,
{
    match counts {
        Some(counts) => {
            let children = children();
            type_totals_and_tallies(graph, tree, &children, counts.dense_types(graph), &[]).0
        }
        None => type_totals_where(graph, tree, children, &every),
    }
}

/// Keeps every node.
fn every(_: usize) -> bool {
    true
}

/// [`type_counts`] of every node, kept for the type totals' walk: counted where a core is idle
/// beside the dominator pass ([`crate::analyze_before_chains`]).
pub(crate) struct TypeCounts {
    dense_of_key: Vec<u32>,
    totals: TypeTotals,
}

impl TypeCounts {
    /// The counts and shallow sizes of every type, with their dense indices.
    pub(crate) fn of_every_node(graph: &HeapGraph) -> Self {
        let (types, totals) = type_counts(graph, &every);
        TypeCounts {
            dense_of_key: types.dense_of_key,
            totals,
        }
    }

    /// What [`type_counts`] of every node gives.
    pub(crate) fn dense_types<'a>(&self, graph: &'a HeapGraph) -> (DenseTypes<'a>, TypeTotals) {
        let types = DenseTypes {
            graph,
            keep: &every,
            dense_of_key: self.dense_of_key.clone(),
        };
        (types, self.totals.clone())
    }
}

/// [`type_totals`] over the real objects that `keep` accepts (by node index); the others count
/// nowhere, and the each-byte-once rule applies among the kept instances.
pub(crate) fn type_totals_where<C>(
    graph: &HeapGraph,
    tree: &DominatorTree,
    children: impl FnOnce() -> C + Send,
    keep: &(dyn Fn(usize) -> bool + Sync),
) -> TypeTotals
where
    C: std::ops::Deref<Target = DominatorChildren> + Send,
{
    let (children, counted) = rayon::join(children, || type_counts(graph, keep));
    type_totals_and_tallies(graph, tree, &children, counted, &[]).0
}

/// [`type_totals_and_tallies`] of every node, from `counts` where they were counted.
pub(crate) fn type_totals_and_tallies_of_every_node(
    graph: &HeapGraph,
    tree: &DominatorTree,
    children: &DominatorChildren,
    counts: Option<&TypeCounts>,
    points: &[u32],
) -> (TypeTotals, Vec<Vec<PerType<TypeTally>>>) {
    let counted = match counts {
        Some(counts) => counts.dense_types(graph),
        None => type_counts(graph, &every),
    };
    type_totals_and_tallies(graph, tree, children, counted, points)
}

/// The type totals from `counted` ([`type_counts`]), and in the same walk the tallies of the
/// types below each of `points` ([`add_retained`]).
pub(crate) fn type_totals_and_tallies(
    graph: &HeapGraph,
    tree: &DominatorTree,
    children: &DominatorChildren,
    counted: (DenseTypes<'_>, TypeTotals),
    points: &[u32],
) -> (TypeTotals, Vec<Vec<PerType<TypeTally>>>) {
    let (types, mut totals) = counted;
    let threads = rayon::current_num_threads() as u32;
    let parts = walk_parts(tree, children, graph.root(), threads, SPLIT_WALKS_FROM);
    let below = add_retained(graph, tree, children, &types, &mut totals, points, parts);
    (totals, below)
}

/// The children of every reachable node in the dominator tree, children in index order.
///
/// Laid out for memory, as the per-type totals build it beside the whole analysis: most nodes
/// of a heap dominate nothing, so list offsets are kept only for the nodes that have children
/// (`parents`, a bit per node with a running count per 64 nodes, says which and at what
/// position); and a node's dominator is nearly always an object written close to it, so each
/// child is stored as its signed distance from its parent, zigzag-encoded in 7-bit groups
/// (LEB128): one byte for most children, five at most. Offsets are `u32` unless the lists
/// could pass 4 GiB.
pub(crate) struct DominatorChildren {
    parents: ParentBits,
    first: ListOffsets,
    bytes: Vec<u8>,
}

/// What the children's lists are made of: each node's immediate dominator, which nodes are
/// reachable, and the root.
#[derive(Clone, Copy)]
pub(crate) struct TreeLinks<'a> {
    root: usize,
    idom: &'a [u32],
    reachable: &'a NodeFlags,
}

impl<'a> TreeLinks<'a> {
    /// The links of `tree`, of `graph`.
    fn of(graph: &HeapGraph, tree: &'a DominatorTree) -> Self {
        Self::new(graph.root().index(), &tree.idom, &tree.reachable)
    }

    pub(crate) fn new(root: usize, idom: &'a [u32], reachable: &'a NodeFlags) -> Self {
        TreeLinks {
            root,
            idom,
            reachable,
        }
    }

    /// Whether `node` is in a list: reachable, and not the root.
    #[inline]
    fn has_parent(&self, node: usize) -> bool {
        node != self.root && self.reachable[node]
    }
}

/// Byte offsets of the children's lists, by parent rank.
enum ListOffsets {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl ListOffsets {
    #[inline]
    fn get(&self, rank: usize) -> usize {
        match self {
            ListOffsets::Narrow(offsets) => offsets[rank] as usize,
            ListOffsets::Wide(offsets) => offsets[rank] as usize,
        }
    }
}

/// Which nodes have children, with a rank: `bits` holds a bit per node, `before[k]` the number
/// of bits set in its blocks before block `k`.
struct ParentBits {
    bits: FixedBitSet,
    before: Vec<u32>,
}

/// Bits per block of a [`FixedBitSet`].
const BLOCK_BITS: usize = fixedbitset::Block::BITS as usize;

impl ParentBits {
    /// The position of `node` among the parents, if it is one.
    #[inline]
    fn rank(&self, node: usize) -> Option<usize> {
        let (block, bit) = (node / BLOCK_BITS, node % BLOCK_BITS);
        let bits = self.bits.as_slice()[block];
        (bits & (1 << bit) != 0)
            .then(|| self.before[block] as usize + (bits & ((1 << bit) - 1)).count_ones() as usize)
    }
}

/// Ranges of nodes for the children's passes: one per thread rayon has (at most 4), one for
/// graphs under a million nodes.
fn node_ranges(n_nodes: usize) -> Vec<Range<usize>> {
    let parts = if n_nodes < 1 << 20 {
        1
    } else {
        rayon::current_num_threads().clamp(1, 4)
    };
    let step = n_nodes.div_ceil(parts).max(1);
    (0..parts)
        .map(|part| (part * step).min(n_nodes)..((part + 1) * step).min(n_nodes))
        .collect()
}

/// `work` on each item, results in order: the first on this thread, the others on threads of
/// their own (on this one where no thread can be had).
fn on_threads<I: Send, R: Send>(items: Vec<I>, work: impl Fn(I) -> R + Sync) -> Vec<R> {
    let slots: Vec<Mutex<Option<I>>> = items
        .into_iter()
        .map(|item| Mutex::new(Some(item)))
        .collect();
    let work = &work;
    let slots = &slots;
    let run = move |at: usize| {
        let item = slots[at]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        item.map(work)
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (1..slots.len())
            .map(|at| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || run(at))
                    .ok()
            })
            .collect();
        let mut results = vec![run(0)];
        for (at, handle) in (1..).zip(handles) {
            results.push(match handle {
                Some(handle) => handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                None => run(at),
            });
        }
        results.into_iter().flatten().collect()
    })
}

/// The children's lists, by parent rank: where each starts (one more offset than `n_parents`,
/// the last where the bytes end) and their bytes. Each range of nodes counts its children's
/// bytes per list, the counts become where its part of each list starts, and it fills them.
fn lists<T: Offset>(
    tree: TreeLinks<'_>,
    parents: &ParentBits,
    ranges: Vec<Range<usize>>,
    n_parents: usize,
) -> (Vec<T>, Vec<u8>) {
    let has_parent = |node: usize| tree.has_parent(node);
    let rank_of = |node: usize| {
        parents
            .rank(node)
            .expect("every dominator was marked as a parent")
    };
    let mut cursors = on_threads(ranges.clone(), |range| {
        // One spare entry, so that the last range's cursors become the lists' starts in place.
        let mut counts = Vec::with_capacity(n_parents + 1);
        counts.resize(n_parents, T::ZERO);
        for node in range {
            if has_parent(node) {
                let parent = tree.idom[node] as usize;
                let count = &mut counts[rank_of(parent)];
                *count = T::new(count.get() + leb128::encoded_len(zigzag(node, parent)));
            }
        }
        counts
    });
    let mut running = 0usize;
    for rank in 0..n_parents {
        for part in &mut cursors {
            let n = part[rank].get();
            part[rank] = T::new(running);
            running += n;
        }
    }
    let bytes: Vec<AtomicU8> = (0..running).map(|_| AtomicU8::new(0)).collect();
    let mut ends = on_threads(
        ranges.into_iter().zip(cursors).collect(),
        |(range, mut cursor): (Range<usize>, Vec<T>)| {
            for node in range {
                if has_parent(node) {
                    let parent = tree.idom[node] as usize;
                    let slot = &mut cursor[rank_of(parent)];
                    *slot = T::new(leb128::store(&bytes, slot.get(), zigzag(node, parent)));
                }
            }
            cursor
        },
    );
    // The last range's part of each list ends where the next list starts.
    let mut first = ends.pop().unwrap_or_default();
    first.insert(0, T::ZERO);
    let bytes = bytes.into_iter().map(AtomicU8::into_inner).collect();
    (first, bytes)
}

/// The 64-bit words of `bits`, the low bit first.
fn words_of(bits: &FixedBitSet) -> Vec<u64> {
    let mut words = vec![0u64; bits.len().div_ceil(64)];
    for node in bits.ones() {
        words[node / 64] |= 1 << (node % 64);
    }
    words
}

/// The bit set of `n` bits whose 64-bit words are `words`, the low bit first.
fn bits_of(words: &[u64], n: usize) -> FixedBitSet {
    let mut bits = FixedBitSet::with_capacity(n);
    for (at, &word) in words.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            bits.insert(at * 64 + word.trailing_zeros() as usize);
            word &= word - 1;
        }
    }
    bits
}

/// The zigzag form of `child - parent`.
#[inline]
fn zigzag(child: usize, parent: usize) -> u64 {
    leb128::zigzag(child as i64 - parent as i64)
}

impl DominatorChildren {
    /// The lists of every node, kept in scratch files where indexes are
    /// ([`heapgraph_model::file_pages::page_out`]).
    pub(crate) fn build(graph: &HeapGraph, tree: &DominatorTree) -> Self {
        heapgraph_model::timed("dominator tree's children", || {
            Self::build_untimed(graph, tree).paged_out()
        })
    }

    /// The lists' offsets and bytes moved into scratch files, where indexes are kept there.
    fn paged_out(self) -> Self {
        use heapgraph_model::file_pages::page_out;
        let first = match self.first {
            ListOffsets::Narrow(first) => ListOffsets::Narrow(page_out(first)),
            ListOffsets::Wide(first) => ListOffsets::Wide(page_out(first)),
        };
        DominatorChildren {
            parents: self.parents,
            first,
            bytes: page_out(self.bytes),
        }
    }

    /// Three passes over the nodes (mark the parents, count each list's bytes, fill the
    /// lists), each split into ranges of nodes on threads of their own (never rayon jobs: the
    /// per-type totals wait for the children from inside one). A range's children of a parent
    /// go after those of the ranges before it, so each list stays in index order.
    fn build_untimed(graph: &HeapGraph, tree: &DominatorTree) -> Self {
        Self::build_in_ranges(TreeLinks::of(graph, tree), node_ranges(graph.node_count()))
    }

    /// The lists of a tree whose last step is still running (the dominator pass's retained
    /// sizes, on the other core), built on this thread alone from `links`, and kept in
    /// scratch files where indexes are.
    pub(crate) fn build_beside(links: TreeLinks<'_>) -> Self {
        heapgraph_model::timed("dominator tree's children", || {
            let n_nodes = links.idom.len();
            Self::build_in_ranges(links, std::iter::once(0..n_nodes).collect()).paged_out()
        })
    }

    /// [`DominatorChildren::build_untimed`] with the nodes split into `ranges`.
    fn build_in_ranges(tree: TreeLinks<'_>, ranges: Vec<Range<usize>>) -> Self {
        let n_nodes = tree.idom.len();
        let has_parent = |node: usize| tree.has_parent(node);
        let marked = on_threads(ranges.clone(), |range| {
            let mut bits = FixedBitSet::with_capacity(n_nodes);
            let mut n_children = 0usize;
            for node in range {
                if has_parent(node) {
                    bits.insert(tree.idom[node] as usize);
                    n_children += 1;
                }
            }
            (bits, n_children)
        });
        let n_children: usize = marked.iter().map(|(_, n)| n).sum();
        let mut marked = marked.into_iter().map(|(bits, _)| bits);
        let mut bits = marked.next().unwrap_or_default();
        for other in marked {
            bits.union_with(&other);
        }
        let mut before = Vec::with_capacity(bits.as_slice().len());
        let mut running = 0u32;
        for &block in bits.as_slice() {
            before.push(running);
            running += block.count_ones();
        }
        let parents = ParentBits { bits, before };
        // Five bytes at most per child bound the total.
        let (first, bytes) = if u32::try_from(n_children.saturating_mul(5)).is_ok() {
            let (first, bytes) = lists::<u32>(tree, &parents, ranges, running as usize);
            (ListOffsets::Narrow(first), bytes)
        } else {
            let (first, bytes) = lists::<u64>(tree, &parents, ranges, running as usize);
            (ListOffsets::Wide(first), bytes)
        };
        DominatorChildren {
            parents,
            first,
            bytes,
        }
    }

    /// The lists as a stored analysis keeps them; `None` where their offsets are wide (lists
    /// of more than 4 GiB, which no file stores).
    pub(crate) fn into_stored(self) -> Option<ChildLists> {
        let ListOffsets::Narrow(first) = self.first else {
            return None;
        };
        let ParentBits { bits, before } = self.parents;
        Some(ChildLists {
            parent_bits: words_of(&bits),
            parents_before: before,
            first,
            bytes: self.bytes,
        })
    }

    /// Lists from a stored analysis, checked against `tree` (itself checked): the parents'
    /// bits cover the graph's nodes; every listed child is a reachable node other than the
    /// root whose dominator is the parent it is listed under, each list rising; and as many
    /// are listed as the tree has reachable nodes below the root, so that each is listed once.
    /// With `counts`, the stored retained counts are checked in the same pass, as
    /// [`crate::checked_retained_counts`] checks them, over the lists instead of the dominators
    /// (which the lists are, once checked): each reachable node's count is one more than the sum
    /// of its children's, and the root's is the number of reachable nodes. The parents' lists
    /// are checked in ranges on rayon's threads.
    ///
    /// # Errors
    /// A message naming the first list or child that breaks a rule.
    pub(crate) fn from_stored(
        graph: &HeapGraph,
        tree: &DominatorTree,
        lists: ChildLists,
        counts: Option<&NodeCounts>,
    ) -> Result<Self, String> {
        use rayon::prelude::*;
        let n_nodes = graph.node_count();
        let root = graph.root().index();
        lists.check_layout()?;
        let fits_the_nodes = lists.parent_bits.len() == n_nodes.div_ceil(64)
            && lists
                .parent_bits
                .last()
                .is_none_or(|&word| n_nodes.is_multiple_of(64) || word >> (n_nodes % 64) == 0);
        if !fits_the_nodes {
            return Err(format!(
                "the stored dominator tree's children are not laid out for {n_nodes} nodes"
            ));
        }
        let ChildLists {
            parent_bits,
            parents_before,
            first,
            bytes,
        } = lists;
        // Words of parent bits per task.
        const WORDS: usize = 1 << 14;
        let listed = parent_bits
            .par_chunks(WORDS)
            .enumerate()
            .map(|(chunk, words)| -> Result<u64, String> {
                let mut rank = parents_before[chunk * WORDS] as usize;
                let mut listed = 0u64;
                for (word_at, &word) in words.iter().enumerate() {
                    // The reachable nodes of no list retain themselves alone.
                    let start = (chunk * WORDS + word_at) * 64;
                    if let Some(counts) = counts {
                        let leaves = (start..n_nodes.min(start + 64))
                            .filter(|&node| word >> (node - start) & 1 == 0);
                        if leaves
                            .into_iter()
                            .any(|node| tree.reachable[node] && counts[node] != 1)
                        {
                            return Err(COUNTS_DO_NOT_FIT.to_owned());
                        }
                    }
                    let mut bits = word;
                    while bits != 0 {
                        let parent =
                            (chunk * WORDS + word_at) * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let (mut at, end) = (first[rank] as usize, first[rank + 1] as usize);
                        rank += 1;
                        let mut previous = None;
                        // Saturating: a saturated sum is u32::MAX, which no count exceeds by
                        // one, so it fails the check as it should.
                        let mut below = 0u32;
                        while at < end {
                            let (code, next) =
                                leb128::read_within(&bytes, at, end).ok_or_else(|| {
                                    format!(
                                        "the list of node {parent}'s children ends inside a child"
                                    )
                                })?;
                            at = next;
                            let child = usize::try_from(parent as i64 + leb128::unzigzag(code))
                                .ok()
                                .filter(|&child| child < n_nodes)
                                .ok_or_else(|| {
                                    format!("node {parent} lists a child that is not a node")
                                })?;
                            if child == root
                                || !tree.reachable[child]
                                || tree.idom[child] as usize != parent
                            {
                                return Err(format!(
                                    "node {child} is listed as a child of node {parent}, which is \
                                     not its dominator"
                                ));
                            }
                            if previous.is_some_and(|previous| child <= previous) {
                                return Err(format!(
                                    "the children of node {parent} are out of order at node {child}"
                                ));
                            }
                            previous = Some(child);
                            listed += 1;
                            if let Some(counts) = counts {
                                below = below.saturating_add(counts[child]);
                            }
                        }
                        if let Some(counts) = counts
                            && u64::from(counts[parent]) != u64::from(below) + 1
                        {
                            return Err(COUNTS_DO_NOT_FIT.to_owned());
                        }
                    }
                }
                Ok(listed)
            })
            .try_reduce(|| 0, |a, b| Ok(a + b))?;
        let n_reachable = tree.reachable.count_set() as u64;
        if counts.is_some_and(|counts| u64::from(counts[root]) != n_reachable) {
            return Err(COUNTS_DO_NOT_FIT.to_owned());
        }
        let below_root = n_reachable.saturating_sub(1);
        if listed != below_root {
            return Err(format!(
                "the stored dominator tree's children list {listed} nodes of the {below_root} \
                 below the root"
            ));
        }
        Ok(DominatorChildren {
            parents: ParentBits {
                bits: bits_of(&parent_bits, n_nodes),
                before: parents_before,
            },
            first: ListOffsets::Narrow(first),
            bytes,
        })
    }

    /// Where the list of `node`'s children starts and ends in the byte stream (equal for none).
    #[inline]
    pub(crate) fn range(&self, node: usize) -> (usize, usize) {
        match self.parents.rank(node) {
            Some(rank) => (self.first.get(rank), self.first.get(rank + 1)),
            None => (0, 0),
        }
    }

    /// The child of `parent` encoded at byte `at` of its list, and where the next one starts.
    #[inline]
    pub(crate) fn decode(&self, parent: usize, at: usize) -> (u32, usize) {
        let (code, next) = leb128::read(&self.bytes, at);
        ((parent as i64 + leb128::unzigzag(code)) as u32, next)
    }

    /// The children of `node`, in index order.
    pub(crate) fn of(&self, node: usize) -> impl Iterator<Item = u32> + '_ {
        let (mut at, end) = self.range(node);
        std::iter::from_fn(move || {
            (at < end).then(|| {
                let (child, next) = self.decode(node, at);
                at = next;
                child
            })
        })
    }
}

/// Each node's dense type index: types get dense indices so that the per-type counters of the
/// tree walk stay in cache. Found through the string table rather than stored per node, so
/// that the walk needs no per-node array beside the dominator tree.
pub(crate) struct DenseTypes<'a> {
    graph: &'a HeapGraph,
    keep: &'a (dyn Fn(usize) -> bool + Sync),
    /// Per key (the position of a node's type in the graph's table of distinct types, or the
    /// type's string index where the graph keeps no table), the dense index of the type, or
    /// `u32::MAX` where no kept real object has that type; with [`MIXED`] set where some
    /// instance of the type is synthetic or not kept, so that only those instances are asked.
    dense_of_key: Vec<u32>,
}

/// In [`DenseTypes`]' `dense_of_key`, the mark of a type that some counted instances share
/// with others not counted.
const MIXED: u32 = 1 << 31;

impl DenseTypes<'_> {
    /// The key of `node`'s type (see `dense_of_key`).
    #[inline]
    fn key(graph: &HeapGraph, node: usize) -> usize {
        let types = &graph.parts().node_type;
        types.slot(node).unwrap_or_else(|| types.get(node).index())
    }

    /// The dense type of `node`; `u32::MAX` for synthetic nodes and those not kept.
    #[inline]
    fn of(&self, node: usize) -> u32 {
        self.of_key(node, Self::key(self.graph, node) as u32)
    }

    /// [`DenseTypes::of`] `node`, whose type's key is `key` ([`type_key`]).
    #[inline]
    fn of_key(&self, node: usize, key: u32) -> u32 {
        let graph = self.graph;
        let Some(id) = graph.node(node) else {
            return u32::MAX;
        };
        let dense = self.dense_of_key[key as usize];
        if dense == u32::MAX || dense & MIXED == 0 {
            return dense;
        }
        if graph.is_synthetic(id) || !(self.keep)(node) {
            return u32::MAX;
        }
        dense & !MIXED
    }
}

/// Counts and shallow sizes per type over real (non-synthetic) objects, with the dense type
/// indices; retained sizes follow in [`add_retained`]. Where the graph keeps a table of its
/// distinct types, ranges of nodes are counted on threads of their own (a table of keys each,
/// a few hundred KiB at most), then merged in node order.
///
/// Complexity: O(V) time, O(T) space for the T distinct types of the graph's table (O(S) for
/// S strings where it keeps none).
pub(crate) fn type_counts<'a>(
    graph: &'a HeapGraph,
    keep: &'a (dyn Fn(usize) -> bool + Sync),
) -> (DenseTypes<'a>, TypeTotals) {
    let parts = graph.parts();
    let distinct = parts.node_type.distinct();
    let n_keys = distinct.map_or(graph.strings().len(), <[StringId]>::len);
    let ranges = match distinct {
        Some(_) => node_ranges(graph.node_count()),
        None => std::iter::once(0..graph.node_count()).collect(),
    };
    let counted = on_threads(ranges, |range| RangeCounts::of(graph, keep, n_keys, range));
    let mut dense_of_key = vec![u32::MAX; n_keys];
    // Per key, whether an instance is left out.
    let mut left_out = FixedBitSet::with_capacity(n_keys);
    let mut totals = TypeTotals::default();
    // Types are numbered in the order of their first node: the ranges' own orders, in turn.
    for range in counted {
        left_out.union_with(&range.left_out);
        for (at, &key) in range.keys.iter().enumerate() {
            let slot = &mut dense_of_key[key as usize];
            if *slot == u32::MAX {
                *slot = totals.types.len() as u32;
                totals.types.push(range.types[at]);
                totals.count.push(0);
                totals.shallow.push(0);
            }
            totals.count[*slot as usize] += range.count[at];
            totals.shallow[*slot as usize] += range.shallow[at];
        }
    }
    for key in left_out.ones() {
        if dense_of_key[key] != u32::MAX {
            dense_of_key[key] |= MIXED;
        }
    }
    totals.retained = vec![0; totals.types.len()];
    let dense = DenseTypes {
        graph,
        keep,
        dense_of_key,
    };
    (dense, totals)
}

/// The counts of [`type_counts`] over one range of nodes, each type by its key, in the order
/// of its first node in the range.
struct RangeCounts {
    keys: Vec<u32>,
    types: Vec<StringId>,
    count: Vec<u64>,
    shallow: Vec<u64>,
    left_out: FixedBitSet,
}

impl RangeCounts {
    fn of(
        graph: &HeapGraph,
        keep: &(dyn Fn(usize) -> bool + Sync),
        n_keys: usize,
        range: Range<usize>,
    ) -> RangeCounts {
        let parts = graph.parts();
        let mut at_of_key = vec![u32::MAX; n_keys];
        let mut counts = RangeCounts {
            keys: Vec::new(),
            types: Vec::new(),
            count: Vec::new(),
            shallow: Vec::new(),
            left_out: FixedBitSet::with_capacity(n_keys),
        };
        for node in range {
            let key = DenseTypes::key(graph, node);
            if graph.node(node).is_none_or(|id| graph.is_synthetic(id)) || !keep(node) {
                counts.left_out.insert(key);
                continue;
            }
            let at = &mut at_of_key[key];
            if *at == u32::MAX {
                *at = counts.keys.len() as u32;
                counts.keys.push(key as u32);
                counts.types.push(parts.node_type.get(node));
                counts.count.push(0);
                counts.shallow.push(0);
            }
            counts.count[*at as usize] += 1;
            counts.shallow[*at as usize] += parts.node_shallow_size.get(node);
        }
        counts
    }
}

/// A stretch of a walk of the dominator tree below a node: the subtrees of `roots` (whole, or
/// only the root itself where `subtrees` is false), below the nodes `open_nodes`.
pub(crate) struct WalkPart {
    pub(crate) roots: Vec<u32>,
    pub(crate) subtrees: bool,
    /// The nodes between the walk's top and the roots, top first.
    pub(crate) open_nodes: Vec<u32>,
}

/// Nodes below which a walk is cut into parts, at the least.
pub(crate) const SPLIT_WALKS_FROM: u32 = 1 << 20;

/// Levels [`walk_parts`] descends at most: the nodes open above a part are copied into it, so
/// a chain of a million links (a linked list) must not be descended link by link.
pub(crate) const MOST_DESCENTS: usize = 32;

/// A walk of the dominator tree below `point` (the suspects' accumulated types, the type
/// totals) cut into parts for `threads` threads, in the walk's order: the children of `point`
/// in runs of about an eighth of a thread's share; a child too large for one run is taken
/// alone, and its own children cut so in its place, and so on down, at most [`MOST_DESCENTS`]
/// levels. A walk of fewer than `split_from` nodes, or on one thread, is one part.
pub(crate) fn walk_parts(
    tree: &DominatorTree,
    children: &DominatorChildren,
    point: NodeId,
    threads: u32,
    split_from: u32,
) -> Vec<WalkPart> {
    let total = tree.retained_count[point.index()];
    let all_children = || WalkPart {
        roots: children.of(point.index()).collect(),
        subtrees: true,
        open_nodes: Vec::new(),
    };
    if total < split_from || threads < 2 {
        return vec![all_children()];
    }
    let run = (total / threads / 8).max(1);
    let mut parts = Vec::new();
    let mut open_nodes = Vec::new();
    // Descends into the largest child while it is too large for one run; the children after
    // it come back, nearest first, as the walk leaves each level.
    let mut after: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
    let mut node = point.to_raw();
    loop {
        let kids: Vec<u32> = children.of(node as usize).collect();
        let largest = kids
            .iter()
            .enumerate()
            .max_by_key(|&(at, &kid)| (tree.retained_count[kid as usize], Reverse(at)))
            .map(|(at, _)| at);
        let Some(at) = largest.filter(|&at| {
            tree.retained_count[kids[at] as usize] > run && after.len() < MOST_DESCENTS
        }) else {
            push_runs(&mut parts, &kids, &open_nodes, run, tree);
            break;
        };
        push_runs(&mut parts, &kids[..at], &open_nodes, run, tree);
        parts.push(WalkPart {
            roots: vec![kids[at]],
            subtrees: false,
            open_nodes: open_nodes.clone(),
        });
        after.push((kids[at + 1..].to_vec(), open_nodes.clone()));
        open_nodes.push(kids[at]);
        node = kids[at];
    }
    while let Some((kids, open_nodes)) = after.pop() {
        push_runs(&mut parts, &kids, &open_nodes, run, tree);
    }
    parts
}

/// Parts of the whole subtrees of `kids`, in order, each of about `run` nodes at most or of one
/// kid.
fn push_runs(
    parts: &mut Vec<WalkPart>,
    kids: &[u32],
    open_nodes: &[u32],
    run: u32,
    tree: &DominatorTree,
) {
    let mut roots = Vec::new();
    let mut nodes = 0u32;
    for &kid in kids {
        let count = tree.retained_count[kid as usize];
        if !roots.is_empty() && nodes.saturating_add(count) > run {
            parts.push(WalkPart {
                roots: std::mem::take(&mut roots),
                subtrees: true,
                open_nodes: open_nodes.to_vec(),
            });
            nodes = 0;
        }
        roots.push(kid);
        nodes = nodes.saturating_add(count);
    }
    if !roots.is_empty() {
        parts.push(WalkPart {
            roots,
            subtrees: true,
            open_nodes: open_nodes.to_vec(),
        });
    }
}

/// Adds each type's retained size: the sum of the retained sizes of its reachable instances
/// that have no instance of the same type above them in the dominator tree, so nested
/// instances (a linked list of one class) are not counted twice. In the same walk, tallies the
/// types below each of `points` (disjoint subtrees: the suspects' accumulation points, sorted),
/// so that `summary` walks the tree once for both; per point, the tallies of each part, in the
/// walk's order.
///
/// The walk below the root is cut into `parts` ([`walk_parts`]) that rayon's threads walk at
/// once, each given the types open above it; the sums are added up after.
///
/// Complexity: O(V) time (one depth-first walk of the dominator tree, in parts), O(T + depth)
/// space per part.
pub(crate) fn add_retained(
    graph: &HeapGraph,
    tree: &DominatorTree,
    children: &DominatorChildren,
    types: &DenseTypes<'_>,
    totals: &mut TypeTotals,
    points: &[u32],
    parts: Vec<WalkPart>,
) -> Vec<Vec<PerType<TypeTally>>> {
    use rayon::prelude::*;
    let root = graph.root();
    let root_type = types.of(root.index());
    if root_type != u32::MAX {
        totals.retained[root_type as usize] += tree.retained_size.get(root.index());
    }
    let walk = Walk {
        totals: Some((types, totals.types.len())),
        points,
        above: &[root.to_raw()],
    };
    let sums: Vec<PartSums> = parts
        .into_par_iter()
        .map(|part| walk.part(graph, tree, children, &part))
        .collect();
    let mut below: Vec<Vec<PerType<TypeTally>>> = points.iter().map(|_| Vec::new()).collect();
    for part in sums {
        for (total, part) in totals.retained.iter_mut().zip(part.retained) {
            *total += part;
        }
        for (point, tallies) in below.iter_mut().zip(part.below) {
            point.push(tallies);
        }
    }
    below
}

/// What one type's instances below an accumulation point add up to: how many, the retained
/// size of the topmost ones, and the first topmost one of the largest retained size.
#[derive(Clone, Copy, Default, PartialEq)]
pub(crate) struct TypeTally {
    pub(crate) count: u64,
    pub(crate) retained: u64,
    pub(crate) largest: Option<u32>,
}

/// A value per type, for a walk that touches millions of nodes of a few hundred types: an array
/// by the type column's table position where it keeps one (at most 65,536 types), else a hash
/// map by type id.
pub(crate) enum PerType<T> {
    Dense(Vec<T>),
    Sparse(FxHashMap<u32, T>),
}

impl<T: Default + Clone + PartialEq> PerType<T> {
    pub(crate) fn new(types: &NodeTypes) -> Self {
        match types.distinct() {
            Some(table) => PerType::Dense(vec![T::default(); table.len()]),
            None => PerType::Sparse(FxHashMap::default()),
        }
    }

    /// The value of the type under `key` ([`type_key`]), the default until set.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: u32) -> &mut T {
        match self {
            PerType::Dense(values) => &mut values[key as usize],
            PerType::Sparse(values) => values.entry(key).or_default(),
        }
    }

    /// The types whose value is not the default (by raw type id), with their values.
    pub(crate) fn into_seen(self, types: &NodeTypes) -> Vec<(u32, T)> {
        match self {
            PerType::Dense(values) => {
                let table = types.distinct().unwrap_or_default();
                values
                    .into_iter()
                    .zip(table)
                    .filter(|(value, _)| *value != T::default())
                    .map(|(value, type_id)| (type_id.to_raw(), value))
                    .collect()
            }
            PerType::Sparse(values) => values.into_iter().collect(),
        }
    }
}

/// The key of `node`'s type in a [`PerType`] and in [`DenseTypes`]: its table position, or its
/// id where the column keeps no table.
#[inline]
pub(crate) fn type_key(types: &NodeTypes, node: u32) -> u32 {
    match types.slot(node as usize) {
        Some(slot) => slot as u32,
        None => types.get(node as usize).to_raw(),
    }
}

/// What a walk of the dominator tree adds up, the same for each of its parts.
pub(crate) struct Walk<'a> {
    /// The type totals' dense types and their number, where the walk adds up their retained
    /// sizes.
    pub(crate) totals: Option<(&'a DenseTypes<'a>, usize)>,
    /// The nodes below which the types are tallied, sorted; none is below another.
    pub(crate) points: &'a [u32],
    /// The nodes above the parts' open nodes, top first: where the walk starts (the root, or a
    /// point for a walk below one).
    pub(crate) above: &'a [u32],
}

/// The sums of one part of a [`Walk`].
pub(crate) struct PartSums {
    /// Per dense type, the retained size of its topmost instances; empty without totals.
    retained: Vec<u64>,
    /// Per point, the tallies of the types of the part's nodes below it.
    pub(crate) below: Vec<PerType<TypeTally>>,
}

/// A step of a depth-first walk: a node to enter, with its dense type (`u32::MAX` where it has
/// none) and its type key; or the exit of one, whose tallies are then closed.
#[derive(Clone, Copy)]
enum Step {
    Enter {
        node: u32,
        dense: u32,
        key: u32,
    },
    Exit {
        dense: u32,
        key: u32,
        point: bool,
    },
    /// The children of `node` not yet on the stack: those from byte `read` of its list on.
    MoreChildren {
        node: u32,
        read: u32,
    },
}

/// The most children of one node [`Walk::part`] puts on its stack at once: enough to overlap
/// their lookups' cache misses, few enough that a node of ten million children (the table of
/// a map that large, which dominates its entries) does not put 160 MB of steps there (16
/// bytes a step).
const CHILDREN_AT_ONCE: usize = 4096;

impl Walk<'_> {
    /// The dense type of `node`, whose type key is `key`.
    #[inline]
    fn dense(&self, node: u32, key: u32) -> u32 {
        self.totals
            .map_or(u32::MAX, |(types, _)| types.of_key(node as usize, key))
    }

    /// Walks `part`, depth first, children in index order.
    ///
    /// A node's children are read and their types looked up in one go as it is entered (up to
    /// [`CHILDREN_AT_ONCE`], the rest as the walk comes back to them), and steps wait on a
    /// stack: the lookups of siblings do not depend on each other, so the processor overlaps
    /// their cache misses (the type totals' walk alone on the large V8 snapshot 0.156 → 0.140
    /// s against one child at a time).
    pub(crate) fn part(
        &self,
        graph: &HeapGraph,
        tree: &DominatorTree,
        children: &DominatorChildren,
        part: &WalkPart,
    ) -> PartSums {
        let node_types = &graph.parts().node_type;
        let n_dense = self.totals.map_or(0, |(_, n)| n);
        let mut sums = Open {
            retained: vec![0u64; n_dense],
            open: vec![0u32; n_dense],
            below: (self.points.iter())
                .map(|_| PerType::new(node_types))
                .collect(),
            open_below: PerType::new(node_types),
        };
        let mut inside: Option<usize> = None;
        let point_at = |node: u32| self.points.binary_search(&node).ok();
        for &node in self.above.iter().chain(&part.open_nodes) {
            let key = type_key(node_types, node);
            let dense = self.dense(node, key);
            if dense != u32::MAX {
                sums.open[dense as usize] += 1;
            }
            if inside.is_some() {
                *sums.open_below.get_mut(key) += 1;
            } else {
                inside = point_at(node);
            }
        }
        let mut pending: Vec<Step> = Vec::new();
        for &top in &part.roots {
            let key = type_key(node_types, top);
            let dense = self.dense(top, key);
            if !part.subtrees {
                sums.enter(tree, top, dense, key, inside);
                sums.exit(dense, key, inside);
                continue;
            }
            pending.push(Step::Enter {
                node: top,
                dense,
                key,
            });
            while let Some(step) = pending.pop() {
                let (node, dense, key) = match step {
                    Step::Enter { node, dense, key } => (node, dense, key),
                    Step::Exit { dense, key, point } => {
                        if point {
                            // The point's own instance was entered before the walk was in it.
                            sums.exit(dense, key, None);
                            inside = None;
                        } else {
                            sums.exit(dense, key, inside);
                        }
                        continue;
                    }
                    Step::MoreChildren { node, read } => {
                        let (start, end) = children.range(node as usize);
                        let at = start + read as usize;
                        self.push_children(&mut pending, (children, node_types), node, at, end);
                        continue;
                    }
                };
                sums.enter(tree, node, dense, key, inside);
                let (at, end) = children.range(node as usize);
                if at == end {
                    sums.exit(dense, key, inside);
                    continue;
                }
                let point = match inside {
                    None if !self.points.is_empty() => point_at(node),
                    _ => None,
                };
                if point.is_some() {
                    inside = point;
                }
                pending.push(Step::Exit {
                    dense,
                    key,
                    point: point.is_some(),
                });
                self.push_children(&mut pending, (children, node_types), node, at, end);
            }
        }
        PartSums {
            retained: sums.retained,
            below: sums.below,
        }
    }

    /// Puts the children of `node` listed from byte `at` to `end` on `pending`, the first on
    /// top: [`CHILDREN_AT_ONCE`] of them, and below them a step for the rest, if any.
    fn push_children(
        &self,
        pending: &mut Vec<Step>,
        (children, node_types): (&DominatorChildren, &NodeTypes),
        node: u32,
        mut at: usize,
        end: usize,
    ) {
        let from = pending.len();
        let (start, _) = children.range(node as usize);
        // Past 4 GiB of one node's list (which no heap has), all at once.
        let batch = if u32::try_from(end - start).is_ok() {
            CHILDREN_AT_ONCE
        } else {
            usize::MAX
        };
        let mut taken = 0;
        while at < end && taken < batch {
            let (child, next) = children.decode(node as usize, at);
            at = next;
            taken += 1;
            let key = type_key(node_types, child);
            pending.push(Step::Enter {
                node: child,
                dense: self.dense(child, key),
                key,
            });
        }
        pending[from..].reverse();
        if at < end {
            let read = (at - start) as u32;
            pending.insert(from, Step::MoreChildren { node, read });
        }
    }
}

/// A part's sums while it is walked, with the instances open above the walk's position: per
/// dense type, and per type key below the point the walk is in, if any.
struct Open {
    retained: Vec<u64>,
    open: Vec<u32>,
    below: Vec<PerType<TypeTally>>,
    open_below: PerType<u32>,
}

impl Open {
    /// Adds `node` (of dense type `dense` and type key `key`) where it is topmost, and opens
    /// its types; `inside` is the point the walk is below, if any.
    #[inline]
    fn enter(
        &mut self,
        tree: &DominatorTree,
        node: u32,
        dense: u32,
        key: u32,
        inside: Option<usize>,
    ) {
        if dense != u32::MAX {
            if self.open[dense as usize] == 0 {
                self.retained[dense as usize] += tree.retained_size.get(node as usize);
            }
            self.open[dense as usize] += 1;
        }
        if let Some(point) = inside {
            let tally = self.below[point].get_mut(key);
            tally.count += 1;
            let open = self.open_below.get_mut(key);
            if *open == 0 {
                let size = tree.retained_size.get(node as usize);
                tally.retained += size;
                if tally
                    .largest
                    .is_none_or(|largest| size > tree.retained_size.get(largest as usize))
                {
                    tally.largest = Some(node);
                }
            }
            *open += 1;
        }
    }

    /// Closes the types [`Open::enter`] opened.
    #[inline]
    fn exit(&mut self, dense: u32, key: u32, inside: Option<usize>) {
        if dense != u32::MAX {
            self.open[dense as usize] -= 1;
        }
        if inside.is_some() {
            *self.open_below.get_mut(key) -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge_rule::EdgeRule;
    use heapgraph_model::{EdgeKind, Runtime};

    /// Split into ranges of nodes on several threads, or built beside the dominator pass's
    /// last step, the children's lists are the lists one thread builds, byte for byte, and
    /// each lists the nodes whose dominator is its parent, in index order.
    #[test]
    fn children_built_in_ranges_are_the_children_built_in_one() {
        // A root over a few hubs, each object referring to objects scattered by a step that
        // is prime to the size, so dominators are near and far, above and below.
        let n: u32 = 20_000;
        let mut edges: Vec<(u32, u32, EdgeKind)> =
            (1..8).map(|hub| (0, hub, EdgeKind::Property)).collect();
        for node in 1..n {
            edges.push((node, (node * 7919) % n, EdgeKind::Property));
            if node % 3 == 0 {
                edges.push((node, (node + 1) % n, EdgeKind::Property));
            }
        }
        let graph = heapgraph_test_support::graph_from_edges(&vec![16; n as usize], &edges);
        let tree = crate::dominators::dominators(&graph, &EdgeRule::for_runtime(Runtime::Java));
        let whole = std::iter::once(0..n as usize).collect();
        let one = DominatorChildren::build_in_ranges(TreeLinks::of(&graph, &tree), whole);
        for cuts in [
            vec![0..7_000, 7_000..7_001, 7_001..20_000],
            vec![0..5_000, 5_000..10_000, 10_000..15_000, 15_000..20_000],
        ] {
            let split =
                DominatorChildren::build_in_ranges(TreeLinks::of(&graph, &tree), cuts.clone());
            assert_eq!(split.bytes, one.bytes, "{cuts:?}");
            for node in 0..n as usize {
                assert_eq!(split.range(node), one.range(node), "node {node}");
            }
        }
        // The fast order builds them beside its retained sizes.
        let rule = EdgeRule::for_runtime(Runtime::Java);
        let (fast, beside) =
            crate::dominators::dominators_trading_memory(&graph, &rule, false, true, &|| {});
        let beside = beside.expect("the fast order builds the children");
        assert_eq!(fast.idom, tree.idom);
        assert_eq!(beside.bytes, one.bytes);
        for node in 0..n as usize {
            assert_eq!(beside.range(node), one.range(node), "node {node}");
        }
        let mut listed = 0;
        for parent in 0..n as usize {
            let children: Vec<u32> = one.of(parent).collect();
            assert!(children.is_sorted(), "{parent}: {children:?}");
            for &child in &children {
                assert_eq!(tree.idom[child as usize] as usize, parent);
            }
            listed += children.len();
        }
        let expected = (0..n as usize)
            .filter(|&node| node != 0 && tree.reachable[node])
            .count();
        assert!(expected > n as usize / 2, "{expected} reachable");
        assert_eq!(listed, expected);
    }

    /// Each type's retained size, the walk cut into many parts or walked as one, is what a
    /// plain reading of the rule gives (the oracle): the sum over the kept real instances with
    /// no kept real instance of their type among their dominators; on random graphs, with
    /// every node kept and with only some.
    #[test]
    fn type_totals_walked_in_parts_are_the_rule_read_plainly() {
        let mut lcg = heapgraph_test_support::Lcg::new(0x07a1_11e5);
        let rule = EdgeRule::for_runtime(Runtime::Java);
        let mut split = 0;
        for round in 0..300 {
            let graph = heapgraph_test_support::long_lines(&mut lcg, true);
            let tree = crate::dominators::dominators(&graph, &rule);
            let children = DominatorChildren::build(&graph, &tree);
            let every = |_: usize| true;
            let some = |node: usize| node % 3 != 1;
            let keep: &(dyn Fn(usize) -> bool + Sync) = if round % 2 == 0 { &every } else { &some };
            let in_parts = |threads: u32, split_from: u32| {
                let (types, mut totals) = type_counts(&graph, keep);
                let parts = walk_parts(&tree, &children, graph.root(), threads, split_from);
                let n_parts = parts.len();
                add_retained(&graph, &tree, &children, &types, &mut totals, &[], parts);
                (totals, n_parts)
            };
            let (one, _) = in_parts(1, u32::MAX);
            let (many, n_parts) = in_parts(4, 1);
            split += usize::from(n_parts > 1);
            assert_eq!(many, one, "round {round}");
            assert_is_the_rule_read_plainly(&graph, &tree, keep, &one);
        }
        assert!(split > 250, "only {split} walks were cut into parts");
    }

    /// A node of more children than the walk puts on its stack at once: the totals are the
    /// rule's, walked as one part or in many. The root holds a node that holds 10,000, of the
    /// four types in turn, every seventh holding one more node.
    #[test]
    fn a_node_of_many_children_is_walked_whole() {
        use EdgeKind::Property as P;
        let n_children = 10_000u32;
        let mut edges = vec![(0, 1, P)];
        let mut n_nodes = 2 + n_children;
        for child in 2..2 + n_children {
            edges.push((1, child, P));
            if child % 7 == 0 {
                edges.push((child, n_nodes, P));
                n_nodes += 1;
            }
        }
        let sizes: Vec<u64> = (0..u64::from(n_nodes)).map(|node| 8 + node % 13).collect();
        let graph = heapgraph_test_support::graph_from_edges(&sizes, &edges);
        let tree = crate::dominators::dominators(&graph, &EdgeRule::for_runtime(Runtime::Java));
        let children = DominatorChildren::build(&graph, &tree);
        assert!(children.of(1).count() > 2 * CHILDREN_AT_ONCE);
        for (threads, split_from) in [(1, u32::MAX), (4, 1)] {
            let (types, mut totals) = type_counts(&graph, &|_| true);
            let parts = walk_parts(&tree, &children, graph.root(), threads, split_from);
            add_retained(&graph, &tree, &children, &types, &mut totals, &[], parts);
            assert_is_the_rule_read_plainly(&graph, &tree, &|_| true, &totals);
        }
    }

    /// Counted in ranges on threads of their own (a graph of more than 2^20 nodes), the
    /// counts and shallow sizes per type are those of one plain pass, the types in the order
    /// of their first node, with types first met in a later range and nodes left out.
    #[test]
    fn types_counted_in_ranges_are_counted_as_in_one_pass() {
        use heapgraph_model::{GraphMeta, HeapGraphParts, StringTable};
        let n = (1usize << 20) + 4099;
        let mut strings = StringTable::new();
        let names: Vec<StringId> = (0..9).map(|k| strings.intern(&format!("T{k}"))).collect();
        let type_of = |node: usize| match node {
            _ if node > n - 100 => names[8],
            _ if node > n / 2 => names[3 + node % 5],
            _ => names[node % 3],
        };
        let parts = HeapGraphParts {
            node_object_id: (1..=n as u64).collect(),
            node_kind: (0..n).map(|node| u8::from(node != 0)).collect(),
            node_type: (0..n).map(type_of).collect(),
            node_name: vec![StringId::EMPTY; n].into(),
            node_shallow_size: (0..n as u64).map(|node| 16 + node % 11).collect(),
            first_edge: (0..=n as u64).map(|node| node.min(n as u64 - 1)).collect(),
            edge_to: (1..n as u32).collect(),
            edge_kind: std::iter::repeat_n(EdgeKind::Element, n - 1).collect(),
            edge_name: (0..n as u32 - 1).collect::<Vec<_>>().into(),
            node_kinds: heapgraph_test_support::root_and_object_kinds(),
            root: 0,
        };
        let meta = GraphMeta::new(Runtime::Java, "test-types");
        let graph = HeapGraph::from_parts(meta, strings, parts).expect("a valid chain");
        let keep = |node: usize| node % 17 != 3;
        let (dense, totals) = type_counts(&graph, &keep);
        let mut expected = TypeTotals::default();
        for node in (1..n).filter(|&node| keep(node)) {
            let at = match expected.types.iter().position(|&t| t == type_of(node)) {
                Some(at) => at,
                None => {
                    expected.types.push(type_of(node));
                    expected.count.push(0);
                    expected.shallow.push(0);
                    expected.types.len() - 1
                }
            };
            expected.count[at] += 1;
            expected.shallow[at] += 16 + node as u64 % 11;
        }
        expected.retained = vec![0; expected.types.len()];
        assert_eq!(totals, expected);
        for node in (0..n).step_by(7).chain([n - 1]) {
            let want = (node != 0 && keep(node))
                .then(|| expected.types.iter().position(|&t| t == type_of(node)))
                .flatten()
                .map_or(u32::MAX, |at| at as u32);
            assert_eq!(dense.of(node), want, "{node}");
        }
    }

    /// The oracle of the type totals: the sum, per type, over the kept real instances with no
    /// kept real instance of their type among their dominators.
    fn assert_is_the_rule_read_plainly(
        graph: &HeapGraph,
        tree: &DominatorTree,
        keep: &(dyn Fn(usize) -> bool + Sync),
        totals: &TypeTotals,
    ) {
        let counted =
            |node: usize| graph.node(node).is_some_and(|id| !graph.is_synthetic(id)) && keep(node);
        let mut expected: rustc_hash::FxHashMap<StringId, u64> = Default::default();
        let n_nodes = graph.node_count();
        for node in (0..n_nodes).filter(|&node| tree.reachable[node] && counted(node)) {
            let id = graph.node(node).expect("a node");
            let type_id = graph.type_id(id);
            let mut above = tree.immediate_dominator(graph, id);
            let mut topmost = true;
            while let Some(dominator) = above {
                if counted(dominator.index()) && graph.type_id(dominator) == type_id {
                    topmost = false;
                    break;
                }
                above = tree.immediate_dominator(graph, dominator);
            }
            if topmost {
                *expected.entry(type_id).or_default() += tree.retained_size.get(node);
            }
        }
        for (type_id, &retained) in totals.types.iter().zip(&totals.retained) {
            let want = expected.get(type_id).copied().unwrap_or(0);
            assert_eq!(retained, want, "{}", graph.strings().get(*type_id));
        }
    }
}
