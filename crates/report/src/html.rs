//! The incident report: one self-contained HTML page (inline CSS, a few lines of inline script
//! for sorting tables, inline SVG charts drawn by plotters; no request leaves the page), small
//! whatever the dump's size, and the same bytes for the same inputs.

use crate::findings::frame_text;
use crate::holding::Selection;
use crate::{DumpInfo, human_bytes, signed_bytes, type_text};
use heapgraph_analyzer::diff::GraphDiffView;
use heapgraph_analyzer::findings::Finding;
use heapgraph_analyzer::gpu::GpuView;
use heapgraph_analyzer::merged_paths::MergedPathsView;
use heapgraph_analyzer::sites::SitesView;
use heapgraph_analyzer::waste::WasteView;
use heapgraph_analyzer::{DominatorTreeView, ObjectView, SummaryView, SuspectRule, SuspectsView};
use std::fmt::Write;

mod chart;
mod held;
mod timeline;

pub use timeline::TimelineSection;

/// Rows of every table, so that the page stays small.
const TABLE_ROWS: usize = 50;
/// Types a growth chart draws.
const CHART_SERIES: usize = 8;
/// A type whose growth is under this share of the largest is left off the growth chart: it
/// would be a flat line on the axis, or a bar no wider than a pixel.
const CHART_MIN_GROWTH_SHARE: f64 = 0.01;
/// Points a timeline chart draws (the trace is thinned evenly beyond this).
const TIMELINE_POINTS: usize = 2000;

/// One analysed heap dump.
pub struct HeapSection<'a> {
    /// The dump.
    pub info: &'a DumpInfo,
    /// Totals and types.
    pub summary: &'a SummaryView,
    /// The upper dominator tree (bounded by its builder).
    pub dominators: &'a DominatorTreeView,
    /// Leak suspects.
    pub suspects: &'a SuspectsView,
    /// Who holds the top suspect's objects: their merged paths from the roots, and which
    /// objects they are.
    pub holders: Option<(&'a MergedPathsView, &'a Selection)>,
    /// Waste in collections, where the runtime's dump lets it be measured (Java).
    pub waste: Option<&'a WasteView>,
}

/// A series of dumps of one process (or a baseline and a release), oldest first.
pub struct SeriesSection<'a> {
    /// Each dump's name and summary, in order.
    pub dumps: Vec<(&'a DumpInfo, &'a SummaryView)>,
    /// The first dump against the last.
    pub diff: &'a GraphDiffView,
}

/// A CUDA snapshot.
pub struct GpuSection<'a> {
    /// The snapshot.
    pub info: &'a DumpInfo,
    /// Its view, with a timeline when the trace has one.
    pub view: &'a GpuView,
}

/// What the page shows.
pub struct Report<'a> {
    /// When the page was made (left out for byte-identical output).
    pub generated_at: Option<String>,
    /// The (latest) heap dump.
    pub heap: Option<HeapSection<'a>>,
    /// Growth over a series of heap dumps.
    pub series: Option<SeriesSection<'a>>,
    /// A CUDA snapshot.
    pub gpu: Option<GpuSection<'a>>,
    /// A recording of memory over time.
    pub timeline: Option<TimelineSection<'a>>,
    /// An allocation snapshot (tracemalloc, the Rust recorder), or two compared.
    pub sites: Option<SitesSection<'a>>,
    /// What the analyses found, the most telling first: the first is the page's headline.
    pub findings: &'a [Finding],
}

