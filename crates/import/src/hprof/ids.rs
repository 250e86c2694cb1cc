//! Object id → node index: the ids sorted once, with a table of where each address bucket
//! starts, so that a lookup is a short search in one bucket instead of a hash probe.

use rayon::prelude::*;

/// Buckets per object, about: enough that a bucket holds a handful of ids.
const OBJECTS_PER_BUCKET: usize = 4;

/// Finds the node index of an object id.
pub(super) struct IdIndex {
    /// The ids in ascending order.
    sorted: Vec<u64>,
    /// `index[k]` is the node index of `sorted[k]`; `None` when the ids came sorted and node
    /// indices are positions (plus `base`).
    index: Option<Vec<u32>>,
    /// Node index of the first id.
    base: u32,
    min: u64,
    shift: u32,
    /// `bucket_start[b]` is the first position in `sorted` whose bucket is `b` or later.
    bucket_start: Vec<u32>,
}

impl IdIndex {
    /// Indexes `ids`, the ids of nodes `base`, `base + 1`, …; also returns how many ids occur
    /// more than once (the first occurrence wins).
    pub(super) fn new(ids: &[u64], base: u32) -> (IdIndex, u64) {
        let already_sorted = ids.windows(2).all(|pair| pair[0] < pair[1]);
        let (sorted, index, duplicates) = if already_sorted {
            (ids.to_vec(), None, 0)
        } else {
            let mut pairs: Vec<(u64, u32)> = ids
                .par_iter()
                .enumerate()
                .map(|(position, &id)| (id, base + position as u32))
                .collect();
            pairs.par_sort_unstable();
            let before = pairs.len();
            pairs.dedup_by_key(|pair| pair.0);
            let duplicates = (before - pairs.len()) as u64;
            let (sorted, index) = pairs.into_iter().unzip();
            (sorted, Some(index), duplicates)
        };
        let min = sorted.first().copied().unwrap_or(0);
        let span = sorted.last().copied().unwrap_or(0) - min;
        let n_buckets = (sorted.len() / OBJECTS_PER_BUCKET).max(1);
        let mut shift = 0;
        while shift < 63 && (span >> shift) as usize >= n_buckets {
            shift += 1;
        }
        let n_buckets = (span >> shift) as usize + 1;
        let mut bucket_start = vec![0u32; n_buckets + 1];
        // Counting sort of bucket sizes, then prefix sums.
        for &id in &sorted {
            bucket_start[((id - min) >> shift) as usize + 1] += 1;
        }
        for b in 0..n_buckets {
            bucket_start[b + 1] += bucket_start[b];
        }
        (
            IdIndex {
                sorted,
                index,
                base,
                min,
                shift,
                bucket_start,
            },
            duplicates,
        )
    }

    /// The node index of object `id`, if it is one of the indexed ids.
    #[inline]
    pub(super) fn get(&self, id: u64) -> Option<u32> {
        let offset = id.checked_sub(self.min)?;
        let bucket = (offset >> self.shift) as usize;
        let end = *self.bucket_start.get(bucket + 1)? as usize;
        let start = self.bucket_start[bucket] as usize;
        let in_bucket = &self.sorted[start..end];
        let at = start + in_bucket.binary_search(&id).ok()?;
        Some(match &self.index {
            Some(index) => index[at],
            None => self.base + at as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_id_and_nothing_else() {
        for ids in [
            vec![16u64, 40, 64, 1 << 40, (1 << 40) + 24],
            vec![96, 8, 48, 8, 1000, 0],
            vec![],
            vec![u64::MAX, 0],
        ] {
            let (index, duplicates) = IdIndex::new(&ids, 1);
            let mut first = std::collections::BTreeMap::new();
            for (position, &id) in ids.iter().enumerate() {
                first.entry(id).or_insert(position as u32 + 1);
            }
            assert_eq!(duplicates as usize, ids.len() - first.len());
            for (&id, &node) in &first {
                assert_eq!(index.get(id), Some(node), "{ids:?}");
            }
            for absent in [1u64, 9, 47, 1 << 39, (1 << 41) + 8, u64::MAX - 1] {
                if !first.contains_key(&absent) {
                    assert_eq!(index.get(absent), None);
                }
            }
        }
    }
}
