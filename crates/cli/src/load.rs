//! Loading a dump for a verb: import with a progress bar, then analyse (or adopt the analysis
//! a `.hgd` file carries).

use crate::args::{Common, ReadArgs, SpillArg};
use anyhow::{Context, bail};
use heapgraph_analyzer::{Analysis, EdgeRule, Options, ViewDistances};
use heapgraph_capture::sampler::procfs;
use heapgraph_import::{Contents, hgd};
use heapgraph_model::{AllocSnapshot, HeapGraph, StoredAnalysis, Timeline};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// A loaded heap graph, with the analysis its file carried, if any.
pub(crate) struct Loaded {
    pub(crate) graph: HeapGraph,
    stored: Option<StoredAnalysis>,
}

/// Bytes-read progress on stderr; indicatif draws nothing when stderr is not a terminal.
struct Bar(ProgressBar);

impl heapgraph_import::Progress for Bar {
    fn start(&self, total_bytes: Option<u64>) {
        if let Some(total) = total_bytes {
            self.0.set_length(total);
        }
    }
    fn advance(&self, bytes: u64) {
        self.0.inc(bytes);
    }
}

fn progress_bar(message: &str) -> ProgressBar {
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template(
        "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(message.to_owned());
    bar
}

/// A spinner for steps without a byte count.
pub(crate) fn spinner(message: &str) -> ProgressBar {
    let spinner = ProgressBar::new_spinner();
    spinner.set_message(message.to_owned());
    spinner.enable_steady_tick(Duration::from_millis(120));
    spinner
}

/// What a file holds, loaded.
pub(crate) enum Evidence {
    /// Objects and references.
    Graph(Box<Loaded>),
    /// Live allocations by stack.
    Alloc(Box<AllocSnapshot>),
    /// Memory over time (`heapgraph record`).
    Timeline(Box<Timeline>),
}

pub(crate) use heapgraph_import::Holds;

/// Which verbs read what a file holds: the one list every refusal names and each verb's
/// `--help` draws its files from (which files hold what is the import crate's table).
pub(crate) trait Readers {
    /// The verbs that read such a file. The e2e test
    /// `refusals_name_every_verb_that_reads_the_file` runs each verb on each kind of file and
    /// checks that exactly these succeed.
    fn readers(self) -> &'static [&'static str];

    /// `` `heapgraph summary`, `top` and `report` read it ``.
    fn read_by(self) -> String;
}

impl Readers for Holds {
    fn readers(self) -> &'static [&'static str] {
        match self {
            Holds::HeapGraph => &[
                "summary",
                "top",
                "who-holds",
                "dominators",
                "suspects",
                "strings",
                "paths",
                "dominated-by",
                "diff",
                "leaking",
                "leaks",
                "graph",
                "report",
                "convert",
                "export",
            ],
            Holds::CudaSnapshot => &["summary", "top", "diff", "gpu", "report", "export"],
            Holds::Allocations => &["summary", "top", "diff", "report", "export"],
            Holds::Timeline => &["summary", "report", "export"],
        }
    }

    fn read_by(self) -> String {
        let verbs = self.readers();
        let mut text = String::new();
        for (index, verb) in verbs.iter().enumerate() {
            if index > 0 {
                text.push_str(if index + 1 == verbs.len() {
                    " and "
                } else {
                    ", "
                });
            }
            if index == 0 {
                text.push_str(&format!("`heapgraph {verb}`"));
            } else {
                text.push_str(&format!("`{verb}`"));
            }
        }
        format!("{text} read it")
    }
}

/// The files `verb` reads, for its help (`None` for a verb that reads none): from the same
/// table as [`Readers::readers`], so that its help and its refusals agree, and each kind's
/// formats from the import crate's table of formats.
pub(crate) fn inputs_of(verb: &str) -> Option<String> {
    let kinds: Vec<String> = Holds::ALL
        .into_iter()
        .filter(|holds| holds.readers().contains(&verb))
        .map(Holds::files)
        .collect();
    (!kinds.is_empty()).then(|| or_list(&kinds))
}

/// `a, b, or c`; `a or b`; `a`.
pub(crate) fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [first, second] => format!("{first} or {second}"),
        [rest @ .., last] => format!("{}, or {last}", rest.join(", ")),
    }
}

