//! Columns of little-endian integers: a slice of `u8`/`u16`/`u32`/`u64` to a `bin` blob and
//! back, in bulk, without a step per element that allocates.

use crate::error::ColumnError;

mod sealed {
    pub trait Sealed {}
}

/// An integer type that `.hgd` columns hold, stored as little-endian bytes.
///
/// Implemented for `u8`, `u16`, `u32` and `u64`; sealed.
pub trait LeInt: Copy + sealed::Sealed {
    /// Bytes per value.
    const WIDTH: usize;

    /// Appends the values of `blob` (whose length is a multiple of [`Self::WIDTH`]; any
    /// remainder is ignored) to `out`.
    #[doc(hidden)]
    fn extend_from_le(out: &mut Vec<Self>, blob: &[u8]);

    /// Appends the little-endian bytes of `values` to `out`.
    #[doc(hidden)]
    fn extend_le(out: &mut Vec<u8>, values: &[Self]);
}

macro_rules! le_int {
    ($($int:ty),*) => {$(
        impl sealed::Sealed for $int {}

        impl LeInt for $int {
            const WIDTH: usize = size_of::<$int>();

            fn extend_from_le(out: &mut Vec<Self>, blob: &[u8]) {
                let (values, _) = blob.as_chunks::<{ size_of::<$int>() }>();
                out.extend(values.iter().map(|bytes| <$int>::from_le_bytes(*bytes)));
            }

            fn extend_le(out: &mut Vec<u8>, values: &[Self]) {
                let start = out.len();
                out.resize(start + values.len() * Self::WIDTH, 0);
                let (slots, _) = out[start..].as_chunks_mut::<{ size_of::<$int>() }>();
                for (slot, value) in slots.iter_mut().zip(values) {
                    *slot = value.to_le_bytes();
                }
            }
        }
    )*};
}

le_int!(u8, u16, u32, u64);

/// The number of `T` values that `blob` holds.
///
/// # Errors
/// [`ColumnError`] when the blob's length is not a multiple of `T`'s width.
pub fn column_len<T: LeInt>(blob: &[u8]) -> Result<usize, ColumnError> {
    if blob.len().is_multiple_of(T::WIDTH) {
        Ok(blob.len() / T::WIDTH)
    } else {
        Err(ColumnError {
            width: T::WIDTH,
            len: blob.len(),
        })
    }
}

/// Appends the little-endian bytes of `values` to `out` (one resize, then a straight copy).
pub fn encode_column<T: LeInt>(values: &[T], out: &mut Vec<u8>) {
    T::extend_le(out, values);
}

/// Appends the values of the little-endian `blob` to `out` and returns how many it appended.
///
/// # Errors
/// [`ColumnError`] when the blob's length is not a multiple of `T`'s width; `out` is then
/// unchanged.
pub fn decode_column<T: LeInt>(blob: &[u8], out: &mut Vec<T>) -> Result<usize, ColumnError> {
    let n_values = column_len::<T>(blob)?;
    T::extend_from_le(out, blob);
    Ok(n_values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_round_trip_and_are_little_endian() {
        let mut blob = Vec::new();
        encode_column(&[1u32, 0x0102_0304], &mut blob);
        assert_eq!(blob, [1, 0, 0, 0, 4, 3, 2, 1]);
        let mut back = vec![7u32];
        assert_eq!(decode_column(&blob, &mut back), Ok(2));
        assert_eq!(back, [7, 1, 0x0102_0304]);

        let wide = [u64::MAX, 0, 42];
        let mut blob = Vec::new();
        encode_column(&wide, &mut blob);
        let mut back = Vec::new();
        assert_eq!(decode_column::<u64>(&blob, &mut back), Ok(3));
        assert_eq!(back, wide);
    }

    #[test]
    fn a_ragged_blob_is_an_error() {
        let mut out: Vec<u32> = Vec::new();
        assert_eq!(
            decode_column::<u32>(&[1, 2, 3], &mut out),
            Err(ColumnError { width: 4, len: 3 })
        );
        assert!(out.is_empty());
        assert_eq!(column_len::<u16>(&[0; 6]), Ok(3));
    }
}
