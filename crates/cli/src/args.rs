//! Command-line arguments (clap derive). Nothing here leaves the binary: verbs turn these into
//! the libraries' options.

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use heapgraph_format::units::{self, Level};
use std::path::PathBuf;
use std::time::Duration;

/// The words for quantities, documented once: every help screen that takes one shows this
/// paragraph, and README's "Common options" quotes it (`tests/e2e/cli.rs` checks that they
/// agree). The parser is `heapgraph_format::units`.
macro_rules! quantities {
    () => {
        "Sizes are a number and a unit: B, K or KiB, M or MiB, G or GiB, T or TiB (binary), KB, \
MB, GB or TB (decimal), like 12GiB or 1.5 MiB; a number alone is bytes. Shares are a percentage \
(80%) or a fraction with its decimal point (0.8). A level is a share of a limit or a size, so \
0.8 is 80% and 4096 is 4096 bytes. Durations are a number and ms, s, m or h (200ms, 30s, 5m); \
a number alone is seconds. A change (--fail-if) is a sign and a size, a count or a share: \
+64MiB, +200, +10%."
    };
}

/// The paragraph of [`quantities!`], for the test that README quotes it.
#[cfg(test)]
const QUANTITIES: &str = quantities!();

/// Rows of each table when `-n` is not given, on every verb.
pub(crate) const DEFAULT_ROWS: usize = 20;

/// The positional arguments that name an input file; their help lists what the verb reads,
/// from `load::Readers` (see [`parse`]).
const INPUT_ARGS: [&str; 7] = ["file", "files", "old", "new", "baseline", "target", "final"];

/// Parses the command line.
pub(crate) fn parse() -> Cli {
    let matches = command().get_matches();
    Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit())
}

/// The command line, with each verb's input help saying which kinds of file that verb reads,
/// from the one table that also makes its refusals (`load::Readers`), and the files of each
/// kind from the import crate's table of formats.
fn command() -> clap::Command {
    let mut command = Cli::command();
    // What the binary reads, from the import crate's table of formats, before the rest.
    let kinds: Vec<String> = heapgraph_import::Holds::ALL
        .into_iter()
        .map(heapgraph_import::Holds::files)
        .collect();
    let after = command
        .get_after_help()
        .map(ToString::to_string)
        .unwrap_or_default();
    command = command.after_help(format!(
        "Reads {}; each verb's --help says which it reads.\n\n{after}",
        crate::load::or_list(&kinds)
    ));
    let verbs: Vec<String> = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_owned())
        .collect();
    for verb in verbs {
        let Some(inputs) = crate::load::inputs_of(&verb) else {
            continue;
        };
        // `mut_args` keeps the arguments in place (`mut_arg` would move one last, and with it
        // the order of the positional ones).
        command = command.mut_subcommand(&verb, |sub| {
            sub.mut_args(|arg| {
                if !INPUT_ARGS.contains(&arg.get_id().as_str()) {
                    return arg;
                }
                let role = arg.get_help().map(ToString::to_string).unwrap_or_default();
                arg.help(format!("{role}: {inputs}"))
            })
        });
    }
    command
}

/// Post-mortem memory analysis: what is using the memory, who holds it, what grew.
#[derive(Parser, Debug)]
#[command(name = "heapgraph", version, about, long_about = None)]
#[command(after_help = concat!(
    quantities!(),
    "\n\n-n N lists N rows of each table (20 by default) on every verb.\n\n\
Exit codes: 0 success, 1 a diff --fail-if gate failed, 2 bad usage or unreadable input; \
record -- COMMAND exits with the command's code."
))]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// Print the wall time of each pass (the parse's steps, the dominator tree, the indexes
    /// built on first use) to stderr when the command ends, with the threads it had
    /// (RAYON_NUM_THREADS sets them) and the memory resident at the pass's end and at most
    /// until then
    #[arg(long, global = true)]
    pub(crate) timings: bool,
    /// Where large columns spill to when a dump is larger than memory, and where `serve` and
    /// `mcp` keep the indexes they read a little of per answer (default: the system's
    /// temporary directory, $TMPDIR or /tmp); pick a local disk with room for about 1.3
    /// times the dump
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) temp_dir: Option<PathBuf>,
    /// Whether large columns live in files under --temp-dir, which the kernel pages out
    /// when memory runs short, instead of in memory: auto when a dump is larger than
    /// three quarters of the memory available
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    pub(crate) spill: SpillArg,
    /// The smallest block that spills, in bytes (default: a 64th of the memory available,
    /// from 4 to 64 MiB): hidden, since only the tests, whose dumps are small, set it
    #[arg(long, global = true, hide = true, value_name = "BYTES")]
    pub(crate) spill_from: Option<usize>,
}

