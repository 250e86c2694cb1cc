//! The read-only API under `/api/v1/`: each answer is one of the CLI's JSON schemas, rendered
//! by `heapgraph_report::json` from the analyzer's views (docs/api.md lists them). Answers that
//! do not depend on the request (summary, types, findings, diff) are rendered once at start.

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use heapgraph_analyzer::explore::{Explorer, Page};
use heapgraph_analyzer::{Analysis, ChainOrder};
use heapgraph_model::{HeapGraph, NodeId};
use heapgraph_report::{DumpInfo, json};
use std::sync::Arc;

/// Items per page when the request does not say.
pub(crate) const DEFAULT_LIMIT: usize = 100;
/// The most items a page may hold.
pub(crate) const MAX_LIMIT: usize = 1000;
/// Chains `holders` lists when the request does not say (as `who-holds`), and the most it
/// may ask.
pub(crate) const DEFAULT_CHAINS: usize = 3;
pub(crate) const MAX_CHAINS: usize = 50;

/// One dump, loaded and analysed, with what the API renders from it.
pub(crate) struct Dumped {
    pub(crate) graph: HeapGraph,
    pub(crate) analysis: Analysis,
    pub(crate) explorer: Explorer,
    pub(crate) info: DumpInfo,
}

/// What the handlers share: the dump (and its baseline), read-only, and the answers rendered
/// at start.
pub(crate) struct Served {
    pub(crate) dump: Dumped,
    /// Queries that run at once, one per core: a query's scratch memory (a chain search's is
    /// O(V)) is then held by that many at most, however many clients ask.
    pub(crate) running: tokio::sync::Semaphore,
    pub(crate) summary: String,
    pub(crate) types: String,
    pub(crate) findings: String,
    /// `heapgraph.diff/1` against `--baseline`, when one was given.
    pub(crate) diff: Option<String>,
}

/// An answer: a JSON body with its status.
pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    response
}

/// A `heapgraph.error/1` answer.
pub(crate) fn error(status: StatusCode, message: &str) -> Response {
    json_response(status, json::error(message))
}

/// A request the API refuses, with its status and message.
#[derive(Debug)]
pub(crate) struct Refusal(StatusCode, String);

impl Refusal {
    /// What the refusal says.
    pub(crate) fn message(&self) -> &str {
        &self.1
    }
    fn bad(message: String) -> Refusal {
        Refusal(StatusCode::BAD_REQUEST, message)
    }
    fn missing(message: String) -> Refusal {
        Refusal(StatusCode::NOT_FOUND, message)
    }
}

type Answer = Result<String, Refusal>;

/// Runs `answer` off the async workers (a page of a large type scans every object), and turns
/// its result into a response.
async fn answer(
    served: Arc<Served>,
    answer: impl FnOnce(&Served) -> Answer + Send + 'static,
) -> Response {
    let Ok(_permit) = served.running.acquire().await else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
    };
    let shared = Arc::clone(&served);
    let result = tokio::task::spawn_blocking(move || answer(&shared)).await;
    match result {
        Ok(Ok(body)) => json_response(StatusCode::OK, body),
        Ok(Err(Refusal(status, message))) => error(status, &message),
        Err(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the request failed inside heapgraph; please report it",
        ),
    }
}

/// The query's parameters, decoded; a malformed query is refused.
fn parameters(query: Option<&str>) -> Result<Vec<(String, String)>, Refusal> {
    let mut pairs = Vec::new();
    for pair in query
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
    {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        pairs.push((decode(name)?, decode(value)?));
    }
    Ok(pairs)
}

/// Percent-decoding of a query part (`+` is a space).
fn decode(text: &str) -> Result<String, Refusal> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'+' => out.push(b' '),
            b'%' => {
                let byte = text
                    .get(at + 1..at + 3)
                    .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                    .ok_or_else(|| Refusal::bad(format!("bad percent escape in {text:?}")))?;
                out.push(byte);
                at += 2;
            }
            byte => out.push(byte),
        }
        at += 1;
    }
    String::from_utf8(out).map_err(|_| Refusal::bad(format!("{text:?} is not UTF-8 once decoded")))
}

fn parameter<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// A count parameter: absent is `default`, else a whole number from `least` to `most`.
fn count(
    pairs: &[(String, String)],
    name: &str,
    default: usize,
    (least, most): (usize, usize),
) -> Result<usize, Refusal> {
    let Some(text) = parameter(pairs, name) else {
        return Ok(default);
    };
    match text.parse::<usize>() {
        Ok(value) if (least..=most).contains(&value) => Ok(value),
        _ => Err(Refusal::bad(format!(
            "{name}={text:?}: give a whole number from {least} to {most}"
        ))),
    }
}

/// `offset` and `limit`.
fn page(pairs: &[(String, String)]) -> Result<Page, Refusal> {
    Ok(Page {
        offset: count(pairs, "offset", 0, (0, usize::MAX))?,
        limit: count(pairs, "limit", DEFAULT_LIMIT, (1, MAX_LIMIT))?,
    })
}

/// Refuses an offset past the end of a list of `total`.
pub(crate) fn within(page: Page, total: u64) -> Result<(), Refusal> {
    if page.offset as u64 > total {
        return Err(Refusal::bad(format!(
            "offset={} is past the end of the list ({total} items)",
            page.offset
        )));
    }
    Ok(())
}

