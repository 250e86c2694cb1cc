//! A file's `image` chunks: the model's columns as the vectors they are made of, gathered from
//! the chunks (borrowed from a mapped file, or copied from a stream) and given back to the
//! column types, which check them (`heapgraph_model::image`).

use super::Release;
use heapgraph_format::{ImageChunk, ImageDataChunk};
use heapgraph_model::image::{ImageSource, Imaged, Plain};
use heapgraph_model::{
    ChildLists, EdgeKinds, EdgeNames, EdgeOffsets, NodeKinds, NodeNames, NodeTypes, PackedU64,
    U64Column,
};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The names of the graph's and the analysis's columns in a file's images.
pub(in crate::hgd) mod names {
    pub(in crate::hgd) const OBJECT_ID: &str = "node_object_id";
    pub(in crate::hgd) const NODE_KIND: &str = "node_kind";
    pub(in crate::hgd) const NODE_TYPE: &str = "node_type";
    pub(in crate::hgd) const NODE_NAME: &str = "node_name";
    pub(in crate::hgd) const SHALLOW_SIZE: &str = "node_shallow_size";
    pub(in crate::hgd) const FIRST_EDGE: &str = "first_edge";
    pub(in crate::hgd) const EDGE_TO: &str = "edge_to";
    pub(in crate::hgd) const EDGE_KIND: &str = "edge_kind";
    pub(in crate::hgd) const EDGE_NAME: &str = "edge_name";
    pub(in crate::hgd) const IDOM: &str = "analysis.idom";
    pub(in crate::hgd) const RETAINED_SIZE: &str = "analysis.retained_size";
    pub(in crate::hgd) const DISTANCE: &str = "analysis.distance";
    pub(in crate::hgd) const RETAINED_COUNT: &str = "analysis.retained_count";
    pub(in crate::hgd) const CHAIN_PARENT: &str = "analysis.chain_parent";
    pub(in crate::hgd) const DOMINATOR_CHILDREN: &str = "analysis.dominator_children";

    /// The stored analysis's columns without which it is not one.
    pub(in crate::hgd) const REQUIRED_ANALYSIS: [&str; 3] = [IDOM, RETAINED_SIZE, DISTANCE];

    /// The stored analysis's columns.
    pub(in crate::hgd) const ANALYSIS: [&str; 6] = [
        IDOM,
        RETAINED_SIZE,
        DISTANCE,
        RETAINED_COUNT,
        CHAIN_PARENT,
        DOMINATOR_CHILDREN,
    ];

    /// The graph's columns, all of which a file with images has.
    pub(in crate::hgd) const GRAPH: [&str; 9] = [
        OBJECT_ID,
        NODE_KIND,
        NODE_TYPE,
        NODE_NAME,
        SHALLOW_SIZE,
        FIRST_EDGE,
        EDGE_TO,
        EDGE_KIND,
        EDGE_NAME,
    ];
}

/// A piece of a vector: where it starts in the vector (in bytes), and its bytes.
type Piece<'a> = (u64, Cow<'a, [u8]>);

/// The image chunks of a file as they arrive: each column's description, and the pieces of
/// each of its vectors (byte offset in the vector, bytes).
pub(super) struct Images<'a> {
    columns: BTreeMap<String, ImageChunk>,
    pieces: BTreeMap<(String, String), Vec<Piece<'a>>>,
    /// Called with each borrowed piece once its values are copied out.
    release: Release<'a>,
    /// The mapped file the borrowed pieces lie in, and its bytes: where the pieces' pages
    /// may be mapped as the vectors' buffers instead of copied (`heapgraph_model::file_pages::mapped_vec`).
    file: Option<(&'a std::fs::File, &'a [u8])>,
}

impl Default for Images<'_> {
    fn default() -> Self {
        Images::releasing(&|_| {})
    }
}

impl<'a> Images<'a> {
    /// Images whose borrowed pieces are handed to `release` once copied out (a mapped file's
    /// pages, which are then not resident beside the columns made from them).
    pub(super) fn releasing(release: Release<'a>) -> Self {
        Images {
            columns: BTreeMap::new(),
            pieces: BTreeMap::new(),
            release,
            file: None,
        }
    }

    /// [`Images::releasing`], for pieces borrowed from `map`, the bytes of `file` mapped
    /// whole: the vectors whose pieces lie as a map needs them are mapped, not copied.
    pub(super) fn mapping(release: Release<'a>, file: &'a std::fs::File, map: &'a [u8]) -> Self {
        Images {
            file: Some((file, map)),
            ..Images::releasing(release)
        }
    }