/// When columns spill to files (`--spill`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SpillArg {
    /// When a dump is larger than three quarters of the memory available (a gzipped one
    /// counting five times its size)
    Auto,
    /// Always, whatever the dump's size
    Always,
    /// Never: a dump larger than memory may then end in an out-of-memory kill
    Never,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Totals and the types that hold the most memory (count, shallow, retained), and what
    /// holds the unreachable objects (soft, weak, final or phantom references, or nothing); for
    /// allocation snapshots, the top sites (tracemalloc) or the gpu view (CUDA); for a
    /// timeline (.hgt), peaks, growth, thresholds crossed, dumps taken and the exit
    Summary(SummaryArgs),
    /// The objects that retain the most memory; for allocation snapshots, the sites that hold
    /// the most, as tracemalloc's Snapshot.statistics
    Top(TopArgs),
    /// Chains of references from the GC roots to an object, and its dominators; for an object
    /// only weak references hold (a soft-referenced cache), the strongest chains through them,
    /// each marked with its kind
    WhoHolds(WhoHoldsArgs),
    /// The dominator tree from the root down: what keeps what alive
    Dominators(DominatorsArgs),
    /// Leak suspects, as Eclipse MAT finds them: big single holders and where their bytes
    /// accumulate, and types whose instances together hold much
    Suspects(SuspectsArgs),
    /// Strings grouped by value; --duplicates shows the values held more than once and the
    /// bytes the copies waste
    Strings(StringsArgs),
    /// Who holds a set of objects (a type's instances, ids, or the objects new since a
    /// baseline): the shortest chains from the roots to each, merged into one tree, each node
    /// with how many of the objects it leads to and what they retain (MAT's merged shortest
    /// paths to GC roots)
    Paths(PathsArgs),
    /// A set of objects (a type's instances, ids, or the objects new since a baseline) grouped
    /// by the type of their immediate dominator, looking through the types --skip names (MAT's
    /// immediate dominators)
    DominatedBy(DominatedByArgs),
    /// What grew between two dumps: heap dumps by type (count, shallow, retained) and by holder
    /// (matched by its path from the root), allocation snapshots (tracemalloc, CUDA) by
    /// allocating site, as tracemalloc's Snapshot.compare_to; --fail-if gates for CI
    Diff(DiffArgs),
    /// What filled a GPU: a PyTorch CUDA memory snapshot's allocated and reserved bytes, live
    /// memory by allocating stack, fragmentation, the failed request of an OOM, the timeline
    Gpu(GpuArgs),
    /// Python (objgraph's get_leaking_objects): gc-tracked objects that no dumped object refers
    /// to, held only by C code or leaked by a missing Py_DECREF
    Leaking(LeakingArgs),
    /// The references into an object, some levels up, as a Graphviz DOT graph (objgraph's
    /// show_backrefs)
    Graph(GraphArgs),
    /// A self-contained HTML incident report (no network, inline charts): one dump, a series of
    /// dumps of one process, a baseline and a release, a CUDA snapshot, or a timeline (.hgt)
    Report(ReportArgs),
    /// memlab's three-snapshot method: objects allocated between BASELINE and TARGET that are
    /// still alive in FINAL (matched by V8 object id), clustered by their path from the root
    Leaks(LeaksArgs),
    /// Record a process's memory over time (RSS, PSS, USS, swap, cgroup, GPU through NVML) to a
    /// timeline (.hgt), alert before an out-of-memory kill and take a dump while there is time:
    /// `heapgraph record -- python3 serve.py`, or `--pid PID`
    Record(RecordArgs),
    /// Take a dump of a running process from outside
    #[command(subcommand)]
    Capture(CaptureCommand),
    /// Write a dump in heapgraph's native format (.hgd), with its analysis, to reopen fast
    Convert(ConvertArgs),
    /// Waste in collections (Java HashMap, HashSet, ConcurrentHashMap, ArrayList, object
    /// arrays; Python list, dict, set), as MAT's Collection Fill Ratio: fill ratio, empty
    /// collections, and the bytes a right-sized collection would save
    Waste(WasteArgs),
    /// Write a copy of a dump with every value (primitive arrays, string contents, primitive
    /// fields) zeroed or replaced, and the same graph, types, field names, sizes and ids, to
    /// share it: HPROF stays HPROF, a V8 snapshot stays a snapshot, any other heap dump is
    /// written as .hgd
    Redact(RedactArgs),
    /// Write dumps as Parquet tables, one partition per dump (`DIR/<table>/dump_id=<id>/`), that
    /// Spark, DuckDB and Trino read; the schema is in docs/sql.md
    Export(ExportArgs),
    /// Explore a heap dump in the browser: the dump is analysed once, then served on
    /// 127.0.0.1 behind a random token (the URL printed) until stopped (Ctrl-C)
    Serve(ServeArgs),
    /// An MCP server on stdin and stdout, for AI agents: tools that open dumps and answer with
    /// the JSON schemas (summary, top, who_holds, paths, findings, diff, gpu, ...); configure
    /// an MCP client to start `heapgraph mcp`
    Mcp(McpArgs),
}

