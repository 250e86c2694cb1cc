//! Pass 1: the header, the top-level records (names, classes, stack frames, traces, where the
//! heap segments are), and an index of each heap segment's sub-records (roots, class dumps, the
//! ids of the objects in file order, and votes on the object layout).

use super::bytes::{Cursor, Short, read_id};
use super::{FORMAT, Layout};
use crate::ImportError;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::ops::Range;

/// `JAVA PROFILE 1.0.x` and its NUL.
const MAGIC_PREFIX: &[u8] = b"JAVA PROFILE 1.0.";

/// Top-level record tags.
pub(super) mod tag {
    pub(crate) const UTF8: u8 = 0x01;
    pub(crate) const LOAD_CLASS: u8 = 0x02;
    pub(crate) const FRAME: u8 = 0x04;
    pub(crate) const TRACE: u8 = 0x05;
    pub(crate) const HEAP_DUMP: u8 = 0x0c;
    pub(crate) const HEAP_DUMP_SEGMENT: u8 = 0x1c;
    pub(crate) const HEAP_DUMP_END: u8 = 0x2c;
}

/// Heap sub-record tags.
pub(super) mod sub {
    pub(crate) const ROOT_UNKNOWN: u8 = 0xff;
    pub(crate) const ROOT_JNI_GLOBAL: u8 = 0x01;
    pub(crate) const ROOT_JNI_LOCAL: u8 = 0x02;
    pub(crate) const ROOT_JAVA_FRAME: u8 = 0x03;
    pub(crate) const ROOT_NATIVE_STACK: u8 = 0x04;
    pub(crate) const ROOT_STICKY_CLASS: u8 = 0x05;
    pub(crate) const ROOT_THREAD_BLOCK: u8 = 0x06;
    pub(crate) const ROOT_MONITOR_USED: u8 = 0x07;
    pub(crate) const ROOT_THREAD_OBJECT: u8 = 0x08;
    pub(crate) const CLASS_DUMP: u8 = 0x20;
    pub(crate) const INSTANCE_DUMP: u8 = 0x21;
    pub(crate) const OBJ_ARRAY_DUMP: u8 = 0x22;
    pub(crate) const PRIM_ARRAY_DUMP: u8 = 0x23;
    // Android's additions.
    pub(crate) const ROOT_INTERNED_STRING: u8 = 0x89;
    pub(crate) const ROOT_FINALIZING: u8 = 0x8a;
    pub(crate) const ROOT_DEBUGGER: u8 = 0x8b;
    pub(crate) const ROOT_REFERENCE_CLEANUP: u8 = 0x8c;
    pub(crate) const ROOT_VM_INTERNAL: u8 = 0x8d;
    pub(crate) const ROOT_JNI_MONITOR: u8 = 0x8e;
    pub(crate) const ROOT_UNREACHABLE: u8 = 0x90;
    pub(crate) const PRIM_ARRAY_NODATA: u8 = 0xc3;
    pub(crate) const HEAP_DUMP_INFO: u8 = 0xfe;
}

/// Basic type codes of fields and arrays.
pub(super) mod basic {
    pub(crate) const OBJECT: u8 = 2;
    pub(crate) const BOOLEAN: u8 = 4;
    pub(crate) const CHAR: u8 = 5;
    pub(crate) const FLOAT: u8 = 6;
    pub(crate) const DOUBLE: u8 = 7;
    pub(crate) const BYTE: u8 = 8;
    pub(crate) const SHORT: u8 = 9;
    pub(crate) const INT: u8 = 10;
    pub(crate) const LONG: u8 = 11;
}

/// Bytes of a value of basic type `code` in the dump (`id_size` for references); `None` for an
/// unknown code.
pub(super) fn value_size(code: u8, id_size: usize) -> Option<usize> {
    Some(match code {
        basic::OBJECT => id_size,
        basic::BOOLEAN | basic::BYTE => 1,
        basic::CHAR | basic::SHORT => 2,
        basic::FLOAT | basic::INT => 4,
        basic::DOUBLE | basic::LONG => 8,
        _ => return None,
    })
}

/// The dump's header.
pub(super) struct Header {
    /// `JAVA PROFILE 1.0.2` and the like.
    pub(super) version: String,
    pub(super) id_size: usize,
    pub(super) timestamp_ms: u64,
    /// Where the first record starts.
    pub(super) body_start: usize,
}

