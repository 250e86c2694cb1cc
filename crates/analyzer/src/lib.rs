//! Pure computation on heap graphs: which edges retain, dominators and retained sizes,
//! distances, holder chains, histograms. No I/O, no printing, no clocks.
//!
//! ```
//! use heapgraph_analyzer::{analyze, EdgeRule, Options, RankBy};
//! use heapgraph_test_support::graph;
//!
//! let graph = graph("root -> a: 10; a -> b: 5; a -> c: 7");
//! let options = Options { edge_rule: EdgeRule::for_runtime(graph.meta().runtime) };
//! let analysis = analyze(&graph, &options);
//! let top = heapgraph_analyzer::top(&graph, &analysis, RankBy::Retained, 1);
//! assert_eq!(top[0].name, "a");
//! assert_eq!(top[0].retained_size, Some(22));
//! ```
#![deny(missing_docs)]

mod distances;
mod dominators;
mod edge_rule;
mod histogram;
mod paths;
mod queries;
pub mod view;

pub use distances::{BASE_SYSTEM_DISTANCE, bfs_distances, edges_from_root};
pub use dominators::{DominatorTree, NO_NODE, dominators};
pub use edge_rule::EdgeRule;
pub use queries::{dominator_tree, find_largest_of_type, object_view, summary, top, who_holds};
pub use view::{
    DominatorTreeNode, DominatorTreeView, HoldersView, ObjectView, PathStep, RankBy, SummaryView,
    TypeRow,
};

use heapgraph_model::HeapGraph;
use std::sync::OnceLock;

/// What an analysis needs to be told: the caller knows which edges retain, so there is no
/// `Default`.
#[derive(Clone, Debug)]
pub struct Options {
    /// Which references keep their targets alive.
    pub edge_rule: EdgeRule,
}

/// Dominators, retained sizes and distances of every node of one graph.
pub struct Analysis {
    /// The edge rule the analysis was made with.
    pub edge_rule: EdgeRule,
    /// Immediate dominators, retained sizes, reachability.
    pub dominators: DominatorTree,
    /// Distances, computed on first use: `summary` needs none.
    distance: OnceLock<Vec<u32>>,
}

/// The marker for "no distance" in [`Analysis::distances`].
pub const NO_DISTANCE: u32 = u32::MAX;

/// Computes the dominator tree and retained sizes; distances follow on first use
/// ([`Analysis::distances`]).
///
/// Complexity: as [`dominators`], O((V + E) log V) worst case and near-linear in practice;
/// O(V + E) auxiliary space.
pub fn analyze(graph: &HeapGraph, options: &Options) -> Analysis {
    Analysis {
        edge_rule: options.edge_rule.clone(),
        dominators: dominators(graph, &options.edge_rule),
        distance: OnceLock::new(),
    }
}

impl Analysis {
    /// Distance from the root per node, [`NO_DISTANCE`] where the search does not reach, by the
    /// runtime's rules; computed on the first call (O(V + E)). For V8 these are DevTools' raw
    /// values: nodes reached only from system roots count from [`BASE_SYSTEM_DISTANCE`]
    /// ([`edges_from_root`] removes it).
    pub fn distances(&self, graph: &HeapGraph) -> &[u32] {
        self.distance
            .get_or_init(|| bfs_distances(graph, &self.edge_rule))
    }

    /// Adopts analysis columns saved with the graph (the native format's trailing section),
    /// so that a converted dump reopens without recomputing.
    ///
    /// `idom` holds [`NO_NODE`] for the root and unreachable nodes; `distance` is as
    /// [`Analysis::distances`]. The reachable set and retained counts are rebuilt from `idom`.
    ///
    /// # Errors
    /// A message when the columns do not fit the graph or `idom` is not a tree under the root;
    /// the caller then recomputes.
    pub fn from_stored(
        graph: &HeapGraph,
        edge_rule: EdgeRule,
        idom: Vec<u32>,
        retained_size: Vec<u64>,
        distance: Vec<u32>,
    ) -> Result<Analysis, String> {
        let n_nodes = graph.node_count();
        if idom.len() != n_nodes || retained_size.len() != n_nodes || distance.len() != n_nodes {
            return Err(format!(
                "the stored analysis does not have {n_nodes} entries per column"
            ));
        }
        let root = graph.root().index();
        let mut idom = idom;
        idom[root] = root as u32;
        let mut reachable = vec![false; n_nodes];
        reachable[root] = true;
        for (node, &dominator) in idom.iter().enumerate() {
            if dominator != NO_NODE {
                if dominator as usize >= n_nodes {
                    return Err(format!("node {node} has dominator {dominator}, not a node"));
                }
                reachable[node] = true;
            }
        }
        let mut tree = DominatorTree {
            idom,
            retained_size,
            retained_count: vec![1; n_nodes],
            reachable,
        };
        // Retained counts: sum up the dominator tree in reverse pre-order, which also proves
        // that every reachable node hangs under the root.
        let children = histogram::DominatorChildren::build(graph, &tree);
        let mut preorder = Vec::with_capacity(n_nodes);
        let mut stack = vec![root as u32];
        while let Some(node) = stack.pop() {
            preorder.push(node);
            stack.extend_from_slice(children.of(node as usize));
        }
        let n_reachable = tree.reachable.iter().filter(|&&r| r).count();
        if preorder.len() != n_reachable {
            return Err("the stored dominators do not form a tree under the root".to_owned());
        }
        for &node in preorder.iter().rev().filter(|&&node| node as usize != root) {
            let dominator = tree.idom[node as usize] as usize;
            tree.retained_count[dominator] += tree.retained_count[node as usize];
        }
        Ok(Analysis {
            edge_rule,
            dominators: tree,
            distance: OnceLock::from(distance),
        })
    }

    /// The analysis as plain columns for storing: `(idom, retained_size, distance)`, with
    /// [`NO_NODE`] as the root's and unreachable nodes' dominator.
    pub fn to_stored(&self, graph: &HeapGraph) -> (Vec<u32>, Vec<u64>, Vec<u32>) {
        let distance = self.distances(graph).to_vec();
        let tree = &self.dominators;
        let root = graph.root().index();
        let idom = tree
            .idom
            .iter()
            .enumerate()
            .map(|(node, &dominator)| {
                if node == root || !tree.reachable[node] {
                    NO_NODE
                } else {
                    dominator
                }
            })
            .collect();
        (idom, tree.retained_size.clone(), distance)
    }
}
