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

#[cfg(test)]
mod tests {
    //! Small snapshots shaped as `fixtures/torch-cuda/oom_batch_growth.pickle.gz` is (torch 2.11
    //! on an H200: batches doubled under a 2% memory cap until a 256 MiB request failed, dumped
    //! from the OOM observer with the allocator's trace; 2.64 GiB allocated of 2.69 GiB
    //! reserved, so the cache could not have served it), scaled down: a large-pool segment
    //! split into live and cached blocks, a small-pool segment with a block pending on another
    //! stream, and a trace that ends in an `oom` event with the real request and `device_free`.
    //! Every expected number is worked out by hand below.

    use super::*;
    use crate::findings::{Finding, OomCause};
    use crate::sites::SiteOptions;
    use heapgraph_model::{
        AllocMeta, AllocSource, Block, Frame, LiveSite, Segment, Stacks, StringTable, TraceEvent,
    };

    const MIB: u64 = 1 << 20;
    /// The failed request of the real snapshot: 256 MiB.
    const OOM_REQUEST: u64 = 268_435_456;
    /// What CUDA reported free on the H200 at the failure (the fixture's `oom_observer`).
    const DEVICE_FREE: u64 = 146_439_012_352;

    /// Two segments on device 0:
    ///
    /// | segment | pool  | size   | blocks                                                        |
    /// |---------|-------|--------|---------------------------------------------------------------|
    /// | S0      | large | 20 MiB | B0 8 MiB allocated (model), B1 2 MiB free, B2 10 MiB allocated (batch, 10,000,000 asked) |
    /// | S1      | small | 2 MiB  | B3 512 B pending free (batch, 500 asked), B4 2 MiB − 512 free |
    ///
    /// The batch's stack has a torch frame under the user's line, which the view folds away.
    fn shape(trace: Vec<(u32, TraceAction, u64, i64)>) -> AllocSnapshot {
        let mut strings = StringTable::new();
        let mut stacks = Stacks::new();
        let mut frame = |strings: &mut StringTable, file: &str, line: u32, name: &str| {
            let filename = strings.intern(file);
            let name = Some(strings.intern(name));
            stacks.intern_frame(Frame {
                filename,
                lineno: line,
                name,
            })
        };
        let train = frame(&mut strings, "/app/train.py", 40, "main");
        let load = frame(&mut strings, "/app/train.py", 12, "load_model");
        let forward = frame(&mut strings, "/app/train.py", 27, "step");
        let linear = frame(
            &mut strings,
            "/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py",
            125,
            "forward",
        );
        let model_stack = stacks.intern_stack(&[load, train]);
        let batch_stack = stacks.intern_stack(&[linear, forward, train]);
        let empty = stacks.intern_stack(&[]);
        let large = strings.intern("large");
        let small = strings.intern("small");
        let block = |address, size, requested_size, state, stack, segment| Block {
            address,
            size,
            requested_size,
            state,
            stack,
            segment,
        };
        let s0 = 0x7f00_0000_0000;
        let s1 = 0x7f00_0200_0000;
        let blocks = vec![
            block(
                s0,
                8 * MIB,
                8 * MIB,
                BlockState::ActiveAllocated,
                model_stack,
                0,
            ),
            block(s0 + 8 * MIB, 2 * MIB, 0, BlockState::Inactive, empty, 0),
            block(
                s0 + 10 * MIB,
                10 * MIB,
                10_000_000,
                BlockState::ActiveAllocated,
                batch_stack,
                0,
            ),
            block(s1, 512, 500, BlockState::ActivePendingFree, batch_stack, 1),
            block(s1 + 512, 2 * MIB - 512, 0, BlockState::Inactive, empty, 1),
        ];
        let segment = |address, total_size, allocated_size, segment_type, first_block| Segment {
            device: 0,
            address,
            total_size,
            allocated_size,
            stream: 0,
            segment_type,
            pool: (0, 0),
            is_expandable: false,
            stack: empty,
            first_block,
            block_count: if first_block == 0 { 3 } else { 2 },
        };
        let segments = vec![
            segment(s0, 20 * MIB, 18 * MIB, large, 0),
            segment(s1, 2 * MIB, 512, small, 3),
        ];
        let trace = trace
            .into_iter()
            .map(|(device, action, size, time_us)| TraceEvent {
                device,
                action,
                address: None,
                size,
                stream: 0,
                time_us,
                stack: if action == TraceAction::Oom {
                    batch_stack
                } else {
                    empty
                },
                device_free: (action == TraceAction::Oom).then_some(DEVICE_FREE),
            })
            .collect();
        // The live sites, as the importer folds the active blocks: bytes of blocks per stack.
        let sites = vec![
            LiveSite {
                stack: model_stack,
                domain: 0,
                bytes: 8 * MIB,
                count: 1,
            },
            LiveSite {
                stack: batch_stack,
                domain: 0,
                bytes: 10 * MIB + 512,
                count: 2,
            },
        ];
        AllocSnapshot {
            meta: AllocMeta {
                source: AllocSource::TorchCuda,
                source_format: "torch-cuda-pickle".to_owned(),
                traceback_limit: None,
                notes: Vec::new(),
            },
            strings,
            stacks,
            sites,
            cuda: Some(CudaState {
                segments,
                blocks,
                trace,
                settings: Vec::new(),
            }),
        }
    }

