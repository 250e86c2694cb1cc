//! The V8 heap snapshot importer (`.heapsnapshot` from Node.js, Chrome DevTools, Electron,
//! Deno): streams the JSON without building a DOM and fills a [`HeapGraph`].
//!
//! The file is one JSON object whose bulk is two flat arrays of unsigned integers (`nodes`,
//! `edges`) and an array of strings; see `docs/formats.md` §1. The small `snapshot` header
//! is parsed with serde_json, the arrays with a hand-written scanner straight into columns,
//! and every other section is skipped. The node and edge layouts are read from
//! `snapshot.meta`, never assumed.
//!
//! Reading happens on the calling thread and parsing on a second one, connected by a channel
//! of pooled blocks, so decompression or copying overlaps the scan; when the parser falls
//! behind, the reader also pre-scans the numbers of the blocks it sends, and while `strings`
//! is read a third thread appends what the parser decodes to the string table.
//!
//! Submodules: `cursor` owns the blocks and the read position, `json` strings and skipping,
//! `numbers` the integer-array scanner (with `digits`, its word-at-a-time fast paths),
//! `header` the `snapshot` header, `strings` the string table (filled on a helper
//! thread), and `columns` the model's columns and the final checks.

mod columns;
mod cursor;
mod digits;
mod header;
mod json;
mod numbers;
mod strings;
#[cfg(test)]
mod tests;

use crate::{Format, ImportError};
use columns::{EdgeColumns, NodeColumns};
use cursor::{BlockSource, Cursor, ReadPlan};
use header::Layout;
use heapgraph_model::{HeapGraph, timed};
use std::io::BufRead;
use strings::StringColumn;

/// The format name in errors.
const FORMAT: Format = Format::V8HeapSnapshot;

/// The UTF-8 byte-order mark, which some tools put before the JSON.
const BOM: [u8; 3] = [0xef, 0xbb, 0xbf];

/// The tokens that open a V8 heap snapshot: `{"snapshot":{"meta":` (whitespace allowed between).
const OPENING_TOKENS: [&[u8]; 7] = [b"{", b"\"snapshot\"", b":", b"{", b"\"meta\"", b":", b""];

/// Whether `prefix` starts a V8 heap snapshot: `{"snapshot":{"meta":` after an optional BOM,
/// with optional whitespace before and between the tokens.
///
/// Returns `None` when `prefix` is too short to tell.
pub fn sniff(prefix: &[u8]) -> Option<bool> {
    let mut rest = prefix;
    let bom_len = rest.len().min(BOM.len());
    if rest[..bom_len] == BOM[..bom_len] && bom_len > 0 {
        if bom_len < BOM.len() {
            return None;
        }
        rest = &rest[BOM.len()..];
    }
    for token in OPENING_TOKENS {
        let start = rest
            .iter()
            .position(|&byte| !json::is_whitespace(byte))
            .unwrap_or(rest.len());
        rest = &rest[start..];
        if token.is_empty() {
            return Some(true);
        }
        let compared = rest.len().min(token.len());
        if rest[..compared] != token[..compared] {
            return Some(false);
        }
        if compared < token.len() {
            return None;
        }
        rest = &rest[token.len()..];
    }
    Some(true)
}

/// Settings of the V8 importer (none yet).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Options {}

/// Reads a V8 heap snapshot from `reader` into a [`HeapGraph`].
///
/// Node kinds are the snapshot's `node_types`; a node's type (what summaries group by) is
/// DevTools' "class name": the node's name for `object` and `native` nodes, `(system)` for
/// `hidden`, `(compiled code)` for `code`, and `(T)` for every other type `T`. A node whose
/// type number `node_types` does not list (V8 6.x wrote symbols so) is of a kind of its own,
/// `undefined`, with the type `(undefined)` as DevTools names it, and a note counts such
/// nodes. Ids and self sizes may be any integer up to `u64::MAX` (Julia writes addresses as
/// ids). Edge names of `element` and `hidden` edges are indices, all others strings. The root
/// is node 0 (or `snapshot.root_index` where the header has one).
///
/// # Errors
/// [`ImportError::Malformed`] with a byte offset when the text is not a well-formed snapshot,
/// [`ImportError::Truncated`] when it ends early, [`ImportError::Inconsistent`] when the
/// header's counts disagree with the arrays, and [`ImportError::Io`] when reading fails.
pub fn import<R: BufRead>(reader: R, options: &Options) -> Result<HeapGraph, ImportError> {
    import_with(reader, options, Reading::Pipelined(ReadPlan::DEFAULT))
}

