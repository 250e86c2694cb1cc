//! Object id → node index. Ids are addresses, and after a full GC the live objects sit in dense
//! runs (a generation, a region), written in address order: the address space is cut into
//! pages of 4096 granules (the smallest object's size), and a page whose objects are
//! consecutive nodes in address order keeps a bit per granule, so that an object's node is the
//! page's first node plus the number of objects before it in the page (two reads and a
//! popcount). A page whose objects came out of order keeps a slot per granule instead. Where
//! the objects are too scattered for pages, the ids are sorted once, with a table of where
//! each address bucket starts, so that a lookup is a short search in one bucket instead of a
//! hash probe.

use heapgraph_model::PackedU64;
use rayon::prelude::*;

/// Buckets per object, about: enough that a bucket holds a handful of ids.
const OBJECTS_PER_BUCKET: usize = 4;

/// Table bytes allowed per object before the sorted index is used instead: about what the
/// sorted index costs.
const PAGED_BYTES_PER_OBJECT: u64 = 16;

/// Granules per page, as a power of two.
const PAGE_BITS: u32 = 12;

/// 64-bit words of a page's bitmap.
const WORDS_PER_PAGE: usize = 1 << (PAGE_BITS - 6);

/// Marks an empty directory entry or slot.
const EMPTY: u32 = u32::MAX;

/// Marks a page kept as slots, in [`Page::bits`].
const SLOTS: u32 = u32::MAX;

/// One page of the paged index.
#[derive(Clone, Copy)]
pub(super) struct Page {
    /// The node of the page's first object (bitmap pages).
    first_node: u32,
    /// Where the page's bitmap starts in `bits` (in words), or `SLOTS`.
    bits: u32,
    /// Where the page's slots start in `slots` (slot pages).
    slots: u32,
}

