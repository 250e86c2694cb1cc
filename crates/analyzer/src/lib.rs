//! Pure computation on the model: for heap graphs, which edges retain, dominators and retained
//! sizes, distances, holder chains, histograms; for allocation snapshots, sites grouped and
//! compared as tracemalloc does, and a CUDA allocator's state; for timelines, peaks, growth and
//! what happened. No I/O, no printing, no clocks.
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

pub mod backrefs;
mod chains;
pub mod diff;
mod distances;
mod dominators;
mod edge_rule;
pub mod explore;
pub mod findings;
pub mod gate;
pub mod gpu;
pub mod groups;
mod histogram;
pub mod immediate_dominators;
pub mod leaks;
mod leb128;
pub mod merged_paths;
mod paths;
mod queries;
pub mod sites;
mod suspects;
pub mod timeline;
mod tree_columns;
pub mod view;
pub mod waste;
mod weak;

pub use chains::{ChainIndex, ChainOrder};
pub use distances::{BASE_SYSTEM_DISTANCE, bfs_distances, edges_from_root};
pub use dominators::{DominatorTree, MEMORY_BOUND_REFERENCES, NO_NODE, dominators, memory_bound};
pub use edge_rule::EdgeRule;
pub use heapgraph_model::side_by_side;
pub use queries::{
    dominator_tree, find_largest_of_type, object_view, summary, summary_and_suspects,
    summary_of_kind, top, who_holds, who_holds_indexed,
};
pub use suspects::{
    ACCUMULATION_SHARE, BigDrop, BigDropsView, DEFAULT_MIN_DROP, DEFAULT_SUSPECT_THRESHOLD,
    StringValues, big_drops, strings, suspects, suspects_with_drop,
};
pub use tree_columns::{NodeCounts, NodeFlags};
pub use view::{
    AccumulatedType, DominatorTreeNode, DominatorTreeView, DuplicateString, HELD_THROUGH_ROWS,
    HeldThroughRow, HoldersView, ObjectView, PathStep, RankBy, StringsView, SummaryView, Suspect,
    SuspectRule, SuspectsView, TypeRow, WeaklyHeld,
};
pub use weak::{HeldBy, HeldThrough, ReferenceKind, WeakReach, weak_reach};

use heapgraph_model::file_pages::page_out;
use heapgraph_model::{
    AccumulatedTypes, ChildLists, HeapGraph, NodeId, Parked, StoredAnalysis, TypePaths, TypeTotals,
    U64Column, timed,
};
use histogram::{DominatorChildren, TypeCounts};
use std::sync::{Mutex, OnceLock, PoisonError};

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
    /// Per-type totals, computed on first use: only `summary` needs them.
    type_totals: OnceLock<TypeTotals>,
    /// The count and shallow size of each type, where they were counted beside the dominator
    /// pass: what the per-type totals start from.
    type_counts: OnceLock<TypeCounts>,
    /// What holds the objects the strong references do not reach, computed on first use.
    weak: OnceLock<WeakReach>,
    /// The distances holder chains are searched by, once [`Analysis::chain_index`] was asked
    /// for (a program that asks for one object's chains never builds it).
    chains: OnceLock<ChainIndex>,
    /// Each node's parent on the explaining chain from the root, once stored or asked for
    /// ([`Analysis::chain_parents`]).
    chain_parent: OnceLock<Vec<u32>>,
    /// The chain parents as the pass left them parked, where it did: read a block at a time
    /// by the chains of a few objects ([`Analysis::chain_parent`]), given back whole (into
    /// `chain_parent`) to the first reader of them all.
    parked_chain_parents: Mutex<Option<Parked<Vec<u32>>>>,
    /// The dominator tree's children of every node, once asked for
    /// ([`Analysis::dominator_children`]).
    children: OnceLock<DominatorChildren>,
    /// The merged paths of the types with the most instances, once stored or asked for
    /// ([`Analysis::type_paths`]).
    type_paths: OnceLock<Vec<TypePaths>>,
    /// The types below some nodes (the default suspects' accumulation points), by node, where
    /// stored with the dump ([`Analysis::stored_accumulated`]).
    accumulated: Vec<AccumulatedTypes>,
    /// Whether the object views show distances.
    view_distances: ViewDistances,
}

/// Whether the object views of an analysis ([`ObjectView::distance`]) show each object's
/// distance from the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewDistances {
    /// Shown: the distances are searched for once, beside the dominator pass or on first use.
    Shown,
    /// Left out (every view's distance is `None`), for outputs that show none, such as
    /// `summary`'s findings: no search, and no distance per node held.
    LeftOut,
}

/// The marker for "no distance" in [`Analysis::distances`].
pub const NO_DISTANCE: u32 = u32::MAX;

/// Computes the dominator tree and retained sizes; distances follow on first use
/// ([`Analysis::distances`]).
///
/// Complexity: as [`dominators`], O((V + E) log V) worst case and near-linear in practice;
/// O(V + E) auxiliary space.
pub fn analyze(graph: &HeapGraph, options: &Options) -> Analysis {
    let lean = memory_bound(graph);
    let (dominators, children) = timed("dominator tree and retained sizes", || {
        dominators::dominators_trading_memory(graph, &options.edge_rule, lean, true, &|| {})
    });
    analysis_of(options, dominators, children)
}

