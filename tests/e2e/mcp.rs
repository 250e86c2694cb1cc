//! `heapgraph mcp` from outside: a session driven by the official MCP Python SDK (the peers
//! tier; `tests/e2e/mcp_client.py` checks the answers against what `fixtures/java/
//! make_fixtures.py` planted), and the protocol on the wire (every line on stdout a JSON-RPC
//! message, errors as tool errors, the server gone when the client closes stdin).

use crate::support::{fixture, path_str, repo_root, tool};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs python3 with the mcp package (tests/setup.sh)"
)]
fn the_official_python_client_finds_the_planted_leaks_holder() {
    let output = tool("python3")
        .arg(repo_root().join("tests/e2e/mcp_client.py"))
        .arg(env!("CARGO_BIN_EXE_heapgraph"))
        .arg(repo_root())
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("No module named 'mcp'"),
        "the MCP Python SDK is missing: run tests/setup.sh, which installs it (pip install mcp)"
    );
    assert!(
        output.status.success(),
        "the MCP session failed:\n{stderr}\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("every check held"),
        "the client did not finish its checks"
    );
}

/// Requests written one a line to `heapgraph mcp ARGS`, then stdin closed: the answers, in
/// the order of the requests, and the exit status.
fn exchange(args: &[&str], requests: &[Value]) -> (Vec<Value>, std::process::ExitStatus) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_heapgraph"))
        .arg("mcp")
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the heapgraph binary runs");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let expected = requests.iter().filter(|r| r.get("id").is_some()).count();
    let mut lines = stdout.lines();
    let mut answers = Vec::new();
    // One request at a time, each answered before the next: the order of answers is then the
    // order of requests.
    for request in requests {
        writeln!(stdin, "{request}").expect("the server reads");
        stdin.flush().expect("the server reads");
        if request.get("id").is_none() {
            continue;
        }
        let line = lines
            .next()
            .expect("an answer before stdout closes")
            .expect("a line");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("stdout holds a line that is not JSON-RPC: {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        answers.push(message);
    }
    drop(stdin);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.is_empty(), "stdout after the answers: {rest:?}");
    assert_eq!(answers.len(), expected);
    (answers, child.wait().expect("the server exits"))
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "heapgraph-e2e", "version": "1"}}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

/// The text of a tool's answer, and whether it is an error.
fn text(answer: &Value) -> (&str, bool) {
    let result = &answer["result"];
    (
        result["content"][0]["text"]
            .as_str()
            .expect("a text answer"),
        result["isError"].as_bool().expect("isError"),
    )
}

#[test]
fn the_protocol_holds_on_stdout_and_failures_are_tool_errors() {
    let java = fixture("java/default.hprof.gz");
    let tracemalloc = fixture("tracemalloc/after.tracemalloc");
    let (answers, status) = exchange(
        &[],
        &[
            initialize(),
            initialized(),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            call(3, "summary", json!({"dump": "d1"})),
            call(4, "open_dump", json!({"path": path_str(&java)})),
            call(5, "top", json!({"dump": "d1", "by": "traceback"})),
            call(
                6,
                "summary",
                json!({"dump": path_str(&tracemalloc), "limit": 2}),
            ),
            call(
                7,
                "who_holds",
                json!({"dump": path_str(&tracemalloc), "type": "x"}),
            ),
            call(8, "summary", json!({"dump": "d1", "limt": 3})),
            call(9, "no_such_tool", json!({})),
            call(10, "dominator_children", json!({"dump": "d1", "limit": 2})),
        ],
    );
    assert!(status.success(), "the server exits 0 when stdin closes");
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "heapgraph");
    let tools = answers[1]["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 10);
    for tool in tools {
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
    }
    // An id no dump has yet.
    let (message, error) = text(&answers[2]);
    assert!(
        error && message.starts_with("no dump is open as d1"),
        "{message}"
    );
    let (opened, error) = text(&answers[3]);
    assert!(!error, "{opened}");
    let opened: Value = serde_json::from_str(opened).expect("JSON");
    assert_eq!(
        (&opened["id"], &opened["holds"]),
        (&json!("d1"), &json!("heap-dump"))
    );
    // The CLI's own refusal: traceback groups allocation snapshots.
    let (message, error) = text(&answers[4]);
    assert!(
        error && message.contains("--by traceback groups allocation snapshots"),
        "{message}"
    );
    // A path opens the file, whatever it holds: a tracemalloc dump's summary is its sites.
    let (sites, error) = text(&answers[5]);
    assert!(!error, "{sites}");
    let sites: Value = serde_json::from_str(sites).expect("JSON");
    assert_eq!(sites["schema"], "heapgraph.sites/1");
    assert_eq!(sites["rows"].as_array().map(Vec::len), Some(2));
    let (message, error) = text(&answers[6]);
    assert!(
        error && message.contains("holds allocations by stack (a tracemalloc snapshot)"),
        "{message}"
    );
    let (message, error) = text(&answers[7]);
    assert!(error && message.contains("limt"), "{message}");
    // An unknown tool is a protocol error; the session goes on.
    assert_eq!(answers[8]["error"]["code"], -32602, "{}", answers[8]);
    let (children, error) = text(&answers[9]);
    assert!(!error, "{children}");
    let children: Value = serde_json::from_str(children).expect("JSON");
    assert_eq!(children["schema"], "heapgraph.children/1");
    assert_eq!(children["children"].as_array().map(Vec::len), Some(2));
}

