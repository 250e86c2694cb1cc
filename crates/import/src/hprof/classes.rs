//! Classes: Java names from HPROF's internal ones, each class's flattened instance layout (which
//! bytes of an instance are references, and their field names), and shallow sizes under either
//! of HotSpot's field layouts.

use super::scan::{ClassDump, TopLevel, basic, value_size};
use super::{FieldLayout, Layout, align8};
use fixedbitset::FixedBitSet;
use heapgraph_model::{StringId, StringTable};
use rustc_hash::FxHashMap;

/// The class whose `referent` field does not keep its target alive.
const REFERENCE_CLASS: &str = "java.lang.ref.Reference";

/// A reference field of an instance layout.
#[derive(Clone, Copy, Debug)]
pub(super) struct RefField {
    /// Byte offset in the instance's dumped field values.
    pub(super) offset: u32,
    pub(super) name: StringId,
    /// `java.lang.ref.Reference.referent`: a weak edge.
    pub(super) weak: bool,
}

/// What the graph needs of a class.
#[derive(Clone, Debug)]
pub(super) struct ClassInfo {
    /// Its Java name, interned: the type of its instances, and the class object's name.
    pub(super) name: StringId,
    /// The class object's id.
    pub(super) id: u64,
    /// The superclass's id (0 for none).
    pub(super) super_id: u64,
    /// Class loader, signers, protection domain.
    pub(super) references: [u64; 3],
    /// Reference fields of an instance, own class first, then up the superclasses.
    pub(super) ref_fields: Vec<RefField>,
    /// Bytes of an instance's field values in the dump.
    pub(super) instance_bytes: u64,
    /// The fields each class of the hierarchy declares, `java.lang.Object` first: what the
    /// instance size follows from.
    pub(super) hierarchy: Vec<DeclaredFields>,
    /// Shallow size of an instance under the dump's layout ([`size_classes`] sets it).
    pub(super) instance_size: u64,
    /// For `java.lang.String`: where its value is in an instance's values.
    pub(super) string_fields: Option<StringFields>,
    /// Static fields by basic type, whose storage is charged to the class object.
    pub(super) statics: DeclaredFields,
    /// Static field storage under the dump's layout ([`size_classes`] sets it).
    pub(super) static_bytes: u64,
    /// Static reference fields: name, and the id they hold (0 for null).
    pub(super) static_refs: Vec<(StringId, u64)>,
}

/// Where a `java.lang.String`'s value is, as offsets in an instance's field values: the `value`
/// array, the `coder` byte (JDK 9 and later), and the `offset` and `count` ints by which strings
/// before JDK 7u6 (and Android's before M) view a slice of a shared `char[]`.
#[derive(Clone, Copy, Debug)]
pub(super) struct StringFields {
    pub(super) value: u32,
    pub(super) coder: Option<u32>,
    pub(super) slice: Option<(u32, u32)>,
}

/// The fields one class declares, counted by how HotSpot places them: 8-, 4-, 2- and 1-byte
/// primitives, and references.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct DeclaredFields {
    pub(super) longs: u32,
    pub(super) ints: u32,
    pub(super) shorts: u32,
    pub(super) bytes: u32,
    pub(super) references: u32,
    /// A class whose field offsets HotSpot hard-codes (`java.lang.String`, the boxes, …, when
    /// the boot loader defines it): before JDK 15 its references come first and no field fills
    /// an alignment gap.
    pub(super) fixed_order: bool,
}

impl DeclaredFields {
    fn count(&mut self, code: u8) {
        match code {
            basic::OBJECT => self.references += 1,
            basic::DOUBLE | basic::LONG => self.longs += 1,
            basic::INT | basic::FLOAT => self.ints += 1,
            basic::CHAR | basic::SHORT => self.shorts += 1,
            _ => self.bytes += 1,
        }
    }

    /// Bytes of these fields as statics, references at the layout's size.
    fn static_bytes(&self, layout: Layout) -> u64 {
        u64::from(self.longs) * 8
            + u64::from(self.ints) * 4
            + u64::from(self.shorts) * 2
            + u64::from(self.bytes)
            + u64::from(self.references) * layout.reference
    }
}