/// [`analyze`] for a caller that goes on to the chains of many objects (the suspects and
/// findings of `summary`, `suspects` and `report`; the explorer), with what those chains read
/// built beside the dominator pass, which is one thread's: the chain parents
/// ([`Analysis::chain_parents`]) and the distances the chains' steps show; neither depends on
/// the dominator tree ([`Analysis::prepare_chains`] then finds them built). The pass takes
/// its fast order whatever [`memory_bound`] says: the lean one costs a second search of the
/// graph on the pass's thread, which is the run's longest. Call it from a thread that is not
/// rayon's. With [`ViewDistances::LeftOut`] there are no distances to search for, and where
/// the graph's columns are parked ([`HeapGraph::park_columns`]) the edges' targets join them,
/// compressed about three times (on the 2.5 GB benchmark dump, 353 MiB in some 110). Where
/// the types and sizes are parked too (`park_columns(true)`: HPROF and Python; the Java
/// dumps' runs peaked at the pass's lists or near them), once the pass's search has read them out of order
/// for the last time ([`HeapGraph::park_edge_targets`], on every core: 0.5 s of 14 on that
/// dump), so that its predecessor lists are filled from their blocks in order and the rest
/// of it holds them compressed; otherwise (V8, whose runs take a fifth of memlab's memory and
/// whose time is the tighter target) beside its semidominators, once the lists are filled, at
/// no cost in time ([`HeapGraph::park_edge_targets_beside`]). They stay parked after it where
/// its search left few nodes unreached ([`UNREACHED_PARKING`]).
pub fn analyze_before_chains(
    graph: &mut HeapGraph,
    options: &Options,
    view_distances: ViewDistances,
) -> Analysis {
    let park_edges = view_distances == ViewDistances::LeftOut && graph.columns_parked();
    let ((chain_parents, distances, counts), (dominators, children)) = if park_edges {
        timed("dominator tree and retained sizes", || {
            let rule = &options.edge_rule;
            let (beside, searched) = beside_the_pass(graph, options, view_distances, |after| {
                let searched = dominators::dominators_to_search(graph, rule, true);
                after();
                searched
            });
            let n_nodes = graph.node_count();
            let unreached = n_nodes - searched.reached() as usize;
            let tree = if graph.types_and_sizes_parked() {
                graph.park_edge_targets();
                searched.list(graph, rule).finish(graph)
            } else {
                let listed = searched.list(graph, rule);
                (graph.park_edge_targets_beside(|| listed.dominators())).finish(graph)
            };
            if unreached > n_nodes / UNREACHED_PARKING {
                graph.unpark_edge_targets();
            }
            (beside, tree)
        })
    } else {
        let rule = &options.edge_rule;
        beside_the_pass(graph, options, view_distances, |after_search| {
            timed("dominator tree and retained sizes", || {
                dominators::dominators_trading_memory(graph, rule, false, true, after_search)
            })
        })
    };
    // Parked, they stay so: a summary's chains read a few of them, a block at a time, where
    // given back whole they were the second largest thing held after the pass.
    let (chain_parent, parked_chain_parents) = match chain_parents {
        Waiting::Whole(parents) => (OnceLock::from(parents), None),
        Waiting::Parked(parents) => (OnceLock::new(), Some(parents)),
    };
    Analysis {
        chain_parent,
        parked_chain_parents: Mutex::new(parked_chain_parents),
        distance: distances,
        type_counts: counts.map_or_else(OnceLock::new, OnceLock::from),
        view_distances,
        ..analysis_of(options, dominators, children)
    }
}

/// The share of a graph's nodes (one in this many) that the search from the root may leave
/// unreached for the edges' targets the pass parked to stay parked after it: the weak
/// references' reach, after it, reads the edges of every unreached node, each a block decoded
/// where it leaves the block read before. On `app-javac` (240,321 nodes unreached of 4.7M,
/// held by soft references) it took 15 s parked, against 0.05 s whole; the 2.5 GB benchmark
/// dump leaves 822 of 35M.
pub const UNREACHED_PARKING: usize = 256;

/// What [`analyze_before_chains`] makes beside the dominator pass: the chain parents, the
/// distances where shown, and the type counts where the types are not parked.
type Beside = (Waiting, OnceLock<Vec<u32>>, Option<TypeCounts>);

/// [`analyze_before_chains`]'s dominator pass, `pass`, and what is made beside it. `pass` is
/// handed what it calls once its search has numbered the nodes, which waits there for the
/// chain parents, where they are parked, to be so; the pass's search ends no later than the
/// work beside it where that is all there is (no distances; type counts only where the types
/// are not parked).
fn beside_the_pass<P: Send>(
    graph: &HeapGraph,
    options: &Options,
    view_distances: ViewDistances,
    pass: impl FnOnce(&dyn Fn()) -> P + Send,
) -> (Beside, P) {
    let rule = &options.edge_rule;
    // Each kept in a scratch file as soon as it is found, where indexes are (a server's), so
    // that neither is in memory beside the rest of the dominator pass.
    let chain_parents = || {
        timed("chain parents", || {
            page_out(merged_paths::chain_parents(graph, rule))
        })
    };
    // Where the graph's own columns wait compressed, so do the chain parents, which nothing
    // reads before the pass ends: made before the pass's predecessor lists, they would be held
    // whole beside them, its peak (parked, two fifths of their size). The pass waits for them
    // to be parked once its search is done: where the search for them is the longer (on
    // `app-rhino-acorn`, about 0.8 s to the pass's 0.6), the search's queue and the parents
    // whole met the lists as they were filled, a tenth of the run's peak; where it ends first
    // (the 2.5 GB dump), the parents whole met the gathering of the pass's numbers, 80 MiB
    // over the run's peak in three runs of four (docs/performance.md).
    let park = graph.columns_parked();
    let (parked_sender, parked_receiver) = std::sync::mpsc::channel::<()>();
    side_by_side(
        || {
            let parents = waiting(chain_parents(), park);
            // Dropped, unwinding included, the sender lets the pass go on.
            drop(parked_sender);
            let distances = match view_distances {
                ViewDistances::Shown => {
                    OnceLock::from(timed("distances", || page_out(bfs_distances(graph, rule))))
                }
                ViewDistances::LeftOut => OnceLock::new(),
            };
            // The dominator pass's search is mostly the longer: the counts fit in before it
            // ends. Where the types and sizes wait parked, so do the counts, until the type
            // totals (made whole, they would meet the pass's predecessor lists, its peak).
            let counts = (!graph.types_and_sizes_parked())
                .then(|| timed("type counts", || TypeCounts::of_every_node(graph)));
            (parents, distances, counts)
        },
        || {
            let after_search = || {
                if park {
                    // Nothing is sent: this returns once the sender is dropped.
                    let _ = timed("waiting for the chain parents", || parked_receiver.recv());
                }
            };
            pass(&after_search)
        },
    )
}

/// A column made beside the dominator pass for after it: whole, or parked until then.
enum Waiting {
    Whole(Vec<u32>),
    Parked(Parked<Vec<u32>>),
}

/// The chain parents `column`, parked where `park` says: from the back, the column shrinking
/// as its blocks are made, so that both are not held whole at the end of the pass's search,
/// on every core (the pass waits for them).
fn waiting(column: Vec<u32>, park: bool) -> Waiting {
    if park {
        Waiting::Parked(timed("chain parents parked", || {
            Parked::park_for_reads_from_the_back(column, heapgraph_model::Cores::Every)
        }))
    } else {
        Waiting::Whole(column)
    }
}

/// The analysis of a dominator pass, with nothing else computed yet.
fn analysis_of(
    options: &Options,
    dominators: DominatorTree,
    children: Option<DominatorChildren>,
) -> Analysis {
    Analysis {
        edge_rule: options.edge_rule.clone(),
        dominators,
        distance: OnceLock::new(),
        type_totals: OnceLock::new(),
        type_counts: OnceLock::new(),
        weak: OnceLock::new(),
        chains: OnceLock::new(),
        chain_parent: OnceLock::new(),
        parked_chain_parents: Mutex::new(None),
        children: children.map_or_else(OnceLock::new, OnceLock::from),
        type_paths: OnceLock::new(),
        accumulated: Vec::new(),
        view_distances: ViewDistances::Shown,
    }
}