#[derive(Args, Debug)]
pub(crate) struct ExportArgs {
    /// The dumps to export
    #[arg(value_name = "FILE", required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// The folder to write (created if missing); a dump already in it is left alone
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub(crate) output: PathBuf,
    /// Tag the dumps (release, host, service): `--label release=2.4 --label host=a`, written
    /// to `dumps.label` as `release=2.4,host=a`
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub(crate) labels: Vec<String>,
    /// Every table but `objects` and `references`: small enough for thousands of dumps
    #[arg(long)]
    pub(crate) summary_only: bool,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

/// A `key=value` label: a key of letters, digits, `_`, `-` and `.`, a value without a comma
/// (labels are joined with commas).
fn parse_label(text: &str) -> Result<String, String> {
    let Some((key, value)) = text.split_once('=') else {
        return Err(format!(
            "{text:?} is not KEY=VALUE; write it as release=2.4"
        ));
    };
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Err(format!(
            "{key:?} is not a label key; use letters, digits, '_', '-' and '.'"
        ));
    }
    if value.contains(',') {
        return Err(format!(
            "{value:?}: a label's value cannot hold a comma (labels are joined with commas)"
        ));
    }
    Ok(text.to_owned())
}

#[derive(Args, Debug)]
pub(crate) struct WasteArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Rows of the table, and collections listed one by one
    #[arg(short = 'n', value_name = "N", default_value_t = DEFAULT_ROWS, hide_default_value = true)]
    pub(crate) n: usize,
}

#[derive(Args, Debug)]
pub(crate) struct RedactArgs {
    /// The dump to redact (HPROF, V8 .heapsnapshot, Python dump, .hgd, .phd; plain or gzipped)
    #[arg(value_name = "IN")]
    pub(crate) file: PathBuf,
    /// Where to write the redacted dump
    #[arg(short = 'o', long = "output")]
    pub(crate) output: PathBuf,
    /// HPROF: keep the text of names (UTF8 records) and strings that match this regular
    /// expression whole (class or key names a team wants to keep); everything else is zeroed
    #[arg(long, value_name = "REGEX")]
    pub(crate) keep_strings_matching: Option<String>,
}

/// What `summary --group-by` groups objects by.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GroupByArg {
    /// Java: the package of each object's class
    Package,
    /// Python: the module of each object's type
    Module,
    /// Java: the class loader that defined each object's class
    Classloader,
    /// V8: the script that defined each object's constructor (or each closure's function)
    Script,
}

