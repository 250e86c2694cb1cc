//! Findings: the answer to "what is wrong here?" as data, made once from the views and shown
//! alike by every output (text, JSON, HTML): what grew between dumps and where, where one
//! dump's bytes accumulate, why a GPU allocation failed, which line allocated the most or the
//! growth, how high a recording went.
//!
//! A holder is named as its developer would name it: the field, variable, global or key of the
//! program's own code under which the runtime's containers hold the memory. The path is walked
//! up from the object where the bytes accumulate, through the runtime's own internals (the
//! table of a `java.util.HashMap`, a Python `list`'s slots, a V8 `Map`'s backing store), to the
//! first edge that user code named; the internals below it stay in the path.

use crate::diff::{GraphDiffView, growth_culprit};
use crate::gpu::GpuView;
use crate::sites::{SiteFrame, SitesView};
use crate::timeline::TimelineView;
use crate::view::{AccumulatedType, PathStep, Suspect, SuspectRule, SuspectsView};
use heapgraph_model::{NodeId, Runtime};

/// One step of a path from the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderStep {
    /// The object's type (`builtins.` left out).
    pub type_name: String,
    /// The object's own name where it has one (a class object's class, a module's name).
    pub label: Option<String>,
    /// The edge from the step before: a field, key, variable or root kind, `[]` (or `[3]`) for
    /// a slot; `None` at the root.
    pub edge: Option<String>,
    /// The edge's kind (`property`, `element`, `internal`, …); `None` at the root or where not
    /// known.
    pub edge_kind: Option<&'static str>,
}

impl HolderStep {
    /// The step of a chain that `who-holds` and `suspects` show.
    pub fn from_path_step(step: &PathStep) -> HolderStep {
        let type_name = &step.object.type_name;
        HolderStep {
            type_name: type_name
                .strip_prefix("builtins.")
                .unwrap_or(type_name)
                .to_owned(),
            label: Some(step.object.name.clone()).filter(|name| !name.is_empty()),
            edge: step.edge.clone(),
            edge_kind: step.edge_kind,
        }
    }
}

/// A holder: its path from the root, and which step of it the program's own code names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// From the root (first) to the object where the bytes accumulate (last).
    pub path: Vec<HolderStep>,
    /// The step whose edge the program's own code named (its `edge` is the holder's name); the
    /// steps after it are the runtime's internals.
    pub named: usize,
}

impl Holder {
    /// The holder of `path` as the rules of `runtime` name it.
    pub fn new(path: Vec<HolderStep>, runtime: Runtime) -> Holder {
        let named = named_step(&path, runtime);
        Holder { path, named }
    }

    /// The name the program holds it under: a field, a variable, a global, a key; `None` when
    /// only slots lead to it.
    pub fn name(&self) -> Option<&str> {
        self.path
            .get(self.named)?
            .edge
            .as_deref()
            .filter(|edge| !is_slot(edge))
    }

    /// The object the program holds.
    pub fn object(&self) -> Option<&HolderStep> {
        self.path.get(self.named)
    }

    /// Whose field, variable or global the name is: the object holding it (for a Python
    /// attribute or global, the instance or module whose `__dict__` holds it).
    pub fn owner(&self) -> Option<&HolderStep> {
        let from = self.named.checked_sub(1)?;
        if from >= 1 && self.path[from].edge.as_deref() == Some("__dict__") {
            return self.path.get(from - 1);
        }
        self.path.get(from)
    }

    /// The runtime's internals below the named object, down to where the bytes accumulate.
    pub fn internals(&self) -> &[HolderStep] {
        self.path.get(self.named + 1..).unwrap_or(&[])
    }
}

/// What a holder's entries grew by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrowthEntries {
    /// Their type.
    pub type_name: String,
    /// How many, before and after.
    pub count_before: u64,
    /// See `count_before`.
    pub count_after: u64,
    /// What they retain, before and after.
    pub retained_before: u64,
    /// See `retained_before`.
    pub retained_after: u64,
}