impl Analysis {
    /// Distance from the root per node, [`NO_DISTANCE`] where the search does not reach, by the
    /// runtime's rules; computed on the first call (O(V + E); O(V) from the [`ChainIndex`] once
    /// that is built, for every runtime but V8, whose distances follow rules of their own
    /// ([`Analysis::prepare_chains`])). For V8 these are DevTools' raw
    /// values: nodes reached only from system roots count from [`BASE_SYSTEM_DISTANCE`]
    /// ([`edges_from_root`] removes it).
    pub fn distances(&self, graph: &HeapGraph) -> &[u32] {
        self.distance.get_or_init(|| {
            page_out(match self.chains.get() {
                Some(index) if !self.edge_rule.devtools_distances => {
                    timed("distances, from the chain index", || {
                        index.plain_distances()
                    })
                }
                _ => timed("distances", || bfs_distances(graph, &self.edge_rule)),
            })
        })
    }

    /// Builds what the first chains of many objects read (suspects, findings): the chain
    /// parents ([`Analysis::chain_parents`]) and the distances their steps show, side by side
    /// where rayon has more than one thread. Call it from a thread that is not rayon's
    /// (docs/architecture.md, "Performance").
    ///
    /// Complexity: O(V + E), two breadth-first searches.
    pub fn prepare_chains(&self, graph: &HeapGraph) {
        // Parked parents are read where they are ([`Analysis::chain_parent`]).
        let parents = || {
            if self.chain_parent.get().is_none() && self.parked_chain_parents_lock().is_none() {
                self.chain_parents(graph);
            }
        };
        match self.view_distances {
            ViewDistances::Shown => {
                side_by_side(|| self.distances(graph), parents);
            }
            ViewDistances::LeftOut => parents(),
        }
    }

    /// Builds what object views read on first use (the distances, where they are shown), so
    /// that views made on rayon's threads never wait on a cell that rayon's help fills.
    pub fn prepare_views(&self, graph: &HeapGraph) {
        if self.view_distances == ViewDistances::Shown {
            self.distances(graph);
        }
    }

    /// The distance of `node` from the root that its object view shows: none where the search
    /// does not reach it, or where the analysis leaves distances out of its views.
    pub fn view_distance(&self, graph: &HeapGraph, node: NodeId) -> Option<u32> {
        match self.view_distances {
            ViewDistances::Shown => edges_from_root(self.distances(graph)[node.index()]),
            ViewDistances::LeftOut => None,
        }
    }

    /// The reachable heap: the shallow sizes of the reachable real objects, summed. The root's
    /// retained size also counts the synthetic nodes (V8's `(GC roots)` and its kin carry a few
    /// bytes), which no user sees as heap; shares of the heap divide by this. O(V).
    pub fn heap_size(&self, graph: &HeapGraph) -> u64 {
        let sizes = &graph.parts().node_shallow_size;
        graph
            .nodes()
            .filter(|&node| self.dominators.reachable[node.index()] && !graph.is_synthetic(node))
            .map(|node| sizes.get(node.index()))
            .sum()
    }

    /// What holds the objects the strong references do not reach (soft, weak, final or
    /// phantom references, or nothing), and the references that hold them; computed on the
    /// first call ([`weak_reach`], O(V + E)).
    pub fn weak_reach(&self, graph: &HeapGraph) -> &WeakReach {
        self.weak.get_or_init(|| {
            timed("weak reach", || {
                weak_reach(graph, &self.edge_rule, &self.dominators)
            })
        })
    }

    /// What holds `node`: strong references, only references of one kind, or nothing.
    pub fn held_by(&self, graph: &HeapGraph, node: heapgraph_model::NodeId) -> HeldBy {
        if self.dominators.reachable[node.index()] {
            HeldBy::Strong
        } else {
            self.weak_reach(graph).held_by(node)
        }
    }

    /// Moves the dominator tree's per-node columns into scratch files, where indexes are kept
    /// in files ([`heapgraph_model::HeapGraph::page_out_columns`] says why); the values are
    /// unchanged. The other columns (the distances, the chain parents, the dominator tree's
    /// children) are kept there as they are built.
    pub fn page_out_columns(&mut self) {
        use heapgraph_model::file_pages::{forget_resident, page_out_column};
        timed("analysis kept in scratch files", || {
            let tree = &mut self.dominators;
            tree.idom = page_out(std::mem::take(&mut tree.idom));
            page_out_column(&mut tree.retained_size);
            tree.retained_count.page_out();
            forget_resident();
        });
    }

    /// The distances holder chains are searched by ([`ChainIndex`]), built on the first call
    /// (two breadth-first searches, 8 bytes per node). From then on every chain search of this
    /// analysis (`who_holds`, the suspects' and findings' chains) reads them instead of
    /// searching the whole graph twice per object; the chains are the same.
    pub fn chain_index(&self, graph: &HeapGraph) -> &ChainIndex {
        self.chains
            .get_or_init(|| timed("chain index", || ChainIndex::new(graph, self)))
    }

    /// Each node's parent on the chain from the root that `paths` merges and that explains it
    /// first: the breadth-first search over the retaining edges that enters through the named
    /// roots before the others ([`merged_paths::chain_parents`]). [`NO_NODE`] for the root and
    /// the nodes the search does not reach. Computed on the first call (O(V + E), 4 bytes per
    /// node kept) unless stored with the dump; from then on [`merged_paths::merged_paths`] walks
    /// up from its targets instead of searching.
    pub fn chain_parents(&self, graph: &HeapGraph) -> &[u32] {
        if let Some(parents) = self.known_chain_parents() {
            return parents;
        }
        self.chain_parent.get_or_init(|| {
            timed("chain parents", || {
                page_out(merged_paths::chain_parents(graph, &self.edge_rule))
            })
        })
    }

    /// [`Analysis::chain_parents`], where stored, already computed, or parked.
    pub(crate) fn known_chain_parents(&self) -> Option<&[u32]> {
        if let Some(parents) = self.chain_parent.get() {
            return Some(parents);
        }
        let parked = self.parked_chain_parents_lock().take()?;
        Some(
            self.chain_parent
                .get_or_init(|| timed("chain parents unparked", || parked.unpark())),
        )
    }

    /// The parent of `node` ([`Analysis::chain_parents`]), decoded with its block where they
    /// are parked; `None` for a node outside the graph.
    pub(crate) fn chain_parent(&self, graph: &HeapGraph, node: u32) -> Option<u32> {
        if self.chain_parent.get().is_none()
            && let Some(parked) = self.parked_chain_parents_lock().as_ref()
        {
            return parked.value("values", node as usize);
        }
        self.chain_parents(graph).get(node as usize).copied()
    }

