//! Fuzzes the `.hgd` reader both ways it reads: as a stream (`hgd::import_with_analysis`,
//! one record at a time) and in memory (`hgd::import_slice_with_analysis`, the columns
//! decoded in parallel, as a mapped file is read). Neither may panic, hang or allocate more
//! than the input justifies, and since the two promise the same results, they must agree on
//! whether the bytes are a dump and, where they are, on what it holds.
#![no_main]

use heapgraph_import::{Contents, hgd};
use libfuzzer_sys::fuzz_target;

/// What the two readers must agree on: the kind of dump and its size.
fn shape(dump: &Contents) -> (&'static str, usize, usize) {
    match dump {
        Contents::HeapGraph(graph) => ("heap graph", graph.node_count(), graph.edge_count()),
        Contents::Alloc(snapshot) => ("allocation snapshot", snapshot.sites.len(), 0),
        Contents::Timeline(timeline) => ("timeline", timeline.samples.len(), 0),
        _ => ("a kind this target does not know yet", 0, 0),
    }
}

fuzz_target!(|bytes: &[u8]| {
    let options = hgd::Options::default();
    let streamed = hgd::import_with_analysis(bytes, &options);
    let in_memory = hgd::import_slice_with_analysis(bytes, &options);
    match (&streamed, &in_memory) {
        (Ok((a, a_analysis)), Ok((b, b_analysis))) => {
            assert_eq!(shape(a), shape(b), "the two readers read different dumps");
            assert_eq!(
                a_analysis.is_some(),
                b_analysis.is_some(),
                "one reader kept the stored analysis and the other did not"
            );
        }
        (Err(_), Err(_)) => {}
        (Ok(_), Err(error)) => panic!("only the streaming reader accepted the bytes: {error}"),
        (Err(error), Ok(_)) => panic!("only the in-memory reader accepted the bytes: {error}"),
    }
});
