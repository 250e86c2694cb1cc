//! The `.hgd` records through the format crate's public face, in one test binary.

mod alloc_records;
mod records;
