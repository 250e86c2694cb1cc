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

/// Reads MessagePack values one at a time and counts the bytes it consumed.
pub(crate) struct Framer<R> {
    input: BufReader<R>,
    offset: u64,
}

impl<R: Read> Framer<R> {
    pub(crate) fn new(input: R) -> Self {
        Framer {
            input: BufReader::with_capacity(READ_BUFFER_BYTES, input),
            offset: 0,
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

    /// Copies one complete value into `buf` (cleared first), never letting it grow past `limit`
    /// bytes.
    pub(crate) fn read_value(
        &mut self,
        buf: &mut Vec<u8>,
        limit: u64,
    ) -> Result<Framed, FrameError> {
        buf.clear();
        if self.at_end()? {
            return Ok(Framed::End);
        }
        // Values still to read; containers add their elements. Each value takes at least one
        // byte, so a huge declared count only runs until the stream ends.
        let mut pending: u64 = 1;
        while pending > 0 {
            pending -= 1;
            let marker_offset = self.offset;
            let marker = self.read_fixed(buf, 1, limit)?;
            let marker = marker as u8;
            match marker {
                0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => {}
                0x80..=0x8f => pending = pending.saturating_add(2 * u64::from(marker & 0x0f)),
                0x90..=0x9f => pending = pending.saturating_add(u64::from(marker & 0x0f)),
                0xa0..=0xbf => self.read_payload(buf, u64::from(marker & 0x1f), limit)?,
                // bin 8/16/32, str 8/16/32: a length, then the bytes.
                0xc4 | 0xd9 => {
                    let len = self.read_fixed(buf, 1, limit)?;
                    self.read_payload(buf, len, limit)?;
                }
                0xc5 | 0xda => {
                    let len = self.read_fixed(buf, 2, limit)?;
                    self.read_payload(buf, len, limit)?;
                }
                0xc6 | 0xdb => {
                    let len = self.read_fixed(buf, 4, limit)?;
                    self.read_payload(buf, len, limit)?;
                }
                // ext 8/16/32: a length, a type byte, then the bytes.
                0xc7 => {
                    let len = self.read_fixed(buf, 1, limit)?;
                    self.read_payload(buf, len + 1, limit)?;
                }
                0xc8 => {
                    let len = self.read_fixed(buf, 2, limit)?;
                    self.read_payload(buf, len + 1, limit)?;
                }
                0xc9 => {
                    let len = self.read_fixed(buf, 4, limit)?;
                    self.read_payload(buf, len + 1, limit)?;
                }
                // Numbers of fixed width.
                0xcc | 0xd0 => self.read_payload(buf, 1, limit)?,
                0xcd | 0xd1 => self.read_payload(buf, 2, limit)?,
                0xca | 0xce | 0xd2 => self.read_payload(buf, 4, limit)?,
                0xcb | 0xcf | 0xd3 => self.read_payload(buf, 8, limit)?,
                // fixext 1/2/4/8/16: a type byte, then the bytes.
                0xd4 => self.read_payload(buf, 2, limit)?,
                0xd5 => self.read_payload(buf, 3, limit)?,
                0xd6 => self.read_payload(buf, 5, limit)?,
                0xd7 => self.read_payload(buf, 9, limit)?,
                0xd8 => self.read_payload(buf, 17, limit)?,
                // array 16/32, map 16/32.
                0xdc => pending = pending.saturating_add(self.read_fixed(buf, 2, limit)?),
                0xdd => pending = pending.saturating_add(self.read_fixed(buf, 4, limit)?),
                0xde => pending = pending.saturating_add(2 * self.read_fixed(buf, 2, limit)?),
                0xdf => pending = pending.saturating_add(2 * self.read_fixed(buf, 4, limit)?),
                0xc1 => {
                    return Err(FrameError::Reserved {
                        offset: marker_offset,
                    });
                }
            }
        }
        Ok(Framed::Value)
    }

    /// Reads a big-endian unsigned integer of `width` (1, 2 or 4) bytes, copying its bytes to
    /// `buf`.
    fn read_fixed(
        &mut self,
        buf: &mut Vec<u8>,
        width: usize,
        limit: u64,
    ) -> Result<u64, FrameError> {
        check_limit(buf, width as u64, limit)?;
        let mut bytes = [0u8; 4];
        let bytes = &mut bytes[..width];
        self.input.read_exact(bytes)?;
        self.offset += width as u64;
        buf.extend_from_slice(bytes);
        Ok(bytes
            .iter()
            .fold(0u64, |value, &byte| value << 8 | u64::from(byte)))
    }

    /// Copies `len` bytes to `buf`, reserving in steps so that a short stream stops the growth.
    fn read_payload(&mut self, buf: &mut Vec<u8>, len: u64, limit: u64) -> Result<(), FrameError> {
        check_limit(buf, len, limit)?;
        let mut remaining = len;
        while remaining > 0 {
            let step = remaining.min(RESERVE_STEP_BYTES);
            // `step` is at most 16 MiB, so it fits a usize.
            buf.try_reserve(step as usize)
                .map_err(|err| FrameError::Io(io::Error::new(io::ErrorKind::OutOfMemory, err)))?;
            let read = (&mut self.input).take(step).read_to_end(buf)? as u64;
            self.offset += read;
            if read < step {
                return Err(FrameError::Eof);
            }
            remaining -= step;
        }
        Ok(())
    }
}

/// Fails when `buf` would grow past `limit` by `more` bytes.
fn check_limit(buf: &[u8], more: u64, limit: u64) -> Result<(), FrameError> {
    let declared = buf.len() as u64 + more;
    if declared > limit {
        Err(FrameError::TooLarge { declared })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(bytes: &[u8]) -> Result<(Framed, Vec<u8>, u64), FrameError> {
        let mut framer = Framer::new(bytes);
        let mut buf = Vec::new();
        let framed = framer.read_value(&mut buf, 1 << 20)?;
        Ok((framed, buf, framer.offset()))
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
