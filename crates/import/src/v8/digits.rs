//! Word-at-a-time reading of the unsigned integers V8 writes (`123,` and `123\n,`): the
//! digits found in one 8-byte load and combined with three multiplications, with no branch
//! on a number's length.
//!
//! Everything here only reads what it is sure of and stops at anything else (a sign, a long
//! number, other whitespace); the byte scanner of `numbers` then reads or rejects it.

#[cfg(target_arch = "x86_64")]
mod avx512;

/// `b'0'` in every byte.
const ASCII_ZEROS: u64 = 0x3030_3030_3030_3030;

/// Added to a byte, sets its high bit when the byte is above `b'9'` (`0x46 + 0x3a = 0x80`).
const ABOVE_NINE: u64 = 0x4646_4646_4646_4646;

/// The high bit of every byte.
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Bytes the fast paths need ahead of a number: the eight they load, the two digits and the
/// byte after that a ten-digit number takes, and the separator after it, rounded up.
const FAST_PATH_BYTES: usize = 16;

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
/// scanner's marker for wide numbers, which only the byte loop reads). `word` holds the eight
/// bytes at `at` ([`load_u64`]).
///
/// Needs [`FAST_PATH_BYTES`] bytes at `at`.
#[inline(always)]
fn fast_number(word: u64, bytes: &[u8], at: usize) -> Option<(u32, usize)> {
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
fn fast_separator(bytes: &[u8], at: usize) -> Option<usize> {
    let comma = at + usize::from(bytes[at] == b'\n');
    (bytes[comma] == b',').then_some(comma + 1)
}

/// The number of the unit `number,` or `number\n,` at `bytes[at..]` and the position after its
/// comma, if [`fast_number`] and [`fast_separator`] read it.
///
/// Needs [`FAST_PATH_BYTES`] bytes at `at`.
#[inline(always)]
fn fast_unit(bytes: &[u8], at: usize) -> Option<(u32, usize)> {
    let word = load_u64(bytes, at);
    let (number, len) = fast_number(word, bytes, at)?;
    // A number of up to seven digits has its separator in the word already loaded: reading it
    // there keeps a load that waits on the number's length off the chain from unit to unit.
    if len < 8 && (word >> (8 * len)) as u8 == b',' {
        return Some((number, at + len + 1));
    }
    Some((number, fast_separator(bytes, at + len)?))
}

/// Runs shorter than this are read as one.
const SPLIT_FROM_BYTES: usize = 256;

/// Reads units `number,` or `number\n,` (what V8 writes) from `bytes[from..]`, `from` being
/// the start of a unit, for as long as the fast paths read them and [`FAST_PATH_BYTES`]
/// remain, appending their numbers to `out`; returns where it stopped, the start of the first
/// unit not read.
///
/// Read 64 bytes at a time where the processor has AVX-512 with VBMI and VBMI2 (Intel since
/// Ice Lake, AMD since Zen 4): [`units_by_windows`], three times as fast on a snapshot's
/// `edges`. Elsewhere [`units_in_two_runs`].
pub(super) fn fast_units(
    bytes: &[u8],
    from: usize,
    out: &mut Vec<u32>,
    scratch: &mut Vec<u32>,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if let Some(windows) = avx512::Windows::detect() {
        return units_by_windows(windows, bytes, from, out);
    }
    units_in_two_runs(bytes, from, out, scratch)
}

/// [`fast_units`] a window at a time ([`avx512::Windows::units`]), and each window those do
/// not read (a long number, anything else) one unit at a time.
#[cfg(target_arch = "x86_64")]
fn units_by_windows(
    windows: avx512::Windows,
    bytes: &[u8],
    from: usize,
    out: &mut Vec<u32>,
) -> usize {
    let Some(last) = bytes.len().checked_sub(FAST_PATH_BYTES) else {
        return from;
    };
    let mut at = from;
    loop {
        at = windows.units(bytes, at, out);
        let window_end = at + avx512::WINDOW;
        while at < window_end {
            if at > last {
                return at;
            }
            let Some((number, next)) = fast_unit(bytes, at) else {
                return at;
            };
            out.push(number);
            at = next;
        }
    }
}

/// [`fast_units`] one unit at a time. Each unit's end is a load and a count away from its
/// start, so one run of units is a chain of dependent steps: two runs are read side by side
/// (the second from the first unit past the middle, its numbers held in `scratch` until the
/// first run reaches it), so that the processor overlaps the two chains.
fn units_in_two_runs(
    bytes: &[u8],
    from: usize,
    out: &mut Vec<u32>,
    scratch: &mut Vec<u32>,
) -> usize {
    let Some(last) = bytes.len().checked_sub(FAST_PATH_BYTES) else {
        return from;
    };
    let mut at = from;
    let middle = from + (bytes.len() - from) / 2;
    if let Some(after_comma) = (bytes.len() - from >= SPLIT_FROM_BYTES)
        .then(|| memchr::memchr(b',', &bytes[middle..]))
        .flatten()
    {
        let second = middle + after_comma + 1;
        let mut other = second;
        let mut other_reads = true;
        scratch.clear();
        while at < second && at <= last {
            let Some((number, next)) = fast_unit(bytes, at) else {
                break;
            };
            out.push(number);
            at = next;
            if other_reads && other <= last {
                match fast_unit(bytes, other) {
                    Some((number, next)) => {
                        scratch.push(number);
                        other = next;
                    }
                    None => other_reads = false,
                }
            } else {
                other_reads = false;
            }
        }
        if at != second {
            // The first run stopped short of the second: what the second read is not next.
            return at;
        }
        out.extend_from_slice(scratch);
        at = other;
        if !other_reads {
            return at;
        }
    }
    while at <= last {
        let Some((number, next)) = fast_unit(bytes, at) else {
            break;
        };
        out.push(number);
        at = next;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`fast_units`] reads, found by splitting at commas and parsing each number as a
    /// string: the numbers, and where the first unit not read starts.
    fn units_read_plainly(bytes: &[u8]) -> (Vec<u32>, usize) {
        let (mut numbers, mut at) = (Vec::new(), 0);
        while at + FAST_PATH_BYTES <= bytes.len() {
            let Some(comma) = bytes[at..].iter().position(|&byte| byte == b',') else {
                break;
            };
            let token = &bytes[at..at + comma];
            let digits = token.strip_suffix(b"\n").unwrap_or(token);
            let plain = (1..=10).contains(&digits.len())
                && digits.iter().all(u8::is_ascii_digit)
                && (digits.len() == 1 || digits[0] != b'0');
            let value = std::str::from_utf8(digits)
                .ok()
                .and_then(|text| text.parse::<u64>().ok());
            match value {
                Some(value) if plain && value < u64::from(u32::MAX) => numbers.push(value as u32),
                _ => break,
            }
            at += comma + 1;
        }
        (numbers, at)
    }

    /// Units of numbers as V8 writes them: in one round of two, mostly of up to eight digits
    /// (what snapshots hold, and what the windows read), else of one to ten digits alike; now
    /// and then something the fast paths stop at, somewhere.
    fn units_text(round: usize, next: &mut impl FnMut(u64) -> u64) -> String {
        let mut text = String::new();
        let units = next(400);
        for _ in 0..units {
            let digits = if round.is_multiple_of(2) && next(50) != 0 {
                1 + next(8) as u32
            } else {
                1 + next(10) as u32
            };
            text.push_str(&(next(10u64.pow(digits)) as u32).to_string());
            text.push_str(if next(5) == 0 { "\n," } else { "," });
        }
        if round.is_multiple_of(3) && !text.is_empty() {
            let at = next(text.len() as u64) as usize;
            let odd = ["-", " ", "12345678901", "0", "\n", ",", "0123"];
            text.insert_str(at, odd[next(odd.len() as u64) as usize]);
        }
        text
    }

    /// Each way of reading units (two runs side by side, and on processors that have them
    /// windows of 64 bytes) reads what parsing each number as a string does, wherever the
    /// units stop (a long number, a space, a sign, an empty unit, the end of the bytes).
    #[test]
    fn fast_units_reads_what_parsing_each_number_reads() {
        let mut lcg = heapgraph_test_support::Lcg::new(0x9e37_79b9_7f4a_7c15u64);
        let mut next = |bound: u64| lcg.below(bound);
        let mut read_by_windows = 0;
        for round in 0..6000 {
            let text = units_text(round, &mut next);
            let bytes = text.as_bytes();
            let (one, at) = units_read_plainly(bytes);
            let (mut two, mut scratch) = (Vec::new(), Vec::new());
            let end = fast_units(bytes, 0, &mut two, &mut scratch);
            assert_eq!((end, &two), (at, &one), "round {round}: {text:?}");
            two.clear();
            let end = units_in_two_runs(bytes, 0, &mut two, &mut scratch);
            assert_eq!((end, &two), (at, &one), "two runs, round {round}: {text:?}");
            #[cfg(target_arch = "x86_64")]
            if let Some(windows) = avx512::Windows::detect() {
                two.clear();
                let end = units_by_windows(windows, bytes, 0, &mut two);
                assert_eq!((end, &two), (at, &one), "windows, round {round}: {text:?}");
                two.clear();
                read_by_windows += windows.units(bytes, 0, &mut two);
            }
        }
        // Where windows are read, they read most of the texts of short numbers themselves.
        #[cfg(target_arch = "x86_64")]
        if avx512::Windows::detect().is_some() {
            assert!(
                read_by_windows > 500_000,
                "{read_by_windows} bytes read by windows"
            );
        }
    }

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
            let bytes = text.as_bytes();
            assert_eq!(
                fast_number(load_u64(bytes, 0), bytes, 0),
                Some((number, len))
            );
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
            let text = padded(text);
            let bytes = text.as_bytes();
            assert_eq!(fast_number(load_u64(bytes, 0), bytes, 0), None, "{text}");
        }
    }
}
