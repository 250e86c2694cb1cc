//! Allocation snapshots in `.hgd` files (header `kind` = `alloc-snapshot`, written by the Rust
//! allocation recorder of `heapgraph-capture`): the codec between the `frames`, `stacks` and
//! `sites` chunks and the model's [`AllocSnapshot`], both ways.
//!
//! A file cut short keeps the sites that arrived whole, with a note saying what was lost;
//! references that a cut left dangling (a site whose stack never arrived) are dropped and
//! counted in the note. In a complete file they are errors.

use super::{import_error, inconsistent, malformed};
use crate::ImportError;
use heapgraph_format::{
    self as format, Chunk, FrameColumns, Header, KIND_ALLOC_SNAPSHOT, NO_NAME, Reader, SiteColumns,
    SliceReader, StackColumns, Truncation, Writer, decode_column,
};
use heapgraph_model::{
    AllocMeta, AllocSnapshot, AllocSource, Frame, FrameId, LiveSite, StackId, StringId, StringTable,
};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};

/// The header's `source_format` of what the Rust recorder writes.
pub(super) const SOURCE_FORMAT: &str = "heapgraph-alloc";
/// The header's `runtime` of what the Rust recorder writes.
pub(super) const RUNTIME: &str = "rust";

/// The `totals` keys of an allocation snapshot's header.
const TOTAL_FRAMES: &str = "frames";
const TOTAL_STACKS: &str = "stacks";
const TOTAL_SITES: &str = "sites";

/// What the two readers have in common, so that one loop reads both.
pub(super) trait Chunks {
    /// The next chunk, or `None` at the end or where the file was cut.
    fn next(&mut self) -> Result<Option<Chunk<'_>>, format::Error>;
    /// Bytes consumed so far.
    fn offset(&self) -> u64;
    /// Complete chunks so far.
    fn chunks_read(&self) -> u64;
    /// Where the file was cut, once `next` has returned `None`.
    fn truncation(&self) -> Option<Truncation>;
}

impl<R: BufRead> Chunks for Reader<R> {
    fn next(&mut self) -> Result<Option<Chunk<'_>>, format::Error> {
        self.next_chunk()
    }
    fn offset(&self) -> u64 {
        Reader::offset(self)
    }
    fn chunks_read(&self) -> u64 {
        Reader::chunks_read(self)
    }
    fn truncation(&self) -> Option<Truncation> {
        Reader::truncation(self).cloned()
    }
}

impl Chunks for SliceReader<'_> {
    fn next(&mut self) -> Result<Option<Chunk<'_>>, format::Error> {
        self.next_chunk()
    }
    fn offset(&self) -> u64 {
        SliceReader::offset(self)
    }
    fn chunks_read(&self) -> u64 {
        SliceReader::chunks_read(self)
    }
    fn truncation(&self) -> Option<Truncation> {
        SliceReader::truncation(self).cloned()
    }
}

/// The columns of the file as written, before ids are checked.
#[derive(Default)]
struct Columns {
    strings: Vec<StringId>,
    table: StringTable,
    filename: Vec<u32>,
    name: Vec<u32>,
    lineno: Vec<u32>,
    frame_count: Vec<u32>,
    frames: Vec<u32>,
    site_stack: Vec<u32>,
    site_domain: Vec<u64>,
    site_bytes: Vec<u64>,
    site_count: Vec<u64>,
    saw_sites: bool,
    unknown: BTreeMap<String, u64>,
}

