//! Which object and field layout the JVM used, which HPROF does not record: read from the
//! object addresses where the ids are addresses, else implied by what the dump says about the
//! JVM (the HPROF version, the writer, the system properties the heap holds), else assumed and
//! said so. `docs/formats.md` states the rules.

use super::classes::{ClassInfo, instance_size};
use super::scan::Header;
use super::{FieldLayout, Layout, ObjectLayout, Options};
use heapgraph_model::{EdgeKind, EdgeName, HeapGraph};
use rustc_hash::FxHashMap;

/// HPROF's version string for Android's dumps.
const ANDROID_VERSION: &str = "JAVA PROFILE 1.0.3";

/// HPROF's version string for JDK 5 and 6's dumps (and the hprof agent's, before 1.0.2).
const OLDEST_VERSION: &str = "JAVA PROFILE 1.0.1";

/// What the first pass saw of the object ids.
pub(super) struct IdEvidence<'a> {
    /// Objects read.
    pub(super) objects: u64,
    /// Ids that are not multiples of 8.
    pub(super) unaligned: u64,
    /// Array layout votes, per [`Layout::CANDIDATES`].
    pub(super) votes: [u64; 5],
    /// Sampled instances: class id and distance to the next object.
    pub(super) instance_gaps: &'a [(u64, u64)],
}

impl IdEvidence<'_> {
    /// Whether the ids are object addresses: every JVM aligns objects to 8 bytes, so ids that
    /// mostly are not (the hprof agent numbers objects serially: 7 in 8 are not) are not
    /// addresses. A few may be (Android writes its class objects' ids one past their address).
    pub(super) fn are_addresses(&self) -> bool {
        self.unaligned * 4 <= self.objects
    }
}

/// How a layout was chosen, for the notes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Source {
    /// `--layout` or `--field-layout`.
    Forced,
    /// The object addresses fit it.
    Addresses,
    /// What the dump says about the JVM implies it; the text says what.
    Implied(String),
    /// Nothing in the dump tells; this is the default, to be checked against the system
    /// properties once the graph is built.
    Unknown,
    /// No class's size depends on it.
    Irrelevant,
}

/// The layouts chosen, and why.
#[derive(Clone, Debug)]
pub(super) struct Decision {
    pub(super) layout: ObjectLayout,
    pub(super) layout_source: Source,
    pub(super) fields: FieldLayout,
    pub(super) fields_source: Source,
}

impl Decision {
    /// Whether the system properties should be read to check an assumption.
    pub(super) fn is_provisional(&self) -> bool {
        self.layout_source == Source::Unknown || self.fields_source == Source::Unknown
    }

    /// The notes that say which layouts were used and why.
    pub(super) fn notes(&self, header: &Header, ids_are_addresses: bool) -> Vec<String> {
        let sizes: Layout = self.layout.sizes();
        let why = match &self.layout_source {
            Source::Forced => ", as --layout says".to_owned(),
            Source::Addresses => ", as the object addresses show".to_owned(),
            Source::Implied(why) => format!(": {why} (--layout overrides)"),
            Source::Unknown | Source::Irrelevant => {
                " (neither the object addresses nor the dump's system properties tell: an assumption, which --layout overrides)".to_owned()
            }
        };
        let mut notes = vec![format!(
            "{}, {}-byte ids; sizes assume {}{why}",
            header.version, header.id_size, sizes.description
        )];
        if !ids_are_addresses {
            notes.push(
                "the object ids are serial numbers, not addresses (the hprof agent writes them so): they tell nothing of the layout".to_owned(),
            );
        }
        let fields = match self.fields {
            FieldLayout::PerClass => "fields laid out class by class, as HotSpot did up to JDK 14",
            FieldLayout::Packed => {
                "fields packed across the class hierarchy, as HotSpot does from JDK 15"
            }
        };
        match &self.fields_source {
            Source::Irrelevant => {}
            Source::Forced => notes.push(format!("{fields}, as --field-layout says")),
            Source::Addresses => notes.push(format!("{fields}, as the object addresses show")),
            Source::Implied(why) => {
                notes.push(format!("{fields}: {why} (--field-layout overrides)"));
            }
            Source::Unknown => notes.push(format!(
                "{fields} (nothing in the dump tells: an assumption, which --field-layout overrides)"
            )),
        }
        notes
    }
}

