//! The errors of reading and writing `.hgd` records: what went wrong, in which record, at which
//! byte.

use std::fmt;

/// Why a `.hgd` stream could not be read or written.
///
/// Record 0 is the header; record `k` is the `k`-th chunk after it. Offsets are bytes from the
/// start of the stream.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading from or writing to the underlying stream failed.
    #[error("i/o error at byte {offset} (record {record}): {source}")]
    Io {
        /// The record being read or written.
        record: u64,
        /// Bytes read or written before the failure.
        offset: u64,
        /// What the stream reported.
        #[source]
        source: std::io::Error,
    },
    /// The stream does not start with a heapgraph header.
    #[error("not a heapgraph .hgd file: it starts with {found}")]
    NotHgd {
        /// The first bytes, printed for a person.
        found: String,
    },
    /// The header states a format version this reader does not know.
    #[error(
        "format version {version} is not one this heapgraph reads (it reads versions 1 to {supported}); a newer heapgraph wrote the file, or convert the dump again with this one"
    )]
    UnsupportedVersion {
        /// The version in the header.
        version: u32,
        /// The newest version this crate reads.
        supported: u32,
    },
    /// A record is complete but not what the format requires.
    #[error("record {record} at byte {offset}: {message}")]
    Malformed {
        /// The record's index.
        record: u64,
        /// Where the record starts.
        offset: u64,
        /// What was expected and what was found.
        message: String,
    },
    /// A record declares more bytes than a record may hold.
    #[error(
        "record {record} at byte {offset}: it declares {declared} bytes, more than the {limit} bytes a record may hold"
    )]
    TooLarge {
        /// The record's index.
        record: u64,
        /// Where the record starts.
        offset: u64,
        /// The size the record would reach.
        declared: u64,
        /// [`MAX_RECORD_BYTES`](crate::MAX_RECORD_BYTES).
        limit: u64,
    },
    /// The stream ends before its header is complete, so nothing can be read from it.
    #[error("the file ends at byte {offset} inside the header; it was cut short")]
    TruncatedHeader {
        /// Where the stream ends.
        offset: u64,
    },
    /// The columns handed to the writer disagree (different lengths, too many rows).
    #[error("cannot write record {record}: {message}")]
    InvalidColumns {
        /// The record that was to be written.
        record: u64,
        /// What disagrees with what.
        message: String,
    },
}

impl Error {
    /// The byte offset the error is about, where it has one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Io { offset, .. }
            | Error::Malformed { offset, .. }
            | Error::TooLarge { offset, .. }
            | Error::TruncatedHeader { offset } => Some(*offset),
            Error::NotHgd { .. } | Error::UnsupportedVersion { .. } => Some(0),
            Error::InvalidColumns { .. } => None,
        }
    }
}

/// A `bin` blob that cannot hold a column of fixed-width integers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnError {
    /// Bytes per value.
    pub width: usize,
    /// Bytes in the blob.
    pub len: usize,
}

impl fmt::Display for ColumnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a column of {}-byte integers has {} bytes, not a multiple of {}",
            self.width, self.len, self.width
        )
    }
}

impl std::error::Error for ColumnError {}

/// Prints at most `limit` leading bytes as text where printable, else as hex.
pub(crate) fn describe_prefix(bytes: &[u8], limit: usize) -> String {
    let shown = &bytes[..bytes.len().min(limit)];
    if shown.is_empty() {
        return "nothing: the file is empty".to_owned();
    }
    if shown.iter().all(|&b| b.is_ascii_graphic() || b == b' ') {
        format!("{:?}", String::from_utf8_lossy(shown))
    } else {
        let hex: Vec<String> = shown.iter().map(|byte| format!("{byte:02x}")).collect();
        hex.join(" ")
    }
}