/// The answer to "what is wrong here?".
#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    /// A series or a pair of heap dumps: the holder that grew, and what it grew by.
    Growth {
        /// The container that grew (or the one object that grew itself).
        holder: Holder,
        /// The entries it grew by, when it grew by many objects of one type.
        entries: Option<GrowthEntries>,
        /// What the holder itself retains before and after, where it retains its entries.
        retained: Option<(u64, u64)>,
        /// The growth, in retained bytes.
        retained_delta: i64,
    },
    /// One heap dump: where the retained bytes pile up.
    Accumulation {
        /// Where the bytes accumulate (one object), or the largest instance (many instances).
        holder: Holder,
        /// One object, or the instances of one type.
        rule: SuspectRule,
        /// The instances (1 for one object).
        instances: u64,
        /// Their type.
        type_name: String,
        /// Bytes retained: one object's retained size (`retained_by` says whose), or the
        /// instances' together.
        retained: u64,
        /// The step of `holder.path` whose object retains `retained`: the named step when the
        /// holder retains the bytes; a step above it (a service over its set of tasks) or below
        /// it (an entry that a running frame also holds) when the holder only holds them; `None`
        /// for many instances, or when no chain reaches the object.
        retained_by: Option<usize>,
        /// As a share of the reachable heap.
        share: f64,
        /// What makes up most of it, by type.
        mostly: Option<AccumulatedType>,
        /// Bytes the holder holds besides, which it does not retain: what other suspects that
        /// name the same holder retain (an entry of a cache that a running frame holds too).
        also_holds: u64,
    },
    /// A CUDA snapshot that recorded an out-of-memory failure.
    GpuOom {
        /// Bytes the failed call asked for.
        requested: u64,
        /// Bytes CUDA reported free on the device then.
        device_free: Option<u64>,
        /// Allocated and reserved bytes at the failure.
        allocated_at: u64,
        /// See `allocated_at`.
        reserved_at: u64,
        /// The largest free block of the cache.
        largest_free_block: u64,
        /// Why the cache could not serve the request.
        cause: OomCause,
        /// The failed call's stack, most recent call first.
        frames: Vec<SiteFrame>,
        /// The stack that holds the most memory, and its bytes.
        held_by: Option<(Vec<SiteFrame>, u64)>,
    },
    /// An allocation snapshot (tracemalloc, CUDA, the Rust recorder): the line that holds the
    /// most live memory.
    Allocation {
        /// Its stack, most recent call first.
        frames: Vec<SiteFrame>,
        /// Its live bytes.
        size: u64,
        /// All live bytes.
        total: u64,
    },
    /// Two allocation snapshots: the line that allocated most of the growth.
    AllocGrowth {
        /// Its stack, most recent call first.
        frames: Vec<SiteFrame>,
        /// Its live bytes before and after.
        size_before: u64,
        /// See `size_before`.
        size_after: u64,
    },
    /// A recording: how high memory went against the limit, and where it was heading.
    Timeline {
        /// Peak RSS and when, in seconds from the start.
        peak: u64,
        /// See `peak`.
        peak_at_s: f64,
        /// The limit and where it comes from.
        limit: Option<(u64, String)>,
        /// The peak as a share of the limit.
        share_of_limit: Option<f64>,
        /// Growth in the last quarter of the recording, bytes per second, where it grew.
        growing_per_s: Option<f64>,
        /// The dumps taken: kind, when, file.
        dumps: Vec<(String, f64, String)>,
        /// The first dump that was asked for and failed: when, and why.
        failed_dump: Option<(f64, String)>,
        /// How often an act threshold (`--act`) was crossed; `None` when none was set.
        act_crossings: Option<usize>,
    },
}

impl Finding {
    /// The kind's name in JSON (`growth`, `accumulation`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Finding::Growth { .. } => "growth",
            Finding::Accumulation { .. } => "accumulation",
            Finding::GpuOom { .. } => "gpu_oom",
            Finding::Allocation { .. } => "allocation",
            Finding::AllocGrowth { .. } => "alloc_growth",
            Finding::Timeline { .. } => "timeline",
        }
    }
}

