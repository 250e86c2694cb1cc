//! Text and JSON of the views about what holds a set of objects: merged paths from the roots
//! (`heapgraph.paths/1`) and immediate dominators grouped (`heapgraph.immediate_dominators/1`);
//! and the big drops `suspects` adds.

use crate::{DumpInfo, edge_text, human_bytes, short, type_text};
use heapgraph_analyzer::BigDropsView;
use heapgraph_analyzer::immediate_dominators::ImmediateDominatorsView;
use heapgraph_analyzer::merged_paths::{MAX_NODES, MergedPathNode, MergedPathsView};
use heapgraph_analyzer::{ChainOrder, ObjectView};
use serde::Serialize;
use std::fmt::Write;

/// Which objects a question is about, as the user chose them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// The objects of this type.
    pub type_name: Option<String>,
    /// These objects, by the runtime's ids.
    pub ids: Vec<u64>,
    /// Only the objects this earlier dump does not have (by object id).
    pub baseline: Option<String>,
}

impl Selection {
    /// `the 400 objects of type Session new since before.hprof`.
    pub fn describe(&self, count: u64) -> String {
        let mut text = format!("the {count} object{}", if count == 1 { "" } else { "s" });
        if let Some(type_name) = &self.type_name {
            let _ = write!(text, " of type {}", type_text(type_name));
        }
        if !self.ids.is_empty() {
            let _ = write!(text, " named by id");
        }
        if let Some(baseline) = &self.baseline {
            let _ = write!(text, " new since {baseline}");
        }
        text
    }
}

fn order_name(order: ChainOrder) -> &'static str {
    match order {
        ChainOrder::Explain => "explain",
        ChainOrder::Shortest => "shortest",
    }
}

/// An object as a tree line shows it: type, its own name where it has one, its id.
fn object_text(object: &ObjectView) -> String {
    let mut text = type_text(&object.type_name).to_owned();
    if !object.name.is_empty() && object.name != object.type_name {
        let _ = write!(text, " {:?}", short(&object.name, 50));
    }
    let _ = write!(text, " {}", object.id_text);
    text
}

fn node_line(node: &MergedPathNode) -> String {
    let edge = edge_text(node.edge.as_deref(), node.edge_kind)
        .map(|edge| format!("{edge} "))
        .unwrap_or_default();
    let mark = if node.is_target { "  ◆" } else { "" };
    format!("{edge}{}{mark}", object_text(&node.object))
}

/// Merged paths as an indented tree: per line the objects of the set at or below the node, what
/// they retain, and the reference into the node and the node; a line of descent without
/// branches keeps its indent.
pub fn paths_text(view: &MergedPathsView, info: &DumpInfo, selection: &Selection) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}, {})",
        info.file, info.source_format, info.runtime
    );
    for note in &info.notes {
        let _ = writeln!(out, "note: {note}");
    }
    let _ = writeln!(
        out,
        "merged paths from the roots to {}: {} reached, retaining {} (each byte once)",
        selection.describe(view.targets),
        view.reached,
        human_bytes(view.retained_size)
    );
    if view.reached < view.targets {
        let _ = writeln!(
            out,
            "{} are not reached through strong references (garbage, or held only weakly)",
            view.targets - view.reached
        );
    }
    if view.nodes.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "{}; up to {} branches a node; ◆ marks the objects asked about\n",
        match view.order {
            ChainOrder::Explain => "chains through named roots where there are some",
            ChainOrder::Shortest => "the shortest chains",
        },
        view.branches
    );
    let _ = writeln!(
        out,
        "{:>8}  {:>10}  chain from the roots",
        "objects", "retained"
    );
    // The children a node leaves out are told after the ones it lists: when the tree comes
    // back to the node's indent or above.
    let mut pending: Vec<(u32, String)> = Vec::new();
    let flush = |pending: &mut Vec<(u32, String)>, indent: Option<u32>, out: &mut String| {
        while let Some((at, _)) = pending.last() {
            if indent.is_some_and(|indent| indent > *at) {
                break;
            }
            if let Some((_, line)) = pending.pop() {
                out.push_str(&line);
            }
        }
    };
    for node in &view.nodes {
        flush(&mut pending, Some(node.indent), &mut out);
        let indent = "  ".repeat(node.indent as usize);
        if node.skipped_steps > 0 {
            let _ = writeln!(
                out,
                "{:>8}  {:>10}  {indent}… {} step{} of one child each",
                "",
                "",
                node.skipped_steps,
                if node.skipped_steps == 1 { "" } else { "s" }
            );
        }
        let _ = writeln!(
            out,
            "{:>8}  {:>10}  {indent}{}",
            node.targets,
            human_bytes(node.retained_size),
            node_line(node)
        );
        if node.hidden_children > 0 {
            pending.push((
                node.indent,
                format!(
                    "{:>8}  {:>10}  {indent}  … {} more branch{} of it\n",
                    node.hidden_targets,
                    human_bytes(node.hidden_retained),
                    node.hidden_children,
                    if node.hidden_children == 1 { "" } else { "es" }
                ),
            ));
        }
    }
    flush(&mut pending, None, &mut out);
    out
}

