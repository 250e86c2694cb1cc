//! `heapgraph serve` from outside, over real sockets: who may ask (token, cookie, Host, the
//! loopback only), what a bad request gets (a 4xx JSON error), what the answers say about the
//! Java fixture (checked against what `fixtures/java/make_fixtures.py` planted and the JVM's
//! own class histogram), and 50 clients at once getting the same answers.

use crate::support::{fixture, heapgraph_ok, path_str};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `heapgraph serve`, stopped when dropped.
pub(crate) struct Server {
    child: Child,
    pub(crate) port: u16,
    pub(crate) token: String,
}

impl Server {
    pub(crate) fn start(args: &[&str]) -> Server {
        Server::start_with(args, &[])
    }

    /// `start`, with these variables in the server's environment.
    pub(crate) fn start_with(args: &[&str], env: &[(&str, std::ffi::OsString)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_heapgraph"))
            .arg("serve")
            .args(args)
            .envs(env.iter().map(|(name, value)| (name, value)))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the heapgraph binary runs");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        // A server that hangs while it loads never prints its URL.
        let watchdog = crate::support::Watchdog::watch(child.id());
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("serve prints its URL");
        assert!(
            !watchdog.disarm(),
            "heapgraph serve {args:?} printed no URL in {} s (a hang, such as a deadlock), and was killed",
            crate::support::HUNG_AFTER.as_secs()
        );
        let url = line.trim();
        let rest = url
            .strip_prefix("http://127.0.0.1:")
            .unwrap_or_else(|| panic!("serve printed {url:?}, not a loopback URL"));
        let (port, token) = rest
            .split_once("/?token=")
            .unwrap_or_else(|| panic!("no token in {url:?}"));
        Server {
            child,
            port: port.parse().expect("a port"),
            token: token.to_owned(),
        }
    }

    /// `path` with the token in the query.
    pub(crate) fn with_token(&self, path: &str) -> String {
        let separator = if path.contains('?') { '&' } else { '?' };
        format!("{path}{separator}token={}", self.token)
    }

    /// A GET with the right Host and the token.
    pub(crate) fn get(&self, path: &str) -> Reply {
        request(self.port, "GET", &self.with_token(path), &[])
    }

    /// The JSON of a GET that must succeed.
    pub(crate) fn json(&self, path: &str) -> Value {
        let reply = self.get(path);
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        serde_json::from_str(&reply.body).unwrap_or_else(|_| panic!("{path}: not JSON"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// One HTTP/1.1 request on a fresh connection: `Host: 127.0.0.1:PORT` unless `extra` gives a
/// Host.
pub(crate) fn request(port: u16, method: &str, path: &str, extra: &[(&str, &str)]) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the server accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !extra
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        head.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .expect("the request is sent");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("the answer is read");
    let text = String::from_utf8(raw).expect("a UTF-8 answer");
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}

fn java() -> String {
    path_str(&fixture("java/default.hprof.gz")).to_owned()
}

/// What `make_fixtures.py` recorded: the JVM's class histogram of the dumped heap.
fn histogram(class: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(fixture("java/expected.json")).expect("expected.json");
    let expected: Value = serde_json::from_str(&text).expect("JSON");
    let row = &expected["variants"]["default"]["histogram"][class];
    (
        row[0].as_u64().expect("a count"),
        row[1].as_u64().expect("bytes"),
    )
}

fn error_of(reply: &Reply) -> String {
    assert!(
        reply
            .header("content-type")
            .is_some_and(|value| value.starts_with("application/json")),
        "{reply:?}"
    );
    let body: Value = serde_json::from_str(&reply.body).expect("an error is JSON");
    assert_eq!(body["schema"], "heapgraph.error/1");
    body["error"].as_str().expect("a message").to_owned()
}

#[test]
fn serve_answers_only_with_the_token_and_keeps_it_in_a_cookie() {
    let server = Server::start(&[&java()]);
    let port = server.port;
    for path in ["/", "/app.js", "/api/v1/summary", "/api/v1/object/root"] {
        let reply = request(port, "GET", path, &[]);
        assert_eq!(reply.status, 403, "{path} without a token");
        assert!(error_of(&reply).contains("token"));
        let wrong = format!("{path}?token={}", "0".repeat(32));
        assert_eq!(request(port, "GET", &wrong, &[]).status, 403, "{wrong}");
        let cut = format!("{path}?token={}", &server.token[..31]);
        assert_eq!(request(port, "GET", &cut, &[]).status, 403, "{cut}");
    }
    // The first page moves the token into a cookie the page's scripts cannot read.
    let first = request(port, "GET", &server.with_token("/"), &[]);
    assert_eq!(first.status, 303);
    assert_eq!(first.header("location"), Some("/"));
    let cookie = first.header("set-cookie").expect("a cookie");
    assert!(cookie.starts_with(&format!("heapgraph_token={};", server.token)));
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    let pair = cookie.split(';').next().expect("name=value");
    let page = request(port, "GET", "/", &[("Cookie", pair)]);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<script src=\"/app.js\""));
    let api = request(port, "GET", "/api/v1/summary", &[("Cookie", pair)]);
    assert_eq!(api.status, 200);
    let wrong_cookie = format!("heapgraph_token={}", "f".repeat(32));
    let refused = request(port, "GET", "/api/v1/summary", &[("Cookie", &wrong_cookie)]);
    assert_eq!(refused.status, 403);
}

#[test]
fn serve_refuses_other_hosts_other_origins_and_other_methods() {
    let server = Server::start(&[&java()]);
    let port = server.port;
    let path = server.with_token("/api/v1/summary");
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let reply = request(port, "GET", &path, &[("Host", &host)]);
        assert_eq!(reply.status, 200, "{host}");
    }
    // DNS rebinding: a page of another site whose name now points at 127.0.0.1.
    for host in [
        format!("evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        "127.0.0.1".to_owned(),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
    ] {
        let reply = request(port, "GET", &path, &[("Host", &host)]);
        assert_eq!(reply.status, 403, "{host}");
        assert!(error_of(&reply).contains("Host"));
    }
    // No CORS: another origin's script gets no permission to read, whatever it sends.
    for extra in [
        vec![("Origin", "http://evil.example")],
        vec![
            ("Origin", "http://evil.example"),
            ("Access-Control-Request-Method", "GET"),
        ],
    ] {
        let reply = request(port, "GET", &path, &extra);
        assert!(
            reply
                .headers
                .iter()
                .all(|(name, _)| !name.to_ascii_lowercase().starts_with("access-control-")),
            "{:?}",
            reply.headers
        );
        let csp = reply
            .header("content-security-policy")
            .expect("a content security policy");
        assert!(csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"));
    }
    let options = request(port, "OPTIONS", &path, &[("Origin", "http://evil.example")]);
    assert_eq!(options.status, 405);
    assert_eq!(request(port, "POST", &path, &[]).status, 405);
    // Listening on the loopback only: the kernel's table of listening sockets shows
    // 127.0.0.1 (0100007F) at our port, and no other address.
    let table = std::fs::read_to_string("/proc/net/tcp").expect("Linux's socket table");
    let listening: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (_, local_port) = fields[1].split_once(':')?;
            (u16::from_str_radix(local_port, 16).ok()? == port && fields[3] == "0A")
                .then_some(fields[1])
        })
        .collect();
    assert_eq!(listening, [format!("0100007F:{port:04X}")]);
    let table6 = std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    assert!(!table6.contains(&format!(
        ":{port:04X} 00000000000000000000000000000000:0000 0A"
    )));
}

#[test]
fn serve_answers_bad_requests_with_json_errors() {
    let server = Server::start(&[&java()]);
    let session = server.json("/api/v1/instances?type=com.example.Session&limit=1");
    let id = session["objects"][0]["id"].as_u64().expect("an id");
    for (path, status, says) in [
        ("/api/v1/object/abc", 400, "not an object id"),
        ("/api/v1/object/-1", 400, "not an object id"),
        (
            "/api/v1/object/99999999999999999999999",
            400,
            "not an object id",
        ),
        (
            "/api/v1/object/..%2F..%2Fetc%2Fpasswd",
            400,
            "not an object id",
        ),
        ("/api/v1/object/1", 404, "no object has id"),
        ("/api/v1/holders/1", 404, "no object has id"),
        ("/api/v1/children/root?offset=100000", 400, "past the end"),
        ("/api/v1/children/root?limit=0", 400, "limit"),
        ("/api/v1/children/root?limit=1001", 400, "limit"),
        ("/api/v1/children/root?offset=-3", 400, "offset"),
        ("/api/v1/referrers/root?offset=x", 400, "offset"),
        ("/api/v1/holders/root?paths=1000", 400, "paths"),
        ("/api/v1/instances", 400, "type"),
        (
            "/api/v1/instances?type=no.such.Type",
            404,
            "no object has type",
        ),
        ("/api/v1/instances?type=%zz", 400, "percent"),
        ("/api/v1/diff", 404, "--baseline"),
        ("/api/v2/summary", 404, "endpoint"),
        ("/../../../../etc/passwd", 404, "endpoint"),
        ("/fixtures/java/default.hprof.gz", 404, "endpoint"),
    ] {
        let reply = server.get(path);
        assert_eq!(reply.status, status, "{path}: {}", reply.body);
        let message = error_of(&reply);
        assert!(message.contains(says), "{path}: {message}");
    }
    let empty = server.json("/api/v1/instances?type=com.example.Session&offset=400&limit=5");
    assert_eq!(empty["objects"].as_array().map(Vec::len), Some(0));
    let reply = server.get(&format!("/api/v1/object/@{id}"));
    assert_eq!(reply.status, 200);
    // The server is still there after all of them.
    assert_eq!(server.get("/api/v1/summary").status, 200);
}

#[test]
fn serve_explores_the_planted_sessions_as_the_jvm_counted_them() {
    let server = Server::start(&[&java()]);
    // Paging through every instance gives each once, and their count and bytes are the JVM's.
    for class in ["com.example.Session", "com.example.ChainLink"] {
        let (count, bytes) = histogram(class);
        let mut ids = std::collections::BTreeSet::new();
        let (mut offset, mut shallow, mut previous) = (0, 0u64, u64::MAX);
        loop {
            let page = server.json(&format!(
                "/api/v1/instances?type={class}&offset={offset}&limit=333"
            ));
            assert_eq!(page["schema"], "heapgraph.instances/1");
            assert_eq!(page["total"].as_u64(), Some(count), "{class}");
            let objects = page["objects"].as_array().expect("objects");
            for object in objects {
                let retained = object["retained_size"].as_u64().unwrap_or(0);
                assert!(retained <= previous, "{class}: largest first");
                previous = retained;
                shallow += object["shallow_size"].as_u64().expect("size");
                assert!(ids.insert(object["id"].as_u64().expect("id")));
            }
            offset += objects.len();
            if objects.len() < 333 {
                break;
            }
        }
        assert_eq!((ids.len() as u64, shallow), (count, bytes), "{class}");
    }
    // A session's fields are the ones LeakFixture.java declares, its payload 256 bytes.
    let sessions = server.json("/api/v1/instances?type=com.example.Session&limit=1");
    let session = sessions["objects"][0]["id"].as_u64().expect("an id");
    let object = server.json(&format!("/api/v1/object/{session}"));
    assert_eq!(object["schema"], "heapgraph.references/1");
    assert_eq!(object["direction"], "out");
    let field = |name: &str| {
        object["references"]
            .as_array()
            .expect("references")
            .iter()
            .find(|reference| reference["edge"] == name)
            .unwrap_or_else(|| panic!("no field {name}: {object}"))["object"]
            .clone()
    };
    assert_eq!(field("payload")["type"], "byte[]");
    assert_eq!(field("id")["type"], "java.lang.String");
    assert_eq!(field("attrs")["type"], "java.util.HashMap");
    assert_eq!(field("counters")["type"], "int[]");
    // It is held as the value of a HashMap entry, whose own referrer is the table.
    let referrers = server.json(&format!("/api/v1/referrers/{session}"));
    assert_eq!(referrers["direction"], "in");
    let holder = &referrers["references"][0];
    assert_eq!(holder["edge"], "value");
    assert_eq!(holder["object"]["type"], "java.util.HashMap$Node");
    // Its chains from the roots pass through the planted holder, SessionCache.INSTANCE's
    // `sessions`; and the answer is what `who-holds` prints.
    let holders = server.get(&format!("/api/v1/holders/{session}"));
    assert_eq!(holders.status, 200);
    let chain: Value = serde_json::from_str(&holders.body).expect("JSON");
    let edges: Vec<&str> = chain["paths"][0]
        .as_array()
        .expect("a chain")
        .iter()
        .filter_map(|step| step["edge"].as_str())
        .collect();
    assert!(
        edges
            .windows(2)
            .any(|pair| pair == ["INSTANCE", "sessions"]),
        "{edges:?}"
    );
    let cli = heapgraph_ok(&[
        "who-holds",
        &java(),
        &session.to_string(),
        "--format",
        "json",
    ]);
    assert_eq!(holders.body, cli, "the API answers with the CLI's JSON");
    assert_eq!(
        server.get("/api/v1/summary").body,
        heapgraph_ok(&["summary", &java(), "--format", "json", "-n", "20"])
    );
    // The chain of 5000 links (ChainLink has an int and `next`, nothing else) hangs in the
    // dominator tree one link under the other: the k-th link holds 5000 - k objects.
    let head = server.json("/api/v1/instances?type=com.example.ChainLink&limit=1");
    let mut node = head["objects"][0].clone();
    for k in 0..4u64 {
        assert_eq!(node["type"], "com.example.ChainLink");
        assert_eq!(node["retained_count"].as_u64(), Some(5000 - k), "link {k}");
        let id = node["id"].as_u64().expect("an id");
        let children = server.json(&format!("/api/v1/children/{id}"));
        assert_eq!(children["schema"], "heapgraph.children/1");
        let kids = children["children"].as_array().expect("children");
        assert_eq!(children["total"].as_u64(), Some(1), "link {k}");
        assert_eq!(kids[0]["hidden_children"].as_u64(), Some(1));
        node = kids[0].clone();
    }
}

/// The merged paths of a type and the duplicate strings, against what the fixture's program
/// planted and the JVM counted: every Session hangs from SessionCache.INSTANCE's `sessions`,
/// and the planted duplicate strings (expected.json) lead the list with their copies.
#[test]
fn serve_merges_a_types_paths_and_lists_duplicate_strings() {
    let server = Server::start(&[&java()]);
    let (sessions, _) = histogram("com.example.Session");
    let paths = server.json("/api/v1/paths?type=com.example.Session");
    assert_eq!(paths["schema"], "heapgraph.paths/1");
    assert_eq!(paths["targets"].as_u64(), Some(sessions));
    assert_eq!(paths["reached"].as_u64(), Some(sessions));
    let nodes = paths["nodes"].as_array().expect("nodes");
    let holder = nodes
        .iter()
        .find(|node| node["edge"] == "sessions")
        .unwrap_or_else(|| panic!("no `sessions` on the merged tree: {paths}"));
    assert_eq!(holder["targets"].as_u64(), Some(sessions), "{holder}");
    assert!(nodes.iter().any(|node| node["is_target"] == true));
    let by_id = server.json("/api/v1/instances?type=com.example.Session&limit=2");
    let ids: Vec<String> = by_id["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .map(|object| object["id"].to_string())
        .collect();
    let two = server.json(&format!("/api/v1/paths?ids={}", ids.join(",")));
    assert_eq!(two["targets"].as_u64(), Some(2));
    for bad in [
        "/api/v1/paths",
        "/api/v1/paths?type=NoSuchType",
        "/api/v1/paths?ids=x",
    ] {
        let reply = server.get(bad);
        assert!(
            (400..500).contains(&reply.status),
            "{bad}: {}",
            reply.status
        );
        assert!(
            reply.body.contains("heapgraph.error/1"),
            "{bad}: {}",
            reply.body
        );
    }

    let text = std::fs::read_to_string(fixture("java/expected.json")).expect("expected.json");
    let expected: Value = serde_json::from_str(&text).expect("JSON");
    let planted = &expected["planted"]["duplicate_strings"];
    let strings = server.json("/api/v1/strings?duplicates=1");
    assert_eq!(strings["schema"], "heapgraph.strings/1");
    let values = strings["values"].as_array().expect("values");
    for (row, coder) in values.iter().zip(["latin1", "utf16"]) {
        assert_eq!(row["value"], planted[coder]["content"]);
        assert_eq!(row["count"], planted[coder]["count"]);
    }
    assert!(values.iter().all(|row| row["count"].as_u64() > Some(1)));
    assert_eq!(server.get("/api/v1/strings?duplicates=maybe").status, 400);
    assert_eq!(server.get("/api/v1/strings?limit=0").status, 400);
}

/// The merged paths kept for the types with the most instances (merged before the server
/// listens) answer as `paths` does on the command line, asked by whole name or by its end, and
/// an answer at other branches (never kept) is merged as `paths` merges it.
#[test]
fn serve_keeps_the_paths_of_the_biggest_types_as_paths_answers_them() {
    let java = java();
    let server = Server::start(&[&java]);
    let types = server.json("/api/v1/types");
    let biggest = types["types"]
        .as_array()
        .expect("types")
        .iter()
        .max_by_key(|row| row["count"].as_u64())
        .expect("a type");
    let name = biggest["type"].as_str().expect("a type name");
    let cli = |extra: &[&str]| -> Value {
        let mut args = vec!["paths", java.as_str(), "--type", name, "--format", "json"];
        args.extend_from_slice(extra);
        serde_json::from_str(&heapgraph_ok(&args)).expect("JSON")
    };
    let expected = cli(&[]);
    assert!(expected["targets"].as_u64() > Some(0), "{expected}");
    let quoted = name.replace('$', "%24");
    for path in [
        format!("/api/v1/paths?type={quoted}"),
        format!("/api/v1/paths?type={quoted}"),
        format!("/api/v1/paths?type={quoted}&branches=20"),
    ] {
        assert_eq!(server.json(&path), expected, "{path}");
    }
    let sessions: Value = serde_json::from_str(&heapgraph_ok(&[
        "paths",
        &java,
        "--type",
        "com.example.Session",
        "--format",
        "json",
    ]))
    .expect("JSON");
    assert_eq!(server.json("/api/v1/paths?type=Session"), sessions);
    assert_eq!(
        server.json(&format!("/api/v1/paths?type={quoted}&branches=2")),
        cli(&["-n", "2"])
    );
}

/// 50 clients at once for `seconds`, each asking for a mix of views and checking every answer
/// against the one the server gave alone; `benches/serve_load.sh` runs it for 30 s.
pub(crate) fn load_test(server: &Server, seconds: u64) -> u64 {
    let paths: Vec<String> = {
        let session = server.json("/api/v1/instances?type=com.example.Session&limit=3");
        let ids: Vec<u64> = session["objects"]
            .as_array()
            .expect("objects")
            .iter()
            .map(|object| object["id"].as_u64().expect("id"))
            .collect();
        let mut paths = vec![
            "/api/v1/summary".to_owned(),
            "/api/v1/types".to_owned(),
            "/api/v1/findings".to_owned(),
            "/api/v1/children/root?limit=50".to_owned(),
            "/api/v1/instances?type=java.util.HashMap%24Node&offset=100&limit=100".to_owned(),
            "/app.js".to_owned(),
        ];
        for id in ids {
            for view in ["object", "referrers", "holders", "children"] {
                paths.push(format!("/api/v1/{view}/{id}"));
            }
        }
        paths
    };
    let expected: Vec<String> = paths.iter().map(|path| server.get(path).body).collect();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let port = server.port;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..50)
            .map(|client| {
                let (paths, expected) = (&paths, &expected);
                scope.spawn(move || {
                    let mut answered = 0u64;
                    let mut at = client;
                    while Instant::now() < deadline {
                        let index = at % paths.len();
                        let path = server.with_token(&paths[index]);
                        let reply = request(port, "GET", &path, &[]);
                        assert_eq!(reply.status, 200, "{path}");
                        assert!(reply.body == expected[index], "{path}: another answer");
                        answered += 1;
                        at += 7;
                    }
                    answered
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a client"))
            .sum()
    })
}

#[test]
fn serve_gives_fifty_clients_at_once_the_same_answers() {
    let server = Server::start(&[&java()]);
    let answered = load_test(&server, 3);
    assert!(answered >= 50, "{answered} answers");
}

#[test]
fn serve_compares_with_a_baseline_as_diff_does() {
    let [before, after] = [
        "v8/app-before.heapsnapshot.gz",
        "v8/app-after.heapsnapshot.gz",
    ]
    .map(|name| path_str(&fixture(name)).to_owned());
    let server = Server::start(&[&after, "--baseline", &before]);
    let diff = server.get("/api/v1/diff");
    assert_eq!(diff.status, 200);
    assert_eq!(
        diff.body,
        heapgraph_ok(&["diff", &before, &after, "--format", "json"])
    );
    let page = request(server.port, "GET", &server.with_token("/app.js"), &[]);
    assert_eq!(page.status, 200);
    let index = request(
        server.port,
        "GET",
        "/",
        &[("Cookie", &format!("heapgraph_token={}", server.token))],
    );
    assert!(
        index
            .body
            .contains("name=\"heapgraph-baseline\" content=\"yes\"")
    );
}

#[test]
fn serve_refuses_an_allocation_snapshot_it_cannot_show() {
    let output = Command::new(env!("CARGO_BIN_EXE_heapgraph"))
        .args([
            "serve",
            path_str(&fixture("tracemalloc/before.tracemalloc")),
        ])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("before.tracemalloc"), "{stderr}");
    assert!(
        stderr.contains("explores heap dumps, CUDA memory snapshots and recordings"),
        "{stderr}"
    );
    assert!(
        output.stdout.is_empty(),
        "no URL for a file it cannot serve"
    );
}

/// A CUDA snapshot and a recording are shown as their report shows them (the page is what
/// `heapgraph report FILE --no-timestamp` writes) with one answer, the JSON the CLI prints for
/// them; the page's one inline style and one inline script are allowed by their hashes, and
/// nothing else inline is.
#[test]
fn serve_shows_a_cuda_snapshot_and_a_recording_as_their_report_does() {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    let dir = crate::support::temp_dir("serve-recorded");
    for (name, view, verb) in [
        (
            "torch-cuda/oom_batch_growth.pickle.gz",
            "gpu",
            &["gpu", "--timeline"][..],
        ),
        ("timeline/worker.hgt", "timeline", &["summary"][..]),
    ] {
        let file = path_str(&fixture(name)).to_owned();
        let server = Server::start(&[&file]);
        let mut cli = verb.to_vec();
        cli.extend([file.as_str(), "--format", "json"]);
        assert_eq!(
            server.get(&format!("/api/v1/{view}")).body,
            heapgraph_ok(&cli)
        );

        let report = dir.join(format!("{view}.html"));
        heapgraph_ok(&["report", &file, "--no-timestamp", "-o", path_str(&report)]);
        let cookie = format!("heapgraph_token={}", server.token);
        let page = request(server.port, "GET", "/", &[("Cookie", &cookie)]);
        assert_eq!(page.status, 200);
        assert_eq!(
            page.body,
            std::fs::read_to_string(&report).expect("the report")
        );
        let policy = page.header("content-security-policy").expect("a policy");
        for (open, close, directive) in [
            ("<style>", "</style>", "style-src"),
            ("<script>", "</script>", "script-src"),
        ] {
            let inline = page.body.split(open).nth(1).expect(open);
            let inline = inline.split(close).next().expect(close);
            assert!(!inline.is_empty(), "{name}: an empty {open}");
            let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(inline));
            assert!(
                policy.contains(&format!("{directive} 'sha256-{hash}'")),
                "{name}: {policy}"
            );
        }
        // Style attributes (a chart's colours) by the hash of each value, and only those.
        let hash =
            |text: &str| base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text));
        let attributes: std::collections::BTreeSet<&str> = page
            .body
            .split(" style=\"")
            .skip(1)
            .map(|rest| rest.split('"').next().expect("a value"))
            .collect();
        assert!(
            !attributes.is_empty(),
            "{name}: no style attribute to check"
        );
        for value in &attributes {
            assert!(
                policy.contains(&format!("'sha256-{}'", hash(value))),
                "{value}: {policy}"
            );
        }
        assert_eq!(
            policy.matches("'sha256-").count(),
            2 + attributes.len(),
            "{policy}"
        );
        assert!(
            !policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"),
            "{policy}"
        );
        assert!(policy.starts_with("default-src 'none';"), "{policy}");
        // The heap views are not there, and the refusal says what is.
        let other = server.get("/api/v1/types");
        assert_eq!(other.status, 404);
        assert!(
            error_of(&other).contains(&format!("/api/v1/{view}")),
            "{}",
            other.body
        );
        let api = server.get(&format!("/api/v1/{view}"));
        assert_eq!(
            api.header("content-security-policy"),
            Some(
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
            )
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The pages of a CUDA snapshot and of a recording in Chromium: the report's own checks (no
/// console error, so no style or script the policy blocks; charts drawn; nothing outside its
/// box; sorting; printing; no request off the page's origin), screenshots kept under
/// `target/serve-screenshots`.
#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs chromium, chromedriver and python3"
)]
fn serve_shows_a_snapshot_and_a_recording_in_a_real_browser() {
    crate::support::need("chromium");
    crate::support::need("chromedriver");
    let servers = [
        ("torch-cuda/oom_batch_growth.pickle.gz", "gpu"),
        ("timeline/worker.hgt", "timeline"),
    ]
    .map(|(name, view)| (Server::start(&[path_str(&fixture(name))]), view));
    let shots = crate::support::repo_root().join("target/serve-screenshots");
    // The fragment names the screenshots: served-gpu.png, served-timeline.png.
    let urls = servers.iter().map(|(server, view)| {
        let (port, token) = (server.port, &server.token);
        format!("http://127.0.0.1:{port}/?token={token}#{view}")
    });
    let output = crate::support::tool("python3")
        .arg(crate::support::repo_root().join("tests/browser/check_report.py"))
        .arg(&shots)
        .args(urls)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let pages: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line per page"))
        .collect();
    assert_eq!(pages.len(), 2, "{stdout}");
    for page in &pages {
        assert!(
            page["charts"].as_u64().is_some_and(|charts| charts >= 1),
            "{page}"
        );
    }
}