/// Why a CUDA allocation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OomCause {
    /// The cache held enough free bytes in all, but no free block as large as the request:
    /// fragmentation.
    Fragmented,
    /// The cache had no room for it, so the allocator had to reserve more, and the device (or
    /// the process's memory cap) refused.
    DeviceFull,
}

/// The holder that grew most between two heap dumps.
pub fn growth(view: &GraphDiffView) -> Option<Finding> {
    let culprit = growth_culprit(view)?;
    let entries = culprit.entries.as_ref().map(|entries| GrowthEntries {
        type_name: entries
            .path
            .last()
            .map_or_else(String::new, |step| step.type_name.clone()),
        count_before: entries.count_before,
        count_after: entries.count_after,
        retained_before: entries.retained_before,
        retained_after: entries.retained_after,
    });
    // A container whose entries something else also holds (an event loop's callbacks) does
    // not retain them: its own figures would only confuse.
    let retained = culprit
        .holder
        .as_ref()
        .filter(|holder| {
            entries
                .as_ref()
                .is_none_or(|entries| holder.retained_after >= entries.retained_after)
        })
        .map(|holder| (holder.retained_before, holder.retained_after));
    let retained_delta = match (&entries, &culprit.holder) {
        (Some(entries), _) => entries.retained_after as i64 - entries.retained_before as i64,
        (None, Some(holder)) => holder.retained_delta(),
        (None, None) => return None,
    };
    Some(Finding::Growth {
        holder: Holder::new(culprit.holder_path, view.runtime),
        entries,
        retained,
        retained_delta,
    })
}

/// Where one dump's bytes accumulate: a finding per holder of the leak suspects, those of one
/// object (which name a container) before those of many instances of one of the program's
/// types.
///
/// A figure is always one object's retained size, and the finding says whose
/// (`retained_by`): the holder's own where it retains the bytes, else the object that does
/// (the service above a set of tasks that its semaphore's waiters also hold; a checkpoint in a
/// cache that a running frame also holds). Suspects that the same holder names (a cache whose
/// entries are one suspect and whose entry in use elsewhere is another) are one finding: the
/// first figure, and what the others retain as bytes it holds besides (`also_holds`).
pub fn accumulations(view: &SuspectsView) -> Vec<Finding> {
    let mut findings: Vec<(bool, Option<NodeId>, Finding)> = Vec::new();
    for suspect in view.suspects.iter().filter(|suspect| {
        // Many instances of the runtime's own types (V8's compiled code, Java's class objects)
        // are no leak the program can fix, and name no holder.
        suspect.rule == SuspectRule::SingleObject
            || is_programs_type(&suspect.type_name, view.runtime)
    }) {
        // The chain to the entries names the container they are in, when the object where
        // the bytes accumulate holds them through another (a service, its set of tasks).
        let chain = match suspect.rule {
            SuspectRule::SingleObject if !suspect.entry_path.is_empty() => &suspect.entry_path,
            _ => &suspect.path,
        };
        let holder = Holder::new(
            chain.iter().map(HolderStep::from_path_step).collect(),
            view.runtime,
        );
        let named = chain.get(holder.named).map(|step| step.object.node);
        let (retained, retained_by) = match suspect.rule {
            SuspectRule::SingleObject => single_object_figure(suspect, chain, holder.named, view),
            SuspectRule::ManyInstances => (suspect.retained_size, None),
        };
        let single = suspect.rule == SuspectRule::SingleObject;
        // One holder, one finding: a later suspect it names adds the bytes it holds besides.
        if single
            && named.is_some()
            && let Some((_, _, Finding::Accumulation { also_holds, .. })) = findings
                .iter_mut()
                .find(|(one, node, _)| *one && *node == named)
        {
            *also_holds += retained;
            continue;
        }
        let finding = Finding::Accumulation {
            holder,
            rule: suspect.rule,
            instances: suspect.count,
            type_name: suspect.type_name.clone(),
            retained,
            retained_by,
            share: retained as f64 / view.total_retained.max(1) as f64,
            // What the point holds by type is more than one holder below it may hold.
            mostly: mostly(&suspect.accumulated, view.runtime)
                .filter(|mostly| mostly.retained_size <= retained),
            also_holds: 0,
        };
        findings.push((single, named, finding));
    }
    findings.sort_by_key(|(single, _, _)| !single);
    findings
        .into_iter()
        .map(|(_, _, finding)| finding)
        .collect()
}

