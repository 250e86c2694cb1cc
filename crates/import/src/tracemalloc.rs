//! CPython tracemalloc dumps (`Snapshot.dump`): a pickled `tracemalloc.Snapshot` whose
//! `traces._traces` list holds `(domain, size, traceback[, total_nframe])` tuples, 3-tuples up
//! to Python 3.8 and 4-tuples since 3.9.
//!
//! Traces are folded as the pickle is read: each one only adds its size and a count to its
//! (traceback, domain) pair, which is all that `Snapshot.statistics` and `compare_to` look at,
//! so ten million traces never exist as objects. Tracebacks that the interpreter shared arrive
//! as memo hits and are resolved once each.

use crate::pickle::{self, Arena, Fold, Obj, Pickle, Value};
use crate::{Format, ImportError};
use heapgraph_model::{
    AllocMeta, AllocSnapshot, AllocSource, Frame, LiveSite, StackId, Stacks, StringTable,
};
use rustc_hash::FxHashMap;

const FORMAT: Format = Format::Tracemalloc;

/// The globals a tracemalloc dump may name.
pub(crate) fn is_tracemalloc_global(module: &str, name: &str) -> bool {
    module == "tracemalloc" && (name == "Snapshot" || name == "_Traces")
}

/// Sums of the traces that share a traceback object and a domain.
#[derive(Default)]
pub(crate) struct TraceFold {
    /// Domain 0 (Python's allocator, nearly every trace): group + 1 by traceback arena id.
    python_domain: Vec<u32>,
    /// Other domains.
    other_domains: FxHashMap<(u32, u64), usize>,
    groups: Vec<((u32, u64), u64, u64)>,
    traces: u64,
}

impl Fold for TraceFold {
    fn fold(&mut self, items: &[Value], arena: &Arena) -> bool {
        let (domain, size, traceback) = match items {
            [
                Value::Int(domain),
                Value::Int(size),
                Value::Obj(traceback),
                rest @ ..,
            ] if rest.len() <= 1 && rest.iter().all(|v| matches!(v, Value::Int(_))) => {
                (*domain, *size, *traceback)
            }
            _ => return false,
        };
        let (Ok(domain), Ok(size)) = (u64::try_from(domain), u64::try_from(size)) else {
            return false;
        };
        if !matches!(arena.get(traceback), Obj::Tuple(_)) {
            return false;
        }
        let key = (traceback, domain);
        let slot = if domain == 0 {
            let at = traceback as usize;
            if at >= self.python_domain.len() {
                // Bounded by the arena, which is bounded by the input.
                self.python_domain.resize(at + 1, 0);
            }
            if self.python_domain[at] == 0 {
                self.groups.push((key, 0, 0));
                self.python_domain[at] = self.groups.len() as u32;
            }
            self.python_domain[at] as usize - 1
        } else {
            *self.other_domains.entry(key).or_insert_with(|| {
                self.groups.push((key, 0, 0));
                self.groups.len() - 1
            })
        };
        let group = &mut self.groups[slot];
        group.1 += size;
        group.2 += 1;
        self.traces += 1;
        true
    }
}

impl TraceFold {
    /// Whether any trace was folded.
    pub(crate) fn is_empty(&self) -> bool {
        self.traces == 0
    }
}

fn inconsistent(message: impl Into<String>) -> ImportError {
    ImportError::inconsistent(FORMAT, message)
}

/// Whether the pickle's top value is a `tracemalloc.Snapshot`.
pub(crate) fn is_snapshot(pickle: &Pickle) -> bool {
    class_of(&pickle.arena, pickle.top) == Some("Snapshot")
}

fn class_of(arena: &Arena, value: Value) -> Option<&str> {
    let Obj::Instance { class, .. } = arena.obj(value)? else {
        return None;
    };
    match arena.obj(*class)? {
        Obj::Global { module, name } if &**module == "tracemalloc" => Some(name),
        _ => None,
    }
}

fn state_dict(arena: &Arena, value: Value) -> Option<&[(Value, Value)]> {
    match arena.obj(value)? {
        Obj::Instance { state, .. } => arena.dict_of(*state),
        _ => None,
    }
}

