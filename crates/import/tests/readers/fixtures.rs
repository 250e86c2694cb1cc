//! The committed fixtures (`fixtures/` at the repository's root) that the readers' tests read.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The path of the fixture `name` (`java/default.hprof.gz`, `v8/…`).
pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(name)
}

/// The file's bytes, gunzipped where it is gzipped.
pub(crate) fn plain_bytes(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut bytes = Vec::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_end(&mut bytes)
            .expect("gzip");
        bytes
    } else {
        raw
    }
}

/// The bytes of the fixture `name`, gunzipped where it is gzipped.
pub(crate) fn fixture_bytes(name: &str) -> Vec<u8> {
    plain_bytes(&fixture(name))
}
