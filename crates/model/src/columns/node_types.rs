//! Node types as a 2-byte index into a table of the distinct types.

use crate::image::{ColumnImage, ImageSource, Imaged, PartValues, expect_repr};
use crate::strings::StringId;
use rustc_hash::FxHashMap;

/// Node types: a table of the distinct types and a 2-byte index into it per node while there
/// are at most 2¹⁶ − 1 of them (a Java dump has hundreds to tens of thousands of classes), one
/// [`StringId`] per node past that.
///
/// Invariants: in `Narrow`, every `index` entry is below `table.len()`, `table` holds distinct
/// ids (at most `u16::MAX`) in the order of the first node of each, every one some node's,
/// `raw` holds them too, and `find` maps each of them to its position.
#[derive(Clone, Debug)]
pub struct NodeTypes(TypesRepr);

#[derive(Clone, Debug)]
enum TypesRepr {
    Narrow {
        table: Vec<StringId>,
        /// `table` as raw values, for the image (a slice of ids is no slice of `u32`s).
        raw: Vec<u32>,
        index: Vec<u16>,
        find: FxHashMap<StringId, u16>,
        /// The last type pushed and its index: neighbours are often of one type.
        last: Option<(StringId, u16)>,
    },
    /// Raw ids, for the image.
    Wide(Vec<u32>),
}

impl Default for NodeTypes {
    fn default() -> Self {
        NodeTypes::with_capacity(0)
    }
}

impl NodeTypes {
    /// An empty column.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty column with room for `n` nodes.
    pub fn with_capacity(n: usize) -> Self {
        NodeTypes(TypesRepr::Narrow {
            table: Vec::new(),
            raw: Vec::new(),
            index: Vec::with_capacity(n),
            find: FxHashMap::default(),
            last: None,
        })
    }

    /// Whether the types are stored as 2-byte indices.
    pub fn is_narrow(&self) -> bool {
        matches!(self.0, TypesRepr::Narrow { .. })
    }

    /// The table index of `type_id`, added to the table if new; `None` when the column is
    /// plain or its table is full.
    fn slot_of(&mut self, type_id: StringId) -> Option<u16> {
        let TypesRepr::Narrow {
            table,
            raw,
            find,
            last,
            ..
        } = &mut self.0
        else {
            return None;
        };
        if let Some((id, slot)) = *last
            && id == type_id
        {
            return Some(slot);
        }
        let slot = match find.get(&type_id) {
            Some(&slot) => slot,
            None => {
                let slot = u16::try_from(table.len())
                    .ok()
                    .filter(|&slot| slot != u16::MAX)?;
                table.push(type_id);
                raw.push(type_id.0);
                find.insert(type_id, slot);
                slot
            }
        };
        *last = Some((type_id, slot));
        Some(slot)
    }

    /// Appends `type_id`.
    pub fn push(&mut self, type_id: StringId) {
        match self.slot_of(type_id) {
            Some(slot) => {
                if let TypesRepr::Narrow { index, .. } = &mut self.0 {
                    index.push(slot);
                }
            }
            None => {
                self.widen();
                if let TypesRepr::Wide(types) = &mut self.0 {
                    types.push(type_id.0);
                }
            }
        }
    }

    /// The types of nodes given by keys below `n_keys` (a V8 node's name, or its kind where the
    /// kind is the type), each key's type asked of `type_of` where it is first met (and once
    /// more past 65,534 types, where the column turns plain): a read of a table by key per
    /// node rather than a hash of the type.
    ///
    /// Panics if a key is `n_keys` or more.
    pub fn from_keys(
        keys: impl ExactSizeIterator<Item = u32>,
        n_keys: usize,
        mut type_of: impl FnMut(u32) -> StringId,
    ) -> NodeTypes {
        const UNSEEN: u16 = u16::MAX;
        let mut column = NodeTypes::with_capacity(keys.len());
        // The slot of each key met, while the column is narrow (no slot is `u16::MAX`).
        let mut slot_of_key = vec![UNSEEN; n_keys];
        // Each key's type, once the column is plain.
        let mut type_of_key: Vec<Option<StringId>> = Vec::new();
        for key in keys {
            let key = key as usize;
            if let TypesRepr::Narrow { index, .. } = &mut column.0 {
                let slot = slot_of_key[key];
                if slot != UNSEEN {
                    index.push(slot);
                    continue;
                }
                let type_id = type_of(key as u32);
                column.push(type_id);
                if let TypesRepr::Narrow { index, .. } = &column.0 {
                    slot_of_key[key] = index[index.len() - 1];
                    continue;
                }
                // That type widened the column.
                slot_of_key = Vec::new();
                type_of_key = vec![None; n_keys];
                type_of_key[key] = Some(type_id);
                continue;
            }
            let type_id = *type_of_key[key].get_or_insert_with(|| type_of(key as u32));
            if let TypesRepr::Wide(types) = &mut column.0 {
                types.push(type_id.0);
            }
        }
        column
    }