    fn options(n: usize) -> GpuOptions {
        let mut sites = SiteOptions::new(SiteKey::Traceback);
        sites.user_frames_only = true;
        GpuOptions {
            n,
            all_frames: false,
            timeline: true,
            sites,
        }
    }

    fn lines(frames: &[SiteFrame]) -> Vec<u32> {
        frames.iter().map(|frame| frame.lineno).collect()
    }

    #[test]
    fn segments_and_blocks_add_up_as_the_allocator_counts_them() {
        let snapshot = shape(Vec::new());
        let view = gpu(&snapshot, &options(1)).expect("a CUDA snapshot");
        // memory_reserved: 20 MiB + 2 MiB.
        assert_eq!(view.reserved_bytes, 23_068_672);
        // memory_allocated: the active blocks, pending ones included: 8 MiB + 10 MiB + 512.
        assert_eq!(view.allocated_bytes, 18_874_880);
        // What their callers asked for: 8 MiB + 10,000,000 + 500.
        assert_eq!(view.requested_bytes, 18_389_108);
        assert_eq!((view.segments, view.blocks, view.active_blocks), (2, 5, 3));
        // The cache: 2 MiB in S0 and 2 MiB − 512 in S1; the pending block is not in it.
        assert_eq!(view.inactive_bytes, 4_193_792);
        assert_eq!(view.pending_free_bytes, 512);
        assert_eq!(view.largest_free_block, 2 * MIB);
        // Reserved = allocated + cached.
        assert_eq!(
            view.reserved_bytes,
            view.allocated_bytes + view.inactive_bytes
        );
        // -n 1: the largest live block is the batch's 10 MiB, its torch frame folded away.
        assert_eq!(view.largest_blocks.len(), 1);
        let largest = &view.largest_blocks[0];
        assert_eq!(
            (largest.size, largest.requested_size),
            (10 * MIB, 10_000_000)
        );
        assert_eq!(largest.state, "active_allocated");
        assert_eq!(lines(&largest.frames), [27, 40]);
        // The segment with the most free bytes: S0 (2 MiB against S1's 2 MiB − 512).
        assert_eq!(view.segments_with_free.len(), 1);
        let free = &view.segments_with_free[0];
        assert_eq!(
            (free.address, free.total_size),
            (0x7f00_0000_0000, 20 * MIB)
        );
        assert_eq!(
            (free.free_bytes, free.largest_free_block),
            (2 * MIB, 2 * MIB)
        );
        assert_eq!(free.segment_type, "large");
        // By stack: the batch's two blocks (10 MiB + 512) before the model's 8 MiB.
        let by_stack: Vec<(Vec<u32>, u64, u64)> = view
            .by_stack
            .iter()
            .map(|row| (lines(&row.frames), row.size, row.count))
            .collect();
        assert_eq!(by_stack, [(vec![27, 40], 10 * MIB + 512, 2)]);
        // No trace, so no out-of-memory diagnosis and no timeline.
        assert!(view.oom.is_none() && view.trace.is_none() && view.timeline.is_none());
    }

