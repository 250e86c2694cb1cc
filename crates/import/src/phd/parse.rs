//! The one pass over the bytes: the header, then every record of the dump into flat columns.
//!
//! The layout is the one OpenJ9's writer (`runtime/rasdump/heapdump.cpp`) writes and DTFJ's
//! `com.ibm.dtfj.phd.parser.HeapdumpReader` reads; `docs/formats.md` has it record by record.
//! Every integer is big-endian. Addresses are written as signed gaps from the previous record's
//! address, and references as signed gaps from their object's, both in units of 4 bytes (J9, and
//! version 5) or 8 bytes (older IBM VMs).

use super::FORMAT;
use crate::ImportError;

/// A record's size field where the dump records none (instances, arrays before version 6).
pub(super) const UNSPECIFIED: u64 = u64::MAX;

/// What a record describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Instance,
    ObjectArray,
    PrimitiveArray,
    Class,
}

/// One object, array or class record.
#[derive(Clone, Copy, Debug)]
pub(super) struct Object {
    pub(super) address: u64,
    /// Instances: their class's address. Object arrays: their element class's address.
    /// Primitive arrays: the element type code (0 `boolean` … 7 `long`). Classes: their
    /// superclass's address.
    pub(super) class: u64,
    /// The size the record states in bytes (arrays from version 6), else [`UNSPECIFIED`].
    pub(super) size: u64,
    /// Arrays: the length (for object arrays before the length field, the non-null count).
    pub(super) length: u64,
    /// End of this record's references in [`Parsed::refs`]; they start where the previous
    /// record's end.
    pub(super) refs_end: usize,
    pub(super) kind: Kind,
}

/// What a class record adds to its [`Object`].
#[derive(Clone, Debug)]
pub(super) struct ClassRecord {
    /// Index of the class's record in [`Parsed::objects`].
    pub(super) object: usize,
    /// The name as the VM spells it: `java/lang/String`, `[Ljava/lang/String;`, `[[I`.
    pub(super) name: String,
    /// The instance size the record states (for J9, header included).
    pub(super) instance_size: i32,
}

/// How the dump ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// With the end-of-dump record.
    Complete,
    /// After a complete record, without the end-of-dump record.
    BetweenRecords,
    /// Inside the record that starts at `start`.
    InRecord { start: usize, record: &'static str },
}

/// The header and the records, in file order.
pub(super) struct Parsed {
    pub(super) version: u32,
    pub(super) flags: u32,
    pub(super) is_64_bit: bool,
    pub(super) full_version: Option<String>,
    /// Object and reference counts, where the header has them (DTFJ's writer; OpenJ9 omits them).
    pub(super) totals: Option<(u32, u32)>,
    pub(super) objects: Vec<Object>,
    /// Every record's references, as addresses, nulls left out by the writer.
    pub(super) refs: Vec<u64>,
    pub(super) classes: Vec<ClassRecord>,
    pub(super) end: End,
}

/// The identifier of the file.
const IDENTIFIER: &[u8] = b"portable heap dump";

/// Header flag bits.
mod flag {
    /// Addresses are 64-bit words.
    pub(super) const WORDS_64: u32 = 1;
    /// Every object carries a hash code (J9 before R26: 2 bytes in every record).
    pub(super) const ALL_HASHED: u32 = 2;
    /// Written by a J9 VM: gaps in 4-byte units, the class address may lead the references.
    pub(super) const J9: u32 = 4;
}

/// Header tags.
mod header_tag {
    pub(super) const START: u8 = 1;
    pub(super) const TOTALS: u8 = 1;
    pub(super) const END: u8 = 2;
    pub(super) const HASHCODE_RANDOMS: u8 = 3;
    pub(super) const FULL_VERSION: u8 = 4;
    pub(super) const START_OF_DUMP: u8 = 2;
}

