//! Test helpers: a small text notation for heap graphs, and graphs from plain edge lists.
//!
//! The notation is a list of statements separated by `;` or newlines:
//! - `a -> b` adds a property edge named `b` from `a` to `b`; `a -w> b` a weak edge,
//!   `a -s> b` a shortcut, `a -e> b` an element edge (index 0, 1, … per source);
//! - a node token may carry a size, `b: 5`, which sets its shallow size (default 0);
//! - a node `Type#tag` has type `Type`; any other node's type is its name;
//! - the first node named is the root, and is synthetic.
//!
//! ```
//! let graph = heapgraph_test_support::graph("root -> cache: 8; cache -> Item#1: 16; cache -> Item#2: 16");
//! assert_eq!(graph.node_count(), 4);
//! assert_eq!(graph.total_shallow_size(), 40);
//! ```
#![deny(missing_docs)]

pub mod phd;

use heapgraph_model::{
    EdgeKind, GraphMeta, HeapGraph, HeapGraphParts, NodeKindInfo, Runtime, StringTable,
};
use rustc_hash::FxHashMap as HashMap;

/// Builds a graph from the notation above (runtime: Java, so the plain edge rule applies).
///
/// Panics on malformed notation: it is test input written by hand.
pub fn graph(notation: &str) -> HeapGraph {
    graph_for(Runtime::Java, notation)
}

