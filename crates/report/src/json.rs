//! JSON output: versioned schemas (`heapgraph.summary/1`, …) converted by hand from the views.
//!
//! Field names are a contract documented in `docs/json.md`; add fields, never rename them.

use crate::DumpInfo;
use heapgraph_analyzer::backrefs::LeakingView;
use heapgraph_analyzer::diff::GraphDiffView;
use heapgraph_analyzer::explore::{ChildrenView, InstancesView, ReferencesView};
use heapgraph_analyzer::findings::{Finding, Holder, OomCause};
use heapgraph_analyzer::gpu::GpuView;
use heapgraph_analyzer::leaks::LeaksView;
use heapgraph_analyzer::sites::{SiteFrame, SiteRow, SitesView};
use heapgraph_analyzer::timeline::TimelineView;
use heapgraph_analyzer::{
    BigDropsView, DominatorTreeView, HoldersView, ObjectView, PathStep, RankBy, StringsView,
    SummaryView, SuspectsView, WeaklyHeld,
};
use serde::Serialize;

mod waste;
pub use waste::{groups, waste};

#[derive(Serialize)]
pub(crate) struct Dump<'a> {
    file: &'a str,
    format: &'a str,
    runtime: &'a str,
    notes: &'a [String],
}

impl<'a> From<&'a DumpInfo> for Dump<'a> {
    fn from(info: &'a DumpInfo) -> Self {
        Dump {
            file: &info.file,
            format: &info.source_format,
            runtime: &info.runtime,
            notes: &info.notes,
        }
    }
}

#[derive(Serialize)]
pub(crate) struct Object<'a> {
    id: u64,
    kind: &'a str,
    #[serde(rename = "type")]
    type_name: &'a str,
    name: &'a str,
    shallow_size: u64,
    retained_size: Option<u64>,
    /// The text's "objects held".
    retained_count: u64,
    distance: Option<u32>,
}

impl<'a> From<&'a ObjectView> for Object<'a> {
    fn from(view: &'a ObjectView) -> Self {
        Object {
            id: view.id,
            kind: &view.kind,
            type_name: &view.type_name,
            name: &view.name,
            shallow_size: view.shallow_size,
            retained_size: view.retained_size,
            retained_count: view.retained_count,
            distance: view.distance,
        }
    }
}

#[derive(Serialize)]
struct TypeEntry<'a> {
    #[serde(rename = "type")]
    type_name: &'a str,
    count: u64,
    shallow_size: u64,
    retained_size: u64,
}

#[derive(Serialize)]
struct Summary<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    findings: Vec<FindingEntry<'a>>,
    objects: u64,
    references: u64,
    total_shallow_size: u64,
    reachable_objects: u64,
    reachable_size: u64,
    unreachable_objects: u64,
    unreachable_size: u64,
    weakly_held: Vec<WeaklyHeldEntry<'a>>,
    garbage_objects: u64,
    garbage_size: u64,
    heap_size: u64,
    kind: Option<&'a str>,
    types: Vec<TypeEntry<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dumps: Vec<FileDumpEntry>,
}

#[derive(Serialize)]
struct WeaklyHeldEntry<'a> {
    kind: &'static str,
    objects: u64,
    size: u64,
    through: Vec<HeldThroughEntry<'a>>,
}

#[derive(Serialize)]
struct HeldThroughEntry<'a> {
    reference_type: &'a str,
    holder_type: Option<&'a str>,
    objects: u64,
    size: u64,
}

