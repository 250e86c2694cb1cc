//! Bad input for the HPROF importer: a real dump cut at every offset of its first records and
//! at intervals after, corrupt lengths, unknown records, and proptests over arbitrary and
//! mutated bytes. The answers on whole dumps are checked in `tests/e2e/hprof.rs`.

use crate::fixtures::fixture_bytes;
use heapgraph_import::{ImportError, hprof};
use heapgraph_model::HeapGraph;
use proptest::prelude::*;
use rayon::prelude::*;
use std::sync::OnceLock;

/// The default-layout fixture dump, uncompressed (3.5 MB).
fn real_dump() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| fixture_bytes("java/default.hprof.gz"))
}

fn import(bytes: &[u8]) -> Result<HeapGraph, ImportError> {
    hprof::import_slice(bytes, &Default::default())
}

/// The byte offsets where the top-level records of `bytes` start.
fn record_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut pos = bytes.iter().position(|&b| b == 0).expect("NUL") + 1 + 12;
    while pos + 9 <= bytes.len() {
        starts.push(pos);
        let length = u32::from_be_bytes(bytes[pos + 5..pos + 9].try_into().expect("4 bytes"));
        pos += 9 + length as usize;
    }
    starts
}

/// The import says when the first pass's per-segment indexes are gone, so that the binary may
/// hand their memory back before the second pass, the parse's peak
/// (`heapgraph_model::on_memory_freed`). The hook is the process's: other tests' imports may
/// call it too, never fewer times.
#[test]
fn the_import_says_when_its_first_pass_scratch_is_freed() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static FREED: AtomicUsize = AtomicUsize::new(0);
    heapgraph_model::on_memory_freed(|| {
        FREED.fetch_add(1, Ordering::Relaxed);
    });
    let before = FREED.load(Ordering::Relaxed);
    import(real_dump()).expect("the whole dump");
    assert!(FREED.load(Ordering::Relaxed) > before);
}

#[test]
fn a_cut_dump_is_read_as_far_as_it_goes() {
    let bytes = real_dump();
    let whole = import(bytes).expect("the whole dump");
    assert!(
        !whole
            .meta()
            .notes
            .iter()
            .any(|note| note.contains("ends at byte")),
        "{:?}",
        whole.meta().notes
    );
    // Every offset of the header and the first records, then every 997th byte.
    let mut cuts: Vec<usize> = (0..4096).collect();
    cuts.extend((4096..bytes.len()).step_by(997));
    // Each cut is read on its own (on every core); the node counts are then checked in order.
    let nodes: Vec<usize> = cuts
        .par_iter()
        .map(|&cut| match import(&bytes[..cut]) {
            Ok(graph) => {
                let notes = &graph.meta().notes;
                let note = notes
                    .iter()
                    .find(|note| note.starts_with("the dump ends at byte"))
                    .unwrap_or_else(|| panic!("cut at {cut}: no note in {notes:?}"));
                assert!(note.contains(&cut.to_string()), "cut at {cut}: {note}");
                graph.node_count()
            }
            Err(ImportError::Truncated { offset, .. }) => {
                assert!(cut <= 31, "cut at {cut}: truncated at {offset}");
                assert_eq!(offset, cut as u64);
                0
            }
            Err(err) => panic!("cut at {cut}: {err}"),
        })
        .collect();
    let mut nodes_before = 0;
    for (&cut, &count) in cuts.iter().zip(&nodes) {
        assert!(count >= nodes_before, "cut at {cut}");
        nodes_before = count;
    }
    assert!(nodes_before > whole.node_count() * 9 / 10);
}

#[test]
fn a_corrupt_length_names_its_record() {
    let bytes = real_dump();
    let starts = record_starts(bytes);
    // The last heap segment: shrink its declared length so that a sub-record overruns it.
    let segment = *starts
        .iter()
        .rev()
        .find(|&&start| bytes[start] == 0x1c)
        .expect("a heap dump segment");
    let mut corrupt = bytes.to_vec();
    let length = u32::from_be_bytes(corrupt[segment + 5..segment + 9].try_into().expect("4"));
    corrupt[segment + 5..segment + 9].copy_from_slice(&(length - 3).to_be_bytes());
    let err = import(&corrupt).expect_err("a sub-record overruns its segment");
    let message = err.to_string();
    assert!(matches!(err, ImportError::Malformed { .. }), "{message}");
    assert!(message.starts_with("hprof: at byte "), "{message}");
    assert!(message.contains("corrupt length"), "{message}");

    // A LOAD CLASS record too short for its fields.
    let load_class = *starts
        .iter()
        .find(|&&start| bytes[start] == 0x02)
        .expect("a LOAD CLASS record");
    let mut corrupt = bytes[..load_class].to_vec();
    corrupt.extend_from_slice(&[0x02, 0, 0, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4]);
    let err = import(&corrupt).expect_err("a short LOAD CLASS");
    assert_eq!(
        err.to_string(),
        format!(
            "hprof: at byte {load_class}: a LOAD CLASS record of 4 bytes is too short for its fields (a corrupt length?)"
        )
    );
}