    fn parked_chain_parents_lock(&self) -> std::sync::MutexGuard<'_, Option<Parked<Vec<u32>>>> {
        self.parked_chain_parents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The merged paths from the root to the instances of each type with at least one
    /// instance in [`merged_paths::TYPE_PATHS_SHARE`] objects, as `paths --type` lists them by
    /// default; computed on the first call (per type, a pass over the nodes and a merge of
    /// its instances' chains) unless stored with the dump. [`Analysis::known_type_paths`]
    /// answers from them. `merges` says how many merges run at once.
    pub fn type_paths(&self, graph: &HeapGraph, merges: merged_paths::Merges) -> &[TypePaths] {
        self.type_paths.get_or_init(|| {
            self.chain_parents(graph);
            timed("merged paths of the types with the most instances", || {
                merged_paths::type_paths(graph, self, merges)
            })
        })
    }

    /// The merged paths to the instances of `type_name` at `branches` in the explaining order,
    /// where [`Analysis::type_paths`] holds them (stored with the dump or computed before):
    /// what [`merged_paths::merged_paths`] gives for them, read instead of merged.
    pub fn known_type_paths(
        &self,
        graph: &HeapGraph,
        type_name: &str,
        branches: usize,
    ) -> Option<merged_paths::MergedPathsView> {
        let type_id = graph.strings().find(type_name)?;
        let paths = self
            .type_paths
            .get()?
            .iter()
            .find(|paths| paths.type_name == type_id && paths.branches as usize == branches)?;
        Some(merged_paths::stored_view(graph, self, paths))
    }

    /// Per-type totals (count, shallow and retained size per type); computed on the first call
    /// (O(V), a walk of the dominator tree).
    pub fn type_totals(&self, graph: &HeapGraph) -> &TypeTotals {
        self.type_totals.get_or_init(|| {
            timed("type totals", || {
                histogram::type_totals(
                    graph,
                    &self.dominators,
                    || self.dominator_children(graph),
                    self.type_counts.get(),
                )
            })
        })
    }

    /// The children of every node in the dominator tree (about a byte per reachable node),
    /// built on the first call: the per-type totals, the suspects, the big drops, the tree
    /// views and the explorer all walk the tree down. Its builder uses no rayon job, so a
    /// rayon worker may wait on it.
    pub(crate) fn dominator_children(&self, graph: &HeapGraph) -> &DominatorChildren {
        self.children
            .get_or_init(|| DominatorChildren::build(graph, &self.dominators))
    }

    /// Adopts analysis columns saved with the graph (the `.hgd` format's trailing section),
    /// so that a converted dump reopens without recomputing.
    ///
    /// The reachable set comes from `idom`. Stored retained counts are checked, not trusted:
    /// each node's count must be one more than the sum of its dominator-tree children's, and
    /// the root's must be the number of reachable nodes, which no `idom` with a cycle can
    /// satisfy; without them, the counts are rebuilt by walking the tree. Stored type totals
    /// must add up to the graph's object count and shallow total.
    ///
    /// # Errors
    /// A message when the columns do not fit the graph or `idom` is not a tree under the root;
    /// the caller then recomputes.
    pub fn from_stored(
        graph: &HeapGraph,
        edge_rule: EdgeRule,
        stored: StoredAnalysis,
    ) -> Result<Analysis, String> {
        let n_nodes = graph.node_count();
        let StoredAnalysis {
            idom,
            retained_size,
            retained_count,
            distance,
            type_totals,
            chain_parent,
            dominator_children,
            type_paths,
            accumulated,
        } = stored;
        if idom.len() != n_nodes || retained_size.len() != n_nodes || distance.len() != n_nodes {
            return Err(format!(
                "the stored analysis does not have {n_nodes} entries per column"
            ));
        }
        if !retained_count.is_empty() && retained_count.len() != n_nodes {
            return Err(format!(
                "the stored retained counts do not have {n_nodes} entries"
            ));
        }
        // The counts made compact first (on every core), so that their four bytes a node are
        // gone before the other columns are read: reopening's peak.
        let retained_count = (!retained_count.is_empty()).then(|| NodeCounts::from(retained_count));
        // The parents and type totals are checked on one core while the tree's columns are on
        // the other: each check is a pass over every node.
        let (side_checks, tree) = rayon::join(
            || -> Result<_, String> {
                merged_paths::checked_type_paths(graph, &type_paths)?;
                Ok((
                    checked_chain_parents(chain_parent, n_nodes)?,
                    checked_type_totals(graph, type_totals)?,
                ))
            },
            || {
                checked_tree(
                    graph,
                    idom,
                    retained_size,
                    retained_count,
                    dominator_children,
                )
            },
        );
        let (chain_parent, type_totals) = side_checks?;
        let (tree, children) = tree?;
        suspects::checked_accumulated(graph, &tree, &accumulated)?;
        let children = children.map_or_else(OnceLock::new, OnceLock::from);
        Ok(Analysis {
            edge_rule,
            dominators: tree,
            distance: OnceLock::from(distance),
            type_totals,
            type_counts: OnceLock::new(),
            weak: OnceLock::new(),
            chains: OnceLock::new(),
            chain_parent,
            parked_chain_parents: Mutex::new(None),
            children,
            type_paths: if type_paths.is_empty() {
                OnceLock::new()
            } else {
                OnceLock::from(type_paths)
            },
            accumulated,
            view_distances: ViewDistances::Shown,
        })
    }

    /// [`Analysis::from_stored`], the chain parents parked first, read a block at a time by
    /// the chains of a few objects and given back whole to the first reader of them all, as
    /// the pass leaves them where the graph's columns were parked: for a summary of a stored
    /// analysis (on the 2.5 GB benchmark dump's `.hgd`, 135 MiB whole). Parked before the
    /// other columns are adopted, so that parking's own memory is not added to theirs; left
    /// as they are where they are a file's pages (a reopened `.hgd`'s), of which the kernel
    /// keeps only those read.
    ///
    /// # Errors
    /// As [`Analysis::from_stored`].
    pub fn from_stored_parking_chain_parents(
        graph: &HeapGraph,
        edge_rule: EdgeRule,
        mut stored: StoredAnalysis,
    ) -> Result<Analysis, String> {
        if heapgraph_model::file_pages::in_file_pages(&stored.chain_parent) {
            return Analysis::from_stored(graph, edge_rule, stored);
        }
        let parents = std::mem::take(&mut stored.chain_parent);
        let parked = checked_chain_parents(parents, graph.node_count())?
            .into_inner()
            .map(|parents| timed("chain parents parked", || Parked::park_for_reads(parents)));
        let mut analysis = Analysis::from_stored(graph, edge_rule, stored)?;
        analysis.parked_chain_parents = Mutex::new(parked);
        Ok(analysis)
    }