impl<'a> From<&'a WeaklyHeld> for WeaklyHeldEntry<'a> {
    fn from(held: &'a WeaklyHeld) -> Self {
        WeaklyHeldEntry {
            kind: held.kind.name(),
            objects: held.objects,
            size: held.size,
            through: held
                .through
                .iter()
                .map(|row| HeldThroughEntry {
                    reference_type: &row.reference_type,
                    holder_type: row.holder_type.as_deref(),
                    objects: row.objects,
                    size: row.size,
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct FileDumpEntry {
    index: usize,
    start: u64,
    end: u64,
    objects: u64,
    complete: bool,
    read: bool,
}

/// `heapgraph.summary/1`, with at most `max_types` types (all when `None`).
pub fn summary(
    view: &SummaryView,
    info: &DumpInfo,
    found: &[Finding],
    max_types: Option<usize>,
) -> String {
    let shown = max_types.unwrap_or(usize::MAX).min(view.types.len());
    to_string(&Summary {
        schema: "heapgraph.summary/1",
        dump: info.into(),
        findings: findings(found),
        objects: view.objects,
        references: view.references,
        total_shallow_size: view.total_shallow_size,
        reachable_objects: view.reachable_objects,
        reachable_size: view.reachable_size,
        unreachable_objects: view.unreachable_objects,
        unreachable_size: view.unreachable_size,
        weakly_held: view.weakly_held.iter().map(WeaklyHeldEntry::from).collect(),
        garbage_objects: view.garbage_objects,
        garbage_size: view.garbage_size,
        heap_size: view.heap_size,
        kind: view.kind.as_deref(),
        types: view.types[..shown]
            .iter()
            .map(|row| TypeEntry {
                type_name: &row.type_name,
                count: row.count,
                shallow_size: row.shallow_size,
                retained_size: row.retained_size,
            })
            .collect(),
        dumps: info
            .dumps
            .iter()
            .map(|dump| FileDumpEntry {
                index: dump.index,
                start: dump.bytes.start,
                end: dump.bytes.end,
                objects: dump.objects,
                complete: dump.complete,
                read: dump.read,
            })
            .collect(),
    })
}

#[derive(Serialize)]
struct Top<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    by: &'static str,
    objects: Vec<Object<'a>>,
}

/// `heapgraph.top/1`.
pub fn top(objects: &[ObjectView], by: RankBy, info: &DumpInfo) -> String {
    to_string(&Top {
        schema: "heapgraph.top/1",
        dump: info.into(),
        by: crate::rank_name(by),
        objects: objects.iter().map(Object::from).collect(),
    })
}

#[derive(Serialize)]
struct Step<'a> {
    id: u64,
    #[serde(rename = "type")]
    type_name: &'a str,
    name: &'a str,
    edge: Option<&'a str>,
    edge_kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reference_kind: Option<&'static str>,
}

impl<'a> From<&'a PathStep> for Step<'a> {
    fn from(step: &'a PathStep) -> Self {
        Step {
            id: step.object.id,
            type_name: &step.object.type_name,
            name: &step.object.name,
            edge: step.edge.as_deref(),
            edge_kind: step.edge_kind,
            reference_kind: step.reference_kind.map(|kind| kind.name()),
        }
    }
}

#[derive(Serialize)]
struct Holders<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    target: Object<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    matches: Option<u64>,
    dominator_chain: Vec<Object<'a>>,
    held_by: &'static str,
    paths: Vec<Vec<Step<'a>>>,
    path_counts: &'a [u64],
}

/// `heapgraph.holders/1`.
pub fn holders(view: &HoldersView, info: &DumpInfo) -> String {
    let paths = view
        .paths
        .iter()
        .map(|path| path.iter().map(Step::from).collect())
        .collect();
    to_string(&Holders {
        schema: "heapgraph.holders/1",
        dump: info.into(),
        target: (&view.target).into(),
        matches: view.matches,
        dominator_chain: view.dominator_chain.iter().map(Object::from).collect(),
        held_by: view.held_by.name(),
        paths,
        path_counts: &view.path_counts,
    })
}

#[derive(Serialize)]
struct TreeNode<'a> {
    #[serde(flatten)]
    object: Object<'a>,
    depth: u32,
    share: f64,
    hidden_children: u64,
}

#[derive(Serialize)]
struct Tree<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    total_retained: u64,
    nodes: Vec<TreeNode<'a>>,
}

/// `heapgraph.dominators/1`.
pub fn dominators(view: &DominatorTreeView, info: &DumpInfo) -> String {
    to_string(&Tree {
        schema: "heapgraph.dominators/1",
        dump: info.into(),
        total_retained: view.total_retained,
        nodes: view
            .nodes
            .iter()
            .map(|node| TreeNode {
                object: (&node.object).into(),
                depth: node.depth,
                share: node.share,
                hidden_children: node.hidden_children,
            })
            .collect(),
    })
}

pub(crate) fn to_string<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|error| {
        // Serialising plain structs of numbers and strings cannot fail.
        format!("{{\"error\":\"{error}\"}}")
    });
    text.push('\n');
    text
}

#[derive(Serialize)]
struct Accumulated<'a> {
    #[serde(rename = "type")]
    type_name: &'a str,
    count: u64,
    retained_size: u64,
}

#[derive(Serialize)]
struct SuspectEntry<'a> {
    rule: &'static str,
    share: f64,
    #[serde(rename = "type")]
    type_name: &'a str,
    count: u64,
    retained_size: u64,
    object: Option<Object<'a>>,
    accumulation_point: Option<Object<'a>>,
    accumulated: Vec<Accumulated<'a>>,
    path: Vec<Step<'a>>,
    entry_path: Vec<Step<'a>>,
}

#[derive(Serialize)]
struct Suspects<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    findings: Vec<FindingEntry<'a>>,
    threshold: f64,
    total_retained: u64,
    suspects: Vec<SuspectEntry<'a>>,
    min_drop: f64,
    big_drops: Vec<crate::holding::BigDropEntry<'a>>,
}

/// `heapgraph.suspects/1`, with the big drops of the dominator tree.
pub fn suspects(
    view: &SuspectsView,
    drops: &BigDropsView,
    info: &DumpInfo,
    found: &[Finding],
) -> String {
    to_string(&Suspects {
        schema: "heapgraph.suspects/1",
        dump: info.into(),
        findings: findings(found),
        threshold: view.threshold,
        total_retained: view.total_retained,
        min_drop: drops.min_drop,
        big_drops: crate::holding::big_drop_entries(drops),
        suspects: view
            .suspects
            .iter()
            .map(|suspect| SuspectEntry {
                rule: suspect.rule.name(),
                share: suspect.share,
                type_name: &suspect.type_name,
                count: suspect.count,
                retained_size: suspect.retained_size,
                object: suspect.object.as_ref().map(Object::from),
                accumulation_point: suspect.accumulation_point.as_ref().map(Object::from),
                accumulated: suspect
                    .accumulated
                    .iter()
                    .map(|row| Accumulated {
                        type_name: &row.type_name,
                        count: row.count,
                        retained_size: row.retained_size,
                    })
                    .collect(),
                path: suspect.path.iter().map(Step::from).collect(),
                entry_path: suspect.entry_path.iter().map(Step::from).collect(),
            })
            .collect(),
    })
}

