//! Columns compressed in memory for as long as no pass reads them: what a graph holds beside a
//! pass that needs its memory (the dominator pass of a dump near the machine's size) and reads
//! only some of its columns.
//!
//! A column is parked as its image ([`Imaged`]): each of its vectors cut into blocks of
//! [`BLOCK`] bytes, each block compressed by zstd on its own, on every core. Unparking makes the
//! column again from its image, every invariant checked as when a file is read, each vector
//! decompressed into its final buffer. The columns of heap graphs compress well (docs/
//! performance.md: on the 2.5 GB benchmark dump, edge names 30 times, object ids 3 times,
//! labels 1.4 times).

use crate::image::{
    ImageSource, Imaged, ONLY, Plain, as_bytes, as_bytes_mut, scalar_named, zeroed,
};
use rayon::prelude::*;

/// The bytes of a vector compressed as one block: large enough for zstd's ratio, small enough
/// that a vector of a few MiB spreads over the cores.
const BLOCK: usize = 1 << 20;

/// The bytes of a block of a column parked to be read a value at a time
/// ([`Parked::park_for_reads`]): a read decodes this much (about a hundred microseconds, a
/// summary's few hundred reads a few milliseconds), a quarter of a block of [`BLOCK`]. Blocks
/// of 64 KiB compressed the 2.5 GB benchmark dump's object ids to 11 MiB more than these.
const READ_BLOCK: usize = 256 << 10;

/// zstd's fastest level but one: on the columns measured, level 1 gives the ratio of level 3
/// at up to twice its speed.
const LEVEL: i32 = 1;

/// A column compressed in memory ([`Parked::park`]) until [`Parked::unpark`] gives it back.
pub struct Parked<C> {
    repr: &'static str,
    scalars: Vec<(&'static str, u64)>,
    parts: Vec<ParkedPart>,
    /// The bytes of each block but the last of a part.
    block: usize,
    column: std::marker::PhantomData<C>,
}

/// One vector of a parked column.
struct ParkedPart {
    name: &'static str,
    width: usize,
    bytes: usize,
    /// Its blocks, in order, each as zstd compressed it or, where that is no shorter, as it
    /// is; `None` once taken.
    blocks: Option<Vec<Block>>,
    /// The compressed block a read decoded last (its number and bytes): reads that go in
    /// order, or stay in a few places, decode each block once.
    last_read: std::sync::Mutex<Option<(usize, Vec<u8>)>>,
}

#[derive(Clone)]
enum Block {
    Compressed(Vec<u8>),
    Raw(Vec<u8>),
}

impl<C: Imaged> Parked<C> {
    /// `column`, compressed; its memory is freed.
    pub fn park(column: C) -> Parked<C> {
        Self::park_in_blocks(column, BLOCK)
    }

    /// `column`, compressed in blocks small enough to be decoded for one value
    /// ([`Parked::value`]): for a column that a few reads want while it is parked.
    pub fn park_for_reads(column: C) -> Parked<C> {
        Self::park_in_blocks(column, READ_BLOCK)
    }

    fn park_in_blocks(column: C, block: usize) -> Parked<C> {
        let image = column.image();
        let parts = image
            .parts
            .iter()
            .map(|&(name, values)| {
                let bytes = values.bytes();
                let blocks = bytes
                    .par_chunks(block)
                    .map_init(|| zstd::bulk::Compressor::new(LEVEL).ok(), compressed)
                    .collect();
                ParkedPart {
                    name,
                    width: values.width(),
                    bytes: bytes.len(),
                    blocks: Some(blocks),
                    last_read: std::sync::Mutex::new(None),
                }
            })
            .collect();
        Parked {
            repr: image.repr,
            scalars: image.scalars,
            parts,
            block,
            column: std::marker::PhantomData,
        }
    }

    /// The bytes the column takes while parked.
    pub fn parked_bytes(&self) -> usize {
        let blocks = self
            .parts
            .iter()
            .flat_map(|part| part.blocks.iter().flatten());
        blocks
            .map(|block| match block {
                Block::Compressed(bytes) | Block::Raw(bytes) => bytes.len(),
            })
            .sum()
    }

