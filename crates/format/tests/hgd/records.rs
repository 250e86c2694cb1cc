//! Round trips, truncation sweeps and arbitrary input for the `.hgd` reader and writer.

use heapgraph_format::{
    AnalysisColumns, Chunk, EdgeColumns, Error, Header, KIND_HEAP_GRAPH, MAX_RECORD_BYTES,
    NodeColumns, Reader, SliceReader, TypeTotalsColumns, Writer, decode_column, sniff,
};
use proptest::prelude::*;
use serde::Serialize;

/// What a small file holds, decoded back into plain columns.
#[derive(Debug, Default, PartialEq)]
struct Decoded {
    strings: Vec<String>,
    kinds: Vec<(String, bool)>,
    roots: Vec<u32>,
    object_id: Vec<u64>,
    node_kind: Vec<u8>,
    type_name: Vec<u32>,
    name: Vec<u32>,
    shallow_size: Vec<u64>,
    edge_count: Vec<u32>,
    to: Vec<u32>,
    edge_kind: Vec<u8>,
    edge_name: Vec<u32>,
    dominator: Vec<u32>,
    retained_size: Vec<u64>,
    distance: Vec<u32>,
    retained_count: Vec<u32>,
    chain_parent: Vec<u32>,
    /// (type name, count, shallow, retained) per type.
    type_totals: Vec<(u32, u64, u64, u64)>,
    unknown: Vec<String>,
    chunks: u64,
}

fn header() -> Header {
    let mut header = Header::new(KIND_HEAP_GRAPH, "v8-heapsnapshot", "v8");
    header.pointer_size = Some(8);
    header.runtime_version = Some("11.3.244.8".to_owned());
    header.captured_at_ms = Some(1_700_000_000_000);
    header.pid = Some(4242);
    header.notes = vec!["taken in a test".to_owned(), "ünïcode".to_owned()];
    header.totals.insert("nodes".to_owned(), 5);
    header
}

/// A small file: 5 nodes, 6 edges, written 2 rows per chunk.
fn small_file() -> Vec<u8> {
    let mut file = Vec::new();
    let mut writer = Writer::new(&mut file, &header())
        .expect("header")
        .with_chunk_rows(2);
    writer
        .write_strings(["", "Object", "Array", "αβγ", "next"])
        .expect("strings");
    writer
        .write_node_kinds([("synthetic", true), ("object", false)])
        .expect("kinds");
    writer.write_root(0).expect("root");
    writer
        .write_nodes(&NodeColumns {
            object_id: &[1, 3, 5, 7, u64::MAX],
            kind: &[0, 1, 1, 1, 1],
            type_name: &[0, 1, 2, 1, 3],
            name: &[0, 4, 0, 0, 3],
            shallow_size: &[0, 16, 32, 48, 1 << 40],
            edge_count: &[2, 1, 0, 3, 0],
        })
        .expect("nodes");
    writer
        .write_edges(&EdgeColumns {
            to: &[1, 2, 3, 1, 2, 4],
            kind: &[5, 2, 2, 1, 1, 6],
            name: &[0, 4, 4, 0, 1, 0],
        })
        .expect("edges");
    writer
        .write_analysis(&AnalysisColumns {
            dominator: &[u32::MAX, 0, 0, 1, u32::MAX],
            retained_size: &[96, 64, 32, 48, 1 << 40],
            distance: &[0, 1, 1, 2, u32::MAX],
            retained_count: &[4, 2, 1, 1, 1],
            chain_parent: &[u32::MAX, 0, 0, 1, u32::MAX],
        })
        .expect("analysis");
    writer
        .write_type_totals(&TypeTotalsColumns {
            type_name: &[1, 2, 3],
            count: &[2, 1, 1],
            shallow_size: &[64, 32, 1 << 40],
            retained_size: &[64, 32, 1 << 40],
        })
        .expect("type totals");
    writer.finish().expect("finish");
    file
}

