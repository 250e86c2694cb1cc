//! One function per verb: load, analyse, render. Library options are built here from clap's
//! arguments.

use crate::args::{
    Common, ConvertArgs, DominatorsArgs, OutputFormat, RankByArg, SiteArgs, StringsArgs,
    SummaryArgs, SuspectsArgs, TopArgs, WhoHoldsArgs,
};
use crate::load::{Evidence, Loaded, load, load_evidence, spinner, stored_of};
use anyhow::{Context, bail};
use heapgraph_analyzer::RankBy;
use heapgraph_import::native;
use heapgraph_model::{AllocSnapshot, AllocSource};
use heapgraph_report::{DumpInfo, json, text};
use std::io::{BufWriter, Write};

/// Types the text summary lists when `-n` is not given.
const DEFAULT_TEXT_TYPES: usize = 20;

fn info(common: &Common, loaded: &Loaded) -> DumpInfo {
    DumpInfo::new(&common.file.display().to_string(), loaded.graph.meta())
}

pub(crate) fn summary(args: &SummaryArgs) -> anyhow::Result<String> {
    let mut loaded = match load_evidence(&args.common.file)? {
        Evidence::Graph(loaded) => *loaded,
        Evidence::Alloc(snapshot) => return alloc_summary(args, &snapshot),
    };
    let analysis = loaded.analyze(args.common.include_weak)?;
    let view = heapgraph_analyzer::summary(&loaded.graph, &analysis);
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => {
            text::summary(&view, &info, args.n_types.unwrap_or(DEFAULT_TEXT_TYPES))
        }
        OutputFormat::Json => json::summary(&view, &info, args.n_types),
    })
}

/// `summary` of an allocation snapshot: the GPU view of a CUDA snapshot, the top lines of a
/// tracemalloc dump.
fn alloc_summary(args: &SummaryArgs, snapshot: &AllocSnapshot) -> anyhow::Result<String> {
    let n = args.n_types.unwrap_or(DEFAULT_TEXT_TYPES);
    match snapshot.meta.source {
        AllocSource::TorchCuda => crate::alloc::gpu_of(
            &args.common.file,
            snapshot,
            n,
            false,
            false,
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
    let mut loaded = match load_evidence(&args.common.file)? {
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
    };
    let analysis = loaded.analyze(args.common.include_weak)?;
    let by = match args.by {
        None | Some(RankByArg::Retained) => RankBy::Retained,
        Some(RankByArg::Shallow) => RankBy::Shallow,
        Some(RankByArg::Count) => RankBy::Count,
        Some(other) => bail!(
            "--by {} groups allocation snapshots; heap dumps rank by retained, shallow or count",
            format!("{other:?}").to_lowercase()
        ),
    };
    let objects = heapgraph_analyzer::top(&loaded.graph, &analysis, by, args.n);
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::top(&objects, by, &info),
        OutputFormat::Json => json::top(&objects, by, &info),
    })
}

/// Parses `@12345`, `12345` or `0x3039`.
fn parse_object_id(text: &str) -> anyhow::Result<u64> {
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

pub(crate) fn who_holds(args: &WhoHoldsArgs) -> anyhow::Result<String> {
    let object_id = args.object.as_deref().map(parse_object_id).transpose()?;
    let mut loaded = load(&args.common.file)?;
    let analysis = loaded.analyze(args.common.include_weak)?;
    let graph = &loaded.graph;
    let runtime = graph.meta().runtime;
    let (target, matches) = match (object_id, &args.type_name) {
        (Some(id), _) => {
            let Some(node) = graph.find_object(id) else {
                bail!(
                    "{}: no object has id {}; ids come from `heapgraph top` or DevTools",
                    args.common.file.display(),
                    runtime.format_object_id(id)
                );
            };
            (node, None)
        }
        (None, Some(type_name)) => {
            let Some((node, matches)) =
                heapgraph_analyzer::find_largest_of_type(graph, &analysis, type_name)
            else {
                bail!(
                    "{}: no object has type {type_name:?}; `heapgraph summary` lists the types",
                    args.common.file.display()
                );
            };
            (node, Some(matches))
        }
        (None, None) => bail!("name an object id or give --type"),
    };
    let mut view = heapgraph_analyzer::who_holds(graph, &analysis, target, args.n_paths);
    view.matches = matches;
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::holders(&view, &info),
        OutputFormat::Json => json::holders(&view, &info),
    })
}

pub(crate) fn dominators(args: &DominatorsArgs) -> anyhow::Result<String> {
    let mut loaded = load(&args.common.file)?;
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
    let mut loaded = load(&args.common.file)?;
    let analysis = loaded.analyze(args.common.include_weak)?;
    let view = heapgraph_analyzer::suspects(&loaded.graph, &analysis, args.threshold);
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::suspects(&view, &info),
        OutputFormat::Json => json::suspects(&view, &info),
    })
}

pub(crate) fn strings(args: &StringsArgs) -> anyhow::Result<String> {
    let loaded = load(&args.common.file)?;
    let view = heapgraph_analyzer::strings(&loaded.graph, args.duplicates, args.n);
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::strings(&view, args.duplicates, &info),
        OutputFormat::Json => json::strings(&view, args.duplicates, &info),
    })
}

pub(crate) fn convert(args: &ConvertArgs) -> anyhow::Result<String> {
    let mut loaded = load(&args.file)?;
    let analysis = loaded.analyze(false)?;
    let stored = stored_of(analysis.to_stored(&loaded.graph));
    let spinner = spinner("writing");
    let context = || format!("cannot write {}", args.output.display());
    let file = std::fs::File::create(&args.output).with_context(context)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    native::write_heap_graph(&loaded.graph, Some(&stored), &mut out).with_context(context)?;
    out.flush().with_context(context)?;
    spinner.finish_and_clear();
    Ok(format!(
        "wrote {} ({} nodes, {} references, with dominators, retained sizes, distances and type totals)\n",
        args.output.display(),
        loaded.graph.node_count(),
        loaded.graph.edge_count()
    ))
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