#[derive(Serialize)]
struct SelectionEntry<'a> {
    #[serde(rename = "type")]
    type_name: Option<&'a str>,
    ids: &'a [u64],
    baseline: Option<&'a str>,
}

impl<'a> From<&'a Selection> for SelectionEntry<'a> {
    fn from(selection: &'a Selection) -> Self {
        SelectionEntry {
            type_name: selection.type_name.as_deref(),
            ids: &selection.ids,
            baseline: selection.baseline.as_deref(),
        }
    }
}

#[derive(Serialize)]
struct PathNode<'a> {
    #[serde(flatten)]
    object: crate::json::Object<'a>,
    edge: Option<&'a str>,
    edge_kind: Option<&'a str>,
    parent: Option<usize>,
    depth: u32,
    indent: u32,
    targets: u64,
    targets_retained_size: u64,
    is_target: bool,
    skipped_steps: u64,
    hidden_children: u64,
    hidden_targets: u64,
    hidden_retained_size: u64,
}

#[derive(Serialize)]
struct Paths<'a> {
    schema: &'static str,
    dump: crate::json::Dump<'a>,
    selection: SelectionEntry<'a>,
    order: &'static str,
    targets: u64,
    reached: u64,
    retained_size: u64,
    branches: usize,
    max_nodes: usize,
    nodes: Vec<PathNode<'a>>,
}

/// `heapgraph.paths/1`.
pub fn paths_json(view: &MergedPathsView, info: &DumpInfo, selection: &Selection) -> String {
    crate::json::to_string(&Paths {
        schema: "heapgraph.paths/1",
        dump: info.into(),
        selection: selection.into(),
        order: order_name(view.order),
        targets: view.targets,
        reached: view.reached,
        retained_size: view.retained_size,
        branches: view.branches,
        max_nodes: MAX_NODES,
        nodes: view
            .nodes
            .iter()
            .map(|node| PathNode {
                object: (&node.object).into(),
                edge: node.edge.as_deref(),
                edge_kind: node.edge_kind,
                parent: node.parent,
                depth: node.depth,
                indent: node.indent,
                targets: node.targets,
                targets_retained_size: node.retained_size,
                is_target: node.is_target,
                skipped_steps: node.skipped_steps,
                hidden_children: node.hidden_children,
                hidden_targets: node.hidden_targets,
                hidden_retained_size: node.hidden_retained,
            })
            .collect(),
    })
}