fn expected() -> Decoded {
    Decoded {
        strings: ["", "Object", "Array", "αβγ", "next"]
            .map(String::from)
            .to_vec(),
        kinds: vec![("synthetic".to_owned(), true), ("object".to_owned(), false)],
        roots: vec![0],
        object_id: vec![1, 3, 5, 7, u64::MAX],
        node_kind: vec![0, 1, 1, 1, 1],
        type_name: vec![0, 1, 2, 1, 3],
        name: vec![0, 4, 0, 0, 3],
        shallow_size: vec![0, 16, 32, 48, 1 << 40],
        edge_count: vec![2, 1, 0, 3, 0],
        to: vec![1, 2, 3, 1, 2, 4],
        edge_kind: vec![5, 2, 2, 1, 1, 6],
        edge_name: vec![0, 4, 4, 0, 1, 0],
        dominator: vec![u32::MAX, 0, 0, 1, u32::MAX],
        retained_size: vec![96, 64, 32, 48, 1 << 40],
        distance: vec![0, 1, 1, 2, u32::MAX],
        retained_count: vec![4, 2, 1, 1, 1],
        chain_parent: vec![u32::MAX, 0, 0, 1, u32::MAX],
        type_totals: vec![(1, 2, 64, 64), (2, 1, 32, 32), (3, 1, 1 << 40, 1 << 40)],
        unknown: Vec::new(),
        // At 2 rows per chunk: 3 of strings, 1 of kinds, 1 root, 3 of nodes, 3 of edges,
        // 3 of analysis and 1 of type totals.
        chunks: 3 + 1 + 1 + 3 + 3 + 3 + 1,
    }
}

/// Reads every chunk of `reader` into plain columns.
fn read_all<R: std::io::Read>(
    reader: &mut Reader<R>,
) -> Result<Decoded, Box<dyn std::error::Error>> {
    let mut out = Decoded::default();
    while let Some(chunk) = reader.next_chunk()? {
        match chunk {
            Chunk::Strings(chunk) => out.strings.extend(chunk.strings()?.map(str::to_owned)),
            Chunk::NodeKinds(chunk) => out
                .kinds
                .extend(chunk.names.into_iter().zip(chunk.synthetic)),
            Chunk::Root(root) => out.roots.push(root.node),
            Chunk::Nodes(chunk) => {
                decode_column(chunk.object_id, &mut out.object_id)?;
                decode_column(chunk.kind, &mut out.node_kind)?;
                decode_column(chunk.type_name, &mut out.type_name)?;
                decode_column(chunk.name, &mut out.name)?;
                decode_column(chunk.shallow_size, &mut out.shallow_size)?;
                decode_column(chunk.edge_count, &mut out.edge_count)?;
            }
            Chunk::Edges(chunk) => {
                decode_column(chunk.to, &mut out.to)?;
                decode_column(chunk.kind, &mut out.edge_kind)?;
                decode_column(chunk.name, &mut out.edge_name)?;
            }
            Chunk::Analysis(chunk) => {
                decode_column(chunk.dominator, &mut out.dominator)?;
                decode_column(chunk.retained_size, &mut out.retained_size)?;
                decode_column(chunk.distance, &mut out.distance)?;
                decode_column(chunk.retained_count, &mut out.retained_count)?;
                decode_column(chunk.chain_parent, &mut out.chain_parent)?;
            }
            Chunk::TypeTotals(chunk) => {
                let (mut name, mut count, mut shallow, mut retained) =
                    (Vec::<u32>::new(), Vec::new(), Vec::new(), Vec::new());
                decode_column(chunk.type_name, &mut name)?;
                decode_column(chunk.count, &mut count)?;
                decode_column(chunk.shallow_size, &mut shallow)?;
                decode_column(chunk.retained_size, &mut retained)?;
                for i in 0..name.len() {
                    out.type_totals
                        .push((name[i], count[i], shallow[i], retained[i]));
                }
            }
            Chunk::Unknown(unknown) => out.unknown.push(unknown.type_name),
            other => return Err(format!("unexpected chunk {}", other.type_name()).into()),
        }
    }
    out.chunks = reader.chunks_read();
    Ok(out)
}