/// Whether `prefix` starts an HPROF dump; `None` when it is too short to tell.
pub(super) fn sniff(prefix: &[u8]) -> Option<bool> {
    let compared = prefix.len().min(MAGIC_PREFIX.len());
    if prefix[..compared] != MAGIC_PREFIX[..compared] {
        return Some(false);
    }
    if compared < MAGIC_PREFIX.len() {
        return None;
    }
    Some(true)
}

/// Reads and checks the header.
pub(super) fn header(bytes: &[u8]) -> Result<Header, ImportError> {
    let Some(nul) = bytes.iter().take(64).position(|&b| b == 0) else {
        return Err(if bytes.len() < 64 {
            truncated(bytes.len(), "the header's version string")
        } else {
            malformed(0, "the version string has no NUL within 64 bytes")
        });
    };
    let version = String::from_utf8_lossy(&bytes[..nul]).into_owned();
    if !version.starts_with("JAVA PROFILE 1.0.") {
        return Err(malformed(
            0,
            format!("the version is {version:?}, not JAVA PROFILE 1.0.x"),
        ));
    }
    let mut cursor = Cursor::new(bytes, nul + 1, bytes.len(), 4);
    let fields = (|| Ok::<_, Short>((cursor.u4()?, cursor.u4()?, cursor.u4()?)))();
    let Ok((id_size, high, low)) = fields else {
        return Err(truncated(bytes.len(), "the header's id size and timestamp"));
    };
    if id_size != 4 && id_size != 8 {
        return Err(malformed(
            nul as u64 + 1,
            format!("the identifier size is {id_size}; only 4 and 8 are defined"),
        ));
    }
    Ok(Header {
        version,
        id_size: id_size as usize,
        timestamp_ms: u64::from(high) << 32 | u64::from(low),
        body_start: cursor.pos(),
    })
}

/// A FRAME record.
#[derive(Clone, Copy, Debug)]
pub(super) struct Frame {
    pub(super) method: u64,
    pub(super) source: u64,
    pub(super) class_serial: u32,
    pub(super) line: i32,
}

/// A TRACE record's frames.
#[derive(Clone, Debug, Default)]
pub(super) struct Trace {
    pub(super) frames: Vec<u64>,
}

/// Where the dump ends inside a record.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cut {
    /// Where the cut record starts.
    pub(super) record_offset: usize,
    pub(super) tag: Option<u8>,
    /// The record body's declared length, when its header arrived.
    pub(super) declared: Option<u32>,
    /// Body bytes that arrived.
    pub(super) available: usize,
}

/// What the top-level records hold.
#[derive(Default)]
pub(super) struct TopLevel<'a> {
    /// UTF8 records by string id.
    pub(super) strings: FxHashMap<u64, &'a [u8]>,
    /// LOAD_CLASS: class object id → name string id.
    pub(super) class_names: FxHashMap<u64, u64>,
    /// LOAD_CLASS: class serial → class object id.
    pub(super) class_by_serial: FxHashMap<u32, u64>,
    pub(super) frames: FxHashMap<u64, Frame>,
    pub(super) traces: FxHashMap<u32, Trace>,
    /// The heap dumps, in file order: most files hold one, the hprof agent's may hold several.
    pub(super) dumps: Vec<HeapDump>,
    pub(super) cut: Option<Cut>,
    /// Records of tags this reader skips, by tag.
    pub(super) skipped: BTreeMap<u8, u64>,
}

/// One heap dump of the file: one HEAP DUMP record, or a run of HEAP DUMP SEGMENT records that
/// a HEAP DUMP END closes.
#[derive(Clone, Debug, Default)]
pub(super) struct HeapDump {
    /// Bodies of its records, in file order.
    pub(super) segments: Vec<Range<usize>>,
    /// Where its first record starts and its last one ends.
    pub(super) bytes: Range<usize>,
    /// Whether it is complete: a HEAP DUMP record, or segments closed by HEAP DUMP END.
    pub(super) complete: bool,
}

