//! The report's charts: lines over dumps or over time, and bars before and after for two
//! dumps, drawn as inline SVG by plotters. The legend is HTML beneath the plot, so that it
//! never covers a line and a long name wraps instead of being cut; series that coincide are
//! drawn once and named together; every label is shortened to the room it has. The helpers
//! that decide these (`coincident`, `fit`, `value_room`) are pure and tested here.

use super::escape;
use crate::human_bytes;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write;

/// Every chart's width in SVG units; the page scales the SVG to its card's width.
const WIDTH: u32 = 1040;
/// Font sizes as plotters takes them: it writes SVG text at `size / 1.24` pixels.
const CAPTION_FONT: f64 = 20.0;
const LABEL_FONT: f64 = 15.0;
/// Room around the plot: the last label of an axis is centred on the plot's edge, so the
/// right margin holds half of one.
const MARGIN: u32 = 12;
const RIGHT_MARGIN: u32 = 28;
const X_LABEL_AREA: u32 = 44;
/// Faint grid lines between two labelled ones.
const LIGHT_LINES: usize = 1;
const Y_LABEL_AREA: u32 = 76;

/// Two lines coincide when at every point they are within this share of the y axis apart:
/// under 2 pixels of a 300-pixel plot, less than a line's width, so that drawn apart they
/// would show as one line in the colour of the last.
pub(super) const COINCIDE_SHARE: f64 = 0.005;

/// A generous width of one character of sans-serif text, in ems (DejaVu Sans, which headless
/// Chromium on Debian draws `sans-serif` with, averages 0.55 em over names and digits; capitals
/// reach 0.7): a label shortened by it fits where it is put.
const CHAR_EM: f64 = 0.64;

/// One line of a chart: a name, a colour, and a value (or a gap) per x.
pub(super) struct Line {
    pub(super) name: String,
    pub(super) color: RGBColor,
    pub(super) values: Vec<Option<f64>>,
}

/// A horizontal dashed line across a chart: a limit or a threshold.
pub(super) struct Level {
    pub(super) name: String,
    pub(super) color: RGBColor,
    pub(super) value: f64,
}

/// The x axis of a line chart: one label per point (a series of dumps), or a value per point
/// (time).
pub(super) enum XAxis<'a> {
    Labels(&'a [String]),
    Values(&'a [f64]),
}

/// A line chart: `lines` over `x`, `levels` as dashed horizontal lines, and a dotted vertical
/// line at each of `marks` (x, label).
pub(super) struct LineChart<'a> {
    pub(super) title: &'a str,
    pub(super) x: XAxis<'a>,
    pub(super) x_desc: &'a str,
    pub(super) y_desc: &'a str,
    pub(super) lines: &'a [Line],
    pub(super) levels: &'a [Level],
    pub(super) marks: &'a [(f64, String)],
}

/// Series drawn as one: the indices of its members, in the order given (the first is the one
/// drawn), and whether their values are equal rather than only close.
#[derive(Debug, PartialEq)]
pub(super) struct Group {
    pub(super) members: Vec<usize>,
    pub(super) exact: bool,
}

impl Group {
    /// The group's name in a legend: `a`, `a = b` (equal), `a ≈ b` (close).
    pub(super) fn name<'a>(&self, name_of: impl Fn(usize) -> &'a str) -> String {
        let separator = if self.exact { " = " } else { " ≈ " };
        self.members
            .iter()
            .map(|&i| name_of(i))
            .collect::<Vec<_>>()
            .join(separator)
    }
}

/// Groups `series` that coincide: measured at the same points, and `close` to the group's
/// first series at each. A series joins the first group it coincides with, so a group never
/// strays from its first member by more than `close` allows.
///
/// Complexity: O(series × groups × points).
pub(super) fn coincident(
    series: &[&[Option<f64>]],
    close: impl Fn(f64, f64) -> bool,
) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for (i, values) in series.iter().enumerate() {
        let joined = groups.iter_mut().find(|group| {
            let first = series[group.members[0]];
            first.len() == values.len()
                && first.iter().zip(values.iter()).all(|pair| match pair {
                    (Some(a), Some(b)) => close(*a, *b),
                    (None, None) => true,
                    _ => false,
                })
        });
        match joined {
            Some(group) => {
                group.exact &= series[group.members[0]] == *values;
                group.members.push(i);
            }
            None => groups.push(Group {
                members: vec![i],
                exact: true,
            }),
        }
    }
    groups
}