impl Columns {
    fn add(&mut self, chunk: Chunk<'_>) -> Result<(), String> {
        let column = |err: format::ColumnError| err.to_string();
        match chunk {
            Chunk::Strings(chunk) => {
                for text in chunk.strings()? {
                    if self.strings.len() >= u32::MAX as usize {
                        return Err("the file has more than 2^32 strings".to_owned());
                    }
                    self.strings.push(self.table.intern(text));
                }
            }
            Chunk::Frames(chunk) => {
                decode_column(chunk.filename, &mut self.filename).map_err(column)?;
                decode_column(chunk.name, &mut self.name).map_err(column)?;
                decode_column(chunk.lineno, &mut self.lineno).map_err(column)?;
            }
            Chunk::Stacks(chunk) => {
                decode_column(chunk.frame_count, &mut self.frame_count).map_err(column)?;
                decode_column(chunk.frames, &mut self.frames).map_err(column)?;
            }
            Chunk::Sites(chunk) => {
                self.saw_sites = true;
                decode_column(chunk.stack, &mut self.site_stack).map_err(column)?;
                decode_column(chunk.domain, &mut self.site_domain).map_err(column)?;
                decode_column(chunk.bytes, &mut self.site_bytes).map_err(column)?;
                decode_column(chunk.count, &mut self.site_count).map_err(column)?;
            }
            other => {
                *self
                    .unknown
                    .entry(other.type_name().to_owned())
                    .or_default() += 1;
            }
        }
        Ok(())
    }
}

/// What a cut-short file lost by way of dangling references.
#[derive(Default)]
struct Losses {
    names: u64,
    stacks: u64,
    sites: u64,
}

/// Reads the chunks after an `alloc-snapshot` header into a snapshot.
pub(super) fn import<C: Chunks>(
    mut reader: C,
    header: &Header,
) -> Result<AllocSnapshot, ImportError> {
    let source = check_header(header)?;
    let mut columns = Columns::default();
    loop {
        let start = reader.offset();
        let record = reader.chunks_read() + 1;
        let Some(chunk) = reader.next().map_err(import_error)? else {
            break;
        };
        columns
            .add(chunk)
            .map_err(|message| malformed(start, format!("record {record}: {message}")))?;
    }
    let truncation = reader.truncation();
    finish(columns, header, source, truncation.as_ref())
}

fn check_header(header: &Header) -> Result<AllocSource, ImportError> {
    debug_assert_eq!(header.kind, KIND_ALLOC_SNAPSHOT);
    if header.runtime != RUNTIME {
        return Err(malformed(
            0,
            format!(
                "an allocation snapshot of runtime {:?}; this version of heapgraph reads those of {RUNTIME:?} (the Rust allocation recorder)",
                header.runtime
            ),
        ));
    }
    Ok(AllocSource::RustAlloc)
}

