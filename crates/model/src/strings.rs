//! The string table: every name, type and label of a dump, stored once in one arena.

use crate::columns::EdgeOffsets;
use hashbrown::HashTable;
use rayon::prelude::*;
use rustc_hash::FxHasher;
use std::hash::Hasher;
use std::sync::OnceLock;

/// A string of a [`StringTable`]. Dense: ids run `0..table.len()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StringId(pub(crate) u32);

impl StringId {
    /// The id of the empty string, which every table holds first.
    pub const EMPTY: StringId = StringId(0);

    /// The position of this string in its table.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The raw value, for columnar storage (`.hgd`, analyzer slices).
    pub fn to_raw(self) -> u32 {
        self.0
    }
}

/// UTF-8 strings in one arena, some of them findable by their text.
///
/// Strings arrive two ways: [`StringTable::intern`] adds a *findable* string (one that
/// [`StringTable::find`] and later `intern`s see), and [`StringTable::push`] appends a string
/// without hashing it, for bulk imports whose strings are nearly all distinct and never looked
/// up by text; [`StringTable::make_findable`] promotes a pushed string afterwards.
///
/// The text can be parked ([`StringTable::park_text`]): compressed in blocks, each decoded
/// when a string in it is first read, and the whole made again by the first change.
///
/// Invariants: `ends` is monotone and `ends.len()` is the number of strings; string `i` is
/// `data[ends[i-1]..ends[i]]` (with `ends[-1] = 0`); string 0 is `""` and findable; `lookup`
/// holds the ids of the findable strings, and no text appears twice among findable strings
/// (a pushed string may repeat any text).
#[derive(Clone)]
pub struct StringTable {
    data: Text,
    /// End of each string in `data`: 4 bytes per string below 4 GiB of text.
    ends: EdgeOffsets,
    /// The ids of the findable strings, hashed by text.
    lookup: HashTable<u32>,
}

/// The text of a [`StringTable`].
#[derive(Clone)]
enum Text {
    Whole(String),
    Parked(ParkedText),
}

/// The text cut at string ends into blocks of about [`TEXT_BLOCK`] bytes (a longer string is a
/// block of its own), each compressed by zstd and decoded on its first read.
///
/// Invariants: `starts` ascends from 0, one per block, each the end of a string; block `b`
/// holds the text's bytes `starts[b]..starts[b + 1]` (the last, up to `len`).
#[derive(Clone)]
struct ParkedText {
    len: usize,
    starts: Vec<usize>,
    blocks: Vec<TextBlock>,
}

#[derive(Clone)]
struct TextBlock {
    compressed: Vec<u8>,
    len: usize,
    text: OnceLock<Box<str>>,
}

/// The text bytes of a parked block: a string read costs decoding at most this much, and a
/// reader of a few strings holds a block per string it reads.
const TEXT_BLOCK: usize = 64 << 10;

impl Text {
    /// The text, made whole where it was parked.
    fn whole(&mut self) -> &mut String {
        if let Text::Parked(parked) = self {
            let whole = std::mem::replace(parked, ParkedText::empty()).into_whole();
            *self = Text::Whole(whole);
        }
        match self {
            Text::Whole(text) => text,
            Text::Parked(_) => unreachable!("made whole above"),
        }
    }
}

impl ParkedText {
    fn empty() -> ParkedText {
        ParkedText {
            len: 0,
            starts: vec![0],
            blocks: Vec::new(),
        }
    }

