//! The report's section for a recording (`heapgraph record`'s `.hgt`): memory over time against
//! the limit and the thresholds, with the dumps marked where they were taken.

use super::chart::{self, Level, Line, XAxis, byte_unit};
use super::{Table, bytes_cell, cards, escape, short, text_cell};
use crate::{DumpInfo, duration_text, human_bytes};
use heapgraph_analyzer::timeline::TimelineView;
use plotters::style::RGBColor;
use std::fmt::Write;

/// Points a memory-over-time line draws: beyond this, each point is the highest of its stretch
/// of samples, so that no peak is thinned away.
const CHART_POINTS: usize = 1500;

/// A recording.
pub struct TimelineSection<'a> {
    /// The file.
    pub info: &'a DumpInfo,
    /// Its analysis.
    pub view: &'a TimelineView,
}

/// The unit a chart's time axis is drawn in, chosen by the duration.
fn time_unit(duration_s: f64) -> (&'static str, f64) {
    if duration_s > 3.0 * 3600.0 {
        ("hours", 3600.0)
    } else if duration_s > 600.0 {
        ("minutes", 60.0)
    } else {
        ("seconds", 1.0)
    }
}

/// `values` thinned to at most [`CHART_POINTS`] points: each kept point is the highest value
/// of its stretch (a gap when none of it was measured), at the stretch's first time.
fn thin(t_s: &[f64], values: &[Option<f64>]) -> (Vec<f64>, Vec<Option<f64>>) {
    let step = t_s.len().div_ceil(CHART_POINTS).max(1);
    let times = t_s.iter().step_by(step).copied().collect();
    let peaks = values
        .chunks(step)
        .map(|stretch| stretch.iter().flatten().copied().reduce(f64::max))
        .collect();
    (times, peaks)
}

/// A memory-over-time chart as inline SVG: `lines` over `t_s`, `levels` as dashed horizontal
/// lines, and a dotted vertical line at each of `marks` (time, label).
fn memory_chart(
    title: &str,
    t_s: &[f64],
    lines: &[Line],
    levels: &[Level],
    marks: &[(f64, String)],
) -> String {
    let duration = t_s.last().copied().unwrap_or(0.0).max(1e-3);
    let (time_name, time_scale) = time_unit(duration);
    let data_max = lines
        .iter()
        .flat_map(|line| line.values.iter().flatten().copied())
        .fold(0.0f64, f64::max)
        .max(1.0);
    // A level far above the data (a machine's whole memory under a small process) would flatten
    // the lines to the axis: it is left off the chart and named beneath it instead.
    let (levels, off_chart): (Vec<&Level>, Vec<&Level>) = levels
        .iter()
        .partition(|level| level.value <= data_max * LEVEL_REACH);
    let max_bytes = levels
        .iter()
        .map(|level| level.value)
        .fold(data_max, f64::max);
    let (unit, scale) = byte_unit(max_bytes);
    // The lines thinned to what a chart can show (the peaks kept), in the chart's units.
    let mut times = Vec::new();
    let drawn: Vec<Line> = lines
        .iter()
        .map(|line| {
            let (thinned_times, values) = thin(t_s, &line.values);
            times = thinned_times;
            Line {
                name: line.name.clone(),
                color: line.color,
                values: values.iter().map(|v| v.map(|v| v / scale)).collect(),
            }
        })
        .filter(|line| line.values.iter().any(Option::is_some))
        .collect();
    let times: Vec<f64> = times.iter().map(|t| t / time_scale).collect();
    let drawn_levels: Vec<Level> = levels
        .iter()
        .map(|level| Level {
            name: level.name.clone(),
            color: level.color,
            value: level.value / scale,
        })
        .collect();
    let marks: Vec<(f64, String)> = marks
        .iter()
        .map(|(t, label)| (t / time_scale, label.clone()))
        .collect();
    let mut below = String::new();
    if !off_chart.is_empty() {
        let names: Vec<String> = off_chart
            .iter()
            .map(|level| format!("{} at {}", level.name, human_bytes(level.value as u64)))
            .collect();
        let _ = write!(
            below,
            "<div class=\"meta\">above the chart: {}</div>",
            escape(&names.join("; "))
        );
    }
    chart::line_chart(
        &chart::LineChart {
            title,
            x: XAxis::Values(&times),
            x_desc: &format!("{time_name} since the recording started"),
            y_desc: unit,
            lines: &drawn,
            levels: &drawn_levels,
            marks: &marks,
        },
        &below,
    )
}

/// How far above the data's peak a level may be and still be drawn: beyond it, drawing the
/// level would squash the lines that matter.
const LEVEL_REACH: f64 = 3.0;

