//! The dumps an MCP session has open: each file loaded and analysed once, under a short id
//! (`d1`, `d2`, …), at most `keep` of them, the one used least recently closed first.

use crate::args::ReadArgs;
use crate::load::Evidence;
use crate::serve::api::Dumped;
use anyhow::{Context, bail};
use heapgraph_model::AllocSnapshot;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// One open file.
pub(super) struct Opened {
    /// `d1`, `d2`, …: never reused in a session, so a closed dump's id names nothing.
    pub(super) id: String,
    /// The path as the client first gave it (what answers print as `dump.file`).
    pub(super) path: PathBuf,
    /// The path without links and `..`, to know a file given twice.
    canonical: PathBuf,
    pub(super) held: Held,
}

/// What an open file holds.
pub(super) enum Held {
    /// A heap dump, analysed and indexed for paging as `heapgraph serve` has it.
    Heap(Box<Dumped>),
    /// An allocation snapshot or a recording, as read.
    Other(Evidence),
}

impl Opened {
    /// The heap dump, or the CLI's refusal for a verb that reads heap dumps only.
    pub(super) fn heap(&self) -> anyhow::Result<&Dumped> {
        match &self.held {
            Held::Heap(dumped) => Ok(dumped),
            Held::Other(evidence) => Err(crate::load::refusal(&self.path, evidence)),
        }
    }

    /// The CUDA snapshot, or the CLI's refusal (`gpu`'s).
    pub(super) fn cuda(&self) -> anyhow::Result<&AllocSnapshot> {
        match &self.held {
            Held::Other(Evidence::Alloc(snapshot)) if snapshot.cuda.is_some() => Ok(snapshot),
            Held::Other(Evidence::Alloc(snapshot)) => {
                Err(crate::load::not_cuda_refusal(&self.path, snapshot))
            }
            Held::Other(other) => Err(crate::load::refusal(&self.path, other)),
            Held::Heap(_) => Err(crate::load::heap_dump_refusal(&self.path)),
        }
    }

    /// What the file holds, in a word or two, for `open_dump`'s answer.
    pub(super) fn holds(&self) -> &'static str {
        match &self.held {
            Held::Heap(_) => "heap-dump",
            Held::Other(Evidence::Alloc(snapshot)) if snapshot.cuda.is_some() => "cuda-snapshot",
            Held::Other(Evidence::Alloc(_)) => "allocations",
            Held::Other(Evidence::Timeline(_)) => "timeline",
            Held::Other(Evidence::Graph(_)) => "heap-dump",
        }
    }
}

/// The open dumps, most recently used last.
pub(super) struct Dumps {
    keep: usize,
    read: ReadArgs,
    open: Mutex<Open>,
    /// Held while a file loads: one load at a time, so that memory holds `keep` dumps and the
    /// one loading at most, and a file two requests ask for at once is read once.
    loading: Mutex<()>,
}

struct Open {
    dumps: Vec<Arc<Opened>>,
    next_id: u64,
}

impl Dumps {
    pub(super) fn new(keep: usize, read: ReadArgs) -> Dumps {
        Dumps {
            keep: keep.max(1),
            read,
            open: Mutex::new(Open {
                dumps: Vec::new(),
                next_id: 1,
            }),
            loading: Mutex::new(()),
        }
    }

    /// How many dumps are kept open.
    pub(super) fn keep(&self) -> usize {
        self.keep
    }

    /// The dump `name` names: the id of an open dump, or a path (opened now if it is not open).
    pub(super) fn get(&self, name: &str) -> anyhow::Result<Arc<Opened>> {
        if let Some(opened) = self.find(|opened| opened.id == name) {
            return Ok(opened);
        }
        let path = Path::new(name);
        if !path.exists() && looks_like_id(name) {
            bail!(
                "no dump is open as {name}: ids come from open_dump, and the server keeps the {} \
                 dumps used last; open the file again by its path",
                self.keep
            );
        }
        self.open(path)
    }

    /// Opens the file at `path`, or finds it already open.
    pub(super) fn open(&self, path: &Path) -> anyhow::Result<Arc<Opened>> {
        let canonical = std::fs::canonicalize(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if let Some(opened) = self.find(|opened| opened.canonical == canonical) {
            return Ok(opened);
        }
        let _loading = lock(&self.loading);
        // Another request may have opened it while this one waited.
        if let Some(opened) = self.find(|opened| opened.canonical == canonical) {
            return Ok(opened);
        }
        let held = match crate::load::load_evidence(path, &self.read)? {
            Evidence::Graph(loaded) => Held::Heap(Box::new(crate::serve::explore(path, *loaded)?)),
            other => Held::Other(other),
        };
        let mut open = lock(&self.open);
        let opened = Arc::new(Opened {
            id: format!("d{}", open.next_id),
            path: path.to_owned(),
            canonical,
            held,
        });
        open.next_id += 1;
        open.dumps.push(Arc::clone(&opened));
        // A dump closed here stays alive for the requests still reading it (they hold an Arc).
        let excess = open.dumps.len().saturating_sub(self.keep);
        open.dumps.drain(..excess);
        Ok(opened)
    }

    /// The open dump that `matches`, moved to the most recently used place.
    fn find(&self, matches: impl Fn(&Opened) -> bool) -> Option<Arc<Opened>> {
        let mut open = lock(&self.open);
        let at = open.dumps.iter().position(|opened| matches(opened))?;
        let opened = open.dumps.remove(at);
        open.dumps.push(Arc::clone(&opened));
        Some(opened)
    }
}

/// `d` and digits: what `open_dump`'s ids look like.
fn looks_like_id(name: &str) -> bool {
    name.strip_prefix('d')
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// The lock, even if a request panicked while holding it: the store is a list of immutable
/// dumps, valid at every step.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::looks_like_id;

    #[test]
    fn ids_are_d_and_digits() {
        assert!(looks_like_id("d1"));
        assert!(looks_like_id("d42"));
        assert!(!looks_like_id("d"));
        assert!(!looks_like_id("dump.hprof"));
        assert!(!looks_like_id("1"));
    }
}
