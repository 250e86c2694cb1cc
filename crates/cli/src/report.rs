//! `heapgraph report`: the self-contained HTML page for an incident, written where `-o` says or
//! beside the first file.

use crate::args::ReportArgs;
use crate::load::{Evidence, load_evidence};
use anyhow::{Context, bail};
use heapgraph_analyzer::gpu::GpuOptions;
use heapgraph_analyzer::sites::{SiteKey, SiteOptions};
use heapgraph_analyzer::{Analysis, RankBy, SummaryView};
use heapgraph_model::AllocSource;
use heapgraph_report::DumpInfo;
use heapgraph_report::html::{
    GpuSection, HeapSection, Report, SeriesSection, SitesSection, TimelineSection,
};
use std::path::{Path, PathBuf};

/// Depth and share of the dominator tree the page holds (about the top 500 nodes at most).
const TREE_DEPTH: u32 = 6;
const TREE_MIN_SHARE: f64 = 0.002;
const TREE_MAX_NODES: usize = 500;

fn generated_at(args: &ReportArgs) -> Option<String> {
    if args.no_timestamp {
        return None;
    }
    if let Ok(epoch) = std::env::var("SOURCE_DATE_EPOCH") {
        return epoch.trim().parse().ok().map(heapgraph_report::utc_text);
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(heapgraph_report::utc_text(now.as_secs()))
}

struct Analysed {
    info: DumpInfo,
    graph: heapgraph_model::HeapGraph,
    analysis: Analysis,
}

pub(crate) fn report(args: &ReportArgs) -> anyhow::Result<String> {
    let mut files: Vec<PathBuf> = args.baseline.iter().cloned().collect();
    files.extend(args.files.iter().cloned());
    let mut dumps: Vec<Analysed> = Vec::new();
    let mut gpu = None;
    let mut recording = None;
    let mut allocations: Vec<(DumpInfo, heapgraph_model::AllocSnapshot)> = Vec::new();
    for file in &files {
        match load_evidence(file, &args.read)? {
            Evidence::Graph(mut loaded) => {
                let analysis = loaded.analyze(false)?;
                dumps.push(Analysed {
                    info: DumpInfo::new(&file.display().to_string(), loaded.graph.meta()),
                    graph: loaded.graph,
                    analysis,
                });
            }
            Evidence::Alloc(snapshot) if snapshot.cuda.is_some() && files.len() == 1 => {
                gpu = Some((
                    DumpInfo::for_alloc(&file.display().to_string(), &snapshot.meta),
                    gpu_view(&snapshot)?,
                ));
            }
            Evidence::Timeline(timeline) => {
                if recording.is_some() {
                    bail!(
                        "{}: a report shows one recording; give the others to reports of their own",
                        file.display()
                    );
                }
                let view = heapgraph_analyzer::timeline::timeline(&timeline);
                recording = Some((
                    DumpInfo::for_timeline(&file.display().to_string(), &timeline.meta),
                    view,
                ));
            }
            Evidence::Alloc(snapshot) => {
                if let Some((first, earlier)) = allocations.first()
                    && earlier.meta.source != snapshot.meta.source
                {
                    bail!(
                        "{} is a {} snapshot and {} a {} one; a report compares snapshots of one kind",
                        first.file,
                        earlier.meta.source.name(),
                        file.display(),
                        snapshot.meta.source.name()
                    );
                }
                if allocations.len() == 2 {
                    bail!(
                        "{}: a report compares at most two allocation snapshots (a baseline and a \
                         release); give the others to reports of their own",
                        file.display()
                    );
                }
                allocations.push((
                    DumpInfo::for_alloc(&file.display().to_string(), &snapshot.meta),
                    *snapshot,
                ));
            }
        }
    }
    let sites = sites_view(&allocations);
    // The last dump's summary and suspects in one walk of its dominator tree.
    let last_summary_and_suspects = dumps.last().map(|dump| {
        heapgraph_analyzer::summary_and_suspects(
            &dump.graph,
            &dump.analysis,
            None,
            heapgraph_analyzer::DEFAULT_SUSPECT_THRESHOLD,
        )
        .expect("no kind is asked")
    });
    let (last_summary, suspects) = last_summary_and_suspects.unzip();
    let mut summaries: Vec<SummaryView> = dumps[..dumps.len().saturating_sub(1)]
        .iter()
        .map(|dump| heapgraph_analyzer::summary(&dump.graph, &dump.analysis))
        .collect();
    summaries.extend(last_summary);
    let diff = (dumps.len() >= 2).then(|| {
        let (first, last) = (&dumps[0], &dumps[dumps.len() - 1]);
        heapgraph_analyzer::diff::diff_types(
            (&first.graph, &first.analysis),
            (&last.graph, &last.analysis),
            RankBy::Retained,
        )
    });
    let last = dumps.last();
    let waste = last.map(|dump| heapgraph_analyzer::waste::waste(&dump.graph, &dump.analysis, 0));
    let tree = last.map(|dump| {
        let mut tree = heapgraph_analyzer::dominator_tree(
            &dump.graph,
            &dump.analysis,
            TREE_DEPTH,
            TREE_MIN_SHARE,
        );
        tree.nodes.truncate(TREE_MAX_NODES);
        tree
    });
    // The most telling first: what grew over a series, where one dump's bytes accumulate, why
    // the GPU ran out, what the recording reached, which line allocated the most.
    let mut findings = Vec::new();
    findings.extend(diff.as_ref().and_then(heapgraph_analyzer::findings::growth));
    findings.extend(
        suspects
            .iter()
            .flat_map(heapgraph_analyzer::findings::accumulations),
    );
    findings.extend(
        gpu.iter()
            .flat_map(|(_, view)| heapgraph_analyzer::findings::gpu(view)),
    );
    findings.extend(
        recording
            .as_ref()
            .and_then(|(_, view)| heapgraph_analyzer::findings::timeline(view)),
    );
    findings.extend(sites.as_ref().and_then(heapgraph_analyzer::findings::sites));
    let holders = last.and_then(|dump| {
        findings
            .iter()
            .find_map(|finding| top_suspects_holders(&dump.graph, &dump.analysis, finding))
    });
    let page = Report {
        generated_at: generated_at(args),
        heap: match (last, summaries.last(), &tree, &suspects) {
            (Some(dump), Some(summary), Some(tree), Some(suspects)) => Some(HeapSection {
                info: &dump.info,
                summary,
                dominators: tree,
                suspects,
                holders: holders.as_ref().map(|(view, selection)| (view, selection)),
                waste: waste.as_ref(),
            }),
            _ => None,
        },
        series: diff.as_ref().map(|diff| SeriesSection {
            dumps: dumps
                .iter()
                .map(|dump| &dump.info)
                .zip(&summaries)
                .collect(),
            diff,
        }),
        gpu: gpu.as_ref().map(|(info, view)| GpuSection { info, view }),
        timeline: recording
            .as_ref()
            .map(|(info, view)| TimelineSection { info, view }),
        sites: sites.as_ref().map(|view| SitesSection {
            info: &allocations[allocations.len() - 1].0,
            old: (allocations.len() == 2).then(|| &allocations[0].0),
            view,
        }),
        findings: &findings,
    };
    let html = heapgraph_report::html::report(&page);
    let output = match &args.output {
        Some(output) => output.clone(),
        None => page_beside(&args.files[0]),
    };
    std::fs::write(&output, &html).with_context(|| format!("cannot write {}", output.display()))?;
    Ok(format!(
        "wrote {} ({} KiB)\n",
        output.display(),
        html.len().div_ceil(1024)
    ))
}

/// The GPU section's view of a CUDA snapshot (also `serve`'s page of one): the 50 largest
/// stacks of the user's code, and the timeline.
pub(crate) fn gpu_view(
    snapshot: &heapgraph_model::AllocSnapshot,
) -> anyhow::Result<heapgraph_analyzer::gpu::GpuView> {
    let mut sites = SiteOptions::new(SiteKey::Traceback);
    sites.user_frames_only = true;
    let options = GpuOptions {
        n: 50,
        all_frames: false,
        timeline: true,
        sites,
    };
    heapgraph_analyzer::gpu::gpu(snapshot, &options)
        .context("a CUDA snapshot without allocator state")
}

/// Where the page of `file` goes when `-o` is not given: beside it, named after it without
/// its extensions (`app.heapsnapshot.gz` → `app.html`, `worker.hgt` → `worker.html`).
fn page_beside(file: &Path) -> PathBuf {
    let name = file
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let stem = match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => name,
    };
    let stem = if stem.is_empty() { "heapgraph" } else { stem };
    file.with_file_name(format!("{stem}.html"))
}

