//! Writing a heap graph, and its analysis when given, as an `.hgd` stream: its columns as
//! images (what `convert` writes, read back without decoding) or as plain columns (what every
//! reader since the first reads, and what the Python dumper writes).

use super::read::image_names as names;
use super::{TOTAL_EDGES, TOTAL_NODES, TOTAL_STRINGS, write_error};
use heapgraph_format::{
    self as format, AccumulatedColumns, AnalysisColumns, ArrayLengthColumns, Chunk, EdgeColumns,
    FillColumns, Header, ImageChunk, KIND_HEAP_GRAPH, NodeColumns, TypePathsColumns,
    TypeTotalsColumns, VERSION_IMAGES, Writer,
};
use heapgraph_model::image::{ColumnImage, Imaged};
use heapgraph_model::{HeapGraph, StoredAnalysis, TypePathNode, TypePaths};
use std::collections::BTreeMap;
use std::io::{self, Write};

/// Bytes of one `image_data` chunk at most: a whole number of pages, so that the pieces of a
/// vector lie back to back in a map of the file but for the records' own bytes between them.
const IMAGE_PIECE_BYTES: usize = 64 << 20;

/// The vectors whose bytes start on a page of the file: from 1 MiB, below the 4 MiB from which
/// a reader maps them (`heapgraph_model::file_pages::MAP_FROM_BYTES`); a smaller one's filler would only make a small
/// dump's file larger.
const ALIGNED_FROM_BYTES: usize = 1 << 20;

