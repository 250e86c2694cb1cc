//! The nouns of heapgraph: heap graphs as columnar tables with references in CSR form,
//! allocation snapshots (live allocations by stack, and a CUDA allocator's state), timelines
//! (memory sampled over time), an interned string table, and typed `u32` ids. No I/O happens
//! here.
//!
//! ```
//! use heapgraph_model::{EdgeKind, GraphMeta, HeapGraph, HeapGraphParts, NodeKindInfo, Runtime, StringTable};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut strings = StringTable::new();
//! let object = strings.intern("Object");
//! let field = strings.intern("field");
//! let parts = HeapGraphParts {
//!     node_object_id: vec![1, 3].into(),
//!     node_kind: vec![0, 0].into(),
//!     node_type: vec![object, object].into(),
//!     node_name: vec![object, object].into(),
//!     node_shallow_size: vec![0, 16].into(),
//!     first_edge: vec![0, 1, 1].into(),
//!     edge_to: vec![1],
//!     edge_kind: vec![EdgeKind::Property].into(),
//!     edge_name: vec![field.to_raw()].into(),
//!     node_kinds: vec![NodeKindInfo { name: "object".into(), synthetic: false }],
//!     root: 0,
//! };
//! let graph = HeapGraph::from_parts(GraphMeta::new(Runtime::V8, "example"), strings, parts)?;
//! assert_eq!(graph.total_shallow_size(), 16);
//! let (retainer, _edge) = graph.reverse().retainers(graph.node(1).unwrap()).next().unwrap();
//! assert_eq!(retainer, graph.root());
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod alloc;
mod array_lengths;
mod columns;
pub mod file_pages;
mod freed;
mod heap_graph;
pub mod image;
mod parked;
mod passes;
mod prefetch;
mod reverse;
mod stored;
mod stretches;
mod strings;
mod threads;
mod timeline;
mod visit;

pub use alloc::{
    AllocMeta, AllocSnapshot, AllocSource, Block, BlockState, CudaState, Frame, FrameId, LiveSite,
    Segment, StackId, Stacks, TraceAction, TraceEvent,
};
pub use array_lengths::{ArrayLengths, CollectionFill, Fill};
pub use columns::{
    EdgeKinds, EdgeNames, EdgeOffsets, NodeKinds, NodeNames, NodeTypes, PackedU64, ParkedEdgeNames,
    U64Column,
};
pub use freed::{memory_freed, on_memory_freed};
pub use heap_graph::{
    EdgeKind, EdgeName, FileDump, GraphMeta, HeapGraph, HeapGraphParts, InvalidGraph, NodeId,
    NodeKindInfo, Runtime,
};
pub use parked::{Cores, InOrder, Parked};
pub use passes::{PassTime, ProcessMemory, keep_timings, take_timings, timed};
pub use prefetch::prefetch;
pub use reverse::ReverseEdges;
pub use stored::{
    AccumulatedTypes, ChildLists, StoredAnalysis, TypePathNode, TypePaths, TypeTotals,
};
pub use stretches::first_in_stretches;
pub use strings::{StringId, StringTable};
pub use threads::side_by_side;
pub use timeline::{
    EventKind, GpuSeries, Level, MemoryLimit, Resource, Samples, Threshold, Timeline,
    TimelineEvent, TimelineMeta,
};
pub use visit::{EdgeView, Edges};
