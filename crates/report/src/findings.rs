//! Findings in words: one sentence each, and the path or stack it points at. Text, JSON and
//! HTML print the same sentence; only its markup differs (names are `code` in HTML and between
//! backticks in text).

use crate::{duration_text, human_bytes, signed_bytes, signed_count, type_text};
use heapgraph_analyzer::SuspectRule;
use heapgraph_analyzer::findings::{Finding, Holder, HolderStep, OomCause};
use heapgraph_analyzer::sites::SiteFrame;

/// A piece of a sentence: words, or a name from the program or the dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// Words.
    Text(String),
    /// A name: a field, a type, a line of code.
    Code(String),
}

/// A sentence in parts, to be printed as text or marked up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sentence {
    /// The parts, in order.
    pub parts: Vec<Part>,
}

impl Sentence {
    fn text(&mut self, text: impl Into<String>) -> &mut Self {
        self.parts.push(Part::Text(text.into()));
        self
    }

    fn code(&mut self, code: impl Into<String>) -> &mut Self {
        self.parts.push(Part::Code(code.into()));
        self
    }

    /// As plain text, names as they are (for a path or a stack on a line of its own).
    pub fn bare(&self) -> String {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Text(text) | Part::Code(text) => text.as_str(),
            })
            .collect()
    }

    /// As plain text, names between backticks.
    pub fn plain(&self) -> String {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => text.clone(),
                Part::Code(code) => format!("`{code}`"),
            })
            .collect()
    }
}

