//! The scanner of `nodes` and `edges`: JSON arrays of unsigned integers read straight into
//! `u32`s, block by block, with numbers free to straddle block boundaries.
//!
//! This is where the time of an import goes: the common case goes through the word-at-a-time
//! fast paths of `digits`, the rest through a plain byte loop with its state in locals;
//! everything that is not a digit, whitespace, `,` or `]` is an error.
//!
//! Numbers of `u32::MAX` or more (up to `u64::MAX`) are rare but valid: Julia writes object
//! addresses as node ids (`4775375728`). They are written as [`WIDE`] in the records and kept,
//! in order, in a [`Wide`] queue beside them, so that the common case stays four bytes a number
//! and only the columns that can hold such a value (a node's `id` and `self_size`) look for it.

use super::cursor::{BlockSource, Cursor};
use super::digits::fast_units;
use super::json::{describe_byte, is_whitespace};
use super::{malformed, truncated};
use crate::ImportError;
use std::collections::VecDeque;

/// Stands in the records for a number of `u32::MAX` or more; the number waits in [`Wide`].
pub(super) const WIDE: u32 = u32::MAX;

/// The numbers of `u32::MAX` or more of an array that the records hold as [`WIDE`], in the
/// order they were read, each with the offset where it starts.
///
/// Invariant: it holds exactly one entry for each [`WIDE`] in the records read but not yet
/// taken by the columns, so a column that meets a [`WIDE`] takes the front entry.
#[derive(Debug, Default)]
pub(super) struct Wide {
    /// (offset, value), oldest first.
    values: VecDeque<(u64, u64)>,
}

impl Wide {
    /// Whether no wide number is waiting: the records handed over then hold no [`WIDE`].
    pub(super) fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The wide number for the next [`WIDE`] in the records, and where it starts.
    ///
    /// `None` never happens while the invariant holds; callers turn it into an error rather
    /// than a panic.
    pub(super) fn take(&mut self) -> Option<(u64, u64)> {
        self.values.pop_front()
    }

    fn push(&mut self, offset: u64, value: u64) {
        self.values.push_back((offset, value));
    }
}

/// Bytes scanned between two hand-offs of records to the caller: the numbers of one chunk
/// (at most one per byte) stay in L1/L2 until the columns take them.
const CHUNK_BYTES: usize = 32 << 10;

/// Reads ahead in a block that may lie inside `nodes` or `edges`, on the reading thread,
/// so that the parsing thread can take the numbers instead of scanning them.
///
/// Starts after the block's first `,` and reads `number,` or `number\n,` units (what V8
/// writes) for as long as they come, into `out`. Returns the byte range read, which starts
/// and ends just after a comma, so that a scanner in state [`State::Value`] at its start
/// would read exactly `out` and end at its end in the same state; `None` if nothing was read.
pub(super) fn prescan(
    bytes: &[u8],
    out: &mut Vec<u32>,
    scratch: &mut Vec<u32>,
) -> Option<(usize, usize)> {
    out.clear();
    let start = memchr::memchr(b',', bytes)? + 1;
    let end = fast_units(bytes, start, out, scratch);
    (end > start).then_some((start, end))
}

/// Where the scanner is in the array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// After `[`: a number or `]`.
    First,
    /// After `,`: a number.
    Value,
    /// Inside a number.
    Number,
    /// After a number: `,` or `]`.
    Separator,
    /// After `]`.
    Closed,
}

/// A resumable scanner of one array of unsigned integers, fed a slice at a time.
struct Scanner {
    /// The array's name, for errors.
    array: &'static str,
    /// Where the scan is.
    state: State,
    /// The number being read (wrapping; `overflow` says whether it wrapped).
    value: u64,
    /// Whether the number being read passed `u64::MAX`.
    overflow: bool,
    /// Digits of the number being read.
    digits: u64,
    /// Whether the number being read started with `0`.
    leading_zero: bool,
    /// Room for the fast path's second run ([`fast_units`]).
    scratch: Vec<u32>,
}

