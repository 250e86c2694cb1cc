//! The one error type of every importer: what was being read, where, and what was wrong.

use crate::Format;
use std::fmt;

/// Why a dump could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The file could not be read at all.
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    /// No importer recognised the content.
    #[error(
        "not a dump heapgraph can read (starts with {prefix}); expected a V8 .heapsnapshot, a Java .hprof, an IBM portable heap dump (.phd), a tracemalloc dump, a PyTorch CUDA memory snapshot, or heapgraph's .hgd"
    )]
    UnknownFormat {
        /// The first bytes, printed for the user.
        prefix: String,
    },
    /// A well-formed pickle of something heapgraph does not read (a model checkpoint, say).
    #[error(
        "this is a pickle but not a tracemalloc snapshot (Snapshot.dump) or a CUDA memory snapshot (torch.cuda.memory._dump_snapshot)"
    )]
    UnsupportedPickle,
    /// The content is not what the format requires at `offset`.
    #[error("{format}: at byte {offset}: {message}")]
    Malformed {
        /// The format being read (shown as `v8 heap snapshot`, …).
        format: Format,
        /// Byte offset in the (decompressed) stream.
        offset: u64,
        /// What was expected and what was found.
        message: String,
    },
    /// The input ended before the format was complete.
    #[error("{format}: the file ends at byte {offset} while reading {expected}; it was cut short")]
    Truncated {
        /// The format being read.
        format: Format,
        /// Where the input ended.
        offset: u64,
        /// What was being read.
        expected: String,
    },
    /// `--dump N` asked for a heap dump the file does not hold.
    #[error(
        "{format}: --dump {asked} asks for heap dump {asked}, but the file holds {held} (choose 1 to {held})"
    )]
    NoSuchDump {
        /// The format being read.
        format: Format,
        /// The dump asked for, 1-based.
        asked: usize,
        /// How many the file holds.
        held: usize,
    },
    /// The parts are individually well formed but do not make a consistent graph.
    #[error("{format}: {message}")]
    Inconsistent {
        /// The format being read.
        format: Format,
        /// What disagrees with what.
        message: String,
    },
}

impl ImportError {
    /// [`ImportError::Malformed`]: what `format` requires is not what is at `offset`.
    pub fn malformed(format: Format, offset: u64, message: impl Into<String>) -> ImportError {
        ImportError::Malformed {
            format,
            offset,
            message: message.into(),
        }
    }

    /// [`ImportError::Truncated`]: the input ended at `offset` while reading `expected`.
    pub fn truncated(format: Format, offset: u64, expected: impl Into<String>) -> ImportError {
        ImportError::Truncated {
            format,
            offset,
            expected: expected.into(),
        }
    }

    /// [`ImportError::Inconsistent`]: well-formed parts that disagree.
    pub fn inconsistent(format: Format, message: impl Into<String>) -> ImportError {
        ImportError::Inconsistent {
            format,
            message: message.into(),
        }
    }

    /// [`ImportError::NoSuchDump`]: dump `asked` (1-based) of a file that holds `held`.
    pub fn no_such_dump(format: Format, asked: usize, held: usize) -> ImportError {
        ImportError::NoSuchDump {
            format,
            asked,
            held,
        }
    }
}

/// Prints at most `limit` leading bytes as text where printable, else as hex.
pub(crate) fn describe_prefix(bytes: &[u8], limit: usize) -> String {
    let shown = &bytes[..bytes.len().min(limit)];
    if shown.is_empty() {
        return "nothing: the file is empty".to_owned();
    }
    if shown
        .iter()
        .all(|&b| b.is_ascii_graphic() || b == b' ' || b == b'\n' || b == b'\r' || b == b'\t')
    {
        format!("{:?}", String::from_utf8_lossy(shown))
    } else {
        let mut hex = String::new();
        for byte in shown {
            if !hex.is_empty() {
                hex.push(' ');
            }
            fmt::Write::write_fmt(&mut hex, format_args!("{byte:02x}")).ok();
        }
        hex
    }
}