/// What `evidence` holds.
fn holds_of(evidence: &Evidence) -> Holds {
    match evidence {
        Evidence::Graph(_) => Holds::HeapGraph,
        Evidence::Alloc(snapshot) if snapshot.cuda.is_some() => Holds::CudaSnapshot,
        Evidence::Alloc(_) => Holds::Allocations,
        Evidence::Timeline(_) => Holds::Timeline,
    }
}

/// The error for a verb that does not read what `path` holds.
pub(crate) fn refusal(path: &Path, evidence: &Evidence) -> anyhow::Error {
    let holds = holds_of(evidence);
    let what = match evidence {
        Evidence::Graph(_) => return heap_dump_refusal(path),
        Evidence::Alloc(snapshot) => format!(
            "holds allocations by stack (a {} snapshot), not an object graph",
            snapshot.meta.source.name()
        ),
        Evidence::Timeline(_) => {
            "is a recording of memory over time (heapgraph record), not a dump".to_owned()
        }
    };
    anyhow::anyhow!("{}: {what}; {}", path.display(), holds.read_by())
}

/// The error for a verb that reads allocation snapshots only, given a heap dump.
pub(crate) fn heap_dump_refusal(path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: is a heap dump, not an allocation snapshot; {}",
        path.display(),
        Holds::HeapGraph.read_by()
    )
}

/// The error for a verb that reads CUDA snapshots only, given another allocation snapshot.
pub(crate) fn not_cuda_refusal(path: &Path, snapshot: &AllocSnapshot) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: is a {} snapshot, not a CUDA memory snapshot; {}",
        path.display(),
        snapshot.meta.source.name(),
        Holds::Allocations.read_by()
    )
}

/// Reads `path` into a heap graph.
pub(crate) fn load(path: &Path, read: &ReadArgs) -> anyhow::Result<Loaded> {
    match load_evidence(path, read)? {
        Evidence::Graph(loaded) => Ok(*loaded),
        other => Err(refusal(path, &other)),
    }
}

/// Reads the dump of `common` into a heap graph, with `--collapse-modules` applied.
pub(crate) fn load_for(common: &Common) -> anyhow::Result<Loaded> {
    let mut loaded = load(&common.file, &common.read)?;
    if common.collapse_modules {
        loaded.collapse_modules();
    }
    Ok(loaded)
}

/// Reads the dump of `common`, whatever it holds, with `--collapse-modules` applied to a graph.
pub(crate) fn load_evidence_for(common: &Common) -> anyhow::Result<Evidence> {
    let mut evidence = load_evidence(&common.file, &common.read)?;
    if let Evidence::Graph(loaded) = &mut evidence
        && common.collapse_modules
    {
        loaded.collapse_modules();
    }
    Ok(evidence)
}

/// Reads `path` into a CUDA snapshot (an allocation snapshot with the allocator's state).
pub(crate) fn load_cuda(path: &Path) -> anyhow::Result<AllocSnapshot> {
    match load_evidence(path, &ReadArgs::default())? {
        Evidence::Alloc(snapshot) if snapshot.cuda.is_some() => Ok(*snapshot),
        Evidence::Alloc(snapshot) => Err(not_cuda_refusal(path, &snapshot)),
        other => Err(refusal(path, &other)),
    }
}

/// `--spill`, `--temp-dir` and `--spill-from`, set once by [`set_spill`] before any dump is
/// read.
static SPILL: OnceLock<(SpillArg, PathBuf, Option<usize>)> = OnceLock::new();

/// Takes `--spill`, `--temp-dir` (default the system's temporary directory) and the
/// smallest block that spills (default [`spill_from`]); `always` spills from here on.
///
/// # Errors
/// When spilling is on and no file can be made in the directory.
pub(crate) fn set_spill(
    when: SpillArg,
    dir: Option<PathBuf>,
    from: Option<usize>,
) -> anyhow::Result<()> {
    let dir = dir.unwrap_or_else(std::env::temp_dir);
    crate::allocator::scratch_in(&dir);
    if when == SpillArg::Always {
        let from = from.unwrap_or_else(|| spill_from(available_memory()));
        crate::allocator::spill_to(&dir, from)?;
    }
    let _ = SPILL.set((when, dir, from));
    Ok(())
}