/// Body tags other than the short forms (`0x80` short object, `0x40` medium object, `0x20`
/// primitive array), which carry flags in their low bits.
mod tag {
    pub(super) const END_OF_DUMP: u8 = 3;
    pub(super) const LONG_OBJECT: u8 = 4;
    pub(super) const OBJECT_ARRAY: u8 = 5;
    pub(super) const CLASS: u8 = 6;
    pub(super) const LONG_PRIMITIVE_ARRAY: u8 = 7;
    pub(super) const OBJECT_ARRAY_WITH_LENGTH: u8 = 8;
}

/// The input ended inside what was being read.
struct Short;

/// Why a record could not be read.
enum Stop {
    Short,
    Corrupt { offset: usize, message: String },
}

impl From<Short> for Stop {
    fn from(_: Short) -> Stop {
        Stop::Short
    }
}

/// A position in the bytes; every read checks that its bytes are there.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        let end = self.pos.checked_add(n).ok_or(Short)?;
        let slice = self.bytes.get(self.pos..end).ok_or(Short)?;
        self.pos = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Short> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, Short> {
        Ok(self.array::<1>()?[0])
    }

    fn i8(&mut self) -> Result<i64, Short> {
        Ok(i64::from(i8::from_be_bytes(self.array()?)))
    }

    fn u16(&mut self) -> Result<u16, Short> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn i16(&mut self) -> Result<i64, Short> {
        Ok(i64::from(i16::from_be_bytes(self.array()?)))
    }

    fn u32(&mut self) -> Result<u32, Short> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn i32(&mut self) -> Result<i64, Short> {
        Ok(i64::from(i32::from_be_bytes(self.array()?)))
    }

    fn i64(&mut self) -> Result<i64, Short> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// A signed number of 1, 2, 4 or 8 bytes, by its size code 0..=3.
    fn signed(&mut self, size_code: u8) -> Result<i64, Short> {
        match size_code & 3 {
            0 => self.i8(),
            1 => self.i16(),
            2 => self.i32(),
            _ => self.i64(),
        }
    }

    /// A Java UTF string: a 2-byte length, then the bytes (read as UTF-8, as DTFJ does).
    fn utf(&mut self) -> Result<String, Short> {
        let length = usize::from(self.u16()?);
        Ok(String::from_utf8_lossy(self.take(length)?).into_owned())
    }
}

fn malformed(offset: usize, message: String) -> ImportError {
    ImportError::malformed(FORMAT, offset as u64, message)
}

/// Reads the header and every record of `bytes`.
pub(super) fn parse(bytes: &[u8]) -> Result<Parsed, ImportError> {
    let mut cursor = Cursor { bytes, pos: 0 };
    let mut reader = match header(&mut cursor) {
        Ok(reader) => reader,
        Err(Stop::Short) => {
            return Err(ImportError::truncated(
                FORMAT,
                bytes.len() as u64,
                "the header",
            ));
        }
        Err(Stop::Corrupt { offset, message }) => return Err(malformed(offset, message)),
    };
    loop {
        let start = cursor.pos;
        if start == bytes.len() {
            reader.parsed.end = End::BetweenRecords;
            break;
        }
        let refs_before = reader.parsed.refs.len();
        match reader.record(&mut cursor) {
            Ok(true) => {}
            Ok(false) => {
                reader.parsed.end = End::Complete;
                break;
            }
            Err(Stop::Short) => {
                reader.parsed.refs.truncate(refs_before);
                reader.parsed.end = End::InRecord {
                    start,
                    record: record_name(bytes[start]),
                };
                break;
            }
            Err(Stop::Corrupt { offset, message }) => return Err(malformed(offset, message)),
        }
    }
    Ok(reader.parsed)
}

/// The record that `tag` starts, for notes.
fn record_name(tag: u8) -> &'static str {
    if tag & 0x80 != 0 {
        "short object"
    } else if tag & 0x40 != 0 {
        "medium object"
    } else if tag & 0x20 != 0 {
        "primitive array"
    } else {
        match tag {
            tag::LONG_OBJECT => "long object",
            tag::OBJECT_ARRAY | tag::OBJECT_ARRAY_WITH_LENGTH => "object array",
            tag::CLASS => "class",
            tag::LONG_PRIMITIVE_ARRAY => "long primitive array",
            _ => "end-of-dump",
        }
    }
}