/// The JSON document of a tool's answer that must succeed.
fn document(answer: &Value) -> Value {
    let (body, error) = text(answer);
    assert!(!error, "{body}");
    serde_json::from_str(body).expect("JSON")
}

/// `--keep 2`: two allocation snapshots open and compared, then a third closes the first. The
/// figures are tracemalloc's own (`fixtures/tracemalloc/expected.json`, written by the Python
/// that took the snapshots) and torch's (`fixtures/torch-cuda/expected.json`, an independent
/// reading of the pickle).
#[test]
fn dumps_are_kept_up_to_keep_and_diff_and_gpu_read_them() {
    let read = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(fixture(name)).expect("expected.json")).expect("JSON")
    };
    let tracemalloc = read("tracemalloc/expected.json");
    let cuda = &read("torch-cuda/expected.json")["files"]["oom_batch_growth"];
    let before = fixture("tracemalloc/before.tracemalloc");
    let after = fixture("tracemalloc/after.tracemalloc");
    let oom = fixture("torch-cuda/oom_batch_growth.pickle.gz");
    let (answers, status) = exchange(
        &["--keep", "2"],
        &[
            initialize(),
            initialized(),
            call(2, "open_dump", json!({"path": path_str(&before)})),
            call(3, "open_dump", json!({"path": path_str(&after)})),
            call(4, "diff", json!({"old": "d1", "new": "d2", "limit": 1})),
            call(5, "gpu", json!({"dump": path_str(&oom)})),
            call(6, "summary", json!({"dump": "d1"})),
            call(7, "open_dump", json!({"path": path_str(&after)})),
            call(8, "gpu", json!({"dump": "d2"})),
        ],
    );
    assert!(status.success());
    let (first, second) = (document(&answers[1]), document(&answers[2]));
    assert_eq!((&first["id"], &second["id"]), (&json!("d1"), &json!("d2")));
    assert_eq!(first["holds"], "allocations");
    assert_eq!(first["kept"], 2);
    let diff = document(&answers[3]);
    assert_eq!(diff["schema"], "heapgraph.sites/1");
    let dumps = &tracemalloc["dumps"];
    let total = |field: &str| dumps["after"][field].as_i64().expect("a count");
    let earlier = |field: &str| dumps["before"][field].as_i64().expect("a count");
    assert_eq!(diff["total"]["size"].as_i64(), Some(total("total_size")));
    assert_eq!(
        diff["total"]["size_diff"].as_i64(),
        Some(total("total_size") - earlier("total_size"))
    );
    assert_eq!(
        diff["total"]["count_diff"].as_i64(),
        Some(total("traces") - earlier("traces"))
    );
    assert_eq!(diff["rows"].as_array().map(Vec::len), Some(1));
    let gpu = document(&answers[4]);
    assert_eq!(gpu["schema"], "heapgraph.gpu/1");
    for field in [
        "allocated_bytes",
        "reserved_bytes",
        "active_blocks",
        "largest_free_block",
    ] {
        assert_eq!(gpu[field], cuda[field], "{field}");
    }
    assert_eq!(gpu["largest_blocks"].as_array().map(Vec::len), Some(10));
    // The CUDA snapshot was the third: the first, used least recently, is closed.
    let (message, error) = text(&answers[5]);
    assert!(
        error && message.starts_with("no dump is open as d1"),
        "{message}"
    );
    // A file already open keeps its id; a tool that does not read it says which do.
    assert_eq!(document(&answers[6])["id"], "d2");
    let (message, error) = text(&answers[7]);
    assert!(
        error && message.contains("not a CUDA memory snapshot"),
        "{message}"
    );
}
