//! Retainers: the transpose of the reference CSR, so that "who points at this" is a slice.

use crate::heap_graph::{HeapGraphParts, NodeId};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

/// The retainers (incoming edges) of every node.
///
/// Invariants: `first_retainer` has `node_count + 1` monotone entries ending at `edge_count`;
/// the retainers of node `t` are `first_retainer[t]..first_retainer[t + 1]`, where entry `i`
/// holds the edge index `retainer_edge[i]` leaving node `retainer_from[i]`, sorted by edge
/// index, so the order is the same on every run and thread count.
pub struct ReverseEdges {
    first_retainer: Indices,
    retainer_from: Vec<u32>,
    retainer_edge: Indices,
}

/// Retainer offsets and edge indices: 4 bytes each while the graph has fewer than 2³² references
/// (every dump up to about 100 GB: 92.5M references in a 2.5 GB HPROF), 8 past that. On the
/// large benchmark dump the retainers take 0.88 GB instead of 1.4 GB.
enum Indices {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Indices {
    #[inline]
    fn get(&self, at: usize) -> usize {
        match self {
            Indices::Narrow(values) => values[at] as usize,
            Indices::Wide(values) => values[at] as usize,
        }
    }
}

/// An integer an [`Indices`] column holds.
trait Index: Copy + Default + Send + Sync {
    fn from_usize(value: usize) -> Self;
    fn to_usize(self) -> usize;
}

impl Index for u32 {
    fn from_usize(value: usize) -> Self {
        value as u32
    }
    fn to_usize(self) -> usize {
        self as usize
    }
}

impl Index for u64 {
    fn from_usize(value: usize) -> Self {
        value as u64
    }
    fn to_usize(self) -> usize {
        self as usize
    }
}

impl ReverseEdges {
    /// Builds the transpose of `parts`' edges.
    ///
    /// Complexity: O(V + E · T) time over T threads (each scans every edge, and fills the
    /// retainers of its own range of targets), O(V + E) space.
    pub fn build(parts: &HeapGraphParts) -> ReverseEdges {
        if u32::try_from(parts.edge_to.len()).is_ok() {
            let (first_retainer, retainer_from, retainer_edge) = transpose::<u32>(parts);
            ReverseEdges {
                first_retainer: Indices::Narrow(first_retainer),
                retainer_from,
                retainer_edge: Indices::Narrow(retainer_edge),
            }
        } else {
            let (first_retainer, retainer_from, retainer_edge) = transpose::<u64>(parts);
            ReverseEdges {
                first_retainer: Indices::Wide(first_retainer),
                retainer_from,
                retainer_edge: Indices::Wide(retainer_edge),
            }
        }
    }

    /// The retainer-slot range of `node`.
    #[inline]
    pub fn range(&self, node: NodeId) -> std::ops::Range<usize> {
        self.first_retainer.get(node.index())..self.first_retainer.get(node.index() + 1)
    }

    /// The retainers of `node`: (source node, edge index) pairs, by edge index.
    pub fn retainers(&self, node: NodeId) -> impl ExactSizeIterator<Item = (NodeId, usize)> + '_ {
        self.range(node).map(move |slot| {
            (
                NodeId(self.retainer_from[slot]),
                self.retainer_edge.get(slot),
            )
        })
    }

    /// The number of retainers of `node`.
    #[inline]
    pub fn in_degree(&self, node: NodeId) -> usize {
        self.range(node).len()
    }
}

