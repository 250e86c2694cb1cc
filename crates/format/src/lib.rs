//! format (under construction).
#![deny(missing_docs)]
