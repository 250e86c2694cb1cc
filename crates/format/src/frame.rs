//! Framing: copying one complete MessagePack value from a stream into a buffer by its markers
//! alone, so that a record can be decoded from a bounded slice. Every declared length is checked
//! against a cap before anything is reserved, and the buffer grows only as bytes arrive.

use std::io::{self, BufRead, BufReader, Read};

/// Bytes of read buffer in front of the caller's stream: markers are read a few bytes at a time,
/// blobs bypass it.
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Bytes reserved ahead of a blob's data at a time: a lying length prefix on a short stream costs
/// at most this much before the stream runs out.
const RESERVE_STEP_BYTES: u64 = 16 * 1024 * 1024;

/// Why a value could not be framed.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// The stream ended inside the value.
    Eof,
    /// The stream failed.
    Io(io::Error),
    /// The value would grow past the cap; `declared` is the size it would reach.
    TooLarge { declared: u64 },
    /// Byte `0xc1`, which MessagePack never uses, at `offset`.
    Reserved { offset: u64 },
}

impl From<io::Error> for FrameError {
    fn from(err: io::Error) -> Self {
        if err.kind() == io::ErrorKind::UnexpectedEof {
            FrameError::Eof
        } else {
            FrameError::Io(err)
        }
    }
}

/// What [`Framer::read_value`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Framed {
    /// A complete value is in the buffer.
    Value,
    /// The stream ended cleanly, before the value's first byte.
    End,
}

/// A source of one MessagePack value's bytes, consumed marker by marker: a stream whose bytes
/// are copied into a buffer ([`Framer`]), or a slice that is only walked ([`SliceFramer`]).
trait FrameInput {
    /// Bytes of the current value consumed so far.
    fn taken(&self) -> u64;
    /// Stream offset of the next byte.
    fn position(&self) -> u64;
    /// Consumes a big-endian unsigned integer of `width` (1, 2 or 4) bytes.
    fn fixed(&mut self, width: usize, limit: u64) -> Result<u64, FrameError>;
    /// Consumes `len` bytes.
    fn payload(&mut self, len: u64, limit: u64) -> Result<(), FrameError>;
}

/// Consumes one complete value from `input` by its markers alone, never letting it grow past
/// `limit` bytes.
fn frame_value<I: FrameInput>(input: &mut I, limit: u64) -> Result<(), FrameError> {
    // Values still to read; containers add their elements. Each value takes at least one
    // byte, so a huge declared count only runs until the stream ends.
    let mut pending: u64 = 1;
    while pending > 0 {
        pending -= 1;
        let marker_offset = input.position();
        let marker = input.fixed(1, limit)? as u8;
        match marker {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => {}
            0x80..=0x8f => pending = pending.saturating_add(2 * u64::from(marker & 0x0f)),
            0x90..=0x9f => pending = pending.saturating_add(u64::from(marker & 0x0f)),
            0xa0..=0xbf => input.payload(u64::from(marker & 0x1f), limit)?,
            // bin 8/16/32, str 8/16/32: a length, then the bytes.
            0xc4 | 0xd9 => {
                let len = input.fixed(1, limit)?;
                input.payload(len, limit)?;
            }
            0xc5 | 0xda => {
                let len = input.fixed(2, limit)?;
                input.payload(len, limit)?;
            }
            0xc6 | 0xdb => {
                let len = input.fixed(4, limit)?;
                input.payload(len, limit)?;
            }
            // ext 8/16/32: a length, a type byte, then the bytes.
            0xc7 => {
                let len = input.fixed(1, limit)?;
                input.payload(len + 1, limit)?;
            }
            0xc8 => {
                let len = input.fixed(2, limit)?;
                input.payload(len + 1, limit)?;
            }
            0xc9 => {
                let len = input.fixed(4, limit)?;
                input.payload(len + 1, limit)?;
            }
            // Numbers of fixed width.
            0xcc | 0xd0 => input.payload(1, limit)?,
            0xcd | 0xd1 => input.payload(2, limit)?,
            0xca | 0xce | 0xd2 => input.payload(4, limit)?,
            0xcb | 0xcf | 0xd3 => input.payload(8, limit)?,
            // fixext 1/2/4/8/16: a type byte, then the bytes.
            0xd4 => input.payload(2, limit)?,
            0xd5 => input.payload(3, limit)?,
            0xd6 => input.payload(5, limit)?,
            0xd7 => input.payload(9, limit)?,
            0xd8 => input.payload(17, limit)?,
            // array 16/32, map 16/32.
            0xdc => pending = pending.saturating_add(input.fixed(2, limit)?),
            0xdd => pending = pending.saturating_add(input.fixed(4, limit)?),
            0xde => pending = pending.saturating_add(2 * input.fixed(2, limit)?),
            0xdf => pending = pending.saturating_add(2 * input.fixed(4, limit)?),
            0xc1 => {
                return Err(FrameError::Reserved {
                    offset: marker_offset,
                });
            }
        }
    }
    Ok(())
}