    /// The types below `point` as stored with the dump, if they were.
    pub(crate) fn stored_accumulated(&self, point: NodeId) -> Option<&AccumulatedTypes> {
        let at = (self.accumulated)
            .binary_search_by_key(&point.to_raw(), |types| types.point)
            .ok()?;
        Some(&self.accumulated[at])
    }

    /// The analysis with its views showing no distances ([`ViewDistances::LeftOut`]), and
    /// the distances it holds (a stored analysis's) given back: for outputs that show none.
    pub fn leaving_out_distances(self) -> Analysis {
        Analysis {
            distance: OnceLock::new(),
            view_distances: ViewDistances::LeftOut,
            ..self
        }
    }

    /// The analysis as plain columns for storing, with distances, type totals and chain
    /// parents computed if they were not yet. The analysis is given up column by column as it
    /// is converted, so that only one column is held twice at a time (`convert` holds the graph
    /// beside them).
    pub fn into_stored(self, graph: &HeapGraph) -> StoredAnalysis {
        self.chain_parents(graph);
        self.type_paths(graph, merged_paths::Merges::OneAtATime);
        // Walks the tree below the default suspects' accumulation points, or all of it with the
        // type totals where these are not known yet: either way they are known after it.
        let accumulated = suspects::accumulated_to_store(graph, &self);
        let Analysis {
            edge_rule,
            dominators,
            distance,
            type_totals,
            type_counts: _,
            weak: _,
            chains: _,
            chain_parent,
            parked_chain_parents: _,
            children,
            type_paths,
            accumulated: _,
            view_distances: _,
        } = self;
        let chain_parent = chain_parent.into_inner().unwrap_or_default();
        let type_totals = type_totals
            .into_inner()
            .expect("the accumulation points' walk leaves the type totals known");
        let dominator_children = children
            .into_inner()
            .and_then(DominatorChildren::into_stored);
        let distance = distance
            .into_inner()
            .unwrap_or_else(|| bfs_distances(graph, &edge_rule));
        let DominatorTree {
            mut idom,
            retained_size,
            retained_count,
            reachable,
        } = dominators;
        let root = graph.root().index();
        for (node, dominator) in idom.iter_mut().enumerate() {
            if node == root || !reachable[node] {
                *dominator = NO_NODE;
            }
        }
        drop(reachable);
        StoredAnalysis {
            idom,
            retained_size,
            retained_count: retained_count.to_vec(),
            distance,
            type_totals: Some(type_totals),
            chain_parent,
            dominator_children,
            type_paths: type_paths.into_inner().unwrap_or_default(),
            accumulated,
        }
    }
}

/// Retained counts summed up the dominator tree in reverse pre-order, which also proves that
/// every reachable node hangs under the root.
fn rebuilt_retained_counts(graph: &HeapGraph, tree: &DominatorTree) -> Result<Vec<u32>, String> {
    let n_nodes = graph.node_count();
    let root = graph.root().index();
    let children = DominatorChildren::build(graph, tree);
    let mut preorder = Vec::with_capacity(n_nodes);
    let mut stack = vec![root as u32];
    while let Some(node) = stack.pop() {
        preorder.push(node);
        stack.extend(children.of(node as usize));
    }
    let n_reachable = tree.reachable.count_set();
    if preorder.len() != n_reachable {
        return Err("the stored dominators do not form a tree under the root".to_owned());
    }
    let mut counts = vec![1u32; n_nodes];
    for &node in preorder.iter().rev().filter(|&&node| node as usize != root) {
        let dominator = tree.idom[node as usize] as usize;
        counts[dominator] += counts[node as usize];
    }
    Ok(counts)
}

/// Stored chain parents, checked for their range (and for cycles as `merged_paths` walks them:
/// it searches instead where they do not lead to the root); unset when none were stored.
fn checked_chain_parents(
    chain_parent: Vec<u32>,
    n_nodes: usize,
) -> Result<OnceLock<Vec<u32>>, String> {
    if chain_parent.is_empty() {
        return Ok(OnceLock::new());
    }
    if chain_parent.len() != n_nodes {
        return Err(format!(
            "the stored chain parents do not have {n_nodes} entries"
        ));
    }
    if let Some(node) = first_past_the_nodes(&chain_parent, n_nodes) {
        return Err(format!(
            "node {node} has chain parent {}, not a node",
            chain_parent[node]
        ));
    }
    Ok(OnceLock::from(chain_parent))
}

/// The first entry of a stored column of nodes (or [`NO_NODE`]) that is neither: a valid
/// entry plus one (wrapping) is at most `n_nodes`, which a read of the column tells
/// ([`heapgraph_model::first_in_stretches`]).
fn first_past_the_nodes(column: &[u32], n_nodes: usize) -> Option<usize> {
    let key = |entry: u32| u64::from(entry.wrapping_add(1));
    let below = n_nodes as u64 + 1;
    heapgraph_model::first_in_stretches(column, key, below, |_, entry| key(entry) >= below)
}

/// Stored type totals, checked ([`check_type_totals`]); unset when none were stored.
fn checked_type_totals(
    graph: &HeapGraph,
    type_totals: Option<TypeTotals>,
) -> Result<OnceLock<TypeTotals>, String> {
    match type_totals {
        Some(totals) => {
            check_type_totals(graph, &totals)?;
            Ok(OnceLock::from(totals))
        }
        None => Ok(OnceLock::new()),
    }
}

/// The dominator tree from stored columns: dominators checked for their range, the reachable
/// set read from them, retained counts checked ([`checked_retained_counts`]) or rebuilt.
fn checked_tree(
    graph: &HeapGraph,
    mut idom: Vec<u32>,
    retained_size: U64Column,
    retained_count: Option<NodeCounts>,
    children: Option<ChildLists>,
) -> Result<(DominatorTree, Option<DominatorChildren>), String> {
    let n_nodes = graph.node_count();
    let root = graph.root().index();
    idom[root] = root as u32;
    if let Some(node) = first_past_the_nodes(&idom, n_nodes) {
        return Err(format!(
            "node {node} has dominator {}, not a node",
            idom[node]
        ));
    }
    let reachable = NodeFlags::of_column(&idom, |&dominator| dominator != NO_NODE);
    let mut tree = DominatorTree {
        idom,
        retained_size,
        retained_count: NodeCounts::default(),
        reachable,
    };
    if let Some(counts) = &retained_count
        && let Some(lists) = children
    {
        // Both stored: the counts are checked over the children's lists as these are checked
        // against the dominators, in one pass, with no scratch column.
        let children = timed(
            "dominator tree's children and retained counts checked",
            || DominatorChildren::from_stored(graph, &tree, lists, Some(counts)),
        )?;
        tree.retained_count = retained_count.unwrap_or_default();
        return Ok((tree, Some(children)));
    }
    // The counts and the stored children are each checked against the dominators, side by
    // side.
    let (counts, children) = rayon::join(
        || match retained_count {
            None => rebuilt_retained_counts(graph, &tree).map(NodeCounts::from),
            Some(counts) => checked_retained_counts(graph, &tree, counts),
        },
        || {
            children
                .map(|lists| {
                    timed("dominator tree's children checked", || {
                        DominatorChildren::from_stored(graph, &tree, lists, None)
                    })
                })
                .transpose()
        },
    );
    tree.retained_count = counts?;
    Ok((tree, children?))
}