#[derive(Serialize)]
struct StringValue<'a> {
    value: &'a str,
    count: u64,
    total_bytes: u64,
    wasted_bytes: u64,
}

#[derive(Serialize)]
struct Strings<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    duplicates_only: bool,
    strings: u64,
    total_bytes: u64,
    distinct_values: u64,
    duplicated_values: u64,
    wasted_bytes: u64,
    values: Vec<StringValue<'a>>,
}

/// `heapgraph.strings/1`.
pub fn strings(view: &StringsView, duplicates_only: bool, info: &DumpInfo) -> String {
    to_string(&Strings {
        schema: "heapgraph.strings/1",
        dump: info.into(),
        duplicates_only,
        strings: view.strings,
        total_bytes: view.total_bytes,
        distinct_values: view.distinct_values,
        duplicated_values: view.duplicated_values,
        wasted_bytes: view.wasted_bytes,
        values: view
            .values
            .iter()
            .map(|row| StringValue {
                value: &row.value,
                count: row.count,
                total_bytes: row.total_bytes,
                wasted_bytes: row.wasted_bytes,
            })
            .collect(),
    })
}

#[derive(Serialize)]
struct FrameEntry<'a> {
    filename: &'a str,
    lineno: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

fn frames(frames: &[SiteFrame]) -> Vec<FrameEntry<'_>> {
    frames
        .iter()
        .map(|frame| FrameEntry {
            filename: &frame.filename,
            lineno: frame.lineno,
            name: frame.name.as_deref(),
        })
        .collect()
}

#[derive(Serialize)]
struct SiteEntry<'a> {
    frames: Vec<FrameEntry<'a>>,
    size: u64,
    count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    size_diff: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    count_diff: Option<i64>,
}

fn site_entry(row: &SiteRow, is_diff: bool) -> SiteEntry<'_> {
    SiteEntry {
        frames: frames(&row.frames),
        size: row.size,
        count: row.count,
        size_diff: is_diff.then_some(row.size_diff),
        count_diff: is_diff.then_some(row.count_diff),
    }
}

#[derive(Serialize)]
struct SiteTotal {
    size: u64,
    count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    size_diff: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    count_diff: Option<i64>,
}

#[derive(Serialize)]
struct Sites<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    findings: Vec<FindingEntry<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    old_dump: Option<Dump<'a>>,
    by: &'static str,
    cumulative: bool,
    total: SiteTotal,
    rows: Vec<SiteEntry<'a>>,
}

/// `heapgraph.sites/1`: `top` of one allocation snapshot (`old` is `None`) or `diff` of two,
/// with at most `n` rows (all when `None`).
pub fn sites(
    view: &SitesView,
    info: &DumpInfo,
    old: Option<&DumpInfo>,
    found: &[Finding],
    n: Option<usize>,
) -> String {
    let shown = n.unwrap_or(usize::MAX).min(view.rows.len());
    let diff = |new: u64, old: u64| view.is_diff.then(|| new as i64 - old as i64);
    to_string(&Sites {
        schema: "heapgraph.sites/1",
        dump: info.into(),
        findings: findings(found),
        old_dump: old.map(Into::into),
        by: view.key.name(),
        cumulative: view.cumulative,
        total: SiteTotal {
            size: view.total_size,
            count: view.total_count,
            size_diff: diff(view.total_size, view.old_total_size),
            count_diff: diff(view.total_count, view.old_total_count),
        },
        rows: view.rows[..shown]
            .iter()
            .map(|row| site_entry(row, view.is_diff))
            .collect(),
    })
}

#[derive(Serialize)]
struct Oom<'a> {
    requested_bytes: u64,
    cap_bytes: Option<u64>,
    device_free: Option<u64>,
    time_us: i64,
    allocated_at: i64,
    reserved_at: i64,
    events_after: usize,
    frames: Vec<FrameEntry<'a>>,
}

#[derive(Serialize)]
struct StackEntry<'a> {
    frames: Vec<FrameEntry<'a>>,
    bytes: u64,
    blocks: u64,
}

#[derive(Serialize)]
struct BlockEntry<'a> {
    address: u64,
    size: u64,
    requested_size: u64,
    state: &'a str,
    frames: Vec<FrameEntry<'a>>,
}

#[derive(Serialize)]
struct SegmentEntry<'a> {
    device: u32,
    address: u64,
    total_size: u64,
    free_bytes: u64,
    largest_free_block: u64,
    segment_type: &'a str,
}