/// [`import`] of a mapped file: each block the parser reads is a stretch of the map, never
/// copied, and the pages of the stretches it is done with are handed back.
///
/// # Errors
/// As [`import`].
pub(crate) fn import_mapped(
    map: &memmap2::Mmap,
    _options: &Options,
) -> Result<HeapGraph, ImportError> {
    import_in_memory(cursor::InMemory::mapped(map), ReadPlan::DEFAULT)
}

/// Parses `input` on a second thread, its blocks cut as `plan` says.
fn import_in_memory(input: cursor::InMemory<'_>, plan: ReadPlan) -> Result<HeapGraph, ImportError> {
    cursor::pipelined(input, plan, |source| parse(Cursor::new(source)))
}

/// How the bytes get from the reader to the parser.
#[derive(Clone, Copy, Debug)]
enum Reading {
    /// A second thread parses while the calling thread reads (and pre-scans).
    Pipelined(ReadPlan),
    /// The calling thread reads and parses in turn (tests use it with tiny blocks).
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "only tests read without a thread")
    )]
    Direct(ReadPlan),
}

/// [`import`] with an explicit way of reading.
fn import_with<R: BufRead>(
    reader: R,
    _options: &Options,
    reading: Reading,
) -> Result<HeapGraph, ImportError> {
    match reading {
        Reading::Pipelined(plan) => cursor::pipelined(cursor::Reading(reader), plan, |source| {
            parse(Cursor::new(source))
        }),
        Reading::Direct(plan) => parse(Cursor::new(cursor::DirectSource::new(reader, plan))),
    }
}

/// A `nodes` or `edges` array as read: already in columns when the header came first, else
/// kept flat until it arrives.
enum NumberSection<C> {
    /// Decoded into the model's columns.
    Columns(C),
    /// The raw integers, to be decoded once the layout is known, with the wide numbers their
    /// [`numbers::WIDE`]s stand for.
    Flat(Vec<u32>, numbers::Wide),
}

/// What has been read of the top-level object so far.
#[derive(Default)]
struct Sections {
    /// The layout from `snapshot`.
    layout: Option<Layout>,
    /// `nodes`, with the offset of its `[`.
    nodes: Option<(u64, NumberSection<NodeColumns>)>,
    /// `edges`, with the offset of its `[`.
    edges: Option<(u64, NumberSection<EdgeColumns>)>,
    /// `strings`.
    strings: Option<StringColumn>,
}

/// The top-level keys the importer reads; any other key is skipped.
const KNOWN_KEYS: [&[u8]; 4] = [b"snapshot", b"nodes", b"edges", b"strings"];

