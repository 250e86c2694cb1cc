//! Reading a `.hgd` stream record by record: the header first, then chunks that borrow the
//! reader's buffer, and a [`Truncation`] note instead of an error when the stream was cut short.

use crate::error::{Error, describe_prefix};
use crate::frame::{FrameError, Framed, Framer};
use crate::records::{
    AnalysisChunk, Chunk, EdgesChunk, Header, LITTLE_ENDIAN, MAGIC, NodeKindsChunk, NodesChunk,
    RootChunk, StringsChunk, UnknownChunk, VERSION,
};
use crate::{MAX_RECORD_BYTES, sniff};
use serde::Deserialize;
use std::fmt;
use std::io::Read;

/// Where a stream that was cut short ends: what was read is usable, the rest is lost.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Truncation {
    /// Complete chunks read (the header not counted).
    pub chunks: u64,
    /// Where the last complete record ends.
    pub offset: u64,
    /// Whether the stream ends inside a record (lost) rather than between records (with no end
    /// record, so that later chunks may be missing).
    pub partial_record: bool,
}

impl fmt::Display for Truncation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.chunks == 0 {
            write!(
                f,
                "the file ends after the header (byte offset {})",
                self.offset
            )?;
        } else {
            write!(
                f,
                "the file ends after chunk {} (byte offset {})",
                self.chunks, self.offset
            )?;
        }
        if self.partial_record {
            f.write_str(", inside the next record, which is lost")
        } else {
            f.write_str(" without its end record, so later chunks may be missing")
        }
    }
}

/// Where the reader stands.
enum State {
    Reading,
    Ended,
    Truncated(Truncation),
}

/// Reads a `.hgd` stream: [`Reader::new`] reads and checks the header, then
/// [`Reader::next_chunk`] yields the chunks in stream order.
///
/// Every record is copied into one reused buffer before it is decoded, and no record may exceed
/// [`MAX_RECORD_BYTES`]: a length prefix larger than the bytes that follow ends the stream (a
/// truncation), it never reserves the declared size. The stream is read through a small buffer
/// of its own, so a plain `File` is fine.
pub struct Reader<R> {
    framer: Framer<R>,
    header: Header,
    buf: Vec<u8>,
    chunks_read: u64,
    state: State,
}

/// The `type` of a record, read before the record itself.
#[derive(Deserialize)]
struct Tag<'a> {
    #[serde(rename = "type", borrow)]
    type_name: &'a str,
}

/// The end record's count of the chunks before it.
#[derive(Deserialize)]
struct EndCount {
    chunks: u64,
}

