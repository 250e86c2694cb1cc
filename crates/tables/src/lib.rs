//! A dump as SQL tables: the one schema of `heapgraph export` (Parquet) and, later, of
//! `heapgraph sql` (served from memory), built as Arrow [`RecordBatch`]es from the model and the
//! analyzer's views. The tables and their columns are documented in `docs/sql.md`; this crate
//! is the only place that builds their rows, so that both paths give the same rows.
//!
//! `dump_id` is the partition column: the batches here leave it out, the Parquet writer puts
//! it in the path (`DIR/<table>/dump_id=<id>/part-0.parquet`, Hive's layout, which Spark, DuckDB
//! and Trino read as a column), and an in-memory engine adds it as a constant column.
//!
//! ```
//! use heapgraph_analyzer::{EdgeRule, Options, analyze};
//! use heapgraph_tables::{DumpTables, Source, Table};
//! use heapgraph_test_support::graph;
//!
//! let graph = graph("root -> a: 10; a -> b: 5; a -> c: 7");
//! let analysis = analyze(&graph, &Options { edge_rule: EdgeRule::for_runtime(graph.meta().runtime) });
//! let tables = DumpTables::new(Source::Graph { graph: &graph, analysis: &analysis }, "t.hgd", "");
//! let mut rows = 0;
//! tables.batches(Table::Objects, 2, &mut |batch| -> Result<(), ()> {
//!     rows += batch.num_rows();
//!     Ok(())
//! }).unwrap();
//! assert_eq!(rows, graph.node_count());
//! ```
#![deny(missing_docs)]

pub mod parquet;

use arrow_array::builder::{Int64Builder, StringBuilder, TimestampMillisecondBuilder};
use arrow_array::{ArrayRef, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use heapgraph_analyzer::findings::Finding;
use heapgraph_analyzer::gpu::GpuOptions;
use heapgraph_analyzer::sites::{SiteFrame, SiteKey, SiteOptions};
use heapgraph_analyzer::{Analysis, SummaryView};
use heapgraph_model::{AllocSnapshot, AllocSource, EdgeKind, EdgeName, HeapGraph, Timeline};
use heapgraph_report::DumpInfo;
use std::ops::Range;
use std::sync::Arc;

/// Rows per batch of the two tables that grow with the graph (`objects`, `references`): a
/// 35 M-object graph is never held a second time as Arrow columns, only 64 Ki rows of it.
pub const BATCH_ROWS: usize = 64 * 1024;

/// How many holder signatures `holders` keeps: as many as `diff` compares from each dump, so
/// that the holders `diff` names from a dump are in its export.
pub const HOLDER_CANDIDATES: usize = heapgraph_analyzer::diff::HOLDER_CANDIDATES;

/// The tables, in the order `docs/sql.md` lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Table {
    /// One row per dump: what it is, and its totals.
    Dumps,
    /// One row per object of a heap graph.
    Objects,
    /// One row per reference of a heap graph.
    References,
    /// The references of the graph's root: what the runtime counts as roots.
    Roots,
    /// Per-type totals, as `summary` lists them.
    Types,
    /// The objects at each retainer-path signature, as `diff` matches them.
    Holders,
    /// What `summary` finds wrong.
    Findings,
    /// Live allocations by stack (tracemalloc, the Rust recorder, CUDA).
    Sites,
    /// A CUDA allocator's live blocks.
    GpuBlocks,
}

impl Table {
    /// Every table.
    pub const ALL: [Table; 9] = [
        Table::Dumps,
        Table::Objects,
        Table::References,
        Table::Roots,
        Table::Types,
        Table::Holders,
        Table::Findings,
        Table::Sites,
        Table::GpuBlocks,
    ];