/// Parses a whole snapshot from `cursor`.
fn parse<'a, S: BlockSource<'a>>(mut cursor: Cursor<'a, S>) -> Result<HeapGraph, ImportError> {
    skip_bom(&mut cursor)?;
    match cursor.skip_whitespace()? {
        Some(b'{') => cursor.advance(1),
        Some(byte) => {
            return Err(malformed(
                cursor.offset(),
                format!(
                    "expected `{{` to open the snapshot, found {}",
                    json::describe_byte(byte)
                ),
            ));
        }
        None => return Err(truncated(cursor.offset(), "the snapshot's opening `{`")),
    }
    let mut sections = Sections::default();
    let mut seen_keys = [false; KNOWN_KEYS.len()];
    let mut key = Vec::new();
    let mut first = true;
    loop {
        let key_offset = cursor.offset();
        match cursor.skip_whitespace()? {
            Some(b'}') if first => {
                cursor.advance(1);
                break;
            }
            Some(b'"') => cursor.advance(1),
            Some(byte) => {
                return Err(malformed(
                    cursor.offset(),
                    format!(
                        "expected a key of the snapshot object, found {}",
                        json::describe_byte(byte)
                    ),
                ));
            }
            None => return Err(truncated(cursor.offset(), rest_of_object(&seen_keys))),
        }
        first = false;
        key.clear();
        json::read_string_body(&mut cursor, &mut key, "a key of the snapshot object")?;
        if let Some(known) = KNOWN_KEYS.iter().position(|&name| name == key.as_slice())
            && std::mem::replace(&mut seen_keys[known], true)
        {
            return Err(malformed(
                key_offset,
                format!("the key `{}` appears twice", String::from_utf8_lossy(&key)),
            ));
        }
        match cursor.skip_whitespace()? {
            Some(b':') => cursor.advance(1),
            Some(byte) => {
                return Err(malformed(
                    cursor.offset(),
                    format!(
                        "expected `:` after a key, found {}",
                        json::describe_byte(byte)
                    ),
                ));
            }
            None => return Err(truncated(cursor.offset(), "the `:` after a key")),
        }
        read_section(&mut cursor, &key, &mut sections)?;
        match cursor.skip_whitespace()? {
            Some(b',') => cursor.advance(1),
            Some(b'}') => {
                cursor.advance(1);
                break;
            }
            Some(byte) => {
                return Err(malformed(
                    cursor.offset(),
                    format!(
                        "expected `,` or `}}` after a section of the snapshot, found {}",
                        json::describe_byte(byte)
                    ),
                ));
            }
            None => return Err(truncated(cursor.offset(), rest_of_object(&seen_keys))),
        }
    }
    let end_offset = cursor.offset();
    if let Some(byte) = cursor.skip_whitespace()? {
        return Err(malformed(
            cursor.offset(),
            format!(
                "unexpected {} after the end of the snapshot object",
                json::describe_byte(byte)
            ),
        ));
    }
    timed("v8: columns assembled", || {
        columns::assemble(sections, end_offset)
    })
}

/// What a snapshot cut short between sections still lacks, for a truncation error.
fn rest_of_object(seen_keys: &[bool; KNOWN_KEYS.len()]) -> String {
    let missing: Vec<String> = KNOWN_KEYS
        .iter()
        .zip(seen_keys)
        .filter(|(_, seen)| !**seen)
        .map(|(key, _)| format!("`{}`", String::from_utf8_lossy(key)))
        .collect();
    if missing.is_empty() {
        "the end of the snapshot object".to_owned()
    } else {
        format!(
            "the rest of the snapshot object ({} not read yet)",
            missing.join(", ")
        )
    }
}

/// Skips a UTF-8 byte-order mark at the start of the input.
fn skip_bom<'a, S: BlockSource<'a>>(cursor: &mut Cursor<'a, S>) -> Result<(), ImportError> {
    if cursor.peek()? != Some(BOM[0]) {
        return Ok(());
    }
    for expected in BOM {
        match cursor.next_byte()? {
            Some(byte) if byte == expected => {}
            Some(byte) => {
                return Err(malformed(
                    cursor.offset() - 1,
                    format!(
                        "expected a UTF-8 byte-order mark or `{{`, found {}",
                        json::describe_byte(byte)
                    ),
                ));
            }
            None => return Err(truncated(cursor.offset(), "the byte-order mark")),
        }
    }
    Ok(())
}

