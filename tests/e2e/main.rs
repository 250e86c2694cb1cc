//! End-to-end tests of the `heapgraph` binary and its libraries on real fixtures: answers that
//! follow from how the fixtures were built, the peers' answers (memlab, DevTools), and bad input.

mod bad_input;
mod cli;
mod examples;
mod hprof;
mod oracle;
mod python;
mod python_checks;
mod record;
mod report;
mod rust_alloc;
mod support;
mod tidy;
mod torch_cuda;
mod tracemalloc;
