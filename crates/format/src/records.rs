//! The records of a `.hgd` stream: the header, and the chunks that follow it, as serde types.
//! Each chunk's `validate` checks that its columns agree with each other.

use crate::column::{LeInt, column_len};
use crate::timeline::{EventChunk, SamplesChunk, TimelineInfoChunk};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The header's `magic`: the first value of every `.hgd` stream.
pub const MAGIC: &str = "heapgraph";
/// The format version of a file of plain columns, which every reader since the first reads.
pub const VERSION: u32 = 1;
/// The format version of a file holding `image` chunks: readers of version 1 know no images,
/// and refuse such a file rather than find no nodes in it. This crate reads both.
pub const VERSION_IMAGES: u32 = 2;
/// Where an `image_data` chunk's bytes start in the file, as a multiple of this many bytes
/// (a page), so that a reader may map them instead of copying them.
pub const IMAGE_ALIGN: u64 = 4096;
/// The header's `endianness`: byte order of every integer column.
pub const LITTLE_ENDIAN: &str = "little";
/// The header's `kind` for a heap graph (objects and references).
pub const KIND_HEAP_GRAPH: &str = "heap-graph";
/// The header's `kind` for an allocation snapshot (live allocations by allocating stack: the
/// `frames`, `stacks` and `sites` chunks).
pub const KIND_ALLOC_SNAPSHOT: &str = "alloc-snapshot";
/// The `frames.name` of a frame whose function is not known.
pub const NO_NAME: u32 = u32::MAX;

/// The first record of a stream: what the file holds and where it came from.
///
/// Built with [`Header::new`]; the optional fields are then set directly.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Header {
    /// Always [`MAGIC`]. Written first, so that the first 17 bytes identify the format.
    pub magic: String,
    /// The format version, [`VERSION`].
    pub version: u32,
    /// Byte order of the integer columns: always [`LITTLE_ENDIAN`].
    pub endianness: String,
    /// Pointer size of the dumped process in bytes, where known.
    #[serde(default)]
    pub pointer_size: Option<u8>,
    /// What the file holds: [`KIND_HEAP_GRAPH`], [`KIND_ALLOC_SNAPSHOT`] or
    /// [`crate::KIND_TIMELINE`].
    pub kind: String,
    /// The format the data was first captured in (`v8-heapsnapshot`, `hprof`, `python-gc`, …).
    pub source_format: String,
    /// The runtime that was dumped: `v8`, `java` or `python`.
    pub runtime: String,
    /// The runtime's version, where known.
    #[serde(default)]
    pub runtime_version: Option<String>,
    /// When the dump was taken, in milliseconds since the Unix epoch, where known.
    #[serde(default)]
    pub captured_at_ms: Option<u64>,
    /// The dumped process's id, where known.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Free-form notes about the capture (what was missing, how it was taken).
    #[serde(default)]
    pub notes: Vec<String>,
    /// How many rows of each kind the writer means to write (`nodes`, `edges`, `strings`), where
    /// it knows ahead. A reader uses them to say what a cut-short file lost; they are never
    /// trusted to size an allocation.
    #[serde(default)]
    pub totals: BTreeMap<String, u64>,
}

impl Header {
    /// A version-[`VERSION`] little-endian header with no optional field set.
    pub fn new(kind: &str, source_format: &str, runtime: &str) -> Header {
        Header {
            magic: MAGIC.to_owned(),
            version: VERSION,
            endianness: LITTLE_ENDIAN.to_owned(),
            pointer_size: None,
            kind: kind.to_owned(),
            source_format: source_format.to_owned(),
            runtime: runtime.to_owned(),
            runtime_version: None,
            captured_at_ms: None,
            pid: None,
            notes: Vec::new(),
            totals: BTreeMap::new(),
        }
    }
}

