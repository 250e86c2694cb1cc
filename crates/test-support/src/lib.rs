//! test-support (under construction).
#![deny(missing_docs)]
