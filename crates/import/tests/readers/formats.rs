//! The table of formats on real files: each is sniffed as the format that names what it is,
//! read by that format's reader into what the format says its files hold, plain and gzipped
//! alike; the two formats a pickle may hold are told by parsing it.

use crate::fixtures::{fixture, plain_bytes};
use heapgraph_import::{
    Contents, Format, Holds, ImportError, hgd, import_path, import_reader, sniff,
};
use std::io::Write;
use std::path::{Path, PathBuf};

fn holds(contents: &Contents) -> Holds {
    match contents {
        Contents::HeapGraph(_) => Holds::HeapGraph,
        Contents::Alloc(snapshot) if snapshot.cuda.is_some() => Holds::CudaSnapshot,
        Contents::Alloc(_) => Holds::Allocations,
        Contents::Timeline(_) => Holds::Timeline,
        _ => panic!("contents of a kind this test does not know"),
    }
}

/// A scratch directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    // Under `target/`: a test that fails before its clean-up leaves nothing in /tmp.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("formats-{name}"));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Sniffs `path`'s plain bytes as `sniffed`, and reads it, from the path and from a stream,
/// into what `holds` says.
fn check(path: &Path, sniffed: Format, holds_expected: Holds) {
    let bytes = plain_bytes(path);
    assert_eq!(sniff(&bytes), Some(sniffed), "{path:?}");
    let from_path = import_path(path, &Default::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(holds(&from_path), holds_expected, "{path:?}");
    let from_stream =
        import_reader(&bytes[..], &Default::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(holds(&from_stream), holds_expected, "{path:?} streamed");
    match sniffed.holds() {
        Some(said) => assert_eq!(said, holds_expected, "{sniffed:?}"),
        None => assert_eq!(
            sniffed,
            Format::Pickle,
            "only a pickle holds what parsing tells"
        ),
    }
}

#[test]
fn each_real_file_is_sniffed_and_read_as_its_format_says() {
    check(
        &fixture("v8/app-before.heapsnapshot.gz"),
        Format::V8HeapSnapshot,
        Holds::HeapGraph,
    );
    check(
        &fixture("java/default.hprof.gz"),
        Format::Hprof,
        Holds::HeapGraph,
    );
    check(
        &fixture("tracemalloc/before.tracemalloc"),
        Format::Pickle,
        Holds::Allocations,
    );
    check(
        &fixture("torch-cuda/load_fp32.pickle.gz"),
        Format::Pickle,
        Holds::CudaSnapshot,
    );
    check(
        &fixture("timeline/worker.hgt"),
        Format::Timeline,
        Holds::Timeline,
    );
}

/// A V8 snapshot file is mapped and read in place, a stream read into blocks: the same graph
/// either way, and a file cut short is reported cut where it ends.
#[test]
fn a_v8_snapshot_file_reads_as_its_stream_does() {
    let bytes = plain_bytes(&fixture("v8/app-before.heapsnapshot.gz"));
    let path = scratch("mapped").join("app-before.heapsnapshot");
    std::fs::write(&path, &bytes).expect("write the snapshot");
    let graph = |contents| match contents {
        Ok(Contents::HeapGraph(graph)) => graph,
        Ok(_) => panic!("read as something else than a heap graph"),
        Err(error) => panic!("{error}"),
    };
    let mapped = graph(import_path(&path, &Default::default()));
    let streamed = graph(import_reader(&bytes[..], &Default::default()));
    assert_eq!(
        format!("{:?} {:?}", mapped.parts(), mapped.meta()),
        format!("{:?} {:?}", streamed.parts(), streamed.meta())
    );
    let cut = bytes.len() * 2 / 3;
    std::fs::write(&path, &bytes[..cut]).expect("write the cut snapshot");
    match import_path(&path, &Default::default()) {
        Err(ImportError::Truncated { offset, .. }) => assert_eq!(offset, cut as u64),
        Err(error) => panic!("{error}"),
        Ok(_) => panic!("a cut snapshot was read whole"),
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn each_kind_of_hgd_is_sniffed_by_its_header() {
    let dir = scratch("hgd");
    // A heap graph `convert` would write, of a real V8 snapshot.
    let Contents::HeapGraph(graph) = import_path(
        &fixture("v8/app-before.heapsnapshot.gz"),
        &Default::default(),
    )
    .expect("v8") else {
        panic!("a V8 snapshot holds a heap graph");
    };
    let graph_path = dir.join("graph.hgd");
    hgd::write_heap_graph(
        &graph,
        None,
        std::fs::File::create(&graph_path).expect("create"),
    )
    .expect("write");
    check(&graph_path, Format::Hgd, Holds::HeapGraph);
    // An allocation snapshot as the Rust recorder writes it, of a real tracemalloc dump.
    let Contents::Alloc(snapshot) = import_path(
        &fixture("tracemalloc/after.tracemalloc"),
        &Default::default(),
    )
    .expect("tracemalloc") else {
        panic!("a tracemalloc dump holds allocations");
    };
    let alloc_path = dir.join("alloc.hgd");
    hgd::write_alloc_snapshot(
        &snapshot,
        std::fs::File::create(&alloc_path).expect("create"),
    )
    .expect("write");
    check(&alloc_path, Format::HgdAllocSnapshot, Holds::Allocations);
    // Gzipped, each is read as plain.
    let gzipped = dir.join("alloc.hgd.gz");
    let mut encoder = flate2::write::GzEncoder::new(
        std::fs::File::create(&gzipped).expect("create"),
        flate2::Compression::fast(),
    );
    encoder
        .write_all(&std::fs::read(&alloc_path).expect("read"))
        .expect("gzip");
    encoder.finish().expect("gzip");
    check(&gzipped, Format::HgdAllocSnapshot, Holds::Allocations);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_hgd_header_cut_short_is_read_as_a_heap_graph_and_refused_as_cut() {
    let bytes = plain_bytes(&fixture("timeline/worker.hgt"));
    let cut = &bytes[..40];
    assert_eq!(sniff(cut), Some(Format::Hgd));
    let error = import_reader(cut, &Default::default())
        .err()
        .expect("a header cut short");
    assert!(error.to_string().starts_with("heapgraph .hgd: "), "{error}");
}

#[test]
fn errors_name_the_format_as_users_know_it() {
    for (format, name) in [
        (Format::V8HeapSnapshot, "v8 heap snapshot"),
        (Format::Hprof, "hprof"),
        (Format::Phd, "phd"),
        (Format::Hgd, "heapgraph .hgd"),
        (Format::Pickle, "pickle"),
        (Format::Tracemalloc, "tracemalloc snapshot"),
        (Format::TorchCuda, "CUDA memory snapshot"),
    ] {
        let error = heapgraph_import::ImportError::malformed(format, 7, "what was wrong");
        assert_eq!(
            error.to_string(),
            format!("{name}: at byte 7: what was wrong")
        );
    }
    assert_eq!(Format::Tracemalloc.inside(), Some(Format::Pickle));
    assert_eq!(Format::TorchCuda.inside(), Some(Format::Pickle));
    assert_eq!(Format::Hprof.inside(), None);
}
