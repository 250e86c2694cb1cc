//! Regression gates for `diff --fail-if`: rules such as `retained(type~Cache) > +10%` or
//! `total > +64MiB`, checked against a comparison of two dumps.
//!
//! A rule is `METRIC[(SELECTOR)] OP VALUE`: METRIC is `total`, `count`, `shallow`, `retained`
//! (heap dumps) or `size` (allocation snapshots; `count` too); SELECTOR is `type~REGEX`,
//! `type=NAME`, `holder~REGEX` (a holder's retainer-path signature) or `site~REGEX`; OP is `>`
//! or `>=`; VALUE is a signed [`Change`], absolute (`+64MiB`, `+1000`) or relative (`+10%`).
//! VALUE is read by the caller's parser, so that it is spelled as every other quantity on the
//! command line: the binary passes `heapgraph_format::units`' (this crate sees `model` alone).

use crate::diff::GraphDiffView;
use crate::sites::SitesView;
use regex::Regex;

/// What a rule measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Metric {
    Total,
    Count,
    Shallow,
    Retained,
    Size,
}

/// Which rows a rule sums.
#[derive(Clone, Debug)]
enum Selector {
    TypeRegex(Regex),
    TypeName(String),
    SiteRegex(Regex),
    HolderRegex(Regex),
}

/// The change a rule compares with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Change {
    /// Bytes or objects.
    Absolute(i64),
    /// A fraction of the value before (`+10%` is 0.1).
    Relative(f64),
}

/// One parsed `--fail-if` rule.
#[derive(Clone, Debug)]
pub struct Rule {
    text: String,
    metric: Metric,
    selector: Option<Selector>,
    or_equal: bool,
    threshold: Change,
}

/// A rule's verdict, with what was measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The rule as written.
    pub rule: String,
    /// The measured value before and after (bytes or objects).
    pub before: i64,
    /// See `before`.
    pub after: i64,
    /// Whether the rule is met, which fails the gate.
    pub failed: bool,
    /// Whether the rule's value is a byte count (for printing).
    pub bytes: bool,
}

impl Verdict {
    /// `after - before`.
    pub fn delta(&self) -> i64 {
        self.after - self.before
    }

    /// The change as a fraction of `before`; `None` when `before` is 0.
    pub fn relative(&self) -> Option<f64> {
        (self.before != 0).then(|| self.delta() as f64 / self.before as f64)
    }
}

/// Parses one rule; `parse_change` reads its VALUE.
///
/// # Errors
/// A message saying what is wrong, for the user.
pub fn parse_rule(
    text: &str,
    parse_change: impl FnOnce(&str) -> Result<Change, String>,
) -> Result<Rule, String> {
    let shape = Regex::new(r"^\s*([a-z]+)\s*(?:\((.*)\))?\s*(>=|>)\s*(\S.*?)\s*$")
        .map_err(|error| error.to_string())?;
    let Some(parts) = shape.captures(text) else {
        return Err(format!(
            "{text:?} is not a rule: write METRIC[(SELECTOR)] > VALUE, like 'retained(type~Cache) > +10%' or 'total > +64MiB'"
        ));
    };
    let metric = match &parts[1] {
        "total" => Metric::Total,
        "count" => Metric::Count,
        "shallow" => Metric::Shallow,
        "retained" => Metric::Retained,
        "size" => Metric::Size,
        other => {
            return Err(format!(
                "{other:?} is not a metric: use total, count, shallow, retained or size"
            ));
        }
    };
    let selector = match parts.get(2).map(|m| m.as_str().trim()) {
        None | Some("") => None,
        Some(selector) => {
            let regex = |pattern: &str| {
                Regex::new(pattern).map_err(|error| format!("{pattern:?}: {error}"))
            };
            if let Some(pattern) = selector.strip_prefix("type~") {
                Some(Selector::TypeRegex(regex(pattern)?))
            } else if let Some(name) = selector.strip_prefix("type=") {
                Some(Selector::TypeName(name.to_owned()))
            } else if let Some(pattern) = selector.strip_prefix("site~") {
                Some(Selector::SiteRegex(regex(pattern)?))
            } else if let Some(pattern) = selector.strip_prefix("holder~") {
                Some(Selector::HolderRegex(regex(pattern)?))
            } else {
                return Err(format!(
                    "{selector:?} is not a selector: use type~REGEX, type=NAME, holder~REGEX or site~REGEX"
                ));
            }
        }
    };
    Ok(Rule {
        text: text.trim().to_owned(),
        metric,
        selector,
        or_equal: &parts[3] == ">=",
        threshold: parse_change(&parts[4])?,
    })
}