#[test]
fn unknown_records_are_skipped_by_their_length() {
    let bytes = real_dump();
    let starts = record_starts(bytes);
    let mut with_unknown = bytes[..starts[0]].to_vec();
    with_unknown.extend_from_slice(&[0x42, 0, 0, 0, 0, 0, 0, 0, 3, 9, 9, 9]);
    with_unknown.extend_from_slice(&bytes[starts[0]..]);
    let graph = import(&with_unknown).expect("an unknown record is skipped");
    assert_eq!(
        graph.node_count(),
        import(bytes).expect("whole").node_count()
    );
    assert!(
        graph
            .meta()
            .notes
            .iter()
            .any(|note| note.contains("1 record(s) of tag 0x42")),
        "{:?}",
        graph.meta().notes
    );
}

/// The other writers' shapes, cut anywhere: the hprof agent's file of two dumps (each of
/// segments and an end record) and a dump written as one HEAP DUMP record. A cut reads as far
/// as it goes and says where the file ends; the dumps before it stay whole.
#[test]
fn real_world_dumps_cut_anywhere_read_what_arrived() {
    for name in [
        "java/real-world/sun_jdk6_31_hprofagent_compressedOops.hprof.gz",
        "java/real-world/hprof-32.bin.gz",
    ] {
        let bytes = fixture_bytes(name);
        let whole = import(&bytes).expect("the whole dump");
        assert!(
            !whole
                .meta()
                .notes
                .iter()
                .any(|note| note.contains("cut short")),
            "{name}: {:?}",
            whole.meta().notes
        );
        let mut cuts: Vec<usize> = (0..2048).collect();
        cuts.extend((2048..bytes.len()).step_by(211));
        for cut in cuts {
            match import(&bytes[..cut]) {
                Ok(graph) => {
                    let notes = &graph.meta().notes;
                    assert!(
                        notes
                            .iter()
                            .any(|note| note.contains(&format!("ends at byte {cut}"))),
                        "{name}, cut at {cut}: {notes:?}"
                    );
                    // A cut in the second dump leaves the first whole, and says how many
                    // the file holds.
                    let dumps = &graph.meta().dumps;
                    if dumps.len() == 2 {
                        assert!(dumps[0].complete && !dumps[1].complete, "{name}, {cut}");
                        assert_eq!(dumps[0].objects, whole.meta().dumps[0].objects);
                    }
                }
                Err(ImportError::Truncated { offset, .. }) => {
                    assert_eq!(offset, cut as u64, "{name}");
                }
                Err(err) => panic!("{name}, cut at {cut}: {err}"),
            }
        }
    }
}

#[test]
fn a_dump_that_is_not_there_is_refused() {
    let bytes = fixture_bytes("java/real-world/sun_jdk6_31_hprofagent_compressedOops.hprof.gz");
    let mut options = hprof::Options::default();
    options.dump = std::num::NonZeroUsize::new(3);
    let err = hprof::import_slice(&bytes, &options).expect_err("only two dumps");
    assert!(err.to_string().contains("the file holds 2"), "{err}");
}

#[test]
fn not_an_hprof_is_refused_by_sniffing() {
    assert_eq!(hprof::sniff(b"JAVA PROFILE 1.0.2\0"), Some(true));
    assert_eq!(hprof::sniff(b"JAVA PRO"), None);
    assert_eq!(hprof::sniff(b"{\"snapshot\""), Some(false));
    let err = import(b"JAVA PROFILE 2.0.0\0\0\0\0\x08").expect_err("an unknown version");
    assert!(err.to_string().contains("not JAVA PROFILE 1.0.x"), "{err}");
    let err = import(b"JAVA PROFILE 1.0.2\0\0\0\0\x05\0\0\0\0\0\0\0\0").expect_err("id size 5");
    assert!(err.to_string().contains("only 4 and 8"), "{err}");
}

/// A valid header with 8-byte ids.
fn header() -> Vec<u8> {
    let mut bytes = b"JAVA PROFILE 1.0.2\0".to_vec();
    bytes.extend_from_slice(&8u32.to_be_bytes());
    bytes.extend_from_slice(&[0; 8]);
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn arbitrary_bytes_after_a_header_never_panic(
        tail in proptest::collection::vec(any::<u8>(), 0..2048),
    ) {
        let mut bytes = header();
        bytes.extend(tail);
        let _ = import(&bytes);
    }

    #[test]
    fn arbitrary_heap_segments_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..2048),
        sub_tag in prop::sample::select(vec![0x01u8, 0x02, 0x05, 0x08, 0x20, 0x21, 0x22, 0x23, 0xc3, 0xfe]),
    ) {
        let mut bytes = header();
        bytes.push(0x1c);
        bytes.extend_from_slice(&[0; 4]);
        bytes.extend_from_slice(&(body.len() as u32 + 1).to_be_bytes());
        bytes.push(sub_tag);
        bytes.extend(body);
        let _ = import(&bytes);
    }

    #[test]
    fn changed_bytes_of_a_real_dump_never_panic(
        changes in proptest::collection::vec((0usize..200_000, any::<u8>()), 1..8),
    ) {
        // The first 200 KB: names, classes and the start of the heap, cut short.
        let mut bytes = real_dump()[..200_000].to_vec();
        for (at, byte) in changes {
            bytes[at] = byte;
        }
        let _ = import(&bytes);
    }
}
