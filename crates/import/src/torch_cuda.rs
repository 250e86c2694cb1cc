//! PyTorch CUDA caching-allocator snapshots (`torch.cuda.memory._dump_snapshot`, plain or
//! gzip): a pickled dict of `segments` (each with its `blocks`), `device_traces` and
//! `allocator_settings`, made only of dicts, lists, tuples and scalars.
//!
//! Frame dicts and frame lists are shared through the pickle's memo; each is resolved once by
//! identity and then stored once by content (the large fixture has 143,809 frame lists but 30
//! distinct stacks).

use crate::pickle::{self, Arena, KeepAll, Obj, Pickle, Value};
use crate::{Format, ImportError};
use heapgraph_model::{
    AllocMeta, AllocSnapshot, AllocSource, Block, BlockState, CudaState, Frame, FrameId, LiveSite,
    Segment, StackId, Stacks, StringId, StringTable, TraceAction, TraceEvent,
};
use rustc_hash::FxHashMap;

const FORMAT: Format = Format::TorchCuda;

/// Nesting shown when settings are printed; deeper values print as `…`.
const SETTINGS_DEPTH: usize = 3;

fn inconsistent(message: impl Into<String>) -> ImportError {
    ImportError::inconsistent(FORMAT, message)
}

/// Whether the pickle's top value looks like a CUDA snapshot: a dict with `segments`.
pub(crate) fn is_snapshot(pickle: &Pickle) -> bool {
    pickle
        .arena
        .dict_of(pickle.top)
        .is_some_and(|dict| pickle.arena.dict_get(dict, "segments").is_some())
}

/// Resolves frames and stacks, once per pickled object and once per content.
struct StackReader<'a> {
    arena: &'a Arena,
    strings: StringTable,
    stacks: Stacks,
    text_ids: FxHashMap<u32, StringId>,
    frame_ids: FxHashMap<u32, FrameId>,
    stack_ids: FxHashMap<u32, StackId>,
    scratch: Vec<FrameId>,
    empty: StackId,
}

impl<'a> StackReader<'a> {
    fn new(arena: &'a Arena) -> Self {
        let mut stacks = Stacks::new();
        let empty = stacks.intern_stack(&[]);
        StackReader {
            arena,
            strings: StringTable::new(),
            stacks,
            text_ids: FxHashMap::default(),
            frame_ids: FxHashMap::default(),
            stack_ids: FxHashMap::default(),
            scratch: Vec::new(),
            empty,
        }
    }

    fn text(&mut self, value: Value, what: &str) -> Result<StringId, ImportError> {
        let Value::Obj(id) = value else {
            return Err(inconsistent(format!("{what} is not a string")));
        };
        if let Some(&found) = self.text_ids.get(&id) {
            return Ok(found);
        }
        let text = self
            .arena
            .str_of(value)
            .ok_or_else(|| inconsistent(format!("{what} is not a string")))?;
        let found = self.strings.intern(text);
        self.text_ids.insert(id, found);
        Ok(found)
    }

    fn frame(&mut self, value: Value) -> Result<FrameId, ImportError> {
        let Value::Obj(id) = value else {
            return Err(inconsistent("a frame is not a dict"));
        };
        if let Some(&found) = self.frame_ids.get(&id) {
            return Ok(found);
        }
        let dict = self
            .arena
            .dict_of(value)
            .ok_or_else(|| inconsistent("a frame is not a dict"))?;
        let filename = match self.arena.dict_get(dict, "filename") {
            Some(value) => self.text(value, "a frame's filename")?,
            None => StringId::EMPTY,
        };
        let name = match self.arena.dict_get(dict, "name") {
            Some(value) => Some(self.text(value, "a frame's name")?),
            None => None,
        };
        let lineno = match self.arena.dict_get(dict, "line") {
            Some(Value::Int(line)) => u32::try_from(line).unwrap_or(0),
            _ => 0,
        };
        let found = self.stacks.intern_frame(Frame {
            filename,
            lineno,
            name,
        });
        self.frame_ids.insert(id, found);
        Ok(found)
    }