impl Scanner {
    /// A scanner just after the array's `[`.
    fn new(array: &'static str) -> Self {
        Scanner {
            array,
            state: State::First,
            value: 0,
            overflow: false,
            digits: 0,
            leading_zero: false,
            scratch: Vec::new(),
        }
    }

    /// Scans `bytes`, which start at absolute offset `base`, appending each completed number
    /// to `out` (a number of `u32::MAX` or more as [`WIDE`], itself to `wide`); stops after the
    /// closing `]`. Returns the bytes consumed.
    fn scan(
        &mut self,
        bytes: &[u8],
        base: u64,
        out: &mut Vec<u32>,
        wide: &mut Wide,
    ) -> Result<usize, ImportError> {
        let mut state = self.state;
        let mut value = self.value;
        let mut overflow = self.overflow;
        let mut digits = self.digits;
        let mut leading_zero = self.leading_zero;
        let n = bytes.len();
        let mut i = 0;
        loop {
            match state {
                State::Number => {
                    while i < n {
                        let digit = bytes[i].wrapping_sub(b'0');
                        if digit > 9 {
                            break;
                        }
                        let (times_ten, wrapped) = value.overflowing_mul(10);
                        let (next, carried) = times_ten.overflowing_add(u64::from(digit));
                        overflow |= wrapped | carried;
                        value = next;
                        digits += 1;
                        i += 1;
                    }
                    if i == n {
                        break;
                    }
                    let start = base + (i as u64) - digits;
                    if overflow {
                        return Err(self.too_large(start, digits));
                    }
                    if leading_zero && digits > 1 {
                        return Err(self.leading_zero(start));
                    }
                    if value >= u64::from(WIDE) {
                        out.push(WIDE);
                        wide.push(start, value);
                    } else {
                        out.push(value as u32);
                    }
                    state = State::Separator;
                }
                State::Separator => {
                    while i < n && is_whitespace(bytes[i]) {
                        i += 1;
                    }
                    let Some(&byte) = bytes.get(i) else { break };
                    i += 1;
                    match byte {
                        b',' => state = State::Value,
                        b']' => {
                            state = State::Closed;
                            break;
                        }
                        _ => return Err(self.unexpected(base + (i as u64) - 1, byte, true)),
                    }
                }
                State::First | State::Value => {
                    // Fast path: numbers and their separators a word at a time (see
                    // `digits`), with no branch on a number's length.
                    let end = fast_units(bytes, i, out, &mut self.scratch);
                    if end > i {
                        i = end;
                        state = State::Value;
                    }
                    while i < n && is_whitespace(bytes[i]) {
                        i += 1;
                    }
                    let Some(&byte) = bytes.get(i) else { break };
                    i += 1;
                    let digit = byte.wrapping_sub(b'0');
                    if digit <= 9 {
                        value = u64::from(digit);
                        overflow = false;
                        digits = 1;
                        leading_zero = digit == 0;
                        state = State::Number;
                    } else if byte == b']' && state == State::First {
                        state = State::Closed;
                        break;
                    } else {
                        return Err(self.unexpected(base + (i as u64) - 1, byte, false));
                    }
                }
                State::Closed => break,
            }
        }
        self.state = state;
        self.value = value;
        self.overflow = overflow;
        self.digits = digits;
        self.leading_zero = leading_zero;
        Ok(i)
    }

    /// The error for a number with a leading zero at `offset` (JSON does not allow them).
    fn leading_zero(&self, offset: u64) -> ImportError {
        malformed(
            offset,
            format!("a number in `{}` has a leading zero", self.array),
        )
    }

    /// The error for a number over `u64::MAX`.
    fn too_large(&self, offset: u64, digits: u64) -> ImportError {
        malformed(
            offset,
            format!(
                "a {digits}-digit number in `{}` is larger than {}, the largest value a snapshot holds",
                self.array,
                u64::MAX
            ),
        )
    }

