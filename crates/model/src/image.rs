//! Columns as the vectors they are made of, so that a file can hold a graph's columns as they
//! are in memory and give them back without decoding each value (the `.hgd` format's `image`
//! chunks, docs/formats.md).
//!
//! A column type says how it lays itself out ([`ColumnImage`]: a representation's name, a few
//! numbers, its vectors by name) and how it is made again from a [`ImageSource`], checking every
//! invariant its readers rely on: the bytes come from a file, and a file may lie.

/// A value a column's vectors hold: an integer of a fixed width, every bit pattern a value.
///
/// # Safety
/// `size_of::<Self>() == WIDTH`, with no padding, and every pattern of `WIDTH` bytes is a value:
/// a vector of them may be made from any bytes (a file's pages mapped as its buffer).
pub unsafe trait Plain: Copy + Send + Sync + 'static {
    /// Bytes per value.
    const WIDTH: usize;
    /// The value of `bytes`, little-endian and `WIDTH` long.
    fn from_le(bytes: &[u8]) -> Self;
}

macro_rules! plain {
    ($($int:ty),*) => {$(
        // SAFETY: a primitive integer: its size, no padding, every bit pattern a value.
        unsafe impl Plain for $int {
            const WIDTH: usize = std::mem::size_of::<$int>();

            #[inline]
            fn from_le(bytes: &[u8]) -> Self {
                <$int>::from_le_bytes(bytes.try_into().unwrap_or_default())
            }
        }
    )*};
}

plain!(u8, u16, i16, u32, u64);

