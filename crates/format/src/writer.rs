//! Writing a `.hgd` stream: the header, then any number of chunks (typed column slices are cut
//! into chunks of at most [`Writer::chunk_rows`] rows), then the end record.

use crate::column::{LeInt, encode_column};
use crate::error::Error;
use crate::records::{
    AccumulatedChunk, AnalysisChunk, ArrayLengthsChunk, Chunk, EdgesChunk, FillChunk, FramesChunk,
    Header, IMAGE_ALIGN, ImageDataChunk, NodeKindsChunk, NodesChunk, RootChunk, SitesChunk,
    StacksChunk, StringsChunk, TypePathsChunk, TypeTotalsChunk,
};
use crate::timeline::{SampleColumns, SamplesChunk, encode_into};
use crate::{DEFAULT_CHUNK_ROWS, MAX_RECORD_BYTES};
use serde::Serialize;
use std::io::{self, BufWriter, Write};

/// Bytes of text at most in one `strings` chunk written by [`Writer::write_strings`].
const STRING_CHUNK_BYTES: usize = 16 * 1024 * 1024;

/// Bytes of buffer between the writer and the caller's stream: records' small fields are
/// gathered here, blobs larger than it go straight through.
const WRITE_BUFFER_BYTES: usize = 64 * 1024;

/// Bytes a record may need beyond its blobs (map, keys, markers, small fields).
const RECORD_OVERHEAD_BYTES: u64 = 4096;

/// Per-node columns, one slice per column, all of the same length.
#[derive(Clone, Copy, Debug)]
pub struct NodeColumns<'a> {
    /// The runtime's object id, per node.
    pub object_id: &'a [u64],
    /// Index into the node kinds, per node.
    pub kind: &'a [u8],
    /// Type name (a string index), per node.
    pub type_name: &'a [u32],
    /// Label (a string index), per node.
    pub name: &'a [u32],
    /// Shallow size in bytes, per node.
    pub shallow_size: &'a [u64],
    /// Number of outgoing edges, per node.
    pub edge_count: &'a [u32],
}

/// Per-edge columns, one slice per column, all of the same length.
#[derive(Clone, Copy, Debug)]
pub struct EdgeColumns<'a> {
    /// Target node index, per edge.
    pub to: &'a [u32],
    /// Edge kind code, per edge.
    pub kind: &'a [u8],
    /// Name (a string index) or plain index, per edge.
    pub name: &'a [u32],
}

/// Stored analysis columns, per node, all of the same length. `u32::MAX` means none.
#[derive(Clone, Copy, Debug)]
pub struct AnalysisColumns<'a> {
    /// Immediate dominator, per node.
    pub dominator: &'a [u32],
    /// Retained size in bytes, per node.
    pub retained_size: &'a [u64],
    /// Strong edges from the root, per node.
    pub distance: &'a [u32],
    /// Nodes in each node's dominator subtree; empty to leave the column out.
    pub retained_count: &'a [u32],
    /// Each node's parent on the explaining chain from the root; empty to leave the column out.
    pub chain_parent: &'a [u32],
}

/// Per-type totals, per type, all of the same length.
#[derive(Clone, Copy, Debug)]
pub struct TypeTotalsColumns<'a> {
    /// The type's name, a string index.
    pub type_name: &'a [u32],
    /// Real objects of the type.
    pub count: &'a [u64],
    /// Their shallow sizes, summed.
    pub shallow_size: &'a [u64],
    /// Their retained sizes, each byte counted once.
    pub retained_size: &'a [u64],
}

/// The types below one accumulation point, the largest retained size first
/// ([`AccumulatedChunk`] says what each column holds).
#[derive(Clone, Copy, Debug)]
pub struct AccumulatedColumns<'a> {
    /// The accumulation point, a node index.
    pub point: u32,
    /// The topmost instance of the first type, a node index; `u32::MAX` for none.
    pub representative: u32,
    /// The type's name, a string index.
    pub type_name: &'a [u32],
    /// Objects of the type below the point.
    pub count: &'a [u64],
    /// What they retain, each byte counted once.
    pub retained_size: &'a [u64],
}