/// A single-object suspect's figure and whose it is (the index of its step in `chain`): the
/// named holder's retained size where the holder retains the bytes, else the accumulation
/// point's, which the holder only holds.
fn single_object_figure(
    suspect: &Suspect,
    chain: &[PathStep],
    named: usize,
    view: &SuspectsView,
) -> (u64, Option<usize>) {
    let point = suspect
        .accumulation_point
        .as_ref()
        .or(suspect.object.as_ref());
    let at_point = point
        .and_then(|object| object.retained_size)
        .unwrap_or(suspect.retained_size);
    let Some(point) = point else {
        return (at_point, None);
    };
    let at = chain.iter().position(|step| step.object.node == point.node);
    let Some(holder) = chain.get(named) else {
        return (at_point, at);
    };
    let own = holder.object.retained_size;
    // Every chain to an entry passes through the point, which dominates it: a point above
    // the holder dominates the holder too.
    let above = at.is_some_and(|at| at < named);
    let dominates_point = suspect.point_dominators.contains(&holder.object.node);
    match (at, own) {
        (Some(at), _) if at == named => (at_point, Some(named)),
        // The holder retains the point (a map above its table): its own figure.
        (_, Some(own)) if dominates_point => (own, Some(named)),
        // A holder below the point that retains its own entries (one static field of a class
        // that keeps several) retains its own part only.
        (_, Some(own)) if above => {
            let entries = mostly(&suspect.accumulated, view.runtime)
                .map_or(0, |entries| entries.retained_size);
            if own >= entries && own <= at_point {
                (own, Some(named))
            } else {
                (at_point, at)
            }
        }
        // The holder holds the point but something else does too (a running frame): the
        // bytes are the point's.
        _ => (at_point, at),
    }
}

/// What the bytes are mostly, as the program knows them: the largest of the accumulated types
/// that is the program's own (a `Session`, not the `HashMap$Node`s that hold them), else the
/// largest.
fn mostly(accumulated: &[AccumulatedType], runtime: Runtime) -> Option<AccumulatedType> {
    accumulated
        .iter()
        .find(|row| is_programs_type(&row.type_name, runtime))
        .or(accumulated.first())
        .cloned()
}

/// Whether a type is the program's own rather than the runtime's: not a class of the Java
/// platform or an array, not one of Python's built-in types, not one of V8's categories
/// (`(closure)`, `(string)`, `system / …`) or JavaScript's built-in constructors.
pub(crate) fn is_programs_type(type_name: &str, runtime: Runtime) -> bool {
    match runtime {
        Runtime::Java => !is_jdk_type(type_name) && !type_name.ends_with("[]"),
        Runtime::Python => {
            !is_python_container(type_name)
                && !type_name.starts_with("builtins.")
                && !matches!(
                    type_name,
                    "str" | "int" | "float" | "bytes" | "function" | "type" | "module" | "code"
                )
        }
        Runtime::V8 => {
            const BUILTINS: [&str; 20] = [
                "Object",
                "Array",
                "Map",
                "Set",
                "WeakMap",
                "WeakSet",
                "Promise",
                "Error",
                "RegExp",
                "Function",
                "ArrayBuffer",
                "DataView",
                "Date",
                "Symbol",
                "String",
                "Number",
                "Boolean",
                "BigInt",
                "Proxy",
                "global",
            ];
            !type_name.starts_with('(')
                && !type_name.starts_with("system / ")
                && !BUILTINS.contains(&type_name)
                && !type_name.ends_with("Array")
        }
    }
}