#[test]
fn a_file_round_trips() {
    let file = small_file();
    assert_eq!(sniff(&file), Some(true));
    let mut reader = Reader::new(file.as_slice()).expect("header");
    assert_eq!(reader.header(), &header());
    let decoded = read_all(&mut reader).expect("chunks");
    assert_eq!(decoded, expected());
    assert_eq!(reader.truncation(), None);
    assert_eq!(reader.offset(), file.len() as u64);
}

#[test]
fn the_first_bytes_identify_the_format() {
    let file = small_file();
    for len in 0..17 {
        assert_eq!(sniff(&file[..len]), None, "prefix of {len} bytes");
    }
    assert_eq!(sniff(&file[..17]), Some(true));
    assert_eq!(sniff(b"{\"snapshot\":{}}"), Some(false));
    assert_eq!(sniff(b"\x85\xa5magic\xa9heapgrapX"), Some(false));
    assert_eq!(sniff(b"\xde\x00\x10\xa5magic\xa9heapgraph"), Some(true));
}

/// Byte offsets where each record of `small_file` ends: the header, then each chunk, then the
/// end record.
fn record_ends(file: &[u8]) -> Vec<u64> {
    let mut reader = Reader::new(file).expect("header");
    let mut ends = vec![reader.offset()];
    while reader.next_chunk().expect("chunk").is_some() {
        ends.push(reader.offset());
    }
    ends.push(reader.offset());
    ends
}

#[test]
fn a_cut_at_every_offset_loses_only_the_last_record() {
    let file = small_file();
    let ends = record_ends(&file);
    let header_end = ends[0];
    let full = expected();
    for cut in 0..file.len() {
        let input = &file[..cut];
        let mut reader = match Reader::new(input) {
            Ok(reader) => reader,
            Err(Error::TruncatedHeader { .. }) => {
                assert!((cut as u64) < header_end, "cut at {cut}");
                continue;
            }
            Err(err) => panic!("cut at {cut}: {err}"),
        };
        assert!(cut as u64 >= header_end);
        let decoded = read_all(&mut reader).unwrap_or_else(|err| panic!("cut at {cut}: {err}"));
        let truncation = reader.truncation().cloned().expect("a cut file says so");
        // The chunks read are exactly those whose records end at or before the cut.
        let complete = ends[1..].iter().filter(|&&end| end <= cut as u64).count() as u64;
        let complete = complete.min(full.chunks);
        assert_eq!(truncation.chunks, complete, "cut at {cut}");
        assert_eq!(decoded.chunks, complete);
        assert_eq!(truncation.offset, ends[complete as usize], "cut at {cut}");
        assert_eq!(
            truncation.partial_record,
            ends[complete as usize] != cut as u64
        );
        let message = truncation.to_string();
        assert!(message.starts_with("the file ends after"), "{message}");
        // Whatever arrived is a prefix of the full columns.
        assert!(full.object_id.starts_with(&decoded.object_id));
        assert!(full.to.starts_with(&decoded.to));
        assert!(full.strings.starts_with(&decoded.strings));
    }
}

#[test]
fn truncation_names_the_chunk_and_offset() {
    let file = small_file();
    let ends = record_ends(&file);
    let cut = ends[3] as usize + 5;
    let mut reader = Reader::new(&file[..cut]).expect("header");
    read_all(&mut reader).expect("chunks");
    assert_eq!(
        reader.truncation().map(ToString::to_string).as_deref(),
        Some(
            format!(
                "the file ends after chunk 3 (byte offset {}), inside the next record, which is lost",
                ends[3]
            )
            .as_str()
        )
    );
}

#[derive(Serialize)]
struct RawRecord<'a> {
    #[serde(rename = "type")]
    type_name: &'a str,
    #[serde(with = "serde_bytes")]
    data: &'a [u8],
}

