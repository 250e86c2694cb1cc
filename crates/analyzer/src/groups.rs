//! `summary --group-by`: objects grouped by Java package or class loader, by Python module, or
//! by the V8 script that defined them, with counts, shallow sizes and retained sizes per group,
//! each retained byte counted once.
//!
//! A group's retained size is the sum of the retained sizes of its members that have no other
//! member above them in the dominator tree: what freeing every member would free, with no byte
//! counted twice (MAT's "group by package" and "group by class loader" count the same way).

use crate::Analysis;
use heapgraph_model::{EdgeKind, HeapGraph, NodeId, Runtime, StringId};
use rustc_hash::FxHashMap;

/// What objects are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBy {
    /// Java: the package of the object's class (`java.util` for `java.util.HashMap`, and for
    /// `java.util.HashMap$Node[]`); `(default package)` for classes outside one and for arrays
    /// of primitives.
    Package,
    /// Python: the module of the object's type (`collections` for `collections.OrderedDict`).
    Module,
    /// Java: the class loader that defined the object's class (for a class object, its own
    /// loader): the loader's type and id, or `<bootstrap>`.
    ClassLoader,
    /// V8: the script that defined the object's constructor (an object's through its
    /// `__proto__`'s `constructor`; a closure's own function), as the snapshot names the
    /// script; [`BUILT_IN`] for a constructor or function the engine provides (`Object`,
    /// `Array`, an object literal's), [`NO_SCRIPT`] for what no constructor made (strings,
    /// numbers, the engine's own arrays, code and shapes).
    Script,
}

impl GroupBy {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            GroupBy::Package => "package",
            GroupBy::Module => "module",
            GroupBy::ClassLoader => "classloader",
            GroupBy::Script => "script",
        }
    }
}

/// One group's totals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRow {
    /// The group: a package, a module, or a class loader.
    pub group: String,
    /// Real objects in it.
    pub count: u64,
    /// Their shallow sizes, summed.
    pub shallow_size: u64,
    /// What its reachable members retain, each byte once (see the module doc).
    pub retained_size: u64,
    /// Distinct types among its members.
    pub types: u64,
}

/// Every group of one dump, by retained size, largest first (ties by name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupsView {
    /// What the objects were grouped by.
    pub by: GroupBy,
    /// The groups.
    pub rows: Vec<GroupRow>,
}

/// Why a grouping does not apply to a dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotGroupable {
    /// What to say to the user.
    pub message: String,
}

/// The group name of objects outside any package or module.
pub const NO_PACKAGE: &str = "(default package)";

/// The group name of classes of the bootstrap loader (a null `<classloader>`).
pub const BOOTSTRAP_LOADER: &str = "<bootstrap>";

/// The script group of V8 objects whose constructor (and closures whose function) has no
/// script: the engine's built-ins.
pub const BUILT_IN: &str = "(built-in)";

/// The script group of V8 nodes that no constructor made: strings, numbers, the engine's own
/// arrays, code and shapes, and objects without a `__proto__` (the engine's contexts).
pub const NO_SCRIPT: &str = "(no script)";

/// Groups the real objects of `graph` by `by`.
///
/// # Errors
/// [`NotGroupable`] where the runtime does not record what `by` asks (a class loader outside
/// Java, a script outside V8, a package or module in a V8 snapshot).
///
/// Complexity: O(V + E) time (one pass to name each node's group, one walk of the dominator
/// tree); O(V) auxiliary space (a group index per node, and the tree's children).
pub fn group_by(
    graph: &HeapGraph,
    analysis: &Analysis,
    by: GroupBy,
) -> Result<GroupsView, NotGroupable> {
    let runtime = graph.meta().runtime;
    let refuse = |why: &str| {
        Err(NotGroupable {
            message: format!(
                "--group-by {} does not apply to {} dumps: {why}",
                by.name(),
                runtime.name()
            ),
        })
    };
    match (by, runtime) {
        (GroupBy::Package | GroupBy::ClassLoader, Runtime::Java) => {}
        (GroupBy::Module, Runtime::Python) => {}
        (GroupBy::Package, Runtime::Python) => {}
        (GroupBy::Module, Runtime::Java) => {}
        (GroupBy::Script, Runtime::V8) => {}
        (_, Runtime::V8) => {
            return refuse(
                "a snapshot's objects name their constructor, not a package; \
                 --group-by script groups them by the script that defined it",
            );
        }
        (GroupBy::ClassLoader, _) => return refuse("only Java classes have a class loader"),
        (GroupBy::Script, _) => return refuse("only V8 snapshots name the script of a function"),
    }
    let (group_of, names) = match by {
        GroupBy::Package | GroupBy::Module => by_prefix(graph),
        GroupBy::ClassLoader => by_loader(graph),
        GroupBy::Script => by_script(graph),
    };
    Ok(GroupsView {
        by,
        rows: totals(graph, analysis, &group_of, names),
    })
}

