//! Edge names in two bytes while they fit, four otherwise.

use super::ChainExact;
use crate::first_in_stretches;
use crate::image::{
    ColumnImage, ImageSource, Imaged, PartValues, check_places_beside, expect_repr,
};

/// Edge names (a [`StringId`](crate::StringId)'s raw value, or an index): two bytes per edge while most
/// fit in 16 bits (Java's field names, the indices of all but huge arrays, the property names
/// early in a V8 snapshot's string table), the rest beside at four bytes each; four bytes per
/// edge otherwise. The column turns plain by itself once too many names are beside, unless it
/// was made [`EdgeNames::kept_narrow`] (a part of a larger column, whose own share of wide
/// names says little about the whole's; [`EdgeNames::settle`] decides then).
#[derive(Clone, Debug)]
pub struct EdgeNames(NamesOfEdges, Widening);

/// Whether an [`EdgeNames`] may turn plain as names arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Widening {
    Automatic,
    OnSettle,
}

/// Invariants: in `Narrow`, `narrow[e] == u16::MAX` exactly when the name of edge `e` is beside;
/// `wide` holds those names in edge order, and `beside_before` the number of them before each
/// block of [`BLOCK`] edges (one per block begun), so that a name beside is found by counting
/// the markers before it in its block: a few bytes a block rather than a place per name.
#[derive(Clone, Debug)]
enum NamesOfEdges {
    Narrow {
        narrow: Vec<u16>,
        beside_before: Vec<u64>,
        wide: Vec<u32>,
    },
    Wide(Vec<u32>),
}

/// The edges of a block of `beside_before`: a lookup counts the markers of at most this many
/// names (a kilobyte, vectorized), and the counts take 8 bytes per 512 edges.
const BLOCK: usize = 512;

/// How many names of `narrow` are beside.
fn markers(narrow: &[u16]) -> usize {
    narrow.iter().filter(|&&short| short == u16::MAX).count()
}

/// Counts the names beside before each block of `narrow` that `beside_before` has no count
/// for yet (the counts of blocks begun stay true as names are appended).
fn count_blocks(narrow: &[u16], beside_before: &mut Vec<u64>) {
    let n_blocks = narrow.len().div_ceil(BLOCK);
    while beside_before.len() < n_blocks {
        let before = match beside_before.len() {
            0 => 0,
            block => {
                let start = (block - 1) * BLOCK;
                beside_before[block - 1] + markers(&narrow[start..start + BLOCK]) as u64
            }
        };
        beside_before.push(before);
    }
}

/// Where in `wide` the name of edge `edge` is, or would go: the names beside before it.
#[inline]
fn rank_beside(narrow: &[u16], beside_before: &[u64], edge: usize) -> usize {
    let start = edge - edge % BLOCK;
    beside_before[edge / BLOCK] as usize + markers(&narrow[start..edge])
}

impl Default for EdgeNames {
    fn default() -> Self {
        EdgeNames::new()
    }
}

/// Whether an [`EdgeNames`] with `n_beside` of `n_edges` names beside should turn plain: past
/// one in 4 (at 4 bytes each, one in 2 would cost the 2 bytes saved per edge).
fn too_many_beside(n_beside: usize, n_edges: usize) -> bool {
    n_beside > 4096 && n_beside > n_edges / 4
}

impl EdgeNames {
    /// An empty column (16-bit until shown otherwise).
    pub fn new() -> Self {
        EdgeNames::with_capacity(0)
    }

    /// An empty column with room for `n` names.
    pub fn with_capacity(n: usize) -> Self {
        EdgeNames(
            NamesOfEdges::Narrow {
                narrow: Vec::with_capacity(n),
                beside_before: Vec::new(),
                wide: Vec::new(),
            },
            Widening::Automatic,
        )
    }

    /// An empty column with room for `n` names that stays 16-bit until [`EdgeNames::settle`],
    /// for the parts of a column built in pieces and joined with [`EdgeNames::extend_from`].
    pub fn kept_narrow(n: usize) -> Self {
        let mut column = EdgeNames::with_capacity(n);
        column.1 = Widening::OnSettle;
        column
    }

    /// Turns the column plain if too many of its names are beside, and lets it do so by itself
    /// from now on.
    pub fn settle(&mut self) {
        self.1 = Widening::Automatic;
        if let NamesOfEdges::Narrow { narrow, wide, .. } = &self.0
            && too_many_beside(wide.len(), narrow.len())
        {
            self.widen();
        }
    }