    /// The table's SQL name, and its folder in an export.
    pub fn name(self) -> &'static str {
        match self {
            Table::Dumps => "dumps",
            Table::Objects => "objects",
            Table::References => "references",
            Table::Roots => "roots",
            Table::Types => "types",
            Table::Holders => "holders",
            Table::Findings => "findings",
            Table::Sites => "sites",
            Table::GpuBlocks => "gpu_blocks",
        }
    }

    /// Whether the table grows with the graph (`--summary-only` leaves these out).
    pub fn is_whole_graph(self) -> bool {
        matches!(self, Table::Objects | Table::References)
    }

    /// The table's columns, `dump_id` (the partition column) left out. Integers are signed
    /// 64-bit (object ids bit for bit) since Spark and Trino have no unsigned 64-bit type.
    pub fn schema(self) -> SchemaRef {
        let int = |name: &str, nullable: bool| Field::new(name, DataType::Int64, nullable);
        let text = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
        let fields = match self {
            Table::Dumps => vec![
                text("file", false),
                text("format", false),
                text("runtime", false),
                text("runtime_version", true),
                text("label", false),
                Field::new(
                    "captured_at",
                    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                    true,
                ),
                int("objects", true),
                int("references", true),
                int("total_shallow_size", true),
                int("reachable_size", true),
            ],
            Table::Objects => vec![
                int("id", false),
                text("kind", false),
                text("type", false),
                text("name", false),
                int("shallow_size", false),
                int("retained_size", false),
                int("retained_count", false),
                int("idom_id", true),
                Field::new("distance", DataType::Int32, true),
                Field::new("reachable", DataType::Boolean, false),
            ],
            Table::References => vec![
                int("from_id", false),
                int("to_id", false),
                text("edge", false),
                text("edge_kind", false),
                Field::new("weak", DataType::Boolean, false),
            ],
            Table::Roots => vec![
                int("id", false),
                text("root_kind", false),
                text("name", false),
            ],
            Table::Types => vec![
                text("type", false),
                int("count", false),
                int("shallow_size", false),
                int("retained_size", false),
            ],
            Table::Holders => vec![
                text("signature", false),
                int("objects", false),
                int("retained_size", false),
            ],
            Table::Findings => vec![
                text("kind", false),
                text("summary", false),
                text("detail", true),
            ],
            Table::Sites => vec![
                text("frames", false),
                int("size", false),
                int("count", false),
            ],
            Table::GpuBlocks => vec![
                int("address", false),
                int("size", false),
                text("state", false),
                text("stack", false),
            ],
        };
        Arc::new(Schema::new(fields))
    }
}

