//! Allocation sites: live memory grouped by where it was allocated, and the change between two
//! snapshots, with exactly the rows and order of tracemalloc's `Snapshot.statistics` and
//! `Snapshot.compare_to` (Python 3.9+), ties included.

use heapgraph_model::{AllocSnapshot, AllocSource, LiveSite, StackId};
use rustc_hash::FxHashMap;
use std::cmp::Ordering;

/// What allocations are grouped by, as tracemalloc's `key_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SiteKey {
    /// The file of the most recent frame (line shown as 0).
    Filename,
    /// The most recent frame.
    Lineno,
    /// The whole stack.
    Traceback,
}

impl SiteKey {
    /// tracemalloc's name for the key.
    pub fn name(self) -> &'static str {
        match self {
            SiteKey::Filename => "filename",
            SiteKey::Lineno => "lineno",
            SiteKey::Traceback => "traceback",
        }
    }
}

/// How to group and which allocations to count.
#[derive(Clone, Debug)]
pub struct SiteOptions {
    /// The grouping key.
    pub key: SiteKey,
    /// Count an allocation under every frame of its stack, as tracemalloc's `cumulative=True`
    /// (not with [`SiteKey::Traceback`]).
    pub cumulative: bool,
    /// Keep only allocations whose most recent frame's file matches one of these globs
    /// (`tracemalloc.Filter(True, pattern)`); none means all. With `user_frames_only`, the
    /// most recent frame after library frames are folded away.
    pub include: Vec<String>,
    /// Drop allocations whose most recent frame's file matches one of these globs
    /// (`tracemalloc.Filter(False, pattern)`).
    pub exclude: Vec<String>,
    /// Leave library frames (site-packages, the standard library) out of stacks before grouping,
    /// keeping the user's own code; a stack of library frames only is kept whole.
    pub user_frames_only: bool,
}

impl SiteOptions {
    /// Grouping by `key`, nothing filtered or folded.
    pub fn new(key: SiteKey) -> Self {
        SiteOptions {
            key,
            cumulative: false,
            include: Vec::new(),
            exclude: Vec::new(),
            user_frames_only: false,
        }
    }
}

/// One frame of a row, with its own text (rows compare across snapshots).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SiteFrame {
    /// Source file.
    pub filename: String,
    /// Line (0 in by-file rows).
    pub lineno: u32,
    /// Function, where the snapshot records it.
    pub name: Option<String>,
}

/// A group of live allocations (and, in a comparison, its change).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteRow {
    /// The key's frames, most recent call first.
    pub frames: Vec<SiteFrame>,
    /// Bytes live (in the newer snapshot, in a comparison).
    pub size: u64,
    /// Allocations live.
    pub count: u64,
    /// Change in bytes since the older snapshot (0 outside comparisons).
    pub size_diff: i64,
    /// Change in allocations since the older snapshot.
    pub count_diff: i64,
}

/// Rows in tracemalloc's order.
#[derive(Clone, Debug)]
pub struct SitesView {
    /// The key grouped by.
    pub key: SiteKey,
    /// Whether counts are cumulative over frames.
    pub cumulative: bool,
    /// Whether this compares two snapshots (the `_diff` fields mean something).
    pub is_diff: bool,
    /// Bytes and allocations that passed the filters (newer snapshot in a comparison).
    pub total_size: u64,
    /// See `total_size`.
    pub total_count: u64,
    /// The same for the older snapshot, in a comparison.
    pub old_total_size: u64,
    /// See `old_total_size`.
    pub old_total_count: u64,
    /// Every group, ordered as Python orders them.
    pub rows: Vec<SiteRow>,
}

/// Whether a file belongs to a library rather than to the user's code: Python's
/// (site-packages, the standard library, the interpreter's own C sources), Rust's (the standard
/// library's sources, crates from a registry or git), PyTorch's C++ (`c10`, ATen, `torch/csrc`),
/// a shared object named for a frame with no source (libc), or no file at all (`??`, or empty:
/// what torch's symbolizer writes for a C++ frame without debug information).
pub fn is_library_file(filename: &str) -> bool {
    filename.is_empty()
        || filename == "??"
        || filename.contains("/site-packages/")
        || filename.contains("/dist-packages/")
        || filename.starts_with("<frozen ")
        || is_stdlib_path(filename)
        || is_cpython_source(filename)
        || is_torch_source(filename)
        || is_rust_library_path(filename)
        || is_shared_object(filename)
}

