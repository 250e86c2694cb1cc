//! Text of `waste` and `summary --group-by`.

use super::{Table, header, object_line, percent};
use crate::{DumpInfo, human_bytes, short, type_text};
use heapgraph_analyzer::groups::GroupsView;
use heapgraph_analyzer::waste::WasteView;
use std::fmt::Write;

/// Collections and arrays by the bytes they waste, then the collections that waste the most.
pub fn waste(view: &WasteView, info: &DumpInfo, n: usize) -> String {
    let mut out = String::new();
    header(info, &mut out);
    for note in &view.notes {
        let _ = writeln!(out, "note: {note}");
    }
    let _ = writeln!(
        out,
        "{} collections, {} empty; right-sized, they would save {}; plain object arrays hold {} of null slots\n",
        view.collections,
        view.empty_collections,
        human_bytes(view.wasted_bytes),
        human_bytes(view.null_slot_bytes)
    );
    if view.rows.is_empty() {
        return out;
    }
    let mut table = Table::new(&[
        ("type", false),
        ("count", true),
        ("empty", true),
        ("elements", true),
        ("capacity", true),
        ("fill", true),
        ("backing", true),
        ("wasted", true),
    ]);
    for row in view.rows.iter().take(n) {
        let name = if row.arrays {
            format!("{} (arrays)", type_text(&row.type_name))
        } else {
            type_text(&row.type_name).to_owned()
        };
        table.row(vec![
            name,
            row.count.to_string(),
            row.empty.to_string(),
            row.elements.to_string(),
            row.capacity.to_string(),
            percent(row.elements, row.capacity),
            human_bytes(row.backing_bytes),
            human_bytes(row.wasted_bytes),
        ]);
    }
    table.render(&mut out);
    if view.rows.len() > n {
        let _ = writeln!(
            out,
            "… {} more types (raise -n to see them)",
            view.rows.len() - n
        );
    }
    if view.worst.iter().any(|wasted| wasted.wasted_bytes > 0) {
        let _ = writeln!(out, "\nthe collections that waste the most:");
        for wasted in view
            .worst
            .iter()
            .take(n)
            .filter(|wasted| wasted.wasted_bytes > 0)
        {
            let _ = writeln!(
                out,
                "  {} elements of {}, wastes {}: {}",
                wasted.elements,
                wasted.capacity,
                human_bytes(wasted.wasted_bytes),
                object_line(&wasted.object)
            );
        }
    }
    out
}

/// Groups by retained size.
pub fn groups(view: &GroupsView, info: &DumpInfo, n: usize) -> String {
    let mut out = String::new();
    header(info, &mut out);
    let _ = writeln!(out, "objects by {}\n", view.by.name());
    let mut table = Table::new(&[
        (view.by.name(), false),
        ("types", true),
        ("count", true),
        ("shallow", true),
        ("retained", true),
    ]);
    for row in view.rows.iter().take(n) {
        table.row(vec![
            short(&row.group, 80),
            row.types.to_string(),
            row.count.to_string(),
            human_bytes(row.shallow_size),
            human_bytes(row.retained_size),
        ]);
    }
    table.render(&mut out);
    if view.rows.len() > n {
        let _ = writeln!(
            out,
            "… {} more groups (raise -n to see them)",
            view.rows.len() - n
        );
    }
    out
}