    /// Value `index` of the vector `name`, decoded with its block (the last block decoded is
    /// kept, one per vector); `None` where there is no such vector of `T`s or no such value.
    ///
    /// # Panics
    /// Never for a column parked by [`Parked::park`] or [`Parked::park_for_reads`]: its blocks
    /// decompress to the bytes they were made from.
    pub fn value<T: Plain>(&self, name: &str, index: usize) -> Option<T> {
        self.in_block::<T, _>(name, index, |bytes, at| {
            T::from_le(&bytes[at..at + T::WIDTH])
        })
    }

    /// `read` of the bytes of the block that holds value `index` of the vector `name` of
    /// `T`s, decoded (or kept from the read before), and of where the value starts in them;
    /// `None` where there is no such vector or value.
    ///
    /// # Panics
    /// As [`Parked::value`].
    pub(crate) fn in_block<T: Plain, R>(
        &self,
        name: &str,
        index: usize,
        read: impl FnOnce(&[u8], usize) -> R,
    ) -> Option<R> {
        let part = self
            .parts
            .iter()
            .find(|part| part.name == name && part.width == T::WIDTH)?;
        let at = index.checked_mul(T::WIDTH)?;
        if at >= part.bytes {
            return None;
        }
        let (block, within) = (at / self.block, at % self.block);
        match part.blocks.as_ref()?.get(block)? {
            Block::Raw(raw) => Some(read(raw, within)),
            Block::Compressed(compressed) => {
                let mut last =
                    (part.last_read.lock()).unwrap_or_else(std::sync::PoisonError::into_inner);
                if last.as_ref().is_none_or(|&(decoded, _)| decoded != block) {
                    let bytes_in_block = self.block.min(part.bytes - block * self.block);
                    let raw = zstd::bulk::decompress(compressed, bytes_in_block)
                        .expect("a parked block decodes as it was made");
                    *last = Some((block, raw));
                }
                last.as_ref().map(|(_, raw)| read(raw, within))
            }
        }
    }

    /// How many `T`s the vector `name` holds (0 where there is no such vector of `T`s).
    pub fn len_of<T: Plain>(&self, name: &str) -> usize {
        self.parts
            .iter()
            .find(|part| part.name == name && part.width == T::WIDTH)
            .map_or(0, |part| part.bytes / T::WIDTH)
    }

    /// The column parked, as it was.
    ///
    /// # Panics
    /// Never for a column parked by [`Parked::park`]: its blocks decompress to the bytes they
    /// were made from, which make the column they came from.
    pub fn unpark(mut self) -> C {
        C::from_image(&mut self)
            .unwrap_or_else(|error| panic!("a parked column reads back as it was parked: {error}"))
    }

    /// The column parked, decoded as [`Parked::unpark`] gives it, while it stays parked.
    ///
    /// # Panics
    /// As [`Parked::unpark`].
    pub fn unparked_copy(&self) -> C {
        let parts = (self.parts.iter())
            .map(|part| ParkedPart {
                name: part.name,
                width: part.width,
                bytes: part.bytes,
                blocks: part.blocks.clone(),
                last_read: std::sync::Mutex::new(None),
            })
            .collect();
        let copy: Parked<C> = Parked {
            repr: self.repr,
            scalars: self.scalars.clone(),
            parts,
            block: self.block,
            column: std::marker::PhantomData,
        };
        copy.unpark()
    }
}

/// Blocks compressed from the back of a vector being parked between two shrinks of it: 4 MiB
/// of [`READ_BLOCK`]s, a few hundred `mremap` calls on a column of 1 GiB.
const SHRINK_EVERY: usize = 16;

/// The cores a column parks on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cores {
    /// The calling thread's: for a column parked beside other work.
    One,
    /// Rayon's, for a caller that waits for the column.
    Every,
}