/// Live allocations by site: one snapshot's `statistics`, or two compared (`compare_to`).
pub struct SitesSection<'a> {
    /// The (newer) snapshot.
    pub info: &'a DumpInfo,
    /// The older snapshot, in a comparison.
    pub old: Option<&'a DumpInfo>,
    /// The sites, grouped by line.
    pub view: &'a SitesView,
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// [`crate::short`], escaped for HTML.
fn short(text: &str, max: usize) -> String {
    escape(&crate::short(text, max))
}

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d2330;background:#f6f7f9}\
main{max-width:1180px;margin:0 auto;padding:20px 24px}\
h1{font-size:22px;margin:4px 0;overflow-wrap:anywhere}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d5d9e0;padding-bottom:4px}\
.meta{color:#5a6272;font-size:13px}.notes{color:#7a5b00;font-size:13px}\
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:14px 0}\
.card{background:#fff;border:1px solid #d5d9e0;border-radius:6px;padding:10px 14px;min-width:150px}\
.card b{display:block;font-size:20px}.card span{color:#5a6272;font-size:12px}\
table{border-collapse:collapse;background:#fff;width:100%;font-size:13px;margin:6px 0}\
th,td{border-bottom:1px solid #e4e7ec;padding:4px 8px;text-align:left;vertical-align:top}\
th{background:#eef0f4;cursor:pointer;user-select:none;white-space:nowrap}th.sorted-asc::after{content:' ▲'}th.sorted-desc::after{content:' ▼'}\
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}\
details{margin-left:18px}details>summary{cursor:pointer;list-style-position:outside}\
.tree>details{margin-left:0}.leaf{margin-left:18px}\
.share{display:inline-block;min-width:52px;text-align:right;color:#5a6272}\
.headline{background:#fff8e6;border:1px solid #e6c36a;border-left:5px solid #c27c0e;border-radius:4px;padding:10px 14px;margin:14px 0;font-size:15px}\
.headline code{font-size:14px}.headline div{font-size:13px;margin-top:3px}\
.suspect{background:#fff;border:1px solid #d5d9e0;border-left:4px solid #c0392b;border-radius:4px;padding:8px 12px;margin:10px 0}\
.chain{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;color:#333;overflow-wrap:anywhere}\
.chart{background:#fff;border:1px solid #d5d9e0;border-radius:6px;padding:6px;margin:8px 0}\
.chart svg{display:block;width:100%;height:auto}\
.legend{display:flex;flex-wrap:wrap;gap:2px 20px;padding:2px 10px 4px;font-size:13px;overflow-wrap:anywhere}\
.legend i{display:inline-block;width:22px;margin-right:6px;vertical-align:middle;border-top:3px solid}\
.legend i.dashed{border-top:2px dashed}.legend i.bar{height:11px;border:0;background:currentColor}\
.chart>.meta{padding:0 10px}\
.up{color:#b03a2e}.down{color:#1e7b34}\
@media print{body{background:#fff}main{max-width:none}th{cursor:auto}.chart,.suspect,tr{break-inside:avoid}}";

/// Sorts a table by the clicked column (numbers by their `data-v`, text by its content), and
/// opens every collapsed subtree before printing, so that a printed page shows the whole tree.
const SCRIPT: &str = "document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',function(){\
var i=th.cellIndex,t=th.closest('table'),b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),asc=!th.classList.contains('sorted-asc');\
t.querySelectorAll('th').forEach(function(h){h.classList.remove('sorted-asc','sorted-desc')});th.classList.add(asc?'sorted-asc':'sorted-desc');\
rows.sort(function(x,y){var a=x.cells[i],c=y.cells[i],va=a.getAttribute('data-v'),vc=c.getAttribute('data-v');\
var r=(va!==null&&vc!==null)?(parseFloat(va)-parseFloat(vc)):a.textContent.localeCompare(c.textContent);return asc?r:-r});\
rows.forEach(function(r){b.appendChild(r)})})});\
window.addEventListener('beforeprint',function(){document.querySelectorAll('details').forEach(function(d){d.open=true})});";

/// A sortable table: `columns` are `(title, numeric)`; numeric cells carry their value.
struct Table {
    columns: Vec<(&'static str, bool)>,
    rows: Vec<Vec<(String, Option<f64>)>>,
}

impl Table {
    fn new(columns: &[(&'static str, bool)]) -> Self {
        Table {
            columns: columns.to_vec(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, cells: Vec<(String, Option<f64>)>) {
        self.rows.push(cells);
    }

    fn render(&self, out: &mut String) {
        out.push_str("<table class=\"sortable\"><thead><tr>");
        for (title, _) in &self.columns {
            let _ = write!(out, "<th>{}</th>", escape(title));
        }
        out.push_str("</tr></thead><tbody>");
        for row in &self.rows {
            out.push_str("<tr>");
            for (i, (html, value)) in row.iter().enumerate() {
                match value {
                    Some(value) if self.columns[i].1 => {
                        let _ = write!(out, "<td class=\"n\" data-v=\"{value}\">{html}</td>");
                    }
                    _ => {
                        let _ = write!(out, "<td>{html}</td>");
                    }
                }
            }
            out.push_str("</tr>");
        }
        out.push_str("</tbody></table>");
    }
}

fn bytes_cell(bytes: u64) -> (String, Option<f64>) {
    (human_bytes(bytes), Some(bytes as f64))
}

fn count_cell(count: u64) -> (String, Option<f64>) {
    (count.to_string(), Some(count as f64))
}

fn text_cell(text: &str, max: usize) -> (String, Option<f64>) {
    (short(text, max), None)
}

fn delta_cell(delta: i64, bytes: bool) -> (String, Option<f64>) {
    let class = if delta > 0 {
        "up"
    } else if delta < 0 {
        "down"
    } else {
        ""
    };
    let text = if bytes {
        signed_bytes(delta)
    } else if delta >= 0 {
        format!("+{delta}")
    } else {
        delta.to_string()
    };
    (
        format!("<span class=\"{class}\">{text}</span>"),
        Some(delta as f64),
    )
}

fn object_text(object: &ObjectView) -> String {
    let mut text = format!(
        "{} <span class=\"mono\">{}</span>",
        short(type_text(&object.type_name), 60),
        escape(&object.id_text)
    );
    if !object.name.is_empty() && object.name != object.type_name {
        let _ = write!(text, " “{}”", short(&object.name, 60));
    }
    text
}

/// The file the page describes: the (last) heap dump, else the CUDA snapshot, the (newer)
/// allocation snapshot, or the recording.
fn described<'a>(report: &Report<'a>) -> Option<&'a DumpInfo> {
    report
        .heap
        .as_ref()
        .map(|heap| heap.info)
        .or_else(|| report.gpu.as_ref().map(|gpu| gpu.info))
        .or_else(|| report.sites.as_ref().map(|sites| sites.info))
        .or_else(|| report.timeline.as_ref().map(|timeline| timeline.info))
}

/// The page's title: the file it describes, or, for a comparison, the first file and the last
/// (`before.hgd → after.hgd`, with the number of dumps when a series has more than two).
fn title(report: &Report<'_>) -> String {
    if let Some(series) = &report.series
        && let (Some((first, _)), Some((last, _))) = (series.dumps.first(), series.dumps.last())
    {
        let arrow = format!("{} → {}", first.file, last.file);
        return match series.dumps.len() {
            2 => arrow,
            n => format!("{arrow} ({n} dumps)"),
        };
    }
    if let Some(sites) = &report.sites
        && let Some(old) = sites.old
    {
        return format!("{} → {}", old.file, sites.info.file);
    }
    described(report).map_or_else(|| "heapgraph report".to_owned(), |info| info.file.clone())
}

fn header(report: &Report<'_>, out: &mut String) {
    let title = title(report);
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>heapgraph: {}</title><style>{STYLE}</style></head><body><main>",
        escape(&title)
    );
    let _ = write!(out, "<h1>Memory report: {}</h1>", escape(&title));
    if let Some(info) = described(report) {
        let _ = write!(
            out,
            "<div class=\"meta\">format {} · runtime {}",
            escape(&info.source_format),
            escape(&info.runtime)
        );
        if let Some(version) = &info.runtime_version {
            let _ = write!(out, " {}", escape(version));
        }
        if let Some(pid) = info.pid {
            let _ = write!(out, " · process {pid}");
        }
        if let Some(ms) = info.captured_at_ms {
            let _ = write!(out, " · captured {}", crate::utc_text(ms / 1000));
        }
        if let Some(generated) = &report.generated_at {
            let _ = write!(out, " · report generated {}", escape(generated));
        }
        out.push_str("</div>");
    }
}

/// The described file's notes (how it was read, what it lacks): below the headline, which
/// comes first.
fn notes(report: &Report<'_>, out: &mut String) {
    for note in described(report).iter().flat_map(|info| &info.notes) {
        let _ = write!(out, "<div class=\"notes\">note: {}</div>", escape(note));
    }
}

fn cards(cards: &[(String, &str)], out: &mut String) {
    out.push_str("<div class=\"cards\">");
    for (value, label) in cards {
        let _ = write!(
            out,
            "<div class=\"card\"><b>{}</b><span>{}</span></div>",
            escape(value),
            escape(label)
        );
    }
    out.push_str("</div>");
}

fn heap_section(heap: &HeapSection<'_>, out: &mut String) {
    let summary = heap.summary;
    let mut heap_cards = vec![
        (
            human_bytes(summary.total_shallow_size),
            "heap (shallow, all objects)",
        ),
        (human_bytes(summary.reachable_size), "reachable"),
    ];
    heap_cards.extend(held::held_cards(summary));
    heap_cards.extend([
        (summary.objects.to_string(), "objects"),
        (summary.references.to_string(), "references"),
        (summary.types.len().to_string(), "types"),
    ]);
    cards(&heap_cards, out);
    if !heap.suspects.suspects.is_empty() {
        out.push_str("<h2>Leak suspects</h2>");
        for (i, suspect) in heap.suspects.suspects.iter().enumerate() {
            let _ = write!(out, "<div class=\"suspect\"><b>Suspect {}: ", i + 1);
            match suspect.rule {
                SuspectRule::SingleObject => {
                    let _ = write!(
                        out,
                        "one object retains {} ({:.1}%)</b>",
                        human_bytes(suspect.retained_size),
                        suspect.share * 100.0
                    );
                    if let Some(object) = &suspect.object {
                        let _ = write!(out, "<div>{}</div>", object_text(object));
                    }
                    if let Some(point) = &suspect.accumulation_point {
                        let _ =
                            write!(out, "<div>bytes accumulate in {}</div>", object_text(point));
                    }
                    if !suspect.accumulated.is_empty() {
                        let mut table =
                            Table::new(&[("type", false), ("count", true), ("retained", true)]);
                        for row in &suspect.accumulated {
                            table.row(vec![
                                text_cell(type_text(&row.type_name), 80),
                                count_cell(row.count),
                                bytes_cell(row.retained_size),
                            ]);
                        }
                        table.render(out);
                    }
                }
                SuspectRule::ManyInstances => {
                    let _ = write!(
                        out,
                        "{} instances of {} retain {} ({:.1}%)</b>",
                        suspect.count,
                        short(type_text(&suspect.type_name), 80),
                        human_bytes(suspect.retained_size),
                        suspect.share * 100.0
                    );
                }
            }
            if !suspect.path.is_empty() {
                let _ = write!(
                    out,
                    "<div class=\"chain\">held through: {}</div>",
                    short(&crate::chain_line(&suspect.path), 600)
                );
            }
            out.push_str("</div>");
        }
    }
    if let Some((paths, selection)) = heap.holders {
        merged_paths(paths, selection, out);
    }
    out.push_str("<h2>Types (click a column to sort)</h2>");
    let mut table = Table::new(&[
        ("type", false),
        ("count", true),
        ("shallow", true),
        ("retained", true),
        ("% of heap", true),
    ]);
    for row in summary.types.iter().take(TABLE_ROWS) {
        let share = if summary.heap_size == 0 {
            0.0
        } else {
            row.retained_size as f64 * 100.0 / summary.heap_size as f64
        };
        table.row(vec![
            text_cell(type_text(&row.type_name), 80),
            count_cell(row.count),
            bytes_cell(row.shallow_size),
            bytes_cell(row.retained_size),
            (format!("{share:.1}%"), Some(share)),
        ]);
    }
    table.render(out);
    if summary.types.len() > TABLE_ROWS {
        let _ = write!(
            out,
            "<div class=\"meta\">{} more types; <code>heapgraph summary --format json</code> lists them all</div>",
            summary.types.len() - TABLE_ROWS
        );
    }
    if let Some(waste) = heap.waste {
        waste_section(waste, out);
    }
    dominator_tree(heap.dominators, out);
}

/// The merged paths from the roots to a set of objects, as an indented table.
fn merged_paths(view: &MergedPathsView, selection: &Selection, out: &mut String) {
    if view.nodes.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<h2>Who holds {}</h2><div class=\"meta\">the shortest chains from the roots, merged: \
         {} reached, retaining {} together; the children leading to the most first</div>",
        escape(&selection.describe(view.targets)),
        view.reached,
        human_bytes(view.retained_size)
    );
    out.push_str(
        "<table><thead><tr><th>objects</th><th>retained</th><th>chain from the roots</th>\
         </tr></thead><tbody>",
    );
    let row = |count: Option<(u64, u64)>, indent: u32, html: &str| -> String {
        let (count, bytes) = match count {
            Some((count, bytes)) => (count.to_string(), human_bytes(bytes)),
            None => (String::new(), String::new()),
        };
        format!(
            "<tr><td class=\"n\">{count}</td><td class=\"n\">{bytes}</td>\
             <td class=\"chain\" style=\"padding-left:{}em\">{html}</td></tr>",
            0.5 + f64::from(indent.min(20)),
        )
    };
    // The children a node leaves out are told after the ones it lists.
    let mut pending: Vec<(u32, String)> = Vec::new();
    for node in &view.nodes {
        while pending.last().is_some_and(|(at, _)| *at >= node.indent) {
            if let Some((_, line)) = pending.pop() {
                out.push_str(&line);
            }
        }
        if node.skipped_steps > 0 {
            let text = format!("… {} steps of one child each", node.skipped_steps);
            out.push_str(&row(None, node.indent, &text));
        }
        let edge = crate::edge_text(node.edge.as_deref(), node.edge_kind)
            .map(|edge| format!("{} ", escape(&edge)))
            .unwrap_or_default();
        let mark = if node.is_target { " ◆" } else { "" };
        let html = format!("{edge}{}{mark}", object_text(&node.object));
        out.push_str(&row(
            Some((node.targets, node.retained_size)),
            node.indent,
            &html,
        ));
        if node.hidden_children > 0 {
            let text = format!("… {} more", node.hidden_children);
            let line = row(
                Some((node.hidden_targets, node.hidden_retained)),
                node.indent + 1,
                &text,
            );
            pending.push((node.indent, line));
        }
    }
    while let Some((_, line)) = pending.pop() {
        out.push_str(&line);
    }
    out.push_str("</tbody></table>");
}

/// Waste in collections: the totals as cards, then a row per type, as `heapgraph waste`.
fn waste_section(waste: &WasteView, out: &mut String) {
    if waste.rows.is_empty() {
        return;
    }
    out.push_str("<h2>Waste in collections</h2>");
    cards(
        &[
            (human_bytes(waste.wasted_bytes), "right-sizing would save"),
            (waste.collections.to_string(), "collections"),
            (waste.empty_collections.to_string(), "empty"),
            (human_bytes(waste.null_slot_bytes), "null slots of arrays"),
        ],
        out,
    );
    let mut table = Table::new(&[
        ("type", false),
        ("count", true),
        ("empty", true),
        ("fill", true),
        ("wasted", true),
    ]);
    for row in waste.rows.iter().take(TABLE_ROWS) {
        let fill = if row.capacity == 0 {
            0.0
        } else {
            row.elements as f64 * 100.0 / row.capacity as f64
        };
        let name = if row.arrays {
            format!("{} (arrays)", row.type_name)
        } else {
            row.type_name.clone()
        };
        table.row(vec![
            text_cell(&name, 80),
            count_cell(row.count),
            count_cell(row.empty),
            (format!("{fill:.1}%"), Some(fill)),
            bytes_cell(row.wasted_bytes),
        ]);
    }
    table.render(out);
    out.push_str(
        "<div class=\"meta\">fill: elements against slots; <code>heapgraph waste</code> lists the collections one by one</div>",
    );
}

/// The dominator tree as nested `<details>`, from its pre-order list.
fn dominator_tree(tree: &DominatorTreeView, out: &mut String) {
    let _ = write!(
        out,
        "<h2>Dominator tree ({} retained at the root; expand to see what each keeps alive)</h2><div class=\"tree\">",
        human_bytes(tree.total_retained)
    );
    let nodes = &tree.nodes;
    let mut open: Vec<u32> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        while open.last().is_some_and(|&depth| depth >= node.depth) {
            open.pop();
            out.push_str("</details>");
        }
        let has_children = nodes.get(i + 1).is_some_and(|next| next.depth > node.depth);
        let label = format!(
            "<span class=\"share\">{:.1}%</span> {} · {}{}",
            node.share * 100.0,
            node.object
                .retained_size
                .map_or_else(|| "-".to_owned(), human_bytes),
            object_text(&node.object),
            if node.hidden_children > 0 {
                format!(
                    " <span class=\"meta\">(+{} smaller)</span>",
                    node.hidden_children
                )
            } else {
                String::new()
            }
        );
        if has_children {
            let open_attr = if node.depth == 0 { " open" } else { "" };
            let _ = write!(out, "<details{open_attr}><summary>{label}</summary>");
            open.push(node.depth);
        } else {
            let _ = write!(out, "<div class=\"leaf\">{label}</div>");
        }
    }
    for _ in open {
        out.push_str("</details>");
    }
    out.push_str("</div>");
}

/// The types a growth chart draws: the first [`CHART_SERIES`] of `deltas` (name, growth, in
/// the diff's order) that grew, leaving off those that grew by less than
/// [`CHART_MIN_GROWTH_SHARE`] of the most any grew.
fn grown_types<'a>(deltas: impl Iterator<Item = (&'a str, i64)>) -> Vec<&'a str> {
    let grown: Vec<(&str, i64)> = deltas.filter(|&(_, delta)| delta > 0).collect();
    let most = grown.iter().map(|&(_, delta)| delta).max().unwrap_or(0);
    grown
        .into_iter()
        .filter(|&(_, delta)| delta as f64 >= most as f64 * CHART_MIN_GROWTH_SHARE)
        .take(CHART_SERIES)
        .map(|(name, _)| name)
        .collect()
}

/// A dump's name on a chart: its file name, without the folders.
fn file_name(info: &DumpInfo) -> &str {
    info.file.rsplit('/').next().unwrap_or(&info.file)
}

/// The growth chart: bars before and after for two dumps, lines over three or more.
fn growth_chart(series: &SeriesSection<'_>) -> Option<String> {
    let grown = grown_types(
        series
            .diff
            .types
            .iter()
            .map(|row| (row.type_name.as_str(), row.retained_delta())),
    );
    if grown.is_empty() {
        return None;
    }
    let retained = |summary: &SummaryView, name: &str| {
        summary
            .types
            .iter()
            .find(|row| row.type_name == name)
            .map_or(0, |row| row.retained_size)
    };
    let per_dump: Vec<Vec<u64>> = grown
        .iter()
        .map(|&name| {
            series
                .dumps
                .iter()
                .map(|(_, summary)| retained(summary, name))
                .collect()
        })
        .collect();
    let title = "Retained size of the types that grew most";
    if let [(first, _), (last, _)] = series.dumps.as_slice() {
        let pairs: Vec<chart::BarPair> = grown
            .iter()
            .zip(&per_dump)
            .map(|(&name, bytes)| chart::BarPair {
                name: type_text(name).to_owned(),
                before: bytes[0],
                after: bytes[1],
            })
            .collect();
        return Some(chart::bar_chart(&chart::BarChart {
            title,
            measure: "retained",
            before_name: &format!("first dump: {}", file_name(first)),
            after_name: &format!("last dump: {}", file_name(last)),
            pairs: &pairs,
        }));
    }
    let max_bytes = per_dump.iter().flatten().copied().max().unwrap_or(0);
    let (unit, scale) = chart::byte_unit(max_bytes as f64);
    let y_desc = format!("retained ({unit})");
    let labels: Vec<String> = series
        .dumps
        .iter()
        .enumerate()
        .map(|(i, (info, _))| format!("{} {}", i + 1, file_name(info)))
        .collect();
    let lines: Vec<chart::Line> = grown
        .iter()
        .zip(&per_dump)
        .enumerate()
        .map(|(i, (&name, values))| chart::Line {
            name: type_text(name).to_owned(),
            color: chart::series_color(i),
            values: values.iter().map(|&v| Some(v as f64 / scale)).collect(),
        })
        .collect();
    Some(chart::line_chart(
        &chart::LineChart {
            title,
            x: chart::XAxis::Labels(&labels),
            x_desc: "dump",
            y_desc: &y_desc,
            lines: &lines,
            levels: &[],
            marks: &[],
        },
        "",
    ))
}

fn series_section(series: &SeriesSection<'_>, out: &mut String) {
    out.push_str("<h2>Growth over the dumps</h2>");
    if let Some(chart) = growth_chart(series) {
        out.push_str(&chart);
    }
    let (before, after) = (&series.diff.before, &series.diff.after);
    cards(
        &[
            (
                signed_bytes(after.reachable as i64 - before.reachable as i64),
                "reachable heap, first to last",
            ),
            (
                format!("{:+}", after.objects as i64 - before.objects as i64),
                "objects, first to last",
            ),
        ],
        out,
    );
    out.push_str("<h2>Types that changed, first dump to last</h2>");
    let mut table = Table::new(&[
        ("type", false),
        ("count", true),
        ("change", true),
        ("retained", true),
        ("change", true),
        ("shallow change", true),
    ]);
    for row in series
        .diff
        .types
        .iter()
        .filter(|row| row.retained_delta() != 0 || row.count_delta() != 0)
        .take(TABLE_ROWS)
    {
        table.row(vec![
            text_cell(type_text(&row.type_name), 80),
            count_cell(row.count_after),
            delta_cell(row.count_delta(), false),
            bytes_cell(row.retained_after),
            delta_cell(row.retained_delta(), true),
            delta_cell(row.shallow_delta(), true),
        ]);
    }
    table.render(out);
    out.push_str("<h2>Holders that changed (matched by their path from the root)</h2>");
    let mut table = Table::new(&[
        ("status", false),
        ("retained", true),
        ("change", true),
        ("objects", true),
        ("holder", false),
    ]);
    for holder in series
        .diff
        .holders
        .iter()
        .filter(|holder| holder.retained_delta() != 0)
        .take(TABLE_ROWS)
    {
        table.row(vec![
            text_cell(holder.status.name(), 10),
            bytes_cell(holder.retained_after),
            delta_cell(holder.retained_delta(), true),
            count_cell(holder.count_after),
            (
                format!(
                    "<span class=\"chain\">{}</span>",
                    short(&crate::findings::path_text(&holder.path, None), 300)
                ),
                None,
            ),
        ]);
    }
    table.render(out);
}

fn gpu_section(gpu: &GpuSection<'_>, out: &mut String) {
    let view = gpu.view;
    cards(
        &[
            (human_bytes(view.allocated_bytes), "allocated"),
            (human_bytes(view.reserved_bytes), "reserved"),
            (human_bytes(view.inactive_bytes), "reserved but free"),
            (human_bytes(view.largest_free_block), "largest free block"),
            (view.segments.to_string(), "segments"),
            (view.blocks.to_string(), "blocks"),
        ],
        out,
    );
    if let Some(oom) = &view.oom {
        let _ = write!(
            out,
            "<div class=\"suspect\"><b>Out of memory: a request for {} failed</b><div>{} allocated and {} reserved at that moment; the largest free block was {}</div>",
            human_bytes(oom.requested_bytes),
            human_bytes(oom.allocated_at.max(0) as u64),
            human_bytes(oom.reserved_at.max(0) as u64),
            human_bytes(view.largest_free_block)
        );
        let frames: Vec<String> = oom
            .frames
            .iter()
            .map(|f| format!("{}:{}", f.filename, f.lineno))
            .collect();
        let _ = write!(
            out,
            "<div class=\"chain\">at {}</div></div>",
            short(&frames.join(" ← "), 600)
        );
    }
    if let Some(points) = &view.timeline
        && !points.is_empty()
    {
        let step = points.len().div_ceil(TIMELINE_POINTS);
        let thinned: Vec<_> = points.iter().step_by(step.max(1)).collect();
        let start = thinned[0].time_us;
        let span_us = thinned[thinned.len() - 1].time_us - start;
        // Milliseconds for short traces (an OOM's last moments), seconds otherwise.
        let (unit, scale) = if span_us < 10_000_000 {
            ("milliseconds", 1e3)
        } else {
            ("seconds", 1e6)
        };
        let times: Vec<f64> = thinned
            .iter()
            .map(|p| (p.time_us - start) as f64 / scale)
            .collect();
        let x_desc = format!("{unit} since the first trace event");
        let max_bytes = thinned
            .iter()
            .map(|p| p.allocated.max(p.reserved))
            .max()
            .unwrap_or(0)
            .max(0);
        let (byte_unit, byte_scale) = chart::byte_unit(max_bytes as f64);
        let in_unit = |v: i64| Some(v as f64 / byte_scale);
        let lines = [
            chart::Line {
                name: "allocated".to_owned(),
                color: chart::series_color(0),
                values: thinned.iter().map(|p| in_unit(p.allocated)).collect(),
            },
            chart::Line {
                name: "reserved".to_owned(),
                color: chart::series_color(1),
                values: thinned.iter().map(|p| in_unit(p.reserved)).collect(),
            },
        ];
        out.push_str("<h2>GPU memory over time</h2>");
        out.push_str(&chart::line_chart(
            &chart::LineChart {
                title: "Allocated and reserved bytes, from the allocator's trace",
                x: chart::XAxis::Values(&times),
                x_desc: &x_desc,
                y_desc: byte_unit,
                lines: &lines,
                levels: &[],
                marks: &[],
            },
            "",
        ));
    }
    out.push_str("<h2>Live memory by allocating stack</h2>");
    let mut table = Table::new(&[
        ("bytes", true),
        ("blocks", true),
        ("stack (most recent call first)", false),
    ]);
    for row in view.by_stack.iter().take(TABLE_ROWS) {
        table.row(vec![
            bytes_cell(row.size),
            count_cell(row.count),
            (
                format!("<span class=\"chain\">{}</span>", stack_html(&row.frames)),
                None,
            ),
        ]);
    }
    table.render(out);
}

/// A stack as HTML, a frame a line, most recent call first; a site without one says so.
fn stack_html(frames: &[heapgraph_analyzer::sites::SiteFrame]) -> String {
    if frames.is_empty() {
        return "(no stack recorded)".to_owned();
    }
    frames
        .iter()
        .map(|frame| short(&frame_text(frame), 200))
        .collect::<Vec<_>>()
        .join("<br>")
}

/// A finding's sentence as HTML: names in `code`.
fn sentence_html(sentence: &crate::findings::Sentence) -> String {
    let mut out = String::new();
    for part in &sentence.parts {
        match part {
            crate::findings::Part::Text(text) => out.push_str(&escape(text)),
            crate::findings::Part::Code(code) => {
                let _ = write!(out, "<code>{}</code>", short(code, 200));
            }
        }
    }
    out
}

/// The first thing the page says: the first finding in one sentence, in a developer's words,
/// with what it points at; the others follow in a line each.
fn headline(findings: &[Finding]) -> Option<String> {
    let (first, others) = findings.split_first()?;
    let mut out = String::from("<div class=\"headline\">");
    let _ = write!(
        out,
        "<b>{}</b>",
        sentence_html(&crate::findings::sentence(first))
    );
    if let Some((label, detail)) = crate::findings::detail(first) {
        let _ = write!(
            out,
            "<div class=\"chain\">{label}: {}</div>",
            short(&detail.bare(), 600)
        );
    }
    for finding in others.iter().take(4) {
        let _ = write!(
            out,
            "<div class=\"also\">{}</div>",
            sentence_html(&crate::findings::sentence(finding))
        );
    }
    out.push_str("</div>");
    Some(out)
}

/// Allocation sites: the top lines, or the lines that changed most.
fn sites_section(sites: &SitesSection<'_>, out: &mut String) {
    let view = sites.view;
    if let Some(old) = sites.old {
        let _ = write!(
            out,
            "<h2>Allocation sites that changed since {}</h2>",
            escape(&old.file)
        );
        cards(
            &[
                (human_bytes(view.total_size), "live now"),
                (
                    signed_bytes(view.total_size as i64 - view.old_total_size as i64),
                    "change",
                ),
                (view.total_count.to_string(), "allocations"),
            ],
            out,
        );
    } else {
        out.push_str("<h2>Allocation sites</h2>");
        cards(
            &[
                (human_bytes(view.total_size), "live"),
                (view.total_count.to_string(), "allocations"),
                (view.rows.len().to_string(), "sites"),
            ],
            out,
        );
    }
    let mut columns = vec![("bytes", true)];
    if view.is_diff {
        columns.push(("change", true));
    }
    columns.push(("allocations", true));
    if view.is_diff {
        columns.push(("change", true));
    }
    columns.push(("site (most recent call first)", false));
    let mut table = Table::new(&columns);
    for row in view.rows.iter().take(TABLE_ROWS) {
        let mut cells = vec![bytes_cell(row.size)];
        if view.is_diff {
            cells.push(delta_cell(row.size_diff, true));
        }
        cells.push(count_cell(row.count));
        if view.is_diff {
            cells.push(delta_cell(row.count_diff, false));
        }
        cells.push((
            format!("<span class=\"chain\">{}</span>", stack_html(&row.frames)),
            None,
        ));
        table.row(cells);
    }
    table.render(out);
}

/// The whole page.
pub fn report(report: &Report<'_>) -> String {
    let mut out = String::new();
    header(report, &mut out);
    if let Some(headline) = headline(report.findings) {
        out.push_str(&headline);
    }
    notes(report, &mut out);
    if let Some(timeline) = &report.timeline {
        // The header describes the heap dump or the CUDA snapshot when there is one.
        let described_above =
            report.heap.is_none() && report.gpu.is_none() && report.sites.is_none();
        timeline::section(timeline, !described_above, &mut out);
    }
    if let Some(series) = &report.series {
        series_section(series, &mut out);
    }
    if let Some(heap) = &report.heap {
        if report.series.is_some() {
            let _ = write!(out, "<h2>The last dump: {}</h2>", escape(&heap.info.file));
        }
        heap_section(heap, &mut out);
    }
    if let Some(gpu) = &report.gpu {
        gpu_section(gpu, &mut out);
    }
    if let Some(sites) = &report.sites {
        sites_section(sites, &mut out);
    }
    let _ = writeln!(
        out,
        "<p class=\"meta\">Made by heapgraph {}. Sizes are binary (KiB, MiB).</p></main><script>{SCRIPT}</script></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_growth_chart_draws_the_types_that_grew_and_not_the_specks() {
        // The batch server's diff, in the diff's order: the queue and what it holds grew by
        // 120 MiB, an int by a few KiB (under 1% of that), a list shrank.
        let mib = 1 << 20;
        let deltas = [
            ("dict", 120 * mib),
            ("collections.deque", 120 * mib),
            ("list", -mib),
            ("int", 4096),
            ("numpy.ndarray", 118 * mib),
        ];
        assert_eq!(
            grown_types(deltas.iter().copied()),
            ["dict", "collections.deque", "numpy.ndarray"]
        );
        // At most CHART_SERIES, the first in the diff's order.
        let many: Vec<(String, i64)> = (0..20).map(|i| (format!("t{i}"), 100 - i)).collect();
        let drawn = grown_types(many.iter().map(|(name, delta)| (name.as_str(), *delta)));
        assert_eq!(drawn.len(), CHART_SERIES);
        assert_eq!(drawn[0], "t0");
        assert!(grown_types(std::iter::empty()).is_empty());
    }
}