/// What the records are read with: the header's settings and the running state.
struct Reader {
    parsed: Parsed,
    /// Gaps are in units of `1 << gap_shift` bytes.
    gap_shift: u32,
    j9: bool,
    all_hashed: bool,
    /// Written before IBM's defect 78432 was fixed: 8-byte short primitive-array records hold
    /// two ints instead.
    pre_78432: bool,
    last_address: u64,
    /// The classes of the last four medium and long object records, which short ones index.
    class_cache: [u64; 4],
    class_cache_next: usize,
}

fn header(cursor: &mut Cursor<'_>) -> Result<Reader, Stop> {
    let identifier_length = usize::from(cursor.u16()?);
    let identifier = cursor.take(identifier_length)?;
    if identifier != IDENTIFIER {
        return Err(Stop::Corrupt {
            offset: 0,
            message: format!(
                "the header is {:?}, not \"portable heap dump\"",
                String::from_utf8_lossy(identifier)
            ),
        });
    }
    let version_at = cursor.pos;
    let version = cursor.u32()?;
    if !(4..=6).contains(&version) {
        return Err(Stop::Corrupt {
            offset: version_at,
            message: format!(
                "version {version}; heapgraph reads versions 4, 5 and 6 of the format"
            ),
        });
    }
    let flags = cursor.u32()?;
    let j9 = flags & flag::J9 != 0;
    let mut reader = Reader {
        parsed: Parsed {
            version,
            flags,
            is_64_bit: flags & flag::WORDS_64 != 0,
            full_version: None,
            totals: None,
            objects: Vec::new(),
            refs: Vec::new(),
            classes: Vec::new(),
            end: End::Complete,
        },
        gap_shift: if j9 || version == 5 { 2 } else { 3 },
        j9,
        all_hashed: flags & flag::ALL_HASHED != 0,
        pre_78432: false,
        last_address: 0,
        class_cache: [0; 4],
        class_cache_next: 0,
    };
    expect_tag(cursor, header_tag::START, "the start-of-header tag")?;
    loop {
        let at = cursor.pos;
        match cursor.u8()? {
            header_tag::TOTALS => {
                let objects = cursor.u32()?;
                let refs = cursor.u32()?;
                reader.parsed.totals = Some((objects, refs));
            }
            header_tag::END => break,
            header_tag::HASHCODE_RANDOMS => {
                cursor.take(8)?;
            }
            header_tag::FULL_VERSION => {
                let full_version = cursor.utf()?;
                // DTFJ's test for the builds with the defect.
                reader.pre_78432 = full_version.ends_with("0917");
                reader.parsed.full_version = Some(full_version);
            }
            other => {
                return Err(Stop::Corrupt {
                    offset: at,
                    message: format!(
                        "unknown header tag {other}; expected 1 (totals), 2 (end of header), 3 (hash code randoms) or 4 (full version)"
                    ),
                });
            }
        }
    }
    expect_tag(cursor, header_tag::START_OF_DUMP, "the start-of-dump tag")?;
    Ok(reader)
}

fn expect_tag(cursor: &mut Cursor<'_>, expected: u8, what: &str) -> Result<(), Stop> {
    let at = cursor.pos;
    let found = cursor.u8()?;
    if found == expected {
        Ok(())
    } else {
        Err(Stop::Corrupt {
            offset: at,
            message: format!("expected {what} ({expected}), found {found}"),
        })
    }
}

