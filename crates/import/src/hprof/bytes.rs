//! A big-endian cursor over the dump's bytes, with ids of the dump's width, that reports running
//! out instead of panicking.

/// The cursor ran past the end of its slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Short;

/// Reads big-endian integers and ids from `bytes[pos..end]`.
#[derive(Clone)]
pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    end: usize,
    id_size: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over `bytes[start..end]` (`end` clamped to the slice), ids `id_size` wide.
    pub(super) fn new(bytes: &'a [u8], start: usize, end: usize, id_size: usize) -> Self {
        let end = end.min(bytes.len());
        Cursor {
            bytes,
            pos: start.min(end),
            end,
            id_size,
        }
    }

    /// Offset of the next byte in the whole dump.
    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left before the end.
    pub(super) fn remaining(&self) -> usize {
        self.end - self.pos
    }

    /// The width of an id.
    pub(super) fn id_size(&self) -> usize {
        self.id_size
    }

    /// The next `n` bytes.
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        if n > self.remaining() {
            return Err(Short);
        }
        let taken = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(taken)
    }

    /// Skips `n` bytes.
    pub(super) fn skip(&mut self, n: usize) -> Result<(), Short> {
        self.take(n).map(drop)
    }

    pub(super) fn u1(&mut self) -> Result<u8, Short> {
        Ok(self.take(1)?[0])
    }

    pub(super) fn u2(&mut self) -> Result<u16, Short> {
        let bytes = self.take(2)?;
        Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
    }

    pub(super) fn u4(&mut self) -> Result<u32, Short> {
        let bytes = self.take(4)?;
        Ok(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    /// An id: 4 or 8 bytes.
    pub(super) fn id(&mut self) -> Result<u64, Short> {
        let bytes = self.take(self.id_size)?;
        Ok(read_id(bytes))
    }
}

/// The big-endian unsigned value of `bytes` (an id of 4 or 8 bytes).
#[inline]
pub(super) fn read_id(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0u64, |value, &byte| value << 8 | u64::from(byte))
}
