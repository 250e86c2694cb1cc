//! `heapgraph serve`: the dump loaded and analysed once, then explored from a browser through a
//! read-only JSON API (`api`) and one page embedded in the binary (`page/`), on the loopback,
//! behind a token (`guard`).

pub(crate) mod api;
mod guard;

use crate::args::{ReadArgs, ServeArgs};
use anyhow::Context;
use api::{Dumped, Served};
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
    let (dump, baseline) = rayon::join(
        || load(&args.file, &args.read),
        || args.baseline.as_deref().map(|path| load(path, &args.read)),
    );
    let dump = dump?;
    let baseline = baseline.transpose()?;
    let served = Arc::new(render(dump, baseline.as_ref()));

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
        axum::serve(listener, router(served, guard))
            .await
            .context("the server stopped")
    })?;
    Ok(String::new())
}

/// The routes, each behind the guard.
fn router(served: Arc<Served>, guard: Arc<guard::Guard>) -> Router {
    // The page says whether there is a comparison to show, so that it need not ask and be
    // refused.
    let has_baseline = if served.diff.is_some() { "yes" } else { "no" };
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

/// Analyses a loaded heap dump and indexes it for paging (also `heapgraph mcp`'s dumps).
pub(crate) fn explore(path: &Path, mut loaded: crate::load::Loaded) -> anyhow::Result<Dumped> {
    let analysis = loaded.analyze(false)?;
    let spinner = crate::load::spinner("indexing for the explorer");
    let explorer = Explorer::new(&loaded.graph, &analysis);
    spinner.finish_and_clear();
    let info = DumpInfo::new(&path.display().to_string(), loaded.graph.meta());
    Ok(Dumped {
        graph: loaded.graph,
        analysis,
        explorer,
        info,
    })
}

/// The answers that do not depend on the request, rendered once.
fn render(dump: Dumped, baseline: Option<&Dumped>) -> Served {
    let graph = &dump.graph;
    let analysis = &dump.analysis;
    let view = heapgraph_analyzer::summary(graph, analysis);
    let suspects = heapgraph_analyzer::suspects(
        graph,
        analysis,
        heapgraph_analyzer::DEFAULT_SUSPECT_THRESHOLD,
    );
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
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    Served {
        dump,
        running: tokio::sync::Semaphore::new(cores),
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
