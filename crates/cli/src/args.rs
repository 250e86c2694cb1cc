//! Command-line arguments (clap derive). Nothing here leaves the binary: verbs turn these into
//! the libraries' options.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Post-mortem memory analysis: what is using the memory, who holds it, what grew.
#[derive(Parser, Debug)]
#[command(name = "heapgraph", version, about, long_about = None)]
#[command(
    after_help = "Reads V8 .heapsnapshot files, Java HPROF dumps (.hprof, plain or .gz), IBM portable heap dumps \
(.phd from OpenJ9 and IBM Java, plain or .gz), tracemalloc dumps \
(Snapshot.dump), PyTorch CUDA memory snapshots (.pickle, plain or .gz), heapgraph's own .hgd \
(which the Python dumper writes: heapgraph capture python) and .hgt timelines (heapgraph record).\n\
Exit codes: 0 success, 1 a diff --fail-if gate failed, 2 bad usage or unreadable input; \
record -- COMMAND exits with the command's code."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
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
pub(crate) struct CaptureArgs {
    /// The process to dump
    #[arg(long, required_unless_present = "print_dumper")]
    pub(crate) pid: Option<u32>,
    /// Where to write the dump (.hgd). The process itself writes it: here if it shares this
    /// root, so its user must be able to; else into its own /tmp, whence it is moved here
    #[arg(short = 'o', long = "output", required_unless_present = "print_dumper")]
    pub(crate) output: Option<PathBuf>,
    /// Seconds to wait for the process to finish writing
    #[arg(long = "timeout", default_value_t = 120, value_name = "SECONDS")]
    pub(crate) timeout_s: u64,
    /// Print the dumper module (heapgraph_dump.py) instead, to import in a program:
    /// heapgraph_dump.dump(path), or heapgraph_dump.install() to dump on SIGUSR2
    #[arg(long, conflicts_with_all = ["pid", "output"])]
    pub(crate) print_dumper: bool,
}

#[derive(Args, Debug)]
#[command(
    after_help = "Thresholds are shares of a limit (80%) or sizes (12GiB, 500MB). Host memory \
is the RSS of the process and its descendants, against the cgroup's memory limit where one is set, \
else the machine's memory; GPU memory is the processes' memory on each GPU, against the GPU's own. \
A dump is taken of the process of the tree with the most memory that heapgraph can dump: Python \
(through the dumper's install() handler when the program called it, else by injecting the dumper \
with gdb), Node.js started with --heapsnapshot-signal, or a JVM (jcmd GC.heap_dump). \
With a command, heapgraph exits with the command's exit code (128 + N when signal N ended it)."
)]
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
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub(crate) interval: std::time::Duration,
    /// Print an alert when memory reaches this (80% of the limit, or a size like 12GiB)
    #[arg(long, value_name = "LEVEL")]
    pub(crate) warn: Option<String>,
    /// Take a dump when memory reaches this (90%, or a size): one per crossing
    #[arg(long, value_name = "LEVEL")]
    pub(crate) act: Option<String>,
    /// The alert level for GPU memory (default: --warn, when it is a share)
    #[arg(long, value_name = "LEVEL")]
    pub(crate) gpu_warn: Option<String>,
    /// The dump level for GPU memory (default: --act, when it is a share)
    #[arg(long, value_name = "LEVEL")]
    pub(crate) gpu_act: Option<String>,
    /// Where dumps go (default: the timeline's directory)
    #[arg(long, value_name = "DIR")]
    pub(crate) dump_dir: Option<PathBuf>,
    /// The least time between two dumps
    #[arg(long, default_value = "60s", value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) act_every: std::time::Duration,
    /// The most dumps to take
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub(crate) max_dumps: u32,
    /// How long a dump may take before it is given up
    #[arg(long, default_value = "300s", value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) dump_timeout: std::time::Duration,
    /// Stop recording after this long (the command keeps running)
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) duration: Option<std::time::Duration>,
    /// No status line on stderr (alerts and dumps are still reported)
    #[arg(short = 'q', long)]
    pub(crate) quiet: bool,
}

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// The dumps: one, or a series of one process, oldest first; a timeline (.hgt) may join
    #[arg(required = true)]
    pub(crate) files: Vec<PathBuf>,
    /// Compare with this dump (an earlier release), as the first of the series
    #[arg(long)]
    pub(crate) baseline: Option<PathBuf>,
    /// Where to write the page
    #[arg(short = 'o', long = "output")]
    pub(crate) output: PathBuf,
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
    pub(crate) baseline: PathBuf,
    /// The snapshot after the action
    pub(crate) target: PathBuf,
    /// The snapshot after undoing the action (what is still alive here leaked)
    #[arg(name = "final")]
    pub(crate) final_: PathBuf,
    /// Output format
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) format: OutputFormat,
    /// Clusters to list
    #[arg(short = 'n', default_value_t = 20)]
    pub(crate) n: usize,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

#[derive(Args, Debug)]
pub(crate) struct LeakingArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// How many objects to list
    #[arg(short = 'n', default_value_t = 20)]
    pub(crate) n: usize,
}

#[derive(Args, Debug)]
pub(crate) struct GraphArgs {
    /// The dump
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
    /// The dump: a .heapsnapshot, .hprof, .hgd (any of them gzipped), a tracemalloc dump, a
    /// CUDA memory snapshot, or (summary only) a .hgt timeline
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
    /// Types to list (JSON lists all types unless -n is given)
    #[arg(short = 'n', long = "types")]
    pub(crate) n_types: Option<usize>,
    /// Count only objects of this kind: for Python dumps `object` (what the garbage collector
    /// tracks, as objgraph counts) or `untracked`; V8's node types (`string`, `closure`, …);
    /// Java's `instance`, `class`, `object-array`, `primitive-array`
    #[arg(long)]
    pub(crate) kind: Option<String>,
}