/// Chooses the layouts from the options and from what the first pass saw.
pub(super) fn decide(
    options: &Options,
    header: &Header,
    ids: &IdEvidence<'_>,
    classes: &[ClassInfo],
    class_by_id: &FxHashMap<u64, u32>,
) -> Decision {
    let addresses = ids.are_addresses();
    let android = header.version == ANDROID_VERSION;
    let (layout, layout_source) = match options.layout {
        Some(layout) => (layout, Source::Forced),
        // ART's objects have 8-byte headers and 4-byte references on every device.
        None if android => (
            ObjectLayout::ThirtyTwoBit,
            Source::Implied(
                "Android's runtime (ART) lays out objects so on every device".to_owned(),
            ),
        ),
        None if header.id_size == 4 && addresses => (ObjectLayout::ThirtyTwoBit, Source::Addresses),
        None if addresses => {
            let best = (0..4)
                .max_by_key(|&i| (ids.votes[i], std::cmp::Reverse(i)))
                .unwrap_or(0);
            if ids.votes[best] > 0 {
                (ObjectLayout::ALL[best], Source::Addresses)
            } else {
                (ObjectLayout::CompressedOops, Source::Unknown)
            }
        }
        None if header.id_size == 4 => (ObjectLayout::ThirtyTwoBit, Source::Unknown),
        None => (ObjectLayout::CompressedOops, Source::Unknown),
    };
    let sizes = layout.sizes();
    let (fields, fields_source) = if let Some(fields) = options.fields {
        (fields, Source::Forced)
    } else if !layouts_differ(classes, sizes) {
        (FieldLayout::Packed, Source::Irrelevant)
    } else if android {
        // ART packs each class's fields after its superclass's, filling alignment gaps, which
        // the packed rule follows; docs/formats.md says so, and a note would only confuse.
        (FieldLayout::Packed, Source::Irrelevant)
    } else if header.version == OLDEST_VERSION {
        (
            FieldLayout::PerClass,
            Source::Implied("HPROF 1.0.1 dumps come from JDK 6 or earlier".to_owned()),
        )
    } else if !addresses {
        (
            FieldLayout::PerClass,
            Source::Implied(
                "the hprof agent wrote this dump, and it was removed in JDK 9".to_owned(),
            ),
        )
    } else {
        match vote_fields(ids.instance_gaps, classes, class_by_id, sizes) {
            Some(fields) => (fields, Source::Addresses),
            None => (FieldLayout::Packed, Source::Unknown),
        }
    };
    Decision {
        layout,
        layout_source,
        fields,
        fields_source,
    }
}

/// Whether any class's instance size depends on the field layout.
fn layouts_differ(classes: &[ClassInfo], sizes: Layout) -> bool {
    classes.iter().any(|class| {
        instance_size(&class.hierarchy, sizes, FieldLayout::PerClass)
            != instance_size(&class.hierarchy, sizes, FieldLayout::Packed)
    })
}

/// The field layout that the sampled distances between objects fit, among the instances whose
/// size depends on it; `None` when none of them was sampled next to another object.
fn vote_fields(
    gaps: &[(u64, u64)],
    classes: &[ClassInfo],
    class_by_id: &FxHashMap<u64, u32>,
    sizes: Layout,
) -> Option<FieldLayout> {
    let mut by_class: FxHashMap<u32, (u64, u64)> = FxHashMap::default();
    let (mut per_class, mut packed) = (0u64, 0u64);
    for &(class_id, gap) in gaps {
        let Some(&index) = class_by_id.get(&class_id) else {
            continue;
        };
        let (per, pack) = *by_class.entry(index).or_insert_with(|| {
            let hierarchy = &classes[index as usize].hierarchy;
            (
                instance_size(hierarchy, sizes, FieldLayout::PerClass),
                instance_size(hierarchy, sizes, FieldLayout::Packed),
            )
        });
        if per != pack {
            per_class += u64::from(gap == per);
            packed += u64::from(gap == pack);
        }
    }
    match per_class.cmp(&packed) {
        _ if per_class + packed == 0 => None,
        std::cmp::Ordering::Greater => Some(FieldLayout::PerClass),
        _ => Some(FieldLayout::Packed),
    }
}

/// System properties the importer reads to tell the JVM.
const PROPERTIES: [&str; 6] = [
    "java.vm.name",
    "sun.arch.data.model",
    "os.arch",
    "java.specification.version",
    "java.version",
    "java.vm.version",
];