/// Scans the top-level records from `start`, telling `release` of each heap dump record's body
/// once its header is read.
///
/// Reading a header maps the page it lies on, and where the page cache holds the file in
/// large folios, the whole folio around it: a megabyte or more. A JVM writes its dump in
/// segments of about a megabyte, so without the release this scan alone would leave nearly the
/// whole dump resident.
pub(super) fn top_level<'a>(
    bytes: &'a [u8],
    start: usize,
    id_size: usize,
    release: &dyn Fn(Range<usize>),
) -> Result<TopLevel<'a>, ImportError> {
    let mut top = TopLevel::default();
    // Segments since the last HEAP DUMP END, if any.
    let mut open: Option<HeapDump> = None;
    let mut pos = start;
    while pos < bytes.len() {
        let mut cursor = Cursor::new(bytes, pos, bytes.len(), id_size);
        let (Ok(tag), Ok(_micros), Ok(length)) = (cursor.u1(), cursor.u4(), cursor.u4()) else {
            let tag = bytes.get(pos).copied();
            top.cut = Some(Cut {
                record_offset: pos,
                tag,
                declared: None,
                available: 0,
            });
            break;
        };
        let body = cursor.pos();
        let end = body + length as usize;
        if end > bytes.len() {
            top.cut = Some(Cut {
                record_offset: pos,
                tag: Some(tag),
                declared: Some(length),
                available: bytes.len() - body,
            });
            if matches!(tag, tag::HEAP_DUMP | tag::HEAP_DUMP_SEGMENT) {
                let dump = match (tag, open.take()) {
                    (tag::HEAP_DUMP_SEGMENT, Some(dump)) => dump,
                    (_, open_dump) => {
                        top.dumps.extend(open_dump);
                        HeapDump {
                            bytes: pos..pos,
                            ..HeapDump::default()
                        }
                    }
                };
                open = Some(dump);
                if let Some(dump) = &mut open {
                    dump.segments.push(body..bytes.len());
                    dump.bytes.end = bytes.len();
                }
            }
            break;
        }
        let record = Record {
            bytes,
            offset: pos,
            body: body..end,
            id_size,
        };
        match tag {
            tag::UTF8 => {
                let mut cursor = record.cursor();
                let id = cursor.id().map_err(|_| record.too_short("a UTF8 record"))?;
                top.strings.insert(id, &bytes[cursor.pos()..end]);
            }
            tag::LOAD_CLASS => {
                let mut cursor = record.cursor();
                let fields =
                    (|| Ok::<_, Short>((cursor.u4()?, cursor.id()?, cursor.u4()?, cursor.id()?)))();
                let (serial, class_id, _trace, name_id) =
                    fields.map_err(|_| record.too_short("a LOAD CLASS record"))?;
                top.class_names.insert(class_id, name_id);
                top.class_by_serial.insert(serial, class_id);
            }
            tag::FRAME => {
                let mut cursor = record.cursor();
                let fields = (|| {
                    Ok::<_, Short>((
                        cursor.id()?,
                        cursor.id()?,
                        cursor.id()?,
                        cursor.id()?,
                        cursor.u4()?,
                        cursor.u4()?,
                    ))
                })();
                let (frame_id, method, _signature, source, class_serial, line) =
                    fields.map_err(|_| record.too_short("a FRAME record"))?;
                top.frames.insert(
                    frame_id,
                    Frame {
                        method,
                        source,
                        class_serial,
                        line: line as i32,
                    },
                );
            }
            tag::TRACE => {
                let mut cursor = record.cursor();
                let fields = (|| Ok::<_, Short>((cursor.u4()?, cursor.u4()?, cursor.u4()?)))();
                let (serial, _thread, n_frames) =
                    fields.map_err(|_| record.too_short("a TRACE record"))?;
                if n_frames as usize > cursor.remaining() / id_size {
                    return Err(record.error(format!(
                        "a TRACE record declares {n_frames} frames in {} bytes",
                        length
                    )));
                }
                let frames = (0..n_frames)
                    .map(|_| cursor.id())
                    .collect::<Result<Vec<u64>, Short>>()
                    .map_err(|_| record.too_short("a TRACE record"))?;
                top.traces.insert(serial, Trace { frames });
            }
            tag::HEAP_DUMP => {
                // A HEAP DUMP record holds a whole dump: it has no HEAP DUMP END.
                top.dumps.extend(open.take());
                top.dumps.push(HeapDump {
                    segments: std::iter::once(body..end).collect(),
                    bytes: pos..end,
                    complete: true,
                });
                release(body..end);
            }
            tag::HEAP_DUMP_SEGMENT => {
                let dump = open.get_or_insert_with(|| HeapDump {
                    bytes: pos..end,
                    ..HeapDump::default()
                });
                dump.segments.push(body..end);
                dump.bytes.end = end;
                release(body..end);
            }
            tag::HEAP_DUMP_END => {
                if let Some(mut dump) = open.take() {
                    dump.bytes.end = end;
                    dump.complete = true;
                    top.dumps.push(dump);
                }
            }
            other => *top.skipped.entry(other).or_default() += 1,
        }
        pos = end;
    }
    top.dumps.extend(open);
    Ok(top)
}

