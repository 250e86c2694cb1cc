//! The repair only the Python dumper's files need: edges that name their target by object id
//! (`to_object`) are resolved to nodes, and objects that CPython's reference counts say are held
//! by more than the dumped edges (C code, the interpreter) become roots
//! (docs/formats.md, "Python dumps").

use super::Columns;
use crate::ImportError;
use crate::hgd::inconsistent;
use heapgraph_model::{EdgeKind, StringTable};

/// The name of the root's edges to objects held from outside the dump.
const HELD_OUTSIDE: &str = "held outside the dump";

impl Columns {
    /// Makes a root of every object that more references point at than the file's edges show
    /// (held by C code or the interpreter, for Python), with an edge from the root named so.
    /// Returns a note on what was done, if there were reference counts.
    pub(super) fn root_what_is_held_outside(
        &mut self,
        first_edge: &mut [u64],
        root: usize,
        strings: &mut StringTable,
    ) -> Option<String> {
        let n_nodes = self.object_id.len();
        if self.refcount.is_empty() {
            return None;
        }
        if self.refcount.len() != n_nodes {
            return Some(
                "reference counts were not given for every object, so none was used".to_owned(),
            );
        }
        let mut seen = vec![0u32; n_nodes];
        for (&to, kind) in self.edge_to.iter().zip(&self.edge_kind) {
            if *kind != EdgeKind::Weak {
                let slot = &mut seen[to as usize];
                *slot = slot.saturating_add(1);
            }
        }
        let held: Vec<u32> = (0..n_nodes)
            .filter(|&node| node != root && self.refcount[node] > seen[node])
            .map(|node| node as u32)
            .collect();
        drop(seen);
        if held.is_empty() {
            return None;
        }
        let name = strings.intern(HELD_OUTSIDE).to_raw();
        let at = first_edge[root + 1] as usize;
        let added = held.len();
        self.edge_to.splice(at..at, held);
        self.edge_kind
            .splice(at..at, std::iter::repeat_n(EdgeKind::Internal, added));
        self.edge_name
            .splice(at..at, std::iter::repeat_n(name, added));
        for first in &mut first_edge[root + 1..] {
            *first += added as u64;
        }
        Some(format!(
            "{added} objects are referenced from outside the dump (C code, the interpreter) more \
             often than from dumped objects; each is a root ({HELD_OUTSIDE:?})"
        ))
    }
    /// Turns edge targets named by object id into node indices. Targets that are not nodes
    /// become `u32::MAX` (dropped later); returns how many there were.
    pub(super) fn resolve_object_targets(&mut self) -> Result<u64, ImportError> {
        if self.edge_to_object.is_empty() {
            return Ok(0);
        }
        if !self.edge_to.is_empty() {
            return Err(inconsistent(
                "the file names edge targets both by node index and by object id".to_owned(),
            ));
        }
        let mut index: rustc_hash::FxHashMap<u64, u32> = rustc_hash::FxHashMap::default();
        index.reserve(self.object_id.len());
        let mut repeated = 0u64;
        for (node, object_id) in self.object_id.iter().enumerate() {
            // An object listed twice (a collection untracked it between the listing and the
            // walk): edges go to its first node.
            if let std::collections::hash_map::Entry::Vacant(slot) = index.entry(object_id) {
                slot.insert(node as u32);
            } else {
                repeated += 1;
            }
        }
        if repeated > 0 {
            self.repeated_ids = repeated;
        }
        let mut unresolved = 0u64;
        self.edge_to = std::mem::take(&mut self.edge_to_object)
            .into_iter()
            .map(|object_id| {
                index.get(&object_id).copied().unwrap_or_else(|| {
                    unresolved += 1;
                    u32::MAX
                })
            })
            .collect();
        Ok(unresolved)
    }
}
