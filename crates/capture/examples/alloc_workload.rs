//! Allocation-heavy workloads for the recorder's benchmark (`benches/alloc_recorder.sh`).
//! `json`: a JSON-like document is parsed into a tree of `String`s, `Vec`s and `BTreeMap`s, its
//! keys counted in a hash map, its records rendered back to text with `format!`, sorted and
//! dropped, round after round, as in a service that decodes and re-encodes requests (malloc
//! and free take about 30% of its time under `System`). `churn`: short-lived small `String`s,
//! `Vec`s, `Box`es and `BTreeMap` nodes with little work between them, the allocator's worst
//! case (about half its time in malloc and free).
//!
//! `alloc_workload json|churn ROUNDS [SNAPSHOT]` runs ROUNDS rounds and prints a checksum (so
//! that nothing is optimised away); under a recorder, `json` then writes a snapshot to
//! SNAPSHOT, with the document still live, and says how long that took on stderr. The
//! allocator is chosen at build time with `--cfg heapgraph_workload="system"`, `"every"` or
//! `"sampled"` (default `"every"`), so each binary has exactly one global allocator and no
//! switch on the hot path.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the benchmark reads its checksum on stdout and its snapshot time on stderr"
)]
#![allow(
    unexpected_cfgs,
    reason = "heapgraph_workload is set by benches/alloc_recorder.sh through cargo rustc"
)]

use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[cfg(heapgraph_workload = "system")]
#[global_allocator]
static ALLOC: std::alloc::System = std::alloc::System;

#[cfg(heapgraph_workload = "sampled")]
#[global_allocator]
static ALLOC: heapgraph_capture::Recorder = heapgraph_capture::Recorder::sampling(512 * 1024);

#[cfg(not(any(heapgraph_workload = "system", heapgraph_workload = "sampled")))]
#[global_allocator]
static ALLOC: heapgraph_capture::Recorder = heapgraph_capture::Recorder::new();

/// A parsed value.
enum Value {
    Null,
    Bool(bool),
    Number(f64),
    Text(String),
    List(Vec<Value>),
    Map(BTreeMap<String, Value>),
}

/// A small recursive-descent parser over bytes, iterative in its nesting (an explicit stack of
/// open containers).
fn parse(text: &str) -> Option<Value> {
    enum Open {
        List(Vec<Value>),
        Map(BTreeMap<String, Value>, Option<String>),
    }
    let bytes = text.as_bytes();
    let mut at = 0;
    let mut open: Vec<Open> = Vec::new();
    loop {
        while at < bytes.len() && matches!(bytes[at], b' ' | b'\n' | b',' | b':') {
            at += 1;
        }
        let value = match *bytes.get(at)? {
            b'[' => {
                at += 1;
                open.push(Open::List(Vec::new()));
                continue;
            }
            b'{' => {
                at += 1;
                open.push(Open::Map(BTreeMap::new(), None));
                continue;
            }
            b']' | b'}' => {
                at += 1;
                match open.pop()? {
                    Open::List(items) => Value::List(items),
                    Open::Map(entries, _) => Value::Map(entries),
                }
            }
            b'"' => {
                let end = at + 1 + text[at + 1..].find('"')?;
                let string = text[at + 1..end].to_owned();
                at = end + 1;
                if let Some(Open::Map(_, key @ None)) = open.last_mut() {
                    *key = Some(string);
                    continue;
                }
                Value::Text(string)
            }
            b't' => {
                at += 4;
                Value::Bool(true)
            }
            b'f' => {
                at += 5;
                Value::Bool(false)
            }
            b'n' => {
                at += 4;
                Value::Null
            }
            _ => {
                let end = text[at..]
                    .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
                    .map_or(text.len(), |n| at + n);
                let number = text[at..end].parse().ok()?;
                at = end;
                Value::Number(number)
            }
        };
        match open.last_mut() {
            None => return Some(value),
            Some(Open::List(items)) => items.push(value),
            Some(Open::Map(entries, key)) => {
                entries.insert(key.take()?, value);
            }
        }
    }
}

