//! Bad input for the pickle readers (tracemalloc dumps, CUDA snapshots): real files cut at
//! every offset of their start and at intervals after, pickles of other things, and proptests
//! over arbitrary and mutated bytes. The answers on whole files are checked in
//! `tests/e2e/tracemalloc.rs` and `tests/e2e/torch_cuda.rs`.

use crate::fixtures::fixture_bytes;
use heapgraph_import::{Contents, ImportError, import_pickle};
use proptest::prelude::*;
use std::sync::OnceLock;

fn tracemalloc_dump() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| fixture_bytes("tracemalloc/after.tracemalloc"))
}

fn cuda_snapshot() -> &'static [u8] {
    static BYTES: OnceLock<Vec<u8>> = OnceLock::new();
    BYTES.get_or_init(|| fixture_bytes("torch-cuda/oom_batch_growth.pickle.gz"))
}

/// Every cut of `bytes` is an error, never a panic, and the truncation is named as such.
fn every_cut_fails_cleanly(bytes: &[u8]) {
    let cuts = (0..bytes.len().min(4096)).chain((4096..bytes.len()).step_by(61));
    for cut in cuts {
        match import_pickle(&bytes[..cut]) {
            Ok(_) => panic!("a dump cut at {cut} of {} was accepted", bytes.len()),
            Err(ImportError::Truncated { offset, .. }) => assert_eq!(offset, cut as u64),
            // A cut that ends right after a complete value may read as another kind of pickle.
            Err(ImportError::UnsupportedPickle) | Err(ImportError::Inconsistent { .. }) => {}
            Err(other) => panic!("cut at {cut}: unexpected error {other}"),
        }
    }
}

#[test]
fn the_whole_files_read() {
    assert!(matches!(
        import_pickle(tracemalloc_dump()),
        Ok(Contents::Alloc(_))
    ));
    assert!(matches!(
        import_pickle(cuda_snapshot()),
        Ok(Contents::Alloc(_))
    ));
}

#[test]
fn a_tracemalloc_dump_cut_anywhere_is_an_error_naming_the_end() {
    every_cut_fails_cleanly(tracemalloc_dump());
}

#[test]
fn a_cuda_snapshot_cut_anywhere_is_an_error_naming_the_end() {
    every_cut_fails_cleanly(cuda_snapshot());
}

#[test]
fn a_pickle_of_something_else_is_named_so() {
    // Python 3.11's `pickle.dumps(collections.OrderedDict(a=1), protocol=4)`: the reader must
    // refuse the global before anything could be built from it.
    let ordered_dict = b"\x80\x04\x95)\x00\x00\x00\x00\x00\x00\x00\x8c\x0bcollections\x94\x8c\x0bOrderedDict\x94\x93\x94)R\x94\x8c\x01a\x94K\x01s.";
    let error = import_pickle(ordered_dict)
        .err()
        .expect("refused")
        .to_string();
    assert!(error.contains("collections.OrderedDict"), "{error}");
    assert!(error.contains("not a tracemalloc snapshot"), "{error}");
    // `pickle.dumps({'weights': [1.5, 2]}, protocol=4)`: well formed, but neither format.
    let plain_dict = b"\x80\x04\x95\x1d\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x07weights\x94]\x94(G?\xf8\x00\x00\x00\x00\x00\x00K\x02es.";
    let error = import_pickle(plain_dict).err().expect("refused");
    assert!(matches!(error, ImportError::UnsupportedPickle), "{error}");
}

#[test]
fn a_huge_length_is_truncation_not_an_allocation() {
    // BINUNICODE8 claiming 2^62 bytes.
    let mut bytes = b"\x80\x04\x8d".to_vec();
    bytes.extend_from_slice(&(1u64 << 62).to_le_bytes());
    bytes.extend_from_slice(b"abc.");
    let error = import_pickle(&bytes).err().expect("refused");
    assert!(matches!(error, ImportError::Truncated { .. }), "{error}");
}

#[test]
fn a_trace_used_outside_the_traces_list_is_refused() {
    // A trace is folded into its site's totals as it is read; fetched again from the memo it
    // would count twice, so that is refused. The opcodes are the ones Python writes for one
    // trace, `(0, 8, (("f", 1),), 1)`, followed by a memo fetch of it (entry 3).
    let mut bytes = b"\x80\x04(K\x00K\x08".to_vec();
    bytes.extend_from_slice(b"\x8c\x01f\x94K\x01\x86\x94\x85\x94");
    bytes.extend_from_slice(b"K\x01t\x94h\x03.");
    let error = import_pickle(&bytes).err().expect("refused").to_string();
    assert!(error.contains("used elsewhere"), "{error}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_after_a_pickle_header_never_panic(
        protocol in 2u8..=5,
        body in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let mut bytes = vec![0x80, protocol];
        bytes.extend(body);
        let _ = import_pickle(&bytes);
    }

    #[test]
    fn mutated_real_files_never_panic(
        cuda in any::<bool>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let mut bytes = if cuda { cuda_snapshot() } else { tracemalloc_dump() }.to_vec();
        for (index, value) in edits {
            let at = index.index(bytes.len());
            bytes[at] = value;
        }
        let _ = import_pickle(&bytes);
    }
}

#[test]
fn stacks_shared_through_the_memo_are_stored_once_by_content() {
    // The large fixture: 215,687 trace entries and 143,809 frame-list objects, which Python
    // sees as 30 distinct stacks by content (../shared/docs/formats.md, 3.3).
    let bytes = fixture_bytes("torch-cuda/transformer_train_large.pickle.gz");
    let Ok(Contents::Alloc(snapshot)) = import_pickle(&bytes) else {
        panic!("a CUDA snapshot");
    };
    let cuda = snapshot.cuda.as_ref().expect("CUDA state");
    assert_eq!(cuda.trace.len(), 215_687);
    // Every stack the snapshot uses, counted by content, as Python would.
    let mut used: Vec<usize> = cuda
        .trace
        .iter()
        .map(|event| event.stack.index())
        .chain(cuda.blocks.iter().map(|block| block.stack.index()))
        .chain(cuda.segments.iter().map(|segment| segment.stack.index()))
        .collect();
    used.sort_unstable();
    used.dedup();
    assert_eq!(
        used.len(),
        30,
        "distinct stacks in use, the empty one included"
    );
    assert_eq!(snapshot.stacks.stack_count(), 30, "each stored once");
}