#[derive(Args, Debug)]
pub(crate) struct TopArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// What to rank by (heap dumps) or group by (allocation snapshots)
    #[arg(long, value_enum)]
    pub(crate) by: Option<RankByArg>,
    /// How many objects or sites to list
    #[arg(short = 'n', default_value_t = 20)]
    pub(crate) n: usize,
    #[command(flatten)]
    pub(crate) sites: SiteArgs,
}

#[derive(Args, Debug)]
pub(crate) struct DiffArgs {
    /// The older snapshot
    pub(crate) old: PathBuf,
    /// The newer snapshot
    pub(crate) new: PathBuf,
    /// Output format
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) format: OutputFormat,
    /// Heap dumps: rank types by the change of retained (default), shallow or count.
    /// Allocation snapshots: group by filename, lineno or traceback (default: lineno for
    /// tracemalloc, traceback for CUDA snapshots)
    #[arg(long, value_enum)]
    pub(crate) by: Option<RankByArg>,
    /// How many types or sites to list (JSON lists all unless -n is given)
    #[arg(short = 'n')]
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
    /// SELECTOR: type~REGEX, type=NAME, holder~REGEX, site~REGEX; OP: > or >=; KiB/MiB/GiB binary,
    /// KB/MB/GB decimal. May be repeated; every rule is printed on stderr with what it measured
    #[arg(long = "fail-if", value_name = "RULE")]
    pub(crate) fail_if: Vec<String>,
    #[command(flatten)]
    pub(crate) sites: SiteArgs,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

#[derive(Args, Debug)]
pub(crate) struct GpuArgs {
    /// A CUDA memory snapshot (torch.cuda.memory._dump_snapshot), plain or .gz
    pub(crate) file: PathBuf,
    /// Output format
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) format: OutputFormat,
    /// Rows of each table
    #[arg(short = 'n', default_value_t = 10)]
    pub(crate) n: usize,
    /// Keep library frames (torch, the standard library) in stacks, and the C++ and interpreter
    /// frames that PyTorch's own viewer hides (stacks="all")
    #[arg(long)]
    pub(crate) all_frames: bool,
    /// Add allocated and reserved bytes over time, from the trace (JSON: [time_us, allocated,
    /// reserved] per event)
    #[arg(long)]
    pub(crate) timeline: bool,
}

#[derive(Args, Debug)]
pub(crate) struct WhoHoldsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// The object: @12345 (as DevTools shows it), 12345, or 0x3039
    #[arg(required_unless_present = "type_name", conflicts_with = "type_name")]
    pub(crate) object: Option<String>,
    /// Instead of an id: the instance of this type that retains the most
    #[arg(long = "type", value_name = "TYPE")]
    pub(crate) type_name: Option<String>,
    /// How many distinct shortest chains to print
    #[arg(long = "paths", default_value_t = 3, value_name = "K")]
    pub(crate) n_paths: usize,
}

#[derive(Args, Debug)]
pub(crate) struct DominatorsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Levels below the root to show
    #[arg(long, default_value_t = 3)]
    pub(crate) depth: u32,
    /// Hide nodes retaining less than this share of the heap (like 1% or 0.5%)
    #[arg(long, default_value = "1%", value_parser = parse_share)]
    pub(crate) min_share: f64,
}

#[derive(Args, Debug)]
pub(crate) struct SuspectsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// The share of the reachable heap a suspect must retain (like 10% or 0.1)
    #[arg(long, default_value = "10%", value_parser = parse_share)]
    pub(crate) threshold: f64,
}

#[derive(Args, Debug)]
pub(crate) struct StringsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Only values held by two strings or more, ranked by the bytes the copies waste
    #[arg(long)]
    pub(crate) duplicates: bool,
    /// How many values to list
    #[arg(short = 'n', default_value_t = 20)]
    pub(crate) n: usize,
}

#[derive(Args, Debug)]
pub(crate) struct ConvertArgs {
    /// The dump to convert
    pub(crate) file: PathBuf,
    /// Where to write the .hgd file
    #[arg(short = 'o', long = "output")]
    pub(crate) output: PathBuf,
    #[command(flatten)]
    pub(crate) read: ReadArgs,
}

/// Parses `200ms`, `1s`, `2.5s`, `5m`, `1h`; a bare number is seconds.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration; write it like 200ms, 1s or 5m"))?;
    let seconds = match unit.trim() {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "{text:?}: unknown unit {other:?}; use ms, s, m or h"
            ));
        }
    };
    std::time::Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("{text:?} is not a duration of zero or more"))
}

/// Parses `1%`, `0.5%` or a fraction such as `0.01`.
fn parse_share(text: &str) -> Result<f64, String> {
    let (number, scale) = match text.strip_suffix('%') {
        Some(number) => (number, 100.0),
        None => (text, 1.0),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a share; write it like 1% or 0.01"))?;
    let share = value / scale;
    if !(0.0..=1.0).contains(&share) {
        return Err(format!("{text:?} is not between 0% and 100%"));
    }
    Ok(share)
}

#[cfg(test)]
mod tests {
    use super::{parse_duration, parse_share};
    use std::time::Duration;

    #[test]
    fn durations_parse_with_their_units() {
        assert_eq!(parse_duration("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(parse_duration("2.5s"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert!(parse_duration("5 fortnights").is_err());
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn shares_parse_as_percent_or_fraction() {
        assert_eq!(parse_share("1%"), Ok(0.01));
        assert_eq!(parse_share("0.5%"), Ok(0.005));
        assert_eq!(parse_share("0.25"), Ok(0.25));
        assert!(parse_share("150%").is_err());
        assert!(parse_share("lots").is_err());
    }
}
