//! Which references keep their targets alive, per runtime.

use heapgraph_model::{EdgeKind, HeapGraph, Runtime};

/// The rule deciding which edges retain (count for reachability, dominators and chains).
///
/// V8's rule is the one memlab applies to Node.js snapshots and `decisions.md` fixes: weak
/// edges never retain, shortcut edges retain only when they leave the root, and self edges
/// never do. (Chrome DevTools adds two refinements, a page-owned filter and dropping the
/// WeakMap table's edge to a value; `docs/architecture.md` says where that changes results.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeRule {
    /// Count weak edges as retaining (MAT's "include weak references"; off by default).
    pub include_weak: bool,
    /// Count shortcut edges that leave nodes other than the root.
    pub include_non_root_shortcuts: bool,
    /// memlab's treatment of objects the root does not reach: they hang under the root, and
    /// their references count, so an object that such an orphan also references is dominated
    /// by the root (V8, to match memlab). Otherwise, as in Eclipse MAT, unreachable objects
    /// are left out of the dominator tree and their references are ignored.
    pub orphans_under_root: bool,
    /// Use DevTools' distance rules: user roots first, then system roots, and its edge filter
    /// (V8 only).
    pub devtools_distances: bool,
}

impl EdgeRule {
    /// The rule users of `runtime`'s own tools expect.
    pub fn for_runtime(runtime: Runtime) -> EdgeRule {
        EdgeRule {
            include_weak: false,
            include_non_root_shortcuts: false,
            orphans_under_root: runtime == Runtime::V8,
            devtools_distances: runtime == Runtime::V8,
        }
    }

    /// Whether the kind alone allows the edge from `from` (the root or not) to retain.
    #[inline]
    pub(crate) fn kind_retains(&self, kind: EdgeKind, from_is_root: bool) -> bool {
        match kind {
            EdgeKind::Weak => self.include_weak,
            EdgeKind::Shortcut => from_is_root || self.include_non_root_shortcuts,
            _ => true,
        }
    }
}

/// The edge rule resolved against one graph.
pub(crate) struct StrongEdges<'a> {
    pub(crate) graph: &'a HeapGraph,
    rule: &'a EdgeRule,
    root: u32,
}

impl<'a> StrongEdges<'a> {
    pub(crate) fn new(graph: &'a HeapGraph, rule: &'a EdgeRule) -> Self {
        StrongEdges {
            graph,
            rule,
            root: graph.root().to_raw(),
        }
    }

    /// Whether edge `edge`, from `from` to `to`, retains its target.
    #[inline]
    pub(crate) fn retains(&self, from: u32, edge: usize, to: u32) -> bool {
        from != to
            && self
                .rule
                .kind_retains(self.graph.parts().edge_kind[edge], from == self.root)
    }
}