const RSS: RGBColor = RGBColor(31, 119, 180);
const PSS: RGBColor = RGBColor(44, 160, 44);
const USS: RGBColor = RGBColor(148, 103, 189);
const SWAP: RGBColor = RGBColor(140, 86, 75);
const LIMIT: RGBColor = RGBColor(60, 60, 60);
const WARN: RGBColor = RGBColor(230, 126, 34);
const ACT: RGBColor = RGBColor(214, 39, 40);
const GPU_COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
];

/// `color` halfway to white: the same hue, for a line that is context rather than subject.
fn lighter(color: RGBColor) -> RGBColor {
    let half = |channel: u8| ((u16::from(channel) + 255) / 2) as u8;
    RGBColor(half(color.0), half(color.1), half(color.2))
}

fn threshold_color(level: &str) -> RGBColor {
    if level == "act" { ACT } else { WARN }
}

fn as_f64(values: &[Option<u64>]) -> Vec<Option<f64>> {
    values.iter().map(|value| value.map(|v| v as f64)).collect()
}

/// The dumps as chart marks: `dump 1 (python-hgd)`.
fn dump_marks(view: &TimelineView) -> Vec<(f64, String)> {
    view.dumps
        .iter()
        .enumerate()
        .map(|(i, dump)| (dump.t_s, format!("dump {}", i + 1)))
        .collect()
}