    #[test]
    fn every_block_of_every_segment_is_listed_by_size_then_address() {
        let snapshot = shape(Vec::new());
        let view = gpu(&snapshot, &options(10)).expect("a CUDA snapshot");
        let blocks: Vec<(u64, &str)> = view
            .largest_blocks
            .iter()
            .map(|block| (block.size, block.state.as_str()))
            .collect();
        assert_eq!(
            blocks,
            [
                (10 * MIB, "active_allocated"),
                (8 * MIB, "active_allocated"),
                (512, "active_pending_free")
            ]
        );
        let free: Vec<(u64, u64)> = view
            .segments_with_free
            .iter()
            .map(|segment| (segment.address, segment.free_bytes))
            .collect();
        assert_eq!(
            free,
            [
                (0x7f00_0000_0000, 2 * MIB),
                (0x7f00_0200_0000, 2 * MIB - 512)
            ]
        );
        assert_eq!(view.by_stack.len(), 2);
        assert_eq!(
            (view.by_stack[1].size, view.by_stack[1].count),
            (8 * MIB, 1)
        );
    }

    #[test]
    fn the_oom_is_diagnosed_at_the_moment_it_failed() {
        // The whole life of the allocator, recorded: S0 reserved, the model loaded, S1
        // reserved, the batch's two blocks, one of them freed on another stream, then the
        // 256 MiB request that failed.
        let snapshot = shape(vec![
            (0, TraceAction::SegmentAlloc, 20 * MIB, 100),
            (0, TraceAction::Alloc, 8 * MIB, 110),
            (0, TraceAction::SegmentAlloc, 2 * MIB, 120),
            (0, TraceAction::Alloc, 500, 130),
            (0, TraceAction::Alloc, 10_000_000, 140),
            (0, TraceAction::FreeRequested, 500, 150),
            (0, TraceAction::Oom, OOM_REQUEST, 160),
        ]);
        let view = gpu(&snapshot, &options(5)).expect("a CUDA snapshot");
        let oom = view.oom.expect("the trace has an oom event");
        assert_eq!(oom.requested_bytes, OOM_REQUEST);
        assert_eq!(oom.device_free, Some(DEVICE_FREE));
        assert_eq!(oom.cap_bytes, None);
        assert_eq!(oom.time_us, 160);
        // At the failure: 8 MiB + 500 + 10,000,000 asked for (the free was only requested),
        // in 20 MiB + 2 MiB reserved; the snapshot was taken at that moment.
        assert_eq!(
            (oom.allocated_at, oom.reserved_at),
            (18_389_108, 23_068_672)
        );
        assert_eq!(oom.events_after, 0);
        assert_eq!(lines(&oom.frames), [27, 40]);
        let trace = view.trace.expect("a trace");
        assert_eq!(trace.entries, 7);
        // The trace saw everything, so nothing was allocated or reserved before it.
        assert_eq!((trace.allocated_before, trace.reserved_before), (0, 0));
        assert_eq!(
            (trace.peak_allocated, trace.peak_reserved),
            (18_389_108, 23_068_672)
        );
        let actions: Vec<(&str, u64)> = trace
            .actions
            .iter()
            .map(|(name, n)| (name.as_str(), *n))
            .collect();
        assert_eq!(
            actions,
            [
                ("segment_alloc", 2),
                ("alloc", 3),
                ("free_requested", 1),
                ("oom", 1)
            ]
        );
        let timeline: Vec<(i64, i64)> = view
            .timeline
            .expect("asked for")
            .iter()
            .map(|point| (point.allocated, point.reserved))
            .collect();
        assert_eq!(
            timeline,
            [
                (0, 20_971_520),
                (8_388_608, 20_971_520),
                (8_388_608, 23_068_672),
                (8_389_108, 23_068_672),
                (18_389_108, 23_068_672),
                (18_389_108, 23_068_672),
                (18_389_108, 23_068_672),
            ]
        );
    }

