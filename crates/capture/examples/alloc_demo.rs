//! A program that allocates known amounts at known lines, under the allocation recorder, and
//! prints its own exact account of what is live where: the oracle of the end-to-end tests.
//!
//! `alloc_demo DIR` writes `DIR/before.hgd` and `DIR/after.hgd` and prints, as JSON, the bytes
//! and allocations live at each accounted line of this file at each snapshot. Every accounted
//! line makes exactly one allocation per pass (a `line!()` beside the call names it). It
//! covers `Vec`s and `Box`es kept and freed, `alloc_zeroed`, a `realloc` (the block moves to
//! the resizing line), alignments of 64 and 4096, eight threads returning what they made, and
//! sixteen threads that allocate, resize and free at random, whose blocks another thread frees.
//! Build it with `RUSTFLAGS="-C force-frame-pointers=yes"`.

#![allow(
    clippy::print_stdout,
    reason = "its JSON account on stdout is what the end-to-end tests read"
)]

use std::alloc::{Layout, alloc, alloc_zeroed, dealloc, realloc};
use std::fmt::Write as _;

#[global_allocator]
static ALLOC: heapgraph_capture::Recorder = heapgraph_capture::Recorder::new();

/// Live bytes and allocations per line, without allocating (the account must not disturb
/// what it counts).
#[derive(Clone, Copy)]
struct Account {
    lines: [(u32, u64, u64); 32],
    used: usize,
}

impl Account {
    const fn new() -> Account {
        Account {
            lines: [(0, 0, 0); 32],
            used: 0,
        }
    }

    fn slot(&mut self, line: u32) -> &mut (u32, u64, u64) {
        let at = match self.lines[..self.used].iter().position(|e| e.0 == line) {
            Some(at) => at,
            None => {
                self.lines[self.used] = (line, 0, 0);
                self.used += 1;
                self.used - 1
            }
        };
        &mut self.lines[at]
    }

    fn add(&mut self, line: u32, bytes: usize) {
        let slot = self.slot(line);
        slot.1 += bytes as u64;
        slot.2 += 1;
    }

    fn remove(&mut self, line: u32, bytes: usize) {
        let slot = self.slot(line);
        slot.1 -= bytes as u64;
        slot.2 -= 1;
    }

    fn merge(&mut self, other: &Account) {
        for &(line, bytes, count) in &other.lines[..other.used] {
            let slot = self.slot(line);
            slot.1 += bytes;
            slot.2 += count;
        }
    }

    fn json(&self) -> String {
        let mut out = String::from("[");
        for (i, &(line, bytes, count)) in self.lines[..self.used].iter().enumerate() {
            let comma = if i == 0 { "" } else { ", " };
            write!(
                out,
                "{comma}{{\"line\": {line}, \"bytes\": {bytes}, \"count\": {count}}}"
            )
            .expect("a string");
        }
        out.push(']');
        out
    }
}

/// A raw block the stress threads keep: where it is, its size, and the line that made it.
#[derive(Clone, Copy)]
struct Raw {
    address: usize,
    size: usize,
    line: u32,
}

/// SplitMix64, so every run makes the same choices.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const RAW_ALIGN: usize = 8;

/// One stress thread: 20,000 random allocations, resizes and frees of raw blocks; returns what
/// it kept and its account of it.
#[inline(never)]
fn stress(seed: u64) -> (Vec<Raw>, Account) {
    let mut account = Account::new();
    let mut kept: Vec<Raw> = Vec::with_capacity(20_000);
    let mut state = seed;
    for _ in 0..20_000 {
        let choice = next(&mut state) % 10;
        let size = 1 + (next(&mut state) % 3000) as usize;
        if choice < 6 || kept.is_empty() {
            let layout = Layout::from_size_align(size, RAW_ALIGN).expect("a layout");
            // SAFETY: a non-zero size.
            let (address, line) = (unsafe { alloc(layout) }, line!());
            let address = std::hint::black_box(address);
            assert!(!address.is_null());
            account.add(line, size);
            kept.push(Raw {
                address: address as usize,
                size,
                line,
            });
        } else {
            let at = (next(&mut state) % kept.len() as u64) as usize;
            let block = kept[at];
            let layout = Layout::from_size_align(block.size, RAW_ALIGN).expect("a layout");
            account.remove(block.line, block.size);
            if choice < 8 {
                // SAFETY: a block of this layout, from `alloc` or `realloc` above.
                let old = block.address as *mut u8;
                let (address, line) = (unsafe { realloc(old, layout, size) }, line!());
                let address = std::hint::black_box(address);
                assert!(!address.is_null());
                account.add(line, size);
                kept[at] = Raw {
                    address: address as usize,
                    size,
                    line,
                };
            } else {
                // SAFETY: as above.
                unsafe { dealloc(block.address as *mut u8, layout) };
                kept.swap_remove(at);
            }
        }
    }
    (kept, account)
}