#[derive(Serialize)]
struct TraceEntry<'a> {
    entries: usize,
    actions: Vec<(&'a str, u64)>,
    allocated_before: i64,
    reserved_before: i64,
    peak_allocated: i64,
    peak_reserved: i64,
}

#[derive(Serialize)]
struct Gpu<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    findings: Vec<FindingEntry<'a>>,
    allocated_bytes: u64,
    reserved_bytes: u64,
    requested_bytes: u64,
    segments: usize,
    blocks: usize,
    active_blocks: usize,
    inactive_bytes: u64,
    pending_free_bytes: u64,
    largest_free_block: u64,
    oom: Option<Oom<'a>>,
    by_stack: Vec<StackEntry<'a>>,
    /// What `by_stack` groups by: `traceback` (the default), `lineno` or `filename`.
    by: &'static str,
    largest_blocks: Vec<BlockEntry<'a>>,
    segments_with_free: Vec<SegmentEntry<'a>>,
    trace: Option<TraceEntry<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeline: Option<Vec<(i64, i64, i64)>>,
    settings: Vec<(&'a str, &'a str)>,
}

/// `heapgraph.gpu/1`. The timeline, when present, is `[time_us, allocated, reserved]` triples.
pub fn gpu(view: &GpuView, info: &DumpInfo, found: &[Finding]) -> String {
    to_string(&Gpu {
        schema: "heapgraph.gpu/1",
        dump: info.into(),
        findings: findings(found),
        allocated_bytes: view.allocated_bytes,
        reserved_bytes: view.reserved_bytes,
        requested_bytes: view.requested_bytes,
        segments: view.segments,
        blocks: view.blocks,
        active_blocks: view.active_blocks,
        inactive_bytes: view.inactive_bytes,
        pending_free_bytes: view.pending_free_bytes,
        largest_free_block: view.largest_free_block,
        oom: view.oom.as_ref().map(|oom| Oom {
            requested_bytes: oom.requested_bytes,
            cap_bytes: oom.cap_bytes,
            device_free: oom.device_free,
            time_us: oom.time_us,
            allocated_at: oom.allocated_at,
            reserved_at: oom.reserved_at,
            events_after: oom.events_after,
            frames: frames(&oom.frames),
        }),
        by_stack: view
            .by_stack
            .iter()
            .map(|row| StackEntry {
                frames: frames(&row.frames),
                bytes: row.size,
                blocks: row.count,
            })
            .collect(),
        by: view.by.name(),
        largest_blocks: view
            .largest_blocks
            .iter()
            .map(|block| BlockEntry {
                address: block.address,
                size: block.size,
                requested_size: block.requested_size,
                state: &block.state,
                frames: frames(&block.frames),
            })
            .collect(),
        segments_with_free: view
            .segments_with_free
            .iter()
            .map(|segment| SegmentEntry {
                device: segment.device,
                address: segment.address,
                total_size: segment.total_size,
                free_bytes: segment.free_bytes,
                largest_free_block: segment.largest_free_block,
                segment_type: &segment.segment_type,
            })
            .collect(),
        trace: view.trace.as_ref().map(|trace| TraceEntry {
            entries: trace.entries,
            actions: trace
                .actions
                .iter()
                .map(|(name, count)| (name.as_str(), *count))
                .collect(),
            allocated_before: trace.allocated_before,
            reserved_before: trace.reserved_before,
            peak_allocated: trace.peak_allocated,
            peak_reserved: trace.peak_reserved,
        }),
        timeline: view.timeline.as_ref().map(|points| {
            points
                .iter()
                .map(|p| (p.time_us, p.allocated, p.reserved))
                .collect()
        }),
        settings: view
            .settings
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect(),
    })
}

#[derive(Serialize)]
struct DiffTotal {
    before: u64,
    after: u64,
    delta: i64,
    objects_before: u64,
    objects_after: u64,
    shallow_delta: i64,
    retained_before: u64,
    retained_after: u64,
    retained_delta: i64,
}

#[derive(Serialize)]
struct DiffType<'a> {
    #[serde(rename = "type")]
    type_name: &'a str,
    count_before: u64,
    count_after: u64,
    count_delta: i64,
    shallow_before: u64,
    shallow_after: u64,
    shallow_delta: i64,
    retained_before: u64,
    retained_after: u64,
    retained_delta: i64,
}

#[derive(Serialize)]
struct DiffHolder<'a> {
    signature: &'a str,
    status: &'static str,
    count_before: u64,
    count_after: u64,
    retained_before: u64,
    retained_after: u64,
    retained_delta: i64,
    container: Option<&'a str>,
}

#[derive(Serialize)]
struct Diff<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    findings: Vec<FindingEntry<'a>>,
    old_dump: Dump<'a>,
    by: &'static str,
    total: DiffTotal,
    types: Vec<DiffType<'a>>,
    holders: Vec<DiffHolder<'a>>,
}

