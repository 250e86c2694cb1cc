//! The in-memory reader's bulk columns (nodes, edges, analysis): each decoded by its own rayon
//! task straight into a vector of its final size, the earliest error reported as a streamed read
//! would.

use super::{Columns, FileStrings, Release};
use crate::ImportError;
use crate::hgd::malformed;
use heapgraph_format::{self as format, Chunk, decode_column};
use heapgraph_model::EdgeKind;

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
    object_id: Vec<u64>,
    node_kind: Vec<u8>,
    node_type: Vec<u32>,
    node_name: Vec<u32>,
    shallow_size: Vec<u64>,
    refcount: Vec<u32>,
    first_edge: Vec<u64>,
    edge_to: Vec<u32>,
    edge_to_object: Vec<u64>,
    edge_kind: Vec<EdgeKind>,
    edge_name: Vec<u32>,
    dominator: Vec<u32>,
    retained_size: Vec<u64>,
    distance: Vec<u32>,
    retained_count: Vec<u32>,
    retained_count_missing: bool,
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
            spawn_column!(nodes, object_id, object_id);
            spawn_column!(nodes, node_kind, kind);
            spawn_column!(nodes, node_type, type_name);
            spawn_column!(nodes, node_name, name);
            spawn_column!(nodes, shallow_size, shallow_size);
            spawn_column!(nodes, refcount, refcount);
            spawn_column!(edges, edge_to, to);
            spawn_column!(edges, edge_to_object, to_object);
            spawn_column!(edges, edge_name, name);
            spawn_column!(analysis, dominator, dominator);
            spawn_column!(analysis, retained_size, retained_size);
            spawn_column!(analysis, distance, distance);
            spawn_column!(analysis, retained_count, retained_count);
            *retained_count_missing = analysis
                .iter()
                .any(|located| located.chunk.retained_count.is_empty());
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

    /// Moves the columns into `columns`, which holds none of them yet.
    pub(super) fn move_into(self, columns: &mut Columns) {
        columns.object_id = self.object_id;
        columns.node_kind = self.node_kind;
        columns.node_type = self.node_type;
        columns.node_name = self.node_name;
        columns.shallow_size = self.shallow_size;
        columns.refcount = self.refcount;
        columns.first_edge = self.first_edge;
        columns.edge_to = self.edge_to;
        columns.edge_to_object = self.edge_to_object;
        columns.edge_kind = self.edge_kind;
        columns.edge_name = self.edge_name;
        columns.dominator = self.dominator;
        columns.retained_size = self.retained_size;
        columns.distance = self.distance;
        columns.retained_count = self.retained_count;
        columns.retained_count_missing = self.retained_count_missing;
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

/// The CSR offsets from the nodes chunks' edge counts (`out` is empty): 0, then the running
/// sums.
fn prefix_sums_of_edge_counts(
    chunks: &[Located<&format::NodesChunk<'_>>],
    out: &mut Vec<u64>,
    release: Release<'_>,
) -> Result<(), ImportError> {
    let total: usize = chunks
        .iter()
        .map(|located| located.chunk.edge_count.len() / 4)
        .sum();
    out.reserve_exact(total + 1);
    out.push(0);
    let mut running = 0u64;
    for located in chunks {
        let (edge_counts, _) = located.chunk.edge_count.as_chunks::<4>();
        out.extend(edge_counts.iter().map(|count| {
            running += u64::from(u32::from_le_bytes(*count));
            running
        }));
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