/// Reads the value of top-level key `key` into `sections`, or skips it.
fn read_section<'a, S: BlockSource<'a>>(
    cursor: &mut Cursor<'a, S>,
    key: &[u8],
    sections: &mut Sections,
) -> Result<(), ImportError> {
    match key {
        b"snapshot" => {
            let offset = json::start_of_value(cursor, "the `snapshot` header")?;
            let mut text = Vec::new();
            json::skip_value(
                cursor,
                Some((&mut text, header::MAX_HEADER_BYTES)),
                "the `snapshot` header",
            )?;
            let layout = Layout::parse(&text, offset)?;
            sections.layout = Some(layout);
        }
        b"nodes" => {
            let offset = json::start_of_value(cursor, "the `nodes` array")?;
            let section = match &sections.layout {
                Some(layout) => {
                    let mut nodes = NodeColumns::new(layout);
                    timed("v8: nodes", || {
                        numbers::read_array(cursor, "nodes", layout.node_fields, |records, wide| {
                            nodes.push(layout, records, wide, offset)
                        })
                    })?;
                    NumberSection::Columns(nodes)
                }
                None => {
                    let (values, wide) = numbers::read_flat_array(cursor, "nodes")?;
                    NumberSection::Flat(values, wide)
                }
            };
            sections.nodes = Some((offset, section));
        }
        b"edges" => {
            let offset = json::start_of_value(cursor, "the `edges` array")?;
            let section = match &sections.layout {
                Some(layout) => {
                    let mut edges = EdgeColumns::new(layout);
                    timed("v8: edges", || {
                        numbers::read_array(cursor, "edges", layout.edge_fields, |records, wide| {
                            edges.push(layout, records, wide, offset)
                        })
                    })?;
                    NumberSection::Columns(edges)
                }
                None => {
                    let (values, wide) = numbers::read_flat_array(cursor, "edges")?;
                    NumberSection::Flat(values, wide)
                }
            };
            sections.edges = Some((offset, section));
        }
        b"strings" => {
            json::start_of_value(cursor, "the `strings` array")?;
            let expected_strings = expected_strings(sections, cursor.offset());
            sections.strings = Some(timed("v8: strings", || {
                StringColumn::read(cursor, expected_strings)
            })?);
        }
        _ => {
            let what = format!("the `{}` section", String::from_utf8_lossy(key));
            json::skip_value(cursor, None, &what)?;
        }
    }
    Ok(())
}

/// How many distinct strings to size the string table for, once `offset` bytes are read.
///
/// Sizing up front saves copying the strings and their ends as the table grows. Nodes and edges (read before `strings` in real files) name nearly every
/// string, so the largest index they use is a close estimate; without them, a third of the
/// header's node count is typical. Either is bounded by the bytes already read, so that a
/// lying file sizes nothing (a string takes more than 8 bytes on average in any real file).
fn expected_strings(sections: &Sections, offset: u64) -> usize {
    let from_nodes = match &sections.nodes {
        Some((_, NumberSection::Columns(nodes))) => Some(nodes.strings_named()),
        _ => None,
    };
    let from_edges = match &sections.edges {
        Some((_, NumberSection::Columns(edges))) => Some(edges.strings_named()),
        _ => None,
    };
    let estimate = match (from_nodes, from_edges, &sections.layout) {
        (None, None, None) => 0,
        (None, None, Some(layout)) => layout.node_count / 3,
        (nodes, edges, _) => u64::from(nodes.unwrap_or(0).max(edges.unwrap_or(0))),
    };
    usize::try_from(estimate.min(offset / 8)).unwrap_or(0)
}

/// A [`ImportError::Malformed`] of this format.
fn malformed(offset: u64, message: impl Into<String>) -> ImportError {
    ImportError::malformed(FORMAT, offset, message)
}

/// A [`ImportError::Truncated`] of this format.
fn truncated(offset: u64, expected: impl Into<String>) -> ImportError {
    ImportError::truncated(FORMAT, offset, expected)
}

/// An [`ImportError::Inconsistent`] of this format.
fn inconsistent(message: impl Into<String>) -> ImportError {
    ImportError::inconsistent(FORMAT, message)
}