/// Lines coincide when they are within [`COINCIDE_SHARE`] of the y axis (`y_max`) apart.
fn close_on_axis(y_max: f64) -> impl Fn(f64, f64) -> bool {
    move |a, b| (a - b).abs() <= y_max * COINCIDE_SHARE
}

/// Bars never cover each other; two are named together only when they are the same length
/// and read the same: within [`COINCIDE_SHARE`] of the larger.
fn close_to_each_other(a: f64, b: f64) -> bool {
    (a - b).abs() <= a.abs().max(b.abs()) * COINCIDE_SHARE
}

/// A line with gaps has its points marked when it has at most this many.
const MARKED_POINTS: usize = 200;

/// How much longer than its usual step a line may go unmeasured and still be joined across.
const JOIN_STEPS: f64 = 4.0;

/// The stretches of a line to draw: its measured points (`values` at `xs`), joined across
/// unmeasured samples, but broken where it went unmeasured for more than [`JOIN_STEPS`] times
/// its usual step (a straight line across such a gap would show a trend no one measured). The
/// usual step is the median between its measurements; with fewer than four, too few to tell,
/// the median between the samples (`xs`).
pub(super) fn runs(xs: &[f64], values: &[Option<f64>]) -> Vec<Vec<(f64, f64)>> {
    let points: Vec<(f64, f64)> = xs
        .iter()
        .zip(values)
        .filter_map(|(&x, value)| value.map(|value| (x, value)))
        .collect();
    let median_step = |xs: &mut dyn Iterator<Item = f64>| {
        let mut steps: Vec<f64> = xs.collect();
        steps.sort_by(f64::total_cmp);
        steps.get(steps.len() / 2).copied()
    };
    let usual = if points.len() >= 4 {
        median_step(&mut points.windows(2).map(|w| w[1].0 - w[0].0))
    } else {
        median_step(&mut xs.windows(2).map(|w| w[1] - w[0]))
    };
    let longest = usual.map_or(f64::INFINITY, |step| step * JOIN_STEPS);
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    for point in points {
        match runs.last_mut() {
            Some(run) if point.0 - run[run.len() - 1].0 <= longest => run.push(point),
            _ => runs.push(vec![point]),
        }
    }
    runs
}

/// The width in pixels of one character drawn at plotters' `font` size.
fn char_px(font: f64) -> f64 {
    font / 1.24 * CHAR_EM
}

/// `text` shortened (with an ellipsis) to fit `width_px` pixels at plotters' `font` size;
/// empty when not even one character fits.
pub(super) fn fit(text: &str, width_px: f64, font: f64) -> String {
    let room = (width_px / char_px(font)).floor().max(0.0) as usize;
    if text.chars().count() <= room {
        return text.to_owned();
    }
    if room == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(room - 1).collect();
    out.push('…');
    out
}

/// The top of a bar chart's value axis: the largest bar `max_value` stops short of the plot's
/// right edge (`plot_px` wide) by the `label_px` its value label takes.
pub(super) fn value_room(max_value: f64, plot_px: f64, label_px: f64) -> f64 {
    let max_value = max_value.max(1e-9);
    let bar_px = (plot_px - label_px).max(plot_px / 2.0);
    max_value * plot_px / bar_px
}

/// The unit a chart's bytes are drawn in, chosen by the largest value.
pub(super) fn byte_unit(max_bytes: f64) -> (&'static str, f64) {
    if max_bytes >= 4.0 * 1024.0 * 1024.0 * 1024.0 {
        ("GiB", 1024.0 * 1024.0 * 1024.0)
    } else if max_bytes >= 4.0 * 1024.0 * 1024.0 {
        ("MiB", 1024.0 * 1024.0)
    } else {
        ("KiB", 1024.0)
    }
}

/// The labels of an axis from 0 to `max`: as many decimals as its steps need, the same for
/// every label.
fn axis_labels(max: f64) -> impl Fn(&f64) -> String {
    let decimals = if max >= 20.0 {
        0
    } else if max >= 2.0 {
        1
    } else {
        2
    };
    move |value| format!("{value:.decimals$}")
}

fn hex(color: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", color.0, color.1, color.2)
}

/// The colour of the `i`-th series of a chart of types.
pub(super) fn series_color(i: usize) -> RGBColor {
    let (r, g, b) = Palette99::pick(i).rgb();
    RGBColor(r, g, b)
}

/// How a legend's key is drawn.
enum Key {
    Line,
    Dashed,
    Bar,
}

