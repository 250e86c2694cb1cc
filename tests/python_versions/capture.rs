//! `capture python --pid` on each version: through gdb up to 3.13, through `sys.remote_exec`
//! on 3.14 with no gdb anywhere (not in the root, not on heapgraph's `PATH`). The process runs
//! in its Debian root (a chroot), so the dump crosses `/proc/PID/root`; 3.11 runs beside
//! heapgraph. And the errors for a process that cannot be reached, each naming its cause and
//! its remedy.

use crate::interpreters::{Python, per_version};
use crate::support::{assert_gdb_refusal, gdb_calls_functions, json, path_str, temp_dir};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// A child that says `ready` and waits to be dumped. Killed when dropped.
struct Waiting {
    child: Child,
}

impl Waiting {
    fn start(python: &Python, program: &str, env: &[(&str, &str)]) -> Waiting {
        let mut command = python.command();
        command
            .arg("-c")
            .arg(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("the interpreter runs");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(
            line.trim(),
            "ready",
            "python{} did not start",
            python.version
        );
        Waiting { child }
    }

    fn planted(python: &Python) -> Waiting {
        Waiting::start(python, &planted_program(), &[])
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// 500 `Planted` objects, the garbage collected, then `time.sleep` in short steps: 3.14's
/// `sys.remote_exec` runs at the interpreter's next safe point. Nothing the dumper needs is
/// imported first: the capture imports it, and leaves no garbage for the dump to show.
fn planted_program() -> String {
    "import gc, time\n\
     class Planted: pass\n\
     keep = [Planted() for _ in range(500)]\n\
     gc.collect()\n\
     print('ready', flush=True)\n\
     while True:\n\
     \x20   time.sleep(0.05)\n"
        .to_owned()
}

/// The idle program of issue 22: nothing imported but `time`, sleeping in short steps inside
/// a function that has a local (whose frame, up to 3.12, keeps a dict of its locals once the
/// dumper has read them).
const IDLE_PROGRAM: &str = "import time\n\
                            def idle(pending):\n\
                            \x20   print('ready', flush=True)\n\
                            \x20   while True:\n\
                            \x20       time.sleep(0.05)\n\
                            idle([])\n";

/// `heapgraph capture python --pid PID -o OUT`, with `path` as heapgraph's `PATH` if given.
fn capture(pid: &str, out: &Path, path: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_heapgraph"));
    command.args([
        "capture",
        "python",
        "--pid",
        pid,
        "-o",
        path_str(out),
        "--timeout",
        "60",
    ]);
    if let Some(path) = path {
        command.env("PATH", path);
    }
    command.output().expect("heapgraph runs")
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A `PATH` with `chroot` and nothing else: no gdb, no python.
fn path_without_gdb(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let chroot = ["/usr/sbin/chroot", "/usr/bin/chroot"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("chroot is installed");
    let _ = std::fs::remove_file(bin.join("chroot"));
    std::os::unix::fs::symlink(chroot, bin.join("chroot")).unwrap();
    path_str(&bin).to_owned()
}

/// The dump holds the 500 objects, and nothing unreachable: the child had collected its
/// garbage, and every object of a live program is held.
fn check_planted_dump(out: &Path, version: &str) {
    let summary = json(&[
        "summary",
        path_str(out),
        "--kind",
        "object",
        "--format",
        "json",
    ]);
    let planted = summary["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["type"] == "__main__.Planted")
        .map(|row| row["count"].as_u64().unwrap());
    assert_eq!(planted, Some(500), "python{version}");
    let all = json(&["summary", path_str(out), "--format", "json"]);
    assert_eq!(all["unreachable_objects"], 0, "python{version}: {all:#}");
}

fn capture_pid_dumps_the_process_to_a_file_the_caller_reads(python: &Python) {
    // Where the caller wants the dump: outside the process's root.
    let dir = temp_dir(&format!("capture-py{}", python.version));
    let out = dir.join("live.hgd");
    let _proc = python.proc_mounted();
    let child = Waiting::planted(python);
    let no_gdb;
    let path = if python.version == "3.14" {
        // sys.remote_exec, and no gdb at all: not in the root, not on heapgraph's PATH.
        let root = python.root.as_ref().unwrap();
        assert!(!root.join("usr/bin/gdb").exists(), "the 3.14 root has gdb");
        no_gdb = path_without_gdb(&dir);
        Some(no_gdb.as_str())
    } else {
        None
    };
    let output = capture(&child.pid(), &out, path);
    drop(child);
    let stderr = stderr_of(&output);
    if python.version != "3.14" && !gdb_calls_functions() {
        assert_eq!(
            output.status.code(),
            Some(2),
            "python{}: {stderr}",
            python.version
        );
        assert_gdb_refusal(&stderr);
        return;
    }
    assert!(
        output.status.success(),
        "python{}: {stderr}",
        python.version
    );
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        said.contains(&format!("Python {} process", python.version)),
        "{said}"
    );
    check_planted_dump(&out, python.version);
    std::fs::remove_dir_all(&dir).ok();
}

/// A process whose user this one is not: the kernel refuses access to it (`/proc/PID/exe`
/// already), and the error says so and what to do.
fn capture_as_another_user_names_the_refusal(python: &Python) {
    let dir = temp_dir(&format!("capture-refused-py{}", python.version));
    let child = Waiting::planted(python);
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_heapgraph"))
        .args([
            "capture",
            "python",
            "--pid",
            &child.pid(),
            "-o",
            "/tmp/never.hgd",
        ])
        .output()
        .expect("setpriv runs");
    drop(child);
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the kernel refuses this user ptrace access")
            && stderr.contains("run heapgraph as root or as the process's user"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// An interpreter without the symbols injection needs. Up to 3.13 (gdb calls
/// `PyGILState_Ensure`): a program without Python's symbols under the interpreter's name (a
/// copy of `sleep`), as an embedding binary stripped of them would be. On 3.14
/// (`sys.remote_exec` finds the runtime by its ELF section `.PyRuntime`): the interpreter
/// itself, with that section renamed by `objcopy`.
fn capture_of_an_interpreter_without_symbols_says_so(python: &Python) {
    let shared = python.shared_dir("nosymbols");
    let name = format!("python{}", python.version);
    let copy = shared.outer(&name);
    let _proc = python.proc_mounted();
    let mut child = if python.version == "3.14" {
        let real = python.root.as_ref().unwrap().join("usr/bin/python3.14");
        let status = Command::new("objcopy")
            .arg("--rename-section")
            .arg(".PyRuntime=.PyRuntimX")
            .arg(&real)
            .arg(&copy)
            .status()
            .expect("objcopy runs (binutils)");
        assert!(status.success());
        let mut command = Command::new("chroot");
        command
            .arg(python.root.as_ref().unwrap())
            .arg(shared.inner(&name))
            .args([
                "-c",
                "import time\nprint('ready', flush=True)\nwhile True: time.sleep(0.05)",
            ]);
        command
    } else {
        let sleep = match &python.root {
            Some(root) => root.join("usr/bin/sleep"),
            None => "/usr/bin/sleep".into(),
        };
        std::fs::copy(sleep, &copy).unwrap();
        let mut command = match &python.root {
            Some(root) => {
                let mut command = Command::new("chroot");
                command.arg(root).arg(shared.inner(&name));
                command
            }
            None => Command::new(&copy),
        };
        command.arg("60");
        command
    };
    child.stdout(Stdio::piped());
    // The copy was just written: a fork of another test's thread may still hold it open for
    // writing for a moment (ETXTBSY), which says nothing of the capture.
    let mut child = (0..50)
        .find_map(|_| match child.spawn() {
            Err(err) if err.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20));
                None
            }
            spawned => Some(spawned),
        })
        .expect("the copy stays busy")
        .expect("the program runs");
    if python.version == "3.14" {
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
    } else {
        // gdb attaches whenever it comes; the copy only has to have started.
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let out = shared.outer("never.hgd");
    let output = capture(&child.id().to_string(), &out, None);
    let _ = child.kill();
    let _ = child.wait();
    let stderr = stderr_of(&output);
    assert_eq!(
        output.status.code(),
        Some(2),
        "python{}: {stderr}",
        python.version
    );
    let expected = if python.version == "3.14" {
        "found no PyRuntime section"
    } else {
        "gdb found no PyGILState_Ensure"
    };
    assert!(
        stderr.contains(expected) && stderr.contains("heapgraph_dump.install()"),
        "python{}: {stderr}",
        python.version
    );
}

/// Issue 22, item 6: two captures of an idle process diff to nothing. The first capture
/// imports what the dumper needs into a process that has none of it (`array`, `opcode`; on
/// 3.13 and 3.14 `array` brings `collections`, whose first import leaves garbage cycles), and
/// the dumper then runs in it; the second finds the same objects: no type and no holder
/// changed, not one object more or less (the oracle: the process did nothing between them).
/// The first dump names the modules the capture imported; the second, none.
fn two_captures_of_an_idle_process_diff_to_nothing(python: &Python) {
    let dir = temp_dir(&format!("idle-py{}", python.version));
    let _proc = python.proc_mounted();
    let child = Waiting::start(python, IDLE_PROGRAM, &[]);
    let no_gdb;
    let path = if python.version == "3.14" {
        no_gdb = path_without_gdb(&dir);
        Some(no_gdb.as_str())
    } else {
        None
    };
    let dumps = [dir.join("first.hgd"), dir.join("second.hgd")];
    if python.version != "3.14" && !gdb_calls_functions() {
        let output = capture(&child.pid(), &dumps[0], path);
        assert_eq!(output.status.code(), Some(2), "python{}", python.version);
        assert_gdb_refusal(&stderr_of(&output));
        return;
    }
    for dump in &dumps {
        let output = capture(&child.pid(), dump, path);
        assert!(
            output.status.success(),
            "python{}: {}",
            python.version,
            stderr_of(&output)
        );
    }
    drop(child);
    let diff = json(&[
        "diff",
        path_str(&dumps[0]),
        path_str(&dumps[1]),
        "--format",
        "json",
    ]);
    let version = python.version;
    let total = &diff["total"];
    assert_eq!(
        total["objects_before"], total["objects_after"],
        "python{version}: {total}"
    );
    for delta in ["delta", "shallow_delta", "retained_delta"] {
        assert_eq!(total[delta], 0, "python{version}: {total}");
    }
    let types = diff["types"].as_array().unwrap();
    assert!(!types.is_empty());
    let changed: Vec<_> = types
        .iter()
        .filter(|row| {
            ["count_delta", "shallow_delta", "retained_delta"]
                .iter()
                .any(|delta| row[delta] != 0)
        })
        .collect();
    assert!(changed.is_empty(), "python{version}: {changed:#?}");
    let holders = diff["holders"].as_array().unwrap();
    assert!(!holders.is_empty());
    let moved: Vec<_> = holders
        .iter()
        .filter(|holder| holder["status"] != "same" || holder["retained_delta"] != 0)
        .collect();
    assert!(moved.is_empty(), "python{version}: {moved:#?}");
    let notes = |dump: &str| diff[dump]["notes"].to_string();
    assert!(
        notes("old_dump").contains("this capture imported") && notes("old_dump").contains("array"),
        "python{version}: {}",
        notes("old_dump")
    );
    assert!(
        !notes("dump").contains("this capture imported"),
        "python{version}: {}",
        notes("dump")
    );
    std::fs::remove_dir_all(&dir).ok();
}

per_version!(
    capture_pid_dumps_the_process_to_a_file_the_caller_reads,
    two_captures_of_an_idle_process_diff_to_nothing,
    capture_as_another_user_names_the_refusal,
    capture_of_an_interpreter_without_symbols_says_so,
);

/// gdb may not attach to a process that another tracer holds (here strace): the error says
/// so, in gdb's words, and what to do. Up to 3.13, where capture goes through gdb.
fn capture_of_a_traced_process_names_the_tracer(python: &Python) {
    let child = Waiting::planted(python);
    let mut strace = Command::new("strace")
        .args(["-o", "/dev/null", "-p", &child.pid()])
        .stderr(Stdio::piped())
        .spawn()
        .expect("strace runs (apt-get install strace; tests/setup.sh does)");
    // strace says it attached on its stderr.
    let mut line = String::new();
    BufReader::new(strace.stderr.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("attached"), "{line}");
    let dir = temp_dir(&format!("traced-py{}", python.version));
    let output = capture(&child.pid(), &dir.join("never.hgd"), None);
    std::fs::remove_dir_all(&dir).ok();
    let _ = strace.kill();
    let _ = strace.wait();
    drop(child);
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ptrace: Operation not permitted")
            && stderr.contains("another debugger or tracer is attached")
            && stderr.contains("detach the other tracer"),
        "{stderr}"
    );
}

mod capture_of_a_traced_process_names_the_tracer {
    use crate::interpreters::Python;
    #[test]
    fn py3_9() {
        super::capture_of_a_traced_process_names_the_tracer(&Python::get("3.9"));
    }
    #[test]
    fn py3_11() {
        super::capture_of_a_traced_process_names_the_tracer(&Python::get("3.11"));
    }
    #[test]
    fn py3_13() {
        super::capture_of_a_traced_process_names_the_tracer(&Python::get("3.13"));
    }
}

/// 3.14: a process started with remote debugging off, by environment or by `-X`, and a root
/// whose `/proc` is not mounted: each error names the cause and the remedy.
#[test]
fn remote_exec_refusals_name_their_cause_py3_14() {
    let python = Python::get("3.14");
    let dir = temp_dir("remote-refusals");
    let out = dir.join("never.hgd");
    {
        let _proc = python.proc_mounted();
        let child = Waiting::start(
            &python,
            &planted_program(),
            &[("PYTHON_DISABLE_REMOTE_DEBUG", "1")],
        );
        let stderr = stderr_of(&capture(&child.pid(), &out, None));
        assert!(
            stderr.contains("PYTHON_DISABLE_REMOTE_DEBUG is set in its environment")
                && stderr.contains("heapgraph_dump.install()"),
            "{stderr}"
        );
        drop(child);
        let mut command = python.command();
        let mut child = command
            .args(["-X", "disable-remote-debug", "-c", &planted_program()])
            .stdout(Stdio::piped())
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let stderr = stderr_of(&capture(&child.id().to_string(), &out, None));
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            stderr.contains("started with -X disable-remote-debug")
                && stderr.contains("restart it without that"),
            "{stderr}"
        );
    }
    // No /proc in the root: the tests that mount it wait.
    let _no_proc = python.proc_unmounted();
    let child = Waiting::planted(&python);
    let stderr = stderr_of(&capture(&child.pid(), &out, None));
    let root = python.root.as_ref().unwrap();
    assert!(
        stderr.contains("whose /proc is not mounted")
            && stderr.contains(&format!("mount -t proc proc {}/proc", root.display())),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// heapgraph beside the process inside the 3.14 root, as in a container that has no gdb: they
/// share a root, and `sys.remote_exec` is run by the process's own executable
/// (`/proc/PID/exe`).
#[test]
fn capture_from_inside_the_root_py3_14() {
    let python = Python::get("3.14");
    let root = python.root.clone().unwrap();
    let _proc = python.proc_mounted();
    let shared = python.shared_dir("inside");
    std::fs::copy(env!("CARGO_BIN_EXE_heapgraph"), shared.outer("heapgraph")).unwrap();
    let child = Waiting::planted(&python);
    let output = Command::new("chroot")
        .arg(&root)
        .arg(shared.inner("heapgraph"))
        .args(["capture", "python", "--pid", &child.pid(), "-o"])
        .arg(shared.inner("live.hgd"))
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .output()
        .expect("chroot runs");
    drop(child);
    let stderr = stderr_of(&output);
    assert!(output.status.success(), "{stderr}");
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(!said.contains("in its own root"), "{said}");
    check_planted_dump(&shared.outer("live.hgd"), python.version);
}
