//! The MCP tools: each one's arguments (their JSON Schema is what `tools/list` shows), its
//! description (when an agent should use it), and its answer, one of the CLI's JSON schemas
//! rendered by `heapgraph_report` from the analyzer's views, as the verbs and `heapgraph serve`
//! render them. Lists are short by default (an agent reads every line) and take `limit`.

use super::dumps::{Dumps, Held};
use crate::args::{DiffArgs, OutputFormat, RankByArg, ReadArgs, SiteArgs, TargetArgs};
use crate::load::Evidence;
use anyhow::{Context, bail};
use heapgraph_analyzer::explore::Page;
use heapgraph_analyzer::{ChainOrder, RankBy};
use heapgraph_model::AllocSource;
use heapgraph_report::json;
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::path::Path;
use std::sync::Arc;

/// Rows of a list when the call does not say: a page an agent can read whole.
const ROWS: usize = 10;
/// The most rows a call may ask for (as `heapgraph serve`'s pages).
const MAX_ROWS: usize = crate::serve::api::MAX_LIMIT;
/// Chains `who_holds` gives when the call does not say (as `who-holds`), and the most (as
/// serve's `holders`).
const CHAINS: usize = crate::serve::api::DEFAULT_CHAINS;
const MAX_CHAINS: usize = crate::serve::api::MAX_CHAINS;

/// One tool: its name, what it is for, its arguments' schema, and what runs it.
pub(super) struct ToolDef {
    name: &'static str,
    description: &'static str,
    schema: fn() -> Arc<JsonObject>,
    pub(super) run: fn(&Dumps, JsonObject) -> anyhow::Result<String>,
}

