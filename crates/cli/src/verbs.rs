//! One function per verb: load, analyse, render. Library options are built here from clap's
//! arguments.

use crate::args::{
    Common, ConvertArgs, DEFAULT_ROWS, DiffArgs, DominatorsArgs, GraphArgs, LeakingArgs, LeaksArgs,
    OutputFormat, RankByArg, SiteArgs, StringsArgs, SummaryArgs, SuspectsArgs, TopArgs,
    WhoHoldsArgs,
};
use crate::load::{Evidence, Loaded, load, load_evidence, load_evidence_for, load_for, spinner};
use anyhow::{Context, bail};
use heapgraph_analyzer::{RankBy, ViewDistances};
use heapgraph_import::hgd;
use heapgraph_model::{AllocSnapshot, AllocSource};
use heapgraph_report::{DumpInfo, json, text};
use std::io::{BufWriter, Write};

pub(crate) fn info(common: &Common, loaded: &Loaded) -> DumpInfo {
    DumpInfo::new(&common.file.display().to_string(), loaded.graph.meta())
}

pub(crate) fn summary(args: &SummaryArgs) -> anyhow::Result<String> {
    let mut loaded = match load_evidence_for(&args.common)? {
        Evidence::Graph(loaded) => *loaded,
        Evidence::Alloc(snapshot) => return alloc_summary(args, &snapshot),
        Evidence::Timeline(timeline) => return Ok(timeline_summary(args, &timeline)),
    };
    if let Some(by) = args.group_by {
        let analysis = loaded.analyze(args.common.include_weak)?;
        return crate::waste::grouped(args, &loaded, &analysis, by);
    }
    let analysis = loaded.analyze_for_summary(args.common.include_weak)?;
    let graph = &loaded.graph;
    if let Some(kind) = &args.kind
        && !graph
            .parts()
            .node_kinds
            .iter()
            .any(|info| &info.name == kind)
    {
        let kinds: Vec<&str> = (graph.parts().node_kinds.iter())
            .map(|info| info.name.as_str())
            .collect();
        bail!(
            "{}: no object is of kind {kind:?}; the kinds in this dump are {}",
            args.common.file.display(),
            kinds.join(", ")
        );
    }
    let (view, suspects) = heapgraph_analyzer::summary_and_suspects(
        graph,
        &analysis,
        args.kind.as_deref(),
        heapgraph_analyzer::DEFAULT_SUSPECT_THRESHOLD,
    )
    .expect("the kind was checked above");
    let info = info(&args.common, &loaded);
    let findings = heapgraph_analyzer::findings::accumulations(&suspects);
    Ok(match args.common.format {
        OutputFormat::Text => {
            text::summary(&view, &info, &findings, args.n.unwrap_or(DEFAULT_ROWS))
        }
        OutputFormat::Json => json::summary(&view, &info, &findings, args.n),
    })
}

/// `summary` of a recording: peaks, growth, thresholds, dumps, the exit.
fn timeline_summary(args: &SummaryArgs, timeline: &heapgraph_model::Timeline) -> String {
    let view = heapgraph_analyzer::timeline::timeline(timeline);
    let info = DumpInfo::for_timeline(&args.common.file.display().to_string(), &timeline.meta);
    let findings: Vec<_> = heapgraph_analyzer::findings::timeline(&view)
        .into_iter()
        .collect();
    match args.common.format {
        OutputFormat::Text => text::timeline(&view, &info, &findings),
        OutputFormat::Json => json::timeline(&view, &info, &findings),
    }
}

/// `summary` of an allocation snapshot: the GPU view of a CUDA snapshot, the top lines of a
/// tracemalloc dump.
fn alloc_summary(args: &SummaryArgs, snapshot: &AllocSnapshot) -> anyhow::Result<String> {
    let n = args.n.unwrap_or(DEFAULT_ROWS);
    match snapshot.meta.source {
        AllocSource::TorchCuda => crate::alloc::gpu_of(
            &args.common.file,
            snapshot,
            crate::alloc::GpuShape {
                n,
                by: None,
                sites: &SiteArgs::default(),
                timeline: false,
            },
            args.common.format,
        ),
        _ => crate::alloc::top(
            &args.common.file,
            snapshot,
            None,
            n,
            &SiteArgs::default(),
            args.common.format,
        ),
    }
}