/// The merged paths to one type's instances: the tree's scalars, and per listed node (in the
/// tree's pre-order) columns all of the same length ([`TypePathsChunk`] says what each holds).
#[derive(Clone, Copy, Debug)]
pub struct TypePathsColumns<'a> {
    /// The type's name, a string index.
    pub type_name: u32,
    /// Children listed per node at most.
    pub branches: u32,
    /// Objects of the type.
    pub objects: u64,
    /// Those with a chain from the root.
    pub reached: u64,
    /// What the reached objects retain.
    pub retained_size: u64,
    /// The listed node's node index.
    pub node: &'a [u32],
    /// The edge into it on its chain; `u64::MAX` for none.
    pub edge: &'a [u64],
    /// Its parent's row; `u32::MAX` for the root's children.
    pub parent: &'a [u32],
    /// Edges from the root on its chain.
    pub depth: &'a [u32],
    /// How far in it is printed.
    pub indent: &'a [u32],
    /// 1 where the node is one of the instances.
    pub is_target: &'a [u8],
    /// Instances at or below it.
    pub targets: &'a [u64],
    /// What they retain.
    pub targets_retained_size: &'a [u64],
    /// Steps left out just above it.
    pub skipped_steps: &'a [u64],
    /// Children left out.
    pub hidden_children: &'a [u64],
    /// Instances below those children.
    pub hidden_targets: &'a [u64],
    /// What those instances retain.
    pub hidden_retained_size: &'a [u64],
}

/// Lengths of object arrays, per array, nodes in increasing order.
#[derive(Clone, Copy, Debug)]
pub struct ArrayLengthColumns<'a> {
    /// The array's node index.
    pub node: &'a [u32],
    /// Its length in slots.
    pub length: &'a [u32],
    /// Bytes of one slot.
    pub slot_bytes: u32,
}

/// How full collections are, per collection, nodes in increasing order.
#[derive(Clone, Copy, Debug)]
pub struct FillColumns<'a> {
    /// The collection's node index.
    pub node: &'a [u32],
    /// Elements it holds.
    pub elements: &'a [u64],
    /// Slots it has room for.
    pub capacity: &'a [u64],
    /// Bytes of its table.
    pub table_bytes: &'a [u64],
    /// Bytes a right-sized copy would not have.
    pub spare_bytes: &'a [u64],
}

/// Per-frame columns of an allocation snapshot, all of the same length.
#[derive(Clone, Copy, Debug)]
pub struct FrameColumns<'a> {
    /// The source file (a string index), per frame.
    pub filename: &'a [u32],
    /// The function (a string index, or [`NO_NAME`](crate::NO_NAME)), per frame.
    pub name: &'a [u32],
    /// The line (0 when unknown), per frame.
    pub lineno: &'a [u32],
}

/// The stacks of an allocation snapshot: stack `i` is the next `frame_count[i]` entries of
/// `frames` (frame indices, innermost first).
#[derive(Clone, Copy, Debug)]
pub struct StackColumns<'a> {
    /// Frames per stack.
    pub frame_count: &'a [u32],
    /// Every stack's frames back to back; Σ `frame_count` entries.
    pub frames: &'a [u32],
}

/// Per-site columns of an allocation snapshot, all of the same length.
#[derive(Clone, Copy, Debug)]
pub struct SiteColumns<'a> {
    /// The allocating stack (a stack index), per site.
    pub stack: &'a [u32],
    /// The address space (0: the process's heap), per site.
    pub domain: &'a [u64],
    /// Bytes live, per site.
    pub bytes: &'a [u64],
    /// Allocations live, per site.
    pub count: &'a [u64],
}

/// The end record as written.
#[derive(Serialize)]
struct EndRecord {
    #[serde(rename = "type")]
    type_name: &'static str,
    chunks: u64,
}

/// Counts the bytes that pass, so that errors can name an offset.
struct Counting<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes a `.hgd` stream: [`Writer::new`] writes the header, the `write_*` methods write
/// chunks, and [`Writer::finish`] writes the end record and flushes.
///
/// A stream whose writer never finished (a crash, a full disk) reads back as cut short: every
/// complete chunk is still readable.
pub struct Writer<W: Write> {
    out: Counting<BufWriter<W>>,
    chunks: u64,
    chunk_rows: usize,
    scratch: [Vec<u8>; 6],
}

impl<W: Write> Writer<W> {
    /// Writes `header` and returns a writer for the chunks.
    ///
    /// # Errors
    /// [`Error::Io`] when the stream fails.
    pub fn new(out: W, header: &Header) -> Result<Writer<W>, Error> {
        let mut writer = Writer {
            out: Counting {
                inner: BufWriter::with_capacity(WRITE_BUFFER_BYTES, out),
                written: 0,
            },
            chunks: 0,
            chunk_rows: DEFAULT_CHUNK_ROWS,
            scratch: Default::default(),
        };
        writer.serialize(0, header)?;
        Ok(writer)
    }

    /// Sets the most rows one chunk written from typed columns holds (at least 1).
    #[must_use]
    pub fn with_chunk_rows(mut self, rows: usize) -> Writer<W> {
        self.chunk_rows = rows.max(1);
        self
    }

