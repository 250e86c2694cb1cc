//! `waste` on Python dumps, on each CPython: collections of known fill, built by a real program
//! (a list grown by `append`, a dict emptied by `del`, a dict and a set thinned by `del` and
//! `discard`, a set cleared with `clear()`), checked against CPython's own numbers taken in the
//! program before the dump (`len`, and `sys.getsizeof` of the object and of its right-sized copy:
//! `l.copy()`, `dict(d)` (`{}` when empty), `set(s)`), and their capacities against CPython's growth rules
//! (Objects/listobject.c `list_resize`, dictobject.c `insertion_resize`, setobject.c
//! `set_add_entry`; the same from 3.9 to 3.14), simulated here.

use crate::dumps::run;
use crate::interpreters::{Python, per_version};
use crate::support::{json, path_str};
use serde_json::Value;

/// Builds the planted collections, dumps, and prints for each: its id, `len`, `sys.getsizeof`
/// and that of its right-sized copy.
const PLANTED: &str = r#"
import json, sys, heapgraph_dump
grown = []
for i in range(1000):
    grown.append(i)
emptied = {}
for i in range(1000):
    emptied["k%d" % i] = i
for key in list(emptied):
    del emptied[key]
thinned_dict = {}
for i in range(1000):
    thinned_dict[i] = i
for i in range(990):
    del thinned_dict[i]
cleared = set()
for i in range(1000):
    cleared.add(i)
cleared.clear()
thinned = set()
for i in range(1000):
    thinned.add(i)
for i in range(990):
    thinned.discard(i)
PLANTED = {"grown": grown, "emptied": emptied, "thinned_dict": thinned_dict,
           "cleared": cleared, "thinned": thinned}
def right_sized_dict(d):
    # An empty dict's right size is the shared empty table of `{}` (and of `d.clear()`); on 3.9
    # `dict()` gives a fresh 8-slot table (dict_new).
    return dict(d) if d else {}
copies = {"grown": grown.copy(), "emptied": right_sized_dict(emptied),
          "thinned_dict": right_sized_dict(thinned_dict),
          "cleared": set(cleared), "thinned": set(thinned)}
facts = {name: {"id": id(obj), "len": len(obj), "getsizeof": sys.getsizeof(obj),
                "copy_getsizeof": sys.getsizeof(copies[name])}
         for name, obj in PLANTED.items()}
copies = None
heapgraph_dump.dump(sys.argv[1])
print(json.dumps(facts))
"#;

/// `list_resize` from 3.9: growing to `newsize` past `allocated` allocates
/// `(newsize + newsize / 8 + 6) & !3` slots (or `(newsize + 3) & !3` when that is not enough).
fn list_capacity_after_appends(n: u64) -> u64 {
    let mut allocated = 0u64;
    for size in 0..n {
        let newsize = size + 1;
        if allocated >= newsize {
            continue;
        }
        let mut grown = (newsize + (newsize >> 3) + 6) & !3;
        if newsize - size > grown - newsize {
            grown = (newsize + 3) & !3;
        }
        allocated = grown;
    }
    allocated
}

/// `insertion_resize`: a dict whose usable entries (`2 * slots / 3`) are used up grows to the
/// smallest power of two at least `3 * used` (`GROWTH_RATE`); deletions never shrink it. Its
/// capacity is its usable entries.
fn dict_capacity_after_inserts(n: u64) -> u64 {
    let mut slots = 8u64;
    let mut entries = 0u64;
    for used in 0..n {
        if entries == 2 * slots / 3 {
            slots = (3 * used).next_power_of_two().max(8);
            entries = used;
        }
        entries += 1;
    }
    2 * slots / 3
}

/// `set_add_entry`: once `fill * 5 >= mask * 3`, the table grows to the smallest power of two
/// above `4 * used` (`2 * used` past 50000); `discard` and `clear` never grow it, and `clear`
/// returns to the 8-slot smalltable.
fn set_slots_after_adds(n: u64) -> u64 {
    let mut slots = 8u64;
    for used in 1..=n {
        if used * 5 >= (slots - 1) * 3 {
            let minused = if used > 50_000 { used * 2 } else { used * 4 };
            let mut size = 8u64;
            while size <= minused {
                size <<= 1;
            }
            slots = size;
        }
    }
    slots
}

fn planted_collections_waste_what_cpython_says(python: &Python) {
    let dir = python.shared_dir("waste");
    let facts: Value =
        serde_json::from_str(&run(python, &dir, PLANTED, &[&dir.inner("waste.hgd")])).unwrap();
    let dump = dir.outer("waste.hgd");
    let waste = json(&[
        "waste",
        path_str(&dump),
        "--format",
        "json",
        "-n",
        "1000000",
    ]);
    assert!(
        waste["notes"].as_array().unwrap().is_empty(),
        "python{}: {waste:#}",
        python.version
    );
    let worst = waste["worst"].as_array().unwrap();
    let measured = |name: &str| -> &Value {
        let id = &facts[name]["id"];
        worst
            .iter()
            .find(|c| &c["object"]["id"] == id)
            .unwrap_or_else(|| panic!("python{}: {name} not measured", python.version))
    };
    let expected_capacity = [
        ("grown", list_capacity_after_appends(1000)),
        ("emptied", dict_capacity_after_inserts(1000)),
        ("thinned_dict", dict_capacity_after_inserts(1000)),
        ("cleared", 8),
        ("thinned", set_slots_after_adds(1000)),
    ];
    for (name, capacity) in expected_capacity {
        let fact = &facts[name];
        let row = measured(name);
        let context = format!("python{} {name}: {row:#} {fact:#}", python.version);
        assert_eq!(row["elements"], fact["len"], "{context}");
        assert_eq!(row["capacity"], capacity, "{context}");
        // What a right-sized copy would not have: CPython's own sizes of the two.
        let spare = fact["getsizeof"].as_u64().unwrap() - fact["copy_getsizeof"].as_u64().unwrap();
        assert_eq!(row["wasted_bytes"], spare, "{context}");
    }
    // The planted ones waste: the list its growth slack, the emptied dict its whole table.
    assert!(measured("grown")["wasted_bytes"].as_u64().unwrap() > 0);
    assert!(measured("emptied")["wasted_bytes"].as_u64().unwrap() > 10_000);
    assert_eq!(measured("cleared")["wasted_bytes"], 0);
    // The rows add up to the collections listed.
    let total: u64 = worst
        .iter()
        .map(|c| c["wasted_bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(waste["wasted_bytes"], total);
    assert_eq!(waste["collections"], worst.len() as u64);
    // A converted dump keeps the fill: the same answer.
    let converted = dir.outer("waste-converted.hgd");
    crate::support::heapgraph_ok(&["convert", path_str(&dump), "-o", path_str(&converted)]);
    let again = json(&[
        "waste",
        path_str(&converted),
        "--format",
        "json",
        "-n",
        "1000000",
    ]);
    assert_eq!(again["rows"], waste["rows"], "python{}", python.version);
    assert_eq!(again["wasted_bytes"], waste["wasted_bytes"]);
}

per_version!(planted_collections_waste_what_cpython_says);