/// `--open` hands the printed URL, token and all, to the desktop's opener: a fake `xdg-open`
/// first on PATH records the argument it was given.
#[test]
#[cfg(target_os = "linux")]
fn serve_open_hands_the_url_with_its_token_to_the_browser() {
    use std::os::unix::fs::PermissionsExt;
    let dir = crate::support::temp_dir("serve-open");
    let record = dir.join("opened");
    let fake = dir.join("xdg-open");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > '{0}.part' && mv '{0}.part' '{0}'\n",
            record.display()
        ),
    )
    .expect("write the fake opener");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut path = std::ffi::OsString::from(&dir);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let server = Server::start_with(&[&java(), "--open"], &[("PATH", path)]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !record.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let opened = std::fs::read_to_string(&record).expect("--open ran the opener");
    assert_eq!(
        opened,
        format!("http://127.0.0.1:{}/?token={}", server.port, server.token)
    );
    // The URL it was given opens the explorer: the token moves into its cookie, and on to the
    // page.
    let first = server.get("/");
    assert_eq!(first.status, 303);
    assert_eq!(first.header("location"), Some("/"));
    assert!(first.header("set-cookie").is_some());
}

/// The explorer in Chromium, as a user walks it (tests/browser/check_serve.py): the printed
/// URL, types filtered, a type's instances, the largest with the keyboard, its chains, three
/// levels of the dominator tree opened with the arrow keys, back twice, a pasted link; no
/// console error and no request outside the server's origin. The screenshots are kept under
/// `target/serve-screenshots/` to look at.
#[test]
#[cfg_attr(
    not(feature = "peers"),
    ignore = "peers tier: needs chromium, chromedriver and python3"
)]
fn serve_works_in_a_real_browser() {
    crate::support::need("chromium");
    crate::support::need("chromedriver");
    let server = Server::start(&[&java()]);
    let shots = crate::support::repo_root().join("target/serve-screenshots");
    let url = format!("http://127.0.0.1:{}/?token={}", server.port, server.token);
    let output = crate::support::tool("python3")
        .arg(crate::support::repo_root().join("tests/browser/check_serve.py"))
        .arg(&shots)
        .arg(&url)
        .arg("com.example.ChainLink")
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let facts: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    assert_eq!(
        facts["instances"].as_u64(),
        Some(100),
        "a first page of 100"
    );
    assert!(facts["tree_rows"].as_u64().is_some_and(|rows| rows >= 5));
}
