//! Allocation snapshots: what is live, grouped by the stack that allocated it, with no references
//! between allocations. tracemalloc dumps and PyTorch CUDA snapshots both land here; a CUDA
//! snapshot also carries its allocator's segments, blocks and trace of events.

use crate::strings::{StringId, StringTable};
use hashbrown::HashTable;
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};

/// One source location of a stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The source file.
    pub filename: StringId,
    /// The line, 0 when unknown (and in tracemalloc's by-file grouping).
    pub lineno: u32,
    /// The function, where the source states it (CUDA snapshots do; tracemalloc does not).
    pub name: Option<StringId>,
}

/// A frame of a [`Stacks`] table. Dense: ids run `0..frame_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FrameId(u32);

impl FrameId {
    /// The position of this frame in its table.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A stack of a [`Stacks`] table. Dense: ids run `0..stack_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StackId(u32);

impl StackId {
    /// The position of this stack in its table.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Frames and stacks, each stored once by content. A stack lists its frames innermost (most
/// recent call) first, as both tracemalloc and torch store them.
#[derive(Clone, Default)]
pub struct Stacks {
    frames: Vec<Frame>,
    frame_lookup: FxHashMap<Frame, FrameId>,
    /// Stack `i` is `stack_frames[stack_ends[i-1]..stack_ends[i]]`.
    stack_ends: Vec<u32>,
    stack_frames: Vec<FrameId>,
    stack_lookup: HashTable<u32>,
}

fn hash_frames(frames: &[FrameId]) -> u64 {
    let mut hasher = FxHasher::default();
    frames.hash(&mut hasher);
    hasher.finish()
}

impl Stacks {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `frame`, adding it if no frame has the same content.
    ///
    /// Panics past 2³² frames.
    pub fn intern_frame(&mut self, frame: Frame) -> FrameId {
        if let Some(&id) = self.frame_lookup.get(&frame) {
            return id;
        }
        let id = FrameId(u32::try_from(self.frames.len()).expect("more than 4 billion frames"));
        self.frames.push(frame);
        self.frame_lookup.insert(frame, id);
        id
    }

    /// The id of the stack made of `frames` (innermost first), adding it if new.
    ///
    /// Panics past 2³² stacks or frame references.
    pub fn intern_stack(&mut self, frames: &[FrameId]) -> StackId {
        let hash = hash_frames(frames);
        let found = self
            .stack_lookup
            .find(hash, |&id| self.stack_range(id) == frames)
            .copied();
        if let Some(id) = found {
            return StackId(id);
        }
        let id = u32::try_from(self.stack_ends.len()).expect("more than 4 billion stacks");
        self.stack_frames.extend_from_slice(frames);
        let end = u32::try_from(self.stack_frames.len()).expect("more than 4 billion frames");
        self.stack_ends.push(end);
        let Stacks {
            stack_ends,
            stack_frames,
            stack_lookup,
            ..
        } = self;
        stack_lookup.insert_unique(hash, id, |&other| {
            hash_frames(range_of(stack_ends, stack_frames, other))
        });
        StackId(id)
    }

    fn stack_range(&self, id: u32) -> &[FrameId] {
        range_of(&self.stack_ends, &self.stack_frames, id)
    }

    /// The frames of `stack`, innermost first.
    ///
    /// Panics if `stack` came from another table.
    pub fn frames_of(&self, stack: StackId) -> &[FrameId] {
        self.stack_range(stack.0)
    }

    /// The content of `frame`.
    ///
    /// Panics if `frame` came from another table.
    pub fn frame(&self, frame: FrameId) -> &Frame {
        &self.frames[frame.index()]
    }

    /// The number of distinct stacks.
    pub fn stack_count(&self) -> usize {
        self.stack_ends.len()
    }

    /// The number of distinct frames.
    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// Every frame id, in id order.
    pub fn frame_ids(&self) -> impl Iterator<Item = FrameId> + use<> {
        (0..self.frames.len() as u32).map(FrameId)
    }

