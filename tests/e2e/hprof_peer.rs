//! Java retained sizes against a peer that shares no code with heapgraph: hprof-analyzer 0.3.2
//! (crates.io), its own HPROF parser, dominator tree (semi-NCA) and retained sizes, which its
//! authors check against Eclipse MAT. The small program in `tests/oracle/hprof-peer/` calls its
//! library and prints every object's address, shallow and retained size for each of the five
//! Java dumps; `tests/oracle/hprof-peer/record.py` builds it (350 CPU seconds, too many for
//! every CI run) and records what it prints, with each fixture's SHA-256, and the test reads
//! the recordings (a fixture that changed fails it until its answer is recorded again).
//!
//! The two tools size objects differently, so retained bytes are compared through the peer's
//! own sizes: for an object, the peer's retained size must equal the sum of the peer's shallow
//! sizes over the objects heapgraph says it retains (its dominator subtree). That holds only if
//! both dominator trees give it the same subtree (in bytes), whoever's size model is right. It
//! is checked for every object of every dump; for the planted holders, where the two models
//! give every object of the subtree the same size, the retained sizes themselves are equal.
//!
//! What the two define differently, each stated where the test deals with it:
//! - which references retain: the peer lets `Reference.referent` retain
//!   ([`PEER_INCLUDES_WEAK`]) and drops a class's `<protection domain>` and `<signers>`
//!   ([`peer_view`]);
//! - sizes (the peer's `DESIGN.md` §1, MAT's formulas; heapgraph's `docs/formats.md`, "Sizes",
//!   checked against `jcmd GC.class_histogram`): the peer takes the header as an 8-byte mark
//!   word plus one reference, which is HotSpot's only with compressed oops (12) or with nothing
//!   compressed (16), not with compressed class pointers and 8-byte references (`nocoops`: 12,
//!   not 16); it lays each class's fields out after its superclass's, rounded up to the
//!   reference size (JDK 14's rule), where JDK 15 and later pack them into gaps; a class object
//!   is its static fields alone, where heapgraph adds the instance size of `java.lang.Class`;
//! - objects no root reaches: outside both trees; the peer gives each its shallow size.
//! - The peer has no retained counts: only bytes are compared.

use crate::hprof::{VARIANTS, analysis, expected, load, static_target};
use crate::support::{fixture, repo_root};
use heapgraph_analyzer::{DominatorTree, NO_NODE};
use heapgraph_model::{EdgeKind, EdgeName, HeapGraph, NodeId};
use rustc_hash::FxHashMap as HashMap;
use sha2::{Digest, Sha256};
use std::io::Read;

/// One object as the peer sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PeerObject {
    shallow: u64,
    retained: u64,
}