pub(crate) fn top(args: &TopArgs) -> anyhow::Result<String> {
    let mut loaded = match load_evidence_for(&args.common)? {
        Evidence::Graph(loaded) => *loaded,
        Evidence::Alloc(snapshot) => {
            return crate::alloc::top(
                &args.common.file,
                &snapshot,
                args.by,
                args.n,
                &args.sites,
                args.common.format,
            );
        }
        timeline @ Evidence::Timeline(_) => {
            return Err(crate::load::refusal(&args.common.file, &timeline));
        }
    };
    let analysis = loaded.analyze(args.common.include_weak)?;
    let by = heap_rank(args.by)?;
    let objects = heapgraph_analyzer::top(&loaded.graph, &analysis, by, args.n);
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::top(&objects, by, &info),
        OutputFormat::Json => json::top(&objects, by, &info),
    })
}

/// What `--by` ranks heap dumps by: retained size unless it says shallow or count.
pub(crate) fn heap_rank(by: Option<RankByArg>) -> anyhow::Result<RankBy> {
    Ok(match by {
        None | Some(RankByArg::Retained) => RankBy::Retained,
        Some(RankByArg::Shallow) => RankBy::Shallow,
        Some(RankByArg::Count) => RankBy::Count,
        Some(other) => bail!(
            "--by {} groups allocation snapshots; heap dumps rank by retained, shallow or count",
            format!("{other:?}").to_lowercase()
        ),
    })
}

/// Parses `@12345`, `12345` or `0x3039`.
pub(crate) fn parse_object_id(text: &str) -> anyhow::Result<u64> {
    let trimmed = text.trim();
    let parsed = if let Some(hex) = trimmed
        .strip_prefix("0x")
        .or_else(|| trimmed.strip_prefix("0X"))
    {
        u64::from_str_radix(hex, 16)
    } else {
        trimmed.strip_prefix('@').unwrap_or(trimmed).parse::<u64>()
    };
    parsed.with_context(|| {
        format!("{text:?} is not an object id; write it as @12345, 12345 or 0x3039")
    })
}

/// The type a user means: the name as given if some object has it, else the one type whose
/// name ends with `.NAME` (so `SessionCache` finds `__main__.SessionCache`, `dict` finds
/// `builtins.dict`, `HashMap` finds `java.util.HashMap`).
pub(crate) fn resolve_type(
    graph: &heapgraph_model::HeapGraph,
    name: &str,
    file: &std::path::Path,
) -> anyhow::Result<String> {
    let strings = graph.strings();
    // The type column's own table of its distinct types, where it keeps one (a 2-byte index
    // per node): no pass over the nodes.
    let node_type = &graph.parts().node_type;
    let types: Vec<heapgraph_model::StringId> = match node_type.distinct() {
        Some(distinct) => distinct.to_vec(),
        None => {
            let mut types = node_type.to_vec();
            types.sort_unstable();
            types.dedup();
            types
        }
    };
    if types.iter().any(|&id| strings.get(id) == name) {
        return Ok(name.to_owned());
    }
    let suffix = format!(".{name}");
    let candidates: Vec<&str> = types
        .iter()
        .map(|&id| strings.get(id))
        .filter(|text| text.ends_with(&suffix))
        .collect();
    match candidates.as_slice() {
        [one] => Ok((*one).to_owned()),
        [] => bail!(
            "{}: no object has type {name:?}; `heapgraph summary` lists the types",
            file.display()
        ),
        many => bail!(
            "{}: several types end with {name:?}: {}; give the whole name",
            file.display(),
            many.iter().take(10).copied().collect::<Vec<_>>().join(", ")
        ),
    }
}

pub(crate) fn who_holds(args: &WhoHoldsArgs) -> anyhow::Result<String> {
    let object_id = args.object.as_deref().map(parse_object_id).transpose()?;
    if object_id.is_none() && args.type_name.is_none() {
        bail!("name an object id or give --type");
    }
    let mut loaded = load_for(&args.common)?;
    let analysis = loaded.analyze(args.common.include_weak)?;
    let order = match args.order {
        crate::args::ChainOrderArg::Explain => heapgraph_analyzer::ChainOrder::Explain,
        crate::args::ChainOrderArg::Shortest => heapgraph_analyzer::ChainOrder::Shortest,
    };
    let view = holders(
        &loaded.graph,
        &analysis,
        &args.common.file,
        (object_id, args.type_name.as_deref()),
        args.n_paths,
        order,
    )?;
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::holders(&view, &info),
        OutputFormat::Json => json::holders(&view, &info),
    })
}

