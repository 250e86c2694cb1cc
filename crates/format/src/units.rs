//! The words for quantities that heapgraph reads from people: sizes (`12GiB`, `500MB`), shares
//! (`80%`, `0.8`), durations (`300s`, `5m`) and signed changes (`+10%`, `+64MiB`). Every
//! command-line flag that takes one parses it here, and the `.hgt` thresholds' `spec` is written
//! here, so that one spelling means one thing everywhere.
//!
//! - A **size** is a number and a unit: `B`; `K`, `KiB`, `M`, `MiB`, `G`, `GiB`, `T`, `TiB`
//!   (binary, powers of 1024); `KB` (or `kB`), `MB`, `GB`, `TB` (decimal, powers of 1000). A
//!   number without a unit is a count of bytes (or of objects, in a change), and is whole;
//!   with a unit it may have a fraction (`1.5GiB`).
//! - A **share** is a percentage (`80%`, `0.5%`) or a fraction written with its decimal point
//!   (`0.8`, `0.005`).
//! - A **level** is a share (of a limit) or a size: a number with a decimal point and no unit is
//!   a share, so `0.8` is 80% and `4096` is 4096 bytes.
//! - A **duration** is a number and `ms`, `s`, `m` (or `min`) or `h`; a number alone is seconds.
//!   Durations count whole milliseconds.
//! - A **change** is a sign (`+` if none) and a size, a count or a share: `+64MiB`, `+200`,
//!   `+10%`, `-0.05`. A share in a change is relative to the value before and may exceed 100%.
//!
//! Space between the number and its unit is allowed (`1.5 GiB`). The `*_text` functions and the
//! `Display` of [`Level`] and [`Change`] write the shortest exact spelling, which parses back to
//! the same value.
//!
//! ```
//! use heapgraph_format::units::{self, Change, Level};
//! use std::time::Duration;
//!
//! assert_eq!(units::parse_size("1.5 GiB"), Ok(3 << 29));
//! assert_eq!(units::parse_share("0.5%"), Ok(0.005));
//! assert_eq!("0.8".parse(), Ok(Level::Share(0.8)));
//! assert_eq!("12GiB".parse(), Ok(Level::Bytes(12 << 30)));
//! assert_eq!(units::parse_duration("5m"), Ok(Duration::from_secs(300)));
//! assert_eq!("+10%".parse(), Ok(Change::Share(0.1)));
//! assert_eq!(units::size_text(12 << 30), "12GiB");
//! assert_eq!(units::duration_text(Duration::from_secs(300)), "5m");
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Why a quantity could not be read: a sentence for the user that quotes the text and says how
/// to write it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UnitError {
    message: String,
}

impl UnitError {
    fn new(message: String) -> UnitError {
        UnitError { message }
    }
}

/// The units of sizes, with their scale. [`size_text`] prefers the earlier of two that fit
/// alike.
const SIZE_UNITS: [(&str, u64); 14] = [
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("TB", 1_000_000_000_000),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("KB", 1_000),
    ("kB", 1_000),
    ("T", 1 << 40),
    ("G", 1 << 30),
    ("M", 1 << 20),
    ("K", 1 << 10),
    ("B", 1),
];

/// The units of durations, in milliseconds, largest first.
const DURATION_UNITS: [(&str, u64); 5] = [
    ("h", 3_600_000),
    ("min", 60_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// A number as written: its digits, and whether it has a decimal point.
struct Number<'a> {
    text: &'a str,
    whole: bool,
}

impl Number<'_> {
    fn value(&self) -> f64 {
        // Checked to be digits with at most one point, so this cannot fail; NaN would be caught
        // by every range check after.
        self.text.parse().unwrap_or(f64::NAN)
    }

    /// `self × scale`, exact for whole numbers, rounded otherwise; `None` past `u64::MAX`.
    fn times(&self, scale: u64) -> Option<u64> {
        if self.whole {
            return self.text.parse::<u64>().ok()?.checked_mul(scale);
        }
        let value = self.value() * scale as f64;
        // 2^64 is exactly representable; anything at or above it does not fit.
        (value < 18_446_744_073_709_551_616.0).then(|| value.round() as u64)
    }
}

