//! `paths` and `dominated-by`: what holds a set of objects, the set chosen by type, by id, or as
//! the objects new since a baseline dump.

use crate::args::{ChainOrderArg, DominatedByArgs, OutputFormat, PathsArgs, TargetArgs};
use crate::load::{Loaded, load, load_for};
use crate::verbs::{info, parse_object_id, resolve_type};
use anyhow::bail;
use heapgraph_analyzer::immediate_dominators::{TypeGlobs, immediate_dominators};
use heapgraph_analyzer::merged_paths::{
    MergedPathsView, TYPE_PATHS_BRANCHES, merged_paths, new_objects, objects_of_type,
};
use heapgraph_analyzer::{Analysis, ChainOrder};
use heapgraph_model::{HeapGraph, NodeId};
use heapgraph_report::holding::{self, Selection};
use std::path::Path;

pub(crate) fn paths(args: &PathsArgs) -> anyhow::Result<String> {
    let (mut loaded, baseline) = load_with_baseline(args)?;
    let analysis = loaded.analyze(args.common.include_weak)?;
    let order = match args.order {
        ChainOrderArg::Explain => ChainOrder::Explain,
        ChainOrderArg::Shortest => ChainOrder::Shortest,
    };
    let file = &args.common.file;
    let graph = &loaded.graph;
    let (view, selection) = match kept_paths(graph, &analysis, &args.targets, file, args.n, order)?
    {
        Some(kept) => kept,
        None => {
            let baseline = baseline.as_ref().map(|baseline| &baseline.graph);
            let (targets, selection) = targets(graph, baseline, &args.targets, file, None)?;
            let view = merged_paths(graph, &analysis, &targets, args.n, order);
            (view, selection)
        }
    };
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => holding::paths_text(&view, &info, &selection),
        OutputFormat::Json => holding::paths_json(&view, &info, &selection),
    })
}

pub(crate) fn dominated_by(args: &DominatedByArgs) -> anyhow::Result<String> {
    let skip =
        TypeGlobs::new(&args.skip).map_err(|message| anyhow::anyhow!("--skip: {message}"))?;
    let (mut loaded, baseline) = load_with_baseline_of(&args.common, &args.targets)?;
    let analysis: Analysis = loaded.analyze(args.common.include_weak)?;
    let (targets, selection) = targets(
        &loaded.graph,
        baseline.as_ref().map(|baseline| &baseline.graph),
        &args.targets,
        &args.common.file,
        None,
    )?;
    let view = immediate_dominators(&loaded.graph, &analysis, &targets, &skip);
    let info = info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => holding::immediate_dominators_text(
            &view,
            &info,
            &selection,
            args.n.unwrap_or(crate::args::DEFAULT_ROWS),
        ),
        OutputFormat::Json => holding::immediate_dominators_json(&view, &info, &selection, args.n),
    })
}

fn load_with_baseline(args: &PathsArgs) -> anyhow::Result<(Loaded, Option<Loaded>)> {
    load_with_baseline_of(&args.common, &args.targets)
}

/// The dump and, when asked for, its baseline, read side by side.
fn load_with_baseline_of(
    common: &crate::args::Common,
    targets: &TargetArgs,
) -> anyhow::Result<(Loaded, Option<Loaded>)> {
    if targets.type_name.is_none() && targets.ids.is_empty() && !targets.new {
        bail!("say which objects: --type NAME, --ids ID,…, or --baseline BEFORE --new");
    }
    let (loaded, baseline) = rayon::join(
        || load_for(common),
        || {
            targets
                .baseline
                .as_ref()
                .map(|path| load(path, &common.read))
                .transpose()
        },
    );
    Ok((loaded?, baseline?))
}

/// A server's indexes of a dump, which find a type's instances and an id's object without a
/// pass over the graph.
#[derive(Clone, Copy)]
pub(crate) struct Indexes<'a> {
    pub(crate) explorer: &'a heapgraph_analyzer::explore::Explorer,
    pub(crate) analysis: &'a Analysis,
}