/// What a CUDA snapshot says: why an allocation failed, if one did, and which stack holds the
/// most.
pub fn gpu(view: &GpuView) -> Vec<Finding> {
    let mut findings = Vec::new();
    let held_by = view
        .by_stack
        .iter()
        .find(|row| !row.frames.is_empty())
        .map(|row| (row.frames.clone(), row.size));
    if let Some(oom) = &view.oom {
        let cause = if view.inactive_bytes >= oom.requested_bytes
            && view.largest_free_block < oom.requested_bytes
        {
            OomCause::Fragmented
        } else {
            OomCause::DeviceFull
        };
        findings.push(Finding::GpuOom {
            requested: oom.requested_bytes,
            device_free: oom.device_free,
            allocated_at: oom.allocated_at.max(0) as u64,
            reserved_at: oom.reserved_at.max(0) as u64,
            largest_free_block: view.largest_free_block,
            cause,
            frames: oom.frames.clone(),
            held_by: held_by.clone(),
        });
    }
    if let Some((frames, size)) = held_by {
        findings.push(Finding::Allocation {
            frames,
            size,
            total: view.allocated_bytes,
        });
    }
    findings
}

/// What an allocation snapshot says: the line that holds the most, or, in a comparison, the
/// line that allocated most of the growth.
pub fn sites(view: &SitesView) -> Option<Finding> {
    if view.is_diff {
        // A line names the growth; allocations without a recorded stack name nothing.
        let row = view
            .rows
            .iter()
            .filter(|row| row.size_diff > 0 && !row.frames.is_empty())
            .max_by_key(|row| (row.size_diff, row.size))?;
        Some(Finding::AllocGrowth {
            frames: row.frames.clone(),
            size_before: (row.size as i64 - row.size_diff).max(0) as u64,
            size_after: row.size,
        })
    } else {
        let row = view.rows.iter().find(|row| !row.frames.is_empty())?;
        Some(Finding::Allocation {
            frames: row.frames.clone(),
            size: row.size,
            total: view.total_size,
        })
    }
}

/// How high a recording went.
pub fn timeline(view: &TimelineView) -> Option<Finding> {
    let peak = view.peak_rss?;
    Some(Finding::Timeline {
        peak: peak.bytes,
        peak_at_s: peak.t_s,
        limit: view.limit.clone(),
        share_of_limit: view.peak_share_of_limit,
        growing_per_s: view
            .growth
            .map(|growth| growth.recent_bytes_per_s)
            .filter(|&rate| rate > 0.0),
        dumps: view
            .dumps
            .iter()
            .map(|dump| (dump.kind.clone(), dump.t_s, dump.path.clone()))
            .collect(),
        failed_dump: view
            .events
            .iter()
            .find(|event| event.kind == "dump_failed")
            .map(|event| (event.t_s, event.text.clone())),
        act_crossings: view
            .thresholds
            .iter()
            .filter(|threshold| threshold.level == "act")
            .map(|threshold| threshold.crossings)
            .reduce(|a, b| a + b),
    })
}

/// Whether an edge is a slot: `[]`, `[3]`, or a bare index (V8 names a table's slots `341`).
fn is_slot(edge: &str) -> bool {
    edge.starts_with('[') || (!edge.is_empty() && edge.bytes().all(|b| b.is_ascii_digit()))
}

/// The step of `path` whose edge the program's own code named: from the last step up, past
/// slots and the edges inside the runtime's own containers; never above the root's child.
fn named_step(path: &[HolderStep], runtime: Runtime) -> usize {
    let Some(mut at) = path.len().checked_sub(1) else {
        return 0;
    };
    while at > 1 && is_internal(path, at, runtime) {
        at -= 1;
    }
    at
}

/// Whether the edge into `path[at]` is the runtime's, not the program's.
fn is_internal(path: &[HolderStep], at: usize, runtime: Runtime) -> bool {
    let step = &path[at];
    let from = &path[at - 1];
    let edge = step.edge.as_deref().unwrap_or("");
    if is_slot(edge) || step.edge_kind == Some("element") {
        return true;
    }
    match runtime {
        // A class object's edges are its static fields, which the program declares.
        Runtime::Java => is_jdk_type(&from.type_name) && from.type_name != "java.lang.Class",
        Runtime::Python => {
            // The keys of a `__dict__` are attributes or globals.
            let namespace = from.edge.as_deref() == Some("__dict__");
            !namespace && is_python_container(&from.type_name)
        }
        Runtime::V8 => {
            matches!(step.edge_kind, Some("internal" | "hidden" | "shortcut"))
                || matches!(
                    from.type_name.as_str(),
                    "Map" | "Set" | "WeakMap" | "WeakSet" | "(system)" | "(array)"
                )
                || from.type_name.starts_with("(object ")
                || from.type_name.starts_with("(internal ")
                || from.type_name.starts_with("system / PropertyCell")
        }
    }
}

