//! Classes: Java names from HPROF's internal ones, each class's flattened instance layout (which
//! bytes of an instance are references, and their field names), and shallow sizes.

use super::Layout;
use super::scan::{ClassDump, TopLevel, basic, value_size};
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
    /// Shallow size of an instance under the dump's layout.
    pub(super) instance_size: u64,
    /// For `java.lang.String`: offsets of `value` and `coder` in an instance's values.
    pub(super) string_fields: Option<(u32, Option<u32>)>,
    /// Static field storage under the dump's layout, charged to the class object.
    pub(super) static_bytes: u64,
    /// Static reference fields: name, and the id they hold (0 for null).
    pub(super) static_refs: Vec<(StringId, u64)>,
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
/// CLASS (a class dump without one is named by its id) and are interned in `strings`.
///
/// Returns the classes, their index by id, and how many superclass chains were broken (a
/// superclass without a class dump) or cyclic.
pub(super) fn build_classes(
    dumps: &[ClassDump],
    top: &TopLevel<'_>,
    layout: Layout,
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
        let mut offset = 0u64;
        let mut prim_bytes = 0u64;
        let mut n_refs = 0u64;
        let mut string_fields = None;
        let is_string = names[index] == "java.lang.String";
        let (mut value_at, mut coder_at) = (None, None);
        // Own fields first, then each superclass's: the order of an instance's values.
        let mut current = Some(index);
        let mut steps = 0;
        while let Some(class_index) = current {
            steps += 1;
            if steps > dumps.len() {
                broken += 1;
                break;
            }
            let class = &dumps[class_index];
            let declares_referent = Some(class_index) == reference_class;
            for &(name_id, code) in &class.fields {
                let size = value_size(code, id_size).unwrap_or(0) as u64;
                if code == basic::OBJECT {
                    let name = field_name(name_id, strings);
                    let weak = declares_referent && strings.get(name) == "referent";
                    if is_string && class_index == index && strings.get(name) == "value" {
                        value_at = Some(offset as u32);
                    }
                    ref_fields.push(RefField {
                        offset: offset as u32,
                        name,
                        weak,
                    });
                    n_refs += 1;
                } else {
                    prim_bytes += size;
                    if is_string && class_index == index && code == basic::BYTE {
                        let name = field_name(name_id, strings);
                        if strings.get(name) == "coder" {
                            coder_at = Some(offset as u32);
                        }
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
        if let Some(value_at) = value_at {
            string_fields = Some((value_at, coder_at));
        }
        let static_bytes = dump
            .statics
            .iter()
            .map(|&(_, code, _)| match code {
                basic::OBJECT => layout.reference,
                code => value_size(code, id_size).unwrap_or(0) as u64,
            })
            .sum();
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
            instance_size: layout.instance_size(prim_bytes, n_refs),
            string_fields,
            static_bytes,
        });
    }
    (classes, by_id, broken)
}