    /// Every stack id, in id order.
    pub fn stack_ids(&self) -> impl Iterator<Item = StackId> + use<> {
        (0..self.stack_ends.len() as u32).map(StackId)
    }
}

fn range_of<'a>(ends: &[u32], frames: &'a [FrameId], id: u32) -> &'a [FrameId] {
    let id = id as usize;
    let start = if id == 0 { 0 } else { ends[id - 1] as usize };
    &frames[start..ends[id] as usize]
}

/// Where an allocation snapshot came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocSource {
    /// CPython's tracemalloc (`Snapshot.dump`).
    Tracemalloc,
    /// PyTorch's CUDA caching allocator (`torch.cuda.memory._dump_snapshot`).
    TorchCuda,
    /// heapgraph's Rust allocation recorder (`heapgraph_capture::snapshot`).
    RustAlloc,
}

impl AllocSource {
    /// The name used in output (`tracemalloc`, `torch-cuda`, `rust-alloc`).
    pub fn name(self) -> &'static str {
        match self {
            AllocSource::Tracemalloc => "tracemalloc",
            AllocSource::TorchCuda => "torch-cuda",
            AllocSource::RustAlloc => "rust-alloc",
        }
    }
}

/// What is known about an allocation snapshot as a whole.
#[derive(Clone, Debug)]
pub struct AllocMeta {
    /// The allocator that recorded it.
    pub source: AllocSource,
    /// The file format it was read from (`tracemalloc-pickle`, `torch-cuda-pickle`,
    /// `heapgraph-alloc`).
    pub source_format: String,
    /// tracemalloc's `traceback_limit`: the most frames a stack keeps.
    pub traceback_limit: Option<u32>,
    /// Notes about the snapshot: what was missing, what was skipped.
    pub notes: Vec<String>,
}

/// Live allocations that share a stack (and a tracemalloc domain, or a CUDA device).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveSite {
    /// The allocating stack.
    pub stack: StackId,
    /// tracemalloc's address space (0 is Python's allocator), or the CUDA device.
    pub domain: u64,
    /// Bytes live: requested bytes for tracemalloc, block bytes for CUDA.
    pub bytes: u64,
    /// Allocations live.
    pub count: u64,
}

/// A snapshot of live allocations by stack.
#[derive(Clone)]
pub struct AllocSnapshot {
    /// Where it came from.
    pub meta: AllocMeta,
    /// File names, function names and the CUDA snapshot's labels.
    pub strings: StringTable,
    /// The allocating stacks.
    pub stacks: Stacks,
    /// Live allocations grouped by (stack, domain), each pair once.
    pub sites: Vec<LiveSite>,
    /// The allocator's own state, for CUDA snapshots.
    pub cuda: Option<CudaState>,
}

impl AllocSnapshot {
    /// Σ bytes over the live sites.
    pub fn total_bytes(&self) -> u64 {
        self.sites.iter().map(|site| site.bytes).sum()
    }

    /// Σ allocations over the live sites.
    pub fn total_count(&self) -> u64 {
        self.sites.iter().map(|site| site.count).sum()
    }
}

/// The state of a block of the caching allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// Held by a tensor.
    ActiveAllocated,
    /// Freed by its tensor, still in use by another stream until an event completes.
    ActivePendingFree,
    /// Cached and free for reuse.
    Inactive,
    /// A state this version of heapgraph does not know, kept as written.
    Other(StringId),
}

impl BlockState {
    /// Whether the block counts as allocated (`torch.cuda.memory_allocated`).
    pub fn is_active(self) -> bool {
        matches!(
            self,
            BlockState::ActiveAllocated | BlockState::ActivePendingFree
        )
    }
}

/// One block of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Device address.
    pub address: u64,
    /// Bytes the block occupies in its segment (rounded and split).
    pub size: u64,
    /// Bytes its caller asked for.
    pub requested_size: u64,
    /// Allocated, pending, or free.
    pub state: BlockState,
    /// The stack that allocated it (empty when not recorded).
    pub stack: StackId,
    /// The index of its segment in [`CudaState::segments`].
    pub segment: u32,
}