impl<R: Read> Reader<R> {
    /// Reads and checks the header.
    ///
    /// # Errors
    /// [`Error::NotHgd`] when the stream is not a `.hgd` stream,
    /// [`Error::UnsupportedVersion`] for another format version, [`Error::TruncatedHeader`] when
    /// the stream ends inside the header, and [`Error::Malformed`] or [`Error::Io`] otherwise.
    pub fn new(input: R) -> Result<Reader<R>, Error> {
        let mut framer = Framer::new(input);
        let prefix = framer.peek().map_err(|source| Error::Io {
            record: 0,
            offset: 0,
            source,
        })?;
        if sniff(prefix) == Some(false) {
            return Err(Error::NotHgd {
                found: describe_prefix(prefix, 24),
            });
        }
        let mut buf = Vec::new();
        match framer.read_value(&mut buf, MAX_RECORD_BYTES) {
            Ok(Framed::Value) => {}
            Ok(Framed::End) => return Err(Error::TruncatedHeader { offset: 0 }),
            Err(FrameError::Eof) => {
                return Err(match sniff(&buf) {
                    Some(false) => Error::NotHgd {
                        found: describe_prefix(&buf, 24),
                    },
                    _ => Error::TruncatedHeader {
                        offset: framer.offset(),
                    },
                });
            }
            Err(err) => return Err(frame_error(err, 0, 0, &framer)),
        }
        if sniff(&buf) != Some(true) {
            return Err(Error::NotHgd {
                found: describe_prefix(&buf, 24),
            });
        }
        let malformed = |message: String| Error::Malformed {
            record: 0,
            offset: 0,
            message,
        };
        let header: Header = rmp_serde::from_slice(&buf)
            .map_err(|err| malformed(format!("the header cannot be decoded: {err}")))?;
        if header.magic != MAGIC {
            return Err(malformed(format!(
                "magic is {:?}, not {MAGIC:?}",
                header.magic
            )));
        }
        if header.version != VERSION {
            return Err(Error::UnsupportedVersion {
                version: header.version,
                supported: VERSION,
            });
        }
        if header.endianness != LITTLE_ENDIAN {
            return Err(malformed(format!(
                "endianness is {:?}; only {LITTLE_ENDIAN:?} is defined",
                header.endianness
            )));
        }
        Ok(Reader {
            framer,
            header,
            buf,
            chunks_read: 0,
            state: State::Reading,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Complete chunks read so far.
    pub fn chunks_read(&self) -> u64 {
        self.chunks_read
    }

    /// Bytes of the stream consumed so far.
    pub fn offset(&self) -> u64 {
        self.framer.offset()
    }

    /// How the stream was cut short, once [`Reader::next_chunk`] has returned `None` for a stream
    /// without a complete end record.
    pub fn truncation(&self) -> Option<&Truncation> {
        match &self.state {
            State::Truncated(truncation) => Some(truncation),
            State::Reading | State::Ended => None,
        }
    }

    /// The next chunk, or `None` at the end record or where the stream was cut short (then
    /// [`Reader::truncation`] says where). The chunk borrows the reader's buffer: decode it
    /// before asking for the next one.
    ///
    /// # Errors
    /// [`Error::Malformed`] for a complete record that is not a valid chunk (its columns
    /// disagree, or the end record's count is wrong, or data follows it), [`Error::TooLarge`] and
    /// [`Error::Io`].
    pub fn next_chunk(&mut self) -> Result<Option<Chunk<'_>>, Error> {
        if !matches!(self.state, State::Reading) {
            return Ok(None);
        }
        let record = self.chunks_read + 1;
        let start = self.framer.offset();
        let partial_record = match self.framer.read_value(&mut self.buf, MAX_RECORD_BYTES) {
            Ok(Framed::Value) => None,
            Ok(Framed::End) => Some(false),
            Err(FrameError::Eof) => Some(true),
            Err(err) => return Err(frame_error(err, record, start, &self.framer)),
        };
        if let Some(partial_record) = partial_record {
            self.state = State::Truncated(Truncation {
                chunks: self.chunks_read,
                offset: start,
                partial_record,
            });
            return Ok(None);
        }
        let malformed = |message: String| Error::Malformed {
            record,
            offset: start,
            message,
        };
        let type_name = record_type(&self.buf).map_err(malformed)?;
        if type_name == "end" {
            let end: EndCount = rmp_serde::from_slice(&self.buf)
                .map_err(|err| malformed(format!("an end record: {err}")))?;
            if end.chunks != self.chunks_read {
                return Err(malformed(format!(
                    "the end record counts {} chunks but {} came before it",
                    end.chunks, self.chunks_read
                )));
            }
            let end_offset = self.framer.offset();
            let at_end = self.framer.at_end().map_err(|source| Error::Io {
                record: record + 1,
                offset: end_offset,
                source,
            })?;
            if !at_end {
                return Err(Error::Malformed {
                    record: record + 1,
                    offset: end_offset,
                    message: "data follows the end record".to_owned(),
                });
            }
            self.state = State::Ended;
            return Ok(None);
        }
        self.chunks_read = record;
        decode_chunk(&self.buf, type_name)
            .map(Some)
            .map_err(malformed)
    }
}

/// The `type` of one framed record.
fn record_type(buf: &[u8]) -> Result<&str, String> {
    rmp_serde::from_slice::<Tag<'_>>(buf)
        .map(|tag| tag.type_name)
        .map_err(|err| format!("not a record with a type: {err}"))
}

/// Decodes one framed chunk of type `type_name` and checks its columns agree.
fn decode_chunk<'a>(buf: &'a [u8], type_name: &str) -> Result<Chunk<'a>, String> {
    let bad = |err: rmp_serde::decode::Error| format!("a {type_name} chunk: {err}");
    let chunk = match type_name {
        "strings" => Chunk::Strings(rmp_serde::from_slice::<StringsChunk<'_>>(buf).map_err(bad)?),
        "node_kinds" => {
            Chunk::NodeKinds(rmp_serde::from_slice::<NodeKindsChunk>(buf).map_err(bad)?)
        }
        "nodes" => Chunk::Nodes(rmp_serde::from_slice::<NodesChunk<'_>>(buf).map_err(bad)?),
        "edges" => Chunk::Edges(rmp_serde::from_slice::<EdgesChunk<'_>>(buf).map_err(bad)?),
        "root" => Chunk::Root(rmp_serde::from_slice::<RootChunk>(buf).map_err(bad)?),
        "analysis" => {
            Chunk::Analysis(rmp_serde::from_slice::<AnalysisChunk<'_>>(buf).map_err(bad)?)
        }
        "header" => return Err("a second header".to_owned()),
        other => Chunk::Unknown(UnknownChunk {
            type_name: other.to_owned(),
        }),
    };
    chunk
        .validate()
        .map_err(|message| format!("a {type_name} chunk: {message}"))?;
    Ok(chunk)
}

/// The error for a framing failure other than a clean or partial end.
fn frame_error<R: Read>(err: FrameError, record: u64, start: u64, framer: &Framer<R>) -> Error {
    match err {
        FrameError::Io(source) => Error::Io {
            record,
            offset: framer.offset(),
            source,
        },
        FrameError::TooLarge { declared } => Error::TooLarge {
            record,
            offset: start,
            declared,
            limit: MAX_RECORD_BYTES,
        },
        FrameError::Reserved { offset } => Error::Malformed {
            record,
            offset: start,
            message: format!("byte {offset} is 0xc1, which messagepack never uses"),
        },
        FrameError::Eof => Error::TruncatedHeader {
            offset: framer.offset(),
        },
    }
}
