//! The `strings` array: decoded on the parsing thread and appended to the string table on a
//! helper thread, so that the two halves of the work (unescaping, copying into the table)
//! overlap. V8's string `i` becomes the table's string `i + 1` ([`ID_OF_FIRST_STRING`]), so
//! that the nodes' and edges' names are our ids as they are read, before the strings are.
//!
//! The strings are pushed, not interned: V8 writes each text once, and only type names need to
//! be findable by text, which the assembly step arranges (`columns::summary_types`).

use super::cursor::{BlockSource, Cursor};
use super::json::{self, describe_byte};
use super::{malformed, truncated};
use crate::ImportError;
use heapgraph_model::StringTable;
use std::sync::mpsc::sync_channel;

/// Bytes of decoded text per batch handed to the helper thread: enough to make the hand-off
/// cost nothing, little enough to stay in L2.
const BATCH_BYTES: usize = 64 << 10;

/// Strings per batch at most, for arrays of many short strings.
const BATCH_STRINGS: usize = 4096;

/// Batches queued for the helper thread at most.
const BATCHES_IN_FLIGHT: usize = 8;

/// Strings the array may hold: string ids are `u32`, and the table also holds `""` and the
/// summary type names, at most one per node kind.
const MAX_STRINGS: u64 = u32::MAX as u64 - 512;

/// Bytes per distinct string to reserve, a little over what real snapshots average.
const AVERAGE_STRING_BYTES: usize = 16;

/// The raw id in our table of V8's string 0, and so of string `i`, `i` on from it: the table
/// holds its own `""` first ([`StringTable::with_capacity`]), then V8's strings, each pushed in
/// order (a push never merges texts).
pub(super) const ID_OF_FIRST_STRING: u32 = 1;

/// Our raw string id of V8's string `index` (wrapping past `u32::MAX`: the caller checks the
/// index against the strings' count).
#[inline]
pub(super) fn raw_id(index: u32) -> u32 {
    index.wrapping_add(ID_OF_FIRST_STRING)
}

/// V8's string index of our raw string id `raw_id` ([`raw_id`]'s inverse).
pub(super) fn v8_index(raw_id: u32) -> u32 {
    raw_id.wrapping_sub(ID_OF_FIRST_STRING)
}

/// The `strings` array as our string table.
pub(super) struct StringColumn {
    /// The strings, pushed in order after the table's own `""` (none of them findable).
    table: StringTable,
}

impl StringColumn {
    /// Reads the `strings` array at the cursor, sizing the table for `expected_strings`
    /// distinct strings.
    ///
    /// Text that is not UTF-8 is read lossily: odd text never fails an import.
    ///
    /// # Errors
    /// [`ImportError::Malformed`] when the array holds anything but strings or a string has
    /// a bad escape; [`ImportError::Truncated`] when the input ends first.
    pub(super) fn read<'a, S: BlockSource<'a>>(
        cursor: &mut Cursor<'a, S>,
        expected_strings: usize,
    ) -> Result<Self, ImportError> {
        match cursor.skip_whitespace()? {
            Some(b'[') => cursor.advance(1),
            Some(byte) => {
                return Err(malformed(
                    cursor.offset(),
                    format!(
                        "expected `[` to open `strings`, found {}",
                        describe_byte(byte)
                    ),
                ));
            }
            None => return Err(truncated(cursor.offset(), "the `strings` array")),
        }
        std::thread::scope(|scope| {
            let (sender, receiver) = sync_channel::<Batch>(BATCHES_IN_FLIGHT);
            let spawned = std::thread::Builder::new()
                .name("heapgraph-v8-strings".to_owned())
                .spawn_scoped(scope, move || {
                    let mut column = StringColumn::new(expected_strings);
                    for batch in receiver {
                        column.add(&batch);
                    }
                    column
                });
            match spawned {
                Ok(interner) => {
                    let decoded = decode(cursor, |batch| {
                        let full = std::mem::replace(batch, Batch::new());
                        // A closed channel means the helper panicked; the join says so.
                        let _ = sender.send(full);
                        Ok(())
                    });
                    drop(sender);
                    let column = match interner.join() {
                        Ok(column) => column,
                        Err(panic) => std::panic::resume_unwind(panic),
                    };
                    decoded.map(|()| column)
                }
                Err(_) => {
                    // No thread to be had: append here.
                    let mut column = StringColumn::new(expected_strings);
                    decode(cursor, |batch| {
                        column.add(batch);
                        batch.clear();
                        Ok(())
                    })?;
                    Ok(column)
                }
            }
        })
    }