    /// Whether the names are stored in 16 bits (with a few beside).
    pub fn is_narrow(&self) -> bool {
        matches!(self.0, NamesOfEdges::Narrow { .. })
    }

    /// Appends `name`.
    pub fn push(&mut self, name: u32) {
        let crowded = match &mut self.0 {
            NamesOfEdges::Narrow {
                narrow,
                beside_before,
                wide,
            } => {
                if narrow.len().is_multiple_of(BLOCK) {
                    beside_before.push(wide.len() as u64);
                }
                match u16::try_from(name) {
                    Ok(short) if short != u16::MAX => {
                        narrow.push(short);
                        false
                    }
                    _ => {
                        wide.push(name);
                        narrow.push(u16::MAX);
                        self.1 == Widening::Automatic && too_many_beside(wide.len(), narrow.len())
                    }
                }
            }
            NamesOfEdges::Wide(names) => {
                names.push(name);
                false
            }
        };
        if crowded {
            self.widen();
        }
    }

    /// Turns the column plain.
    fn widen(&mut self) {
        let NamesOfEdges::Narrow { narrow, .. } = &self.0 else {
            return;
        };
        let mut plain = Vec::with_capacity(narrow.capacity());
        plain.extend(self.iter());
        self.0 = NamesOfEdges::Wide(plain);
        self.1 = Widening::Automatic;
    }

    /// Room for names before the column grows.
    pub fn capacity(&self) -> usize {
        match &self.0 {
            NamesOfEdges::Narrow { narrow, .. } => narrow.capacity(),
            NamesOfEdges::Wide(names) => names.capacity(),
        }
    }

    /// Reserves room for `additional` more names.
    pub fn reserve_exact(&mut self, additional: usize) {
        match &mut self.0 {
            NamesOfEdges::Narrow { narrow, .. } => narrow.reserve_exact(additional),
            NamesOfEdges::Wide(names) => names.reserve_exact(additional),
        }
    }

    /// The number of names.
    pub fn len(&self) -> usize {
        match &self.0 {
            NamesOfEdges::Narrow { narrow, .. } => narrow.len(),
            NamesOfEdges::Wide(names) => names.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name of edge `edge`.
    ///
    /// Panics if `edge` is out of range.
    #[inline]
    pub fn get(&self, edge: usize) -> u32 {
        match &self.0 {
            NamesOfEdges::Narrow {
                narrow,
                beside_before,
                wide,
            } => match narrow[edge] {
                u16::MAX => wide[rank_beside(narrow, beside_before, edge)],
                short => u32::from(short),
            },
            NamesOfEdges::Wide(names) => names[edge],
        }
    }

    /// Replaces the name of edge `edge`.
    ///
    /// Panics if `edge` is out of range.
    pub fn set(&mut self, edge: usize, name: u32) {
        match &mut self.0 {
            NamesOfEdges::Narrow {
                narrow,
                beside_before,
                wide,
            } => {
                let at = rank_beside(narrow, beside_before, edge);
                let was_beside = narrow[edge] == u16::MAX;
                let short = u16::try_from(name).ok().filter(|&short| short != u16::MAX);
                let later_blocks = &mut beside_before[edge / BLOCK + 1..];
                match (was_beside, short) {
                    (true, None) => wide[at] = name,
                    (true, Some(short)) => {
                        wide.remove(at);
                        narrow[edge] = short;
                        later_blocks.iter_mut().for_each(|before| *before -= 1);
                    }
                    (false, None) => {
                        wide.insert(at, name);
                        narrow[edge] = u16::MAX;
                        later_blocks.iter_mut().for_each(|before| *before += 1);
                    }
                    (false, Some(short)) => narrow[edge] = short,
                }
            }
            NamesOfEdges::Wide(names) => names[edge] = name,
        }
    }

    /// The first edge whose name is `limit` or more, of those `is_name` says hold a name
    /// rather than an index. A stretch of edges whose names are all below `limit` is passed
    /// over in one comparison of its largest (which the compiler vectorizes), without asking:
    /// checking a dump's names costs a read of the column, not a call per edge.
    pub fn first_at_or_past(&self, limit: u32, is_name: impl Fn(usize) -> bool) -> Option<usize> {
        match &self.0 {
            NamesOfEdges::Narrow {
                narrow,
                beside_before,
                wide,
            } => {
                // A marker (`u16::MAX`) is never a name itself: the name is beside.
                let in_narrow = u16::try_from(limit).ok().and_then(|below| {
                    first_in_stretches(
                        narrow,
                        |name| name,
                        below,
                        |edge, name| name != u16::MAX && name >= below && is_name(edge),
                    )
                });
                // A block's markers are placed only where a name of its beside is past the
                // limit.
                let beside = (0..beside_before.len()).find_map(|block| {
                    let first = beside_before[block] as usize;
                    let end = beside_before
                        .get(block + 1)
                        .map_or(wide.len(), |&before| before as usize);
                    let names = &wide[first..end];
                    if names.iter().all(|&name| name < limit) {
                        return None;
                    }
                    let start = block * BLOCK;
                    let edges = start..narrow.len().min(start + BLOCK);
                    edges
                        .filter(|&edge| narrow[edge] == u16::MAX)
                        .zip(names)
                        .find(|&(edge, &name)| name >= limit && is_name(edge))
                        .map(|(edge, _)| edge)
                });
                in_narrow.into_iter().chain(beside).min()
            }
            NamesOfEdges::Wide(names) => first_in_stretches(
                names,
                |name| name,
                limit,
                |edge, name| name >= limit && is_name(edge),
            ),
        }
    }

    /// The names in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        let (narrow, wide, plain): (&[u16], &[u32], &[u32]) = match &self.0 {
            NamesOfEdges::Narrow { narrow, wide, .. } => (narrow, wide, &[]),
            NamesOfEdges::Wide(names) => (&[], &[], names),
        };
        let mut beside = wide.iter();
        let narrow = narrow.iter().map(move |&short| match short {
            // One name beside per marker, in order.
            u16::MAX => beside.next().copied().unwrap_or(0),
            short => u32::from(short),
        });
        // One of the two is empty.
        ChainExact(narrow, plain.iter().copied())
    }

