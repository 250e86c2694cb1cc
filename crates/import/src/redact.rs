//! Redacted copies of dumps, to attach a production dump to an incident: the same graph,
//! types, field names, sizes and ids, with every value zeroed or replaced. HPROF is rewritten
//! in place (`hprof::redact`), so the copy is a valid HPROF of the same length that other
//! tools open; a V8 snapshot keeps every byte but its string table's values (`v8`); any other
//! heap graph is written as `.hgd` with its value labels replaced (`graph`).

mod graph;
mod v8;

pub use graph::{GraphRedactStats, redact as redact_graph};
pub use v8::{V8RedactStats, redact as redact_v8};

use crate::ImportError;
use std::io::{Read, Write};
use std::path::Path;

pub use crate::hprof::redact::{Keep, Plan, RedactStats, redact as redact_hprof};

/// The bytes of the dump at `path`, gunzipped (all members) when it starts with gzip's magic.
///
/// # Errors
/// [`ImportError::Io`] when the file cannot be read or its gzip stream is broken.
pub fn read_whole(path: &Path) -> Result<Vec<u8>, ImportError> {
    let raw = std::fs::read(path)?;
    if is_gzip(&raw) {
        let mut out = Vec::with_capacity(raw.len().saturating_mul(3));
        flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out)?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Whether `bytes` start as an HPROF dump.
pub fn is_hprof(bytes: &[u8]) -> bool {
    crate::hprof::sniff(bytes) == Some(true)
}

/// The first bytes of the file at `path`, gunzipped when it is gzip: enough to tell formats
/// apart.
///
/// # Errors
/// [`ImportError::Io`] when the file cannot be read.
pub fn prefix(path: &Path) -> Result<Vec<u8>, ImportError> {
    let mut file = std::fs::File::open(path)?;
    let mut raw = vec![0u8; 64 * 1024];
    let n = read_up_to(&mut file, &mut raw)?;
    raw.truncate(n);
    if !is_gzip(&raw) {
        return Ok(raw);
    }
    let mut out = vec![0u8; 64 * 1024];
    // A broken gzip stream is reported when the whole file is read; here it only ends early.
    let n = read_up_to(&mut flate2::read::MultiGzDecoder::new(&raw[..]), &mut out).unwrap_or(0);
    out.truncate(n);
    Ok(out)
}

fn read_up_to(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Writes a redacted copy of the HPROF dump at `input` to `output`. A plain dump is mapped,
/// walked once to plan ([`Plan`]), then copied piece by piece, each piece zeroed before it is
/// written; a gzipped one is read whole, zeroed and written plain. On an error `output` is
/// removed: a half-redacted copy must not be left behind.
///
/// # Errors
/// [`ImportError`] when `input` is not an HPROF dump, cannot be read, or is malformed, and
/// [`ImportError::Io`] when `output` cannot be written.
pub fn redact_hprof_file(
    input: &Path,
    output: &Path,
    keep: Keep<'_>,
) -> Result<RedactStats, ImportError> {
    same_file(input, output)?;
    let result = redact_hprof_file_inner(input, output, keep);
    if result.is_err() {
        let _ = std::fs::remove_file(output);
    }
    result
}

fn redact_hprof_file_inner(
    input: &Path,
    output: &Path,
    keep: Keep<'_>,
) -> Result<RedactStats, ImportError> {
    let mut magic = [0u8; 2];
    let n = read_up_to(&mut std::fs::File::open(input)?, &mut magic)?;
    if is_gzip(&magic[..n]) {
        let mut bytes = read_whole(input)?;
        not_hprof(&bytes)?;
        let stats = redact_hprof(&mut bytes, keep)?;
        write_new(output, &bytes)?;
        return Ok(stats);
    }
    not_hprof(&prefix(input)?)?;
    let source = std::fs::File::open(input)?;
    // SAFETY: the map is only read; another process could change the file meanwhile, as with
    // any memory-mapped input: every byte read is checked as if it were hostile.
    let map = unsafe { memmap2::MmapOptions::new().map(&source)? };
    let plan = Plan::new(&map, keep)?;
    let mut out = std::fs::File::create(output)?;
    // Pieces of about PIECE bytes, cut between records, are copied, zeroed (their segments in
    // parallel) and written in order: one copy through this process, one write.
    let mut piece = Vec::new();
    let mut zeroed = RedactStats::default();
    let mut offset = 0;
    while offset < map.len() {
        let end = plan
            .boundary_after(offset.saturating_add(PIECE))
            .unwrap_or(map.len());
        piece.clear();
        piece.extend_from_slice(&map[offset..end]);
        zeroed.add(&plan.zero(&mut piece, offset)?);
        out.write_all(&piece)?;
        offset = end;
    }
    out.flush()?;
    Ok(plan.totals(zeroed))
}

/// The size of the pieces a plain HPROF is copied in: large enough that a piece holds many
/// segments to zero in parallel (HotSpot writes them about 1 MiB each), small enough to stay
/// in cache-friendly memory.
const PIECE: usize = 32 << 20;

/// Refuses to write over the input (truncating it would also pull the bytes from under the
/// map that reads it).
///
/// # Errors
/// [`ImportError::Io`] when `output` names the file `input` names.
pub fn same_file(input: &Path, output: &Path) -> Result<(), ImportError> {
    if let (Ok(a), Ok(b)) = (input.canonicalize(), output.canonicalize())
        && a == b
    {
        return Err(ImportError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the output is the input; write the redacted copy to another file",
        )));
    }
    Ok(())
}

fn not_hprof(bytes: &[u8]) -> Result<(), ImportError> {
    if is_hprof(bytes) {
        return Ok(());
    }
    Err(ImportError::UnknownFormat {
        prefix: crate::error::describe_prefix(bytes, 24),
    })
}

/// Writes `bytes` to a new file at `output`.
///
/// # Errors
/// [`ImportError::Io`] when it cannot be written.
pub fn write_new(output: &Path, bytes: &[u8]) -> Result<(), ImportError> {
    let mut file = std::fs::File::create(output)?;
    file.write_all(bytes)?;
    file.flush()?;
    Ok(())
}
