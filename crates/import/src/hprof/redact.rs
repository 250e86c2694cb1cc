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
//! the first gathering the names to keep and the classes' field types, the second zeroing.

use super::scan::{self, basic, sub, tag};
use crate::ImportError;
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

/// A reading position in the buffer.
struct At<'a> {
    bytes: &'a mut [u8],
    pos: usize,
    id_size: usize,
}

impl At<'_> {
    fn need(&self, n: usize, what: &str) -> Result<usize, ImportError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.bytes.len());
        end.ok_or_else(|| ImportError::Truncated {
            format: super::FORMAT,
            offset: self.bytes.len() as u64,
            expected: what.to_owned(),
        })
    }

    fn skip(&mut self, n: usize, what: &str) -> Result<usize, ImportError> {
        let start = self.pos;
        self.pos = self.need(n, what)?;
        Ok(start)
    }

    fn u1(&mut self, what: &str) -> Result<u8, ImportError> {
        let at = self.skip(1, what)?;
        Ok(self.bytes[at])
    }

    fn u2(&mut self, what: &str) -> Result<u16, ImportError> {
        let at = self.skip(2, what)?;
        Ok(u16::from_be_bytes([self.bytes[at], self.bytes[at + 1]]))
    }

    fn u4(&mut self, what: &str) -> Result<u32, ImportError> {
        let at = self.skip(4, what)?;
        let b = &self.bytes[at..at + 4];
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn id(&mut self, what: &str) -> Result<u64, ImportError> {
        let at = self.skip(self.id_size, what)?;
        Ok(self.bytes[at..at + self.id_size]
            .iter()
            .fold(0u64, |id, &b| (id << 8) | u64::from(b)))
    }

    /// Zeroes `start..end` (a value just read).
    fn zero(&mut self, start: usize, end: usize, stats: &mut RedactStats) {
        self.bytes[start..end].fill(0);
        stats.zeroed_bytes += (end - start) as u64;
    }

    fn value_size(&self, code: u8) -> Result<usize, ImportError> {
        scan::value_size(code, self.id_size).ok_or_else(|| ImportError::Malformed {
            format: super::FORMAT,
            offset: self.pos as u64,
            message: format!("unknown basic type {code}"),
        })
    }
}

/// Decides which texts are kept whole (`--keep-strings-matching`).
pub type Keep<'a> = Option<&'a dyn Fn(&str) -> bool>;

/// Redacts the HPROF dump in `bytes` in place; `keep` is asked about each text that would be
/// zeroed and keeps it when it says yes.
///
/// # Errors
/// [`ImportError`] when the bytes are not an HPROF dump or a record is cut short or malformed;
/// `bytes` is then partly redacted and must not be used.
///
/// Complexity: O(n) time in the file's bytes; O(C + U) space for C classes and U UTF8 records.
pub fn redact(bytes: &mut [u8], keep: Keep<'_>) -> Result<RedactStats, ImportError> {
    let header = scan::header(bytes)?;
    let mut stats = RedactStats {
        bytes: bytes.len() as u64,
        ..RedactStats::default()
    };
    let mut names: FxHashSet<u64> = FxHashSet::default();
    let mut utf8: Vec<(u64, usize, usize)> = Vec::new();
    let mut classes: FxHashMap<u64, ClassFields> = FxHashMap::default();
    let mut segments: Vec<(usize, usize)> = Vec::new();
    let n_bytes = bytes.len();
    {
        let mut at = At {
            bytes: &mut *bytes,
            pos: header.body_start,
            id_size: header.id_size,
        };
        while at.pos < n_bytes {
            let record_tag = at.u1("a record tag")?;
            at.u4("a record's time")?;
            let length = at.u4("a record's length")? as usize;
            let start = at.skip(length, "a record's body")?;
            let end = start + length;
            let mut body = At {
                bytes: &mut at.bytes[..end],
                pos: start,
                id_size: header.id_size,
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
                tag::HEAP_DUMP | tag::HEAP_DUMP_SEGMENT => {
                    segments.push((start, end));
                    gather_classes(&mut body, &mut names, &mut classes)?;
                }
                _ => {}
            }
        }
    }
    for &(id, start, end) in &utf8 {
        let kept = names.contains(&id)
            || keep.is_some_and(|keep| keep(&String::from_utf8_lossy(&bytes[start..end])));
        if kept {
            stats.utf8_kept += 1;
        } else {
            stats.utf8_zeroed += 1;
            bytes[start..end].fill(0);
            stats.zeroed_bytes += (end - start) as u64;
        }
    }
    let flat = flatten(&classes, header.id_size);
    for &(start, end) in &segments {
        let mut body = At {
            bytes: &mut bytes[..end],
            pos: start,
            id_size: header.id_size,
        };
        zero_values(&mut body, &flat, keep, &mut stats)?;
    }
    Ok(stats)
}

/// Pass 1 over a heap segment: the field names to keep and each class's instance field types.
fn gather_classes(
    body: &mut At<'_>,
    names: &mut FxHashSet<u64>,
    classes: &mut FxHashMap<u64, ClassFields>,
) -> Result<(), ImportError> {
    let end = body.bytes.len();
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
                names.insert(body.id("a static field's name id")?);
                let code = body.u1("a static field's type")?;
                let size = body.value_size(code)?;
                body.skip(size, "a static field's value")?;
            }
            let n_fields = body.u2("an instance field count")?;
            let mut types = Vec::with_capacity(usize::from(n_fields));
            for _ in 0..n_fields {
                names.insert(body.id("a field's name id")?);
                let code = body.u1("a field's type")?;
                body.value_size(code)?;
                types.push(code);
            }
            classes.entry(id).or_insert(ClassFields { super_id, types });
        } else {
            skip_sub_record(body, sub_tag)?;
        }
    }
    Ok(())
}

/// Pass 2 over a heap segment: the ranges of every primitive value.
fn zero_values(
    body: &mut At<'_>,
    flat: &FxHashMap<u64, Option<Flat>>,
    keep: Keep<'_>,
    stats: &mut RedactStats,
) -> Result<(), ImportError> {
    let end = body.bytes.len();
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
                let n_bytes = length
                    .checked_mul(size)
                    .ok_or_else(|| ImportError::Malformed {
                        format: super::FORMAT,
                        offset: body.pos as u64,
                        message: format!("an array of {length} elements is too long"),
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
    body: &mut At<'_>,
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
fn skip_sub_record(body: &mut At<'_>, sub_tag: u8) -> Result<(), ImportError> {
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
            return Err(ImportError::Malformed {
                format: super::FORMAT,
                offset: body.pos as u64 - 1,
                message: format!("unknown heap sub-record tag {other:#04x}"),
            });
        }
    };
    body.skip(n, "a heap sub-record")?;
    Ok(())
}
