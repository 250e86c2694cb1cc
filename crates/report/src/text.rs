//! Text output for terminals: aligned tables, human sizes, chains from the root.

use crate::{DumpInfo, human_bytes, rank_name};
use heapgraph_analyzer::{
    DominatorTreeView, HoldersView, ObjectView, PathStep, RankBy, StringsView, SummaryView,
    SuspectRule, SuspectsView,
};
use std::fmt::Write;

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

/// Shortens a label to `max` characters on one line.
fn short(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

fn header(info: &DumpInfo, out: &mut String) {
    let _ = writeln!(
        out,
        "{} ({}, {})",
        info.file, info.source_format, info.runtime
    );
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
pub fn summary(view: &SummaryView, info: &DumpInfo, max_types: usize) -> String {
    let mut out = String::new();
    header(info, &mut out);
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
            short(&row.type_name, 60),
            row.count.to_string(),
            human_bytes(row.shallow_size),
            human_bytes(row.retained_size),
            percent(row.retained_size, view.reachable_size),
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
            short(&object.type_name, 40),
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
fn edge_suffix(edge: &str) -> String {
    if edge.starts_with('[') {
        edge.to_owned()
    } else {
        format!(".{edge}")
    }
}

fn object_line(object: &ObjectView) -> String {
    let mut line = format!("{} {}", object.type_name, object.id_text);
    if !object.name.is_empty() && object.name != object.type_name {
        let _ = write!(line, " {:?}", short(&object.name, 50));
    }
    let _ = write!(line, "  shallow {}", human_bytes(object.shallow_size));
    if let Some(retained) = object.retained_size {
        let _ = write!(line, ", retained {}", human_bytes(retained));
    }
    line
}

/// The one-line form of a chain, each object by type and name (when it has one of its own):
/// `(GC roots).<thread> → java.lang.Thread "worker-3".<frame 5> → frame "Worker.run(…)".<local> → State`.
fn chain_line(path: &[PathStep]) -> String {
    let mut parts = Vec::with_capacity(path.len());
    for (i, step) in path.iter().enumerate() {
        let mut label = short(&step.object.type_name, 40);
        let name = &step.object.name;
        if !name.is_empty() && *name != step.object.type_name {
            let _ = write!(label, " {:?}", short(name, 60));
        }
        if let Some(next) = path.get(i + 1)
            && let Some(edge) = &next.edge
        {
            label.push_str(&edge_suffix(&short(edge, 40)));
        }
        parts.push(label);
    }
    parts.join(" → ")
}

/// Who holds an object: the target, its dominators, and its shortest chains.
pub fn holders(view: &HoldersView, info: &DumpInfo) -> String {
    let mut out = String::new();
    header(info, &mut out);
    let _ = writeln!(out, "target: {}", object_line(&view.target));
    if let Some(matches) = view.matches {
        let _ = writeln!(
            out,
            "({matches} objects of this type; this one retains the most)"
        );
    }
    if view.dominator_chain.is_empty() {
        let _ = writeln!(
            out,
            "\nthe root does not reach this object through strong references: nothing holds it \
             (it is garbage, or held only weakly)"
        );
        return out;
    }
    let _ = writeln!(
        out,
        "\ndominators (releasing any of them frees the target), root first:"
    );
    for (depth, object) in view.dominator_chain.iter().enumerate() {
        let _ = writeln!(out, "  {:>3}  {}", depth, object_line(object));
    }
    for (i, path) in view.paths.iter().enumerate() {
        let _ = writeln!(
            out,
            "\nchain {} of {} ({} references):",
            i + 1,
            view.paths.len(),
            path.len().saturating_sub(1)
        );
        let _ = writeln!(out, "  {}", chain_line(path));
        for step in path {
            let edge = step
                .edge
                .as_deref()
                .map(edge_suffix)
                .unwrap_or_else(|| "(root)".to_owned());
            let _ = writeln!(
                out,
                "    {:<28} {}",
                short(&edge, 28),
                object_line(&step.object)
            );
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
        let _ = write!(label, "{} {}", short(&object.type_name, 40), object.id_text);
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
pub fn suspects(view: &SuspectsView, info: &DumpInfo) -> String {
    let mut out = String::new();
    header(info, &mut out);
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
                if let Some(point) = &suspect.accumulation_point {
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
                            short(&row.type_name, 60),
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
                    suspect.type_name,
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