/// The legend beneath a chart: a key and a name per entry, wrapping as the card's width asks.
fn legend(entries: &[(String, RGBColor, Key)]) -> String {
    let mut out = String::from("<div class=\"legend\">");
    for (name, color, key) in entries {
        let class = match key {
            Key::Line => "line",
            Key::Dashed => "dashed",
            Key::Bar => "bar",
        };
        let _ = write!(
            out,
            "<span><i class=\"{class}\" style=\"color:{}\"></i>{}</span>",
            hex(*color),
            escape(name)
        );
    }
    out.push_str("</div>");
    out
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Draws a chart of `size` pixels as SVG: `draw` fills the drawing area. Returns the SVG, or the
/// page's note that the chart could not be drawn, and why.
fn svg_chart<F>(size: (u32, u32), draw: F) -> Result<String, String>
where
    F: FnOnce(&DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> DrawResult,
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

fn font(size: f64) -> TextStyle<'static> {
    ("sans-serif", size).into_text_style(&(WIDTH, WIDTH))
}

/// A line chart as a card: the SVG, then its legend, then `below` (HTML).
pub(super) fn line_chart(chart: &LineChart<'_>, below: &str) -> String {
    let xs: Vec<f64> = match &chart.x {
        XAxis::Labels(labels) => (0..labels.len()).map(|i| i as f64).collect(),
        XAxis::Values(values) => values.to_vec(),
    };
    // Categories sit in the middle of bands of their own, so that the first and last labels
    // are as far from the edges as the others.
    let (x_min, x_max) = match &chart.x {
        XAxis::Labels(labels) => (-0.5, labels.len().max(1) as f64 - 0.5),
        XAxis::Values(_) => {
            let min = xs.iter().copied().fold(f64::INFINITY, f64::min).min(0.0);
            let max = xs.iter().copied().fold(min, f64::max);
            (min, if max > min { max } else { min + 1.0 })
        }
    };
    let data_max = chart
        .lines
        .iter()
        .flat_map(|line| line.values.iter().flatten().copied())
        .chain(chart.levels.iter().map(|level| level.value))
        .fold(0.0f64, f64::max);
    let y_max = (data_max * 1.08).max(1e-9);
    let values: Vec<&[Option<f64>]> = chart
        .lines
        .iter()
        .map(|line| line.values.as_slice())
        .collect();
    let groups = coincident(&values, close_on_axis(y_max));
    let drawn = svg_chart((WIDTH, 400), |root| {
        let mut plot = ChartBuilder::on(root)
            .caption(chart.title, font(CAPTION_FONT))
            .margin(MARGIN)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(X_LABEL_AREA)
            .y_label_area_size(Y_LABEL_AREA)
            .build_cartesian_2d(x_min..x_max, 0f64..y_max)?;
        let plot_px = f64::from(plot.plotting_area().dim_in_pixel().0);
        let labels: Vec<String> = match &chart.x {
            XAxis::Labels(labels) => {
                let band = plot_px / labels.len().max(1) as f64;
                labels
                    .iter()
                    .map(|label| fit(label, band - 8.0, LABEL_FONT))
                    .collect()
            }
            XAxis::Values(_) => Vec::new(),
        };
        let categorical = matches!(chart.x, XAxis::Labels(_));
        let x_number = axis_labels(x_max - x_min);
        let x_label = |x: &f64| {
            if categorical {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            } else {
                x_number(x)
            }
        };
        let y_label = axis_labels(y_max);
        let mut mesh = plot.configure_mesh();
        mesh.x_desc(chart.x_desc)
            .y_desc(chart.y_desc)
            .label_style(font(LABEL_FONT))
            .axis_desc_style(font(LABEL_FONT))
            .x_labels(if categorical {
                labels.len().min(20)
            } else {
                10
            })
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label);
        mesh.max_light_lines(LIGHT_LINES);
        if categorical {
            mesh.disable_x_mesh();
        }
        mesh.draw()?;
        for group in &groups {
            let line = &chart.lines[group.members[0]];
            let style = line.color.stroke_width(2);
            let runs = runs(&xs, &line.values);
            for run in &runs {
                plot.draw_series(LineSeries::new(run.iter().copied(), style))?;
            }
            // Each point is marked where there are few (the dumps of a series), or where the
            // line was not measured at every sample, so that a reader sees where the
            // measurements are and a lone one shows.
            let measured: usize = runs.iter().map(Vec::len).sum();
            let gapped = line.values.iter().any(Option::is_none);
            if categorical || (gapped && measured <= MARKED_POINTS) {
                plot.draw_series(
                    runs.iter()
                        .flatten()
                        .map(|&point| Circle::new(point, 3, line.color.filled())),
                )?;
            }
        }
        for level in chart.levels {
            plot.draw_series(DashedLineSeries::new(
                [(x_min, level.value), (x_max, level.value)],
                8,
                5,
                level.color.stroke_width(1),
            ))?;
        }
        let mark_color = RGBColor(90, 98, 114);
        for (x, label) in chart.marks {
            plot.draw_series(DashedLineSeries::new(
                [(*x, 0.0), (*x, y_max)],
                3,
                3,
                mark_color.stroke_width(1),
            ))?;
            // The label stands beside its line, on the side with room.
            let right_half = (x - x_min) > (x_max - x_min) / 2.0;
            let (anchor, dx) = if right_half {
                (HPos::Right, -4)
            } else {
                (HPos::Left, 4)
            };
            let style = font(LABEL_FONT - 1.0)
                .color(&mark_color)
                .pos(Pos::new(anchor, VPos::Top));
            plot.draw_series(std::iter::once(
                EmptyElement::at((*x, y_max)) + Text::new(label.clone(), (dx, 4), style),
            ))?;
        }
        Ok(())
    });
    let svg = match drawn {
        Ok(svg) => svg,
        Err(message) => return message,
    };
    let mut entries: Vec<(String, RGBColor, Key)> = groups
        .iter()
        .map(|group| {
            (
                group.name(|i| chart.lines[i].name.as_str()),
                chart.lines[group.members[0]].color,
                Key::Line,
            )
        })
        .collect();
    entries.extend(
        chart
            .levels
            .iter()
            .map(|level| (level.name.clone(), level.color, Key::Dashed)),
    );
    format!(
        "<div class=\"chart\">{svg}{}{below}</div>",
        legend(&entries)
    )
}

