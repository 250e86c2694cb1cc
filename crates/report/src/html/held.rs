//! The heap section's cards for the objects the strong references do not reach: one per
//! reference kind that holds some (soft, weak, final, phantom), and one for the garbage.

use crate::human_bytes;
use heapgraph_analyzer::{ReferenceKind, SummaryView};

/// The cards that stand for "unreachable": the single card when nothing is, else its parts.
pub(super) fn held_cards(summary: &SummaryView) -> Vec<(String, &'static str)> {
    if summary.unreachable_objects == 0 {
        return vec![(human_bytes(summary.unreachable_size), "unreachable")];
    }
    let mut cards: Vec<(String, &'static str)> = summary
        .weakly_held
        .iter()
        .map(|held| (human_bytes(held.size), label(held.kind)))
        .collect();
    cards.push((
        human_bytes(summary.garbage_size),
        "garbage (nothing holds it)",
    ));
    cards
}

fn label(kind: ReferenceKind) -> &'static str {
    match kind {
        ReferenceKind::Soft => "held only by soft references",
        ReferenceKind::Weak => "held only by weak references",
        ReferenceKind::Final => "held only by final references (to finalize)",
        ReferenceKind::Phantom => "held only by phantom references",
    }
}