/// Reads MessagePack values one at a time from a stream, copying each into a buffer, and
/// counts the bytes it consumed.
pub(crate) struct Framer<R> {
    input: BufReader<R>,
    offset: u64,
    buf: Vec<u8>,
}

impl<R: Read> Framer<R> {
    pub(crate) fn new(input: R) -> Self {
        Framer {
            input: BufReader::with_capacity(READ_BUFFER_BYTES, input),
            offset: 0,
            buf: Vec::new(),
        }
    }

    /// Bytes consumed so far.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Whether the stream has no more bytes.
    pub(crate) fn at_end(&mut self) -> io::Result<bool> {
        Ok(self.peek()?.is_empty())
    }

    /// The next buffered bytes, without consuming them (empty at the end of the stream).
    pub(crate) fn peek(&mut self) -> io::Result<&[u8]> {
        loop {
            match self.input.fill_buf() {
                Ok(_) => return Ok(self.input.buffer()),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
    }

    /// The bytes of the last value read (or of what arrived of it, after an error).
    pub(crate) fn value(&self) -> &[u8] {
        &self.buf
    }

    /// Copies one complete value into [`Framer::value`], never letting it grow past `limit`
    /// bytes.
    pub(crate) fn read_value(&mut self, limit: u64) -> Result<Framed, FrameError> {
        self.buf.clear();
        if self.at_end()? {
            return Ok(Framed::End);
        }
        frame_value(self, limit)?;
        Ok(Framed::Value)
    }
}

impl<R: Read> FrameInput for Framer<R> {
    fn taken(&self) -> u64 {
        self.buf.len() as u64
    }

    fn position(&self) -> u64 {
        self.offset
    }

    fn fixed(&mut self, width: usize, limit: u64) -> Result<u64, FrameError> {
        check_limit(self.taken(), width as u64, limit)?;
        let mut bytes = [0u8; 4];
        let bytes = &mut bytes[..width];
        // Byte counts stay exact even where the stream ends inside the integer.
        let mut filled = 0;
        while filled < width {
            match self.input.read(&mut bytes[filled..]) {
                Ok(0) => {
                    self.offset += filled as u64;
                    return Err(FrameError::Eof);
                }
                Ok(n) => filled += n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err.into()),
            }
        }
        self.offset += width as u64;
        self.buf.extend_from_slice(bytes);
        Ok(big_endian(bytes))
    }

    /// Copies `len` bytes, reserving in steps so that a short stream stops the growth.
    fn payload(&mut self, len: u64, limit: u64) -> Result<(), FrameError> {
        check_limit(self.taken(), len, limit)?;
        let mut remaining = len;
        while remaining > 0 {
            let step = remaining.min(RESERVE_STEP_BYTES);
            // `step` is at most 16 MiB, so it fits a usize.
            self.buf
                .try_reserve(step as usize)
                .map_err(|err| FrameError::Io(io::Error::new(io::ErrorKind::OutOfMemory, err)))?;
            let read = (&mut self.input).take(step).read_to_end(&mut self.buf)? as u64;
            self.offset += read;
            if read < step {
                return Err(FrameError::Eof);
            }
            remaining -= step;
        }
        Ok(())
    }
}

/// Finds MessagePack values one at a time in a slice (a memory-mapped file), without copying.
pub(crate) struct SliceFramer<'a> {
    bytes: &'a [u8],
    /// Where the next value starts.
    start: usize,
    /// Where the walk stands inside the current value.
    position: usize,
}

