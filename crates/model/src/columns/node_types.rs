//! Node types as a 2-byte index into a table of the distinct types.

use crate::strings::StringId;
use rustc_hash::FxHashMap;

/// Node types: a table of the distinct types and a 2-byte index into it per node while there
/// are at most 2¹⁶ − 1 of them (a Java dump has hundreds to tens of thousands of classes), one
/// [`StringId`] per node past that.
///
/// Invariants: in `Narrow`, every `index` entry is below `table.len()`, `table` holds distinct
/// ids, and `find` maps each of them to its position.
#[derive(Clone, Debug)]
pub struct NodeTypes(TypesRepr);

#[derive(Clone, Debug)]
enum TypesRepr {
    Narrow {
        table: Vec<StringId>,
        index: Vec<u16>,
        find: FxHashMap<StringId, u16>,
        /// The last type pushed and its index: neighbours are often of one type.
        last: Option<(StringId, u16)>,
    },
    Wide(Vec<StringId>),
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
            table, find, last, ..
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
                    types.push(type_id);
                }
            }
        }
    }

    /// Turns the column into one id per node.
    fn widen(&mut self) {
        let TypesRepr::Narrow { index, .. } = &self.0 else {
            return;
        };
        let mut plain = Vec::with_capacity(index.capacity());
        plain.extend(self.iter());
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
            TypesRepr::Wide(types) => types[node],
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
            types.extend(other.iter());
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
                return NodeTypes(TypesRepr::Wide(types));
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
}
