//! The interpreters of the tier: CPython 3.9, 3.13 and 3.14 in the Debian roots that
//! `tests/python-roots/build.sh` makes (bullseye, trixie, sid), run with `chroot`, and this
//! machine's own `python3.11`. Files are exchanged with a root through its `/tmp`, which is
//! `ROOT/tmp` from here. `/proc` is mounted into a root only while a test needs it, and
//! unmounted when the last such test ends, failed or not.

use crate::support::repo_root;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Where the roots are: `$HEAPGRAPH_PYTHON_ROOTS`, else build.sh's default.
fn roots_dir() -> PathBuf {
    std::env::var_os("HEAPGRAPH_PYTHON_ROOTS").map_or_else(
        || PathBuf::from("/var/cache/heapgraph/python-roots"),
        PathBuf::from,
    )
}

/// One CPython of the tier.
pub(crate) struct Python {
    /// `3.9`, `3.11`, `3.13`, `3.14`.
    pub(crate) version: &'static str,
    /// The Debian root it runs in; `None` for this machine's own.
    pub(crate) root: Option<PathBuf>,
}

/// A directory both the interpreter and the tests see: `inner` as the interpreter names it,
/// `outer` from here. Removed when dropped.
pub(crate) struct Shared {
    pub(crate) inner: PathBuf,
    pub(crate) outer: PathBuf,
}

impl Shared {
    /// `name` in the directory, as the interpreter names it.
    pub(crate) fn inner(&self, name: &str) -> String {
        self.inner.join(name).display().to_string()
    }

    /// `name` in the directory, from here.
    pub(crate) fn outer(&self, name: &str) -> PathBuf {
        self.outer.join(name)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.outer);
    }
}

impl Python {
    /// The tier's interpreter of `version`. A root that is missing fails the test, with what to
    /// run.
    pub(crate) fn get(version: &'static str) -> Python {
        if version == "3.11" {
            return Python {
                version,
                root: None,
            };
        }
        let root = roots_dir().join(format!("py{version}"));
        assert!(
            root.join(".heapgraph-root").is_file()
                && root.join(format!("usr/bin/python{version}")).is_file(),
            "the Python {version} root {} is missing: run tests/setup.sh (as root), \
             which builds it with tests/python-roots/build.sh",
            root.display()
        );
        Python {
            version,
            root: Some(root),
        }
    }

    /// The interpreter's own path, as it sees it.
    pub(crate) fn executable(&self) -> String {
        match self.root {
            Some(_) => format!("/usr/bin/python{}", self.version),
            None => format!("python{}", self.version),
        }
    }

    /// The command line that runs the interpreter (`chroot ROOT /usr/bin/python3.X`, or
    /// `python3.11`), for commands that take one (`heapgraph record -- …`).
    pub(crate) fn argv(&self) -> Vec<String> {
        match &self.root {
            Some(root) => vec![
                "chroot".to_owned(),
                root.display().to_string(),
                self.executable(),
            ],
            None => vec![self.executable()],
        }
    }

    /// A command that runs the interpreter.
    pub(crate) fn command(&self) -> Command {
        let argv = self.argv();
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]);
        command
    }

    /// A fresh directory for test `name` that the interpreter sees too, holding the dumper
    /// (`crates/capture/python/heapgraph_dump.py`) and the service fixture
    /// (`fixtures/python/leaky_service.py`) as the repository lays them out.
    pub(crate) fn shared_dir(&self, name: &str) -> Shared {
        let leaf = format!(
            "heapgraph-tier-{}-py{}-{name}",
            std::process::id(),
            self.version
        );
        let shared = match &self.root {
            Some(root) => Shared {
                inner: Path::new("/tmp").join(&leaf),
                outer: root.join("tmp").join(&leaf),
            },
            None => {
                let dir = std::env::temp_dir().join(&leaf);
                Shared {
                    inner: dir.clone(),
                    outer: dir,
                }
            }
        };
        let _ = std::fs::remove_dir_all(&shared.outer);
        for file in [
            "crates/capture/python/heapgraph_dump.py",
            "fixtures/python/leaky_service.py",
        ] {
            let to = shared.outer.join(file);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(repo_root().join(file), &to).unwrap();
        }
        shared
    }

    /// The `PYTHONPATH` under which `import heapgraph_dump` finds the dumper of `dir`.
    pub(crate) fn dumper_path(dir: &Shared) -> String {
        dir.inner("crates/capture/python")
    }

    /// Mounts `/proc` in the root while the guard lives (`sys.remote_exec`, run in the root,
    /// reads the target through it). This machine's own interpreter needs none.
    pub(crate) fn proc_mounted(&self) -> Option<ProcMount> {
        self.root.as_ref().map(|root| ProcMount::new(root))
    }

    /// Waits until no test has `/proc` mounted in a root, and keeps it so while the guard
    /// lives; fails if the root's `/proc` is mounted by something else.
    pub(crate) fn proc_unmounted(&self) -> NoProc {
        let alone = PROC_USERS
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(root) = &self.root {
            // What a killed run left.
            unmount(&root.join("proc"));
        }
        NoProc { _alone: alone }
    }
}

