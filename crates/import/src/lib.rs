//! import (under construction).
#![deny(missing_docs)]