/// The sites of one allocation snapshot by line (`statistics`), or of two compared
/// (`compare_to`), with library frames folded except in tracemalloc's own answers.
fn sites_view(
    allocations: &[(DumpInfo, heapgraph_model::AllocSnapshot)],
) -> Option<heapgraph_analyzer::sites::SitesView> {
    let (_, newest) = allocations.last()?;
    // As `top` and `diff` group them: CUDA snapshots by the whole stack, the others by line.
    let key = match newest.meta.source {
        AllocSource::TorchCuda => SiteKey::Traceback,
        _ => SiteKey::Lineno,
    };
    let mut options = SiteOptions::new(key);
    options.user_frames_only = newest.meta.source != AllocSource::Tracemalloc;
    Some(match allocations {
        [(_, old), (_, new)] => heapgraph_analyzer::sites::compare(old, new, &options),
        _ => heapgraph_analyzer::sites::statistics(newest, &options),
    })
}

/// Children a node of the report's merged paths lists.
const HOLDERS_BRANCHES: usize = 5;

/// Who holds the objects of the first accumulation finding (the top suspect): what its bytes
/// mostly are, or the type whose instances together hold much.
fn top_suspects_holders(
    graph: &heapgraph_model::HeapGraph,
    analysis: &Analysis,
    finding: &heapgraph_analyzer::findings::Finding,
) -> Option<(
    heapgraph_analyzer::merged_paths::MergedPathsView,
    heapgraph_report::holding::Selection,
)> {
    use heapgraph_analyzer::findings::Finding;
    let Finding::Accumulation {
        rule,
        type_name,
        mostly,
        ..
    } = finding
    else {
        return None;
    };
    let type_name = match rule {
        heapgraph_analyzer::SuspectRule::SingleObject => &mostly.as_ref()?.type_name,
        heapgraph_analyzer::SuspectRule::ManyInstances => type_name,
    };
    let targets = heapgraph_analyzer::merged_paths::objects_of_type(graph, type_name);
    let view = heapgraph_analyzer::merged_paths::merged_paths(
        graph,
        analysis,
        &targets,
        HOLDERS_BRANCHES,
        heapgraph_analyzer::ChainOrder::Explain,
    );
    let selection = heapgraph_report::holding::Selection {
        type_name: Some(type_name.clone()),
        ..Default::default()
    };
    Some((view, selection))
}

#[cfg(test)]
mod tests {
    use super::page_beside;
    use std::path::{Path, PathBuf};

    #[test]
    fn pages_go_beside_their_file_named_after_it() {
        for (file, page) in [
            (
                "fixtures/v8/app-after.heapsnapshot.gz",
                "fixtures/v8/app-after.html",
            ),
            ("worker.hgt", "worker.html"),
            (
                "/srv/dumps/svc-12-dump1-4s.hgd",
                "/srv/dumps/svc-12-dump1-4s.html",
            ),
            ("oom.pickle.gz", "oom.html"),
            ("core", "core.html"),
            (".hidden", ".hidden.html"),
        ] {
            assert_eq!(page_beside(Path::new(file)), PathBuf::from(page), "{file}");
        }
    }
}