/// Stored retained counts, checked against the tree (see [`Analysis::from_stored`]): with
/// every count positive, a cycle of `idom` would need each count on it to exceed the next,
/// all the way round, so the equations hold only for a tree.
///
/// The counts come compact (a byte a node), and the sums are `u32`s that saturate: a saturated
/// sum is `u32::MAX`, which no count can exceed by one, so it fails the check as it should.
/// Reopening a large file thus holds 5 bytes a node here, not 16.
fn checked_retained_counts(
    graph: &HeapGraph,
    tree: &DominatorTree,
    counts: NodeCounts,
) -> Result<NodeCounts, String> {
    let root = graph.root().index();
    let n_reachable = tree.reachable.count_set() as u64;
    let root_count = if root < counts.len() {
        u64::from(counts[root])
    } else {
        0
    };
    let mut children_sum = vec![0u32; graph.node_count()];
    for node in 0..counts.len() {
        if node != root && tree.reachable[node] {
            let sum = &mut children_sum[tree.idom[node] as usize];
            *sum = sum.saturating_add(counts[node]);
        }
    }
    let consistent = (0..counts.len())
        .zip(&children_sum)
        .zip(tree.reachable.iter())
        .all(|((node, &below), reachable)| {
            !reachable || u64::from(counts[node]) == u64::from(below) + 1
        });
    if !consistent || root_count != n_reachable {
        return Err(histogram::COUNTS_DO_NOT_FIT.to_owned());
    }
    Ok(counts)
}

