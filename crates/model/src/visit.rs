//! petgraph's visit traits on `&HeapGraph`, so petgraph's algorithms run without a copy.
//!
//! They serve as test oracles and conveniences; the hot paths use the analyzer's own
//! iterative algorithms over the raw columns.

use crate::heap_graph::{EdgeKind, HeapGraph, NodeId};
use petgraph::visit::{
    Data, EdgeRef, GraphBase, IntoEdgeReferences, IntoEdges, IntoNeighbors, IntoNodeIdentifiers,
    NodeCount, NodeIndexable, Visitable,
};

// SAFETY: `new` and `index` round-trip every value below `max`, as petgraph requires.
unsafe impl petgraph::graph::IndexType for NodeId {
    fn new(x: usize) -> Self {
        NodeId(x as u32)
    }
    fn index(&self) -> usize {
        self.0 as usize
    }
    fn max() -> Self {
        NodeId(u32::MAX)
    }
}

/// One reference of a heap graph, as petgraph sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeView {
    source: NodeId,
    target: NodeId,
    index: usize,
    kind: EdgeKind,
}

impl EdgeView {
    /// The edge's kind.
    pub fn kind(&self) -> EdgeKind {
        self.kind
    }
}

impl EdgeRef for EdgeView {
    type NodeId = NodeId;
    type EdgeId = usize;
    type Weight = EdgeKind;
    fn source(&self) -> NodeId {
        self.source
    }
    fn target(&self) -> NodeId {
        self.target
    }
    fn weight(&self) -> &EdgeKind {
        &self.kind
    }
    fn id(&self) -> usize {
        self.index
    }
}

impl GraphBase for HeapGraph {
    type NodeId = NodeId;
    type EdgeId = usize;
}

impl Data for HeapGraph {
    type NodeWeight = ();
    type EdgeWeight = EdgeKind;
}

impl NodeCount for HeapGraph {
    fn node_count(&self) -> usize {
        HeapGraph::node_count(self)
    }
}

impl NodeIndexable for HeapGraph {
    fn node_bound(&self) -> usize {
        HeapGraph::node_count(self)
    }
    fn to_index(&self, node: NodeId) -> usize {
        node.index()
    }
    fn from_index(&self, index: usize) -> NodeId {
        NodeId(index as u32)
    }
}

impl Visitable for HeapGraph {
    type Map = fixedbitset::FixedBitSet;
    fn visit_map(&self) -> Self::Map {
        fixedbitset::FixedBitSet::with_capacity(HeapGraph::node_count(self))
    }
    fn reset_map(&self, map: &mut Self::Map) {
        map.clear();
        map.grow(HeapGraph::node_count(self));
    }
}

impl<'a> IntoNeighbors for &'a HeapGraph {
    type Neighbors = std::iter::Map<std::slice::Iter<'a, u32>, fn(&u32) -> NodeId>;
    fn neighbors(self, node: NodeId) -> Self::Neighbors {
        let range = self.edge_range(node);
        self.parts().edge_to[range].iter().map(|&to| NodeId(to))
    }
}

impl IntoNodeIdentifiers for &HeapGraph {
    type NodeIdentifiers = std::iter::Map<std::ops::Range<u32>, fn(u32) -> NodeId>;
    fn node_identifiers(self) -> Self::NodeIdentifiers {
        (0..HeapGraph::node_count(self) as u32).map(NodeId)
    }
}

/// The edges of one node, as petgraph edge references.
pub struct Edges<'a> {
    graph: &'a HeapGraph,
    source: NodeId,
    range: std::ops::Range<usize>,
}

impl Iterator for Edges<'_> {
    type Item = EdgeView;
    fn next(&mut self) -> Option<EdgeView> {
        let index = self.range.next()?;
        Some(EdgeView {
            source: self.source,
            target: self.graph.edge_target(index),
            index,
            kind: self.graph.edge_kind(index),
        })
    }
}

impl<'a> IntoEdges for &'a HeapGraph {
    type Edges = Edges<'a>;
    fn edges(self, node: NodeId) -> Edges<'a> {
        Edges {
            graph: self,
            source: node,
            range: self.edge_range(node),
        }
    }
}

impl<'a> IntoEdgeReferences for &'a HeapGraph {
    type EdgeRef = EdgeView;
    type EdgeReferences = Box<dyn Iterator<Item = EdgeView> + 'a>;
    fn edge_references(self) -> Self::EdgeReferences {
        Box::new(self.nodes().flat_map(move |node| self.edges(node)))
    }
}
