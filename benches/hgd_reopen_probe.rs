//! The peak RSS of reopening a `.hgd` step by step, without the rest of the binary: import,
//! adopting the stored analysis, the summary view, the suspects (what `summary` adds to the view); each step prints the process's resident set
//! and its high-water mark (`/proc/self/status`, Linux). For docs/performance.md (issue 20).
//!
//! ```sh
//! cargo run --release --example hgd_reopen_probe -- FILE.hgd
//! ```
#![allow(
    clippy::print_stderr,
    reason = "a measuring tool: its figures go to stderr"
)]

use heapgraph_import::{Contents, hgd};

fn status() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .filter(|line| line.starts_with("VmHWM") || line.starts_with("VmRSS"))
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: hgd_reopen_probe FILE.hgd");
    let t = std::time::Instant::now();
    let (contents, stored) =
        hgd::import_path_with_analysis(path.as_ref(), &hgd::Options::default()).expect("import");
    eprintln!("imported {:.1?}: {}", t.elapsed(), status());
    let Contents::HeapGraph(graph) = contents else {
        panic!("not a heap graph")
    };
    let rule = heapgraph_analyzer::EdgeRule::for_runtime(graph.meta().runtime);
    let analysis = heapgraph_analyzer::Analysis::from_stored(&graph, rule, stored.expect("stored"))
        .expect("adopt");
    eprintln!("adopted {:.1?}: {}", t.elapsed(), status());
    let summary = heapgraph_analyzer::summary(&graph, &analysis);
    std::hint::black_box(&summary);
    eprintln!(
        "summary view {:.1?}: {} nodes, {}",
        t.elapsed(),
        graph.node_count(),
        status()
    );
    let suspects = heapgraph_analyzer::suspects(
        &graph,
        &analysis,
        heapgraph_analyzer::DEFAULT_SUSPECT_THRESHOLD,
    );
    std::hint::black_box(&suspects);
    eprintln!("suspects {:.1?}: {}", t.elapsed(), status());
}