    /// The error for `byte` where a number (or, `after_number`, a separator) should be.
    fn unexpected(&self, offset: u64, byte: u8, after_number: bool) -> ImportError {
        let array = self.array;
        let message = match byte {
            b'.' | b'e' | b'E' if after_number => {
                format!("`{array}` holds only unsigned integers, found a fraction or exponent")
            }
            b'-' => format!("`{array}` holds only unsigned integers, found a negative number"),
            _ if after_number => format!(
                "expected `,` or `]` after a number in `{array}`, found {}",
                describe_byte(byte)
            ),
            _ => format!(
                "expected an unsigned integer in `{array}`, found {}",
                describe_byte(byte)
            ),
        };
        malformed(offset, message)
    }

    /// What the input was in the middle of, for a truncation error.
    fn expected(&self) -> String {
        match self.state {
            State::Number => format!("a number in `{}`", self.array),
            _ => format!("the rest of the `{}` array", self.array),
        }
    }
}

/// Reads the array at the cursor (which must be at its `[`), handing its numbers to `sink`
/// in whole records of `stride` numbers, with the [`Wide`] numbers that its [`WIDE`]s stand
/// for (the sink takes one for each [`WIDE`] it is handed).
///
/// # Errors
/// [`ImportError::Malformed`] for anything but unsigned integers up to `u64::MAX`, or a
/// length that is not a multiple of `stride`; [`ImportError::Truncated`] when the input ends
/// first; and whatever `sink` returns.
pub(super) fn read_array<'a, S: BlockSource<'a>>(
    cursor: &mut Cursor<'a, S>,
    array: &'static str,
    stride: usize,
    mut sink: impl FnMut(&[u32], &mut Wide) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let stride = stride.max(1);
    expect_open(cursor, array)?;
    let mut scanner = Scanner::new(array);
    let mut wide = Wide::default();
    let mut batch: Vec<u32> = Vec::with_capacity(CHUNK_BYTES + stride);
    loop {
        if !cursor.fill()? {
            return Err(truncated(cursor.offset(), scanner.expected()));
        }
        let base = cursor.offset();
        let rest = cursor.rest();
        let (run_start, run_end, run) = cursor.prescanned().unwrap_or((usize::MAX, 0, &[]));
        if run_start <= CHUNK_BYTES && !run.is_empty() {
            // Scan up to the pre-scanned run; if that leaves the scanner just after a comma
            // of this array, the run's numbers are exactly what it would read.
            let used = scanner.scan(&rest[..run_start], base, &mut batch, &mut wide)?;
            if used == run_start && scanner.state == State::Value {
                take_records(&mut batch, run, stride, &mut wide, &mut sink)?;
                cursor.advance(run_end);
                continue;
            }
            cursor.advance(used);
        } else {
            let chunk = &rest[..rest.len().min(CHUNK_BYTES)];
            let used = scanner.scan(chunk, base, &mut batch, &mut wide)?;
            cursor.advance(used);
        }
        let whole = batch.len() - batch.len() % stride;
        if whole > 0 {
            sink(&batch[..whole], &mut wide)?;
            batch.drain(..whole);
        }
        if scanner.state == State::Closed {
            if !batch.is_empty() {
                return Err(malformed(
                    cursor.offset() - 1,
                    format!(
                        "`{array}` ends inside a record: its length is not a multiple of {stride} fields"
                    ),
                ));
            }
            return Ok(());
        }
    }
}

/// Hands `batch` (whole records plus a partial one) and then `numbers` (pre-scanned, so free
/// of [`WIDE`]) to `sink` in whole records, leaving the last partial record in `batch`.
fn take_records(
    batch: &mut Vec<u32>,
    mut numbers: &[u32],
    stride: usize,
    wide: &mut Wide,
    sink: &mut impl FnMut(&[u32], &mut Wide) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let partial = batch.len() % stride;
    if partial > 0 {
        let completing = (stride - partial).min(numbers.len());
        batch.extend_from_slice(&numbers[..completing]);
        numbers = &numbers[completing..];
    }
    let whole = batch.len() - batch.len() % stride;
    if whole > 0 {
        sink(&batch[..whole], wide)?;
        batch.drain(..whole);
    }
    if !batch.is_empty() {
        // `numbers` was too short to complete the record.
        return Ok(());
    }
    let whole = numbers.len() - numbers.len() % stride;
    if whole > 0 {
        sink(&numbers[..whole], wide)?;
    }
    batch.extend_from_slice(&numbers[whole..]);
    Ok(())
}