    /// The most rows one chunk written from typed columns holds.
    pub fn chunk_rows(&self) -> usize {
        self.chunk_rows
    }

    /// Chunks written so far.
    pub fn chunks_written(&self) -> u64 {
        self.chunks
    }

    /// Bytes written so far.
    pub fn offset(&self) -> u64 {
        self.out.written
    }

    /// Writes one chunk as it is, after checking that its columns agree and that it fits in
    /// a record.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when it does not, [`Error::Io`] when the stream fails.
    pub fn write_chunk(&mut self, chunk: &Chunk<'_>) -> Result<(), Error> {
        let record = self.chunks + 1;
        let invalid = |message: String| Error::InvalidColumns { record, message };
        if let Chunk::Unknown(unknown) = chunk {
            return Err(invalid(format!(
                "a chunk of unknown type {:?} has no content to write",
                unknown.type_name
            )));
        }
        chunk.validate().map_err(invalid)?;
        let size = payload_bytes(chunk) + RECORD_OVERHEAD_BYTES;
        if size > MAX_RECORD_BYTES {
            return Err(invalid(format!(
                "the chunk needs about {size} bytes, more than the {MAX_RECORD_BYTES} a record may hold"
            )));
        }
        self.serialize(record, chunk)?;
        self.chunks = record;
        Ok(())
    }