/// How many live guards each root's `/proc` mount has.
static MOUNTS: Mutex<BTreeMap<PathBuf, usize>> = Mutex::new(BTreeMap::new());

/// Held shared by each [`ProcMount`], alone by [`NoProc`]: a test that needs a root without
/// `/proc` waits until no test uses it.
static PROC_USERS: RwLock<()> = RwLock::new(());

/// While it lives, no root has `/proc` mounted by a test.
pub(crate) struct NoProc {
    _alone: RwLockWriteGuard<'static, ()>,
}

/// `/proc` mounted in a root: the first guard mounts it, the last one dropped (also while a
/// failed test unwinds) unmounts it. A mount left by a run that was killed is taken over, and
/// unmounted like one of this run's.
pub(crate) struct ProcMount {
    root: PathBuf,
    _shared: RwLockReadGuard<'static, ()>,
}

fn mounted(proc_dir: &Path) -> bool {
    proc_dir.join("self").exists()
}

impl ProcMount {
    fn new(root: &Path) -> ProcMount {
        let shared = PROC_USERS
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut mounts = MOUNTS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = mounts.entry(root.to_owned()).or_insert(0);
        let proc_dir = root.join("proc");
        if *count == 0 && !mounted(&proc_dir) {
            let status = Command::new("mount")
                .args(["-t", "proc", "proc"])
                .arg(&proc_dir)
                .status()
                .expect("mount runs");
            assert!(
                status.success(),
                "mount -t proc proc {}",
                proc_dir.display()
            );
        }
        *count += 1;
        ProcMount {
            root: root.to_owned(),
            _shared: shared,
        }
    }
}

impl Drop for ProcMount {
    fn drop(&mut self) {
        let mut mounts = MOUNTS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = mounts.get_mut(&self.root).expect("a counted mount");
        *count -= 1;
        if *count == 0 {
            unmount(&self.root.join("proc"));
        }
    }
}

/// Unmounts `proc_dir`: each mount stacked there by killed runs too, then lazily if something
/// still uses it.
fn unmount(proc_dir: &Path) {
    while mounted(proc_dir) {
        let unmounted = Command::new("umount")
            .arg(proc_dir)
            .status()
            .is_ok_and(|status| status.success());
        if !unmounted {
            let _ = Command::new("umount").arg("-l").arg(proc_dir).status();
            break;
        }
    }
}

/// The four interpreters, a test for each: `per_version!(check)` makes `check::py3_9` … from
/// `fn check(python: &Python)`.
macro_rules! per_version {
    ($($check:ident),* $(,)?) => {
        $(
            mod $check {
                use crate::interpreters::Python;
                #[test]
                fn py3_9() {
                    super::$check(&Python::get("3.9"));
                }
                #[test]
                fn py3_11() {
                    super::$check(&Python::get("3.11"));
                }
                #[test]
                fn py3_13() {
                    super::$check(&Python::get("3.13"));
                }
                #[test]
                fn py3_14() {
                    super::$check(&Python::get("3.14"));
                }
            }
        )*
    };
}
pub(crate) use per_version;