/// The peer's objects of one fixture, by address: its answer as `record.py` recorded it, after
/// checking that it was computed from the fixture as committed.
fn peer_objects(dump: &str) -> HashMap<u64, PeerObject> {
    let path = repo_root().join(format!("tests/oracle/hprof-peer/answers/{dump}.json.gz"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("a recorded answer"))
        .read_to_string(&mut text)
        .expect("gzip");
    let answer: serde_json::Value = serde_json::from_str(&text).expect("the answer is JSON");
    let fixture_path = repo_root().join(answer["fixture"].as_str().expect("its fixture"));
    let bytes = std::fs::read(&fixture_path).expect("the fixture");
    let digest: String = Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(
        answer["fixture_sha256"].as_str(),
        Some(digest.as_str()),
        "{} changed since the peer's answer was recorded: run \
         tests/oracle/hprof-peer/record.py",
        fixture_path.display()
    );
    let rows = answer["rows"].as_array().expect("rows");
    assert_eq!(answer["objects"].as_u64(), Some(rows.len() as u64));
    let number = |value: &serde_json::Value| value.as_u64().expect("a number");
    rows.iter()
        .map(|row| {
            let object = PeerObject {
                shallow: number(&row[1]),
                retained: number(&row[2]),
            };
            (number(&row[0]), object)
        })
        .collect()
}

/// For every node, the sum of `weight` over its dominator subtree in `tree` (0 for unreachable
/// nodes): one pass from the leaves up, in an order where each node follows its dominator.
fn subtree_sums(
    graph: &HeapGraph,
    tree: &DominatorTree,
    weight: impl Fn(NodeId) -> u64,
) -> Vec<u64> {
    let n = graph.node_count();
    let root = graph.root().index();
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); n];
    for node in graph.nodes() {
        let index = node.index();
        if index != root && tree.reachable[index] && tree.idom[index] != NO_NODE {
            children[tree.idom[index] as usize].push(index as u32);
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut stack = vec![root as u32];
    while let Some(node) = stack.pop() {
        order.push(node);
        stack.extend(&children[node as usize]);
    }
    let mut sums = vec![0; n];
    for &node in order.iter().rev() {
        let node = node as usize;
        let own = weight(graph.node(node).expect("a node"));
        sums[node] += own;
        if node != root {
            sums[tree.idom[node] as usize] += sums[node];
        }
    }
    sums
}

/// The planted holders of a dump: the static fields `expected.json` has facts on (the
/// LeakFixture dumps), and every reachable instance of a `com.example` class (the sessions,
/// listeners, chain links, ring nodes, weak and soft targets, the worker's state; in
/// `references`, the objects each kind of reference holds).
fn planted_holders(graph: &HeapGraph, tree: &DominatorTree, dump: &str) -> Vec<(String, NodeId)> {
    let mut holders = Vec::new();
    if VARIANTS.contains(&dump) {
        let expected = expected();
        let facts = &expected["variants"][dump]["dominators"]["all_strong"];
        for key in facts.as_object().expect("facts").keys() {
            if let Some((class, field)) = key.split_once('.') {
                let node = static_target(graph, &format!("com.example.{class}"), field);
                holders.push((key.clone(), node));
            }
        }
        assert_eq!(
            holders.len(),
            8,
            "{dump}: the static holders of expected.json"
        );
    }
    for node in graph.nodes() {
        let class = graph.type_name(node);
        if graph.kind(node).name == "instance"
            && class.starts_with("com.example.")
            && tree.reachable[node.index()]
        {
            holders.push((format!("the {class} at {:#x}", graph.object_id(node)), node));
        }
    }
    holders
}

/// Objects no root reaches when every reference retains: `reachability.garbage` of the
/// generators' facts.
fn garbage(dump: &str) -> u64 {
    let facts = if VARIANTS.contains(&dump) {
        expected()["variants"][dump].clone()
    } else {
        let text = std::fs::read_to_string(fixture("java/references.json")).expect("facts");
        let facts: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        facts[dump].clone()
    };
    facts["reachability"]["garbage"]["objects"]
        .as_u64()
        .expect("a count")
}

/// hprof-analyzer 0.3.2 lets `Reference.referent` retain, although its `DESIGN.md` (§4) names
/// it, with `Finalizer.unfinalized` and `Runtime.<Unfinalized>`, among the edges MAT leaves out
/// of the dominator tree: it tags those edges in the predecessor lists it builds while reading
/// the file, but every analysis path (`analyze_to_report_with_retained`, its CLI's `analyze`)
/// builds them again by transposing the forward references (`build_from_fwd`), which carry no
/// tag. By hand, on `default`: `SOFT_REFS` is an `ArrayList` (24 bytes), its `Object[22]`
/// (104) and 20 `SoftReference`s (40 each), 928 bytes, which is what `make_fixtures.py` and
/// heapgraph give under MAT's rule; each `SoftReference`'s referent, a `SoftTarget` (24) with its
/// `byte[1000]` (1016), is held by nothing else. The peer gives `SOFT_REFS` 21,728 bytes: 928 +
/// 20 × 1040, the targets included, which is heapgraph's answer when weak references retain
/// (`--include-weak`). So the peer is compared with that rule; MAT's rule keeps its own oracle,
/// `make_fixtures.py`'s dominator tree (`tests/e2e/hprof.rs`).
const PEER_INCLUDES_WEAK: bool = true;

/// The graph as the peer sees it, for the comparison of every object: `referent`s retain (above),
/// and a class's `<protection domain>` and `<signers>` do not, because hprof-analyzer 0.3.2
/// skips those two ids of a class record (`pass2/mod.rs`, the class dump: only the superclass,
/// the loader and the static fields become references), where heapgraph, like
/// `make_fixtures.py`, keeps them. In the LeakFixture dumps nothing hangs on that difference:
/// their protection domain is also held from elsewhere. In `references` and `javac` it does: the
/// application's `ProtectionDomain` is held by its classes and by one entry of the class
/// loader's `pdcache`, so the peer has it retained by that entry (and by the loader above it),
/// heapgraph by neither.
fn peer_view(graph: &HeapGraph) -> HeapGraph {
    let mut parts = graph.parts().clone();
    for edge in 0..graph.edge_count() {
        let name = graph.edge_name(edge);
        if name == EdgeName::Named("<protection domain>") || name == EdgeName::Named("<signers>") {
            parts.edge_kind.set(edge, EdgeKind::Weak);
        } else if graph.edge_kind(edge) == EdgeKind::Weak {
            parts.edge_kind.set(edge, EdgeKind::Internal);
        }
    }
    HeapGraph::from_parts(graph.meta().clone(), graph.strings().clone(), parts)
        .expect("the same columns")
}

/// The Java dumps: the three layouts of the LeakFixture program, the reference kinds, javac.
const DUMPS: [&str; 5] = ["default", "nocoops", "nocompressed", "references", "javac"];

#[test]
fn retained_sizes_equal_hprof_analyzers_on_every_object() {
    for dump in DUMPS {
        let graph = load(dump);
        let peer = peer_objects(dump);
        let objects = graph
            .nodes()
            .filter(|&node| !graph.is_synthetic(node))
            .count();
        assert_eq!(
            peer.len(),
            objects,
            "{dump}: the peer's objects and heapgraph's"
        );
        let theirs = |node: NodeId| {
            let address = graph.object_id(node);
            *peer
                .get(&address)
                .unwrap_or_else(|| panic!("{dump}: the peer has no object at {address:#x}"))
        };
        // The peer's shallow size of each node; 0 for the super-root and the stack frames, which
        // the peer does not have. The view has the same nodes in the same order.
        let peer_shallow = |node: NodeId| {
            if graph.is_synthetic(node) {
                0
            } else {
                theirs(node).shallow
            }
        };

        // Every object, not only the planted ones: the same retained set under both trees,
        // with the peer's edges.
        let view = peer_view(&graph);
        let view_tree = analysis(&view, false).dominators;
        let by_peer_sizes = subtree_sums(&view, &view_tree, peer_shallow);
        let mut unreachable = 0;
        for node in graph.nodes().filter(|&node| !graph.is_synthetic(node)) {
            let peer_object = theirs(node);
            if view_tree.reachable[node.index()] {
                assert_eq!(
                    peer_object.retained,
                    by_peer_sizes[node.index()],
                    "{dump}: the {} at {:#x}: the peer's retained size, and the peer's \
                     shallow sizes summed over the {} objects heapgraph says it retains",
                    graph.type_name(node),
                    graph.object_id(node),
                    view_tree.retained_count[node.index()]
                );
            } else {
                // Outside both trees: the peer leaves an object it does not reach at its own
                // size, where one it reached would also count what it holds (a String its
                // value).
                assert_eq!(
                    peer_object.retained,
                    peer_object.shallow,
                    "{dump}: the {} at {:#x}, which no root reaches",
                    graph.type_name(node),
                    graph.object_id(node)
                );
                unreachable += 1;
            }
        }
        assert_eq!(unreachable, garbage(dump), "{dump}: unreachable objects");

        // The planted holders, under heapgraph's own edges (`--include-weak`): the same retained
        // sets, and equal retained bytes wherever the two size models agree on every object the
        // holder retains.
        let tree = analysis(&graph, PEER_INCLUDES_WEAK).dominators;
        let by_peer_sizes = subtree_sums(&graph, &tree, peer_shallow);
        // Per node, how many objects of its subtree the two models size differently.
        let differing = subtree_sums(&graph, &tree, |node| {
            u64::from(!graph.is_synthetic(node) && theirs(node).shallow != graph.shallow_size(node))
        });
        let holders = planted_holders(&graph, &tree, dump);
        let mut differently_sized = Vec::new();
        for (holder, node) in &holders {
            let peer_retained = theirs(*node).retained;
            assert_eq!(
                peer_retained,
                by_peer_sizes[node.index()],
                "{dump}: {holder}: the peer's retained size, and the peer's shallow sizes summed \
                 over the {} objects heapgraph says it retains",
                tree.retained_count[node.index()]
            );
            if differing[node.index()] == 0 {
                assert_eq!(
                    tree.retained_size.get(node.index()),
                    peer_retained,
                    "{dump}: {holder}: retained bytes"
                );
            } else {
                differently_sized.push(holder.as_str());
            }
        }
        differently_sized.sort_unstable();
        match dump {
            // Nothing compressed: only the four `ArrayList`s differ, 32 bytes in the VM (its
            // `size` packed beside `AbstractList.modCount`) and 40 in the peer.
            "nocompressed" => assert_eq!(
                differently_sized,
                [
                    "LeakFixture.LISTENERS",
                    "LeakFixture.SOFT_REFS",
                    "LeakFixture.STRONG_TARGETS",
                    "LeakFixture.WEAK_REFS"
                ],
            ),
            // 8-byte references with compressed class pointers: the VM's header is 12 bytes,
            // the peer's 16, so its objects are larger and retained bytes cannot agree; the
            // retained sets, above, still do.
            "nocoops" => {}
            // Compressed oops: the peer's header is the VM's, and no planted holder retains an
            // object whose fields JDK 15's packing places differently.
            _ => assert_eq!(differently_sized, [] as [&str; 0], "{dump}"),
        }
        println!(
            "{dump}: {objects} objects ({unreachable} unreachable), {} planted holders, {} of \
             them with equal retained bytes",
            holders.len(),
            holders.len() - differently_sized.len()
        );
    }
}
