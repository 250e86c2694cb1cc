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
    if !redact::is_hprof(&prefix) {
        bail!(
            "{}: redact writes HPROF dumps only so far; V8 snapshots, Python dumps and .hgd files are not redacted yet",
            input()
        );
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