/// Every tool, in the order `tools/list` gives them.
const TOOLS: [ToolDef; 10] = [
    ToolDef {
        name: "open_dump",
        description: "Open a memory dump file and keep it loaded and analysed under a short id \
(d1, d2, ...), to pass as `dump` to the other tools. Use it first on a file you will ask \
several questions about; any tool also takes the path itself as `dump` and opens it once. \
Reads V8 .heapsnapshot, Java .hprof, IBM .phd, Python and converted .hgd, tracemalloc dumps, \
PyTorch CUDA memory snapshots (.pickle) and heapgraph record's .hgt, plain or gzipped. The \
server keeps a few dumps open (heapgraph mcp --keep, 4 by default); opening one more closes the \
one used least recently, whose id then names nothing. Answers heapgraph.opened/1: the id, what \
the file holds, and the tools that read it.",
        schema: schema_for_type::<OpenArgs>,
        run: open_dump,
    },
    ToolDef {
        name: "summary",
        description: "The overview of a dump: totals, reachable and unreachable bytes, the \
findings (what holds the memory, in one sentence each), and the types that retain the most. \
Use it first on a dump. For a tracemalloc dump, the top allocating lines; for a CUDA snapshot, \
the gpu view; for a recording (.hgt), peaks, growth and the exit. Answers heapgraph.summary/1 \
(heapgraph.sites/1, heapgraph.gpu/1 or heapgraph.timeline/1 for those files).",
        schema: schema_for_type::<SummaryArgs>,
        run: summary,
    },
    ToolDef {
        name: "top",
        description: "The objects that retain the most memory (or, with by, the largest \
shallow sizes or the most objects kept alive), each with its id for who_holds, object and \
dominator_children. On an allocation snapshot, the sites (lines or stacks) that hold the most, \
as tracemalloc's Snapshot.statistics. Use it to find the single big objects. Answers \
heapgraph.top/1 (heapgraph.sites/1 for allocation snapshots).",
        schema: schema_for_type::<TopArgs>,
        run: top,
    },
    ToolDef {
        name: "who_holds",
        description: "Why an object is alive: its chain of dominators from the root and ranked \
chains of references from the GC roots (a static field, a module global, a thread's local) to \
it. Give `object` (an id from top, findings or another answer) or `type` (the instance of that \
type that retains the most). Use it to explain a finding or a big object: the chain names the \
field that keeps it. Heap dumps only. Answers heapgraph.holders/1.",
        schema: schema_for_type::<WhoHoldsArgs>,
        run: who_holds,
    },
    ToolDef {
        name: "paths",
        description: "Who holds a whole set of objects (every instance of `type`, or the `ids` \
given): one chain from the roots to each, merged into a tree whose nodes count how many of the \
objects they lead to (Eclipse MAT's merged shortest paths to GC roots). Use it when many small \
objects leak together (thousands of sessions, listeners, requests) to find the one collection \
or field they all hang from. Heap dumps only. Answers heapgraph.paths/1.",
        schema: schema_for_type::<PathsArgs>,
        run: paths,
    },
    ToolDef {
        name: "dominator_children",
        description: "One level of the dominator tree: the objects that `object` (or the root) \
alone keeps alive, largest retained size first, a page at a time. Use it to walk down from the \
root or from a big object to where the bytes are. Heap dumps only. Answers \
heapgraph.children/1.",
        schema: schema_for_type::<ChildrenArgs>,
        run: dominator_children,
    },
    ToolDef {
        name: "object",
        description: "One object and its references: out (its fields and what they point to) or \
in (the objects that point to it), a page at a time. Use it to read an object's fields or to \
step along a chain by hand. Heap dumps only. Answers heapgraph.references/1.",
        schema: schema_for_type::<ObjectArgs>,
        run: object,
    },
    ToolDef {
        name: "findings",
        description: "The leak suspects, as Eclipse MAT finds them: objects that retain a large \
share of the heap, where their bytes accumulate (a map, an array) and what those bytes mostly \
are, and types whose instances together hold much; each with the chain from the root. Use it \
to find a leak in one heap dump. Heap dumps only (the summary of an allocation snapshot or a \
recording carries its findings). Answers heapgraph.suspects/1.",
        schema: schema_for_type::<DumpArgs>,
        run: findings,
    },
    ToolDef {
        name: "diff",
        description: "What grew between two dumps of one program: heap dumps by type (count, \
shallow and retained size) and by holder (matched by its path from the root); allocation \
snapshots (tracemalloc, CUDA) by allocating site, as tracemalloc's compare_to. Use it with a \
dump taken before and one after the memory grew. Answers heapgraph.diff/1 (heapgraph.sites/1 \
for allocation snapshots).",
        schema: schema_for_type::<DiffToolArgs>,
        run: diff,
    },
    ToolDef {
        name: "gpu",
        description: "What filled a GPU, from a PyTorch CUDA memory snapshot \
(torch.cuda.memory._dump_snapshot): allocated and reserved bytes, live memory by allocating \
stack (the user's frames), fragmentation, and the failed request of an out-of-memory error. \
Use it on CUDA snapshots only. Answers heapgraph.gpu/1.",
        schema: schema_for_type::<GpuToolArgs>,
        run: gpu,
    },
];

/// The tools as `tools/list` gives them: read-only, all of them.
pub(super) fn list() -> Vec<Tool> {
    TOOLS
        .iter()
        .map(|tool| {
            Tool::new(tool.name, tool.description, (tool.schema)())
                .with_annotations(ToolAnnotations::new().read_only(true).open_world(false))
        })
        .collect()
}

pub(super) fn find(name: &str) -> Option<&'static ToolDef> {
    TOOLS.iter().find(|tool| tool.name == name)
}

/// The call's arguments, or the reason they are not this tool's.
fn arguments<T: DeserializeOwned>(arguments: JsonObject) -> anyhow::Result<T> {
    serde_json::from_value(serde_json::Value::Object(arguments))
        .context("the arguments do not match the tool's input schema")
}

