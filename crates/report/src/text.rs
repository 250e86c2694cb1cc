//! Text output for terminals: aligned tables, human sizes, chains from the root.

use crate::findings::frame_text;
use crate::{
    DumpInfo, chain_line, duration_text, fit_distinct_paths, human_bytes, rank_name, short,
    signed_bytes, signed_count, type_text,
};
use heapgraph_analyzer::backrefs::LeakingView;
use heapgraph_analyzer::diff::GraphDiffView;
use heapgraph_analyzer::findings::Finding;
use heapgraph_analyzer::gpu::GpuView;
use heapgraph_analyzer::leaks::LeaksView;
use heapgraph_analyzer::sites::{SiteFrame, SiteKey, SitesView};
use heapgraph_analyzer::timeline::{ExitView, Peak, TimelineView};
use heapgraph_analyzer::{
    BigDropsView, DominatorTreeView, HoldersView, ObjectView, RankBy, StringsView, SummaryView,
    SuspectRule, SuspectsView,
};
use std::fmt::Write;

mod waste;
pub use waste::{groups, waste};

/// How many characters a path in a table's last column may take before its middle steps give
/// way.
const TABLE_PATH_WIDTH: usize = 120;

mod held;

/// A table with right-aligned numeric columns and left-aligned text columns.
struct Table {
    headers: Vec<&'static str>,
    right_aligned: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(columns: &[(&'static str, bool)]) -> Self {
        Table {
            headers: columns.iter().map(|(name, _)| *name).collect(),
            right_aligned: columns.iter().map(|(_, right)| *right).collect(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn render(&self, out: &mut String) {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |cells: &[String], out: &mut String| {
            let mut text = String::new();
            for (i, cell) in cells.iter().enumerate() {
                if i > 0 {
                    text.push_str("  ");
                }
                let pad = widths[i].saturating_sub(cell.chars().count());
                if self.right_aligned[i] {
                    text.extend(std::iter::repeat_n(' ', pad));
                    text.push_str(cell);
                } else {
                    text.push_str(cell);
                    if i + 1 < cells.len() {
                        text.extend(std::iter::repeat_n(' ', pad));
                    }
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        let headers: Vec<String> = self.headers.iter().map(|h| (*h).to_owned()).collect();
        line(&headers, out);
        for row in &self.rows {
            line(row, out);
        }
    }
}

fn header(info: &DumpInfo, out: &mut String) {
    header_with(info, &[], out);
}

/// The file, then the findings (each a sentence and what it points at), then the notes.
fn header_with(info: &DumpInfo, findings: &[Finding], out: &mut String) {
    let _ = writeln!(
        out,
        "{} ({}, {})",
        info.file, info.source_format, info.runtime
    );
    for finding in findings {
        let _ = writeln!(out, "{}", crate::findings::sentence(finding).plain());
        if let Some((label, detail)) = crate::findings::detail(finding) {
            let _ = writeln!(out, "  {label}: {}", detail.bare());
        }
    }
    for note in &info.notes {
        let _ = writeln!(out, "note: {note}");
    }
}

fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// The summary: totals, then the top `max_types` types by retained size.
pub fn summary(
    view: &SummaryView,
    info: &DumpInfo,
    findings: &[Finding],
    max_types: usize,
) -> String {
    let mut out = String::new();
    header_with(info, findings, &mut out);
    if let Some(kind) = &view.kind {
        let _ = writeln!(out, "objects of kind {kind} only");
    }
    let _ = writeln!(
        out,
        "{} objects, {} references, {} shallow in all",
        view.objects,
        view.references,
        human_bytes(view.total_shallow_size)
    );
    let _ = writeln!(
        out,
        "reachable:   {} objects, {}",
        view.reachable_objects,
        human_bytes(view.reachable_size)
    );
    let _ = writeln!(
        out,
        "unreachable: {} objects, {} (held only by weak references, or by nothing)",
        view.unreachable_objects,
        human_bytes(view.unreachable_size)
    );
    held::unreachable_lines(view, &mut out);
    out.push('\n');
    let mut table = Table::new(&[
        ("type", false),
        ("count", true),
        ("shallow", true),
        ("retained", true),
        ("% of heap", true),
    ]);
    for row in view.types.iter().take(max_types) {
        table.row(vec![
            type_text(&row.type_name).to_owned(),
            row.count.to_string(),
            human_bytes(row.shallow_size),
            human_bytes(row.retained_size),
            percent(row.retained_size, view.heap_size),
        ]);
    }
    table.render(&mut out);
    if view.types.len() > max_types {
        let _ = writeln!(
            out,
            "… {} more types (raise -n to see them)",
            view.types.len() - max_types
        );
    }
    out
}

fn distance_text(distance: Option<u32>) -> String {
    distance.map_or_else(|| "-".to_owned(), |d| d.to_string())
}

/// The top objects, ranked by `by`.
pub fn top(objects: &[ObjectView], by: RankBy, info: &DumpInfo) -> String {
    let mut out = String::new();
    header(info, &mut out);
    let _ = writeln!(out, "top {} objects by {}\n", objects.len(), rank_name(by));
    let mut table = Table::new(&[
        ("id", true),
        ("type", false),
        ("name", false),
        ("shallow", true),
        ("retained", true),
        ("objects held", true),
        ("distance", true),
    ]);
    for object in objects {
        table.row(vec![
            object.id_text.clone(),
            type_text(&object.type_name).to_owned(),
            short(&object.name, 40),
            human_bytes(object.shallow_size),
            object
                .retained_size
                .map_or_else(|| "-".to_owned(), human_bytes),
            object.retained_count.to_string(),
            distance_text(object.distance),
        ]);
    }
    table.render(&mut out);
    out
}

/// How a chain element reads: `Type.edge` for the edge leaving it.
fn object_line(object: &ObjectView) -> String {
    let mut line = format!("{} {}", type_text(&object.type_name), object.id_text);
    if !object.name.is_empty() && object.name != object.type_name {
        let _ = write!(line, " {:?}", short(&object.name, 50));
    }
    let _ = write!(line, "  shallow {}", human_bytes(object.shallow_size));
    if let Some(retained) = object.retained_size {
        let _ = write!(line, ", retained {}", human_bytes(retained));
    }
    line
}

/// Who holds an object: the target, its dominators, and its shortest chains.
pub fn holders(view: &HoldersView, info: &DumpInfo) -> String {
    let mut out = String::new();
    header(info, &mut out);
    let _ = writeln!(out, "target: {}", object_line(&view.target));
    if let Some(matches) = view.matches.filter(|&matches| matches > 1) {
        let _ = writeln!(
            out,
            "({matches} objects of this type; this one retains the most)"
        );
    }
    if !held::not_strongly_held(view, &mut out) {
        let _ = writeln!(
            out,
            "\ndominators (releasing any of them frees the target), root first:"
        );
        for (depth, object) in view.dominator_chain.iter().enumerate() {
            let _ = writeln!(out, "  {:>3}  {}", depth, object_line(object));
        }
    }
    for (i, path) in view.paths.iter().enumerate() {
        let alike = match view.path_counts.get(i) {
            Some(&count) if count > 1 => format!(", and {} more that read the same", count - 1),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "\nchain {} of {} ({} references{alike}):",
            i + 1,
            view.paths.len(),
            path.len().saturating_sub(1)
        );
        let _ = writeln!(out, "  {}", chain_line(path));
        for step in path {
            let edge = held::step_edge(step);
            let _ = writeln!(out, "    {:<28} {}", edge, object_line(&step.object));
        }
    }
    out
}

/// The upper dominator tree, indented by depth.
pub fn dominators(view: &DominatorTreeView, info: &DumpInfo) -> String {
    let mut out = String::new();
    header(info, &mut out);
    let _ = writeln!(
        out,
        "dominator tree, {} retained at the root\n",
        human_bytes(view.total_retained)
    );
    let mut table = Table::new(&[("retained", true), ("share", true), ("object", false)]);
    for node in &view.nodes {
        let mut label = "  ".repeat(node.depth as usize);
        let object = &node.object;
        let _ = write!(label, "{} {}", type_text(&object.type_name), object.id_text);
        if !object.name.is_empty() && object.name != object.type_name {
            let _ = write!(label, " {:?}", short(&object.name, 40));
        }
        if node.hidden_children > 0 {
            let _ = write!(label, "  (+{} smaller)", node.hidden_children);
        }
        table.row(vec![
            object
                .retained_size
                .map_or_else(|| "-".to_owned(), human_bytes),
            format!("{:.1}%", node.share * 100.0),
            label,
        ]);
    }
    table.render(&mut out);
    out
}

/// Leak suspects: each with its share, where its bytes accumulate, what is there, and the
/// chain that holds it.
pub fn suspects(
    view: &SuspectsView,
    drops: &BigDropsView,
    info: &DumpInfo,
    findings: &[Finding],
) -> String {
    let mut out = String::new();
    header_with(info, findings, &mut out);
    let _ = writeln!(
        out,
        "{} leak suspect(s): objects or types retaining at least {:.0}% of {} reachable",
        view.suspects.len(),
        view.threshold * 100.0,
        human_bytes(view.total_retained)
    );
    for (i, suspect) in view.suspects.iter().enumerate() {
        let _ = writeln!(out);
        match suspect.rule {
            SuspectRule::SingleObject => {
                let object = suspect
                    .object
                    .as_ref()
                    .map_or_else(String::new, object_line);
                let _ = writeln!(
                    out,
                    "suspect {}: one object retains {} ({:.1}%)\n  {object}",
                    i + 1,
                    human_bytes(suspect.retained_size),
                    suspect.share * 100.0
                );
                // An object whose bytes accumulate in itself: what it holds says the rest.
                if let Some(point) = suspect.accumulation_point.as_ref().filter(|point| {
                    suspect
                        .object
                        .as_ref()
                        .is_none_or(|object| object.id != point.id)
                }) {
                    let _ = writeln!(out, "  bytes accumulate in: {}", object_line(point));
                }
                if !suspect.accumulated.is_empty() {
                    let _ = writeln!(out, "  which holds:");
                    let mut table =
                        Table::new(&[("count", true), ("retained", true), ("type", false)]);
                    for row in &suspect.accumulated {
                        table.row(vec![
                            row.count.to_string(),
                            human_bytes(row.retained_size),
                            type_text(&row.type_name).to_owned(),
                        ]);
                    }
                    let mut rows = String::new();
                    table.render(&mut rows);
                    for line in rows.lines() {
                        let _ = writeln!(out, "    {line}");
                    }
                }
            }
            SuspectRule::ManyInstances => {
                let _ = writeln!(
                    out,
                    "suspect {}: {} instances of {}, held from different places, retain {} ({:.1}%)",
                    i + 1,
                    suspect.count,
                    type_text(&suspect.type_name),
                    human_bytes(suspect.retained_size),
                    suspect.share * 100.0
                );
                if let Some(largest) = &suspect.object {
                    let _ = writeln!(out, "  the largest: {}", object_line(largest));
                }
            }
        }
        if !suspect.path.is_empty() {
            let _ = writeln!(out, "  held through: {}", chain_line(&suspect.path));
        }
    }
    crate::holding::big_drops_text(drops, &mut out);
    out
}

/// Strings by value: totals, then the values ranked.
pub fn strings(view: &StringsView, duplicates_only: bool, info: &DumpInfo) -> String {
    let mut out = String::new();
    header(info, &mut out);
    let _ = writeln!(
        out,
        "{} strings, {} with their characters; {} distinct values, {} held more than once, wasting {}\n",
        view.strings,
        human_bytes(view.total_bytes),
        view.distinct_values,
        view.duplicated_values,
        human_bytes(view.wasted_bytes)
    );
    let mut table = Table::new(&[
        ("count", true),
        ("bytes", true),
        ("wasted", true),
        ("value", false),
    ]);
    for row in &view.values {
        table.row(vec![
            row.count.to_string(),
            human_bytes(row.total_bytes),
            human_bytes(row.wasted_bytes),
            format!("{:?}", short(&row.value, 80)),
        ]);
    }
    if view.values.is_empty() {
        let _ = writeln!(
            out,
            "{}",
            if duplicates_only {
                "no value is held by more than one string"
            } else {
                "no strings"
            }
        );
    } else {
        table.render(&mut out);
    }
    out
}

fn site_text(frames: &[SiteFrame], key: SiteKey) -> String {
    match frames.first() {
        None => "(no stack recorded)".to_owned(),
        Some(frame) if key == SiteKey::Filename => frame.filename.clone(),
        Some(frame) => frame_text(frame),
    }
}

/// `top` or `diff` of allocation snapshots: at most `n` sites, in tracemalloc's order. Stacks
/// (by traceback) print below their row, most recent call first.
pub fn sites(
    view: &SitesView,
    info: &DumpInfo,
    old: Option<&DumpInfo>,
    findings: &[Finding],
    n: usize,
) -> String {
    let mut out = String::new();
    header_with(info, findings, &mut out);
    if let Some(old) = old {
        let _ = writeln!(out, "compared with {} ({})", old.file, old.source_format);
    }
    let shown = n.min(view.rows.len());
    let cumulative = if view.cumulative { ", cumulative" } else { "" };
    let _ = write!(
        out,
        "{shown} of {} sites by {}{cumulative}: {} in {} allocations",
        view.rows.len(),
        view.key.name(),
        human_bytes(view.total_size),
        view.total_count
    );
    if view.is_diff {
        let _ = write!(
            out,
            " ({}, {} allocations)",
            signed_bytes(view.total_size as i64 - view.old_total_size as i64),
            signed_count(view.total_count as i64 - view.old_total_count as i64)
        );
    }
    out.push_str("\n\n");
    let mut columns = vec![("size", true)];
    if view.is_diff {
        columns.push(("change", true));
    }
    columns.extend([("count", true)]);
    if view.is_diff {
        columns.push(("change", true));
    }
    columns.extend([("average", true), ("site", false)]);
    let mut table = Table::new(&columns);
    let mut stacks = Vec::new();
    for row in &view.rows[..shown] {
        let mut cells = vec![human_bytes(row.size)];
        if view.is_diff {
            cells.push(signed_bytes(row.size_diff));
        }
        cells.push(row.count.to_string());
        if view.is_diff {
            cells.push(signed_count(row.count_diff));
        }
        cells.push(
            row.size
                .checked_div(row.count)
                .map_or_else(|| "-".to_owned(), human_bytes),
        );
        let site = site_text(&row.frames, view.key);
        // The number points at the stack listed below the table: only rows with one are
        // numbered, one after the other.
        if view.key == SiteKey::Traceback && row.frames.len() > 1 {
            let number = stacks.len() + 1;
            cells.push(format!("#{number} {site}"));
            stacks.push((number, &row.frames));
        } else {
            cells.push(site);
        }
        table.row(cells);
    }
    table.render(&mut out);
    if !stacks.is_empty() {
        out.push_str("\nstacks, most recent call first:\n");
        for (number, frames) in stacks {
            let _ = writeln!(out, "#{number}");
            for frame in frames.iter() {
                let _ = writeln!(out, "    {}", frame_text(frame));
            }
        }
    }
    out
}

/// The `gpu` view: allocated against reserved, the out-of-memory event, what holds the memory
/// by stack, the largest blocks, fragmentation, and what the trace covers.
pub fn gpu(view: &GpuView, info: &DumpInfo, findings: &[Finding], all_frames: bool) -> String {
    let mut out = String::new();
    header_with(info, findings, &mut out);
    let _ = writeln!(
        out,
        "allocated {} of {} reserved ({}) in {} segments, {} blocks ({} active)",
        human_bytes(view.allocated_bytes),
        human_bytes(view.reserved_bytes),
        percent(view.allocated_bytes, view.reserved_bytes),
        view.segments,
        view.blocks,
        view.active_blocks
    );
    let _ = writeln!(
        out,
        "reserved but free: {} in inactive blocks, the largest {}; {} pending free on other streams",
        human_bytes(view.inactive_bytes),
        human_bytes(view.largest_free_block),
        human_bytes(view.pending_free_bytes)
    );
    let _ = writeln!(
        out,
        "callers asked for {} of the allocated bytes ({} is rounding and splitting)",
        human_bytes(view.requested_bytes),
        human_bytes(view.allocated_bytes.saturating_sub(view.requested_bytes))
    );
    if let Some(oom) = &view.oom {
        let _ = writeln!(
            out,
            "\nOUT OF MEMORY: a request for {} failed{}; at that moment {} was allocated and {} reserved",
            human_bytes(oom.requested_bytes),
            oom.device_free
                .map(|free| format!(" with {} free on the device", human_bytes(free)))
                .unwrap_or_default(),
            human_bytes(oom.allocated_at.max(0) as u64),
            human_bytes(oom.reserved_at.max(0) as u64)
        );
        for frame in &oom.frames {
            let _ = writeln!(out, "    {}", frame_text(frame));
        }
        if oom.events_after > 0 {
            let _ = writeln!(
                out,
                "the snapshot was taken {} trace events after the failure: the tables below are that later state",
                oom.events_after
            );
        }
    }
    let folded = if all_frames {
        ""
    } else {
        " (library frames folded; --all-frames shows them)"
    };
    let (by, site) = match view.by {
        SiteKey::Traceback => ("allocating stack", "stack"),
        SiteKey::Lineno => ("allocating line", "line"),
        SiteKey::Filename => ("allocating file", "file"),
    };
    let _ = writeln!(out, "\nlive memory by {by}{folded}\n");
    let mut table = Table::new(&[
        ("bytes", true),
        ("share", true),
        ("blocks", true),
        (site, false),
    ]);
    for row in &view.by_stack {
        table.row(vec![
            human_bytes(row.size),
            percent(row.size, view.allocated_bytes),
            row.count.to_string(),
            site_text(&row.frames, view.by),
        ]);
        for frame in row.frames.iter().skip(1) {
            table.row(vec![
                String::new(),
                String::new(),
                String::new(),
                format!("  {}", frame_text(frame)),
            ]);
        }
    }
    table.render(&mut out);
    let _ = writeln!(out, "\nlargest live blocks\n");
    let mut table = Table::new(&[("bytes", true), ("address", true), ("allocated at", false)]);
    for block in &view.largest_blocks {
        table.row(vec![
            human_bytes(block.size),
            format!("0x{:x}", block.address),
            block
                .frames
                .first()
                .map_or_else(|| "(no stack recorded)".to_owned(), frame_text),
        ]);
    }
    table.render(&mut out);
    if !view.segments_with_free.is_empty() {
        let _ = writeln!(out, "\nsegments with the most free bytes\n");
        let mut table = Table::new(&[
            ("free", true),
            ("of", true),
            ("largest free block", true),
            ("pool", false),
            ("address", true),
        ]);
        for segment in &view.segments_with_free {
            table.row(vec![
                human_bytes(segment.free_bytes),
                human_bytes(segment.total_size),
                human_bytes(segment.largest_free_block),
                segment.segment_type.clone(),
                format!("0x{:x}", segment.address),
            ]);
        }
        table.render(&mut out);
    }
    if let Some(trace) = &view.trace {
        let actions: Vec<String> = trace
            .actions
            .iter()
            .map(|(name, count)| format!("{name} {count}"))
            .collect();
        let _ = writeln!(
            out,
            "\ntrace: {} events ({}); peak {} allocated, {} reserved",
            trace.entries,
            actions.join(", "),
            human_bytes(trace.peak_allocated.max(0) as u64),
            human_bytes(trace.peak_reserved.max(0) as u64)
        );
        if trace.allocated_before != 0 || trace.reserved_before != 0 {
            let _ = writeln!(
                out,
                "the trace starts late: {} allocated and {} reserved before its first event \
                 (recording started late, or the ring buffer dropped older events)",
                signed_bytes(trace.allocated_before),
                signed_bytes(trace.reserved_before)
            );
        }
    }
    out
}

/// `diff` of two heap dumps: totals, then the types that changed most, as objgraph's
/// `show_growth` with sizes.
pub fn graph_diff(
    view: &GraphDiffView,
    info: &DumpInfo,
    old: &DumpInfo,
    findings: &[Finding],
    by: RankBy,
    n: usize,
) -> String {
    let mut out = String::new();
    header_with(info, findings, &mut out);
    let _ = writeln!(out, "compared with {} ({})", old.file, old.source_format);
    let signed = |before: u64, after: u64| after as i64 - before as i64;
    let _ = writeln!(
        out,
        "objects {} → {} ({}), shallow {} → {} ({}), reachable {} → {} ({})",
        view.before.objects,
        view.after.objects,
        signed_count(signed(view.before.objects, view.after.objects)),
        human_bytes(view.before.shallow),
        human_bytes(view.after.shallow),
        signed_bytes(signed(view.before.shallow, view.after.shallow)),
        human_bytes(view.before.reachable),
        human_bytes(view.after.reachable),
        signed_bytes(signed(view.before.reachable, view.after.reachable)),
    );
    let changed: Vec<_> = view
        .types
        .iter()
        .filter(|row| {
            row.count_delta() != 0 || row.shallow_delta() != 0 || row.retained_delta() != 0
        })
        .collect();
    let _ = writeln!(
        out,
        "{} of {} types changed; the {} that changed most by {}:\n",
        changed.len(),
        view.types.len(),
        n.min(changed.len()),
        rank_name(by)
    );
    let mut table = Table::new(&[
        ("type", false),
        ("count", true),
        ("change", true),
        ("shallow", true),
        ("change", true),
        ("retained", true),
        ("change", true),
    ]);
    for row in changed.into_iter().take(n) {
        table.row(vec![
            type_text(&row.type_name).to_owned(),
            row.count_after.to_string(),
            signed_count(row.count_delta()),
            human_bytes(row.shallow_after),
            signed_bytes(row.shallow_delta()),
            human_bytes(row.retained_after),
            signed_bytes(row.retained_delta()),
        ]);
    }
    table.render(&mut out);
    let holders: Vec<_> = view
        .holders
        .iter()
        .filter(|holder| holder.retained_delta() != 0)
        .take(n)
        .collect();
    if !holders.is_empty() {
        let _ = writeln!(
            out,
            "\nholders that changed most (matched by their path from the root):\n"
        );
        let mut table = Table::new(&[
            ("status", false),
            ("retained", true),
            ("change", true),
            ("objects", true),
            ("holder", false),
        ]);
        let paths: Vec<Vec<String>> = holders
            .iter()
            .map(|holder| crate::holder_steps(&holder.path))
            .collect();
        let fitted = fit_distinct_paths(&paths, TABLE_PATH_WIDTH);
        for (holder, path) in holders.iter().zip(fitted) {
            table.row(vec![
                holder.status.name().to_owned(),
                human_bytes(holder.retained_after),
                signed_bytes(holder.retained_delta()),
                holder.count_after.to_string(),
                path,
            ]);
        }
        table.render(&mut out);
    }
    out
}

/// `leaking`: objects no dumped object refers to, by type, then the largest.
pub fn leaking(view: &LeakingView, info: &DumpInfo, n: usize) -> String {
    let mut out = String::new();
    header(info, &mut out);
    let _ = writeln!(
        out,
        "{} gc-tracked objects ({}) are referred to by no dumped object: C code holds them, or \
         a reference count leaked\n",
        view.count,
        human_bytes(view.shallow_size)
    );
    let mut table = Table::new(&[("count", true), ("shallow", true), ("type", false)]);
    for (name, count, size) in view.by_type.iter().take(n) {
        table.row(vec![
            count.to_string(),
            human_bytes(*size),
            type_text(name).to_owned(),
        ]);
    }
    table.render(&mut out);
    if !view.objects.is_empty() {
        let _ = writeln!(out, "\nthe largest:");
        for object in &view.objects {
            let _ = writeln!(out, "  {}", object_line(object));
        }
    }
    out
}

/// One `--fail-if` verdict on a line: `gate failed: RULE: measured +23.4% (+1.2 MiB, 5.1 MiB →
/// 6.3 MiB)`.
pub fn verdict(verdict: &heapgraph_analyzer::gate::Verdict) -> String {
    let amount = |value: i64| {
        if verdict.bytes {
            human_bytes(value.max(0) as u64)
        } else {
            value.to_string()
        }
    };
    let change = if verdict.bytes {
        signed_bytes(verdict.delta())
    } else {
        signed_count(verdict.delta())
    };
    let relative = verdict.relative().map_or_else(
        || "from nothing".to_owned(),
        |r| format!("{:+.1}%", r * 100.0),
    );
    format!(
        "gate {}: {}: measured {relative} ({change}, {} → {})",
        if verdict.failed { "FAILED" } else { "passed" },
        verdict.rule,
        amount(verdict.before),
        amount(verdict.after)
    )
}

/// `leaks`: the clusters of objects new in the target and alive in the final snapshot.
pub fn leaks(view: &LeaksView, info: &DumpInfo) -> String {
    let mut out = String::new();
    header(info, &mut out);
    let _ = writeln!(
        out,
        "{} objects allocated between the baseline and the target are still alive here\n",
        view.leaked
    );
    let mut table = Table::new(&[
        ("retained", true),
        ("objects", true),
        ("path from the root", false),
    ]);
    let paths: Vec<Vec<String>> = view
        .clusters
        .iter()
        .map(|cluster| crate::holder_steps(&cluster.path))
        .collect();
    let fitted = fit_distinct_paths(&paths, TABLE_PATH_WIDTH);
    for (cluster, path) in view.clusters.iter().zip(fitted) {
        table.row(vec![
            human_bytes(cluster.retained_size),
            cluster.count.to_string(),
            path,
        ]);
    }
    table.render(&mut out);
    let _ = writeln!(
        out,
        "\nby kind (as memlab's \"alive objects allocated in target\"):\n"
    );
    let mut table = Table::new(&[
        ("retained", true),
        ("count", true),
        ("kind", false),
        ("name", false),
    ]);
    for kind in view.kinds.iter().take(20) {
        table.row(vec![
            human_bytes(kind.retained_size),
            kind.count.to_string(),
            kind.kind.clone(),
            short(&kind.name, 60),
        ]);
    }
    table.render(&mut out);
    out
}

/// A recording (`summary` of a `.hgt`): how high memory went, how fast it grew, what crossed
/// which threshold, the dumps taken and how the process ended.
pub fn timeline(view: &TimelineView, info: &DumpInfo, findings: &[Finding]) -> String {
    let mut out = String::new();
    header_with(info, findings, &mut out);
    if let Some(pid) = view.pid {
        let command = view.command.join(" ");
        let _ = writeln!(
            out,
            "process {pid}{}",
            if command.is_empty() {
                String::new()
            } else {
                format!(": {}", short(&command, 120))
            }
        );
    }
    let started = view
        .started_at_ms
        .map(|ms| format!(", from {}", crate::utc_text(ms / 1000)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{} samples every {} ms over {}{started}",
        view.samples,
        view.interval_ms,
        duration_text(view.duration_s)
    );
    let limit_text = view
        .limit
        .as_ref()
        .map(|(bytes, source)| format!("{} ({source})", human_bytes(*bytes)));
    let _ = writeln!(
        out,
        "\nhost memory of {} process{}{}\n",
        view.max_processes,
        if view.max_processes == 1 {
            ""
        } else {
            "es at most"
        },
        limit_text
            .as_ref()
            .map(|limit| format!(", against a limit of {limit}"))
            .unwrap_or_default()
    );
    let limit = view.limit.as_ref().map(|(bytes, _)| *bytes);
    let mut table = Table::new(&[
        ("", false),
        ("last", true),
        ("peak", true),
        ("at", true),
        ("of limit", true),
    ]);
    let last_of = |values: &[Option<u64>]| values.iter().rev().find_map(|value| *value);
    let rows: [(&str, Option<u64>, Option<Peak>); 4] = [
        ("rss", view.last_rss, view.peak_rss),
        ("pss", last_of(&view.pss), view.peak_pss),
        ("uss", last_of(&view.uss), view.peak_uss),
        ("swap", last_of(&view.swap), view.peak_swap),
    ];
    for (name, last, peak) in rows {
        let Some(peak) = peak.filter(|peak| peak.bytes > 0 || name == "rss") else {
            continue;
        };
        table.row(vec![
            name.to_owned(),
            last.map_or_else(|| "-".to_owned(), human_bytes),
            human_bytes(peak.bytes),
            duration_text(peak.t_s),
            limit.map_or_else(|| "-".to_owned(), |limit| percent(peak.bytes, limit)),
        ]);
    }
    table.render(&mut out);
    if let Some(growth) = &view.growth {
        let _ = writeln!(out, "\n{}", crate::growth_text(growth));
    }
    if !view.gpus.is_empty() {
        let _ = writeln!(out, "\nGPU memory\n");
        let mut table = Table::new(&[
            ("gpu", false),
            ("memory", true),
            ("this process, peak", true),
            ("at", true),
            ("share", true),
            ("device, peak", true),
        ]);
        for gpu in &view.gpus {
            table.row(vec![
                format!("{} {}", gpu.index, gpu.name),
                human_bytes(gpu.memory_bytes),
                gpu.peak_process
                    .map_or_else(|| "-".to_owned(), |peak| human_bytes(peak.bytes)),
                gpu.peak_process
                    .map_or_else(|| "-".to_owned(), |peak| duration_text(peak.t_s)),
                gpu.peak_process.map_or_else(
                    || "-".to_owned(),
                    |peak| percent(peak.bytes, gpu.memory_bytes),
                ),
                gpu.peak_device
                    .map_or_else(|| "-".to_owned(), |peak| human_bytes(peak.bytes)),
            ]);
        }
        table.render(&mut out);
    }
    if !view.thresholds.is_empty() {
        let _ = writeln!(out, "\nthresholds\n");
        let mut table = Table::new(&[
            ("level", false),
            ("on", false),
            ("threshold", true),
            ("crossed", false),
        ]);
        for threshold in &view.thresholds {
            table.row(vec![
                threshold.level.to_owned(),
                threshold.resource.clone(),
                if threshold.spec.ends_with('%') {
                    format!("{} = {}", threshold.spec, human_bytes(threshold.bytes))
                } else {
                    human_bytes(threshold.bytes)
                },
                match (threshold.crossings, threshold.first_crossed_s) {
                    (0, _) | (_, None) => "never".to_owned(),
                    (1, Some(first)) => format!("once, at {}", duration_text(first)),
                    (n, Some(first)) => format!("{n} times, first at {}", duration_text(first)),
                },
            ]);
        }
        table.render(&mut out);
    }
    if !view.dumps.is_empty() {
        let _ = writeln!(out, "\ndumps taken\n");
        let mut table = Table::new(&[
            ("at", true),
            ("kind", false),
            ("took", true),
            ("file", false),
        ]);
        for dump in &view.dumps {
            table.row(vec![
                duration_text(dump.t_s),
                dump.kind.clone(),
                dump.duration_ms
                    .map_or_else(|| "-".to_owned(), |ms| duration_text(ms as f64 / 1000.0)),
                dump.path.clone(),
            ]);
        }
        table.render(&mut out);
    }
    if !view.events.is_empty() {
        let _ = writeln!(out, "\nevents\n");
        for event in &view.events {
            let _ = writeln!(
                out,
                "{:>9}  {:<11}  {}",
                duration_text(event.t_s),
                event.kind,
                event.text
            );
        }
    }
    out.push('\n');
    out.push_str(&exit_text(view.exit.as_ref()));
    out.push('\n');
    out
}

/// How the recorded process ended, in one sentence.
pub fn exit_text(exit: Option<&ExitView>) -> String {
    match exit {
        Some(ExitView {
            t_s,
            code: Some(code),
            ..
        }) => format!(
            "the process exited with code {code} at {}",
            duration_text(*t_s)
        ),
        Some(ExitView {
            t_s,
            signal: Some(signal),
            ..
        }) => format!(
            "the process was killed by signal {signal}{} at {}",
            match signal {
                9 => " (SIGKILL: the OOM killer sends it)",
                6 => " (SIGABRT)",
                11 => " (SIGSEGV)",
                15 => " (SIGTERM)",
                _ => "",
            },
            duration_text(*t_s)
        ),
        Some(ExitView { t_s, .. }) => format!("the process ended at {}", duration_text(*t_s)),
        None => "the recording stopped while the process was still running".to_owned(),
    }
}