/// The transpose's three columns, offsets and edge indices as `I`, which must hold the edge
/// count.
fn transpose<I: Index>(parts: &HeapGraphParts) -> (Vec<I>, Vec<u32>, Vec<I>) {
    let n_nodes = parts.node_kind.len();
    let n_edges = parts.edge_to.len();
    let in_degree: Vec<AtomicU32> = (0..n_nodes).map(|_| AtomicU32::new(0)).collect();
    parts.edge_to.par_chunks(1 << 16).for_each(|chunk| {
        for &to in chunk {
            in_degree[to as usize].fetch_add(1, Ordering::Relaxed);
        }
    });
    let mut first_retainer: Vec<I> = Vec::with_capacity(n_nodes + 1);
    let mut running = 0usize;
    first_retainer.push(I::from_usize(0));
    for degree in &in_degree {
        running += degree.load(Ordering::Relaxed) as usize;
        first_retainer.push(I::from_usize(running));
    }
    drop(in_degree);

    let mut retainer_from = vec![0u32; n_edges];
    let mut retainer_edge = vec![I::default(); n_edges];
    // Split the targets into ranges of about equal retainer counts; each range owns a
    // disjoint slice of the output, so workers write without sharing. One range per thread:
    // every range costs a scan of all the edges, and equal counts already balance the writes.
    let n_ranges = rayon::current_num_threads().max(1);
    let mut boundaries = vec![0usize];
    for range in 1..n_ranges {
        let wanted = (n_edges as u64 * range as u64 / n_ranges as u64) as usize;
        let target = first_retainer.partition_point(|&first| first.to_usize() < wanted);
        let target = target.min(n_nodes).max(*boundaries.last().unwrap_or(&0));
        boundaries.push(target);
    }
    boundaries.push(n_nodes);
    let mut jobs = Vec::with_capacity(n_ranges);
    let mut from_rest: &mut [u32] = &mut retainer_from;
    let mut edge_rest: &mut [I] = &mut retainer_edge;
    for window in boundaries.windows(2) {
        let (lo, hi) = (window[0], window[1]);
        let len = first_retainer[hi].to_usize() - first_retainer[lo].to_usize();
        let (from_chunk, from_tail) = from_rest.split_at_mut(len);
        let (edge_chunk, edge_tail) = edge_rest.split_at_mut(len);
        from_rest = from_tail;
        edge_rest = edge_tail;
        jobs.push((lo, hi, from_chunk, edge_chunk));
    }
    jobs.into_par_iter()
        .for_each(|(lo, hi, from_chunk, edge_chunk)| {
            let base = first_retainer[lo].to_usize();
            let mut cursor: Vec<u32> = vec![0; hi - lo];
            for source in 0..n_nodes {
                let first = parts.first_edge.get(source) as usize;
                let end = parts.first_edge.get(source + 1) as usize;
                for (edge, &to) in parts.edge_to[first..end].iter().enumerate() {
                    let to = to as usize;
                    if to < lo || to >= hi {
                        continue;
                    }
                    let slot = first_retainer[to].to_usize() - base + cursor[to - lo] as usize;
                    cursor[to - lo] += 1;
                    from_chunk[slot] = source as u32;
                    edge_chunk[slot] = I::from_usize(first + edge);
                }
            }
        });
    (first_retainer, retainer_from, retainer_edge)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EdgeKind, NodeKindInfo, StringTable};

    /// Both widths of the transpose give, for every node, the (source, edge) pairs a plain scan
    /// of the edges finds, in edge order, on pseudo-random graphs with repeated references and
    /// nodes nothing points at.
    #[test]
    fn both_widths_list_the_retainers_a_scan_finds() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        for _ in 0..200 {
            let n_nodes = 1 + next(30);
            let mut first_edge = vec![0u64];
            let mut edge_to = Vec::new();
            for _ in 0..n_nodes {
                for _ in 0..next(5) {
                    edge_to.push(next(n_nodes) as u32);
                }
                first_edge.push(edge_to.len() as u64);
            }
            let mut strings = StringTable::new();
            let name = strings.intern("x");
            let parts = HeapGraphParts {
                node_object_id: (1..=n_nodes as u64).collect::<Vec<_>>().into(),
                node_kind: vec![0; n_nodes].into(),
                node_type: vec![name; n_nodes].into(),
                node_name: vec![name; n_nodes].into(),
                node_shallow_size: vec![8; n_nodes].into(),
                first_edge: first_edge.clone().into(),
                edge_kind: vec![EdgeKind::Property; edge_to.len()].into(),
                edge_name: vec![name.to_raw(); edge_to.len()].into(),
                edge_to: edge_to.clone(),
                node_kinds: vec![NodeKindInfo {
                    name: "object".into(),
                    synthetic: false,
                }],
                root: 0,
            };
            let mut expected: Vec<Vec<(u32, usize)>> = vec![Vec::new(); n_nodes];
            for source in 0..n_nodes {
                for edge in first_edge[source] as usize..first_edge[source + 1] as usize {
                    expected[edge_to[edge] as usize].push((source as u32, edge));
                }
            }
            let narrow = transpose::<u32>(&parts);
            let wide = transpose::<u64>(&parts);
            for node in 0..n_nodes {
                let listed = |first: &[usize], from: &[u32], edges: &[usize]| {
                    (first[node]..first[node + 1])
                        .map(|slot| (from[slot], edges[slot]))
                        .collect::<Vec<_>>()
                };
                let widen32 =
                    |values: &[u32]| values.iter().map(|&v| v as usize).collect::<Vec<_>>();
                let widen64 =
                    |values: &[u64]| values.iter().map(|&v| v as usize).collect::<Vec<_>>();
                assert_eq!(
                    listed(&widen32(&narrow.0), &narrow.1, &widen32(&narrow.2)),
                    expected[node]
                );
                assert_eq!(
                    listed(&widen64(&wide.0), &wide.1, &widen64(&wide.2)),
                    expected[node]
                );
            }
        }
    }
}