/// Builds a graph from the notation, recording `runtime` in its metadata.
pub fn graph_for(runtime: Runtime, notation: &str) -> HeapGraph {
    let mut names: Vec<String> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    let mut index_of: HashMap<String, u32> = HashMap::default();
    let mut edges: Vec<(u32, u32, EdgeKind)> = Vec::new();
    let mut node = |token: &str, names: &mut Vec<String>, sizes: &mut Vec<u64>| -> u32 {
        let (name, size) = match token.split_once(':') {
            Some((name, size)) => (
                name.trim(),
                Some(size.trim().parse::<u64>().expect("size is a number")),
            ),
            None => (token.trim(), None),
        };
        assert!(!name.is_empty(), "empty node name in {token:?}");
        let index = *index_of.entry(name.to_owned()).or_insert_with(|| {
            names.push(name.to_owned());
            sizes.push(0);
            (names.len() - 1) as u32
        });
        if let Some(size) = size {
            sizes[index as usize] = size;
        }
        index
    };
    for statement in notation
        .split([';', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let arrows = [
            ("-w>", EdgeKind::Weak),
            ("-s>", EdgeKind::Shortcut),
            ("-e>", EdgeKind::Element),
            ("->", EdgeKind::Property),
        ];
        let found = arrows
            .iter()
            .find_map(|(arrow, kind)| statement.split_once(arrow).map(|(l, r)| (l, r, *kind)));
        match found {
            Some((left, right, kind)) => {
                let from = node(left, &mut names, &mut sizes);
                let to = node(right, &mut names, &mut sizes);
                edges.push((from, to, kind));
            }
            None => {
                node(statement, &mut names, &mut sizes);
            }
        }
    }
    let mut strings = StringTable::new();
    let name_ids: Vec<_> = names.iter().map(|name| strings.intern(name)).collect();
    let type_ids: Vec<_> = names
        .iter()
        .map(|name| strings.intern(name.split('#').next().unwrap_or(name)))
        .collect();
    let n_nodes = names.len();
    let mut parts = HeapGraphParts {
        node_object_id: (1..=n_nodes as u64).collect(),
        node_kind: (0..n_nodes).map(|i| u8::from(i != 0)).collect(),
        node_type: type_ids.into(),
        node_name: name_ids.clone().into(),
        node_shallow_size: sizes.into(),
        node_kinds: root_and_object_kinds(),
        root: 0,
        ..HeapGraphParts::default()
    };
    edges.sort_by_key(|&(from, _, _)| from);
    fill_edges(&mut parts, n_nodes, &edges, |to| {
        name_ids[to as usize].to_raw()
    });
    HeapGraph::from_parts(GraphMeta::new(runtime, "test-notation"), strings, parts)
        .expect("the notation builds a valid graph")
}

/// Builds a graph of `sizes.len()` nodes from an edge list (any order; kept stable per source).
/// Node 0 is the root. Types cycle through `T0`…`T3` so histograms have something to group.
/// Named edges are called `f0`, `f1`, … in order per source, so parallel edges stay distinct.
pub fn graph_from_edges(sizes: &[u64], edges: &[(u32, u32, EdgeKind)]) -> HeapGraph {
    let n_nodes = sizes.len();
    let mut strings = StringTable::new();
    let type_ids: Vec<_> = (0..4).map(|i| strings.intern(&format!("T{i}"))).collect();
    let mut parts = HeapGraphParts {
        node_object_id: (1..=n_nodes as u64).collect(),
        node_kind: (0..n_nodes).map(|i| u8::from(i != 0)).collect(),
        node_type: (0..n_nodes).map(|i| type_ids[i % 4]).collect(),
        node_name: (0..n_nodes)
            .map(|i| type_ids[i % 4])
            .collect::<Vec<_>>()
            .into(),
        node_shallow_size: sizes.to_vec().into(),
        node_kinds: root_and_object_kinds(),
        root: 0,
        ..HeapGraphParts::default()
    };
    let mut sorted = edges.to_vec();
    sorted.sort_by_key(|&(from, _, _)| from);
    let max_out = sorted
        .chunk_by(|a, b| a.0 == b.0)
        .map(<[_]>::len)
        .max()
        .unwrap_or(0);
    let field_names: Vec<u32> = (0..max_out)
        .map(|i| strings.intern(&format!("f{i}")).to_raw())
        .collect();
    fill_edges(&mut parts, n_nodes, &sorted, |_| 0);
    let mut seen_from = u32::MAX;
    let mut k = 0;
    for (edge, &(from, _, kind)) in sorted.iter().enumerate() {
        if from != seen_from {
            seen_from = from;
            k = 0;
        }
        if !kind.is_indexed() {
            parts.edge_name.set(edge, field_names[k]);
        }
        k += 1;
    }
    HeapGraph::from_parts(GraphMeta::new(Runtime::Java, "test-edges"), strings, parts)
        .expect("edges within range build a valid graph")
}

/// Kind 0, synthetic, for the root; kind 1 for every other node.
pub fn root_and_object_kinds() -> Vec<NodeKindInfo> {
    vec![
        NodeKindInfo {
            name: "synthetic".into(),
            synthetic: true,
        },
        NodeKindInfo {
            name: "object".into(),
            synthetic: false,
        },
    ]
}

fn fill_edges(
    parts: &mut HeapGraphParts,
    n_nodes: usize,
    sorted_edges: &[(u32, u32, EdgeKind)],
    name_of_target: impl Fn(u32) -> u32,
) {
    let mut first_edge = vec![0u64; n_nodes + 1];
    let mut element_counter = vec![0u32; n_nodes];
    for &(from, to, kind) in sorted_edges {
        first_edge[from as usize + 1] += 1;
        parts.edge_to.push(to);
        parts.edge_kind.push(kind);
        parts.edge_name.push(if kind.is_indexed() {
            let index = element_counter[from as usize];
            element_counter[from as usize] += 1;
            index
        } else {
            name_of_target(to)
        });
    }
    for i in 0..n_nodes {
        first_edge[i + 1] += first_edge[i];
    }
    parts.first_edge = first_edge.into();
}

/// A fixed linear congruential sequence for tests that build many random inputs: the same
/// inputs on every run and every machine, with no dependency.
pub struct Lcg(u64);

impl Lcg {
    /// The sequence from `seed`.
    pub fn new(seed: u64) -> Self {
        Lcg(seed)
    }

    /// The next value, below `bound` (which must not be 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

/// A random graph of 50 to 450 nodes whose references come mostly from the node before (long
/// lines, as a linked list makes), else from any earlier node (branches), and, where `across`,
/// a few references anywhere.
pub fn long_lines(lcg: &mut Lcg, across: bool) -> HeapGraph {
    let n_nodes = 50 + lcg.below(400) as u32;
    let sizes: Vec<u64> = (0..n_nodes).map(|_| 1 + lcg.below(100)).collect();
    let mut edges: Vec<(u32, u32, EdgeKind)> = (1..n_nodes)
        .map(|to| {
            let from = if lcg.below(8) == 0 {
                lcg.below(u64::from(to)) as u32
            } else {
                to - 1
            };
            (from, to, EdgeKind::Property)
        })
        .collect();
    if across {
        for _ in 0..lcg.below(u64::from(n_nodes) / 10) {
            let from = lcg.below(u64::from(n_nodes)) as u32;
            let to = lcg.below(u64::from(n_nodes)) as u32;
            edges.push((from, to, EdgeKind::Property));
        }
    }
    graph_from_edges(&sizes, &edges)
}
