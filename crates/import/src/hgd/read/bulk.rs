//! The in-memory reader's bulk columns (nodes, edges, analysis): each decoded by its own rayon
//! task straight into its final form (a vector of its final size, or the model's compact
//! column, without a wide copy between), the earliest error reported as a streamed read would.

use super::{Columns, FileStrings, Release};
use crate::ImportError;
use crate::hgd::malformed;
use heapgraph_format::{self as format, Chunk, column_len, decode_column};
use heapgraph_model::{EdgeKind, EdgeNames, EdgeOffsets, PackedU64, U64Column};

/// Where an error was found, to report the earliest of several; unplaced errors sort last.
pub(super) fn error_offset(err: &ImportError) -> u64 {
    match err {
        ImportError::Malformed { offset, .. } | ImportError::Truncated { offset, .. } => *offset,
        _ => u64::MAX,
    }
}

/// A chunk with the record number and byte offset that errors name.
pub(super) struct Located<C> {
    pub(super) record: u64,
    pub(super) start: u64,
    pub(super) chunk: C,
}

impl<C> Located<C> {
    pub(super) fn error(&self, message: impl std::fmt::Display) -> ImportError {
        malformed(self.start, format!("record {}: {message}", self.record))
    }
}

/// The string table of the file's strings chunks, in file order.
pub(super) fn file_strings_of(
    chunks: &[Located<format::StringsChunk<'_>>],
    release: Release<'_>,
) -> Result<FileStrings, ImportError> {
    let mut n_strings = 0u64;
    let mut n_bytes = 0usize;
    for located in chunks {
        n_strings += located.chunk.rows().map_err(|err| located.error(err))? as u64;
        n_bytes += located.chunk.data.len();
    }
    if n_strings > u64::from(u32::MAX) {
        return Err(chunks[chunks.len() - 1].error("the file has more than 2^32 strings"));
    }
    let mut file_strings = FileStrings::with_capacity(n_strings as usize, n_bytes);
    for located in chunks {
        for text in located.chunk.strings().map_err(|err| located.error(err))? {
            file_strings.push(text);
        }
        release(located.chunk.data);
        release(located.chunk.lengths);
    }
    Ok(file_strings)
}

/// The bulk columns of a file (nodes, edges, analysis), decoded one column per task.
#[derive(Default)]
pub(super) struct BulkColumns {
    object_id: PackedU64,
    node_kind: Vec<u8>,
    node_type: Vec<u32>,
    node_name: Vec<u32>,
    shallow_size: PackedU64,
    refcount: Vec<u32>,
    first_edge: EdgeOffsets,
    edge_to: Vec<u32>,
    edge_to_object: Vec<u64>,
    edge_kind: Vec<EdgeKind>,
    edge_name: EdgeNames,
    dominator: Vec<u32>,
    retained_size: U64Column,
    distance: Vec<u32>,
    retained_count: Vec<u32>,
    retained_count_missing: bool,
    chain_parent: Vec<u32>,
    chain_parent_missing: bool,
}

impl BulkColumns {
    /// Decodes the columns of `chunks` (nodes, edges and analysis chunks, in file order).
    pub(super) fn decode(
        chunks: &[Located<Chunk<'_>>],
        release: Release<'_>,
    ) -> Result<BulkColumns, ImportError> {
        let nodes = of_kind(chunks, |chunk| match chunk {
            Chunk::Nodes(chunk) => Some(chunk),
            _ => None,
        });
        let edges = of_kind(chunks, |chunk| match chunk {
            Chunk::Edges(chunk) => Some(chunk),
            _ => None,
        });
        let analysis = of_kind(chunks, |chunk| match chunk {
            Chunk::Analysis(chunk) => Some(chunk),
            _ => None,
        });
        let mut out = BulkColumns::default();
        // Each task reports its error here; `scope` returns once all of them are done.
        let errors: std::sync::Mutex<Vec<ImportError>> = std::sync::Mutex::new(Vec::new());
        let report = |result: Result<(), ImportError>| {
            if let Err(err) = result {
                errors
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(err);
            }
        };
        rayon::scope(|scope| {
            let BulkColumns {
                object_id,
                node_kind,
                node_type,
                node_name,
                shallow_size,
                refcount,
                first_edge,
                edge_to,
                edge_to_object,
                edge_kind,
                edge_name,
                dominator,
                retained_size,
                distance,
                retained_count,
                retained_count_missing,
                chain_parent,
                chain_parent_missing,
            } = &mut out;
            let report = &report;
            macro_rules! spawn_column {
                ($chunks:expr, $out:expr, $field:ident) => {{
                    let chunks = &$chunks;
                    let out = $out;
                    scope.spawn(move |_| {
                        report(concat_column(chunks, out, |chunk| chunk.$field, release))
                    });
                }};
            }
            macro_rules! spawn_compact {
                ($chunks:expr, $out:expr, $field:ident, $width:ty, $new:expr) => {{
                    let chunks = &$chunks;
                    let out = $out;
                    scope.spawn(move |_| {
                        report(compact_column::<_, $width, _>(
                            chunks,
                            out,
                            |chunk| chunk.$field,
                            $new,
                            release,
                        ))
                    });
                }};
            }
            // Object ids are packed in steps of the alignment they all share, which a first
            // look at the mapped bytes finds.
            spawn_compact!(nodes, object_id, object_id, u64, |chunks| {
                PackedU64::with_shift(
                    0,
                    PackedU64::alignment(chunks.iter().flat_map(|blob| le_values::<u64>(blob))),
                )
            });
            spawn_column!(nodes, node_kind, kind);
            spawn_column!(nodes, node_type, type_name);
            spawn_column!(nodes, node_name, name);
            spawn_compact!(nodes, shallow_size, shallow_size, u64, |_| PackedU64::new());
            spawn_column!(nodes, refcount, refcount);
            spawn_column!(edges, edge_to, to);
            spawn_column!(edges, edge_to_object, to_object);
            spawn_compact!(edges, edge_name, name, u32, |_| EdgeNames::new());
            spawn_column!(analysis, dominator, dominator);
            spawn_compact!(analysis, retained_size, retained_size, u64, |_| {
                U64Column::new()
            });
            spawn_column!(analysis, distance, distance);
            spawn_column!(analysis, retained_count, retained_count);
            *retained_count_missing = analysis
                .iter()
                .any(|located| located.chunk.retained_count.is_empty());
            spawn_column!(analysis, chain_parent, chain_parent);
            *chain_parent_missing = analysis
                .iter()
                .any(|located| located.chunk.chain_parent.is_empty());
            let nodes = &nodes;
            scope.spawn(move |_| report(prefix_sums_of_edge_counts(nodes, first_edge, release)));
            let edges = &edges;
            scope.spawn(move |_| report(edge_kinds_of(edges, edge_kind, release)));
        });
        // Report the error of the earliest record, as a sequential read would.
        errors
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .into_iter()
            .min_by_key(error_offset)
            .map_or(Ok(out), Err)
    }

    /// Moves the graph's columns (nodes and edges) into `columns`, which holds none of them
    /// yet.
    pub(super) fn move_into(self, columns: &mut Columns) {
        columns.object_id = self.object_id;
        columns.node_kind = self.node_kind;
        columns.node_type = self.node_type;
        columns.node_name = self.node_name;
        columns.shallow_size = self.shallow_size;
        columns.refcount = self.refcount;
        columns.first_edges = self.first_edge;
        columns.edge_to = self.edge_to;
        columns.edge_to_object = self.edge_to_object;
        columns.edge_kind = self.edge_kind;
        columns.edge_names = self.edge_name;
    }

    /// Moves the analysis's columns into `columns`, which holds none of them yet.
    pub(super) fn move_analysis_into(self, columns: &mut Columns) {
        columns.dominator = self.dominator;
        columns.retained_size = self.retained_size;
        columns.distance = self.distance;
        columns.retained_count = self.retained_count;
        columns.retained_count_missing = self.retained_count_missing;
        columns.chain_parent = self.chain_parent;
        columns.chain_parent_missing = self.chain_parent_missing;
    }
}

/// The chunks that `pick` narrows to one type, with their places.
fn of_kind<'c, 'a, C>(
    chunks: &'c [Located<Chunk<'a>>],
    pick: impl Fn(&'c Chunk<'a>) -> Option<&'c C>,
) -> Vec<Located<&'c C>> {
    chunks
        .iter()
        .filter_map(|located| {
            pick(&located.chunk).map(|chunk| Located {
                record: located.record,
                start: located.start,
                chunk,
            })
        })
        .collect()
}

