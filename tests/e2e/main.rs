//! End-to-end tests of the `heapgraph` binary and its libraries on real fixtures: answers that
//! follow from how the fixtures were built, the peers' answers (memlab, DevTools), and bad input.

mod bad_input;
mod cli;
mod examples;
mod export;
mod golden;
mod holding;
mod hprof;
mod hprof_peer;
mod hprof_real_world;
mod mcp;
mod oracle;
mod parking;
mod phd;
mod python;
mod python_checks;
mod record;
mod references;
mod refusals;
mod report;
mod rust_alloc;
mod serve;
mod support;
mod tidy;
mod torch_cuda;
mod tracemalloc;
mod v8_real_world;
mod waste;
