//! The generic JSON pieces of the importer: whitespace, string decoding (escapes, surrogates)
//! and a skipping scanner for sections that are not read.

use super::cursor::{BlockSource, Cursor};
use super::{malformed, truncated};
use crate::ImportError;

/// Whether `byte` is JSON whitespace.
pub(super) fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\r' | b'\t')
}

/// `byte` as error messages show it: the character in backquotes, or its hex value.
pub(super) fn describe_byte(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        format!("`{}`", byte as char)
    } else {
        format!("byte 0x{byte:02x}")
    }
}

/// Skips whitespace up to the next value and returns its offset.
///
/// # Errors
/// [`ImportError::Truncated`] naming `what` when the input ends first.
pub(super) fn start_of_value<'a, S: BlockSource<'a>>(
    cursor: &mut Cursor<'a, S>,
    what: &str,
) -> Result<u64, ImportError> {
    match cursor.skip_whitespace()? {
        Some(_) => Ok(cursor.offset()),
        None => Err(truncated(cursor.offset(), what)),
    }
}

/// The UTF-8 encoding of U+FFFD, which stands in for lone surrogates.
const REPLACEMENT: &[u8] = "\u{fffd}".as_bytes();

/// Reads the rest of a JSON string whose opening quote has been consumed, appending its
/// decoded bytes to `out` and consuming the closing quote.
///
/// Escapes are decoded; a `\u` surrogate pair becomes one character and a lone surrogate
/// becomes U+FFFD. Raw bytes are copied as they are (the caller decides what to do with
/// invalid UTF-8).
///
/// # Errors
/// [`ImportError::Malformed`] for an unknown escape or bad hex digits,
/// [`ImportError::Truncated`] naming `what` when the input ends inside the string.
pub(super) fn read_string_body<'a, S: BlockSource<'a>>(
    cursor: &mut Cursor<'a, S>,
    out: &mut Vec<u8>,
    what: &str,
) -> Result<(), ImportError> {
    // A high surrogate waiting for its low half.
    let mut pending_high: Option<u16> = None;
    loop {
        if !cursor.fill()? {
            return Err(truncated(cursor.offset(), what));
        }
        let rest = cursor.rest();
        let Some(special) = memchr::memchr2(b'"', b'\\', rest) else {
            flush_surrogate(&mut pending_high, out);
            out.extend_from_slice(rest);
            let n = rest.len();
            cursor.advance(n);
            continue;
        };
        if special > 0 {
            flush_surrogate(&mut pending_high, out);
            out.extend_from_slice(&rest[..special]);
        }
        let quote = rest[special] == b'"';
        cursor.advance(special + 1);
        if quote {
            flush_surrogate(&mut pending_high, out);
            return Ok(());
        }
        let escape_offset = cursor.offset() - 1;
        let Some(letter) = cursor.next_byte()? else {
            return Err(truncated(cursor.offset(), what));
        };
        let simple = match letter {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let unit = read_hex4(cursor, what)?;
                push_utf16_unit(unit, &mut pending_high, out);
                continue;
            }
            _ => {
                return Err(malformed(
                    escape_offset,
                    format!(
                        "unknown escape `\\{}` in a string",
                        char::from(letter).escape_default()
                    ),
                ));
            }
        };
        flush_surrogate(&mut pending_high, out);
        out.push(simple);
    }
}

/// Reads the four hex digits of a `\u` escape.
fn read_hex4<'a, S: BlockSource<'a>>(
    cursor: &mut Cursor<'a, S>,
    what: &str,
) -> Result<u16, ImportError> {
    let mut unit = 0u16;
    for _ in 0..4 {
        let Some(byte) = cursor.next_byte()? else {
            return Err(truncated(cursor.offset(), what));
        };
        let Some(digit) = char::from(byte).to_digit(16) else {
            return Err(malformed(
                cursor.offset() - 1,
                format!(
                    "expected a hex digit in a `\\u` escape, found {}",
                    describe_byte(byte)
                ),
            ));
        };
        unit = (unit << 4) | digit as u16;
    }
    Ok(unit)
}

