//! The readers' tests through the import crate's public face, one module per format, in one
//! test binary (one link instead of five, and the slow sweeps of one format run beside the
//! others' tests rather than alone).

mod fixtures;
mod formats;
mod hprof;
mod phd;
mod pickle;
mod v8;
