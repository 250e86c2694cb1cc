//! Redacted copies of dumps, to attach a production dump to an incident: the same graph,
//! types, field names, sizes and ids, with every value zeroed. HPROF is rewritten in place
//! (`hprof::redact`), so the copy is a valid HPROF of the same length that other tools open.

use crate::ImportError;
use std::io::Read;
use std::path::Path;

pub use crate::hprof::redact::{Keep, RedactStats, redact as redact_hprof};

/// The bytes of the dump at `path`, gunzipped (all members) when it starts with gzip's magic.
///
/// # Errors
/// [`ImportError::Io`] when the file cannot be read or its gzip stream is broken.
pub fn read_whole(path: &Path) -> Result<Vec<u8>, ImportError> {
    let raw = std::fs::read(path)?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::with_capacity(raw.len().saturating_mul(3));
        flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out)?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

/// Whether `bytes` start as an HPROF dump.
pub fn is_hprof(bytes: &[u8]) -> bool {
    crate::hprof::sniff(bytes) == Some(true)
}
