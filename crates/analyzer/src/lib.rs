//! analyzer (under construction).
#![deny(missing_docs)]
