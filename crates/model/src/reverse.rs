//! Retainers: the transpose of the reference CSR, so that "who points at this" is a slice.

use crate::file_pages::{FileColumn, page_out};
use crate::heap_graph::{HeapGraphParts, NodeId};
use crate::image::Plain;
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
trait Index: Plain + Default {
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

/// Retainer slots filled at once when the retainers are built into files: two buffers of this
/// many values (64 MiB at 4 bytes each), where the columns would be 0.7 GB on the large
/// benchmark dump, for one scan of the edges per chunk (twelve there).
const FILE_CHUNK_SLOTS: usize = 8 << 20;

impl ReverseEdges {
    /// Builds the transpose of `parts`' edges: in scratch files a chunk of targets at a time
    /// where indexes are kept in files (`file_pages::keep_indexes_in_files`), else in memory.
    ///
    /// Complexity: O(V + E · T) time over T threads (each scans every edge, and fills the
    /// retainers of its own range of targets), once more per chunk when built into files;
    /// O(V + E) space, in files, or memory.
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
/// count: the slots in scratch files where they can be had, else in memory.
fn transpose<I: Index>(parts: &HeapGraphParts) -> (Vec<I>, Vec<u32>, Vec<I>) {
    let first_retainer = retainer_offsets::<I>(parts);
    let n_edges = parts.edge_to.len();
    if let (Some(mut from_file), Some(mut edge_file)) =
        (FileColumn::new(n_edges), FileColumn::new(n_edges))
    {
        let written = fill_in_chunks(
            parts,
            &first_retainer,
            FILE_CHUNK_SLOTS,
            |at, from, edge| {
                from_file.write_at(at, from)?;
                edge_file.write_at(at, edge)
            },
        );
        if let Ok((retainer_from, retainer_edge)) =
            written.and_then(|()| Ok((from_file.finish()?, edge_file.finish()?)))
        {
            return (page_out(first_retainer), retainer_from, retainer_edge);
        }
        // A full disk: the columns are built in memory instead.
    }
    let mut retainer_from = vec![0u32; n_edges];
    let mut retainer_edge = vec![I::default(); n_edges];
    fill(
        parts,
        &first_retainer,
        0..parts.node_kind.len(),
        &mut retainer_from,
        &mut retainer_edge,
    );
    (first_retainer, retainer_from, retainer_edge)
}

/// Where each node's retainers start in the slots, and the slot count last: `node_count + 1`
/// offsets.
fn retainer_offsets<I: Index>(parts: &HeapGraphParts) -> Vec<I> {
    let n_nodes = parts.node_kind.len();
    // Each node's count one place on, so that the running sums are the offsets, made in place.
    let counts: Vec<AtomicU32> = (0..=n_nodes).map(|_| AtomicU32::new(0)).collect();
    parts.edge_to.par_chunks(1 << 16).for_each(|chunk| {
        for &to in chunk {
            counts[to as usize + 1].fetch_add(1, Ordering::Relaxed);
        }
    });
    let mut running = 0usize;
    counts
        .into_iter()
        .map(|count| {
            running += count.into_inner() as usize;
            I::from_usize(running)
        })
        .collect()
}

/// Fills the slots a run of targets at a time, each run's slots at most `chunk` (a run is one
/// target at least, however many retainers it has), and hands each run's slots to `sink` with
/// the position of its first slot.
fn fill_in_chunks<I: Index>(
    parts: &HeapGraphParts,
    first_retainer: &[I],
    chunk: usize,
    mut sink: impl FnMut(usize, &[u32], &[I]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let n_nodes = parts.node_kind.len();
    let (mut from, mut edge) = (Vec::new(), Vec::new());
    let mut lo = 0;
    while lo < n_nodes {
        let start = first_retainer[lo].to_usize();
        let within = first_retainer.partition_point(|first| first.to_usize() <= start + chunk);
        let hi = within.saturating_sub(1).clamp(lo + 1, n_nodes);
        let len = first_retainer[hi].to_usize() - start;
        from.resize(len, 0);
        edge.resize(len, I::default());
        fill(parts, first_retainer, lo..hi, &mut from, &mut edge);
        sink(start, &from, &edge)?;
        lo = hi;
    }
    Ok(())
}

/// Fills the retainer slots of the targets `targets` (source node and edge index, by edge
/// index), which `from` and `edge` hold from the first of them on.
fn fill<I: Index>(
    parts: &HeapGraphParts,
    first_retainer: &[I],
    targets: std::ops::Range<usize>,
    from: &mut [u32],
    edge: &mut [I],
) {
    let n_nodes = parts.node_kind.len();
    // Split the targets into ranges of about equal retainer counts; each range owns a
    // disjoint slice of the output, so workers write without sharing. One range per thread:
    // every range costs a scan of all the edges, and equal counts already balance the writes.
    let base = first_retainer[targets.start].to_usize();
    let n_slots = first_retainer[targets.end].to_usize() - base;
    let n_ranges = rayon::current_num_threads().max(1);
    let mut boundaries = vec![targets.start];
    for range in 1..n_ranges {
        let wanted = base + (n_slots as u64 * range as u64 / n_ranges as u64) as usize;
        let target =
            first_retainer[..targets.end].partition_point(|&first| first.to_usize() < wanted);
        let target = target.clamp(*boundaries.last().unwrap_or(&targets.start), targets.end);
        boundaries.push(target);
    }
    boundaries.push(targets.end);
    let mut jobs = Vec::with_capacity(n_ranges);
    let mut from_rest: &mut [u32] = from;
    let mut edge_rest: &mut [I] = edge;
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
            if lo == hi {
                return;
            }
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
            // Filled a run of targets at a time, as into files, the columns are the same.
            for chunk in [1, 2, 7] {
                let mut from = vec![u32::MAX; edge_to.len()];
                let mut edges = vec![u32::MAX; edge_to.len()];
                fill_in_chunks(&parts, &narrow.0, chunk, |at, run_from, run_edges| {
                    from[at..at + run_from.len()].copy_from_slice(run_from);
                    edges[at..at + run_edges.len()].copy_from_slice(run_edges);
                    Ok(())
                })
                .unwrap();
                assert_eq!(
                    (&from, &edges),
                    (&narrow.1, &narrow.2),
                    "in runs of {chunk}"
                );
            }
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
