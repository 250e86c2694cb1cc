//! report (under construction).
#![deny(missing_docs)]