/// Finds the node index of an object id.
pub(super) enum IdIndex<'a> {
    /// With `granule = (id - min) >> shift`, `pages[directory[granule >> PAGE_BITS]]` is the
    /// page. A bitmap page has a bit set for each granule where an object starts, and
    /// `before[w]` counts the bits of the page's words before word `w`; a slot page holds the
    /// node whose object starts in each granule, or `EMPTY`. `ids` tells whether the object
    /// found starts at `id` itself, unless every object starts where a granule does (`exact`),
    /// so that an id that does is the object's where the granule holds one.
    Paged {
        ids: &'a PackedU64,
        base: u32,
        min: u64,
        shift: u32,
        exact: bool,
        directory: Vec<u32>,
        pages: Vec<Page>,
        bits: Vec<u64>,
        before: Vec<u16>,
        slots: Vec<u32>,
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

/// How one page's objects arrived in the first pass over the ids.
#[derive(Clone, Copy)]
struct Arrival {
    first_node: u32,
    count: u32,
    last_granule: u32,
    /// Whether every object came right after the one before, in node and in address.
    in_order: bool,
}

impl<'a> IdIndex<'a> {
    /// Indexes `ids`, the ids of nodes `base`, `base + 1`, …, where objects start at least
    /// `1 << granule_shift` bytes apart (16 on 64-bit JVMs, whose smallest object takes 16
    /// bytes); also returns how many ids occur more than once (the first occurrence wins).
    ///
    /// Where the ids' own alignment is finer than the granule (8-byte aligned objects, 16-byte
    /// granules), granules of that alignment are tried first: every object then starts where
    /// a granule does, and a lookup need not read the id back (a cache miss per reference).
    pub(super) fn new(ids: &'a PackedU64, base: u32, granule_shift: u32) -> (IdIndex<'a>, u64) {
        let alignment = ids.iter().fold(0, |bits, id| bits | id).trailing_zeros();
        let mut shifts = [granule_shift.min(alignment), granule_shift];
        if shifts[0] == shifts[1] {
            shifts[1] = u32::MAX;
        }
        for shift in shifts.into_iter().filter(|&shift| shift != u32::MAX) {
            if let Some(paged) = IdIndex::paged(ids, base, shift) {
                return paged;
            }
        }
        let (sorted, duplicates) = SortedIds::new(&ids.to_vec(), base);
        (IdIndex::Sorted(sorted), duplicates)
    }

    /// The paged index, where the ids are dense and aligned enough for it.
    fn paged(ids: &'a PackedU64, base: u32, shift: u32) -> Option<(IdIndex<'a>, u64)> {
        let (mut min, mut max) = (u64::MAX, 0u64);
        for id in ids.iter() {
            min = min.min(id);
            max = max.max(id);
        }
        if ids.is_empty() {
            return None;
        }
        let n_directory = usize::try_from(((max - min) >> shift >> PAGE_BITS) + 1).ok()?;
        if n_directory as u64 > ids.len() as u64 + 1024 {
            return None;
        }
        // First pass: which pages hold objects, and whether each page's objects came in order.
        let mut directory = vec![EMPTY; n_directory];
        let mut arrivals: Vec<Arrival> = Vec::new();
        let page_mask = (1u32 << PAGE_BITS) - 1;
        let mut offsets = 0u64;
        for (position, id) in ids.iter().enumerate() {
            offsets |= id - min;
            let granule = (id - min) >> shift;
            let node = base + position as u32;
            let page = &mut directory[(granule >> PAGE_BITS) as usize];
            let in_page = granule as u32 & page_mask;
            if *page == EMPTY {
                *page = arrivals.len() as u32;
                arrivals.push(Arrival {
                    first_node: node,
                    count: 1,
                    last_granule: in_page,
                    in_order: true,
                });
                continue;
            }
            let arrival = &mut arrivals[*page as usize];
            arrival.in_order &=
                node == arrival.first_node + arrival.count && in_page > arrival.last_granule;
            arrival.count += 1;
            arrival.last_granule = in_page;
        }
        let n_slot_pages = arrivals.iter().filter(|a| !a.in_order).count() as u64;
        let n_bit_pages = arrivals.len() as u64 - n_slot_pages;
        let page_slots = 1u64 << PAGE_BITS;
        let bytes = n_slot_pages * page_slots * 4 + n_bit_pages * (WORDS_PER_PAGE as u64 * 10);
        if bytes > PAGED_BYTES_PER_OBJECT * ids.len() as u64 + page_slots * 4 {
            return None;
        }
        let mut pages = Vec::with_capacity(arrivals.len());
        let (mut n_words, mut n_slots) = (0u32, 0u32);
        for arrival in &arrivals {
            if arrival.in_order {
                pages.push(Page {
                    first_node: arrival.first_node,
                    bits: n_words,
                    slots: 0,
                });
                n_words += WORDS_PER_PAGE as u32;
            } else {
                pages.push(Page {
                    first_node: arrival.first_node,
                    bits: SLOTS,
                    slots: n_slots,
                });
                n_slots += page_slots as u32;
            }
        }
        drop(arrivals);
        // Second pass: the bits and the slots.
        let mut bits = vec![0u64; n_words as usize];
        let mut slots = vec![EMPTY; n_slots as usize];
        let mut duplicates = 0;
        for (position, id) in ids.iter().enumerate() {
            let granule = (id - min) >> shift;
            let page = pages[directory[(granule >> PAGE_BITS) as usize] as usize];
            let in_page = (granule as u32 & page_mask) as usize;
            if page.bits != SLOTS {
                bits[page.bits as usize + in_page / 64] |= 1 << (in_page % 64);
                continue;
            }
            let slot = &mut slots[page.slots as usize + in_page];
            if *slot == EMPTY {
                *slot = base + position as u32;
            } else if ids.get((*slot - base) as usize) == id {
                duplicates += 1;
            } else {
                // Two objects in one granule: the granule is wrong for this dump.
                return None;
            }
        }
        let mut before = vec![0u16; n_words as usize];
        for (page_bits, page_before) in bits
            .chunks_exact(WORDS_PER_PAGE)
            .zip(before.chunks_exact_mut(WORDS_PER_PAGE))
        {
            let mut running = 0u16;
            for (&word, count) in page_bits.iter().zip(page_before) {
                *count = running;
                running += word.count_ones() as u16;
            }
        }
        Some((
            IdIndex::Paged {
                ids,
                base,
                min,
                shift,
                exact: offsets & ((1 << shift) - 1) == 0,
                directory,
                pages,
                bits,
                before,
                slots,
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
                exact,
                directory,
                pages,
                bits,
                before,
                slots,
            } => {
                let offset = id.checked_sub(*min)?;
                if *exact && offset & ((1 << *shift) - 1) != 0 {
                    return None;
                }
                let granule = offset >> shift;
                let page = *directory.get(usize::try_from(granule >> PAGE_BITS).ok()?)?;
                if page == EMPTY {
                    return None;
                }
                let page = pages[page as usize];
                let in_page = granule as usize & ((1 << PAGE_BITS) - 1);
                let node = if page.bits != SLOTS {
                    let at = page.bits as usize + in_page / 64;
                    let word = bits[at];
                    let bit = 1u64 << (in_page % 64);
                    if word & bit == 0 {
                        return None;
                    }
                    let rank = u32::from(before[at]) + (word & (bit - 1)).count_ones();
                    page.first_node + rank
                } else {
                    slots[page.slots as usize + in_page]
                };
                (node != EMPTY && (*exact || ids.get((node - base) as usize) == id)).then_some(node)
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
        let in_order: Vec<u64> = (0..10_000u64).map(|i| 0x6_0000_0000 + i * 48).collect();
        let mut mixed = in_order.clone();
        mixed.swap(10, 2000);
        mixed.swap(5000, 5001);
        mixed.push(0x6_0000_0000 + 48 * 77);
        for ids in [
            vec![16u64, 40, 64, 1 << 40, (1 << 40) + 24],
            vec![96, 8, 48, 8, 1000, 0],
            vec![],
            vec![u64::MAX, 0],
            vec![4096, 4112, 4128, 4096, 4160],
            in_order,
            mixed,
        ] {
            let packed = PackedU64::compact(&ids);
            for shift in [0, 3, 4] {
                let (index, duplicates) = IdIndex::new(&packed, 1, shift);
                check(&ids, &index, duplicates);
                let (sorted, duplicates) = SortedIds::new(&ids, 1);
                check(&ids, &IdIndex::Sorted(sorted), duplicates);
            }
        }
    }

    /// Pages whose objects come in order use bits; the others slots; both find every id.
    #[test]
    fn pages_in_order_keep_bits_and_the_others_slots() {
        let mut ids: Vec<u64> = (0..20_000u64).map(|i| 0x8_0000_0000 + i * 32).collect();
        ids.swap(3, 4);
        let packed = PackedU64::compact(&ids);
        let (index, duplicates) = IdIndex::new(&packed, 1, 4);
        let IdIndex::Paged { pages, .. } = &index else {
            panic!("dense ids get the paged index");
        };
        let slot_pages = pages.iter().filter(|page| page.bits == SLOTS).count();
        assert_eq!((slot_pages, pages.len()), (1, 20_000 * 32 / 16 / 4096 + 1));
        check(&ids, &index, duplicates);
    }

    /// Objects 8 bytes apart at the least, under 16-byte granules, get granules of 8 bytes,
    /// whose lookups need no id read back; an address inside an object is still not one.
    #[test]
    fn granules_as_fine_as_the_ids_need_no_id_read_back() {
        let ids: Vec<u64> = (0..10_000u64).map(|i| 0x6_0000_0000 + i * 24).collect();
        let packed = PackedU64::compact(&ids);
        let (index, duplicates) = IdIndex::new(&packed, 1, 4);
        let IdIndex::Paged { shift, exact, .. } = &index else {
            panic!("dense ids get the paged index");
        };
        assert_eq!((*shift, *exact), (3, true));
        check(&ids, &index, duplicates);
        for &id in &ids {
            for inside in [8, 16, 4, 1] {
                assert_eq!(index.get(id + inside), None, "{id:#x} + {inside}");
            }
        }
    }

    fn check(ids: &[u64], index: &IdIndex, duplicates: u64) {
        let mut first = std::collections::BTreeMap::new();
        for (position, &id) in ids.iter().enumerate() {
            first.entry(id).or_insert(position as u32 + 1);
        }
        if let IdIndex::Paged { base, .. } = index {
            // The tests index from node 1.
            assert_eq!(*base, 1);
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