#[derive(Args, Debug)]
#[command(
    after_help = "The server binds 127.0.0.1 only and answers only requests that carry \
the printed token (then kept in a cookie) and name the loopback in their Host header. It serves \
the dumps named here and nothing else. The API behind the page is documented in docs/api.md. \
A CUDA memory snapshot or a recording is shown as the GPU view or the timeline of its report, \
with its JSON at /api/v1/gpu or /api/v1/timeline."
)]
pub(crate) struct ServeArgs {
    /// The heap dump to explore (V8 .heapsnapshot, Java .hprof, IBM .phd, or a .hgd; a .hgd
    /// with its stored analysis opens fastest), or a PyTorch CUDA memory snapshot or a
    /// recording (heapgraph record) to look at
    #[arg(value_name = "DUMP")]
    pub(crate) file: PathBuf,
    /// An earlier dump of the same program to compare with (the Comparison view, /api/v1/diff)
    #[arg(long, value_name = "DUMP")]
    pub(crate) baseline: Option<PathBuf>,
    /// The port to listen on (by default one the system picks)
    #[arg(long, default_value_t = 0)]
    pub(crate) port: u16,
    /// Start the desktop's browser on the page
    #[arg(long)]
    pub(crate) open: bool,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

#[derive(Args, Debug)]
#[command(
    after_help = "An MCP client starts the server and talks to it on stdin and stdout \
(JSON-RPC, one message a line); nothing else is written to stdout, and loading messages go to \
stderr. A client's configuration, for example:\n\n  \
{\"mcpServers\": {\"heapgraph\": {\"command\": \"heapgraph\", \"args\": [\"mcp\"]}}}\n\n\
The tools: open_dump, summary, top, who_holds, paths, dominator_children, object, findings, \
diff, gpu; each takes a dump as the id open_dump returned or as a path, and answers with one of \
the JSON schemas of docs/json.md. Tools read the files they are given and write none. The tools, \
their arguments and limits are in docs/mcp.md."
)]
pub(crate) struct McpArgs {
    /// Dumps kept loaded and analysed at once; opening one more closes the one used least
    /// recently (its id then names nothing, its path opens it again)
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub(crate) keep: u16,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

/// What to capture.
#[derive(Subcommand, Debug)]
pub(crate) enum CaptureCommand {
    /// Dump a running Python process's objects to a .hgd file, with nothing installed in it
    /// beforehand: through sys.remote_exec on Python 3.14+ (no gdb needed), through gdb before
    /// that; a process in a container or a chroot too, through its own /tmp
    Python(CaptureArgs),
}

#[derive(Args, Debug)]
#[command(after_help = quantities!())]
pub(crate) struct CaptureArgs {
    /// The process to dump
    #[arg(long, required_unless_present = "print_dumper")]
    pub(crate) pid: Option<u32>,
    /// Where to write the dump (.hgd). The process itself writes it: here if it shares this
    /// root, so its user must be able to; else into its own /tmp, whence it is moved here
    #[arg(short = 'o', long = "output", required_unless_present = "print_dumper")]
    pub(crate) output: Option<PathBuf>,
    /// How long to wait for the process to finish writing
    #[arg(long, default_value = "120s", value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) timeout: Duration,
    /// Print the dumper module (heapgraph_dump.py) instead, to import in a program:
    /// heapgraph_dump.dump(path), or heapgraph_dump.install() to dump on SIGUSR2
    #[arg(long, conflicts_with_all = ["pid", "output"])]
    pub(crate) print_dumper: bool,
}

#[derive(Args, Debug)]
#[command(after_help = concat!(
    "Thresholds are levels: shares of a limit (80%) or sizes (12GiB, 500MB). Host memory \
is the RSS of the process and its descendants, against the cgroup's memory limit where one is set, \
else the machine's memory; GPU memory is the processes' memory on each GPU, against the GPU's own. \
A dump is taken of the process of the tree with the most memory that heapgraph can dump: Python \
(through the dumper's install() handler when the program called it, else by injecting the dumper \
with gdb), Node.js started with --heapsnapshot-signal, or a JVM (jcmd GC.heap_dump). \
With a command, heapgraph exits with the command's exit code (128 + N when signal N ended it).\n\n",
    quantities!()
))]
pub(crate) struct RecordArgs {
    /// The program to start and record, after `--`
    #[arg(
        last = true,
        value_name = "COMMAND",
        required_unless_present = "pid",
        conflicts_with = "pid"
    )]
    pub(crate) command: Vec<String>,
    /// Record a running process (and its descendants) instead
    #[arg(long)]
    pub(crate) pid: Option<u32>,
    /// Where to write the timeline (default: PROGRAM-PID.hgt in the working directory)
    #[arg(short = 'o', long = "output")]
    pub(crate) output: Option<PathBuf>,
    /// Time between samples, from 50ms (like 200ms, 1s, 2.5s)
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) interval: Duration,
    /// Print an alert when memory reaches this (80% of the limit, or a size like 12GiB)
    #[arg(long, value_name = "LEVEL", value_parser = parse_level)]
    pub(crate) warn: Option<Level>,
    /// Take a dump when memory reaches this (90%, or a size): one per crossing
    #[arg(long, value_name = "LEVEL", value_parser = parse_level)]
    pub(crate) act: Option<Level>,
    /// The alert level for GPU memory (default: --warn, when it is a share)
    #[arg(long, value_name = "LEVEL", value_parser = parse_level)]
    pub(crate) gpu_warn: Option<Level>,
    /// The dump level for GPU memory (default: --act, when it is a share)
    #[arg(long, value_name = "LEVEL", value_parser = parse_level)]
    pub(crate) gpu_act: Option<Level>,
    /// Where dumps go (default: the timeline's directory)
    #[arg(long, value_name = "DIR")]
    pub(crate) dump_dir: Option<PathBuf>,
    /// The least time between two dumps
    #[arg(long, default_value = "60s", value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) act_every: Duration,
    /// The most dumps to take
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub(crate) max_dumps: u32,
    /// How long a dump may take before it is given up
    #[arg(long, default_value = "300s", value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) dump_timeout: Duration,
    /// Stop recording after this long (the command keeps running)
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) duration: Option<Duration>,
    /// No status line on stderr (alerts and dumps are still reported)
    #[arg(short = 'q', long)]
    pub(crate) quiet: bool,
}

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// One file, or a series of dumps of one process, oldest first (a recording may join them)
    #[arg(required = true, value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
    /// Compare with this dump (an earlier release), as the first of the series
    #[arg(long, value_name = "FILE")]
    pub(crate) baseline: Option<PathBuf>,
    /// Where to write the page (default: beside the first FILE, named after it: app.html for
    /// app.heapsnapshot.gz)
    #[arg(short = 'o', long = "output")]
    pub(crate) output: Option<PathBuf>,
    /// Leave the generation time out (as does setting SOURCE_DATE_EPOCH, which gives the time to
    /// show), so that the same inputs give the same bytes
    #[arg(long)]
    pub(crate) no_timestamp: bool,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

