//! What filled a GPU: a CUDA caching allocator's snapshot read as allocated against reserved,
//! the largest live blocks and the code that allocated them, fragmentation, the failed request
//! of an out-of-memory event, and the allocated and reserved bytes over time from the trace.

use crate::sites::{
    SiteFrame, SiteKey, SiteOptions, SiteRow, fold_frames, site_frames, statistics,
};
use heapgraph_model::{AllocSnapshot, BlockState, CudaState, StackId, TraceAction};

/// How much of the snapshot to list.
#[derive(Clone, Debug)]
pub struct GpuOptions {
    /// Rows of the largest-blocks, by-stack and segment tables.
    pub n: usize,
    /// Keep library frames (torch, the standard library) in stacks.
    pub all_frames: bool,
    /// Include the allocated/reserved timeline from the trace.
    pub timeline: bool,
    /// How the table of live memory by site groups and filters allocations, as `top` does
    /// (by the whole stack, [`SiteKey::Traceback`], unless asked otherwise). Its
    /// `user_frames_only` is the caller's: the binary sets it to `!all_frames`.
    pub sites: SiteOptions,
}

/// A live block and the code that allocated it.
#[derive(Clone, Debug)]
pub struct GpuBlock {
    /// Device address.
    pub address: u64,
    /// Bytes it occupies.
    pub size: u64,
    /// Bytes its caller asked for.
    pub requested_size: u64,
    /// `active_allocated` or `active_pending_free`.
    pub state: String,
    /// The allocating stack, most recent call first.
    pub frames: Vec<SiteFrame>,
}

/// A segment with free room.
#[derive(Clone, Debug)]
pub struct SegmentFree {
    /// CUDA device ordinal.
    pub device: u32,
    /// Device address.
    pub address: u64,
    /// Bytes reserved.
    pub total_size: u64,
    /// Bytes in inactive blocks.
    pub free_bytes: u64,
    /// The largest inactive block.
    pub largest_free_block: u64,
    /// `large` or `small` pool.
    pub segment_type: String,
}

/// The last out-of-memory event of the trace.
#[derive(Clone, Debug)]
pub struct OomView {
    /// Bytes the failed call asked for.
    pub requested_bytes: u64,
    /// The memory cap, when the snapshot states it (torch's trace does not).
    pub cap_bytes: Option<u64>,
    /// Bytes CUDA reported free on the device at the failure.
    pub device_free: Option<u64>,
    /// When it happened, microseconds since the Unix epoch.
    pub time_us: i64,
    /// The failed call's stack.
    pub frames: Vec<SiteFrame>,
    /// Allocated bytes at that moment (requested bytes, from the trace).
    pub allocated_at: i64,
    /// Reserved bytes at that moment.
    pub reserved_at: i64,
    /// Trace events after it: 0 means the snapshot shows the moment of the failure.
    pub events_after: usize,
}

/// One point of the timeline: the state after an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimelinePoint {
    /// Microseconds since the Unix epoch.
    pub time_us: i64,
    /// Bytes allocated (as requested by callers).
    pub allocated: i64,
    /// Bytes reserved in segments.
    pub reserved: i64,
}

/// What the trace covers.
#[derive(Clone, Debug)]
pub struct TraceSummary {
    /// Events in all devices' traces.
    pub entries: usize,
    /// Events by action, in first-seen order.
    pub actions: Vec<(String, u64)>,
    /// Requested bytes already allocated before the first event (0 when the trace saw
    /// everything; more when recording started late or the ring buffer dropped old events).
    pub allocated_before: i64,
    /// Reserved bytes before the first event.
    pub reserved_before: i64,
    /// The highest allocated bytes over the trace.
    pub peak_allocated: i64,
    /// The highest reserved bytes over the trace.
    pub peak_reserved: i64,
}

