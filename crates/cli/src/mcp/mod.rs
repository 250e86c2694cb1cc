//! `heapgraph mcp`: a Model Context Protocol server on stdin and stdout (the official SDK,
//! `rmcp`), for AI agents. Its tools (`tools`) answer with the CLI's JSON schemas, from the same
//! analyzer views and renderers as the verbs and `heapgraph serve`. Dumps are opened by path,
//! loaded and analysed once, and kept under a short id (`dumps`), a bounded number of them.

mod dumps;
mod tools;

use crate::args::McpArgs;
use anyhow::Context;
use dumps::Dumps;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use std::sync::Arc;

/// Serves one MCP session on stdin and stdout, until the client closes it.
pub(crate) fn mcp(args: &McpArgs) -> anyhow::Result<String> {
    // A session holds its dumps' indexes for as long as it runs, and reads a little of them
    // per answer.
    heapgraph_model::file_pages::keep_indexes_in_files();
    let server = Server {
        dumps: Arc::new(Dumps::new(usize::from(args.keep), args.read)),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the server's threads")?;
    runtime.block_on(async move {
        let session = server
            .serve(rmcp::transport::stdio())
            .await
            .context("the MCP session did not start")?;
        session.waiting().await.context("the MCP session failed")?;
        anyhow::Ok(())
    })?;
    // Nothing for `main` to print: stdout carried the protocol's messages only.
    Ok(String::new())
}

/// The MCP server: the dumps it keeps open, shared by the requests in flight.
#[derive(Clone)]
struct Server {
    dumps: Arc<Dumps>,
}

/// What the server tells a client at the start, for the agent's context.
const INSTRUCTIONS: &str = "heapgraph analyses heap dumps offline (V8 .heapsnapshot, Java \
HPROF, IBM .phd, Python .hgd, tracemalloc dumps, PyTorch CUDA memory snapshots, .hgt \
recordings). Start with open_dump on a file (or pass its path as `dump` to any tool), then \
summary and findings; follow a finding with who_holds or paths to see the chain of references \
that keeps the memory alive, and dominator_children or object to walk the graph. Answers are \
JSON documents whose `schema` names their shape (docs/json.md); lists are short by default and \
take `limit`.";

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("heapgraph", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = tools::find(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("no tool is named {:?}; tools/list lists them", request.name),
                None,
            ));
        };
        let arguments = request.arguments.unwrap_or_default();
        let dumps = Arc::clone(&self.dumps);
        // Loading, analysing and querying a dump is CPU-bound work, off the async workers.
        let answer = tokio::task::spawn_blocking(move || (tool.run)(&dumps, arguments)).await;
        let result = match answer {
            Ok(Ok(json)) => CallToolResult::success(vec![ContentBlock::text(json)]),
            Ok(Err(error)) => CallToolResult::error(vec![ContentBlock::text(message(&error))]),
            Err(_) => CallToolResult::error(vec![ContentBlock::text(
                "the request failed inside heapgraph; please report it",
            )]),
        };
        Ok(result.into())
    }
}

/// An error as the CLI prints it (without its `heapgraph: ` prefix): the message and its
/// causes.
fn message(error: &anyhow::Error) -> String {
    let mut message = error.to_string();
    for cause in error.chain().skip(1) {
        message.push_str(&format!(": {cause}"));
    }
    message
}