    /// An empty column sized for `expected_strings` strings.
    fn new(expected_strings: usize) -> Self {
        let table = StringTable::with_capacity(
            expected_strings,
            expected_strings.saturating_mul(AVERAGE_STRING_BYTES),
        );
        debug_assert_eq!(table.len(), ID_OF_FIRST_STRING as usize);
        StringColumn { table }
    }

    /// Appends the strings of `batch`, in order.
    fn add(&mut self, batch: &Batch) {
        let mut start = 0;
        for &end in &batch.ends {
            let bytes = batch.text.get(start..end).unwrap_or_default();
            start = end;
            match std::str::from_utf8(bytes) {
                Ok(text) => self.table.push(text),
                Err(_) => self.table.push(&String::from_utf8_lossy(bytes)),
            };
        }
    }

    /// How many strings V8 wrote.
    pub(super) fn len(&self) -> usize {
        self.table.len() - ID_OF_FIRST_STRING as usize
    }

    /// The table, V8's string `i` at raw id `i + ID_OF_FIRST_STRING`.
    pub(super) fn into_table(self) -> StringTable {
        self.table
    }
}

/// Decoded strings on their way to the table: their bytes back to back, and where each
/// ends.
struct Batch {
    /// The decoded bytes (UTF-8 unless the input was not).
    text: Vec<u8>,
    /// The end of each string in `text`, in order.
    ends: Vec<usize>,
}

impl Batch {
    /// An empty batch.
    fn new() -> Self {
        Batch {
            text: Vec::with_capacity(BATCH_BYTES),
            ends: Vec::with_capacity(BATCH_STRINGS),
        }
    }

    /// Empties the batch, keeping its storage.
    fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    /// Whether the batch should go to the table now.
    fn is_full(&self) -> bool {
        self.text.len() >= BATCH_BYTES || self.ends.len() >= BATCH_STRINGS
    }
}

/// Decodes the strings of the array whose `[` has been consumed, handing them to `flush` in
/// batches (`flush` leaves the batch empty), through the closing `]`.
fn decode<'a, S: BlockSource<'a>>(
    cursor: &mut Cursor<'a, S>,
    mut flush: impl FnMut(&mut Batch) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut batch = Batch::new();
    let mut n_strings: u64 = 0;
    if cursor.skip_whitespace()? == Some(b']') {
        cursor.advance(1);
        return Ok(());
    }
    loop {
        match cursor.skip_whitespace()? {
            Some(b'"') => cursor.advance(1),
            Some(byte) => {
                return Err(malformed(
                    cursor.offset(),
                    format!(
                        "expected a string in `strings`, found {}",
                        describe_byte(byte)
                    ),
                ));
            }
            None => return Err(truncated(cursor.offset(), "the rest of `strings`")),
        }
        n_strings += 1;
        if n_strings > MAX_STRINGS {
            return Err(malformed(
                cursor.offset(),
                format!("`strings` holds more than {MAX_STRINGS} strings"),
            ));
        }
        json::read_string_body(cursor, &mut batch.text, "a string in `strings`")?;
        batch.ends.push(batch.text.len());
        if batch.is_full() {
            flush(&mut batch)?;
        }
        match cursor.skip_whitespace()? {
            Some(b',') => cursor.advance(1),
            Some(b']') => {
                cursor.advance(1);
                if !batch.ends.is_empty() {
                    flush(&mut batch)?;
                }
                return Ok(());
            }
            Some(byte) => {
                return Err(malformed(
                    cursor.offset(),
                    format!(
                        "expected `,` or `]` after a string in `strings`, found {}",
                        describe_byte(byte)
                    ),
                ));
            }
            None => return Err(truncated(cursor.offset(), "the rest of `strings`")),
        }
    }
}
