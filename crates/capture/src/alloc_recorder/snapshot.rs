//! Writing what is live: the stacks with live allocations are resolved to source locations
//! (inlined frames included) only now, and written as an `.hgd` allocation snapshot.
//!
//! The thread that writes marks itself busy, so that its own allocations (symbol tables, the
//! file's buffers) go to `System` unrecorded; other threads go on allocating and recording
//! meanwhile. Each stack's counters are read once, so a snapshot taken while other threads
//! allocate is exact per stack but not one instant across stacks.

use super::sampling::COUNT_ONE;
use super::{MODE, table, thread};
use heapgraph_format::{
    FrameColumns, Header, KIND_ALLOC_SNAPSHOT, NO_NAME, SiteColumns, StackColumns, Writer,
};
use rustc_hash::FxHashMap;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::Ordering;

/// The header's `source_format` and `runtime`, which `heapgraph` reads as a `rust-alloc`
/// snapshot.
const SOURCE_FORMAT: &str = "heapgraph-alloc";
const RUNTIME: &str = "rust";

/// A stack with fewer frames than this (after the allocator's own) counts as cut short.
const SHORT_STACK_FRAMES: usize = 3;

/// One snapshot at a time: they share the symbolizer.
static WRITING: Mutex<()> = Mutex::new(());

/// Why a snapshot could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// No allocation went through a [`Recorder`](crate::Recorder), so nothing was recorded.
    #[error(
        "nothing was recorded: heapgraph_capture::Recorder is not the global allocator; add `#[global_allocator] static ALLOC: heapgraph_capture::Recorder = heapgraph_capture::Recorder::new();` to the program"
    )]
    NotInstalled,
    /// The file could not be created.
    #[error("cannot create the snapshot {}: {source}", path.display())]
    Create {
        /// The snapshot's path.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// Writing the file failed part way; what was written reads back as a cut-short snapshot.
    #[error("cannot write the snapshot {}: {source}", path.display())]
    Write {
        /// The snapshot's path.
        path: PathBuf,
        /// What went wrong, with the byte offset.
        #[source]
        source: heapgraph_format::Error,
    },
}

/// What a snapshot holds.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapshotInfo {
    /// Distinct allocating stacks with live allocations.
    pub sites: usize,
    /// Bytes live (estimated when sampling).
    pub bytes: u64,
    /// Allocations live (estimated when sampling).
    pub allocations: u64,
    /// The sampling period in bytes, `None` when every allocation was recorded.
    pub sampling_period: Option<u64>,
}

/// Writes an allocation snapshot of everything live now to `path`: each allocating stack's
/// live bytes and allocations, its frames resolved to function, file and line. `heapgraph top`
/// and `heapgraph diff` read it as they read tracemalloc dumps.
///
/// # Errors
/// [`SnapshotError::NotInstalled`] when no [`Recorder`](crate::Recorder) is the global
/// allocator; [`SnapshotError::Create`] and [`SnapshotError::Write`] naming the path.
pub fn snapshot(path: impl AsRef<Path>) -> Result<SnapshotInfo, SnapshotError> {
    let path = path.as_ref();
    let mode = MODE.load(Ordering::Relaxed);
    if mode == 0 {
        return Err(SnapshotError::NotInstalled);
    }
    let period = mode - 1;
    let _busy = Busy::enter();
    let _one_at_a_time = WRITING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let live = live_stacks(period);
    let built = Built::resolve(&live);
    let mut header = Header::new(KIND_ALLOC_SNAPSHOT, SOURCE_FORMAT, RUNTIME);
    header.pointer_size = u8::try_from(size_of::<usize>()).ok();
    header.pid = Some(std::process::id());
    header.captured_at_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|since| u64::try_from(since.as_millis()).ok());
    header.notes = built.notes(period);
    header.totals = [
        ("frames", built.filename.len()),
        ("stacks", built.frame_count.len()),
        ("sites", built.site_stack.len()),
    ]
    .into_iter()
    .map(|(key, n)| (key.to_owned(), n as u64))
    .collect();
    let file = std::fs::File::create(path).map_err(|source| SnapshotError::Create {
        path: path.to_owned(),
        source,
    })?;
    built
        .write(BufWriter::new(file), &header)
        .map_err(|source| SnapshotError::Write {
            path: path.to_owned(),
            source,
        })?;
    Ok(SnapshotInfo {
        sites: built.site_stack.len(),
        bytes: built.site_bytes.iter().sum(),
        allocations: built.site_count.iter().sum(),
        sampling_period: (period != 0).then_some(period),
    })
}