/// One `cudaMalloc` (or one expandable segment), tiled by its blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// CUDA device ordinal.
    pub device: u32,
    /// Device address of its first byte.
    pub address: u64,
    /// Bytes reserved.
    pub total_size: u64,
    /// Bytes in use by tensors, as the snapshot states it.
    pub allocated_size: u64,
    /// The stream it belongs to.
    pub stream: u64,
    /// `large` or `small` pool.
    pub segment_type: StringId,
    /// The memory pool (`(0, 0)` is the default one; others are CUDA graphs' and `MemPool`s').
    pub pool: (i64, i64),
    /// Whether it is an expandable segment.
    pub is_expandable: bool,
    /// The stack of the allocation that created it.
    pub stack: StackId,
    /// Its blocks are `blocks[first_block .. first_block + block_count]`.
    pub first_block: u32,
    /// How many blocks it has.
    pub block_count: u32,
}

/// What happened in a trace event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceAction {
    /// A block was handed to a tensor.
    Alloc,
    /// A tensor freed its block (which may still be pending on other streams).
    FreeRequested,
    /// The block went back to the cache.
    FreeCompleted,
    /// `cudaMalloc` of a segment.
    SegmentAlloc,
    /// `cudaFree` of a segment.
    SegmentFree,
    /// An expandable segment grew.
    SegmentMap,
    /// An expandable segment shrank.
    SegmentUnmap,
    /// An allocation failed.
    Oom,
    /// A snapshot was taken.
    Snapshot,
    /// Any other action, kept as written.
    Other(StringId),
}

/// One entry of a device's trace ring buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// CUDA device ordinal.
    pub device: u32,
    /// What happened.
    pub action: TraceAction,
    /// The address concerned (absent for `oom`).
    pub address: Option<u64>,
    /// Bytes: requested bytes for block events, segment bytes for segment events.
    pub size: u64,
    /// The stream.
    pub stream: u64,
    /// Microseconds since the Unix epoch.
    pub time_us: i64,
    /// The stack of the event (empty when not recorded).
    pub stack: StackId,
    /// For `oom`: the bytes CUDA reported free on the device.
    pub device_free: Option<u64>,
}

/// A CUDA caching allocator's state: segments, blocks, trace and settings.
#[derive(Clone, Debug, Default)]
pub struct CudaState {
    /// Segments in the snapshot's order.
    pub segments: Vec<Segment>,
    /// Blocks, segment by segment, in address order within each.
    pub blocks: Vec<Block>,
    /// Trace events, device by device, each device's in time order.
    pub trace: Vec<TraceEvent>,
    /// The allocator's settings (`PYTORCH_CUDA_ALLOC_CONF`, `max_split_size`, …), rendered as text.
    pub settings: Vec<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_are_stored_once_by_content() {
        let mut strings = StringTable::new();
        let file = strings.intern("a.py");
        let mut stacks = Stacks::new();
        let f1 = stacks.intern_frame(Frame {
            filename: file,
            lineno: 1,
            name: None,
        });
        let f2 = stacks.intern_frame(Frame {
            filename: file,
            lineno: 2,
            name: None,
        });
        assert_eq!(
            stacks.intern_frame(Frame {
                filename: file,
                lineno: 1,
                name: None
            }),
            f1
        );
        let s12 = stacks.intern_stack(&[f1, f2]);
        let s21 = stacks.intern_stack(&[f2, f1]);
        let empty = stacks.intern_stack(&[]);
        assert_ne!(s12, s21);
        assert_eq!(stacks.intern_stack(&[f1, f2]), s12);
        assert_eq!(stacks.intern_stack(&[]), empty);
        assert_eq!(stacks.frames_of(s21), &[f2, f1]);
        assert!(stacks.frames_of(empty).is_empty());
        assert_eq!(stacks.stack_count(), 3);
    }
}
