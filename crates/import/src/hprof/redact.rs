//! HPROF redaction in place: every value zeroed, every structure kept, so that the file stays
//! a valid HPROF of the same length that any reader opens, with the same graph.
//!
//! Zeroed: the bodies of primitive arrays (so the contents of every `String`), the primitive
//! fields of instances (found through their class's field list and its superclasses'), the
//! primitive static fields and constant-pool values of classes, and the text of every UTF8
//! record that is not a name a reader needs. Kept: ids, references, lengths, types, and the
//! UTF8 records that name classes (LOAD CLASS), fields (CLASS DUMP) and stack frames' methods,
//! signatures and source files (FRAME). A `keep` predicate keeps matching texts whole (UTF8
//! records, and `byte[]`/`char[]` read as Latin-1 or UTF-16).
//!
//! The walk is the importer's record grammar without its model: two passes over the buffer,
//! the first gathering the names to keep and the classes' field types, the second zeroing;
//! each runs over the heap dump segments in parallel.

use super::scan::{self, basic, sub, tag};
use crate::ImportError;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// What a redaction changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedactStats {
    /// Bytes of the file.
    pub bytes: u64,
    /// Bytes set to zero (bytes already zero included).
    pub zeroed_bytes: u64,
    /// UTF8 records zeroed, and kept as names.
    pub utf8_zeroed: u64,
    /// UTF8 records kept (names a reader needs, or texts `keep` accepted).
    pub utf8_kept: u64,
    /// Primitive arrays zeroed.
    pub arrays_zeroed: u64,
    /// Primitive arrays kept because `keep` accepted their text.
    pub arrays_kept: u64,
    /// Instances whose primitive fields were zeroed.
    pub instances: u64,
}

/// A class's instance fields, by basic type, and its superclass.
struct ClassFields {
    super_id: u64,
    types: Vec<u8>,
}

/// A reading position in a buffer (`&[u8]` to read, `&mut [u8]` to zero) that holds the file's
/// bytes from offset `base` on; errors name offsets in the file.
struct At<B> {
    bytes: B,
    pos: usize,
    id_size: usize,
    base: usize,
}

impl<B: AsRef<[u8]>> At<B> {
    fn len(&self) -> usize {
        self.bytes.as_ref().len()
    }

    fn need(&self, n: usize, what: &str) -> Result<usize, ImportError> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.len());
        end.ok_or_else(|| {
            ImportError::truncated(super::FORMAT, (self.base + self.len()) as u64, what)
        })
    }

    fn skip(&mut self, n: usize, what: &str) -> Result<usize, ImportError> {
        let start = self.pos;
        self.pos = self.need(n, what)?;
        Ok(start)
    }

    fn u1(&mut self, what: &str) -> Result<u8, ImportError> {
        let at = self.skip(1, what)?;
        Ok(self.bytes.as_ref()[at])
    }

    fn u2(&mut self, what: &str) -> Result<u16, ImportError> {
        let at = self.skip(2, what)?;
        let b = &self.bytes.as_ref()[at..at + 2];
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u4(&mut self, what: &str) -> Result<u32, ImportError> {
        let at = self.skip(4, what)?;
        let b = &self.bytes.as_ref()[at..at + 4];
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn id(&mut self, what: &str) -> Result<u64, ImportError> {
        let at = self.skip(self.id_size, what)?;
        Ok(self.bytes.as_ref()[at..at + self.id_size]
            .iter()
            .fold(0u64, |id, &b| (id << 8) | u64::from(b)))
    }

    fn value_size(&self, code: u8) -> Result<usize, ImportError> {
        scan::value_size(code, self.id_size).ok_or_else(|| {
            ImportError::malformed(
                super::FORMAT,
                (self.base + self.pos) as u64,
                format!("unknown basic type {code}"),
            )
        })
    }
}

impl At<&mut [u8]> {
    /// Zeroes `start..end` (a value just read).
    fn zero(&mut self, start: usize, end: usize, stats: &mut RedactStats) {
        self.bytes[start..end].fill(0);
        stats.zeroed_bytes += (end - start) as u64;
    }
}

/// Decides which texts are kept whole (`--keep-strings-matching`); asked from several threads.
pub type Keep<'a> = Option<&'a (dyn Fn(&str) -> bool + Sync)>;

/// What the first pass learnt: where the records to zero are, and how instances are laid
/// out. [`Plan::zero`] then zeroes any stretch of the file that starts and ends between
/// records, so a copy can be written piece by piece.
pub struct Plan<'k> {
    id_size: usize,
    bytes: u64,
    /// The text of each UTF8 record to zero.
    utf8_zeroed: Vec<(usize, usize)>,
    utf8_kept: u64,
    /// The body of each heap dump segment, in file order.
    segments: Vec<(usize, usize)>,
    flat: FxHashMap<u64, Option<Flat>>,
    keep: Keep<'k>,
}

