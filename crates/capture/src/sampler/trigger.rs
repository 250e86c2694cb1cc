//! Taking a dump of a running process, of the kind its runtime writes: a signal to a Node
//! process started with `--heapsnapshot-signal`, a signal to a Python process whose program
//! called the dumper's `install()` (found by the marker it leaves), `jcmd GC.heap_dump` for a
//! JVM. Python processes without the marker are dumped by injection, which the binary does
//! (`heapgraph capture python`).

use super::procfs;
use heapgraph_format::units::duration_text;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// How often a dump in progress is looked at.
const POLL: Duration = Duration::from_millis(100);

/// What a process runs, as far as its executable and command line tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// CPython.
    Python,
    /// Node.js (V8).
    Node,
    /// A JVM.
    Java,
    /// Anything else.
    Other,
}

impl Runtime {
    /// The name a timeline's header gives it (`python`, `v8`, `java`, `process`).
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Python => "python",
            Runtime::Node => "v8",
            Runtime::Java => "java",
            Runtime::Other => "process",
        }
    }
}

/// How a process can be dumped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DumpMethod {
    /// The Python dumper's `install()` handler listens to `signal`.
    PythonSignal {
        /// The signal.
        signal: i32,
    },
    /// A Python process without the dumper installed: the binary injects it.
    PythonInject,
    /// Node writes a heap snapshot into `dir` on `signal` (`--heapsnapshot-signal`).
    NodeSignal {
        /// The signal.
        signal: i32,
        /// Where Node writes (`--diagnostic-dir`, else its working directory).
        dir: PathBuf,
    },
    /// `jcmd PID GC.heap_dump`.
    Jcmd {
        /// The `jcmd` to run: the one beside the JVM's own `java`, else the one on `PATH`.
        jcmd: PathBuf,
    },
}

impl DumpMethod {
    /// The kind of dump it writes (`python-hgd`, `v8-heapsnapshot`, `hprof`).
    pub fn dump_kind(&self) -> &'static str {
        match self {
            DumpMethod::PythonSignal { .. } | DumpMethod::PythonInject => "python-hgd",
            DumpMethod::NodeSignal { .. } => "v8-heapsnapshot",
            DumpMethod::Jcmd { .. } => "hprof",
        }
    }
}

impl DumpMethod {
    /// The file extension of what it writes.
    pub fn extension(&self) -> &'static str {
        match self {
            DumpMethod::PythonSignal { .. } | DumpMethod::PythonInject => "hgd",
            DumpMethod::NodeSignal { .. } => "heapsnapshot",
            DumpMethod::Jcmd { .. } => "hprof.gz",
        }
    }
}

/// A short name for the program a command line runs, fit for a file name: the script of
/// `python3 serve.py`, the module of `python3 -m app`, the program `env` starts, else the
/// executable's name; `process` when nothing is left.
pub fn program_name(args: &[String]) -> String {
    let stem = |arg: &str| {
        Path::new(arg)
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut name = args.first().map(|arg| stem(arg)).unwrap_or_default();
    if name == "env" {
        // `env [-i] [NAME=VALUE]… PROGRAM ARGS`: the program is what runs.
        let program = args
            .iter()
            .skip(1)
            .position(|arg| !arg.starts_with('-') && !arg.contains('='));
        if let Some(at) = program {
            return program_name(&args[1 + at..]);
        }
    }
    if runtime_of(None, std::slice::from_ref(&name)) != Runtime::Other {
        let mut rest = args.iter().skip(1);
        while let Some(arg) = rest.next() {
            match arg.as_str() {
                "-c" | "-e" | "--eval" => break,
                "-m" => {
                    if let Some(module) = rest.next() {
                        name.clone_from(module);
                    }
                    break;
                }
                arg if arg.starts_with('-') => {}
                arg => {
                    name = stem(arg);
                    break;
                }
            }
        }
    }
    let clean: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(40)
        .collect();
    if clean.is_empty() {
        "process".to_owned()
    } else {
        clean
    }
}

/// The file name of dump number `number` of process `pid` (whose command line is `command`),
/// asked for `t_ms` into the recording: `serve-4242-dump1-12s.hgd`.
pub fn dump_file_name(
    command: &[String],
    pid: u32,
    number: u32,
    t_ms: u64,
    method: &DumpMethod,
) -> String {
    format!(
        "{}-{pid}-dump{number}-{}s.{}",
        program_name(command),
        t_ms / 1000,
        method.extension()
    )
}

/// A process of the recorded tree, and how it can be dumped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Its pid.
    pub pid: u32,
    /// Its pid inside its own pid namespace (what it calls `os.getpid()`).
    pub own_pid: u32,
    /// What it runs.
    pub runtime: Runtime,
    /// How to dump it, or why it cannot be.
    pub method: Result<DumpMethod, String>,
}