impl Reader {
    /// Reads one record; `false` at the end-of-dump record.
    fn record(&mut self, cursor: &mut Cursor<'_>) -> Result<bool, Stop> {
        let start = cursor.pos;
        let tag = cursor.u8()?;
        if tag & 0x80 != 0 {
            // Short object: class from the cache, at most 3 references, a 1- or 2-byte gap.
            let class = self.class_cache[usize::from((tag >> 5) & 3)];
            let n_refs = i64::from((tag >> 3) & 3);
            let address = self.relative(cursor, (tag >> 2) & 1)?;
            self.hash_code(cursor, false)?;
            self.refs(cursor, address, Some(class), n_refs, tag & 3)?;
            self.push(address, class, UNSPECIFIED, 0, Kind::Instance);
        } else if tag & 0x40 != 0 {
            // Medium object: its class, at most 7 references.
            let n_refs = i64::from((tag >> 3) & 7);
            let address = self.relative(cursor, (tag >> 2) & 1)?;
            let class = self.unsigned_word(cursor)?;
            self.cache_class(class);
            self.hash_code(cursor, false)?;
            self.refs(cursor, address, Some(class), n_refs, tag & 3)?;
            self.push(address, class, UNSPECIFIED, 0, Kind::Instance);
        } else if tag & 0x20 != 0 {
            let element = u64::from((tag >> 2) & 7);
            let size_code = tag & 3;
            let (address, length) = if self.pre_78432 && size_code == 3 {
                let gap = cursor.i32()?;
                let address = self.add_gap(gap);
                (address, cursor.u32()?.into())
            } else {
                let address = self.relative(cursor, size_code)?;
                let length = match size_code {
                    0 => u64::from(cursor.u8()?),
                    1 => u64::from(cursor.u16()?),
                    2 => u64::from(cursor.u32()?),
                    _ => cursor.i64()? as u64,
                };
                (address, length)
            };
            self.hash_code(cursor, false)?;
            let size = self.instance_size(cursor)?;
            self.push(address, element, size, length, Kind::PrimitiveArray);
        } else {
            match tag {
                tag::END_OF_DUMP => return Ok(false),
                tag::LONG_OBJECT => {
                    let flags = cursor.u8()?;
                    let address = self.relative(cursor, flags >> 6)?;
                    let class = self.unsigned_word(cursor)?;
                    self.cache_class(class);
                    self.hash_code(cursor, flags & 2 != 0)?;
                    let n_refs = self.count(cursor)?;
                    self.refs(cursor, address, Some(class), n_refs, (flags >> 4) & 3)?;
                    self.push(address, class, UNSPECIFIED, 0, Kind::Instance);
                }
                tag::OBJECT_ARRAY | tag::OBJECT_ARRAY_WITH_LENGTH => {
                    let flags = cursor.u8()?;
                    let address = self.relative(cursor, flags >> 6)?;
                    let element_class = self.unsigned_word(cursor)?;
                    self.hash_code(cursor, flags & 2 != 0)?;
                    let n_refs = self.count(cursor)?;
                    let first = self.parsed.refs.len();
                    self.refs(
                        cursor,
                        address,
                        Some(element_class),
                        n_refs,
                        (flags >> 4) & 3,
                    )?;
                    // The VM's slot iterator hands elements over last first.
                    self.parsed.refs[first..].reverse();
                    let length = if tag == tag::OBJECT_ARRAY_WITH_LENGTH {
                        u64::from(cursor.u32()?)
                    } else {
                        (self.parsed.refs.len() - first) as u64
                    };
                    let size = self.instance_size(cursor)?;
                    self.push(address, element_class, size, length, Kind::ObjectArray);
                }
                tag::CLASS => {
                    let flags = cursor.u8()?;
                    let address = self.relative(cursor, flags >> 6)?;
                    let instance_size = cursor.i32()? as i32;
                    self.hash_code(cursor, flags & 8 != 0)?;
                    let super_class = self.unsigned_word(cursor)?;
                    let name = cursor.utf()?;
                    let n_refs = self.count(cursor)?;
                    self.refs(cursor, address, None, n_refs, (flags >> 4) & 3)?;
                    self.parsed.classes.push(ClassRecord {
                        object: self.parsed.objects.len(),
                        name,
                        instance_size,
                    });
                    self.push(address, super_class, UNSPECIFIED, 0, Kind::Class);
                }
                tag::LONG_PRIMITIVE_ARRAY => {
                    let flags = cursor.u8()?;
                    let element = u64::from(flags >> 5);
                    let (address, length) = if flags & 0x10 == 0 {
                        let gap = cursor.i8()?;
                        (self.add_gap(gap), u64::from(cursor.u8()?))
                    } else {
                        let gap = self.signed_word(cursor)?;
                        (self.add_gap(gap), self.unsigned_word(cursor)?)
                    };
                    self.hash_code(cursor, flags & 2 != 0)?;
                    let size = self.instance_size(cursor)?;
                    self.push(address, element, size, length, Kind::PrimitiveArray);
                }
                other => {
                    return Err(Stop::Corrupt {
                        offset: start,
                        message: format!(
                            "unknown record tag {other:#04x} (after {} records)",
                            self.parsed.objects.len()
                        ),
                    });
                }
            }
        }
        Ok(true)
    }

