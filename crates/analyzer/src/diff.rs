//! What grew between two heap dumps, by type: counts, shallow and retained sizes before and
//! after, as objgraph's `show_growth` does by count, with the sizes it never had.

use crate::view::RankBy;
use crate::{Analysis, TypeTotals};
use heapgraph_model::HeapGraph;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;

/// One type's change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeDelta {
    /// The type, as the dumps name it.
    pub type_name: String,
    /// Objects before and after.
    pub count_before: u64,
    /// See `count_before`.
    pub count_after: u64,
    /// Shallow bytes before and after.
    pub shallow_before: u64,
    /// See `shallow_before`.
    pub shallow_after: u64,
    /// Retained bytes before and after (each byte once per type).
    pub retained_before: u64,
    /// See `retained_before`.
    pub retained_after: u64,
}

impl TypeDelta {
    /// `count_after - count_before`.
    pub fn count_delta(&self) -> i64 {
        delta(self.count_before, self.count_after)
    }
    /// `shallow_after - shallow_before`.
    pub fn shallow_delta(&self) -> i64 {
        delta(self.shallow_before, self.shallow_after)
    }
    /// `retained_after - retained_before`.
    pub fn retained_delta(&self) -> i64 {
        delta(self.retained_before, self.retained_after)
    }
}

fn delta(before: u64, after: u64) -> i64 {
    let signed = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
    signed(after) - signed(before)
}

/// Totals of one dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DumpTotals {
    /// Real objects.
    pub objects: u64,
    /// Their shallow sizes.
    pub shallow: u64,
    /// Bytes reachable from the root (the root's retained size).
    pub reachable: u64,
}

/// Two dumps compared by type.
#[derive(Clone, Debug)]
pub struct GraphDiffView {
    /// The older dump's totals.
    pub before: DumpTotals,
    /// The newer dump's totals.
    pub after: DumpTotals,
    /// Every type of either dump, the largest change by `by` first.
    pub types: Vec<TypeDelta>,
}

fn totals_of(graph: &HeapGraph, analysis: &Analysis) -> DumpTotals {
    let totals = analysis.type_totals(graph);
    DumpTotals {
        objects: totals.count.iter().sum(),
        shallow: totals.shallow.iter().sum(),
        reachable: analysis.dominators.retained_size[graph.root().index()],
    }
}

/// Compares two analysed dumps type by type, ranked by the absolute change of `by` (then the
/// other measures, then the name).
///
/// Complexity: O(T) over the types of both dumps, after their per-type totals.
pub fn diff_types(
    before: (&HeapGraph, &Analysis),
    after: (&HeapGraph, &Analysis),
    by: RankBy,
) -> GraphDiffView {
    let mut rows: Vec<TypeDelta> = Vec::new();
    let mut index: FxHashMap<String, usize> = FxHashMap::default();
    let mut add = |graph: &HeapGraph, totals: &TypeTotals, is_after: bool| {
        for dense in 0..totals.types.len() {
            let name = graph.strings().get(totals.types[dense]);
            let at = *index.entry(name.to_owned()).or_insert_with(|| {
                rows.push(TypeDelta {
                    type_name: name.to_owned(),
                    count_before: 0,
                    count_after: 0,
                    shallow_before: 0,
                    shallow_after: 0,
                    retained_before: 0,
                    retained_after: 0,
                });
                rows.len() - 1
            });
            let row = &mut rows[at];
            if is_after {
                row.count_after += totals.count[dense];
                row.shallow_after += totals.shallow[dense];
                row.retained_after += totals.retained[dense];
            } else {
                row.count_before += totals.count[dense];
                row.shallow_before += totals.shallow[dense];
                row.retained_before += totals.retained[dense];
            }
        }
    };
    add(before.0, before.1.type_totals(before.0), false);
    add(after.0, after.1.type_totals(after.0), true);
    let key = |row: &TypeDelta| {
        let (count, shallow, retained) = (
            row.count_delta().unsigned_abs(),
            row.shallow_delta().unsigned_abs(),
            row.retained_delta().unsigned_abs(),
        );
        match by {
            RankBy::Retained => (retained, shallow, count),
            RankBy::Shallow => (shallow, retained, count),
            RankBy::Count => (count, retained, shallow),
        }
    };
    rows.sort_by(|a, b| {
        Reverse(key(a))
            .cmp(&Reverse(key(b)))
            .then_with(|| a.type_name.cmp(&b.type_name))
    });
    GraphDiffView {
        before: totals_of(before.0, before.1),
        after: totals_of(after.0, after.1),
        types: rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EdgeRule, Options, analyze};
    use heapgraph_test_support::graph;

    #[test]
    fn growth_is_ranked_and_signed() {
        let before = graph("root -> cache: 8; cache -> Item#1: 16");
        let after = graph(
            "root -> cache: 8; cache -> Item#1: 16; cache -> Item#2: 16; cache -> Item#3: 16; root -> Extra#9: 4",
        );
        let options = |g: &HeapGraph| Options {
            edge_rule: EdgeRule::for_runtime(g.meta().runtime),
        };
        let (a, b) = (
            analyze(&before, &options(&before)),
            analyze(&after, &options(&after)),
        );
        let view = diff_types((&before, &a), (&after, &b), RankBy::Retained);
        // Item and cache both retain 32 bytes more; Item's own bytes grew too, so it ranks first.
        let names: Vec<&str> = view.types.iter().map(|t| t.type_name.as_str()).collect();
        assert_eq!(names[..2], ["Item", "cache"]);
        let item = &view.types[0];
        assert_eq!((item.count_before, item.count_after), (1, 3));
        assert_eq!((item.count_delta(), item.retained_delta()), (2, 32));
        assert_eq!(view.types[1].retained_delta(), 32);
        let extra = view.types.iter().find(|t| t.type_name == "Extra").unwrap();
        assert_eq!((extra.count_before, extra.count_after), (0, 1));
        let by_count = diff_types((&before, &a), (&after, &b), RankBy::Count);
        assert_eq!(by_count.types[0].type_name, "Item");
        assert_eq!(view.after.shallow - view.before.shallow, 36);
    }
}