/// Eight threads each make 25 blocks of 2 KiB and hand them back.
#[inline(never)]
fn threads_make_blocks() -> (Vec<Vec<u8>>, Account) {
    let handles: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(|| {
                let mut account = Account::new();
                let mut blocks = Vec::with_capacity(25);
                for _ in 0..25 {
                    let (block, line) = (Vec::<u8>::with_capacity(2048), line!());
                    account.add(line, 2048);
                    blocks.push(block);
                }
                (blocks, account)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(200);
    let mut account = Account::new();
    for handle in handles {
        let (blocks, theirs) = handle.join().expect("a worker");
        all.extend(blocks);
        account.merge(&theirs);
    }
    (all, account)
}

/// A block whose alignment (64) is above what `malloc` gives.
#[repr(align(64))]
struct CacheLine([u8; 192]);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).ok_or("usage: alloc_demo DIR")?);
    let mut account = Account::new();

    let mut vecs: Vec<Vec<u8>> = Vec::with_capacity(100);
    let mut vec_line = 0;
    for _ in 0..100 {
        let (v, line) = (Vec::<u8>::with_capacity(1000), line!());
        account.add(line, 1000);
        vec_line = line;
        vecs.push(v);
    }
    let mut boxes: Vec<Box<[u64; 64]>> = Vec::with_capacity(50);
    let mut box_line = 0;
    for i in 0..50 {
        let (b, line) = (Box::new([i as u64; 64]), line!());
        account.add(line, 512);
        box_line = line;
        boxes.push(b);
    }
    for _ in 0..200 {
        let (v, line) = (Vec::<u8>::with_capacity(300), line!());
        account.add(line, 300);
        drop(v);
        account.remove(line, 300);
    }
    let (blocks, theirs) = threads_make_blocks();
    account.merge(&theirs);

    let small = Layout::from_size_align(100, 8)?;
    // SAFETY: a non-zero size.
    let (grown, line) = (unsafe { alloc(small) }, line!());
    account.add(line, 100);
    account.remove(line, 100);
    // SAFETY: a block of layout `small`.
    let (grown, line) = (unsafe { realloc(grown, small, 5000) }, line!());
    account.add(line, 5000);
    let page = Layout::from_size_align(8192, 4096)?;
    // SAFETY: a non-zero size.
    let (paged, line) = (unsafe { alloc(page) }, line!());
    account.add(line, 8192);
    assert!(!grown.is_null() && !paged.is_null() && (paged as usize).is_multiple_of(4096));
    // Blocks whose bytes are never touched may be optimised away with their allocation.
    let (grown, paged) = std::hint::black_box((grown, paged));
    let (aligned, line) = (Box::new(CacheLine([7; 192])), line!());
    account.add(line, 192);
    assert!((&*aligned as *const CacheLine as usize).is_multiple_of(64));
    assert_eq!(aligned.0[191], 7);
    let (zeroed, line) = (vec![0u8; 7000], line!());
    account.add(line, 7000);
    let zeroed_raw = Layout::from_size_align(3000, 16)?;
    // SAFETY: a non-zero size.
    let (zeroed_block, line) = (unsafe { alloc_zeroed(zeroed_raw) }, line!());
    account.add(line, 3000);
    let zeroed_block = std::hint::black_box(zeroed_block);

    let stress_threads: Vec<_> = (0..16u64)
        .map(|seed| std::thread::spawn(move || stress(seed)))
        .collect();
    let mut stressed: Vec<Raw> = Vec::with_capacity(16 * 20_000);
    for handle in stress_threads {
        let (kept, theirs) = handle.join().expect("a stress thread");
        stressed.extend(kept);
        account.merge(&theirs);
    }

    let before_info = heapgraph_capture::snapshot(dir.join("before.hgd"))?;
    let before = account;

    // Between the snapshots: half the Vecs and every Box go, new blocks come, and the main
    // thread frees every other block the stress threads made.
    for v in vecs.drain(..50) {
        account.remove(vec_line, v.capacity());
    }
    drop(boxes);
    for _ in 0..50 {
        account.remove(box_line, 512);
    }
    let mut later: Vec<Vec<u8>> = Vec::with_capacity(30);
    for _ in 0..30 {
        let (v, line) = (Vec::<u8>::with_capacity(4096), line!());
        account.add(line, 4096);
        later.push(v);
    }
    let mut index = 0;
    stressed.retain(|block| {
        index += 1;
        if index % 2 == 0 {
            return true;
        }
        account.remove(block.line, block.size);
        let layout = Layout::from_size_align(block.size, RAW_ALIGN).expect("a layout");
        // SAFETY: a block of this layout made by a stress thread.
        unsafe { dealloc(block.address as *mut u8, layout) };
        false
    });
    let after_info = heapgraph_capture::snapshot(dir.join("after.hgd"))?;

    println!(
        "{{\"file\": {:?}, \"before\": {}, \"after\": {}, \"before_bytes\": {}, \"after_bytes\": {}}}",
        file!(),
        before.json(),
        account.json(),
        before_info.bytes,
        after_info.bytes
    );
    // Keep everything alive until both snapshots are written.
    drop((vecs, blocks, aligned, zeroed, later, stressed));
    // SAFETY: the blocks and layouts made above.
    unsafe {
        dealloc(grown, Layout::from_size_align(5000, 8)?);
        dealloc(paged, page);
        dealloc(zeroed_block, zeroed_raw);
    }
    Ok(())
}