    /// The names as a plain vector.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }

    /// Appends every name of `other`.
    pub fn extend_from(&mut self, other: &EdgeNames) {
        if let (
            NamesOfEdges::Narrow {
                narrow,
                beside_before,
                wide,
            },
            NamesOfEdges::Narrow {
                narrow: other_narrow,
                wide: other_wide,
                ..
            },
        ) = (&mut self.0, &other.0)
        {
            narrow.extend_from_slice(other_narrow);
            wide.extend_from_slice(other_wide);
            if other_wide.is_empty() {
                // Nothing beside in `other` (a Java dump's part, mostly): each block begun in
                // it has every name beside before it.
                beside_before.resize(narrow.len().div_ceil(BLOCK), wide.len() as u64);
            } else {
                count_blocks(narrow, beside_before);
            }
            if self.1 == Widening::Automatic && too_many_beside(wide.len(), narrow.len()) {
                self.widen();
            }
            return;
        }
        self.widen();
        if let NamesOfEdges::Wide(names) = &mut self.0 {
            names.extend(other.iter());
        }
    }
}

impl Extend<u32> for EdgeNames {
    /// Appends `names` in one loop (a parse appends tens of millions, a batch at a time), and
    /// turns plain at the end if too many are beside and the column may do so by itself.
    fn extend<I: IntoIterator<Item = u32>>(&mut self, names: I) {
        let NamesOfEdges::Narrow {
            narrow,
            beside_before,
            wide,
        } = &mut self.0
        else {
            if let NamesOfEdges::Wide(plain) = &mut self.0 {
                plain.extend(names);
            }
            return;
        };
        for name in names {
            match u16::try_from(name) {
                Ok(short) if short != u16::MAX => narrow.push(short),
                _ => {
                    wide.push(name);
                    narrow.push(u16::MAX);
                }
            }
        }
        count_blocks(narrow, beside_before);
        if self.1 == Widening::Automatic && too_many_beside(wide.len(), narrow.len()) {
            self.widen();
        }
    }
}

