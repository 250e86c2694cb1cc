//! LEB128, the one variable-length integer code of the analyzer's packed lists (the dominator
//! tree's children, long predecessor lists): seven bits a byte, low bits first, the high bit
//! set on every byte but the last; and zigzag, which maps signed differences to small codes.

use std::sync::atomic::{AtomicU8, Ordering};

/// Bytes of the LEB128 encoding of `value`.
#[inline]
pub(crate) fn encoded_len(value: u64) -> usize {
    (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
}

/// Appends the encoding of `value` to `out`.
#[inline]
pub(crate) fn push(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Writes the encoding of `value` at `bytes[at..]`, which has room for it
/// ([`encoded_len`]); returns where it ends. The bytes are atomics so that threads write
/// their own places in one buffer.
#[inline]
pub(crate) fn store(bytes: &[AtomicU8], mut at: usize, mut value: u64) -> usize {
    for _ in 1..encoded_len(value) {
        bytes[at].store((value as u8 & 0x7f) | 0x80, Ordering::Relaxed);
        value >>= 7;
        at += 1;
    }
    bytes[at].store(value as u8, Ordering::Relaxed);
    at + 1
}

/// Decodes the value that starts at `bytes[at]`; returns it and where the next one starts.
#[inline]
pub(crate) fn read(bytes: &[u8], mut at: usize) -> (u64, usize) {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = bytes[at];
        at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return (value, at);
        }
        shift += 7;
    }
}

/// Decodes the value that ends at `bytes[end - 1]` (`end` above 0); returns it and where it
/// starts. Every byte of a value but its last has the high bit set, so the value starts after
/// the nearest byte before it without.
#[inline]
pub(crate) fn read_before(bytes: &[u8], end: usize) -> (u64, usize) {
    let mut start = end - 1;
    while start > 0 && bytes[start - 1] & 0x80 != 0 {
        start -= 1;
    }
    (read(bytes, start).0, start)
}

/// Appends the encoding of `value` to `out` back to front, for a stream read from its end
/// ([`read_reversed`]).
#[inline]
pub(crate) fn push_reversed(out: &mut Vec<u8>, value: u64) {
    let mut groups = [0u8; 10];
    let mut n = 0;
    let mut rest = value;
    while rest >= 0x80 {
        groups[n] = (rest as u8) | 0x80;
        rest >>= 7;
        n += 1;
    }
    groups[n] = rest as u8;
    out.extend(groups[..=n].iter().rev());
}

/// Decodes the value [`push_reversed`] wrote to end at `bytes[end - 1]` (`end` above 0);
/// returns it and where it starts.
#[inline]
pub(crate) fn read_reversed(bytes: &[u8], mut end: usize) -> (u64, usize) {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        end -= 1;
        let byte = bytes[end];
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return (value, end);
        }
        shift += 7;
    }
}

/// Decodes the value that starts at `bytes[at]` of a value below 2^35 (five groups), read from
/// a file: `None` where it does not end before `end` or within five bytes.
pub(crate) fn read_within(bytes: &[u8], at: usize, end: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (group, &byte) in bytes.get(at..end)?.iter().take(5).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * group);
        if byte & 0x80 == 0 {
            return Some((value, at + group + 1));
        }
    }
    None
}

/// Decodes the next value of `bytes`, a stream of encodings (0 if it ends first).
#[inline]
pub(crate) fn read_from(bytes: &mut impl Iterator<Item = u8>) -> u64 {
    let (mut value, mut shift) = (0u64, 0);
    for byte in bytes {
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    value
}

/// The zigzag code of `difference`: 0, −1, 1, −2, … as 0, 1, 2, 3, …
#[inline]
pub(crate) fn zigzag(difference: i64) -> u64 {
    ((difference << 1) ^ (difference >> 63)) as u64
}

/// The difference whose zigzag code is `code`.
#[inline]
pub(crate) fn unzigzag(code: u64) -> i64 {
    (code >> 1) as i64 ^ -((code & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The encodings of the LEB128 specification's examples (DWARF 5, section 7.6).
    #[test]
    fn the_specifications_examples_encode_as_it_says() {
        for (value, bytes) in [
            (2u64, &[2u8][..]),
            (127, &[127]),
            (128, &[0x80, 1]),
            (129, &[1 + 0x80, 1]),
            (130, &[2 + 0x80, 1]),
            (12857, &[57 + 0x80, 100]),
        ] {
            let mut out = Vec::new();
            push(&mut out, value);
            assert_eq!(out, bytes, "{value}");
            assert_eq!(encoded_len(value), bytes.len(), "{value}");
            let written: Vec<AtomicU8> = (0..bytes.len()).map(|_| AtomicU8::new(0)).collect();
            assert_eq!(store(&written, 0, value), bytes.len());
            let written: Vec<u8> = written.into_iter().map(AtomicU8::into_inner).collect();
            assert_eq!(written, bytes, "{value}");
        }
    }

    proptest! {
        #[test]
        fn values_read_back_from_both_decoders(values in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut bytes = Vec::new();
            for &value in &values {
                push(&mut bytes, value);
            }
            let mut at = 0;
            let mut stream = bytes.iter().copied();
            for &value in &values {
                let (read_value, next) = read(&bytes, at);
                prop_assert_eq!(read_value, value);
                prop_assert_eq!(next - at, encoded_len(value));
                prop_assert_eq!(read_from(&mut stream), value);
                at = next;
            }
            prop_assert_eq!(at, bytes.len());
            // From the end: the same stream's values last first, each ending where the one
            // after it starts.
            let mut end = bytes.len();
            for &value in values.iter().rev() {
                let (read_value, start) = read_before(&bytes, end);
                prop_assert_eq!(read_value, value);
                prop_assert_eq!(end - start, encoded_len(value));
                end = start;
            }
            prop_assert_eq!(end, 0);
        }

        #[test]
        fn values_written_back_to_front_read_back_from_the_end(values in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut bytes = Vec::new();
            for &value in &values {
                push_reversed(&mut bytes, value);
            }
            let mut end = bytes.len();
            for &value in values.iter().rev() {
                let (read_value, start) = read_reversed(&bytes, end);
                prop_assert_eq!(read_value, value);
                prop_assert_eq!(end - start, encoded_len(value));
                end = start;
            }
            prop_assert_eq!(end, 0);
        }

        #[test]
        fn zigzag_round_trips(difference in any::<i64>()) {
            prop_assert_eq!(unzigzag(zigzag(difference)), difference);
        }
    }
}
