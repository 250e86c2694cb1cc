//! The incident report: one self-contained HTML page (inline CSS, a few lines of inline script
//! for sorting tables, inline SVG charts drawn by plotters; no request leaves the page), small
//! whatever the dump's size, and the same bytes for the same inputs.

use crate::findings::frame_text;
use crate::{DumpInfo, human_bytes, signed_bytes, type_text};
use heapgraph_analyzer::diff::GraphDiffView;
use heapgraph_analyzer::findings::Finding;
use heapgraph_analyzer::gpu::GpuView;
use heapgraph_analyzer::sites::SitesView;
use heapgraph_analyzer::{DominatorTreeView, ObjectView, SummaryView, SuspectRule, SuspectsView};
use plotters::prelude::*;
use std::fmt::Write;

mod held;
mod timeline;

pub use timeline::TimelineSection;

/// Rows of every table, so that the page stays small.
const TABLE_ROWS: usize = 50;
/// Lines a growth chart draws.
const CHART_SERIES: usize = 8;
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
h1{font-size:22px;margin:4px 0}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d5d9e0;padding-bottom:4px}\
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
.chart svg{display:block;max-width:100%;height:auto}\
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

fn header(report: &Report<'_>, out: &mut String) {
    let info = report
        .heap
        .as_ref()
        .map(|heap| heap.info)
        .or_else(|| report.gpu.as_ref().map(|gpu| gpu.info))
        .or_else(|| report.sites.as_ref().map(|sites| sites.info))
        .or_else(|| report.timeline.as_ref().map(|timeline| timeline.info));
    let title = info.map_or_else(|| "heapgraph report".to_owned(), |info| info.file.clone());
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>heapgraph: {}</title><style>{STYLE}</style></head><body><main>",
        escape(&title)
    );
    let _ = write!(out, "<h1>Memory report: {}</h1>", escape(&title));
    if let Some(info) = info {
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
        for note in &info.notes {
            let _ = write!(out, "<div class=\"notes\">note: {}</div>", escape(note));
        }
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
    dominator_tree(heap.dominators, out);
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

/// The x axis of a line chart: one label per point (a series of dumps), or a value per point
/// (time).
enum XAxis<'a> {
    Labels(&'a [String]),
    Values(&'a [f64]),
}

/// Draws a chart of `size` pixels as SVG: `draw` fills the drawing area. Returns the SVG, or the
/// page's note that the chart could not be drawn, and why.
fn svg_chart<F>(size: (u32, u32), draw: F) -> Result<String, String>
where
    F: FnOnce(
        &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    ) -> Result<(), Box<dyn std::error::Error>>,
{
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let drawn = root
            .fill(&WHITE)
            .map_err(|err| Box::new(err) as Box<dyn std::error::Error>)
            .and_then(|()| draw(&root))
            .and_then(|()| {
                root.present()
                    .map_err(|err| Box::new(err) as Box<dyn std::error::Error>)
            });
        if let Err(error) = drawn {
            return Err(format!(
                "<div class=\"meta\">chart not drawn: {}</div>",
                escape(&error.to_string())
            ));
        }
    }
    Ok(svg)
}

/// The legend of a chart's named series, in its upper left corner.
fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    Ok(())
}

