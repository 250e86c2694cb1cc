//! Paths to fixtures and the binary, and a runner that captures output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

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

/// How long one run of the binary may take before a test calls it hung: far above any run of
/// the suite's (seconds at most), so that a hang (a deadlock) fails its test, naming the
/// command, instead of holding the whole suite until CI's limit.
pub(crate) const HUNG_AFTER: Duration = Duration::from_secs(300);

/// Kills process `pid` if it is still running [`HUNG_AFTER`] after the watch began, unless
/// [`Watchdog::disarm`] came first.
pub(crate) struct Watchdog {
    done: mpsc::Sender<()>,
    fired: std::thread::JoinHandle<bool>,
}

impl Watchdog {
    pub(crate) fn watch(pid: u32) -> Watchdog {
        let (done, finished) = mpsc::channel::<()>();
        let fired = std::thread::spawn(move || {
            let hung = matches!(
                finished.recv_timeout(HUNG_AFTER),
                Err(mpsc::RecvTimeoutError::Timeout)
            );
            if hung {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
            hung
        });
        Watchdog { done, fired }
    }

    /// Stops the watch; whether it had killed the process.
    pub(crate) fn disarm(self) -> bool {
        let _ = self.done.send(());
        self.fired.join().unwrap_or(false)
    }
}

pub(crate) fn heapgraph(args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_heapgraph"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the heapgraph binary runs");
    let watchdog = Watchdog::watch(child.id());
    let output = child.wait_with_output().expect("the heapgraph binary runs");
    assert!(
        !watchdog.disarm(),
        "heapgraph {args:?} ran {} s without ending (a hang, such as a deadlock), and was killed",
        HUNG_AFTER.as_secs()
    );
    output
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

/// A scratch directory named `name` (unique to the test, or shared on purpose), empty when the
/// test binary's run began.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    static RUN_ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let root = RUN_ROOT.get_or_init(|| {
        // Under `target/`, one root per test binary, emptied when its run starts: tests that
        // share a directory through a `OnceLock` cannot remove it, so the last run's files
        // stay until the next run or `cargo clean`, never one set per run in /tmp.
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(env!("CARGO_CRATE_NAME"));
        let _ = std::fs::remove_dir_all(&root);
        root
    });
    let dir = root.join(name);
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

/// Whether gdb can call a function in a process on this machine, asked of gdb directly on a
/// `sleep` of the test's own: on CPUs with AMX registers gdb 13's calls fail ("Couldn't write
/// extended state status"), and the injection tests then check that heapgraph says so and
/// leaves the target alone.
pub(crate) fn gdb_calls_functions() -> bool {
    let mut sleeper = Command::new("sleep")
        .arg("30")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("sleep runs");
    let trial = tool("gdb")
        .args(["-batch", "-nx", "-p", &sleeper.id().to_string()])
        .args(["-ex", "call (int) getpid()", "-ex", "detach"])
        .output()
        .expect("gdb runs");
    sleeper.kill().ok();
    sleeper.wait().ok();
    let stdout = String::from_utf8_lossy(&trial.stdout);
    let stderr = String::from_utf8_lossy(&trial.stderr);
    if stderr.contains("Couldn't write extended state") {
        return false;
    }
    assert!(
        stdout.lines().any(|line| line.starts_with("$1 = ")),
        "gdb neither called getpid nor failed as known:\n{stdout}\n{stderr}"
    );
    true
}

/// heapgraph's refusal where gdb cannot call functions ([`gdb_calls_functions`]).
pub(crate) fn assert_gdb_refusal(stderr: &str) {
    assert!(
        stderr.contains("gdb cannot call functions") && stderr.contains("left untouched"),
        "{stderr}"
    );
}

/// `Command::new(program)`, once [`need`] found it.
pub(crate) fn tool(program: &str) -> Command {
    need(program);
    Command::new(program)
}