/// Splits `text` into a number and what follows it (the unit, trimmed). The number is ASCII
/// digits with at most one decimal point and at least one digit.
fn split(text: &str) -> Option<(Number<'_>, &str)> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(end);
    let points = number.matches('.').count();
    if points > 1 || !number.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((
        Number {
            text: number,
            whole: points == 0,
        },
        unit.trim(),
    ))
}

fn size_scale(unit: &str) -> Option<u64> {
    if unit.is_empty() {
        return Some(1);
    }
    SIZE_UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|&(_, scale)| scale)
}

fn unknown_size_unit(text: &str, unit: &str) -> UnitError {
    UnitError::new(format!(
        "{text:?}: unknown unit {unit:?}; use B, K or KiB, M or MiB, G or GiB, T or TiB \
         (binary), or KB, MB, GB, TB (decimal)"
    ))
}

/// Reads a size in bytes: `12GiB`, `1.5 MiB`, `500MB`, `4096`.
///
/// # Errors
/// When the text is not a number and a size unit, a number without a unit has a fraction, or
/// the size does not fit in 64 bits.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let text = text.trim();
    let (number, unit) = split(text).ok_or_else(|| {
        UnitError::new(format!(
            "{text:?} is not a size; write it like 12GiB, 500MB or 4096 (bytes)"
        ))
    })?;
    let scale = size_scale(unit).ok_or_else(|| unknown_size_unit(text, unit))?;
    if unit.is_empty() && !number.whole {
        return Err(UnitError::new(format!(
            "{text:?} is not a size: a count of bytes is whole; give a unit, like {text}MiB"
        )));
    }
    number
        .times(scale)
        .ok_or_else(|| UnitError::new(format!("{text:?} is too large a size")))
}

/// Whether `text` is written as a share: a percentage, or a number with a decimal point and no
/// unit.
fn looks_like_share(text: &str) -> bool {
    text.ends_with('%')
        || split(text).is_some_and(|(number, unit)| unit.is_empty() && !number.whole)
}

/// A share as a fraction, without a range check beyond "not negative".
fn share_value(text: &str) -> Result<f64, UnitError> {
    let not_a_share = || {
        UnitError::new(format!(
            "{text:?} is not a share; write it as a percentage (80%) or a fraction (0.8)"
        ))
    };
    let (body, scale) = match text.strip_suffix('%') {
        Some(body) => (body.trim_end(), 100.0),
        None => (text, 1.0),
    };
    let (number, unit) = split(body).ok_or_else(not_a_share)?;
    if !unit.is_empty() || (scale == 1.0 && number.whole) {
        return Err(not_a_share());
    }
    Ok(number.value() / scale)
}

/// Reads a share, as a fraction from 0 to 1: `80%` or `0.8`, `0.5%` or `0.005`.
///
/// # Errors
/// When the text is neither a percentage nor a fraction with its decimal point (`1` is refused:
/// write `100%` or `1.0`), or it is above 100%.
pub fn parse_share(text: &str) -> Result<f64, UnitError> {
    let text = text.trim();
    let share = share_value(text)?;
    if !(0.0..=1.0).contains(&share) {
        return Err(UnitError::new(format!(
            "{text:?} is not between 0% and 100%"
        )));
    }
    Ok(share)
}

/// Reads a duration: `200ms`, `1.5s`, `5m`, `1h`; a number alone is seconds. Rounded to the
/// millisecond.
///
/// # Errors
/// When the text is not a number and a duration unit.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let text = text.trim();
    let (number, unit) = split(text).ok_or_else(|| {
        UnitError::new(format!(
            "{text:?} is not a duration; write it like 200ms, 30s, 5m or 1h"
        ))
    })?;
    let unit = if unit.is_empty() { "s" } else { unit };
    let scale = DURATION_UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|&(_, scale)| scale)
        .ok_or_else(|| {
            UnitError::new(format!(
                "{text:?}: unknown unit {unit:?}; use ms, s, m (or min) or h"
            ))
        })?;
    number
        .times(scale)
        .map(Duration::from_millis)
        .ok_or_else(|| UnitError::new(format!("{text:?} is too long a duration")))
}

