//! A program that allocates many blocks of known sizes at known lines under the recorder's
//! sampling mode, and prints how many it made and kept where: the oracle of the end-to-end test
//! of sampling, which checks each line's estimate against the truth within a bound it computes
//! from these counts and sizes.
//!
//! `alloc_sampled_demo DIR` writes `DIR/sampled.hgd` and prints, as JSON, the sampling period
//! and per accounted line the block size, the blocks live and the bytes live. Build it with
//! `RUSTFLAGS="-C force-frame-pointers=yes"`.

#![allow(
    clippy::print_stdout,
    reason = "its JSON account on stdout is what the end-to-end test reads"
)]

use std::fmt::Write as _;

/// Mean bytes between samples: small, so that a test of a few hundred megabytes has thousands
/// of samples per line and a tight bound.
const PERIOD: u64 = 4096;

#[global_allocator]
static ALLOC: heapgraph_capture::Recorder = heapgraph_capture::Recorder::sampling(PERIOD);

/// One accounted line: block size, blocks live.
struct Line {
    line: u32,
    size: usize,
    live: usize,
}

/// Makes `n` blocks of `size` bytes at one line and keeps them.
#[inline(never)]
fn vecs(n: usize, size: usize, lines: &mut Vec<Line>) -> Vec<Vec<u8>> {
    let mut kept = Vec::with_capacity(n);
    let mut line = 0;
    for _ in 0..n {
        let (block, here) = (Vec::<u8>::with_capacity(size), line!());
        line = here;
        kept.push(std::hint::black_box(block));
    }
    lines.push(Line {
        line,
        size,
        live: n,
    });
    kept
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: alloc_sampled_demo DIR")?,
    );
    let mut lines: Vec<Line> = Vec::with_capacity(16);

    // Small blocks: each sampled one stands for about a period of bytes.
    let mut small: Vec<Box<[u8; 24]>> = Vec::with_capacity(400_000);
    let mut small_line = 0;
    for i in 0..400_000 {
        let (block, line) = (Box::new([i as u8; 24]), line!());
        small_line = line;
        small.push(block);
    }
    lines.push(Line {
        line: small_line,
        size: 24,
        live: 400_000,
    });
    let medium = vecs(100_000, 512, &mut lines);
    let large = {
        let mut kept = Vec::with_capacity(20_000);
        let mut line = 0;
        for _ in 0..20_000 {
            let (block, here) = (Vec::<u8>::with_capacity(3000), line!());
            line = here;
            kept.push(std::hint::black_box(block));
        }
        lines.push(Line {
            line,
            size: 3000,
            live: 20_000,
        });
        kept
    };
    // Blocks far above the period are always sampled, at their own size.
    let huge = {
        let mut kept = Vec::with_capacity(200);
        let mut line = 0;
        for _ in 0..200 {
            let (block, here) = (Vec::<u8>::with_capacity(1 << 20), line!());
            line = here;
            kept.push(std::hint::black_box(block));
        }
        lines.push(Line {
            line,
            size: 1 << 20,
            live: 200,
        });
        kept
    };
    // Grown by pushes: each growth is a realloc, sampled afresh at its new size, and the
    // block belongs to the line that grew it last.
    let grown = {
        let mut kept: Vec<Vec<u8>> = Vec::with_capacity(20_000);
        let mut line = 0;
        for _ in 0..20_000 {
            let mut block = Vec::new();
            for byte in 0..1000u32 {
                let ((), here) = (block.push(byte as u8), line!());
                line = here;
            }
            kept.push(block);
        }
        let size = kept[0].capacity();
        assert!(kept.iter().all(|block| block.capacity() == size));
        lines.push(Line {
            line,
            size,
            live: 20_000,
        });
        kept
    };
    // Freed again before the snapshot: a sampled block's weight goes exactly as it came.
    let mut freed_line = 0;
    for _ in 0..100_000 {
        let (block, line) = (Vec::<u8>::with_capacity(512), line!());
        freed_line = line;
        drop(std::hint::black_box(block));
    }
    lines.push(Line {
        line: freed_line,
        size: 512,
        live: 0,
    });
    // Four threads, each with its own countdown.
    let workers: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(|| {
                let mut kept = Vec::with_capacity(25_000);
                let mut line = 0;
                for _ in 0..25_000 {
                    let (block, here) = (Vec::<u8>::with_capacity(1000), line!());
                    line = here;
                    kept.push(std::hint::black_box(block));
                }
                (kept, line)
            })
        })
        .collect();
    let mut threaded = Vec::with_capacity(4);
    for worker in workers {
        let (kept, line) = worker.join().map_err(|_| "a worker panicked")?;
        if threaded.is_empty() {
            lines.push(Line {
                line,
                size: 1000,
                live: 100_000,
            });
        }
        threaded.push(kept);
    }

    let info = heapgraph_capture::snapshot(dir.join("sampled.hgd"))?;
    let mut out = format!(
        "{{\"file\": {:?}, \"period\": {PERIOD}, \"estimated_bytes\": {}, \"lines\": [",
        file!(),
        info.bytes
    );
    for (i, line) in lines.iter().enumerate() {
        let comma = if i == 0 { "" } else { ", " };
        write!(
            out,
            "{comma}{{\"line\": {}, \"size\": {}, \"count\": {}, \"bytes\": {}}}",
            line.line,
            line.size,
            line.live,
            line.size * line.live
        )?;
    }
    out.push_str("]}");
    println!("{out}");
    drop((small, medium, large, huge, grown, threaded));
    Ok(())
}