/// A row count from the call: `default` when absent, else from 1 to `most`.
fn rows(asked: Option<usize>, default: usize, most: usize, name: &str) -> anyhow::Result<usize> {
    match asked {
        None => Ok(default),
        Some(n) if (1..=most).contains(&n) => Ok(n),
        Some(n) => bail!("{name}={n}: give a whole number from 1 to {most}"),
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OpenArgs {
    /// The dump's path (absolute, or relative to the directory the server was started in).
    path: String,
}

/// A dump: the id open_dump returned (d1), or a file's path (opened now, and kept).
type DumpRef = String;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DumpArgs {
    /// The id open_dump returned (d1), or the dump's path.
    dump: DumpRef,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SummaryArgs {
    /// The id open_dump returned (d1), or the dump's path.
    dump: DumpRef,
    /// Rows of each table (types, sites): 10 when not given, at most 1000.
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
}

/// What `top` ranks by.
#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum By {
    /// Heap dumps: bytes the object keeps alive (the default).
    Retained,
    /// Heap dumps: bytes of the object alone.
    Shallow,
    /// Heap dumps: objects the object keeps alive.
    Count,
    /// Allocation snapshots: by the file of the most recent frame.
    Filename,
    /// Allocation snapshots: by the most recent frame (tracemalloc's default).
    Lineno,
    /// Allocation snapshots: by the whole stack (the default for CUDA snapshots).
    Traceback,
}

impl From<By> for RankByArg {
    fn from(by: By) -> RankByArg {
        match by {
            By::Retained => RankByArg::Retained,
            By::Shallow => RankByArg::Shallow,
            By::Count => RankByArg::Count,
            By::Filename => RankByArg::Filename,
            By::Lineno => RankByArg::Lineno,
            By::Traceback => RankByArg::Traceback,
        }
    }
}

/// What a heap dump's rows rank by: as `top --by` and `diff --by` take it.
fn heap_rank(by: Option<By>) -> anyhow::Result<RankBy> {
    crate::verbs::heap_rank(by.map(RankByArg::from))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TopArgs {
    /// The id open_dump returned (d1), or the dump's path.
    dump: DumpRef,
    /// Objects or sites to list: 10 when not given, at most 1000.
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// Heap dumps: retained (default), shallow or count. Allocation snapshots: filename,
    /// lineno or traceback.
    by: Option<By>,
}

/// An object id: a number as the answers print it, or text (@12345, 12345, 0x3039).
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum ObjectId {
    Number(u64),
    Text(String),
}

impl ObjectId {
    fn text(&self) -> String {
        match self {
            ObjectId::Number(id) => id.to_string(),
            ObjectId::Text(text) => text.clone(),
        }
    }
}

/// Which chains `who_holds` and `paths` give first.
#[derive(Deserialize, JsonSchema, Clone, Copy, Default)]
#[serde(rename_all = "lowercase")]
enum Order {
    /// Chains from named roots first (a static field, a module global, a thread's local), one
    /// per root.
    #[default]
    Explain,
    /// The shortest chains first.
    Shortest,
}

impl From<Order> for ChainOrder {
    fn from(order: Order) -> ChainOrder {
        match order {
            Order::Explain => ChainOrder::Explain,
            Order::Shortest => ChainOrder::Shortest,
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WhoHoldsArgs {
    /// The id open_dump returned (d1), or the dump's path.
    dump: DumpRef,
    /// The object's id (a number from another answer, or @12345 or 0x3039). Give this or
    /// `type`.
    object: Option<ObjectId>,
    /// Instead of an id: the instance of this type that retains the most (a whole name, or the
    /// end of one after a dot: SessionCache for com.example.SessionCache).
    #[serde(rename = "type")]
    type_name: Option<String>,
    /// Chains from the roots to give: 3 when not given, at most 50.
    #[schemars(range(min = 1, max = 50))]
    paths: Option<usize>,
    /// explain (default: chains from named roots first, one per root) or shortest.
    order: Option<Order>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PathsArgs {
    /// The id open_dump returned (d1), or the dump's path.
    dump: DumpRef,
    /// The objects of this type (a whole name, or the end of one after a dot).
    #[serde(rename = "type")]
    type_name: Option<String>,
    /// These objects, by id (with `type` too: those of the ids that are of that type).
    ids: Option<Vec<ObjectId>>,
    /// Children listed per node of the tree, those leading to the most objects first: 10 when
    /// not given, at most 1000.
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// Which chain each object gets: explain (default, through a named root where one
    /// reaches it) or shortest.
    order: Option<Order>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ChildrenArgs {
    /// The id open_dump returned (d1), or the dump's path.
    dump: DumpRef,
    /// The object whose children to list: its id, or "root" (the default).
    object: Option<ObjectId>,
    /// The first child to list, from 0 (default 0).
    offset: Option<usize>,
    /// Children to list: 10 when not given, at most 1000.
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
}

/// Which references `object` lists.
#[derive(Deserialize, JsonSchema, Clone, Copy, Default)]
#[serde(rename_all = "lowercase")]
enum Direction {
    /// The object's references out: its fields and their values.
    #[default]
    Out,
    /// The references into the object: its referrers.
    In,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ObjectArgs {
    /// The id open_dump returned (d1), or the dump's path.
    dump: DumpRef,
    /// The object's id (a number from another answer, or @12345 or 0x3039), or "root".
    object: ObjectId,
    /// out (default: its fields) or in (its referrers).
    direction: Option<Direction>,
    /// The first reference to list, from 0 (default 0).
    offset: Option<usize>,
    /// References to list: 10 when not given, at most 1000.
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DiffToolArgs {
    /// The earlier dump: an id from open_dump, or a path.
    old: DumpRef,
    /// The later dump of the same program: an id from open_dump, or a path.
    new: DumpRef,
    /// Rows of each table (types, holders, sites): 10 when not given, at most 1000.
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// Heap dumps: rank by the change of retained (default), shallow or count. Allocation
    /// snapshots: group by filename, lineno or traceback.
    by: Option<By>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GpuToolArgs {
    /// The id open_dump returned (d1), or the snapshot's path.
    dump: DumpRef,
    /// Rows of each table: 10 when not given, at most 1000.
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// What the table of live memory groups by: traceback (default), lineno or filename.
    by: Option<By>,
    /// Add allocated and reserved bytes over time, one row per traced event (long).
    timeline: Option<bool>,
}

/// `heapgraph.opened/1`: what `open_dump` answers.
#[derive(serde::Serialize)]
struct OpenedAnswer<'a> {
    schema: &'static str,
    id: &'a str,
    file: String,
    holds: &'static str,
    tools: &'static [&'static str],
    kept: usize,
}

fn open_dump(dumps: &Dumps, args: JsonObject) -> anyhow::Result<String> {
    let args: OpenArgs = arguments(args)?;
    let opened = dumps.open(Path::new(&args.path))?;
    let tools: &[&str] = match opened.holds() {
        "heap-dump" => &[
            "summary",
            "top",
            "who_holds",
            "paths",
            "dominator_children",
            "object",
            "findings",
            "diff",
        ],
        "cuda-snapshot" => &["summary", "top", "diff", "gpu"],
        "allocations" => &["summary", "top", "diff"],
        _ => &["summary"],
    };
    serde_json::to_string_pretty(&OpenedAnswer {
        schema: "heapgraph.opened/1",
        id: &opened.id,
        file: opened.path.display().to_string(),
        holds: opened.holds(),
        tools,
        kept: dumps.keep(),
    })
    .context("cannot write the answer")
}

fn summary(dumps: &Dumps, args: JsonObject) -> anyhow::Result<String> {
    let args: SummaryArgs = arguments(args)?;
    let n = rows(args.limit, ROWS, MAX_ROWS, "limit")?;
    let opened = dumps.get(&args.dump)?;
    match &opened.held {
        Held::Heap(dump) => {
            let (graph, analysis) = (&dump.graph, &dump.analysis);
            // One walk of the dominator tree for both (this runs on a blocking task, not
            // rayon's).
            let (view, suspects) = heapgraph_analyzer::summary_and_suspects(
                graph,
                analysis,
                None,
                heapgraph_analyzer::DEFAULT_SUSPECT_THRESHOLD,
            )
            .expect("no kind is asked");
            let found = heapgraph_analyzer::findings::accumulations(&suspects);
            Ok(json::summary(&view, &dump.info, &found, Some(n)))
        }
        Held::Other(Evidence::Alloc(snapshot)) => match snapshot.meta.source {
            AllocSource::TorchCuda => crate::alloc::gpu_of(
                &opened.path,
                snapshot,
                crate::alloc::GpuShape {
                    n,
                    by: None,
                    sites: &SiteArgs::default(),
                    timeline: false,
                },
                OutputFormat::Json,
            ),
            _ => crate::alloc::top(
                &opened.path,
                snapshot,
                None,
                n,
                &SiteArgs::default(),
                OutputFormat::Json,
            ),
        },
        Held::Other(Evidence::Timeline(timeline)) => {
            let view = heapgraph_analyzer::timeline::timeline(timeline);
            let info = heapgraph_report::DumpInfo::for_timeline(
                &opened.path.display().to_string(),
                &timeline.meta,
            );
            let found: Vec<_> = heapgraph_analyzer::findings::timeline(&view)
                .into_iter()
                .collect();
            Ok(json::timeline(&view, &info, &found))
        }
        Held::Other(Evidence::Graph(_)) => unreachable_graph(),
    }
}

/// `Dumps` keeps every heap dump as `Held::Heap`; an `Evidence::Graph` is never held.
fn unreachable_graph() -> anyhow::Result<String> {
    bail!("the dump was kept unanalysed; please report it")
}

fn top(dumps: &Dumps, args: JsonObject) -> anyhow::Result<String> {
    let args: TopArgs = arguments(args)?;
    let n = rows(args.limit, ROWS, MAX_ROWS, "limit")?;
    let opened = dumps.get(&args.dump)?;
    match &opened.held {
        Held::Heap(dump) => {
            let by = heap_rank(args.by)?;
            let objects = heapgraph_analyzer::top(&dump.graph, &dump.analysis, by, n);
            Ok(json::top(&objects, by, &dump.info))
        }
        Held::Other(Evidence::Alloc(snapshot)) => crate::alloc::top(
            &opened.path,
            snapshot,
            args.by.map(RankByArg::from),
            n,
            &SiteArgs::default(),
            OutputFormat::Json,
        ),
        Held::Other(other) => Err(crate::load::refusal(&opened.path, other)),
    }
}

fn who_holds(dumps: &Dumps, args: JsonObject) -> anyhow::Result<String> {
    let args: WhoHoldsArgs = arguments(args)?;
    let n_paths = rows(args.paths, CHAINS, MAX_CHAINS, "paths")?;
    let object_id = args
        .object
        .as_ref()
        .map(|id| crate::verbs::parse_object_id(&id.text()))
        .transpose()?;
    if object_id.is_none() && args.type_name.is_none() {
        bail!("give `object` (an id) or `type`");
    }
    let opened = dumps.get(&args.dump)?;
    let dump = opened.heap()?;
    let view = crate::verbs::holders(
        &dump.graph,
        &dump.analysis,
        &opened.path,
        (object_id, args.type_name.as_deref()),
        n_paths,
        args.order.unwrap_or_default().into(),
    )?;
    Ok(json::holders(&view, &dump.info))
}

fn paths(dumps: &Dumps, args: JsonObject) -> anyhow::Result<String> {
    let args: PathsArgs = arguments(args)?;
    let n = rows(args.limit, ROWS, MAX_ROWS, "limit")?;
    let ids: Vec<String> = args.ids.iter().flatten().map(ObjectId::text).collect();
    if args.type_name.is_none() && ids.is_empty() {
        bail!("say which objects: `type`, or `ids`");
    }
    let opened = dumps.get(&args.dump)?;
    let dump = opened.heap()?;
    let chosen = TargetArgs {
        type_name: args.type_name,
        ids,
        baseline: None,
        new: false,
    };
    let order = args.order.unwrap_or_default().into();
    crate::holding::paths_answer(dump, &opened.path, &chosen, n, order, None)
}

/// The page of a paged list: `offset` from 0, `limit` rows.
fn page(offset: Option<usize>, limit: Option<usize>) -> anyhow::Result<Page> {
    Ok(Page {
        offset: offset.unwrap_or(0),
        limit: rows(limit, ROWS, MAX_ROWS, "limit")?,
    })
}

/// The node an id names, as `heapgraph serve` finds it (`root` too), with serve's refusal.
fn node(
    dump: &crate::serve::api::Dumped,
    path: &Path,
    id: &ObjectId,
) -> anyhow::Result<heapgraph_model::NodeId> {
    crate::serve::api::node(dump, &id.text())
        .map_err(|refusal| anyhow::anyhow!("{}: {}", path.display(), refusal.message()))
}

/// Serve's refusal of an offset past the end of the list.
fn within(page: Page, total: u64) -> anyhow::Result<()> {
    crate::serve::api::within(page, total)
        .map_err(|refusal| anyhow::anyhow!("{}", refusal.message()))
}

fn dominator_children(dumps: &Dumps, args: JsonObject) -> anyhow::Result<String> {
    let args: ChildrenArgs = arguments(args)?;
    let page = page(args.offset, args.limit)?;
    let opened = dumps.get(&args.dump)?;
    let dump = opened.heap()?;
    let root = ObjectId::Text("root".to_owned());
    let node = node(dump, &opened.path, args.object.as_ref().unwrap_or(&root))?;
    let view = dump
        .explorer
        .children(&dump.graph, &dump.analysis, node, page);
    within(page, view.total)?;
    Ok(json::children(&view, &dump.info))
}

fn object(dumps: &Dumps, args: JsonObject) -> anyhow::Result<String> {
    let args: ObjectArgs = arguments(args)?;
    let page = page(args.offset, args.limit)?;
    let opened = dumps.get(&args.dump)?;
    let dump = opened.heap()?;
    let node = node(dump, &opened.path, &args.object)?;
    let incoming = matches!(args.direction.unwrap_or_default(), Direction::In);
    let view = if incoming {
        dump.explorer
            .referrers(&dump.graph, &dump.analysis, node, page)
    } else {
        dump.explorer
            .references(&dump.graph, &dump.analysis, node, page)
    };
    within(page, view.total)?;
    Ok(json::references(&view, incoming, &dump.info))
}

fn findings(dumps: &Dumps, args: JsonObject) -> anyhow::Result<String> {
    let args: DumpArgs = arguments(args)?;
    let opened = dumps.get(&args.dump)?;
    let dump = opened.heap()?;
    let (graph, analysis) = (&dump.graph, &dump.analysis);
    // As `suspects` with its default threshold and drop, and serve's findings.
    let view = heapgraph_analyzer::suspects_with_drop(
        graph,
        analysis,
        heapgraph_analyzer::DEFAULT_SUSPECT_THRESHOLD,
        heapgraph_analyzer::DEFAULT_MIN_DROP,
    );
    let drops = heapgraph_analyzer::big_drops(
        graph,
        analysis,
        heapgraph_analyzer::DEFAULT_SUSPECT_THRESHOLD,
        heapgraph_analyzer::DEFAULT_MIN_DROP,
    );
    let found = heapgraph_analyzer::findings::accumulations(&view);
    Ok(json::suspects(&view, &drops, &dump.info, &found))
}

fn diff(dumps: &Dumps, args: JsonObject) -> anyhow::Result<String> {
    let args: DiffToolArgs = arguments(args)?;
    let n = rows(args.limit, ROWS, MAX_ROWS, "limit")?;
    let old = dumps.get(&args.old)?;
    let new = dumps.get(&args.new)?;
    match (&old.held, &new.held) {
        (Held::Heap(old_dump), Held::Heap(new_dump)) => {
            let by = heap_rank(args.by)?;
            let view = heapgraph_analyzer::diff::diff_types(
                (&old_dump.graph, &old_dump.analysis),
                (&new_dump.graph, &new_dump.analysis),
                by,
            );
            let found: Vec<_> = heapgraph_analyzer::findings::growth(&view)
                .into_iter()
                .collect();
            Ok(json::graph_diff(
                &view,
                &new_dump.info,
                &old_dump.info,
                &found,
                by,
                Some(n),
            ))
        }
        (
            Held::Other(Evidence::Alloc(old_snapshot)),
            Held::Other(Evidence::Alloc(new_snapshot)),
        ) => {
            let args = DiffArgs {
                old: old.path.clone(),
                new: new.path.clone(),
                format: OutputFormat::Json,
                by: args.by.map(RankByArg::from),
                n: Some(n),
                include_weak: false,
                collapse_modules: false,
                fail_if: Vec::new(),
                sites: SiteArgs::default(),
                read: ReadArgs::default(),
            };
            let (output, _) = crate::alloc::diff(&args, old_snapshot, new_snapshot, &[])?;
            Ok(output)
        }
        (Held::Other(timeline @ Evidence::Timeline(_)), _) => {
            Err(crate::load::refusal(&old.path, timeline))
        }
        (_, Held::Other(timeline @ Evidence::Timeline(_))) => {
            Err(crate::load::refusal(&new.path, timeline))
        }
        _ => bail!(
            "{} and {} are not of one kind: diff compares two heap dumps, or two allocation snapshots",
            old.path.display(),
            new.path.display()
        ),
    }
}

fn gpu(dumps: &Dumps, args: JsonObject) -> anyhow::Result<String> {
    let args: GpuToolArgs = arguments(args)?;
    let n = rows(args.limit, ROWS, MAX_ROWS, "limit")?;
    let opened = dumps.get(&args.dump)?;
    let snapshot = opened.cuda()?;
    crate::alloc::gpu_of(
        &opened.path,
        snapshot,
        crate::alloc::GpuShape {
            n,
            by: args.by.map(RankByArg::from),
            sites: &SiteArgs::default(),
            timeline: args.timeline.unwrap_or(false),
        },
        OutputFormat::Json,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_description_and_an_object_schema() {
        let tools = list();
        assert_eq!(tools.len(), TOOLS.len());
        for tool in &tools {
            assert!(tool.description.as_ref().is_some_and(|d| d.len() > 80));
            assert_eq!(
                tool.input_schema.get("type").and_then(|t| t.as_str()),
                Some("object"),
                "{}",
                tool.name
            );
        }
        let names: std::collections::BTreeSet<_> = tools.iter().map(|t| t.name.clone()).collect();
        assert_eq!(names.len(), tools.len(), "tool names are unique");
    }

    #[test]
    fn limits_default_small_and_refuse_out_of_range() {
        assert_eq!(rows(None, ROWS, MAX_ROWS, "limit").ok(), Some(10));
        assert_eq!(rows(Some(1000), ROWS, MAX_ROWS, "limit").ok(), Some(1000));
        assert!(rows(Some(0), ROWS, MAX_ROWS, "limit").is_err());
        assert!(rows(Some(1001), ROWS, MAX_ROWS, "limit").is_err());
        assert!(arguments::<SummaryArgs>(JsonObject::new()).is_err());
        let mut extra = JsonObject::new();
        extra.insert("dump".into(), "d1".into());
        extra.insert("limt".into(), 3.into());
        assert!(
            arguments::<SummaryArgs>(extra).is_err(),
            "a misspelt argument is refused"
        );
    }
}