/// The signal named `SIGUSR2`, `USR2` or `12`.
pub fn signal_number(name: &str) -> Option<i32> {
    if let Ok(number) = name.parse::<i32>() {
        return (1..=64).contains(&number).then_some(number);
    }
    let name = name.strip_prefix("SIG").unwrap_or(name);
    Some(match name {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "TERM" => libc::SIGTERM,
        "PWR" => libc::SIGPWR,
        "WINCH" => libc::SIGWINCH,
        "URG" => libc::SIGURG,
        "PROF" => libc::SIGPROF,
        "TTIN" => libc::SIGTTIN,
        "TTOU" => libc::SIGTTOU,
        _ => return None,
    })
}

/// The value of option `name` (`--name=value` or `--name value`) among `args`.
fn option_value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if let Some(value) = arg.strip_prefix(name) {
            if let Some(value) = value.strip_prefix('=') {
                return Some(value);
            }
            if value.is_empty() {
                return args.next().map(String::as_str);
            }
        }
    }
    None
}

/// The runtime of a process with executable `exe` and command line `args`.
pub fn runtime_of(exe: Option<&Path>, args: &[String]) -> Runtime {
    let name = exe
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .or_else(|| {
            args.first().and_then(|arg| {
                Path::new(arg)
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
            })
        })
        .unwrap_or_default();
    if name.starts_with("python") {
        Runtime::Python
    } else if name == "node"
        || name.starts_with("node") && name[4..].chars().all(|c| c.is_ascii_digit() || c == '.')
    {
        Runtime::Node
    } else if name == "java" {
        Runtime::Java
    } else {
        Runtime::Other
    }
}