/// A record after the header. A reader concatenates chunks of the same type in stream order.
///
/// Serialized as a MessagePack map whose `type` key names the variant (`strings`, `node_kinds`,
/// `nodes`, `edges`, `root`, `analysis`, `type_totals`, `type_paths`, `accumulated`,
/// `array_lengths`, `fill`;
/// for allocation
/// snapshots `frames`,
/// `stacks`, `sites`; for timelines `timeline_info`, `samples`, `event`), followed by the
/// variant's fields. Column fields are
/// `bin` blobs of little-endian integers that borrow from the reader's buffer.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Chunk<'a> {
    /// Strings, numbered in stream order from 0 across all `strings` chunks.
    Strings(StringsChunk<'a>),
    /// Node kinds, numbered in stream order across all `node_kinds` chunks.
    NodeKinds(NodeKindsChunk),
    /// Per-node columns.
    Nodes(NodesChunk<'a>),
    /// Per-edge columns.
    Edges(EdgesChunk<'a>),
    /// The root of the analyses.
    Root(RootChunk),
    /// Stored analysis results, per node.
    Analysis(AnalysisChunk<'a>),
    /// Stored per-type totals, per type.
    TypeTotals(TypeTotalsChunk<'a>),
    /// The stored merged paths to one type's instances, per listed node.
    TypePaths(TypePathsChunk<'a>),
    /// The stored types below one of the suspects' accumulation points.
    Accumulated(AccumulatedChunk<'a>),
    /// Lengths of object arrays (HPROF's), per array.
    ArrayLengths(ArrayLengthsChunk<'a>),
    /// Elements and capacity of collections (the Python dumper's), per collection.
    Fill(FillChunk<'a>),
    /// What a timeline measures.
    TimelineInfo(TimelineInfoChunk),
    /// Samples of a timeline.
    Samples(SamplesChunk<'a>),
    /// Something that happened during a recording.
    Event(EventChunk),
    /// Source locations of an allocation snapshot, numbered in stream order.
    Frames(FramesChunk<'a>),
    /// Allocating stacks of an allocation snapshot, numbered in stream order.
    Stacks(StacksChunk<'a>),
    /// Live allocations of an allocation snapshot, by stack.
    Sites(SitesChunk<'a>),
    /// A column of the model laid out as the vectors it is made of.
    Image(ImageChunk),
    /// Bytes of one vector of an image column.
    ImageData(ImageDataChunk<'a>),
    /// A chunk of a type this version does not know; the reader skips its content. Never written.
    #[serde(skip)]
    Unknown(UnknownChunk),
}

impl Chunk<'_> {
    /// The chunk's `type` tag.
    pub fn type_name(&self) -> &str {
        match self {
            Chunk::Strings(_) => "strings",
            Chunk::NodeKinds(_) => "node_kinds",
            Chunk::Nodes(_) => "nodes",
            Chunk::Edges(_) => "edges",
            Chunk::Root(_) => "root",
            Chunk::Analysis(_) => "analysis",
            Chunk::TypeTotals(_) => "type_totals",
            Chunk::TypePaths(_) => "type_paths",
            Chunk::Accumulated(_) => "accumulated",
            Chunk::ArrayLengths(_) => "array_lengths",
            Chunk::Fill(_) => "fill",
            Chunk::TimelineInfo(_) => "timeline_info",
            Chunk::Samples(_) => "samples",
            Chunk::Event(_) => "event",
            Chunk::Frames(_) => "frames",
            Chunk::Stacks(_) => "stacks",
            Chunk::Sites(_) => "sites",
            Chunk::Image(_) => "image",
            Chunk::ImageData(_) => "image_data",
            Chunk::Unknown(unknown) => &unknown.type_name,
        }
    }

    /// Checks that the chunk's columns agree with each other.
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Chunk::Strings(chunk) => chunk.rows().map(drop),
            Chunk::NodeKinds(chunk) => chunk.validate(),
            Chunk::Nodes(chunk) => chunk.rows().map(drop),
            Chunk::Edges(chunk) => chunk.rows().map(drop),
            Chunk::Analysis(chunk) => chunk.rows().map(drop),
            Chunk::TypeTotals(chunk) => chunk.rows().map(drop),
            Chunk::TypePaths(chunk) => chunk.rows().map(drop),
            Chunk::Accumulated(chunk) => chunk.rows().map(drop),
            Chunk::ArrayLengths(chunk) => chunk.rows().map(drop),
            Chunk::Fill(chunk) => chunk.rows().map(drop),
            Chunk::Samples(chunk) => chunk.rows().map(drop),
            Chunk::Frames(chunk) => chunk.rows().map(drop),
            Chunk::Stacks(chunk) => chunk.rows().map(drop),
            Chunk::Sites(chunk) => chunk.rows().map(drop),
            Chunk::Image(chunk) => chunk.validate(),
            Chunk::Root(_)
            | Chunk::ImageData(_)
            | Chunk::TimelineInfo(_)
            | Chunk::Event(_)
            | Chunk::Unknown(_) => Ok(()),
        }
    }
}

/// A chunk of strings: their UTF-8 bytes back to back, and each one's length in bytes.
///
/// Why two blobs and not an array of `str`: every chunk stays a handful of `bin` values whatever
/// its row count, so a reader validates UTF-8 once per chunk and slices, and a writer in any
/// language produces it with one join and one integer array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StringsChunk<'a> {
    /// The strings' UTF-8 bytes, concatenated.
    #[serde(borrow, with = "serde_bytes")]
    pub data: &'a [u8],
    /// Each string's length in bytes: little-endian `u32`.
    #[serde(borrow, with = "serde_bytes")]
    pub lengths: &'a [u8],
}

impl<'a> StringsChunk<'a> {
    /// The number of strings, after checking the lengths add up to the data and that every
    /// string is valid UTF-8.
    ///
    /// # Errors
    /// A lower-case message saying which check failed.
    pub fn rows(&self) -> Result<usize, String> {
        self.strings().map(|strings| strings.len())
    }

    /// The strings, in order, after the checks of [`StringsChunk::rows`].
    ///
    /// # Errors
    /// As [`StringsChunk::rows`].
    pub fn strings(&self) -> Result<StringsIter<'a>, String> {
        let n_strings = column_len::<u32>(self.lengths).map_err(|err| format!("lengths: {err}"))?;
        let text = std::str::from_utf8(self.data).map_err(|err| {
            format!(
                "data is not valid utf-8 at byte {} of the chunk",
                err.valid_up_to()
            )
        })?;
        let (lengths, _) = self.lengths.as_chunks::<4>();
        let mut end = 0u64;
        for (index, length) in lengths.iter().enumerate() {
            end += u64::from(u32::from_le_bytes(*length));
            let Ok(cut) = usize::try_from(end) else {
                return Err(format!("string {index} runs past the data"));
            };
            if cut > text.len() {
                return Err(format!(
                    "string {index} runs past the {} bytes of data",
                    text.len()
                ));
            }
            if !text.is_char_boundary(cut) {
                return Err(format!("string {index} ends inside a utf-8 character"));
            }
        }
        if end != text.len() as u64 {
            return Err(format!(
                "the lengths add up to {end} bytes but the data has {}",
                text.len()
            ));
        }
        Ok(StringsIter {
            text,
            lengths: lengths.iter(),
            n_strings,
        })
    }
}

/// The strings of a [`StringsChunk`], in order.
#[derive(Clone, Debug)]
pub struct StringsIter<'a> {
    text: &'a str,
    lengths: std::slice::Iter<'a, [u8; 4]>,
    n_strings: usize,
}

impl<'a> Iterator for StringsIter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let length = u32::from_le_bytes(*self.lengths.next()?) as usize;
        // Checked by `StringsChunk::strings`: every cut is inside the text, on a char boundary.
        let (head, tail) = self
            .text
            .split_at_checked(length)
            .unwrap_or((self.text, ""));
        self.text = tail;
        Some(head)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.lengths.size_hint()
    }
}

impl ExactSizeIterator for StringsIter<'_> {
    fn len(&self) -> usize {
        self.lengths.len()
    }
}

impl StringsIter<'_> {
    /// The number of strings the chunk held in all.
    pub fn total(&self) -> usize {
        self.n_strings
    }
}

/// A chunk of node kinds: the runtime's categories (V8's node types, `instance`, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeKindsChunk {
    /// Each kind's name.
    pub names: Vec<String>,
    /// Whether nodes of each kind are synthetic (roots and root groups, not real objects).
    pub synthetic: Vec<bool>,
}

impl NodeKindsChunk {
    fn validate(&self) -> Result<(), String> {
        if self.names.len() == self.synthetic.len() {
            Ok(())
        } else {
            Err(format!(
                "node_kinds has {} names but {} synthetic flags",
                self.names.len(),
                self.synthetic.len()
            ))
        }
    }
}

/// A chunk of nodes. Node `i` of the stream (counting across chunks) owns the next
/// `edge_count[i]` edges of the stream: the edges are a CSR by prefix sum, as in V8.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodesChunk<'a> {
    /// The runtime's object id: `u64` per node.
    #[serde(borrow, with = "serde_bytes")]
    pub object_id: &'a [u8],
    /// Index into the node kinds: `u8` per node.
    #[serde(borrow, with = "serde_bytes")]
    pub kind: &'a [u8],
    /// Type name, a string index: `u32` per node.
    #[serde(borrow, with = "serde_bytes")]
    pub type_name: &'a [u8],
    /// The object's own label, a string index: `u32` per node.
    #[serde(borrow, with = "serde_bytes")]
    pub name: &'a [u8],
    /// Shallow size in bytes: `u64` per node.
    #[serde(borrow, with = "serde_bytes")]
    pub shallow_size: &'a [u8],
    /// Number of outgoing edges: `u32` per node.
    #[serde(borrow, with = "serde_bytes")]
    pub edge_count: &'a [u8],
    /// Optional (empty when absent): references to the object as the runtime counts them
    /// (Python's reference counts), `u32` per node, 0 for unknown. Where the file's own edges
    /// explain fewer, something outside the dump holds the object, and the reader makes it a
    /// root.
    #[serde(
        borrow,
        with = "serde_bytes",
        default,
        skip_serializing_if = "<[u8]>::is_empty"
    )]
    pub refcount: &'a [u8],
}