impl Parked<Vec<u32>> {
    /// `values` parked as [`Parked::park_for_reads`] parks them, from the back: the vector
    /// shrinks as its blocks are made, so that it and its blocks are never both held whole
    /// (where the allocator shrinks a large block in place, as the binary's and glibc's do
    /// with `mremap`, the memory goes back to the kernel as it goes).
    pub fn park_for_reads_from_the_back(mut values: Vec<u32>, cores: Cores) -> Parked<Vec<u32>> {
        let per_block = READ_BLOCK / std::mem::size_of::<u32>();
        let n_values = values.len();
        let n_blocks = n_values.div_ceil(per_block);
        let mut blocks = Vec::with_capacity(n_blocks);
        let mut compressor = zstd::bulk::Compressor::new(LEVEL).ok();
        let mut end = n_blocks;
        while end > 0 {
            let start = end.saturating_sub(SHRINK_EVERY);
            let block_of = |compressor: &mut Option<zstd::bulk::Compressor<'static>>, b: usize| {
                let values = &values[b * per_block..((b + 1) * per_block).min(n_values)];
                compressed(compressor, as_bytes(values))
            };
            match cores {
                Cores::One => {
                    blocks.extend((start..end).rev().map(|b| block_of(&mut compressor, b)));
                }
                Cores::Every => {
                    let group: Vec<Block> = (start..end)
                        .into_par_iter()
                        .map_init(|| zstd::bulk::Compressor::new(LEVEL).ok(), block_of)
                        .collect();
                    blocks.extend(group.into_iter().rev());
                }
            }
            values.truncate(start * per_block);
            values.shrink_to_fit();
            end = start;
        }
        blocks.reverse();
        Parked {
            repr: ONLY,
            scalars: Vec::new(),
            parts: vec![ParkedPart {
                name: "values",
                width: std::mem::size_of::<u32>(),
                bytes: n_values * std::mem::size_of::<u32>(),
                blocks: Some(blocks),
                last_read: std::sync::Mutex::new(None),
            }],
            block: READ_BLOCK,
            column: std::marker::PhantomData,
        }
    }
}

impl Parked<Vec<u32>> {
    /// A reader of runs of the values, each run decoded with the blocks it spans into a window
    /// of the reader's own: for threads that each read a part of the column in order (the
    /// dominator pass's fill of its predecessor lists from the edges' targets, parked before
    /// it), where [`Parked::value`]'s one shared block would be decoded again at every turn.
    pub fn in_order(&self) -> InOrder<'_> {
        let part = (self.parts.iter()).find(|part| part.width == std::mem::size_of::<u32>());
        InOrder {
            blocks: part.and_then(|part| part.blocks.as_deref()).unwrap_or(&[]),
            n_values: part.map_or(0, |part| part.bytes / std::mem::size_of::<u32>()),
            per_block: self.block / std::mem::size_of::<u32>(),
            window: Vec::new(),
            window_start: 0,
            next_block: 0,
            decompressor: zstd::bulk::Decompressor::new().ok(),
        }
    }
}

/// Runs of a parked vector of `u32`s ([`Parked::in_order`]), read in order of index: the
/// blocks a run spans are decoded into a window, which keeps the values from the run's start
/// on, so that runs that follow one another decode each block once. A run anywhere else is
/// read too, its blocks decoded again.
pub struct InOrder<'a> {
    blocks: &'a [Block],
    n_values: usize,
    per_block: usize,
    /// Values `window_start..` of the vector, up to the start of block `next_block`.
    window: Vec<u32>,
    window_start: usize,
    next_block: usize,
    decompressor: Option<zstd::bulk::Decompressor<'static>>,
}

impl InOrder<'_> {
    /// The values `range`.
    ///
    /// # Panics
    /// Where `range` reaches past the vector's end; never where it does not, for a vector
    /// parked by [`Parked::park_for_reads_from_the_back`] (its blocks decode as they were made).
    pub fn run(&mut self, range: std::ops::Range<usize>) -> &[u32] {
        assert!(
            range.end <= self.n_values,
            "values {range:?} of a parked vector of {}",
            self.n_values
        );
        if range.is_empty() {
            return &[];
        }
        if range.start < self.window_start || range.start > self.window_start + self.window.len() {
            let block = range.start / self.per_block;
            self.window.clear();
            self.window_start = block * self.per_block;
            self.next_block = block;
        }
        if range.end > self.window_start + self.window.len() {
            // Nothing before the run is read again.
            let read = (range.start - self.window_start).min(self.window.len());
            self.window.drain(..read);
            self.window_start += read;
            while self.window_start + self.window.len() < range.end {
                self.decode_next_block();
            }
        }
        &self.window[range.start - self.window_start..range.end - self.window_start]
    }

    fn decode_next_block(&mut self) {
        let first = self.next_block * self.per_block;
        let n = self.per_block.min(self.n_values - first);
        let at = self.window.len();
        self.window.resize(at + n, 0);
        let into = as_bytes_mut(&mut self.window[at..]);
        match &self.blocks[self.next_block] {
            Block::Raw(raw) => into.copy_from_slice(raw),
            Block::Compressed(compressed) => {
                let bytes = into.len();
                let decoded = match self.decompressor.as_mut() {
                    Some(decompressor) => decompressor.decompress_to_buffer(compressed, into),
                    None => zstd::bulk::decompress_to_buffer(compressed, into),
                };
                assert!(
                    decoded.is_ok_and(|decoded| decoded == bytes),
                    "a parked block decodes as it was made"
                );
            }
        }
        self.next_block += 1;
    }
}