    fn new(text: &str, ends: &EdgeOffsets) -> ParkedText {
        let mut starts = vec![0];
        for end in ends.iter() {
            let end = end as usize;
            if end - starts[starts.len() - 1] >= TEXT_BLOCK && end < text.len() {
                starts.push(end);
            }
        }
        let blocks = (0..starts.len())
            .into_par_iter()
            .map_init(
                || zstd::bulk::Compressor::new(1).ok(),
                |compressor, b| {
                    let end = starts.get(b + 1).copied().unwrap_or(text.len());
                    let bytes = &text.as_bytes()[starts[b]..end];
                    let compressed = compressor
                        .as_mut()
                        .and_then(|compressor| compressor.compress(bytes).ok());
                    match compressed {
                        Some(mut compressed) => {
                            compressed.shrink_to_fit();
                            TextBlock {
                                compressed,
                                len: bytes.len(),
                                text: OnceLock::new(),
                            }
                        }
                        // Kept decoded where it cannot be compressed.
                        None => TextBlock {
                            compressed: Vec::new(),
                            len: bytes.len(),
                            text: OnceLock::from(Box::from(&text[starts[b]..end])),
                        },
                    }
                },
            )
            .collect();
        ParkedText {
            len: text.len(),
            starts,
            blocks,
        }
    }

    /// The text's bytes `start..end`, which lie in one block (they are a string's).
    fn get(&self, start: usize, end: usize) -> &str {
        if start == end {
            return "";
        }
        let b = self
            .starts
            .partition_point(|&block_start| block_start <= start)
            - 1;
        let text = self.blocks[b].text();
        &text[start - self.starts[b]..end - self.starts[b]]
    }

    /// The text, each block decoded straight into its place (a block decoded apart first would
    /// leave its memory to the allocator beside the whole).
    fn into_whole(self) -> String {
        let mut whole = vec![0u8; self.len];
        let mut places = Vec::with_capacity(self.blocks.len());
        let mut rest = &mut whole[..];
        for block in &self.blocks {
            let (place, after) = rest.split_at_mut(block.len);
            places.push(place);
            rest = after;
        }
        self.blocks
            .par_iter()
            .zip(places)
            .for_each(|(block, place)| match block.text.get() {
                Some(text) => place.copy_from_slice(text.as_bytes()),
                None => {
                    let written = zstd::bulk::decompress_to_buffer(&block.compressed, place);
                    assert!(
                        written.is_ok_and(|written| written == place.len()),
                        "a parked block of text decodes as it was made"
                    );
                }
            });
        String::from_utf8(whole).expect("parked text is whole strings")
    }
}

impl TextBlock {
    /// The block's text, decoded on the first call.
    ///
    /// # Panics
    /// Never for a block [`ParkedText::new`] made: it decodes to the bytes it was made from, a
    /// run of whole strings.
    fn text(&self) -> &str {
        self.text.get_or_init(|| {
            let bytes = zstd::bulk::decompress(&self.compressed, self.len)
                .expect("a parked block of text decodes as it was made");
            String::from_utf8(bytes)
                .expect("a parked block of text is whole strings")
                .into_boxed_str()
        })
    }
}

impl Default for StringTable {
    fn default() -> Self {
        Self::new()
    }
}

fn hash_str(text: &str) -> u64 {
    let mut hasher = FxHasher::default();
    hasher.write(text.as_bytes());
    hasher.finish()
}

impl StringTable {
    /// Drops the resident pages of the text and its ends that are mapped from a file and were
    /// only read ([`crate::file_pages::forget_read_pages`]).
    pub(crate) fn forget_read_pages(&self) {
        if let Text::Whole(text) = &self.data {
            crate::file_pages::forget_read_pages(text.as_bytes());
        }
        crate::file_pages::forget_read_column_pages(&self.ends);
    }

    /// The table's text and string ends moved into scratch files (`HeapGraph::page_out_columns`);
    /// the strings are unchanged.
    pub(crate) fn page_out(&mut self) {
        let bytes = crate::file_pages::page_out(std::mem::take(self.whole_text()).into_bytes());
        // SAFETY: the bytes are the text's, moved or copied unchanged, so UTF-8.
        self.data = Text::Whole(unsafe { String::from_utf8_unchecked(bytes) });
        crate::file_pages::page_out_column(&mut self.ends);
    }