/// The sentence that says what a finding found.
pub fn sentence(finding: &Finding) -> Sentence {
    let mut out = Sentence::default();
    match finding {
        Finding::Growth {
            holder,
            entries,
            retained,
            retained_delta,
        } => {
            out.text("What grew: ");
            holder_phrase(holder, &mut out);
            match entries {
                Some(entries) => {
                    out.text(format!(
                        ", by {} ",
                        signed_count(entries.count_after as i64 - entries.count_before as i64)
                    ))
                    .code(type_text(&entries.type_name))
                    .text(format!(
                        " objects ({} → {}), {} retained",
                        entries.count_before,
                        entries.count_after,
                        signed_bytes(*retained_delta)
                    ));
                    if let Some((before, after)) = retained {
                        out.text(format!(
                            "; it retains {} in the last dump ({} in the first)",
                            human_bytes(*after),
                            human_bytes(*before)
                        ));
                    }
                }
                None => {
                    out.text(format!(", by {}", signed_bytes(*retained_delta)));
                    if let Some((before, after)) = retained {
                        out.text(format!(
                            " ({} → {} retained)",
                            human_bytes(*before),
                            human_bytes(*after)
                        ));
                    }
                }
            }
        }
        Finding::Accumulation {
            holder,
            rule,
            instances,
            type_name,
            retained,
            retained_by,
            share,
            mostly,
            also_holds,
        } => {
            out.text("What holds the memory: ");
            match rule {
                SuspectRule::SingleObject => {
                    holder_phrase(holder, &mut out);
                    let figure = format!(
                        "{} ({:.0}% of the heap)",
                        human_bytes(*retained),
                        share * 100.0
                    );
                    // A figure is the holder's only where the holder retains the bytes; else
                    // the sentence names the object they are that object's.
                    match retained_by.and_then(|at| Some((at, holder.path.get(at)?))) {
                        Some((at, step)) if at != holder.named => {
                            let name = owner_name(step)
                                .unwrap_or_else(|| type_text(&step.type_name).to_owned());
                            out.text(", which does not retain it alone: the ")
                                .code(name)
                                .text(if at < holder.named {
                                    " above it retains "
                                } else {
                                    " in it retains "
                                })
                                .text(figure);
                        }
                        _ => {
                            out.text(format!(", which retains {figure}"));
                        }
                    }
                    if let Some(mostly) = mostly {
                        out.text(format!(", mostly {} ", mostly.count))
                            .code(type_text(&mostly.type_name))
                            .text(format!(" objects ({})", human_bytes(mostly.retained_size)));
                    }
                    if *also_holds > 0 {
                        out.text(format!(
                            "; it also holds {} that something else holds too",
                            human_bytes(*also_holds)
                        ));
                    }
                }
                SuspectRule::ManyInstances => {
                    out.text(format!("{instances} "))
                        .code(type_text(type_name))
                        .text(format!(
                            " objects, which retain {} ({:.0}% of the heap)",
                            human_bytes(*retained),
                            share * 100.0
                        ));
                    if let Some(name) = holder.name() {
                        out.text(", the largest held as ").code(name);
                    }
                }
            }
        }
        Finding::GpuOom {
            requested,
            device_free,
            largest_free_block,
            cause,
            ..
        } => {
            out.text(format!(
                "Out of memory: a request for {} failed",
                human_bytes(*requested)
            ));
            if let Some(free) = device_free {
                out.text(format!(" with {} free on the device", human_bytes(*free)));
            }
            match cause {
                OomCause::Fragmented => out.text(format!(
                    ": the cache had enough free bytes, but no free block that large (the largest is {}): fragmentation",
                    human_bytes(*largest_free_block)
                )),
                OomCause::DeviceFull => out.text(format!(
                    ": the cache's largest free block ({}) is smaller than the request, so the allocator had to reserve more, and the device or the process's memory cap refused it",
                    human_bytes(*largest_free_block)
                )),
            };
        }
        Finding::Allocation {
            frames,
            size,
            total,
        } => {
            out.text("What holds the memory: the allocations made at ")
                .code(frames.first().map_or_else(no_stack, frame_text))
                .text(format!(
                    ", {} of {} live ({:.0}%)",
                    human_bytes(*size),
                    human_bytes(*total),
                    *size as f64 * 100.0 / (*total).max(1) as f64
                ));
        }
        Finding::AllocGrowth {
            frames,
            size_before,
            size_after,
        } => {
            out.text("What grew: the allocations made at ")
                .code(frames.first().map_or_else(no_stack, frame_text))
                .text(format!(
                    ", by {} ({} → {})",
                    signed_bytes(*size_after as i64 - *size_before as i64),
                    human_bytes(*size_before),
                    human_bytes(*size_after)
                ));
        }
        Finding::Timeline {
            peak,
            peak_at_s,
            limit,
            share_of_limit,
            growing_per_s,
            ..
        } => {
            out.text(format!(
                "Memory reached {} at {}",
                human_bytes(*peak),
                duration_text(*peak_at_s)
            ));
            if let (Some(share), Some((_, source))) = (share_of_limit, limit) {
                out.text(format!(
                    ", {} of the limit ({source})",
                    crate::limit_share_text(*share)
                ));
            }
            if let Some(rate) = growing_per_s {
                out.text(format!(
                    ", growing {}/s at the end",
                    signed_bytes(rate.round() as i64)
                ));
            }
        }
    }
    out
}