    /// The stack of a `frames` list (absent: the empty stack).
    fn stack(&mut self, value: Option<Value>) -> Result<StackId, ImportError> {
        let Some(value) = value else {
            return Ok(self.empty);
        };
        let Value::Obj(id) = value else {
            return Err(inconsistent("`frames` is not a list"));
        };
        if let Some(&found) = self.stack_ids.get(&id) {
            return Ok(found);
        }
        let frames = self
            .arena
            .list_of(value)
            .ok_or_else(|| inconsistent("`frames` is not a list"))?;
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        for &frame in frames {
            scratch.push(self.frame(frame)?);
        }
        let found = self.stacks.intern_stack(&scratch);
        self.scratch = scratch;
        self.stack_ids.insert(id, found);
        Ok(found)
    }
}

fn int(arena: &Arena, dict: &[(Value, Value)], key: &str, what: &str) -> Result<i64, ImportError> {
    match arena.dict_get(dict, key) {
        Some(Value::Int(value)) => Ok(value),
        Some(Value::Bool(value)) => Ok(i64::from(value)),
        Some(_) => Err(inconsistent(format!("{what}'s `{key}` is not an integer"))),
        None => Err(inconsistent(format!("{what} has no `{key}`"))),
    }
}

fn uint(arena: &Arena, dict: &[(Value, Value)], key: &str, what: &str) -> Result<u64, ImportError> {
    let value = int(arena, dict, key, what)?;
    u64::try_from(value).map_err(|_| inconsistent(format!("{what}'s `{key}` is negative")))
}

fn uint_or(arena: &Arena, dict: &[(Value, Value)], key: &str, default: u64) -> u64 {
    match arena.dict_get(dict, key) {
        Some(Value::Int(value)) => u64::try_from(value).unwrap_or(default),
        _ => default,
    }
}