/// The bytes of `small_file` up to and including its last chunk, without the end record.
fn without_end(file: &[u8]) -> Vec<u8> {
    let ends = record_ends(file);
    file[..ends[ends.len() - 2] as usize].to_vec()
}

fn append<T: Serialize>(file: &mut Vec<u8>, value: &T) {
    file.extend(rmp_serde::to_vec_named(value).expect("serialisable"));
}

#[derive(Serialize)]
struct End {
    #[serde(rename = "type")]
    type_name: &'static str,
    chunks: u64,
}

#[test]
fn unknown_chunks_are_handed_over_by_name() {
    let mut file = without_end(&small_file());
    append(
        &mut file,
        &RawRecord {
            type_name: "alloc_rows",
            data: &[1, 2, 3],
        },
    );
    append(
        &mut file,
        &End {
            type_name: "end",
            chunks: expected().chunks + 1,
        },
    );
    let mut reader = Reader::new(file.as_slice()).expect("header");
    let decoded = read_all(&mut reader).expect("chunks");
    assert_eq!(decoded.unknown, ["alloc_rows"]);
    assert_eq!(reader.truncation(), None);
}

#[test]
fn a_wrong_end_count_or_data_after_the_end_is_an_error() {
    let mut file = without_end(&small_file());
    append(
        &mut file,
        &End {
            type_name: "end",
            chunks: 3,
        },
    );
    let mut reader = Reader::new(file.as_slice()).expect("header");
    let err = read_all(&mut reader).expect_err("a wrong count");
    assert!(
        err.to_string().contains("the end record counts 3 chunks"),
        "{err}"
    );

    let mut file = small_file();
    file.push(0xc0);
    let mut reader = Reader::new(file.as_slice()).expect("header");
    let err = read_all(&mut reader).expect_err("trailing data");
    assert!(
        err.to_string().contains("data follows the end record"),
        "{err}"
    );
}

#[test]
fn columns_that_disagree_are_an_error_with_record_and_offset() {
    let mut file = without_end(&small_file());
    let at = file.len();
    #[derive(Serialize)]
    struct BadEdges<'a> {
        #[serde(rename = "type")]
        type_name: &'a str,
        #[serde(with = "serde_bytes")]
        to: &'a [u8],
        #[serde(with = "serde_bytes")]
        kind: &'a [u8],
        #[serde(with = "serde_bytes")]
        name: &'a [u8],
    }
    append(
        &mut file,
        &BadEdges {
            type_name: "edges",
            to: &[0; 8],
            kind: &[0; 3],
            name: &[0; 8],
        },
    );
    let mut reader = Reader::new(file.as_slice()).expect("header");
    let err = read_all(&mut reader).expect_err("bad columns");
    let record = expected().chunks + 1;
    assert_eq!(
        err.to_string(),
        format!("record {record} at byte {at}: a edges chunk: column kind has 3 rows but to has 2")
    );
}

#[test]
fn a_huge_declared_blob_is_refused_before_any_allocation() {
    // bin32 declaring 4 GiB - 1 bytes, with a few bytes behind it.
    let mut file = without_end(&small_file());
    let at = file.len() as u64;
    file.extend_from_slice(&[0x82, 0xa4, b't', b'y', b'p', b'e', 0xa7]);
    file.extend_from_slice(b"strings");
    file.extend_from_slice(&[
        0xa4, b'd', b'a', b't', b'a', 0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2,
    ]);
    let mut reader = Reader::new(file.as_slice()).expect("header");
    match read_all(&mut reader).map_err(|err| err.to_string()) {
        Err(message) => assert!(
            message.contains(&format!("at byte {at}"))
                && message.contains(&MAX_RECORD_BYTES.to_string()),
            "{message}"
        ),
        Ok(_) => panic!("a 4 GiB blob was accepted"),
    }

    // Under the cap but longer than the input: the stream is cut short, nothing is reserved.
    let mut file = without_end(&small_file());
    file.extend_from_slice(&[0x82, 0xa4, b't', b'y', b'p', b'e', 0xa7]);
    file.extend_from_slice(b"strings");
    file.extend_from_slice(&[
        0xa4, b'd', b'a', b't', b'a', 0xc6, 0x0f, 0xff, 0xff, 0xff, 1, 2,
    ]);
    let mut reader = Reader::new(file.as_slice()).expect("header");
    read_all(&mut reader).expect("a cut-short stream");
    assert!(reader.truncation().is_some_and(|cut| cut.partial_record));
}

