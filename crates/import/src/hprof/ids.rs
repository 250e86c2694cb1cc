//! Object id → node index. Ids are addresses, and after a full GC the live objects sit in dense
//! runs (a generation, a region): a table indexed by address, one slot per granule (the
//! smallest object's size), kept only for the pages of address space that hold objects,
//! answers with two reads. Where the objects are too scattered for that, the ids are sorted
//! once, with a table of where each address bucket starts, so that a lookup is a short search
//! in one bucket instead of a hash probe.

use rayon::prelude::*;

/// Buckets per object, about: enough that a bucket holds a handful of ids.
const OBJECTS_PER_BUCKET: usize = 4;

/// Table slots allowed per object before the sorted index is used instead: 4 slots of 4 bytes
/// cost about what the sorted index costs.
const DIRECT_SLOTS_PER_OBJECT: u64 = 4;

/// Granules per page of the paged table, as a power of two.
const PAGE_BITS: u32 = 12;

/// Marks an empty slot of the direct table.
const EMPTY: u32 = u32::MAX;

/// Finds the node index of an object id.
pub(super) enum IdIndex<'a> {
    /// With `granule = (id - min) >> shift`, `pages[directory[granule >> PAGE_BITS]]` holds
    /// the page, and slot `granule` mod the page size in it the node whose object starts in
    /// that granule, or [`EMPTY`]; `ids` tells whether it starts at `id` itself.
    Paged {
        ids: &'a [u64],
        base: u32,
        min: u64,
        shift: u32,
        directory: Vec<u32>,
        pages: Vec<u32>,
    },
    /// The sorted ids.
    Sorted(SortedIds),
}

/// Ids sorted, with a bucket table.
pub(super) struct SortedIds {
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

impl<'a> IdIndex<'a> {
    /// Indexes `ids`, the ids of nodes `base`, `base + 1`, …, where objects start at least
    /// `1 << granule_shift` bytes apart (16 on 64-bit JVMs, whose smallest object takes 16
    /// bytes); also returns how many ids occur more than once (the first occurrence wins).
    pub(super) fn new(ids: &'a [u64], base: u32, granule_shift: u32) -> (IdIndex<'a>, u64) {
        if let Some(direct) = IdIndex::direct(ids, base, granule_shift) {
            return direct;
        }
        let (sorted, duplicates) = SortedIds::new(ids, base);
        (IdIndex::Sorted(sorted), duplicates)
    }

    /// The paged table, where the ids are dense and aligned enough for it.
    fn direct(ids: &'a [u64], base: u32, shift: u32) -> Option<(IdIndex<'a>, u64)> {
        let min = *ids.iter().min()?;
        let max = *ids.iter().max()?;
        let n_directory = usize::try_from(((max - min) >> shift >> PAGE_BITS) + 1).ok()?;
        if n_directory as u64 > ids.len() as u64 + 1024 {
            return None;
        }
        let mut directory = vec![EMPTY; n_directory];
        let mut n_pages = 0u32;
        for &id in ids {
            let page = &mut directory[((id - min) >> shift >> PAGE_BITS) as usize];
            if *page == EMPTY {
                *page = n_pages;
                n_pages += 1;
            }
        }
        let page_slots = 1usize << PAGE_BITS;
        let n_slots = n_pages as usize * page_slots;
        if n_slots as u64 > DIRECT_SLOTS_PER_OBJECT * ids.len() as u64 + page_slots as u64 {
            return None;
        }
        let mut pages = vec![EMPTY; n_slots];
        let mut duplicates = 0;
        for (position, &id) in ids.iter().enumerate() {
            let granule = (id - min) >> shift;
            let page = directory[(granule >> PAGE_BITS) as usize] as usize;
            let slot = &mut pages[page * page_slots + (granule as usize & (page_slots - 1))];
            if *slot == EMPTY {
                *slot = base + position as u32;
            } else if ids[(*slot - base) as usize] == id {
                duplicates += 1;
            } else {
                // Two objects in one granule: the granule is wrong for this dump.
                return None;
            }
        }
        Some((
            IdIndex::Paged {
                ids,
                base,
                min,
                shift,
                directory,
                pages,
            },
            duplicates,
        ))
    }

    /// The node index of object `id`, if it is one of the indexed ids.
    #[inline]
    pub(super) fn get(&self, id: u64) -> Option<u32> {
        match self {
            IdIndex::Paged {
                ids,
                base,
                min,
                shift,
                directory,
                pages,
            } => {
                let granule = id.checked_sub(*min)? >> shift;
                let page = *directory.get(usize::try_from(granule >> PAGE_BITS).ok()?)?;
                if page == EMPTY {
                    return None;
                }
                let slot =
                    (page as usize) << PAGE_BITS | (granule as usize & ((1 << PAGE_BITS) - 1));
                let node = pages[slot];
                (node != EMPTY && ids[(node - base) as usize] == id).then_some(node)
            }
            IdIndex::Sorted(sorted) => sorted.get(id),
        }
    }
}

impl SortedIds {
    fn new(ids: &[u64], base: u32) -> (SortedIds, u64) {
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
            SortedIds {
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

    #[inline]
    fn get(&self, id: u64) -> Option<u32> {
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
            vec![4096, 4112, 4128, 4096, 4160],
        ] {
            for shift in [0, 3, 4] {
                let (index, duplicates) = IdIndex::new(&ids, 1, shift);
                check(&ids, &index, duplicates);
                let (sorted, duplicates) = SortedIds::new(&ids, 1);
                check(&ids, &IdIndex::Sorted(sorted), duplicates);
            }
        }
    }

    fn check(ids: &[u64], index: &IdIndex, duplicates: u64) {
        let mut first = std::collections::BTreeMap::new();
        for (position, &id) in ids.iter().enumerate() {
            first.entry(id).or_insert(position as u32 + 1);
        }
        assert_eq!(duplicates as usize, ids.len() - first.len());
        for (&id, &node) in &first {
            assert_eq!(index.get(id), Some(node), "{ids:?}");
        }
        for absent in [1u64, 9, 47, 4104, 1 << 39, (1 << 41) + 8, u64::MAX - 1] {
            if !first.contains_key(&absent) {
                assert_eq!(index.get(absent), None);
            }
        }
    }
}