/// The `gpu` view.
#[derive(Clone, Debug)]
pub struct GpuView {
    /// Σ size of active blocks: `torch.cuda.memory_allocated()`.
    pub allocated_bytes: u64,
    /// Σ segment sizes: `torch.cuda.memory_reserved()`.
    pub reserved_bytes: u64,
    /// Σ requested size of active blocks.
    pub requested_bytes: u64,
    /// Segments.
    pub segments: usize,
    /// Blocks.
    pub blocks: usize,
    /// Active blocks.
    pub active_blocks: usize,
    /// Σ size of inactive (cached, free) blocks.
    pub inactive_bytes: u64,
    /// Σ size of blocks freed but pending on another stream.
    pub pending_free_bytes: u64,
    /// The largest inactive block: the largest request the cache can serve without `cudaMalloc`.
    pub largest_free_block: u64,
    /// The largest live blocks.
    pub largest_blocks: Vec<GpuBlock>,
    /// Live bytes grouped by allocating stack (or by line or file, as [`GpuView::by`] says),
    /// filtered as [`GpuOptions::sites`] asks.
    pub by_stack: Vec<SiteRow>,
    /// What `by_stack` groups by.
    pub by: SiteKey,
    /// Segments with the most free bytes.
    pub segments_with_free: Vec<SegmentFree>,
    /// The last out-of-memory event, if the trace has one.
    pub oom: Option<OomView>,
    /// What the trace covers, if there is a trace.
    pub trace: Option<TraceSummary>,
    /// Allocated and reserved over time, when asked for.
    pub timeline: Option<Vec<TimelinePoint>>,
    /// The allocator's settings.
    pub settings: Vec<(String, String)>,
    /// Notes from the import.
    pub notes: Vec<String>,
}

fn state_name(snapshot: &AllocSnapshot, state: BlockState) -> String {
    match state {
        BlockState::ActiveAllocated => "active_allocated".to_owned(),
        BlockState::ActivePendingFree => "active_pending_free".to_owned(),
        BlockState::Inactive => "inactive".to_owned(),
        BlockState::Other(name) => snapshot.strings.get(name).to_owned(),
    }
}

/// The frames of `stack`, most recent call first, folded unless `all_frames`: the frames
/// PyTorch's own viewer hides (the unwinder, the interpreter's machinery), then library frames.
pub fn stack_frames(snapshot: &AllocSnapshot, stack: StackId, all_frames: bool) -> Vec<SiteFrame> {
    let mut frames = site_frames(snapshot, stack);
    if !all_frames {
        fold_frames(snapshot.meta.source, &mut frames);
    }
    frames
}

/// Replays the trace into (allocated, reserved) after each event, anchored so that the last
/// point is the snapshot's own state: a trace that starts late still ends where the allocator is.
/// `order` lists the events in time order.
fn replay(
    cuda: &CudaState,
    order: &[usize],
    requested_end: u64,
    reserved_end: u64,
) -> (Vec<TimelinePoint>, i64, i64) {
    let (mut allocated, mut reserved) = (0i64, 0i64);
    let mut points = Vec::with_capacity(order.len());
    for &i in order {
        let event = &cuda.trace[i];
        let size = i64::try_from(event.size).unwrap_or(i64::MAX);
        match event.action {
            TraceAction::Alloc => allocated += size,
            TraceAction::FreeCompleted => allocated -= size,
            TraceAction::SegmentAlloc | TraceAction::SegmentMap => reserved += size,
            TraceAction::SegmentFree | TraceAction::SegmentUnmap => reserved -= size,
            _ => {}
        }
        points.push(TimelinePoint {
            time_us: event.time_us,
            allocated,
            reserved,
        });
    }
    let allocated_before = i64::try_from(requested_end).unwrap_or(i64::MAX) - allocated;
    let reserved_before = i64::try_from(reserved_end).unwrap_or(i64::MAX) - reserved;
    for point in &mut points {
        point.allocated += allocated_before;
        point.reserved += reserved_before;
    }
    (points, allocated_before, reserved_before)
}

