//! The string table: every name, type and label of a dump, stored once in one arena.

use hashbrown::HashTable;
use rustc_hash::FxHasher;
use std::hash::Hasher;

/// A string interned in a [`StringTable`]. Dense: ids run `0..table.len()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StringId(pub(crate) u32);

impl StringId {
    /// The id of the empty string, which every table holds first.
    pub const EMPTY: StringId = StringId(0);

    /// The position of this string in its table.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The raw value, for columnar storage (native format, analyzer slices).
    pub fn to_raw(self) -> u32 {
        self.0
    }
}

/// Interned UTF-8 strings in one arena.
///
/// Invariants: `ends` is monotone and `ends.len()` is the number of strings; string `i` is
/// `data[ends[i-1]..ends[i]]` (with `ends[-1] = 0`); string 0 is `""`; no text appears twice.
#[derive(Clone)]
pub struct StringTable {
    data: String,
    ends: Vec<u64>,
    lookup: HashTable<u32>,
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
    /// A table that holds only the empty string.
    pub fn new() -> Self {
        let mut table = StringTable {
            data: String::new(),
            ends: Vec::new(),
            lookup: HashTable::new(),
        };
        table.intern("");
        table
    }

    /// A table sized for about `n_strings` strings of `n_bytes` bytes in all.
    pub fn with_capacity(n_strings: usize, n_bytes: usize) -> Self {
        let mut table = StringTable {
            data: String::with_capacity(n_bytes),
            ends: Vec::with_capacity(n_strings + 1),
            lookup: HashTable::with_capacity(n_strings + 1),
        };
        table.intern("");
        table
    }

    /// The number of distinct strings.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Always false: the empty string is always there.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Total bytes of text held.
    pub fn text_bytes(&self) -> usize {
        self.data.len()
    }

    /// The text of `id`.
    ///
    /// Panics if `id` came from another table and is out of range here.
    pub fn get(&self, id: StringId) -> &str {
        let end = self.ends[id.index()] as usize;
        let start = if id.0 == 0 {
            0
        } else {
            self.ends[id.index() - 1] as usize
        };
        &self.data[start..end]
    }

    /// The id for `raw`, if it is in range.
    pub fn id_from_raw(&self, raw: u32) -> Option<StringId> {
        ((raw as usize) < self.ends.len()).then_some(StringId(raw))
    }

    /// The id of `text`, adding it if it is new.
    pub fn intern(&mut self, text: &str) -> StringId {
        let hash = hash_str(text);
        let data = &self.data;
        let ends = &self.ends;
        let text_of = |idx: u32| -> &str {
            let idx = idx as usize;
            let end = ends[idx] as usize;
            let start = if idx == 0 { 0 } else { ends[idx - 1] as usize };
            &data[start..end]
        };
        if let Some(&found) = self.lookup.find(hash, |&idx| text_of(idx) == text) {
            return StringId(found);
        }
        let new_id = u32::try_from(self.ends.len()).expect("more than 4 billion distinct strings");
        self.data.push_str(text);
        self.ends.push(self.data.len() as u64);
        let data = &self.data;
        let ends = &self.ends;
        self.lookup.insert_unique(hash, new_id, |&idx| {
            let idx = idx as usize;
            let end = ends[idx] as usize;
            let start = if idx == 0 { 0 } else { ends[idx - 1] as usize };
            hash_str(&data[start..end])
        });
        StringId(new_id)
    }

    /// The id of `text` if it is already interned.
    pub fn find(&self, text: &str) -> Option<StringId> {
        let hash = hash_str(text);
        self.lookup
            .find(hash, |&idx| self.get(StringId(idx)) == text)
            .map(|&idx| StringId(idx))
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
}
