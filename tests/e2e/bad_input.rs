//! Bad input through the binary: one line on stderr naming the file and the problem, exit code 2.

use crate::support::{fixture, heapgraph, path_str, temp_dir};
use std::io::Read;

fn expect_clean_failure(args: &[&str], file: &str, wanted: &str) {
    let output = heapgraph(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(file), "names the file: {stderr}");
    assert!(stderr.contains(wanted), "says {wanted:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_file_of_another_kind_is_refused() {
    let path = fixture("README.md");
    expect_clean_failure(
        &["summary", path_str(&path)],
        "README.md",
        "not a dump heapgraph can read",
    );
}

#[test]
fn an_empty_file_is_refused() {
    let path = temp_dir("empty").join("empty.heapsnapshot");
    std::fs::write(&path, b"").expect("write");
    expect_clean_failure(&["summary", path_str(&path)], "empty.heapsnapshot", "empty");
}

#[test]
fn a_snapshot_cut_short_says_so_with_the_offset() {
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(fixture("v8/app-before.heapsnapshot.gz")).expect("fixture"),
    )
    .read_to_end(&mut text)
    .expect("gunzip");
    let dir = temp_dir("cut");
    for fraction in [0.001, 0.3, 0.7, 0.999] {
        let cut = (text.len() as f64 * fraction) as usize;
        let path = dir.join(format!("cut-{cut}.heapsnapshot"));
        std::fs::write(&path, &text[..cut]).expect("write");
        expect_clean_failure(
            &["summary", path_str(&path)],
            &format!("cut-{cut}"),
            "cut short",
        );
    }
}

#[test]
fn an_unknown_object_id_is_reported() {
    let path = fixture("v8/app-before.heapsnapshot.gz");
    expect_clean_failure(
        &["who-holds", path_str(&path), "@999999999"],
        "app-before",
        "no object has id @999999999",
    );
    expect_clean_failure(
        &["who-holds", path_str(&path), "--type", "NoSuchType"],
        "app-before",
        "no object has type",
    );
}

#[test]
fn a_missing_file_is_reported() {
    expect_clean_failure(
        &["summary", "/nonexistent/app.heapsnapshot"],
        "/nonexistent/app.heapsnapshot",
        "No such file",
    );
}
