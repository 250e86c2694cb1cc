//! Runs hprof-analyzer 0.3.2's own analysis on one HPROF dump and prints, as JSON, the object
//! address, shallow size and retained size of every object it found: the peer's numbers, for
//! `tests/e2e/hprof_peer.rs` to compare with heapgraph's.
//!
//! `hprof-peer DUMP [ADDRESS...]`: with addresses (decimal or 0x hex), only those objects.
//! Output: `{"objects": N, "rows": [[address, shallow, retained], ...]}`.

use hprof_analyzer::{AnalyzeOptions, HprofSource};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dump) = args.next() else {
        eprintln!("usage: hprof-peer DUMP [ADDRESS...]");
        return ExitCode::from(2);
    };
    let mut wanted = Vec::new();
    for arg in args {
        let parsed = match arg.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => arg.parse(),
        };
        match parsed {
            Ok(address) => wanted.push(address),
            Err(err) => {
                eprintln!("hprof-peer: {arg:?} is not an address: {err}");
                return ExitCode::from(2);
            }
        }
    }
    match run(&dump, &wanted) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("hprof-peer: {dump}: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run(dump: &str, wanted: &[u64]) -> std::io::Result<serde_json::Value> {
    let source = HprofSource::Path(dump.to_owned());
    // The full analysis: its dominator tree and the retained size per object. (Its design
    // leaves `Reference.referent` out of the tree, as MAT does; 0.3.2 does not: see
    // tests/e2e/hprof_peer.rs.)
    let (_report, retained) =
        hprof_analyzer::analyze_to_report_with_retained(&source, &AnalyzeOptions::default())?;
    // A second parse gives each object index its address and shallow size, which the report
    // path does not keep; the indices are the same (both come from pass 1's id map).
    let exploration = hprof_analyzer::build_exploration(&source, &retained)?;
    let objects = exploration.n;
    if exploration.addrs.len() != objects || exploration.retained.len() != objects {
        return Err(std::io::Error::other(format!(
            "{objects} objects but {} addresses and {} retained sizes",
            exploration.addrs.len(),
            exploration.retained.len()
        )));
    }
    let rows: Vec<serde_json::Value> = (0..objects)
        .filter(|&index| wanted.is_empty() || wanted.contains(&exploration.addrs[index]))
        .map(|index| {
            serde_json::json!([
                exploration.addrs[index],
                exploration.shallow[index],
                exploration.retained[index]
            ])
        })
        .collect();
    Ok(serde_json::json!({ "objects": objects, "rows": rows }))
}