impl NodesChunk<'_> {
    /// The number of nodes, after checking every column holds that many.
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn rows(&self) -> Result<usize, String> {
        common_len(&[
            column::<u64>("object_id", self.object_id),
            column::<u8>("kind", self.kind),
            column::<u32>("type_name", self.type_name),
            column::<u32>("name", self.name),
            column::<u64>("shallow_size", self.shallow_size),
            column::<u32>("edge_count", self.edge_count),
        ])
        .and_then(|rows| {
            if self.refcount.is_empty() {
                return Ok(rows);
            }
            common_len(&[
                Ok(("edge_count", rows)),
                column::<u32>("refcount", self.refcount),
            ])
        })
    }
}

/// A chunk of edges, in the order of the nodes that own them. A target is named by its node
/// index (`to`) or, for writers that never number their nodes (the Python dumper), by its
/// object id (`to_object`), which the reader resolves; a chunk has one of the two.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EdgesChunk<'a> {
    /// Target node index: `u32` per edge (empty when `to_object` is given).
    #[serde(borrow, with = "serde_bytes", default)]
    pub to: &'a [u8],
    /// Target object id: `u64` per edge (empty when `to` is given).
    #[serde(
        borrow,
        with = "serde_bytes",
        default,
        skip_serializing_if = "<[u8]>::is_empty"
    )]
    pub to_object: &'a [u8],
    /// Edge kind code (see docs/formats.md): `u8` per edge.
    #[serde(borrow, with = "serde_bytes")]
    pub kind: &'a [u8],
    /// A string index, or a plain index for `element` and `hidden` edges: `u32` per edge.
    #[serde(borrow, with = "serde_bytes")]
    pub name: &'a [u8],
}