    /// A table that holds only the empty string.
    pub fn new() -> Self {
        let mut table = StringTable {
            data: Text::Whole(String::new()),
            ends: EdgeOffsets::new(),
            lookup: HashTable::new(),
        };
        table.intern("");
        table
    }

    /// A table with room for about `n_strings` strings of `n_bytes` bytes in all. The lookup of
    /// findable strings is not sized: it grows as strings are interned or made findable.
    pub fn with_capacity(n_strings: usize, n_bytes: usize) -> Self {
        let mut table = StringTable {
            data: Text::Whole(String::with_capacity(n_bytes)),
            ends: EdgeOffsets::with_capacity(n_strings.saturating_add(1)),
            lookup: HashTable::new(),
        };
        table.intern("");
        table
    }

    /// The number of strings, findable or not.
    #[inline]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Always false: the empty string is always there.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Total bytes of text held.
    pub fn text_bytes(&self) -> usize {
        match &self.data {
            Text::Whole(text) => text.len(),
            Text::Parked(parked) => parked.len,
        }
    }

    /// The text of `id`.
    ///
    /// Panics if `id` came from another table and is out of range here.
    #[inline]
    pub fn get(&self, id: StringId) -> &str {
        let end = self.ends.get(id.index()) as usize;
        let start = if id.0 == 0 {
            0
        } else {
            self.ends.get(id.index() - 1) as usize
        };
        match &self.data {
            Text::Whole(text) => &text[start..end],
            Text::Parked(parked) => parked.get(start, end),
        }
    }

    /// The id for `raw`, if it is in range.
    pub fn id_from_raw(&self, raw: u32) -> Option<StringId> {
        ((raw as usize) < self.ends.len()).then_some(StringId(raw))
    }

    /// Compresses the text in blocks (on every core), each decoded when a string in it is
    /// first read, until a change to the table makes the text whole again: where a few of
    /// many strings are read (a summary's labels), only their blocks are in memory. Parking
    /// parked text does nothing.
    pub fn park_text(&mut self) {
        if let Text::Whole(text) = &self.data {
            self.data = Text::Parked(ParkedText::new(text, &self.ends));
        }
    }

    /// Makes parked text whole again (on every core).
    pub fn unpark_text(&mut self) {
        self.data.whole();
    }

    /// The text, made whole where it was parked.
    fn whole_text(&mut self) -> &mut String {
        self.data.whole()
    }

    /// The findable id of `text`, adding it (findable) if no findable string has that text.
    pub fn intern(&mut self, text: &str) -> StringId {
        self.whole_text();
        let hash = hash_str(text);
        if let Some(found) = self.find_hashed(hash, text) {
            return found;
        }
        let new_id = self.push(text);
        self.insert_findable(hash, new_id);
        new_id
    }

    /// Appends `text` as a new string, without hashing it: the string is not findable (see
    /// [`StringTable::make_findable`]), and its text may repeat another string's.
    ///
    /// Panics past 2³² strings.
    pub fn push(&mut self, text: &str) -> StringId {
        let new_id = u32::try_from(self.ends.len()).expect("more than 4 billion strings");
        let data = self.whole_text();
        data.push_str(text);
        let end = data.len() as u64;
        self.ends.push(end);
        StringId(new_id)
    }

    /// Makes the text of `id` findable and returns its canonical id: the findable string with
    /// that text if there already is one (possibly `id` itself), otherwise `id`, which becomes
    /// findable.
    ///
    /// Panics if `id` came from another table and is out of range here.
    pub fn make_findable(&mut self, id: StringId) -> StringId {
        self.whole_text();
        let text = self.get(id);
        let hash = hash_str(text);
        if let Some(found) = self.find_hashed(hash, text) {
            return found;
        }
        self.insert_findable(hash, id);
        id
    }

