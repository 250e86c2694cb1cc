//! The columns a graph parks while its dominator pass runs (`HeapGraph::park_columns`, what
//! `summary` and its kin do unless columns spill): no search of the analysis reads them,
//! so the analysis, the suspects drawn from it, the columns given back and the strings' text
//! (parked for good, read a block at a time) are those of a graph that never parked, on real
//! dumps of each runtime; so is a summary read as `summary` leaves the graph, with the ids, the
//! edges' names and the edges' targets (parked by the pass once its lists are built) parked.

use crate::oracle::load;
use heapgraph_analyzer::{
    Analysis, DEFAULT_SUSPECT_THRESHOLD, EdgeRule, Options, UNREACHED_PARKING, ViewDistances,
    analyze, analyze_before_chains, summary_and_suspects, suspects,
};
use heapgraph_model::HeapGraph;

/// Every analysis the verbs make: the lean order, and the fast one beside the chains' searches
/// with distances shown or left out (last: where columns are parked, it parks the edges'
/// targets too).
fn analyses(graph: &mut HeapGraph, options: &Options) -> Vec<Analysis> {
    vec![
        analyze(graph, options),
        analyze_before_chains(graph, options, ViewDistances::Shown),
        analyze_before_chains(graph, options, ViewDistances::LeftOut),
    ]
}

fn parked_analyses_agree(name: &str) {
    let mut graph = load(name);
    let options = Options {
        edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
    };
    let names = !options.edge_rule.devtools_distances;
    let before = graph.parts().clone();
    let texts = |graph: &HeapGraph| -> Vec<String> {
        let strings = graph.strings();
        (0..strings.len() as u32)
            .map(|raw| {
                strings
                    .get(strings.id_from_raw(raw).expect("in range"))
                    .to_owned()
            })
            .collect()
    };
    let text_before = texts(&graph);
    let plain = analyses(&mut graph, &options);
    let summary = |graph: &HeapGraph, analysis: &Analysis| {
        summary_and_suspects(graph, analysis, None, DEFAULT_SUSPECT_THRESHOLD)
            .expect("no kind asked for")
    };
    let summary_whole = summary(&graph, &plain[2]);
    graph.park_columns(names);
    assert!(
        graph.parts().node_object_id.is_empty(),
        "{name}: ids parked"
    );
    assert_eq!(graph.parts().edge_name.is_empty(), names, "{name}");
    let parked = analyses(&mut graph, &options);
    graph.unpark_columns_but_ids_and_edges();
    // The pass leaves them parked where its search from the root leaves few nodes unreached;
    // parked here otherwise, so that the summary reads every dump's through their blocks.
    let n_nodes = graph.node_count();
    let unreached = n_nodes - parked[2].dominators.reachable.count_set();
    assert_eq!(
        graph.edge_targets_parked(),
        unreached <= n_nodes / UNREACHED_PARKING,
        "{name}: {unreached} of {n_nodes} nodes unreached"
    );
    graph.park_edge_targets();
    assert!(graph.edge_targets_parked(), "{name}: targets parked");
    assert!(graph.parts().edge_to.is_empty(), "{name}");
    assert_eq!(graph.edge_count(), before.edge_to.len(), "{name}");
    assert!(
        summary(&graph, &parked[2]) == summary_whole,
        "{name}: the summary and its suspects read through parked edges"
    );
    graph.unpark_columns();
    assert!(!graph.edge_targets_parked(), "{name}");

    let after = graph.parts();
    assert_eq!(after.node_object_id, before.node_object_id, "{name}");
    assert_eq!(after.node_name, before.node_name, "{name}");
    assert_eq!(after.edge_name, before.edge_name, "{name}");
    assert!(
        after.edge_to == before.edge_to,
        "{name}: the edges' targets are back"
    );
    assert!(
        texts(&graph) == text_before,
        "{name}: the strings' text is back"
    );
    for (k, (plain, parked)) in plain.iter().zip(&parked).enumerate() {
        let (a, b) = (&plain.dominators, &parked.dominators);
        assert_eq!(a.idom, b.idom, "{name}, analysis {k}");
        assert_eq!(a.retained_size, b.retained_size, "{name}, analysis {k}");
        assert_eq!(a.retained_count, b.retained_count, "{name}, analysis {k}");
        assert_eq!(a.reachable, b.reachable, "{name}, analysis {k}");
        // The suspects' chains first, read from the parents where the pass left them
        // (parked, a block at a time), then the parents given back whole.
        let expected = suspects(&graph, plain, 0.05);
        assert!(!expected.suspects.is_empty(), "{name}: suspects to compare");
        assert_eq!(
            suspects(&graph, parked, 0.05),
            expected,
            "{name}, analysis {k}"
        );
        assert_eq!(
            plain.chain_parents(&graph),
            parked.chain_parents(&graph),
            "{name}, analysis {k}"
        );
    }
}

#[test]
fn a_java_compiler_s_heap_analyses_the_same_parked() {
    parked_analyses_agree("java/javac.hprof.gz");
}

#[test]
fn an_android_app_s_heap_analyses_the_same_parked() {
    parked_analyses_agree("java/real-world/leak_service_binder_ignored.hprof.gz");
}

/// V8's distances follow DevTools' rules, which read labels and edge names: those stay.
#[test]
fn a_node_app_s_heap_analyses_the_same_parked() {
    parked_analyses_agree("v8/app-final.heapsnapshot.gz");
}
