//! Graphviz DOT output: the referrers of an object, as objgraph's `show_backrefs` draws them.

use crate::{human_bytes, type_text};
use heapgraph_analyzer::backrefs::BackrefsView;
use std::fmt::Write;

/// Escapes text for a double-quoted DOT string.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The referrers of `view.objects[0]` as a DOT digraph: one box per object (type, label, id,
/// shallow and retained size), arrows from referrer to referent named by the reference, weak
/// ones dashed; the target is filled.
pub fn backrefs(view: &BackrefsView) -> String {
    let mut out = String::from(
        "digraph backrefs {\n  rankdir=BT;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n  edge [fontname=\"monospace\", fontsize=9];\n",
    );
    for (i, object) in view.objects.iter().enumerate() {
        let mut label = type_text(&object.type_name).to_owned();
        if !object.name.is_empty() && object.name != object.type_name {
            let name: String = object.name.chars().take(40).collect();
            let _ = write!(label, "\n{name}");
        }
        let _ = write!(
            label,
            "\n{}\n{} / {}",
            object.id_text,
            human_bytes(object.shallow_size),
            object
                .retained_size
                .map_or_else(|| "-".to_owned(), human_bytes)
        );
        let style = if i == 0 {
            ", style=filled, fillcolor=\"#ffd27f\""
        } else {
            ""
        };
        let _ = writeln!(out, "  n{i} [label={}{style}];", quoted(&label));
    }
    for (from, to, name, weak) in &view.references {
        let style = if *weak { ", style=dashed" } else { "" };
        let _ = writeln!(out, "  n{from} -> n{to} [label={}{style}];", quoted(name));
    }
    if view.truncated > 0 {
        let _ = writeln!(
            out,
            "  more [shape=plaintext, label={}];",
            quoted(&format!(
                "{} more references not drawn (raise --max-objects)",
                view.truncated
            ))
        );
    }
    out.push_str("}\n");
    out
}