impl<'a> SliceFramer<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        SliceFramer {
            bytes,
            start: 0,
            position: 0,
        }
    }

    /// Bytes consumed so far.
    pub(crate) fn offset(&self) -> u64 {
        self.start as u64
    }

    /// Whether the slice has no more bytes.
    pub(crate) fn at_end(&self) -> bool {
        self.start == self.bytes.len()
    }

    /// The rest of the slice.
    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.bytes[self.start..]
    }

    /// The next complete value, of at most `limit` bytes; `None` at the end of the slice.
    pub(crate) fn read_value(&mut self, limit: u64) -> Result<Option<&'a [u8]>, FrameError> {
        if self.at_end() {
            return Ok(None);
        }
        self.position = self.start;
        if let Err(err) = frame_value(self, limit) {
            if matches!(err, FrameError::Eof) {
                // As a stream would have: everything up to the end was consumed.
                self.start = self.bytes.len();
            }
            return Err(err);
        }
        let value = &self.bytes[self.start..self.position];
        self.start = self.position;
        Ok(Some(value))
    }
}

impl FrameInput for SliceFramer<'_> {
    fn taken(&self) -> u64 {
        (self.position - self.start) as u64
    }

    fn position(&self) -> u64 {
        self.position as u64
    }

    fn fixed(&mut self, width: usize, limit: u64) -> Result<u64, FrameError> {
        check_limit(self.taken(), width as u64, limit)?;
        let bytes = self
            .bytes
            .get(self.position..self.position + width)
            .ok_or(FrameError::Eof)?;
        self.position += width;
        Ok(big_endian(bytes))
    }

    fn payload(&mut self, len: u64, limit: u64) -> Result<(), FrameError> {
        check_limit(self.taken(), len, limit)?;
        let available = (self.bytes.len() - self.position) as u64;
        if len > available {
            return Err(FrameError::Eof);
        }
        // `len` is at most the slice's length here.
        self.position += len as usize;
        Ok(())
    }
}

/// The big-endian unsigned integer of up to 8 `bytes`.
fn big_endian(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0u64, |value, &byte| value << 8 | u64::from(byte))
}

/// Fails when a value of `taken` bytes would grow past `limit` by `more` bytes.
fn check_limit(taken: u64, more: u64, limit: u64) -> Result<(), FrameError> {
    let declared = taken.saturating_add(more);
    if declared > limit {
        Err(FrameError::TooLarge { declared })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames one value with both framers, which must agree.
    fn frame(bytes: &[u8]) -> Result<(Framed, Vec<u8>, u64), FrameError> {
        let mut framer = Framer::new(bytes);
        let streamed = framer
            .read_value(1 << 20)
            .map(|framed| (framed, framer.value().to_vec(), framer.offset()));
        let mut slice_framer = SliceFramer::new(bytes);
        let sliced = slice_framer.read_value(1 << 20).map(|value| match value {
            Some(value) => (Framed::Value, value.to_vec(), slice_framer.offset()),
            None => (Framed::End, Vec::new(), 0),
        });
        assert_eq!(format!("{streamed:?}"), format!("{sliced:?}"));
        streamed
    }

    #[test]
    fn frames_exactly_one_value() {
        let value = rmp_serde::to_vec_named(&(
            "text",
            vec![1u64, 300, 70_000, u64::MAX],
            serde_bytes::Bytes::new(&[9; 300]),
            Some(-5i8),
            1.5f64,
        ))
        .expect("serialisable");
        let mut stream = value.clone();
        stream.extend_from_slice(&[0xc0, 0xc0]);
        let (framed, buf, offset) = frame(&stream).expect("a complete value");
        assert_eq!(framed, Framed::Value);
        assert_eq!(buf, value);
        assert_eq!(offset, value.len() as u64);
    }

    #[test]
    fn a_huge_declared_length_on_a_short_stream_is_eof_or_too_large() {
        // bin32 of 4 GiB - 1 with three bytes behind it.
        assert!(matches!(
            frame(&[0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2, 3]),
            Err(FrameError::TooLarge { .. })
        ));
        // bin32 of 64 KiB - 1 (under the test's cap) with three bytes behind it.
        assert!(matches!(
            frame(&[0xc6, 0x00, 0x00, 0xff, 0xff, 1, 2, 3]),
            Err(FrameError::Eof)
        ));
        // array32 of 4 billion nils with two behind it.
        assert!(matches!(
            frame(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0, 0xc0]),
            Err(FrameError::Eof)
        ));
        assert!(matches!(
            frame(&[0xc1]),
            Err(FrameError::Reserved { offset: 0 })
        ));
        assert!(matches!(frame(&[]), Ok((Framed::End, _, 0))));
    }
}
