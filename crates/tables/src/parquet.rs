//! The tables as Parquet files, one partition per dump: `DIR/<table>/dump_id=<id>/part-0.parquet`
//! (Hive's layout, which Spark, DuckDB and Trino read with `dump_id` as a column). Adding a dump
//! adds files and rewrites none: a dump whose `dumps` file is already there is left alone.
//!
//! Each file is written beside its place (`part-0.parquet.tmp`) and renamed into it, and the
//! `dumps` file is written last, so a `dumps` row means its dump's tables are all there; an
//! export cut short leaves no `dumps` row, and the next export of that dump writes it again.

use crate::{BATCH_ROWS, DumpTables, Table};
use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// A file or folder could not be read, created or renamed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The Parquet writer refused.
    #[error("{path}: writing Parquet: {source}")]
    Parquet {
        /// The file being written.
        path: PathBuf,
        /// What went wrong.
        source: parquet::errors::ParquetError,
    },
}

/// What to write.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExportOptions {
    /// Leave out the tables that grow with the graph (`objects`, `references`).
    pub summary_only: bool,
}

/// What one dump's export wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// The dump's id.
    pub dump_id: String,
    /// Whether `DIR` already held this dump (then nothing was written).
    pub already_there: bool,
    /// Rows written per table, in [`Table::ALL`]'s order.
    pub rows: Vec<(Table, u64)>,
}

/// The id of the dump in `path`: `h` and the first 16 hex digits of the XXH3-128 of the file's
/// bytes, so that the same file always gets the same id, two files almost never share one
/// (a collision is likely only past 2³² dumps), and no engine takes it for a number when it
/// infers a partition column's type.
///
/// # Errors
/// When the file cannot be read.
pub fn dump_id(path: &Path) -> Result<String, ExportError> {
    let io = |source| ExportError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut hasher = twox_hash::XxHash3_128::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(io(error)),
        };
        hasher.write(&buffer[..read]);
    }
    let hash = hasher.finish_128();
    Ok(format!("h{:016x}", hash >> 64))
}

/// The partition folder of `table` for `dump_id` under `dir`.
pub fn partition(dir: &Path, table: Table, dump_id: &str) -> PathBuf {
    dir.join(table.name()).join(format!("dump_id={dump_id}"))
}

/// Whether `dir` already holds the dump `dump_id` (its `dumps` file, written last, is there):
/// then `export` need not read the dump at all.
pub fn is_exported(dir: &Path, dump_id: &str) -> bool {
    partition(dir, Table::Dumps, dump_id)
        .join("part-0.parquet")
        .exists()
}

/// Writes the tables of one dump under `dir`, `dumps` last; leaves a dump already there alone.
///
/// # Errors
/// The first file that could not be written; the files of this dump written before it stay,
/// without a `dumps` row.
pub fn write_dump(
    dir: &Path,
    dump_id: &str,
    tables: &DumpTables<'_>,
    options: ExportOptions,
) -> Result<Written, ExportError> {
    if is_exported(dir, dump_id) {
        return Ok(Written {
            dump_id: dump_id.to_owned(),
            already_there: true,
            rows: Vec::new(),
        });
    }
    let write = |table: Table| -> Result<(Table, u64), ExportError> {
        let folder = partition(dir, table, dump_id);
        std::fs::create_dir_all(&folder).map_err(|source| ExportError::Io {
            path: folder.clone(),
            source,
        })?;
        Ok((table, write_table(&folder, table, tables)?))
    };
    // `objects` and `references` each on a thread of their own (one file's encoding is
    // sequential), the small tables on this one; `dumps` after all of them.
    let mut rows = std::thread::scope(|scope| {
        let whole_graph: Vec<_> = Table::ALL
            .into_iter()
            .filter(|table| table.is_whole_graph() && !options.summary_only)
            .map(|table| scope.spawn(move || write(table)))
            .collect();
        let mut rows = Table::ALL
            .into_iter()
            .filter(|&table| !table.is_whole_graph() && table != Table::Dumps)
            .map(write)
            .collect::<Result<Vec<_>, _>>();
        for thread in whole_graph {
            let written = thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            rows = rows.and_then(|mut rows| {
                rows.push(written?);
                Ok(rows)
            });
        }
        rows
    })?;
    rows.push(write(Table::Dumps)?);
    rows.sort_by_key(|(table, _)| Table::ALL.iter().position(|t| t == table));
    Ok(Written {
        dump_id: dump_id.to_owned(),
        already_there: false,
        rows,
    })
}

/// Writes one table's file in `folder`, batch by batch; returns its rows.
fn write_table(folder: &Path, table: Table, tables: &DumpTables<'_>) -> Result<u64, ExportError> {
    let path = folder.join("part-0.parquet");
    let temporary = folder.join("part-0.parquet.tmp");
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ExportError::Io { path, source }
    };
    let parquet = |source| ExportError::Parquet {
        path: path.clone(),
        source,
    };
    let file = File::create(&temporary).map_err(io(&temporary))?;
    // Snappy: pure Rust and quick to build; a file is read once by an engine that decodes either.
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(format!("heapgraph {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut writer = ArrowWriter::try_new(
        BufWriter::with_capacity(1 << 20, file),
        table.schema(),
        Some(properties),
    )
    .map_err(parquet)?;
    let mut rows = 0u64;
    tables.batches(table, BATCH_ROWS, &mut |batch: RecordBatch| {
        rows += batch.num_rows() as u64;
        writer.write(&batch).map_err(parquet)
    })?;
    let inner = writer.into_inner().map_err(parquet)?;
    let file = inner
        .into_inner()
        .map_err(|error| io(&temporary)(error.into_error()))?;
    drop(file);
    std::fs::rename(&temporary, &path).map_err(io(&path))?;
    Ok(rows)
}