/// `NODE_OPTIONS` of a process, split into arguments.
fn node_options(pid: u32) -> Vec<String> {
    let environ = fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    environ
        .split(|&byte| byte == 0)
        .find_map(|entry| entry.strip_prefix(b"NODE_OPTIONS="))
        .map(|value| {
            String::from_utf8_lossy(value)
                .split_whitespace()
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// When process `pid` started, as wall-clock time.
fn start_time(pid: u32) -> Option<SystemTime> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks = procfs::start_ticks_in_stat(&stat)?;
    let boot = fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("btime ")?.trim().parse::<u64>().ok())?;
    // SAFETY: sysconf has no preconditions; it reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|&hz| hz > 0)?;
    Some(
        SystemTime::UNIX_EPOCH
            + Duration::from_secs(boot)
            + Duration::from_millis(ticks * 1000 / hz),
    )
}

/// The signal the Python dumper's marker names, if process `pid` (whose own pid is `own_pid`,
/// running as `uid`) left one since it started.
fn dumper_marker(pid: u32, own_pid: u32, uid: u32) -> Option<i32> {
    let path = format!("/proc/{pid}/root/tmp/heapgraph-dumper-{own_pid}");
    let meta = fs::symlink_metadata(&path).ok()?;
    use std::os::unix::fs::MetadataExt;
    if !meta.is_file() || meta.uid() != uid || meta.len() > 4096 {
        return None;
    }
    // A marker older than the process belongs to another that had the same pid.
    let started = start_time(pid)?;
    let written = meta.modified().ok()?;
    if written + Duration::from_secs(2) < started {
        return None;
    }
    let text = fs::read_to_string(&path).ok()?;
    let at = text.find("\"signal\"")?;
    let digits: String = text[at + 8..]
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Which runtime process `pid` runs, and how it can be dumped.
pub fn inspect(pid: u32) -> Target {
    let exe = procfs::executable(pid);
    let args = procfs::command_line(pid);
    let status = procfs::status(pid).unwrap_or_default();
    let own_pid = if status.own_pid == 0 {
        pid
    } else {
        status.own_pid
    };
    let runtime = runtime_of(exe.as_deref(), &args);
    let method = match runtime {
        Runtime::Python => Ok(match dumper_marker(pid, own_pid, status.uid) {
            Some(signal) if status.catches(signal) => DumpMethod::PythonSignal { signal },
            _ => DumpMethod::PythonInject,
        }),
        Runtime::Node => node_method(pid, &args, &status),
        Runtime::Java => Ok(DumpMethod::Jcmd {
            jcmd: exe
                .as_deref()
                .and_then(Path::parent)
                .map(|bin| bin.join("jcmd"))
                .filter(|jcmd| jcmd.exists())
                .unwrap_or_else(|| PathBuf::from("jcmd")),
        }),
        Runtime::Other => {
            Err("it runs no runtime heapgraph can dump (Python, Node.js or a JVM)".to_owned())
        }
    };
    Target {
        pid,
        own_pid,
        runtime,
        method,
    }
}

fn node_method(pid: u32, args: &[String], status: &procfs::Status) -> Result<DumpMethod, String> {
    let mut all = args.to_vec();
    all.extend(node_options(pid));
    let Some(name) = option_value(&all, "--heapsnapshot-signal") else {
        return Err("start node with --heapsnapshot-signal=SIGUSR2 (or put it in NODE_OPTIONS) so that it can be dumped".to_owned());
    };
    let signal = signal_number(name)
        .ok_or_else(|| format!("--heapsnapshot-signal names an unknown signal {name:?}"))?;
    if !status.catches(signal) {
        return Err(format!(
            "node was started with --heapsnapshot-signal={name}, but process {pid} does not catch that signal yet"
        ));
    }
    let cwd = fs::read_link(format!("/proc/{pid}/cwd"))
        .map_err(|err| format!("cannot see process {pid}'s working directory: {err}"))?;
    let dir = match option_value(&all, "--diagnostic-dir") {
        Some(dir) if Path::new(dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => cwd.join(dir),
        None => cwd,
    };
    Ok(DumpMethod::NodeSignal { signal, dir })
}

/// The process of `tree` to dump: the one with the most resident memory that runs a runtime
/// heapgraph can dump, else the tree's root (to say why it cannot be dumped).
pub fn choose_target(tree: &[(u32, u64)]) -> Option<Target> {
    let mut by_rss: Vec<(u32, u64)> = tree.to_vec();
    by_rss.sort_by_key(|&(pid, rss)| (std::cmp::Reverse(rss), pid));
    let mut first = None;
    for (pid, _) in by_rss {
        let target = inspect(pid);
        if target.method.is_ok() {
            return Some(target);
        }
        if target.runtime != Runtime::Other {
            first.get_or_insert(target);
        }
    }
    first.or_else(|| tree.first().map(|&(pid, _)| inspect(pid)))
}

/// A file a dump wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dumped {
    /// Where.
    pub path: PathBuf,
    /// What kind (`python-hgd`, `v8-heapsnapshot`, `hprof`, `torch-cuda`).
    pub kind: &'static str,
}

fn send(pid: u32, signal: i32) -> Result<(), String> {
    let pid_t = libc::pid_t::try_from(pid).map_err(|_| format!("pid {pid} is out of range"))?;
    // SAFETY: kill has no memory preconditions; the pid and signal were checked above and the
    // target was seen to catch the signal, so it does not terminate it.
    let result = unsafe { libc::kill(pid_t, signal) };
    if result == 0 {
        Ok(())
    } else {
        Err(format!(
            "cannot signal process {pid}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Asks a Python process whose dumper is installed for a dump into `path` (absolute), with a
/// CUDA snapshot beside it when `cuda` and torch has CUDA going, and waits for it.
///
/// # Errors
/// Why no dump came (the process died, did not answer in `timeout`, the request could not be
/// written).
pub fn python_signal(
    target: &Target,
    signal: i32,
    path: &Path,
    cuda: bool,
    timeout: Duration,
) -> Result<Vec<Dumped>, String> {
    let request = format!(
        "/proc/{}/root/tmp/heapgraph-request-{}",
        target.pid, target.own_pid
    );
    // A process in a chroot or a container writes into its own /tmp; the dump is moved here.
    let name = format!(
        "heapgraph-dump-{}-{}.hgd",
        target.own_pid,
        std::process::id()
    );
    let dump = Shared::for_process(target.pid, path, &name)?;
    let text = format!(
        "{{\"path\": {}, \"cuda_snapshot\": {cuda}}}\n",
        json_string(&dump.inner.display().to_string())
    );
    let _ = fs::remove_file(path);
    let _ = fs::remove_file(&dump.outer);
    write_request(&request, &text)?;
    send(target.pid, signal)?;
    let started = Instant::now();
    while started.elapsed() < timeout {
        if dump.outer.exists() {
            let cuda_outer = PathBuf::from(format!("{}.cuda.pickle", dump.outer.display()));
            let cuda_path = PathBuf::from(format!("{}.cuda.pickle", path.display()));
            if !dump.same_root() {
                // The CUDA snapshot is complete before the dump appears.
                move_file(&dump.outer, path)?;
                if cuda_outer.exists() {
                    move_file(&cuda_outer, &cuda_path)?;
                }
            }
            let mut dumped = vec![Dumped {
                path: path.to_owned(),
                kind: "python-hgd",
            }];
            if cuda_path.exists() {
                dumped.push(Dumped {
                    path: cuda_path,
                    kind: "torch-cuda",
                });
            }
            return Ok(dumped);
        }
        if !alive(target.pid) {
            let _ = fs::remove_file(&request);
            return Err(format!(
                "process {} ended before its dump was written",
                target.pid
            ));
        }
        std::thread::sleep(POLL);
    }
    let _ = fs::remove_file(&request);
    Err(format!(
        "process {} wrote no dump within {} of the signal (its stderr may say why)",
        target.pid,
        duration_text(timeout)
    ))
}

/// Writes the request for a dump, as a new file: a file or link that someone else left at
/// that name in the world-writable `/tmp` is removed first, and never written through.
fn write_request(request: &str, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = fs::remove_file(request);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        // Readable by the process, which may run as another user than the recorder.
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(request)
        .map_err(|err| format!("cannot write the dump request {request}: {err}"))?;
    file.write_all(text.as_bytes())
        .map_err(|err| format!("cannot write the dump request {request}: {err}"))
}

fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Node's snapshots of process `own_pid` in `dir`: `Heap.<date>.<time>.<pid>.<thread>.<seq>.heapsnapshot`.
fn node_snapshots(dir: &Path, own_pid: u32) -> Vec<PathBuf> {
    let needle = format!(".{own_pid}.");
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| {
                    path.file_name()
                        .and_then(|name| name.to_str())
                        .is_some_and(|name| {
                            name.starts_with("Heap.")
                                && name.ends_with(".heapsnapshot")
                                && name.contains(&needle)
                        })
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// Whether a snapshot file ends as a complete one does (`]}`, the end of the `strings` array
/// and of the document).
fn snapshot_complete(path: &Path) -> bool {
    let Ok(mut file) = fs::File::open(path) else {
        return false;
    };
    let Ok(len) = file.metadata().map(|meta| meta.len()) else {
        return false;
    };
    if len < 2 {
        return false;
    }
    use std::io::{Seek, SeekFrom};
    let tail = len.min(16);
    if file.seek(SeekFrom::Start(len - tail)).is_err() {
        return false;
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&bytes);
    text.trim_end().ends_with("]}")
}

/// Moves `from` into `dir`, across file systems if need be.
fn move_into(from: &Path, dir: &Path) -> Result<PathBuf, String> {
    let name = from
        .file_name()
        .ok_or_else(|| format!("{} has no file name", from.display()))?;
    let to = dir.join(name);
    move_file(from, &to)?;
    Ok(to)
}

/// Moves `from` to `to`, across file systems if need be (out of a container's root, say).
///
/// # Errors
/// Why it could not be copied.
pub fn move_file(from: &Path, to: &Path) -> Result<(), String> {
    if fs::rename(from, to).is_ok() {
        return Ok(());
    }
    fs::copy(from, to)
        .map_err(|err| format!("cannot copy {} to {}: {err}", from.display(), to.display()))?;
    let _ = fs::remove_file(from);
    Ok(())
}

/// A file that a process reads or writes, named as it sees it (`inner`) and as this process
/// reaches it (`outer`). They differ for a process in a chroot or a container, which sees its
/// own root: there the file is `NAME` in its `/tmp`, `/proc/PID/root/tmp/NAME` from here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shared {
    /// The path in the process's own root.
    pub inner: PathBuf,
    /// The same file from here.
    pub outer: PathBuf,
}

impl Shared {
    /// `wanted` itself when process `pid` shares this process's root, else `name` in the
    /// process's `/tmp`.
    ///
    /// # Errors
    /// The process's root cannot be looked at (another user's process, or it ended).
    pub fn for_process(pid: u32, wanted: &Path, name: &str) -> Result<Shared, String> {
        match procfs::separate_root(pid) {
            Ok(None) => Ok(Shared {
                inner: wanted.to_owned(),
                outer: wanted.to_owned(),
            }),
            Ok(Some(root)) => Ok(Shared {
                inner: Path::new("/tmp").join(name),
                outer: root.join("tmp").join(name),
            }),
            Err(err) => Err(format!(
                "cannot see process {pid}'s root directory (/proc/{pid}/root): {err}"
            )),
        }
    }

    /// Whether the process sees the file where this one does.
    pub fn same_root(&self) -> bool {
        self.inner == self.outer
    }
}

/// Signals a Node process started with `--heapsnapshot-signal`, waits for the snapshot it
/// writes into `node_dir`, and moves it into `dump_dir`.
///
/// # Errors
/// Why no snapshot came.
pub fn node_signal(
    target: &Target,
    signal: i32,
    node_dir: &Path,
    dump_dir: &Path,
    timeout: Duration,
) -> Result<Vec<Dumped>, String> {
    let before = node_snapshots(node_dir, target.own_pid);
    send(target.pid, signal)?;
    let started = Instant::now();
    let mut last_size = None;
    while started.elapsed() < timeout {
        std::thread::sleep(POLL * 3);
        let new = node_snapshots(node_dir, target.own_pid)
            .into_iter()
            .find(|path| !before.contains(path));
        if let Some(path) = new {
            let size = fs::metadata(&path).map(|meta| meta.len()).ok();
            // V8 writes the file in pieces: it is done when it ends as a snapshot ends and has
            // stopped growing.
            if size.is_some() && size == last_size && snapshot_complete(&path) {
                let moved = if node_dir == dump_dir {
                    path
                } else {
                    move_into(&path, dump_dir)?
                };
                return Ok(vec![Dumped {
                    path: moved,
                    kind: "v8-heapsnapshot",
                }]);
            }
            last_size = size;
        } else if !alive(target.pid) {
            return Err(format!(
                "process {} ended before its snapshot was written",
                target.pid
            ));
        }
    }
    Err(format!(
        "process {} wrote no heap snapshot into {} within {} of the signal",
        target.pid,
        node_dir.display(),
        duration_text(timeout)
    ))
}

/// Runs `jcmd PID GC.heap_dump -gz=1 PATH` and waits for it.
///
/// # Errors
/// Why no dump came (no jcmd, the JVM refused, it took longer than `timeout`).
pub fn jcmd(
    target: &Target,
    jcmd: &Path,
    path: &Path,
    timeout: Duration,
) -> Result<Vec<Dumped>, String> {
    let _ = fs::remove_file(path);
    let mut child = Command::new(jcmd)
        .arg(target.pid.to_string())
        .arg("GC.heap_dump")
        .arg("-gz=1")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| {
            format!(
                "cannot run {}: {err} (install a JDK, or put its jcmd on PATH)",
                jcmd.display()
            )
        })?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => std::thread::sleep(POLL),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "jcmd did not finish within {}",
                    duration_text(timeout)
                ));
            }
            Err(err) => return Err(format!("cannot wait for jcmd: {err}")),
        }
    };
    let mut output = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut output);
    }
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut output);
    }
    if status.success() && path.exists() {
        return Ok(vec![Dumped {
            path: path.to_owned(),
            kind: "hprof",
        }]);
    }
    Err(format!(
        "jcmd {} GC.heap_dump wrote no dump: {}",
        target.pid,
        output.trim().lines().last().unwrap_or("no output")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(args: &[&str]) -> String {
        program_name(&args.iter().map(|arg| (*arg).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn programs_are_named_by_what_they_run() {
        assert_eq!(
            name(&["python3", "-u", "/srv/app/serve.py", "--port", "8"]),
            "serve"
        );
        assert_eq!(name(&["python3", "-m", "uvicorn", "app:api"]), "uvicorn");
        assert_eq!(name(&["python3", "-c", "import x\nprint(1)"]), "python3");
        assert_eq!(
            name(&["node", "--heapsnapshot-signal=SIGUSR2", "server.js"]),
            "server"
        );
        assert_eq!(name(&["env", "python3", "job.py"]), "job");
        assert_eq!(name(&["./my service"]), "myservice");
        assert_eq!(name(&[]), "process");
    }

    #[test]
    fn dumps_are_named_by_program_pid_number_and_time() {
        let command = [
            "java".to_owned(),
            "-Xmx1g".to_owned(),
            "Grow.java".to_owned(),
        ];
        let jcmd = DumpMethod::Jcmd {
            jcmd: PathBuf::from("jcmd"),
        };
        assert_eq!(
            dump_file_name(&command, 77, 2, 12_900, &jcmd),
            "Grow-77-dump2-12s.hprof.gz"
        );
        assert_eq!(
            dump_file_name(&[], 5, 1, 0, &DumpMethod::PythonInject),
            "process-5-dump1-0s.hgd"
        );
    }

    #[test]
    fn runtimes_are_told_by_their_executable() {
        let python = Path::new("/usr/bin/python3.11");
        assert_eq!(runtime_of(Some(python), &[]), Runtime::Python);
        assert_eq!(
            runtime_of(Some(Path::new("/usr/bin/node")), &[]),
            Runtime::Node
        );
        assert_eq!(
            runtime_of(Some(Path::new("/opt/node20/bin/node20")), &[]),
            Runtime::Node
        );
        assert_eq!(
            runtime_of(Some(Path::new("/usr/bin/nodemon")), &[]),
            Runtime::Other
        );
        assert_eq!(
            runtime_of(Some(Path::new("/usr/lib/jvm/java-17/bin/java")), &[]),
            Runtime::Java
        );
        assert_eq!(
            runtime_of(None, &["python3".into(), "x.py".into()]),
            Runtime::Python
        );
        assert_eq!(
            runtime_of(Some(Path::new("/bin/bash")), &[]),
            Runtime::Other
        );
    }

    #[test]
    fn options_and_signals_are_read_as_node_reads_them() {
        let args: Vec<String> = [
            "node",
            "--heapsnapshot-signal=SIGUSR2",
            "--diagnostic-dir",
            "/var/tmp",
            "app.js",
        ]
        .iter()
        .map(|arg| (*arg).to_owned())
        .collect();
        assert_eq!(
            option_value(&args, "--heapsnapshot-signal"),
            Some("SIGUSR2")
        );
        assert_eq!(option_value(&args, "--diagnostic-dir"), Some("/var/tmp"));
        assert_eq!(option_value(&args, "--inspect"), None);
        assert_eq!(signal_number("SIGUSR2"), Some(libc::SIGUSR2));
        assert_eq!(signal_number("USR1"), Some(libc::SIGUSR1));
        assert_eq!(signal_number("12"), Some(12));
        assert_eq!(signal_number("SIGNOPE"), None);
        assert_eq!(signal_number("99"), None);
    }

    #[test]
    fn requests_quote_paths_as_json() {
        assert_eq!(json_string("/tmp/a \"b\"\\c"), "\"/tmp/a \\\"b\\\"\\\\c\"");
    }

    #[test]
    fn this_process_cannot_be_dumped_and_says_why() {
        let target = inspect(std::process::id());
        assert_eq!(target.runtime, Runtime::Other);
        assert!(
            target
                .method
                .unwrap_err()
                .contains("Python, Node.js or a JVM")
        );
    }
}