impl EdgesChunk<'_> {
    /// The number of edges, after checking every column holds that many.
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn rows(&self) -> Result<usize, String> {
        let target = match (self.to.is_empty(), self.to_object.is_empty()) {
            (false, false) => return Err("an edges chunk has both to and to_object".to_owned()),
            (true, false) => column::<u64>("to_object", self.to_object),
            _ => column::<u32>("to", self.to),
        };
        common_len(&[
            target,
            column::<u8>("kind", self.kind),
            column::<u32>("name", self.name),
        ])
    }
}

/// The root of the analyses, a node index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootChunk {
    /// The root node's index.
    pub node: u32,
}

/// Stored analysis results, per node in node order, so that a converted file reopens without
/// recomputing. `u32::MAX` means "none" (an unreachable node has no dominator and no distance).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalysisChunk<'a> {
    /// Immediate dominator, a node index: `u32` per node.
    #[serde(borrow, with = "serde_bytes")]
    pub dominator: &'a [u8],
    /// Retained size in bytes: `u64` per node.
    #[serde(borrow, with = "serde_bytes")]
    pub retained_size: &'a [u8],
    /// Strong edges from the root: `u32` per node.
    #[serde(borrow, with = "serde_bytes")]
    pub distance: &'a [u8],
    /// Nodes in the node's dominator subtree, itself included: `u32` per node. Optional (an
    /// empty blob, or no field, when the writer left it out).
    #[serde(
        borrow,
        with = "serde_bytes",
        default,
        skip_serializing_if = "<[u8]>::is_empty"
    )]
    pub retained_count: &'a [u8],
    /// The node's parent on the chain from the root that `paths` merges and `who-holds` shows
    /// first: a breadth-first search over the retaining edges that enters through the named
    /// roots before the others, a node index per node (`u32`). Optional, as `retained_count`.
    #[serde(
        borrow,
        with = "serde_bytes",
        default,
        skip_serializing_if = "<[u8]>::is_empty"
    )]
    pub chain_parent: &'a [u8],
}