#[derive(Args, Debug)]
pub(crate) struct LeaksArgs {
    /// The snapshot before the action under test
    #[arg(value_name = "BASELINE")]
    pub(crate) baseline: PathBuf,
    /// The snapshot after the action
    #[arg(value_name = "TARGET")]
    pub(crate) target: PathBuf,
    /// The snapshot after undoing the action (what is still alive here leaked)
    #[arg(id = "final", value_name = "FINAL")]
    pub(crate) final_: PathBuf,
    /// Output format
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) format: OutputFormat,
    /// Clusters to list (20 by default)
    #[arg(short = 'n', value_name = "N", default_value_t = DEFAULT_ROWS, hide_default_value = true)]
    pub(crate) n: usize,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

#[derive(Args, Debug)]
pub(crate) struct LeakingArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Objects to list (20 by default)
    #[arg(short = 'n', value_name = "N", default_value_t = DEFAULT_ROWS, hide_default_value = true)]
    pub(crate) n: usize,
}

#[derive(Args, Debug)]
pub(crate) struct GraphArgs {
    /// The dump
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// The object whose referrers to draw: @12345, 12345 or 0x3039
    #[arg(long = "backrefs", value_name = "ID")]
    pub(crate) backrefs: String,
    /// Levels of referrers
    #[arg(long, default_value_t = 4)]
    pub(crate) depth: u32,
    /// The most objects to draw
    #[arg(long, default_value_t = 100)]
    pub(crate) max_objects: usize,
    /// Where to write the DOT file (stdout when not given)
    #[arg(short = 'o', long = "output")]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

/// Output format of every analysis.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutputFormat {
    /// Aligned tables for people
    Text,
    /// Versioned JSON for machines (schemas in docs/json.md)
    Json,
}

/// How `top` ranks objects, or groups allocations.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RankByArg {
    /// Heap dumps: bytes the object keeps alive (the default)
    Retained,
    /// Heap dumps: bytes of the object alone
    Shallow,
    /// Heap dumps: objects the object keeps alive
    Count,
    /// Allocation snapshots: by the file of the most recent frame
    Filename,
    /// Allocation snapshots: by the most recent frame (tracemalloc's default)
    Lineno,
    /// Allocation snapshots: by the whole stack (the default for CUDA snapshots)
    Traceback,
}

/// How allocation snapshots are grouped and filtered, as tracemalloc's statistics.
#[derive(Args, Debug, Default)]
pub(crate) struct SiteArgs {
    /// Count each allocation under every frame of its stack (tracemalloc's cumulative=True;
    /// with --by filename or lineno)
    #[arg(long)]
    pub(crate) cumulative: bool,
    /// Keep only allocations whose most recent frame's file matches this glob (like
    /// tracemalloc.Filter(True, GLOB)); may be repeated
    #[arg(long = "filter", value_name = "GLOB")]
    pub(crate) include: Vec<String>,
    /// Leave out allocations whose most recent frame's file matches this glob (like
    /// tracemalloc.Filter(False, GLOB)); may be repeated
    #[arg(long = "exclude", value_name = "GLOB")]
    pub(crate) exclude: Vec<String>,
    /// CUDA snapshots: keep library frames (torch, the standard library) in stacks, and the C++
    /// and interpreter frames that PyTorch's own viewer hides; by default they are folded away
    /// so that stacks show the user's code
    #[arg(long)]
    pub(crate) all_frames: bool,
}

/// How heap dumps are read: which dump of a file that holds several, and the object layout of
/// a Java dump where it cannot be read from the dump itself.
#[derive(Args, Debug, Clone, Copy, Default)]
#[command(next_help_heading = "Reading heap dumps")]
pub(crate) struct ReadArgs {
    /// HPROF files that hold several heap dumps (the hprof agent writes one per request): read
    /// dump N, counting from 1 (by default the last; `summary --format json` lists them)
    #[arg(long = "dump", value_name = "N")]
    pub(crate) dump: Option<std::num::NonZeroUsize>,
    /// Java dumps: the JVM's object layout, where the dump's notes say it was assumed
    #[arg(long, value_enum, value_name = "LAYOUT")]
    pub(crate) layout: Option<LayoutArg>,
    /// Java dumps: how the JVM placed fields (per-class up to JDK 14, packed from JDK 15), where
    /// the dump's notes say it was assumed
    #[arg(long, value_enum, value_name = "RULE")]
    pub(crate) field_layout: Option<FieldLayoutArg>,
}

impl ReadArgs {
    /// The importer's options for these arguments.
    pub(crate) fn hprof_options(&self) -> heapgraph_import::hprof::Options {
        let mut options = heapgraph_import::hprof::Options::default();
        options.dump = self.dump;
        options.layout = self.layout.map(LayoutArg::into_layout);
        options.fields = self.field_layout.map(|rule| match rule {
            FieldLayoutArg::PerClass => heapgraph_import::hprof::FieldLayout::PerClass,
            FieldLayoutArg::Packed => heapgraph_import::hprof::FieldLayout::Packed,
        });
        options
    }
}