    /// Writes bytes `data` of vector `part` of image column `column`, from byte `offset` of
    /// the vector on, as one `image_data` chunk; when `aligned`, its bytes start at a multiple
    /// of [`IMAGE_ALIGN`] in the stream (the chunk's `pad` makes up the difference), so that a
    /// reader may map them.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when `data` does not fit in a record, [`Error::Io`].
    pub fn write_image_data(
        &mut self,
        column: &str,
        part: &str,
        offset: u64,
        data: &[u8],
        aligned: bool,
    ) -> Result<(), Error> {
        let record = self.chunks + 1;
        if data.len() as u64 + IMAGE_ALIGN + RECORD_OVERHEAD_BYTES > MAX_RECORD_BYTES {
            return Err(Error::InvalidColumns {
                record,
                message: format!(
                    "{} bytes of image data are more than a record may hold",
                    data.len()
                ),
            });
        }
        let chunk = |pad: &'static [u8], data| {
            Chunk::ImageData(ImageDataChunk {
                column: column.to_owned(),
                part: part.to_owned(),
                offset,
                pad,
                data,
            })
        };
        // The record's bytes before `data` with no filler; then the filler that moves `data`
        // to the next multiple (its `bin` marker grows from 2 bytes to 3 past 255 bytes).
        let mut prefix = Vec::new();
        rmp_serde::encode::write_named(&mut prefix, &chunk(&[], &[])).map_err(|err| {
            Error::InvalidColumns {
                record,
                message: err.to_string(),
            }
        })?;
        let before_data = self.out.written + prefix.len() as u64 - bin_marker_bytes(0)
            + bin_marker_bytes(data.len());
        let short = if aligned {
            (IMAGE_ALIGN - before_data % IMAGE_ALIGN) % IMAGE_ALIGN
        } else {
            0
        };
        let pad_len = match short {
            0..=255 => short,
            256 => IMAGE_ALIGN + 255,
            _ => short - 1,
        } as usize;
        static ZEROS: [u8; IMAGE_ALIGN as usize * 2] = [0; IMAGE_ALIGN as usize * 2];
        self.serialize(record, &chunk(&ZEROS[..pad_len], data))?;
        debug_assert!(
            !aligned || (self.out.written - data.len() as u64).is_multiple_of(IMAGE_ALIGN)
        );
        self.chunks = record;
        Ok(())
    }

    /// Writes `strings` in order, as `strings` chunks of at most [`Writer::chunk_rows`] strings
    /// and 16 MiB of text each. Their indices across all `strings` chunks are their ids.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] for a string too long for a record, [`Error::Io`].
    pub fn write_strings<'s, I>(&mut self, strings: I) -> Result<(), Error>
    where
        I: IntoIterator<Item = &'s str>,
    {
        let [data, lengths, ..] = &mut self.scratch;
        let mut data = std::mem::take(data);
        let mut lengths = std::mem::take(lengths);
        data.clear();
        lengths.clear();
        let mut n_strings = 0usize;
        let mut result = Ok(());
        for text in strings {
            if n_strings > 0
                && (n_strings >= self.chunk_rows || data.len() + text.len() > STRING_CHUNK_BYTES)
            {
                result = self.write_chunk(&Chunk::Strings(StringsChunk {
                    data: &data,
                    lengths: &lengths,
                }));
                if result.is_err() {
                    break;
                }
                data.clear();
                lengths.clear();
                n_strings = 0;
            }
            let Ok(length) = u32::try_from(text.len()) else {
                result = Err(Error::InvalidColumns {
                    record: self.chunks + 1,
                    message: format!("a string of {} bytes is too long to write", text.len()),
                });
                break;
            };
            data.extend_from_slice(text.as_bytes());
            encode_column(&[length], &mut lengths);
            n_strings += 1;
        }
        if result.is_ok() && n_strings > 0 {
            result = self.write_chunk(&Chunk::Strings(StringsChunk {
                data: &data,
                lengths: &lengths,
            }));
        }
        self.scratch[0] = data;
        self.scratch[1] = lengths;
        result
    }

    /// Writes node kinds as one `node_kinds` chunk: each a name and whether it is synthetic.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn write_node_kinds<'s, I>(&mut self, kinds: I) -> Result<(), Error>
    where
        I: IntoIterator<Item = (&'s str, bool)>,
    {
        let (names, synthetic) = kinds
            .into_iter()
            .map(|(name, synthetic)| (name.to_owned(), synthetic))
            .unzip();
        self.write_chunk(&Chunk::NodeKinds(NodeKindsChunk { names, synthetic }))
    }

    /// Writes the root of the analyses.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn write_root(&mut self, node: u32) -> Result<(), Error> {
        self.write_chunk(&Chunk::Root(RootChunk { node }))
    }

    /// Writes nodes as `nodes` chunks of at most [`Writer::chunk_rows`] rows.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the columns differ in length, [`Error::Io`].
    pub fn write_nodes(&mut self, nodes: &NodeColumns<'_>) -> Result<(), Error> {
        let n_rows = nodes.object_id.len();
        self.check_lengths(
            n_rows,
            &[
                ("kind", nodes.kind.len()),
                ("type_name", nodes.type_name.len()),
                ("name", nodes.name.len()),
                ("shallow_size", nodes.shallow_size.len()),
                ("edge_count", nodes.edge_count.len()),
            ],
        )?;
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut result = Ok(());
        for start in (0..n_rows).step_by(self.chunk_rows) {
            let rows = start..(start + self.chunk_rows).min(n_rows);
            let [object_id, kind, type_name, name, shallow_size, edge_count] = &mut scratch;
            encode_fresh(&nodes.object_id[rows.clone()], object_id);
            encode_fresh(&nodes.kind[rows.clone()], kind);
            encode_fresh(&nodes.type_name[rows.clone()], type_name);
            encode_fresh(&nodes.name[rows.clone()], name);
            encode_fresh(&nodes.shallow_size[rows.clone()], shallow_size);
            encode_fresh(&nodes.edge_count[rows], edge_count);
            result = self.write_chunk(&Chunk::Nodes(NodesChunk {
                object_id,
                kind,
                type_name,
                name,
                shallow_size,
                edge_count,
                refcount: &[],
            }));
            if result.is_err() {
                break;
            }
        }
        self.scratch = scratch;
        result
    }

    /// Writes edges as `edges` chunks of at most [`Writer::chunk_rows`] rows.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the columns differ in length, [`Error::Io`].
    pub fn write_edges(&mut self, edges: &EdgeColumns<'_>) -> Result<(), Error> {
        let n_rows = edges.to.len();
        self.check_lengths(
            n_rows,
            &[("kind", edges.kind.len()), ("name", edges.name.len())],
        )?;
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut result = Ok(());
        for start in (0..n_rows).step_by(self.chunk_rows) {
            let rows = start..(start + self.chunk_rows).min(n_rows);
            let [to, kind, name, ..] = &mut scratch;
            encode_fresh(&edges.to[rows.clone()], to);
            encode_fresh(&edges.kind[rows.clone()], kind);
            encode_fresh(&edges.name[rows], name);
            result = self.write_chunk(&Chunk::Edges(EdgesChunk {
                to,
                to_object: &[],
                kind,
                name,
            }));
            if result.is_err() {
                break;
            }
        }
        self.scratch = scratch;
        result
    }

    /// Writes stored analysis results as `analysis` chunks of at most [`Writer::chunk_rows`]
    /// rows, in node order.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the columns differ in length, [`Error::Io`].
    pub fn write_analysis(&mut self, analysis: &AnalysisColumns<'_>) -> Result<(), Error> {
        let n_rows = analysis.dominator.len();
        self.check_lengths(
            n_rows,
            &[
                ("retained_size", analysis.retained_size.len()),
                ("distance", analysis.distance.len()),
            ],
        )?;
        if !analysis.retained_count.is_empty() {
            self.check_lengths(n_rows, &[("retained_count", analysis.retained_count.len())])?;
        }
        if !analysis.chain_parent.is_empty() {
            self.check_lengths(n_rows, &[("chain_parent", analysis.chain_parent.len())])?;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut result = Ok(());
        for start in (0..n_rows).step_by(self.chunk_rows) {
            let rows = start..(start + self.chunk_rows).min(n_rows);
            let [
                dominator,
                retained_size,
                distance,
                retained_count,
                chain_parent,
                ..,
            ] = &mut scratch;
            encode_fresh(&analysis.dominator[rows.clone()], dominator);
            encode_fresh(&analysis.retained_size[rows.clone()], retained_size);
            encode_fresh(&analysis.distance[rows.clone()], distance);
            retained_count.clear();
            if !analysis.retained_count.is_empty() {
                encode_column(&analysis.retained_count[rows.clone()], retained_count);
            }
            chain_parent.clear();
            if !analysis.chain_parent.is_empty() {
                encode_column(&analysis.chain_parent[rows], chain_parent);
            }
            result = self.write_chunk(&Chunk::Analysis(AnalysisChunk {
                dominator,
                retained_size,
                distance,
                retained_count,
                chain_parent,
            }));
            if result.is_err() {
                break;
            }
        }
        self.scratch = scratch;
        result
    }

    /// Writes stored per-type totals as one `type_totals` chunk (types are few).
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the columns differ in length, [`Error::Io`].
    pub fn write_type_totals(&mut self, totals: &TypeTotalsColumns<'_>) -> Result<(), Error> {
        self.check_lengths(
            totals.type_name.len(),
            &[
                ("count", totals.count.len()),
                ("shallow_size", totals.shallow_size.len()),
                ("retained_size", totals.retained_size.len()),
            ],
        )?;
        let mut scratch = std::mem::take(&mut self.scratch);
        let [type_name, count, shallow_size, retained_size, ..] = &mut scratch;
        encode_fresh(totals.type_name, type_name);
        encode_fresh(totals.count, count);
        encode_fresh(totals.shallow_size, shallow_size);
        encode_fresh(totals.retained_size, retained_size);
        let result = self.write_chunk(&Chunk::TypeTotals(TypeTotalsChunk {
            type_name,
            count,
            shallow_size,
            retained_size,
        }));
        self.scratch = scratch;
        result
    }

    /// Writes one type's stored merged paths as one `type_paths` chunk (a few hundred rows).
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the columns differ in length, [`Error::Io`].
    pub fn write_type_paths(&mut self, paths: &TypePathsColumns<'_>) -> Result<(), Error> {
        self.check_lengths(
            paths.node.len(),
            &[
                ("edge", paths.edge.len()),
                ("parent", paths.parent.len()),
                ("depth", paths.depth.len()),
                ("indent", paths.indent.len()),
                ("is_target", paths.is_target.len()),
                ("targets", paths.targets.len()),
                ("targets_retained_size", paths.targets_retained_size.len()),
                ("skipped_steps", paths.skipped_steps.len()),
                ("hidden_children", paths.hidden_children.len()),
                ("hidden_targets", paths.hidden_targets.len()),
                ("hidden_retained_size", paths.hidden_retained_size.len()),
            ],
        )?;
        fn encoded<T: LeInt>(values: &[T]) -> Vec<u8> {
            let mut out = Vec::new();
            encode_column(values, &mut out);
            out
        }
        self.write_chunk(&Chunk::TypePaths(TypePathsChunk {
            type_name: paths.type_name,
            branches: paths.branches,
            objects: paths.objects,
            reached: paths.reached,
            retained_size: paths.retained_size,
            node: &encoded(paths.node),
            edge: &encoded(paths.edge),
            parent: &encoded(paths.parent),
            depth: &encoded(paths.depth),
            indent: &encoded(paths.indent),
            is_target: &encoded(paths.is_target),
            targets: &encoded(paths.targets),
            targets_retained_size: &encoded(paths.targets_retained_size),
            skipped_steps: &encoded(paths.skipped_steps),
            hidden_children: &encoded(paths.hidden_children),
            hidden_targets: &encoded(paths.hidden_targets),
            hidden_retained_size: &encoded(paths.hidden_retained_size),
        }))
    }

    /// Writes the types below one accumulation point as one `accumulated` chunk (a few rows).
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the columns differ in length, [`Error::Io`].
    pub fn write_accumulated(&mut self, types: &AccumulatedColumns<'_>) -> Result<(), Error> {
        self.check_lengths(
            types.type_name.len(),
            &[
                ("count", types.count.len()),
                ("retained_size", types.retained_size.len()),
            ],
        )?;
        let mut scratch = std::mem::take(&mut self.scratch);
        let [type_name, count, retained_size, ..] = &mut scratch;
        encode_fresh(types.type_name, type_name);
        encode_fresh(types.count, count);
        encode_fresh(types.retained_size, retained_size);
        let result = self.write_chunk(&Chunk::Accumulated(AccumulatedChunk {
            point: types.point,
            representative: types.representative,
            type_name,
            count,
            retained_size,
        }));
        self.scratch = scratch;
        result
    }

    /// Writes array lengths as `array_lengths` chunks of at most [`Writer::chunk_rows`] rows.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the columns differ in length, [`Error::Io`].
    pub fn write_array_lengths(&mut self, lengths: &ArrayLengthColumns<'_>) -> Result<(), Error> {
        let n_rows = lengths.node.len();
        self.check_lengths(n_rows, &[("length", lengths.length.len())])?;
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut result = Ok(());
        for start in (0..n_rows).step_by(self.chunk_rows) {
            let rows = start..(start + self.chunk_rows).min(n_rows);
            let [node, length, ..] = &mut scratch;
            encode_fresh(&lengths.node[rows.clone()], node);
            encode_fresh(&lengths.length[rows], length);
            result = self.write_chunk(&Chunk::ArrayLengths(ArrayLengthsChunk {
                node,
                length,
                slot_bytes: lengths.slot_bytes,
            }));
            if result.is_err() {
                break;
            }
        }
        self.scratch = scratch;
        result
    }

    /// Writes collections' fill as `fill` chunks of at most [`Writer::chunk_rows`] rows.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the columns differ in length, [`Error::Io`].
    pub fn write_fill(&mut self, fill: &FillColumns<'_>) -> Result<(), Error> {
        let n_rows = fill.node.len();
        self.check_lengths(
            n_rows,
            &[
                ("elements", fill.elements.len()),
                ("capacity", fill.capacity.len()),
                ("table_bytes", fill.table_bytes.len()),
                ("spare_bytes", fill.spare_bytes.len()),
            ],
        )?;
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut result = Ok(());
        for start in (0..n_rows).step_by(self.chunk_rows) {
            let rows = start..(start + self.chunk_rows).min(n_rows);
            let [node, elements, capacity, table_bytes, spare_bytes, ..] = &mut scratch;
            encode_fresh(&fill.node[rows.clone()], node);
            encode_fresh(&fill.elements[rows.clone()], elements);
            encode_fresh(&fill.capacity[rows.clone()], capacity);
            encode_fresh(&fill.table_bytes[rows.clone()], table_bytes);
            encode_fresh(&fill.spare_bytes[rows], spare_bytes);
            result = self.write_chunk(&Chunk::Fill(FillChunk {
                node,
                elements,
                capacity,
                table_bytes,
                spare_bytes,
            }));
            if result.is_err() {
                break;
            }
        }
        self.scratch = scratch;
        result
    }

    /// Writes samples as one `samples` chunk. Optional columns may be empty slices; the GPU
    /// columns hold one value per sample and GPU.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the columns disagree in length, [`Error::Io`].
    pub fn write_samples(&mut self, samples: &SampleColumns<'_>) -> Result<(), Error> {
        let mut blobs: [Vec<u8>; 10] = Default::default();
        let [
            t_ms,
            rss,
            pss,
            uss,
            swap,
            processes,
            cgroup_current,
            system_available,
            gpu_process,
            gpu_used,
        ] = &mut blobs;
        encode_into(samples.t_ms, t_ms);
        encode_into(samples.rss, rss);
        encode_into(samples.pss, pss);
        encode_into(samples.uss, uss);
        encode_into(samples.swap, swap);
        encode_into(samples.processes, processes);
        encode_into(samples.cgroup_current, cgroup_current);
        encode_into(samples.system_available, system_available);
        encode_into(samples.gpu_process, gpu_process);
        encode_into(samples.gpu_used, gpu_used);
        self.write_chunk(&Chunk::Samples(SamplesChunk {
            t_ms,
            rss,
            pss,
            uss,
            swap,
            processes,
            cgroup_current,
            system_available,
            gpu_process,
            gpu_used,
        }))
    }

    /// Hands everything written so far to the stream and flushes it, so that a reader (or what
    /// is left after a crash) sees every complete chunk.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn flush(&mut self) -> Result<(), Error> {
        let offset = self.out.written;
        self.out.flush().map_err(|source| Error::Io {
            record: self.chunks,
            offset,
            source,
        })
    }

    /// Writes the frames of an allocation snapshot as `frames` chunks of at most
    /// [`Writer::chunk_rows`] rows.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the columns differ in length, [`Error::Io`].
    pub fn write_frames(&mut self, frames: &FrameColumns<'_>) -> Result<(), Error> {
        let n_rows = frames.filename.len();
        self.check_lengths(
            n_rows,
            &[("name", frames.name.len()), ("lineno", frames.lineno.len())],
        )?;
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut result = Ok(());
        for start in (0..n_rows).step_by(self.chunk_rows) {
            let rows = start..(start + self.chunk_rows).min(n_rows);
            let [filename, name, lineno, ..] = &mut scratch;
            encode_fresh(&frames.filename[rows.clone()], filename);
            encode_fresh(&frames.name[rows.clone()], name);
            encode_fresh(&frames.lineno[rows], lineno);
            result = self.write_chunk(&Chunk::Frames(FramesChunk {
                filename,
                name,
                lineno,
            }));
            if result.is_err() {
                break;
            }
        }
        self.scratch = scratch;
        result
    }

    /// Writes the stacks of an allocation snapshot as `stacks` chunks of whole stacks, at most
    /// [`Writer::chunk_rows`] stacks and (unless one stack alone is longer) as many frame
    /// references each.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the frame counts do not add up to the frames,
    /// [`Error::Io`].
    pub fn write_stacks(&mut self, stacks: &StackColumns<'_>) -> Result<(), Error> {
        let declared: u64 = stacks.frame_count.iter().map(|&n| u64::from(n)).sum();
        if declared != stacks.frames.len() as u64 {
            return Err(Error::InvalidColumns {
                record: self.chunks + 1,
                message: format!(
                    "the frame counts add up to {declared} frames but frames has {}",
                    stacks.frames.len()
                ),
            });
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut result = Ok(());
        let (mut first_stack, mut first_frame) = (0usize, 0usize);
        while first_stack < stacks.frame_count.len() {
            // Whole stacks only, so a reader never sees half of one.
            let (mut end_stack, mut end_frame) = (first_stack, first_frame);
            while end_stack < stacks.frame_count.len()
                && end_stack - first_stack < self.chunk_rows
                && (end_stack == first_stack || end_frame - first_frame < self.chunk_rows)
            {
                end_frame += stacks.frame_count[end_stack] as usize;
                end_stack += 1;
            }
            let [frame_count, frames, ..] = &mut scratch;
            encode_fresh(&stacks.frame_count[first_stack..end_stack], frame_count);
            encode_fresh(&stacks.frames[first_frame..end_frame], frames);
            result = self.write_chunk(&Chunk::Stacks(StacksChunk {
                frame_count,
                frames,
            }));
            if result.is_err() {
                break;
            }
            (first_stack, first_frame) = (end_stack, end_frame);
        }
        self.scratch = scratch;
        result
    }

    /// Writes the live sites of an allocation snapshot as `sites` chunks of at most
    /// [`Writer::chunk_rows`] rows; with no site at all, one empty chunk, so that a reader
    /// can tell an empty snapshot from one cut short before its sites.
    ///
    /// # Errors
    /// [`Error::InvalidColumns`] when the columns differ in length, [`Error::Io`].
    pub fn write_sites(&mut self, sites: &SiteColumns<'_>) -> Result<(), Error> {
        let n_rows = sites.stack.len();
        self.check_lengths(
            n_rows,
            &[
                ("domain", sites.domain.len()),
                ("bytes", sites.bytes.len()),
                ("count", sites.count.len()),
            ],
        )?;
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut result;
        let mut start = 0;
        loop {
            let rows = start..(start + self.chunk_rows).min(n_rows);
            let [stack, domain, bytes, count, ..] = &mut scratch;
            encode_fresh(&sites.stack[rows.clone()], stack);
            encode_fresh(&sites.domain[rows.clone()], domain);
            encode_fresh(&sites.bytes[rows.clone()], bytes);
            encode_fresh(&sites.count[rows.clone()], count);
            result = self.write_chunk(&Chunk::Sites(SitesChunk {
                stack,
                domain,
                bytes,
                count,
            }));
            start = rows.end;
            if result.is_err() || start >= n_rows {
                break;
            }
        }
        self.scratch = scratch;
        result
    }

    /// Writes the end record, flushes, and returns the stream.
    ///
    /// # Errors
    /// [`Error::Io`].
    pub fn finish(mut self) -> Result<W, Error> {
        let record = self.chunks + 1;
        self.serialize(
            record,
            &EndRecord {
                type_name: "end",
                chunks: self.chunks,
            },
        )?;
        let offset = self.out.written;
        self.out.inner.into_inner().map_err(|err| Error::Io {
            record,
            offset,
            source: err.into_error(),
        })
    }

    /// Fails unless every `(name, len)` is `n_rows` long.
    fn check_lengths(&self, n_rows: usize, columns: &[(&str, usize)]) -> Result<(), Error> {
        match columns.iter().find(|(_, len)| *len != n_rows) {
            None => Ok(()),
            Some((name, len)) => Err(Error::InvalidColumns {
                record: self.chunks + 1,
                message: format!("column {name} has {len} rows, not {n_rows}"),
            }),
        }
    }

    /// Serializes one record as a MessagePack map.
    fn serialize<T: Serialize + ?Sized>(&mut self, record: u64, value: &T) -> Result<(), Error> {
        let offset = self.out.written;
        rmp_serde::encode::write_named(&mut self.out, value).map_err(|err| {
            let source = match err {
                rmp_serde::encode::Error::InvalidValueWrite(err) => io::Error::from(err),
                other => io::Error::other(other.to_string()),
            };
            Error::Io {
                record,
                offset,
                source,
            }
        })
    }
}

