//! `heapgraph capture python`: dumps a running Python process from outside, by injecting the
//! embedded dumper. Python 3.14 and later take it through `sys.remote_exec` (run by the
//! target's own interpreter); older ones through gdb, which takes the GIL with
//! `PyGILState_Ensure`, runs the dumper with `PyRun_SimpleString` and releases the GIL.
//!
//! A process in a chroot or a container sees its own root: the dumper and the dump are
//! exchanged through its `/tmp` (`/proc/PID/root/tmp` from here), the dump is then moved to
//! where the caller asked, and gdb reads the process's libraries from its root.

use crate::args::CaptureArgs;
use anyhow::{Context, bail};
use heapgraph_capture::python::{DUMPER_SOURCE, SUPPORTED, capture_statement};
use heapgraph_capture::sampler::procfs;
use heapgraph_capture::sampler::trigger::{Shared, move_file};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What `/proc` says about the target.
struct Target {
    pid: u32,
    /// Its pid in its own pid namespace (what `/proc` shows inside its root).
    own_pid: u32,
    /// `(major, minor)`, from the executable's or libpython's name.
    version: Option<(u32, u32)>,
    exe: String,
    /// `/proc/PID/root`, when the process has another root than ours.
    root: Option<PathBuf>,
}

/// `3.11` out of names like `python3.11`, `libpython3.11.so.1.0`.
fn version_in(name: &str) -> Option<(u32, u32)> {
    let at = name.find("python3.")?;
    let digits: String = name[at + 8..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((3, digits.parse().ok()?))
}

/// Why this process may not look into process `pid`, and what to do.
fn refused(pid: u32, what: &str, error: &std::io::Error) -> String {
    format!(
        "cannot read process {pid}'s {what} ({error}): the kernel refuses this user ptrace access \
         to it (it runs as another user, or is not dumpable{}); run heapgraph as root or as the \
         process's user, or in a container grant CAP_SYS_PTRACE",
        yama_scope().map_or_else(String::new, |scope| format!(
            ", or kernel.yama.ptrace_scope is {scope}"
        ))
    )
}

/// `kernel.yama.ptrace_scope` when it restricts attaching (1 or more).
fn yama_scope() -> Option<String> {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").ok()?;
    let scope = scope.trim().to_owned();
    (scope != "0").then_some(scope)
}

fn inspect(pid: u32) -> anyhow::Result<Target> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    if !proc_dir.exists() {
        bail!("no process has pid {pid}");
    }
    let exe = std::fs::read_link(proc_dir.join("exe"))
        .map(|path| path.display().to_string())
        .map_err(|error| anyhow::anyhow!(refused(pid, "executable", &error)))?;
    let maps = std::fs::read_to_string(proc_dir.join("maps")).unwrap_or_default();
    let libpython = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.contains("libpython3"));
    let exe_name = Path::new(&exe)
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let is_python = exe_name.starts_with("python") || libpython.is_some();
    if !is_python {
        bail!(
            "process {pid} is not a Python interpreter (its executable is {exe}); \
             `heapgraph capture python` attaches to python3 processes only"
        );
    }
    let root = procfs::separate_root(pid)
        .map_err(|error| anyhow::anyhow!(refused(pid, "root directory", &error)))?;
    let version = libpython
        .and_then(version_in)
        .or_else(|| version_in(&exe_name))
        .or_else(|| root.is_none().then(|| ask_version(&exe)).flatten());
    let status = procfs::status(pid).unwrap_or_default();
    let own_pid = if status.own_pid == 0 {
        pid
    } else {
        status.own_pid
    };
    Ok(Target {
        pid,
        own_pid,
        version,
        exe,
        root,
    })
}

/// The interpreter's version, from running its own executable (`python3` names carry none).
fn ask_version(exe: &str) -> Option<(u32, u32)> {
    let output = Command::new(exe)
        .args([
            "-c",
            "import sys; print('python%d.%d' % sys.version_info[:2])",
        ])
        .output()
        .ok()?;
    version_in(String::from_utf8_lossy(&output.stdout).trim())
}

/// Where the dumper and its output live for the target: absolute, and free of characters that
/// would need quoting inside the injected Python.
fn plain_path(path: &Path) -> anyhow::Result<String> {
    let text = path.display().to_string();
    if text.contains(['"', '\'', '\\', '\n']) {
        bail!("{text}: the path has quotes or backslashes; pick a plain one");
    }
    Ok(text)
}

pub(crate) fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    let path = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir()?.join(path)
    };
    Ok(path)
}