/// The smallest block that spills, where `--spill-from` does not say: a 64th of the memory
/// `available`, from 4 MiB to [`crate::allocator::SPILL_FROM`] (64 MiB, where it is unknown).
/// Blocks below it stay in memory, and how much they hold grows with the dump, not with the
/// memory: held to hprof-analyzer's peak on a compiler's 474 MB heap (226 MiB), blocks of
/// 64 MiB and more spilling left too much in memory and the kernel killed the run, while from
/// 4 MiB it finishes faster than the peer; on 10 GB held to 3.4 GB, spilling from 4 MiB was
/// 10% slower than from 64 (docs/performance.md).
fn spill_from(available: Option<u64>) -> usize {
    const SMALLEST: u64 = 4 << 20;
    let largest = crate::allocator::SPILL_FROM as u64;
    let from = available.map_or(largest, |available| {
        (available / 64).clamp(SMALLEST, largest)
    });
    usize::try_from(from).unwrap_or(crate::allocator::SPILL_FROM)
}

/// Under `--spill auto`, turns spilling on before `path` is read when it is larger than three
/// quarters of the memory available: about what reading and analysing it holds at its peak
/// (0.7 to 1.1 bytes a byte of dump, docs/performance.md), beside the kernel's cache of the
/// file. Dumps already read and still held (`diff`, `serve --baseline`, `mcp`) have taken
/// their share of the memory available, so each dump is weighed alone.
fn spill_if_large(path: &Path) -> anyhow::Result<()> {
    let Some((SpillArg::Auto, dir, from)) = SPILL.get() else {
        return Ok(());
    };
    let size = std::fs::metadata(path).map_or(0, |metadata| metadata.len());
    let counted = if is_gzip(path) {
        size.saturating_mul(5)
    } else {
        size
    };
    let Some(available) = available_memory() else {
        return Ok(());
    };
    if counted > available / 4 * 3 && crate::allocator::spilled().is_none() {
        crate::allocator::spill_to(dir, from.unwrap_or_else(|| spill_from(Some(available))))?;
        // A line on stderr, as the progress bar's: the answer on stdout is unchanged.
        let _ = writeln!(
            std::io::stderr(),
            "heapgraph: {} is larger than three quarters of the {} MiB of memory available: \
             large columns spill to files in {} (--temp-dir names another place, --spill \
             never keeps them in memory)",
            path.display(),
            available >> 20,
            dir.display()
        );
    }
    Ok(())
}

/// Whether the file starts as a gzip stream does.
fn is_gzip(path: &Path) -> bool {
    let mut magic = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut magic))
        .is_ok_and(|()| magic == [0x1f, 0x8b])
}

/// The memory this process may still take: the kernel's estimate of what is available
/// without swapping, or less where its memory cgroup (a container's limit, v1 or v2, the
/// tightest of its ancestors') leaves less.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let available = kib * 1024;
    let in_cgroup = procfs::Cgroup::of(std::process::id()).and_then(|cgroup| cgroup.available());
    Some(in_cgroup.map_or(available, |in_cgroup| available.min(in_cgroup)))
}

/// Reads `path`, whatever it holds.
pub(crate) fn load_evidence(path: &Path, read: &ReadArgs) -> anyhow::Result<Evidence> {
    let context = || format!("cannot read {}", path.display());
    spill_if_large(path)?;
    let bar = Bar(progress_bar("reading"));
    let options = {
        let mut options = heapgraph_import::Options::default();
        options.progress = Some(&bar);
        options.hprof = read.hprof_options();
        options
    };
    if is_hgd(path).with_context(context)? {
        // Mapped and decoded in parallel: fast enough that a byte count would only flicker.
        let (dump, stored) = heapgraph_model::timed("read the .hgd", || {
            hgd::import_path_with_analysis(path, &hgd::Options::default())
        })
        .with_context(context)?;
        bar.0.finish_and_clear();
        return evidence(dump, stored, path);
    }
    let dump = heapgraph_model::timed("read the dump", || {
        heapgraph_import::import_path(path, &options)
    })
    .with_context(context)?;
    bar.0.finish_and_clear();
    evidence(dump, None, path)
}

fn evidence(
    dump: Contents,
    stored: Option<StoredAnalysis>,
    path: &Path,
) -> anyhow::Result<Evidence> {
    Ok(match dump {
        Contents::HeapGraph(graph) => Evidence::Graph(Box::new(Loaded { graph, stored })),
        Contents::Alloc(snapshot) => Evidence::Alloc(Box::new(snapshot)),
        Contents::Timeline(timeline) => Evidence::Timeline(Box::new(timeline)),
        _ => bail!(
            "{}: holds evidence this command cannot read",
            path.display()
        ),
    })
}