/// The system properties of [`PROPERTIES`] that the heap holds: the entries of
/// `java.util.Properties` (a `Hashtable$Entry`, `HashMap$Node` or `ConcurrentHashMap$Node`)
/// whose `key` is one of them, with the string their `value` (or `val`) holds.
pub(super) fn system_properties(graph: &HeapGraph) -> FxHashMap<&'static str, String> {
    let mut found = FxHashMap::default();
    let strings = graph.strings();
    let (Some(string_type), Some(key)) = (strings.find("java.lang.String"), strings.find("key"))
    else {
        return found;
    };
    let values: Vec<_> = ["value", "val"]
        .iter()
        .filter_map(|name| strings.find(name))
        .collect();
    let is_string = |node| graph.type_id(node) == string_type;
    for node in graph.nodes() {
        let mut key_name = None;
        let mut value = None;
        for edge in graph.edge_range(node) {
            if graph.edge_kind(edge) != EdgeKind::Property {
                continue;
            }
            let target = graph.edge_target(edge);
            match graph.edge_name(edge) {
                EdgeName::Named(name) if name == strings.get(key) && is_string(target) => {
                    key_name = PROPERTIES
                        .iter()
                        .find(|&&wanted| wanted == graph.name(target));
                }
                EdgeName::Named(name)
                    if values.iter().any(|&id| strings.get(id) == name) && is_string(target) =>
                {
                    value = Some(graph.name(target));
                }
                _ => {}
            }
        }
        if let (Some(&key), Some(value)) = (key_name, value) {
            found.entry(key).or_insert_with(|| value.to_owned());
        }
    }
    found
}

/// The layouts the system properties imply, where they tell: a 32- or 64-bit JVM (with
/// compressed oops where that JVM turns them on by default), and HotSpot's field layout by the
/// Java version.
pub(super) fn implied_by(properties: &FxHashMap<&'static str, String>) -> Option<Decision> {
    let vm_name = properties.get("java.vm.name");
    let bits = properties
        .get("sun.arch.data.model")
        .and_then(|model| model.parse::<u32>().ok())
        .or_else(|| {
            vm_name.and_then(|name| {
                if name.contains("64-Bit") {
                    Some(64)
                } else if name.contains("Client") || name.contains("32-Bit") {
                    Some(32)
                } else {
                    None
                }
            })
        })
        .or_else(|| {
            properties
                .get("os.arch")
                .map(|arch| if arch.contains("64") { 64 } else { 32 })
        })?;
    let version = properties
        .get("java.version")
        .or_else(|| properties.get("java.specification.version"))?;
    let (feature, update) = java_version(version)?;
    let evidence = format!(
        "the JVM's system properties say {}java.version {version}",
        vm_name.map_or_else(String::new, |name| format!("java.vm.name {name:?}, "))
    );
    // Compressed oops are on by default for heaps under 32 GB from JDK 6u23 (and 7).
    let layout = match bits {
        32 => ObjectLayout::ThirtyTwoBit,
        _ if feature > 6 || update >= 23 => ObjectLayout::CompressedOops,
        _ => ObjectLayout::Uncompressed,
    };
    let fields = if feature >= 15 {
        FieldLayout::Packed
    } else {
        FieldLayout::PerClass
    };
    let layout_evidence = if layout == ObjectLayout::CompressedOops {
        format!("{evidence}, and that JVM compresses oops by default for heaps under 32 GB")
    } else {
        evidence.clone()
    };
    Some(Decision {
        layout,
        layout_source: Source::Implied(layout_evidence),
        fields,
        fields_source: Source::Implied(evidence),
    })
}

/// The feature release and update of a `java.version`: `1.6.0_31` → (6, 31), `17.0.2` →
/// (17, 2), `11` → (11, 0).
fn java_version(text: &str) -> Option<(u32, u32)> {
    let text = text.trim();
    let mut parts = text.split(['.', '_', '-', '+']);
    let first: u32 = parts.next()?.parse().ok()?;
    if first == 1 {
        let feature = parts.next()?.parse().ok()?;
        let _micro = parts.next();
        let update = parts.next().and_then(|u| u.parse().ok()).unwrap_or(0);
        Some((feature, update))
    } else {
        let _interim = parts.next();
        let update = parts.next().and_then(|u| u.parse().ok()).unwrap_or(0);
        Some((first, update))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_versions_of_every_scheme() {
        assert_eq!(java_version("1.6.0_31"), Some((6, 31)));
        assert_eq!(java_version("1.8.0_402"), Some((8, 402)));
        assert_eq!(java_version("1.6"), Some((6, 0)));
        assert_eq!(java_version("17.0.15"), Some((17, 15)));
        assert_eq!(java_version("11"), Some((11, 0)));
        assert_eq!(java_version("21-ea"), Some((21, 0)));
        assert_eq!(java_version("x"), None);
    }
}
