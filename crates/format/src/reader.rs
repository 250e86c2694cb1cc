//! Reading a `.hgd` stream record by record: the header first, then chunks that borrow the
//! reader's buffer, and a [`Truncation`] note instead of an error when the stream was cut short.

use crate::error::{Error, describe_prefix};
use crate::frame::{FrameError, Framed, Framer, SliceFramer};
use crate::records::{
    AccumulatedChunk, AnalysisChunk, ArrayLengthsChunk, Chunk, EdgesChunk, FillChunk, FramesChunk,
    Header, LITTLE_ENDIAN, MAGIC, NodeKindsChunk, NodesChunk, RootChunk, SitesChunk, StacksChunk,
    StringsChunk, TypePathsChunk, TypeTotalsChunk, UnknownChunk, VERSION, VERSION_IMAGES,
};
use crate::records::{ImageChunk, ImageDataChunk};
use crate::timeline::{EventChunk, SamplesChunk, TimelineInfoChunk};
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
/// of its own, so a plain `File` is fine. [`SliceReader`] reads a file already in memory (or
/// memory-mapped) without copying.
pub struct Reader<R> {
    framer: Framer<R>,
    header: Header,
    progress: Progress,
}

/// What [`Reader`] and [`SliceReader`] share: how far they got.
struct Progress {
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
        check_prefix(prefix)?;
        match framer.read_value(MAX_RECORD_BYTES) {
            Ok(Framed::Value) => {}
            Ok(Framed::End) => return Err(Error::TruncatedHeader { offset: 0 }),
            Err(FrameError::Eof) => return Err(header_cut_short(framer.value(), framer.offset())),
            Err(err) => return Err(frame_error(err, 0, 0, framer.offset())),
        }
        let header = parse_header(framer.value())?;
        Ok(Reader {
            framer,
            header,
            progress: Progress::new(),
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Complete chunks read so far.
    pub fn chunks_read(&self) -> u64 {
        self.progress.chunks_read
    }

    /// Bytes of the stream consumed so far.
    pub fn offset(&self) -> u64 {
        self.framer.offset()
    }

    /// How the stream was cut short, once [`Reader::next_chunk`] has returned `None` for a stream
    /// without a complete end record.
    pub fn truncation(&self) -> Option<&Truncation> {
        self.progress.truncation()
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
        if !matches!(self.progress.state, State::Reading) {
            return Ok(None);
        }
        let start = self.framer.offset();
        let framed = self.framer.read_value(MAX_RECORD_BYTES);
        let framed = match framed {
            Ok(Framed::Value) => Ok(true),
            Ok(Framed::End) => Ok(false),
            Err(err) => Err(err),
        };
        let Some(record) = self.progress.framed(framed, start, self.framer.offset())? else {
            return Ok(None);
        };
        let end_offset = self.framer.offset();
        let at_end = self.framer.at_end().map_err(|source| Error::Io {
            record: record + 1,
            offset: end_offset,
            source,
        });
        self.progress
            .interpret(self.framer.value(), record, start, end_offset, at_end)
    }
}

/// Reads a `.hgd` file that is already in memory, such as a memory-mapped one: as [`Reader`],
/// but the chunks borrow the slice, not the reader, so they can be kept and decoded together
/// (in parallel, say).
pub struct SliceReader<'a> {
    framer: SliceFramer<'a>,
    header: Header,
    progress: Progress,
}

impl<'a> SliceReader<'a> {
    /// Reads and checks the header.
    ///
    /// # Errors
    /// As [`Reader::new`].
    pub fn new(bytes: &'a [u8]) -> Result<SliceReader<'a>, Error> {
        check_prefix(bytes)?;
        let mut framer = SliceFramer::new(bytes);
        let value = match framer.read_value(MAX_RECORD_BYTES) {
            Ok(Some(value)) => value,
            Ok(None) => return Err(Error::TruncatedHeader { offset: 0 }),
            Err(FrameError::Eof) => return Err(header_cut_short(bytes, bytes.len() as u64)),
            Err(err) => return Err(frame_error(err, 0, 0, 0)),
        };
        let header = parse_header(value)?;
        Ok(SliceReader {
            framer,
            header,
            progress: Progress::new(),
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Complete chunks read so far.
    pub fn chunks_read(&self) -> u64 {
        self.progress.chunks_read
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.framer.offset()
    }

    /// As [`Reader::truncation`].
    pub fn truncation(&self) -> Option<&Truncation> {
        self.progress.truncation()
    }

    /// The next chunk, borrowing the slice; as [`Reader::next_chunk`].
    ///
    /// # Errors
    /// As [`Reader::next_chunk`].
    pub fn next_chunk(&mut self) -> Result<Option<Chunk<'a>>, Error> {
        if !matches!(self.progress.state, State::Reading) {
            return Ok(None);
        }
        let start = self.framer.offset();
        let framed = self.framer.read_value(MAX_RECORD_BYTES);
        let (framed, value) = match framed {
            Ok(Some(value)) => (Ok(true), value),
            Ok(None) => (Ok(false), &[][..]),
            Err(err) => (Err(err), &[][..]),
        };
        let end = start + value.len() as u64;
        let Some(record) = self.progress.framed(framed, start, end)? else {
            return Ok(None);
        };
        let at_end = Ok(self.framer.at_end());
        self.progress.interpret(value, record, start, end, at_end)
    }

    /// The bytes after the last record read.
    pub fn rest(&self) -> &'a [u8] {
        self.framer.rest()
    }
}

impl Progress {
    fn new() -> Self {
        Progress {
            chunks_read: 0,
            state: State::Reading,
        }
    }

    fn truncation(&self) -> Option<&Truncation> {
        match &self.state {
            State::Truncated(truncation) => Some(truncation),
            State::Reading | State::Ended => None,
        }
    }

    /// Takes the framing outcome of the record that starts at `start` (a value: `Ok(true)`;
    /// a clean end: `Ok(false)`): the record's number, or `None` where the stream ends.
    fn framed(
        &mut self,
        framed: Result<bool, FrameError>,
        start: u64,
        offset: u64,
    ) -> Result<Option<u64>, Error> {
        let record = self.chunks_read + 1;
        let partial_record = match framed {
            Ok(true) => return Ok(Some(record)),
            Ok(false) => false,
            Err(FrameError::Eof) => true,
            Err(err) => return Err(frame_error(err, record, start, offset)),
        };
        self.state = State::Truncated(Truncation {
            chunks: self.chunks_read,
            offset: start,
            partial_record,
        });
        Ok(None)
    }

    /// Decodes the complete record `value`, number `record`, found at `start` and ending at
    /// `end`; `at_end` tells whether nothing follows it.
    fn interpret<'b>(
        &mut self,
        value: &'b [u8],
        record: u64,
        start: u64,
        end: u64,
        at_end: Result<bool, Error>,
    ) -> Result<Option<Chunk<'b>>, Error> {
        let malformed = |message: String| Error::Malformed {
            record,
            offset: start,
            message,
        };
        let type_name = record_type(value).map_err(malformed)?;
        if type_name == "end" {
            let count: EndCount = rmp_serde::from_slice(value)
                .map_err(|err| malformed(format!("an end record: {err}")))?;
            if count.chunks != self.chunks_read {
                return Err(malformed(format!(
                    "the end record counts {} chunks but {} came before it",
                    count.chunks, self.chunks_read
                )));
            }
            if !at_end? {
                return Err(Error::Malformed {
                    record: record + 1,
                    offset: end,
                    message: "data follows the end record".to_owned(),
                });
            }
            self.state = State::Ended;
            return Ok(None);
        }
        self.chunks_read = record;
        decode_chunk(value, type_name).map(Some).map_err(malformed)
    }
}

/// Refuses a prefix that cannot start a `.hgd` stream.
fn check_prefix(prefix: &[u8]) -> Result<(), Error> {
    if sniff(prefix) == Some(false) {
        return Err(Error::NotHgd {
            found: describe_prefix(prefix, 24),
        });
    }
    Ok(())
}

/// The error for a stream that ends inside its first record, of which `arrived` came.
fn header_cut_short(arrived: &[u8], offset: u64) -> Error {
    match sniff(arrived) {
        Some(false) => Error::NotHgd {
            found: describe_prefix(arrived, 24),
        },
        _ => Error::TruncatedHeader { offset },
    }
}

/// Decodes and checks the header record.
fn parse_header(value: &[u8]) -> Result<Header, Error> {
    if sniff(value) != Some(true) {
        return Err(Error::NotHgd {
            found: describe_prefix(value, 24),
        });
    }
    let malformed = |message: String| Error::Malformed {
        record: 0,
        offset: 0,
        message,
    };
    let header: Header = rmp_serde::from_slice(value)
        .map_err(|err| malformed(format!("the header cannot be decoded: {err}")))?;
    if header.magic != MAGIC {
        return Err(malformed(format!(
            "magic is {:?}, not {MAGIC:?}",
            header.magic
        )));
    }
    if header.version != VERSION && header.version != VERSION_IMAGES {
        return Err(Error::UnsupportedVersion {
            version: header.version,
            supported: VERSION_IMAGES,
        });
    }
    if header.endianness != LITTLE_ENDIAN {
        return Err(malformed(format!(
            "endianness is {:?}; only {LITTLE_ENDIAN:?} is defined",
            header.endianness
        )));
    }
    Ok(header)
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
        "type_totals" => {
            Chunk::TypeTotals(rmp_serde::from_slice::<TypeTotalsChunk<'_>>(buf).map_err(bad)?)
        }
        "accumulated" => {
            Chunk::Accumulated(rmp_serde::from_slice::<AccumulatedChunk<'_>>(buf).map_err(bad)?)
        }
        "type_paths" => {
            Chunk::TypePaths(rmp_serde::from_slice::<TypePathsChunk<'_>>(buf).map_err(bad)?)
        }
        "array_lengths" => {
            Chunk::ArrayLengths(rmp_serde::from_slice::<ArrayLengthsChunk<'_>>(buf).map_err(bad)?)
        }
        "fill" => Chunk::Fill(rmp_serde::from_slice::<FillChunk<'_>>(buf).map_err(bad)?),
        "timeline_info" => {
            Chunk::TimelineInfo(rmp_serde::from_slice::<TimelineInfoChunk>(buf).map_err(bad)?)
        }
        "samples" => Chunk::Samples(rmp_serde::from_slice::<SamplesChunk<'_>>(buf).map_err(bad)?),
        "event" => Chunk::Event(rmp_serde::from_slice::<EventChunk>(buf).map_err(bad)?),
        "frames" => Chunk::Frames(rmp_serde::from_slice::<FramesChunk<'_>>(buf).map_err(bad)?),
        "stacks" => Chunk::Stacks(rmp_serde::from_slice::<StacksChunk<'_>>(buf).map_err(bad)?),
        "sites" => Chunk::Sites(rmp_serde::from_slice::<SitesChunk<'_>>(buf).map_err(bad)?),
        "image" => Chunk::Image(rmp_serde::from_slice::<ImageChunk>(buf).map_err(bad)?),
        "image_data" => {
            Chunk::ImageData(rmp_serde::from_slice::<ImageDataChunk<'_>>(buf).map_err(bad)?)
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

/// The error for a framing failure other than a clean or partial end, in the record that starts
/// at `start`; `offset` is where the stream stands.
fn frame_error(err: FrameError, record: u64, start: u64, offset: u64) -> Error {
    match err {
        FrameError::Io(source) => Error::Io {
            record,
            offset,
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
        FrameError::Eof => Error::TruncatedHeader { offset },
    }
}