/// Concatenates the column that `blob` picks from each chunk into `out`, sized once.
fn concat_column<'a, C: 'a, T: format::LeInt>(
    chunks: &[Located<&C>],
    out: &mut Vec<T>,
    blob: impl Fn(&C) -> &'a [u8],
    release: Release<'_>,
) -> Result<(), ImportError> {
    let total: usize = chunks
        .iter()
        .map(|located| blob(located.chunk).len() / T::WIDTH)
        .sum();
    out.reserve_exact(total);
    for located in chunks {
        decode_column(blob(located.chunk), out).map_err(|err| located.error(err))?;
        release(blob(located.chunk));
    }
    Ok(())
}

/// A column that can be built by pushing values one at a time (the model's compact columns).
trait Compact<T> {
    fn reserve_exact(&mut self, additional: usize);
    fn push(&mut self, value: T);
}

macro_rules! compact {
    ($($column:ty: $value:ty),*) => {$(
        impl Compact<$value> for $column {
            fn reserve_exact(&mut self, additional: usize) {
                <$column>::reserve_exact(self, additional);
            }
            fn push(&mut self, value: $value) {
                <$column>::push(self, value);
            }
        }
    )*};
}

compact!(PackedU64: u64, EdgeNames: u32, U64Column: u64);

/// A little-endian integer of a column blob.
trait Le: format::LeInt {
    fn from_le(bytes: &[u8]) -> Self;
}