impl<'k> Plan<'k> {
    /// The first pass over the HPROF dump in `bytes`: the names to keep, the classes' field
    /// types, the segments; `keep` is asked about each text that would be zeroed and keeps it
    /// when it says yes.
    ///
    /// # Errors
    /// [`ImportError`] when the bytes are not an HPROF dump or a record is cut short or
    /// malformed.
    ///
    /// Complexity: O(n) time in the file's bytes; O(C + U) space for C classes and U UTF8
    /// records.
    pub fn new(bytes: &[u8], keep: Keep<'k>) -> Result<Self, ImportError> {
        let header = scan::header(bytes)?;
        let id_size = header.id_size;
        let mut names: FxHashSet<u64> = FxHashSet::default();
        let mut utf8: Vec<(u64, usize, usize)> = Vec::new();
        let mut segments: Vec<(usize, usize)> = Vec::new();
        let mut at = At {
            bytes,
            pos: header.body_start,
            id_size,
            base: 0,
        };
        while at.pos < at.len() {
            let record_tag = at.u1("a record tag")?;
            at.u4("a record's time")?;
            let length = at.u4("a record's length")? as usize;
            let start = at.skip(length, "a record's body")?;
            let end = start + length;
            let mut body = At {
                bytes: &at.bytes[..end],
                pos: start,
                id_size,
                base: 0,
            };
            match record_tag {
                tag::UTF8 => {
                    let id = body.id("a name's id")?;
                    utf8.push((id, body.pos, end));
                }
                tag::LOAD_CLASS => {
                    body.u4("a class serial")?;
                    body.id("a class id")?;
                    body.u4("a stack trace serial")?;
                    names.insert(body.id("a class name id")?);
                }
                tag::FRAME => {
                    body.id("a frame id")?;
                    for what in [
                        "a method name id",
                        "a method signature id",
                        "a source file id",
                    ] {
                        names.insert(body.id(what)?);
                    }
                }
                tag::HEAP_DUMP | tag::HEAP_DUMP_SEGMENT => segments.push((start, end)),
                _ => {}
            }
        }
        // A sub-record never crosses its segment's end (the importer reads each on its own),
        // so the segments are walked one per task. The results merge in file order, so the
        // first dump of a class wins, as in a sequential walk, and the first error in the
        // file is the one reported.
        let gathered: Vec<_> = segments
            .par_iter()
            .map(|&(start, end)| {
                let mut body = At {
                    bytes: &bytes[start..end],
                    pos: 0,
                    id_size,
                    base: start,
                };
                gather_classes(&mut body)
            })
            .collect();
        let mut classes: FxHashMap<u64, ClassFields> = FxHashMap::default();
        for segment in gathered {
            let (field_names, dumps) = segment?;
            names.extend(field_names);
            for (id, fields) in dumps {
                classes.entry(id).or_insert(fields);
            }
        }
        let mut utf8_zeroed = Vec::new();
        let mut utf8_kept = 0;
        for &(id, start, end) in &utf8 {
            let kept = names.contains(&id)
                || keep.is_some_and(|keep| keep(&String::from_utf8_lossy(&bytes[start..end])));
            if kept {
                utf8_kept += 1;
            } else {
                utf8_zeroed.push((start, end));
            }
        }
        Ok(Plan {
            id_size,
            bytes: bytes.len() as u64,
            utf8_zeroed,
            utf8_kept,
            segments,
            flat: flatten(&classes, id_size),
            keep,
        })
    }

    /// Where a piece of the file may end: the starts of the segments' records (9 bytes of
    /// record header before each body), the first at or after `from`.
    pub fn boundary_after(&self, from: usize) -> Option<usize> {
        let i = self
            .segments
            .partition_point(|&(start, _)| start - 9 < from);
        self.segments.get(i).map(|&(start, _)| start - 9)
    }

