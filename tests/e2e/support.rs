//! Paths to fixtures and the binary, and a runner that captures output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn fixture(name: &str) -> PathBuf {
    repo_root().join("fixtures").join(name)
}

/// The V8 fixtures written by `fixtures/v8/make_fixtures.js`.
pub(crate) const V8_FIXTURES: [&str; 3] = [
    "v8/app-before.heapsnapshot.gz",
    "v8/app-after.heapsnapshot.gz",
    "v8/app-final.heapsnapshot.gz",
];

pub(crate) fn heapgraph(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_heapgraph"))
        .args(args)
        .output()
        .expect("the heapgraph binary runs")
}

/// Runs heapgraph, expects success, returns stdout.
pub(crate) fn heapgraph_ok(args: &[&str]) -> String {
    let output = heapgraph(args);
    assert!(
        output.status.success(),
        "heapgraph {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 output")
}

pub(crate) fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&heapgraph_ok(args)).expect("valid JSON")
}

pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("heapgraph-e2e-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

pub(crate) fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// The programs the peers tier runs (`--features peers`) and the Debian package that gives each;
/// `tests/setup.sh` installs them all.
const TOOLS: [(&str, &str); 7] = [
    ("python3", "python3"),
    ("node", "nodejs"),
    ("gdb", "gdb"),
    ("chromium", "chromium"),
    ("chromedriver", "chromium-driver"),
    ("java", "default-jdk-headless"),
    ("jcmd", "default-jdk-headless"),
];

/// Fails the test when `program` is not on PATH, naming it and how to install it: a test of the
/// peers tier never passes without its tool.
pub(crate) fn need(program: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    let package = TOOLS
        .iter()
        .find(|(name, _)| *name == program)
        .map_or(program, |(_, package)| package);
    assert!(
        found,
        "{program} is needed by this test and is not on PATH: run tests/setup.sh, which installs \
         it (apt-get install {package}) with every other tool of the peers tier"
    );
}

/// `Command::new(program)`, once [`need`] found it.
pub(crate) fn tool(program: &str) -> Command {
    need(program);
    Command::new(program)
}