impl From<Vec<u32>> for EdgeNames {
    fn from(names: Vec<u32>) -> Self {
        let n_beside = names
            .iter()
            .filter(|&&name| name >= u32::from(u16::MAX))
            .count();
        if too_many_beside(n_beside, names.len()) {
            return EdgeNames(NamesOfEdges::Wide(names), Widening::Automatic);
        }
        // A loop per column rather than a push per name (the parse of a V8 snapshot converts
        // tens of millions); whether to stay narrow is decided on all the names at once.
        let narrow: Vec<u16> = names
            .iter()
            .map(|&name| u16::try_from(name).unwrap_or(u16::MAX))
            .collect();
        let mut wide = Vec::with_capacity(n_beside);
        if n_beside > 0 {
            wide.extend(names.iter().filter(|&&name| name >= u32::from(u16::MAX)));
        }
        let mut beside_before = Vec::new();
        count_blocks(&narrow, &mut beside_before);
        EdgeNames(
            NamesOfEdges::Narrow {
                narrow,
                beside_before,
                wide,
            },
            Widening::Automatic,
        )
    }
}

/// The representations' names in an image: names beside in order (`MARKED`), or each with
/// its place (`PLACED`, as files written before the blocks' counts hold them; read only).
const MARKED: &str = "marked";
const PLACED: &str = "narrow";
const PLAIN: &str = "plain";

impl Imaged for EdgeNames {
    fn image(&self) -> ColumnImage<'_> {
        match &self.0 {
            // The blocks' counts are found again as the markers are checked on reading.
            NamesOfEdges::Narrow { narrow, wide, .. } => ColumnImage {
                repr: MARKED,
                // A column kept narrow stays so once read back, until it is settled.
                scalars: vec![("kept_narrow", u64::from(self.1 == Widening::OnSettle))],
                parts: vec![
                    ("narrow", PartValues::U16(narrow)),
                    ("wide", PartValues::U32(wide)),
                ],
            },
            // Widening turns automatic with the column plain.
            NamesOfEdges::Wide(names) => ColumnImage {
                repr: PLAIN,
                scalars: Vec::new(),
                parts: vec![("names", PartValues::U32(names))],
            },
        }
    }

    fn from_image(source: &mut impl ImageSource) -> Result<Self, String> {
        expect_repr(source, &[MARKED, PLACED, PLAIN])?;
        if source.repr() == PLAIN {
            return Ok(EdgeNames(
                NamesOfEdges::Wide(source.take("names")?),
                Widening::Automatic,
            ));
        }
        let widening = match source.scalar("kept_narrow")? {
            0 => Widening::Automatic,
            1 => Widening::OnSettle,
            other => return Err(format!("kept narrow is {other}, neither 0 nor 1")),
        };
        let narrow: Vec<u16> = source.take("narrow")?;
        let wide_at: Option<Vec<u64>> = match source.repr() {
            PLACED => Some(source.take("wide_at")?),
            _ => None,
        };
        let wide: Vec<u32> = source.take("wide")?;
        if let Some(wide_at) = wide_at {
            check_places_beside(&narrow, &u16::MAX, &wide_at, wide.len(), "edge name")?;
        }
        let mut beside_before = Vec::new();
        count_blocks(&narrow, &mut beside_before);
        let last_block = narrow.len() - narrow.len() % BLOCK;
        let n_marked = beside_before.get(last_block / BLOCK).map_or(0, |&before| {
            before as usize + markers(&narrow[last_block..])
        });
        if n_marked != wide.len() {
            return Err(format!(
                "{n_marked} names are marked beside, {} listed",
                wide.len()
            ));
        }
        Ok(EdgeNames(
            NamesOfEdges::Narrow {
                narrow,
                beside_before,
                wide,
            },
            widening,
        ))
    }
}

/// Edge names parked to be read a name at a time ([`crate::Parked::park_for_reads`]): what a
/// graph whose names stay parked after the analysis answers `edge_name` from (a summary reads
/// a few thousand names, mostly in a few places), and what an importer holds of the names it
/// has read while it reads the rest. The counts of names beside per block of 512 edges stay
/// whole (8 bytes a block), so that a name beside is found from its own block of the parked
/// column.
pub struct ParkedEdgeNames {
    parked: crate::Parked<EdgeNames>,
    beside_before: Vec<u64>,
}

impl ParkedEdgeNames {
    /// `names`, parked for reads.
    pub fn park(names: EdgeNames) -> ParkedEdgeNames {
        let beside_before = match &names.0 {
            NamesOfEdges::Narrow { beside_before, .. } => beside_before.clone(),
            NamesOfEdges::Wide(_) => Vec::new(),
        };
        ParkedEdgeNames {
            parked: crate::Parked::park_for_reads(names),
            beside_before,
        }
    }