/// Marks a node outside every group (synthetic nodes).
const NO_GROUP: u32 = u32::MAX;

/// The package or module of each node's type: its name up to the last `.`, array brackets
/// dropped first.
fn by_prefix(graph: &HeapGraph) -> (Vec<u32>, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    let mut group_of_name: FxHashMap<String, u32> = FxHashMap::default();
    let mut group_of_type: FxHashMap<StringId, u32> = FxHashMap::default();
    let mut group_of = vec![NO_GROUP; graph.node_count()];
    for node in graph.nodes() {
        if graph.is_synthetic(node) {
            continue;
        }
        let type_id = graph.type_id(node);
        let group = *group_of_type.entry(type_id).or_insert_with(|| {
            let name = package_of(graph.strings().get(type_id));
            *group_of_name.entry(name.to_owned()).or_insert_with(|| {
                names.push(name.to_owned());
                (names.len() - 1) as u32
            })
        });
        group_of[node.index()] = group;
    }
    (group_of, names)
}

/// The package of a type name: up to its last `.` (`java.util` of `java.util.HashMap$Node[]`),
/// or [`NO_PACKAGE`].
pub fn package_of(type_name: &str) -> &str {
    let element = type_name.trim_end_matches("[]");
    match element.rfind('.') {
        Some(dot) if dot > 0 => &element[..dot],
        _ => NO_PACKAGE,
    }
}

/// The class loader of each node's class: a class object's own `<classloader>`, an object's
/// through its `<class>` edge.
fn by_loader(graph: &HeapGraph) -> (Vec<u32>, Vec<String>) {
    let strings = graph.strings();
    let (Some(class_edge), Some(loader_edge)) =
        (strings.find("<class>"), strings.find("<classloader>"))
    else {
        let group_of = graph
            .nodes()
            .map(|node| {
                if graph.is_synthetic(node) {
                    NO_GROUP
                } else {
                    0
                }
            })
            .collect();
        return (group_of, vec![BOOTSTRAP_LOADER.to_owned()]);
    };
    let named = |node: NodeId, name: StringId| named_target(graph, node, &[name]);
    let class_kind = graph
        .parts()
        .node_kinds
        .iter()
        .position(|kind| kind.name == "class");
    let mut names: Vec<String> = vec![BOOTSTRAP_LOADER.to_owned()];
    let mut group_of_loader: FxHashMap<u32, u32> = FxHashMap::default();
    let mut group_of_class: FxHashMap<u32, u32> = FxHashMap::default();
    let mut group_of = vec![NO_GROUP; graph.node_count()];
    for node in graph.nodes() {
        if graph.is_synthetic(node) {
            continue;
        }
        let is_class = Some(usize::from(graph.parts().node_kind[node.index()])) == class_kind;
        let class = if is_class {
            Some(node)
        } else {
            named(node, class_edge)
        };
        let group = match class {
            None => 0,
            Some(class) => *group_of_class.entry(class.to_raw()).or_insert_with(|| {
                match named(class, loader_edge) {
                    None => 0,
                    Some(loader) => *group_of_loader.entry(loader.to_raw()).or_insert_with(|| {
                        names.push(format!(
                            "{} {}",
                            graph.type_name(loader),
                            graph
                                .meta()
                                .runtime
                                .format_object_id(graph.object_id(loader))
                        ));
                        (names.len() - 1) as u32
                    }),
                }
            }),
        };
        group_of[node.index()] = group;
    }
    (group_of, names)
}

/// The first target of `node`'s named (not element, not hidden) edge whose name is one of
/// `names` (string ids: a bulk-imported table may hold one text under several ids).
fn named_target(graph: &HeapGraph, node: NodeId, names: &[StringId]) -> Option<NodeId> {
    graph
        .edge_range(node)
        .find(|&edge| {
            graph.edge_kind(edge) != EdgeKind::Element
                && graph.edge_kind(edge) != EdgeKind::Hidden
                && names
                    .iter()
                    .any(|name| graph.raw_edge_name(edge) == name.to_raw())
        })
        .map(|edge| graph.edge_target(edge))
}

/// Every id of each text of `texts`, by one pass over the string table (a V8 snapshot's
/// strings are pushed, not findable).
fn ids_of<const N: usize>(graph: &HeapGraph, texts: [&str; N]) -> [Vec<StringId>; N] {
    let mut ids: [Vec<StringId>; N] = std::array::from_fn(|_| Vec::new());
    for (id, text) in graph.strings().iter() {
        if let Some(at) = texts.iter().position(|&wanted| wanted == text) {
            ids[at].push(id);
        }
    }
    ids
}