/// One pair of bars: a name, and its bytes in the first dump and in the last.
pub(super) struct BarPair {
    pub(super) name: String,
    pub(super) before: u64,
    pub(super) after: u64,
}

/// A chart of bars before and after: each name above its two bars, the first dump's lighter,
/// each bar's bytes at its end.
pub(super) struct BarChart<'a> {
    pub(super) title: &'a str,
    /// What the bars measure (`retained`): the axis adds the unit.
    pub(super) measure: &'a str,
    pub(super) before_name: &'a str,
    pub(super) after_name: &'a str,
    pub(super) pairs: &'a [BarPair],
}

/// Pixels each name and its two bars take.
const BAR_ROW: u32 = 54;
const BEFORE: RGBColor = RGBColor(158, 190, 224);
const AFTER: RGBColor = RGBColor(31, 100, 170);

/// A before-and-after bar chart as a card: the SVG, then its legend.
pub(super) fn bar_chart(chart: &BarChart<'_>) -> String {
    let max_bytes = chart
        .pairs
        .iter()
        .map(|pair| pair.before.max(pair.after))
        .max()
        .unwrap_or(0);
    let (unit, scale) = byte_unit(max_bytes as f64);
    let values: Vec<[Option<f64>; 2]> = chart
        .pairs
        .iter()
        .map(|pair| [Some(pair.before as f64), Some(pair.after as f64)])
        .collect();
    let slices: Vec<&[Option<f64>]> = values.iter().map(|pair| pair.as_slice()).collect();
    let groups = coincident(&slices, close_to_each_other);
    let rows = groups.len().max(1);
    let height = 60 + X_LABEL_AREA + rows as u32 * BAR_ROW;
    let x_desc = format!("{} ({unit})", chart.measure);
    let drawn = svg_chart((WIDTH, height), |root| {
        // The plot's width, known before it is built: the value axis must leave room for the
        // labels at the ends of the bars.
        let plot_px = f64::from(WIDTH - MARGIN - RIGHT_MARGIN - BAR_LABEL_AREA);
        let label_chars = chart
            .pairs
            .iter()
            .flat_map(|pair| [human_bytes(pair.before), human_bytes(pair.after)])
            .map(|text| text.chars().count())
            .max()
            .unwrap_or(0);
        let label_px = label_chars as f64 * char_px(LABEL_FONT - 1.0) + 12.0;
        let x_max = value_room(max_bytes as f64 / scale, plot_px, label_px);
        let mut plot = ChartBuilder::on(root)
            .caption(chart.title, font(CAPTION_FONT))
            .margin(MARGIN)
            .margin_right(RIGHT_MARGIN)
            .x_label_area_size(X_LABEL_AREA)
            .y_label_area_size(BAR_LABEL_AREA)
            .build_cartesian_2d(0f64..x_max, 0f64..rows as f64)?;
        let x_label = axis_labels(x_max);
        plot.configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .max_light_lines(LIGHT_LINES)
            .x_desc(&x_desc)
            .label_style(font(LABEL_FONT))
            .axis_desc_style(font(LABEL_FONT))
            .x_labels(8)
            .x_label_formatter(&x_label)
            .draw()?;
        let plot_px = f64::from(plot.plotting_area().dim_in_pixel().0);
        let value_style = font(LABEL_FONT - 1.0).pos(Pos::new(HPos::Left, VPos::Center));
        let name_style = font(LABEL_FONT).pos(Pos::new(HPos::Left, VPos::Top));
        for (k, group) in groups.iter().enumerate() {
            let pair = &chart.pairs[group.members[0]];
            // The first group at the top: row k spans [top - 1, top).
            let top = (rows - k) as f64;
            let name = fit(
                &group.name(|i| chart.pairs[i].name.as_str()),
                plot_px - 8.0,
                LABEL_FONT,
            );
            plot.draw_series(std::iter::once(
                EmptyElement::at((0.0, top)) + Text::new(name, (4, 5), name_style.clone()),
            ))?;
            for (bytes, from, to, color) in [
                (pair.before, 0.40, 0.62, BEFORE),
                (pair.after, 0.64, 0.86, AFTER),
            ] {
                let (y0, y1) = (top - to, top - from);
                let value = bytes as f64 / scale;
                plot.draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y0), (value, y1)],
                    color.filled(),
                )))?;
                plot.draw_series(std::iter::once(
                    EmptyElement::at((value, (y0 + y1) / 2.0))
                        + Text::new(human_bytes(bytes), (5, 0), value_style.clone()),
                ))?;
            }
        }
        Ok(())
    });
    let svg = match drawn {
        Ok(svg) => svg,
        Err(message) => return message,
    };
    let entries = [
        (chart.before_name.to_owned(), BEFORE, Key::Bar),
        (chart.after_name.to_owned(), AFTER, Key::Bar),
    ];
    format!("<div class=\"chart\">{svg}{}</div>", legend(&entries))
}