/// Whether the file is an uncompressed `.hgd` (of any kind), judged by content.
pub(crate) fn is_hgd(path: &Path) -> anyhow::Result<bool> {
    let file = std::fs::File::open(path)?;
    let mut reader = BufReader::with_capacity(64, file);
    let prefix = reader.fill_buf()?;
    Ok(hgd::sniff(prefix) == Some(true))
}

impl Loaded {
    /// Leaves Python's references to modules and classes out of the analysis (meliae's
    /// "remove expensive references"); a stored analysis no longer applies.
    pub(crate) fn collapse_modules(&mut self) {
        let edges = heapgraph_analyzer::backrefs::expensive_references(&self.graph);
        self.graph.weaken_edges(&edges);
        self.stored = None;
        self.graph.add_note(format!(
            "--collapse-modules: {} references to modules, module namespaces and classes count \
             as weak",
            edges.len()
        ));
    }

    /// Whether the dump brought an analysis of its own (an `.hgd` of `convert`'s).
    pub(crate) fn has_stored_analysis(&self) -> bool {
        self.stored.is_some()
    }

    /// The analysis under the runtime's default edge rule, or with weak edges retaining.
    /// A stored analysis is used when it was made under the same rule (the default).
    pub(crate) fn analyze(&mut self, include_weak: bool) -> anyhow::Result<Analysis> {
        self.analyze_then(include_weak, None, ReadAfter::GivenBack)
    }

    /// [`Loaded::analyze`] for a verb that goes on to the suspects' chains, whose indexes hold
    /// more than the dominator pass: the pass never trades time for memory
    /// ([`heapgraph_analyzer::analyze_before_chains`]) unless columns spill, where it does and
    /// the chains' indexes follow it; the views show distances if `view_distances` says so.
    pub(crate) fn analyze_before_chains(
        &mut self,
        include_weak: bool,
        view_distances: ViewDistances,
    ) -> anyhow::Result<Analysis> {
        self.analyze_then(include_weak, Some(view_distances), ReadAfter::GivenBack)
    }

    /// [`Loaded::analyze_before_chains`] for `summary`, whose findings show no distances, a
    /// few hundred object ids and a few thousand edge names: where these were parked, they
    /// stay so, each read decoded with its block
    /// (`HeapGraph::unpark_columns_but_ids_and_edges`), where given back whole they were
    /// among what the run held at its peak, after the pass; a stored analysis is adopted with
    /// the ids and its chain parents parked likewise.
    pub(crate) fn analyze_for_summary(&mut self, include_weak: bool) -> anyhow::Result<Analysis> {
        self.analyze_then(
            include_weak,
            Some(ViewDistances::LeftOut),
            ReadAfter::LeftParked,
        )
    }

    /// Whether the columns that no search of the analysis reads are compressed while it runs
    /// (`HeapGraph::park_columns`): wherever the graph is in memory, unless they are already
    /// out of it, in scratch files (a server's) or spilled, where the kernel can drop their
    /// pages and could not drop parked ones, which are anonymous memory. Below the dominator
    /// pass's memory bound as well: on the real Java dumps under it, parking took 11–17% off
    /// the peak for no time that rounds apart could tell (docs/performance.md).
    fn parks(&self) -> bool {
        !heapgraph_model::file_pages::indexes_in_files() && crate::allocator::spilled().is_none()
    }