/// Types of the Java platform and of the runtimes' own libraries.
fn is_jdk_type(type_name: &str) -> bool {
    const PREFIXES: [&str; 10] = [
        "java.",
        "javax.",
        "jdk.",
        "sun.",
        "com.sun.",
        "kotlin.",
        "scala.collection.",
        "android.",
        "dalvik.",
        "libcore.",
    ];
    PREFIXES.iter().any(|prefix| type_name.starts_with(prefix))
}

/// Python's own containers, whose keys and slots hold what a program put there.
fn is_python_container(type_name: &str) -> bool {
    let name = type_name.strip_prefix("builtins.").unwrap_or(type_name);
    matches!(
        name,
        "dict" | "list" | "set" | "frozenset" | "tuple" | "cell"
    ) || name.starts_with("collections.")
        || name.starts_with("weakref.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(type_name: &str, edge: Option<&str>, kind: Option<&'static str>) -> HolderStep {
        HolderStep {
            type_name: type_name.to_owned(),
            label: None,
            edge: edge.map(str::to_owned),
            edge_kind: kind,
        }
    }

    #[test]
    fn a_java_holder_is_the_users_field_not_the_maps_table() {
        let path = vec![
            step("(GC roots)", None, None),
            step(
                "jdk.internal.loader.ClassLoaders$AppClassLoader",
                Some("<JNI global>"),
                Some("internal"),
            ),
            step("java.util.ArrayList", Some("classes"), Some("property")),
            step("java.lang.Object[]", Some("elementData"), Some("property")),
            step("java.lang.Class", Some("[1]"), Some("element")),
            step(
                "com.example.SessionCache",
                Some("INSTANCE"),
                Some("property"),
            ),
            step("java.util.HashMap", Some("sessions"), Some("property")),
            step("java.util.HashMap$Node[]", Some("table"), Some("property")),
        ];
        let holder = Holder::new(path, Runtime::Java);
        assert_eq!(holder.name(), Some("sessions"));
        assert_eq!(
            holder.owner().unwrap().type_name,
            "com.example.SessionCache"
        );
        assert_eq!(holder.object().unwrap().type_name, "java.util.HashMap");
        assert_eq!(holder.internals().len(), 1);
        // A static field of a class is the program's name too.
        let holder = Holder::new(holder.path[..6].to_vec(), Runtime::Java);
        assert_eq!(holder.name(), Some("INSTANCE"));
    }

    #[test]
    fn a_python_holder_is_the_global_or_attribute_not_the_lists_slot() {
        let path = vec![
            step("(root)", None, None),
            step("module", Some("module __main__"), Some("internal")),
            step("dict", Some("__dict__"), Some("property")),
            step("dict", Some("RESPONSES"), Some("property")),
            step("__main__.Response", Some("[]"), Some("element")),
        ];
        let holder = Holder::new(path[..4].to_vec(), Runtime::Python);
        assert_eq!(holder.name(), Some("RESPONSES"));
        assert_eq!(holder.owner().unwrap().type_name, "module");
        let holder = Holder::new(path, Runtime::Python);
        assert_eq!(holder.name(), Some("RESPONSES"));
        assert_eq!(holder.internals().len(), 1);
    }

    #[test]
    fn a_v8_holder_is_the_property_not_the_maps_backing_store() {
        let path = vec![
            step("(root)", None, None),
            step("global", Some("2"), Some("shortcut")),
            step("LeakyCache", Some("requestCache"), Some("property")),
            step("Map", Some("entries"), Some("property")),
            step("(array)", Some("table"), Some("internal")),
        ];
        let holder = Holder::new(path, Runtime::V8);
        assert_eq!(holder.name(), Some("entries"));
        assert_eq!(holder.owner().unwrap().type_name, "LeakyCache");
    }
}
