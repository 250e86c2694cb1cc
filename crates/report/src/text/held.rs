//! Text for what holds the objects the strong references do not reach: the summary's split of
//! the unreachable objects by reference kind and the garbage, and `who-holds` on such an object.

use crate::{human_bytes, short, type_text};
use heapgraph_analyzer::{HeldBy, HoldersView, PathStep, SummaryView, WeaklyHeld};
use std::fmt::Write;

/// Through-rows shown per reference kind.
const THROUGH_ROWS: usize = 3;

/// The summary's unreachable objects, split: each reference kind that holds some (and through
/// which references), then the garbage. Nothing when every object is reachable.
pub(super) fn unreachable_lines(view: &SummaryView, out: &mut String) {
    if view.unreachable_objects == 0 {
        return;
    }
    for held in &view.weakly_held {
        let _ = writeln!(
            out,
            "  only {} references hold {} {}, {}{}",
            held.kind.name(),
            held.objects,
            if held.objects == 1 {
                "object"
            } else {
                "objects"
            },
            human_bytes(held.size),
            if held.through.is_empty() {
                ""
            } else {
                ", through:"
            }
        );
        through_lines(held, out);
    }
    let _ = writeln!(
        out,
        "  nothing holds {} {}, {} (garbage)",
        view.garbage_objects,
        if view.garbage_objects == 1 {
            "object"
        } else {
            "objects"
        },
        human_bytes(view.garbage_size)
    );
}

fn through_lines(held: &WeaklyHeld, out: &mut String) {
    for row in held.through.iter().take(THROUGH_ROWS) {
        let mut line = short(type_text(&row.reference_type), 60);
        if let Some(holder) = &row.holder_type {
            let _ = write!(line, " held by {}", short(type_text(holder), 60));
        }
        let _ = writeln!(
            out,
            "    {:>10}  {:>7} {}  {line}",
            human_bytes(row.size),
            row.objects,
            if row.objects == 1 {
                "object "
            } else {
                "objects"
            }
        );
    }
    if held.through.len() > THROUGH_ROWS {
        let _ = writeln!(
            out,
            "    … {} more (summary --format json lists them)",
            held.through.len() - THROUGH_ROWS
        );
    }
}

/// `who-holds` on an object the strong references do not reach: what holds it, and whether
/// the chains that follow cross weak references. `false` when it is strongly held.
pub(super) fn not_strongly_held(view: &HoldersView, out: &mut String) -> bool {
    match view.held_by {
        HeldBy::Strong => false,
        HeldBy::Only(kind) => {
            let _ = writeln!(
                out,
                "\nthe root does not reach this object through strong references: only {0} \
                 references hold it (the collector may clear them). The strongest chains cross \
                 them, each reference that does not retain marked with its kind, as ({0}):",
                kind.name()
            );
            true
        }
        HeldBy::Nothing => {
            let _ = writeln!(
                out,
                "\nno chain from the root reaches this object, not even through weak references: \
                 nothing holds it (it is garbage, which the next collection frees)"
            );
            true
        }
    }
}

/// The edge column of a chain step: `.field`, `[3]`, `(root)` or V8's `(shortcut)`, and the reference kind of a
/// weak reference (`.referent (soft)`).
pub(super) fn step_edge(step: &PathStep) -> String {
    let mut edge = crate::edge_text(step.edge.as_deref(), step.edge_kind)
        .unwrap_or_else(|| "(root)".to_owned());
    if let Some(kind) = step.reference_kind {
        let _ = write!(edge, " ({})", kind.name());
    }
    edge
}
