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

/// What the handlers share: the dump, read-only, and the answers rendered once.
pub(crate) struct Served {
    pub(crate) dump: Dumped,
    /// Queries that run at once, one per core: a query's scratch memory (a chain search's is
    /// O(V)) is then held by that many at most, however many clients ask.
    pub(crate) running: tokio::sync::Semaphore,
    /// Whether `--baseline` was given.
    pub(crate) has_baseline: bool,
    /// The baseline, until the comparison is rendered (then dropped: nothing else reads it).
    pub(crate) baseline: std::sync::Mutex<Option<Dumped>>,
    pub(crate) rendered: std::sync::OnceLock<Rendered>,
    /// The [`MAX_STRINGS`] first strings of both rankings, all (`[0]`) and duplicated (`[1]`),
    /// found by one pass on the first request: a request for fewer reads the first of them.
    pub(crate) strings: std::sync::OnceLock<[heapgraph_analyzer::StringsView; 2]>,
    /// Held while chains are merged, so that one merge runs at a time: a type's chains take
    /// scratch memory in proportion to its instances (a quarter of a gigabyte for the 6.4
    /// million `byte[]` of the large benchmark dump). The types with the most instances have
    /// theirs kept with the analysis before the server listens ([`Analysis::type_paths`]).
    pub(crate) merging: std::sync::Mutex<()>,
}

/// The answers that do not depend on the request, rendered once (`super::render`).
pub(crate) struct Rendered {
    pub(crate) summary: String,
    pub(crate) types: String,
    pub(crate) findings: String,
    /// `heapgraph.diff/1` against `--baseline`, when one was given.
    pub(crate) diff: Option<String>,
}

impl Served {
    /// The `paths` answer for the objects chosen by type and ids (as `paths`): kept with the
    /// analysis for the types with the most instances, else merged, one merge at a time. The
    /// chain parents are built behind the first answers (or stored in a converted dump); a
    /// request before then waits for them.
    fn merged_paths(&self, type_name: Option<String>, ids: Vec<String>, branches: usize) -> Answer {
        let chosen = crate::args::TargetArgs {
            type_name,
            ids,
            baseline: None,
            new: false,
        };
        let file = std::path::Path::new(&self.dump.info.file);
        crate::holding::paths_answer(
            &self.dump,
            file,
            &chosen,
            branches,
            ChainOrder::Explain,
            Some(&self.merging),
        )
        .map_err(|error| Refusal::missing(format!("{error:#}")))
    }

    /// The answers rendered once, rendered now if no thread has yet.
    pub(crate) fn rendered(&self) -> &Rendered {
        self.rendered.get_or_init(|| {
            let baseline = self
                .baseline
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            super::render(&self.dump, baseline.as_ref())
        })
    }
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
#[derive(Clone, Debug)]
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

/// One of the answers rendered once; waits (off the async workers, without a query slot:
/// rendering takes none) while they are being rendered.
async fn rendered(
    served: Arc<Served>,
    pick: impl FnOnce(&Rendered) -> Response + Send + 'static,
) -> Response {
    if let Some(rendered) = served.rendered.get() {
        return pick(rendered);
    }
    match tokio::task::spawn_blocking(move || pick(served.rendered())).await {
        Ok(response) => response,
        Err(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the request failed inside heapgraph; please report it",
        ),
    }
}

pub(crate) async fn summary(State(served): State<Arc<Served>>) -> Response {
    rendered(served, |r| json_response(StatusCode::OK, r.summary.clone())).await
}

pub(crate) async fn types(State(served): State<Arc<Served>>) -> Response {
    rendered(served, |r| json_response(StatusCode::OK, r.types.clone())).await
}

pub(crate) async fn findings(State(served): State<Arc<Served>>) -> Response {
    rendered(served, |r| {
        json_response(StatusCode::OK, r.findings.clone())
    })
    .await
}

pub(crate) async fn diff(State(served): State<Arc<Served>>) -> Response {
    if !served.has_baseline {
        return error(
            StatusCode::NOT_FOUND,
            "no baseline: start heapgraph serve with --baseline OLD_DUMP to compare",
        );
    }
    rendered(served, |r| match &r.diff {
        Some(diff) => json_response(StatusCode::OK, diff.clone()),
        None => error(
            StatusCode::NOT_FOUND,
            "no baseline: start heapgraph serve with --baseline OLD_DUMP to compare",
        ),
    })
    .await
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
        let view = dump.explorer.holders(
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

/// Children listed per node of a merged tree when the request does not say (as `paths`), and
/// the most it may ask.
pub(crate) const DEFAULT_BRANCHES: usize = crate::args::DEFAULT_ROWS;
pub(crate) const MAX_BRANCHES: usize = 200;

/// The merged paths from the roots to a set of objects (`heapgraph.paths/1`, as `paths`):
/// the instances of `type`, or the objects of `ids` (commas between them), or both.
pub(crate) async fn paths(
    State(served): State<Arc<Served>>,
    RawQuery(query): RawQuery,
) -> Response {
    answer(served, move |served| {
        let pairs = parameters(query.as_deref())?;
        let branches = count(&pairs, "branches", DEFAULT_BRANCHES, (1, MAX_BRANCHES))?;
        let type_name = parameter(&pairs, "type").map(str::to_owned);
        let ids: Vec<String> = parameter(&pairs, "ids")
            .map(|ids| {
                ids.split(',')
                    .filter(|id| !id.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if type_name.is_none() && ids.is_empty() {
            return Err(Refusal::bad(
                "say which objects: paths?type=NAME or paths?ids=ID,ID".into(),
            ));
        }
        served.merged_paths(type_name, ids, branches)
    })
    .await
}

/// Strings listed by `strings` when the request does not say, and the most it may ask.
pub(crate) const DEFAULT_STRINGS: usize = 100;
pub(crate) const MAX_STRINGS: usize = 1000;

/// The dump's strings by the memory their copies take (`heapgraph.strings/1`, as `strings`);
/// `duplicates=1` lists only the values held more than once.
pub(crate) async fn strings(
    State(served): State<Arc<Served>>,
    RawQuery(query): RawQuery,
) -> Response {
    answer(served, move |served| {
        let pairs = parameters(query.as_deref())?;
        let n = count(&pairs, "limit", DEFAULT_STRINGS, (1, MAX_STRINGS))?;
        let duplicates = match parameter(&pairs, "duplicates") {
            None | Some("0" | "false") => false,
            Some("1" | "true" | "") => true,
            Some(other) => {
                return Err(Refusal::bad(format!("duplicates={other:?}: give 1 or 0")));
            }
        };
        let dump = &served.dump;
        // The ranking is a total order, so the first n of the longest list are the first n.
        let rankings = served.strings.get_or_init(|| {
            let values = heapgraph_analyzer::StringValues::of(&dump.graph);
            let rankings = [false, true].map(|duplicates| values.ranked(duplicates, MAX_STRINGS));
            drop(values);
            super::hand_back_memory();
            rankings
        });
        let mut view = rankings[usize::from(duplicates)].clone();
        view.values.truncate(n);
        Ok(json::strings(&view, duplicates, &dump.info))
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
