//! Fuzzes the IBM Portable Heap Dump reader (`phd::import_slice`): any bytes give a graph or an
//! error, never a panic, a hang or an allocation the input does not justify.
#![no_main]

use heapgraph_import::phd;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = phd::import_slice(bytes, &phd::Options::default());
});