/// One complete top-level record.
struct Record<'a> {
    bytes: &'a [u8],
    offset: usize,
    body: Range<usize>,
    id_size: usize,
}

impl<'a> Record<'a> {
    fn cursor(&self) -> Cursor<'a> {
        Cursor::new(self.bytes, self.body.start, self.body.end, self.id_size)
    }

    fn error(&self, message: String) -> ImportError {
        malformed(self.offset as u64, message)
    }

    fn too_short(&self, what: &str) -> ImportError {
        self.error(format!(
            "{what} of {} bytes is too short for its fields (a corrupt length?)",
            self.body.len()
        ))
    }
}

/// A GC root.
#[derive(Clone, Copy, Debug)]
pub(super) struct Root {
    pub(super) kind: RootKind,
    pub(super) object: u64,
    /// The thread's serial, for kinds tied to a thread.
    pub(super) thread_serial: Option<u32>,
    /// The stack frame's depth, for locals with a known frame.
    pub(super) frame_depth: Option<u32>,
    /// A thread object's stack trace serial.
    pub(super) trace_serial: Option<u32>,
}

/// Why an object is a GC root: HPROF's root sub-record kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum RootKind {
    Unknown,
    JniGlobal,
    JniLocal,
    JavaFrame,
    NativeStack,
    StickyClass,
    ThreadBlock,
    MonitorUsed,
    ThreadObject,
    InternedString,
    Finalizing,
    Debugger,
    ReferenceCleanup,
    VmInternal,
    JniMonitor,
}

impl RootKind {
    /// The edge name from the super-root, as MAT names root kinds.
    pub(super) fn label(self) -> &'static str {
        match self {
            RootKind::Unknown => "<unknown root>",
            RootKind::JniGlobal => "<JNI global>",
            RootKind::JniLocal => "<JNI local>",
            RootKind::JavaFrame => "<Java local>",
            RootKind::NativeStack => "<native stack>",
            RootKind::StickyClass => "<system class>",
            RootKind::ThreadBlock => "<thread block>",
            RootKind::MonitorUsed => "<busy monitor>",
            RootKind::ThreadObject => "<thread>",
            RootKind::InternedString => "<interned string>",
            RootKind::Finalizing => "<finalizable>",
            RootKind::Debugger => "<debugger>",
            RootKind::ReferenceCleanup => "<reference cleanup>",
            RootKind::VmInternal => "<VM internal>",
            RootKind::JniMonitor => "<JNI monitor>",
        }
    }
}

/// A CLASS DUMP sub-record.
#[derive(Clone, Debug)]
pub(super) struct ClassDump {
    pub(super) id: u64,
    pub(super) super_id: u64,
    /// Class loader, signers, protection domain.
    pub(super) references: [u64; 3],
    /// Static fields: name string id, basic type, value (the id for references).
    pub(super) statics: Vec<(u64, u8, u64)>,
    /// This class's own instance fields: name string id, basic type.
    pub(super) fields: Vec<(u64, u8)>,
}

/// Why the walk of a segment stopped early.
#[derive(Clone, Debug)]
pub(super) enum Stop {
    /// The segment (the last one, cut short) ends inside the sub-record at `offset`.
    Cut,
    /// The sub-record at `offset` is not well formed.
    Corrupt { offset: usize, message: String },
}