/// Classes whose field offsets HotSpot hard-codes (`JavaClasses::compute_hard_coded_offsets`)
/// and lays out in declaration style 0, without compaction, when the boot loader defines them.
const FIXED_ORDER_CLASSES: [&str; 16] = [
    "java.lang.AssertionStatusDirectives",
    "java.lang.Class",
    "java.lang.ClassLoader",
    "java.lang.ref.Reference",
    "java.lang.ref.SoftReference",
    "java.lang.StackTraceElement",
    "java.lang.String",
    "java.lang.Throwable",
    "java.lang.Boolean",
    "java.lang.Character",
    "java.lang.Float",
    "java.lang.Double",
    "java.lang.Byte",
    "java.lang.Short",
    "java.lang.Integer",
    "java.lang.Long",
];

/// The size of an instance whose classes declare `hierarchy` (`java.lang.Object` first).
pub(super) fn instance_size(
    hierarchy: &[DeclaredFields],
    layout: Layout,
    fields: FieldLayout,
) -> u64 {
    match fields {
        FieldLayout::PerClass => per_class_size(hierarchy, layout),
        FieldLayout::Packed => packed_size(hierarchy, layout),
    }
}

/// HotSpot up to JDK 14 (`ClassFileParser::layout_fields`, `FieldsAllocationStyle=1`,
/// `CompactFields`): each class's fields start where its superclass's end, rounded up to the
/// reference size; within a class, longs and doubles come first (a 4-byte gap before them, left
/// by the header, takes an int, shorts, bytes or a reference), then ints, shorts, bytes and
/// the references last. The instance is the last class's end, aligned to 8.
fn per_class_size(hierarchy: &[DeclaredFields], layout: Layout) -> u64 {
    let reference = layout.reference;
    let mut start = layout.header;
    let mut end = layout.header;
    for level in hierarchy {
        let (longs, mut ints, mut shorts, mut bytes, mut references) = (
            u64::from(level.longs),
            u64::from(level.ints),
            u64::from(level.shorts),
            u64::from(level.bytes),
            u64::from(level.references),
        );
        let mut next_long = if level.fixed_order {
            start + references * reference
        } else {
            start
        };
        if longs > 0 {
            let unaligned = next_long;
            next_long = unaligned.next_multiple_of(8);
            let mut gap = next_long - unaligned;
            if gap > 0 && !level.fixed_order {
                if ints > 0 {
                    ints -= 1;
                    gap = gap.saturating_sub(4);
                }
                while gap >= 2 && shorts > 0 {
                    shorts -= 1;
                    gap -= 2;
                }
                while gap > 0 && bytes > 0 {
                    bytes -= 1;
                    gap -= 1;
                }
                if gap >= reference && references > 0 {
                    references -= 1;
                }
            }
        }
        end = next_long + longs * 8 + ints * 4 + shorts * 2 + bytes;
        if !level.fixed_order && references > 0 {
            end = end.next_multiple_of(reference) + references * reference;
        }
        start = end.next_multiple_of(reference);
    }
    align8(end)
}

/// HotSpot from JDK 15 (`FieldLayoutBuilder`): the superclasses' fields keep their places, and
/// each class's primitives, largest first, then its references, take the first free slot of
/// their own size and alignment, gaps the superclasses left included.
fn packed_size(hierarchy: &[DeclaredFields], layout: Layout) -> u64 {
    // Bytes taken, as a bit per byte; objects with more than a few thousand bytes of fields are
    // rare, and the set grows as needed.
    let mut taken = FixedBitSet::new();
    let is_free = |taken: &FixedBitSet, at: u64, size: u64| {
        (at..at + size).all(|byte| !taken.contains(byte as usize))
    };
    let take = |taken: &mut FixedBitSet, at: u64, size: u64| {
        taken.grow((at + size) as usize);
        taken.insert_range(at as usize..(at + size) as usize);
    };
    take(&mut taken, 0, layout.header);
    let mut end = layout.header;
    for level in hierarchy {
        for (size, count) in [
            (8, level.longs),
            (4, level.ints),
            (2, level.shorts),
            (1, level.bytes),
            (layout.reference, level.references),
        ] {
            // Slots of a size are taken in order, so the search for the next resumes where the
            // last one was found.
            let mut slot = 0;
            for _ in 0..count {
                while !is_free(&taken, slot * size, size) {
                    slot += 1;
                }
                take(&mut taken, slot * size, size);
                end = end.max((slot + 1) * size);
            }
        }
    }
    align8(end)
}

