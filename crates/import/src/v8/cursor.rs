//! The input as a sequence of blocks and a read position over them: the reader side (a
//! channel of blocks made on the calling thread, pooled buffers read into or stretches of a
//! mapped file, or plain reads), and the [`Cursor`] the parser moves through the bytes with,
//! counting absolute offsets.

use super::{json, numbers};
use crate::ImportError;
use std::io::{self, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};

/// How the input is cut into blocks for the parser: they start small (a small file costs
/// little) and double up to a maximum; and when the reader pre-scans a block for numbers
/// (see [`numbers::prescan`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct ReadPlan {
    /// Bytes in the first block.
    pub(super) first_block: usize,
    /// Bytes in a block at most.
    pub(super) max_block: usize,
    /// When blocks are pre-scanned.
    pub(super) prescan: Prescan,
}

/// When the reader pre-scans a block for the parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Prescan {
    /// Never: the parser scans every number itself.
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "only tests turn pre-scanning off")
    )]
    Never,
    /// Every block.
    Always,
    /// When the parser is behind (a filled block is still waiting for it), so that the two
    /// threads share the scanning of `nodes` and `edges` about equally. Pipelined reading
    /// only; plain reading treats it as `Never`.
    WhenBehind,
}

impl ReadPlan {
    /// 64 KiB growing to 4 MiB, pre-scanned when the parser is behind. Four blocks in
    /// flight stay in L3 between the reader writing them and the parser reading them, and
    /// the channel's few microseconds per block vanish. The maximum is at least twice the
    /// 1 MiB `BufReader` of `import_path`: after a short read that empties its buffer, the
    /// rest of a block is still asked for in a read larger than the buffer, which bypasses
    /// it instead of copying every byte twice (measured: 1 MiB blocks did that copy).
    pub(super) const DEFAULT: ReadPlan = ReadPlan {
        first_block: 64 << 10,
        max_block: 4 << 20,
        prescan: Prescan::WhenBehind,
    };

    /// The size after a block of `size` bytes.
    fn grow(self, size: usize) -> usize {
        size.saturating_mul(2).min(self.max_block).max(1)
    }
}

/// Blocks in flight between the reader and the parser: one being read, one being parsed,
/// two waiting.
const POOL: usize = 4;

/// Bytes of input, read into the block or lying in a mapped file, and the numbers pre-scanned
/// in them.
///
/// Invariants: the input is `mapped` where it is `Some` (and `len` its length), else
/// `data[..len]`, `data` being initialised up to its length; when `run` is `Some((start,
/// end))`, `start < end <= len` and `numbers` holds what [`numbers::prescan`] read in the
/// input's `start..end`.
#[derive(Default)]
pub(super) struct Block<'a> {
    /// Storage for input read, kept initialised so that reuse needs no zeroing.
    data: Vec<u8>,
    /// Input that lies in memory already: a stretch of a mapped file.
    mapped: Option<&'a [u8]>,
    /// Bytes of input.
    len: usize,
    /// The pre-scanned byte range, if any.
    run: Option<(usize, usize)>,
    /// The numbers of the pre-scanned range.
    numbers: Vec<u32>,
    /// Room for the pre-scan's second run of numbers ([`numbers::prescan`]).
    scratch: Vec<u32>,
}

