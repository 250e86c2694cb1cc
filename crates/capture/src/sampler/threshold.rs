//! Thresholds: `80%` of a limit or an absolute size (`12GiB`), and the watch that turns
//! samples into crossings: one per crossing upwards, re-armed only once the value has fallen
//! clearly below, so that memory hovering at the line does not fire at every sample.

use std::fmt;
use std::str::FromStr;

/// How far below its threshold a value must fall before the next crossing counts: 5% of the
/// threshold, so that a value hovering at the line crosses once.
pub const REARM_SHARE: f64 = 0.05;

/// A threshold as the user writes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LevelSpec {
    /// A share of the limit: `80%` is 0.8.
    Share(f64),
    /// Bytes.
    Bytes(u64),
}

impl LevelSpec {
    /// The threshold in bytes, given the limit it may be a share of.
    pub fn bytes(self, limit: u64) -> u64 {
        match self {
            LevelSpec::Share(share) => (limit as f64 * share).round() as u64,
            LevelSpec::Bytes(bytes) => bytes,
        }
    }
}

impl fmt::Display for LevelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LevelSpec::Share(share) => write!(f, "{}%", share * 100.0),
            LevelSpec::Bytes(bytes) => write!(f, "{bytes} B"),
        }
    }
}

impl FromStr for LevelSpec {
    type Err = String;

    /// `80%`, `0.8` is not accepted (ambiguous); sizes are `12GiB`, `512MiB`, `2GB` (KiB, MiB,
    /// GiB, TiB binary; KB, MB, GB, TB decimal; a bare number is bytes).
    fn from_str(text: &str) -> Result<LevelSpec, String> {
        let text = text.trim();
        if let Some(number) = text.strip_suffix('%') {
            let percent: f64 = number
                .trim()
                .parse()
                .map_err(|_| format!("{text:?} is not a percentage; write it like 80%"))?;
            if !(percent > 0.0 && percent <= 100.0) {
                return Err(format!("{text:?} is not between 0% and 100%"));
            }
            return Ok(LevelSpec::Share(percent / 100.0));
        }
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let value: f64 = number.parse().map_err(|_| {
            format!("{text:?} is not a threshold; write a share like 80% or a size like 12GiB")
        })?;
        let scale: f64 = match unit.trim() {
            "" | "B" => 1.0,
            "KiB" | "K" => 1024.0,
            "MiB" | "M" => 1024.0 * 1024.0,
            "GiB" | "G" => 1024.0 * 1024.0 * 1024.0,
            "TiB" | "T" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
            "KB" | "kB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "TB" => 1e12,
            other => {
                return Err(format!(
                    "{text:?}: unknown unit {other:?}; use KiB, MiB, GiB, TiB (binary) or KB, MB, GB, TB (decimal)"
                ));
            }
        };
        let bytes = value * scale;
        if !(bytes >= 1.0 && bytes < u64::MAX as f64) {
            return Err(format!("{text:?} is not a size above zero"));
        }
        Ok(LevelSpec::Bytes(bytes.round() as u64))
    }
}

/// A threshold being watched: [`Watch::observe`] says when a value crosses it upwards.
#[derive(Clone, Debug)]
pub struct Watch {
    threshold: u64,
    armed: bool,
}

impl Watch {
    /// A watch on `threshold` bytes, armed.
    pub fn new(threshold: u64) -> Watch {
        Watch {
            threshold,
            armed: true,
        }
    }

    /// The threshold.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    /// Takes a measurement: `true` when it crosses the threshold upwards (the watch then waits
    /// for the value to fall [`REARM_SHARE`] below it before it can fire again).
    pub fn observe(&mut self, bytes: u64) -> bool {
        if self.armed && bytes >= self.threshold {
            self.armed = false;
            return true;
        }
        let rearm_below = self.threshold as f64 * (1.0 - REARM_SHARE);
        if !self.armed && (bytes as f64) < rearm_below {
            self.armed = true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_read_as_shares_or_sizes() {
        assert_eq!("80%".parse(), Ok(LevelSpec::Share(0.8)));
        assert_eq!("12GiB".parse(), Ok(LevelSpec::Bytes(12 << 30)));
        assert_eq!("1.5 GiB".parse(), Ok(LevelSpec::Bytes(3 << 29)));
        assert_eq!("2GB".parse(), Ok(LevelSpec::Bytes(2_000_000_000)));
        assert_eq!("4096".parse(), Ok(LevelSpec::Bytes(4096)));
        assert!("120%".parse::<LevelSpec>().is_err());
        assert!("0%".parse::<LevelSpec>().is_err());
        assert!("lots".parse::<LevelSpec>().is_err());
        assert!(
            "3 furlongs"
                .parse::<LevelSpec>()
                .unwrap_err()
                .contains("unknown unit")
        );
        assert_eq!(LevelSpec::Share(0.9).bytes(1000), 900);
        assert_eq!(LevelSpec::Bytes(7).bytes(1000), 7);
    }

    #[test]
    fn a_value_hovering_at_the_line_crosses_once() {
        let mut watch = Watch::new(1000);
        let fired: Vec<bool> = [10, 999, 1000, 1001, 990, 1005, 960, 1000, 949, 1200]
            .into_iter()
            .map(|value| watch.observe(value))
            .collect();
        // Re-armed only below 950: by 949, not by 990 or 960.
        assert_eq!(
            fired,
            [
                false, false, true, false, false, false, false, false, false, true
            ]
        );
    }
}