/// The Java name of a class from its HPROF name (`java/lang/String`, `[I`,
/// `[Ljava/lang/Object;`, `com/example/A$$Lambda$1+0x0000000800c01234`): dotted, arrays in
/// source form (`int[]`, `java.lang.Object[]`), hidden classes with `/0x…` as
/// `jcmd GC.class_histogram` prints them.
pub(super) fn java_name(internal: &str) -> String {
    let dims = internal.bytes().take_while(|&b| b == b'[').count();
    let element = &internal[dims..];
    if dims == 0 {
        return class_name(element);
    }
    let base = match element {
        "Z" => "boolean".to_owned(),
        "B" => "byte".to_owned(),
        "C" => "char".to_owned(),
        "S" => "short".to_owned(),
        "I" => "int".to_owned(),
        "J" => "long".to_owned(),
        "F" => "float".to_owned(),
        "D" => "double".to_owned(),
        other => class_name(
            other
                .strip_prefix('L')
                .and_then(|name| name.strip_suffix(';'))
                .unwrap_or(other),
        ),
    };
    let mut name = base;
    for _ in 0..dims {
        name.push_str("[]");
    }
    name
}

/// `java/lang/String` → `java.lang.String`; a hidden class's `+0x…` suffix becomes `/0x…`.
fn class_name(internal: &str) -> String {
    let mut name = internal.replace('/', ".");
    if let Some(at) = name.rfind("+0x") {
        name.replace_range(at..=at, "/");
    }
    name
}

/// The Java name of a primitive array's type, by element basic type.
pub(super) fn primitive_array_name(element: u8) -> &'static str {
    match element {
        basic::BOOLEAN => "boolean[]",
        basic::CHAR => "char[]",
        basic::FLOAT => "float[]",
        basic::DOUBLE => "double[]",
        basic::BYTE => "byte[]",
        basic::SHORT => "short[]",
        basic::INT => "int[]",
        _ => "long[]",
    }
}

/// The text of string id `id`, decoded as Java's modified UTF-8 (lossy), or `None`.
pub(super) fn utf8_text(top: &TopLevel<'_>, id: u64) -> Option<String> {
    top.strings.get(&id).map(|bytes| modified_utf8(bytes))
}

/// Decodes Java's modified UTF-8: `C0 80` is NUL and astral characters are CESU-8 surrogate
/// pairs; anything that does not decode becomes U+FFFD.
pub(super) fn modified_utf8(bytes: &[u8]) -> String {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return text.to_owned();
    }
    // Decode to UTF-16 units, then let the standard decoder pair the surrogates.
    let mut units: Vec<u16> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b0 = bytes[i];
        let continuation = |k: usize| bytes.get(i + k).copied().filter(|b| b & 0xc0 == 0x80);
        if b0 < 0x80 {
            units.push(u16::from(b0));
            i += 1;
        } else if b0 & 0xe0 == 0xc0
            && let Some(b1) = continuation(1)
        {
            units.push(u16::from(b0 & 0x1f) << 6 | u16::from(b1 & 0x3f));
            i += 2;
        } else if b0 & 0xf0 == 0xe0
            && let (Some(b1), Some(b2)) = (continuation(1), continuation(2))
        {
            units.push(
                u16::from(b0 & 0x0f) << 12 | u16::from(b1 & 0x3f) << 6 | u16::from(b2 & 0x3f),
            );
            i += 3;
        } else {
            units.push(0xfffd);
            i += 1;
        }
    }
    String::from_utf16_lossy(&units)
}