/// What a dump file held, loaded (and, for a heap graph, analysed).
pub enum Source<'a> {
    /// A heap graph and its analysis.
    Graph {
        /// The graph.
        graph: &'a HeapGraph,
        /// Its analysis.
        analysis: &'a Analysis,
    },
    /// An allocation snapshot (tracemalloc, the Rust recorder, a CUDA snapshot).
    Alloc(&'a AllocSnapshot),
    /// A recording of `heapgraph record`.
    Timeline(&'a Timeline),
}

/// One dump's tables, built on demand.
pub struct DumpTables<'a> {
    source: Source<'a>,
    info: DumpInfo,
    label: String,
    summary: Option<SummaryView>,
    findings: Vec<Finding>,
    holders: Vec<heapgraph_analyzer::diff::HolderTotal>,
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// An object id as stored: the runtime's id bit for bit (an address above 2⁶³ reads negative).
fn id_column(object_id: u64) -> i64 {
    i64::from_ne_bytes(object_id.to_ne_bytes())
}

fn frames_text(frames: &[SiteFrame]) -> String {
    frames
        .iter()
        .map(heapgraph_report::findings::frame_text)
        .collect::<Vec<_>>()
        .join(" ← ")
}

fn batch(table: Table, columns: Vec<ArrayRef>) -> RecordBatch {
    RecordBatch::try_new(table.schema(), columns)
        .expect("the builders follow Table::schema, column for column")
}

impl<'a> DumpTables<'a> {
    /// The tables of `source`, read from `file` (as the `dumps` table names it) and tagged
    /// `label` (`key=value` pairs separated by commas, or empty). Computes what `summary`
    /// computes (totals, per-type totals, findings); the rest comes when a table is asked for.
    pub fn new(source: Source<'a>, file: &str, label: &str) -> Self {
        let (info, summary, findings, holders) = match &source {
            Source::Graph { graph, analysis } => {
                // The holders' breadth-first signatures are a whole-graph pass of their own:
                // on a second core, beside what `summary` computes.
                let (summary, findings, holders) = std::thread::scope(|scope| {
                    let holders = scope.spawn(|| {
                        heapgraph_analyzer::diff::holder_totals(graph, analysis, HOLDER_CANDIDATES)
                    });
                    let summary = heapgraph_analyzer::summary(graph, analysis);
                    let suspects = heapgraph_analyzer::suspects(
                        graph,
                        analysis,
                        heapgraph_analyzer::DEFAULT_SUSPECT_THRESHOLD,
                    );
                    let findings = heapgraph_analyzer::findings::accumulations(&suspects);
                    let holders = holders
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    (summary, findings, holders)
                });
                (
                    DumpInfo::new(file, graph.meta()),
                    Some(summary),
                    findings,
                    holders,
                )
            }
            Source::Alloc(snapshot) => {
                let findings = alloc_findings(snapshot);
                (
                    DumpInfo::for_alloc(file, &snapshot.meta),
                    None,
                    findings,
                    Vec::new(),
                )
            }
            Source::Timeline(timeline) => {
                let view = heapgraph_analyzer::timeline::timeline(timeline);
                let findings = heapgraph_analyzer::findings::timeline(&view)
                    .into_iter()
                    .collect();
                (
                    DumpInfo::for_timeline(file, &timeline.meta),
                    None,
                    findings,
                    Vec::new(),
                )
            }
        };
        DumpTables {
            source,
            info,
            label: label.to_owned(),
            summary,
            findings,
            holders,
        }
    }

    /// Hands `sink` the rows of `table`, `batch_rows` at most per batch for the tables that
    /// grow with the graph (one batch for the others, none for a table the dump has no rows
    /// of), and stops at the first error the sink returns.
    ///
    /// # Errors
    /// The sink's.
    pub fn batches<E>(
        &self,
        table: Table,
        batch_rows: usize,
        sink: &mut dyn FnMut(RecordBatch) -> Result<(), E>,
    ) -> Result<(), E> {
        let batch_rows = batch_rows.max(1);
        match (table, &self.source) {
            (Table::Dumps, _) => sink(self.dumps()),
            (Table::Objects | Table::References, Source::Graph { graph, analysis }) => {
                let columns: Vec<usize> = (0..table.schema().fields().len()).collect();
                for nodes in graph_ranges(graph, table, batch_rows) {
                    sink(graph_batch(graph, analysis, table, nodes, &columns))?;
                }
                Ok(())
            }
            (Table::Roots, Source::Graph { graph, .. }) => sink(roots(graph)),
            (Table::Types, Source::Graph { .. }) => sink(self.types()),
            (Table::Holders, Source::Graph { .. }) => sink(holders(&self.holders)),
            (Table::Findings, _) => sink(self.findings()),
            (Table::Sites, Source::Alloc(snapshot)) => sink(sites(snapshot)),
            (Table::GpuBlocks, Source::Alloc(snapshot)) => match gpu_view(snapshot, usize::MAX) {
                Some(view) => sink(gpu_blocks(&view)),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    fn dumps(&self) -> RecordBatch {
        let info = &self.info;
        let (objects, references, total, reachable) = match (&self.source, &self.summary) {
            (Source::Graph { .. }, Some(summary)) => (
                Some(summary.objects),
                Some(summary.references),
                Some(summary.total_shallow_size),
                Some(summary.reachable_size),
            ),
            (Source::Alloc(snapshot), _) => match gpu_view(snapshot, 0) {
                Some(view) => (
                    Some(view.active_blocks as u64),
                    None,
                    Some(view.allocated_bytes),
                    None,
                ),
                None => {
                    let view = site_view(snapshot);
                    (Some(view.total_count), None, Some(view.total_size), None)
                }
            },
            _ => (None, None, None, None),
        };
        let one = |value: Option<u64>| -> ArrayRef {
            let mut column = Int64Builder::with_capacity(1);
            column.append_option(value.map(signed));
            Arc::new(column.finish())
        };
        let text = |value: Option<&str>| -> ArrayRef {
            let mut column = StringBuilder::new();
            column.append_option(value);
            Arc::new(column.finish())
        };
        let mut captured = TimestampMillisecondBuilder::with_capacity(1).with_timezone("UTC");
        captured.append_option(info.captured_at_ms.map(signed));
        batch(
            Table::Dumps,
            vec![
                text(Some(&info.file)),
                text(Some(&info.source_format)),
                text(Some(&info.runtime)),
                text(info.runtime_version.as_deref()),
                text(Some(&self.label)),
                Arc::new(captured.finish()),
                one(objects),
                one(references),
                one(total),
                one(reachable),
            ],
        )
    }

    fn types(&self) -> RecordBatch {
        let rows = self.summary.as_ref().map_or(&[][..], |s| &s.types[..]);
        let mut name = StringBuilder::new();
        let mut count = Int64Builder::with_capacity(rows.len());
        let mut shallow = Int64Builder::with_capacity(rows.len());
        let mut retained = Int64Builder::with_capacity(rows.len());
        for row in rows {
            name.append_value(&row.type_name);
            count.append_value(signed(row.count));
            shallow.append_value(signed(row.shallow_size));
            retained.append_value(signed(row.retained_size));
        }
        batch(
            Table::Types,
            vec![
                Arc::new(name.finish()),
                Arc::new(count.finish()),
                Arc::new(shallow.finish()),
                Arc::new(retained.finish()),
            ],
        )
    }

    fn findings(&self) -> RecordBatch {
        let mut kind = StringBuilder::new();
        let mut summary = StringBuilder::new();
        let mut detail = StringBuilder::new();
        for finding in &self.findings {
            kind.append_value(finding.kind());
            summary.append_value(heapgraph_report::findings::sentence(finding).plain());
            detail.append_option(
                heapgraph_report::findings::detail(finding).map(|(_, sentence)| sentence.plain()),
            );
        }
        batch(
            Table::Findings,
            vec![
                Arc::new(kind.finish()),
                Arc::new(summary.finish()),
                Arc::new(detail.finish()),
            ],
        )
    }
}

/// The batches of a whole-graph table (`objects`, `references`) as ranges of node indexes:
/// `batch_rows` nodes, or the nodes of about `batch_rows` edges (a node's edges are never
/// split). Empty for the other tables.
pub fn graph_ranges(graph: &HeapGraph, table: Table, batch_rows: usize) -> Vec<Range<usize>> {
    let batch_rows = batch_rows.max(1);
    let n = graph.node_count();
    match table {
        Table::Objects => (0..n)
            .step_by(batch_rows)
            .map(|start| start..n.min(start + batch_rows))
            .collect(),
        Table::References => {
            let offsets = &graph.parts().first_edge;
            let mut ranges = Vec::new();
            let mut start = 0;
            while start < n {
                let first = offsets.get(start);
                let mut end = start + 1;
                while end < n && offsets.get(end) - first < batch_rows as u64 {
                    end += 1;
                }
                ranges.push(start..end);
                start = end;
            }
            ranges
        }
        _ => Vec::new(),
    }
}

/// One batch of a whole-graph table: the nodes `nodes` (`objects`) or their references
/// (`references`), with only `columns` (indexes into [`Table::schema`], in the batch's order),
/// so that a query that reads two columns builds two. Build the batches of
/// [`graph_ranges`] on as many threads as there are: each is independent of the others.
///
/// # Panics
/// When `table` is not `objects` or `references`, or a column index is past its schema.
pub fn graph_batch(
    graph: &HeapGraph,
    analysis: &Analysis,
    table: Table,
    nodes: Range<usize>,
    columns: &[usize],
) -> RecordBatch {
    let nodes = nodes.start.min(graph.node_count())..nodes.end.min(graph.node_count());
    let arrays = columns
        .iter()
        .map(|&column| match table {
            Table::Objects => object_column(graph, analysis, nodes.clone(), column),
            Table::References => reference_column(graph, nodes.clone(), column),
            _ => panic!("{} is not a whole-graph table", table.name()),
        })
        .collect();
    let schema = table
        .schema()
        .project(columns)
        .expect("the columns are the table's");
    RecordBatch::try_new(Arc::new(schema), arrays)
        .expect("the columns follow Table::schema, column for column")
}

fn object_column(
    graph: &HeapGraph,
    analysis: &Analysis,
    range: Range<usize>,
    column: usize,
) -> ArrayRef {
    let parts = graph.parts();
    let tree = &analysis.dominators;
    // In range: `graph_batch` clamps it to the graph.
    let nodes = range.clone().filter_map(|index| graph.node(index));
    match column {
        0 => Arc::new(Int64Array::from_iter_values(
            nodes.map(|node| id_column(graph.object_id(node))),
        )),
        1 => Arc::new(StringArray::from_iter_values(range.map(|index| {
            &parts.node_kinds[usize::from(parts.node_kind[index])].name
        }))),
        2 => Arc::new(StringArray::from_iter_values(
            nodes.map(|node| graph.type_name(node)),
        )),
        3 => Arc::new(StringArray::from_iter_values(
            nodes.map(|node| graph.name(node)),
        )),
        4 => Arc::new(Int64Array::from_iter_values(
            range.map(|index| signed(parts.node_shallow_size.get(index))),
        )),
        5 => Arc::new(Int64Array::from_iter_values(
            range.map(|index| signed(tree.retained_size.get(index))),
        )),
        6 => Arc::new(Int64Array::from_iter_values(
            range.map(|index| i64::from(tree.retained_count.get(index))),
        )),
        7 => Arc::new(Int64Array::from_iter(nodes.map(|node| {
            tree.immediate_dominator(graph, node)
                .map(|dominator| id_column(graph.object_id(dominator)))
        }))),
        8 => {
            let distances = analysis.distances(graph);
            Arc::new(Int32Array::from_iter(range.map(|index| {
                heapgraph_analyzer::edges_from_root(distances[index])
                    .map(|d| i32::try_from(d).unwrap_or(i32::MAX))
            })))
        }
        9 => Arc::new(BooleanArray::from_iter(
            range.map(|index| Some(tree.reachable[index])),
        )),
        _ => panic!("objects has no column {column}"),
    }
}

/// An edge's name as text: an index as its decimal digits.
fn edge_text(name: EdgeName<'_>, out: &mut StringBuilder) {
    match name {
        EdgeName::Named(text) => out.append_value(text),
        EdgeName::Index(index) => out.append_value(index.to_string()),
    }
}

fn reference_column(graph: &HeapGraph, nodes: Range<usize>, column: usize) -> ArrayRef {
    let parts = graph.parts();
    let edges = if nodes.is_empty() {
        0
    } else {
        let first = parts.first_edge.get(nodes.start) as usize;
        let last = if nodes.end < graph.node_count() {
            parts.first_edge.get(nodes.end) as usize
        } else {
            graph.edge_count()
        };
        last.saturating_sub(first)
    };
    let each_edge = || {
        nodes
            .clone()
            .filter_map(|index| graph.node(index))
            .flat_map(move |node| graph.edge_range(node).map(move |e| (node, e)))
    };
    match column {
        0 => Arc::new(Int64Array::from_iter_values(
            each_edge().map(|(node, _)| id_column(graph.object_id(node))),
        )),
        1 => Arc::new(Int64Array::from_iter_values(
            each_edge().map(|(_, e)| id_column(graph.object_id(graph.edge_target(e)))),
        )),
        2 => {
            let mut edge = StringBuilder::with_capacity(edges, edges * 8);
            for (_, e) in each_edge() {
                edge_text(graph.edge_name(e), &mut edge);
            }
            Arc::new(edge.finish())
        }
        3 => Arc::new(StringArray::from_iter_values(
            each_edge().map(|(_, e)| graph.edge_kind(e).name()),
        )),
        4 => Arc::new(BooleanArray::from_iter(
            each_edge().map(|(_, e)| Some(graph.edge_kind(e) == EdgeKind::Weak)),
        )),
        _ => panic!("references has no column {column}"),
    }
}

fn roots(graph: &HeapGraph) -> RecordBatch {
    let mut id = Int64Builder::new();
    let mut kind = StringBuilder::new();
    let mut name = StringBuilder::new();
    for e in graph.edge_range(graph.root()) {
        let target = graph.edge_target(e);
        id.append_value(id_column(graph.object_id(target)));
        edge_text(graph.edge_name(e), &mut kind);
        name.append_value(graph.name(target));
    }
    batch(
        Table::Roots,
        vec![
            Arc::new(id.finish()),
            Arc::new(kind.finish()),
            Arc::new(name.finish()),
        ],
    )
}

fn holders(rows: &[heapgraph_analyzer::diff::HolderTotal]) -> RecordBatch {
    let mut signature = StringBuilder::new();
    let mut objects = Int64Builder::with_capacity(rows.len());
    let mut retained = Int64Builder::with_capacity(rows.len());
    for row in rows {
        signature.append_value(&row.signature);
        objects.append_value(signed(row.objects));
        retained.append_value(signed(row.retained_size));
    }
    batch(
        Table::Holders,
        vec![
            Arc::new(signature.finish()),
            Arc::new(objects.finish()),
            Arc::new(retained.finish()),
        ],
    )
}

/// Live allocations by whole stack, library frames kept: tracemalloc's
/// `statistics("traceback")`.
fn site_view(snapshot: &AllocSnapshot) -> heapgraph_analyzer::sites::SitesView {
    heapgraph_analyzer::sites::statistics(snapshot, &SiteOptions::new(SiteKey::Traceback))
}

/// The CUDA view with its `n` largest live blocks; `None` for a snapshot without a CUDA
/// allocator's state.
fn gpu_view(snapshot: &AllocSnapshot, n: usize) -> Option<heapgraph_analyzer::gpu::GpuView> {
    snapshot.cuda.as_ref()?;
    heapgraph_analyzer::gpu::gpu(
        snapshot,
        &GpuOptions {
            n,
            all_frames: true,
            timeline: false,
            sites: SiteOptions::new(SiteKey::Traceback),
        },
    )
}

/// The findings `summary` gives an allocation snapshot: grouped by line (tracemalloc, the
/// Rust recorder) or by stack (CUDA), library frames folded but in tracemalloc's stacks.
fn alloc_findings(snapshot: &AllocSnapshot) -> Vec<Finding> {
    let mut options = SiteOptions::new(match snapshot.meta.source {
        AllocSource::Tracemalloc | AllocSource::RustAlloc => SiteKey::Lineno,
        AllocSource::TorchCuda => SiteKey::Traceback,
    });
    options.user_frames_only = snapshot.meta.source != AllocSource::Tracemalloc;
    if snapshot.cuda.is_some() {
        let options = GpuOptions {
            n: 10,
            all_frames: false,
            timeline: false,
            sites: options,
        };
        heapgraph_analyzer::gpu::gpu(snapshot, &options)
            .map(|view| heapgraph_analyzer::findings::gpu(&view))
            .unwrap_or_default()
    } else {
        let view = heapgraph_analyzer::sites::statistics(snapshot, &options);
        heapgraph_analyzer::findings::sites(&view)
            .into_iter()
            .collect()
    }
}

fn sites(snapshot: &AllocSnapshot) -> RecordBatch {
    let view = site_view(snapshot);
    let mut frames = StringBuilder::new();
    let mut size = Int64Builder::with_capacity(view.rows.len());
    let mut count = Int64Builder::with_capacity(view.rows.len());
    for row in &view.rows {
        frames.append_value(frames_text(&row.frames));
        size.append_value(signed(row.size));
        count.append_value(signed(row.count));
    }
    batch(
        Table::Sites,
        vec![
            Arc::new(frames.finish()),
            Arc::new(size.finish()),
            Arc::new(count.finish()),
        ],
    )
}

fn gpu_blocks(view: &heapgraph_analyzer::gpu::GpuView) -> RecordBatch {
    let rows = &view.largest_blocks;
    let mut address = Int64Builder::with_capacity(rows.len());
    let mut size = Int64Builder::with_capacity(rows.len());
    let mut state = StringBuilder::new();
    let mut stack = StringBuilder::new();
    for block in rows {
        address.append_value(id_column(block.address));
        size.append_value(signed(block.size));
        state.append_value(&block.state);
        stack.append_value(frames_text(&block.frames));
    }
    batch(
        Table::GpuBlocks,
        vec![
            Arc::new(address.finish()),
            Arc::new(size.finish()),
            Arc::new(state.finish()),
            Arc::new(stack.finish()),
        ],
    )
}