impl AnalysisChunk<'_> {
    /// The number of nodes covered, after checking every column holds that many.
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn rows(&self) -> Result<usize, String> {
        let mut columns = vec![
            column::<u32>("dominator", self.dominator),
            column::<u64>("retained_size", self.retained_size),
            column::<u32>("distance", self.distance),
        ];
        if !self.retained_count.is_empty() {
            columns.push(column::<u32>("retained_count", self.retained_count));
        }
        if !self.chain_parent.is_empty() {
            columns.push(column::<u32>("chain_parent", self.chain_parent));
        }
        common_len(&columns)
    }
}

/// Stored per-type totals of the analysis (what `summary` lists), one row per type, so that a
/// converted file answers `summary` without walking the dominator tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TypeTotalsChunk<'a> {
    /// The type's name, a string index: `u32` per type.
    #[serde(borrow, with = "serde_bytes")]
    pub type_name: &'a [u8],
    /// Real objects of the type: `u64` per type.
    #[serde(borrow, with = "serde_bytes")]
    pub count: &'a [u8],
    /// Their shallow sizes, summed: `u64` per type.
    #[serde(borrow, with = "serde_bytes")]
    pub shallow_size: &'a [u8],
    /// Their retained sizes, each byte counted once: `u64` per type.
    #[serde(borrow, with = "serde_bytes")]
    pub retained_size: &'a [u8],
}

impl TypeTotalsChunk<'_> {
    /// The number of types, after checking every column holds that many.
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn rows(&self) -> Result<usize, String> {
        common_len(&[
            column::<u32>("type_name", self.type_name),
            column::<u64>("count", self.count),
            column::<u64>("shallow_size", self.shallow_size),
            column::<u64>("retained_size", self.retained_size),
        ])
    }
}