/// Reads the array at the cursor into one flat vector (when the layout is not known yet), with
/// the wide numbers its [`WIDE`]s stand for.
///
/// # Errors
/// As [`read_array`].
pub(super) fn read_flat_array<'a, S: BlockSource<'a>>(
    cursor: &mut Cursor<'a, S>,
    array: &'static str,
) -> Result<(Vec<u32>, Wide), ImportError> {
    let mut values = Vec::new();
    let mut all_wide = Wide::default();
    read_array(cursor, array, 1, |numbers, wide| {
        values.extend_from_slice(numbers);
        // Kept for the columns, which take them once the layout is known.
        all_wide.values.extend(wide.values.drain(..));
        Ok(())
    })?;
    Ok((values, all_wide))
}

/// Consumes the `[` that opens `array`.
fn expect_open<'a, S: BlockSource<'a>>(
    cursor: &mut Cursor<'a, S>,
    array: &'static str,
) -> Result<(), ImportError> {
    match cursor.skip_whitespace()? {
        Some(b'[') => {
            cursor.advance(1);
            Ok(())
        }
        Some(byte) => Err(malformed(
            cursor.offset(),
            format!(
                "expected `[` to open `{array}`, found {}",
                describe_byte(byte)
            ),
        )),
        None => Err(truncated(cursor.offset(), format!("the `{array}` array"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers as read: each [`WIDE`] replaced by its wide number, whose offset must be
    /// where its digits start in `text`.
    fn resolved(numbers: &[u32], wide: &mut Wide, text: &[u8]) -> Vec<u64> {
        let resolved = numbers
            .iter()
            .map(|&number| {
                if number != WIDE {
                    return u64::from(number);
                }
                let (offset, value) = wide.take().expect("a wide number for each WIDE");
                let digits = value.to_string();
                let at = offset as usize;
                assert_eq!(&text[at..at + digits.len()], digits.as_bytes());
                value
            })
            .collect();
        assert!(wide.is_empty(), "a wide number left over");
        resolved
    }

    /// Scans `text` (after its `[`) split at every position, expecting the same numbers.
    fn scan_split(text: &[u8]) -> Result<Vec<u64>, ImportError> {
        let mut whole = Scanner::new("nodes");
        let mut expected = Vec::new();
        let mut wide = Wide::default();
        let result = whole
            .scan(text, 0, &mut expected, &mut wide)
            .map(|_| resolved(&expected, &mut wide, text));
        for split in 0..=text.len() {
            let mut scanner = Scanner::new("nodes");
            let mut got = Vec::new();
            let mut wide = Wide::default();
            let first = scanner.scan(&text[..split], 0, &mut got, &mut wide);
            let second = first.and_then(|used| {
                assert!(used == split || scanner.state == State::Closed);
                scanner.scan(&text[used..], used as u64, &mut got, &mut wide)
            });
            match (&result, second) {
                (Ok(expected), Ok(_)) => assert_eq!(
                    &resolved(&got, &mut wide, text),
                    expected,
                    "split at {split}"
                ),
                (Err(expected), Err(error)) => {
                    assert_eq!(expected.to_string(), error.to_string(), "split at {split}")
                }
                (expected, got) => panic!("split at {split}: {expected:?} vs {got:?}"),
            }
        }
        result
    }

    #[test]
    fn numbers_straddling_chunks_read_the_same() {
        let numbers = scan_split(b" 0, 12 ,4294967295\n,7 ]").unwrap();
        assert_eq!(numbers, [0, 12, u64::from(u32::MAX), 7]);
        assert_eq!(scan_split(b"]").unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn numbers_up_to_u64_max_are_read_exactly() {
        // Julia's node ids are addresses; JSON numbers above 2^53 are integers all the same.
        let text = b"4775375728,9007199254740993, 18446744073709551615,4294967294,4294967296]";
        let numbers = scan_split(text).unwrap();
        assert_eq!(
            numbers,
            [
                4_775_375_728,
                (1 << 53) + 1,
                u64::MAX,
                u64::from(u32::MAX) - 1,
                1 << 32
            ]
        );
    }

    #[test]
    fn fast_path_reads_every_length_and_separator() {
        let mut text = String::new();
        let mut expected = Vec::new();
        let mut value = 0u64;
        for round in 0..300u64 {
            value = (value * 31 + round * 7 + 3) % 10_000_000_000;
            let number = value >> (round % 34);
            let separator = ["\n,", ",", " , ", "\r\n,\t"][round as usize % 4];
            text.push_str(&number.to_string());
            text.push_str(separator);
            expected.push(number);
        }
        text.push_str("4294967295]");
        expected.push(u64::from(u32::MAX));
        let mut whole = Scanner::new("edges");
        let mut got = Vec::new();
        let mut wide = Wide::default();
        whole.scan(text.as_bytes(), 0, &mut got, &mut wide).unwrap();
        assert_eq!(resolved(&got, &mut wide, text.as_bytes()), expected);
        assert_eq!(scan_split(text.as_bytes()).unwrap(), expected);
    }

    #[test]
    fn prescan_reads_what_the_scanner_reads() {
        let mut text = String::from("[");
        for number in 0..2000u64 {
            let value = ((number * 2_654_435_761) % 4_294_967_296) >> (number % 32);
            text.push_str(&value.to_string());
            text.push_str(if number % 7 == 6 { "\n," } else { "," });
        }
        text.push_str("1]");
        let bytes = text.as_bytes();
        let mut scratch = Vec::new();
        for from in (0..bytes.len()).step_by(37) {
            let mut numbers = Vec::new();
            let Some((start, end)) = prescan(&bytes[from..], &mut numbers, &mut scratch) else {
                continue;
            };
            assert_eq!(bytes[from + start - 1], b',');
            let mut scanner = Scanner::new("edges");
            scanner.state = State::Value;
            let mut expected = Vec::new();
            let mut wide = Wide::default();
            let used = scanner
                .scan(
                    &bytes[from + start..from + end],
                    0,
                    &mut expected,
                    &mut wide,
                )
                .unwrap();
            assert!(wide.is_empty());
            assert_eq!(used, end - start);
            assert_eq!(scanner.state, State::Value);
            assert_eq!(numbers, expected, "from {from}");
        }
        // Nothing to pre-scan in text that is not numbers.
        let mut numbers = Vec::new();
        assert_eq!(
            prescan(
                br#""a","b","c","d","e","f","g","h","i""#,
                &mut numbers,
                &mut scratch
            ),
            None
        );
        assert_eq!(prescan(b"1,2,3", &mut numbers, &mut scratch), None);
    }

    #[test]
    fn rejects_what_is_not_an_unsigned_integer() {
        for (text, offset, fragment) in [
            (&b"1,18446744073709551616]"[..], 2, "20-digit number"),
            (b"1,99999999999999999999999]", 2, "23-digit"),
            (b"12345678,00000001]", 9, "leading zero"),
            (b"12345678,0001,1]", 9, "leading zero"),
            (b"1,-2]", 2, "negative"),
            (b"1.5]", 1, "fraction"),
            (b"1e5]", 1, "fraction"),
            (b"01]", 0, "leading zero"),
            (b"1,]", 2, "expected an unsigned integer"),
            (b"1 2]", 2, "expected `,` or `]`"),
            (b"\"a\"]", 0, "expected an unsigned integer"),
        ] {
            let error = scan_split(text).unwrap_err();
            match &error {
                ImportError::Malformed {
                    offset: got,
                    message,
                    ..
                } => {
                    assert_eq!(*got, offset, "{message}");
                    assert!(message.contains(fragment), "{message}");
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