/// A JVM's object layout (`--layout`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LayoutArg {
    /// 64-bit, compressed oops and class pointers: 12-byte headers, 4-byte references (the
    /// default for heaps under 32 GB)
    CompressedOops,
    /// 64-bit, -XX:-UseCompressedOops on JDK 8 or later: 12-byte headers, 8-byte references
    CompressedClassPointers,
    /// 64-bit, nothing compressed (JDK 6 and 7 with -XX:-UseCompressedOops): 16-byte headers,
    /// 8-byte references
    Uncompressed,
    /// 64-bit, -XX:-UseCompressedClassPointers: 16-byte headers, 4-byte references
    CompressedOopsOnly,
    /// A 32-bit JVM: 8-byte headers, 4-byte references
    #[value(name = "32-bit")]
    ThirtyTwoBit,
}

impl LayoutArg {
    fn into_layout(self) -> heapgraph_import::hprof::ObjectLayout {
        use heapgraph_import::hprof::ObjectLayout;
        match self {
            LayoutArg::CompressedOops => ObjectLayout::CompressedOops,
            LayoutArg::CompressedClassPointers => ObjectLayout::CompressedClassPointers,
            LayoutArg::Uncompressed => ObjectLayout::Uncompressed,
            LayoutArg::CompressedOopsOnly => ObjectLayout::CompressedOopsOnly,
            LayoutArg::ThirtyTwoBit => ObjectLayout::ThirtyTwoBit,
        }
    }
}

/// How a JVM placed an object's fields (`--field-layout`).
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FieldLayoutArg {
    /// HotSpot up to JDK 14: each class's fields on their own, from a boundary after its
    /// superclass's
    PerClass,
    /// HotSpot from JDK 15: a subclass's fields fill the gaps its superclasses left
    Packed,
}

/// Arguments every analysis shares.
#[derive(Args, Debug)]
pub(crate) struct Common {
    /// The file to read
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// Output format
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) format: OutputFormat,
    /// Count weak references as retaining (off by default, as in DevTools and MAT)
    #[arg(long)]
    pub(crate) include_weak: bool,
    /// Python dumps: leave references to modules, module namespaces and classes out of the
    /// retained sizes (like meliae's "remove expensive references"), to see what user code holds
    #[arg(long)]
    pub(crate) collapse_modules: bool,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

#[derive(Args, Debug)]
pub(crate) struct SummaryArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Rows of each table (20 by default; JSON lists every type unless -n is given)
    #[arg(short = 'n', value_name = "N", alias = "types")]
    pub(crate) n: Option<usize>,
    /// Count only objects of this kind: for Python dumps `object` (what the garbage collector
    /// tracks, as objgraph counts) or `untracked`; V8's node types (`string`, `closure`, …);
    /// Java's `instance`, `class`, `object-array`, `primitive-array`
    #[arg(long)]
    pub(crate) kind: Option<String>,
    /// Totals per package (Java), module (Python), class loader (Java) or script (V8) instead
    /// of per type, each retained byte counted once
    #[arg(long, value_enum, value_name = "GROUP")]
    pub(crate) group_by: Option<GroupByArg>,
}

#[derive(Args, Debug)]
pub(crate) struct TopArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// What to rank by (heap dumps) or group by (allocation snapshots)
    #[arg(long, value_enum)]
    pub(crate) by: Option<RankByArg>,
    /// Objects or sites to list (20 by default)
    #[arg(short = 'n', value_name = "N", default_value_t = DEFAULT_ROWS, hide_default_value = true)]
    pub(crate) n: usize,
    #[command(flatten)]
    pub(crate) sites: SiteArgs,
}

#[derive(Args, Debug)]
#[command(after_help = quantities!())]
pub(crate) struct DiffArgs {
    /// The older snapshot
    #[arg(value_name = "OLD")]
    pub(crate) old: PathBuf,
    /// The newer snapshot
    #[arg(value_name = "NEW")]
    pub(crate) new: PathBuf,
    /// Output format
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) format: OutputFormat,
    /// Heap dumps: rank types by the change of retained (default), shallow or count.
    /// Allocation snapshots: group by filename, lineno or traceback (default: lineno for
    /// tracemalloc, traceback for CUDA snapshots)
    #[arg(long, value_enum)]
    pub(crate) by: Option<RankByArg>,
    /// Rows of each table (20 by default; JSON lists every type, holder and site unless -n
    /// is given)
    #[arg(short = 'n', value_name = "N")]
    pub(crate) n: Option<usize>,
    /// Heap dumps: count weak references as retaining
    #[arg(long)]
    pub(crate) include_weak: bool,
    /// Python dumps: leave references to modules, module namespaces and classes out of the
    /// retained sizes (see `summary --help`)
    #[arg(long)]
    pub(crate) collapse_modules: bool,
    /// A regression gate: exit 1 if this rule holds. METRIC[(SELECTOR)] OP VALUE, like
    /// 'retained(type~Cache) > +10%', 'total > +64MiB', 'size(site~loader.py) >= +1MB'.
    /// METRIC: total, count, shallow, retained (heap dumps), size (allocation snapshots);
    /// SELECTOR: type~REGEX, type=NAME, holder~REGEX, site~REGEX; OP: > or >=; VALUE: a change
    /// (below). May be repeated; every rule is printed on stderr with what it measured
    #[arg(long = "fail-if", value_name = "RULE", value_parser = parse_rule)]
    pub(crate) fail_if: Vec<heapgraph_analyzer::gate::Rule>,
    #[command(flatten)]
    pub(crate) sites: SiteArgs,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

