//! The wall time of each pass over a dump (the parse's steps, the dominator tree, the indexes
//! built on first use), and the process's memory when it ended, kept when asked for:
//! `heapgraph --timings` prints them, and the per-pass figures of docs/performance.md (1
//! against 2 threads, where the peak is) come from them. Off by default, where a pass costs
//! one relaxed atomic load.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

static KEEPING: AtomicBool = AtomicBool::new(false);
static STARTED: OnceLock<Instant> = OnceLock::new();
static KEPT: Mutex<Vec<PassTime>> = Mutex::new(Vec::new());

/// One pass that ran: when it started (from [`keep_timings`]) and how long it took. Passes may
/// run inside others and beside each other; the start times show which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassTime {
    /// What the pass does, such as `"hprof: objects and references"`.
    pub name: &'static str,
    /// Its start, from the call to [`keep_timings`].
    pub start: Duration,
    /// Its wall time.
    pub wall: Duration,
    /// The process's memory when it ended, where the system says (Linux).
    pub memory: Option<ProcessMemory>,
}

/// The process's memory at one moment, in bytes, as Linux counts it in `/proc/self/status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessMemory {
    /// Resident now (`VmRSS`).
    pub resident: u64,
    /// The most resident so far (`VmHWM`): the first pass after which it reaches the run's
    /// peak is where the peak was, or a pass beside it.
    pub peak: u64,
}

impl ProcessMemory {
    /// The memory now; `None` where `/proc/self/status` cannot be read or lacks the figures.
    pub fn now() -> Option<ProcessMemory> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        ProcessMemory::from_status(&status)
    }

    /// The figures of a `/proc/PID/status` text.
    fn from_status(status: &str) -> Option<ProcessMemory> {
        let kib = |key: &str| -> Option<u64> {
            let line = status.lines().find(|line| line.starts_with(key))?;
            let value = line[key.len()..].trim().strip_suffix("kB")?.trim();
            Some(value.parse::<u64>().ok()? * 1024)
        };
        Some(ProcessMemory {
            resident: kib("VmRSS:")?,
            peak: kib("VmHWM:")?,
        })
    }
}

/// Starts keeping the time of every pass from now on.
pub fn keep_timings() {
    STARTED.get_or_init(Instant::now);
    KEEPING.store(true, Ordering::Relaxed);
}

/// Runs `pass`, keeping its wall time under `name` when [`keep_timings`] was called.
pub fn timed<T>(name: &'static str, pass: impl FnOnce() -> T) -> T {
    if !KEEPING.load(Ordering::Relaxed) {
        return pass();
    }
    let started = STARTED.get_or_init(Instant::now);
    let start = started.elapsed();
    let value = pass();
    let wall = started.elapsed() - start;
    let memory = ProcessMemory::now();
    KEPT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(PassTime {
            name,
            start,
            wall,
            memory,
        });
    value
}

/// The passes that ran since [`keep_timings`], in the order they started; they are forgotten.
pub fn take_timings() -> Vec<PassTime> {
    let mut kept = std::mem::take(
        &mut *KEPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    kept.sort_by_key(|pass| pass.start);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_are_kept_only_when_asked_for_and_in_the_order_they_started() {
        // One test: the switch is process-wide, and other tests' passes may be kept beside
        // these once it is on.
        assert_eq!(timed("before", || 1), 1);
        assert!(take_timings().iter().all(|pass| pass.name != "before"));
        keep_timings();
        let inner = timed("outer", || {
            std::thread::sleep(Duration::from_millis(5));
            timed("inner", || 2)
        });
        assert_eq!(inner, 2);
        let kept: Vec<PassTime> = take_timings()
            .into_iter()
            .filter(|pass| ["outer", "inner"].contains(&pass.name))
            .collect();
        let names: Vec<&str> = kept.iter().map(|pass| pass.name).collect();
        assert_eq!(names, ["outer", "inner"]);
        assert!(kept[0].wall >= kept[1].wall + Duration::from_millis(5));
        assert!(kept[1].start >= kept[0].start);
        assert!(take_timings().iter().all(|pass| pass.name != "outer"));
    }

    #[test]
    fn memory_is_read_from_the_status_lines_in_bytes() {
        // Lines as Linux 6.x writes them.
        let status = "Name:\theapgraph\nVmPeak:\t 3060 kB\nVmHWM:\t    2048 kB\n\
                      VmRSS:\t    1752 kB\nRssAnon:\t     116 kB\n";
        assert_eq!(
            ProcessMemory::from_status(status),
            Some(ProcessMemory {
                resident: 1752 * 1024,
                peak: 2048 * 1024
            })
        );
        assert_eq!(ProcessMemory::from_status("VmRSS:\t 12 kB\n"), None);
        assert_eq!(
            ProcessMemory::from_status("VmRSS:\t twelve kB\nVmHWM:\t 1 kB\n"),
            None
        );
        if cfg!(target_os = "linux") {
            let now = ProcessMemory::now().expect("Linux has /proc/self/status");
            assert!(now.resident > 0 && now.peak >= now.resident, "{now:?}");
        }
    }
}