/// The stored merged paths to the instances of one type (what `paths --type` lists), for the
/// types with the most instances, so that a converted file answers them without merging
/// millions of chains. The scalars describe the tree; the columns hold one row per listed
/// node, in the tree's pre-order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TypePathsChunk<'a> {
    /// The type's name, a string index.
    pub type_name: u32,
    /// Children listed per node at most.
    pub branches: u32,
    /// Objects of the type (the tree's targets).
    pub objects: u64,
    /// Those with a chain from the root.
    pub reached: u64,
    /// What the reached objects retain, each byte counted once.
    pub retained_size: u64,
    /// The listed node's node index: `u32` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub node: &'a [u8],
    /// The edge into it from its parent on its chain, an edge index: `u64` per row,
    /// `u64::MAX` for none.
    #[serde(borrow, with = "serde_bytes")]
    pub edge: &'a [u8],
    /// Its parent's row, an earlier one: `u32` per row, `u32::MAX` for the root's children.
    #[serde(borrow, with = "serde_bytes")]
    pub parent: &'a [u8],
    /// Edges from the root on its chain: `u32` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub depth: &'a [u8],
    /// How far in it is printed: `u32` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub indent: &'a [u8],
    /// 1 where the node is itself one of the type's instances, else 0: `u8` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub is_target: &'a [u8],
    /// Instances at or below it: `u64` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub targets: &'a [u8],
    /// What they retain, each byte counted once: `u64` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub targets_retained_size: &'a [u8],
    /// Steps of a long single-child run left out just above it: `u64` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub skipped_steps: &'a [u8],
    /// Children left out (past the branch limit or the listed nodes' limit): `u64` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub hidden_children: &'a [u8],
    /// Instances below those children: `u64` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub hidden_targets: &'a [u8],
    /// What those instances retain: `u64` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub hidden_retained_size: &'a [u8],
}

impl TypePathsChunk<'_> {
    /// The number of listed nodes, after checking every column holds that many.
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn rows(&self) -> Result<usize, String> {
        common_len(&[
            column::<u32>("node", self.node),
            column::<u64>("edge", self.edge),
            column::<u32>("parent", self.parent),
            column::<u32>("depth", self.depth),
            column::<u32>("indent", self.indent),
            column::<u8>("is_target", self.is_target),
            column::<u64>("targets", self.targets),
            column::<u64>("targets_retained_size", self.targets_retained_size),
            column::<u64>("skipped_steps", self.skipped_steps),
            column::<u64>("hidden_children", self.hidden_children),
            column::<u64>("hidden_targets", self.hidden_targets),
            column::<u64>("hidden_retained_size", self.hidden_retained_size),
        ])
    }
}

/// The stored types below one of the suspects' accumulation points (what `suspects` lists
/// under it), so that a converted file answers the suspects without walking the point's part
/// of the dominator tree: one row per type, the largest retained size first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccumulatedChunk<'a> {
    /// The accumulation point, a node index.
    pub point: u32,
    /// The topmost instance of the first type with the largest retained size, a node index;
    /// `u32::MAX` for none.
    pub representative: u32,
    /// The type's name, a string index: `u32` per type.
    #[serde(borrow, with = "serde_bytes")]
    pub type_name: &'a [u8],
    /// Objects of the type below the point: `u64` per type.
    #[serde(borrow, with = "serde_bytes")]
    pub count: &'a [u8],
    /// What they retain, each byte counted once: `u64` per type.
    #[serde(borrow, with = "serde_bytes")]
    pub retained_size: &'a [u8],
}

impl AccumulatedChunk<'_> {
    /// The number of types, after checking every column holds that many.
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn rows(&self) -> Result<usize, String> {
        common_len(&[
            column::<u32>("type_name", self.type_name),
            column::<u64>("count", self.count),
            column::<u64>("retained_size", self.retained_size),
        ])
    }
}

/// The lengths of some object arrays (a dump's backing arrays of collections, which a shallow
/// size rounded up to 8 bytes cannot give back), so that a converted HPROF answers `waste` as
/// the HPROF does. Sparse: one row per array, nodes in increasing order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArrayLengthsChunk<'a> {
    /// The array's node index: `u32` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub node: &'a [u8],
    /// Its length in slots: `u32` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub length: &'a [u8],
    /// Bytes of one slot (a reference: 4 with compressed oops, 8 without).
    pub slot_bytes: u32,
}