/// The script of each V8 node (see [`GroupBy::Script`]): a closure's through its
/// `shared` function info's `script_or_debug_info` (`script` before V8 9), an object's
/// through its prototype's `constructor`. The snapshot names a `Script` node after the
/// script's URL or file name; scripts of one name are one group.
fn by_script(graph: &HeapGraph) -> (Vec<u32>, Vec<String>) {
    const BUILT_IN_GROUP: u32 = 0;
    const NO_SCRIPT_GROUP: u32 = 1;
    let kinds = &graph.parts().node_kinds;
    let kind = |name: &str| kinds.iter().position(|kind| kind.name == name);
    let (object, closure, code) = (kind("object"), kind("closure"), kind("code"));
    let [proto, constructor, shared, script_or_debug_info, script] = ids_of(
        graph,
        [
            "__proto__",
            "constructor",
            "shared",
            "script_or_debug_info",
            "script",
        ],
    );
    let kind_of = |node: NodeId| Some(usize::from(graph.parts().node_kind[node.index()]));

    let mut names: Vec<String> = vec![BUILT_IN.to_owned(), NO_SCRIPT.to_owned()];
    let mut group_of_name: FxHashMap<&str, u32> = FxHashMap::default();
    let mut script_of_closure = |function: NodeId| -> u32 {
        let script = named_target(graph, function, &shared)
            .and_then(|info| {
                named_target(graph, info, &script_or_debug_info)
                    .or_else(|| named_target(graph, info, &script))
            })
            .filter(|&script| kind_of(script) == code && !graph.name(script).is_empty());
        match script {
            None => BUILT_IN_GROUP,
            Some(script) => *group_of_name.entry(graph.name(script)).or_insert_with(|| {
                names.push(graph.name(script).to_owned());
                (names.len() - 1) as u32
            }),
        }
    };
    // Objects share a few prototypes: each prototype's constructor is looked up once.
    let mut group_of_prototype: FxHashMap<u32, u32> = FxHashMap::default();
    let mut group_of = vec![NO_GROUP; graph.node_count()];
    for node in graph.nodes() {
        if graph.is_synthetic(node) {
            continue;
        }
        let node_kind = kind_of(node);
        group_of[node.index()] = if node_kind == closure {
            script_of_closure(node)
        } else if node_kind == object {
            match named_target(graph, node, &proto) {
                None => NO_SCRIPT_GROUP,
                Some(prototype) => match group_of_prototype.get(&prototype.to_raw()) {
                    Some(&group) => group,
                    None => {
                        let function = named_target(graph, prototype, &constructor)
                            .filter(|&function| kind_of(function) == closure);
                        let group = function.map_or(BUILT_IN_GROUP, &mut script_of_closure);
                        group_of_prototype.insert(prototype.to_raw(), group);
                        group
                    }
                },
            }
        } else {
            NO_SCRIPT_GROUP
        };
    }
    (group_of, names)
}

/// Counts, shallow and retained sizes per group; retained through one walk of the dominator
/// tree that adds a member's retained size only while no other member is open above it.
fn totals(
    graph: &HeapGraph,
    analysis: &Analysis,
    group_of: &[u32],
    names: Vec<String>,
) -> Vec<GroupRow> {
    let n_groups = names.len();
    let tree = &analysis.dominators;
    let mut count = vec![0u64; n_groups];
    let mut shallow = vec![0u64; n_groups];
    let mut types: Vec<rustc_hash::FxHashSet<StringId>> = vec![Default::default(); n_groups];
    for node in graph.nodes() {
        let group = group_of[node.index()];
        if group == NO_GROUP {
            continue;
        }
        count[group as usize] += 1;
        shallow[group as usize] += graph.shallow_size(node);
        types[group as usize].insert(graph.type_id(node));
    }
    let mut retained = vec![0u64; n_groups];
    let children = analysis.dominator_children(graph);
    let mut open = vec![0u32; n_groups];
    let mut enter = |node: usize, open: &mut [u32]| {
        let group = group_of[node];
        if group != NO_GROUP {
            if open[group as usize] == 0 {
                retained[group as usize] += tree.retained_size.get(node);
            }
            open[group as usize] += 1;
        }
    };
    let root = graph.root().index();
    enter(root, &mut open);
    let mut stack: Vec<(u32, usize)> = vec![(root as u32, children.range(root).0)];
    while let Some(top) = stack.last_mut() {
        let (node, at) = (top.0 as usize, top.1);
        if at < children.range(node).1 {
            let (child, next) = children.decode(node, at);
            top.1 = next;
            enter(child as usize, &mut open);
            stack.push((child, children.range(child as usize).0));
        } else {
            stack.pop();
            let group = group_of[node];
            if group != NO_GROUP {
                open[group as usize] -= 1;
            }
        }
    }
    let mut rows: Vec<GroupRow> = names
        .into_iter()
        .enumerate()
        .filter(|&(group, _)| count[group] > 0)
        .map(|(group, name)| GroupRow {
            group: name,
            count: count[group],
            shallow_size: shallow[group],
            retained_size: retained[group],
            types: types[group].len() as u64,
        })
        .collect();
    rows.sort_by(|a, b| {
        (std::cmp::Reverse(a.retained_size), &a.group)
            .cmp(&(std::cmp::Reverse(b.retained_size), &b.group))
    });
    rows
}
