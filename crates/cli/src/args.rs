//! Command-line arguments (clap derive). Nothing here leaves the binary: verbs turn these into
//! the libraries' options.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Post-mortem memory analysis: what is using the memory, who holds it, what grew.
#[derive(Parser, Debug)]
#[command(name = "heapgraph", version, about, long_about = None)]
#[command(
    after_help = "Reads V8 .heapsnapshot files, Java HPROF dumps (.hprof, plain or .gz) and heapgraph's own .hgd.\n\
Exit codes: 0 success, 2 bad usage or unreadable input."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Totals and the types that hold the most memory (count, shallow, retained)
    Summary(SummaryArgs),
    /// The objects that retain the most memory
    Top(TopArgs),
    /// Chains of references from the GC roots to an object, and its dominators
    WhoHolds(WhoHoldsArgs),
    /// The dominator tree from the root down: what keeps what alive
    Dominators(DominatorsArgs),
    /// Leak suspects, as Eclipse MAT finds them: big single holders and where their bytes
    /// accumulate, and types whose instances together hold much
    Suspects(SuspectsArgs),
    /// Strings grouped by value; --duplicates shows the values held more than once and the
    /// bytes the copies waste
    Strings(StringsArgs),
    /// Write a dump in heapgraph's native format (.hgd), with its analysis, to reopen fast
    Convert(ConvertArgs),
}

/// Output format of every analysis.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutputFormat {
    /// Aligned tables for people
    Text,
    /// Versioned JSON for machines (schemas in docs/json.md)
    Json,
}

/// How `top` ranks objects.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RankByArg {
    /// Bytes the object keeps alive
    Retained,
    /// Bytes of the object alone
    Shallow,
    /// Objects the object keeps alive
    Count,
}

/// Arguments every analysis shares.
#[derive(Args, Debug)]
pub(crate) struct Common {
    /// The dump: a .heapsnapshot (or .heapsnapshot.gz) or a .hgd
    pub(crate) file: PathBuf,
    /// Output format
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) format: OutputFormat,
    /// Count weak references as retaining (off by default, as in DevTools and MAT)
    #[arg(long)]
    pub(crate) include_weak: bool,
}

#[derive(Args, Debug)]
pub(crate) struct SummaryArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Types to list (JSON lists all types unless -n is given)
    #[arg(short = 'n', long = "types")]
    pub(crate) n_types: Option<usize>,
}

#[derive(Args, Debug)]
pub(crate) struct TopArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// What to rank by
    #[arg(long, value_enum, default_value_t = RankByArg::Retained)]
    pub(crate) by: RankByArg,
    /// How many objects to list
    #[arg(short = 'n', default_value_t = 20)]
    pub(crate) n: usize,
}

#[derive(Args, Debug)]
pub(crate) struct WhoHoldsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// The object: @12345 (as DevTools shows it), 12345, or 0x3039
    #[arg(required_unless_present = "type_name", conflicts_with = "type_name")]
    pub(crate) object: Option<String>,
    /// Instead of an id: the instance of this type that retains the most
    #[arg(long = "type", value_name = "TYPE")]
    pub(crate) type_name: Option<String>,
    /// How many distinct shortest chains to print
    #[arg(long = "paths", default_value_t = 3, value_name = "K")]
    pub(crate) n_paths: usize,
}

#[derive(Args, Debug)]
pub(crate) struct DominatorsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Levels below the root to show
    #[arg(long, default_value_t = 3)]
    pub(crate) depth: u32,
    /// Hide nodes retaining less than this share of the heap (like 1% or 0.5%)
    #[arg(long, default_value = "1%", value_parser = parse_share)]
    pub(crate) min_share: f64,
}

#[derive(Args, Debug)]
pub(crate) struct SuspectsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// The share of the reachable heap a suspect must retain (like 10% or 0.1)
    #[arg(long, default_value = "10%", value_parser = parse_share)]
    pub(crate) threshold: f64,
}

#[derive(Args, Debug)]
pub(crate) struct StringsArgs {
    #[command(flatten)]
    pub(crate) common: Common,
    /// Only values held by two strings or more, ranked by the bytes the copies waste
    #[arg(long)]
    pub(crate) duplicates: bool,
    /// How many values to list
    #[arg(short = 'n', default_value_t = 20)]
    pub(crate) n: usize,
}

#[derive(Args, Debug)]
pub(crate) struct ConvertArgs {
    /// The dump to convert
    pub(crate) file: PathBuf,
    /// Where to write the .hgd file
    #[arg(short = 'o', long = "output")]
    pub(crate) output: PathBuf,
}

/// Parses `1%`, `0.5%` or a fraction such as `0.01`.
fn parse_share(text: &str) -> Result<f64, String> {
    let (number, scale) = match text.strip_suffix('%') {
        Some(number) => (number, 100.0),
        None => (text, 1.0),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a share; write it like 1% or 0.01"))?;
    let share = value / scale;
    if !(0.0..=1.0).contains(&share) {
        return Err(format!("{text:?} is not between 0% and 100%"));
    }
    Ok(share)
}

#[cfg(test)]
mod tests {
    use super::parse_share;

    #[test]
    fn shares_parse_as_percent_or_fraction() {
        assert_eq!(parse_share("1%"), Ok(0.01));
        assert_eq!(parse_share("0.5%"), Ok(0.005));
        assert_eq!(parse_share("0.25"), Ok(0.25));
        assert!(parse_share("150%").is_err());
        assert!(parse_share("lots").is_err());
    }
}