impl ArrayLengthsChunk<'_> {
    /// The number of rows, after checking every column holds that many.
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn rows(&self) -> Result<usize, String> {
        common_len(&[
            column::<u32>("node", self.node),
            column::<u32>("length", self.length),
        ])
    }
}

/// How full some collections are, as the runtime sized them (the Python dumper's lists, dicts
/// and sets). Sparse: one row per collection, nodes in increasing order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FillChunk<'a> {
    /// The collection's node index: `u32` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub node: &'a [u8],
    /// Elements it holds: `u64` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub elements: &'a [u8],
    /// Slots it has room for: `u64` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub capacity: &'a [u8],
    /// Bytes of its table (allocated beside the object, counted in its shallow size): `u64`.
    #[serde(borrow, with = "serde_bytes")]
    pub table_bytes: &'a [u8],
    /// Bytes a right-sized copy would not have: `u64` per row.
    #[serde(borrow, with = "serde_bytes")]
    pub spare_bytes: &'a [u8],
}

impl FillChunk<'_> {
    /// The number of rows, after checking every column holds that many.
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn rows(&self) -> Result<usize, String> {
        common_len(&[
            column::<u32>("node", self.node),
            column::<u64>("elements", self.elements),
            column::<u64>("capacity", self.capacity),
            column::<u64>("table_bytes", self.table_bytes),
            column::<u64>("spare_bytes", self.spare_bytes),
        ])
    }
}

/// A chunk of source locations of an allocation snapshot. Frames are numbered from 0 in stream
/// order across all `frames` chunks; `stacks.frames` refers to them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FramesChunk<'a> {
    /// The source file, a string index: `u32` per frame.
    #[serde(borrow, with = "serde_bytes")]
    pub filename: &'a [u8],
    /// The function, a string index, or [`NO_NAME`]: `u32` per frame.
    #[serde(borrow, with = "serde_bytes")]
    pub name: &'a [u8],
    /// The line, 0 when unknown: `u32` per frame.
    #[serde(borrow, with = "serde_bytes")]
    pub lineno: &'a [u8],
}

impl FramesChunk<'_> {
    /// The number of frames, after checking every column holds that many.
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn rows(&self) -> Result<usize, String> {
        common_len(&[
            column::<u32>("filename", self.filename),
            column::<u32>("name", self.name),
            column::<u32>("lineno", self.lineno),
        ])
    }
}

/// A chunk of allocating stacks. Stacks are numbered from 0 in stream order across all `stacks`
/// chunks; stack `i` of a chunk is the next `frame_count[i]` entries of `frames`, innermost
/// (most recent call) first. A chunk holds whole stacks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StacksChunk<'a> {
    /// How many frames each stack has: `u32` per stack.
    #[serde(borrow, with = "serde_bytes")]
    pub frame_count: &'a [u8],
    /// The stacks' frames back to back, frame indices: `u32` per entry, Σ `frame_count` entries.
    #[serde(borrow, with = "serde_bytes")]
    pub frames: &'a [u8],
}

impl StacksChunk<'_> {
    /// The number of stacks, after checking the frame counts add up to the frames.
    ///
    /// # Errors
    /// A lower-case message saying which check failed.
    pub fn rows(&self) -> Result<usize, String> {
        let n_stacks =
            column_len::<u32>(self.frame_count).map_err(|err| format!("frame_count: {err}"))?;
        let n_frames =
            column_len::<u32>(self.frames).map_err(|err| format!("frames: {err}"))? as u64;
        let (counts, _) = self.frame_count.as_chunks::<4>();
        let declared: u64 = counts
            .iter()
            .map(|count| u64::from(u32::from_le_bytes(*count)))
            .sum();
        if declared != n_frames {
            return Err(format!(
                "the frame counts add up to {declared} frames but frames has {n_frames}"
            ));
        }
        Ok(n_stacks)
    }
}