    /// The name of edge `edge`, as [`EdgeNames::get`] gives it.
    ///
    /// # Panics
    /// Where `edge` is out of range, as [`EdgeNames::get`] does.
    pub fn get(&self, edge: usize) -> u32 {
        self.read(edge)
            .unwrap_or_else(|| panic!("no edge {edge} in parked edge names"))
    }

    fn read(&self, edge: usize) -> Option<u32> {
        if self.parked.repr() == PLAIN {
            return self.parked.value::<u32>("names", edge);
        }
        // A block decoded for reads holds whole blocks of `BLOCK` edges: the markers before
        // `edge` in its own are counted there.
        let (short, markers_before) =
            self.parked
                .in_block::<u16, _>("narrow", edge, |bytes, at| {
                    let short = u16::from_le_bytes([bytes[at], bytes[at + 1]]);
                    if short != u16::MAX {
                        return (short, 0);
                    }
                    let block_start = at - 2 * (edge % BLOCK);
                    let before = bytes[block_start..at]
                        .chunks_exact(2)
                        .filter(|pair| pair == &[0xff, 0xff])
                        .count();
                    (short, before)
                })?;
        if short != u16::MAX {
            return Some(u32::from(short));
        }
        let rank = *self.beside_before.get(edge / BLOCK)? as usize + markers_before;
        self.parked.value::<u32>("wide", rank)
    }