/// The room left of a bar chart's plot (it has no labels there, only its axis line).
const BAR_LABEL_AREA: u32 = 12;

#[cfg(test)]
mod tests {
    use super::*;

    fn some(values: &[f64]) -> Vec<Option<f64>> {
        values.iter().copied().map(Some).collect()
    }

    #[test]
    fn series_within_the_tolerance_of_a_groups_first_join_it() {
        // The batch server's growth chart: the queue, the requests it holds and their arrays
        // retain the same bytes; the server a few bytes more; a dict far more.
        let deque = some(&[40.0, 160.0]);
        let requests = some(&[40.0, 160.0]);
        let server = some(&[40.01, 160.02]);
        let dict = some(&[46.0, 166.0]);
        let ints = some(&[0.1, 0.2]);
        let series: Vec<&[Option<f64>]> = vec![&dict, &server, &deque, &requests, &ints];
        let groups = coincident(&series, close_on_axis(176.0));
        assert_eq!(
            groups,
            [
                Group {
                    members: vec![0],
                    exact: true
                },
                Group {
                    members: vec![1, 2, 3],
                    exact: false
                },
                Group {
                    members: vec![4],
                    exact: true
                },
            ]
        );
        let names = ["dict", "BatchServer", "deque", "Request", "int"];
        assert_eq!(
            groups[1].name(|i| names[i]),
            "BatchServer ≈ deque ≈ Request"
        );
        // Equal values read as equal.
        let exact = coincident(&[&deque, &requests], close_on_axis(176.0));
        assert_eq!(exact[0].name(|i| names[i + 2]), "deque = Request");
    }

    #[test]
    fn series_measured_at_other_points_do_not_coincide() {
        // PSS is read less often than RSS: a gap where the other has a value keeps them apart,
        // and so does one point beyond the tolerance.
        let rss = some(&[1.0, 2.0, 3.0]);
        let pss = vec![Some(1.0), None, Some(3.0)];
        let apart = some(&[1.0, 2.0, 3.5]);
        let series: Vec<&[Option<f64>]> = vec![&rss, &pss, &apart];
        assert_eq!(coincident(&series, close_on_axis(20.0)).len(), 3);
        let shorter = some(&[1.0, 2.0]);
        assert_eq!(coincident(&[&rss, &shorter], close_on_axis(20.0)).len(), 2);
    }