/// A document of `n` records with nested tags and attributes.
fn document(n: usize) -> String {
    let mut text = String::from("[");
    for i in 0..n {
        write!(
            text,
            "{{\"id\": {i}, \"name\": \"user-{i}\", \"active\": {}, \"score\": {}.5, \
             \"tags\": [\"t{}\", \"t{}\", \"group-{}\"], \
             \"address\": {{\"city\": \"city-{}\", \"zip\": \"{:05}\", \"note\": null}}}},",
            i % 3 == 0,
            i % 1000,
            i % 17,
            i % 31,
            i % 7,
            i % 101,
            i % 99_999
        )
        .expect("a string");
    }
    text.push_str("{}]");
    text
}

/// One round: parse, count keys, render each record back to a line, sort, drop.
fn round(text: &str) -> u64 {
    let Some(Value::List(records)) = parse(text) else {
        return 0;
    };
    let mut key_counts: FxHashMap<String, usize> = FxHashMap::default();
    let mut lines: Vec<String> = Vec::with_capacity(records.len());
    let mut stack: Vec<&Value> = records.iter().collect();
    while let Some(value) = stack.pop() {
        match value {
            Value::Map(entries) => {
                for (key, child) in entries {
                    *key_counts.entry(key.clone()).or_default() += 1;
                    stack.push(child);
                }
            }
            Value::List(items) => stack.extend(items),
            _ => {}
        }
    }
    for record in &records {
        if let Value::Map(entries) = record {
            let mut line = String::new();
            for (key, value) in entries {
                match value {
                    Value::Text(text) => write!(line, "{key}={text};"),
                    Value::Number(number) => write!(line, "{key}={number};"),
                    Value::Bool(flag) => write!(line, "{key}={flag};"),
                    Value::List(items) => write!(line, "{key}=[{}];", items.len()),
                    Value::Map(inner) => {
                        let keys: Vec<String> = inner.keys().cloned().collect();
                        write!(line, "{key}={{{}}};", keys.join(","))
                    }
                    Value::Null => write!(line, "{key}=null;"),
                }
                .expect("a string");
            }
            lines.push(line);
        }
    }
    lines.sort_unstable();
    let mut checksum = lines.iter().map(|line| line.len() as u64).sum::<u64>();
    checksum += key_counts.values().map(|&n| n as u64).sum::<u64>();
    checksum
}

/// One round of churn: small blocks made and dropped with little work between.
fn churn_round(seed: u64) -> u64 {
    let mut checksum = 0u64;
    for batch in 0..200u64 {
        let words: Vec<String> = (0..100)
            .map(|i| (seed + batch * 100 + i).to_string())
            .collect();
        let mut index: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        for (i, word) in words.iter().enumerate() {
            index.insert(i as u64 * 7 % 101, word.clone().into_bytes());
        }
        let boxed: Vec<Box<(u64, u64)>> = index.keys().map(|&k| Box::new((k, k * 3))).collect();
        checksum += boxed.iter().map(|pair| pair.1).sum::<u64>();
        checksum += index.values().map(|bytes| bytes.len() as u64).sum::<u64>();
    }
    checksum
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: alloc_workload json|churn ROUNDS [SNAPSHOT]";
    let mut args = std::env::args().skip(1);
    let workload = args.next().ok_or(usage)?;
    let rounds: usize = args.next().ok_or(usage)?.parse()?;
    let snapshot = args.next();
    let mut checksum = 0u64;
    match workload.as_str() {
        "json" => {
            let text = document(20_000);
            for _ in 0..rounds {
                checksum = checksum.wrapping_add(round(&text));
            }
            // With the document still live, so that the snapshot has something to say.
            snapshot_to(snapshot.as_deref())?;
        }
        "churn" => {
            for seed in 0..rounds as u64 {
                checksum = checksum.wrapping_add(churn_round(seed));
            }
        }
        _ => return Err(usage.into()),
    }
    println!("checksum {checksum}");
    Ok(())
}

/// Writes a snapshot to `path` (with a recorder installed) and says how long it took.
fn snapshot_to(path: Option<&str>) -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(not(heapgraph_workload = "system"))]
    if let Some(path) = path {
        let started = std::time::Instant::now();
        let info = heapgraph_capture::snapshot(path)?;
        eprintln!(
            "snapshot {path}: {} sites, {} bytes live, written in {:.3} s",
            info.sites,
            info.bytes,
            started.elapsed().as_secs_f64()
        );
    }
    #[cfg(heapgraph_workload = "system")]
    let _ = path;
    Ok(())
}