    fn push(&mut self, address: u64, class: u64, size: u64, length: u64, kind: Kind) {
        self.parsed.objects.push(Object {
            address,
            class,
            size,
            length,
            refs_end: self.parsed.refs.len(),
            kind,
        });
        self.last_address = address;
    }

    /// `address + gap` in gap units, within the word size.
    fn offset(&self, address: u64, gap: i64) -> u64 {
        let sum = address.wrapping_add(gap.wrapping_shl(self.gap_shift) as u64);
        if self.parsed.is_64_bit {
            sum
        } else {
            sum & 0xffff_ffff
        }
    }

    fn add_gap(&self, gap: i64) -> u64 {
        self.offset(self.last_address, gap)
    }

    /// A record's address: a gap from the previous record's, of the size `size_code` says.
    fn relative(&self, cursor: &mut Cursor<'_>, size_code: u8) -> Result<u64, Short> {
        let gap = cursor.signed(size_code)?;
        Ok(self.add_gap(gap))
    }

    fn unsigned_word(&self, cursor: &mut Cursor<'_>) -> Result<u64, Short> {
        if self.parsed.is_64_bit {
            Ok(cursor.i64()? as u64)
        } else {
            Ok(u64::from(cursor.u32()?))
        }
    }

    fn signed_word(&self, cursor: &mut Cursor<'_>) -> Result<i64, Short> {
        if self.parsed.is_64_bit {
            cursor.i64()
        } else {
            cursor.i32()
        }
    }

    fn cache_class(&mut self, class: u64) {
        self.class_cache[self.class_cache_next] = class;
        self.class_cache_next = (self.class_cache_next + 1) % 4;
    }

    /// Skips the hash code: 2 bytes in every record of a J9 dump whose objects are all hashed,
    /// else 4 bytes where the record's flag says there is one.
    fn hash_code(&self, cursor: &mut Cursor<'_>, flagged: bool) -> Result<(), Short> {
        if self.j9 && self.all_hashed {
            cursor.take(2)?;
        } else if flagged {
            cursor.take(4)?;
        }
        Ok(())
    }

    /// The instance size of an array record, in the dump from version 6 on (4-byte units).
    fn instance_size(&self, cursor: &mut Cursor<'_>) -> Result<u64, Short> {
        if self.parsed.version >= 6 {
            Ok(u64::from(cursor.u32()?) * 4)
        } else {
            Ok(UNSPECIFIED)
        }
    }

    /// A 4-byte reference count, which must not be negative.
    fn count(&self, cursor: &mut Cursor<'_>) -> Result<i64, Stop> {
        let at = cursor.pos;
        let count = cursor.i32()?;
        if count < 0 {
            return Err(Stop::Corrupt {
                offset: at,
                message: format!("a negative reference count, {count}"),
            });
        }
        Ok(count)
    }

    /// `n_refs` references, gaps from `address` of the size `size_code` says. J9 writes the
    /// object's class as its first reference in some versions; that one is dropped, as DTFJ
    /// drops it (the class is linked on its own).
    fn refs(
        &mut self,
        cursor: &mut Cursor<'_>,
        address: u64,
        class: Option<u64>,
        n_refs: i64,
        size_code: u8,
    ) -> Result<(), Short> {
        for i in 0..n_refs {
            let gap = cursor.signed(size_code)?;
            let target = self.offset(address, gap);
            if self.j9 && i == 0 && Some(target) == class {
                continue;
            }
            self.parsed.refs.push(target);
        }
        Ok(())
    }
}