/// Turns a parsed `Snapshot` and the traces folded while parsing it into an allocation snapshot.
pub(crate) fn build(pickle: &Pickle, fold: TraceFold) -> Result<AllocSnapshot, ImportError> {
    let arena = &pickle.arena;
    let snapshot = state_dict(arena, pickle.top)
        .ok_or_else(|| inconsistent("the Snapshot object has no state"))?;
    let traces = arena
        .dict_get(snapshot, "traces")
        .ok_or_else(|| inconsistent("the Snapshot has no `traces`"))?;
    if class_of(arena, traces) != Some("_Traces") {
        return Err(inconsistent("`traces` is not a tracemalloc._Traces"));
    }
    let list = state_dict(arena, traces)
        .and_then(|state| arena.dict_get(state, "_traces"))
        .ok_or_else(|| inconsistent("`traces` has no `_traces` list"))?;
    let Some(Obj::List { items, folded }) = arena.obj(list) else {
        return Err(inconsistent("`_traces` is not a list"));
    };
    if !items.is_empty() {
        return Err(inconsistent(format!(
            "{} entries of `_traces` are not (domain, size, traceback[, total_nframe]) tuples",
            items.len()
        )));
    }
    if *folded != fold.traces {
        return Err(inconsistent(format!(
            "{} traces were found outside the `_traces` list",
            fold.traces - folded
        )));
    }
    let traceback_limit = match arena.dict_get(snapshot, "traceback_limit") {
        Some(Value::Int(limit)) => u32::try_from(limit).ok(),
        _ => None,
    };

    let mut strings = StringTable::new();
    let mut stacks = Stacks::new();
    let mut filenames: FxHashMap<u32, heapgraph_model::StringId> = FxHashMap::default();
    let mut resolved: FxHashMap<u32, StackId> = FxHashMap::default();
    let mut sites: Vec<LiveSite> = Vec::new();
    let mut site_index: FxHashMap<(StackId, u64), usize> = FxHashMap::default();
    let mut frame_ids = Vec::new();
    for &((traceback, domain), bytes, count) in &fold.groups {
        let stack = match resolved.get(&traceback) {
            Some(&stack) => stack,
            None => {
                frame_ids.clear();
                let frames = arena
                    .tuple_of(Value::Obj(traceback))
                    .ok_or_else(|| inconsistent("a traceback is not a tuple"))?;
                for &frame in frames {
                    let (filename, lineno) = match arena.tuple_of(frame) {
                        Some(&[Value::Obj(filename), Value::Int(lineno)]) => (filename, lineno),
                        _ => {
                            return Err(inconsistent(
                                "a traceback frame is not a (filename, lineno) tuple",
                            ));
                        }
                    };
                    let filename = match filenames.get(&filename) {
                        Some(&id) => id,
                        None => {
                            let text = arena.str_of(Value::Obj(filename)).ok_or_else(|| {
                                inconsistent("a traceback frame's filename is not a string")
                            })?;
                            let id = strings.intern(text);
                            filenames.insert(filename, id);
                            id
                        }
                    };
                    let lineno = u32::try_from(lineno)
                        .map_err(|_| inconsistent("a traceback frame has a negative line"))?;
                    frame_ids.push(stacks.intern_frame(Frame {
                        filename,
                        lineno,
                        name: None,
                    }));
                }
                let stack = stacks.intern_stack(&frame_ids);
                resolved.insert(traceback, stack);
                stack
            }
        };
        // Tracebacks equal in content but not shared by the interpreter meet here.
        match site_index.get(&(stack, domain)) {
            Some(&at) => {
                sites[at].bytes += bytes;
                sites[at].count += count;
            }
            None => {
                site_index.insert((stack, domain), sites.len());
                sites.push(LiveSite {
                    stack,
                    domain,
                    bytes,
                    count,
                });
            }
        }
    }
    Ok(AllocSnapshot {
        meta: AllocMeta {
            source: AllocSource::Tracemalloc,
            source_format: "tracemalloc-pickle".to_owned(),
            traceback_limit,
            notes: Vec::new(),
        },
        strings,
        stacks,
        sites,
        cuda: None,
    })
}

/// Reads a tracemalloc dump from its bytes.
///
/// # Errors
/// [`ImportError`] when the bytes are not a pickled `tracemalloc.Snapshot`.
pub fn import_slice(bytes: &[u8]) -> Result<AllocSnapshot, ImportError> {
    let (pickle, fold) = pickle::parse(bytes, &is_tracemalloc_global, TraceFold::default())?;
    if !is_snapshot(&pickle) {
        return Err(inconsistent("the pickle is not a tracemalloc.Snapshot"));
    }
    build(&pickle, fold)
}
