//! V8 heap snapshot redaction: the string table's values replaced, everything else kept byte
//! for byte, so the copy is a valid snapshot with the same nodes, edges, ids and sizes.
//!
//! Which strings are values follows DevTools' reading of the format: a node's `name` is its
//! constructor or type name for `object`, `closure`, `native`, `hidden`, `synthetic`, `code`,
//! `array`, `symbol` and `object shape` nodes (kept), and its value for `string`,
//! `concatenated string`, `sliced string`, `number`, `bigint` and `regexp` nodes (replaced);
//! an edge's `name_or_index` is a property, variable or internal name (kept) except for
//! `element` and `hidden` edges, where it is an index; `trace_function_infos` name functions
//! and scripts (kept). A string the snapshot uses both ways stays (its text is a name), and a
//! string nothing uses is replaced. Each replaced string becomes `<redacted N>` (N its index):
//! V8 writes each text once, so equal values stay equal and distinct ones distinct.

use crate::ImportError;
use serde::Deserialize;
use serde_json::value::RawValue;

const FORMAT: crate::Format = crate::Format::V8HeapSnapshot;

/// Node types whose `name` is the object's value.
const VALUE_NODE_TYPES: [&str; 6] = [
    "string",
    "concatenated string",
    "sliced string",
    "number",
    "bigint",
    "regexp",
];

/// Edge types whose `name_or_index` is an index, not a string.
const INDEX_EDGE_TYPES: [&str; 2] = ["element", "hidden"];

#[derive(Deserialize)]
struct Snapshot<'a> {
    snapshot: Header,
    nodes: Vec<u64>,
    edges: Vec<u64>,
    #[serde(default)]
    trace_function_infos: Vec<u64>,
    #[serde(borrow)]
    strings: &'a RawValue,
}

#[derive(Deserialize)]
struct Header {
    meta: Meta,
}

#[derive(Deserialize)]
struct Meta {
    node_fields: Vec<String>,
    node_types: Vec<serde_json::Value>,
    edge_fields: Vec<String>,
    edge_types: Vec<serde_json::Value>,
    #[serde(default)]
    trace_function_info_fields: Vec<String>,
}

/// What a V8 redaction changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct V8RedactStats {
    /// Entries of `strings`.
    pub strings: u64,
    /// Entries replaced.
    pub replaced: u64,
    /// Nodes whose name is a value.
    pub value_nodes: u64,
}

/// The redacted copy of the (decompressed) snapshot in `bytes`.
///
/// # Errors
/// [`ImportError::Malformed`] when `bytes` is not JSON of a heap snapshot's shape, naming the
/// byte offset; [`ImportError::Inconsistent`] when the arrays disagree with the header.
///
/// Complexity: O(n) time; the nodes and edges held as 64-bit numbers.
pub fn redact(bytes: &[u8]) -> Result<(Vec<u8>, V8RedactStats), ImportError> {
    let snapshot: Snapshot<'_> =
        serde_json::from_slice(bytes).map_err(|e| json_error(bytes, &e))?;
    let meta = &snapshot.snapshot.meta;
    let field = |fields: &[String], name: &str| {
        fields
            .iter()
            .position(|f| f == name)
            .ok_or_else(|| inconsistent(format!("the header's fields lack `{name}`")))
    };
    let type_names = |types: &[serde_json::Value]| -> Vec<String> {
        types
            .first()
            .and_then(|t| t.as_array())
            .map(|names| {
                names
                    .iter()
                    .map(|n| n.as_str().unwrap_or("").to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (node_width, node_type, node_name) = (
        meta.node_fields.len(),
        field(&meta.node_fields, "type")?,
        field(&meta.node_fields, "name")?,
    );
    let (edge_width, edge_type, edge_name) = (
        meta.edge_fields.len(),
        field(&meta.edge_fields, "type")?,
        field(&meta.edge_fields, "name_or_index")?,
    );
    if !snapshot.nodes.len().is_multiple_of(node_width)
        || !snapshot.edges.len().is_multiple_of(edge_width)
    {
        return Err(inconsistent(format!(
            "`nodes` holds {} numbers and `edges` {}, not whole records of {node_width} and {edge_width}",
            snapshot.nodes.len(),
            snapshot.edges.len()
        )));
    }
    let value_types: Vec<bool> = type_names(&meta.node_types)
        .iter()
        .map(|t| VALUE_NODE_TYPES.contains(&t.as_str()))
        .collect();
    let index_types: Vec<bool> = type_names(&meta.edge_types)
        .iter()
        .map(|t| INDEX_EDGE_TYPES.contains(&t.as_str()))
        .collect();
    let entries: Vec<&RawValue> =
        serde_json::from_str(snapshot.strings.get()).map_err(|e| json_error(bytes, &e))?;
    let n = entries.len();
    // Kept: named by something other than a value node.
    let mut kept = vec![false; n];
    let mut stats = V8RedactStats {
        strings: n as u64,
        ..V8RedactStats::default()
    };
    let mark = |kept: &mut [bool], index: u64| {
        if let Some(slot) = usize::try_from(index).ok().and_then(|i| kept.get_mut(i)) {
            *slot = true;
        }
    };
    for node in snapshot.nodes.chunks_exact(node_width) {
        let is_value = usize::try_from(node[node_type])
            .ok()
            .and_then(|t| value_types.get(t))
            .copied()
            .unwrap_or(false);
        if is_value {
            stats.value_nodes += 1;
        } else {
            mark(&mut kept, node[node_name]);
        }
    }
    for edge in snapshot.edges.chunks_exact(edge_width) {
        let is_index = usize::try_from(edge[edge_type])
            .ok()
            .and_then(|t| index_types.get(t))
            .copied()
            .unwrap_or(false);
        if !is_index {
            mark(&mut kept, edge[edge_name]);
        }
    }
    let info_width = meta.trace_function_info_fields.len();
    if info_width > 0 {
        let named: Vec<usize> = ["name", "script_name"]
            .iter()
            .filter_map(|f| meta.trace_function_info_fields.iter().position(|x| x == f))
            .collect();
        for info in snapshot.trace_function_infos.chunks_exact(info_width) {
            for &at in &named {
                mark(&mut kept, info[at]);
            }
        }
    }
    let raw = snapshot.strings.get();
    let start = raw.as_ptr() as usize - bytes.as_ptr() as usize;
    let end = start + raw.len();
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&bytes[..start]);
    out.push(b'[');
    for (index, entry) in entries.iter().enumerate() {
        if index > 0 {
            out.extend_from_slice(b",\n");
        }
        if kept[index] {
            out.extend_from_slice(entry.get().as_bytes());
        } else {
            stats.replaced += 1;
            out.extend_from_slice(format!("\"<redacted {index}>\"").as_bytes());
        }
    }
    out.push(b']');
    out.extend_from_slice(&bytes[end..]);
    Ok((out, stats))
}

/// serde_json's error, at its byte offset.
fn json_error(bytes: &[u8], error: &serde_json::Error) -> ImportError {
    // serde_json counts lines from 1 and columns from 1 within the line.
    let line_start = if error.line() <= 1 {
        0
    } else {
        bytes
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .nth(error.line() - 2)
            .map_or(bytes.len(), |(at, _)| at + 1)
    };
    let offset = (line_start + error.column().saturating_sub(1)).min(bytes.len());
    if error.is_eof() {
        return ImportError::truncated(FORMAT, offset as u64, "the rest of the snapshot");
    }
    ImportError::malformed(FORMAT, offset as u64, error.to_string())
}

fn inconsistent(message: String) -> ImportError {
    ImportError::inconsistent(FORMAT, message)
}
