//! Work on a thread of its own beside the caller's.

/// Runs `beside` on a thread of its own while this one runs `here`, where rayon has more than
/// one thread (`RAYON_NUM_THREADS=1` runs one after the other, on one core); for whole-graph
/// passes that are each one thread's, or that may build the analysis's cells, which a rayon
/// job must not wait on, or for a column parked beside a pass that is one core's
/// (docs/architecture.md, "Performance"). Call it from a thread that is not rayon's.
pub fn side_by_side<A: Send, B>(
    beside: impl FnOnce() -> A + Send,
    here: impl FnOnce() -> B,
) -> (A, B) {
    if rayon::current_num_threads() == 1 {
        let beside = beside();
        return (beside, here());
    }
    std::thread::scope(|scope| {
        let beside = scope.spawn(beside);
        let here = here();
        let beside = beside
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (beside, here)
    })
}