    /// Zeroes the values in `piece`, which holds the file's bytes from `offset` on and starts
    /// and ends at record boundaries ([`Plan::boundary_after`], the file's start and end).
    /// The segments inside run in parallel. Returns what was zeroed, without the file-wide
    /// counts ([`Plan::totals`] adds them).
    ///
    /// # Errors
    /// [`ImportError`] when a segment is malformed (the first pass walked it already, so only
    /// when `piece` differs from the bytes the plan was made from).
    pub fn zero(&self, piece: &mut [u8], offset: usize) -> Result<RedactStats, ImportError> {
        let end = offset + piece.len();
        let mut stats = RedactStats::default();
        let first = self
            .utf8_zeroed
            .partition_point(|&(start, _)| start < offset);
        for &(start, stop) in &self.utf8_zeroed[first..] {
            if stop > end {
                break;
            }
            piece[start - offset..stop - offset].fill(0);
            stats.zeroed_bytes += (stop - start) as u64;
        }
        let first = self.segments.partition_point(|&(start, _)| start < offset);
        let mut slices = Vec::new();
        let mut rest: &mut [u8] = piece;
        let mut consumed = offset;
        for &(start, stop) in &self.segments[first..] {
            if stop > end {
                break;
            }
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(start - consumed);
            let (segment, tail) = tail.split_at_mut(stop - start);
            slices.push((start, segment));
            rest = tail;
            consumed = stop;
        }
        let zeroed: Vec<_> = slices
            .into_par_iter()
            .map(|(start, segment)| {
                let mut body = At {
                    bytes: segment,
                    pos: 0,
                    id_size: self.id_size,
                    base: start,
                };
                let mut stats = RedactStats::default();
                zero_values(&mut body, &self.flat, self.keep, &mut stats).map(|()| stats)
            })
            .collect();
        for segment in zeroed {
            stats.add(&segment?);
        }
        Ok(stats)
    }

    /// `zeroed` (the sum of [`Plan::zero`]'s results over the whole file) with the file-wide
    /// counts added.
    pub fn totals(&self, mut zeroed: RedactStats) -> RedactStats {
        zeroed.bytes = self.bytes;
        zeroed.utf8_zeroed = self.utf8_zeroed.len() as u64;
        zeroed.utf8_kept = self.utf8_kept;
        zeroed
    }
}

impl RedactStats {
    /// Adds the counts of `other`, a piece's.
    pub fn add(&mut self, other: &RedactStats) {
        self.zeroed_bytes += other.zeroed_bytes;
        self.arrays_zeroed += other.arrays_zeroed;
        self.arrays_kept += other.arrays_kept;
        self.instances += other.instances;
    }
}

/// Redacts the HPROF dump in `bytes` in place (a [`Plan`], then its zeroing over the whole
/// buffer).
///
/// # Errors
/// [`ImportError`] when the bytes are not an HPROF dump or a record is cut short or malformed;
/// `bytes` is then unchanged.
pub fn redact(bytes: &mut [u8], keep: Keep<'_>) -> Result<RedactStats, ImportError> {
    let plan = Plan::new(bytes, keep)?;
    let zeroed = plan.zero(bytes, 0)?;
    Ok(plan.totals(zeroed))
}

/// The field names to keep and the class dumps, in the segment's order.
type Gathered = (Vec<u64>, Vec<(u64, ClassFields)>);