pub(crate) fn python(args: &CaptureArgs) -> anyhow::Result<String> {
    if args.print_dumper {
        return Ok(DUMPER_SOURCE.to_owned());
    }
    let (Some(pid), Some(output)) = (args.pid, &args.output) else {
        bail!("give --pid PID and -o FILE.hgd, or --print-dumper");
    };
    let output = absolute(output)?;
    let done = dump_python(pid, &output, args.timeout)?;
    Ok(format!("wrote {} ({done})\n", output.display()))
}

/// The files exchanged with the target: the dumper it runs, the script `sys.remote_exec`
/// hands it, and the dump it writes. Removed when dropped, but for a dump that was moved.
struct Exchange {
    dumper: Shared,
    script: Shared,
    dump: Shared,
}

impl Exchange {
    fn new(target: &Target, output: &Path) -> anyhow::Result<Exchange> {
        let tag = format!("{}-{}", target.own_pid, std::process::id());
        let shared = |wanted: &Path, name: String| {
            Shared::for_process(target.pid, wanted, &name).map_err(anyhow::Error::msg)
        };
        let temp = std::env::temp_dir();
        Ok(Exchange {
            dumper: shared(
                &temp.join(format!("heapgraph-dumper-{tag}.py")),
                format!("heapgraph-dumper-{tag}.py"),
            )?,
            script: shared(
                &temp.join(format!("heapgraph-dumper-{tag}.run.py")),
                format!("heapgraph-dumper-{tag}.run.py"),
            )?,
            dump: shared(output, format!("heapgraph-dump-{tag}.hgd"))?,
        })
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.dumper.outer);
        let _ = std::fs::remove_file(&self.script.outer);
        if !self.dump.same_root() {
            let _ = std::fs::remove_file(&self.dump.outer);
        }
    }
}

/// Injects the dumper into Python process `pid` and waits until it has written `output`
/// (absolute); says which interpreter it was.
pub(crate) fn dump_python(pid: u32, output: &Path, timeout: Duration) -> anyhow::Result<String> {
    let target = inspect(pid)?;
    if let Some(version) = target.version
        && (version < SUPPORTED.0 || version > SUPPORTED.1)
    {
        bail!(
            "process {pid} runs Python {}.{}; the dumper supports {}.{} to {}.{}",
            version.0,
            version.1,
            SUPPORTED.0.0,
            SUPPORTED.0.1,
            SUPPORTED.1.0,
            SUPPORTED.1.1
        );
    }
    plain_path(output)?;
    let exchange = Exchange::new(&target, output)?;
    let _ = std::fs::remove_file(output);
    let _ = std::fs::remove_file(&exchange.dump.outer);
    std::fs::write(&exchange.dumper.outer, DUMPER_SOURCE).with_context(|| {
        format!(
            "cannot write the dumper to {}",
            exchange.dumper.outer.display()
        )
    })?;
    let code = capture_statement(
        &plain_path(&exchange.dumper.inner)?,
        &plain_path(&exchange.dump.inner)?,
    );
    let remote = target.version.is_some_and(|v| v >= (3, 14));
    if remote {
        remote_exec(&target, &exchange, &code)?;
    } else {
        gdb(&target, &code)?;
    }
    wait_for(&exchange.dump.outer, timeout, pid, remote)?;
    if !exchange.dump.same_root() {
        move_file(&exchange.dump.outer, output).map_err(anyhow::Error::msg)?;
    }
    Ok(format!(
        "Python {} process {pid}, {}{}",
        target.version.map_or_else(
            || "3".to_owned(),
            |(major, minor)| format!("{major}.{minor}")
        ),
        target.exe,
        if target.root.is_some() {
            " (in its own root, through its /tmp)"
        } else {
            ""
        }
    ))
}

/// Whether the process was started with remote debugging turned off: `PYTHON_DISABLE_REMOTE_DEBUG`
/// in its environment, or `-X disable-remote-debug` on its command line.
fn remote_debug_disabled(pid: u32) -> Option<&'static str> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    if environ
        .split(|&byte| byte == 0)
        .any(|entry| entry.starts_with(b"PYTHON_DISABLE_REMOTE_DEBUG="))
    {
        return Some("PYTHON_DISABLE_REMOTE_DEBUG is set in its environment");
    }
    let args = procfs::command_line(pid);
    let disabled = args
        .windows(2)
        .any(|pair| pair[0] == "-X" && pair[1] == "disable-remote-debug")
        || args.iter().any(|arg| arg == "-Xdisable-remote-debug");
    disabled.then_some("it was started with -X disable-remote-debug")
}

/// What to do when remote debugging is off in the target.
const NO_REMOTE_DEBUG: &str = "restart it without that, or have the program call \
     heapgraph_dump.install() and dump it with `kill -USR2` or `heapgraph record --act` \
     (`heapgraph capture python --print-dumper` prints the module)";