/// What the finding points at, on a line of its own: the holder's path (`held at`), the failed
/// call's stack (`failed at`), the callers of a line (`called from`), or the dump a recording
/// took; `None` when there is nothing more to say.
pub fn detail(finding: &Finding) -> Option<(&'static str, Sentence)> {
    let mut out = Sentence::default();
    match finding {
        Finding::Growth { holder, .. } => {
            out.code(path_text(&holder.path, named_keep(holder)));
            Some(("held at", out))
        }
        Finding::Accumulation { holder, .. } => {
            if holder.path.is_empty() {
                return None;
            }
            out.code(path_text(&holder.path, named_keep(holder)));
            Some(("held through", out))
        }
        Finding::GpuOom { frames, .. } => {
            if frames.is_empty() {
                return None;
            }
            out.code(stack_text(frames));
            Some(("failed at", out))
        }
        Finding::Allocation { frames, .. } | Finding::AllocGrowth { frames, .. } => {
            if frames.len() < 2 {
                return None;
            }
            out.code(stack_text(&frames[1..]));
            Some(("called from", out))
        }
        Finding::Timeline {
            dumps,
            failed_dump,
            act_crossings,
            ..
        } => {
            match dumps.first() {
                Some((kind, at_s, file)) => {
                    out.text(format!(
                        "a {kind} dump was taken at {}: ",
                        duration_text(*at_s)
                    ))
                    .code(format!("heapgraph report {file}"))
                    .text(" says what it holds");
                }
                None => match (failed_dump, act_crossings) {
                    (Some((at_s, why)), _) => {
                        out.text(format!(
                            "no dump was written: at {}, {why}",
                            duration_text(*at_s)
                        ));
                    }
                    (None, Some(0)) => {
                        out.text("no dump was taken: memory stayed below the ")
                            .code("--act")
                            .text(" threshold");
                    }
                    (None, Some(_)) => {
                        out.text("no dump was taken");
                    }
                    (None, None) => {
                        out.text("no dump was taken (record with ")
                            .code("--act")
                            .text(" for one)");
                    }
                },
            }
            Some(("dumps", out))
        }
    }
}

/// The step of a holder's path that shows its name (`SessionCache.sessions`): the one before
/// the named object, which a shortened path keeps.
fn named_keep(holder: &Holder) -> Option<usize> {
    holder.named.checked_sub(1)
}

/// `` `sessions` of `com.example.SessionCache` (a `java.util.HashMap`) ``, or `` a
/// `java.util.HashMap` `` when no name leads to it.
fn holder_phrase(holder: &Holder, out: &mut Sentence) {
    let Some(object) = holder.object() else {
        out.text("an object the dump cannot name");
        return;
    };
    let type_name = type_text(&object.type_name);
    match holder.name() {
        Some(name) => {
            out.code(name);
            if let Some(owner) = holder.owner().and_then(owner_name) {
                out.text(" of ").code(owner);
            }
            out.text(" (a ").code(type_name).text(")");
        }
        None => {
            out.text("a ").code(type_name);
        }
    }
}

/// How the holder's owner is named: a class object by its class, a module by its name, else
/// by its type; the root and the dump's synthetic groups are no owner.
fn owner_name(step: &HolderStep) -> Option<String> {
    // The root is no owner.
    step.edge.as_ref()?;
    if let Some(label) = &step.label
        && matches!(step.type_name.as_str(), "java.lang.Class" | "module")
    {
        return Some(label.clone());
    }
    // A path matched across dumps has no labels: a module is named by its root edge, as
    // the same path of one dump names it by its label.
    if step.type_name == "module"
        && let Some(name) = step
            .edge
            .as_deref()
            .and_then(|edge| edge.strip_prefix("module "))
    {
        return Some(name.to_owned());
    }
    Some(type_text(&step.type_name).to_owned())
}

/// A holder path as one line: `(root).module m → module.__dict__ → dict.cache → list`, its
/// middle giving way by whole steps when it is long.
pub fn path_text(path: &[HolderStep], keep: Option<usize>) -> String {
    crate::fit_path(&crate::holder_steps(path), crate::PATH_WIDTH, keep)
}

/// A stack as one line, most recent call first: `a.py:3 (f) ← b.py:9 (main)`.
fn stack_text(frames: &[SiteFrame]) -> String {
    frames
        .iter()
        .map(frame_text)
        .collect::<Vec<_>>()
        .join(" ← ")
}

fn no_stack() -> String {
    "(no stack recorded)".to_owned()
}