/// The C sources of CPython itself, as a Python with debug information names them
/// (`/usr/local/src/conda/python-3.12.0/Objects/typeobject.c`).
fn is_cpython_source(filename: &str) -> bool {
    (filename.ends_with(".c") || filename.ends_with(".h"))
        && filename.split('/').any(|part| {
            part.starts_with("python-3.") || part.starts_with("Python-3.") || part == "cpython"
        })
}

/// PyTorch's own C++ sources, as a torch with debug information names them
/// (`/pytorch/c10/cuda/CUDACachingAllocator.cpp`, `…/build/aten/src/ATen/RegisterCUDA.cpp`).
fn is_torch_source(filename: &str) -> bool {
    filename.contains("/c10/")
        || filename.contains("/aten/src/")
        || filename.contains("/torch/csrc/")
}

/// Function names whose frames PyTorch's memory viewer never shows: `omit_functions` of
/// `_frame_filter` in `torch/cuda/_memory_viz.py` (torch 2.15), matched as substrings: the
/// unwinder and the traceback it gathers, the C runtime's start, and the interpreter's
/// evaluation and call machinery.
const TORCH_HIDDEN_FUNCTIONS: [&str; 8] = [
    "unwind::unwind",
    "CapturedTraceback::gather",
    "gather_with_cpp",
    "_start",
    "__libc_start_main",
    "PyEval_",
    "PyObject_",
    "PyFunction_",
];

/// Source files whose frames PyTorch's memory viewer never shows: `omit_filenames` of the same
/// function, matched as substrings: the dispatcher's boxing, registration and redispatch code,
/// and the interpreter's entry points and call paths.
const TORCH_HIDDEN_FILES: [&str; 10] = [
    "core/boxing",
    "/Register",
    "/Redispatch",
    "pythonrun.c",
    "Modules/main.c",
    "Objects/call.c",
    "Objects/methodobject.c",
    "pycore_ceval.h",
    "ceval.c",
    "cpython/abstract.h",
];

/// Whether PyTorch's own viewer hides this frame of a CUDA snapshot's stack: with
/// `stacks="all"`, every stack starts with the unwinder's frames and interleaves the
/// interpreter's with the Python ones (`_frame_filter` in `torch/cuda/_memory_viz.py`).
///
/// The same substrings, on native frames only: a Python source frame (`.py`) is never hidden
/// here, where torch's match would hide a user's function named `on_start` (`_start`).
pub fn is_torch_hidden_frame(name: Option<&str>, filename: &str) -> bool {
    if filename.ends_with(".py") {
        return false;
    }
    name.is_some_and(|name| {
        TORCH_HIDDEN_FUNCTIONS
            .iter()
            .any(|hidden| name.contains(hidden))
    }) || TORCH_HIDDEN_FILES
        .iter()
        .any(|hidden| filename.contains(hidden))
}

/// Rust's standard library as its debug info names it (`/rustc/<commit>/library/…`, or the
/// `rust-src` component's copy in a sysroot), and crates that Cargo fetched.
fn is_rust_library_path(filename: &str) -> bool {
    filename.starts_with("/rustc/")
        || filename.contains("/lib/rustlib/src/rust/library/")
        || filename.contains("/.cargo/registry/src/")
        || filename.contains("/.cargo/git/checkouts/")
}

/// `libc.so.6`, `libfoo.so`: the Rust recorder names a frame without debug info by its object.
fn is_shared_object(filename: &str) -> bool {
    let base = filename.rsplit('/').next().unwrap_or(filename);
    match base.find(".so") {
        Some(at) => {
            let rest = &base[at + 3..];
            rest.is_empty()
                || rest.starts_with('.')
                    && rest[1..].bytes().all(|b| b.is_ascii_digit() || b == b'.')
        }
        None => false,
    }
}

