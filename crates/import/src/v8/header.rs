//! The `snapshot` header: the layout of the node and edge records, looked up by field name
//! in `snapshot.meta`, and the counts the arrays must match.

use super::malformed;
use crate::ImportError;
use heapgraph_model::EdgeKind;
use serde::Deserialize;

/// The most bytes the `snapshot` header may take. Real headers are about 1 KB (the meta's
/// field lists); the bound keeps a hostile file from making serde_json build a huge value.
pub(super) const MAX_HEADER_BYTES: usize = 16 << 20;

/// The header as written: `{"meta": {...}, "node_count": N, "edge_count": E, ...}`.
#[derive(Deserialize)]
struct RawHeader {
    /// The layout.
    meta: RawMeta,
    /// Nodes in `nodes`.
    node_count: u64,
    /// Edges in `edges`.
    edge_count: u64,
    /// The root's offset in `nodes` (old files only).
    #[serde(default)]
    root_index: Option<u64>,
}

/// `snapshot.meta`, the parts the importer reads.
#[derive(Deserialize)]
struct RawMeta {
    /// Names of the node record's fields.
    node_fields: Vec<String>,
    /// Per node field, its value kind; the first is the array of node type names.
    node_types: Vec<serde_json::Value>,
    /// Names of the edge record's fields.
    edge_fields: Vec<String>,
    /// Per edge field, its value kind; the first is the array of edge type names.
    edge_types: Vec<serde_json::Value>,
}

/// Where each column sits in the records, and what the type numbers mean.
#[derive(Debug)]
pub(super) struct Layout {
    /// Fields per node record.
    pub(super) node_fields: usize,
    /// Position of `type` in a node record.
    pub(super) node_type: usize,
    /// Position of `name`.
    pub(super) node_name: usize,
    /// Position of `id`.
    pub(super) node_id: usize,
    /// Position of `self_size`.
    pub(super) node_self_size: usize,
    /// Position of `edge_count`.
    pub(super) node_edge_count: usize,
    /// Node type names, indexed by a node's `type` (at most 255 of them, so that the kind of
    /// the types it does not list fits in a byte too).
    pub(super) node_kinds: Vec<String>,
    /// Fields per edge record.
    pub(super) edge_fields: usize,
    /// Position of `type` in an edge record.
    pub(super) edge_type: usize,
    /// Position of `name_or_index`.
    pub(super) edge_name: usize,
    /// Position of `to_node`.
    pub(super) edge_to: usize,
    /// The model's kind for each edge type number.
    pub(super) edge_kinds: Vec<EdgeKind>,
    /// Edge type names the model does not know (read as `internal`).
    pub(super) unknown_edge_types: Vec<String>,
    /// `node_count` as the header states it.
    pub(super) node_count: u64,
    /// `edge_count` as the header states it.
    pub(super) edge_count: u64,
    /// `root_index`, an offset into `nodes`, where the header has one.
    pub(super) root_index: Option<u64>,
    /// Where the header starts in the input.
    pub(super) offset: u64,
}

impl Layout {
    /// Parses the header's JSON text, which starts at absolute offset `offset`.
    ///
    /// # Errors
    /// [`ImportError::Malformed`] when the header is not JSON of the expected shape or its
    /// meta lacks a field the importer needs.
    pub(super) fn parse(text: &[u8], offset: u64) -> Result<Layout, ImportError> {
        let raw: RawHeader = serde_json::from_slice(text).map_err(|error| {
            malformed(
                offset + error_position(text, error.line(), error.column()),
                format!("in the `snapshot` header: {error}"),
            )
        })?;
        let missing = |list: &str, name: &str| {
            malformed(
                offset,
                format!("`snapshot.meta.{list}` has no `{name}` field"),
            )
        };
        let meta = raw.meta;
        let node_field = |name: &str| {
            meta.node_fields
                .iter()
                .position(|field| field == name)
                .ok_or_else(|| missing("node_fields", name))
        };
        let edge_field = |name: &str| {
            meta.edge_fields
                .iter()
                .position(|field| field == name)
                .ok_or_else(|| missing("edge_fields", name))
        };
        let node_type = node_field("type")?;
        let node_name = node_field("name")?;
        let node_id = node_field("id")?;
        let node_self_size = node_field("self_size")?;
        let node_edge_count = node_field("edge_count")?;
        let edge_type = edge_field("type")?;
        let edge_name = edge_field("name_or_index")?;
        let edge_to = edge_field("to_node")?;
        let node_kinds = type_names(&meta.node_types, "node_types", offset)?;
        if node_kinds.len() > usize::from(u8::MAX) {
            return Err(malformed(
                offset,
                format!(
                    "`snapshot.meta.node_types` lists {} node types; at most 255 are supported",
                    node_kinds.len()
                ),
            ));
        }
        let edge_type_names = type_names(&meta.edge_types, "edge_types", offset)?;
        let mut unknown_edge_types = Vec::new();
        let edge_kinds = edge_type_names
            .iter()
            .map(|name| {
                EdgeKind::from_name(name).unwrap_or_else(|| {
                    unknown_edge_types.push(name.clone());
                    EdgeKind::Internal
                })
            })
            .collect();
        Ok(Layout {
            node_fields: meta.node_fields.len(),
            node_type,
            node_name,
            node_id,
            node_self_size,
            node_edge_count,
            node_kinds,
            edge_fields: meta.edge_fields.len(),
            edge_type,
            edge_name,
            edge_to,
            edge_kinds,
            unknown_edge_types,
            node_count: raw.node_count,
            edge_count: raw.edge_count,
            root_index: raw.root_index,
            offset,
        })
    }
}

/// The type names in the first entry of `node_types` / `edge_types`.
fn type_names(
    types: &[serde_json::Value],
    list: &str,
    offset: u64,
) -> Result<Vec<String>, ImportError> {
    let not_names = || {
        malformed(
            offset,
            format!("`snapshot.meta.{list}` does not start with an array of type names"),
        )
    };
    let Some(serde_json::Value::Array(names)) = types.first() else {
        return Err(not_names());
    };
    names
        .iter()
        .map(|name| name.as_str().map(str::to_owned).ok_or_else(not_names))
        .collect()
}

/// The byte position in `text` of serde_json's 1-based `line` and `column`.
fn error_position(text: &[u8], line: usize, column: usize) -> u64 {
    let line_start = if line <= 1 {
        0
    } else {
        memchr::memchr_iter(b'\n', text)
            .nth(line - 2)
            .map_or(text.len(), |newline| newline + 1)
    };
    (line_start + column.saturating_sub(1)).min(text.len()) as u64
}