/// Bytes of the MessagePack `bin` marker of a blob of `len` bytes.
fn bin_marker_bytes(len: usize) -> u64 {
    match len {
        0..=255 => 2,
        256..=65_535 => 3,
        _ => 5,
    }
}

/// Replaces `out` with the little-endian bytes of `values`.
fn encode_fresh<T: LeInt>(values: &[T], out: &mut Vec<u8>) {
    out.clear();
    encode_column(values, out);
}

/// Bytes of blob data in `chunk`.
fn payload_bytes(chunk: &Chunk<'_>) -> u64 {
    let blobs: &[&[u8]] = match chunk {
        Chunk::Strings(c) => &[c.data, c.lengths],
        Chunk::Nodes(c) => &[
            c.object_id,
            c.kind,
            c.type_name,
            c.name,
            c.shallow_size,
            c.edge_count,
            c.refcount,
        ],
        Chunk::Edges(c) => &[c.to, c.to_object, c.kind, c.name],
        Chunk::Analysis(c) => &[
            c.dominator,
            c.retained_size,
            c.distance,
            c.retained_count,
            c.chain_parent,
        ],
        Chunk::TypeTotals(c) => &[c.type_name, c.count, c.shallow_size, c.retained_size],
        Chunk::Accumulated(c) => &[c.type_name, c.count, c.retained_size],
        Chunk::TypePaths(c) => &[
            c.node,
            c.edge,
            c.parent,
            c.depth,
            c.indent,
            c.is_target,
            c.targets,
            c.targets_retained_size,
            c.skipped_steps,
            c.hidden_children,
            c.hidden_targets,
            c.hidden_retained_size,
        ],
        Chunk::ArrayLengths(c) => &[c.node, c.length],
        Chunk::Fill(c) => &[c.node, c.elements, c.capacity, c.table_bytes, c.spare_bytes],
        Chunk::Samples(c) => &[
            c.t_ms,
            c.rss,
            c.pss,
            c.uss,
            c.swap,
            c.processes,
            c.cgroup_current,
            c.system_available,
            c.gpu_process,
            c.gpu_used,
        ],
        Chunk::TimelineInfo(c) => {
            let strings = c.command.iter().map(String::len).sum::<usize>()
                + c.gpus
                    .iter()
                    .map(|gpu| gpu.name.len() + gpu.uuid.len())
                    .sum::<usize>()
                + c.thresholds
                    .iter()
                    .map(|t| t.resource.len() + t.spec.len())
                    .sum::<usize>();
            return strings as u64
                + 64 * (c.command.len() + c.gpus.len() + c.thresholds.len()) as u64;
        }
        Chunk::Event(c) => {
            return [&c.path, &c.message, &c.dump_kind, &c.resource]
                .iter()
                .map(|text| text.as_ref().map_or(0, |text| text.len() as u64))
                .sum();
        }
        Chunk::Frames(c) => &[c.filename, c.name, c.lineno],
        Chunk::Stacks(c) => &[c.frame_count, c.frames],
        Chunk::Sites(c) => &[c.stack, c.domain, c.bytes, c.count],
        Chunk::NodeKinds(c) => {
            return c
                .names
                .iter()
                .map(|name| name.len() as u64 + 6)
                .sum::<u64>()
                + c.synthetic.len() as u64;
        }
        Chunk::ImageData(c) => &[c.pad, c.data],
        Chunk::Image(c) => {
            return c
                .parts
                .iter()
                .map(|(name, _, _)| name.len() as u64 + 16)
                .sum::<u64>()
                + c.scalars
                    .keys()
                    .map(|name| name.len() as u64 + 10)
                    .sum::<u64>()
                + (c.column.len() + c.repr.len()) as u64;
        }
        Chunk::Root(_) | Chunk::Unknown(_) => &[],
    };
    blobs.iter().map(|blob| blob.len() as u64).sum()
}