/// Marks this thread busy while it lives, so that its allocations are not recorded.
struct Busy {
    was: bool,
}

impl Busy {
    fn enter() -> Busy {
        Busy {
            was: thread::with(|state| state.busy.replace(true)).unwrap_or(true),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let was = self.was;
        thread::with(|state| state.busy.set(was));
    }
}

/// A recorded stack with allocations live.
struct LiveStack {
    addresses: &'static [usize],
    bytes: u64,
    count: u64,
}

/// Every recorded stack with live allocations now, with its counts in whole allocations.
fn live_stacks(period: u64) -> Vec<LiveStack> {
    let mut live = Vec::new();
    for id in 0..table::published() {
        // SAFETY: ids below `published` are complete records.
        let record = unsafe { table::record(id) };
        // Counters are wrapping: a free seen before its allocation makes one briefly negative.
        let units = record.count.load(Ordering::Relaxed) as i64;
        if units <= 0 {
            continue;
        }
        let bytes = (record.bytes.load(Ordering::Relaxed) as i64).max(0) as u64;
        let count = if period == 0 {
            units as u64 / COUNT_ONE
        } else {
            (units as u64 + COUNT_ONE / 2) / COUNT_ONE
        };
        live.push(LiveStack {
            addresses: record.addresses(),
            bytes,
            count: count.max(1),
        });
    }
    live
}

/// One resolved source location.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Location {
    filename: String,
    name: Option<String>,
    lineno: u32,
}

/// The snapshot's columns, resolved and merged.
#[derive(Default)]
struct Built {
    strings: Vec<String>,
    string_ids: FxHashMap<String, u32>,
    filename: Vec<u32>,
    name: Vec<u32>,
    lineno: Vec<u32>,
    frame_ids: FxHashMap<Location, u32>,
    frame_count: Vec<u32>,
    frames: Vec<u32>,
    stack_ids: FxHashMap<Vec<u32>, u32>,
    site_stack: Vec<u32>,
    site_bytes: Vec<u64>,
    site_count: Vec<u64>,
    site_of_stack: FxHashMap<u32, usize>,
    short_stacks: usize,
    frames_without_line: usize,
}

impl Built {
    /// Resolves every return address of the live stacks (each once), drops the allocator's
    /// own frames, and merges stacks that resolve alike.
    fn resolve(live: &[LiveStack]) -> Built {
        let mut built = Built::default();
        built.string("");
        let mut resolved: FxHashMap<usize, Vec<u32>> = FxHashMap::default();
        let mut locations = Vec::new();
        let mut stack: Vec<u32> = Vec::new();
        for live_stack in live {
            stack.clear();
            for &address in live_stack.addresses {
                let ids = resolved.entry(address).or_insert_with(|| {
                    locations.clear();
                    resolve_address(address, &mut locations);
                    locations
                        .iter()
                        .map(|location| built.frame(location))
                        .collect()
                });
                stack.extend_from_slice(ids);
            }
            // The innermost frames are the recorder's (with std code inlined into it) and the
            // allocation shims', the same for every allocation: they would hide the caller.
            // None of them calls back into the program, so the outermost of them is where
            // the program's own stack begins.
            let own = stack
                .iter()
                .rposition(|&frame| {
                    let name = built.name[frame as usize];
                    name != NO_NAME && is_allocator_frame(&built.strings[name as usize])
                })
                .map_or(0, |at| at + 1);
            stack.drain(..own);
            if stack.len() < SHORT_STACK_FRAMES {
                built.short_stacks += 1;
            }
            let stack_id = built.stack(&stack);
            match built.site_of_stack.get(&stack_id) {
                Some(&at) => {
                    built.site_bytes[at] += live_stack.bytes;
                    built.site_count[at] += live_stack.count;
                }
                None => {
                    built.site_of_stack.insert(stack_id, built.site_stack.len());
                    built.site_stack.push(stack_id);
                    built.site_bytes.push(live_stack.bytes);
                    built.site_count.push(live_stack.count);
                }
            }
        }
        built
    }