/// Appends the character of UTF-16 code unit `unit`, pairing surrogates through
/// `pending_high`.
fn push_utf16_unit(unit: u16, pending_high: &mut Option<u16>, out: &mut Vec<u8>) {
    match unit {
        0xd800..=0xdbff => {
            flush_surrogate(pending_high, out);
            *pending_high = Some(unit);
        }
        0xdc00..=0xdfff => match pending_high.take() {
            Some(high) => {
                let code =
                    0x10000 + ((u32::from(high) - 0xd800) << 10) + (u32::from(unit) - 0xdc00);
                push_char(
                    char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER),
                    out,
                );
            }
            None => out.extend_from_slice(REPLACEMENT),
        },
        _ => {
            flush_surrogate(pending_high, out);
            push_char(
                char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER),
                out,
            );
        }
    }
}

/// Appends U+FFFD for a high surrogate that found no low half.
fn flush_surrogate(pending_high: &mut Option<u16>, out: &mut Vec<u8>) {
    if pending_high.take().is_some() {
        out.extend_from_slice(REPLACEMENT);
    }
}

/// Appends `character` as UTF-8.
fn push_char(character: char, out: &mut Vec<u8>) {
    let mut buffer = [0; 4];
    out.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
}

/// Skips one JSON value (after optional whitespace), checking only its coarse structure:
/// brackets balance, strings close, and nothing but JSON's characters appears between them.
/// With `capture`, the value's bytes are appended to the buffer, up to the given limit.
///
/// # Errors
/// [`ImportError::Malformed`] on unbalanced brackets, stray bytes or a value over the capture
/// limit; [`ImportError::Truncated`] naming `what` when the input ends inside the value.
pub(super) fn skip_value<'a, S: BlockSource<'a>>(
    cursor: &mut Cursor<'a, S>,
    mut capture: Option<(&mut Vec<u8>, usize)>,
    what: &str,
) -> Result<(), ImportError> {
    let Some(first) = cursor.skip_whitespace()? else {
        return Err(truncated(cursor.offset(), what));
    };
    let start = cursor.offset();
    let scalar = !matches!(first, b'{' | b'[' | b'"');
    if scalar && !is_scalar_byte(first) {
        return Err(malformed(
            cursor.offset(),
            format!("expected a JSON value, found {}", describe_byte(first)),
        ));
    }
    // Closing brackets still expected, innermost last.
    let mut closers: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let mut started = false;
    loop {
        if !cursor.fill()? {
            if scalar && started {
                return Ok(());
            }
            return Err(truncated(cursor.offset(), what));
        }
        let base = cursor.offset();
        let rest = cursor.rest();
        let mut i = 0;
        let mut done = false;
        while i < rest.len() {
            if in_string {
                if escaped {
                    escaped = false;
                    i += 1;
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', &rest[i..]) {
                    Some(found) => {
                        i += found;
                        if rest[i] == b'\\' {
                            escaped = true;
                        } else {
                            in_string = false;
                            if closers.is_empty() {
                                done = true;
                                i += 1;
                                break;
                            }
                        }
                        i += 1;
                    }
                    None => i = rest.len(),
                }
                continue;
            }
            if !scalar {
                i += plain_run(&rest[i..]);
            }
            let Some(&byte) = rest.get(i) else {
                break;
            };
            if scalar {
                if !is_scalar_byte(byte) {
                    done = true;
                    break;
                }
                started = true;
                i += 1;
                continue;
            }
            match byte {
                b'"' => in_string = true,
                b'{' => closers.push(b'}'),
                b'[' => closers.push(b']'),
                b'}' | b']' => {
                    if closers.pop() != Some(byte) {
                        return Err(malformed(
                            base + i as u64,
                            format!("unbalanced `{}` in {what}", byte as char),
                        ));
                    }
                    if closers.is_empty() {
                        done = true;
                        i += 1;
                        break;
                    }
                }
                b',' | b':' => {}
                _ if is_whitespace(byte) || is_scalar_byte(byte) => {}
                _ => {
                    return Err(malformed(
                        base + i as u64,
                        format!("unexpected {} in {what}", describe_byte(byte)),
                    ));
                }
            }
            i += 1;
        }
        if let Some((buffer, limit)) = capture.as_mut() {
            if buffer.len() + i > *limit {
                return Err(malformed(
                    start,
                    format!("{what} is longer than {limit} bytes"),
                ));
            }
            buffer.extend_from_slice(&rest[..i]);
        }
        cursor.advance(i);
        if done {
            return Ok(());
        }
    }
}

