//! The allocation-snapshot records (`frames`, `stacks`, `sites`): written, read back, cut into
//! chunks of whole stacks, and refused when their columns disagree.

use heapgraph_format::{
    Chunk, Error, FrameColumns, Header, KIND_ALLOC_SNAPSHOT, NO_NAME, Reader, SiteColumns,
    SliceReader, StackColumns, Writer, decode_column,
};

/// Three frames, three stacks (one empty), two sites.
fn write(chunk_rows: usize) -> Vec<u8> {
    let mut file = Vec::new();
    let header = Header::new(KIND_ALLOC_SNAPSHOT, "heapgraph-alloc", "rust");
    let mut writer = Writer::new(&mut file, &header)
        .expect("in memory")
        .with_chunk_rows(chunk_rows);
    writer
        .write_strings(["", "src/main.rs", "main", "alloc"])
        .expect("in memory");
    writer
        .write_frames(&FrameColumns {
            filename: &[1, 1, 1],
            name: &[2, 3, NO_NAME],
            lineno: &[10, 20, 0],
        })
        .expect("in memory");
    writer
        .write_stacks(&StackColumns {
            frame_count: &[2, 0, 3],
            frames: &[1, 0, 2, 1, 0],
        })
        .expect("in memory");
    writer
        .write_sites(&SiteColumns {
            stack: &[0, 2],
            domain: &[0, 0],
            bytes: &[1000, 24],
            count: &[1, 3],
        })
        .expect("in memory");
    writer.finish().expect("in memory");
    file
}

#[derive(Debug, Default, PartialEq)]
struct Decoded {
    types: Vec<String>,
    filename: Vec<u32>,
    name: Vec<u32>,
    lineno: Vec<u32>,
    frame_count: Vec<u32>,
    frames: Vec<u32>,
    /// Frames per chunk of stacks, to see that no stack is split.
    frames_per_stack_chunk: Vec<usize>,
    stack: Vec<u32>,
    bytes: Vec<u64>,
    count: Vec<u64>,
}

fn read(file: &[u8]) -> Decoded {
    let mut reader = Reader::new(file).expect("a header");
    assert_eq!(reader.header().kind, KIND_ALLOC_SNAPSHOT);
    let mut out = Decoded::default();
    while let Some(chunk) = reader.next_chunk().expect("valid chunks") {
        out.types.push(chunk.type_name().to_owned());
        match chunk {
            Chunk::Frames(frames) => {
                decode_column(frames.filename, &mut out.filename).expect("u32");
                decode_column(frames.name, &mut out.name).expect("u32");
                decode_column(frames.lineno, &mut out.lineno).expect("u32");
            }
            Chunk::Stacks(stacks) => {
                decode_column(stacks.frame_count, &mut out.frame_count).expect("u32");
                let n = decode_column(stacks.frames, &mut out.frames).expect("u32");
                out.frames_per_stack_chunk.push(n);
            }
            Chunk::Sites(sites) => {
                decode_column(sites.stack, &mut out.stack).expect("u32");
                decode_column(sites.bytes, &mut out.bytes).expect("u64");
                decode_column(sites.count, &mut out.count).expect("u64");
            }
            _ => {}
        }
    }
    assert!(reader.truncation().is_none());
    out
}

#[test]
fn alloc_records_round_trip() {
    let read = read(&write(1 << 20));
    assert_eq!(read.types, ["strings", "frames", "stacks", "sites"]);
    assert_eq!(read.filename, [1, 1, 1]);
    assert_eq!(read.name, [2, 3, NO_NAME]);
    assert_eq!(read.lineno, [10, 20, 0]);
    assert_eq!(read.frame_count, [2, 0, 3]);
    assert_eq!(read.frames, [1, 0, 2, 1, 0]);
    assert_eq!(read.stack, [0, 2]);
    assert_eq!(read.bytes, [1000, 24]);
    assert_eq!(read.count, [1, 3]);
}

#[test]
fn stacks_chunks_hold_whole_stacks() {
    // One row per chunk: a stack of three frames still goes in one chunk.
    let small = read(&write(1));
    assert_eq!(small.frames_per_stack_chunk, [2, 0, 3]);
    assert_eq!(small.frames, [1, 0, 2, 1, 0]);
    // Two rows per chunk: the first two stacks have 2 frames, then the last alone.
    let two = read(&write(2));
    assert_eq!(two.frames_per_stack_chunk, [2, 3]);
    let whole = read(&write(1 << 20));
    assert_eq!(
        (small.stack, small.bytes, small.count),
        (whole.stack, whole.bytes, whole.count)
    );
}

#[test]
fn an_empty_snapshot_still_has_a_sites_chunk() {
    let mut file = Vec::new();
    let header = Header::new(KIND_ALLOC_SNAPSHOT, "heapgraph-alloc", "rust");
    let mut writer = Writer::new(&mut file, &header).expect("in memory");
    writer
        .write_sites(&SiteColumns {
            stack: &[],
            domain: &[],
            bytes: &[],
            count: &[],
        })
        .expect("in memory");
    writer.finish().expect("in memory");
    assert_eq!(read(&file).types, ["sites"]);
}

#[test]
fn frame_counts_that_disagree_with_the_frames_are_refused() {
    let mut file = Vec::new();
    let header = Header::new(KIND_ALLOC_SNAPSHOT, "heapgraph-alloc", "rust");
    let mut writer = Writer::new(&mut file, &header).expect("in memory");
    let err = writer
        .write_stacks(&StackColumns {
            frame_count: &[2, 2],
            frames: &[0, 1, 2],
        })
        .expect_err("4 declared, 3 given");
    assert!(
        matches!(&err, Error::InvalidColumns { message, .. } if message.contains("add up to 4")),
        "{err}"
    );
    let err = writer
        .write_sites(&SiteColumns {
            stack: &[0],
            domain: &[0],
            bytes: &[1, 2],
            count: &[1],
        })
        .expect_err("ragged");
    assert!(err.to_string().contains("bytes"), "{err}");
}

#[test]
fn a_corrupt_stacks_chunk_names_its_record_and_offset() {
    let mut file = write(1 << 20);
    // The stacks chunk's frame_count blob starts with the count of the first stack (2): make it
    // 3, so the counts add up to one more than the frames.
    let needle = b"frame_count\xc4\x0c\x02\x00\x00\x00";
    let at = file
        .windows(needle.len())
        .position(|window| window == needle)
        .expect("the stacks chunk");
    file[at + needle.len() - 4] = 3;
    let mut reader = SliceReader::new(&file).expect("a header");
    let mut error = None;
    loop {
        match reader.next_chunk() {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(err) => {
                error = Some(err);
                break;
            }
        }
    }
    let error = error.expect("a malformed stacks chunk");
    let text = error.to_string();
    assert!(
        text.contains("record 3") && text.contains("add up to 6 frames but frames has 5"),
        "{text}"
    );
    assert!(error.offset().is_some_and(|offset| offset > 0));
}