    /// What the borrowed pieces are handed to once copied out.
    pub(super) fn release(&self) -> Release<'a> {
        self.release
    }

    /// Whether the file has any image chunk.
    pub(super) fn is_empty(&self) -> bool {
        self.columns.is_empty() && self.pieces.is_empty()
    }

    /// Adds a column's description; a second one for the same column is an error.
    pub(super) fn add_column(&mut self, chunk: ImageChunk) -> Result<(), String> {
        if self.columns.contains_key(&chunk.column) {
            return Err(format!("a second image of column {:?}", chunk.column));
        }
        self.columns.insert(chunk.column.clone(), chunk);
        Ok(())
    }

    /// Adds a piece of a vector, borrowed.
    pub(super) fn add_borrowed(&mut self, chunk: ImageDataChunk<'a>) {
        self.pieces
            .entry((chunk.column, chunk.part))
            .or_default()
            .push((chunk.offset, Cow::Borrowed(chunk.data)));
    }

    /// Adds a piece of a vector, copied (a streamed file's bytes live only until its next
    /// record).
    pub(super) fn add_copied(&mut self, chunk: ImageDataChunk<'_>) {
        self.pieces
            .entry((chunk.column, chunk.part))
            .or_default()
            .push((chunk.offset, Cow::Owned(chunk.data.to_vec())));
    }

    /// Takes column `column`'s image and its vectors' pieces, `None` where the file has none.
    fn source(&mut self, column: &str) -> Option<Source<'a>> {
        let chunk = self.columns.remove(column)?;
        let pieces = chunk
            .parts
            .iter()
            .filter_map(|(part, _, _)| {
                let pieces = self.pieces.remove(&(column.to_owned(), part.clone()))?;
                Some((part.clone(), pieces))
            })
            .collect();
        Some(Source {
            chunk,
            pieces,
            release: self.release,
            file: self.file,
        })
    }

    /// Forgets column `column` (one a cut-short file has not all of).
    pub(super) fn drop_column(&mut self, column: &str) {
        self.columns.remove(column);
        self.pieces.retain(|(of, _), _| of != column);
    }

    /// The columns of `columns` that the file describes but whose vectors have not all
    /// arrived, or (for the graph's) that it does not describe at all: for a file cut short.
    pub(super) fn incomplete(&self, columns: &[&str]) -> Vec<String> {
        columns
            .iter()
            .filter(|&&column| {
                self.columns.get(column).is_none_or(|chunk| {
                    chunk.parts.iter().any(|(part, width, len)| {
                        let arrived: u64 = self
                            .pieces
                            .get(&(column.to_owned(), part.clone()))
                            .map_or(0, |pieces| pieces.iter().map(|(_, b)| b.len() as u64).sum());
                        arrived != len.saturating_mul(u64::from(*width))
                    })
                })
            })
            .map(|&column| column.to_owned())
            .collect()
    }
}

/// One column's image and its vectors' pieces, as its type takes them.
struct Source<'a> {
    chunk: ImageChunk,
    /// Each vector's pieces, by name.
    pieces: BTreeMap<String, Vec<Piece<'a>>>,
    release: Release<'a>,
    file: Option<(&'a std::fs::File, &'a [u8])>,
}

impl Source<'_> {
    /// The column made again by its type.
    fn build<C: Imaged>(mut self) -> Result<C, String> {
        C::from_image(&mut self)
            .map_err(|message| format!("column {:?}: {message}", self.chunk.column))
    }
}

/// The column of `source`, where there is one.
fn build<C: Imaged>(source: Option<Source<'_>>) -> Result<Option<C>, String> {
    source.map(Source::build).transpose()
}

impl ImageSource for Source<'_> {
    fn repr(&self) -> &str {
        &self.chunk.repr
    }

    fn scalar(&self, name: &str) -> Result<u64, String> {
        self.chunk
            .scalars
            .get(name)
            .copied()
            .ok_or_else(|| format!("no number {name:?}"))
    }

    fn take<T: Plain>(&mut self, name: &str) -> Result<Vec<T>, String> {
        let &(_, width, len) = self
            .chunk
            .parts
            .iter()
            .find(|part| part.0 == name)
            .ok_or_else(|| format!("no vector {name:?}"))?;
        if usize::from(width) != T::WIDTH {
            return Err(format!(
                "vector {name:?} has values of {width} bytes, not {}",
                T::WIDTH
            ));
        }
        let mut pieces = self.pieces.remove(name).unwrap_or_default();
        pieces.sort_by_key(|&(offset, _)| offset);
        // The pieces must tile the vector: each starts where the one before ends, all of them
        // whole values, and together exactly its length.
        let expected = len.saturating_mul(u64::from(width));
        let mut at = 0u64;
        for (offset, bytes) in &pieces {
            if *offset != at || bytes.len() % T::WIDTH != 0 {
                return Err(format!(
                    "vector {name:?} has bytes at {offset} where {at} was expected"
                ));
            }
            at += bytes.len() as u64;
        }
        if at != expected {
            return Err(format!(
                "vector {name:?} has {at} bytes of the {expected} its {len} values take"
            ));
        }
        if let Some(values) = self.mapped(&pieces) {
            return Ok(values);
        }
        // `len` values are there, in whole pieces: the capacity is no more than the file holds.
        let mut values = Vec::with_capacity(len as usize);
        for (_, bytes) in pieces {
            values.extend(bytes.chunks_exact(T::WIDTH).map(T::from_le));
            if let Cow::Borrowed(bytes) = bytes {
                (self.release)(bytes);
            }
        }
        Ok(values)
    }
}