/// rmp-serde itself grows a `bin` only as bytes arrive (`take(len).read_to_end`): a huge
/// declared length on a short stream is an error, not a 4 GiB allocation. The reader does not
/// rely on it: it frames records itself with a cap.
#[test]
fn rmp_serde_does_not_reserve_a_declared_length() {
    let result: Result<serde_bytes::ByteBuf, _> =
        rmp_serde::from_read(&[0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2][..]);
    assert!(result.is_err());
}

#[test]
fn other_versions_and_formats_are_refused() {
    let mut header = header();
    header.version = 3;
    let file = rmp_serde::to_vec_named(&header).expect("serialisable");
    assert!(matches!(
        Reader::new(file.as_slice()),
        Err(Error::UnsupportedVersion {
            version: 3,
            supported: 2
        })
    ));
    let err = Reader::new(&b"{\"snapshot\": {}}"[..])
        .err()
        .map(|err| err.to_string());
    assert_eq!(
        err.as_deref(),
        Some("not a heapgraph .hgd file: it starts with \"{\\\"snapshot\\\": {}}\"")
    );
    assert!(matches!(
        Reader::new(&b""[..]),
        Err(Error::TruncatedHeader { offset: 0 })
    ));
}

#[test]
fn the_writer_refuses_columns_of_different_lengths() {
    let mut writer = Writer::new(Vec::new(), &header()).expect("header");
    let err = writer
        .write_edges(&EdgeColumns {
            to: &[1, 2],
            kind: &[1],
            name: &[0, 0],
        })
        .expect_err("mismatch");
    assert_eq!(
        err.to_string(),
        "cannot write record 1: column kind has 1 rows, not 2"
    );
}

/// Everything a reader reports for `bytes`, as text: the header or the error, then each chunk
/// and the outcome. A macro, because the two readers share their methods but no trait.
macro_rules! reader_log {
    ($reader:expr) => {{
        let mut log = Vec::new();
        match $reader {
            Err(err) => log.push(format!("error {err}")),
            Ok(mut reader) => {
                log.push(format!("header {:?}", reader.header()));
                loop {
                    match reader.next_chunk() {
                        Ok(Some(chunk)) => log.push(format!("{chunk:?}")),
                        Ok(None) => break,
                        Err(err) => {
                            // Where a reader stands after an error is not part of its contract.
                            log.push(format!("error {err}"));
                            return log;
                        }
                    }
                }
                log.push(format!(
                    "{} chunks, at {}, truncation {:?}",
                    reader.chunks_read(),
                    reader.offset(),
                    reader.truncation()
                ));
            }
        }
        log
    }};
}

fn stream_log(bytes: &[u8]) -> Vec<String> {
    reader_log!(Reader::new(bytes))
}

fn slice_log(bytes: &[u8]) -> Vec<String> {
    reader_log!(SliceReader::new(bytes))
}

#[test]
fn the_slice_reader_reports_what_the_stream_reader_does_at_every_cut() {
    let file = small_file();
    for cut in 0..=file.len() {
        assert_eq!(
            stream_log(&file[..cut]),
            slice_log(&file[..cut]),
            "cut at {cut}"
        );
    }
    let mut trailing = file.clone();
    trailing.push(0xc0);
    assert_eq!(stream_log(&trailing), slice_log(&trailing));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(mut reader) = Reader::new(bytes.as_slice()) {
            let _ = read_all(&mut reader);
        }
        prop_assert_eq!(stream_log(&bytes), slice_log(&bytes));
    }

    #[test]
    fn a_valid_header_then_arbitrary_bytes_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let mut file = rmp_serde::to_vec_named(&header()).expect("serialisable");
        file.extend(tail);
        let mut reader = Reader::new(file.as_slice()).expect("header");
        let _ = read_all(&mut reader);
        prop_assert_eq!(stream_log(&file), slice_log(&file));
    }

    #[test]
    fn flipped_bytes_never_panic(at in 0usize..4096, byte in any::<u8>()) {
        let mut file = small_file();
        let at = at % file.len();
        file[at] = byte;
        if let Ok(mut reader) = Reader::new(file.as_slice()) {
            let _ = read_all(&mut reader);
        }
        prop_assert_eq!(stream_log(&file), slice_log(&file));
    }
}