/// Who holds an object, named by its id or as the instance of a type that retains the most:
/// `who-holds`'s view, which `heapgraph mcp` answers with too.
pub(crate) fn holders(
    graph: &heapgraph_model::HeapGraph,
    analysis: &heapgraph_analyzer::Analysis,
    file: &std::path::Path,
    (object_id, type_name): (Option<u64>, Option<&str>),
    n_paths: usize,
    order: heapgraph_analyzer::ChainOrder,
) -> anyhow::Result<heapgraph_analyzer::HoldersView> {
    let runtime = graph.meta().runtime;
    let (target, matches) = match (object_id, type_name) {
        (Some(id), _) => {
            let Some(node) = graph.find_object(id) else {
                bail!(
                    "{}: no object has id {}; ids come from `heapgraph top` or DevTools",
                    file.display(),
                    runtime.format_object_id(id)
                );
            };
            (node, None)
        }
        (None, Some(type_name)) => {
            let type_name = resolve_type(graph, type_name, file)?;
            let Some((node, matches)) =
                heapgraph_analyzer::find_largest_of_type(graph, analysis, &type_name)
            else {
                bail!(
                    "{}: no object has type {type_name:?}; `heapgraph summary` lists the types",
                    file.display()
                );
            };
            (node, Some(matches))
        }
        (None, None) => bail!("name an object id or give --type"),
    };
    let mut view = heapgraph_analyzer::who_holds(graph, analysis, target, n_paths, order);
    view.matches = matches;
    Ok(view)
}

pub(crate) fn dominators(args: &DominatorsArgs) -> anyhow::Result<String> {
    let mut loaded = load_for(&args.common)?;
    let analysis = loaded.analyze(args.common.include_weak)?;
    let view =
        heapgraph_analyzer::dominator_tree(&loaded.graph, &analysis, args.depth, args.min_share);
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::dominators(&view, &info),
        OutputFormat::Json => json::dominators(&view, &info),
    })
}

pub(crate) fn suspects(args: &SuspectsArgs) -> anyhow::Result<String> {
    let mut loaded = load_for(&args.common)?;
    let analysis = loaded.analyze_before_chains(
        args.common.include_weak,
        heapgraph_analyzer::ViewDistances::Shown,
    )?;
    let view = heapgraph_analyzer::suspects_with_drop(
        &loaded.graph,
        &analysis,
        args.threshold,
        args.min_drop,
    );
    let drops =
        heapgraph_analyzer::big_drops(&loaded.graph, &analysis, args.threshold, args.min_drop);
    let findings = heapgraph_analyzer::findings::accumulations(&view);
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::suspects(&view, &drops, &info, &findings),
        OutputFormat::Json => json::suspects(&view, &drops, &info, &findings),
    })
}

pub(crate) fn strings(args: &StringsArgs) -> anyhow::Result<String> {
    let loaded = load_for(&args.common)?;
    let view = heapgraph_analyzer::strings(&loaded.graph, args.duplicates, args.n);
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::strings(&view, args.duplicates, &info),
        OutputFormat::Json => json::strings(&view, args.duplicates, &info),
    })
}

/// `leaking`: objgraph's get_leaking_objects, for Python dumps.
pub(crate) fn leaking(args: &LeakingArgs) -> anyhow::Result<String> {
    let mut loaded = load_for(&args.common)?;
    let analysis = loaded.analyze(args.common.include_weak)?;
    let Some(view) =
        heapgraph_analyzer::backrefs::leaking(&loaded.graph, &analysis, "object", args.n)
    else {
        bail!(
            "{}: has no objects of kind \"object\"; `leaking` reads Python dumps (heapgraph_dump)",
            args.common.file.display()
        );
    };
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::leaking(&view, &info, args.n),
        OutputFormat::Json => json::leaking(&view, &info),
    })
}

