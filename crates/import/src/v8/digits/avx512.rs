//! The units of [`super::fast_units`] read 64 bytes at a time with AVX-512 (the byte
//! permutes of VBMI and the byte compress of VBMI2), on the processors that have them.
//!
//! One load finds every digit, comma and line feed of a window; the window's units are
//! checked all at once against what the word-at-a-time path reads, and their numbers made
//! eight at a time: each number's digits gathered into a lane of their own, right-aligned,
//! then combined by three multiply-adds. A unit's end no longer waits on the one before it,
//! which is what bounds the word-at-a-time path. A window with anything else in it (a number
//! of nine digits or more, a leading zero, whitespace, a sign) is left to that path.

use super::FAST_PATH_BYTES;
use std::arch::x86_64::*;

/// Bytes in a window: one 512-bit load.
pub(super) const WINDOW: usize = 64;

/// How far ahead of a window its bytes are asked for. Where the next window starts depends on
/// this one's last comma, so the processor does not load it ahead by itself: without the
/// hint, reading the `edges` of a snapshot took three times as long, each window waiting on
/// its load (measured: 512 bytes ahead 3.1 times as fast, 1024 3.5, 2048 3.4).
const READ_AHEAD: usize = 1024;

/// This processor has what [`Windows::units`] uses: only [`Windows::detect`] makes one.
#[derive(Clone, Copy, Debug)]
pub(super) struct Windows(());

impl Windows {
    /// `Some` where the processor has AVX-512 with VBMI and VBMI2.
    pub(super) fn detect() -> Option<Windows> {
        let has = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vbmi")
            && is_x86_feature_detected!("avx512vbmi2")
            && is_x86_feature_detected!("popcnt");
        has.then_some(Windows(()))
    }

    /// See [`units`].
    pub(super) fn units(self, bytes: &[u8], at: usize, out: &mut Vec<u32>) -> usize {
        // SAFETY: a `Windows` exists only where the processor has what `units` uses.
        unsafe { units(bytes, at, out) }
    }
}

/// Reads units `number,` or `number\n,` from `bytes[at..]` (`at` the start of a unit) a
/// window at a time, for as long as whole windows and [`FAST_PATH_BYTES`] after them remain
/// and each window's units are all of one to eight digits without a leading zero; appends
/// their numbers to `out` and returns the start of the first unit not read. What it reads is
/// what [`super::fast_unit`] reads from the same place.
///
/// # Safety
/// The processor must have what [`Windows::detect`] checks.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512vbmi2,popcnt")]
unsafe fn units(bytes: &[u8], mut at: usize, out: &mut Vec<u32>) -> usize {
    let zeros = _mm512_set1_epi8(b'0' as i8);
    let nines = _mm512_set1_epi8(9);
    let commas = _mm512_set1_epi8(b',' as i8);
    let line_feeds = _mm512_set1_epi8(b'\n' as i8);
    // Each byte's own position in the window.
    let positions = _mm512_set_epi8(
        63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41,
        40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18,
        17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
    );
    // Byte k of lane j: j, so that a permute spreads the j-th byte over lane j.
    let lane_of_byte = _mm512_set_epi64(
        0x0707_0707_0707_0707,
        0x0606_0606_0606_0606,
        0x0505_0505_0505_0505,
        0x0404_0404_0404_0404,
        0x0303_0303_0303_0303,
        0x0202_0202_0202_0202,
        0x0101_0101_0101_0101,
        0,
    );
    // Byte k of each lane: k - 7, the place of a number's eight last bytes before its end.
    let before_end = _mm512_set1_epi64(0x00ff_fefd_fcfb_faf9);
    let tens = _mm512_set1_epi16(0x010a);
    let hundreds = _mm512_set1_epi32(0x0001_0064);
    let ten_thousands = _mm512_set1_epi64(10_000);
    while at + WINDOW + FAST_PATH_BYTES <= bytes.len() {
        let window = &bytes[at..at + WINDOW];
        if let Some(ahead) = bytes.get(at + READ_AHEAD) {
            _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(ahead).cast());
        }
        // SAFETY: `window` is 64 readable bytes, which an unaligned load reads.
        let text = unsafe { _mm512_loadu_si512(window.as_ptr().cast()) };
        let values = _mm512_sub_epi8(text, zeros);
        let digit = _mm512_cmple_epu8_mask(values, nines);
        let comma = _mm512_cmpeq_epi8_mask(text, commas);
        let line_feed = _mm512_cmpeq_epi8_mask(text, line_feeds);
        if comma == 0 {
            return at;
        }
        // The window's units are the bytes up to its last comma.
        let last_comma = 63 - comma.leading_zeros();
        let units = u64::MAX >> (63 - last_comma);
        let unit_starts = 1 | ((comma & !(1 << last_comma)) << 1);
        let number_starts = digit & !(digit << 1);
        let number_ends = digit & !(digit >> 1);
        let leading_zero = _mm512_cmpeq_epi8_mask(text, zeros) & number_starts & !number_ends;
        // Each unit is digits, maybe a line feed, and its comma: one run of digits starting
        // the unit, a line feed only just before a comma, nothing else.
        let well_formed = (digit | comma | line_feed) & units == units
            && line_feed & units & !(comma >> 1) == 0
            && number_starts & units == unit_starts
            && leading_zero & units == 0;
        let count = comma.count_ones() as usize;
        if !well_formed {
            return at;
        }
        let starts = _mm512_maskz_compress_epi8(number_starts & units, positions);
        let ends = _mm512_maskz_compress_epi8(number_ends & units, positions);
        // Numbers of more than eight digits are the other path's.
        let lengths_less_one = _mm512_sub_epi8(ends, starts);
        let counted = u64::MAX >> (64 - count);
        if _mm512_cmpgt_epi8_mask(lengths_less_one, _mm512_set1_epi8(7)) & counted != 0 {
            return at;
        }
        out.reserve(count + 8);
        let mut group = 0;
        while group < count {
            let spread = _mm512_add_epi8(lane_of_byte, _mm512_set1_epi8(group as i8));
            let end = _mm512_permutexvar_epi8(spread, ends);
            let start = _mm512_permutexvar_epi8(spread, starts);
            let gather = _mm512_add_epi8(end, before_end);
            let in_number = _mm512_cmpge_epi8_mask(gather, start);
            let lanes = (count - group).min(8);
            let lane_bytes = u64::MAX >> (64 - 8 * lanes);
            let digits = _mm512_maskz_permutexvar_epi8(in_number & lane_bytes, gather, values);
            let pairs = _mm512_maddubs_epi16(digits, tens);
            let quads = _mm512_madd_epi16(pairs, hundreds);
            let numbers = _mm512_add_epi64(
                _mm512_mul_epu32(quads, ten_thousands),
                _mm512_srli_epi64(quads, 32),
            );
            let numbers = _mm512_cvtepi64_epi32(numbers);
            let len = out.len();
            // SAFETY: `out` has room for `count + 8` more numbers, so for these eight past
            // its length; the first `lanes` of them are numbers read, the length set to
            // cover only those.
            unsafe {
                _mm256_storeu_si256(out.as_mut_ptr().add(len).cast(), numbers);
                out.set_len(len + lanes);
            }
            group += 8;
        }
        at += last_comma as usize + 1;
    }
    at
}
