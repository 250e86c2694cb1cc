//! Redaction of any heap graph, for the formats without an in-place rewrite (Python dumps,
//! `.hgd` files, IBM `.phd`): the labels that are values replaced, and every string nothing
//! else names, so that the graph written back as `.hgd` keeps its types, field and key names,
//! sizes, ids and edges.
//!
//! A node's label is a value when its type holds data: Python's `str`, `bytes`, `bytearray`,
//! `int`, `float` and `complex` (`builtins.str`, … as the dumper names them), V8's strings, numbers, bigints and regular expressions, Java's
//! `java.lang.String` and primitive arrays. Other labels (function, class, module and code
//! names, thread names) are names and stay. Each replaced string becomes `<redacted N>` (N its
//! id), so labels equal before are equal after.

use heapgraph_model::{HeapGraph, InvalidGraph, StringTable};

/// Types whose label is the object's value.
const VALUE_TYPES: [&str; 28] = [
    "builtins.str",
    "builtins.bytes",
    "builtins.bytearray",
    "builtins.int",
    "builtins.float",
    "builtins.complex",
    "str",
    "bytes",
    "bytearray",
    "int",
    "float",
    "complex",
    "(string)",
    "(concatenated string)",
    "(sliced string)",
    "(number)",
    "(bigint)",
    "(regexp)",
    "java.lang.String",
    "boolean[]",
    "byte[]",
    "char[]",
    "short[]",
    "int[]",
    "long[]",
    "float[]",
    "double[]",
    "java.lang.StringBuilder",
];

/// What a graph redaction changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GraphRedactStats {
    /// Strings of the table.
    pub strings: u64,
    /// Strings replaced.
    pub replaced: u64,
    /// Nodes whose label was a value.
    pub value_nodes: u64,
}

/// A copy of `graph` with its values replaced (see the module's documentation).
///
/// # Errors
/// [`InvalidGraph`] only if the graph's own columns were inconsistent.
///
/// Complexity: O(nodes + edges + strings) time and a flag per string.
pub fn redact(graph: &HeapGraph) -> Result<(HeapGraph, GraphRedactStats), InvalidGraph> {
    let table = graph.strings();
    let parts = graph.parts();
    let mut kept = vec![false; table.len()];
    kept[0] = true;
    let value_type: Vec<bool> = table
        .iter()
        .map(|(_, text)| VALUE_TYPES.contains(&text))
        .collect();
    let mut stats = GraphRedactStats {
        strings: table.len() as u64,
        ..GraphRedactStats::default()
    };
    for node in 0..parts.node_type.len() {
        let type_id = parts.node_type.get(node);
        kept[type_id.index()] = true;
        let name = parts.node_name.get(node);
        if value_type[type_id.index()] {
            if name.index() != 0 {
                stats.value_nodes += 1;
            }
        } else {
            kept[name.index()] = true;
        }
    }
    for edge in 0..parts.edge_to.len() {
        if !parts.edge_kind.get(edge).is_indexed()
            && let Some(slot) = kept.get_mut(parts.edge_name.get(edge) as usize)
        {
            *slot = true;
        }
    }
    let mut strings = StringTable::with_capacity(table.len(), table.text_bytes());
    for (id, text) in table.iter().skip(1) {
        if kept[id.index()] {
            strings.push(text);
        } else {
            stats.replaced += 1;
            strings.push(&format!("<redacted {}>", id.index()));
        }
    }
    let mut redacted = HeapGraph::from_parts(graph.meta().clone(), strings, parts.clone())?;
    // Lengths and fill are sizes, not values: kept, so that `waste` answers as before.
    redacted.set_array_lengths(graph.array_lengths().clone())?;
    redacted.set_fill(graph.fill().clone())?;
    Ok((redacted, stats))
}