    /// Turns the column into one id per node.
    fn widen(&mut self) {
        let TypesRepr::Narrow { index, .. } = &self.0 else {
            return;
        };
        let mut plain = Vec::with_capacity(index.capacity());
        plain.extend(self.iter().map(StringId::to_raw));
        self.0 = TypesRepr::Wide(plain);
    }

    /// Reserves room for `additional` more nodes.
    pub fn reserve_exact(&mut self, additional: usize) {
        match &mut self.0 {
            TypesRepr::Narrow { index, .. } => index.reserve_exact(additional),
            TypesRepr::Wide(types) => types.reserve_exact(additional),
        }
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        match &self.0 {
            TypesRepr::Narrow { index, .. } => index.len(),
            TypesRepr::Wide(types) => types.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The type of node `node`.
    ///
    /// Panics if `node` is out of range.
    #[inline]
    pub fn get(&self, node: usize) -> StringId {
        match &self.0 {
            TypesRepr::Narrow { table, index, .. } => table[usize::from(index[node])],
            TypesRepr::Wide(types) => StringId(types[node]),
        }
    }

    /// The position of node `node`'s type in [`NodeTypes::distinct`], where the column keeps a
    /// table.
    ///
    /// Panics if `node` is out of range.
    #[inline]
    pub fn slot(&self, node: usize) -> Option<usize> {
        match &self.0 {
            TypesRepr::Narrow { index, .. } => Some(usize::from(index[node])),
            TypesRepr::Wide(_) => None,
        }
    }

    /// The distinct types, each once, where the column keeps a table of them.
    pub fn distinct(&self) -> Option<&[StringId]> {
        match &self.0 {
            TypesRepr::Narrow { table, .. } => Some(table),
            TypesRepr::Wide(_) => None,
        }
    }

    /// The types in node order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = StringId> + '_ {
        (0..self.len()).map(move |node| self.get(node))
    }

    /// The types as one id per node.
    pub fn to_vec(&self) -> Vec<StringId> {
        self.iter().collect()
    }

    /// Appends every type of `other`.
    pub fn extend_from(&mut self, other: &NodeTypes) {
        if let TypesRepr::Narrow {
            table: other_table,
            index: other_index,
            ..
        } = &other.0
        {
            // Each of the other table's types, once, then its indices through the mapping.
            let remap: Option<Vec<u16>> = other_table
                .iter()
                .map(|&type_id| self.slot_of(type_id))
                .collect();
            if let (Some(remap), TypesRepr::Narrow { index, .. }) = (remap, &mut self.0) {
                index.extend(other_index.iter().map(|&i| remap[usize::from(i)]));
                return;
            }
        }
        self.widen();
        if let TypesRepr::Wide(types) = &mut self.0 {
            types.extend(other.iter().map(StringId::to_raw));
        }
    }
}

impl From<Vec<StringId>> for NodeTypes {
    /// Narrow when the types are few enough, the vector itself otherwise.
    fn from(types: Vec<StringId>) -> Self {
        let mut column = NodeTypes::with_capacity(types.len());
        for &type_id in &types {
            column.push(type_id);
            if !column.is_narrow() {
                // In place: the same allocation.
                return NodeTypes(TypesRepr::Wide(
                    types.into_iter().map(StringId::to_raw).collect(),
                ));
            }
        }
        column
    }
}

impl FromIterator<StringId> for NodeTypes {
    fn from_iter<I: IntoIterator<Item = StringId>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut column = NodeTypes::with_capacity(iter.size_hint().0);
        for type_id in iter {
            column.push(type_id);
        }
        column
    }
}