#[derive(Args, Debug)]
pub(crate) struct GpuArgs {
    /// The snapshot (torch.cuda.memory._dump_snapshot)
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// Output format
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) format: OutputFormat,
    /// Rows of each table (20 by default)
    #[arg(
        short = 'n',
        value_name = "N",
        default_value_t = DEFAULT_ROWS,
        hide_default_value = true
    )]
    pub(crate) n: usize,
    /// What the table of live memory groups by: traceback (the whole stack, the default),
    /// lineno or filename (of the most recent frame), as `top` on a CUDA snapshot
    #[arg(long, value_enum)]
    pub(crate) by: Option<RankByArg>,
    /// Add allocated and reserved bytes over time, from the trace (JSON: [time_us, allocated,
    /// reserved] per event)
    #[arg(long)]
    pub(crate) timeline: bool,
    #[command(flatten)]
    pub(crate) sites: SiteArgs,
}

#[derive(Args, Debug)]
#[command(override_usage = "heapgraph who-holds [OPTIONS] <FILE> <OBJECT | --type NAME>")]
pub(crate) struct WhoHoldsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// The object: @12345 (as DevTools shows it), 12345, or 0x3039
    #[arg(required_unless_present = "type_name", conflicts_with = "type_name")]
    pub(crate) object: Option<String>,
    /// Instead of an id: the instance of this type that retains the most (a whole name, or the
    /// end of one after a dot: SessionCache for __main__.SessionCache)
    #[arg(long = "type", value_name = "NAME")]
    pub(crate) type_name: Option<String>,
    /// How many chains to print
    #[arg(long = "paths", default_value_t = 3, value_name = "K")]
    pub(crate) n_paths: usize,
    /// Which chains come first: `explain` (chains from named roots, a module global, a static
    /// field, a thread's local, a global property, before those from anonymous ones; one per
    /// root; equal ones merged) or `shortest` (the K shortest distinct chains)
    #[arg(long, value_enum, default_value_t = ChainOrderArg::Explain)]
    pub(crate) order: ChainOrderArg,
}

/// How `who-holds` orders its chains.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChainOrderArg {
    /// Chains from named roots first, one per root, equal ones merged
    Explain,
    /// The shortest chains first
    Shortest,
}

#[derive(Args, Debug)]
#[command(after_help = quantities!())]
pub(crate) struct DominatorsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Levels below the root to show
    #[arg(long, default_value_t = 3)]
    pub(crate) depth: u32,
    /// Hide nodes retaining less than this share of the heap (like 1%, 0.5% or 0.005)
    #[arg(long, default_value = "1%", value_parser = parse_share, value_name = "SHARE")]
    pub(crate) min_share: f64,
}

#[derive(Args, Debug)]
#[command(after_help = quantities!())]
pub(crate) struct SuspectsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// The share of the reachable heap a suspect, or a big drop, must retain (like 10% or 0.1)
    #[arg(long, default_value = "10%", value_parser = parse_share, value_name = "SHARE")]
    pub(crate) threshold: f64,
    /// Where the bytes accumulate: an object whose largest child in the dominator tree keeps
    /// less than the rest of this share of it (a big drop, as Eclipse MAT calls it)
    #[arg(long, default_value = "20%", value_parser = parse_share, value_name = "SHARE")]
    pub(crate) min_drop: f64,
}

/// Which objects `paths` and `dominated-by` are about.
#[derive(Args, Debug)]
pub(crate) struct TargetArgs {
    /// The objects of this type (a whole name, or the end of one after a dot: Session for
    /// com.example.Session)
    #[arg(long = "type", value_name = "NAME")]
    pub(crate) type_name: Option<String>,
    /// These objects: ids as @12345, 12345 or 0x3039, separated by commas
    #[arg(long, value_name = "ID,…", value_delimiter = ',')]
    pub(crate) ids: Vec<String>,
    /// Only the objects that this earlier dump of the process does not have (matched by object
    /// id, as diff and leaks match them); with --type, the new objects of that type
    #[arg(long, value_name = "BEFORE")]
    pub(crate) baseline: Option<PathBuf>,
    /// All the objects new since --baseline
    #[arg(long, requires = "baseline")]
    pub(crate) new: bool,
}

