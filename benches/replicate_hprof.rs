//! Replicates the heap of a real HPROF dump N times into one valid HPROF file, to measure
//! heapgraph on a dump larger than any JVM this machine can run (issue 20: a dump bigger than
//! memory, analysed to the end).
//!
//! ```sh
//! cargo run --release --example replicate_hprof -- IN.hprof OUT.hprof N
//! ```
//!
//! The output holds the input's records once (strings, classes loaded, stack traces, and the
//! whole heap as dumped: replica 0), then N - 1 more copies of the heap, each with every object
//! id shifted by `k × OFFSET` (`OFFSET` the smallest power of two above the largest object id, so
//! that replicas do not overlap and keep the JVM's alignment and address order). Classes are
//! shared: their `CLASS_DUMP` records are written once, and a reference to a class object is not
//! shifted. Roots are replicated with the shifted ids; and since the class statics that hold a
//! real program's data can only point into one replica, each other replica's copy of every object
//! a static field references is made a JNI global root, so that each replica keeps its own
//! planted leaks, reachable and found. Object counts: `N × instances + classes`.
//!
//! The input is streamed twice per replica and never loaded: memory stays at the class table.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};

/// Top-level record tags (the HPROF format, as the JDK's `hprof` writer defines it).
const HEAP_DUMP: u8 = 0x0c;
const HEAP_DUMP_SEGMENT: u8 = 0x1c;
const HEAP_DUMP_END: u8 = 0x2c;

/// Heap-dump sub-record tags.
const ROOT_UNKNOWN: u8 = 0xff;
const ROOT_JNI_GLOBAL: u8 = 0x01;
const ROOT_JNI_LOCAL: u8 = 0x02;
const ROOT_JAVA_FRAME: u8 = 0x03;
const ROOT_NATIVE_STACK: u8 = 0x04;
const ROOT_STICKY_CLASS: u8 = 0x05;
const ROOT_THREAD_BLOCK: u8 = 0x06;
const ROOT_MONITOR_USED: u8 = 0x07;
const ROOT_THREAD_OBJECT: u8 = 0x08;
const CLASS_DUMP: u8 = 0x20;
const INSTANCE_DUMP: u8 = 0x21;
const OBJ_ARRAY_DUMP: u8 = 0x22;
const PRIM_ARRAY_DUMP: u8 = 0x23;

/// The HPROF basic type of an object reference.
const TYPE_OBJECT: u8 = 2;

/// Sub-records of a replica are gathered into segments of about this size.
const SEGMENT_BYTES: usize = 16 << 20;

/// Bytes of a value of basic type `ty`; `None` for a type HPROF does not define.
fn type_size(ty: u8, id_size: usize) -> Option<usize> {
    match ty {
        TYPE_OBJECT => Some(id_size),
        4 | 8 => Some(1),
        5 | 9 => Some(2),
        6 | 10 => Some(4),
        7 | 11 => Some(8),
        _ => None,
    }
}