/// `leaks`: memlab's three-snapshot method.
pub(crate) fn leaks(args: &LeaksArgs) -> anyhow::Result<String> {
    let (baseline, (target, final_)) = rayon::join(
        || load(&args.baseline, &args.read),
        || {
            rayon::join(
                || load(&args.target, &args.read),
                || load(&args.final_, &args.read),
            )
        },
    );
    let (baseline, target, mut final_) = (baseline?, target?, final_?);
    let analysis = final_.analyze(false)?;
    let view = heapgraph_analyzer::leaks::leaks(
        &baseline.graph,
        &target.graph,
        &final_.graph,
        &analysis,
        args.n,
    );
    let info = DumpInfo::new(&args.final_.display().to_string(), final_.graph.meta());
    Ok(match args.format {
        OutputFormat::Text => text::leaks(&view, &info),
        OutputFormat::Json => json::leaks(&view, &info),
    })
}

/// `graph --backrefs`: the referrers of an object as DOT.
pub(crate) fn graph(args: &GraphArgs) -> anyhow::Result<String> {
    let object_id = parse_object_id(&args.backrefs)?;
    let mut loaded = load(&args.file, &args.read)?;
    let analysis = loaded.analyze(false)?;
    let graph = &loaded.graph;
    let Some(target) = graph.find_object(object_id) else {
        bail!(
            "{}: no object has id {}; ids come from `heapgraph top` or `who-holds`",
            args.file.display(),
            graph.meta().runtime.format_object_id(object_id)
        );
    };
    let view = heapgraph_analyzer::backrefs::backrefs(
        graph,
        &analysis,
        target,
        args.depth,
        args.max_objects.max(1),
    );
    let dot = heapgraph_report::dot::backrefs(&view);
    match &args.output {
        None => Ok(dot),
        Some(path) => {
            std::fs::write(path, &dot)
                .with_context(|| format!("cannot write {}", path.display()))?;
            Ok(format!(
                "wrote {} ({} objects, {} references; render with `dot -Tsvg {} -o chain.svg`)\n",
                path.display(),
                view.objects.len(),
                view.references.len(),
                path.display()
            ))
        }
    }
}

/// `diff`: two heap dumps by type, or two allocation snapshots by site; with the verdict of
/// the `--fail-if` gates (true: one failed).
pub(crate) fn diff(args: &DiffArgs) -> anyhow::Result<(String, bool)> {
    let (output, verdicts) = diff_and_check(args, &args.fail_if)?;
    let mut failed = false;
    let mut stderr = std::io::stderr().lock();
    for verdict in &verdicts {
        failed |= verdict.failed;
        writeln!(stderr, "{}", text::verdict(verdict))?;
    }
    Ok((output, failed))
}

fn diff_and_check(
    args: &DiffArgs,
    rules: &[heapgraph_analyzer::gate::Rule],
) -> anyhow::Result<(String, Vec<heapgraph_analyzer::gate::Verdict>)> {
    let (old, new) = rayon::join(
        || load_evidence(&args.old, &args.read),
        || load_evidence(&args.new, &args.read),
    );
    let (mut old, mut new) = (old?, new?);
    if args.collapse_modules {
        for evidence in [&mut old, &mut new] {
            if let Evidence::Graph(loaded) = evidence {
                loaded.collapse_modules();
            }
        }
    }
    match (old, new) {
        (timeline @ Evidence::Timeline(_), _) => Err(crate::load::refusal(&args.old, &timeline)),
        (_, timeline @ Evidence::Timeline(_)) => Err(crate::load::refusal(&args.new, &timeline)),
        (Evidence::Alloc(old), Evidence::Alloc(new)) => crate::alloc::diff(args, &old, &new, rules),
        (Evidence::Graph(mut old), Evidence::Graph(mut new)) => {
            let by = heap_rank(args.by)?;
            let (old_analysis, new_analysis) = rayon::join(
                || old.analyze(args.include_weak),
                || new.analyze(args.include_weak),
            );
            let (old_analysis, new_analysis) = (old_analysis?, new_analysis?);
            let view = heapgraph_analyzer::diff::diff_types(
                (&old.graph, &old_analysis),
                (&new.graph, &new_analysis),
                by,
            );
            let verdicts = rules
                .iter()
                .map(|rule| rule.check_graph(&view))
                .collect::<Result<Vec<_>, String>>()
                .map_err(|message| anyhow::anyhow!("--fail-if: {message}"))?;
            let old_info = DumpInfo::new(&args.old.display().to_string(), old.graph.meta());
            let new_info = DumpInfo::new(&args.new.display().to_string(), new.graph.meta());
            let findings: Vec<_> = heapgraph_analyzer::findings::growth(&view)
                .into_iter()
                .collect();
            let output = match args.format {
                OutputFormat::Text => text::graph_diff(
                    &view,
                    &new_info,
                    &old_info,
                    &findings,
                    by,
                    args.n.unwrap_or(DEFAULT_ROWS),
                ),
                OutputFormat::Json => {
                    json::graph_diff(&view, &new_info, &old_info, &findings, by, args.n)
                }
            };
            Ok((output, verdicts))
        }
        _ => bail!(
            "{} and {} are not of one kind: diff compares two heap dumps, or two allocation snapshots",
            args.old.display(),
            args.new.display()
        ),
    }
}