/// One vector of a column, to write, with its values' width.
#[derive(Clone, Copy, Debug)]
pub enum PartValues<'a> {
    /// Bytes.
    U8(&'a [u8]),
    /// Unsigned 16-bit values.
    U16(&'a [u16]),
    /// Signed 16-bit values.
    I16(&'a [i16]),
    /// Unsigned 32-bit values.
    U32(&'a [u32]),
    /// Unsigned 64-bit values.
    U64(&'a [u64]),
}

impl PartValues<'_> {
    /// Bytes per value.
    pub fn width(&self) -> usize {
        match self {
            PartValues::U8(_) => 1,
            PartValues::U16(_) | PartValues::I16(_) => 2,
            PartValues::U32(_) => 4,
            PartValues::U64(_) => 8,
        }
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        match self {
            PartValues::U8(values) => values.len(),
            PartValues::U16(values) => values.len(),
            PartValues::I16(values) => values.len(),
            PartValues::U32(values) => values.len(),
            PartValues::U64(values) => values.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the little-endian bytes of values `range` to `out`.
    pub fn put_le(&self, range: std::ops::Range<usize>, out: &mut Vec<u8>) {
        match self {
            PartValues::U8(values) => out.extend_from_slice(&values[range]),
            PartValues::U16(values) => put(&values[range], out, u16::to_le_bytes),
            PartValues::I16(values) => put(&values[range], out, i16::to_le_bytes),
            PartValues::U32(values) => put(&values[range], out, u32::to_le_bytes),
            PartValues::U64(values) => put(&values[range], out, u64::to_le_bytes),
        }
    }
}

impl<'a> PartValues<'a> {
    /// The values' bytes, in this process's byte order.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        match *self {
            PartValues::U8(values) => values,
            PartValues::U16(values) => as_bytes(values),
            PartValues::I16(values) => as_bytes(values),
            PartValues::U32(values) => as_bytes(values),
            PartValues::U64(values) => as_bytes(values),
        }
    }
}

/// The bytes of `values`, in this process's byte order.
pub(crate) fn as_bytes<T: Plain>(values: &[T]) -> &[u8] {
    // SAFETY: `Plain` values are `WIDTH` bytes each with no padding, so the slice's memory is
    // `len * WIDTH` initialised bytes; `u8` has no alignment to keep.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

/// The bytes of `values`, in this process's byte order, to write over.
pub(crate) fn as_bytes_mut<T: Plain>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `as_bytes`, and any bytes written over them are `T`s (`Plain`).
    unsafe {
        std::slice::from_raw_parts_mut(
            values.as_mut_ptr().cast::<u8>(),
            std::mem::size_of_val(values),
        )
    }
}

/// `n` zeros, to write over (their pages are the kernel's zeroed ones until written).
pub(crate) fn zeroed<T: Plain>(n: usize) -> Vec<T> {
    vec![T::from_le(&[0; 8][..T::WIDTH]); n]
}

fn put<T: Copy, const N: usize>(values: &[T], out: &mut Vec<u8>, le: fn(T) -> [u8; N]) {
    out.reserve(values.len() * N);
    for &value in values {
        out.extend_from_slice(&le(value));
    }
}

/// A column laid out as its vectors: what a file holds for it.
#[derive(Clone, Debug)]
pub struct ColumnImage<'a> {
    /// The representation, one of those the column's type names.
    pub repr: &'static str,
    /// Its numbers other than vectors (a length, a shift), by name.
    pub scalars: Vec<(&'static str, u64)>,
    /// Its vectors, by name.
    pub parts: Vec<(&'static str, PartValues<'a>)>,
}

/// The vectors and numbers of a column read back from a file, by name.
pub trait ImageSource {
    /// The representation the file names.
    fn repr(&self) -> &str;
    /// The number called `name`; an error when the file has none.
    fn scalar(&self, name: &str) -> Result<u64, String>;
    /// The vector called `name`, taken (a second take is an error); an error when the file has
    /// none or holds values of another width.
    fn take<T: Plain>(&mut self, name: &str) -> Result<Vec<T>, String>;
}

/// A column that a file can hold as its vectors.
pub trait Imaged: Sized {
    /// The column laid out as its vectors.
    fn image(&self) -> ColumnImage<'_>;
    /// The column made again from `source`, every invariant checked; a message saying which
    /// one fails otherwise.
    fn from_image(source: &mut impl ImageSource) -> Result<Self, String>;
}

/// The representation's name of a column of one representation.
pub const ONLY: &str = "only";

impl Imaged for Vec<u32> {
    fn image(&self) -> ColumnImage<'_> {
        ColumnImage {
            repr: ONLY,
            scalars: Vec::new(),
            parts: vec![("values", PartValues::U32(self))],
        }
    }

    fn from_image(source: &mut impl ImageSource) -> Result<Self, String> {
        expect_repr(source, &[ONLY])?;
        source.take("values")
    }
}

impl Imaged for Vec<u8> {
    fn image(&self) -> ColumnImage<'_> {
        ColumnImage {
            repr: ONLY,
            scalars: Vec::new(),
            parts: vec![("values", PartValues::U8(self))],
        }
    }

    fn from_image(source: &mut impl ImageSource) -> Result<Self, String> {
        expect_repr(source, &[ONLY])?;
        source.take("values")
    }
}

/// The number called `name` among a column's `scalars`, for an [`ImageSource`].
pub(crate) fn scalar_named<S: AsRef<str>>(scalars: &[(S, u64)], name: &str) -> Result<u64, String> {
    scalars
        .iter()
        .find(|scalar| scalar.0.as_ref() == name)
        .map(|scalar| scalar.1)
        .ok_or_else(|| format!("no number {name:?}"))
}

/// The error for a representation not among `known`.
pub fn expect_repr(source: &impl ImageSource, known: &[&str]) -> Result<(), String> {
    if known.contains(&source.repr()) {
        Ok(())
    } else {
        Err(format!(
            "the representation {:?} is not one of {known:?}",
            source.repr()
        ))
    }
}

/// Checks the places of a compact column's values kept beside: one place for each of the
/// `n_beside` values, in strictly increasing order, each that of a `marker` in `narrow`; `what`
/// names a value in the messages. That every marker has a place is the caller's count, taken
/// in the pass it already makes over `narrow`.
///
/// # Errors
/// A message naming the first place that is out of order or not marked.
pub fn check_places_beside<N: PartialEq, P: Copy + Into<u64>>(
    narrow: &[N],
    marker: &N,
    places: &[P],
    n_beside: usize,
    what: &str,
) -> Result<(), String> {
    if n_beside != places.len() {
        return Err(format!(
            "{n_beside} {what}s beside at {} places",
            places.len()
        ));
    }
    let mut previous = None;
    for &place in places {
        let at: u64 = place.into();
        if previous.is_some_and(|previous| at <= previous) {
            return Err(format!("{what} {at} is listed beside out of order"));
        }
        if usize::try_from(at).ok().and_then(|at| narrow.get(at)) != Some(marker) {
            return Err(format!("{what} {at} is listed beside but is not marked so"));
        }
        previous = Some(at);
    }
    Ok(())
}

/// An [`ImageSource`] over a column's own image, for tests: what writing the image and reading
/// it back gives.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A file that lies: what it changes, and how.
    pub(crate) type Lie = (&'static str, fn(&mut Copied));

    /// The image of a column as a source of owned vectors.
    pub(crate) struct Copied {
        repr: String,
        scalars: Vec<(String, u64)>,
        parts: Vec<(String, usize, Option<Vec<u8>>)>,
    }

    impl Copied {
        /// What a file holding `image` gives back.
        pub(crate) fn new(image: &ColumnImage<'_>) -> Copied {
            Copied {
                repr: image.repr.to_owned(),
                scalars: image
                    .scalars
                    .iter()
                    .map(|&(name, value)| (name.to_owned(), value))
                    .collect(),
                parts: image
                    .parts
                    .iter()
                    .map(|(name, values)| {
                        let mut bytes = Vec::new();
                        values.put_le(0..values.len(), &mut bytes);
                        ((*name).to_owned(), values.width(), Some(bytes))
                    })
                    .collect(),
            }
        }

        /// Replaces the number `name` (a file that lies).
        pub(crate) fn set_scalar(&mut self, name: &str, value: u64) {
            for scalar in &mut self.scalars {
                if scalar.0 == name {
                    scalar.1 = value;
                }
            }
        }

        /// Changes the bytes of the vector `name` (a file that lies).
        pub(crate) fn edit_part(&mut self, name: &str, edit: impl FnOnce(&mut Vec<u8>)) {
            if let Some((_, _, Some(bytes))) = self.parts.iter_mut().find(|part| part.0 == name) {
                edit(bytes);
            }
        }
    }

    impl ImageSource for Copied {
        fn repr(&self) -> &str {
            &self.repr
        }

        fn scalar(&self, name: &str) -> Result<u64, String> {
            scalar_named(&self.scalars, name)
        }

        fn take<T: Plain>(&mut self, name: &str) -> Result<Vec<T>, String> {
            let part = self
                .parts
                .iter_mut()
                .find(|part| part.0 == name)
                .ok_or_else(|| format!("no vector {name:?}"))?;
            if part.1 != T::WIDTH {
                return Err(format!(
                    "the vector {name:?} has values of {} bytes",
                    part.1
                ));
            }
            let bytes = part
                .2
                .take()
                .ok_or_else(|| format!("{name:?} taken twice"))?;
            if bytes.len() % T::WIDTH != 0 {
                return Err(format!("the vector {name:?} has a ragged end"));
            }
            Ok(bytes.chunks_exact(T::WIDTH).map(T::from_le).collect())
        }
    }
}