/// `heapgraph.diff/1` of two heap dumps, with at most `n` types (all when `None`).
pub fn graph_diff(
    view: &GraphDiffView,
    info: &DumpInfo,
    old: &DumpInfo,
    found: &[Finding],
    by: RankBy,
    n: Option<usize>,
) -> String {
    let shown = n.unwrap_or(usize::MAX).min(view.types.len());
    let signed = |before: u64, after: u64| after as i64 - before as i64;
    to_string(&Diff {
        schema: "heapgraph.diff/1",
        findings: findings(found),
        dump: info.into(),
        old_dump: old.into(),
        by: crate::rank_name(by),
        total: DiffTotal {
            before: view.before.shallow,
            after: view.after.shallow,
            delta: signed(view.before.shallow, view.after.shallow),
            objects_before: view.before.objects,
            objects_after: view.after.objects,
            shallow_delta: signed(view.before.shallow, view.after.shallow),
            retained_before: view.before.reachable,
            retained_after: view.after.reachable,
            retained_delta: signed(view.before.reachable, view.after.reachable),
        },
        types: view.types[..shown]
            .iter()
            .map(|row| DiffType {
                type_name: &row.type_name,
                count_before: row.count_before,
                count_after: row.count_after,
                count_delta: row.count_delta(),
                shallow_before: row.shallow_before,
                shallow_after: row.shallow_after,
                shallow_delta: row.shallow_delta(),
                retained_before: row.retained_before,
                retained_after: row.retained_after,
                retained_delta: row.retained_delta(),
            })
            .collect(),
        holders: view.holders[..view.holders.len().min(n.unwrap_or(usize::MAX))]
            .iter()
            .map(|holder| DiffHolder {
                signature: &holder.signature,
                status: holder.status.name(),
                count_before: holder.count_before,
                count_after: holder.count_after,
                retained_before: holder.retained_before,
                retained_after: holder.retained_after,
                retained_delta: holder.retained_delta(),
                container: holder.container.as_deref(),
            })
            .collect(),
    })
}

#[derive(Serialize)]
struct LeakingType<'a> {
    #[serde(rename = "type")]
    type_name: &'a str,
    count: u64,
    shallow_size: u64,
}

#[derive(Serialize)]
struct Leaking<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    count: u64,
    shallow_size: u64,
    types: Vec<LeakingType<'a>>,
    objects: Vec<Object<'a>>,
}

/// `heapgraph.leaking/1`.
pub fn leaking(view: &LeakingView, info: &DumpInfo) -> String {
    to_string(&Leaking {
        schema: "heapgraph.leaking/1",
        dump: info.into(),
        count: view.count,
        shallow_size: view.shallow_size,
        types: view
            .by_type
            .iter()
            .map(|(name, count, size)| LeakingType {
                type_name: name,
                count: *count,
                shallow_size: *size,
            })
            .collect(),
        objects: view.objects.iter().map(Into::into).collect(),
    })
}

#[derive(Serialize)]
struct LeakClusterEntry<'a> {
    signature: &'a str,
    count: u64,
    retained_size: u64,
    representative: Object<'a>,
}

#[derive(Serialize)]
struct LeakKindEntry<'a> {
    name: &'a str,
    kind: &'a str,
    count: u64,
    retained_size: u64,
}

#[derive(Serialize)]
struct Leaks<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    leaked: u64,
    clusters: Vec<LeakClusterEntry<'a>>,
    kinds: Vec<LeakKindEntry<'a>>,
}

/// `heapgraph.leaks/1`.
pub fn leaks(view: &LeaksView, info: &DumpInfo) -> String {
    to_string(&Leaks {
        schema: "heapgraph.leaks/1",
        dump: info.into(),
        leaked: view.leaked,
        clusters: view
            .clusters
            .iter()
            .map(|cluster| LeakClusterEntry {
                signature: &cluster.signature,
                count: cluster.count,
                retained_size: cluster.retained_size,
                representative: (&cluster.representative).into(),
            })
            .collect(),
        kinds: view
            .kinds
            .iter()
            .map(|kind| LeakKindEntry {
                name: &kind.name,
                kind: &kind.kind,
                count: kind.count,
                retained_size: kind.retained_size,
            })
            .collect(),
    })
}

#[derive(Serialize)]
struct Growth {
    bytes_per_s: f64,
    recent_bytes_per_s: f64,
    time_to_limit_s: Option<f64>,
}

#[derive(Serialize)]
struct GpuEntry<'a> {
    index: u32,
    name: &'a str,
    memory_bytes: u64,
    peak_process_bytes: Option<u64>,
    peak_process_t_s: Option<f64>,
    peak_device_bytes: Option<u64>,
}

#[derive(Serialize)]
struct ThresholdEntry<'a> {
    resource: &'a str,
    level: &'a str,
    bytes: u64,
    spec: &'a str,
    crossings: usize,
    first_crossed_s: Option<f64>,
}

#[derive(Serialize)]
struct DumpEntry<'a> {
    t_s: f64,
    path: &'a str,
    kind: &'a str,
    pid: Option<u32>,
    duration_ms: Option<u64>,
}

#[derive(Serialize)]
struct EventEntry<'a> {
    t_s: f64,
    kind: &'a str,
    text: &'a str,
}

#[derive(Serialize)]
struct Exit {
    t_s: f64,
    code: Option<i32>,
    signal: Option<i32>,
}