impl<'a> Block<'a> {
    /// Refills the block with up to `size` bytes of `reader`, fewer only at the end of input.
    fn fill<R: Read>(&mut self, reader: &mut R, size: usize) -> io::Result<()> {
        self.mapped = None;
        if self.data.len() < size {
            self.data.resize(size, 0);
        }
        let size = size.min(self.data.len());
        self.len = 0;
        self.run = None;
        while self.len < size {
            match reader.read(&mut self.data[self.len..size]) {
                Ok(0) => break,
                Ok(n) => self.len += n.min(size - self.len),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Makes `input` the block's input.
    fn point_at(&mut self, input: &'a [u8]) {
        self.mapped = Some(input);
        self.len = input.len();
        self.run = None;
    }

    /// Pre-scans the block's input for a run of numbers.
    fn prescan(&mut self) {
        let input = match self.mapped {
            Some(input) => input,
            None => &self.data[..self.len],
        };
        self.run = numbers::prescan(input, &mut self.numbers, &mut self.scratch);
    }

    /// The input bytes.
    fn bytes(&self) -> &[u8] {
        match self.mapped {
            Some(input) => input,
            None => &self.data[..self.len],
        }
    }
}

/// Where the parser gets its blocks.
pub(super) trait BlockSource<'a> {
    /// The next non-empty block, or `None` at the end of input; `spent` is the previous
    /// block, returned for reuse.
    fn next_block(&mut self, spent: Block<'a>) -> io::Result<Option<Block<'a>>>;
}

/// Blocks read on the parser's own thread.
pub(super) struct DirectSource<R> {
    /// The input.
    reader: R,
    /// The size of the next block.
    size: usize,
    /// How blocks are cut.
    plan: ReadPlan,
}

impl<R> DirectSource<R> {
    /// Reads `reader` in blocks as `plan` says.
    pub(super) fn new(reader: R, plan: ReadPlan) -> Self {
        DirectSource {
            reader,
            size: plan.first_block.max(1),
            plan,
        }
    }
}

impl<'a, R: Read> BlockSource<'a> for DirectSource<R> {
    fn next_block(&mut self, mut spent: Block<'a>) -> io::Result<Option<Block<'a>>> {
        spent.fill(&mut self.reader, self.size)?;
        if self.plan.prescan == Prescan::Always {
            spent.prescan();
        }
        self.size = self.plan.grow(self.size);
        Ok((spent.len > 0).then_some(spent))
    }
}

/// Blocks read by another thread and passed over a channel; spent blocks go back to it.
pub(super) struct ChannelSource<'a> {
    /// Filled blocks, in input order; closed at the end of input.
    full: Receiver<Block<'a>>,
    /// Spent blocks, back to the reader.
    spent: SyncSender<Block<'a>>,
    /// Blocks sent and not yet received.
    waiting: Arc<AtomicUsize>,
}

impl<'a> BlockSource<'a> for ChannelSource<'a> {
    fn next_block(&mut self, spent: Block<'a>) -> io::Result<Option<Block<'a>>> {
        if spent.data.capacity() > 0 || spent.mapped.is_some() {
            // The pool holds at most `POOL` blocks, so the channel has room; if the reader is
            // gone the block is simply dropped.
            let _ = self.spent.try_send(spent);
        }
        let block = self.full.recv().ok();
        if block.is_some() {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(block)
    }
}

/// Where the reading thread of [`pipelined`] gets the input for each block.
pub(super) trait Input<'a> {
    /// Makes `block`'s input the next `size` bytes, fewer only at the end of input.
    fn fill(&mut self, block: &mut Block<'a>, size: usize) -> io::Result<()>;

    /// Told that the parser is done with `block`, about to be filled again.
    fn spent(&mut self, _block: &Block<'a>) {}
}

/// The input of a reader, read into the blocks.
pub(super) struct Reading<R>(pub(super) R);

impl<'a, R: Read> Input<'a> for Reading<R> {
    fn fill(&mut self, block: &mut Block<'a>, size: usize) -> io::Result<()> {
        block.fill(&mut self.0, size)
    }
}

/// Input in memory, each block a stretch of it: nothing is copied. Where it is a mapped file,
/// the pages of a stretch the parser is done with are handed back ([`crate::mapped`]), so
/// that the file's pages do not stay in the process's memory.
pub(super) struct InMemory<'a> {
    input: &'a [u8],
    /// The map `input` is, if any.
    map: Option<&'a memmap2::Mmap>,
    /// Where the next block starts.
    at: usize,
}

impl<'a> InMemory<'a> {
    pub(super) fn mapped(map: &'a memmap2::Mmap) -> Self {
        InMemory {
            input: map,
            map: Some(map),
            at: 0,
        }
    }

    #[cfg(test)]
    pub(super) fn bytes(input: &'a [u8]) -> Self {
        InMemory {
            input,
            map: None,
            at: 0,
        }
    }
}

impl<'a> Input<'a> for InMemory<'a> {
    fn fill(&mut self, block: &mut Block<'a>, size: usize) -> io::Result<()> {
        let end = self.at.saturating_add(size).min(self.input.len());
        block.point_at(&self.input[self.at..end]);
        self.at = end;
        Ok(())
    }

    fn spent(&mut self, block: &Block<'a>) {
        if let (Some(map), Some(stretch)) = (self.map, block.mapped) {
            crate::mapped::release_slice(map, stretch);
        }
    }
}

/// Runs `parse` on a second thread, feeding it `input`'s bytes in blocks made on this one.
///
/// A read error wins over whatever the parser made of the input it got; a panic in the
/// parser is a bug and is resumed here.
///
/// `parse` must not use rayon: this thread may itself be a rayon worker (`leaks` and `diff`
/// load their dumps with `rayon::join`), which blocks here until the parser ends, so a parser
/// waiting for the pool can wait forever once every worker is blocked so (a `rayon::join` in
/// `columns::assemble` hung `leaks` on two cores).
pub(super) fn pipelined<'a, I, T, F>(
    mut input: I,
    plan: ReadPlan,
    parse: F,
) -> Result<T, ImportError>
where
    I: Input<'a>,
    T: Send,
    F: FnOnce(ChannelSource<'a>) -> Result<T, ImportError> + Send,
{
    std::thread::scope(|scope| {
        let (full_sender, full_receiver) = sync_channel::<Block<'a>>(POOL);
        let (spent_sender, spent_receiver) = sync_channel::<Block<'a>>(POOL);
        let waiting = Arc::new(AtomicUsize::new(0));
        let source = ChannelSource {
            full: full_receiver,
            spent: spent_sender,
            waiting: Arc::clone(&waiting),
        };
        let parser = std::thread::Builder::new()
            .name("heapgraph-v8-parse".to_owned())
            .spawn_scoped(scope, move || parse(source))?;
        let mut read_error = None;
        let mut allocated = 0;
        let mut size = plan.first_block.max(1);
        loop {
            let mut block = match spent_receiver.try_recv() {
                Ok(block) => block,
                Err(TryRecvError::Empty) if allocated < POOL => {
                    allocated += 1;
                    Block::default()
                }
                Err(TryRecvError::Empty) => match spent_receiver.recv() {
                    Ok(block) => block,
                    Err(_) => break,
                },
                Err(TryRecvError::Disconnected) => break,
            };
            input.spent(&block);
            if let Err(error) = input.fill(&mut block, size) {
                read_error = Some(error);
                break;
            }
            if block.len == 0 {
                break;
            }
            let prescan = match plan.prescan {
                Prescan::Never => false,
                Prescan::Always => true,
                Prescan::WhenBehind => waiting.load(Ordering::Relaxed) > 0,
            };
            if prescan {
                block.prescan();
            }
            waiting.fetch_add(1, Ordering::Relaxed);
            if full_sender.send(block).is_err() {
                break;
            }
            size = plan.grow(size);
        }
        drop(full_sender);
        drop(spent_receiver);
        let parsed = match parser.join() {
            Ok(parsed) => parsed,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        match read_error {
            Some(error) => Err(ImportError::Io(error)),
            None => parsed,
        }
    })
}

/// A read position in the input: the current block and the offset of its first byte.
pub(super) struct Cursor<'a, S> {
    /// Where blocks come from.
    source: S,
    /// The current block.
    block: Block<'a>,
    /// The position in `block`.
    pos: usize,
    /// Absolute offset of `block`'s first byte.
    block_start: u64,
    /// Whether the source has said there is no more input.
    ended: bool,
}

impl<'a, S: BlockSource<'a>> Cursor<'a, S> {
    /// A cursor at offset 0 of `source`.
    pub(super) fn new(source: S) -> Self {
        Cursor {
            source,
            block: Block::default(),
            pos: 0,
            block_start: 0,
            ended: false,
        }
    }

    /// The absolute offset of the next byte.
    pub(super) fn offset(&self) -> u64 {
        self.block_start + self.pos as u64
    }

    /// The unread bytes of the current block (empty when it is used up; see [`Self::fill`]).
    pub(super) fn rest(&self) -> &[u8] {
        self.block.bytes().get(self.pos..).unwrap_or_default()
    }

    /// The pre-scanned run of the current block if it lies ahead: its start and end
    /// relative to [`Self::rest`], and its numbers.
    pub(super) fn prescanned(&self) -> Option<(usize, usize, &[u32])> {
        let (start, end) = self.block.run?;
        let start_ahead = start.checked_sub(self.pos)?;
        Some((start_ahead, end - self.pos, &self.block.numbers))
    }

    /// Moves past `n` bytes of [`Self::rest`].
    pub(super) fn advance(&mut self, n: usize) {
        debug_assert!(n <= self.rest().len(), "advancing past the block");
        self.pos += n;
    }

    /// Makes [`Self::rest`] non-empty by moving to the next block if needed; false at the
    /// end of input.
    pub(super) fn fill(&mut self) -> Result<bool, ImportError> {
        while self.pos >= self.block.len {
            if self.ended {
                return Ok(false);
            }
            let spent = std::mem::take(&mut self.block);
            self.block_start += spent.len as u64;
            self.pos = 0;
            match self.source.next_block(spent)? {
                Some(block) => self.block = block,
                None => self.ended = true,
            }
        }
        Ok(true)
    }

    /// The next byte without consuming it, or `None` at the end of input.
    pub(super) fn peek(&mut self) -> Result<Option<u8>, ImportError> {
        Ok(if self.fill()? {
            self.rest().first().copied()
        } else {
            None
        })
    }

    /// Consumes and returns the next byte, or `None` at the end of input.
    pub(super) fn next_byte(&mut self) -> Result<Option<u8>, ImportError> {
        let byte = self.peek()?;
        if byte.is_some() {
            self.pos += 1;
        }
        Ok(byte)
    }

    /// Skips JSON whitespace and peeks at the byte after it (`None` at the end of input).
    pub(super) fn skip_whitespace(&mut self) -> Result<Option<u8>, ImportError> {
        while self.fill()? {
            let rest = self.rest();
            match rest.iter().position(|&byte| !json::is_whitespace(byte)) {
                Some(skipped) => {
                    let byte = rest[skipped];
                    self.pos += skipped;
                    return Ok(Some(byte));
                }
                None => self.pos += rest.len(),
            }
        }
        Ok(None)
    }
}
