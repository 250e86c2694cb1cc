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
                // The bulk of skipped sections (`locations`, `trace_tree`) is numbers.
                while i < rest.len() && matches!(rest[i], b'0'..=b'9' | b',' | b'\n' | b' ') {
                    i += 1;
                }
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

/// Whether `byte` can be part of a JSON number or literal (`true`, `false`, `null`).
fn is_scalar_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'+' | b'.')
}
