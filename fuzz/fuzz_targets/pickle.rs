//! Fuzzes the pickle reader (`import_pickle`: the stack machine, then the tracemalloc or CUDA
//! snapshot built from what it read): any bytes give a snapshot or an error, never a panic, a
//! hang or an allocation the input does not justify.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = heapgraph_import::import_pickle(bytes);
});