/// `bytes` in the shortest exact spelling: `12GiB`, `2GB`, `4097B`.
pub fn size_text(bytes: u64) -> String {
    if bytes == 0 {
        return "0B".to_owned();
    }
    // The unit that leaves the smallest whole number; on a tie the first in the table, so
    // binary before decimal and `KiB` before `K`.
    let (unit, scale) = SIZE_UNITS
        .into_iter()
        .filter(|&(_, scale)| bytes.is_multiple_of(scale))
        .min_by_key(|&(_, scale)| bytes / scale)
        .unwrap_or(("B", 1));
    format!("{}{unit}", bytes / scale)
}

/// A share as a percentage, to four decimals of a percent: `80%`, `0.5%`, `12.3456%`.
pub fn share_text(share: f64) -> String {
    let percent = format!("{:.4}", share * 100.0);
    let percent = percent.trim_end_matches('0').trim_end_matches('.');
    format!("{percent}%")
}

/// A duration in the largest unit that holds it whole (to the millisecond): `5m`, `90s`,
/// `200ms`, `1h`.
pub fn duration_text(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms == 0 {
        return "0s".to_owned();
    }
    for (unit, scale) in [("h", 3_600_000), ("m", 60_000), ("s", 1_000)] {
        if ms.is_multiple_of(scale) {
            return format!("{}{unit}", ms / scale);
        }
    }
    format!("{ms}ms")
}

/// A threshold: a share of a limit, or a size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Level {
    /// A share of the limit: `80%` is 0.8. Above 0, at most 1.
    Share(f64),
    /// Bytes, at least 1.
    Bytes(u64),
}

impl Level {
    /// The threshold in bytes, given the limit it may be a share of.
    pub fn bytes(self, limit: u64) -> u64 {
        match self {
            Level::Share(share) => (limit as f64 * share).round() as u64,
            Level::Bytes(bytes) => bytes,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Level::Share(share) => f.write_str(&share_text(*share)),
            Level::Bytes(bytes) => f.write_str(&size_text(*bytes)),
        }
    }
}

impl FromStr for Level {
    type Err = UnitError;

    /// A share (`80%`, `0.8`) or a size (`12GiB`, `4096`); zero is no threshold.
    fn from_str(text: &str) -> Result<Level, UnitError> {
        let text = text.trim();
        if looks_like_share(text) {
            let share = parse_share(text)?;
            if share <= 0.0 {
                return Err(UnitError::new(format!(
                    "{text:?} is not between 0% and 100%: a threshold is above 0"
                )));
            }
            return Ok(Level::Share(share));
        }
        let bytes = parse_size(text).map_err(|err| {
            if split(text).is_none() {
                UnitError::new(format!(
                    "{text:?} is not a level; write a share like 80% (or 0.8) or a size like 12GiB"
                ))
            } else {
                err
            }
        })?;
        if bytes == 0 {
            return Err(UnitError::new(format!("{text:?} is not a size above zero")));
        }
        Ok(Level::Bytes(bytes))
    }
}

/// A signed change, as a regression gate states it: an amount (bytes or objects) or a share of
/// the value before.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Change {
    /// Bytes or objects: `+64MiB`, `+200`.
    Amount(i64),
    /// A fraction of the value before: `+10%` is 0.1.
    Share(f64),
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Change::Amount(amount) => {
                let sign = if amount < 0 { '-' } else { '+' };
                let magnitude = amount.unsigned_abs();
                // Counts read better as plain numbers; whole binary sizes in their unit.
                if magnitude >= 1024 && magnitude.is_multiple_of(1024) {
                    write!(f, "{sign}{}", size_text(magnitude))
                } else {
                    write!(f, "{sign}{magnitude}")
                }
            }
            Change::Share(share) => {
                let sign = if share.is_sign_negative() && share != 0.0 {
                    '-'
                } else {
                    '+'
                };
                write!(f, "{sign}{}", share_text(share.abs()))
            }
        }
    }
}

impl FromStr for Change {
    type Err = UnitError;

