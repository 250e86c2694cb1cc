//! Fuzzes the HPROF reader (`hprof::import_slice`, both passes, as a mapped dump is read): any
//! bytes give a graph or an error, never a panic, a hang or an allocation the input does not
//! justify.
#![no_main]

use heapgraph_import::hprof;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = hprof::import_slice(bytes, &hprof::Options::default());
});