/// The frames of `stack` with their own text (rows compare across snapshots), most recent call
/// first.
pub fn site_frames(snapshot: &AllocSnapshot, stack: StackId) -> Vec<SiteFrame> {
    let strings = &snapshot.strings;
    snapshot
        .stacks
        .frames_of(stack)
        .iter()
        .map(|&frame| {
            let frame = snapshot.stacks.frame(frame);
            SiteFrame {
                filename: strings.get(frame.filename).to_owned(),
                lineno: frame.lineno,
                name: frame.name.map(|name| strings.get(name).to_owned()),
            }
        })
        .collect()
}

/// Folds a stack of a snapshot of `source` for display: the frames PyTorch's viewer hides
/// ([`is_torch_hidden_frame`], CUDA snapshots only) always, then the library frames where the
/// user's own code remains ([`fold_library_frames`]).
pub fn fold_frames(source: AllocSource, frames: &mut Vec<SiteFrame>) {
    if source == AllocSource::TorchCuda {
        frames.retain(|frame| !is_torch_hidden_frame(frame.name.as_deref(), &frame.filename));
    }
    fold_library_frames(frames);
}

/// Leaves out the library frames of a stack that has frames of the user's own code; a stack of
/// library frames only is kept whole.
pub fn fold_library_frames(frames: &mut Vec<SiteFrame>) {
    if frames.iter().any(|frame| !is_library_file(&frame.filename)) {
        frames.retain(|frame| !is_library_file(&frame.filename));
    }
}

/// `…/lib/python3.12/x.py`, but not inside site-packages (handled above).
fn is_stdlib_path(filename: &str) -> bool {
    filename
        .split('/')
        .any(|part| part.starts_with("python3.") && part[8..].bytes().all(|b| b.is_ascii_digit()))
        && filename.contains("/lib/python3.")
}