#[derive(Serialize)]
struct GpuSeriesEntry<'a> {
    index: u32,
    process_bytes: &'a [Option<u64>],
    device_bytes: &'a [Option<u64>],
}

#[derive(Serialize)]
struct Series<'a> {
    t_s: &'a [f64],
    rss_bytes: &'a [u64],
    pss_bytes: &'a [Option<u64>],
    uss_bytes: &'a [Option<u64>],
    swap_bytes: &'a [Option<u64>],
    gpus: Vec<GpuSeriesEntry<'a>>,
}

#[derive(Serialize)]
struct TimelineDoc<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    findings: Vec<FindingEntry<'a>>,
    samples: usize,
    duration_s: f64,
    interval_ms: u64,
    started_at_ms: Option<u64>,
    pid: Option<u32>,
    command: &'a [String],
    first_rss_bytes: Option<u64>,
    last_rss_bytes: Option<u64>,
    peak_rss_bytes: Option<u64>,
    peak_rss_t_s: Option<f64>,
    peak_pss_bytes: Option<u64>,
    peak_uss_bytes: Option<u64>,
    peak_swap_bytes: Option<u64>,
    limit_bytes: Option<u64>,
    limit_source: Option<&'a str>,
    peak_share_of_limit: Option<f64>,
    system_memory_bytes: Option<u64>,
    growth: Option<Growth>,
    max_processes: u32,
    peak_gpu_bytes: Option<u64>,
    peak_gpu_t_s: Option<f64>,
    gpus: Vec<GpuEntry<'a>>,
    thresholds: Vec<ThresholdEntry<'a>>,
    dumps: Vec<DumpEntry<'a>>,
    events: Vec<EventEntry<'a>>,
    exit: Option<Exit>,
    series: Series<'a>,
}

/// `heapgraph.timeline/1`: a recording's peaks, growth, thresholds, dumps and exit, and every
/// sample as columns under `series`.
pub fn timeline(view: &TimelineView, info: &DumpInfo, found: &[Finding]) -> String {
    to_string(&TimelineDoc {
        schema: "heapgraph.timeline/1",
        dump: info.into(),
        findings: findings(found),
        samples: view.samples,
        duration_s: view.duration_s,
        interval_ms: view.interval_ms,
        started_at_ms: view.started_at_ms,
        pid: view.pid,
        command: &view.command,
        first_rss_bytes: view.first_rss,
        last_rss_bytes: view.last_rss,
        peak_rss_bytes: view.peak_rss.map(|peak| peak.bytes),
        peak_rss_t_s: view.peak_rss.map(|peak| peak.t_s),
        peak_pss_bytes: view.peak_pss.map(|peak| peak.bytes),
        peak_uss_bytes: view.peak_uss.map(|peak| peak.bytes),
        peak_swap_bytes: view.peak_swap.map(|peak| peak.bytes),
        limit_bytes: view.limit.as_ref().map(|(bytes, _)| *bytes),
        limit_source: view.limit.as_ref().map(|(_, source)| source.as_str()),
        peak_share_of_limit: view.peak_share_of_limit,
        system_memory_bytes: view.system_memory_bytes,
        growth: view.growth.map(|growth| Growth {
            bytes_per_s: growth.bytes_per_s,
            recent_bytes_per_s: growth.recent_bytes_per_s,
            time_to_limit_s: growth.time_to_limit_s,
        }),
        max_processes: view.max_processes,
        peak_gpu_bytes: view.peak_gpu.map(|peak| peak.bytes),
        peak_gpu_t_s: view.peak_gpu.map(|peak| peak.t_s),
        gpus: view
            .gpus
            .iter()
            .map(|gpu| GpuEntry {
                index: gpu.index,
                name: &gpu.name,
                memory_bytes: gpu.memory_bytes,
                peak_process_bytes: gpu.peak_process.map(|peak| peak.bytes),
                peak_process_t_s: gpu.peak_process.map(|peak| peak.t_s),
                peak_device_bytes: gpu.peak_device.map(|peak| peak.bytes),
            })
            .collect(),
        thresholds: view
            .thresholds
            .iter()
            .map(|threshold| ThresholdEntry {
                resource: &threshold.resource,
                level: threshold.level,
                bytes: threshold.bytes,
                spec: &threshold.spec,
                crossings: threshold.crossings,
                first_crossed_s: threshold.first_crossed_s,
            })
            .collect(),
        dumps: view
            .dumps
            .iter()
            .map(|dump| DumpEntry {
                t_s: dump.t_s,
                path: &dump.path,
                kind: &dump.kind,
                pid: dump.pid,
                duration_ms: dump.duration_ms,
            })
            .collect(),
        events: view
            .events
            .iter()
            .map(|event| EventEntry {
                t_s: event.t_s,
                kind: &event.kind,
                text: &event.text,
            })
            .collect(),
        exit: view.exit.map(|exit| Exit {
            t_s: exit.t_s,
            code: exit.code,
            signal: exit.signal,
        }),
        series: Series {
            t_s: &view.t_s,
            rss_bytes: &view.rss,
            pss_bytes: &view.pss,
            uss_bytes: &view.uss,
            swap_bytes: &view.swap,
            gpus: view
                .gpus
                .iter()
                .map(|gpu| GpuSeriesEntry {
                    index: gpu.index,
                    process_bytes: &gpu.process_used,
                    device_bytes: &gpu.device_used,
                })
                .collect(),
        },
    })
}