impl Rule {
    fn verdict(&self, before: i64, after: i64, bytes: bool) -> Verdict {
        let delta = after - before;
        let failed = match self.threshold {
            Change::Absolute(limit) => {
                if self.or_equal {
                    delta >= limit
                } else {
                    delta > limit
                }
            }
            Change::Relative(limit) => {
                // From nothing, any growth is infinitely large, and no change is none.
                let relative = if before == 0 {
                    if delta > 0 { f64::INFINITY } else { 0.0 }
                } else {
                    delta as f64 / before as f64
                };
                if self.or_equal {
                    relative >= limit
                } else {
                    relative > limit
                }
            }
        };
        Verdict {
            rule: self.text.clone(),
            before,
            after,
            failed,
            bytes,
        }
    }

    /// Checks the rule against a comparison of two heap dumps.
    ///
    /// # Errors
    /// When the rule does not apply to heap dumps (`size`, `site~`).
    pub fn check_graph(&self, view: &GraphDiffView) -> Result<Verdict, String> {
        let signed = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        if matches!(self.selector, Some(Selector::SiteRegex(_))) || self.metric == Metric::Size {
            return Err(format!(
                "{}: size and site~ are for allocation snapshots; heap dumps have total, count, shallow and retained by type",
                self.text
            ));
        }
        if let Some(Selector::HolderRegex(regex)) = &self.selector {
            if !matches!(self.metric, Metric::Retained | Metric::Count) {
                return Err(format!("{}: holders have retained and count", self.text));
            }
            let count = self.metric == Metric::Count;
            let (mut before, mut after) = (0i64, 0i64);
            for holder in view.holders.iter().filter(|h| regex.is_match(&h.signature)) {
                if count {
                    before += signed(holder.count_before);
                    after += signed(holder.count_after);
                } else {
                    before += signed(holder.retained_before);
                    after += signed(holder.retained_after);
                }
            }
            return Ok(self.verdict(before, after, !count));
        }
        if self.metric == Metric::Total || self.selector.is_none() {
            let (before, after, bytes) = match self.metric {
                Metric::Count => (view.before.objects, view.after.objects, false),
                Metric::Retained => (view.before.reachable, view.after.reachable, true),
                _ => (view.before.shallow, view.after.shallow, true),
            };
            return Ok(self.verdict(signed(before), signed(after), bytes));
        }
        let (mut before, mut after) = (0i64, 0i64);
        for row in &view.types {
            let selected = match &self.selector {
                Some(Selector::TypeRegex(regex)) => regex.is_match(&row.type_name),
                Some(Selector::TypeName(name)) => &row.type_name == name,
                _ => true,
            };
            if selected {
                let (b, a) = match self.metric {
                    Metric::Count => (row.count_before, row.count_after),
                    Metric::Shallow => (row.shallow_before, row.shallow_after),
                    _ => (row.retained_before, row.retained_after),
                };
                before += signed(b);
                after += signed(a);
            }
        }
        Ok(self.verdict(before, after, self.metric != Metric::Count))
    }