#[derive(Args, Debug)]
#[command(
    override_usage = "heapgraph paths [OPTIONS] <FILE> <--type NAME | --ids ID,… | --baseline BEFORE --new>"
)]
pub(crate) struct PathsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    #[command(flatten)]
    pub(crate) targets: TargetArgs,
    /// Children listed per node, the ones leading to the most objects first (20 by default)
    #[arg(short = 'n', value_name = "N", default_value_t = DEFAULT_ROWS, hide_default_value = true)]
    pub(crate) n: usize,
    /// Which chain each object gets: `explain` (through a named root, a module global, a
    /// static field, a thread's local, a global property, where one reaches it) or `shortest`
    #[arg(long, value_enum, default_value_t = ChainOrderArg::Explain)]
    pub(crate) order: ChainOrderArg,
}

#[derive(Args, Debug)]
#[command(
    override_usage = "heapgraph dominated-by [OPTIONS] <FILE> <--type NAME | --ids ID,… | --baseline BEFORE --new>"
)]
pub(crate) struct DominatedByArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    #[command(flatten)]
    pub(crate) targets: TargetArgs,
    /// Look through dominators of these types to the first one above them of another type:
    /// globs, `*` for any characters (java.util.*, builtins.dict, Map); may be repeated or
    /// separated by commas
    #[arg(long, value_name = "GLOB", value_delimiter = ',')]
    pub(crate) skip: Vec<String>,
    /// Types to list (20 by default; JSON lists every type unless -n is given)
    #[arg(short = 'n', value_name = "N")]
    pub(crate) n: Option<usize>,
}

#[derive(Args, Debug)]
pub(crate) struct StringsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Only values held by two strings or more, ranked by the bytes the copies waste
    #[arg(long)]
    pub(crate) duplicates: bool,
    /// Values to list (20 by default)
    #[arg(short = 'n', value_name = "N", default_value_t = DEFAULT_ROWS, hide_default_value = true)]
    pub(crate) n: usize,
}

#[derive(Args, Debug)]
pub(crate) struct ConvertArgs {
    /// The dump to convert
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
    /// Where to write the .hgd file
    #[arg(short = 'o', long = "output")]
    pub(crate) output: PathBuf,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

/// A duration, in the words of `units` (clap's value parser).
fn parse_duration(text: &str) -> Result<Duration, units::UnitError> {
    units::parse_duration(text)
}

/// A share, in the words of `units`.
fn parse_share(text: &str) -> Result<f64, units::UnitError> {
    units::parse_share(text)
}

/// A level (a share or a size), in the words of `units`.
fn parse_level(text: &str) -> Result<Level, units::UnitError> {
    text.parse()
}

/// A `--fail-if` rule, its VALUE a change in the words of `units`.
fn parse_rule(text: &str) -> Result<heapgraph_analyzer::gate::Rule, String> {
    use heapgraph_analyzer::gate::{Change, parse_rule};
    parse_rule(text, |value| {
        match value
            .parse::<units::Change>()
            .map_err(|err| err.to_string())?
        {
            units::Change::Amount(amount) => Ok(Change::Absolute(amount)),
            units::Change::Share(share) => Ok(Change::Relative(share)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        command().debug_assert();
    }

    fn parsed(line: &[&str]) -> Command {
        let matches = command()
            .try_get_matches_from(std::iter::once("heapgraph").chain(line.iter().copied()))
            .unwrap();
        Cli::from_arg_matches(&matches).unwrap().command
    }

    /// The input help is added without moving the positional arguments.
    #[test]
    fn positional_arguments_keep_their_order() {
        let Command::WhoHolds(args) = parsed(&["who-holds", "a.hgd", "--type", "Cache"]) else {
            panic!("not who-holds");
        };
        assert_eq!(args.common.file, PathBuf::from("a.hgd"));
        assert_eq!(args.object, None);
        let Command::Diff(args) = parsed(&["diff", "old.hgd", "new.hgd"]) else {
            panic!("not diff");
        };
        assert_eq!(
            (args.old, args.new),
            (PathBuf::from("old.hgd"), PathBuf::from("new.hgd"))
        );
        let Command::Leaks(args) = parsed(&["leaks", "b", "t", "f"]) else {
            panic!("not leaks");
        };
        assert_eq!(args.final_, PathBuf::from("f"));
    }

    /// README's "Common options" documents the words for quantities as `--help` does.
    #[test]
    fn readme_quotes_the_quantities_of_help() {
        let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        let readme = words(include_str!("../../../README.md"));
        let help = words(QUANTITIES);
        assert!(
            readme.contains(&help),
            "README.md's Common options must quote, word for word:\n{help}"
        );
    }

    #[test]
    fn gates_read_values_as_every_other_flag() {
        assert!(parse_rule("total > +1K").is_ok());
        assert!(parse_rule("total > +1TiB").is_ok());
        assert!(parse_rule("retained(type~Cache) > +0.1").is_ok());
        let err = parse_rule("total > +3 furlongs").unwrap_err();
        assert!(err.contains("unknown unit \"furlongs\""), "{err}");
    }
}