/// `file:line`, with the function where known.
pub fn frame_text(frame: &SiteFrame) -> String {
    match &frame.name {
        Some(name) => format!("{}:{} ({name})", frame.filename, frame.lineno),
        None => format!("{}:{}", frame.filename, frame.lineno),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use heapgraph_analyzer::findings::HolderStep;
    use heapgraph_model::Runtime;

    fn step(type_name: &str, label: Option<&str>, edge: Option<&str>) -> HolderStep {
        HolderStep {
            type_name: type_name.to_owned(),
            label: label.map(str::to_owned),
            edge: edge.map(str::to_owned),
            edge_kind: None,
        }
    }

    /// A global of `__main__`, as one dump's chain has it (the module's label) and as a
    /// comparison's holder has it (no labels, the module named by its root edge).
    fn global(label: Option<&str>) -> Holder {
        Holder::new(
            vec![
                step("(root)", None, None),
                step("module", label, Some("module __main__")),
                step("dict", None, Some("__dict__")),
                step("list", None, Some("_TOKEN_CACHE")),
            ],
            Runtime::Python,
        )
    }

    #[test]
    fn a_module_is_named_alike_in_one_dump_and_in_a_comparison() {
        let phrase = |holder: &Holder| {
            let mut out = Sentence::default();
            holder_phrase(holder, &mut out);
            out.plain()
        };
        let labelled = phrase(&global(Some("__main__")));
        assert_eq!(labelled, "`_TOKEN_CACHE` of `__main__` (a `list`)");
        assert_eq!(phrase(&global(None)), labelled);
    }

    #[test]
    fn the_root_shortcut_to_global_reads_alike_in_every_chain() {
        // As `diff` matches V8 holders: the shortcut's slot-like name is written `[]`.
        let mut path = vec![
            step("(synthetic)", None, None),
            step("global", None, Some("[]")),
            step("LeakyCache", None, Some("requestCache")),
        ];
        path[1].edge_kind = Some("shortcut");
        assert_eq!(
            path_text(&path, None),
            "(synthetic) (shortcut) → global.requestCache → LeakyCache"
        );
        // `who-holds` names the edge as the snapshot does (`2`): the same text.
        path[1].edge = Some("2".to_owned());
        assert_eq!(
            path_text(&path, None),
            "(synthetic) (shortcut) → global.requestCache → LeakyCache"
        );
        assert_eq!(
            crate::edge_text(path[1].edge.as_deref(), path[1].edge_kind).as_deref(),
            Some("(shortcut)")
        );
    }

    fn recording(failed_dump: Option<(f64, String)>, act_crossings: Option<usize>) -> String {
        detail(&timeline(None, failed_dump, act_crossings))
            .expect("a detail")
            .1
            .plain()
    }

    fn timeline(
        share_of_limit: Option<f64>,
        failed_dump: Option<(f64, String)>,
        act_crossings: Option<usize>,
    ) -> Finding {
        Finding::Timeline {
            peak: 1 << 20,
            peak_at_s: 1.0,
            limit: Some((200 << 20, "physical memory".to_owned())),
            share_of_limit,
            growing_per_s: None,
            dumps: Vec::new(),
            failed_dump,
            act_crossings,
        }
    }

    #[test]
    fn a_small_share_of_the_limit_keeps_its_decimal() {
        // 1 MiB of 200 MiB is 0.5%, as the summary's table prints it; 50% needs none.
        let sentence = |share| sentence(&timeline(Some(share), None, None)).plain();
        assert!(sentence(0.005).contains(", 0.5% of the limit (physical memory)"));
        assert!(sentence(0.5).contains(", 50% of the limit (physical memory)"));
    }

    #[test]
    fn a_recording_without_a_dump_says_why() {
        let why =
            "a python-hgd dump of process 7 failed: process 7 ended before its dump was written";
        assert_eq!(
            recording(Some((1.3, why.to_owned())), Some(1)),
            format!("no dump was written: at 1.3 s, {why}")
        );
        assert!(recording(None, Some(0)).contains("stayed below the `--act` threshold"));
        assert!(recording(None, None).contains("record with `--act` for one"));
    }
}
