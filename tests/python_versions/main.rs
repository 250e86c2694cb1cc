//! The Python version tier: the Python tests on every CPython the dumper claims, 3.9, 3.11,
//! 3.13 and 3.14 (Debian's, in the roots `tests/python-roots/build.sh` makes, and this
//! machine's own 3.11). Built with `--features python-versions`, which the README's test
//! command turns on; a missing root or tool fails it.

#[path = "../e2e/python_checks.rs"]
mod python_checks;
#[path = "../e2e/support.rs"]
#[allow(dead_code, reason = "shared with the e2e tests, which use all of it")]
mod support;

mod capture;
mod dumps;
mod install;
mod interpreters;
mod waste;
