//! Rendering of analyzer views: text tables for terminals, versioned JSON for machines and a
//! self-contained HTML page; findings in one sentence each, alike in all three.
//! Output is deterministic: the same views give the same bytes.
//!
//! ```
//! use heapgraph_analyzer::{analyze, summary, EdgeRule, Options};
//! use heapgraph_report::DumpInfo;
//!
//! let graph = heapgraph_test_support::graph("root -> cache: 8; cache -> Item#1: 16");
//! let analysis = analyze(&graph, &Options { edge_rule: EdgeRule::for_runtime(graph.meta().runtime) });
//! let info = DumpInfo::new("example", graph.meta());
//! let text = heapgraph_report::text::summary(&summary(&graph, &analysis), &info, &[], 20);
//! assert!(text.contains("Item"));
//! let json = heapgraph_report::json::summary(&summary(&graph, &analysis), &info, &[], None);
//! assert!(json.contains("\"schema\": \"heapgraph.summary/1\""));
//! ```
#![deny(missing_docs)]

pub mod dot;
pub mod findings;
pub mod holding;
pub mod html;
pub mod json;
pub mod text;

use heapgraph_analyzer::{PathStep, RankBy};
use heapgraph_model::{AllocMeta, AllocSource, FileDump, GraphMeta, TimelineMeta};
use std::fmt::Write;

/// What every output says about the dump it describes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpInfo {
    /// The file as the user named it.
    pub file: String,
    /// Its format (`v8-heapsnapshot`, `hgd`, …).
    pub source_format: String,
    /// The runtime that wrote it.
    pub runtime: String,
    /// Notes: what was missing or repaired.
    pub notes: Vec<String>,
    /// When the dump was taken, milliseconds since the Unix epoch, where it says.
    pub captured_at_ms: Option<u64>,
    /// The dumped process, where the dump says.
    pub pid: Option<u32>,
    /// The runtime's version, where the dump says.
    pub runtime_version: Option<String>,
    /// The heap dumps of the file, where it can hold several (HPROF).
    pub dumps: Vec<FileDump>,
}

impl DumpInfo {
    /// The info for `file`, from a graph's metadata.
    pub fn new(file: &str, meta: &GraphMeta) -> Self {
        DumpInfo {
            file: file.to_owned(),
            source_format: meta.source_format.clone(),
            runtime: meta.runtime.name().to_owned(),
            notes: meta.notes.clone(),
            captured_at_ms: meta.captured_at_ms,
            pid: meta.pid,
            runtime_version: meta.runtime_version.clone(),
            dumps: meta.dumps.clone(),
        }
    }

    /// The info for `file`, from an allocation snapshot's metadata.
    pub fn for_alloc(file: &str, meta: &AllocMeta) -> Self {
        DumpInfo {
            file: file.to_owned(),
            source_format: meta.source_format.clone(),
            runtime: match meta.source {
                AllocSource::Tracemalloc => "python",
                AllocSource::TorchCuda => "pytorch-cuda",
                AllocSource::RustAlloc => "rust",
            }
            .to_owned(),
            notes: meta.notes.clone(),
            captured_at_ms: None,
            pid: None,
            runtime_version: None,
            dumps: Vec::new(),
        }
    }
}

impl DumpInfo {
    /// The info for `file`, from a recording's metadata.
    pub fn for_timeline(file: &str, meta: &TimelineMeta) -> Self {
        DumpInfo {
            file: file.to_owned(),
            source_format: meta.source_format.clone(),
            runtime: meta.runtime.clone(),
            notes: meta.notes.clone(),
            captured_at_ms: meta.started_at_ms,
            pid: meta.pid,
            runtime_version: None,
            dumps: Vec::new(),
        }
    }
}

/// A share of a limit as a percentage: a decimal below 10%, so that 0.5% does not read 1%
/// (the summary's table prints one decimal too).
pub(crate) fn limit_share_text(share: f64) -> String {
    let percent = share * 100.0;
    let digits = usize::from(percent < 10.0);
    format!("{percent:.digits$}%")
}