    /// Makes the text of every id in `ids` findable and replaces each id by its canonical id
    /// (see [`StringTable::make_findable`]), so that equal texts in `ids` end up with equal ids.
    /// Ids are promoted in ascending order, so where `ids` holds several strings with one text
    /// and none was findable, the lowest id becomes canonical.
    ///
    /// For a column such as the node types: O(`ids.len()` + `self.len()` / 64) time, a bitset
    /// over the table, and one hash per distinct id.
    ///
    /// Panics if an id came from another table and is out of range here.
    pub fn make_findable_all(&mut self, ids: &mut [StringId]) {
        const WORD_BITS: usize = u64::BITS as usize;
        let mut marked = vec![0u64; self.len().div_ceil(WORD_BITS)];
        for id in ids.iter() {
            marked[id.index() / WORD_BITS] |= 1 << (id.index() % WORD_BITS);
        }
        // Ascending (id, canonical id) pairs where the two differ; the bitset is reused to mark
        // the ids to rewrite.
        let mut changes: Vec<(StringId, StringId)> = Vec::new();
        for (word_idx, marked_word) in marked.iter_mut().enumerate() {
            let mut word = *marked_word;
            let mut rewrite = 0u64;
            while word != 0 {
                let bit = word.trailing_zeros() as usize;
                word &= word - 1;
                let id = StringId((word_idx * WORD_BITS + bit) as u32);
                let canonical = self.make_findable(id);
                if canonical != id {
                    changes.push((id, canonical));
                    rewrite |= 1 << bit;
                }
            }
            *marked_word = rewrite;
        }
        if changes.is_empty() {
            return;
        }
        for id in ids.iter_mut() {
            if marked[id.index() / WORD_BITS] & (1 << (id.index() % WORD_BITS)) != 0 {
                let at = changes.partition_point(|&(from, _)| from < *id);
                *id = changes[at].1;
            }
        }
    }

    /// The findable string with text `text`, whose hash is `hash`.
    fn find_hashed(&self, hash: u64, text: &str) -> Option<StringId> {
        self.lookup
            .find(hash, |&idx| self.get(StringId(idx)) == text)
            .map(|&idx| StringId(idx))
    }

    /// Adds `id`, whose text hashes to `hash` and is not findable yet, to the lookup.
    fn insert_findable(&mut self, hash: u64, id: StringId) {
        let data = self.data.whole().as_str();
        let ends = &self.ends;
        self.lookup.insert_unique(hash, id.0, |&idx| {
            let idx = idx as usize;
            let end = ends.get(idx) as usize;
            let start = if idx == 0 {
                0
            } else {
                ends.get(idx - 1) as usize
            };
            hash_str(&data[start..end])
        });
    }

    /// The findable id of `text`, if some findable string has that text.
    pub fn find(&self, text: &str) -> Option<StringId> {
        self.find_hashed(hash_str(text), text)
    }

