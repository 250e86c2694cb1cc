//! Fuzzes the V8 heap snapshot reader (`v8::import`, the pipelined reader with its own
//! threads, as `import_path` runs it): any bytes give a graph or an error, never a panic, a
//! hang or an allocation the input does not justify.
#![no_main]

use heapgraph_import::v8;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = v8::import(bytes, &v8::Options::default());
});