    #[test]
    fn bars_are_named_together_only_when_they_read_the_same() {
        // The Python service's pair: the cache retains 79.5 KiB then 241.2 KiB, its requests
        // 78.5 KiB then 238.7 KiB. On an axis to 7.8 MiB they are within half a percent of it;
        // as bars they read apart.
        let kib = 1024.0;
        let mib = 1024.0 * kib;
        let cache = some(&[79.5 * kib, 241.2 * kib]);
        let requests = some(&[78.5 * kib, 238.7 * kib]);
        assert_eq!(
            coincident(&[&cache, &requests], close_on_axis(7.8 * mib)).len(),
            1
        );
        assert_eq!(
            coincident(&[&cache, &requests], close_to_each_other).len(),
            2
        );
        // The batch server's queue and its requests: 160.0 and 160.1 MiB.
        let queue = some(&[40.0 * mib, 160.0 * mib]);
        let held = some(&[40.05 * mib, 160.1 * mib]);
        assert_eq!(coincident(&[&queue, &held], close_to_each_other).len(), 1);
    }

    #[test]
    fn axis_labels_have_the_decimals_their_steps_need() {
        assert_eq!(axis_labels(1000.0)(&800.0), "800");
        assert_eq!(axis_labels(6.1)(&2.0), "2.0");
        assert_eq!(axis_labels(0.6)(&0.25), "0.25");
    }

    #[test]
    fn a_line_is_broken_where_it_went_long_unmeasured() {
        // The batch server's PSS: read every 0.1 s, then not for 2 s (the dump), then once.
        let xs: Vec<f64> = (0..=32).map(|i| f64::from(i) / 10.0).collect();
        let values: Vec<Option<f64>> = (0..=32)
            .map(|i| (i <= 12 || i == 32).then_some(f64::from(i)))
            .collect();
        let runs = runs(&xs, &values);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].len(), 13);
        assert_eq!(runs[1], [(3.2, 32.0)]);
        // Read every third sample: joined across the two between.
        let sparse: Vec<Option<f64>> = (0..=32).map(|i| (i % 3 == 0).then_some(1.0)).collect();
        assert_eq!(super::runs(&xs, &sparse).len(), 1);
        assert!(super::runs(&xs, &[None; 33]).is_empty());
        // Read twice, 1.6 s apart on samples 0.1 s apart: two points, not a line.
        let twice: Vec<Option<f64>> = (0..=32)
            .map(|i| (i == 0 || i == 16).then_some(1.0))
            .collect();
        assert_eq!(
            super::runs(&xs, &twice),
            [vec![(0.0, 1.0)], vec![(1.6, 1.0)]]
        );
    }

    #[test]
    fn labels_are_shortened_to_their_room() {
        // At plotters' size 15, a character is taken as 15 / 1.24 × 0.64 ≈ 7.7 pixels.
        assert_eq!(fit("end.hgd", 100.0, 15.0), "end.hgd");
        let long = "2 app-after.heapsnapshot.gz";
        let fitted = fit(long, 100.0, 15.0);
        assert_eq!(fitted.chars().count(), 12);
        assert!(fitted.ends_with('…') && long.starts_with(fitted.trim_end_matches('…')));
        assert_eq!(fit(long, 3.0, 15.0), "");
    }

    #[test]
    fn the_longest_bar_leaves_room_for_its_label() {
        // A 900-pixel plot, a 100-pixel label: the largest value ends at 800 pixels.
        let x_max = value_room(160.0, 900.0, 100.0);
        assert!((160.0 / x_max * 900.0 - 800.0).abs() < 1e-9);
        // A label wider than half the plot still leaves the bar half of it.
        assert!((value_room(10.0, 100.0, 80.0) - 20.0).abs() < 1e-9);
    }

    #[test]
    fn units_follow_the_magnitudes() {
        assert_eq!(byte_unit(3.0 * 1024.0 * 1024.0).0, "KiB");
        assert_eq!(byte_unit(500.0 * 1024.0 * 1024.0).0, "MiB");
        assert_eq!(byte_unit(80.0 * 1024.0 * 1024.0 * 1024.0).0, "GiB");
    }
}