/// A line chart of `series` (name, one value per x) as inline SVG.
fn line_chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    x_axis: XAxis<'_>,
    series: &[(String, Vec<f64>)],
) -> String {
    let xs: Vec<f64> = match &x_axis {
        XAxis::Labels(labels) => (0..labels.len()).map(|i| i as f64).collect(),
        XAxis::Values(values) => values.to_vec(),
    };
    let x_min = xs.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
    let x_max = xs.iter().copied().fold(0.0f64, f64::max).max(x_min + 1.0);
    let y_max = series
        .iter()
        .flat_map(|(_, values)| values.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.1;
    let drawn = svg_chart((1040, 360), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(x_min..x_max, 0f64..y_max)?;
        let labels: Vec<String> = match &x_axis {
            XAxis::Labels(labels) => labels.to_vec(),
            XAxis::Values(_) => Vec::new(),
        };
        let categorical = !labels.is_empty();
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(if categorical {
                labels.len().min(12)
            } else {
                10
            })
            .x_label_formatter(&|x| {
                if categorical {
                    labels.get(x.round() as usize).cloned().unwrap_or_default()
                } else {
                    format!("{x:.1}")
                }
            })
            .y_label_formatter(&|y| format!("{y:.1}"))
            .draw()?;
        for (i, (name, values)) in series.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    xs.iter().copied().zip(values.iter().copied()),
                    color.stroke_width(2),
                ))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        }
        legend(&mut chart)
    });
    match drawn {
        Ok(svg) => format!("<div class=\"chart\">{svg}</div>"),
        Err(message) => message,
    }
}

fn series_section(series: &SeriesSection<'_>, out: &mut String) {
    out.push_str("<h2>Growth over the dumps</h2>");
    let labels: Vec<String> = series
        .dumps
        .iter()
        .enumerate()
        .map(|(i, (info, _))| {
            let name = info.file.rsplit('/').next().unwrap_or(&info.file);
            format!("{} {}", i + 1, name.chars().take(24).collect::<String>())
        })
        .collect();
    // The types that grew most, first dump to last, by retained size.
    let grown: Vec<&str> = series
        .diff
        .types
        .iter()
        .filter(|row| row.retained_delta() > 0)
        .take(CHART_SERIES)
        .map(|row| row.type_name.as_str())
        .collect();
    let lines: Vec<(String, Vec<f64>)> = grown
        .iter()
        .map(|&name| {
            let values = series
                .dumps
                .iter()
                .map(|(_, summary)| {
                    summary
                        .types
                        .iter()
                        .find(|row| row.type_name == name)
                        .map_or(0.0, |row| row.retained_size as f64 / (1024.0 * 1024.0))
                })
                .collect();
            (type_text(name).to_owned(), values)
        })
        .collect();
    if !lines.is_empty() {
        out.push_str(&line_chart(
            "Retained size of the types that grew most",
            "dump",
            "retained (MiB)",
            XAxis::Labels(&labels),
            &lines,
        ));
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
                    short(&holder.signature, 300)
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
        let mib = |v: i64| v as f64 / (1024.0 * 1024.0);
        let lines = vec![
            (
                "allocated".to_owned(),
                thinned.iter().map(|p| mib(p.allocated)).collect(),
            ),
            (
                "reserved".to_owned(),
                thinned.iter().map(|p| mib(p.reserved)).collect(),
            ),
        ];
        out.push_str("<h2>GPU memory over time</h2>");
        out.push_str(&line_chart(
            "Allocated and reserved bytes, from the allocator's trace",
            &x_desc,
            "MiB",
            XAxis::Values(&times),
            &lines,
        ));
    }
    out.push_str("<h2>Live memory by allocating stack</h2>");
    let mut table = Table::new(&[
        ("bytes", true),
        ("blocks", true),
        ("stack (most recent call first)", false),
    ]);
    for row in view.by_stack.iter().take(TABLE_ROWS) {
        let frames: Vec<String> = row.frames.iter().map(frame_text).collect();
        let stack = if frames.is_empty() {
            "(no stack recorded)".to_owned()
        } else {
            frames
                .iter()
                .map(|frame| short(frame, 200))
                .collect::<Vec<_>>()
                .join("<br>")
        };
        table.row(vec![
            bytes_cell(row.size),
            count_cell(row.count),
            (format!("<span class=\"chain\">{stack}</span>"), None),
        ]);
    }
    table.render(out);
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
        let frames: Vec<String> = row
            .frames
            .iter()
            .map(|f| short(&frame_text(f), 200))
            .collect();
        cells.push((
            format!("<span class=\"chain\">{}</span>", frames.join("<br>")),
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