/// Python's `fnmatch.fnmatchcase` on POSIX: `*`, `?`, `[seq]`, `[!seq]`; `*` crosses `/`.
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    let (mut n, mut p) = (0usize, 0usize);
    // Where to resume after the last `*`: (pattern index after it, name index it matched to).
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match pattern.get(p) {
            Some('*') => {
                star = Some((p + 1, n));
                p += 1;
                continue;
            }
            Some('?') => Some(p + 1),
            Some('[') => match class_match(&pattern, p, name[n]) {
                Some((true, next)) => Some(next),
                Some((false, _)) => None,
                // An unclosed `[` is a literal.
                None => (name[n] == '[').then_some(p + 1),
            },
            Some(&c) => (c == name[n]).then_some(p + 1),
            None => None,
        };
        match step {
            Some(next) => {
                p = next;
                n += 1;
            }
            None => match star {
                Some((after, matched)) => {
                    p = after;
                    n = matched + 1;
                    star = Some((after, matched + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// Matches `c` against the class starting at `pattern[start] == '['`: whether it matched and
/// where the class ends, or `None` when the class is not closed.
fn class_match(pattern: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negated = pattern.get(i) == Some(&'!');
    if negated {
        i += 1;
    }
    // A `]` right after `[` or `[!` is a member, not the end.
    let first = i;
    let mut matched = false;
    while i < pattern.len() {
        if pattern[i] == ']' && i > first {
            return Some((matched != negated, i + 1));
        }
        if i + 2 < pattern.len() && pattern[i + 1] == '-' && pattern[i + 2] != ']' {
            matched |= pattern[i] <= c && c <= pattern[i + 2];
            i += 3;
        } else {
            matched |= pattern[i] == c;
            i += 1;
        }
    }
    None
}

/// tracemalloc compares files with `.pyc` read as `.py`.
fn normalize_filename(filename: &str) -> &str {
    filename
        .strip_suffix('c')
        .filter(|f| f.ends_with(".py"))
        .unwrap_or(filename)
}

/// Groups of one snapshot, keyed by frames, in first-seen order.
struct Groups {
    index: FxHashMap<Vec<SiteFrame>, usize>,
    rows: Vec<(Vec<SiteFrame>, u64, u64)>,
    total_size: u64,
    total_count: u64,
}

impl Groups {
    fn add(&mut self, key: &[SiteFrame], size: u64, count: u64) {
        match self.index.get(key) {
            Some(&at) => {
                self.rows[at].1 += size;
                self.rows[at].2 += count;
            }
            None => {
                self.index.insert(key.to_vec(), self.rows.len());
                self.rows.push((key.to_vec(), size, count));
            }
        }
    }
}

fn group(snapshot: &AllocSnapshot, options: &SiteOptions) -> Groups {
    let include: Vec<&str> = options
        .include
        .iter()
        .map(|p| normalize_filename(p))
        .collect();
    let exclude: Vec<&str> = options
        .exclude
        .iter()
        .map(|p| normalize_filename(p))
        .collect();
    let mut groups = Groups {
        index: FxHashMap::default(),
        rows: Vec::new(),
        total_size: 0,
        total_count: 0,
    };
    let mut key: Vec<SiteFrame> = Vec::new();
    for &LiveSite {
        stack,
        bytes,
        count,
        ..
    } in &snapshot.sites
    {
        let mut frames = site_frames(snapshot, stack);
        if options.user_frames_only {
            fold_frames(snapshot.meta.source, &mut frames);
        }
        if !include.is_empty() || !exclude.is_empty() {
            // The most recent frame as grouped: with library frames folded away, the user's
            // line (a Rust `Vec` is made in `raw_vec.rs`, but the user filters on their file).
            let first = frames
                .first()
                .map(|frame| normalize_filename(&frame.filename));
            let matches = |patterns: &[&str]| {
                first.is_some_and(|file| patterns.iter().any(|pattern| fnmatch(file, pattern)))
            };
            if (!include.is_empty() && !matches(&include)) || matches(&exclude) {
                continue;
            }
        }
        groups.total_size += bytes;
        groups.total_count += count;
        let by_file = |frame: &SiteFrame| SiteFrame {
            filename: frame.filename.clone(),
            lineno: 0,
            name: None,
        };
        if options.cumulative && options.key != SiteKey::Traceback {
            for frame in &frames {
                key.clear();
                key.push(match options.key {
                    SiteKey::Filename => by_file(frame),
                    _ => frame.clone(),
                });
                groups.add(&key, bytes, count);
            }
            continue;
        }
        key.clear();
        match options.key {
            SiteKey::Traceback => key.extend(frames),
            SiteKey::Lineno => key.extend(frames.into_iter().take(1)),
            SiteKey::Filename => key.extend(frames.first().map(by_file)),
        }
        groups.add(&key, bytes, count);
    }
    groups
}

/// Python's `Traceback` order: frames compared oldest first, as tuples.
fn compare_frames(a: &[SiteFrame], b: &[SiteFrame]) -> Ordering {
    let key = |frame: &SiteFrame| {
        (
            frame.filename.clone(),
            frame.lineno,
            frame.name.clone().unwrap_or_default(),
        )
    };
    a.iter().rev().map(key).cmp(b.iter().rev().map(key))
}

/// `Snapshot.statistics(key, cumulative)`: groups, largest first.
pub fn statistics(snapshot: &AllocSnapshot, options: &SiteOptions) -> SitesView {
    let groups = group(snapshot, options);
    let mut rows: Vec<SiteRow> = groups
        .rows
        .into_iter()
        .map(|(frames, size, count)| SiteRow {
            frames,
            size,
            count,
            size_diff: 0,
            count_diff: 0,
        })
        .collect();
    rows.sort_by(|a, b| {
        (b.size, b.count)
            .cmp(&(a.size, a.count))
            .then_with(|| compare_frames(&b.frames, &a.frames))
    });
    SitesView {
        key: options.key,
        cumulative: options.cumulative,
        is_diff: false,
        total_size: groups.total_size,
        total_count: groups.total_count,
        old_total_size: 0,
        old_total_count: 0,
        rows,
    }
}

fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// `new.compare_to(old, key, cumulative)`: every group of either snapshot with its change,
/// largest change first.
pub fn compare(old: &AllocSnapshot, new: &AllocSnapshot, options: &SiteOptions) -> SitesView {
    let old_groups = group(old, options);
    let new_groups = group(new, options);
    let mut matched = vec![false; old_groups.rows.len()];
    let mut rows = Vec::with_capacity(new_groups.rows.len() + old_groups.rows.len());
    for (frames, size, count) in new_groups.rows {
        let (old_size, old_count) = match old_groups.index.get(&frames) {
            Some(&at) => {
                matched[at] = true;
                (old_groups.rows[at].1, old_groups.rows[at].2)
            }
            None => (0, 0),
        };
        rows.push(SiteRow {
            frames,
            size,
            count,
            size_diff: signed(size) - signed(old_size),
            count_diff: signed(count) - signed(old_count),
        });
    }
    for ((frames, size, count), matched) in old_groups.rows.into_iter().zip(matched) {
        if !matched {
            rows.push(SiteRow {
                frames,
                size: 0,
                count: 0,
                size_diff: -signed(size),
                count_diff: -signed(count),
            });
        }
    }
    rows.sort_by(|a, b| {
        let key = |row: &SiteRow| {
            (
                row.size_diff.unsigned_abs(),
                row.size,
                row.count_diff.unsigned_abs(),
                row.count,
            )
        };
        key(b)
            .cmp(&key(a))
            .then_with(|| compare_frames(&b.frames, &a.frames))
    });
    SitesView {
        key: options.key,
        cumulative: options.cumulative,
        is_diff: true,
        total_size: new_groups.total_size,
        total_count: new_groups.total_count,
        old_total_size: old_groups.total_size,
        old_total_count: old_groups.total_count,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnmatch_follows_python() {
        // Each case checked with Python's fnmatch.fnmatchcase.
        for (name, pattern, expected) in [
            ("/a/b/app.py", "*app.py", true),
            ("/a/b/app.py", "*/b/*", true),
            ("/a/b/app.py", "/a/?/app.py", true),
            ("/a/bc/app.py", "/a/?/app.py", false),
            ("x1.py", "x[12].py", true),
            ("x3.py", "x[12].py", false),
            ("x3.py", "x[!12].py", true),
            ("x-.py", "x[a-].py", true),
            ("x].py", "x[]].py", true),
            ("x[.py", "x[.py", true),
            ("<frozen importlib._bootstrap>", "<frozen *>", true),
            ("abc", "a*c*", true),
            ("abc", "a*d", false),
            ("", "*", true),
            ("", "?", false),
        ] {
            assert_eq!(fnmatch(name, pattern), expected, "{name} {pattern}");
        }
    }

    #[test]
    fn library_files_are_recognised() {
        assert!(is_library_file(
            "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py"
        ));
        assert!(is_library_file("/usr/lib/python3.11/json/decoder.py"));
        assert!(is_library_file("<frozen importlib._bootstrap>"));
        assert!(!is_library_file("/srv/trainer/train.py"));
        assert!(!is_library_file("/home/me/python3.11-notes/x.py"));
    }

    #[test]
    fn rust_library_files_are_recognised() {
        for library in [
            "/rustc/29483883eed69d5fb4db01964cdf2af4d86e9cb2/library/alloc/src/raw_vec/mod.rs",
            "/root/.rustup/toolchains/1.95.0-x86_64-unknown-linux-gnu/lib/rustlib/src/rust/library/std/src/rt.rs",
            "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/serde_json-1.0.140/src/de.rs",
            "/home/me/.cargo/git/checkouts/tokio-2a3c1e2a8b0c3d4e/1a2b3c4/tokio/src/runtime/mod.rs",
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
            "/opt/app/libplugin.so",
        ] {
            assert!(is_library_file(library), "{library}");
        }
        for user in [
            "/work/app/src/main.rs",
            "src/cache.rs",
            "/work/app/target/release/app",
            "/srv/sonar.rs",
            "/srv/libx.so.rs",
        ] {
            assert!(!is_library_file(user), "{user}");
        }
    }

    #[test]
    fn rust_stacks_fold_to_the_users_line() {
        let frame = |filename: &str, lineno| SiteFrame {
            filename: filename.to_owned(),
            lineno,
            name: None,
        };
        let mut frames = vec![
            frame("/rustc/0123/library/alloc/src/raw_vec/mod.rs", 480),
            frame("/rustc/0123/library/alloc/src/vec/mod.rs", 960),
            frame("/work/app/src/main.rs", 12),
            frame("/rustc/0123/library/std/src/rt.rs", 206),
            frame("/usr/lib/x86_64-linux-gnu/libc.so.6", 0),
        ];
        fold_library_frames(&mut frames);
        assert_eq!(frames, [frame("/work/app/src/main.rs", 12)]);
    }

    #[test]
    fn torchs_hidden_frames_are_its_viewers_and_spare_python_sources() {
        // Each substring of `_frame_filter`'s two lists hides a native frame.
        for (name, filename) in [
            ("torch::unwind::unwind()", "??"),
            ("torch::CapturedTraceback::gather(bool, bool, bool)", "??"),
            (
                "torch::cuda::(anonymous namespace)::gather_with_cpp()",
                "??",
            ),
            ("_start", "??"),
            ("__libc_start_main", "??"),
            ("_PyEval_EvalFrameDefault", "??"),
            ("_PyObject_MakeTpCall", "??"),
            ("_PyFunction_Vectorcall", "??"),
            ("f", "/pytorch/aten/src/ATen/core/boxing/impl/boxing.h"),
            ("f", "/pytorch/build/aten/src/ATen/RegisterCUDA.cpp"),
            ("f", "/pytorch/build/aten/src/ATen/RedispatchFunctions.h"),
            ("f", "/src/python-3.12.0/Python/pythonrun.c"),
            ("f", "/src/python-3.12.0/Modules/main.c"),
            ("f", "/src/python-3.12.0/Objects/call.c"),
            ("f", "/src/python-3.12.0/Objects/methodobject.c"),
            ("f", "/src/python-3.12.0/Include/internal/pycore_ceval.h"),
            ("f", "/src/python-3.12.0/Python/ceval.c"),
            ("f", "/src/python-3.10.4/Include/cpython/abstract.h"),
        ] {
            assert!(
                is_torch_hidden_frame(Some(name), filename),
                "{name} {filename}"
            );
        }
        for (name, filename) in [
            (
                "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)",
                "??",
            ),
            ("slot_tp_call", "/src/python-3.12.0/Objects/typeobject.c"),
            // torch would hide these two; a Python function is the user's to see.
            ("on_start", "/srv/app/server.py"),
            ("PyEval_helper", "/srv/app/server.py"),
        ] {
            assert!(
                !is_torch_hidden_frame(Some(name), filename),
                "{name} {filename}"
            );
        }
    }

    #[test]
    fn cuda_stacks_with_cpp_frames_fold_to_the_users_line() {
        let frame = |filename: &str, lineno, name: &str| SiteFrame {
            filename: filename.to_owned(),
            lineno,
            name: Some(name.to_owned()),
        };
        let user = frame("/srv/trainer/train.py", 59, "forward");
        let stack = vec![
            frame("??", 0, "torch::unwind::unwind()"),
            frame(
                "??",
                0,
                "torch::CapturedTraceback::gather(bool, bool, bool)",
            ),
            frame("/pytorch/c10/cuda/CUDACachingAllocator.cpp", 0, "malloc"),
            frame(
                "",
                0,
                "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)",
            ),
            frame(
                "??",
                0,
                "torch::autograd::THPVariable_to(_object*, _object*, _object*)",
            ),
            user.clone(),
            frame("??", 0, "_PyEval_EvalFrameDefault"),
            frame(
                "/src/python-3.12.0/Objects/typeobject.c",
                8780,
                "slot_tp_call",
            ),
            frame(
                "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py",
                1790,
                "_call_impl",
            ),
            frame("??", 0, "Py_BytesMain"),
            frame("??", 0, "_start"),
        ];
        let mut frames = stack.clone();
        fold_frames(AllocSource::TorchCuda, &mut frames);
        assert_eq!(frames, [user]);
        // Without a frame of the user's, torch's hidden frames go and the rest stays.
        let mut frames = stack[..5].to_vec();
        fold_frames(AllocSource::TorchCuda, &mut frames);
        assert_eq!(frames, stack[2..5]);
        // Only CUDA snapshots take torch's rule: a Rust function may end in `_start`.
        let mut frames = vec![frame("/work/app/src/main.rs", 3, "app::server_start")];
        fold_frames(AllocSource::RustAlloc, &mut frames);
        assert_eq!(frames.len(), 1);
    }
}