/// Python 3.14's `sys.remote_exec`, run by the target's own interpreter: the one on its
/// executable's path when it shares our root, else inside its root (`chroot`), where its
/// `/proc` must be mounted, as `sys.remote_exec` reads the target through it.
fn remote_exec(target: &Target, exchange: &Exchange, code: &str) -> anyhow::Result<()> {
    let pid = target.pid;
    if let Some(reason) = remote_debug_disabled(pid) {
        bail!("process {pid} cannot run sys.remote_exec: {reason}; {NO_REMOTE_DEBUG}");
    }
    std::fs::write(&exchange.script.outer, code).with_context(|| {
        format!(
            "cannot write the script to {}",
            exchange.script.outer.display()
        )
    })?;
    let script = plain_path(&exchange.script.inner)?;
    let mut command = match &target.root {
        None => {
            // Its executable through /proc: there even when the file was replaced since.
            let mut command = Command::new(format!("/proc/{pid}/exe"));
            command.arg("-I");
            command.args([
                "-c",
                &format!("import sys; sys.remote_exec({pid}, '{script}')"),
            ]);
            command
        }
        Some(root) => {
            let own_pid = target.own_pid;
            if !root.join(format!("proc/{own_pid}")).exists() {
                bail!(
                    "process {pid} runs in another root ({}), whose /proc is not mounted; \
                     sys.remote_exec reads the process through /proc: mount it there \
                     (`mount -t proc proc {}/proc`), or have the program call \
                     heapgraph_dump.install()",
                    display_root(root),
                    display_root(root)
                );
            }
            // The interpreter of the process's own root, found through that root's /proc.
            let mut command = Command::new("chroot");
            command.arg(root).arg(format!("/proc/{own_pid}/exe")).args([
                "-I",
                "-c",
                &format!("import sys; sys.remote_exec({own_pid}, '{script}')"),
            ]);
            command
        }
    };
    let output = command.output().with_context(|| {
        format!("cannot run process {pid}'s interpreter to call sys.remote_exec")
    })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap_or("").trim().to_owned();
    if stderr.contains("Remote debugging is not enabled") {
        bail!(
            "process {pid} has remote debugging turned off (PYTHON_DISABLE_REMOTE_DEBUG, \
             -X disable-remote-debug, or an interpreter built --without-remote-debug): {last}; \
             {NO_REMOTE_DEBUG}"
        );
    }
    if stderr.contains("PyRuntime") {
        bail!(
            "sys.remote_exec found no PyRuntime section in process {pid}'s executable ({}): \
             its interpreter hides the symbols that remote debugging needs ({last}); have the \
             program call heapgraph_dump.install() instead",
            target.exe
        );
    }
    if stderr.contains("Permission denied") || stderr.contains("Operation not permitted") {
        let denied = std::io::Error::from_raw_os_error(libc::EPERM);
        bail!("{} ({last})", refused(pid, "memory", &denied));
    }
    if target.root.is_some() && stderr.contains("chroot:") {
        bail!(
            "cannot enter process {pid}'s root ({}) to run its interpreter: {last}; entering \
             another root (chroot) needs root",
            target
                .root
                .as_deref()
                .map_or_else(String::new, display_root)
        );
    }
    bail!("sys.remote_exec on process {pid} failed: {last}")
}

/// Where `/proc/PID/root` points, for messages.
fn display_root(root: &Path) -> String {
    std::fs::read_link(root).map_or_else(
        |_| root.display().to_string(),
        |path| path.display().to_string(),
    )
}

/// gdb: take the GIL, run the dumper, release the GIL. The libraries are read from the
/// process's own root: a chroot's libc is not ours, and calling into it at our addresses would
/// crash the process. Where gdb cannot call functions at all (gdb 13 on CPUs with AMX fails
/// to write their extended register state back), a call into the target could take the GIL
/// and never release it, or break the system call it was stopped in, so gdb is first tried on
/// a process of our own.
fn gdb(target: &Target, code: &str) -> anyhow::Result<()> {
    // Attaching and finding the symbol call nothing in the process: their errors come first.
    let (stdout, stderr) = run_gdb(target, &["info address PyGILState_Ensure"])?;
    if stdout.contains("No symbol table")
        || stderr.contains("No symbol table")
        || stderr.contains("No symbol \"PyGILState_Ensure\"")
    {
        bail!(
            "gdb found no PyGILState_Ensure in process {} ({}): its interpreter hides its \
             symbols; have the program call heapgraph_dump.install() instead",
            target.pid,
            target.exe
        );
    }
    if !gdb_calls_functions() {
        bail!(
            "gdb cannot call functions in processes on this machine (it says: Couldn't write \
             extended state status, a known failure of gdb's function calls on CPUs with AMX \
             registers), so process {} was left untouched. Have the program call \
             heapgraph_dump.install() (`heapgraph capture python --print-dumper` prints the \
             module), or use a gdb whose function calls work on this CPU",
            target.pid
        );
    }
    // The statement inside gdb's C string literal.
    let run = format!(
        "call (int) PyRun_SimpleString(\"{}\")",
        code.replace('\\', "\\\\").replace('"', "\\\"")
    );
    let (stdout, stderr) = run_gdb(
        target,
        &[
            "call (int) PyGILState_Ensure()",
            &run,
            "call (void) PyGILState_Release($1)",
        ],
    )?;
    // `$2 = -1`: PyRun_SimpleString raised; the traceback went to the target's stderr.
    if stdout
        .lines()
        .any(|line| line.trim_start().starts_with("$2 = -1"))
    {
        bail!(
            "the dumper raised an exception inside process {} (its traceback is on that process's stderr)",
            target.pid
        );
    }
    if !stdout
        .lines()
        .any(|line| line.trim_start().starts_with("$2 = 0"))
    {
        let last = stderr.lines().last().unwrap_or("").trim();
        bail!(
            "gdb could not run the dumper in process {}: {last}",
            target.pid
        );
    }
    Ok(())
}