/// A span of seconds as people read it: `850 ms`, `42.0 s`, `12 min 5 s`, `3 h 20 min`.
pub fn duration_text(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "-".to_owned();
    }
    if seconds < 1.0 {
        return format!("{:.0} ms", seconds * 1000.0);
    }
    if seconds < 120.0 {
        return format!("{seconds:.1} s");
    }
    let whole = seconds.round() as u64;
    if whole < 7200 {
        return format!("{} min {} s", whole / 60, whole % 60);
    }
    format!("{} h {} min", whole / 3600, whole % 3600 / 60)
}

/// How fast a recording's RSS grew, in one sentence (text and HTML share it).
pub(crate) fn growth_text(growth: &heapgraph_analyzer::timeline::Growth) -> String {
    let mut text = format!(
        "RSS grew {}/s over the recording and {}/s in its last quarter",
        signed_bytes(growth.bytes_per_s.round() as i64),
        signed_bytes(growth.recent_bytes_per_s.round() as i64)
    );
    if let Some(seconds) = growth.time_to_limit_s {
        let _ = write!(
            text,
            "; at that rate it reaches the limit {} after the last sample",
            duration_text(seconds)
        );
    }
    text
}

/// `YYYY-MM-DD HH:MM:SS UTC` for seconds since the Unix epoch (Howard Hinnant's civil date).
pub fn utc_text(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let rest = seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// A type as people read it: Python's built-in types without their `builtins.` module, as
/// objgraph prints them (`dict`, `__main__.SessionCache`). No other runtime has such names.
pub(crate) fn type_text(name: &str) -> &str {
    name.strip_prefix("builtins.").unwrap_or(name)
}

/// An edge name as it follows its object in a chain: `.name`, `[3]` as it is, `[]` for none.
pub(crate) fn edge_suffix(edge: &str) -> String {
    if edge.is_empty() {
        // A member with no name or index of its own (a set's).
        "[]".to_owned()
    } else if edge.starts_with('[') {
        edge.to_owned()
    } else {
        format!(".{edge}")
    }
}

/// The one-line form of a chain, each object by type and name (when it has one of its own):
/// `(GC roots).<thread> → java.lang.Thread "worker-3".<frame 5> → frame "Worker.run(…)".<local> → State`.
/// Types and edge names are never cut; a long one gives way by whole steps from the middle
/// ([`fit_path`]).
pub(crate) fn chain_line(path: &[PathStep]) -> String {
    fit_path(&chain_steps(path), PATH_WIDTH, None)
}

/// The steps of [`chain_line`], each `Type "name".edge`.
pub(crate) fn chain_steps(path: &[PathStep]) -> Vec<String> {
    let mut parts = Vec::with_capacity(path.len());
    for (i, step) in path.iter().enumerate() {
        let mut label = type_text(&step.object.type_name).to_owned();
        let name = &step.object.name;
        if !name.is_empty() && *name != step.object.type_name {
            // A name is data (a string's text, a thread's name): it may be long, and is cut.
            let _ = write!(label, " {:?}", short(name, 60));
        }
        if let Some(next) = path.get(i + 1) {
            push_edge(&mut label, next.edge.as_deref(), next.edge_kind);
            if let Some(kind) = next.reference_kind {
                let _ = write!(label, " ({})", kind.name());
            }
        }
        parts.push(label);
    }
    parts
}

/// How every chain writes the reference into a step (`who-holds`, `paths`, `diff`, `leaks`,
/// the findings, text and HTML alike): `.field`, `[3]`, `[]` for a member without a name of
/// its own, and `(shortcut)` for V8's root's shortcut to `global`, which the snapshot numbers
/// like a slot but which is no property and no element; `None` at the root.
pub(crate) fn edge_text(edge: Option<&str>, kind: Option<&str>) -> Option<String> {
    let edge = edge?;
    Some(if kind == Some("shortcut") {
        "(shortcut)".to_owned()
    } else {
        edge_suffix(edge)
    })
}

/// Appends [`edge_text`] to the object a one-line chain shows before it: `.field` and `[3]`
/// directly, `(shortcut)` after a space.
pub(crate) fn push_edge(text: &mut String, edge: Option<&str>, kind: Option<&str>) {
    if let Some(edge) = edge_text(edge, kind) {
        if edge.starts_with('(') {
            text.push(' ');
        }
        text.push_str(&edge);
    }
}

/// A path of [`HolderStep`](heapgraph_analyzer::findings::HolderStep)s as the steps of a one-line chain, each `Type.edge` (the diff's
/// holders and the leaks' clusters, matched across dumps, carry no names).
pub(crate) fn holder_steps(path: &[heapgraph_analyzer::findings::HolderStep]) -> Vec<String> {
    let mut steps = Vec::with_capacity(path.len());
    for (i, step) in path.iter().enumerate() {
        let mut text = type_text(&step.type_name).to_owned();
        if let Some(label) = &step.label
            && *label != step.type_name
            && step.edge.is_some()
        {
            text.push_str(&format!(" {:?}", short(label, 60)));
        }
        if let Some(next) = path.get(i + 1) {
            // A step into a member without a name of its own still shows as one.
            push_edge(
                &mut text,
                Some(next.edge.as_deref().unwrap_or("")),
                next.edge_kind,
            );
        }
        steps.push(text);
    }
    steps
}

/// How many characters a path printed on a line of its own may take before its middle steps
/// give way.
pub(crate) const PATH_WIDTH: usize = 160;

/// Steps joined by ` → `, fitted to `max` characters by leaving out whole steps from the
/// middle (shown as one `…`), never the first, never the last two (the holder and what it
/// holds), never `keep`; a step is never cut inside.
pub(crate) fn fit_path(steps: &[String], max: usize, keep: Option<usize>) -> String {
    const ARROW: usize = 3;
    let width = |shown: &[bool]| -> usize {
        let mut total = 0;
        let mut items: usize = 0;
        let mut in_gap = false;
        for (step, &show) in steps.iter().zip(shown) {
            if show {
                total += step.chars().count();
                items += 1;
                in_gap = false;
            } else if !in_gap {
                total += 1;
                items += 1;
                in_gap = true;
            }
        }
        total + ARROW * items.saturating_sub(1)
    };
    let n = steps.len();
    let mut shown = vec![true; n];
    if width(&shown) > max && n > 3 {
        // Start from the ends that must stay, then give back steps nearest the leaf first,
        // then nearest the root, while they fit.
        shown = vec![false; n];
        for must in [Some(0), n.checked_sub(2), n.checked_sub(1), keep]
            .into_iter()
            .flatten()
        {
            if must < n {
                shown[must] = true;
            }
        }
        // Steps near the leaf first, then near the root, each side until its next step no
        // longer fits.
        let mut leaf_side: Vec<usize> = (1..n - 2).rev().collect();
        let mut root_side: Vec<usize> = (1..n - 2).collect();
        let (mut leaf_done, mut root_done) = (false, false);
        while !(leaf_done && root_done) {
            for (side, done) in [
                (&mut leaf_side, &mut leaf_done),
                (&mut root_side, &mut root_done),
            ] {
                if *done {
                    continue;
                }
                let Some(at) = side.first().copied() else {
                    *done = true;
                    continue;
                };
                side.remove(0);
                if shown[at] {
                    continue;
                }
                shown[at] = true;
                if width(&shown) > max {
                    shown[at] = false;
                    *done = true;
                }
            }
        }
    }
    let mut text = String::new();
    let mut in_gap = false;
    for (i, (step, &show)) in steps.iter().zip(&shown).enumerate() {
        if show || !in_gap {
            if i > 0 {
                text.push_str(" → ");
            }
            text.push_str(if show { step } else { "…" });
        }
        in_gap = !show;
    }
    text
}

/// Paths fitted as [`fit_path`], so that two that differ never print the same: where two would,
/// each keeps the first step at which it differs from the other.
pub(crate) fn fit_distinct_paths(paths: &[Vec<String>], max: usize) -> Vec<String> {
    let mut fitted: Vec<String> = paths
        .iter()
        .map(|steps| fit_path(steps, max, None))
        .collect();
    let mut by_text: std::collections::BTreeMap<&str, Vec<usize>> =
        std::collections::BTreeMap::new();
    for (i, text) in fitted.iter().enumerate() {
        by_text.entry(text.as_str()).or_default().push(i);
    }
    let collisions: Vec<Vec<usize>> = by_text
        .into_values()
        .filter(|rows| rows.len() > 1)
        .collect();
    for rows in collisions {
        for &row in &rows {
            let keep = rows
                .iter()
                .filter(|&&other| other != row && paths[other] != paths[row])
                .filter_map(|&other| {
                    paths[row]
                        .iter()
                        .zip(&paths[other])
                        .position(|(a, b)| a != b)
                })
                .min();
            fitted[row] = fit_path(&paths[row], max, keep);
        }
    }
    fitted
}

/// Shortens a label to `max` characters on one line.
pub(crate) fn short(text: &str, max: usize) -> String {
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

/// A signed count: `+200`, `-3`.
pub fn signed_count(count: i64) -> String {
    if count < 0 {
        count.to_string()
    } else {
        format!("+{count}")
    }
}

/// Signed bytes: `+1.5 KiB`, `-512 B`.
pub fn signed_bytes(bytes: i64) -> String {
    let sign = if bytes < 0 { '-' } else { '+' };
    format!("{sign}{}", human_bytes(bytes.unsigned_abs()))
}

/// The name of a ranking, as `--by` spells it.
pub fn rank_name(by: RankBy) -> &'static str {
    match by {
        RankBy::Retained => "retained",
        RankBy::Shallow => "shallow",
        RankBy::Count => "count",
    }
}

/// Bytes in binary units with one decimal: `512 B`, `1.5 KiB`, `3.2 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::{fit_distinct_paths, fit_path, human_bytes};

    fn steps(text: &str) -> Vec<String> {
        text.split(" → ").map(str::to_owned).collect()
    }

    #[test]
    fn a_long_path_gives_way_in_the_middle_by_whole_steps() {
        let path = steps(
            "(GC roots).<JNI global> → jdk.internal.loader.ClassLoaders$AppClassLoader.classes → java.util.ArrayList.elementData → java.lang.Object[][1] → java.lang.Class \"com.example.SessionCache\".INSTANCE → com.example.SessionCache.sessions → java.util.HashMap.table → java.util.HashMap$Node[]",
        );
        let whole = path.join(" → ");
        assert_eq!(fit_path(&path, whole.chars().count(), None), whole);
        let fitted = fit_path(&path, 120, None);
        assert!(fitted.chars().count() <= 120, "{fitted}");
        assert!(fitted.starts_with("(GC roots).<JNI global> → "), "{fitted}");
        assert!(
            fitted.ends_with("com.example.SessionCache.sessions → java.util.HashMap.table → java.util.HashMap$Node[]"),
            "{fitted}"
        );
        assert_eq!(fitted.matches('…').count(), 1, "{fitted}");
        // Every step shown is whole.
        for part in fitted.split(" → ") {
            assert!(part == "…" || path.contains(&part.to_owned()), "{part}");
        }
        // Too narrow for anything but the ends: the ends still show, whole.
        let narrow = fit_path(&path, 10, None);
        assert_eq!(narrow.split(" → ").count(), 4, "{narrow}");
    }

    #[test]
    fn paths_that_differ_never_print_the_same() {
        let a = steps("(root) → a.x → b.y → c.left → d.z → e.w → f.v → g");
        let b = steps("(root) → a.x → b.y → c.right → d.z → e.w → f.v → g");
        let fitted = fit_distinct_paths(&[a.clone(), b.clone(), a.clone()], 40);
        assert_ne!(fitted[0], fitted[1], "{fitted:?}");
        assert_eq!(fitted[0], fitted[2]);
        assert!(
            fitted[0].contains("c.left") && fitted[1].contains("c.right"),
            "{fitted:?}"
        );
    }

    #[test]
    fn dates_are_civil_utc() {
        use super::utc_text;
        assert_eq!(utc_text(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_text(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_text(1_796_000_000), "2026-11-30 00:53:20 UTC");
    }

    #[test]
    fn durations_read_as_people_say_them() {
        use super::duration_text;
        assert_eq!(duration_text(0.25), "250 ms");
        assert_eq!(duration_text(42.04), "42.0 s");
        assert_eq!(duration_text(725.0), "12 min 5 s");
        assert_eq!(duration_text(12_000.0), "3 h 20 min");
        assert_eq!(duration_text(f64::INFINITY), "-");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
