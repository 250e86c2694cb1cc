//! Unit tests of the V8 importer that need its internals: every way of reading (pipelined,
//! plain or in memory, with or without pre-scanning, blocks from one byte up) must give the
//! same graph, on a snapshot of Node.js and on one shaped as Julia writes them (ids above
//! `u32::MAX`, whose numbers take the scanner's wide path).

use super::cursor::{InMemory, Prescan, ReadPlan};
use super::{Options, Reading, import_in_memory, import_with};
use crate::ImportError;
use heapgraph_model::HeapGraph;
use rayon::prelude::*;
use std::io::Read;

/// The cut-down real snapshot of the integration tests.
fn tiny_snapshot() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/v8-tiny.heapsnapshot.gz"
    );
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    text
}

/// A snapshot as Julia writes them (`fixtures/v8/make_julia_shaped.py`): every id but the
/// root's is an address above `u32::MAX`.
fn julia_shaped_snapshot() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/v8/julia-shaped.heapsnapshot.gz"
    );
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    text
}

/// A committed real snapshot of Node.js 20, 4 MB: enough blocks for the pipeline to matter.
fn fixture_snapshot() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/v8/app-before.heapsnapshot.gz"
    );
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    text
}

fn import(text: &[u8], reading: Reading) -> Result<HeapGraph, ImportError> {
    import_with(text, &Options::default(), reading)
}

fn plan(first_block: usize, max_block: usize, prescan: Prescan) -> ReadPlan {
    ReadPlan {
        first_block,
        max_block,
        prescan,
    }
}

/// Everything a graph holds, printed, for comparing two imports of the same snapshot.
fn fingerprint(graph: &HeapGraph) -> String {
    let parts = graph.parts();
    let strings: Vec<&str> = graph.strings().iter().map(|(_, text)| text).collect();
    format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {} {:?} {:?}",
        parts.node_object_id,
        parts.node_kind,
        parts.node_type,
        parts.node_name,
        parts.node_shallow_size,
        parts.first_edge,
        parts.edge_to,
        parts.edge_kind,
        parts.edge_name,
        parts.node_kinds,
        parts.root,
        strings,
        graph.meta(),
    )
}

#[test]
fn every_way_of_reading_gives_the_same_graph() {
    for text in [tiny_snapshot(), julia_shaped_snapshot()] {
        every_way_of_reading_gives(&text);
    }
}

fn every_way_of_reading_gives(text: &[u8]) {
    let expected = fingerprint(&import(text, Reading::Pipelined(ReadPlan::DEFAULT)).unwrap());
    for prescan in [Prescan::Never, Prescan::Always, Prescan::WhenBehind] {
        for (first, max) in [
            (1, 1),
            (2, 3),
            (3, 7),
            (5, 64),
            (7, 7),
            (13, 4096),
            (100, 100),
        ] {
            for reading in [
                Reading::Direct(plan(first, max, prescan)),
                Reading::Pipelined(plan(first, max, prescan)),
            ] {
                let graph = import(text, reading).unwrap();
                assert_eq!(fingerprint(&graph), expected, "{reading:?}");
            }
            let plan = plan(first, max, prescan);
            let graph = import_in_memory(InMemory::bytes(text), plan).unwrap();
            assert_eq!(fingerprint(&graph), expected, "in memory, {plan:?}");
        }
    }
}

#[test]
fn pre_scanned_blocks_read_like_scanned_ones_on_a_real_snapshot() {
    let text = fixture_snapshot();
    let expected = fingerprint(
        &import(
            &text,
            Reading::Direct(plan(1 << 20, 1 << 20, Prescan::Never)),
        )
        .unwrap(),
    );
    // Block sizes that put block edges everywhere in numbers, records and strings.
    for (first, max) in [(4093, 4093), (65_537, 65_537), (1 << 16, 1 << 20)] {
        for reading in [
            Reading::Direct(plan(first, max, Prescan::Always)),
            Reading::Pipelined(plan(first, max, Prescan::Always)),
            Reading::Pipelined(plan(first, max, Prescan::WhenBehind)),
        ] {
            let graph = import(&text, reading).unwrap();
            assert_eq!(fingerprint(&graph), expected, "{reading:?}");
        }
        let plan = plan(first, max, Prescan::WhenBehind);
        let graph = import_in_memory(InMemory::bytes(&text), plan).unwrap();
        assert_eq!(fingerprint(&graph), expected, "in memory, {plan:?}");
    }
}

#[test]
fn cuts_read_in_tiny_blocks_are_truncated_at_the_cut() {
    for text in [tiny_snapshot(), julia_shaped_snapshot()] {
        cuts_read_in_tiny_blocks_are_truncated(&text);
    }
}

