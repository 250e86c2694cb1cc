//! Where a pass has just freed much memory in small blocks: the binary, which chose the
//! allocator, may hand it back to the system there. A library cannot know the allocator; it
//! knows when a step's scratch (an import's per-segment indexes) is gone, which the allocator
//! cannot tell from one free among millions.

use std::sync::OnceLock;

static HAND_BACK: OnceLock<fn()> = OnceLock::new();

/// From now on, [`memory_freed`] calls `hand_back` (the first one given is kept).
pub fn on_memory_freed(hand_back: fn()) {
    let _ = HAND_BACK.set(hand_back);
}

/// Says that much memory was just freed: calls what [`on_memory_freed`] gave, if anything.
pub fn memory_freed() {
    if let Some(hand_back) = HAND_BACK.get() {
        hand_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CALLS: AtomicUsize = AtomicUsize::new(0);

    #[test]
    fn the_hand_back_given_runs_each_time_memory_is_freed() {
        memory_freed();
        on_memory_freed(|| {
            CALLS.fetch_add(1, Ordering::Relaxed);
        });
        on_memory_freed(|| panic!("only the first hand-back is kept"));
        memory_freed();
        memory_freed();
        assert_eq!(CALLS.load(Ordering::Relaxed), 2);
    }
}