/// `raw` as a parked block: compressed where zstd makes it shorter, as it is otherwise.
fn compressed(compressor: &mut Option<zstd::bulk::Compressor<'static>>, raw: &[u8]) -> Block {
    let compressed = (compressor.as_mut()).and_then(|compressor| compressor.compress(raw).ok());
    match compressed {
        // zstd leaves room for the worst case: handed back.
        Some(mut compressed) if compressed.len() < raw.len() => {
            compressed.shrink_to_fit();
            Block::Compressed(compressed)
        }
        _ => Block::Raw(raw.to_vec()),
    }
}

impl<C> ImageSource for Parked<C> {
    fn repr(&self) -> &str {
        self.repr
    }

    fn scalar(&self, name: &str) -> Result<u64, String> {
        scalar_named(&self.scalars, name)
    }

    fn take<T: Plain>(&mut self, name: &str) -> Result<Vec<T>, String> {
        let part = self
            .parts
            .iter_mut()
            .find(|part| part.name == name)
            .ok_or_else(|| format!("no vector {name:?}"))?;
        *part
            .last_read
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        let blocks = match part.blocks.take() {
            Some(blocks) if part.width == T::WIDTH => blocks,
            _ => return Err(format!("the vector {name:?} is not there to take")),
        };
        let mut values = zeroed::<T>(part.bytes / T::WIDTH);
        as_bytes_mut(&mut values)
            .par_chunks_mut(self.block)
            .zip(blocks)
            .try_for_each(|(out, block)| match block {
                Block::Compressed(compressed) => {
                    match zstd::bulk::decompress_to_buffer(&compressed, out) {
                        Ok(written) if written == out.len() => Ok(()),
                        Ok(written) => Err(format!(
                            "a block of {name:?} decompressed to {written} bytes of {}",
                            out.len()
                        )),
                        Err(error) => Err(format!("a block of {name:?}: {error}")),
                    }
                }
                Block::Raw(raw) => {
                    out.copy_from_slice(&raw);
                    Ok(())
                }
            })?;
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EdgeKind, EdgeKinds, EdgeNames, NodeNames, PackedU64, StringId};

    fn round_trip<C: Imaged + PartialEq + std::fmt::Debug + Clone>(column: C) {
        let parked = Parked::park(column.clone());
        assert_eq!(parked.unpark(), column);
    }

    #[test]
    fn columns_come_back_as_they_were_parked() {
        // Several blocks, a part that does not compress (random ids), and values kept beside.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let ids: Vec<u64> = (0..600_000).map(|_| random() >> 8).collect();
        round_trip(PackedU64::from(ids));
        let addresses: Vec<u64> = (0..600_000u64).map(|k| 0x7f00_0000_0000 + 24 * k).collect();
        round_trip(PackedU64::from(addresses));
        let names: Vec<u32> = (0..3_000_000u32)
            .map(|k| if k % 1000 == 7 { 1 << 20 } else { k % 40 })
            .collect();
        round_trip(EdgeNames::from(names));
        let labels: Vec<StringId> = (0..100_000u32).map(|k| StringId(k % 3)).collect();
        round_trip(NodeNames::from(labels));
        let kinds: Vec<EdgeKind> = (0..1_000_001)
            .map(|k| [EdgeKind::Property, EdgeKind::Element, EdgeKind::Weak][k % 3])
            .collect();
        round_trip(EdgeKinds::from(kinds));
        round_trip(PackedU64::from(Vec::<u64>::new()));
    }

