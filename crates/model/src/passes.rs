//! The wall time of each pass over a dump (the parse's steps, the dominator tree, the indexes
//! built on first use), kept when asked for: `heapgraph --timings` prints them, and the
//! per-pass figures of docs/performance.md (1 against 2 threads) come from them. Off by
//! default, where a pass costs one relaxed atomic load.

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
    KEPT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(PassTime { name, start, wall });
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
}