    /// All strings in id order.
    pub fn iter(&self) -> impl Iterator<Item = (StringId, &str)> + '_ {
        (0..self.ends.len() as u32).map(move |raw| (StringId(raw), self.get(StringId(raw))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parked_text_reads_back_and_a_change_makes_it_whole() {
        let mut table = StringTable::new();
        let texts: Vec<String> = (0..40_000)
            .map(|k| format!("größe {k} {}", "x".repeat(k % 97)))
            .collect();
        let ids: Vec<StringId> = texts.iter().map(|text| table.push(text)).collect();
        // Longer than a block: a block of its own.
        let long = "é".repeat(TEXT_BLOCK);
        let long_id = table.intern(&long);
        let found = table.intern("findable");
        let bytes = table.text_bytes();
        table.park_text();
        let Text::Parked(parked) = &table.data else {
            panic!("parked")
        };
        assert!(parked.blocks.len() > 20, "{} blocks", parked.blocks.len());
        let compressed: usize = parked.blocks.iter().map(|b| b.compressed.len()).sum();
        assert!(compressed < bytes / 4, "{compressed} of {bytes} bytes");
        assert_eq!(table.get(ids[31_000]), texts[31_000]);
        let decoded = parked
            .blocks
            .iter()
            .filter(|b| b.text.get().is_some())
            .count();
        assert_eq!(decoded, 1, "one block decoded for one string read");
        for (&id, text) in ids.iter().zip(&texts) {
            assert_eq!(table.get(id), text);
        }
        assert_eq!(table.get(long_id), long);
        assert_eq!(table.get(StringId::EMPTY), "");
        assert_eq!(table.find("findable"), Some(found));
        assert_eq!(table.text_bytes(), bytes);
        let clone = table.clone();
        let new = table.intern("new");
        assert!(matches!(table.data, Text::Whole(_)));
        assert_eq!(table.get(new), "new");
        assert_eq!(table.find("findable"), Some(found));
        for (&id, text) in ids.iter().zip(&texts) {
            assert_eq!(table.get(id), text);
            assert_eq!(clone.get(id), text);
        }
    }

    #[test]
    fn interning_dedupes_and_round_trips() {
        let mut table = StringTable::new();
        assert_eq!(table.intern(""), StringId::EMPTY);
        let a = table.intern("alpha");
        let b = table.intern("beta");
        assert_ne!(a, b);
        assert_eq!(table.intern("alpha"), a);
        assert_eq!(table.get(a), "alpha");
        assert_eq!(table.get(b), "beta");
        assert_eq!(table.find("beta"), Some(b));
        assert_eq!(table.find("gamma"), None);
        assert_eq!(table.len(), 3);
        let texts: Vec<&str> = table.iter().map(|(_, text)| text).collect();
        assert_eq!(texts, ["", "alpha", "beta"]);
    }

    #[test]
    fn pushed_strings_are_not_findable_until_made_so() {
        let mut table = StringTable::with_capacity(4, 16);
        let first = table.push("alpha");
        let second = table.push("alpha");
        assert_ne!(first, second);
        assert_eq!(table.get(second), "alpha");
        assert_eq!(table.find("alpha"), None);
        assert_eq!(table.make_findable(second), second);
        assert_eq!(table.make_findable(first), second);
        assert_eq!(table.make_findable(second), second);
        assert_eq!(table.find("alpha"), Some(second));
        assert_eq!(table.intern("alpha"), second);
        assert_eq!(table.len(), 3);
    }

    #[test]
    fn make_findable_defers_to_interned_text() {
        let mut table = StringTable::new();
        let pushed_empty = table.push("");
        assert_eq!(table.make_findable(pushed_empty), StringId::EMPTY);
        let interned = table.intern("(system)");
        let pushed = table.push("(system)");
        assert_eq!(table.make_findable(pushed), interned);
        let texts: Vec<&str> = table.iter().map(|(_, text)| text).collect();
        assert_eq!(texts, ["", "", "(system)", "(system)"]);
        assert_eq!(table.find(""), Some(StringId::EMPTY));
    }

    #[test]
    fn make_findable_all_gives_equal_texts_one_id() {
        let mut table = StringTable::new();
        let system = table.intern("(system)");
        let [a1, b, a2, pushed_system, a3] =
            ["A", "B", "A", "(system)", "A"].map(|text| table.push(text));
        let mut column = vec![a3, b, system, a2, pushed_system, a3, b];
        table.make_findable_all(&mut column);
        assert_eq!(column, [a2, b, system, a2, system, a2, b]);
        assert_eq!(table.find("A"), Some(a2));
        assert_eq!(table.find("B"), Some(b));
        assert_eq!(table.find("(system)"), Some(system));
        // `a1` was never in the column: still not findable, still its own string.
        assert_eq!(table.get(a1), "A");
        let mut again = vec![a1, a3];
        table.make_findable_all(&mut again);
        assert_eq!(again, [a2, a2]);
        let mut none: Vec<StringId> = Vec::new();
        table.make_findable_all(&mut none);
    }
}
