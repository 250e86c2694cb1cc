//! Capturing the current call stack as return addresses, by walking the chain of frame pointers
//! that every function built with `-C force-frame-pointers=yes` keeps (Rust's standard library
//! is built with them). Nothing is resolved here: that waits for a snapshot.
//!
//! The walk trusts nothing it reads: every frame pointer must lie inside the thread's stack,
//! above the current stack pointer, aligned, and strictly above the one before, so a function
//! built without frame pointers (whose `rbp` holds some other value) ends the walk early
//! instead of faulting.

/// The deepest stack a [`Recorder`](crate::Recorder) may keep.
pub const MAX_FRAMES: usize = 128;

/// Bytes of a frame record: the caller's frame pointer, then the return address.
const RECORD_BYTES: usize = 2 * size_of::<usize>();

/// Fills `out` with the return addresses of the calling frames, innermost first, and returns
/// how many it found. `stack_top` is one past the highest byte of this thread's stack (0 when
/// unknown, which records no frames).
#[inline(always)]
pub(crate) fn capture(out: &mut [usize], stack_top: usize) -> usize {
    let Some((frame_pointer, stack_pointer)) = registers() else {
        return 0;
    };
    // SAFETY: `[stack_pointer, stack_top)` is this thread's live stack: mapped and readable.
    unsafe { walk(frame_pointer, stack_pointer, stack_top, out) }
}

/// The frame pointer and stack pointer of the function this is inlined into.
#[inline(always)]
fn registers() -> Option<(usize, usize)> {
    #[cfg(target_arch = "x86_64")]
    {
        let (frame_pointer, stack_pointer): (usize, usize);
        // SAFETY: reads two registers; touches no memory.
        unsafe {
            core::arch::asm!(
                "mov {fp}, rbp",
                "mov {sp}, rsp",
                fp = out(reg) frame_pointer,
                sp = out(reg) stack_pointer,
                options(nomem, nostack, preserves_flags)
            );
        }
        Some((frame_pointer, stack_pointer))
    }
    #[cfg(target_arch = "aarch64")]
    {
        let (frame_pointer, stack_pointer): (usize, usize);
        // SAFETY: reads two registers; touches no memory.
        unsafe {
            core::arch::asm!(
                "mov {fp}, x29",
                "mov {sp}, sp",
                fp = out(reg) frame_pointer,
                sp = out(reg) stack_pointer,
                options(nomem, nostack, preserves_flags)
            );
        }
        Some((frame_pointer, stack_pointer))
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        None
    }
}

/// Follows frame records from `frame_pointer`: each is the caller's frame pointer followed by
/// a return address (the layout of both x86-64 and AArch64). Stops at the first record that
/// is not inside `[low, high)`, not aligned, not above the one before, or whose return address
/// is 0 (the outermost frame), and when `out` is full.
///
/// # Safety
/// `[low, high)` must be readable memory.
pub(crate) unsafe fn walk(
    mut frame_pointer: usize,
    low: usize,
    high: usize,
    out: &mut [usize],
) -> usize {
    let mut found = 0;
    while found < out.len() {
        let inside = frame_pointer >= low
            && frame_pointer.is_multiple_of(align_of::<usize>())
            && frame_pointer
                .checked_add(RECORD_BYTES)
                .is_some_and(|end| end <= high);
        if !inside {
            break;
        }
        let record = frame_pointer as *const usize;
        // SAFETY: the record lies inside `[low, high)`, which the caller vouches for, and is
        // aligned.
        let (caller, return_address) = unsafe { (record.read(), record.add(1).read()) };
        if return_address == 0 {
            break;
        }
        out[found] = return_address;
        found += 1;
        if caller <= frame_pointer {
            break;
        }
        frame_pointer = caller;
    }
    found
}

/// One past the highest byte of the calling thread's stack, or 0 when it cannot be known.
pub(crate) fn thread_stack_top() -> usize {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: `attr` is initialised by `pthread_getattr_np` before it is read, and
        // destroyed once; glibc allocates with C's malloc here, never through Rust's allocator.
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
                return 0;
            }
            let mut address: *mut libc::c_void = std::ptr::null_mut();
            let mut size: libc::size_t = 0;
            let result = libc::pthread_attr_getstack(&attr, &mut address, &mut size);
            libc::pthread_attr_destroy(&mut attr);
            if result != 0 {
                return 0;
            }
            (address as usize).saturating_add(size)
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake stack: frame `i` at word `2 * i + 2`, linked upwards, with return address
    /// `0x1000 + i`; the last record links nowhere.
    fn fake_stack(frames: usize) -> Vec<usize> {
        let mut words = vec![0usize; 2 * frames + 4];
        let base = words.as_ptr() as usize;
        for i in 0..frames {
            let at = 2 * i + 2;
            words[at] = base + (at + 2) * size_of::<usize>();
            words[at + 1] = 0x1000 + i;
        }
        words
    }

    fn walk_words(words: &[usize], start_word: usize, limit: usize) -> Vec<usize> {
        let base = words.as_ptr() as usize;
        let mut out = vec![0; limit];
        // SAFETY: the bounds are those of `words`.
        let n = unsafe {
            walk(
                base + start_word * size_of::<usize>(),
                base,
                base + size_of_val(words),
                &mut out,
            )
        };
        out.truncate(n);
        out
    }

    #[test]
    fn a_chain_is_followed_to_its_end() {
        let words = fake_stack(5);
        // The last record's link points at word 12, whose return address (word 13) is 0.
        assert_eq!(
            walk_words(&words, 2, 64),
            [0x1000, 0x1001, 0x1002, 0x1003, 0x1004]
        );
    }

    #[test]
    fn the_depth_is_capped() {
        let words = fake_stack(5);
        assert_eq!(walk_words(&words, 2, 3), [0x1000, 0x1001, 0x1002]);
    }

    #[test]
    fn a_link_outside_the_stack_or_downwards_ends_the_walk() {
        let mut words = fake_stack(5);
        words[6] = 8; // frame 2 links to an address far below the stack
        assert_eq!(walk_words(&words, 2, 64), [0x1000, 0x1001, 0x1002]);
        let mut words = fake_stack(5);
        words[6] = words.as_ptr() as usize + 2 * size_of::<usize>(); // back to frame 0
        assert_eq!(walk_words(&words, 2, 64), [0x1000, 0x1001, 0x1002]);
        let mut words = fake_stack(5);
        words[6] += 1; // misaligned
        assert_eq!(walk_words(&words, 2, 64), [0x1000, 0x1001, 0x1002]);
        let words = fake_stack(5);
        // A start pointer past the end, or whose record would cross it, records nothing.
        assert!(walk_words(&words, words.len() - 1, 64).is_empty());
        assert!(walk_words(&words, words.len() + 7, 64).is_empty());
    }

    #[test]
    fn this_threads_stack_holds_a_local() {
        let local = 0u64;
        let top = thread_stack_top();
        if cfg!(target_os = "linux") {
            let at = &local as *const u64 as usize;
            assert!(top > at, "stack top {top:#x} not above a local at {at:#x}");
        }
        let worker = std::thread::spawn(thread_stack_top).join().expect("joins");
        assert_ne!(worker, top);
    }
}