/// A finding in JSON: its kind, the sentence every output prints, and its data.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum FindingEntry<'a> {
    Growth {
        summary: String,
        holder: HolderEntry<'a>,
        entries: Option<GrowthEntriesEntry<'a>>,
        holder_retained_before: Option<u64>,
        holder_retained_after: Option<u64>,
        retained_delta: i64,
    },
    Accumulation {
        summary: String,
        holder: HolderEntry<'a>,
        rule: &'static str,
        instances: u64,
        #[serde(rename = "type")]
        type_name: &'a str,
        retained_size: u64,
        retained_by_step: Option<usize>,
        share: f64,
        mostly: Option<MostlyEntry<'a>>,
        also_holds: u64,
    },
    GpuOom {
        summary: String,
        requested_bytes: u64,
        device_free_bytes: Option<u64>,
        allocated_bytes: u64,
        reserved_bytes: u64,
        largest_free_block: u64,
        cause: &'static str,
        frames: Vec<FrameEntry<'a>>,
        held_by: Option<HeldByEntry<'a>>,
    },
    Allocation {
        summary: String,
        frames: Vec<FrameEntry<'a>>,
        size: u64,
        total_size: u64,
    },
    AllocGrowth {
        summary: String,
        frames: Vec<FrameEntry<'a>>,
        size_before: u64,
        size_after: u64,
    },
    Timeline {
        summary: String,
        peak_bytes: u64,
        peak_at_s: f64,
        limit_bytes: Option<u64>,
        limit_source: Option<&'a str>,
        share_of_limit: Option<f64>,
        growing_bytes_per_s: Option<f64>,
        dumps: Vec<FindingDumpEntry<'a>>,
    },
}

#[derive(Serialize)]
struct HolderEntry<'a> {
    name: Option<&'a str>,
    #[serde(rename = "type")]
    type_name: Option<&'a str>,
    owner: Option<&'a str>,
    path: Vec<StepEntry<'a>>,
    named_step: usize,
}

#[derive(Serialize)]
struct StepEntry<'a> {
    #[serde(rename = "type")]
    type_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<&'a str>,
    edge: Option<&'a str>,
}

#[derive(Serialize)]
struct GrowthEntriesEntry<'a> {
    #[serde(rename = "type")]
    type_name: &'a str,
    count_before: u64,
    count_after: u64,
    retained_before: u64,
    retained_after: u64,
}

#[derive(Serialize)]
struct MostlyEntry<'a> {
    #[serde(rename = "type")]
    type_name: &'a str,
    count: u64,
    retained_size: u64,
}

#[derive(Serialize)]
struct HeldByEntry<'a> {
    frames: Vec<FrameEntry<'a>>,
    size: u64,
}

#[derive(Serialize)]
struct FindingDumpEntry<'a> {
    kind: &'a str,
    at_s: f64,
    file: &'a str,
}

fn holder_entry(holder: &Holder) -> HolderEntry<'_> {
    HolderEntry {
        name: holder.name(),
        type_name: holder.object().map(|step| step.type_name.as_str()),
        owner: holder
            .owner()
            .filter(|owner| owner.edge.is_some())
            .map(|owner| owner.label.as_deref().unwrap_or(&owner.type_name)),
        path: holder
            .path
            .iter()
            .map(|step| StepEntry {
                type_name: &step.type_name,
                label: step.label.as_deref(),
                edge: step.edge.as_deref(),
            })
            .collect(),
        named_step: holder.named,
    }
}