/// What pass 1 found in one segment.
#[derive(Default)]
pub(super) struct SegmentIndex {
    pub(super) roots: Vec<Root>,
    pub(super) classes: Vec<ClassDump>,
    /// Ids of the objects (class dumps included), in file order: the graph's nodes.
    pub(super) object_ids: Vec<u64>,
    /// Votes for each candidate layout: arrays whose size under it equals the distance to the
    /// next object's address.
    pub(super) layout_votes: [u64; Layout::CANDIDATES.len()],
    /// For one instance in [`GAP_SAMPLE_EVERY`] followed by another object: its class id and
    /// the distance to the next object's address, its size if the ids are addresses and the
    /// heap is compact there.
    pub(super) instance_gaps: Vec<(u64, u64)>,
    /// Object ids that are not multiples of 8, which no JVM's object address is.
    pub(super) unaligned_ids: u64,
    /// Where the walk stopped early, if it did.
    pub(super) stop: Option<Stop>,
}

/// One instance in this many has its distance to the next object sampled: enough for every
/// class with many instances to vote, at a small cost in the first pass.
pub(super) const GAP_SAMPLE_EVERY: usize = 8;

/// What an object sub-record tells the layout votes.
#[derive(Clone, Copy)]
enum Shape {
    Array {
        id: u64,
        length: u64,
        /// Element type; `OBJECT` for object arrays.
        element: u8,
    },
    Instance {
        id: u64,
        class_id: u64,
    },
}

/// Walks the sub-records of one segment body.
pub(super) fn index_segment(
    bytes: &[u8],
    body: Range<usize>,
    id_size: usize,
    is_cut: bool,
) -> SegmentIndex {
    let mut index = SegmentIndex::default();
    let mut cursor = Cursor::new(bytes, body.start, body.end, id_size);
    let mut previous: Option<Shape> = None;
    while cursor.remaining() > 0 {
        let offset = cursor.pos();
        let objects_before = index.object_ids.len();
        match index_sub_record(&mut cursor, &mut index) {
            Ok(shape) => {
                if index.object_ids.len() > objects_before {
                    let next_id = index.object_ids[objects_before];
                    index.unaligned_ids += u64::from(!next_id.is_multiple_of(8));
                    match previous {
                        Some(Shape::Array {
                            id,
                            length,
                            element,
                        }) => vote(&mut index.layout_votes, id, length, element, next_id),
                        Some(Shape::Instance { id, class_id }) => {
                            if let Some(gap) = next_id.checked_sub(id) {
                                index.instance_gaps.push((class_id, gap));
                            }
                        }
                        None => {}
                    }
                    previous = shape;
                }
            }
            Err(SubError::Short) => {
                index.stop = Some(if is_cut {
                    Stop::Cut
                } else {
                    Stop::Corrupt {
                        offset,
                        message:
                            "a sub-record runs past the end of its segment (a corrupt length?)"
                                .to_owned(),
                    }
                });
                break;
            }
            Err(SubError::Corrupt(message)) => {
                index.stop = Some(Stop::Corrupt { offset, message });
                break;
            }
        }
    }
    index
}

/// Why a sub-record could not be read.
pub(super) enum SubError {
    Short,
    Corrupt(String),
}

impl From<Short> for SubError {
    fn from(_: Short) -> Self {
        SubError::Short
    }
}

/// Counts a vote for each layout under which the array at `id` ends exactly where the next
/// object starts.
fn vote(votes: &mut [u64], id: u64, length: u64, element: u8, next_id: u64) {
    let Some(gap) = next_id.checked_sub(id) else {
        return;
    };
    for (layout, slot) in Layout::CANDIDATES.iter().zip(votes.iter_mut()) {
        if layout.array_size(element, length) == gap {
            *slot += 1;
        }
    }
}

