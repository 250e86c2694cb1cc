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
    first_retainer: Vec<u64>,
    retainer_from: Vec<u32>,
    retainer_edge: Vec<u64>,
}

/// Each worker fills the retainers of one contiguous range of targets, scanning every edge;
/// more ranges than threads keeps the cores busy when in-degrees are skewed.
const TARGET_RANGES_PER_THREAD: usize = 4;

impl ReverseEdges {
    /// Builds the transpose of `parts`' edges.
    ///
    /// Complexity: O(V + E · R) time where R is the number of target ranges (a few per thread,
    /// each a sequential scan of the edge targets), O(V + E) space.
    pub fn build(parts: &HeapGraphParts) -> ReverseEdges {
        let n_nodes = parts.node_kind.len();
        let n_edges = parts.edge_to.len();
        let in_degree: Vec<AtomicU32> = (0..n_nodes).map(|_| AtomicU32::new(0)).collect();
        parts.edge_to.par_chunks(1 << 16).for_each(|chunk| {
            for &to in chunk {
                in_degree[to as usize].fetch_add(1, Ordering::Relaxed);
            }
        });
        let mut first_retainer = Vec::with_capacity(n_nodes + 1);
        let mut running = 0u64;
        first_retainer.push(0);
        for degree in &in_degree {
            running += u64::from(degree.load(Ordering::Relaxed));
            first_retainer.push(running);
        }
        drop(in_degree);

        let mut retainer_from = vec![0u32; n_edges];
        let mut retainer_edge = vec![0u64; n_edges];
        // Split the targets into ranges of about equal retainer counts; each range owns a
        // disjoint slice of the output, so workers write without sharing.
        let n_ranges = (rayon::current_num_threads() * TARGET_RANGES_PER_THREAD).max(1);
        let mut boundaries = vec![0usize];
        for range in 1..n_ranges {
            let wanted = (n_edges as u64) * range as u64 / n_ranges as u64;
            let target = first_retainer.partition_point(|&first| first < wanted);
            let target = target.min(n_nodes).max(*boundaries.last().unwrap_or(&0));
            boundaries.push(target);
        }
        boundaries.push(n_nodes);
        let mut jobs = Vec::with_capacity(n_ranges);
        let mut from_rest: &mut [u32] = &mut retainer_from;
        let mut edge_rest: &mut [u64] = &mut retainer_edge;
        for window in boundaries.windows(2) {
            let (lo, hi) = (window[0], window[1]);
            let len = (first_retainer[hi] - first_retainer[lo]) as usize;
            let (from_chunk, from_tail) = from_rest.split_at_mut(len);
            let (edge_chunk, edge_tail) = edge_rest.split_at_mut(len);
            from_rest = from_tail;
            edge_rest = edge_tail;
            jobs.push((lo, hi, from_chunk, edge_chunk));
        }
        jobs.into_par_iter()
            .for_each(|(lo, hi, from_chunk, edge_chunk)| {
                let base = first_retainer[lo];
                let mut cursor: Vec<u32> = vec![0; hi - lo];
                for source in 0..n_nodes {
                    let first = parts.first_edge.get(source) as usize;
                    let end = parts.first_edge.get(source + 1) as usize;
                    for (edge, &to) in parts.edge_to[first..end].iter().enumerate() {
                        let to = to as usize;
                        if to < lo || to >= hi {
                            continue;
                        }
                        let slot = (first_retainer[to] - base) as usize + cursor[to - lo] as usize;
                        cursor[to - lo] += 1;
                        from_chunk[slot] = source as u32;
                        edge_chunk[slot] = (first + edge) as u64;
                    }
                }
            });
        ReverseEdges {
            first_retainer,
            retainer_from,
            retainer_edge,
        }
    }

    /// The retainer-slot range of `node`.
    pub fn range(&self, node: NodeId) -> std::ops::Range<usize> {
        self.first_retainer[node.index()] as usize..self.first_retainer[node.index() + 1] as usize
    }

    /// The retainers of `node`: (source node, edge index) pairs, by edge index.
    pub fn retainers(&self, node: NodeId) -> impl ExactSizeIterator<Item = (NodeId, usize)> + '_ {
        self.range(node).map(move |slot| {
            (
                NodeId(self.retainer_from[slot]),
                self.retainer_edge[slot] as usize,
            )
        })
    }

    /// The number of retainers of `node`.
    pub fn in_degree(&self, node: NodeId) -> usize {
        self.range(node).len()
    }

    /// Raw columns, for hot loops: (`first_retainer`, `retainer_from`, `retainer_edge`).
    pub fn columns(&self) -> (&[u64], &[u32], &[u64]) {
        (
            &self.first_retainer,
            &self.retainer_from,
            &self.retainer_edge,
        )
    }
}