    fn string(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.string_ids.get(text) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(text.to_owned());
        self.string_ids.insert(text.to_owned(), id);
        id
    }

    fn frame(&mut self, location: &Location) -> u32 {
        if let Some(&id) = self.frame_ids.get(location) {
            return id;
        }
        let id = self.filename.len() as u32;
        let filename = self.string(&location.filename);
        let name = match &location.name {
            Some(name) => self.string(name),
            None => NO_NAME,
        };
        self.filename.push(filename);
        self.name.push(name);
        self.lineno.push(location.lineno);
        if location.lineno == 0 {
            self.frames_without_line += 1;
        }
        self.frame_ids.insert(location.clone(), id);
        id
    }

    fn stack(&mut self, frames: &[u32]) -> u32 {
        if let Some(&id) = self.stack_ids.get(frames) {
            return id;
        }
        let id = self.frame_count.len() as u32;
        self.frame_count.push(frames.len() as u32);
        self.frames.extend_from_slice(frames);
        self.stack_ids.insert(frames.to_vec(), id);
        id
    }

    /// What a reader should know about how the snapshot was taken.
    fn notes(&self, period: u64) -> Vec<String> {
        let mut notes = Vec::new();
        if period != 0 {
            notes.push(format!(
                "sampled: one allocation every {period} bytes on average (Poisson); sizes and counts are estimates"
            ));
        }
        let n_stacks = self.frame_count.len();
        if n_stacks > 0 && self.short_stacks * 2 > n_stacks {
            notes.push(format!(
                "{} of {n_stacks} stacks have fewer than {SHORT_STACK_FRAMES} frames: build the program with RUSTFLAGS=\"-C force-frame-pointers=yes\" so that whole stacks are recorded",
                self.short_stacks
            ));
        }
        let n_frames = self.filename.len();
        if n_frames > 0 && self.frames_without_line * 2 > n_frames {
            notes.push(format!(
                "{} of {n_frames} frames have no line: build with debug info (`debug = 1` or `debug = \"line-tables-only\"` in the profile)",
                self.frames_without_line
            ));
        }
        let lost = table::LOST.load(Ordering::Relaxed);
        if lost > 0 {
            notes.push(format!(
                "{lost} allocations were not recorded: the recorder could not grow its stack table"
            ));
        }
        notes
    }

    fn write<W: io::Write>(&self, out: W, header: &Header) -> Result<(), heapgraph_format::Error> {
        let mut writer = Writer::new(out, header)?;
        writer.write_strings(self.strings.iter().map(String::as_str))?;
        writer.write_frames(&FrameColumns {
            filename: &self.filename,
            name: &self.name,
            lineno: &self.lineno,
        })?;
        writer.write_stacks(&StackColumns {
            frame_count: &self.frame_count,
            frames: &self.frames,
        })?;
        writer.write_sites(&SiteColumns {
            stack: &self.site_stack,
            domain: &vec![0; self.site_stack.len()],
            bytes: &self.site_bytes,
            count: &self.site_count,
        })?;
        let mut file = writer.finish()?;
        io::Write::flush(&mut file).map_err(|source| heapgraph_format::Error::Io {
            record: 0,
            offset: 0,
            source,
        })
    }
}

/// The source locations of a return address, innermost (inlined) first; a location without
/// debug info is named for its object file and offset, which stay the same from run to run.
fn resolve_address(address: usize, out: &mut Vec<Location>) {
    backtrace::resolve(address as *mut std::ffi::c_void, |symbol| {
        let name = symbol.name().map(|name| format!("{name:#}"));
        match symbol.filename() {
            Some(file) => out.push(Location {
                filename: file.to_string_lossy().into_owned(),
                name,
                lineno: symbol.lineno().unwrap_or(0),
            }),
            None => {
                let (object, offset) = object_of(address);
                out.push(Location {
                    filename: object,
                    name: Some(name.unwrap_or_else(|| format!("{offset:#x}"))),
                    lineno: 0,
                });
            }
        }
    });
    if out.is_empty() {
        let (object, offset) = object_of(address);
        out.push(Location {
            filename: object,
            name: Some(format!("{offset:#x}")),
            lineno: 0,
        });
    }
}