    /// A value of a column parked for reads, over many blocks, some kept raw (random values
    /// do not compress), reads back from its block; past the end, or of a vector the
    /// column lacks or of another width, there is none.
    #[test]
    fn a_value_reads_back_from_its_block() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let values: Vec<u32> = (0..100_000u32)
            .map(|k| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if k < 50_000 { k / 3 } else { state as u32 }
            })
            .collect();
        for parked in [
            Parked::park_for_reads(values.clone()),
            Parked::park(values.clone()),
            Parked::park_for_reads_from_the_back(values.clone(), Cores::One),
            Parked::park_for_reads_from_the_back(values.clone(), Cores::Every),
        ] {
            // Every 61st value, and each side of the blocks' edges (65536 values a block for
            // reads) and of the raw values' start.
            let edges = [0, 49_999, 50_000, 65_535, 65_536, 65_537, 99_999];
            for index in (0..values.len()).step_by(61).chain(edges) {
                assert_eq!(
                    parked.value::<u32>("values", index),
                    Some(values[index]),
                    "{index}"
                );
            }
            assert_eq!(parked.value::<u32>("values", values.len()), None);
            assert_eq!(parked.value::<u32>("names", 0), None);
            assert_eq!(parked.value::<u64>("values", 0), None);
            assert_eq!(parked.unpark(), values);
        }
    }

    /// Parked from the back, a vector makes the blocks parking it for reads makes, whatever
    /// its length against the blocks and the shrinks between them.
    #[test]
    fn a_vector_parked_from_the_back_is_parked_for_reads() {
        let per_block = READ_BLOCK / 4;
        for len in [
            0,
            1,
            per_block,
            per_block * SHRINK_EVERY + 1,
            per_block * 17 - 1,
        ] {
            let values: Vec<u32> = (0..len as u32)
                .map(|k| k.wrapping_mul(2_654_435_761) >> 12)
                .collect();
            let for_reads = Parked::park_for_reads(values.clone());
            for cores in [Cores::One, Cores::Every] {
                let from_the_back = Parked::park_for_reads_from_the_back(values.clone(), cores);
                assert_eq!(
                    from_the_back.parked_bytes(),
                    for_reads.parked_bytes(),
                    "{len}"
                );
                let middle = from_the_back.value::<u32>("values", len / 2);
                assert_eq!(middle, values.get(len / 2).copied(), "{len}");
                assert_eq!(from_the_back.unpark(), values, "{len}");
            }
        }
    }

    /// Runs read in order, across blocks, longer than a block, skipping blocks, and back
    /// before the window, are the vector's values, from compressed blocks and raw ones alike.
    #[test]
    fn runs_read_in_order_are_the_values() {
        let per_block = READ_BLOCK / 4;
        let len = per_block * 5 + 17;
        // Neighbours' targets compress; a multiplicative hash's do not, and stay raw.
        let compressible: Vec<u32> = (0..len as u32).map(|k| k / 3).collect();
        let raw: Vec<u32> = (0..len as u32)
            .map(|k| k.wrapping_mul(2_654_435_761))
            .collect();
        let runs = [
            0..0,
            0..10,
            10..10,
            10..per_block + 5,
            per_block + 5..per_block + 5,
            per_block + 5..per_block * 3 + 1,
            per_block * 3 + 1..per_block * 3 + 2,
            per_block * 4 + 9..per_block * 4 + 20,
            per_block * 4 + 15..len,
            7..per_block,
            len..len,
        ];
        for (values, stays_raw) in [(compressible, false), (raw, true)] {
            let parked = Parked::park_for_reads_from_the_back(values.clone(), Cores::One);
            assert_eq!(parked.parked_bytes() == len * 4, stays_raw);
            let mut reader = parked.in_order();
            for run in runs.clone() {
                assert_eq!(reader.run(run.clone()), &values[run.clone()], "{run:?}");
            }
        }
    }

    #[test]
    fn a_parked_column_takes_less_memory_where_it_compresses() {
        let names: Vec<u32> = (0..4_000_000u32).map(|k| k % 12).collect();
        let column = EdgeNames::from(names);
        let parked = Parked::park(column);
        // 8 MB of two-byte names, a dozen of them repeating.
        assert!(parked.parked_bytes() < 400_000, "{}", parked.parked_bytes());
        assert_eq!(parked.unpark().get(3_999_999), 3_999_999 % 12);
    }
}