impl Source<'_> {
    /// The vector of `pieces` with the file's pages as its buffer, where they are borrowed
    /// from a mapped file and lie as a map needs them.
    fn mapped<T: Plain>(&self, pieces: &[Piece<'_>]) -> Option<Vec<T>> {
        let (file, map) = self.file?;
        let start = map.as_ptr() as usize;
        let in_file: Option<Vec<(u64, usize)>> = pieces
            .iter()
            .map(|(_, bytes)| match bytes {
                Cow::Borrowed(bytes) => {
                    let at = (bytes.as_ptr() as usize).checked_sub(start)?;
                    (at + bytes.len() <= map.len()).then_some((at as u64, bytes.len()))
                }
                Cow::Owned(_) => None,
            })
            .collect();
        heapgraph_model::file_pages::mapped_vec(file, &in_file?)
    }
}

/// The graph's columns made from images.
pub(super) struct ImagedGraph {
    pub(super) object_id: PackedU64,
    pub(super) node_kind: NodeKinds,
    pub(super) node_type: NodeTypes,
    pub(super) node_name: NodeNames,
    pub(super) shallow_size: PackedU64,
    pub(super) first_edge: EdgeOffsets,
    pub(super) edge_to: Vec<u32>,
    pub(super) edge_kind: EdgeKinds,
    pub(super) edge_name: EdgeNames,
}

/// The stored analysis's columns made from images; each empty where the file has none.
#[derive(Default)]
pub(super) struct ImagedAnalysis {
    pub(super) idom: Vec<u32>,
    pub(super) retained_size: U64Column,
    pub(super) distance: Vec<u32>,
    pub(super) retained_count: Vec<u32>,
    pub(super) chain_parent: Vec<u32>,
    pub(super) dominator_children: Option<ChildLists>,
}

impl Images<'_> {
    /// The graph's columns, every one of which must be there, each made and checked by its
    /// own task.
    ///
    /// # Errors
    /// A message naming the first column that is missing or fails its checks.
    pub(super) fn graph(&mut self) -> Result<ImagedGraph, String> {
        let mut needed = |column: &str| {
            self.source(column)
                .ok_or_else(|| format!("the file has images but none of column {column:?}"))
        };
        let sources = (
            needed(names::OBJECT_ID)?,
            needed(names::NODE_KIND)?,
            needed(names::NODE_TYPE)?,
            needed(names::NODE_NAME)?,
            needed(names::SHALLOW_SIZE)?,
            needed(names::FIRST_EDGE)?,
            needed(names::EDGE_TO)?,
            needed(names::EDGE_KIND)?,
            needed(names::EDGE_NAME)?,
        );
        let (
            ((object_id, node_kind), (node_type, node_name)),
            ((shallow_size, first_edge), (edge_to, (edge_kind, edge_name))),
        ) = rayon::join(
            || {
                rayon::join(
                    || rayon::join(|| sources.0.build(), || sources.1.build()),
                    || rayon::join(|| sources.2.build(), || sources.3.build()),
                )
            },
            || {
                rayon::join(
                    || rayon::join(|| sources.4.build(), || sources.5.build()),
                    || {
                        rayon::join(
                            || sources.6.build(),
                            || rayon::join(|| sources.7.build(), || sources.8.build()),
                        )
                    },
                )
            },
        );
        Ok(ImagedGraph {
            object_id: object_id?,
            node_kind: node_kind?,
            node_type: node_type?,
            node_name: node_name?,
            shallow_size: shallow_size?,
            first_edge: first_edge?,
            edge_to: edge_to?,
            edge_kind: edge_kind?,
            edge_name: edge_name?,
        })
    }

    /// The stored analysis's columns, where the file has them (their lengths are checked
    /// against the graph by the caller), each made and checked by its own task.
    ///
    /// # Errors
    /// A message naming the first column that fails its checks.
    pub(super) fn analysis(&mut self) -> Result<ImagedAnalysis, String> {
        let sources = (
            self.source(names::IDOM),
            self.source(names::RETAINED_SIZE),
            self.source(names::DISTANCE),
            self.source(names::RETAINED_COUNT),
            self.source(names::CHAIN_PARENT),
            self.source(names::DOMINATOR_CHILDREN),
        );
        let (
            (idom, (retained_size, dominator_children)),
            (distance, (retained_count, chain_parent)),
        ) = rayon::join(
            || {
                rayon::join(
                    || build(sources.0),
                    || rayon::join(|| build(sources.1), || build(sources.5)),
                )
            },
            || {
                rayon::join(
                    || build(sources.2),
                    || rayon::join(|| build(sources.3), || build(sources.4)),
                )
            },
        );
        Ok(ImagedAnalysis {
            idom: idom?.unwrap_or_default(),
            retained_size: retained_size?.unwrap_or_default(),
            distance: distance?.unwrap_or_default(),
            retained_count: retained_count?.unwrap_or_default(),
            chain_parent: chain_parent?.unwrap_or_default(),
            dominator_children: dominator_children?,
        })
    }
}