/// Pass 1 over a heap segment: the field names to keep and each class's instance field types.
fn gather_classes(body: &mut At<&[u8]>) -> Result<Gathered, ImportError> {
    let mut names = Vec::new();
    let mut classes = Vec::new();
    let end = body.len();
    while body.pos < end {
        let sub_tag = body.u1("a heap sub-record tag")?;
        if sub_tag == sub::CLASS_DUMP {
            let id = body.id("a class id")?;
            body.u4("a stack trace serial")?;
            let super_id = body.id("a superclass id")?;
            for _ in 0..5 {
                body.id("a class dump's ids")?;
            }
            body.u4("an instance size")?;
            let n_constants = body.u2("a constant pool count")?;
            for _ in 0..n_constants {
                body.u2("a constant pool index")?;
                let code = body.u1("a constant's type")?;
                let size = body.value_size(code)?;
                body.skip(size, "a constant's value")?;
            }
            let n_statics = body.u2("a static field count")?;
            for _ in 0..n_statics {
                names.push(body.id("a static field's name id")?);
                let code = body.u1("a static field's type")?;
                let size = body.value_size(code)?;
                body.skip(size, "a static field's value")?;
            }
            let n_fields = body.u2("an instance field count")?;
            let mut types = Vec::with_capacity(usize::from(n_fields));
            for _ in 0..n_fields {
                names.push(body.id("a field's name id")?);
                let code = body.u1("a field's type")?;
                body.value_size(code)?;
                types.push(code);
            }
            classes.push((id, ClassFields { super_id, types }));
        } else {
            skip_sub_record(body, sub_tag)?;
        }
    }
    Ok((names, classes))
}

/// Pass 2 over a heap segment: the ranges of every primitive value.
fn zero_values(
    body: &mut At<&mut [u8]>,
    flat: &FxHashMap<u64, Option<Flat>>,
    keep: Keep<'_>,
    stats: &mut RedactStats,
) -> Result<(), ImportError> {
    let end = body.len();
    let id_size = body.id_size;
    while body.pos < end {
        let sub_tag = body.u1("a heap sub-record tag")?;
        match sub_tag {
            sub::CLASS_DUMP => {
                body.id("a class id")?;
                body.u4("a stack trace serial")?;
                for _ in 0..6 {
                    body.id("a class dump's ids")?;
                }
                body.u4("an instance size")?;
                let n_constants = body.u2("a constant pool count")?;
                for _ in 0..n_constants {
                    body.u2("a constant pool index")?;
                    let code = body.u1("a constant's type")?;
                    let size = body.value_size(code)?;
                    let at = body.skip(size, "a constant's value")?;
                    if code != basic::OBJECT {
                        body.zero(at, at + size, stats);
                    }
                }
                let n_statics = body.u2("a static field count")?;
                for _ in 0..n_statics {
                    body.id("a static field's name id")?;
                    let code = body.u1("a static field's type")?;
                    let size = body.value_size(code)?;
                    let at = body.skip(size, "a static field's value")?;
                    if code != basic::OBJECT {
                        body.zero(at, at + size, stats);
                    }
                }
                let n_fields = body.u2("an instance field count")?;
                body.skip(usize::from(n_fields) * (id_size + 1), "instance fields")?;
            }
            sub::INSTANCE_DUMP => {
                body.id("an object id")?;
                body.u4("a stack trace serial")?;
                let class_id = body.id("a class id")?;
                let n_bytes = body.u4("an instance's field bytes")? as usize;
                let start = body.skip(n_bytes, "an instance's fields")?;
                stats.instances += 1;
                zero_fields(body, flat, class_id, start, n_bytes, stats);
            }
            sub::PRIM_ARRAY_DUMP => {
                body.id("an array id")?;
                body.u4("a stack trace serial")?;
                let length = body.u4("an array length")? as usize;
                let element = body.u1("an element type")?;
                let size = body.value_size(element)?;
                let n_bytes = length.checked_mul(size).ok_or_else(|| {
                    ImportError::malformed(
                        super::FORMAT,
                        (body.base + body.pos) as u64,
                        format!("an array of {length} elements is too long"),
                    )
                })?;
                let start = body.skip(n_bytes, "an array's elements")?;
                let data = &body.bytes[start..start + n_bytes];
                let kept = keep.is_some_and(|keep| {
                    let text = match element {
                        basic::BYTE => data.iter().map(|&b| char::from(b)).collect::<String>(),
                        basic::CHAR => String::from_utf16_lossy(
                            &data
                                .chunks_exact(2)
                                .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
                                .collect::<Vec<u16>>(),
                        ),
                        _ => return false,
                    };
                    n_bytes > 0 && keep(&text)
                });
                if kept {
                    stats.arrays_kept += 1;
                } else {
                    stats.arrays_zeroed += 1;
                    body.zero(start, start + n_bytes, stats);
                }
            }
            other => skip_sub_record(body, other)?,
        }
    }
    Ok(())
}