/// Reads one sub-record into `index`; returns what an object tells the layout votes (an array's
/// shape; a sampled instance's class).
fn index_sub_record(
    cursor: &mut Cursor<'_>,
    index: &mut SegmentIndex,
) -> Result<Option<Shape>, SubError> {
    let id_size = cursor.id_size();
    let sub_tag = cursor.u1()?;
    let root = |kind, object, thread_serial, frame_depth, trace_serial| Root {
        kind,
        object,
        thread_serial,
        frame_depth,
        trace_serial,
    };
    match sub_tag {
        sub::ROOT_UNKNOWN => {
            let object = cursor.id()?;
            index
                .roots
                .push(root(RootKind::Unknown, object, None, None, None));
        }
        sub::ROOT_JNI_GLOBAL => {
            let object = cursor.id()?;
            cursor.id()?;
            index
                .roots
                .push(root(RootKind::JniGlobal, object, None, None, None));
        }
        sub::ROOT_JNI_LOCAL | sub::ROOT_JAVA_FRAME | sub::ROOT_JNI_MONITOR => {
            let object = cursor.id()?;
            let thread = cursor.u4()?;
            let depth = cursor.u4()?;
            let kind = match sub_tag {
                sub::ROOT_JNI_LOCAL => RootKind::JniLocal,
                sub::ROOT_JAVA_FRAME => RootKind::JavaFrame,
                _ => RootKind::JniMonitor,
            };
            // Depth -1 (0xffffffff): the frame is unknown.
            let depth = (depth != u32::MAX).then_some(depth);
            index
                .roots
                .push(root(kind, object, Some(thread), depth, None));
        }
        sub::ROOT_NATIVE_STACK | sub::ROOT_THREAD_BLOCK => {
            let object = cursor.id()?;
            let thread = cursor.u4()?;
            let kind = if sub_tag == sub::ROOT_NATIVE_STACK {
                RootKind::NativeStack
            } else {
                RootKind::ThreadBlock
            };
            index
                .roots
                .push(root(kind, object, Some(thread), None, None));
        }
        sub::ROOT_STICKY_CLASS
        | sub::ROOT_MONITOR_USED
        | sub::ROOT_INTERNED_STRING
        | sub::ROOT_FINALIZING
        | sub::ROOT_DEBUGGER
        | sub::ROOT_REFERENCE_CLEANUP
        | sub::ROOT_VM_INTERNAL => {
            let object = cursor.id()?;
            let kind = match sub_tag {
                sub::ROOT_STICKY_CLASS => RootKind::StickyClass,
                sub::ROOT_MONITOR_USED => RootKind::MonitorUsed,
                sub::ROOT_INTERNED_STRING => RootKind::InternedString,
                sub::ROOT_FINALIZING => RootKind::Finalizing,
                sub::ROOT_DEBUGGER => RootKind::Debugger,
                sub::ROOT_REFERENCE_CLEANUP => RootKind::ReferenceCleanup,
                _ => RootKind::VmInternal,
            };
            index.roots.push(root(kind, object, None, None, None));
        }
        sub::ROOT_UNREACHABLE => {
            // Android marks objects it found unreachable; they are no root.
            cursor.id()?;
        }
        sub::ROOT_THREAD_OBJECT => {
            let object = cursor.id()?;
            let thread = cursor.u4()?;
            let trace = cursor.u4()?;
            index.roots.push(root(
                RootKind::ThreadObject,
                object,
                Some(thread),
                None,
                Some(trace),
            ));
        }
        sub::HEAP_DUMP_INFO => {
            cursor.u4()?;
            cursor.id()?;
        }
        sub::CLASS_DUMP => {
            let class = class_dump(cursor)?;
            index.object_ids.push(class.id);
            index.classes.push(class);
        }
        sub::INSTANCE_DUMP => {
            let id = cursor.id()?;
            cursor.u4()?;
            let class_id = cursor.id()?;
            let n_bytes = cursor.u4()?;
            cursor.skip(n_bytes as usize)?;
            let sampled = index.object_ids.len().is_multiple_of(GAP_SAMPLE_EVERY);
            index.object_ids.push(id);
            if sampled {
                return Ok(Some(Shape::Instance { id, class_id }));
            }
        }
        sub::OBJ_ARRAY_DUMP => {
            let id = cursor.id()?;
            cursor.u4()?;
            let length = cursor.u4()?;
            cursor.id()?;
            let n_bytes = (length as usize)
                .checked_mul(id_size)
                .ok_or(SubError::Short)?;
            cursor.skip(n_bytes)?;
            index.object_ids.push(id);
            return Ok(Some(Shape::Array {
                id,
                length: u64::from(length),
                element: basic::OBJECT,
            }));
        }
        sub::PRIM_ARRAY_DUMP | sub::PRIM_ARRAY_NODATA => {
            let id = cursor.id()?;
            cursor.u4()?;
            let length = cursor.u4()?;
            let element = cursor.u1()?;
            let Some(size) = value_size(element, id_size).filter(|_| element != basic::OBJECT)
            else {
                return Err(SubError::Corrupt(format!(
                    "a primitive array has element type {element}, which is no primitive type"
                )));
            };
            if sub_tag == sub::PRIM_ARRAY_DUMP {
                let n_bytes = (length as usize).checked_mul(size).ok_or(SubError::Short)?;
                cursor.skip(n_bytes)?;
            }
            index.object_ids.push(id);
            return Ok(Some(Shape::Array {
                id,
                length: u64::from(length),
                element,
            }));
        }
        other => {
            return Err(SubError::Corrupt(format!(
                "unknown heap sub-record tag {other:#04x}"
            )));
        }
    }
    Ok(None)
}

