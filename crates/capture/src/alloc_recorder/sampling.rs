//! Poisson sampling of allocations by bytes, as tcmalloc and pprof do it: points fall on the
//! stream of allocated bytes at a mean distance of `period` bytes, and an allocation is sampled
//! when a point falls inside it, which happens with probability `p = 1 - exp(-size / period)`.
//! A sampled allocation then stands for `size / p` bytes and `1 / p` allocations, so that sums
//! over many of them are unbiased estimates of the true totals.
//!
//! Each thread keeps its own countdown to the next point, so that the fast path (an allocation
//! that is not sampled) is one subtraction and one comparison.

/// Counts are kept in units of 2⁻²⁰ allocations, so that a sampled allocation's weight `1 / p`
/// keeps its fraction (and every-allocation mode adds exactly one unit per allocation).
pub(crate) const COUNT_ONE: u64 = 1 << 20;

/// What one allocation adds to its stack's counters: bytes and count units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Weight {
    pub(crate) bytes: u64,
    pub(crate) count: u64,
}

/// The weight of an allocation of `size` bytes: exact in every-allocation mode (`period` 0),
/// `size / p` and `1 / p` when sampling. A free subtracts the same function of the same size,
/// so the counters return exactly to where they were.
pub(crate) fn weight(size: usize, period: u64) -> Weight {
    if period == 0 {
        return Weight {
            bytes: size as u64,
            count: COUNT_ONE,
        };
    }
    let probability = -(-(size as f64) / period as f64).exp_m1();
    if probability >= 1.0 || probability.is_nan() {
        return Weight {
            bytes: size as u64,
            count: COUNT_ONE,
        };
    }
    // A zero-sized request has probability 0 and is never sampled; guard the division anyway.
    let probability = probability.max(f64::MIN_POSITIVE);
    Weight {
        bytes: (size as f64 / probability).round() as u64,
        count: (COUNT_ONE as f64 / probability).round() as u64,
    }
}

/// The next value of a SplitMix64 generator (Steele, Lea and Flood): one state word, no
/// allocation, good enough to draw sampling distances.
pub(crate) fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Bytes until the next sample: exponential with mean `period`, at least 1.
pub(crate) fn next_distance(state: &mut u64, period: u64) -> i64 {
    // Uniform in (0, 1]: 53 random bits, shifted off zero.
    let uniform = ((next_random(state) >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let distance = -uniform.ln() * period as f64;
    (distance.min(i64::MAX as f64) as i64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_allocation_mode_weighs_exactly() {
        assert_eq!(
            weight(1000, 0),
            Weight {
                bytes: 1000,
                count: COUNT_ONE
            }
        );
    }

    #[test]
    fn large_allocations_are_always_sampled_at_their_own_size() {
        // exp(-64) is below f64's epsilon next to 1: p rounds to 1.
        let period = 4096;
        assert_eq!(
            weight(64 * 4096, period),
            Weight {
                bytes: 64 * 4096,
                count: COUNT_ONE
            }
        );
    }

    #[test]
    fn weights_are_the_inverse_probability() {
        let period = 512 * 1024;
        let size = 100;
        let p = 1.0 - (-(size as f64) / period as f64).exp();
        let w = weight(size, period);
        assert!((w.bytes as f64 - size as f64 / p).abs() <= 1.0);
        assert!((w.count as f64 / COUNT_ONE as f64 - 1.0 / p).abs() < 1e-3);
        // Small allocations each stand for about one period of bytes.
        assert!((w.bytes as f64 - period as f64).abs() / (period as f64) < 1e-3);
    }

    #[test]
    fn distances_have_the_period_as_mean() {
        let mut state = 42;
        let period = 10_000u64;
        let n = 200_000;
        let sum: f64 = (0..n)
            .map(|_| next_distance(&mut state, period) as f64)
            .sum();
        let mean = sum / n as f64;
        // The exponential's standard deviation is its mean: the sample mean's is period/√n,
        // about 22 here; 6 of them is 0.13%.
        assert!(
            (mean - period as f64).abs() < 6.0 * period as f64 / (n as f64).sqrt(),
            "mean {mean}"
        );
    }

    /// Simulates the countdown over a stream of allocations and checks that the estimates are
    /// unbiased: the same rule as the recorder's fast path, with its own generator.
    #[test]
    fn the_countdown_gives_unbiased_estimates() {
        let period = 4096u64;
        let sizes = [16usize, 100, 512, 3000, 20_000];
        let n_each = 40_000;
        let mut state = 7;
        let mut countdown = next_distance(&mut state, period);
        let mut estimated = [(0u64, 0u64); 5];
        for _ in 0..n_each {
            for (which, &size) in sizes.iter().enumerate() {
                countdown -= size as i64;
                if countdown <= 0 {
                    countdown = next_distance(&mut state, period);
                    let w = weight(size, period);
                    estimated[which].0 += w.bytes;
                    estimated[which].1 += w.count;
                }
            }
        }
        for (which, &size) in sizes.iter().enumerate() {
            let p = -(-(size as f64) / period as f64).exp_m1();
            let true_bytes = (size * n_each) as f64;
            // Standard deviation of the estimate: size * sqrt(n (1-p) / p).
            let sigma = size as f64 * ((n_each as f64) * (1.0 - p) / p).sqrt();
            let bytes = estimated[which].0 as f64;
            assert!(
                (bytes - true_bytes).abs() <= 6.0 * sigma + 1.0,
                "size {size}: {bytes} against {true_bytes} (sigma {sigma})"
            );
            let count = estimated[which].1 as f64 / COUNT_ONE as f64;
            assert!(
                (count - n_each as f64).abs() <= 6.0 * sigma / size as f64 + 1.0,
                "size {size}: count {count}"
            );
        }
    }
}
