//! `heapgraph serve`: the dump loaded and analysed once, then explored from a browser through a
//! read-only JSON API (`api`) and one page embedded in the binary (`page/`), on the loopback,
//! behind a token (`guard`). A CUDA memory snapshot or a recording is shown as its report
//! section, with its one answer (`recorded`).

pub(crate) mod api;
mod guard;
mod recorded;

use crate::args::{ReadArgs, ServeArgs};
use crate::load::Evidence;
use anyhow::{Context, bail};
use api::{Dumped, Rendered, Served};
use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use heapgraph_analyzer::RankBy;
use heapgraph_analyzer::explore::Explorer;
use heapgraph_report::{DumpInfo, json};
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

/// Loads and analyses the dumps, then serves until the process is stopped.
pub(crate) fn serve(args: &ServeArgs) -> anyhow::Result<String> {
    // The server holds the explorer's indexes for as long as it runs, and reads a few pages of
    // them per answer: in scratch files, only those pages are in memory.
    heapgraph_model::file_pages::keep_indexes_in_files();
    let (evidence, baseline) = rayon::join(
        || crate::load::load_evidence(&args.file, &args.read),
        || args.baseline.as_deref().map(|path| load(path, &args.read)),
    );
    let loaded = match evidence? {
        Evidence::Graph(loaded) => *loaded,
        other => {
            if args.baseline.is_some() {
                bail!(
                    "{}: --baseline compares heap dumps; `heapgraph diff` compares snapshots",
                    args.file.display()
                );
            }
            let recorded = recorded::Recorded::new(&args.file, other)?;
            return listen(args, |guard| {
                recorded::router(recorded)
                    .layer(axum::middleware::from_fn_with_state(guard, guard::check))
            });
        }
    };
    let dump = explore(&args.file, loaded)?;
    let baseline = baseline.transpose()?;
    // The merged paths of the types with the most instances are part of the analysis the
    // server answers from (stored in a converted dump): merged now, they never make a `paths`
    // request wait seconds. The dump's columns are in files by now, so memory is to spare for
    // a merge per core.
    dump.analysis.type_paths(
        &dump.graph,
        heapgraph_analyzer::merged_paths::Merges::OnePerCore,
    );
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let served = Arc::new(Served {
        dump,
        running: tokio::sync::Semaphore::new(cores),
        has_baseline: baseline.is_some(),
        baseline: std::sync::Mutex::new(baseline),
        rendered: std::sync::OnceLock::new(),
        strings: Default::default(),
        merging: Default::default(),
    });
    // What the views read is built behind the first answers, on a thread of its own: the
    // answers rendered once (the suspects' chains read the chain parents), then the
    // explorer's indexes (the chain index `holders` searches by among them). A view that needs
    // one before it is ready waits for that one. After each step the memory it freed and the
    // pages it read of what is kept in files go back to the system (`hand_back_memory`): on
    // the large benchmark dump the warm server holds about 150 MB, where it held 2 GB.
    let warming = Arc::clone(&served);
    std::thread::spawn(move || {
        let dump = &warming.dump;
        warming.rendered();
        hand_back_memory();
        dump.explorer.warm(&dump.graph, &dump.analysis);
        hand_back_memory();
    });
    listen(args, |guard| router(served, guard))
}

/// Hands back what the server holds in memory but does not need there: the allocator's free
/// pages ([`crate::load::release_freed_memory`]), and the resident pages of what is kept in
/// scratch files or read from a `.hgd`, which the page cache keeps and the next answer that
/// reads them maps again. Called once the dumps are loaded: nothing writes to their columns
/// from then on, which dropping a `.hgd`'s unwritten pages needs.
pub(crate) fn hand_back_memory() {
    crate::load::release_freed_memory();
    crate::allocator::forget_resident_pages();
    crate::allocator::forget_unwritten_file_pages();
}

