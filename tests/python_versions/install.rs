//! `install()` and `heapgraph record --act` on each version: the dump on SIGUSR2, the
//! recorder's dump through the installed dumper (the marker and the request, across the
//! process's root) and by injection without it; and the marker never written through a link
//! that another user planted at its name in `/tmp`.

use crate::dumps::run;
use crate::interpreters::{Python, Shared, per_version};
use crate::support::{assert_gdb_refusal, gdb_calls_functions, json, path_str};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How many gc-tracked objects of `type_name` a dump holds.
fn tracked(dump: &Path, type_name: &str) -> Option<u64> {
    let summary = json(&[
        "summary",
        path_str(dump),
        "--kind",
        "object",
        "--format",
        "json",
    ]);
    summary["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["type"] == type_name)
        .map(|row| row["count"].as_u64().unwrap())
}

fn install_dumps_on_sigusr2(python: &Python) {
    let dir = python.shared_dir("install");
    let script = "import os, signal, sys, heapgraph_dump\n\
                  class Marker: pass\n\
                  keep = [Marker() for _ in range(7)]\n\
                  heapgraph_dump.install(path=sys.argv[1])\n\
                  os.kill(os.getpid(), signal.SIGUSR2)\n\
                  print(os.path.getsize(sys.argv[1]) > 0)\n";
    assert_eq!(
        run(python, &dir, script, &[&dir.inner("on-signal.hgd")]).trim(),
        "True"
    );
    assert_eq!(
        tracked(&dir.outer("on-signal.hgd"), "__main__.Marker"),
        Some(7)
    );
}

/// A service that grows past the threshold, then waits until a dump appears in the directory
/// it is given (as it sees it).
fn growing(install: bool) -> String {
    format!(
        r#"
import os, sys, time
{}
class Ballast:
    def __init__(self):
        self.payload = b"y" * (1 << 20)
held = []
for _ in range(120):
    held.append(Ballast())
    time.sleep(0.01)
deadline = time.time() + 40
while time.time() < deadline and not any(n.endswith(".hgd") for n in os.listdir(sys.argv[1])):
    time.sleep(0.05)
time.sleep(0.5)
"#,
        if install {
            "import heapgraph_dump; heapgraph_dump.install()"
        } else {
            ""
        }
    )
}

/// `heapgraph record --act 100MiB -- PYTHON -c SERVICE DIR`: one dump, which holds the
/// service's ballast.
fn record_act_dumps(python: &Python, dir: &Shared, install: bool) {
    let dumps = dir.outer("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    let timeline = dir.outer("service.hgt");
    let program = growing(install);
    let mut argv = python.argv();
    argv.extend(["-c".to_owned(), program, dir.inner("dumps")]);
    let output = Command::new(env!("CARGO_BIN_EXE_heapgraph"))
        .args([
            "record",
            "--interval",
            "100ms",
            "--act",
            "100MiB",
            "--dump-dir",
        ])
        .arg(&dumps)
        .arg("-o")
        .arg(&timeline)
        .arg("--")
        .args(&argv)
        .env("PYTHONPATH", Python::dumper_path(dir))
        .output()
        .expect("heapgraph runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "python{}: {stderr}",
        python.version
    );
    let view = json(&["summary", path_str(&timeline), "--format", "json"]);
    if !install && python.version != "3.14" && !gdb_calls_functions() {
        // The act says why it took no dump, and the process, untouched, ran to its end.
        assert_gdb_refusal(&stderr);
        assert_eq!(view["dumps"].as_array().map(Vec::len), Some(0), "{view:#}");
        return;
    }
    let listed: Vec<(String, PathBuf)> = view["dumps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|dump| {
            (
                dump["kind"].as_str().unwrap().to_owned(),
                PathBuf::from(dump["path"].as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(
        listed.len(),
        1,
        "python{}: {stderr}\n{view:#}",
        python.version
    );
    assert_eq!(listed[0].0, "python-hgd");
    assert!(listed[0].1.starts_with(&dumps), "{listed:?}");
    let count = tracked(&listed[0].1, "__main__.Ballast").unwrap_or(0);
    assert!(
        (60..=120).contains(&count),
        "python{}: {count} Ballast objects",
        python.version
    );
    // How it was taken: the installed dumper's signal handler says what it wrote (on the
    // child's stderr, which is the recorder's); the injected dumper says nothing.
    assert_eq!(
        stderr.contains("heapgraph_dump: wrote "),
        install,
        "python{}: {stderr}",
        python.version
    );
}

fn record_act_dumps_through_the_installed_dumper(python: &Python) {
    let dir = python.shared_dir("record-installed");
    record_act_dumps(python, &dir, true);
}

fn record_act_dumps_by_injection(python: &Python) {
    let dir = python.shared_dir("record-injected");
    let _proc = python.proc_mounted();
    record_act_dumps(python, &dir, false);
}

/// Links owned by another user (`nobody`) at the marker's name and at the name the marker's
/// temporary file had, both pointing at a file of ours: `install()` writes neither through
/// them, and its marker is a file of its own.
fn install_never_writes_through_a_planted_link(python: &Python) {
    let dir = python.shared_dir("marker");
    let victim = dir.outer("victim");
    std::fs::write(&victim, "victim\n").unwrap();
    // The links name the file as the interpreter sees it.
    let victim_inner = dir.inner("victim");
    let mut child = python
        .command()
        .args([
            "-c",
            "import sys, heapgraph_dump\n\
             print('ready', flush=True)\n\
             sys.stdin.readline()\n\
             heapgraph_dump.install()\n\
             print('installed', flush=True)\n\
             sys.stdin.readline()\n",
        ])
        .env("PYTHONPATH", Python::dumper_path(&dir))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the interpreter runs");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let tmp = match &python.root {
        Some(root) => root.join("tmp"),
        None => PathBuf::from("/tmp"),
    };
    let marker = tmp.join(format!("heapgraph-dumper-{}", child.id()));
    let planted = [
        marker.clone(),
        tmp.join(format!("heapgraph-dumper-{}.tmp", child.id())),
    ];
    for link in &planted {
        let _ = std::fs::remove_file(link);
        std::os::unix::fs::symlink(&victim_inner, link).unwrap();
        std::os::unix::fs::lchown(link, Some(65534), Some(65534)).unwrap();
    }
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin).unwrap();
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "installed");
    let victim_text = std::fs::read_to_string(&victim).unwrap();
    let meta = std::fs::symlink_metadata(&marker).unwrap();
    let marker_text = std::fs::read_to_string(&marker).unwrap_or_default();
    writeln!(stdin).unwrap();
    let _ = child.wait();
    for link in &planted {
        let _ = std::fs::remove_file(link);
    }
    assert_eq!(
        victim_text, "victim\n",
        "python{}: written through a link",
        python.version
    );
    assert!(meta.is_file(), "the marker is not a file of its own");
    assert_eq!(meta.uid(), 0);
    assert!(marker_text.contains("\"signal\": 12"), "{marker_text}");
}

per_version!(
    install_dumps_on_sigusr2,
    record_act_dumps_through_the_installed_dumper,
    record_act_dumps_by_injection,
    install_never_writes_through_a_planted_link,
);
