//! The analyzer through its public face, in one test binary: against simple oracles on random
//! graphs (`oracle`), and its views on graphs small enough to answer by hand (`views`).

mod oracle;
mod views;