impl Le for u64 {
    fn from_le(bytes: &[u8]) -> Self {
        u64::from_le_bytes(bytes.try_into().unwrap_or_default())
    }
}

impl Le for u32 {
    fn from_le(bytes: &[u8]) -> Self {
        u32::from_le_bytes(bytes.try_into().unwrap_or_default())
    }
}

/// The values of a column blob (a ragged end, refused beforehand, ignored).
fn le_values<T: Le>(blob: &[u8]) -> impl Iterator<Item = T> {
    blob.chunks_exact(T::WIDTH).map(T::from_le)
}

/// Pushes the column that `blob` picks from each chunk into a compact column that `new` makes
/// (it may look at all the blobs first), with no wide copy between.
fn compact_column<'a, C: 'a, T: Le, Out: Compact<T>>(
    chunks: &[Located<&C>],
    out: &mut Out,
    blob: impl Fn(&C) -> &'a [u8],
    new: impl FnOnce(&[&'a [u8]]) -> Out,
    release: Release<'_>,
) -> Result<(), ImportError> {
    for located in chunks {
        column_len::<T>(blob(located.chunk)).map_err(|err| located.error(err))?;
    }
    let blobs: Vec<&'a [u8]> = chunks.iter().map(|located| blob(located.chunk)).collect();
    *out = new(&blobs);
    out.reserve_exact(blobs.iter().map(|blob| blob.len() / T::WIDTH).sum());
    for blob in blobs {
        le_values::<T>(blob).for_each(|value| out.push(value));
        release(blob);
    }
    Ok(())
}

/// Checks that every column blob of the analysis chunks holds whole values, as decoding them
/// would, so that their errors are reported in file order beside the graph's before the
/// analysis is decoded (after the graph is built).
pub(super) fn check_columns(chunks: &[Located<Chunk<'_>>]) -> Result<(), ImportError> {
    for located in chunks {
        if let Chunk::Analysis(chunk) = &located.chunk {
            let checks = [
                column_len::<u32>(chunk.dominator).map(|_| ()),
                column_len::<u64>(chunk.retained_size).map(|_| ()),
                column_len::<u32>(chunk.distance).map(|_| ()),
                column_len::<u32>(chunk.retained_count).map(|_| ()),
            ];
            for check in checks {
                check.map_err(|err| located.error(err))?;
            }
        }
    }
    Ok(())
}

/// The CSR offsets from the nodes chunks' edge counts (`out` is empty): 0, then the running
/// sums.
fn prefix_sums_of_edge_counts(
    chunks: &[Located<&format::NodesChunk<'_>>],
    out: &mut EdgeOffsets,
    release: Release<'_>,
) -> Result<(), ImportError> {
    let total: usize = chunks
        .iter()
        .map(|located| located.chunk.edge_count.len() / 4)
        .sum();
    *out = EdgeOffsets::with_capacity(total + 1);
    out.push(0);
    let mut running = 0u64;
    for located in chunks {
        let (edge_counts, _) = located.chunk.edge_count.as_chunks::<4>();
        for count in edge_counts {
            running += u64::from(u32::from_le_bytes(*count));
            out.push(running);
        }
        release(located.chunk.edge_count);
    }
    Ok(())
}

/// The edge kinds of the edges chunks, each code checked.
fn edge_kinds_of(
    chunks: &[Located<&format::EdgesChunk<'_>>],
    out: &mut Vec<EdgeKind>,
    release: Release<'_>,
) -> Result<(), ImportError> {
    let total: usize = chunks.iter().map(|located| located.chunk.kind.len()).sum();
    out.reserve_exact(total);
    for located in chunks {
        let codes = located.chunk.kind;
        if let Some(pos) = codes
            .iter()
            .position(|&code| EdgeKind::from_u8(code).is_none())
        {
            return Err(located.error(bad_edge_kind(out.len() + pos, codes[pos])));
        }
        out.extend(
            codes
                .iter()
                .map(|&code| EdgeKind::from_u8(code).unwrap_or(EdgeKind::Weak)),
        );
        release(codes);
    }
    Ok(())
}

/// The message for edge number `edge` with the unknown kind code `code`.
pub(super) fn bad_edge_kind(edge: usize, code: u8) -> String {
    format!(
        "edge {edge} has kind code {code}; the codes are 0 to {}",
        EdgeKind::ALL.len() - 1
    )
}