    /// `+64MiB`, `+200`, `+10%`, `-0.05`; no sign is `+`.
    fn from_str(text: &str) -> Result<Change, UnitError> {
        let text = text.trim();
        let (negative, body) = match text.as_bytes().first() {
            Some(b'+') => (false, text[1..].trim_start()),
            Some(b'-') => (true, text[1..].trim_start()),
            _ => (false, text),
        };
        let sign = if negative { -1.0 } else { 1.0 };
        if looks_like_share(body) {
            return Ok(Change::Share(sign * share_value(body)?));
        }
        let amount = parse_size(body).map_err(|err| {
            if split(body).is_none() {
                UnitError::new(format!(
                    "{text:?} is not a change; write it like +10%, +64MiB or +200"
                ))
            } else {
                err
            }
        })?;
        let amount = i64::try_from(amount)
            .map_err(|_| UnitError::new(format!("{text:?} is too large a change")))?;
        Ok(Change::Amount(if negative { -amount } else { amount }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_read_in_every_unit() {
        for (text, bytes) in [
            ("4096", 4096),
            ("4096B", 4096),
            ("1K", 1024),
            ("1KiB", 1024),
            ("1KB", 1000),
            ("1kB", 1000),
            ("12GiB", 12 << 30),
            ("12 G", 12 << 30),
            ("1.5 GiB", 3 << 29),
            ("2GB", 2_000_000_000),
            ("1TiB", 1 << 40),
            ("3T", 3 << 40),
            ("1TB", 1_000_000_000_000),
            ("0.5K", 512),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for bad in ["", "lots", "1.5", "1..5K", "-3MiB", "16777216TiB", "."] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(
            parse_size("3 furlongs")
                .unwrap_err()
                .to_string()
                .contains("unknown unit \"furlongs\"")
        );
    }

    #[test]
    fn shares_read_as_percentages_or_fractions() {
        assert_eq!(parse_share("80%"), Ok(0.8));
        assert_eq!(parse_share("0.8"), Ok(0.8));
        assert_eq!(parse_share("0.5%"), Ok(0.005));
        assert_eq!(parse_share("0.01"), Ok(0.01));
        assert_eq!(parse_share("100%"), Ok(1.0));
        assert_eq!(parse_share("1.0"), Ok(1.0));
        assert_eq!(parse_share("0%"), Ok(0.0));
        for bad in ["1", "80", "150%", "1.5", "lots", "80 %%", "5MiB"] {
            assert!(parse_share(bad).is_err(), "{bad}");
        }
        assert!(
            parse_share("150%")
                .unwrap_err()
                .to_string()
                .contains("is not between 0% and 100%")
        );
    }

    #[test]
    fn levels_are_shares_with_a_point_and_sizes_without() {
        assert_eq!("80%".parse(), Ok(Level::Share(0.8)));
        assert_eq!("0.8".parse(), Ok(Level::Share(0.8)));
        assert_eq!("12GiB".parse(), Ok(Level::Bytes(12 << 30)));
        assert_eq!("4096".parse(), Ok(Level::Bytes(4096)));
        for bad in ["0%", "0.0", "0", "120%", "2.5", "lots", "3 furlongs"] {
            assert!(bad.parse::<Level>().is_err(), "{bad}");
        }
        assert_eq!(Level::Share(0.9).bytes(1000), 900);
        assert_eq!(Level::Bytes(7).bytes(1000), 7);
    }

    #[test]
    fn changes_are_signed_amounts_or_shares() {
        assert_eq!("+10%".parse(), Ok(Change::Share(0.1)));
        assert_eq!("10%".parse(), Ok(Change::Share(0.1)));
        assert_eq!("-5%".parse(), Ok(Change::Share(-0.05)));
        assert_eq!("+250%".parse(), Ok(Change::Share(2.5)));
        assert_eq!("+0.1".parse(), Ok(Change::Share(0.1)));
        assert_eq!("+64MiB".parse(), Ok(Change::Amount(64 << 20)));
        assert_eq!("+1K".parse(), Ok(Change::Amount(1024)));
        assert_eq!("+1TiB".parse(), Ok(Change::Amount(1 << 40)));
        assert_eq!("+200".parse(), Ok(Change::Amount(200)));
        assert_eq!("- 3".parse(), Ok(Change::Amount(-3)));
        for bad in ["+", "more", "+3 furlongs", "+16EiB", "+10%%"] {
            assert!(bad.parse::<Change>().is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_read_with_their_units() {
        assert_eq!(parse_duration("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(parse_duration("2.5s"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("300s"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("5 min"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["5 fortnights", "soon", "", "-1s", "1e3s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn texts_are_the_shortest_exact_spelling() {
        assert_eq!(size_text(0), "0B");
        assert_eq!(size_text(12 << 30), "12GiB");
        assert_eq!(size_text(1536 << 20), "1536MiB");
        assert_eq!(size_text(2_000_000_000), "2GB");
        assert_eq!(size_text(4097), "4097B");
        assert_eq!(share_text(0.8), "80%");
        assert_eq!(share_text(0.005), "0.5%");
        assert_eq!(share_text(0.07), "7%");
        assert_eq!(duration_text(Duration::from_secs(300)), "5m");
        assert_eq!(duration_text(Duration::from_secs(90)), "90s");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1500ms");
        assert_eq!(duration_text(Duration::from_secs(7200)), "2h");
        assert_eq!(Level::Share(0.8).to_string(), "80%");
        assert_eq!(Change::Amount(64 << 20).to_string(), "+64MiB");
        assert_eq!(Change::Amount(-200).to_string(), "-200");
        assert_eq!(Change::Share(-0.1).to_string(), "-10%");
    }

    proptest! {
        #[test]
        fn sizes_round_trip(bytes in any::<u64>()) {
            prop_assert_eq!(parse_size(&size_text(bytes)), Ok(bytes));
        }

        #[test]
        fn a_number_and_a_unit_is_that_many_units(
            number in 0u64..1_000_000,
            unit in proptest::sample::select(SIZE_UNITS.to_vec()),
        ) {
            prop_assert_eq!(
                parse_size(&format!("{number}{}", unit.0)),
                Ok(number * unit.1)
            );
        }

        #[test]
        fn shares_round_trip_to_a_millionth(millionths in 0u32..=1_000_000) {
            let share = f64::from(millionths) / 1e6;
            let text = share_text(share);
            let read = parse_share(&text).unwrap();
            prop_assert!((read - share).abs() < 1e-12, "{} read as {}", text, read);
            prop_assert_eq!(share_text(read), text);
        }

        #[test]
        fn durations_round_trip(ms in any::<u64>()) {
            let duration = Duration::from_millis(ms);
            prop_assert_eq!(parse_duration(&duration_text(duration)), Ok(duration));
        }

        #[test]
        fn levels_round_trip(millionths in 1u32..=1_000_000, bytes in 1u64..) {
            let share = Level::Share(f64::from(millionths) / 1e6);
            match share.to_string().parse::<Level>().unwrap() {
                Level::Share(read) => prop_assert!((read - f64::from(millionths) / 1e6).abs() < 1e-12),
                other => prop_assert!(false, "{:?}", other),
            }
            prop_assert_eq!(Level::Bytes(bytes).to_string().parse(), Ok(Level::Bytes(bytes)));
        }

        #[test]
        fn changes_round_trip(amount in (i64::MIN + 1)..=i64::MAX, percent in -100_000i32..100_000) {
            prop_assert_eq!(Change::Amount(amount).to_string().parse(), Ok(Change::Amount(amount)));
            let share = f64::from(percent) / 100.0;
            match Change::Share(share).to_string().parse::<Change>().unwrap() {
                Change::Share(read) => prop_assert!((read - share).abs() < 1e-9, "{} vs {}", read, share),
                other => prop_assert!(false, "{:?}", other),
            }
        }

        #[test]
        fn any_text_is_read_or_refused_without_a_panic(text in ".{0,24}") {
            let _ = parse_size(&text);
            let _ = parse_share(&text);
            let _ = parse_duration(&text);
            let _ = text.parse::<Level>();
            let _ = text.parse::<Change>();
        }
    }
}