/// Writes `graph` (and `analysis`, when given) as an `.hgd` stream: header, strings in id order,
/// node kinds, root, then the graph's and the analysis's columns as images (each column the
/// vectors it is in memory, those of 1 MiB or more page-aligned in the file), then the end
/// record.
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`] when `analysis` does not have one entry per node; otherwise
/// the stream's own errors.
pub fn write_heap_graph<W: Write>(
    graph: &HeapGraph,
    analysis: Option<&StoredAnalysis>,
    out: W,
) -> io::Result<()> {
    let piece_bytes = IMAGE_PIECE_BYTES;
    write_as(graph, analysis, out, Layout::Images { piece_bytes })
}

/// [`write_heap_graph`] as plain columns in chunks of about 1M rows (format version 1): what
/// every heapgraph reads, those before images too, larger and slower to reopen.
///
/// # Errors
/// As [`write_heap_graph`], and [`io::ErrorKind::InvalidInput`] when a node has 2³² edges or
/// more.
pub fn write_heap_graph_plain<W: Write>(
    graph: &HeapGraph,
    analysis: Option<&StoredAnalysis>,
    out: W,
) -> io::Result<()> {
    let chunk_rows = format::DEFAULT_CHUNK_ROWS;
    write_as(graph, analysis, out, Layout::Plain { chunk_rows })
}

/// How the columns are written.
#[derive(Clone, Copy, Debug)]
pub(super) enum Layout {
    /// As images, each vector in pieces of at most this many bytes.
    Images { piece_bytes: usize },
    /// As plain columns, in chunks of this many rows.
    Plain { chunk_rows: usize },
}

/// [`write_heap_graph`] as plain columns in chunks of `chunk_rows` rows (a node with 2³² edges
/// or more cannot be written so).
#[cfg(test)]
pub(super) fn write_in_chunks<W: Write>(
    graph: &HeapGraph,
    analysis: Option<&StoredAnalysis>,
    out: W,
    chunk_rows: usize,
) -> io::Result<()> {
    write_as(graph, analysis, out, Layout::Plain { chunk_rows })
}

/// [`write_heap_graph`] in `layout`.
pub(super) fn write_as<W: Write>(
    graph: &HeapGraph,
    analysis: Option<&StoredAnalysis>,
    out: W,
    layout: Layout,
) -> io::Result<()> {
    let parts = graph.parts();
    let n_nodes = graph.node_count();
    if let Some(analysis) = analysis {
        let lengths = [
            analysis.idom.len(),
            analysis.retained_size.len(),
            analysis.distance.len(),
        ];
        let counts = analysis.retained_count.len();
        let parents = analysis.chain_parent.len();
        if lengths.iter().any(|&len| len != n_nodes)
            || [counts, parents]
                .iter()
                .any(|&len| len != 0 && len != n_nodes)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the stored analysis has {lengths:?} entries (dominator, retained size, distance), {counts} retained counts and {parents} chain parents for {n_nodes} nodes"
                ),
            ));
        }
    }
    let meta = graph.meta();
    let mut header = Header::new(KIND_HEAP_GRAPH, &meta.source_format, meta.runtime.name());
    header.runtime_version.clone_from(&meta.runtime_version);
    header.captured_at_ms = meta.captured_at_ms;
    header.pid = meta.pid;
    header.notes.clone_from(&meta.notes);
    header.totals = BTreeMap::from([
        (TOTAL_NODES.to_owned(), n_nodes as u64),
        (TOTAL_EDGES.to_owned(), graph.edge_count() as u64),
        (TOTAL_STRINGS.to_owned(), graph.strings().len() as u64),
    ]);
    let chunk_rows = match layout {
        Layout::Images { .. } => {
            header.version = VERSION_IMAGES;
            format::DEFAULT_CHUNK_ROWS
        }
        Layout::Plain { chunk_rows } => chunk_rows,
    };

    let mut writer = Writer::new(out, &header)
        .map_err(write_error)?
        .with_chunk_rows(chunk_rows);
    writer
        .write_strings(graph.strings().iter().map(|(_, text)| text))
        .map_err(write_error)?;
    writer
        .write_node_kinds(
            parts
                .node_kinds
                .iter()
                .map(|kind| (kind.name.as_str(), kind.synthetic)),
        )
        .map_err(write_error)?;
    writer.write_root(parts.root).map_err(write_error)?;
    match layout {
        Layout::Images { piece_bytes } => {
            let mut image = |name: &str, column: &dyn ImagedColumn| {
                write_image(&mut writer, name, column.image(), piece_bytes)
            };
            image(names::OBJECT_ID, &parts.node_object_id)?;
            image(names::NODE_KIND, &parts.node_kind)?;
            image(names::NODE_TYPE, &parts.node_type)?;
            image(names::NODE_NAME, &parts.node_name)?;
            image(names::SHALLOW_SIZE, &parts.node_shallow_size)?;
            image(names::FIRST_EDGE, &parts.first_edge)?;
            image(names::EDGE_TO, &parts.edge_to)?;
            image(names::EDGE_KIND, &parts.edge_kind)?;
            image(names::EDGE_NAME, &parts.edge_name)?;
        }
        Layout::Plain { .. } => write_plain_graph(&mut writer, graph)?,
    }
    write_extras(&mut writer, graph)?;
    if let Some(analysis) = analysis {
        match layout {
            Layout::Images { piece_bytes } => {
                let mut image = |name: &str, column: &dyn ImagedColumn| {
                    write_image(&mut writer, name, column.image(), piece_bytes)
                };
                image(names::IDOM, &analysis.idom)?;
                image(names::RETAINED_SIZE, &analysis.retained_size)?;
                image(names::DISTANCE, &analysis.distance)?;
                if !analysis.retained_count.is_empty() {
                    image(names::RETAINED_COUNT, &analysis.retained_count)?;
                }
                if !analysis.chain_parent.is_empty() {
                    image(names::CHAIN_PARENT, &analysis.chain_parent)?;
                }
                if let Some(children) = &analysis.dominator_children {
                    image(names::DOMINATOR_CHILDREN, children)?;
                }
            }
            Layout::Plain { .. } => write_plain_analysis(&mut writer, analysis)?,
        }
        if let Some(totals) = &analysis.type_totals {
            // Strings are written in id order, so an id is its string's index in the file.
            let type_name: Vec<u32> = totals.types.iter().map(|id| id.to_raw()).collect();
            writer
                .write_type_totals(&TypeTotalsColumns {
                    type_name: &type_name,
                    count: &totals.count,
                    shallow_size: &totals.shallow,
                    retained_size: &totals.retained,
                })
                .map_err(write_error)?;
        }
        for paths in &analysis.type_paths {
            write_type_paths(&mut writer, paths)?;
        }
        for types in &analysis.accumulated {
            // Strings are written in id order, so an id is its string's index in the file.
            let type_name: Vec<u32> = types.types.iter().map(|id| id.to_raw()).collect();
            writer
                .write_accumulated(&AccumulatedColumns {
                    point: types.point,
                    representative: types.representative,
                    type_name: &type_name,
                    count: &types.count,
                    retained_size: &types.retained,
                })
                .map_err(write_error)?;
        }
    }
    writer.finish().map_err(write_error)?.flush()
}

/// A column that lays itself out as an image, as a trait object (`Imaged` also makes columns,
/// which a trait object cannot).
trait ImagedColumn {
    fn image(&self) -> ColumnImage<'_>;
}

impl<C: Imaged> ImagedColumn for C {
    fn image(&self) -> ColumnImage<'_> {
        Imaged::image(self)
    }
}

/// Writes column `name`'s `image` as an `image` chunk and its vectors' bytes after it, in
/// pieces of at most `piece_bytes`.
fn write_image<W: Write>(
    writer: &mut Writer<W>,
    name: &str,
    image: ColumnImage<'_>,
    piece_bytes: usize,
) -> io::Result<()> {
    let ColumnImage {
        repr,
        scalars,
        parts,
    } = image;
    let chunk = ImageChunk {
        column: name.to_owned(),
        repr: repr.to_owned(),
        scalars: scalars
            .iter()
            .map(|&(name, value)| (name.to_owned(), value))
            .collect(),
        parts: parts
            .iter()
            .map(|(part, values)| {
                (
                    (*part).to_owned(),
                    values.width() as u8,
                    values.len() as u64,
                )
            })
            .collect(),
    };
    writer
        .write_chunk(&Chunk::Image(chunk))
        .map_err(write_error)?;
    let mut bytes = Vec::new();
    for (part, values) in &parts {
        let per_piece = (piece_bytes / values.width()).max(1);
        // Only a vector large enough to be mapped is worth its pieces' filler.
        let aligned = values.len() * values.width() >= ALIGNED_FROM_BYTES;
        for start in (0..values.len()).step_by(per_piece) {
            bytes.clear();
            values.put_le(start..(start + per_piece).min(values.len()), &mut bytes);
            let offset = (start * values.width()) as u64;
            writer
                .write_image_data(name, part, offset, &bytes, aligned)
                .map_err(write_error)?;
        }
    }
    Ok(())
}

/// Writes the graph's nodes and edges as plain `nodes` and `edges` chunks.
fn write_plain_graph<W: Write>(writer: &mut Writer<W>, graph: &HeapGraph) -> io::Result<()> {
    let parts = graph.parts();
    let n_nodes = graph.node_count();
    let chunk_rows = writer.chunk_rows();
    let mut type_name: Vec<u32> = Vec::with_capacity(chunk_rows.min(n_nodes));
    let mut name: Vec<u32> = Vec::with_capacity(chunk_rows.min(n_nodes));
    let mut object_id: Vec<u64> = Vec::with_capacity(chunk_rows.min(n_nodes));
    let mut shallow_size: Vec<u64> = Vec::with_capacity(chunk_rows.min(n_nodes));
    let mut node_kind: Vec<u8> = Vec::with_capacity(chunk_rows.min(n_nodes));
    let mut edge_count: Vec<u32> = Vec::with_capacity(chunk_rows.min(n_nodes));
    // The compact columns are read in order, a chunk at a time.
    let mut names = parts.node_name.iter();
    let mut object_ids = parts.node_object_id.iter();
    let mut shallow_sizes = parts.node_shallow_size.iter();
    let mut offsets = parts.first_edge.iter();
    let mut offset = offsets.next().unwrap_or(0);
    for start in (0..n_nodes).step_by(chunk_rows) {
        let rows = start..(start + chunk_rows).min(n_nodes);
        type_name.clear();
        type_name.extend(rows.clone().map(|node| parts.node_type.get(node).to_raw()));
        name.clear();
        name.extend(names.by_ref().take(rows.len()).map(|id| id.to_raw()));
        object_id.clear();
        object_id.extend(object_ids.by_ref().take(rows.len()));
        shallow_size.clear();
        shallow_size.extend(shallow_sizes.by_ref().take(rows.len()));
        node_kind.clear();
        node_kind.extend(parts.node_kind.range(rows.clone()));
        edge_count.clear();
        for node in rows.clone() {
            let end = offsets.next().unwrap_or(offset);
            let count = u32::try_from(end - offset).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("node {node} has 2^32 edges or more"),
                )
            })?;
            offset = end;
            edge_count.push(count);
        }
        writer
            .write_nodes(&NodeColumns {
                object_id: &object_id,
                kind: &node_kind,
                type_name: &type_name,
                name: &name,
                shallow_size: &shallow_size,
                edge_count: &edge_count,
            })
            .map_err(write_error)?;
    }

    let n_edges = graph.edge_count();
    let mut edge_kind: Vec<u8> = Vec::with_capacity(chunk_rows.min(n_edges));
    let mut edge_name: Vec<u32> = Vec::with_capacity(chunk_rows.min(n_edges));
    let mut edge_names = parts.edge_name.iter();
    for start in (0..n_edges).step_by(chunk_rows) {
        let rows = start..(start + chunk_rows).min(n_edges);
        edge_kind.clear();
        edge_kind.extend(parts.edge_kind.range(rows.clone()).map(|kind| kind as u8));
        edge_name.clear();
        edge_name.extend(edge_names.by_ref().take(rows.len()));
        writer
            .write_edges(&EdgeColumns {
                to: &parts.edge_to[rows.clone()],
                kind: &edge_kind,
                name: &edge_name,
            })
            .map_err(write_error)?;
    }
    Ok(())
}

/// Writes the object arrays' lengths and the collections' fill, where the graph has them.
fn write_extras<W: Write>(writer: &mut Writer<W>, graph: &HeapGraph) -> io::Result<()> {
    let lengths = graph.array_lengths();
    if !lengths.is_empty() {
        let (node, length) = lengths.columns();
        writer
            .write_array_lengths(&ArrayLengthColumns {
                node,
                length,
                slot_bytes: lengths.slot_bytes(),
            })
            .map_err(write_error)?;
    }
    let fill = graph.fill();
    if !fill.is_empty() {
        let node: Vec<u32> = fill.iter().map(|(node, _)| node.to_raw()).collect();
        let column = |get: fn(&heapgraph_model::Fill) -> u64| -> Vec<u64> {
            fill.iter().map(|(_, row)| get(row)).collect()
        };
        writer
            .write_fill(&FillColumns {
                node: &node,
                elements: &column(|row| row.elements),
                capacity: &column(|row| row.capacity),
                table_bytes: &column(|row| row.table_bytes),
                spare_bytes: &column(|row| row.spare_bytes),
            })
            .map_err(write_error)?;
    }
    Ok(())
}

/// Writes one type's stored merged paths as a `type_paths` chunk.
fn write_type_paths<W: Write>(writer: &mut Writer<W>, paths: &TypePaths) -> io::Result<()> {
    fn column<T>(paths: &TypePaths, value: impl Fn(&TypePathNode) -> T) -> Vec<T> {
        paths.nodes.iter().map(value).collect()
    }
    writer
        .write_type_paths(&TypePathsColumns {
            // Strings are written in id order, so an id is its string's index in the file.
            type_name: paths.type_name.to_raw(),
            branches: paths.branches,
            objects: paths.objects,
            reached: paths.reached,
            retained_size: paths.retained_size,
            node: &column(paths, |row| row.node),
            edge: &column(paths, |row| row.edge.unwrap_or(u64::MAX)),
            parent: &column(paths, |row| row.parent.unwrap_or(u32::MAX)),
            depth: &column(paths, |row| row.depth),
            indent: &column(paths, |row| row.indent),
            is_target: &column(paths, |row| u8::from(row.is_target)),
            targets: &column(paths, |row| row.targets),
            targets_retained_size: &column(paths, |row| row.targets_retained_size),
            skipped_steps: &column(paths, |row| row.skipped_steps),
            hidden_children: &column(paths, |row| row.hidden_children),
            hidden_targets: &column(paths, |row| row.hidden_targets),
            hidden_retained_size: &column(paths, |row| row.hidden_retained_size),
        })
        .map_err(write_error)
}

/// Writes the stored analysis as plain `analysis` chunks.
fn write_plain_analysis<W: Write>(
    writer: &mut Writer<W>,
    analysis: &StoredAnalysis,
) -> io::Result<()> {
    let chunk_rows = writer.chunk_rows();
    // Retained sizes are kept compact: each chunk's are made plain only as it is written.
    let n_rows = analysis.idom.len();
    let mut retained_size: Vec<u64> = Vec::with_capacity(chunk_rows.min(n_rows));
    let mut sizes = analysis.retained_size.iter();
    for start in (0..n_rows).step_by(chunk_rows) {
        let rows = start..(start + chunk_rows).min(n_rows);
        retained_size.clear();
        retained_size.extend(sizes.by_ref().take(rows.len()));
        let retained_count = optional(&analysis.retained_count, rows.clone());
        let chain_parent = optional(&analysis.chain_parent, rows.clone());
        writer
            .write_analysis(&AnalysisColumns {
                dominator: &analysis.idom[rows.clone()],
                retained_size: &retained_size,
                distance: &analysis.distance[rows],
                retained_count,
                chain_parent,
            })
            .map_err(write_error)?;
    }
    Ok(())
}

/// The `rows` of an optional column, which is empty when not stored.
fn optional(column: &[u32], rows: std::ops::Range<usize>) -> &[u32] {
    if column.is_empty() {
        &[]
    } else {
        &column[rows]
    }
}