/// Whether gdb can call a function in a process here: tried on a `sleep` of our own, whose
/// `getpid` it calls. True where gdb is missing or the trial cannot run, which the real call
/// then reports.
fn gdb_calls_functions() -> bool {
    let sleeper = Command::new("sleep")
        .arg("30")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let Ok(mut sleeper) = sleeper else {
        return true;
    };
    let trial = Command::new("gdb")
        .args(["-batch", "-nx", "-p", &sleeper.id().to_string()])
        .args(["-ex", "call (int) getpid()", "-ex", "detach"])
        .stdin(std::process::Stdio::null())
        .output();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    match trial {
        Ok(trial) => {
            !String::from_utf8_lossy(&trial.stderr).contains("Couldn't write extended state")
        }
        Err(_) => true,
    }
}

/// One gdb session on the target: attach, run `commands`, detach. Returns its stdout and
/// stderr; gdb's own failures to start or to attach are errors that say what to do.
fn run_gdb(target: &Target, commands: &[&str]) -> anyhow::Result<(String, String)> {
    let pid = target.pid.to_string();
    let mut gdb = Command::new("gdb");
    gdb.args(["-batch", "-nx"])
        .args(["-ex", &format!("set sysroot /proc/{pid}/root")])
        .args(["-ex", &format!("file /proc/{pid}/exe")])
        .args(["-ex", &format!("attach {pid}")])
        .args(["-ex", "set confirm off"]);
    for command in commands {
        gdb.args(["-ex", command]);
    }
    let output = match gdb.args(["-ex", "detach"]).output() {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => bail!(
            "gdb is not installed, and process {} runs Python older than 3.14 (no sys.remote_exec): \
             install gdb (apt-get install gdb), or have the program call heapgraph_dump.install() \
             (`heapgraph capture python --print-dumper` prints the module)",
            target.pid
        ),
        Err(error) => return Err(error).context("cannot run gdb"),
    };
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if stderr.contains("ptrace: Operation not permitted") {
        bail!(
            "gdb may not attach to process {} (ptrace: Operation not permitted: another \
             debugger or tracer is attached to it, or the kernel refuses this user{}): detach \
             the other tracer, run heapgraph as root or as the process's user, or in a \
             container grant CAP_SYS_PTRACE",
            target.pid,
            yama_scope().map_or_else(String::new, |scope| format!(
                " (kernel.yama.ptrace_scope is {scope}: `sudo sysctl kernel.yama.ptrace_scope=0`)"
            ))
        );
    }
    Ok((String::from_utf8_lossy(&output.stdout).into_owned(), stderr))
}

fn wait_for(output: &Path, timeout: Duration, pid: u32, remote: bool) -> anyhow::Result<()> {
    let started = Instant::now();
    while started.elapsed() < timeout {
        if output.metadata().is_ok_and(|meta| meta.len() > 0) {
            return Ok(());
        }
        if !Path::new(&format!("/proc/{pid}")).exists() {
            bail!("process {pid} ended before it wrote {}", output.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!(
        "process {pid} wrote no {} within {}; look at its stderr for a Python traceback{}",
        output.display(),
        heapgraph_format::units::duration_text(timeout),
        if remote {
            " (sys.remote_exec runs the dumper at the interpreter's next safe point: a process              blocked in one long system call, such as a sleep or a read, runs it when the call              returns)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::version_in;

    #[test]
    fn versions_read_from_names() {
        assert_eq!(version_in("/usr/lib/libpython3.11.so.1.0"), Some((3, 11)));
        assert_eq!(version_in("python3.14"), Some((3, 14)));
        assert_eq!(version_in("python3"), None);
    }
}
