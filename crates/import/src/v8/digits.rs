//! Word-at-a-time reading of the unsigned integers V8 writes (`123,` and `123\n,`): the
//! digits found in one 8-byte load and combined with three multiplications, with no branch
//! on a number's length.
//!
//! Everything here only reads what it is sure of and stops at anything else (a sign, a long
//! number, other whitespace); the byte scanner of `numbers` then reads or rejects it.

/// `b'0'` in every byte.
const ASCII_ZEROS: u64 = 0x3030_3030_3030_3030;

/// Added to a byte, sets its high bit when the byte is above `b'9'` (`0x46 + 0x3a = 0x80`).
const ABOVE_NINE: u64 = 0x4646_4646_4646_4646;

/// The high bit of every byte.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Bytes the fast paths need ahead of a number: the eight they load, the two digits and the
/// byte after that a ten-digit number takes, and the separator after it, rounded up.
pub(super) const FAST_PATH_BYTES: usize = 16;

/// The eight bytes at `bytes[at..at + 8]` as a little-endian word (the first byte lowest).
#[inline(always)]
fn load_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// The number whose eight decimal digits (values 0..=9, most significant in the lowest
/// byte) are the bytes of `digits`; three multiply-and-shift steps combine neighbouring
/// digits, pairs and quads (Lemire, "Faster integer parsing", 2018).
#[inline(always)]
fn eight_digits(digits: u64) -> u32 {
    let pairs = (digits.wrapping_mul(10 * 256 + 1) >> 8) & 0x00ff_00ff_00ff_00ff;
    let quads = (pairs.wrapping_mul(100 * 65_536 + 1) >> 16) & 0x0000_ffff_0000_ffff;
    (quads.wrapping_mul(10_000 * (1 << 32) + 1) >> 32) as u32
}

/// The number at `bytes[at..]` and its length in bytes, if it has one to ten digits, no
/// leading zero and is below `u32::MAX`; `None` for anything else (`u32::MAX` itself is the
/// scanner's marker for wide numbers, which only the byte loop reads).
///
/// Needs [`FAST_PATH_BYTES`] bytes at `at`.
#[inline(always)]
pub(super) fn fast_number(bytes: &[u8], at: usize) -> Option<(u32, usize)> {
    let word = load_u64(bytes, at);
    let digit_values = word.wrapping_sub(ASCII_ZEROS);
    // The high bit of each byte below `b'0'` or above `b'9'`. Borrows and carries only run
    // upwards, from a non-digit byte into later ones, so the first non-digit is exact.
    let non_digits = (digit_values | word.wrapping_add(ABOVE_NINE)) & HIGH_BITS;
    let len = (non_digits.trailing_zeros() / 8) as usize;
    // One rarely taken branch for all cases (`&` and `|` do not short-circuit).
    let leading_zero = (len > 1) & (word as u8 == b'0');
    if (len == 0) | leading_zero {
        return None;
    }
    // `len` is 1..=8, so the shift is 0..=56: the digits move to the top, zeros below.
    let value = eight_digits(digit_values << (64 - 8 * len));
    if len < 8 {
        return Some((value, len));
    }
    // Eight digits and maybe up to two more.
    let ninth = bytes[at + 8].wrapping_sub(b'0');
    if ninth > 9 {
        return Some((value, 8));
    }
    let tenth = bytes[at + 9].wrapping_sub(b'0');
    if tenth > 9 {
        return Some((value * 10 + u32::from(ninth), 9));
    }
    if bytes[at + 10].is_ascii_digit() {
        return None;
    }
    let value = u64::from(value) * 100 + u64::from(ninth) * 10 + u64::from(tenth);
    u32::try_from(value)
        .ok()
        .filter(|&value| value != u32::MAX)
        .map(|value| (value, 10))
}

/// The position after the comma that follows a number ending at `at`, if what follows is
/// `,` or `\n,` (what V8 writes).
///
/// Needs two bytes at `at`.
#[inline(always)]
pub(super) fn fast_separator(bytes: &[u8], at: usize) -> Option<usize> {
    let comma = at + usize::from(bytes[at] == b'\n');
    (bytes[comma] == b',').then_some(comma + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_digits_reads_padded_numbers() {
        for number in [0u32, 7, 42, 907, 1234567, 9999999, 12345678, 99999999] {
            let text = format!("{number:08}");
            let word = load_u64(text.as_bytes(), 0).wrapping_sub(ASCII_ZEROS);
            assert_eq!(eight_digits(word), number);
        }
    }

    #[test]
    fn fast_number_reads_one_to_ten_digits_and_nothing_else() {
        let padded = |text: &str| format!("{text}{}", " ".repeat(FAST_PATH_BYTES));
        for number in [
            0u32,
            9,
            10,
            12345678,
            99999999,
            100000000,
            999999999,
            1000000000,
            u32::MAX - 1,
        ] {
            let text = padded(&format!("{number},"));
            let len = number.to_string().len();
            assert_eq!(fast_number(text.as_bytes(), 0), Some((number, len)));
        }
        for text in [
            "4294967295,",
            "4294967296,",
            "12345678901,",
            "01,",
            "00,",
            "-1,",
            ",",
            "a1,",
        ] {
            assert_eq!(fast_number(padded(text).as_bytes(), 0), None, "{text}");
        }
    }
}