/// Binds the loopback, prints the URL with a fresh token, and serves `routes` until the
/// process is stopped.
fn listen(
    args: &ServeArgs,
    routes: impl FnOnce(Arc<guard::Guard>) -> Router,
) -> anyhow::Result<String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_io()
        .build()
        .context("cannot start the server's threads")?;
    runtime.block_on(async move {
        let listener =
            tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, args.port)))
                .await
                .with_context(|| format!("cannot listen on 127.0.0.1:{}", args.port))?;
        let port = listener.local_addr()?.port();
        let guard = Arc::new(guard::Guard::new(port)?);
        let url = format!("http://127.0.0.1:{port}/?token={}", guard.token);
        {
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "{url}")?;
            stdout.flush()?;
        }
        if args.open {
            open_browser(&url);
        }
        axum::serve(listener, routes(guard))
            .await
            .context("the server stopped")
    })?;
    Ok(String::new())
}

/// The routes, each behind the guard.
fn router(served: Arc<Served>, guard: Arc<guard::Guard>) -> Router {
    // The page says whether there is a comparison to show, so that it need not ask and be
    // refused.
    let has_baseline = if served.has_baseline { "yes" } else { "no" };
    let page: &'static str = PAGE
        .replacen("\"BASELINE\"", &format!("\"{has_baseline}\""), 1)
        .leak();
    Router::new()
        .route(
            "/",
            get(move || async move { asset(page, "text/html; charset=utf-8") }),
        )
        .route(
            "/app.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/style.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
        .route("/api/v1/summary", get(api::summary))
        .route("/api/v1/types", get(api::types))
        .route("/api/v1/findings", get(api::findings))
        .route("/api/v1/diff", get(api::diff))
        .route("/api/v1/instances", get(api::instances))
        .route("/api/v1/object/{id}", get(api::object))
        .route("/api/v1/referrers/{id}", get(api::referrers))
        .route("/api/v1/children/{id}", get(api::children))
        .route("/api/v1/holders/{id}", get(api::holders))
        .route("/api/v1/paths", get(api::paths))
        .route("/api/v1/strings", get(api::strings))
        .fallback(api::not_found)
        .with_state(served)
        .layer(axum::middleware::from_fn_with_state(guard, guard::check))
}

const PAGE: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/style.css");

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Reads a heap dump and builds everything its pages read.
fn load(path: &Path, read: &ReadArgs) -> anyhow::Result<Dumped> {
    explore(path, crate::load::load(path, read)?)
}

/// Analyses a loaded heap dump, with an explorer whose indexes are built on first use (also
/// `heapgraph mcp`'s dumps).
pub(crate) fn explore(path: &Path, mut loaded: crate::load::Loaded) -> anyhow::Result<Dumped> {
    let mut analysis =
        loaded.analyze_before_chains(false, heapgraph_analyzer::ViewDistances::Shown)?;
    // A dump parsed here is in anonymous memory, which the kernel cannot reclaim without swap,
    // for as long as the server runs: moved into scratch files, only the pages the answers
    // read are in memory, and the kernel may drop them again. A converted dump's columns are
    // its file's pages already.
    if !crate::load::is_hgd(path).unwrap_or(false) {
        loaded.graph.page_out_columns();
        analysis.page_out_columns();
        // Not `hand_back_memory`: `mcp` may be reading another dump beside this one.
        crate::load::release_freed_memory();
        crate::allocator::forget_resident_pages();
    }
    let explorer = Explorer::new();
    let info = DumpInfo::new(&path.display().to_string(), loaded.graph.meta());
    Ok(Dumped {
        graph: loaded.graph,
        analysis,
        explorer,
        info,
    })
}

/// The answers that do not depend on the request, rendered once.
pub(crate) fn render(dump: &Dumped, baseline: Option<&Dumped>) -> Rendered {
    let graph = &dump.graph;
    let analysis = &dump.analysis;
    // One walk of the dominator tree for both (this runs on a blocking task, not rayon's).
    let (view, suspects) = heapgraph_analyzer::summary_and_suspects(
        graph,
        analysis,
        None,
        heapgraph_analyzer::DEFAULT_SUSPECT_THRESHOLD,
    )
    .expect("no kind is asked");
    let found = heapgraph_analyzer::findings::accumulations(&suspects);
    let summary = json::summary(&view, &dump.info, &found, Some(crate::args::DEFAULT_ROWS));
    let types = json::summary(&view, &dump.info, &found, None);
    let drops = heapgraph_analyzer::big_drops(
        graph,
        analysis,
        heapgraph_analyzer::DEFAULT_SUSPECT_THRESHOLD,
        heapgraph_analyzer::DEFAULT_MIN_DROP,
    );
    let findings = json::suspects(&suspects, &drops, &dump.info, &found);
    let diff = baseline.map(|old| {
        let view = heapgraph_analyzer::diff::diff_types(
            (&old.graph, &old.analysis),
            (graph, analysis),
            RankBy::Retained,
        );
        let found: Vec<_> = heapgraph_analyzer::findings::growth(&view)
            .into_iter()
            .collect();
        json::graph_diff(&view, &dump.info, &old.info, &found, RankBy::Retained, None)
    });
    Rendered {
        summary,
        types,
        findings,
        diff,
    }
}

/// Starts the desktop's browser on `url`; a failure is a note, the URL is printed anyway.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(error) = std::process::Command::new(opener)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        let _ = writeln!(
            std::io::stderr(),
            "heapgraph: cannot start a browser ({opener}: {error}); open the URL above"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heapgraph_analyzer::ChainOrder;

    /// Objects whose holders are compared per fixture, every n-th by node order, and as many
    /// of those that retain the most: each oracle answer is two searches of the whole graph
    /// (400 and 100 took over 12 minutes, 8 and 8 take a minute, most of it on one fixture;
    /// the proptest in the analyzer covers breadth).
    const MAX_COMPARED: usize = 8;

    /// The explorer's holders (chains searched by distances computed once per dump) must be
    /// `who_holds`' own answer (the oracle: the same search with its distances computed
    /// afresh for each object), on real dumps of each runtime.
    #[test]
    fn holders_from_the_chain_index_are_who_holds_on_the_fixtures() {
        // The binary's package is the workspace's root.
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let dumps = [
            "java/references.hprof.gz",
            "java/real-world/sun_jdk6_31_hprofagent_compressedOops.hprof.gz",
            "java/real-world/leak_service_binder_ignored.hprof.gz",
            "v8/app-after.heapsnapshot.gz",
            "v8/julia-shaped.heapsnapshot.gz",
            "v8/node8-symbols.heapsnapshot.gz",
        ];
        for name in dumps {
            let path = fixtures.join(name);
            let dumped = explore(
                &path,
                crate::load::load(&path, &ReadArgs::default()).expect("the fixture loads"),
            )
            .expect("the fixture is analysed");
            let (graph, analysis) = (&dumped.graph, &dumped.analysis);
            // The oracle's analysis never builds the index: its chains search afresh.
            let oracle = heapgraph_analyzer::analyze(
                graph,
                &heapgraph_analyzer::Options {
                    edge_rule: analysis.edge_rule.clone(),
                },
            );
            let stride = graph.node_count().div_ceil(MAX_COMPARED).max(1);
            let mut chosen: Vec<_> = graph.nodes().step_by(stride).collect();
            let mut biggest: Vec<_> = graph.nodes().collect();
            biggest.sort_by_key(|&node| {
                std::cmp::Reverse(analysis.dominators.retained_size.get(node.index()))
            });
            chosen.extend(biggest.into_iter().take(MAX_COMPARED));
            let mut strong = 0;
            let answers = 2 * chosen.len();
            for node in chosen {
                for k in [1, 3] {
                    let expected =
                        heapgraph_analyzer::who_holds(graph, &oracle, node, k, ChainOrder::Explain);
                    let indexed =
                        dumped
                            .explorer
                            .holders(graph, analysis, node, k, ChainOrder::Explain);
                    strong += usize::from(!expected.paths.is_empty());
                    assert_eq!(
                        indexed,
                        expected,
                        "{name}: holders of node {}",
                        node.index()
                    );
                }
            }
            assert!(
                strong * 2 > answers,
                "{name}: only {strong} of {answers} answers had chains"
            );
        }
    }
}