/// The primitive fields of an instance of `class_id` whose values start at `start`: its
/// class's fields first, then each superclass's. An instance of a class without a dump, or
/// whose bytes disagree with its classes, is zeroed whole (the importer reads no reference
/// from it either).
fn zero_fields(
    body: &mut At<&mut [u8]>,
    flat: &FxHashMap<u64, Option<Flat>>,
    class_id: u64,
    start: usize,
    n_bytes: usize,
    stats: &mut RedactStats,
) {
    match flat.get(&class_id) {
        Some(Some(layout)) if layout.n_bytes == n_bytes => {
            for &(at, size) in &layout.primitives {
                let at = start + at as usize;
                body.zero(at, at + size as usize, stats);
            }
        }
        _ => body.zero(start, start + n_bytes, stats),
    }
}

/// An instance layout flattened over the class and its superclasses: its bytes, and where its
/// primitive values are (offset, size).
struct Flat {
    n_bytes: usize,
    primitives: Vec<(u32, u32)>,
}

/// Each class's [`Flat`] layout; `None` for a class whose chain of superclasses breaks (a
/// missing class dump, or a cycle).
fn flatten(classes: &FxHashMap<u64, ClassFields>, id_size: usize) -> FxHashMap<u64, Option<Flat>> {
    classes
        .keys()
        .map(|&class_id| {
            let mut primitives = Vec::new();
            let mut offset = 0usize;
            let mut class = class_id;
            let mut steps = 0;
            while class != 0 {
                let Some(fields) = classes.get(&class).filter(|_| steps <= classes.len()) else {
                    return (class_id, None);
                };
                for &code in &fields.types {
                    let size = scan::value_size(code, id_size).unwrap_or(0);
                    if code != basic::OBJECT && size > 0 {
                        primitives.push((offset as u32, size as u32));
                    }
                    offset += size;
                }
                class = fields.super_id;
                steps += 1;
            }
            let flat = Flat {
                n_bytes: offset,
                primitives,
            };
            (class_id, Some(flat))
        })
        .collect()
}

/// Skips a sub-record that holds no value to zero (roots, object arrays).
fn skip_sub_record<B: AsRef<[u8]>>(body: &mut At<B>, sub_tag: u8) -> Result<(), ImportError> {
    let id_size = body.id_size;
    let n = match sub_tag {
        sub::ROOT_UNKNOWN
        | sub::ROOT_STICKY_CLASS
        | sub::ROOT_MONITOR_USED
        | sub::ROOT_INTERNED_STRING
        | sub::ROOT_FINALIZING
        | sub::ROOT_DEBUGGER
        | sub::ROOT_REFERENCE_CLEANUP
        | sub::ROOT_VM_INTERNAL
        | sub::ROOT_UNREACHABLE => id_size,
        sub::ROOT_JNI_GLOBAL => 2 * id_size,
        sub::ROOT_JNI_LOCAL | sub::ROOT_JAVA_FRAME | sub::ROOT_JNI_MONITOR => id_size + 8,
        sub::ROOT_NATIVE_STACK | sub::ROOT_THREAD_BLOCK => id_size + 4,
        sub::ROOT_THREAD_OBJECT => id_size + 8,
        sub::HEAP_DUMP_INFO => 4 + id_size,
        sub::INSTANCE_DUMP => {
            body.skip(2 * id_size + 4, "an instance dump")?;
            body.u4("an instance's field bytes")? as usize
        }
        sub::OBJ_ARRAY_DUMP => {
            body.skip(id_size + 4, "an array dump")?;
            let length = body.u4("an array length")? as usize;
            body.id("an array class")?;
            length.saturating_mul(id_size)
        }
        sub::PRIM_ARRAY_DUMP | sub::PRIM_ARRAY_NODATA => {
            body.skip(id_size + 4, "an array dump")?;
            let length = body.u4("an array length")? as usize;
            let element = body.u1("an element type")?;
            let size = body.value_size(element)?;
            if sub_tag == sub::PRIM_ARRAY_DUMP {
                length.saturating_mul(size)
            } else {
                0
            }
        }
        other => {
            return Err(ImportError::malformed(
                super::FORMAT,
                (body.base + body.pos) as u64 - 1,
                format!("unknown heap sub-record tag {other:#04x}"),
            ));
        }
    };
    body.skip(n, "a heap sub-record")?;
    Ok(())
}