/// The representations' names in an image.
const NARROW: &str = "narrow";
const WIDE: &str = "wide";

impl Imaged for NodeTypes {
    fn image(&self) -> ColumnImage<'_> {
        match &self.0 {
            TypesRepr::Narrow { raw, index, .. } => ColumnImage {
                repr: NARROW,
                scalars: Vec::new(),
                parts: vec![
                    ("table", PartValues::U32(raw)),
                    ("index", PartValues::U16(index)),
                ],
            },
            TypesRepr::Wide(types) => ColumnImage {
                repr: WIDE,
                scalars: Vec::new(),
                parts: vec![("types", PartValues::U32(types))],
            },
        }
    }

    fn from_image(source: &mut impl ImageSource) -> Result<Self, String> {
        expect_repr(source, &[NARROW, WIDE])?;
        if source.repr() == WIDE {
            // Ids are checked against the string table with the graph.
            return Ok(NodeTypes(TypesRepr::Wide(source.take("types")?)));
        }
        let raw: Vec<u32> = source.take("table")?;
        let index: Vec<u16> = source.take("index")?;
        // Before the map is sized by it; `u16::MAX` itself is never a position.
        if raw.len() > usize::from(u16::MAX) {
            return Err(format!("a table of {} types", raw.len()));
        }
        let table: Vec<StringId> = raw.iter().map(|&id| StringId(id)).collect();
        let mut find = FxHashMap::default();
        find.reserve(table.len());
        for (slot, &type_id) in table.iter().enumerate() {
            if find.insert(type_id, slot as u16).is_some() {
                return Err(format!("type {} is twice in the table", type_id.0));
            }
        }
        // Pushing adds each type at its first node: `distinct` and `slot` read as they would.
        let mut used = 0;
        for (node, &slot) in index.iter().enumerate() {
            let slot = usize::from(slot);
            if slot >= table.len() {
                return Err(format!(
                    "node {node} has type {slot} of a table of {}",
                    table.len()
                ));
            }
            if slot > used {
                return Err(format!(
                    "node {node} has type {slot} before any node has type {used}"
                ));
            }
            if slot == used {
                used += 1;
            }
        }
        if used != table.len() {
            return Err(format!(
                "{} of the table's {} types are no node's",
                table.len() - used,
                table.len()
            ));
        }
        Ok(NodeTypes(TypesRepr::Narrow {
            table,
            raw,
            index,
            find,
            // A cache: empty is right.
            last: None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn types_narrow_or_wide_read_the_same() {
        let ids: Vec<StringId> = (0..200_000u32).map(|i| StringId(i % 70_000)).collect();
        let few: Vec<StringId> = ids.iter().map(|id| StringId(id.0 % 300)).collect();
        let narrow = NodeTypes::from(few.clone());
        assert!(narrow.is_narrow());
        assert_eq!(narrow.to_vec(), few);
        assert_eq!(narrow.distinct().map(<[StringId]>::len), Some(300));
        let wide = NodeTypes::from(ids.clone());
        assert!(!wide.is_narrow());
        assert_eq!(wide.to_vec(), ids);
        let mut joined = narrow.clone();
        joined.extend_from(&NodeTypes::from(few[..1000].to_vec()));
        assert!(joined.is_narrow());
        assert_eq!(
            joined.to_vec(),
            [few.clone(), few[..1000].to_vec()].concat()
        );
        joined.extend_from(&wide);
        assert_eq!(
            joined.to_vec(),
            [few.clone(), few[..1000].to_vec(), ids].concat()
        );
    }

    #[test]
    fn types_by_key_are_the_types_pushed() {
        // Keys sharing a type share its slot; past 65,534 types the column turns plain. Each
        // key's type is asked once, or twice where the column turned plain after it was met.
        for (n_keys, n_types) in [(1000u32, 300u32), (200_000, 70_000)] {
            let keys: Vec<u32> = (0..300_000u32).map(|i| i * 7919 % n_keys).collect();
            let type_of_key = |key: u32| StringId(key % n_types);
            let mut asked = vec![0u32; n_keys as usize];
            let by_key = NodeTypes::from_keys(keys.iter().copied(), n_keys as usize, |key| {
                asked[key as usize] += 1;
                type_of_key(key)
            });
            let pushed: NodeTypes = keys.iter().map(|&key| type_of_key(key)).collect();
            assert_eq!(by_key.is_narrow(), n_types < 65_535);
            assert_eq!(by_key.is_narrow(), pushed.is_narrow());
            assert_eq!(by_key.distinct(), pushed.distinct());
            assert_eq!(by_key.to_vec(), pushed.to_vec());
            for node in (0..keys.len()).step_by(997) {
                assert_eq!(by_key.slot(node), pushed.slot(node));
            }
            let most = if by_key.is_narrow() { 1 } else { 2 };
            assert!(asked.iter().all(|&times| times <= most));
        }
    }

    #[test]
    fn images_give_the_column_back_and_lies_are_refused() {
        use crate::image::testing::{Copied, Lie};
        let few: Vec<StringId> = (0..3000u32).map(|i| StringId(i * 7 % 300)).collect();
        let many: Vec<StringId> = (0..70_000u32).map(StringId).collect();
        for types in [few.clone(), many, vec![]] {
            let column = NodeTypes::from(types.clone());
            let back = NodeTypes::from_image(&mut Copied::new(&column.image())).unwrap();
            assert_eq!(back.to_vec(), types);
            assert_eq!(back, column);
            assert_eq!(back.is_narrow(), column.is_narrow());
            assert_eq!(back.distinct(), column.distinct());
            assert!((0..types.len()).all(|node| back.slot(node) == column.slot(node)));
            // The map works again: a known type keeps its slot, a new one gets the next.
            let mut pushed = back.clone();
            pushed.push(StringId(14));
            pushed.push(StringId(1 << 30));
            let mut expected = column.clone();
            expected.push(StringId(14));
            expected.push(StringId(1 << 30));
            assert_eq!(pushed.distinct(), expected.distinct());
            assert_eq!(pushed, expected);
        }
        let column = NodeTypes::from(few);
        assert!(column.is_narrow());
        // Type 0 at node 0, type 7 at node 1, type 14 at node 2.
        // A lie: what it is, and how the file tells it.
        let lies: [Lie; 4] = [
            ("an index outside the table", |image| {
                image.edit_part("index", |bytes| {
                    bytes[2..4].copy_from_slice(&300u16.to_le_bytes())
                })
            }),
            ("a type twice", |image| {
                image.edit_part("table", |bytes| bytes.copy_within(0..4, 4))
            }),
            ("a type used before the one before it", |image| {
                image.edit_part("table", |bytes| bytes[..8].rotate_left(4));
                image.edit_part("index", |bytes| bytes[..4].copy_from_slice(&[1, 0, 0, 0]))
            }),
            ("a type no node has", |image| {
                image.edit_part("table", |bytes| bytes.extend(1_000_000u32.to_le_bytes()))
            }),
        ];
        for (lie, tell) in lies {
            let mut image = Copied::new(&column.image());
            tell(&mut image);
            assert!(NodeTypes::from_image(&mut image).is_err(), "{lie}");
        }
        // Every check but the size passes: 2¹⁶ distinct types, each a node's, in order.
        let raw: Vec<u32> = (0..=u32::from(u16::MAX)).collect();
        let index: Vec<u16> = (0..=u16::MAX).collect();
        let mut image = Copied::new(&ColumnImage {
            repr: NARROW,
            scalars: Vec::new(),
            parts: vec![
                ("table", PartValues::U32(&raw)),
                ("index", PartValues::U16(&index)),
            ],
        });
        assert!(
            NodeTypes::from_image(&mut image).is_err(),
            "a table too long"
        );
    }
}