/// The groups as a table, at most `n` rows.
pub fn immediate_dominators_text(
    view: &ImmediateDominatorsView,
    info: &DumpInfo,
    selection: &Selection,
    n: usize,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}, {})",
        info.file, info.source_format, info.runtime
    );
    for note in &info.notes {
        let _ = writeln!(out, "note: {note}");
    }
    let _ = writeln!(
        out,
        "immediate dominators of {}, by type{}",
        selection.describe(view.objects),
        if view.skip.is_empty() {
            String::new()
        } else {
            format!(", looking through {}", view.skip.join(", "))
        }
    );
    if view.unreachable > 0 {
        let _ = writeln!(
            out,
            "{} are not reached through strong references and have no dominator",
            view.unreachable
        );
    }
    let _ = writeln!(
        out,
        "\n{:>9}  {:>10}  {:>10}  {:>10}  dominators' type: the one holding the most",
        "dominated", "retained", "shallow", "dominators"
    );
    for group in view.groups.iter().take(n) {
        let name = if group.is_root {
            format!(
                "<ROOT>: only the roots together, {}",
                object_text(&group.example)
            )
        } else {
            object_text(&group.example)
        };
        let _ = writeln!(
            out,
            "{:>9}  {:>10}  {:>10}  {:>10}  {name}",
            group.dominated,
            human_bytes(group.dominated_retained),
            human_bytes(group.dominated_shallow),
            group.dominators
        );
    }
    if view.groups.len() > n {
        let _ = writeln!(out, "… {} more types", view.groups.len() - n);
    }
    out
}

#[derive(Serialize)]
struct GroupEntry<'a> {
    #[serde(rename = "type")]
    type_name: &'a str,
    root: bool,
    dominators: u64,
    dominators_shallow_size: u64,
    dominated: u64,
    dominated_shallow_size: u64,
    dominated_retained_size: u64,
    example: crate::json::Object<'a>,
}

#[derive(Serialize)]
struct ImmediateDominators<'a> {
    schema: &'static str,
    dump: crate::json::Dump<'a>,
    selection: SelectionEntry<'a>,
    objects: u64,
    unreachable: u64,
    skip: &'a [String],
    groups: Vec<GroupEntry<'a>>,
}

/// `heapgraph.immediate_dominators/1`, at most `n` groups (all when `None`).
pub fn immediate_dominators_json(
    view: &ImmediateDominatorsView,
    info: &DumpInfo,
    selection: &Selection,
    n: Option<usize>,
) -> String {
    crate::json::to_string(&ImmediateDominators {
        schema: "heapgraph.immediate_dominators/1",
        dump: info.into(),
        selection: selection.into(),
        objects: view.objects,
        unreachable: view.unreachable,
        skip: &view.skip,
        groups: view
            .groups
            .iter()
            .take(n.unwrap_or(usize::MAX))
            .map(|group| GroupEntry {
                type_name: &group.type_name,
                root: group.is_root,
                dominators: group.dominators,
                dominators_shallow_size: group.dominators_shallow,
                dominated: group.dominated,
                dominated_shallow_size: group.dominated_shallow,
                dominated_retained_size: group.dominated_retained,
                example: (&group.example).into(),
            })
            .collect(),
    })
}

/// The big drops section of `suspects`' text.
pub fn big_drops_text(view: &BigDropsView, out: &mut String) {
    let _ = writeln!(
        out,
        "\n{} big drop(s) in the dominator tree: objects retaining at least {:.0}% whose largest \
         child keeps less than {:.0}% of them",
        view.drops.len(),
        view.threshold * 100.0,
        (1.0 - view.min_drop) * 100.0
    );
    for drop in &view.drops {
        let retained = drop.object.retained_size.unwrap_or(0);
        let _ = writeln!(
            out,
            "  {} ({:.1}%) in {}: {} children, the largest {} ({:.0}% drop)",
            human_bytes(retained),
            drop.share * 100.0,
            object_text(&drop.object),
            drop.children,
            human_bytes(drop.largest_child),
            drop.drop * 100.0
        );
        if let Some(dominator) = &drop.dominator {
            let _ = writeln!(out, "    under {}", object_text(dominator));
        }
    }
}

#[derive(Serialize)]
pub(crate) struct BigDropEntry<'a> {
    object: crate::json::Object<'a>,
    share: f64,
    children: u64,
    largest_child_retained_size: u64,
    drop: f64,
    dominator: Option<crate::json::Object<'a>>,
}

/// The big drops of `suspects`' JSON.
pub(crate) fn big_drop_entries(view: &BigDropsView) -> Vec<BigDropEntry<'_>> {
    view.drops
        .iter()
        .map(|drop| BigDropEntry {
            object: (&drop.object).into(),
            share: drop.share,
            children: drop.children,
            largest_child_retained_size: drop.largest_child,
            drop: drop.drop,
            dominator: drop.dominator.as_ref().map(Into::into),
        })
        .collect()
}
