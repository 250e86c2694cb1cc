//! `heapgraph export`: each dump read, analysed and written as Parquet tables, one partition
//! per dump (`heapgraph_tables::parquet`). A dump that fails is reported by name and the others
//! are still exported.

use crate::args::ExportArgs;
use crate::load::{Evidence, load_evidence};
use anyhow::Context;
use heapgraph_tables::parquet::{ExportOptions, Written, dump_id, is_exported, write_dump};
use heapgraph_tables::{DumpTables, Source};
use std::io::Write;
use std::path::Path;

/// Exports every file; returns the report and whether some file failed (each failure is
/// written to stderr as it happens).
pub(crate) fn export(args: &ExportArgs) -> anyhow::Result<(String, bool)> {
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    let label = args.labels.join(",");
    let options = ExportOptions {
        summary_only: args.summary_only,
    };
    let mut report = String::new();
    let mut failed = 0usize;
    for file in &args.files {
        match export_one(args, file, &label, options) {
            Ok(written) => report.push_str(&written_line(file, &written)),
            Err(error) => {
                failed += 1;
                let mut message = format!("heapgraph: {error}");
                for cause in error.chain().skip(1) {
                    message.push_str(&format!(": {cause}"));
                }
                let _ = writeln!(std::io::stderr(), "{message}");
            }
        }
    }
    let exported = args.files.len() - failed;
    report.push_str(&format!(
        "{exported} of {} dumps in {}{}\n",
        args.files.len(),
        args.output.display(),
        if failed > 0 {
            format!("; {failed} could not be read (above, on stderr)")
        } else {
            String::new()
        }
    ));
    Ok((report, failed > 0))
}

fn export_one(
    args: &ExportArgs,
    file: &Path,
    label: &str,
    options: ExportOptions,
) -> anyhow::Result<Written> {
    // The id hashes the whole file, first: a dump already in the folder is not read at all
    // (the hash reads the file at memory speed, and leaves it in the page cache for the import).
    let id = dump_id(file)?;
    if is_exported(&args.output, &id) {
        return Ok(Written {
            dump_id: id,
            already_there: true,
            rows: Vec::new(),
        });
    }
    let mut evidence = load_evidence(file, &args.read)?;
    let name = file.display().to_string();
    let analysis;
    let source = match &mut evidence {
        Evidence::Graph(loaded) => {
            analysis =
                loaded.analyze_before_chains(false, heapgraph_analyzer::ViewDistances::Shown)?;
            Source::Graph {
                graph: &loaded.graph,
                analysis: &analysis,
            }
        }
        Evidence::Alloc(snapshot) => Source::Alloc(snapshot),
        Evidence::Timeline(timeline) => Source::Timeline(timeline),
    };
    let tables = DumpTables::new(source, &name, label);
    write_dump(&args.output, &id, &tables, options).with_context(|| format!("cannot export {name}"))
}

fn written_line(file: &Path, written: &Written) -> String {
    if written.already_there {
        return format!(
            "{}: dump_id={} already in the folder, left as it is\n",
            file.display(),
            written.dump_id
        );
    }
    let tables: Vec<String> = written
        .rows
        .iter()
        .filter(|(_, rows)| *rows > 0)
        .map(|(table, rows)| format!("{} {rows}", table.name()))
        .collect();
    format!(
        "{}: dump_id={} ({})\n",
        file.display(),
        written.dump_id,
        tables.join(", ")
    )
}