/// The `findings` array every schema that has findings carries.
fn findings(findings: &[Finding]) -> Vec<FindingEntry<'_>> {
    findings
        .iter()
        .map(|finding| {
            let summary = crate::findings::sentence(finding).plain();
            match finding {
                Finding::Growth {
                    holder,
                    entries,
                    retained,
                    retained_delta,
                } => FindingEntry::Growth {
                    summary,
                    holder: holder_entry(holder),
                    entries: entries.as_ref().map(|entries| GrowthEntriesEntry {
                        type_name: &entries.type_name,
                        count_before: entries.count_before,
                        count_after: entries.count_after,
                        retained_before: entries.retained_before,
                        retained_after: entries.retained_after,
                    }),
                    holder_retained_before: retained.map(|(before, _)| before),
                    holder_retained_after: retained.map(|(_, after)| after),
                    retained_delta: *retained_delta,
                },
                Finding::Accumulation {
                    holder,
                    rule,
                    instances,
                    type_name,
                    retained,
                    retained_by,
                    share,
                    mostly,
                    also_holds,
                } => FindingEntry::Accumulation {
                    summary,
                    holder: holder_entry(holder),
                    rule: rule.name(),
                    instances: *instances,
                    type_name,
                    retained_size: *retained,
                    retained_by_step: *retained_by,
                    share: *share,
                    mostly: mostly.as_ref().map(|mostly| MostlyEntry {
                        type_name: &mostly.type_name,
                        count: mostly.count,
                        retained_size: mostly.retained_size,
                    }),
                    also_holds: *also_holds,
                },
                Finding::GpuOom {
                    requested,
                    device_free,
                    allocated_at,
                    reserved_at,
                    largest_free_block,
                    cause,
                    frames: failed_at,
                    held_by,
                } => FindingEntry::GpuOom {
                    summary,
                    requested_bytes: *requested,
                    device_free_bytes: *device_free,
                    allocated_bytes: *allocated_at,
                    reserved_bytes: *reserved_at,
                    largest_free_block: *largest_free_block,
                    cause: match cause {
                        OomCause::Fragmented => "fragmented",
                        OomCause::DeviceFull => "device_full",
                    },
                    frames: frames(failed_at),
                    held_by: held_by.as_ref().map(|(stack, size)| HeldByEntry {
                        frames: frames(stack),
                        size: *size,
                    }),
                },
                Finding::Allocation {
                    frames: stack,
                    size,
                    total,
                } => FindingEntry::Allocation {
                    summary,
                    frames: frames(stack),
                    size: *size,
                    total_size: *total,
                },
                Finding::AllocGrowth {
                    frames: stack,
                    size_before,
                    size_after,
                } => FindingEntry::AllocGrowth {
                    summary,
                    frames: frames(stack),
                    size_before: *size_before,
                    size_after: *size_after,
                },
                Finding::Timeline {
                    peak,
                    peak_at_s,
                    limit,
                    share_of_limit,
                    growing_per_s,
                    dumps,
                    ..
                } => FindingEntry::Timeline {
                    summary,
                    peak_bytes: *peak,
                    peak_at_s: *peak_at_s,
                    limit_bytes: limit.as_ref().map(|(bytes, _)| *bytes),
                    limit_source: limit.as_ref().map(|(_, source)| source.as_str()),
                    share_of_limit: *share_of_limit,
                    growing_bytes_per_s: *growing_per_s,
                    dumps: dumps
                        .iter()
                        .map(|(kind, at_s, file)| FindingDumpEntry {
                            kind,
                            at_s: *at_s,
                            file,
                        })
                        .collect(),
                },
            }
        })
        .collect()
}

#[derive(Serialize)]
struct Instances<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    #[serde(rename = "type")]
    type_name: &'a str,
    total: u64,
    offset: usize,
    objects: Vec<Object<'a>>,
}

/// `heapgraph.instances/1`: a page of a type's instances, largest retained size first.
pub fn instances(view: &InstancesView, info: &DumpInfo) -> String {
    to_string(&Instances {
        schema: "heapgraph.instances/1",
        dump: info.into(),
        type_name: &view.type_name,
        total: view.total,
        offset: view.offset,
        objects: view.objects.iter().map(Object::from).collect(),
    })
}

#[derive(Serialize)]
struct ReferenceEntry<'a> {
    edge: &'a str,
    edge_kind: &'a str,
    object: Object<'a>,
}

#[derive(Serialize)]
struct References<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    object: Object<'a>,
    direction: &'static str,
    total: u64,
    offset: usize,
    references: Vec<ReferenceEntry<'a>>,
}

/// `heapgraph.references/1`: a page of an object's references out of it (`direction`
/// `"out"`, its fields) or into it (`"in"`, its referrers).
pub fn references(view: &ReferencesView, incoming: bool, info: &DumpInfo) -> String {
    to_string(&References {
        schema: "heapgraph.references/1",
        dump: info.into(),
        object: (&view.object).into(),
        direction: if incoming { "in" } else { "out" },
        total: view.total,
        offset: view.offset,
        references: view
            .references
            .iter()
            .map(|reference| ReferenceEntry {
                edge: &reference.edge,
                edge_kind: reference.edge_kind,
                object: (&reference.object).into(),
            })
            .collect(),
    })
}

#[derive(Serialize)]
struct Children<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    parent: Object<'a>,
    depth: u32,
    total_retained: u64,
    total: u64,
    offset: usize,
    children: Vec<TreeNode<'a>>,
}

/// `heapgraph.children/1`: a page of one node's children in the dominator tree, as the nodes
/// of `heapgraph.dominators/1` (`hidden_children` counts each child's own children).
pub fn children(view: &ChildrenView, info: &DumpInfo) -> String {
    to_string(&Children {
        schema: "heapgraph.children/1",
        dump: info.into(),
        parent: (&view.parent).into(),
        depth: view.depth,
        total_retained: view.total_retained,
        total: view.total,
        offset: view.offset,
        children: view
            .children
            .iter()
            .map(|node| TreeNode {
                object: (&node.object).into(),
                depth: node.depth,
                share: node.share,
                hidden_children: node.hidden_children,
            })
            .collect(),
    })
}

#[derive(Serialize)]
struct Error<'a> {
    schema: &'static str,
    error: &'a str,
}

/// `heapgraph.error/1`: what went wrong with a request (`heapgraph serve`).
pub fn error(message: &str) -> String {
    to_string(&Error {
        schema: "heapgraph.error/1",
        error: message,
    })
}
