//! `heapgraph.waste/1` (`waste`) and `heapgraph.groups/1` (`summary --group-by`).

use super::{Dump, Object, to_string};
use crate::DumpInfo;
use heapgraph_analyzer::groups::GroupsView;
use heapgraph_analyzer::waste::WasteView;
use serde::Serialize;

#[derive(Serialize)]
struct Waste<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    collections: u64,
    empty_collections: u64,
    wasted_bytes: u64,
    null_slot_bytes: u64,
    notes: &'a [String],
    rows: Vec<WasteEntry<'a>>,
    worst: Vec<WastedEntry<'a>>,
}

#[derive(Serialize)]
struct WasteEntry<'a> {
    #[serde(rename = "type")]
    type_name: &'a str,
    arrays: bool,
    count: u64,
    empty: u64,
    elements: u64,
    capacity: u64,
    fill_ratio: Option<f64>,
    backing_bytes: u64,
    wasted_bytes: u64,
    fill_histogram: &'a [u64; 11],
}

#[derive(Serialize)]
struct WastedEntry<'a> {
    object: Object<'a>,
    elements: u64,
    capacity: u64,
    wasted_bytes: u64,
}

/// `heapgraph.waste/1`.
pub fn waste(view: &WasteView, info: &DumpInfo) -> String {
    to_string(&Waste {
        schema: "heapgraph.waste/1",
        dump: info.into(),
        collections: view.collections,
        empty_collections: view.empty_collections,
        wasted_bytes: view.wasted_bytes,
        null_slot_bytes: view.null_slot_bytes,
        notes: &view.notes,
        rows: view
            .rows
            .iter()
            .map(|row| WasteEntry {
                type_name: &row.type_name,
                arrays: row.arrays,
                count: row.count,
                empty: row.empty,
                elements: row.elements,
                capacity: row.capacity,
                fill_ratio: (row.capacity > 0).then(|| row.elements as f64 / row.capacity as f64),
                backing_bytes: row.backing_bytes,
                wasted_bytes: row.wasted_bytes,
                fill_histogram: &row.fill_histogram,
            })
            .collect(),
        worst: view
            .worst
            .iter()
            .map(|wasted| WastedEntry {
                object: (&wasted.object).into(),
                elements: wasted.elements,
                capacity: wasted.capacity,
                wasted_bytes: wasted.wasted_bytes,
            })
            .collect(),
    })
}

#[derive(Serialize)]
struct Groups<'a> {
    schema: &'static str,
    dump: Dump<'a>,
    by: &'static str,
    groups: Vec<GroupEntry<'a>>,
}

#[derive(Serialize)]
struct GroupEntry<'a> {
    group: &'a str,
    count: u64,
    shallow_size: u64,
    retained_size: u64,
    types: u64,
}

/// `heapgraph.groups/1`, with at most `max_rows` groups (all when `None`).
pub fn groups(view: &GroupsView, info: &DumpInfo, max_rows: Option<usize>) -> String {
    to_string(&Groups {
        schema: "heapgraph.groups/1",
        dump: info.into(),
        by: view.by.name(),
        groups: view
            .rows
            .iter()
            .take(max_rows.unwrap_or(usize::MAX))
            .map(|row| GroupEntry {
                group: &row.group,
                count: row.count,
                shallow_size: row.shallow_size,
                retained_size: row.retained_size,
                types: row.types,
            })
            .collect(),
    })
}