    /// Checks the rule against a comparison of two allocation snapshots.
    ///
    /// # Errors
    /// When the rule does not apply to allocation snapshots (`shallow`, `retained`, `type`).
    pub fn check_sites(&self, view: &SitesView) -> Result<Verdict, String> {
        if matches!(self.metric, Metric::Shallow | Metric::Retained)
            || matches!(
                self.selector,
                Some(Selector::TypeRegex(_) | Selector::TypeName(_) | Selector::HolderRegex(_))
            )
        {
            return Err(format!(
                "{}: allocation snapshots have size, count and total by site~REGEX",
                self.text
            ));
        }
        let signed = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        let count = self.metric == Metric::Count;
        let Some(Selector::SiteRegex(regex)) = &self.selector else {
            let (before, after) = if count {
                (view.old_total_count, view.total_count)
            } else {
                (view.old_total_size, view.total_size)
            };
            return Ok(self.verdict(signed(before), signed(after), !count));
        };
        let (mut before, mut after) = (0i64, 0i64);
        for row in &view.rows {
            let selected = row.frames.iter().any(|frame| {
                regex.is_match(&format!("{}:{}", frame.filename, frame.lineno))
                    || frame
                        .name
                        .as_deref()
                        .is_some_and(|name| regex.is_match(name))
            });
            if selected {
                let (now, change) = if count {
                    (signed(row.count), row.count_diff)
                } else {
                    (signed(row.size), row.size_diff)
                };
                after += now;
                before += now - change;
            }
        }
        Ok(self.verdict(before, after, !count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heapgraph_format::units;

    /// A rule with VALUE read as the binary reads it.
    fn parse_rule(text: &str) -> Result<Rule, String> {
        super::parse_rule(text, |value| {
            match value
                .parse::<units::Change>()
                .map_err(|err| err.to_string())?
            {
                units::Change::Amount(amount) => Ok(Change::Absolute(amount)),
                units::Change::Share(share) => Ok(Change::Relative(share)),
            }
        })
    }

    #[test]
    fn rules_parse_as_decisions_md_writes_them() {
        let rule = parse_rule("retained(type~Cache) > +10%").unwrap();
        assert_eq!(rule.metric, Metric::Retained);
        assert!(matches!(rule.selector, Some(Selector::TypeRegex(_))));
        assert_eq!(rule.threshold, Change::Relative(0.1));
        assert!(!rule.or_equal);
        let rule = parse_rule("total >= +64MiB").unwrap();
        assert_eq!(rule.threshold, Change::Absolute(64 << 20));
        assert!(rule.or_equal);
        assert_eq!(
            parse_rule("size(site~app.py) > +1MB").unwrap().threshold,
            Change::Absolute(1_000_000)
        );
        assert_eq!(
            parse_rule("count(type=__main__.Request) > 100")
                .unwrap()
                .threshold,
            Change::Absolute(100)
        );
        // Every size unit of the command line, K and TiB included.
        assert_eq!(
            parse_rule("total > +1K").unwrap().threshold,
            Change::Absolute(1024)
        );
        assert_eq!(
            parse_rule("total > +1TiB").unwrap().threshold,
            Change::Absolute(1 << 40)
        );
        for bad in [
            "total",
            "weight > +1%",
            "total > +1 parsecs",
            "count(type~[) > 1",
        ] {
            assert!(parse_rule(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn verdicts_compare_the_change() {
        let rule = parse_rule("total > +10%").unwrap();
        assert!(rule.verdict(100, 111, true).failed);
        assert!(!rule.verdict(100, 110, true).failed);
        assert!(
            parse_rule("total >= +10%")
                .unwrap()
                .verdict(100, 110, true)
                .failed
        );
        assert!(rule.verdict(0, 1, true).failed, "growth from nothing");
        assert!(!rule.verdict(0, 0, true).failed);
        let shrink = parse_rule("total > -5").unwrap();
        assert!(shrink.verdict(100, 96, true).failed);
        assert!(!shrink.verdict(100, 95, true).failed);
    }
}