/// A chunk of live allocations, one row per (stack, domain).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SitesChunk<'a> {
    /// The allocating stack, a stack index: `u32` per site.
    #[serde(borrow, with = "serde_bytes")]
    pub stack: &'a [u8],
    /// The address space (0: the process's heap): `u64` per site.
    #[serde(borrow, with = "serde_bytes")]
    pub domain: &'a [u8],
    /// Bytes live (requested sizes): `u64` per site.
    #[serde(borrow, with = "serde_bytes")]
    pub bytes: &'a [u8],
    /// Allocations live: `u64` per site.
    #[serde(borrow, with = "serde_bytes")]
    pub count: &'a [u8],
}

impl SitesChunk<'_> {
    /// The number of sites, after checking every column holds that many.
    ///
    /// # Errors
    /// A lower-case message naming the column that disagrees.
    pub fn rows(&self) -> Result<usize, String> {
        common_len(&[
            column::<u32>("stack", self.stack),
            column::<u64>("domain", self.domain),
            column::<u64>("bytes", self.bytes),
            column::<u64>("count", self.count),
        ])
    }
}

/// A column of the model laid out as the vectors it is made of (`heapgraph_model::image`), what
/// `heapgraph convert` writes instead of `nodes` and `edges` chunks: which column, in which of
/// its representations, its numbers, and each vector's name, value width and length. The
/// vectors' bytes follow in [`ImageDataChunk`]s.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageChunk {
    /// The column (`node_object_id`, `edge_to`, `analysis.idom`, …).
    pub column: String,
    /// The representation, one of those the column's type names.
    pub repr: String,
    /// The column's numbers other than vectors (a shift, a length), by name.
    #[serde(default)]
    pub scalars: BTreeMap<String, u64>,
    /// Each vector: its name, the bytes of one value (1, 2, 4 or 8), and its number of values.
    pub parts: Vec<(String, u8, u64)>,
}

impl ImageChunk {
    /// Checks that the widths are integers' and the names unique.
    ///
    /// # Errors
    /// A lower-case message naming the vector.
    pub fn validate(&self) -> Result<(), String> {
        for (index, (name, width, len)) in self.parts.iter().enumerate() {
            if ![1, 2, 4, 8].contains(width) {
                return Err(format!("vector {name:?} has values of {width} bytes"));
            }
            if len.checked_mul(u64::from(*width)).is_none() {
                return Err(format!("vector {name:?} has {len} values"));
            }
            if self.parts[..index].iter().any(|other| &other.0 == name) {
                return Err(format!("vector {name:?} is listed twice"));
            }
        }
        Ok(())
    }
}

/// Bytes of one vector of an image column, from byte `offset` of the vector on. A vector's
/// bytes may come in several chunks, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImageDataChunk<'a> {
    /// The column, as its [`ImageChunk`] names it.
    pub column: String,
    /// The vector.
    pub part: String,
    /// Where `data` starts in the vector, in bytes.
    pub offset: u64,
    /// Filler, so that `data` starts in the file at a multiple of [`IMAGE_ALIGN`] bytes.
    #[serde(borrow, with = "serde_bytes", default)]
    pub pad: &'a [u8],
    /// The vector's little-endian values, whole ones.
    #[serde(borrow, with = "serde_bytes")]
    pub data: &'a [u8],
}

/// A chunk whose `type` this version does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownChunk {
    /// Its `type` tag.
    pub type_name: String,
}

/// A column's name and its row count, or why it has none.
fn column<T: LeInt>(name: &'static str, blob: &[u8]) -> Result<(&'static str, usize), String> {
    column_len::<T>(blob)
        .map(|len| (name, len))
        .map_err(|err| format!("{name}: {err}"))
}

/// The row count all `columns` share.
fn common_len(columns: &[Result<(&'static str, usize), String>]) -> Result<usize, String> {
    let mut first: Option<(&str, usize)> = None;
    for column in columns {
        let &(name, len) = column.as_ref().map_err(Clone::clone)?;
        match first {
            None => first = Some((name, len)),
            Some((first_name, first_len)) if first_len != len => {
                return Err(format!(
                    "column {name} has {len} rows but {first_name} has {first_len}"
                ));
            }
            Some(_) => {}
        }
    }
    Ok(first.map_or(0, |(_, len)| len))
}