/// The object file holding `address` and the address's offset in it, as the dynamic linker
/// knows them.
fn object_of(address: usize) -> (String, usize) {
    #[cfg(unix)]
    {
        // SAFETY: dladdr only reads the linker's tables; `info` is plain data it fills.
        unsafe {
            let mut info: libc::Dl_info = std::mem::zeroed();
            // A return address may lie just past its function: look up the call itself.
            let call = address.saturating_sub(1) as *const libc::c_void;
            if libc::dladdr(call, &mut info) != 0 && !info.dli_fname.is_null() {
                let name = std::ffi::CStr::from_ptr(info.dli_fname)
                    .to_string_lossy()
                    .into_owned();
                return (name, address.wrapping_sub(info.dli_fbase as usize));
            }
        }
    }
    ("<unknown>".to_owned(), address)
}

/// Whether `name` is a frame of the recorder or of the allocation shims between the caller
/// and it (`__rust_alloc`, `alloc::alloc::alloc`, `<alloc::alloc::Global as Allocator>`).
fn is_allocator_frame(name: &str) -> bool {
    let name = name.strip_prefix('<').unwrap_or(name);
    name.starts_with("heapgraph_capture::")
        || name.starts_with("__rust_")
        || name.starts_with("__rustc::")
        || name.starts_with("__rg_")
        || name.starts_with("__rdl_")
        || name.starts_with("alloc::alloc::")
        || name.starts_with("std::alloc::")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocator_frames_are_recognised() {
        for own in [
            "heapgraph_capture::alloc_recorder::Recorder::record",
            "<heapgraph_capture::alloc_recorder::Recorder as core::alloc::global::GlobalAlloc>::alloc",
            "__rust_alloc",
            "__rustc::__rust_realloc",
            "__rg_alloc",
            "alloc::alloc::alloc",
            "<alloc::alloc::Global as core::alloc::Allocator>::allocate",
            "alloc::alloc::Global::alloc_impl",
        ] {
            assert!(is_allocator_frame(own), "{own}");
        }
        for caller in [
            "alloc::raw_vec::RawVecInner<A>::finish_grow",
            "alloc_demo::main",
            "<alloc::vec::Vec<T> as core::clone::Clone>::clone",
            "std::rt::lang_start_internal",
        ] {
            assert!(!is_allocator_frame(caller), "{caller}");
        }
    }

    #[test]
    fn this_functions_address_resolves_to_this_file() {
        let here = this_functions_address_resolves_to_this_file as *const () as usize;
        let mut out = Vec::new();
        // One past the entry, as a return address would be.
        resolve_address(here + 1, &mut out);
        // Inlined callees come first; the function itself is the outermost location.
        let outermost = out.last().expect("a location");
        assert!(
            outermost
                .name
                .as_deref()
                .is_some_and(|name| name.contains("this_functions_address_resolves")),
            "{:?}",
            outermost.name
        );
        assert!(
            outermost.filename.ends_with("snapshot.rs"),
            "{}",
            outermost.filename
        );
    }

    #[test]
    fn an_address_in_no_object_is_named_by_itself() {
        let mut out = Vec::new();
        resolve_address(0x10, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].lineno, 0);
        assert!(out[0].name.is_some());
    }

    #[test]
    fn notes_say_what_a_reader_must_know() {
        let mut built = Built {
            frame_count: vec![1, 1, 5],
            short_stacks: 2,
            filename: vec![0; 4],
            frames_without_line: 3,
            ..Built::default()
        };
        let notes = built.notes(4096);
        assert!(notes[0].starts_with("sampled: one allocation every 4096 bytes"));
        assert!(
            notes[1].contains("force-frame-pointers=yes"),
            "{}",
            notes[1]
        );
        assert!(notes[2].contains("debug info"), "{}", notes[2]);
        built.short_stacks = 1;
        built.frames_without_line = 0;
        assert!(built.notes(0).iter().all(|note| !note.contains("frame")));
    }
}