/// The `gpu` view of a CUDA snapshot; `None` for other allocation snapshots.
pub fn gpu(snapshot: &AllocSnapshot, options: &GpuOptions) -> Option<GpuView> {
    let cuda = snapshot.cuda.as_ref()?;
    let mut view = GpuView {
        allocated_bytes: 0,
        reserved_bytes: cuda.segments.iter().map(|s| s.total_size).sum(),
        requested_bytes: 0,
        segments: cuda.segments.len(),
        blocks: cuda.blocks.len(),
        active_blocks: 0,
        inactive_bytes: 0,
        pending_free_bytes: 0,
        largest_free_block: 0,
        largest_blocks: Vec::new(),
        by_stack: Vec::new(),
        by: options.sites.key,
        segments_with_free: Vec::new(),
        oom: None,
        trace: None,
        timeline: None,
        settings: cuda.settings.clone(),
        notes: snapshot.meta.notes.clone(),
    };
    for block in &cuda.blocks {
        match block.state {
            BlockState::Inactive => {
                view.inactive_bytes += block.size;
                view.largest_free_block = view.largest_free_block.max(block.size);
            }
            state if state.is_active() => {
                view.allocated_bytes += block.size;
                view.requested_bytes += block.requested_size;
                view.active_blocks += 1;
                if state == BlockState::ActivePendingFree {
                    view.pending_free_bytes += block.size;
                }
            }
            _ => {}
        }
    }

    let mut active: Vec<usize> = (0..cuda.blocks.len())
        .filter(|&i| cuda.blocks[i].state.is_active())
        .collect();
    active.sort_by_key(|&i| {
        (
            std::cmp::Reverse(cuda.blocks[i].size),
            cuda.blocks[i].address,
        )
    });
    view.largest_blocks = active
        .iter()
        .take(options.n)
        .map(|&i| {
            let block = &cuda.blocks[i];
            GpuBlock {
                address: block.address,
                size: block.size,
                requested_size: block.requested_size,
                state: state_name(snapshot, block.state),
                frames: stack_frames(snapshot, block.stack, options.all_frames),
            }
        })
        .collect();

    let mut by_stack = statistics(snapshot, &options.sites).rows;
    by_stack.truncate(options.n);
    view.by_stack = by_stack;

    let mut with_free: Vec<SegmentFree> = cuda
        .segments
        .iter()
        .map(|segment| {
            let blocks =
                &cuda.blocks[segment.first_block as usize..][..segment.block_count as usize];
            let free = blocks.iter().filter(|b| b.state == BlockState::Inactive);
            SegmentFree {
                device: segment.device,
                address: segment.address,
                total_size: segment.total_size,
                free_bytes: free.clone().map(|b| b.size).sum(),
                largest_free_block: free.map(|b| b.size).max().unwrap_or(0),
                segment_type: snapshot.strings.get(segment.segment_type).to_owned(),
            }
        })
        .filter(|segment| segment.free_bytes > 0)
        .collect();
    with_free.sort_by_key(|s| (std::cmp::Reverse(s.free_bytes), s.address));
    with_free.truncate(options.n);
    view.segments_with_free = with_free;

    if !cuda.trace.is_empty() {
        // Devices' traces one after the other; the timeline merges them by time (stable).
        let mut order: Vec<usize> = (0..cuda.trace.len()).collect();
        order.sort_by_key(|&i| cuda.trace[i].time_us);
        let (points, allocated_before, reserved_before) =
            replay(cuda, &order, view.requested_bytes, view.reserved_bytes);
        let mut actions: Vec<(String, u64)> = Vec::new();
        for event in &cuda.trace {
            let name = match event.action {
                TraceAction::Alloc => "alloc",
                TraceAction::FreeRequested => "free_requested",
                TraceAction::FreeCompleted => "free_completed",
                TraceAction::SegmentAlloc => "segment_alloc",
                TraceAction::SegmentFree => "segment_free",
                TraceAction::SegmentMap => "segment_map",
                TraceAction::SegmentUnmap => "segment_unmap",
                TraceAction::Oom => "oom",
                TraceAction::Snapshot => "snapshot",
                TraceAction::Other(name) => snapshot.strings.get(name),
            };
            match actions.iter_mut().find(|(known, _)| known == name) {
                Some((_, count)) => *count += 1,
                None => actions.push((name.to_owned(), 1)),
            }
        }
        view.trace = Some(TraceSummary {
            entries: cuda.trace.len(),
            actions,
            allocated_before,
            reserved_before,
            peak_allocated: points.iter().map(|p| p.allocated).max().unwrap_or(0),
            peak_reserved: points.iter().map(|p| p.reserved).max().unwrap_or(0),
        });
        if let Some(at) = order
            .iter()
            .rposition(|&i| cuda.trace[i].action == TraceAction::Oom)
        {
            let event = &cuda.trace[order[at]];
            view.oom = Some(OomView {
                requested_bytes: event.size,
                cap_bytes: None,
                device_free: event.device_free,
                time_us: event.time_us,
                frames: stack_frames(snapshot, event.stack, options.all_frames),
                allocated_at: points[at].allocated,
                reserved_at: points[at].reserved,
                events_after: order.len() - at - 1,
            });
        }
        if options.timeline {
            view.timeline = Some(points);
        }
    }
    Some(view)
}