/// The node an id in a path names: `root`, or a runtime object id (`12345`, `@12345`,
/// `0x3039`).
pub(crate) fn node(dump: &Dumped, text: &str) -> Result<NodeId, Refusal> {
    if text == "root" {
        return Ok(dump.graph.root());
    }
    let id =
        crate::verbs::parse_object_id(text).map_err(|error| Refusal::bad(error.to_string()))?;
    dump.explorer.find(&dump.graph, id).ok_or_else(|| {
        Refusal::missing(format!(
            "no object has id {}",
            dump.graph.meta().runtime.format_object_id(id)
        ))
    })
}

pub(crate) async fn summary(State(served): State<Arc<Served>>) -> Response {
    json_response(StatusCode::OK, served.summary.clone())
}

pub(crate) async fn types(State(served): State<Arc<Served>>) -> Response {
    json_response(StatusCode::OK, served.types.clone())
}

pub(crate) async fn findings(State(served): State<Arc<Served>>) -> Response {
    json_response(StatusCode::OK, served.findings.clone())
}

pub(crate) async fn diff(State(served): State<Arc<Served>>) -> Response {
    match &served.diff {
        Some(diff) => json_response(StatusCode::OK, diff.clone()),
        None => error(
            StatusCode::NOT_FOUND,
            "no baseline: start heapgraph serve with --baseline OLD_DUMP to compare",
        ),
    }
}

pub(crate) async fn instances(
    State(served): State<Arc<Served>>,
    RawQuery(query): RawQuery,
) -> Response {
    answer(served, move |served| {
        let pairs = parameters(query.as_deref())?;
        let page = page(&pairs)?;
        let Some(type_name) = parameter(&pairs, "type") else {
            return Err(Refusal::bad("give the type: instances?type=NAME".into()));
        };
        let dump = &served.dump;
        let view = dump
            .explorer
            .instances(&dump.graph, &dump.analysis, type_name, page)
            .filter(|view| view.total > 0)
            .ok_or_else(|| Refusal::missing(format!("no object has type {type_name:?}")))?;
        within(page, view.total)?;
        Ok(json::instances(&view, &dump.info))
    })
    .await
}

pub(crate) async fn object(
    State(served): State<Arc<Served>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    references(served, id, query, false).await
}

pub(crate) async fn referrers(
    State(served): State<Arc<Served>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    references(served, id, query, true).await
}

/// An object's references out (its fields and values) or, `incoming`, in (its referrers),
/// a page at a time.
async fn references(
    served: Arc<Served>,
    id: String,
    query: Option<String>,
    incoming: bool,
) -> Response {
    answer(served, move |served| {
        let page = page(&parameters(query.as_deref())?)?;
        let dump = &served.dump;
        let node = node(dump, &id)?;
        let view = if incoming {
            dump.explorer
                .referrers(&dump.graph, &dump.analysis, node, page)
        } else {
            dump.explorer
                .references(&dump.graph, &dump.analysis, node, page)
        };
        within(page, view.total)?;
        Ok(json::references(&view, incoming, &dump.info))
    })
    .await
}

pub(crate) async fn children(
    State(served): State<Arc<Served>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    answer(served, move |served| {
        let page = page(&parameters(query.as_deref())?)?;
        let dump = &served.dump;
        let node = node(dump, &id)?;
        let view = dump
            .explorer
            .children(&dump.graph, &dump.analysis, node, page);
        within(page, view.total)?;
        Ok(json::children(&view, &dump.info))
    })
    .await
}

pub(crate) async fn holders(
    State(served): State<Arc<Served>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    answer(served, move |served| {
        let pairs = parameters(query.as_deref())?;
        let n_paths = count(&pairs, "paths", DEFAULT_CHAINS, (1, MAX_CHAINS))?;
        let dump = &served.dump;
        let node = node(dump, &id)?;
        let view = heapgraph_analyzer::who_holds(
            &dump.graph,
            &dump.analysis,
            node,
            n_paths,
            ChainOrder::Explain,
        );
        Ok(json::holders(&view, &dump.info))
    })
    .await
}

pub(crate) async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "no such endpoint; docs/api.md lists them",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode_and_bad_counts_are_refused() {
        let pairs = parameters(Some("type=java.util.HashMap%24Node&offset=5&x=a+b"))
            .expect("a well-formed query");
        assert_eq!(parameter(&pairs, "type"), Some("java.util.HashMap$Node"));
        assert_eq!(parameter(&pairs, "x"), Some("a b"));
        assert_eq!(
            page(&pairs).ok(),
            Some(Page {
                offset: 5,
                limit: DEFAULT_LIMIT
            })
        );
        for bad in [
            "limit=0",
            "limit=1001",
            "offset=-1",
            "offset=x",
            "limit=1e3",
        ] {
            let pairs = parameters(Some(bad)).expect("decodes");
            assert!(page(&pairs).is_err(), "{bad}");
        }
        assert!(parameters(Some("type=%zz")).is_err());
        assert!(parameters(Some("type=%ff")).is_err());
        assert!(
            within(
                Page {
                    offset: 3,
                    limit: 1
                },
                3
            )
            .is_ok()
        );
        assert!(
            within(
                Page {
                    offset: 4,
                    limit: 1
                },
                3
            )
            .is_err()
        );
    }
}
