//! Checks of a whole column that find the first bad entry at the cost of a read: the entries
//! are taken in stretches, and only a stretch whose largest key reaches the limit is searched
//! entry by entry (the largest is a vectorized pass with no early exit; a search is not).

/// Entries per stretch: 16 KiB of `u32`, in the first level of cache while it is searched.
const STRETCH: usize = 4096;

/// The first index of `values` where `hit` holds, asked only in stretches where some entry's
/// `key` is `below` or more (so `hit` must imply `key(value) >= below`).
pub fn first_in_stretches<T: Copy, K: Ord>(
    values: &[T],
    key: impl Fn(T) -> K,
    below: K,
    hit: impl Fn(usize, T) -> bool,
) -> Option<usize> {
    values
        .chunks(STRETCH)
        .enumerate()
        .filter(|(_, stretch)| {
            stretch
                .iter()
                .map(|&value| key(value))
                .max()
                .is_some_and(|most| most >= below)
        })
        .find_map(|(at, stretch)| {
            let start = at * STRETCH;
            (start..start + stretch.len()).find(|&index| hit(index, values[index]))
        })
}