    #[test]
    fn a_trace_that_starts_late_is_anchored_to_the_snapshot_and_merged_by_time() {
        // The ring buffer kept only the batch's 10 MiB allocation onwards; after the failure
        // a 1,000-byte block came and went. Device 1's one event comes after device 0's in the
        // file but at 150 µs in time, before the failure.
        let snapshot = shape(vec![
            (0, TraceAction::Alloc, 10_000_000, 140),
            (0, TraceAction::Oom, OOM_REQUEST, 160),
            (0, TraceAction::Alloc, 1_000, 170),
            (0, TraceAction::FreeCompleted, 1_000, 180),
            (1, TraceAction::FreeRequested, 0, 150),
        ]);
        let view = gpu(&snapshot, &options(5)).expect("a CUDA snapshot");
        let trace = view.trace.expect("a trace");
        // Asked for before the trace began: 18,389,108 − 10,000,000 (the model's 8 MiB and the
        // 500 bytes); reserved before it: all 22 MiB, since no segment event was kept.
        assert_eq!(
            (trace.allocated_before, trace.reserved_before),
            (8_389_108, 23_068_672)
        );
        // The peak: the 1,000-byte block on top of everything, after the failure.
        assert_eq!(trace.peak_allocated, 18_390_108);
        let oom = view.oom.expect("the trace has an oom event");
        assert_eq!(oom.allocated_at, 18_389_108);
        assert_eq!(oom.reserved_at, 23_068_672);
        // In time order the failure is the third of five events: two came after it.
        assert_eq!(oom.events_after, 2);
        let actions: Vec<(&str, u64)> = trace
            .actions
            .iter()
            .map(|(name, n)| (name.as_str(), *n))
            .collect();
        assert_eq!(
            actions,
            [
                ("alloc", 2),
                ("oom", 1),
                ("free_completed", 1),
                ("free_requested", 1)
            ]
        );
        let times: Vec<i64> = view
            .timeline
            .expect("asked for")
            .iter()
            .map(|point| point.time_us)
            .collect();
        assert_eq!(times, [140, 150, 160, 170, 180]);
    }

    /// The OOM finding for a failed request of `requested` bytes at the end of the full trace.
    fn oom_finding(requested: u64) -> (OomCause, Vec<crate::findings::Finding>) {
        let snapshot = shape(vec![
            (0, TraceAction::SegmentAlloc, 20 * MIB, 100),
            (0, TraceAction::Alloc, 8 * MIB, 110),
            (0, TraceAction::SegmentAlloc, 2 * MIB, 120),
            (0, TraceAction::Alloc, 500, 130),
            (0, TraceAction::Alloc, 10_000_000, 140),
            (0, TraceAction::Oom, requested, 160),
        ]);
        let view = gpu(&snapshot, &options(5)).expect("a CUDA snapshot");
        let findings = crate::findings::gpu(&view);
        let cause = match findings.first() {
            Some(Finding::GpuOom { cause, .. }) => *cause,
            other => panic!("the first finding is not the OOM: {other:?}"),
        };
        (cause, findings)
    }

    #[test]
    fn a_request_larger_than_all_the_cache_holds_is_a_full_device() {
        // The real failure: 256 MiB asked, 4,193,792 bytes cached in all.
        let (cause, findings) = oom_finding(OOM_REQUEST);
        assert_eq!(cause, OomCause::DeviceFull);
        let Finding::GpuOom {
            requested,
            device_free,
            allocated_at,
            reserved_at,
            largest_free_block,
            frames,
            held_by,
            ..
        } = &findings[0]
        else {
            unreachable!("checked by oom_finding");
        };
        assert_eq!((*requested, *device_free), (OOM_REQUEST, Some(DEVICE_FREE)));
        assert_eq!((*allocated_at, *reserved_at), (18_389_108, 23_068_672));
        assert_eq!(*largest_free_block, 2 * MIB);
        assert_eq!(lines(frames), [27, 40]);
        // What holds the most: the batch's stack, 10 MiB + 512 in two blocks.
        let (held_frames, held) = held_by.as_ref().expect("a stack holds memory");
        assert_eq!((lines(held_frames), *held), (vec![27, 40], 10 * MIB + 512));
        // And the allocation finding: that stack's share of 18,874,880 allocated bytes.
        assert!(matches!(
            &findings[1],
            Finding::Allocation { size, total, .. } if (*size, *total) == (10 * MIB + 512, 18_874_880)
        ));
        assert_eq!(findings.len(), 2);
    }

    #[test]
    fn a_request_the_cache_holds_in_pieces_too_small_is_fragmentation() {
        // 4,193,792 bytes cached, but in blocks of 2 MiB and 2 MiB − 512: one byte more than
        // 2 MiB fits in neither, though it fits in all.
        assert_eq!(oom_finding(2 * MIB + 1).0, OomCause::Fragmented);
        assert_eq!(oom_finding(3 * MIB).0, OomCause::Fragmented);
        assert_eq!(oom_finding(4_193_792).0, OomCause::Fragmented);
        // One byte more than the cache holds in all: the allocator had to ask the device.
        assert_eq!(oom_finding(4_193_793).0, OomCause::DeviceFull);
    }

    #[test]
    fn a_snapshot_without_an_allocator_has_no_gpu_view() {
        let mut snapshot = shape(Vec::new());
        snapshot.cuda = None;
        assert!(gpu(&snapshot, &options(5)).is_none());
    }
}