pub(crate) fn convert(args: &ConvertArgs) -> anyhow::Result<String> {
    let mut loaded = load(&args.file, &args.read)?;
    // The dominator pass in its fast order with the chain parents beside it, which the stored
    // analysis holds; the distances after it, where the dump brought none, so that they never
    // meet the pass's peak.
    let distances = if loaded.has_stored_analysis() {
        ViewDistances::Shown
    } else {
        ViewDistances::LeftOut
    };
    let analysis = loaded.analyze_before_chains(false, distances)?;
    let stored = analysis.into_stored(&loaded.graph);
    // The writer reads every string: decoded at once, the parked blocks go.
    loaded.graph.unpark_text();
    crate::load::release_freed_memory();
    let spinner = spinner("writing");
    write_replacing(&args.output, |out| {
        hgd::write_heap_graph(&loaded.graph, Some(&stored), out)
    })?;
    spinner.finish_and_clear();
    let graph = &loaded.graph;
    let synthetic = graph
        .nodes()
        .filter(|&node| graph.is_synthetic(node))
        .count();
    let objects = graph.node_count() - synthetic;
    let kept = stored.type_paths.len();
    let below = match stored.accumulated.len() {
        0 => String::new(),
        1 => " and the types below the suspects' accumulation point".to_owned(),
        points => format!(" and the types below the suspects' {points} accumulation points"),
    };
    Ok(format!(
        "wrote {} ({objects} objects, {synthetic} synthetic root node{} that `summary` leaves \
         out, {} references, with the dominator tree and its children, retained sizes, distances, type \
         totals, chain parents and the merged paths to the instances of the {kept} type{} with the \
         most{below})\n",
        args.output.display(),
        if synthetic == 1 { "" } else { "s" },
        graph.edge_count(),
        if kept == 1 { "" } else { "s" },
    ))
}

/// Writes `path` through `write`, into a new file that then replaces it by a rename: a reader
/// of the file before (this run's own input, `convert x.hgd -o x.hgd`, or a `serve` of it) maps
/// its pages as its columns, and a file truncated under a mapping kills the reader.
pub(crate) fn write_replacing(
    path: &std::path::Path,
    write: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let context = || format!("cannot write {}", path.display());
    let name = path.file_name().map_or_else(
        || std::ffi::OsString::from("output"),
        std::ffi::OsStr::to_os_string,
    );
    let mut partial_name = std::ffi::OsString::from(".");
    partial_name.push(&name);
    partial_name.push(format!(".{}.partial", std::process::id()));
    let partial = path.with_file_name(partial_name);
    let written = (|| {
        let file = std::fs::File::create(&partial)?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        write(&mut out)?;
        out.flush()?;
        std::fs::rename(&partial, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written.with_context(context)
}

#[cfg(test)]
mod tests {
    use super::parse_object_id;

    #[test]
    fn object_ids_read_in_all_three_spellings() {
        assert_eq!(parse_object_id("@12345").ok(), Some(12345));
        assert_eq!(parse_object_id("12345").ok(), Some(12345));
        assert_eq!(parse_object_id("0x3039").ok(), Some(12345));
        assert!(parse_object_id("@abc").is_err());
    }
}
