//! The verbs of issue 17: `waste` (collections' fill ratios), `summary --group-by` (totals per
//! package, module or class loader) and `redact` (a copy of a dump with its values zeroed).

use crate::args::{DEFAULT_ROWS, GroupByArg, OutputFormat, RedactArgs, SummaryArgs, WasteArgs};
use crate::load::{Evidence, Loaded, load_evidence_for};
use anyhow::{Context, bail};
use heapgraph_analyzer::Analysis;
use heapgraph_analyzer::groups::GroupBy;
use heapgraph_report::{json, text};

pub(crate) fn waste(args: &WasteArgs) -> anyhow::Result<String> {
    let mut loaded = match load_evidence_for(&args.common)? {
        Evidence::Graph(loaded) => *loaded,
        other => return Err(crate::load::refusal(&args.common.file, &other)),
    };
    let analysis = loaded.analyze(args.common.include_weak)?;
    let view = heapgraph_analyzer::waste::waste(&loaded.graph, &analysis, args.n);
    let info = crate::verbs::info(&args.common, &loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::waste(&view, &info, args.n),
        OutputFormat::Json => json::waste(&view, &info),
    })
}

/// `summary --group-by`.
pub(crate) fn grouped(
    args: &SummaryArgs,
    loaded: &Loaded,
    analysis: &Analysis,
    by: GroupByArg,
) -> anyhow::Result<String> {
    let by = match by {
        GroupByArg::Package => GroupBy::Package,
        GroupByArg::Module => GroupBy::Module,
        GroupByArg::Classloader => GroupBy::ClassLoader,
        GroupByArg::Script => GroupBy::Script,
    };
    let view =
        heapgraph_analyzer::groups::group_by(&loaded.graph, analysis, by).map_err(|refusal| {
            anyhow::anyhow!("{}: {}", args.common.file.display(), refusal.message)
        })?;
    let info = crate::verbs::info(&args.common, loaded);
    Ok(match args.common.format {
        OutputFormat::Text => text::groups(&view, &info, args.n.unwrap_or(DEFAULT_ROWS)),
        OutputFormat::Json => json::groups(&view, &info, args.n),
    })
}

pub(crate) fn redact(args: &RedactArgs) -> anyhow::Result<String> {
    use heapgraph_import::redact;
    let keep = match &args.keep_strings_matching {
        Some(pattern) => Some(regex::Regex::new(pattern).with_context(|| {
            format!("--keep-strings-matching {pattern:?} is no regular expression")
        })?),
        None => None,
    };
    let input = || args.file.display().to_string();
    let prefix = redact::prefix(&args.file).with_context(input)?;
    if redact::same_file(&args.file, &args.output).is_err() {
        bail!(
            "{}: the output is the input; write the redacted copy to another file",
            input()
        );
    }
    match heapgraph_import::sniff(&prefix) {
        Some(heapgraph_import::Format::Hprof) => {}
        Some(heapgraph_import::Format::V8HeapSnapshot) => {
            if args.keep_strings_matching.is_some() {
                bail!(
                    "{}: --keep-strings-matching applies to HPROF dumps only",
                    input()
                );
            }
            let bytes = redact::read_whole(&args.file).with_context(input)?;
            let (out, stats) = redact::redact_v8(&bytes).with_context(input)?;
            redact::write_new(&args.output, &out)
                .with_context(|| format!("cannot write {}", args.output.display()))?;
            return Ok(format!(
                "wrote {} (a V8 heap snapshot: {} of {} strings replaced, the values of {} nodes; nodes, edges and names as they were)\n",
                args.output.display(),
                stats.replaced,
                stats.strings,
                stats.value_nodes
            ));
        }
        _ => return redact_graph(args, &input()),
    }
    let matcher = keep
        .as_ref()
        .map(|regex| move |text: &str| regex.is_match(text));
    let keep_fn: redact::Keep<'_> = matcher
        .as_ref()
        .map(|f| f as &(dyn Fn(&str) -> bool + Sync));
    let stats = redact::redact_hprof_file(&args.file, &args.output, keep_fn)
        .with_context(|| format!("{} -> {}", input(), args.output.display()))?;
    Ok(format!(
        "wrote {} ({} bytes, {} zeroed: {} primitive arrays, the primitive fields of {} instances, {} of {} UTF8 records; {} arrays kept by --keep-strings-matching)\n",
        args.output.display(),
        stats.bytes,
        stats.zeroed_bytes,
        stats.arrays_zeroed,
        stats.instances,
        stats.utf8_zeroed,
        stats.utf8_zeroed + stats.utf8_kept,
        stats.arrays_kept
    ))
}

/// Any other heap graph: read, its values replaced, written as `.hgd`.
fn redact_graph(args: &RedactArgs, input: &str) -> anyhow::Result<String> {
    use heapgraph_import::{Contents, hgd, redact};
    if args.keep_strings_matching.is_some() {
        bail!("{input}: --keep-strings-matching applies to HPROF dumps only");
    }
    let dump = heapgraph_import::import_path(&args.file, &Default::default())
        .with_context(|| input.to_owned())?;
    let Contents::HeapGraph(graph) = dump else {
        bail!(
            "{input}: redact writes heap dumps (HPROF, V8 snapshots, Python dumps, .hgd, .phd); this file holds no object values to redact"
        );
    };
    let (graph, stats) = redact::redact_graph(&graph).with_context(|| input.to_owned())?;
    crate::verbs::write_replacing(&args.output, |out| hgd::write_heap_graph(&graph, None, out))?;
    Ok(format!(
        "wrote {} (.hgd: {} of {} strings replaced, the labels of {} value objects; types, names, sizes, ids and edges as they were)\n",
        args.output.display(),
        stats.replaced,
        stats.strings,
        stats.value_nodes
    ))
}