/// The section: cards, the growth in a sentence, the charts, dumps and events.
/// `with_info` adds the file's name and notes, for a page whose header describes another file.
pub(super) fn section(section: &TimelineSection<'_>, with_info: bool, out: &mut String) {
    let view = section.view;
    out.push_str("<h2>Memory over time</h2>");
    if with_info {
        let _ = write!(
            out,
            "<div class=\"meta\">{} ({})</div>",
            escape(&section.info.file),
            escape(&section.info.source_format)
        );
        for note in &section.info.notes {
            let _ = write!(out, "<div class=\"notes\">note: {}</div>", escape(note));
        }
    }
    if !view.command.is_empty() {
        let _ = write!(
            out,
            "<div class=\"meta\">recorded <code>{}</code>, every {} ms</div>",
            short(&view.command.join(" "), 200),
            view.interval_ms
        );
    }
    let mut card_list = vec![(
        view.peak_rss
            .map_or_else(|| "-".to_owned(), |peak| human_bytes(peak.bytes)),
        "peak RSS",
    )];
    if let (Some(share), Some((limit, _))) = (view.peak_share_of_limit, &view.limit) {
        card_list.push((
            format!(
                "{} of {}",
                crate::limit_share_text(share),
                human_bytes(*limit)
            ),
            "peak share of the limit",
        ));
    }
    if let Some(peak) = view.peak_gpu {
        card_list.push((human_bytes(peak.bytes), "peak GPU memory"));
    }
    card_list.push((duration_text(view.duration_s), "recorded"));
    card_list.push((view.samples.to_string(), "samples"));
    card_list.push((view.dumps.len().to_string(), "dumps taken"));
    cards(&card_list, out);
    let exit = crate::text::exit_text(view.exit.as_ref());
    let _ = write!(out, "<p>{}.", escape(&capitalised(&exit)));
    if let Some(growth) = &view.growth {
        let _ = write!(out, " {}.", escape(&crate::growth_text(growth)));
    }
    out.push_str("</p>");

    let mut lines = vec![Line {
        name: "RSS".to_owned(),
        color: RSS,
        values: view.rss.iter().map(|&rss| Some(rss as f64)).collect(),
    }];
    for (name, color, values) in [
        ("PSS", PSS, &view.pss),
        ("USS (private)", USS, &view.uss),
        ("swap", SWAP, &view.swap),
    ] {
        if values.iter().any(|value| value.is_some_and(|v| v > 0)) {
            lines.push(Line {
                name: name.to_owned(),
                color,
                values: as_f64(values),
            });
        }
    }
    let mut levels = Vec::new();
    if let Some((limit, source)) = &view.limit {
        levels.push(Level {
            name: format!("limit ({source})"),
            color: LIMIT,
            value: *limit as f64,
        });
    }
    for threshold in view.thresholds.iter().filter(|t| t.resource == "host") {
        levels.push(Level {
            name: format!("{} {}", threshold.level, threshold.spec),
            color: threshold_color(threshold.level),
            value: threshold.bytes as f64,
        });
    }
    let marks = dump_marks(view);
    out.push_str(&memory_chart(
        "Host memory of the recorded processes",
        &view.t_s,
        &lines,
        &levels,
        &marks,
    ));

    if !view.gpus.is_empty() {
        let mut lines = Vec::new();
        let mut levels = Vec::new();
        for (i, gpu) in view.gpus.iter().enumerate() {
            let color = GPU_COLORS[i % GPU_COLORS.len()];
            lines.push(Line {
                name: format!("GPU {}: this process", gpu.index),
                color,
                values: as_f64(&gpu.process_used),
            });
            if gpu.device_used.iter().any(Option::is_some) {
                lines.push(Line {
                    name: format!("GPU {}: all processes", gpu.index),
                    color: lighter(color),
                    values: as_f64(&gpu.device_used),
                });
            }
            levels.push(Level {
                name: format!("GPU {} memory ({})", gpu.index, short(&gpu.name, 30)),
                color: LIMIT,
                value: gpu.memory_bytes as f64,
            });
            let resource = format!("gpu:{}", gpu.index);
            for threshold in view.thresholds.iter().filter(|t| t.resource == resource) {
                levels.push(Level {
                    name: format!("GPU {} {} {}", gpu.index, threshold.level, threshold.spec),
                    color: threshold_color(threshold.level),
                    value: threshold.bytes as f64,
                });
            }
        }
        out.push_str(&memory_chart(
            "GPU memory (NVML)",
            &view.t_s,
            &lines,
            &levels,
            &marks,
        ));
    }

    if !view.dumps.is_empty() {
        out.push_str("<h2>Dumps taken</h2>");
        let mut table = Table::new(&[
            ("", false),
            ("at", true),
            ("kind", false),
            ("took", true),
            ("file", false),
        ]);
        for (i, dump) in view.dumps.iter().enumerate() {
            table.row(vec![
                (format!("dump {}", i + 1), None),
                (duration_text(dump.t_s), Some(dump.t_s)),
                text_cell(&dump.kind, 40),
                match dump.duration_ms {
                    Some(ms) => (duration_text(ms as f64 / 1000.0), Some(ms as f64)),
                    None => ("-".to_owned(), None),
                },
                (format!("<code>{}</code>", short(&dump.path, 200)), None),
            ]);
        }
        table.render(out);
        out.push_str(
            "<div class=\"meta\">Open a dump with <code>heapgraph report FILE</code>, or \
             <code>heapgraph who-holds FILE --type NAME</code>.</div>",
        );
    }
    if !view.thresholds.is_empty() {
        out.push_str("<h2>Thresholds</h2>");
        let mut table = Table::new(&[
            ("level", false),
            ("on", false),
            ("threshold", true),
            ("crossings", true),
            ("first crossed", true),
        ]);
        for threshold in &view.thresholds {
            let mut threshold_cell = bytes_cell(threshold.bytes);
            if threshold.spec.ends_with('%') {
                threshold_cell.0 = format!("{} = {}", escape(&threshold.spec), threshold_cell.0);
            }
            table.row(vec![
                text_cell(threshold.level, 10),
                text_cell(&threshold.resource, 20),
                threshold_cell,
                (
                    threshold.crossings.to_string(),
                    Some(threshold.crossings as f64),
                ),
                match threshold.first_crossed_s {
                    Some(t) => (duration_text(t), Some(t)),
                    None => ("never".to_owned(), None),
                },
            ]);
        }
        table.render(out);
    }
    if !view.events.is_empty() {
        out.push_str("<h2>Events</h2>");
        let mut table = Table::new(&[("at", true), ("event", false), ("what happened", false)]);
        for event in view.events.iter().take(super::TABLE_ROWS) {
            table.row(vec![
                (duration_text(event.t_s), Some(event.t_s)),
                text_cell(&event.kind, 20),
                text_cell(&event.text, 300),
            ]);
        }
        table.render(out);
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_every_peak() {
        let t_s: Vec<f64> = (0..10_000).map(f64::from).collect();
        let mut values: Vec<Option<f64>> = vec![Some(1.0); 10_000];
        values[4321] = Some(99.0);
        values[100] = None;
        let (times, thinned) = thin(&t_s, &values);
        assert!(times.len() <= CHART_POINTS);
        assert_eq!(times.len(), thinned.len());
        assert_eq!(thinned.iter().flatten().copied().fold(0.0, f64::max), 99.0);
        // A stretch with one gap keeps its measured values.
        assert!(thinned.iter().all(Option::is_some));
    }

    #[test]
    fn time_units_follow_the_duration() {
        assert_eq!(time_unit(30.0).0, "seconds");
        assert_eq!(time_unit(3600.0).0, "minutes");
        assert_eq!(time_unit(86_400.0).0, "hours");
    }
}