/// Image data asked to be aligned starts at a multiple of `IMAGE_ALIGN` in the file whatever
/// came before it (small and large blobs, fillers below and above 255 bytes, the 256-byte case
/// that needs a whole page more), other data with no filler, and both readers give back the
/// image and every byte.
#[test]
fn image_data_is_aligned_and_reads_back() {
    use heapgraph_format::{IMAGE_ALIGN, ImageChunk, VERSION_IMAGES};
    let mut header = header();
    header.version = VERSION_IMAGES;
    let mut file = Vec::new();
    let mut writer = Writer::new(&mut file, &header).expect("header");
    let image = ImageChunk {
        column: "edge_to".to_owned(),
        repr: "only".to_owned(),
        scalars: [("shift".to_owned(), 3)].into_iter().collect(),
        parts: vec![("values".to_owned(), 4, 0)],
    };
    writer
        .write_chunk(&Chunk::Image(image.clone()))
        .expect("image");
    let mut written = Vec::new();
    // Blob sizes whose bin markers differ, and strings that shift what comes before the data
    // by every amount modulo the alignment over the loop.
    for (index, len) in [0usize, 1, 255, 256, 70_000, 3, 4096, 5000]
        .iter()
        .enumerate()
    {
        for shift in 0..40 {
            let column = "c".repeat(index * 37 + shift * 101 % 300);
            let data: Vec<u8> = (0..*len).map(|byte| (byte * 7 + shift) as u8).collect();
            let aligned = shift % 5 != 4;
            writer
                .write_image_data(&column, "values", shift as u64, &data, aligned)
                .expect("data");
            written.push((column, shift as u64, data, aligned));
        }
    }
    writer.finish().expect("end");
    let check = |chunks: Vec<Chunk<'_>>| {
        assert_eq!(chunks[0], Chunk::Image(image.clone()));
        assert_eq!(chunks.len(), written.len() + 1);
        let mut unaligned = 0;
        for (chunk, (column, offset, data, aligned)) in chunks[1..].iter().zip(&written) {
            let Chunk::ImageData(chunk) = chunk else {
                panic!("{chunk:?}");
            };
            assert_eq!(
                (&chunk.column, chunk.offset, chunk.data),
                (column, *offset, &data[..])
            );
            let at = chunk.data.as_ptr() as usize - file.as_ptr() as usize;
            if *aligned {
                assert_eq!(
                    at as u64 % IMAGE_ALIGN,
                    0,
                    "data of {} bytes at {at}",
                    data.len()
                );
            } else {
                assert!(chunk.pad.is_empty());
                unaligned += usize::from(!(at as u64).is_multiple_of(IMAGE_ALIGN));
            }
        }
        assert!(
            unaligned > 0,
            "data not asked to be aligned is written where it falls"
        );
    };
    let mut reader = SliceReader::new(&file).expect("header");
    let mut chunks = Vec::new();
    while let Some(chunk) = reader.next_chunk().expect("chunk") {
        chunks.push(chunk);
    }
    check(chunks);
    let mut reader = Reader::new(&file[..]).expect("header");
    let mut count = 0;
    while let Some(chunk) = reader.next_chunk().expect("chunk") {
        if let Chunk::ImageData(chunk) = chunk {
            assert_eq!(chunk.data, &written[count].2[..]);
            count += 1;
        }
    }
    assert_eq!(count, written.len());
}