/// Refuses stored type totals that do not add up to the graph's real objects.
fn check_type_totals(graph: &HeapGraph, totals: &TypeTotals) -> Result<(), String> {
    let n_types = totals.types.len();
    if totals.count.len() != n_types
        || totals.shallow.len() != n_types
        || totals.retained.len() != n_types
    {
        return Err("the stored type totals have columns of different lengths".to_owned());
    }
    let n_strings = graph.strings().len();
    if totals.types.iter().any(|id| id.index() >= n_strings) {
        return Err("a stored type total names a string outside the table".to_owned());
    }
    // All less the few synthetic nodes.
    let parts = graph.parts();
    let synthetic = graph.synthetic_nodes();
    let objects = (graph.node_count() - synthetic.len()) as u64;
    let shallow = synthetic
        .iter()
        .fold(parts.node_shallow_size.sum(), |shallow, &node| {
            shallow.wrapping_sub(parts.node_shallow_size.get(node))
        });
    if totals.count.iter().sum::<u64>() != objects || totals.shallow.iter().sum::<u64>() != shallow
    {
        return Err("the stored type totals do not add up to the graph's objects".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use heapgraph_test_support::graph;

    fn analysis_of(graph: &HeapGraph) -> Analysis {
        let options = Options {
            edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
        };
        analyze(graph, &options)
    }

    fn adopt(graph: &HeapGraph, stored: StoredAnalysis) -> Result<Analysis, String> {
        Analysis::from_stored(graph, EdgeRule::for_runtime(graph.meta().runtime), stored)
    }

    /// Parked by the pass, the chain parents stay so: each read decodes its block, the
    /// suspects' chains are those of parents held whole, and the first reader of them all gets
    /// them whole.
    #[test]
    fn parked_chain_parents_are_read_where_they_lie_and_given_back_whole() {
        let mut graph = graph(
            "root -> cache: 8; cache -> map: 16; map -> s1: 100; map -> s2: 100; map -> s3: 100; root -> other: 4; other -> s1: 1",
        );
        let options = Options {
            edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
        };
        let whole = analyze_before_chains(&mut graph, &options, ViewDistances::LeftOut);
        let expected = suspects(&graph, &whole, 0.2);
        assert!(!expected.suspects.is_empty());
        let parents = whole.chain_parents(&graph).to_vec();
        let targets = graph.parts().edge_to.clone();
        graph.park_columns(true);
        let parked = analyze_before_chains(&mut graph, &options, ViewDistances::LeftOut);
        assert_eq!(parked.dominators.idom, whole.dominators.idom);
        // As a summary leaves them: the edges' targets parked by the pass stay so.
        graph.unpark_columns_but_ids_and_edges();
        assert!(
            graph.edge_targets_parked(),
            "parked once the search was done"
        );
        assert!(graph.parts().edge_to.is_empty());
        assert_eq!(graph.edge_count(), targets.len());
        for (edge, &target) in targets.iter().enumerate() {
            assert_eq!(graph.edge_target(edge).to_raw(), target);
        }
        assert!(
            parked.chain_parent.get().is_none(),
            "left parked by the pass"
        );
        for (node, &parent) in parents.iter().enumerate() {
            assert_eq!(parked.chain_parent(&graph, node as u32), Some(parent));
        }
        assert_eq!(parked.chain_parent(&graph, parents.len() as u32), None);
        assert_eq!(suspects(&graph, &parked, 0.2), expected);
        assert!(
            parked.chain_parent.get().is_none(),
            "the suspects' chains read them parked"
        );
        assert_eq!(parked.chain_parents(&graph), parents.as_slice());
        assert!(
            parked.parked_chain_parents_lock().is_none(),
            "given back whole"
        );
        graph.unpark_columns();
        assert!(!graph.edge_targets_parked());
        assert_eq!(graph.parts().edge_to, targets);
        // Shown, the distances' search beside the pass reads the edges: none are parked.
        graph.park_columns(true);
        let shown = analyze_before_chains(&mut graph, &options, ViewDistances::Shown);
        assert!(!graph.edge_targets_parked());
        assert_eq!(shown.dominators.idom, whole.dominators.idom);
    }

    /// A stored analysis adopted with its chain parents parked finds the same suspects,
    /// reading the parents where they lie, gives them back whole, and refuses parents that
    /// name no node as the plain adoption does.
    #[test]
    fn stored_chain_parents_are_parked_and_read_where_they_lie() {
        let graph = graph(
            "root -> cache: 8; cache -> map: 16; map -> s1: 100; map -> s2: 100; map -> s3: 100; root -> other: 4; other -> s1: 1",
        );
        let threshold = suspects::DEFAULT_SUSPECT_THRESHOLD;
        let stored = analysis_of(&graph).into_stored(&graph);
        let parents = stored.chain_parent.clone();
        assert_eq!(parents.len(), graph.node_count());
        let rule = EdgeRule::for_runtime(graph.meta().runtime);
        let whole = Analysis::from_stored(&graph, rule.clone(), stored.clone()).expect("adopted");
        let parked =
            Analysis::from_stored_parking_chain_parents(&graph, rule.clone(), stored.clone())
                .expect("adopted");
        assert!(parked.chain_parent.get().is_none(), "parked");
        for (node, &parent) in parents.iter().enumerate() {
            assert_eq!(parked.chain_parent(&graph, node as u32), Some(parent));
        }
        assert_eq!(
            suspects(&graph, &parked, threshold),
            suspects(&graph, &whole, threshold)
        );
        assert_eq!(parked.chain_parents(&graph), parents.as_slice());

        let mut lying = stored;
        lying.chain_parent[1] = graph.node_count() as u32 + 5;
        assert!(Analysis::from_stored_parking_chain_parents(&graph, rule, lying).is_err());
    }

    /// An analysis whose views leave distances out finds the same suspects, chains and all,
    /// with no distance on any view, and searches for none.
    #[test]
    fn views_without_distances_are_the_views_with_them_less_the_distances() {
        let mut graph = graph(
            "root -> cache: 8; cache -> map: 16; map -> s1: 100; map -> s2: 100; map -> s3: 100; root -> other: 4",
        );
        let options = Options {
            edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
        };
        let shown = analyze_before_chains(&mut graph, &options, ViewDistances::Shown);
        let left_out = analyze_before_chains(&mut graph, &options, ViewDistances::LeftOut);
        let with = suspects(&graph, &shown, 0.2);
        let mut without = suspects(&graph, &left_out, 0.2);
        assert!(left_out.distance.get().is_none(), "no distances searched");
        assert!(!with.suspects.is_empty());
        let mut views = 0;
        for (suspect, expected) in without.suspects.iter_mut().zip(&with.suspects) {
            let objects = suspect
                .object
                .iter_mut()
                .chain(suspect.accumulation_point.iter_mut());
            let steps = suspect.path.iter_mut().chain(suspect.entry_path.iter_mut());
            for view in objects.chain(steps.map(|step| &mut step.object)) {
                assert_eq!(view.distance, None, "{view:?}");
                views += 1;
                view.distance = shown.view_distance(&graph, view.node);
            }
            assert_eq!(suspect, expected);
        }
        assert!(views > 3, "{views} views");
        assert!(
            with.suspects[0]
                .path
                .iter()
                .any(|step| step.object.distance.is_some()),
            "{:?}",
            with.suspects[0].path
        );
    }

    #[test]
    fn a_column_past_the_nodes_is_found_where_a_plain_scan_finds_it() {
        let mut lcg = heapgraph_test_support::Lcg::new(17);
        for round in 0..200 {
            let n_nodes = 1 + lcg.below(20_000) as usize;
            let len = lcg.below(20_000) as usize;
            let mut column: Vec<u32> = (0..len)
                .map(|_| match lcg.below(10) {
                    0 => NO_NODE,
                    _ => lcg.below(n_nodes as u64) as u32,
                })
                .collect();
            if round % 2 == 0 && len > 0 {
                let at = lcg.below(len as u64) as usize;
                column[at] = [n_nodes as u32, NO_NODE - 1, n_nodes as u32 + 7][round % 3];
            }
            let plain = column
                .iter()
                .position(|&entry| entry != NO_NODE && entry as usize >= n_nodes);
            assert_eq!(first_past_the_nodes(&column, n_nodes), plain);
            let flags = NodeFlags::of_column(&column, |&entry| entry != NO_NODE);
            let collected: NodeFlags = column.iter().map(|&entry| entry != NO_NODE).collect();
            assert_eq!(flags, collected);
        }
    }

    /// A tree, a diamond, a nested instance of one type, and an unreachable pair.
    const NOTATION: &str =
        "root -> a: 10; a -> b: 5; a -> c: 7; b -> d: 3; c -> d; d -> a2: 4; x: 9; x -> y: 1";

    #[test]
    fn a_stored_analysis_is_adopted_as_computed() {
        let graph = graph(NOTATION);
        let analysis = analysis_of(&graph);
        let stored = analysis_of(&graph).into_stored(&graph);
        assert!(stored.type_totals.is_some());
        for counts_stored in [true, false] {
            let mut stored = stored.clone();
            if !counts_stored {
                stored.retained_count.clear();
            }
            let adopted = adopt(&graph, stored).expect("a consistent analysis");
            let (tree, original) = (&adopted.dominators, &analysis.dominators);
            assert_eq!(tree.retained_size, original.retained_size);
            assert_eq!(tree.retained_count, original.retained_count);
            assert_eq!(tree.reachable, original.reachable);
            assert_eq!(adopted.distances(&graph), analysis.distances(&graph));
            assert_eq!(adopted.type_totals(&graph), analysis.type_totals(&graph));
            // The chain parents are adopted as stored, not computed on first use.
            assert_eq!(
                adopted.known_chain_parents(),
                Some(analysis.chain_parents(&graph))
            );
        }
        let mut outside = stored.clone();
        outside.chain_parent[1] = graph.node_count() as u32;
        assert!(adopt(&graph, outside).is_err());
    }

    /// The types below the default suspects' accumulation points are stored with the analysis,
    /// and the suspects of the adopted analysis are the computed ones; they read the stored
    /// rows rather than walk (a count changed in the file shows through). Rows that name a
    /// node the root does not reach, come twice or hold more types than a suspect shows are
    /// refused.
    #[test]
    fn stored_accumulated_types_are_the_suspects_and_lies_are_refused() {
        let graph = graph(
            "root -> cache: 8; cache -> map: 16; map -> s1: 100; map -> s2: 100; map -> s3: 100; root -> other: 4; x: 9",
        );
        let threshold = suspects::DEFAULT_SUSPECT_THRESHOLD;
        let computed = suspects(&graph, &analysis_of(&graph), threshold);
        let stored = analysis_of(&graph).into_stored(&graph);
        let map = graph
            .nodes()
            .find(|&node| graph.name(node) == "map")
            .expect("a node of the notation");
        assert_eq!(
            stored
                .accumulated
                .iter()
                .map(|types| types.point)
                .collect::<Vec<_>>(),
            [map.to_raw()],
        );
        assert_eq!(stored.accumulated[0].count, [1, 1, 1]);
        let adopted = adopt(&graph, stored.clone()).expect("a consistent analysis");
        assert_eq!(suspects(&graph, &adopted, threshold), computed);

        let mut changed = stored.clone();
        changed.accumulated[0].count[0] = 7;
        let adopted = adopt(&graph, changed).expect("counts are not checked against the tree");
        let shown = suspects(&graph, &adopted, threshold);
        assert_eq!(shown.suspects[0].accumulated[0].count, 7);
        assert_eq!(computed.suspects[0].accumulated[0].count, 1);

        let x = graph
            .nodes()
            .find(|&node| graph.name(node) == "x")
            .expect("a node of the notation");
        type Lie = (&'static str, Box<dyn Fn(&mut Vec<AccumulatedTypes>)>);
        let lies: [Lie; 5] = [
            (
                "an unreachable point",
                Box::new(move |types| types[0].point = x.to_raw()),
            ),
            (
                "an unreachable representative",
                Box::new(move |types| types[0].representative = x.to_raw()),
            ),
            (
                "a point past the nodes",
                Box::new(|types| types[0].point = u32::MAX - 1),
            ),
            (
                "a point twice",
                Box::new(|types| types.push(types[0].clone())),
            ),
            (
                "more types than a suspect shows",
                Box::new(|types| {
                    let first = &mut types[0];
                    for _ in 0..10 {
                        first.types.push(first.types[0]);
                        first.count.push(1);
                        first.retained.push(1);
                    }
                }),
            ),
        ];
        for (lie, tell) in lies {
            let mut lying = stored.clone();
            tell(&mut lying.accumulated);
            assert!(adopt(&graph, lying).is_err(), "{lie}");
        }
    }

    /// The dominator tree's children stored beside it are adopted without a pass that builds
    /// them, and are the children built from the tree; lists that lie about the tree are
    /// refused.
    #[test]
    fn stored_children_are_the_built_ones_and_lies_are_refused() {
        let graph = graph(NOTATION);
        let built = DominatorChildren::build(&graph, &analysis_of(&graph).dominators);
        let stored = analysis_of(&graph).into_stored(&graph);
        assert!(stored.dominator_children.is_some(), "children stored");
        let adopted = adopt(&graph, stored.clone()).expect("a consistent analysis");
        let children = adopted
            .children
            .get()
            .expect("adopted, not built on first use");
        for node in 0..graph.node_count() {
            assert!(
                children.of(node).eq(built.of(node)),
                "the children of {node}"
            );
        }
        type Lie = (&'static str, fn(&mut ChildLists));
        let lies: [Lie; 5] = [
            ("a child under a node that does not dominate it", |lists| {
                lists.bytes[0] += 2;
            }),
            ("a list cut short", |lists| {
                lists.bytes.pop();
                if let Some(end) = lists.first.last_mut() {
                    *end -= 1;
                }
            }),
            ("a list that ends inside a child", |lists| {
                if let Some(last) = lists.bytes.last_mut() {
                    *last |= 0x80;
                }
            }),
            ("children out of order", |lists| {
                let longest = (1..lists.first.len())
                    .map(|rank| lists.first[rank - 1] as usize..lists.first[rank] as usize)
                    .max_by_key(|list| list.len())
                    .expect("a list");
                lists.bytes[longest].reverse();
            }),
            ("parent bits for more nodes than the graph has", |lists| {
                // A layout of its own that holds: the running count goes on unchanged.
                let parents = lists.first.len() as u32 - 1;
                lists.parent_bits.push(0);
                lists.parents_before.push(parents);
            }),
        ];
        for (lie, tell) in lies {
            let mut lying = stored.clone();
            if let Some(lists) = &mut lying.dominator_children {
                tell(lists);
            }
            assert!(adopt(&graph, lying).is_err(), "{lie}");
        }
    }

    #[test]
    fn stored_counts_that_do_not_fit_a_tree_are_refused() {
        let graph = graph(NOTATION);
        let stored = analysis_of(&graph).into_stored(&graph);
        let node = |name: &str| {
            graph
                .nodes()
                .find(|&node| graph.name(node) == name)
                .expect("a node of the notation")
                .index()
        };
        // b and c dominating each other: a cycle that the counts cannot describe.
        let mut cycle = stored.clone();
        cycle.idom[node("b")] = node("c") as u32;
        cycle.idom[node("c")] = node("b") as u32;
        assert!(adopt(&graph, cycle).is_err());
        // The same cycle without stored counts is caught by the walk.
        let mut cycle = stored.clone();
        cycle.idom[node("b")] = node("c") as u32;
        cycle.idom[node("c")] = node("b") as u32;
        cycle.retained_count.clear();
        assert!(adopt(&graph, cycle).is_err());
        // A count off by one at an inner node, at a leaf, at the root, along a whole line up to
        // the root but for the root's own, and at two leaves in opposite ways: each is refused
        // for its counts, whether they are checked over the stored children's lists or over
        // the dominators.
        let leaf = (0..graph.node_count())
            .find(|&at| stored.retained_count[at] == 1 && stored.idom[at] != NO_NODE)
            .expect("a leaf");
        let mut above_leaf = vec![leaf];
        while stored.idom[*above_leaf.last().expect("a node")] as usize != graph.root().index() {
            above_leaf.push(stored.idom[*above_leaf.last().expect("a node")] as usize);
        }
        let up = |nodes: Vec<usize>| nodes.into_iter().map(|at| (at, 1)).collect::<Vec<_>>();
        // b and c are leaves under a: their sum, and so every other equation, still holds.
        let lies: [(&str, Vec<(usize, i32)>); 5] = [
            ("a", up(vec![node("a")])),
            ("a leaf", up(vec![leaf])),
            ("the root", up(vec![graph.root().index()])),
            ("a line below the root", up(above_leaf)),
            (
                "two leaves off both ways",
                vec![(node("b"), 1), (node("c"), -1)],
            ),
        ];
        for (lie, changes) in lies {
            for with_children in [true, false] {
                let mut wrong_count = stored.clone();
                for &(at, by) in &changes {
                    let count = &mut wrong_count.retained_count[at];
                    *count = count.wrapping_add_signed(by);
                }
                if !with_children {
                    wrong_count.dominator_children = None;
                }
                let refused = adopt(&graph, wrong_count).err();
                assert_eq!(
                    refused.as_deref(),
                    Some(histogram::COUNTS_DO_NOT_FIT),
                    "{lie}, children stored: {with_children}"
                );
            }
        }
        assert!(stored.dominator_children.is_some());
        let mut wrong_totals = stored.clone();
        if let Some(totals) = &mut wrong_totals.type_totals {
            totals.count[0] += 1;
        }
        assert!(adopt(&graph, wrong_totals).is_err());
        let mut outside = stored;
        outside.idom[node("d")] = graph.node_count() as u32;
        assert!(adopt(&graph, outside).is_err());
    }
}