    fn analyze_then(
        &mut self,
        include_weak: bool,
        chains: Option<ViewDistances>,
        parked_after: ReadAfter,
    ) -> anyhow::Result<Analysis> {
        let mut edge_rule = EdgeRule::for_runtime(self.graph.meta().runtime);
        edge_rule.include_weak = include_weak;
        if let Some(stored) = self.stored.take()
            && !include_weak
        {
            // The text as an analysis would leave it: parked, read a block at a time (a summary
            // reads a few labels), before the stored analysis's columns come in beside it.
            // A summary's, its ids and chain parents likewise, as its pass would leave them,
            // unless they are the file's pages, of which the kernel keeps only those read.
            let parks_for_summary = self.parks() && matches!(parked_after, ReadAfter::LeftParked);
            if self.parks() {
                self.graph.park_text();
            }
            if parks_for_summary {
                self.graph.park_ids();
            }
            // Reading the file checked the stored analysis's columns too: their pages, and any
            // of the graph's read since, map the page cache's copy, unwritten, and are dropped
            // here; only those the adoption reads come back (docs/performance.md).
            heapgraph_model::timed("file pages forgotten", || {
                self.graph.forget_read_pages();
                stored.forget_read_pages();
            });
            let adopted = heapgraph_model::timed("stored analysis adopted", || {
                let rule = edge_rule.clone();
                if parks_for_summary {
                    Analysis::from_stored_parking_chain_parents(&self.graph, rule, stored)
                } else {
                    Analysis::from_stored(&self.graph, rule, stored)
                }
            });
            match adopted {
                // A stored analysis brings its distances; an output that shows none lets them
                // go before its own work, as a computed one never searches for them.
                Ok(analysis) if chains == Some(ViewDistances::LeftOut) => {
                    return Ok(analysis.leaving_out_distances());
                }
                Ok(analysis) => return Ok(analysis),
                Err(reason) => {
                    // Parked again below with the other columns, for the pass.
                    self.graph.unpark_columns();
                    self.graph.add_note(format!(
                        "the stored analysis was ignored ({reason}); recomputed"
                    ));
                }
            }
        }
        let spinner = spinner("computing dominators and retained sizes");
        let parks = self.parks();
        if parks {
            self.graph.park_columns(!edge_rule.devtools_distances);
        }
        if parks || heapgraph_analyzer::memory_bound(&self.graph) {
            heapgraph_model::timed("freed memory handed back", release_freed_memory);
        }
        let options = Options { edge_rule };
        let analysis = match chains {
            // Where columns spill, memory is the bound, and the searches that make what the
            // chains read would compete for it with the dominator pass beside them: they
            // follow it, and the pass takes its lean order (on the 2.5 GB benchmark dump in
            // hprof-analyzer's memory, 37 s beside, 28 s after; docs/performance.md).
            Some(view_distances) if crate::allocator::spilled().is_some() => {
                let analysis = heapgraph_analyzer::analyze(&self.graph, &options);
                let analysis = match view_distances {
                    ViewDistances::Shown => analysis,
                    ViewDistances::LeftOut => analysis.leaving_out_distances(),
                };
                analysis.prepare_chains(&self.graph);
                analysis
            }
            Some(view_distances) => {
                heapgraph_analyzer::analyze_before_chains(&mut self.graph, &options, view_distances)
            }
            None => heapgraph_analyzer::analyze(&self.graph, &options),
        };
        if self.graph.columns_parked() {
            // Parked blocks, freed, are the allocator's small blocks: those of the chain
            // parents (given back as the analysis ended) handed back before the columns come
            // back beside them, the columns' after.
            release_freed_memory();
            match parked_after {
                ReadAfter::GivenBack => self.graph.unpark_columns(),
                ReadAfter::LeftParked => self.graph.unpark_columns_but_ids_and_edges(),
            }
            release_freed_memory();
        }
        spinner.finish_and_clear();
        Ok(analysis)
    }
}

/// What becomes of the parked object ids and edge names once the analysis is done.
#[derive(Clone, Copy)]
enum ReadAfter {
    /// Given back whole, for a reader of many.
    GivenBack,
    /// Left parked, for a reader of a few thousand.
    LeftParked,
}

/// Hands the allocator's free memory back to the kernel: many small buffers freed (an
/// import's per-segment indexes and per-batch strings, a query's scratch, the parked columns'
/// blocks) stay in glibc's heaps between live allocations, where they count in the resident
/// set (230 MiB after the first pass over a 2.5 GB HPROF dump, which says so through
/// `heapgraph_model::memory_freed`, whose hook this is). Before the analysis, the peak of a
/// run, where columns were parked or memory is the bound
/// ([`heapgraph_analyzer::memory_bound`]): on the real Java dumps under the bound it took 5–12%
/// off the peak, for no time that rounds apart could tell (docs/performance.md). `serve`
/// calls it after each step of its warm-up, each kept `paths` answer and the strings'
/// ranking. A no-op on other allocators.
pub(crate) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointers and only returns free pages of the allocator's
    // own heaps to the kernel; no live allocation moves or changes.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::spill_from;

    #[test]
    fn blocks_spill_from_a_64th_of_the_memory_available_between_4_and_64_mib() {
        const MIB: u64 = 1 << 20;
        for (available, from) in [
            (None, 64),
            (Some(0), 4),
            (Some(226 * MIB), 4),
            (Some(1024 * MIB), 16),
            (Some(3328 * MIB), 52),
            (Some(4096 * MIB), 64),
            (Some(u64::MAX), 64),
        ] {
            assert_eq!(spill_from(available) as u64, from * MIB, "{available:?}");
        }
    }
}
