//! `heapgraph serve` of a CUDA memory snapshot or a recording: the page is the report's own
//! section for it (the GPU view, or the timeline), and the API one answer, the JSON that
//! `heapgraph gpu FILE --timeline --format json` or `heapgraph summary REC --format json`
//! prints. Both are rendered once, at start: nothing in them depends on the request.

use crate::args::{DEFAULT_ROWS, OutputFormat, SiteArgs};
use crate::load::Evidence;
use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use heapgraph_report::html::{GpuSection, Report, TimelineSection};
use heapgraph_report::{DumpInfo, json};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

/// A snapshot or recording, rendered.
pub(crate) struct Recorded {
    /// The page, the report's section for it.
    page: String,
    /// The page's content security policy: the serve page's, with the page's inline style,
    /// script and style attributes allowed by their hashes (a report is one self-contained
    /// file; [`policy_for`]).
    policy: String,
    /// The one API answer: `gpu` or `timeline`.
    view: &'static str,
    json: String,
}

impl Recorded {
    /// Renders what `evidence` (read from `path`) shows; refuses what is neither a CUDA
    /// snapshot nor a recording.
    pub(crate) fn new(path: &Path, evidence: Evidence) -> anyhow::Result<Recorded> {
        let file = path.display().to_string();
        let (view, json, page) = match evidence {
            Evidence::Alloc(snapshot) if snapshot.cuda.is_some() => {
                let json = crate::alloc::gpu_of(
                    path,
                    &snapshot,
                    crate::alloc::GpuShape {
                        n: DEFAULT_ROWS,
                        by: None,
                        sites: &SiteArgs::default(),
                        timeline: true,
                    },
                    OutputFormat::Json,
                )?;
                let view = crate::report::gpu_view(&snapshot)?;
                let info = DumpInfo::for_alloc(&file, &snapshot.meta);
                let findings = heapgraph_analyzer::findings::gpu(&view);
                let page = heapgraph_report::html::report(&Report {
                    generated_at: None,
                    heap: None,
                    series: None,
                    gpu: Some(GpuSection {
                        info: &info,
                        view: &view,
                    }),
                    timeline: None,
                    sites: None,
                    findings: &findings,
                });
                ("gpu", json, page)
            }
            Evidence::Timeline(timeline) => {
                let view = heapgraph_analyzer::timeline::timeline(&timeline);
                let info = DumpInfo::for_timeline(&file, &timeline.meta);
                let findings: Vec<_> = heapgraph_analyzer::findings::timeline(&view)
                    .into_iter()
                    .collect();
                let json = json::timeline(&view, &info, &findings);
                let page = heapgraph_report::html::report(&Report {
                    generated_at: None,
                    heap: None,
                    series: None,
                    gpu: None,
                    timeline: Some(TimelineSection {
                        info: &info,
                        view: &view,
                    }),
                    sites: None,
                    findings: &findings,
                });
                ("timeline", json, page)
            }
            Evidence::Alloc(snapshot) => anyhow::bail!(
                "{file}: is a {} snapshot; `heapgraph serve` explores heap dumps, CUDA memory \
                 snapshots and recordings; `heapgraph top`, `diff` and `report` read this one",
                snapshot.meta.source.name()
            ),
            Evidence::Graph(_) => anyhow::bail!("{file}: is a heap dump, served by the explorer"),
        };
        let policy = policy_for(&page);
        Ok(Recorded {
            page,
            policy,
            view,
            json,
        })
    }
}

/// The serve page's policy with the page's inline `<style>` and `<script>` allowed by hash
/// (CSP level 2: `'sha256-…'` of the element's text), and its `style` attributes (a chart's
/// colours, a chain's indent) by theirs (`'unsafe-hashes'`, CSP level 3, which allows exactly
/// the attribute values hashed): nothing else inline.
fn policy_for(page: &str) -> String {
    let hash = |text: &str| {
        let digest = Sha256::digest(text.as_bytes());
        format!(
            "'sha256-{}'",
            base64::engine::general_purpose::STANDARD.encode(digest)
        )
    };
    let element = |open: &str, close: &str| {
        page.split_once(open)
            .and_then(|(_, rest)| rest.split_once(close))
            .map_or("", |(text, _)| text)
    };
    let mut attributes: Vec<&str> = page
        .split(" style=\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(value, _)| value))
        .collect();
    attributes.sort_unstable();
    attributes.dedup();
    let mut styles = hash(element("<style>", "</style>"));
    if !attributes.is_empty() {
        styles.push_str(" 'unsafe-hashes'");
        for value in attributes {
            styles.push(' ');
            styles.push_str(&hash(value));
        }
    }
    super::guard::CONTENT_SECURITY_POLICY
        .replacen(
            "script-src 'self'",
            &format!("script-src {}", hash(element("<script>", "</script>"))),
            1,
        )
        .replacen("style-src 'self'", &format!("style-src {styles}"), 1)
}

/// The routes: the page, its one answer, no icon, and a JSON 404 that names them for anything
/// else.
pub(crate) fn router(recorded: Recorded) -> Router {
    let recorded = Arc::new(recorded);
    let answer = format!("/api/v1/{}", recorded.view);
    let missing = format!(
        "this server shows a {}: its answer is {answer} (docs/api.md)",
        match recorded.view {
            "gpu" => "CUDA memory snapshot",
            _ => "recording",
        }
    );
    let page = Arc::clone(&recorded);
    let api = Arc::clone(&recorded);
    Router::new()
        .route("/", get(move || std::future::ready(page_response(&page))))
        // A report names no icon (it is a file); a browser asks the server for one.
        .route(
            "/favicon.ico",
            get(|| std::future::ready(StatusCode::NO_CONTENT)),
        )
        .route(
            &answer,
            get(move || {
                std::future::ready(super::api::json_response(StatusCode::OK, api.json.clone()))
            }),
        )
        .fallback(move || std::future::ready(super::api::error(StatusCode::NOT_FOUND, &missing)))
}

/// The page, with its own policy (the guard keeps a policy an answer set).
fn page_response(recorded: &Recorded) -> Response {
    let mut response = (StatusCode::OK, recorded.page.clone()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(policy) = HeaderValue::from_str(&recorded.policy) {
        headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    }
    response
}
