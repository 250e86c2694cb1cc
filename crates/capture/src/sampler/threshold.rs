//! The watch that turns samples into crossings of a threshold: one per crossing upwards,
//! re-armed only once the value has fallen clearly below, so that memory hovering at the line
//! does not fire at every sample. (Levels are read and written by
//! `heapgraph_format::units::Level`.)

/// How far below its threshold a value must fall before the next crossing counts: 5% of the
/// threshold, so that a value hovering at the line crosses once.
pub const REARM_SHARE: f64 = 0.05;

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