    /// The names, as they were parked.
    pub fn unpark(self) -> EdgeNames {
        self.parked.unpark()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each name of a column parked for reads reads back as the column gives it: narrow
    /// names with names beside spread over several blocks read for reads (128 Ki names each),
    /// read in order and hopping between blocks, and a plain column.
    #[test]
    fn parked_names_read_back_a_name_at_a_time() {
        let n = 400_000u32;
        let marked: Vec<u32> = (0..n)
            .map(|i| match i % 1009 {
                0 | 3 => 70_000 + i,
                _ if (131_000..131_200).contains(&i) => 1 << 24 | i,
                _ => i % 5000,
            })
            .collect();
        let plain: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        for values in [marked, plain] {
            let names = EdgeNames::from(values.clone());
            let parked = ParkedEdgeNames::park(names.clone());
            for edge in (0..values.len())
                .step_by(7)
                .chain([131_071, 131_072, 399_999])
            {
                assert_eq!(parked.get(edge), values[edge], "{edge}");
            }
            for edge in (0..values.len()).rev().step_by(12_347) {
                assert_eq!(parked.get(edge), values[edge], "{edge}");
            }
            for (edge, &name) in values.iter().enumerate().take(131_300).skip(130_900) {
                assert_eq!(parked.get(edge), name, "{edge}");
            }
            assert_eq!(parked.unpark(), names);
        }
    }
    #[test]
    fn edge_names_narrow_or_wide_read_the_same() {
        let mostly_small: Vec<u32> = (0..20_000)
            .map(|i| if i % 100 == 0 { 70_000 + i } else { i % 1000 })
            .collect();
        let names = EdgeNames::from(mostly_small.clone());
        assert!(names.is_narrow());
        assert_eq!(names.to_vec(), mostly_small);
        assert_eq!(names.get(300), 70_300);
        let spread: Vec<u32> = (0..20_000).map(|i| 100_000 + i).collect();
        let mut pushed = EdgeNames::new();
        for &name in &spread {
            pushed.push(name);
        }
        assert!(!pushed.is_narrow());
        assert_eq!(pushed.to_vec(), spread);
        let mut joined = names.clone();
        joined.extend_from(&pushed);
        assert_eq!(
            joined.to_vec(),
            [mostly_small.clone(), spread.clone()].concat()
        );
        let mut changed = names;
        changed.set(1, 80_000);
        changed.set(300, 5);
        assert_eq!(changed.get(1), 80_000);
        assert_eq!(changed.get(300), 5);
        assert_eq!(changed.get(400), 70_400);
        let mut kept = EdgeNames::kept_narrow(0);
        for &name in &spread {
            kept.push(name);
        }
        assert!(kept.is_narrow());
        kept.settle();
        assert!(!kept.is_narrow());
        assert_eq!(kept.to_vec(), spread);
    }

    #[test]
    fn the_first_name_past_a_limit_is_the_one_a_plain_scan_finds() {
        let mostly_small: Vec<u32> = (0..20_000)
            .map(|i| match i % 997 {
                0 => 70_000 + i,
                1 => 65_535,
                2 => 65_534,
                _ => i % 1000,
            })
            .collect();
        let spread: Vec<u32> = (0..20_000).map(|i| 100_000 + (i * 7919) % 20_000).collect();
        let columns = [EdgeNames::from(mostly_small), EdgeNames::from(spread)];
        assert!(columns[0].is_narrow() && !columns[1].is_narrow());
        type Filter = fn(usize) -> bool;
        let filters: [Filter; 4] = [
            |_| true,
            |edge| edge % 2 == 0,
            |_| false,
            |edge| edge >= 12_345,
        ];
        let limits = [
            0,
            1,
            500,
            999,
            1000,
            65_534,
            65_535,
            65_536,
            70_000,
            110_000,
            u32::MAX,
        ];
        let mut found = 0;
        for names in &columns {
            for limit in limits {
                for is_name in filters {
                    let plain =
                        (0..names.len()).find(|&edge| names.get(edge) >= limit && is_name(edge));
                    assert_eq!(
                        names.first_at_or_past(limit, is_name),
                        plain,
                        "limit {limit}"
                    );
                    found += usize::from(plain.is_some());
                }
            }
        }
        assert!(found > 30, "{found}");
    }

    #[test]
    fn names_converted_at_once_are_the_names_pushed() {
        // The marker itself (65,535) and the names past it go beside; a crowded start does
        // not widen a column whose names are mostly narrow overall.
        let names: Vec<u32> = (0..100_000u32)
            .map(|i| match i % 50 {
                0 => 65_535,
                1 => 65_534,
                2 => 1 << 20,
                _ => i % 60_000,
            })
            .chain(0..5000)
            .collect();
        let converted = EdgeNames::from(names.clone());
        assert!(converted.is_narrow());
        assert_eq!(converted.to_vec(), names);
        let mut pushed = EdgeNames::new();
        for &name in &names {
            pushed.push(name);
        }
        assert!(pushed.is_narrow());
        for edge in 0..names.len() {
            assert_eq!(converted.get(edge), pushed.get(edge), "edge {edge}");
        }
        // Extended a batch at a time, kept narrow until settled, as the V8 parse does.
        let mut extended = EdgeNames::kept_narrow(0);
        for batch in names.chunks(999) {
            extended.extend(batch.iter().copied());
        }
        extended.settle();
        assert!(extended.is_narrow());
        assert_eq!(extended.to_vec(), names);
        let spread: Vec<u32> = (0..20_000).map(|i| 100_000 + i).collect();
        let mut widened = EdgeNames::new();
        widened.extend(spread[..10_000].iter().copied());
        assert!(!widened.is_narrow());
        widened.extend(spread[10_000..].iter().copied());
        assert_eq!(widened.to_vec(), spread);
    }

    #[test]
    fn images_give_the_column_back_and_lies_are_refused() {
        use crate::image::testing::{Copied, Lie};
        let mostly_small: Vec<u32> = (0..20_000)
            .map(|i| match i % 100 {
                0 => 70_000 + i,
                1 => 65_535,
                _ => i % 1000,
            })
            .collect();
        let spread: Vec<u32> = (0..20_000).map(|i| 100_000 + i).collect();
        let mut kept = EdgeNames::kept_narrow(0);
        for &name in &spread {
            kept.push(name);
        }
        let mut plain_empty = EdgeNames::new();
        plain_empty.widen();
        let columns = [
            EdgeNames::from(mostly_small.clone()),
            EdgeNames::from(spread.clone()),
            kept,
            EdgeNames::new(),
            plain_empty,
        ];
        assert_eq!(
            columns.each_ref().map(EdgeNames::is_narrow),
            [true, false, true, true, false]
        );
        for column in columns {
            let mut back = EdgeNames::from_image(&mut Copied::new(&column.image())).unwrap();
            assert_eq!(back.to_vec(), column.to_vec());
            for edge in 0..column.len() {
                assert_eq!(back.get(edge), column.get(edge));
            }
            assert_eq!((back.is_narrow(), back.1), (column.is_narrow(), column.1));
            // Pushing and settling go on as on the column written.
            let mut pushed = column.clone();
            for &name in &spread {
                back.push(name);
                pushed.push(name);
            }
            assert_eq!(back.is_narrow(), pushed.is_narrow());
            back.settle();
            pushed.settle();
            assert_eq!(back.is_narrow(), pushed.is_narrow());
            assert_eq!(back.to_vec(), pushed.to_vec());
        }
        let column = EdgeNames::from(mostly_small);
        // Each would make `get` panic, read another name or disagree with `iter`.
        let lies: [Lie; 4] = [
            ("kept narrow", |image| image.set_scalar("kept_narrow", 2)),
            ("a marker unlisted", |image| {
                image.edit_part("narrow", |bytes| bytes[4..6].copy_from_slice(&[0xff, 0xff]))
            }),
            ("a listed name unmarked", |image| {
                image.edit_part("narrow", |bytes| bytes[400..402].copy_from_slice(&[0, 0]))
            }),
            ("wide", |image| {
                image.edit_part("wide", |bytes| bytes.truncate(4))
            }),
        ];
        for (lie, tell) in lies {
            let mut image = Copied::new(&column.image());
            tell(&mut image);
            assert!(EdgeNames::from_image(&mut image).is_err(), "{lie}");
        }
    }

    /// The image files written before the blocks' counts hold: each name beside with its place.
    fn placed_image(column: &EdgeNames) -> (Vec<u16>, Vec<u64>, Vec<u32>) {
        let NamesOfEdges::Narrow { narrow, wide, .. } = &column.0 else {
            panic!("a narrow column");
        };
        let places = (0..narrow.len() as u64)
            .filter(|&at| narrow[at as usize] == u16::MAX)
            .collect();
        (narrow.clone(), places, wide.clone())
    }

    #[test]
    fn images_of_names_with_their_places_read_back() {
        use crate::image::testing::Copied;
        let names: Vec<u32> = (0..5000)
            .map(|i| if i % 7 == 0 { 1 << 20 } else { i })
            .collect();
        let column = EdgeNames::from(names.clone());
        let (narrow, places, wide) = placed_image(&column);
        let read = |places: &[u64]| {
            EdgeNames::from_image(&mut Copied::new(&ColumnImage {
                repr: PLACED,
                scalars: vec![("kept_narrow", 0)],
                parts: vec![
                    ("narrow", PartValues::U16(&narrow)),
                    ("wide_at", PartValues::U64(places)),
                    ("wide", PartValues::U32(&wide)),
                ],
            }))
        };
        let back = read(&places).unwrap();
        assert_eq!(back.to_vec(), names);
        assert_eq!(back.get(4998), 1 << 20);
        let mut swapped = places.clone();
        swapped.swap(0, 1);
        let lies = [swapped, places[1..].to_vec(), vec![1; places.len()]];
        for lie in lies {
            assert!(read(&lie).is_err());
        }
    }

    #[test]
    fn names_beside_are_found_by_their_blocks_counts_as_names_change() {
        // Names beside in runs, alone and in whole blocks, changed back and forth: each read
        // agrees with a plain vector's.
        let mut plain: Vec<u32> = (0..10 * BLOCK as u32 + 77)
            .map(|i| match i % 1500 {
                0..300 => 70_000 + i,
                n if n % 3 == 0 => 1 << 20,
                n => n,
            })
            .collect();
        let mut names = EdgeNames::new();
        for &name in &plain {
            names.push(name);
        }
        assert!(names.is_narrow());
        let mut state = 12345u64;
        for _ in 0..3000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let edge = (state >> 33) as usize % plain.len();
            let name = if state & 1 == 0 {
                65_535 + (state >> 50) as u32
            } else {
                edge as u32 % 60_000
            };
            names.set(edge, name);
            plain[edge] = name;
            let probe = (state >> 20) as usize % plain.len();
            assert_eq!(names.get(probe), plain[probe], "edge {probe}");
        }
        assert!(names.is_narrow());
        assert_eq!(names.to_vec(), plain);
        for (edge, &name) in plain.iter().enumerate() {
            assert_eq!(names.get(edge), name, "edge {edge}");
        }
        let mut joined = EdgeNames::from(plain[..1000].to_vec());
        joined.extend_from(&EdgeNames::from(plain[1000..].to_vec()));
        for (edge, &name) in plain.iter().enumerate() {
            assert_eq!(joined.get(edge), name, "edge {edge}");
        }
    }
}