/// Builds every class's layout. Classes are keyed by class object id; names come from LOAD
/// CLASS (a class dump without one is named by its id) and are interned in `strings`. Sizes are
/// left at 0 until [`size_classes`] knows the object layout.
///
/// Returns the classes, their index by id, and how many superclass chains were broken (a
/// superclass without a class dump) or cyclic.
pub(super) fn build_classes(
    dumps: &[ClassDump],
    top: &TopLevel<'_>,
    id_size: usize,
    strings: &mut StringTable,
) -> (Vec<ClassInfo>, FxHashMap<u64, u32>, u64) {
    let mut by_id: FxHashMap<u64, u32> = FxHashMap::default();
    by_id.reserve(dumps.len());
    for (index, dump) in dumps.iter().enumerate() {
        by_id.entry(dump.id).or_insert(index as u32);
    }
    let names: Vec<String> = dumps
        .iter()
        .map(|dump| {
            top.class_names
                .get(&dump.id)
                .and_then(|&name_id| utf8_text(top, name_id))
                .map_or_else(
                    || format!("<class {:#x} without a name>", dump.id),
                    |internal| java_name(&internal),
                )
        })
        .collect();
    let declared: Vec<DeclaredFields> = dumps
        .iter()
        .zip(&names)
        .map(|(dump, name)| {
            let mut fields = DeclaredFields {
                // The boot loader's classes have no loader (id 0).
                fixed_order: dump.references[0] == 0
                    && FIXED_ORDER_CLASSES.contains(&name.as_str()),
                ..DeclaredFields::default()
            };
            for &(_, code) in &dump.fields {
                fields.count(code);
            }
            fields
        })
        .collect();
    // Field names are few and shared: intern them once.
    let mut field_names: FxHashMap<u64, StringId> = FxHashMap::default();
    let mut field_name = |id: u64, strings: &mut StringTable| {
        *field_names.entry(id).or_insert_with(|| {
            let text = utf8_text(top, id).unwrap_or_else(|| format!("<field {id:#x}>"));
            strings.intern(&text)
        })
    };
    let reference_class = names.iter().position(|name| name == REFERENCE_CLASS);
    let mut broken = 0u64;
    let mut classes = Vec::with_capacity(dumps.len());
    for (index, dump) in dumps.iter().enumerate() {
        let mut ref_fields = Vec::new();
        let mut hierarchy = Vec::new();
        let mut offset = 0u64;
        let is_string = names[index] == "java.lang.String";
        let mut string_offsets: FxHashMap<&str, u32> = FxHashMap::default();
        // Own fields first, then each superclass's: the order of an instance's values.
        let mut current = Some(index);
        while let Some(class_index) = current {
            if hierarchy.len() > dumps.len() {
                broken += 1;
                break;
            }
            hierarchy.push(declared[class_index]);
            let class = &dumps[class_index];
            let declares_referent = Some(class_index) == reference_class;
            for &(name_id, code) in &class.fields {
                let size = value_size(code, id_size).unwrap_or(0) as u64;
                if code == basic::OBJECT {
                    let name = field_name(name_id, strings);
                    let weak = declares_referent && strings.get(name) == "referent";
                    ref_fields.push(RefField {
                        offset: offset as u32,
                        name,
                        weak,
                    });
                }
                if is_string && class_index == index {
                    let name = field_name(name_id, strings);
                    let wanted = match (strings.get(name), code) {
                        ("value", basic::OBJECT) => Some("value"),
                        ("coder", basic::BYTE) => Some("coder"),
                        ("offset", basic::INT) => Some("offset"),
                        ("count", basic::INT) => Some("count"),
                        _ => None,
                    };
                    if let Some(wanted) = wanted {
                        string_offsets.insert(wanted, offset as u32);
                    }
                }
                offset += size;
            }
            current = match class.super_id {
                0 => None,
                super_id => match by_id.get(&super_id) {
                    Some(&super_index) => Some(super_index as usize),
                    None => {
                        broken += 1;
                        None
                    }
                },
            };
        }
        hierarchy.reverse();
        let string_fields = string_offsets.get("value").map(|&value| StringFields {
            value,
            coder: string_offsets.get("coder").copied(),
            slice: string_offsets
                .get("offset")
                .copied()
                .zip(string_offsets.get("count").copied()),
        });
        let mut statics = DeclaredFields::default();
        for &(_, code, _) in &dump.statics {
            statics.count(code);
        }
        let static_refs = dump
            .statics
            .iter()
            .filter(|&&(_, code, value)| code == basic::OBJECT && value != 0)
            .map(|&(name_id, _, value)| (field_name(name_id, strings), value))
            .collect();
        classes.push(ClassInfo {
            name: strings.intern(&names[index]),
            id: dump.id,
            super_id: dump.super_id,
            references: dump.references,
            static_refs,
            ref_fields,
            instance_bytes: offset,
            hierarchy,
            instance_size: 0,
            string_fields,
            statics,
            static_bytes: 0,
        });
    }
    (classes, by_id, broken)
}

/// Sets every class's instance size and static bytes under `layout` and `fields`.
pub(super) fn size_classes(classes: &mut [ClassInfo], layout: Layout, fields: FieldLayout) {
    for class in classes {
        class.instance_size = instance_size(&class.hierarchy, layout, fields);
        class.static_bytes = class.statics.static_bytes(layout);
    }
}