fn cuts_read_in_tiny_blocks_are_truncated(text: &[u8]) {
    // A thread hand-off per tiny block is slow, so the pipeline gets fewer cuts.
    let direct = (0..text.len())
        .step_by(11)
        .map(|cut| (cut, Reading::Direct(plan(1, 3, Prescan::Always))));
    let pipelined = (0..text.len())
        .step_by(97)
        .map(|cut| (cut, Reading::Pipelined(plan(61, 61, Prescan::Always))));
    let cuts: Vec<_> = direct.chain(pipelined).collect();
    cuts.into_par_iter()
        .for_each(|(cut, reading)| match import(&text[..cut], reading) {
            Err(ImportError::Truncated { offset, .. }) => {
                assert_eq!(offset, cut as u64, "cut at {cut}, {reading:?}")
            }
            other => panic!("cut at {cut}, {reading:?}: {other:?}"),
        });
    (0..text.len()).into_par_iter().step_by(97).for_each(|cut| {
        let input = InMemory::bytes(&text[..cut]);
        match import_in_memory(input, plan(61, 61, Prescan::Always)) {
            Err(ImportError::Truncated { offset, .. }) => {
                assert_eq!(offset, cut as u64, "cut at {cut}, in memory")
            }
            other => panic!("cut at {cut}, in memory: {other:?}"),
        }
    });
}

#[test]
fn errors_are_the_same_whatever_the_blocks() {
    let text = String::from_utf8(tiny_snapshot()).unwrap();
    // Corrupt a number in the middle of `edges`, and an escape in `strings`.
    let edges_at = text.find("\"edges\":[").unwrap() + 400;
    let comma = edges_at + text[edges_at..].find(',').unwrap();
    let mut bad_number = text.clone().into_bytes();
    bad_number[comma] = b'.';
    let strings_at = text.find("\"strings\":[").unwrap();
    let mut bad_escape = text.clone().into_bytes();
    let quote = strings_at + text[strings_at..].find("\",").unwrap();
    bad_escape.splice(quote..quote, b"\\x".iter().copied());
    // A name (a 32-bit field) over `u32::MAX` where Julia-shaped ids take the wide path.
    let julia = String::from_utf8(julia_shaped_snapshot()).unwrap();
    let root = "\"nodes\":[0,1,0,";
    assert!(julia.contains(root));
    let wide_name = julia.replace(root, "\"nodes\":[0,5000000000,0,");
    let name_at = (wide_name.find("5000000000").unwrap()) as u64;
    let expected = import(
        wide_name.as_bytes(),
        Reading::Direct(plan(1 << 20, 1 << 20, Prescan::Never)),
    );
    match &expected {
        Err(ImportError::Malformed {
            offset, message, ..
        }) => {
            assert_eq!(*offset, name_at);
            assert!(message.contains("a node's `name`"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    for bad in [bad_number, bad_escape, wide_name.into_bytes()] {
        let expected = import(
            &bad,
            Reading::Direct(plan(1 << 20, 1 << 20, Prescan::Never)),
        )
        .unwrap_err()
        .to_string();
        for reading in [
            Reading::Direct(plan(1, 1, Prescan::Never)),
            Reading::Direct(plan(7, 7, Prescan::Always)),
            Reading::Pipelined(plan(64, 64, Prescan::Always)),
            Reading::Pipelined(ReadPlan::DEFAULT),
        ] {
            let error = import(&bad, reading).unwrap_err().to_string();
            assert_eq!(error, expected, "{reading:?}");
        }
        for plan in [plan(64, 64, Prescan::Always), ReadPlan::DEFAULT] {
            let error = import_in_memory(InMemory::bytes(&bad), plan).unwrap_err();
            assert_eq!(error.to_string(), expected, "in memory, {plan:?}");
        }
    }
}

/// A reader that fails after handing out some bytes.
struct FailingReader<'a> {
    bytes: &'a [u8],
}

impl Read for FailingReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.bytes.is_empty() {
            return Err(std::io::Error::other("disk on fire"));
        }
        let n = buf.len().min(self.bytes.len()).min(100);
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
fn a_read_error_is_reported_as_such() {
    let text = tiny_snapshot();
    for reading in [
        Reading::Direct(ReadPlan::DEFAULT),
        Reading::Pipelined(ReadPlan::DEFAULT),
    ] {
        let reader = std::io::BufReader::new(FailingReader {
            bytes: &text[..text.len() / 2],
        });
        match import_with(reader, &Options::default(), reading) {
            Err(ImportError::Io(error)) => assert_eq!(error.to_string(), "disk on fire"),
            other => panic!("{reading:?}: {other:?}"),
        }
    }
}