/// Whether `byte` is one of those that make up the bulk of skipped sections (`locations`,
/// `trace_tree`: numbers in lists): a digit, a comma, a newline or a space.
#[inline]
fn is_plain(byte: u8) -> bool {
    matches!(byte, b'0'..=b'9' | b',' | b'\n' | b' ')
}

/// The length of the run of [`is_plain`] bytes at the start of `bytes`, tested sixteen at a
/// time: `app-acorn`'s `locations` are 107 MB of a 645 MB snapshot, skipped on the reading
/// thread between the edges and the strings.
fn plain_run(bytes: &[u8]) -> usize {
    let mut at = 0;
    #[cfg(target_arch = "x86_64")]
    while let Some(block) = bytes.get(at..at + 16) {
        // SAFETY: SSE2 is part of every x86-64 processor; the test reads only `block`.
        let not_plain = unsafe { sse2::not_plain(block) };
        if not_plain != 0 {
            return at + not_plain.trailing_zeros() as usize;
        }
        at += 16;
    }
    at + bytes[at..]
        .iter()
        .take_while(|&&byte| is_plain(byte))
        .count()
}

/// [`plain_run`]'s test of sixteen bytes.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x,
        _mm_set1_epi8, _mm_sub_epi8,
    };

    /// A bit per byte of `block` (sixteen bytes), the first byte lowest, set where the byte is
    /// not [`super::is_plain`].
    #[inline]
    #[target_feature(enable = "sse2")]
    pub(super) fn not_plain(block: &[u8]) -> u32 {
        let half = |at: usize| {
            let mut word = [0; 8];
            word.copy_from_slice(&block[at..at + 8]);
            i64::from_le_bytes(word)
        };
        let bytes = _mm_set_epi64x(half(8), half(0));
        let equal = |byte: u8| _mm_cmpeq_epi8(bytes, _mm_set1_epi8(byte as i8));
        // A digit's value, unsigned, is at most 9; every other byte's is above.
        let values = _mm_sub_epi8(bytes, _mm_set1_epi8(b'0' as i8));
        let digits = _mm_cmpeq_epi8(_mm_min_epu8(values, _mm_set1_epi8(9)), values);
        let plain: __m128i = _mm_or_si128(
            _mm_or_si128(digits, equal(b',')),
            _mm_or_si128(equal(b'\n'), equal(b' ')),
        );
        !(_mm_movemask_epi8(plain) as u32) & 0xffff
    }
}

/// Whether `byte` can be part of a JSON number or literal (`true`, `false`, `null`).
fn is_scalar_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run found sixteen bytes at a time is the run found byte by byte, wherever it ends:
    /// every byte value at every position of inputs of every length up to 40.
    #[test]
    fn plain_runs_are_those_read_byte_by_byte() {
        let base: Vec<u8> = b"12,3456\n,7 89,0,1234567890,42,\n".repeat(2);
        for len in 0..=40 {
            let bytes = &base[..len];
            assert_eq!(plain_run(bytes), len, "{bytes:?}");
            for at in 0..len {
                for stop in 0..=255u8 {
                    let mut bytes = bytes.to_vec();
                    bytes[at] = stop;
                    let plainly = bytes.iter().take_while(|&&byte| is_plain(byte)).count();
                    assert_eq!(plain_run(&bytes), plainly, "{bytes:?}");
                }
            }
        }
    }
}