fn bad(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// A reader that counts the bytes it has read, for error messages and record ends.
struct Input {
    inner: BufReader<File>,
    offset: u64,
}

impl Input {
    /// Passes over the records that hold no heap (strings, class names, stack traces) and
    /// returns where the next heap dump record ends; `None` at the end of the file.
    fn next_heap_record(&mut self, scratch: &mut Vec<u8>) -> io::Result<Option<u64>> {
        loop {
            let tag = match self.u8() {
                Ok(tag) => tag,
                Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
                Err(err) => return Err(err),
            };
            self.u32()?;
            let length = u64::from(self.u32()?);
            if tag == HEAP_DUMP || tag == HEAP_DUMP_SEGMENT {
                return Ok(Some(self.offset + length));
            }
            self.bytes(scratch, length as usize)?;
        }
    }

    fn open(path: &str) -> io::Result<Input> {
        Ok(Input {
            inner: BufReader::with_capacity(1 << 20, File::open(path)?),
            offset: 0,
        })
    }

    fn bytes(&mut self, out: &mut Vec<u8>, n: usize) -> io::Result<()> {
        out.resize(n, 0);
        self.inner.read_exact(out)?;
        self.offset += n as u64;
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let mut bytes = [0u8; N];
        self.inner.read_exact(&mut bytes)?;
        self.offset += N as u64;
        Ok(bytes)
    }

    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> io::Result<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn id(&mut self, id_size: usize) -> io::Result<u64> {
        Ok(match id_size {
            4 => u64::from(self.u32()?),
            _ => u64::from_be_bytes(self.array()?),
        })
    }

    /// The header: the format string with its NUL, the id size, the timestamp.
    fn header(&mut self) -> io::Result<(Vec<u8>, usize)> {
        let mut header = Vec::new();
        loop {
            let byte = self.u8()?;
            header.push(byte);
            if byte == 0 {
                break;
            }
            if header.len() > 64 {
                return Err(bad("not an HPROF file: no format string".to_owned()));
            }
        }
        let id_size = self.u32()?;
        header.extend_from_slice(&id_size.to_be_bytes());
        header.extend_from_slice(&self.array::<8>()?);
        match id_size {
            4 | 8 => Ok((header, id_size as usize)),
            other => Err(bad(format!("id size {other}: HPROF ids are 4 or 8 bytes"))),
        }
    }
}

/// What pass 1 learns: the classes (for their instances' layouts and for telling a class
/// reference from an object reference), and the object ids' range.
#[derive(Default)]
struct Heap {
    /// Per class: its superclass and the types of its own instance fields, in dump order.
    classes: HashMap<u64, (u64, Vec<u8>)>,
    /// The objects class statics reference (not classes, not null).
    static_targets: Vec<u64>,
    max_object_id: u64,
    instances: u64,
    arrays: u64,
}

impl Heap {
    fn is_class(&self, id: u64) -> bool {
        self.classes.contains_key(&id)
    }
}

/// A class's instance layout: the byte offsets of its reference fields, and the size of its
/// field values (its own fields first, then each superclass's, as HPROF lays them out).
struct Layout {
    reference_offsets: Vec<usize>,
    size: usize,
}

fn layouts(heap: &Heap, id_size: usize) -> io::Result<HashMap<u64, Layout>> {
    let mut layouts = HashMap::default();
    for &class in heap.classes.keys() {
        let mut reference_offsets = Vec::new();
        let mut size = 0usize;
        let mut current = class;
        let mut seen = HashSet::default();
        while current != 0 {
            if !seen.insert(current) {
                return Err(bad(format!(
                    "class {current:#x}: its superclasses form a cycle"
                )));
            }
            let Some((superclass, fields)) = heap.classes.get(&current) else {
                return Err(bad(format!("class {current:#x} has no CLASS_DUMP")));
            };
            for &ty in fields {
                if ty == TYPE_OBJECT {
                    reference_offsets.push(size);
                }
                size += type_size(ty, id_size)
                    .ok_or_else(|| bad(format!("class {current:#x}: field type {ty}")))?;
            }
            current = *superclass;
        }
        layouts.insert(
            class,
            Layout {
                reference_offsets,
                size,
            },
        );
    }
    Ok(layouts)
}

/// Reads one CLASS_DUMP body (after its tag), into `heap` when `heap` is given.
fn class_dump(input: &mut Input, id_size: usize, heap: Option<&mut Heap>) -> io::Result<()> {
    let class = input.id(id_size)?;
    input.u32()?;
    let superclass = input.id(id_size)?;
    for _ in 0..5 {
        input.id(id_size)?; // loader, signers, protection domain, two reserved
    }
    input.u32()?; // instance size
    let mut scratch = Vec::new();
    let n_constants = input.u16()?;
    for _ in 0..n_constants {
        input.u16()?;
        let ty = input.u8()?;
        let size = type_size(ty, id_size).ok_or_else(|| bad(format!("constant type {ty}")))?;
        input.bytes(&mut scratch, size)?;
    }
    let mut statics = Vec::new();
    let n_statics = input.u16()?;
    for _ in 0..n_statics {
        input.id(id_size)?;
        let ty = input.u8()?;
        if ty == TYPE_OBJECT {
            statics.push(input.id(id_size)?);
        } else {
            let size = type_size(ty, id_size).ok_or_else(|| bad(format!("static type {ty}")))?;
            input.bytes(&mut scratch, size)?;
        }
    }
    let n_fields = input.u16()?;
    let mut fields = Vec::with_capacity(usize::from(n_fields));
    for _ in 0..n_fields {
        input.id(id_size)?;
        fields.push(input.u8()?);
    }
    if let Some(heap) = heap {
        heap.classes.insert(class, (superclass, fields));
        heap.static_targets.extend(statics);
    }
    Ok(())
}

/// Pass 1: the class table and the object ids' range.
fn survey(path: &str) -> io::Result<(Vec<u8>, usize, Heap)> {
    let mut input = Input::open(path)?;
    let (header, id_size) = input.header()?;
    let mut heap = Heap::default();
    let mut scratch = Vec::new();
    while let Some(end) = input.next_heap_record(&mut scratch)? {
        while input.offset < end {
            let sub = input.u8()?;
            if sub == CLASS_DUMP {
                class_dump(&mut input, id_size, Some(&mut heap))?;
                continue;
            }
            let at = input.offset - 1;
            match sub {
                INSTANCE_DUMP => {
                    let id = input.id(id_size)?;
                    input.u32()?;
                    input.id(id_size)?;
                    let n = input.u32()? as usize;
                    input.bytes(&mut scratch, n)?;
                    heap.max_object_id = heap.max_object_id.max(id);
                    heap.instances += 1;
                }
                OBJ_ARRAY_DUMP | PRIM_ARRAY_DUMP => {
                    let id = input.id(id_size)?;
                    input.u32()?;
                    let n = input.u32()? as usize;
                    let element = if sub == OBJ_ARRAY_DUMP {
                        input.id(id_size)?;
                        id_size
                    } else {
                        let ty = input.u8()?;
                        type_size(ty, id_size)
                            .ok_or_else(|| bad(format!("byte {at}: array of type {ty}")))?
                    };
                    input.bytes(&mut scratch, n * element)?;
                    heap.max_object_id = heap.max_object_id.max(id);
                    heap.arrays += 1;
                }
                _ => {
                    let size = root_size(sub, id_size)
                        .ok_or_else(|| bad(format!("byte {at}: sub-record tag {sub:#x}")))?;
                    input.bytes(&mut scratch, size)?;
                }
            }
        }
    }
    Ok((header, id_size, heap))
}

/// Bytes after the tag of a GC root sub-record; `None` for a tag that is no root.
fn root_size(tag: u8, id_size: usize) -> Option<usize> {
    Some(match tag {
        ROOT_UNKNOWN | ROOT_STICKY_CLASS | ROOT_MONITOR_USED => id_size,
        ROOT_JNI_GLOBAL => 2 * id_size,
        ROOT_JNI_LOCAL | ROOT_JAVA_FRAME | ROOT_THREAD_OBJECT => id_size + 8,
        ROOT_NATIVE_STACK | ROOT_THREAD_BLOCK => id_size + 4,
        _ => return None,
    })
}

/// Where replicas are written: sub-records gathered into heap dump segments.
struct Output {
    out: BufWriter<File>,
    id_size: usize,
    segment: Vec<u8>,
}

impl Output {
    fn id(&mut self, id: u64) {
        match self.id_size {
            4 => self.segment.extend_from_slice(&(id as u32).to_be_bytes()),
            _ => self.segment.extend_from_slice(&id.to_be_bytes()),
        }
    }

    fn record(&mut self, tag: u8, body: &[u8]) -> io::Result<()> {
        let length =
            u32::try_from(body.len()).map_err(|_| bad("a record over 4 GiB".to_owned()))?;
        self.out.write_all(&[tag])?;
        self.out.write_all(&0u32.to_be_bytes())?;
        self.out.write_all(&length.to_be_bytes())?;
        self.out.write_all(body)
    }

    fn flush_segment(&mut self, force: bool) -> io::Result<()> {
        if self.segment.len() >= SEGMENT_BYTES || (force && !self.segment.is_empty()) {
            let segment = std::mem::take(&mut self.segment);
            self.record(HEAP_DUMP_SEGMENT, &segment)?;
            self.segment = segment;
            self.segment.clear();
        }
        Ok(())
    }
}

/// Writes replica `k` (k ≥ 1) of the input's heap: every heap sub-record but the class dumps,
/// ids shifted by `shift`.
fn replica(
    path: &str,
    output: &mut Output,
    heap: &Heap,
    layouts: &HashMap<u64, Layout>,
    shift: u64,
) -> io::Result<()> {
    let id_size = output.id_size;
    let moved = |id: u64| {
        if id == 0 || heap.is_class(id) {
            id
        } else {
            id + shift
        }
    };
    // The statics' targets of this replica, held as the statics hold those of replica 0.
    for &target in &heap.static_targets {
        if !heap.is_class(target) {
            output.segment.push(ROOT_JNI_GLOBAL);
            output.id(moved(target));
            output.id(moved(target));
        }
    }
    let mut input = Input::open(path)?;
    input.header()?;
    let mut body = Vec::new();
    while let Some(end) = input.next_heap_record(&mut body)? {
        while input.offset < end {
            let sub = input.u8()?;
            let at = input.offset - 1;
            match sub {
                CLASS_DUMP => class_dump(&mut input, id_size, None)?,
                INSTANCE_DUMP => {
                    let id = input.id(id_size)?;
                    let trace = input.u32()?;
                    let class = input.id(id_size)?;
                    let n = input.u32()? as usize;
                    input.bytes(&mut body, n)?;
                    let layout = layouts
                        .get(&class)
                        .filter(|layout| layout.size == n)
                        .ok_or_else(|| {
                            bad(format!(
                                "byte {at}: an instance of {class:#x} with {n} bytes"
                            ))
                        })?;
                    for &offset in &layout.reference_offsets {
                        let field = &mut body[offset..offset + id_size];
                        let value = match id_size {
                            4 => u64::from(u32::from_be_bytes(field.try_into().unwrap_or([0; 4]))),
                            _ => u64::from_be_bytes(field.try_into().unwrap_or([0; 8])),
                        };
                        let value = moved(value);
                        match id_size {
                            4 => field.copy_from_slice(&(value as u32).to_be_bytes()),
                            _ => field.copy_from_slice(&value.to_be_bytes()),
                        }
                    }
                    output.segment.push(INSTANCE_DUMP);
                    output.id(moved(id));
                    output.segment.extend_from_slice(&trace.to_be_bytes());
                    output.id(class);
                    output.segment.extend_from_slice(&(n as u32).to_be_bytes());
                    output.segment.extend_from_slice(&body);
                }
                OBJ_ARRAY_DUMP => {
                    let id = input.id(id_size)?;
                    let trace = input.u32()?;
                    let n = input.u32()?;
                    let class = input.id(id_size)?;
                    output.segment.push(OBJ_ARRAY_DUMP);
                    output.id(moved(id));
                    output.segment.extend_from_slice(&trace.to_be_bytes());
                    output.segment.extend_from_slice(&n.to_be_bytes());
                    output.id(class);
                    for _ in 0..n {
                        let element = input.id(id_size)?;
                        output.id(moved(element));
                    }
                }
                PRIM_ARRAY_DUMP => {
                    let id = input.id(id_size)?;
                    let trace = input.u32()?;
                    let n = input.u32()?;
                    let ty = input.u8()?;
                    let size = type_size(ty, id_size)
                        .ok_or_else(|| bad(format!("byte {at}: array of type {ty}")))?;
                    input.bytes(&mut body, n as usize * size)?;
                    output.segment.push(PRIM_ARRAY_DUMP);
                    output.id(moved(id));
                    output.segment.extend_from_slice(&trace.to_be_bytes());
                    output.segment.extend_from_slice(&n.to_be_bytes());
                    output.segment.push(ty);
                    output.segment.extend_from_slice(&body);
                }
                ROOT_STICKY_CLASS => {
                    // A class is shared: its root is in replica 0.
                    input.id(id_size)?;
                }
                _ => {
                    let size = root_size(sub, id_size)
                        .ok_or_else(|| bad(format!("byte {at}: sub-record tag {sub:#x}")))?;
                    let object = input.id(id_size)?;
                    input.bytes(&mut body, size - id_size)?;
                    output.segment.push(sub);
                    output.id(moved(object));
                    output.segment.extend_from_slice(&body);
                }
            }
            output.flush_segment(false)?;
        }
    }
    output.flush_segment(true)
}

#[allow(
    clippy::print_stderr,
    reason = "a command-line tool: its progress and summary go to stderr"
)]
fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (input, output, copies) = match args.as_slice() {
        [_, input, output, copies] => (input, output, copies),
        _ => {
            eprintln!("usage: replicate_hprof IN.hprof OUT.hprof N");
            std::process::exit(2);
        }
    };
    let copies: u64 = match copies.parse() {
        Ok(n) if n >= 1 => n,
        _ => {
            eprintln!("N must be a whole number of copies, at least 1");
            std::process::exit(2);
        }
    };
    let (header, id_size, heap) = survey(input)?;
    let layouts = layouts(&heap, id_size)?;
    let offset = (heap.max_object_id + 1).next_power_of_two().max(1 << 20);
    let id_limit = if id_size == 4 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    if offset
        .checked_mul(copies)
        .is_none_or(|top| top - 1 > id_limit)
    {
        return Err(bad(format!(
            "{copies} copies of ids up to {:#x} do not fit {id_size}-byte ids",
            heap.max_object_id
        )));
    }
    eprintln!(
        "{input}: {} classes, {} instances, {} arrays, ids up to {:#x}; {copies} copies, \
         shifted by {offset:#x} each",
        heap.classes.len(),
        heap.instances,
        heap.arrays,
        heap.max_object_id
    );

    // Replica 0: the input as it is, but for its end-of-dump record, which goes last.
    let mut out = Output {
        out: BufWriter::with_capacity(1 << 20, File::create(output)?),
        id_size,
        segment: Vec::with_capacity(SEGMENT_BYTES + (1 << 16)),
    };
    out.out.write_all(&header)?;
    let mut copy = Input::open(input)?;
    copy.header()?;
    let mut body = Vec::new();
    let mut ended = false;
    loop {
        let tag = match copy.u8() {
            Ok(tag) => tag,
            Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(err) => return Err(err),
        };
        copy.u32()?;
        let length = copy.u32()? as usize;
        copy.bytes(&mut body, length)?;
        if tag == HEAP_DUMP_END {
            ended = true;
        } else {
            out.record(tag, &body)?;
        }
    }
    drop(body);
    for k in 1..copies {
        replica(input, &mut out, &heap, &layouts, k * offset)?;
        eprintln!("replica {k} written");
    }
    if ended {
        out.record(HEAP_DUMP_END, &[])?;
    }
    out.out.flush()?;
    eprintln!(
        "{output}: {} objects ({copies} × {} instances and arrays, + {} classes)",
        copies * (heap.instances + heap.arrays) + heap.classes.len() as u64,
        heap.instances + heap.arrays,
        heap.classes.len()
    );
    Ok(())
}