/// Builds the snapshot: checks every id (a complete file must be consistent; a cut one loses
/// what it cannot resolve), and merges sites that share a stack and domain.
fn finish(
    columns: Columns,
    header: &Header,
    source: AllocSource,
    truncation: Option<&Truncation>,
) -> Result<AllocSnapshot, ImportError> {
    let Columns {
        strings,
        mut table,
        filename,
        name,
        lineno,
        frame_count,
        frames,
        site_stack,
        site_domain,
        site_bytes,
        site_count,
        saw_sites,
        unknown,
    } = columns;
    let cut = truncation.is_some();
    let mut losses = Losses::default();
    let mut stacks = heapgraph_model::Stacks::new();
    let empty = table.intern("");
    let mut frame_ids: Vec<FrameId> = Vec::with_capacity(filename.len());
    for (index, ((&file, &function), &line)) in filename.iter().zip(&name).zip(&lineno).enumerate()
    {
        let mut string = |raw: u32, what: &str| -> Result<StringId, ImportError> {
            match strings.get(raw as usize) {
                Some(&id) => Ok(id),
                None if cut => {
                    losses.names += 1;
                    Ok(empty)
                }
                None => Err(inconsistent(format!(
                    "frame {index} names {what} string {raw}, but the file has {} strings",
                    strings.len()
                ))),
            }
        };
        let filename = string(file, "its file as")?;
        let name = if function == NO_NAME {
            None
        } else {
            Some(string(function, "its function as")?)
        };
        frame_ids.push(stacks.intern_frame(Frame {
            filename,
            lineno: line,
            name,
        }));
    }
    // File stack index to model stack, `None` for a stack whose frames did not all arrive.
    let mut stack_ids: Vec<Option<StackId>> = Vec::with_capacity(frame_count.len());
    let mut stack_frames: Vec<FrameId> = Vec::new();
    let mut next = 0usize;
    for (index, &count) in frame_count.iter().enumerate() {
        // The reader checked that each chunk's counts add up to its frames.
        let refs = &frames[next..next + count as usize];
        next += count as usize;
        stack_frames.clear();
        let mut complete = true;
        for &raw in refs {
            match frame_ids.get(raw as usize) {
                Some(&id) => stack_frames.push(id),
                None if cut => complete = false,
                None => {
                    return Err(inconsistent(format!(
                        "stack {index} refers to frame {raw}, but the file has {} frames",
                        frame_ids.len()
                    )));
                }
            }
        }
        if complete {
            stack_ids.push(Some(stacks.intern_stack(&stack_frames)));
        } else {
            losses.stacks += 1;
            stack_ids.push(None);
        }
    }
    let mut sites: Vec<LiveSite> = Vec::new();
    let mut site_index: FxHashMap<(StackId, u64), usize> = FxHashMap::default();
    for (index, (((&stack, &domain), &bytes), &count)) in site_stack
        .iter()
        .zip(&site_domain)
        .zip(&site_bytes)
        .zip(&site_count)
        .enumerate()
    {
        let stack = match stack_ids.get(stack as usize) {
            Some(Some(id)) => *id,
            Some(None) => {
                losses.sites += 1;
                continue;
            }
            None if cut => {
                losses.sites += 1;
                continue;
            }
            None => {
                return Err(inconsistent(format!(
                    "site {index} refers to stack {stack}, but the file has {} stacks",
                    stack_ids.len()
                )));
            }
        };
        match site_index.get(&(stack, domain)) {
            Some(&at) => {
                let site: &mut LiveSite = &mut sites[at];
                site.bytes = site.bytes.saturating_add(bytes);
                site.count = site.count.saturating_add(count);
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
    let mut notes = header.notes.clone();
    if let Some(truncation) = truncation {
        notes.push(truncation_note(
            truncation,
            header,
            &losses,
            site_stack.len(),
            saw_sites,
        ));
    }
    for (type_name, count) in &unknown {
        notes.push(format!(
            "skipped {count} chunk(s) of type {type_name:?}, which this version of heapgraph does not read"
        ));
    }
    Ok(AllocSnapshot {
        meta: AllocMeta {
            source,
            source_format: header.source_format.clone(),
            traceback_limit: None,
            notes,
        },
        strings: table,
        stacks,
        sites,
        cuda: None,
    })
}

/// The note for a cut-short file: where it ends, what was read of what, and what was dropped.
fn truncation_note(
    truncation: &Truncation,
    header: &Header,
    losses: &Losses,
    n_sites: usize,
    saw_sites: bool,
) -> String {
    let of = |n: usize, key: &str| match header.totals.get(key) {
        Some(total) => format!("{n} of {total} {key}"),
        None => format!("{n} {key}"),
    };
    let mut note = format!("{truncation}: {} were read", of(n_sites, TOTAL_SITES));
    if !saw_sites {
        note.push_str(" (the file ends before its first sites chunk, so no allocation is shown)");
    }
    if losses.sites > 0 {
        note.push_str(&format!(
            "; {} sites whose stack did not arrive were dropped",
            losses.sites
        ));
    }
    if losses.stacks > 0 {
        note.push_str(&format!(
            "; {} stacks refer to frames that did not arrive",
            losses.stacks
        ));
    }
    if losses.names > 0 {
        note.push_str(&format!(
            "; {} names whose string did not arrive are shown empty",
            losses.names
        ));
    }
    note
}

/// Writes `snapshot` as an `.hgd` allocation snapshot: header, strings, frames, stacks, sites,
/// end. The Rust recorder writes the same records itself (it links `format` only).
///
/// # Errors
/// The stream's error.
pub fn write_alloc_snapshot<W: Write>(snapshot: &AllocSnapshot, out: W) -> io::Result<()> {
    write_in_chunks(snapshot, out, format::DEFAULT_CHUNK_ROWS)
}

pub(super) fn write_in_chunks<W: Write>(
    snapshot: &AllocSnapshot,
    out: W,
    chunk_rows: usize,
) -> io::Result<()> {
    let mut header = Header::new(KIND_ALLOC_SNAPSHOT, SOURCE_FORMAT, RUNTIME);
    header.notes.clone_from(&snapshot.meta.notes);
    let stacks = &snapshot.stacks;
    header.totals = [
        (TOTAL_FRAMES, stacks.frame_count()),
        (TOTAL_STACKS, stacks.stack_count()),
        (TOTAL_SITES, snapshot.sites.len()),
    ]
    .into_iter()
    .map(|(key, n)| (key.to_owned(), n as u64))
    .collect();
    let mut writer = Writer::new(out, &header)
        .map_err(super::write_error)?
        .with_chunk_rows(chunk_rows);
    writer
        .write_strings(snapshot.strings.iter().map(|(_, text)| text))
        .map_err(super::write_error)?;
    let mut filename = Vec::with_capacity(stacks.frame_count());
    let mut name = Vec::with_capacity(stacks.frame_count());
    let mut lineno = Vec::with_capacity(stacks.frame_count());
    // Frame and stack ids are dense, so the table's own order numbers them in the file.
    for id in stacks.frame_ids() {
        let frame = stacks.frame(id);
        filename.push(frame.filename.to_raw());
        name.push(frame.name.map_or(NO_NAME, StringId::to_raw));
        lineno.push(frame.lineno);
    }
    writer
        .write_frames(&FrameColumns {
            filename: &filename,
            name: &name,
            lineno: &lineno,
        })
        .map_err(super::write_error)?;
    let mut frame_count = Vec::with_capacity(stacks.stack_count());
    let mut stack_frames = Vec::new();
    for id in stacks.stack_ids() {
        let of = stacks.frames_of(id);
        frame_count.push(of.len() as u32);
        stack_frames.extend(of.iter().map(|frame| frame.index() as u32));
    }
    writer
        .write_stacks(&StackColumns {
            frame_count: &frame_count,
            frames: &stack_frames,
        })
        .map_err(super::write_error)?;
    let sites = &snapshot.sites;
    writer
        .write_sites(&SiteColumns {
            stack: &sites
                .iter()
                .map(|s| s.stack.index() as u32)
                .collect::<Vec<_>>(),
            domain: &sites.iter().map(|s| s.domain).collect::<Vec<_>>(),
            bytes: &sites.iter().map(|s| s.bytes).collect::<Vec<_>>(),
            count: &sites.iter().map(|s| s.count).collect::<Vec<_>>(),
        })
        .map_err(super::write_error)?;
    writer.finish().map_err(super::write_error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Contents;
    use crate::hgd::{Options, import_slice_with_analysis, import_with_analysis};
    use proptest::prelude::*;

    /// Four frames (one without a function), three stacks (one empty) and four sites, two of
    /// them on one stack in different domains.
    fn sample() -> AllocSnapshot {
        let mut strings = StringTable::new();
        let [main_rs, raw_vec, main, grow, crab] = [
            "src/main.rs",
            "/rustc/0123abcd/library/alloc/src/raw_vec.rs",
            "demo::main",
            "alloc::raw_vec::RawVecInner::grow",
            "🦀.rs",
        ]
        .map(|text| strings.intern(text));
        let mut stacks = heapgraph_model::Stacks::new();
        let mut frame = |filename, lineno, name| {
            stacks.intern_frame(Frame {
                filename,
                lineno,
                name,
            })
        };
        let f_main = frame(main_rs, 12, Some(main));
        let f_grow = frame(raw_vec, 480, Some(grow));
        let f_crab = frame(crab, 1, None);
        let f_other = frame(main_rs, 30, Some(main));
        let deep = stacks.intern_stack(&[f_grow, f_main, f_crab]);
        let empty = stacks.intern_stack(&[]);
        let short = stacks.intern_stack(&[f_other]);
        let site = |stack, domain, bytes, count| LiveSite {
            stack,
            domain,
            bytes,
            count,
        };
        AllocSnapshot {
            meta: AllocMeta {
                source: AllocSource::RustAlloc,
                source_format: SOURCE_FORMAT.to_owned(),
                traceback_limit: None,
                notes: vec!["sampled".to_owned()],
            },
            strings,
            stacks,
            sites: vec![
                site(deep, 0, 4000, 4),
                site(empty, 0, 24, 1),
                site(short, 0, 1 << 40, 3),
                site(deep, 7, 8, 1),
            ],
            cuda: None,
        }
    }

    fn write(snapshot: &AllocSnapshot, chunk_rows: usize) -> Vec<u8> {
        let mut file = Vec::new();
        write_in_chunks(snapshot, &mut file, chunk_rows).expect("written");
        file
    }

    /// A site as text: its frames, domain, bytes and count.
    type SiteText = (Vec<(String, u32, Option<String>)>, u64, u64, u64);

    fn sites_of(snapshot: &AllocSnapshot) -> Vec<SiteText> {
        let text = |id: StringId| snapshot.strings.get(id).to_owned();
        snapshot
            .sites
            .iter()
            .map(|site| {
                let frames = snapshot
                    .stacks
                    .frames_of(site.stack)
                    .iter()
                    .map(|&id| {
                        let frame = snapshot.stacks.frame(id);
                        (text(frame.filename), frame.lineno, frame.name.map(text))
                    })
                    .collect();
                (frames, site.domain, site.bytes, site.count)
            })
            .collect()
    }

    /// Reads `bytes` as a stream and as a slice; both must agree.
    fn read(bytes: &[u8]) -> Result<AllocSnapshot, ImportError> {
        let streamed = import_with_analysis(bytes, &Options::default());
        let sliced = import_slice_with_analysis(bytes, &Options::default());
        match (streamed, sliced) {
            (Ok((Contents::Alloc(one), None)), Ok((Contents::Alloc(other), None))) => {
                assert_eq!(sites_of(&one), sites_of(&other));
                assert_eq!(one.meta.notes, other.meta.notes);
                Ok(one)
            }
            (Err(err), Err(other)) => {
                assert_eq!(err.to_string(), other.to_string());
                Err(err)
            }
            (Ok(_), Ok(_)) => panic!("not an allocation snapshot"),
            (streamed, sliced) => panic!(
                "the stream and slice readers disagree: {:?} against {:?}",
                streamed.err().map(|err| err.to_string()),
                sliced.err().map(|err| err.to_string())
            ),
        }
    }

    #[test]
    fn alloc_snapshot_round_trips() {
        let snapshot = sample();
        for chunk_rows in [1, 2, 1 << 20] {
            let back = read(&write(&snapshot, chunk_rows)).expect("a snapshot");
            assert_eq!(sites_of(&back), sites_of(&snapshot), "{chunk_rows} rows");
            assert_eq!(back.meta.source, AllocSource::RustAlloc);
            assert_eq!(back.meta.source_format, "heapgraph-alloc");
            assert_eq!(back.meta.notes, ["sampled"]);
            assert_eq!(back.total_bytes(), snapshot.total_bytes());
        }
    }

    #[test]
    fn alloc_cut_at_every_offset_keeps_whole_sites_or_says_truncated() {
        let snapshot = sample();
        let full = sites_of(&snapshot);
        let file = write(&snapshot, 1);
        let mut partial = 0;
        for cut in 0..file.len() {
            match read(&file[..cut]) {
                Ok(back) => {
                    let note = back.meta.notes.last().expect("a note");
                    assert!(note.starts_with("the file ends after"), "cut {cut}: {note}");
                    assert!(note.contains("of 4 sites were read"), "cut {cut}: {note}");
                    // One site per chunk: what arrived is a prefix of what was written.
                    let sites = sites_of(&back);
                    assert_eq!(sites[..], full[..sites.len()], "cut {cut}");
                    if !sites.is_empty() && sites.len() < full.len() {
                        partial += 1;
                    }
                }
                Err(ImportError::Truncated { offset, .. }) => assert!(offset <= cut as u64),
                Err(err) => panic!("cut at {cut}: {err}"),
            }
        }
        assert!(partial > 0, "no cut kept some sites but not all");
        assert_eq!(sites_of(&read(&file).expect("whole")), full);
    }

    #[test]
    fn alloc_complete_files_must_be_consistent() {
        let mut file = Vec::new();
        let header = Header::new(KIND_ALLOC_SNAPSHOT, SOURCE_FORMAT, RUNTIME);
        let mut writer = Writer::new(&mut file, &header).expect("header");
        writer.write_strings(["", "a.rs"]).expect("strings");
        writer
            .write_frames(&FrameColumns {
                filename: &[1],
                name: &[NO_NAME],
                lineno: &[3],
            })
            .expect("frames");
        writer
            .write_stacks(&StackColumns {
                frame_count: &[1],
                frames: &[0],
            })
            .expect("stacks");
        writer
            .write_sites(&SiteColumns {
                stack: &[1],
                domain: &[0],
                bytes: &[8],
                count: &[1],
            })
            .expect("sites");
        writer.finish().expect("end");
        let err = read(&file).map(drop).expect_err("a site of no stack");
        assert_eq!(
            err.to_string(),
            "heapgraph .hgd: site 0 refers to stack 1, but the file has 1 stacks"
        );
        // The same file cut before its end record: the site is dropped, with a note.
        let without_end = &file[..file.len() - 10];
        let back = read(without_end).expect("read as far as it goes");
        assert!(back.sites.is_empty());
        let note = back.meta.notes.last().expect("a note");
        assert!(
            note.contains("1 sites whose stack did not arrive were dropped"),
            "{note}"
        );
    }

    #[test]
    fn alloc_snapshots_of_other_runtimes_are_refused() {
        let mut file = Vec::new();
        Writer::new(
            &mut file,
            &Header::new(KIND_ALLOC_SNAPSHOT, SOURCE_FORMAT, "cobol"),
        )
        .and_then(Writer::finish)
        .expect("written");
        let err = read(&file).map(drop).expect_err("unknown runtime");
        assert!(
            err.to_string().contains("runtime \"cobol\"") && err.to_string().contains("at byte 0"),
            "{err}"
        );
    }

    #[test]
    fn alloc_a_corrupt_frame_count_names_its_record_and_offset() {
        let mut file = write(&sample(), 1 << 20);
        // The first stack has three frames: claim four.
        let needle = b"frame_count\xc4\x0c\x03\x00\x00\x00";
        let at = file
            .windows(needle.len())
            .position(|window| window == needle)
            .expect("the stacks chunk");
        file[at + needle.len() - 4] = 4;
        let err = read(&file).map(drop).expect_err("counts disagree");
        let text = err.to_string();
        assert!(
            text.starts_with("heapgraph .hgd: at byte ") && text.contains("record 3"),
            "{text}"
        );
        assert!(
            text.contains("add up to 5 frames but frames has 4"),
            "{text}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn alloc_a_header_then_arbitrary_bytes_never_panic(
            tail in proptest::collection::vec(any::<u8>(), 0..400),
        ) {
            let mut file = Vec::new();
            Writer::new(&mut file, &Header::new(KIND_ALLOC_SNAPSHOT, SOURCE_FORMAT, RUNTIME))
                .expect("header");
            file.extend(tail);
            let _ = read(&file);
        }

        #[test]
        fn alloc_changed_bytes_never_panic(
            changes in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        ) {
            let mut file = write(&sample(), 2);
            for (at, byte) in changes {
                let at = at % file.len();
                file[at] = byte;
            }
            if let Ok(snapshot) = read(&file) {
                for site in &snapshot.sites {
                    prop_assert!(site.stack.index() < snapshot.stacks.stack_count());
                }
            }
        }
    }
}