/// Prints a settings value as Python would, roughly: enough to read, never deeper than a bound.
fn render(arena: &Arena, value: Value, depth: usize, out: &mut String) {
    use std::fmt::Write;
    match value {
        Value::None => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Int(v) => {
            let _ = write!(out, "{v}");
        }
        Value::Float(v) => {
            let _ = write!(out, "{v}");
        }
        Value::Folded => out.push('?'),
        Value::Obj(_) if depth == 0 => out.push('…'),
        Value::Obj(id) => match arena.get(id) {
            Obj::Str(text) => out.push_str(text),
            Obj::Bytes(bytes) => {
                let _ = write!(out, "<{} bytes>", bytes.len());
            }
            Obj::List { items, .. } | Obj::Set(items) => render_seq(arena, items, depth, out),
            Obj::Tuple(items) => render_seq(arena, items, depth, out),
            Obj::Dict(entries) => {
                out.push('{');
                for (i, &(key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    render(arena, key, depth - 1, out);
                    out.push_str(": ");
                    render(arena, value, depth - 1, out);
                }
                out.push('}');
            }
            Obj::Global { module, name } => {
                let _ = write!(out, "{module}.{name}");
            }
            Obj::Instance { .. } => out.push_str("<object>"),
        },
    }
}

fn render_seq(arena: &Arena, items: &[Value], depth: usize, out: &mut String) {
    out.push('[');
    for (i, &item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        render(arena, item, depth - 1, out);
    }
    out.push(']');
}

fn block_state(text: &str, strings: &mut StringTable) -> BlockState {
    match text {
        "active_allocated" => BlockState::ActiveAllocated,
        "active_pending_free" | "active_awaiting_free" => BlockState::ActivePendingFree,
        "inactive" => BlockState::Inactive,
        other => BlockState::Other(strings.intern(other)),
    }
}

fn trace_action(text: &str, strings: &mut StringTable) -> TraceAction {
    match text {
        "alloc" => TraceAction::Alloc,
        "free_requested" => TraceAction::FreeRequested,
        "free_completed" => TraceAction::FreeCompleted,
        "segment_alloc" => TraceAction::SegmentAlloc,
        "segment_free" => TraceAction::SegmentFree,
        "segment_map" => TraceAction::SegmentMap,
        "segment_unmap" => TraceAction::SegmentUnmap,
        "oom" => TraceAction::Oom,
        "snapshot" => TraceAction::Snapshot,
        other => TraceAction::Other(strings.intern(other)),
    }
}

/// Turns a parsed snapshot dict into an allocation snapshot.
pub(crate) fn build(pickle: &Pickle) -> Result<AllocSnapshot, ImportError> {
    let arena = &pickle.arena;
    let top = arena
        .dict_of(pickle.top)
        .ok_or_else(|| inconsistent("the snapshot is not a dict"))?;
    let mut reader = StackReader::new(arena);
    let mut cuda = CudaState::default();
    let mut notes = Vec::new();

    let segments = arena
        .dict_get(top, "segments")
        .and_then(|value| arena.list_of(value))
        .ok_or_else(|| inconsistent("`segments` is not a list"))?;
    let mut legacy_history = false;
    for (index, &segment) in segments.iter().enumerate() {
        let what = format!("segment {index}");
        let dict = arena
            .dict_of(segment)
            .ok_or_else(|| inconsistent(format!("{what} is not a dict")))?;
        let device = u32::try_from(uint(arena, dict, "device", &what)?)
            .map_err(|_| inconsistent(format!("{what}'s device is out of range")))?;
        let segment_type = match arena.dict_get(dict, "segment_type") {
            Some(value) => reader.text(value, "a segment type")?,
            None => StringId::EMPTY,
        };
        let pool = match arena
            .dict_get(dict, "segment_pool_id")
            .and_then(|value| arena.tuple_of(value))
        {
            Some(&[Value::Int(a), Value::Int(b)]) => (a, b),
            _ => (0, 0),
        };
        let is_expandable = matches!(
            arena.dict_get(dict, "is_expandable"),
            Some(Value::Bool(true))
        );
        let stack = reader.stack(arena.dict_get(dict, "frames"))?;
        let blocks = arena
            .dict_get(dict, "blocks")
            .and_then(|value| arena.list_of(value))
            .ok_or_else(|| inconsistent(format!("{what} has no `blocks` list")))?;
        let first_block = u32::try_from(cuda.blocks.len())
            .map_err(|_| inconsistent("more than 4 billion blocks"))?;
        let segment_index = u32::try_from(cuda.segments.len())
            .map_err(|_| inconsistent("more than 4 billion segments"))?;
        for (block_index, &block) in blocks.iter().enumerate() {
            let what = format!("block {block_index} of segment {index}");
            let dict = arena
                .dict_of(block)
                .ok_or_else(|| inconsistent(format!("{what} is not a dict")))?;
            let size = uint(arena, dict, "size", &what)?;
            let state_text = arena
                .dict_get(dict, "state")
                .and_then(|value| arena.str_of(value))
                .ok_or_else(|| inconsistent(format!("{what} has no `state`")))?;
            let state = block_state(state_text, &mut reader.strings);
            let frames = match arena.dict_get(dict, "frames") {
                Some(frames) => Some(frames),
                None => {
                    // Snapshots before torch 2.1 keep the allocation's frames in `history`.
                    let history = arena
                        .dict_get(dict, "history")
                        .and_then(|value| arena.list_of(value));
                    legacy_history |= history.is_some();
                    history
                        .and_then(|entries| entries.last())
                        .and_then(|&entry| arena.dict_of(entry))
                        .and_then(|entry| arena.dict_get(entry, "frames"))
                }
            };
            cuda.blocks.push(Block {
                address: uint_or(arena, dict, "address", 0),
                size,
                requested_size: uint_or(arena, dict, "requested_size", size),
                state,
                stack: reader.stack(frames)?,
                segment: segment_index,
            });
        }
        cuda.segments.push(Segment {
            device,
            address: uint(arena, dict, "address", &what)?,
            total_size: uint(arena, dict, "total_size", &what)?,
            allocated_size: uint_or(arena, dict, "allocated_size", 0),
            stream: uint_or(arena, dict, "stream", 0),
            segment_type,
            pool,
            is_expandable,
            stack,
            first_block,
            block_count: u32::try_from(blocks.len())
                .map_err(|_| inconsistent("more than 4 billion blocks"))?,
        });
    }
    if legacy_history {
        notes.push(
            "blocks carry a `history` (torch before 2.1): each block's stack is its last entry's"
                .to_owned(),
        );
    }

    if let Some(devices) = arena.dict_get(top, "device_traces") {
        let devices = arena
            .list_of(devices)
            .ok_or_else(|| inconsistent("`device_traces` is not a list"))?;
        for (device, &events) in devices.iter().enumerate() {
            let device = u32::try_from(device).unwrap_or(u32::MAX);
            let events = arena.list_of(events).ok_or_else(|| {
                inconsistent(format!("the trace of device {device} is not a list"))
            })?;
            cuda.trace.reserve(events.len());
            for (index, &event) in events.iter().enumerate() {
                let what = format!("trace entry {index} of device {device}");
                let dict = arena
                    .dict_of(event)
                    .ok_or_else(|| inconsistent(format!("{what} is not a dict")))?;
                let action = arena
                    .dict_get(dict, "action")
                    .and_then(|value| arena.str_of(value))
                    .ok_or_else(|| inconsistent(format!("{what} has no `action`")))?;
                let action = trace_action(action, &mut reader.strings);
                let address = match arena.dict_get(dict, "addr") {
                    Some(Value::Int(addr)) => u64::try_from(addr).ok(),
                    _ => None,
                };
                let device_free = match arena.dict_get(dict, "device_free") {
                    Some(Value::Int(free)) => u64::try_from(free).ok(),
                    _ => None,
                };
                cuda.trace.push(TraceEvent {
                    device,
                    action,
                    address,
                    size: uint_or(arena, dict, "size", 0),
                    stream: uint_or(arena, dict, "stream", 0),
                    time_us: match arena.dict_get(dict, "time_us") {
                        Some(Value::Int(time)) => time,
                        _ => 0,
                    },
                    stack: reader.stack(arena.dict_get(dict, "frames"))?,
                    device_free,
                });
            }
        }
    }

    if let Some(settings) = arena
        .dict_get(top, "allocator_settings")
        .and_then(|value| arena.dict_of(value))
    {
        for &(key, value) in settings {
            let mut key_text = String::new();
            render(arena, key, SETTINGS_DEPTH, &mut key_text);
            let mut value_text = String::new();
            render(arena, value, SETTINGS_DEPTH, &mut value_text);
            cuda.settings.push((key_text, value_text));
        }
    }

    let mut sites: Vec<LiveSite> = Vec::new();
    let mut site_index: FxHashMap<(StackId, u64), usize> = FxHashMap::default();
    for block in cuda.blocks.iter().filter(|block| block.state.is_active()) {
        let domain = u64::from(cuda.segments[block.segment as usize].device);
        let at = *site_index.entry((block.stack, domain)).or_insert_with(|| {
            sites.push(LiveSite {
                stack: block.stack,
                domain,
                bytes: 0,
                count: 0,
            });
            sites.len() - 1
        });
        sites[at].bytes += block.size;
        sites[at].count += 1;
    }

    let StackReader {
        strings, stacks, ..
    } = reader;
    Ok(AllocSnapshot {
        meta: AllocMeta {
            source: AllocSource::TorchCuda,
            source_format: "torch-cuda-pickle".to_owned(),
            traceback_limit: None,
            notes,
        },
        strings,
        stacks,
        sites,
        cuda: Some(cuda),
    })
}

/// Reads a CUDA memory snapshot from its (uncompressed) bytes.
///
/// # Errors
/// [`ImportError`] when the bytes are not a pickled CUDA memory snapshot.
pub fn import_slice(bytes: &[u8]) -> Result<AllocSnapshot, ImportError> {
    let (pickle, KeepAll) = pickle::parse(bytes, &|_, _| false, KeepAll)?;
    if !is_snapshot(&pickle) {
        return Err(inconsistent("the pickle is not a dict with `segments`"));
    }
    build(&pickle)
}
