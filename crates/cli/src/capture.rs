//! `heapgraph capture python`: dumps a running Python process from outside, by injecting the
//! embedded dumper. Python 3.14 and later take it through `sys.remote_exec` (run by a matching
//! interpreter); older ones through gdb, which takes the GIL with `PyGILState_Ensure`, runs the
//! dumper with `PyRun_SimpleString` and releases the GIL.

use crate::args::CaptureArgs;
use anyhow::{Context, bail};
use heapgraph_capture::python::{DUMPER_SOURCE, SUPPORTED};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What `/proc` says about the target.
struct Target {
    pid: u32,
    /// `(major, minor)`, from the executable's or libpython's name.
    version: Option<(u32, u32)>,
    exe: String,
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

fn inspect(pid: u32) -> anyhow::Result<Target> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    if !proc_dir.exists() {
        bail!("no process has pid {pid}");
    }
    let exe = std::fs::read_link(proc_dir.join("exe"))
        .map(|path| path.display().to_string())
        .with_context(|| {
            format!("cannot see process {pid}'s executable: is it another user's? run heapgraph as that user or as root")
        })?;
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
    let version = libpython
        .and_then(version_in)
        .or_else(|| version_in(&exe_name))
        .or_else(|| ask_version(&exe));
    Ok(Target { pid, version, exe })
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
    let done = dump_python(pid, &output, Duration::from_secs(args.timeout_s))?;
    Ok(format!("wrote {} ({done})\n", output.display()))
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
    let output_text = plain_path(output)?;
    let _ = std::fs::remove_file(output);
    let dumper =
        std::env::temp_dir().join(format!("heapgraph-dumper-{pid}-{}.py", std::process::id()));
    std::fs::write(&dumper, DUMPER_SOURCE)
        .with_context(|| format!("cannot write the dumper to {}", dumper.display()))?;
    let dumper_text = plain_path(&dumper)?;
    let code = format!(
        "import runpy; runpy.run_path('{dumper_text}', run_name='heapgraph_dump')['dump']('{output_text}')"
    );
    let how = if target.version.is_some_and(|v| v >= (3, 14)) {
        remote_exec(&target, &dumper, &code)
    } else {
        gdb(&target, &code)
    };
    let _ = std::fs::remove_file(&dumper);
    how?;
    wait_for(output, timeout, pid)?;
    Ok(format!(
        "Python {} process {pid}, {}",
        target.version.map_or_else(
            || "3".to_owned(),
            |(major, minor)| format!("{major}.{minor}")
        ),
        target.exe
    ))
}

/// Python 3.14's `sys.remote_exec`, run by an interpreter of the same version.
fn remote_exec(target: &Target, dumper: &Path, code: &str) -> anyhow::Result<()> {
    let (major, minor) = target.version.unwrap_or((3, 14));
    let script = dumper.with_extension("run.py");
    std::fs::write(&script, code)?;
    let interpreter = format!("python{major}.{minor}");
    let status = Command::new(&interpreter)
        .args([
            "-c",
            &format!("import sys; sys.remote_exec({}, {:?})", target.pid, script.display().to_string()),
        ])
        .status()
        .with_context(|| {
            format!("process {} runs Python {major}.{minor}, whose sys.remote_exec needs {interpreter} on PATH", target.pid)
        })?;
    if !status.success() {
        bail!(
            "{interpreter} could not run sys.remote_exec on process {} (see its message above); \
             attaching needs the same user or root, and remote debugging enabled in the target",
            target.pid
        );
    }
    Ok(())
}

/// gdb: take the GIL, run the dumper, release the GIL.
fn gdb(target: &Target, code: &str) -> anyhow::Result<()> {
    let pid = target.pid.to_string();
    let run = format!("call (int) PyRun_SimpleString(\"{code}\")");
    let output = Command::new("gdb")
        .args(["-p", &pid, "-batch", "-nx", "-ex", "set confirm off"])
        .args(["-ex", "call (int) PyGILState_Ensure()"])
        .args(["-ex", &run])
        .args(["-ex", "call (void) PyGILState_Release($1)"])
        .args(["-ex", "detach"])
        .output();
    let output = match output {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => bail!(
            "gdb is not installed, and process {} runs Python older than 3.14 (no sys.remote_exec): \
             install gdb (apt-get install gdb), or have the program call heapgraph_dump.install() \
             (`heapgraph capture python --print-dumper` prints the module)",
            target.pid
        ),
        Err(error) => return Err(error).context("cannot run gdb"),
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("ptrace: Operation not permitted") {
        let scope =
            std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").unwrap_or_default();
        bail!(
            "gdb may not attach to process {} (ptrace: Operation not permitted; \
             kernel.yama.ptrace_scope is {}): run heapgraph as root or as the process's user with \
             `sudo sysctl kernel.yama.ptrace_scope=0`, or in a container grant CAP_SYS_PTRACE",
            target.pid,
            scope.trim()
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    if stdout.contains("No symbol table") || stderr.contains("No symbol \"PyGILState_Ensure\"") {
        bail!(
            "gdb found no PyGILState_Ensure in process {}: its interpreter hides its symbols; \
             have the program call heapgraph_dump.install() instead",
            target.pid
        );
    }
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
    Ok(())
}

fn wait_for(output: &Path, timeout: Duration, pid: u32) -> anyhow::Result<()> {
    let started = Instant::now();
    while started.elapsed() < timeout {
        if output.metadata().is_ok_and(|meta| meta.len() > 0) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!(
        "process {pid} wrote no {} within {} s; look at its stderr for a Python traceback",
        output.display(),
        timeout.as_secs()
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
