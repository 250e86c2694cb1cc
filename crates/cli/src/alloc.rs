//! Verbs on allocation snapshots (tracemalloc dumps, CUDA snapshots): `top` and `diff` by
//! allocating site, and `gpu` (whose table by site takes the same `--by`, `--filter` and
//! `--exclude`).

use crate::args::{DiffArgs, GpuArgs, OutputFormat, RankByArg, SiteArgs};
use crate::load::{Holds, Readers, load_cuda};
use anyhow::bail;
use heapgraph_analyzer::gpu::GpuOptions;
use heapgraph_analyzer::sites::{SiteKey, SiteOptions};
use heapgraph_model::{AllocSnapshot, AllocSource};
use heapgraph_report::{DumpInfo, json, text};
use std::path::Path;

/// The grouping for `--by`, or the snapshot's usual one.
fn site_key(by: Option<RankByArg>, snapshot: &AllocSnapshot) -> anyhow::Result<SiteKey> {
    Ok(match by {
        Some(RankByArg::Filename) => SiteKey::Filename,
        Some(RankByArg::Lineno) => SiteKey::Lineno,
        Some(RankByArg::Traceback) => SiteKey::Traceback,
        None => match snapshot.meta.source {
            AllocSource::Tracemalloc | AllocSource::RustAlloc => SiteKey::Lineno,
            AllocSource::TorchCuda => SiteKey::Traceback,
        },
        Some(other) => bail!(
            "--by {} ranks objects of heap dumps; allocation snapshots group by filename, lineno or traceback",
            format!("{other:?}").to_lowercase()
        ),
    })
}

fn site_options(key: SiteKey, args: &SiteArgs) -> anyhow::Result<SiteOptions> {
    if args.cumulative && key == SiteKey::Traceback {
        bail!("--cumulative goes with --by filename or --by lineno, as in tracemalloc");
    }
    let mut options = SiteOptions::new(key);
    options.cumulative = args.cumulative;
    options.include = args.include.clone();
    options.exclude = args.exclude.clone();
    options.user_frames_only = !args.all_frames;
    Ok(options)
}

fn info(path: &Path, snapshot: &AllocSnapshot) -> DumpInfo {
    DumpInfo::for_alloc(&path.display().to_string(), &snapshot.meta)
}

/// CUDA and Rust stacks are folded, so that the most recent frame is the user's line (not
/// torch's or Rust's standard library); tracemalloc's answers must stay Python's own.
fn fold_for(snapshot: &AllocSnapshot, options: &mut SiteOptions) {
    if snapshot.meta.source == AllocSource::Tracemalloc {
        options.user_frames_only = false;
    }
}

/// `top` of an allocation snapshot: `Snapshot.statistics`.
pub(crate) fn top(
    path: &Path,
    snapshot: &AllocSnapshot,
    by: Option<RankByArg>,
    n: usize,
    args: &SiteArgs,
    format: OutputFormat,
) -> anyhow::Result<String> {
    let mut options = site_options(site_key(by, snapshot)?, args)?;
    fold_for(snapshot, &mut options);
    let view = heapgraph_analyzer::sites::statistics(snapshot, &options);
    let findings: Vec<_> = heapgraph_analyzer::findings::sites(&view)
        .into_iter()
        .collect();
    let info = info(path, snapshot);
    Ok(match format {
        OutputFormat::Text => text::sites(&view, &info, None, &findings, n),
        OutputFormat::Json => json::sites(&view, &info, None, &findings, Some(n)),
    })
}

/// `diff` of allocation snapshots: `new.compare_to(old)`.
pub(crate) fn diff(
    args: &DiffArgs,
    old: &AllocSnapshot,
    new: &AllocSnapshot,
    rules: &[heapgraph_analyzer::gate::Rule],
) -> anyhow::Result<(String, Vec<heapgraph_analyzer::gate::Verdict>)> {
    if old.meta.source != new.meta.source {
        bail!(
            "{} is a {} snapshot and {} a {} one; compare snapshots of one kind",
            args.old.display(),
            old.meta.source.name(),
            args.new.display(),
            new.meta.source.name()
        );
    }
    let mut options = site_options(site_key(args.by, new)?, &args.sites)?;
    fold_for(new, &mut options);
    let view = heapgraph_analyzer::sites::compare(old, new, &options);
    let verdicts = rules
        .iter()
        .map(|rule| rule.check_sites(&view))
        .collect::<Result<Vec<_>, String>>()
        .map_err(|message| anyhow::anyhow!("--fail-if: {message}"))?;
    let findings: Vec<_> = heapgraph_analyzer::findings::sites(&view)
        .into_iter()
        .collect();
    let (old_info, new_info) = (info(&args.old, old), info(&args.new, new));
    let output = match args.format {
        OutputFormat::Text => text::sites(
            &view,
            &new_info,
            Some(&old_info),
            &findings,
            args.n.unwrap_or(20),
        ),
        OutputFormat::Json => json::sites(&view, &new_info, Some(&old_info), &findings, args.n),
    };
    Ok((output, verdicts))
}

/// How the `gpu` view is shaped: rows, the grouping and filters of its table by site, the
/// timeline.
pub(crate) struct GpuShape<'a> {
    pub(crate) n: usize,
    pub(crate) by: Option<RankByArg>,
    pub(crate) sites: &'a SiteArgs,
    pub(crate) timeline: bool,
}

/// `gpu`: what filled the GPU.
pub(crate) fn gpu(args: &GpuArgs) -> anyhow::Result<String> {
    let snapshot = load_cuda(&args.file)?;
    gpu_of(
        &args.file,
        &snapshot,
        GpuShape {
            n: args.n,
            by: args.by,
            sites: &args.sites,
            timeline: args.timeline,
        },
        args.format,
    )
}

/// The `gpu` view of a loaded snapshot (also `summary` of a CUDA snapshot).
pub(crate) fn gpu_of(
    path: &Path,
    snapshot: &AllocSnapshot,
    shape: GpuShape<'_>,
    format: OutputFormat,
) -> anyhow::Result<String> {
    let all_frames = shape.sites.all_frames;
    // As `top` groups a CUDA snapshot: by the whole stack unless --by says otherwise.
    let key = site_key(shape.by.or(Some(RankByArg::Traceback)), snapshot)?;
    let options = GpuOptions {
        n: shape.n,
        all_frames,
        timeline: shape.timeline,
        sites: site_options(key, shape.sites)?,
    };
    let Some(view) = heapgraph_analyzer::gpu::gpu(snapshot, &options) else {
        // `load_cuda` refuses such a snapshot first; `summary` never calls this with one.
        bail!(
            "{}: is a {} snapshot, not a CUDA memory snapshot; {}",
            path.display(),
            snapshot.meta.source.name(),
            Holds::Allocations.read_by()
        );
    };
    let findings = heapgraph_analyzer::findings::gpu(&view);
    let info = info(path, snapshot);
    Ok(match format {
        OutputFormat::Text => text::gpu(&view, &info, &findings, all_frames),
        OutputFormat::Json => json::gpu(&view, &info, &findings),
    })
}
