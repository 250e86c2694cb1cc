//! Writes the fuzz targets' seed corpora (docs/ci.md, "Fuzzing"): for each reader, small real
//! dumps from the fixtures, whole and uncompressed, so that the fuzzer starts from inputs that
//! reach every part of its reader rather than from bytes that fail at the magic. Nothing here is
//! committed: the seeds are made anew from the fixtures on every run.
//!
//! `cargo run --release --locked --example fuzz_seeds -- DIR` writes `DIR/TARGET/NAME` for the
//! targets `v8`, `hprof`, `phd`, `pickle` and `native`.

use anyhow::{Context, Result, ensure};
use heapgraph_analyzer::{EdgeRule, Options as AnalyzerOptions};
use heapgraph_import::{hgd, hprof, tracemalloc};
use heapgraph_model::HeapGraph;
use heapgraph_test_support::phd::PhdHeap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The header's full version in the PHD seeds, as OpenJ9 17 writes it on Linux.
const PHD_FULL_VERSION: &str = "JRE 17 Linux amd64-64-Bit Compressed References (fuzz seed)";

fn main() -> Result<()> {
    let out = PathBuf::from(
        std::env::args_os()
            .nth(1)
            .context("usage: fuzz_seeds DIR (where to write DIR/TARGET/NAME)")?,
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = |name: &str| root.join("fixtures").join(name);
    let mut seeds = Seeds { out, written: 0 };

    // V8: the 26 KB cut of a real Node.js 20 snapshot the V8 tests read (its escapes, surrogate
    // pairs and long string included); the 4 MB fixtures would slow every run a hundredfold.
    let v8_tiny = gunzip(&root.join("crates/import/tests/data/v8-tiny.heapsnapshot.gz"))?;
    seeds.write("v8", "v8-tiny.heapsnapshot", &v8_tiny)?;

    // HPROF: the smallest real dumps, 4-byte ids (a 32-bit JDK 6) and 8-byte ids (JDK 6's
    // hprof agent, compressed oops).
    let hprof_32 = gunzip(&fixture("java/real-world/hprof-32.bin.gz"))?;
    seeds.write("hprof", "hprof-32.hprof", &hprof_32)?;
    let hprof_64 = gunzip(&fixture(
        "java/real-world/sun_jdk6_31_hprofagent_compressedOops.hprof.gz",
    ))?;
    seeds.write("hprof", "jdk6-compressed-oops.hprof", &hprof_64)?;

    // PHD: no OpenJ9 runs here, so the seeds are the 32-bit HPROF dump's heap written as OpenJ9
    // writes it (test-support's writer, as the PHD tests do), 32- and 64-bit.
    let java_graph = hprof::import_slice(&hprof_32, &hprof::Options::default())
        .context("hprof-32.bin.gz, the PHD seeds' heap")?;
    let heap = PhdHeap::from_java_graph(&java_graph);
    seeds.write(
        "phd",
        "hprof-32-as-64-bit.phd",
        &heap.write(true, PHD_FULL_VERSION),
    )?;
    seeds.write(
        "phd",
        "hprof-32-as-32-bit.phd",
        &heap.write(false, PHD_FULL_VERSION),
    )?;

    // Pickles: tracemalloc dumps of CPython 3.11 and CUDA snapshots of torch on an H200.
    for name in ["before.tracemalloc", "limit1.tracemalloc"] {
        let bytes = read(&fixture("tracemalloc").join(name))?;
        seeds.write("pickle", name, &bytes)?;
    }
    for name in ["load_fp32", "load_fp16_after_convert"] {
        let bytes = gunzip(&fixture("torch-cuda").join(format!("{name}.pickle.gz")))?;
        seeds.write("pickle", &format!("{name}.pickle"), &bytes)?;
    }

    // .hgd: all three kinds of file. A heap graph with its stored analysis, as `convert` writes
    // it (images, from the V8 seed) and in plain columns (as the Python dumper writes them), and
    // without one (from the HPROF seed); an allocation snapshot (from the tracemalloc seed); the
    // recorder's real timeline.
    let v8_graph =
        heapgraph_import::v8::import(&v8_tiny[..], &Default::default()).context("the V8 seed")?;
    seeds.write(
        "hgd",
        "v8-tiny-analysed.hgd",
        &hgd_bytes(&v8_graph, true, Layout::Images)?,
    )?;
    seeds.write(
        "hgd",
        "v8-tiny-plain.hgd",
        &hgd_bytes(&v8_graph, true, Layout::Plain)?,
    )?;
    seeds.write(
        "hgd",
        "hprof-32.hgd",
        &hgd_bytes(&java_graph, false, Layout::Images)?,
    )?;
    let snapshot = tracemalloc::import_slice(&read(&fixture("tracemalloc/before.tracemalloc"))?)
        .context("the tracemalloc seed")?;
    let mut alloc_hgd = Vec::new();
    hgd::write_alloc_snapshot(&snapshot, &mut alloc_hgd)?;
    seeds.write("hgd", "tracemalloc-before.hgd", &alloc_hgd)?;
    seeds.write("hgd", "worker.hgt", &read(&fixture("timeline/worker.hgt"))?)?;

    ensure!(seeds.written > 0, "no seed written");
    Ok(())
}

/// Where the seeds go, and how many were written.
struct Seeds {
    out: PathBuf,
    written: usize,
}

impl Seeds {
    fn write(&mut self, target: &str, name: &str, bytes: &[u8]) -> Result<()> {
        let dir = self.out.join(target);
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {dir:?}"))?;
        let path = dir.join(name);
        std::fs::write(&path, bytes).with_context(|| format!("cannot write {path:?}"))?;
        self.written += 1;
        Ok(())
    }
}

/// How an `.hgd` seed holds its columns.
enum Layout {
    /// As images, as `convert` writes them.
    Images,
    /// As plain columns.
    Plain,
}

/// `graph` as an `.hgd` in `layout`, with the analysis `convert` stores when `analysed`.
fn hgd_bytes(graph: &HeapGraph, analysed: bool, layout: Layout) -> Result<Vec<u8>> {
    let stored = analysed.then(|| {
        let options = AnalyzerOptions {
            edge_rule: EdgeRule::for_runtime(graph.meta().runtime),
        };
        heapgraph_analyzer::analyze(graph, &options).into_stored(graph)
    });
    let mut bytes = Vec::new();
    match layout {
        Layout::Images => hgd::write_heap_graph(graph, stored.as_ref(), &mut bytes)?,
        Layout::Plain => hgd::write_heap_graph_plain(graph, stored.as_ref(), &mut bytes)?,
    }
    Ok(bytes)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {path:?}"))
}

fn gunzip(path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(&read(path)?[..])
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot gunzip {path:?}"))?;
    Ok(bytes)
}