/// The merged paths (`heapgraph.paths/1`) to the objects of a loaded, explored dump that
/// `chosen` picks, `branches` children listed per node, chains in `order`: `serve`'s and
/// `mcp`'s answer. The merged paths the analysis keeps are read as they are; others are
/// merged, holding `one_merge_at_a_time` where given while they are. The chain parents are
/// built on the first question in the explaining order (none for a converted dump, which
/// stores them) and kept for the next.
///
/// # Errors
/// As [`targets`]: a type or an id the dump does not have.
pub(crate) fn paths_answer(
    dump: &crate::serve::api::Dumped,
    file: &Path,
    chosen: &TargetArgs,
    branches: usize,
    order: ChainOrder,
    one_merge_at_a_time: Option<&std::sync::Mutex<()>>,
) -> anyhow::Result<String> {
    let indexes = Indexes {
        explorer: &dump.explorer,
        analysis: &dump.analysis,
    };
    let graph = &dump.graph;
    if let Some((view, selection)) =
        kept_paths(graph, &dump.analysis, chosen, file, branches, order)?
    {
        return Ok(holding::paths_json(&view, &dump.info, &selection));
    }
    let _merging = one_merge_at_a_time.map(|lock| {
        lock.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    });
    let (targets, selection) = targets(graph, None, chosen, file, Some(indexes))?;
    if order == ChainOrder::Explain {
        dump.analysis.chain_parents(graph);
    }
    let view = merged_paths(graph, &dump.analysis, &targets, branches, order);
    Ok(holding::paths_json(&view, &dump.info, &selection))
}

// The kept merged paths are those `paths` lists by default.
const _: () = assert!(crate::args::DEFAULT_ROWS == TYPE_PATHS_BRANCHES);

/// The merged paths the analysis keeps for a type's instances
/// ([`Analysis::known_type_paths`]: stored with a converted dump, or computed by `serve` at
/// start), where `chosen` picks only a type and asks for them as kept.
fn kept_paths(
    graph: &HeapGraph,
    analysis: &Analysis,
    chosen: &TargetArgs,
    file: &Path,
    branches: usize,
    order: ChainOrder,
) -> anyhow::Result<Option<(MergedPathsView, Selection)>> {
    let Some(name) = &chosen.type_name else {
        return Ok(None);
    };
    if !chosen.ids.is_empty() || chosen.baseline.is_some() || order != ChainOrder::Explain {
        return Ok(None);
    }
    let name = resolve_type(graph, name, file)?;
    Ok(analysis
        .known_type_paths(graph, &name, branches)
        .map(|view| {
            let selection = Selection {
                type_name: Some(name),
                ..Selection::default()
            };
            (view, selection)
        }))
}

/// The objects `targets` names in `graph`, and how the output says which they are (also the
/// targets of `serve`'s and `mcp`'s `paths`, which pass their `indexes`).
pub(crate) fn targets(
    graph: &HeapGraph,
    baseline: Option<&HeapGraph>,
    targets: &TargetArgs,
    file: &Path,
    indexes: Option<Indexes>,
) -> anyhow::Result<(Vec<NodeId>, Selection)> {
    let mut selection = Selection::default();
    let mut nodes: Option<Vec<NodeId>> = None;
    if let Some(name) = &targets.type_name {
        let name = resolve_type(graph, name, file)?;
        nodes = Some(match indexes {
            Some(Indexes { explorer, analysis }) => explorer
                .instances_of(graph, analysis, &name)
                .unwrap_or_default()
                .iter()
                .filter_map(|&node| graph.node(node as usize))
                .collect(),
            None => objects_of_type(graph, &name),
        });
        selection.type_name = Some(name);
    }
    if !targets.ids.is_empty() {
        let mut by_id = Vec::with_capacity(targets.ids.len());
        for text in &targets.ids {
            let id = parse_object_id(text)?;
            let found = match indexes {
                Some(Indexes { explorer, .. }) => explorer.find(graph, id),
                None => graph.find_object(id),
            };
            let Some(node) = found else {
                bail!(
                    "{}: no object has id {}; ids come from `heapgraph top` or `who-holds`",
                    file.display(),
                    graph.meta().runtime.format_object_id(id)
                );
            };
            by_id.push(node);
            selection.ids.push(id);
        }
        nodes = Some(match nodes {
            // --type and --ids: the named objects of that type.
            Some(of_type) => by_id
                .into_iter()
                .filter(|node| of_type.contains(node))
                .collect(),
            None => by_id,
        });
    }
    if let (Some(baseline), Some(path)) = (baseline, &targets.baseline) {
        let new = new_objects(baseline, graph);
        nodes = Some(match nodes {
            None => new,
            Some(chosen) => {
                let mut is_new = vec![false; graph.node_count()];
                for node in new {
                    is_new[node.index()] = true;
                }
                chosen
                    .into_iter()
                    .filter(|node| is_new[node.index()])
                    .collect()
            }
        });
        selection.baseline = Some(path.display().to_string());
    }
    let mut nodes = nodes.unwrap_or_default();
    nodes.sort_unstable();
    nodes.dedup();
    Ok((nodes, selection))
}