/// Reads a CLASS DUMP after its tag.
pub(super) fn class_dump(cursor: &mut Cursor<'_>) -> Result<ClassDump, SubError> {
    let id_size = cursor.id_size();
    let id = cursor.id()?;
    cursor.u4()?;
    let super_id = cursor.id()?;
    let loader = cursor.id()?;
    let signers = cursor.id()?;
    let protection_domain = cursor.id()?;
    cursor.id()?;
    cursor.id()?;
    cursor.u4()?;
    let n_constants = cursor.u2()?;
    for _ in 0..n_constants {
        cursor.u2()?;
        let code = cursor.u1()?;
        let size = value_size(code, id_size)
            .ok_or_else(|| SubError::Corrupt(format!("a constant has basic type {code}")))?;
        cursor.skip(size)?;
    }
    let n_statics = cursor.u2()?;
    let mut statics = Vec::with_capacity(usize::from(n_statics).min(cursor.remaining()));
    for _ in 0..n_statics {
        let name = cursor.id()?;
        let code = cursor.u1()?;
        let size = value_size(code, id_size)
            .ok_or_else(|| SubError::Corrupt(format!("a static field has basic type {code}")))?;
        let value = read_id(cursor.take(size)?);
        statics.push((name, code, value));
    }
    let n_fields = cursor.u2()?;
    let mut fields = Vec::with_capacity(usize::from(n_fields).min(cursor.remaining()));
    for _ in 0..n_fields {
        let name = cursor.id()?;
        let code = cursor.u1()?;
        if value_size(code, id_size).is_none() {
            return Err(SubError::Corrupt(format!(
                "an instance field has basic type {code}"
            )));
        }
        fields.push((name, code));
    }
    Ok(ClassDump {
        id,
        super_id,
        references: [loader, signers, protection_domain],
        statics,
        fields,
    })
}

/// A [`ImportError::Malformed`] of this format.
pub(super) fn malformed(offset: impl TryInto<u64>, message: impl Into<String>) -> ImportError {
    ImportError::malformed(FORMAT, offset.try_into().unwrap_or(u64::MAX), message)
}

/// A [`ImportError::Truncated`] of this format.
pub(super) fn truncated(offset: usize, expected: &str) -> ImportError {
    ImportError::truncated(FORMAT, offset as u64, expected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// The scan hands back the body of every heap dump record as it passes it, in file order,
    /// and nothing else: the records found by walking the lengths from the first record.
    #[test]
    fn each_heap_dump_body_is_released_once_its_header_is_read() {
        let bytes = super::super::fixture_dump("default");
        let header = header(&bytes).expect("the header");
        let mut bodies = Vec::new();
        let mut pos = header.body_start;
        while pos + 9 <= bytes.len() {
            let length = u32::from_be_bytes(bytes[pos + 5..pos + 9].try_into().expect("4 bytes"));
            let body = pos + 9..pos + 9 + length as usize;
            if matches!(bytes[pos], tag::HEAP_DUMP | tag::HEAP_DUMP_SEGMENT) {
                bodies.push(body.clone());
            }
            pos = body.end;
        }
        assert!(bodies.len() > 1, "the fixture is written in segments");

        let released = RefCell::new(Vec::new());
        let top = top_level(&bytes, header.body_start, header.id_size, &|range| {
            released.borrow_mut().push(range);
        })
        .expect("the scan");
        assert_eq!(released.into_inner(), bodies);
        let segments: Vec<Range<usize>> = top
            .dumps
            .iter()
            .flat_map(|dump| dump.segments.iter().cloned())
            .collect();
        assert_eq!(segments, bodies);
    }
}
