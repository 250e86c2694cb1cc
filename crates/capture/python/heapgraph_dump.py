"""heapgraph's Python dumper: writes the live object graph of this process as a .hgd file.

    import heapgraph_dump
    heapgraph_dump.dump("svc.hgd")        # now
    heapgraph_dump.install()              # on SIGUSR2: svc-<pid>-<time>.hgd in the working directory,
                                          # or where `heapgraph record --act` asks

Analyse the file anywhere, later: `heapgraph summary svc.hgd`, `heapgraph who-holds svc.hgd --type
SessionCache`, `heapgraph diff before.hgd after.hgd`. Standard library only, Python 3.9 to 3.14.
The file layout is heapgraph's .hgd (docs/formats.md in the heapgraph repository).

What is recorded: every object that `gc.get_objects()` returns, plus the untracked objects they
refer to (str, bytes, int, float, tuples of atoms, ...) up to `max_untracked`. For each: `id()`,
the type as `module.name` (what `objgraph.typestats(shortnames=False)` counts), `sys.getsizeof`,
whether the garbage collector tracks it (node kind `object`, or `untracked`), a short label (a
string's first 64 characters, a function's, class's or module's name) and its references, named
where that is cheap: dict keys, attributes, list and tuple indices, closure variables, frame
locals. Roots: every module of `sys.modules`, every thread's stack, and `gc.garbage`. A weakref's
referent is a weak reference (so are `WeakValueDictionary` values and `WeakKeyDictionary` keys,
which are held through weakrefs). `numpy.ndarray` and `torch.Tensor` objects also record their
data buffer (address, bytes, device).

How the picture stays consistent: the object list is taken first, then the walk encodes into
in-memory columns with the interpreter's thread switching held off (no I/O, no Python code of
the program runs during the walk), and the file is written once the walk is done. On a
free-threaded build there is no GIL to hold; the file's notes say so.
"""

# `heapgraph capture python --pid` imports these in the process before it takes the list of its
# objects (`CAPTURE_IMPORTS` in the heapgraph-capture crate), so that they are in every dump it
# takes: keep the two lists the same. None leaves garbage cycles behind on its first import
# where the interpreter's own startup has loaded `collections` (`array` registers with
# `collections.abc` from 3.10): a capture that left garbage would show it in the next one.
# `signal` (through `enum`), `threading`, `types`, `weakref`, `dis` and `runpy` do, on some
# version: what they gave is taken from the built-in modules below, or from the program's own
# `threading` if it has one.
import _signal
import _thread
import _weakref
import gc
import os
import sys
import time
from array import array
from opcode import opmap as _opmap

__all__ = ["dump", "install"]

FORMAT_VERSION = 1
# Rows per chunk: small, so that a file cut short (the process killed while writing) keeps most
# of what was written before the cut.
CHUNK_ROWS = 1 << 14
LABEL_CHARS = 64

# Edge kind codes of the .hgd format (V8's order).
CONTEXT, ELEMENT, PROPERTY, INTERNAL, HIDDEN, SHORTCUT, WEAK = range(7)

# Node kinds, in the order of the node_kinds chunk.
KIND_ROOT, KIND_THREAD, KIND_OBJECT, KIND_UNTRACKED = range(4)
KIND_NAMES = ["root", "thread", "object", "untracked"]
KIND_SYNTHETIC = [True, True, False, False]

_ATOMS = (str, bytes, int, float, complex, bool, type(None))

# Py_TPFLAGS_HEAPTYPE: a class made at run time (`class` statements), as opposed to a built-in.
HEAPTYPE = 1 << 9


# The types `types` names, taken from objects of each kind.
def _function():
    pass


_FunctionType = type(_function)
_CodeType = type(_function.__code__)
_ModuleType = type(sys)
_CellType = type((lambda value: lambda: value)(0).__closure__[0])
_FrameType = type(sys._getframe())
_SimpleNamespace = type(sys.implementation)


# --- MessagePack, only what the format needs --------------------------------------------------

def _mp_str(out, text):
    data = text.encode("utf-8", "surrogatepass")
    n = len(data)
    if n < 32:
        out.append(0xA0 | n)
    elif n < 256:
        out += b"\xd9" + bytes((n,))
    elif n < 65536:
        out += b"\xda" + n.to_bytes(2, "big")
    else:
        out += b"\xdb" + n.to_bytes(4, "big")
    out += data


def _mp_bin(out, data):
    n = len(data)
    if n < 256:
        out += b"\xc4" + bytes((n,))
    elif n < 65536:
        out += b"\xc5" + n.to_bytes(2, "big")
    else:
        out += b"\xc6" + n.to_bytes(4, "big")
    out += data


def _mp_uint(out, value):
    if value < 128:
        out.append(value)
    elif value < 256:
        out += b"\xcc" + bytes((value,))
    elif value < 65536:
        out += b"\xcd" + value.to_bytes(2, "big")
    elif value < 1 << 32:
        out += b"\xce" + value.to_bytes(4, "big")
    else:
        out += b"\xcf" + value.to_bytes(8, "big")


def _mp_map_header(out, n):
    if n < 16:
        out.append(0x80 | n)
    else:
        out += b"\xde" + n.to_bytes(2, "big")


def _mp_array_header(out, n):
    if n < 16:
        out.append(0x90 | n)
    elif n < 65536:
        out += b"\xdc" + n.to_bytes(2, "big")
    else:
        out += b"\xdd" + n.to_bytes(4, "big")


def _mp_value(out, value):
    if value is None:
        out.append(0xC0)
    elif value is True:
        out.append(0xC3)
    elif value is False:
        out.append(0xC2)
    elif isinstance(value, int):
        _mp_uint(out, value)
    elif isinstance(value, str):
        _mp_str(out, value)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        _mp_bin(out, bytes(value))
    elif isinstance(value, list):
        _mp_array_header(out, len(value))
        for item in value:
            _mp_value(out, item)
    elif isinstance(value, dict):
        _mp_map_header(out, len(value))
        for key, item in value.items():
            _mp_str(out, key)
            _mp_value(out, item)
    else:
        raise TypeError("cannot encode %r" % (type(value),))


def _record(pairs):
    """One record: a map written in the order given (the header's first key must be `magic`)."""
    out = bytearray()
    _mp_map_header(out, len(pairs))
    for key, value in pairs:
        _mp_str(out, key)
        _mp_value(out, value)
    return out


def _le(column):
    """A column's bytes, little-endian whatever the machine."""
    if sys.byteorder != "little":
        column = array(column.typecode, column)
        column.byteswap()
    return column.tobytes()


# --- The walk ---------------------------------------------------------------------------------

def _columns():
    """Nodes and edges as columns; edges name their target by object id (`to_object`). A plain
    namespace of arrays and functions, not a class: a class is a garbage cycle once dropped, and
    an injected capture must leave nothing behind for the collector."""
    strings = {"": 0}
    object_id = array("Q")
    kind = array("B")
    type_name = array("I")
    name = array("I")
    shallow_size = array("Q")
    edge_count = array("I")
    refcount = array("I")
    edge_to = array("Q")
    edge_kind = array("B")
    edge_name = array("I")

    def string(text, strings=strings):
        found = strings.get(text)
        if found is None:
            found = strings[text] = len(strings)
        return found

    def node(object_id_, kind_, type_name_, label, size, string=string):
        object_id.append(object_id_)
        kind.append(kind_)
        type_name.append(type_name_)
        name.append(string(label) if label else 0)
        shallow_size.append(size)
        edge_count.append(0)
        refcount.append(0)
        return len(object_id) - 1

    def edge(target_id, kind_, name_):
        edge_to.append(target_id)
        edge_kind.append(kind_)
        edge_name.append(name_)

    return _SimpleNamespace(
        object_id=object_id, kind=kind, type_name=type_name, name=name,
        shallow_size=shallow_size, edge_count=edge_count, refcount=refcount, edge_to=edge_to,
        edge_kind=edge_kind, edge_name=edge_name, strings=strings, string=string, node=node,
        edge=edge,
        buffers={"node": array("I"), "address": array("Q"), "nbytes": array("Q"),
                 "device": array("I"), "owned": array("B")},
        fill={"node": array("I"), "elements": array("Q"), "capacity": array("Q"),
              "table_bytes": array("Q"), "spare_bytes": array("Q")})


def _type_name(cls):
    """`module.name`, as objgraph.typestats(shortnames=False) names a type."""
    module = getattr(cls, "__module__", None)
    return "%s.%s" % (module, cls.__name__) if module else cls.__name__


def _label(obj, cls):
    """A string's first characters, or the name of a function, class, module or code object."""
    if cls is str:
        return obj[:LABEL_CHARS]
    if cls is _FunctionType or cls is _ModuleType or isinstance(obj, type):
        try:
            name = obj.__qualname__ if cls is _FunctionType else obj.__name__
        except Exception:
            return None
        return name if type(name) is str else None
    if cls is _CodeType:
        return obj.co_name
    return None


def _stored_attributes(code):
    """The attribute names a function assigns (`x.name = …`), nested functions included, read
    from the bytecode: (opcode, argument) byte pairs, with EXTENDED_ARG prefixes."""
    store_attr = _opmap["STORE_ATTR"]
    extended_arg = _opmap["EXTENDED_ARG"]
    names = []
    stack = [code]
    while stack:
        code = stack.pop()
        raw = code.co_code
        extended = 0
        for at in range(0, len(raw) - 1, 2):
            op, arg = raw[at], raw[at + 1] | extended
            if op == extended_arg:
                extended = arg << 8
                continue
            extended = 0
            if op == store_attr and arg < len(code.co_names):
                names.append(code.co_names[arg])
        stack.extend(c for c in code.co_consts if isinstance(c, _CodeType))
    return names


def _class_lookup(cls, name, default):
    """`name` in the class's own MRO dicts, without running any descriptor."""
    for klass in getattr(cls, "__mro__", (cls,)):
        namespace = getattr(klass, "__dict__", {})
        if name in namespace:
            return namespace[name]
    return default


def _attribute_candidates(cls, by_class):
    """Names for the attribute values of instances. Since 3.11 they are kept inline and reading
    `__dict__` would create a dict per object, so names are found another way: candidates are
    the names the class's own methods use (`co_names`) that are not attributes of the class
    itself (so no descriptor, property or cached_property can run), and a value is named by the
    candidate for which `object.__getattribute__` gives that very object back. `by_class`
    keeps each class's candidates for the walk."""
    found = by_class.get(cls)
    if found is None:
        names = []
        seen = set()
        for klass in getattr(cls, "__mro__", (cls,)):
            if klass is object or type(klass).__module__ != "builtins" or \
                    klass.__module__ == "builtins":
                continue
            for value in list(klass.__dict__.values()):
                code = getattr(getattr(value, "__func__", value), "__code__", None)
                if isinstance(code, _CodeType):
                    for name in _stored_attributes(code):
                        if name not in seen:
                            seen.add(name)
                            names.append(name)
        missing = object()
        found = by_class[cls] = [
            n for n in names if _class_lookup(cls, n, missing) is missing
        ]
    return found


def _buffer_of(obj, cls, columns, node):
    """Records the data buffer of a numpy array or a torch tensor."""
    module = getattr(cls, "__module__", "") or ""
    try:
        if module == "numpy" and cls.__name__ == "ndarray":
            address = obj.__array_interface__["data"][0]
            columns.buffers["node"].append(node)
            columns.buffers["address"].append(address)
            columns.buffers["nbytes"].append(obj.nbytes)
            columns.buffers["device"].append(columns.string("cpu"))
            columns.buffers["owned"].append(1 if obj.base is None else 0)
        elif module.startswith("torch") and cls.__name__ in ("Tensor", "Parameter"):
            storage = obj.untyped_storage()
            columns.buffers["node"].append(node)
            columns.buffers["address"].append(storage.data_ptr())
            columns.buffers["nbytes"].append(storage.nbytes())
            columns.buffers["device"].append(columns.string(str(obj.device)))
            columns.buffers["owned"].append(1 if obj._base is None else 0)
    except Exception:
        pass


# A reference count at or above 2**31 is an immortal object's (CPython 3.12 on: `_Py_IsImmortal`
# tests the low 32 bits' sign). It says nothing about holders: the runtime keeps the object for
# ever, so it is written as the largest count, which the reader makes a root.
IMMORTAL_COUNT = 1 << 31
MAX_COUNT = 0xFFFFFFFF


def _raw_counts(objects, getrefcount=sys.getrefcount):
    """`sys.getrefcount` of each object, in C (`map`): each count includes the list's
    reference and the one `map` holds during the call, whatever the interpreter's bytecode
    borrows (3.14's LOAD_FAST_BORROW does not count a local's push, so a count taken inside a
    Python function depends on how it was called)."""
    return list(map(getrefcount, objects))


def _walk_references():
    """The references `_raw_counts` itself adds to an object's count: measured on an object
    that only its list holds, by the very same code, on this interpreter."""
    return _raw_counts([object()])[0]


def _references(raw, walk_references):
    """An object's count less the walk's own references; immortal objects' counts are
    `MAX_COUNT`."""
    if raw >= IMMORTAL_COUNT:
        return MAX_COUNT
    return max(raw - walk_references, 0)


# --- Fill of containers ------------------------------------------------------------------------
#
# What `heapgraph waste` measures: for each list, dict and set (and subclasses whose size
# CPython computes as for the base), the elements, the slots allocated, the bytes of the table
# allocated beside the object, and the bytes a right-sized copy would not have. Everything is
# read from what CPython exposes: the base type's own `__sizeof__` (which adds the separately
# allocated table to `tp_basicsize`) less `type(obj).__basicsize__`. Where the rule behind a
# `__sizeof__` is cited, it is the same in 3.9 through 3.14 (Objects/listobject.c,
# setobject.c, dictobject.c of each).

# Per dict key kind, the entries' width is measured, not assumed: 24 bytes (hash, key, value)
# up to 3.10; from 3.11, 16 for a table of str keys only (no hash stored) and 24 for others.
def _dict_tables():
    """{bytes of a combined dict's keys table: (log2 of its slots, entry bytes)}, calibrated on
    this interpreter from two small dicts of each key kind; None where the measurements do not
    fit the layout (then no dict is measured).

    `_PyDict_KeysSize` is a header, one index of 1, 2, 4 or 8 bytes per slot (by the table's
    size: under 2^8, 2^16, 2^32 slots), and an entry per usable slot, `USABLE_FRACTION(n) =
    2n/3`. A dict grows at the 6th insertion from 8 slots to 16 (`GROWTH_RATE = used*3`,
    rounded up to a power of two), which gives two sizes and so the header and the entry."""
    def extra(d):
        return dict.__sizeof__(d) - dict.__basicsize__
    layouts = []
    for keys in (["a", "b", "c", "d", "e", "f"], [1, 2, 3, 4, 5, 6]):
        d = {}
        d[keys[0]] = None
        small = extra(d)
        for key in keys[1:]:
            d[key] = None
        large = extra(d)
        # large - small = 8 more index bytes and 5 more entries.
        entry, rest = divmod(large - small - 8, 5)
        header = small - 8 - 5 * entry
        if rest or entry <= 0 or header < 0:
            return None
        layouts.append((header, entry))
    if layouts[0][0] != layouts[1][0]:
        return None
    tables = {}
    for header, entry in layouts:
        for log2 in range(3, 40):
            slots = 1 << log2
            index = 1 if log2 < 8 else 2 if log2 < 16 else 4 if log2 < 32 else 8
            tables.setdefault(header + index * slots + (2 * slots // 3) * entry, (log2, entry))
    return tables


def _fill_recorder(fill):
    """`rule_of(cls)`: the function that records the fill of a `cls` object at a node, or None
    for a class that is not measured."""
    tables = _dict_tables()
    pointer = tuple.__itemsize__
    setentry = 2 * pointer
    node_append = fill["node"].append
    elements_append = fill["elements"].append
    capacity_append = fill["capacity"].append
    table_append = fill["table_bytes"].append
    spare_append = fill["spare_bytes"].append
    list_sizeof = list.__sizeof__
    set_sizeof = set.__sizeof__
    frozenset_sizeof = frozenset.__sizeof__
    dict_sizeof = dict.__sizeof__

    def record(node, elements, capacity, table, spare):
        node_append(node)
        elements_append(elements)
        capacity_append(capacity)
        table_append(table)
        spare_append(spare)

    def of_list(obj, node, basic):
        # list___sizeof__: tp_basicsize + allocated * sizeof(void*). The right-sized list is
        # `obj.copy()` (list_slice: PyList_New(n), exactly n slots).
        table = list_sizeof(obj) - basic
        allocated = table // pointer
        n = len(obj)
        record(node, n, allocated, table, max(0, allocated - n) * pointer)

    def set_rule(sizeof):
        def of_set(obj, node, basic):
            # set___sizeof__: tp_basicsize, plus (mask + 1) * sizeof(setentry) when the table
            # is not the 8-slot smalltable inside the object. The right-sized set is `set(s)`:
            # set_merge keeps the smalltable for up to 4 (fill*5 < mask*3) and otherwise
            # resizes to the smallest power of two above 2 * used (set_table_resize).
            table = sizeof(obj) - basic
            slots = table // setentry if table else 8
            n = len(obj)
            needed = 0
            if n * 5 >= 7 * 3:
                needed = 8
                while needed <= 2 * n:
                    needed <<= 1
                needed *= setentry
            record(node, n, slots, table, max(0, table - needed))
        return of_set

    def of_dict(obj, node, basic):
        # _PyDict_SizeOf: tp_basicsize, plus the keys table when the dict owns it (a split
        # table's keys belong to the class, and its size fits no combined table: not measured).
        # The right-sized dict is what `dict(d)` makes of a dict with deleted entries:
        # `estimate_log2_keysize(n)`, the smallest power of two >= (3n + 1) / 2, at least 8
        # (an empty dict shares the static empty table: 0 bytes).
        table = dict_sizeof(obj) - basic
        n = len(obj)
        if table == 0:
            record(node, n, 0, 0, 0)
            return
        found = tables.get(table)
        if found is None:
            return
        log2, entry = found
        slots = 1 << log2
        needed = 0
        if n:
            size = 8
            while size < (3 * n + 1) // 2:
                size <<= 1
            index = 1 if size < 1 << 8 else 2 if size < 1 << 16 else 4 if size < 1 << 32 else 8
            header = table - (1 if log2 < 8 else 2 if log2 < 16 else 4 if log2 < 32 else 8) \
                * slots - (2 * slots // 3) * entry
            needed = header + index * size + (2 * size // 3) * entry
        record(node, n, 2 * slots // 3, table, max(0, table - needed))

    rules = {}

    def rule_of(cls):
        rule = None
        # A subclass whose base's __sizeof__ is its own (defaultdict, Counter): measured as the
        # base. OrderedDict keeps more than the table, and its sizes fit no rule: not measured.
        sizeof = getattr(cls, "__sizeof__", None)
        if issubclass(cls, list) and sizeof is list_sizeof:
            rule = of_list
        elif issubclass(cls, frozenset) and sizeof is frozenset_sizeof:
            rule = set_rule(frozenset_sizeof)
        elif issubclass(cls, set) and sizeof is set_sizeof:
            rule = set_rule(set_sizeof)
        elif issubclass(cls, dict) and tables is not None and sizeof is dict_sizeof:
            rule = of_dict
        if rule is not None:
            basic = cls.__basicsize__
            bound = rule
            rule = lambda obj, node: bound(obj, node, basic)
        rules[cls] = rule
        return rule

    return rules, rule_of


def _walk(columns, root_frames, objects, skip, max_untracked):
    """Encodes `objects` (gc-tracked) and what they refer to into `columns`. Returns notes.

    Written for speed: every per-object step is a local name, and atoms (str, int, …), most of
    the untracked objects, take a short path with no referents to look at.

    Reference counts are taken first, for all the gc-tracked objects at once, before the
    walk's own tables (types, attribute names) hold any of them; those of untracked objects
    once the walk has found them all."""
    walk_references = _walk_references()
    object_counts = _raw_counts(objects)
    notes = []
    type_ids = {}
    attribute_names = {}
    class_candidates = {}
    getattribute = object.__getattribute__
    get_referents = gc.get_referents
    is_tracked = gc.is_tracked
    getsizeof = sys.getsizeof
    string = columns.string
    node_id_append = columns.object_id.append
    node_kind_append = columns.kind.append
    node_type_append = columns.type_name.append
    node_name_append = columns.name.append
    node_size_append = columns.shallow_size.append
    edge_count = columns.edge_count
    edge_count_append = edge_count.append
    refcount_append = columns.refcount.append
    edge_to = columns.edge_to
    edge_to_append = edge_to.append
    edge_kind_append = columns.edge_kind.append
    edge_kind_frombytes = columns.edge_kind.frombytes
    edge_name_append = columns.edge_name.append
    edge_name_extend = columns.edge_name.extend
    strings = columns.strings
    atoms = frozenset(_ATOMS)
    function_type = _FunctionType
    cell_type = _CellType
    frame_type = _FrameType
    module_type = _ModuleType
    code_type = _CodeType
    # Not __dict__ or __annotations__: reading them would create them.
    function_fields = ("__code__", "__globals__", "__defaults__", "__kwdefaults__",
                       "__closure__", "__module__", "__name__", "__qualname__",
                       "__doc__")
    # Stored fields only: co_varnames and co_code are built afresh on each read since 3.11.
    code_fields = ("co_consts", "co_names", "co_filename", "co_name", "co_qualname")
    type_dict = type.__dict__["__dict__"].__get__
    # A module's namespace, read through ModuleType's own descriptor (no user code runs).
    module_dict = _ModuleType.__dict__["__dict__"].__get__
    buffer_classes = _buffer_classes()
    labelled = frozenset((_FunctionType, _ModuleType, _CodeType))
    fill_rules, fill_rule_of = _fill_recorder(columns.fill)
    fill_rules_get = fill_rules.get
    no_rule = object()

    name_id = columns.string

    # Untracked objects reached as referents: encoded once each, up to the bound.
    untracked_seen = set()
    seen_add = untracked_seen.add
    pending = []
    pending_append = pending.append
    dropped = [0]
    # Containers met half-filled (their empty slots left out).
    unfilled = [0]

    strings_get = strings.get

    # Atoms (str, int, …) are most untracked objects and have no references: they are only
    # gathered during the walk, and their nodes written at the end in bulk (C-speed `map`s).
    for atom_type in atoms:
        type_ids[atom_type] = string(_type_name(atom_type))
    atom_strs = []
    atom_others = []
    str_append = atom_strs.append
    other_append = atom_others.append

    # Hot functions take what they use as default arguments: local loads, not closure cells.
    def first_seen(target, target_id, untracked_seen=untracked_seen, seen_add=seen_add,
                   str_append=str_append, other_append=other_append, atoms=atoms,
                   pending_append=pending_append, max_untracked=max_untracked):
        """An untracked object met for the first time: atoms are written at the end, others
        walked later. Past the bound the object is left out, and the reader drops the
        references to it, with a note."""
        if len(untracked_seen) >= max_untracked:
            dropped[0] += 1
            return
        seen_add(target_id)
        target_type = type(target)
        if target_type is str:
            str_append(target)
        elif target_type in atoms:
            other_append(target)
        else:
            pending_append(target)

    def refer(target, kind, name, untracked_seen=untracked_seen, is_tracked=is_tracked,
              first_seen=first_seen, edge_to_append=edge_to_append,
              edge_kind_append=edge_kind_append, edge_name_append=edge_name_append):
        target_id = id(target)
        if target_id not in untracked_seen and not is_tracked(target):
            first_seen(target, target_id)
        edge_to_append(target_id)
        edge_kind_append(kind)
        edge_name_append(name)

    element_kind = bytes((ELEMENT,))

    key_name = name_id("key")
    dict_name = name_id("__dict__")
    class_name = name_id("__class__")
    referent_name = name_id("referent")
    cell_name = name_id("cell_contents")
    f_back_name = name_id("f_back")
    f_code_name = name_id("f_code")
    f_locals_name = name_id("f_locals")
    f_globals_name = name_id("f_globals")
    f_builtins_name = name_id("f_builtins")

    def encode(obj, kind, references):
        cls = type(obj)
        type_id = type_ids.get(cls)
        if type_id is None:
            type_id = type_ids[cls] = string(_type_name(cls))
        try:
            size = getsizeof(obj)
        except Exception:
            size = 0
        node = len(edge_count)
        node_id_append(id(obj))
        node_kind_append(kind)
        node_type_append(type_id)
        node_size_append(size)
        if cls in labelled or isinstance(obj, type):
            label = _label(obj, cls)
            node_name_append(string(label) if label else 0)
        else:
            node_name_append(0)
        edge_count_append(0)
        refcount_append(references)
        fill_rule = fill_rules_get(cls, no_rule)
        if fill_rule is no_rule:
            fill_rule = fill_rule_of(cls)
        if fill_rule is not None:
            fill_rule(obj, node)
        start = len(edge_to)
        if cls is dict:
            # The hot loops: `refer` written out, as a call per reference is most of the cost.
            for key, value in obj.items():
                key_id = id(key)
                if key_id not in untracked_seen and not is_tracked(key):
                    first_seen(key, key_id)
                value_id = id(value)
                if value_id not in untracked_seen and not is_tracked(value):
                    first_seen(value, value_id)
                edge_to_append(key_id)
                edge_kind_append(INTERNAL)
                edge_name_append(key_name)
                edge_to_append(value_id)
                key_type = type(key)
                if key_type is str:
                    name = strings_get(key)
                    edge_kind_append(PROPERTY)
                    edge_name_append(name if name is not None else name_id(key))
                elif key_type is int and 0 <= key < 4294967296:
                    edge_kind_append(ELEMENT)
                    edge_name_append(key)
                else:
                    edge_kind_append(INTERNAL)
                    edge_name_append(0)
        elif cls is list or cls is tuple:
            count = len(obj)
            items = obj
            # A container that C code is still filling while it runs Python code (the
            # signal came while `tuple(<generator>)` ran the generator) is tracked with empty
            # (NULL) slots: iterating it here would crash the interpreter, but the collector's
            # traversal skips them, so its referents are the filled slots. Their count tells.
            referents = get_referents(obj)
            if len(referents) != count:
                # The traversal visits the slots from the last; such a tuple fills from the
                # first, so the filled slots are 0, 1, ….
                referents.reverse()
                items = referents
                count = len(referents)
                unfilled[0] += 1
            for value in items:
                if not is_tracked(value):
                    value_id = id(value)
                    if value_id not in untracked_seen:
                        first_seen(value, value_id)
            edge_to.extend(map(id, items))
            edge_kind_frombytes(element_kind * count)
            edge_name_extend(range(count))
        elif cls is function_type:
            # Closure cells by variable name; the function's own fields by theirs.
            cells = obj.__closure__ or ()
            named = {id(cell): (CONTEXT, name) for cell, name in zip(cells, obj.__code__.co_freevars)}
            for field in function_fields:
                value = getattr(obj, field, None)
                if value is not None and id(value) not in named:
                    named[id(value)] = (INTERNAL, field)
            for target in get_referents(obj):
                kind_name = named.get(id(target))
                if kind_name is not None:
                    refer(target, kind_name[0], name_id(kind_name[1]))
                else:
                    refer(target, INTERNAL, 0)
        elif cls is cell_type:
            for target in get_referents(obj):
                refer(target, INTERNAL, cell_name)
        elif cls is frame_type:
            # What a frame holds, named by identity: its code, namespaces and locals. The
            # collector's traversal of a frame gives everything it holds up to 3.10 (locals,
            # temporaries on its stack), and only `f_back` from 3.11; what it did not give is
            # added from the frame's own attributes, so each reference is one edge either way.
            own = []
            try:
                local_vars = obj.f_locals
            except Exception:
                local_vars = None
            if local_vars is not None and local_vars is obj.f_globals:
                own.append((local_vars, INTERNAL, f_locals_name))
            elif local_vars is not None:
                if type(local_vars) is dict:
                    # Up to 3.12 a function's frame keeps the dict that reading `f_locals`
                    # makes, a copy of the locals named below (for a class body, its
                    # namespace). The running frames' are made before the object list is
                    # taken (`_touch_locals`), so that every dump has them.
                    own.append((local_vars, INTERNAL, f_locals_name))
                for name, value in list(local_vars.items()):
                    own.append((value, PROPERTY, name_id(name)))
            own.append((obj.f_code, INTERNAL, f_code_name))
            # A running frame's `f_back` is made on request from 3.11: not traversed.
            back = obj.f_back
            if back is not None:
                own.append((back, INTERNAL, f_back_name))
            names = {}
            for target, kind_, name in own:
                names.setdefault(id(target), (kind_, name))
            if back is not None:
                names[id(back)] = (INTERNAL, f_back_name)
            names.setdefault(id(obj.f_globals), (INTERNAL, f_globals_name))
            names.setdefault(id(obj.f_builtins), (INTERNAL, f_builtins_name))
            traversed = set()
            for target in get_referents(obj):
                traversed.add(id(target))
                kind_, name = names.get(id(target), (INTERNAL, 0))
                refer(target, kind_, name)
            for target, kind_, name in own:
                if id(target) not in traversed:
                    refer(target, kind_, name)
            own = names = traversed = local_vars = back = None
        elif cls is code_type:
            for field in code_fields:
                target = getattr(obj, field, None)
                if target is not None:
                    refer(target, INTERNAL, name_id(field))
        elif isinstance(obj, type) and not obj.__flags__ & HEAPTYPE:
            # A built-in type is not tracked by the collector and has no referents to ask for:
            # its namespace (through the mappingproxy), bases and MRO are named here.
            for target in get_referents(type_dict(obj)):
                refer(target, INTERNAL, dict_name)
            refer(obj.__bases__, INTERNAL, name_id("__bases__"))
            refer(obj.__mro__, INTERNAL, name_id("__mro__"))
        elif isinstance(obj, _weakref_types):
            target = obj()
            if target is not None:
                refer(target, WEAK, referent_name)
            for target in get_referents(obj):
                refer(target, INTERNAL, 0)
        else:
            referents = get_referents(obj)
            candidates = class_candidates.get(cls)
            if candidates is None:
                candidates = class_candidates[cls] = (
                    () if isinstance(obj, type) else _attribute_candidates(cls, attribute_names))
            names = None
            if candidates:
                names = {}
                for name in candidates:
                    try:
                        value = getattribute(obj, name)
                    except Exception:
                        continue
                    names.setdefault(id(value), name)
            lone_dict = len(referents) == 2 and referents[1] is cls
            own_dict = module_dict(obj) if isinstance(obj, module_type) else None
            for target in referents:
                name = names.get(id(target)) if names else None
                if name is not None:
                    refer(target, PROPERTY, name_id(name))
                elif target is cls:
                    refer(target, INTERNAL, class_name)
                elif target is own_dict or (lone_dict and type(target) is dict):
                    # The instance's own __dict__, already materialised (never created here).
                    refer(target, INTERNAL, dict_name)
                else:
                    refer(target, INTERNAL, 0)
        edge_count[node] = len(edge_to) - start
        if cls in buffer_classes:
            _buffer_of(obj, cls, columns, node)

    # The threads' stacks first: frame objects made while listing the roots are not in
    # `objects`, and without them nothing would hold the frames' locals. They are encoded
    # here, once: references to them do not queue them again.
    untracked_seen.update(map(id, root_frames))
    for obj in root_frames:
        # A running frame's object is not tracked by the collector until its frame returns
        # (from 3.11). It is held by its thread, which the thread's node and the `f_back`
        # chain stand for; the count is not written (0), or the C stack's reference (up to
        # 3.10) would make each frame a root of its own, beside its thread.
        encode(obj, KIND_OBJECT if is_tracked(obj) else KIND_UNTRACKED, 0)
    for obj, raw in zip(objects, object_counts):
        if id(obj) not in skip:
            references = raw - walk_references
            if not 0 <= references < IMMORTAL_COUNT:
                references = _references(raw, walk_references)
            encode(obj, KIND_OBJECT, references)
    object_counts = None
    # Untracked objects other than atoms (tuples and dicts of atoms, built-in types, code):
    # counted once all are found, when only `walked` holds them beside their own holders.
    walked = []
    walked_nodes = array("I")
    while pending:
        obj = pending.pop()
        walked_nodes.append(len(edge_count))
        walked.append(obj)
        encode(obj, KIND_UNTRACKED, 0)
    obj = None
    refcount = columns.refcount
    for node, raw in zip(walked_nodes, _raw_counts(walked)):
        refcount[node] = _references(raw, walk_references)
    walked = None
    for batch, labelled_batch in ((atom_others, False), (atom_strs, True)):
        count = len(batch)
        columns.object_id.extend(map(id, batch))
        columns.kind.frombytes(bytes((KIND_UNTRACKED,)) * count)
        columns.type_name.extend(map(type_ids.__getitem__, map(type, batch)))
        columns.shallow_size.extend(map(getsizeof, batch))
        if labelled_batch:
            # setdefault(label, len(strings)): a new label gets the next string id.
            labels = [text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS] for text in batch]
            columns.name.extend(map(strings.setdefault, labels, map(len, [strings] * count)))
        else:
            columns.name.frombytes(bytes(4 * count))
        columns.edge_count.frombytes(bytes(4 * count))
        columns.refcount.frombytes(bytes(4 * count))
    if dropped[0]:
        notes.append("%d references to untracked objects past the bound of %d were left out"
                     % (dropped[0], max_untracked))
    if unfilled[0]:
        notes.append("%d list(s) or tuple(s) were being filled when the dump was taken (the "
                     "signal came while C code building them ran Python code, as "
                     "tuple(<generator>) does); only their filled slots are in the dump"
                     % unfilled[0])
    return notes


# weakref.ref and its subclasses (KeyedRef, WeakMethod): their referent is a weak reference.
_weakref_types = (_weakref.ref,)


def _buffer_classes():
    """The array classes whose data buffers are recorded, if their modules are loaded."""
    found = set()
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(getattr(numpy, "ndarray", None), type):
        found.add(numpy.ndarray)
    torch = sys.modules.get("torch")
    if torch is not None:
        for name in ("Tensor",):
            cls = getattr(torch, name, None)
            if isinstance(cls, type):
                found.add(cls)
        parameter = getattr(getattr(torch, "nn", None), "Parameter", None)
        if isinstance(parameter, type):
            found.add(parameter)
    return found


# --- Roots ------------------------------------------------------------------------------------

def _roots(columns, frames_by_thread, thread_names):
    """The synthetic root (node 0) and one node per thread. Module and gc.garbage edges go from
    the root; each thread's edge goes to its innermost frame."""
    root = columns.node(0, KIND_ROOT, columns.string("(root)"), "(root)", 0)
    n = 0
    for name, module in list(sys.modules.items()):
        if module is not None:
            columns.edge(id(module), PROPERTY, columns.string("module " + name))
            n += 1
    columns.edge(id(gc.garbage), PROPERTY, columns.string("gc.garbage"))
    n += 1
    thread_ids = sorted(frames_by_thread)
    for index, ident in enumerate(thread_ids):
        columns.edge(index + 1, SHORTCUT, columns.string("thread"))
        n += 1
    columns.edge_count[root] = n
    for index, ident in enumerate(thread_ids):
        label = 'Thread "%s"' % thread_names.get(ident, ident)
        node = columns.node(index + 1, KIND_THREAD, columns.string("(thread)"), label, 0)
        columns.edge(id(frames_by_thread[ident]), PROPERTY, columns.string("frame"))
        columns.edge_count[node] = 1


# --- Writing ----------------------------------------------------------------------------------

def _chunks(columns, header_pairs):
    yield _record(header_pairs)
    count = 2
    yield _record([("type", "node_kinds"), ("names", KIND_NAMES), ("synthetic", KIND_SYNTHETIC)])
    yield _record([("type", "root"), ("node", 0)])
    texts = list(columns.strings)
    for start in range(0, len(texts), CHUNK_ROWS * 4):
        part = texts[start:start + CHUNK_ROWS * 4]
        encoded = [t.encode("utf-8", "surrogatepass") for t in part]
        lengths = array("I", map(len, encoded))
        yield _record([("type", "strings"), ("data", b"".join(encoded)), ("lengths", _le(lengths))])
        count += 1
    n_nodes = len(columns.object_id)
    for start in range(0, n_nodes, CHUNK_ROWS):
        end = start + CHUNK_ROWS
        yield _record([
            ("type", "nodes"),
            ("object_id", _le(columns.object_id[start:end])),
            ("kind", _le(columns.kind[start:end])),
            ("type_name", _le(columns.type_name[start:end])),
            ("name", _le(columns.name[start:end])),
            ("shallow_size", _le(columns.shallow_size[start:end])),
            ("edge_count", _le(columns.edge_count[start:end])),
            ("refcount", _le(columns.refcount[start:end])),
        ])
        count += 1
    n_edges = len(columns.edge_to)
    for start in range(0, n_edges, CHUNK_ROWS):
        end = start + CHUNK_ROWS
        yield _record([
            ("type", "edges"),
            ("to_object", _le(columns.edge_to[start:end])),
            ("kind", _le(columns.edge_kind[start:end])),
            ("name", _le(columns.edge_name[start:end])),
        ])
        count += 1
    buffers = columns.buffers
    if buffers["node"]:
        yield _record([("type", "buffers")] + [(k, _le(v)) for k, v in buffers.items()])
        count += 1
    fill = columns.fill
    for start in range(0, len(fill["node"]), CHUNK_ROWS):
        yield _record([("type", "fill")]
                      + [(k, _le(v[start:start + CHUNK_ROWS])) for k, v in fill.items()])
        count += 1
    yield _record([("type", "end"), ("chunks", count)])


def _write_new(path, write):
    """Writes a file at `path` with `write(file)`: into a new file of a random name beside it,
    created with O_EXCL and O_NOFOLLOW so that nothing another user planted at a name in a
    shared directory (/tmp) is written through, then renamed over `path`, which replaces a link
    there rather than following it. Whoever waits for `path` finds it whole."""
    name = "%s.%s.tmp" % (path, os.urandom(8).hex())
    flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
    try:
        with open(os.open(name, flags, 0o644), "wb") as out:
            write(out)
        os.replace(name, path)
    except BaseException:
        try:
            os.unlink(name)
        except OSError:
            pass
        raise


def dump(path, *, max_untracked=5_000_000, cuda_snapshot=False, objects=None):
    """Writes this process's object graph to `path` (a .hgd file) and returns the number of
    objects written. `objects`, if given, is the list of gc-tracked objects to write (by default
    `gc.get_objects()`, taken first). With `cuda_snapshot=True` and torch's CUDA initialised,
    `torch.cuda.memory._snapshot()` is pickled beside it (`path` + `.cuda.pickle`) at the same
    moment."""
    return _dump(path, max_untracked, cuda_snapshot, objects, None)


def _touch_locals(frames):
    """Reads each frame's `f_locals`. Up to 3.12 that makes the dict of a function frame's
    locals, which the frame then keeps; the walk reads it too, so it is made here, before the
    object list is taken, for every dump to have it (a capture's bootstrap does the same)."""
    for frame in frames:
        try:
            frame.f_locals
        except Exception:
            pass


def _dump(path, max_untracked, cuda_snapshot, objects, capture):
    """`dump`. `capture`, when `heapgraph capture python --pid` ran the dumper (`_capture`):
    the modules the process had before it, the program's frame the capture interrupted, and
    the ids of the capture's own objects in `objects`."""
    started = time.time()
    notes = []
    free_threaded = bool(getattr(sys, "_is_gil_enabled", lambda: True)() is False)
    if free_threaded:
        notes.append("free-threaded build: there is no GIL to hold; other threads may have "
                     "changed objects during the walk")
    # The program's threads by name, if it has imported threading (importing it here would
    # leave garbage behind).
    threading = sys.modules.get("threading")
    thread_names = {t.ident: t.name for t in threading.enumerate()} if threading else {}
    frames_by_thread = sys._current_frames()
    # This thread's stack starts at the caller, not inside the dumper (nor, captured, in the
    # frames that ran it).
    own_frames = []
    caller = sys._getframe(0)
    while caller is not None and caller.f_globals is globals():
        own_frames.append(caller)
        caller = caller.f_back
    if capture is not None:
        caller = capture[1]
    if caller is not None:
        frames_by_thread[_thread.get_ident()] = caller
    else:
        frames_by_thread.pop(_thread.get_ident(), None)
    del caller
    root_frames = []
    for frame in frames_by_thread.values():
        while frame is not None:
            root_frames.append(frame)
            frame = frame.f_back
    switch = sys.getswitchinterval()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    sys.setswitchinterval(1e6)
    try:
        if objects is None:
            _touch_locals(root_frames)
            objects = gc.get_objects()
        skip = {id(objects), id(frames_by_thread), id(thread_names), id(root_frames),
                id(own_frames)}
        skip.update(id(frame) for frame in root_frames)
        skip.update(id(frame) for frame in own_frames)
        own_frames = None
        if capture is not None:
            modules, _, own = capture
            skip.update(own)
            brought = sorted(set(sys.modules) - set(modules))
            if brought:
                notes.append("this capture imported %d module(s) into the process before the "
                             "dump, which the dumper needs: %s"
                             % (len(brought), ", ".join(brought)))
            modules = own = None
        columns = _columns()
        _roots(columns, frames_by_thread, thread_names)
        notes += _walk(columns, root_frames, objects, skip, max_untracked)
        # The list holds this very frame (and the dumper's others) once `sys._getframe` has
        # made their objects: a cycle through this frame's locals, left for the collector if
        # the list outlived the call.
        objects = None
        cuda = None
        if cuda_snapshot and "torch" in sys.modules:
            torch = sys.modules["torch"]
            if torch.cuda.is_initialized():
                cuda = torch.cuda.memory._snapshot()
    finally:
        sys.setswitchinterval(switch)
        if gc_was_enabled:
            gc.enable()
    notes.append("dumped in %.2f s" % (time.time() - started))
    header = [
        ("magic", "heapgraph"),
        ("version", FORMAT_VERSION),
        ("endianness", "little"),
        ("pointer_size", 8 if sys.maxsize > 1 << 32 else 4),
        ("kind", "heap-graph"),
        ("source_format", "python-gc"),
        ("runtime", "python"),
        ("runtime_version", "%d.%d.%d" % sys.version_info[:3]),
        ("captured_at_ms", int(started * 1000)),
        ("pid", os.getpid()),
        ("notes", notes),
        ("totals", {"nodes": len(columns.object_id), "edges": len(columns.edge_to),
                    "strings": len(columns.strings)}),
    ]
    # The CUDA snapshot is complete before the dump appears, so that whoever waits for the
    # dump (heapgraph record) finds both.
    if cuda is not None:
        import pickle
        _write_new(str(path) + ".cuda.pickle", lambda out: pickle.dump(cuda, out))
    _write_new(path, lambda out: out.writelines(_chunks(columns, header)))
    return len(columns.object_id)


def _capture(path, objects, modules, collector, program, bootstrap):
    """What `heapgraph capture python --pid` runs in the process, from the bootstrap
    (`CAPTURE_BOOTSTRAP` in the heapgraph-capture crate, which says why each step is where it
    is). `objects` was taken before this source was compiled, so nothing the dumper makes is
    in it; `modules` is `sys.modules` before the capture imported what the dumper needs;
    `collector` whether the collector was on, which the bootstrap turned off; `program` the
    frame the capture interrupted; `bootstrap` the bootstrap's own frame.

    At the end the dumper's namespace is emptied, so that everything the capture made is freed
    by reference counting (its functions and their globals form a cycle that only the
    collector would free, whenever it next ran: the next capture would find it), and only then
    is the collector turned back on: the capture's allocations start no collection, which would
    change what the next capture finds (tuples the collector untracks, garbage it frees)."""
    namespace = globals()
    enable = gc.enable
    # The capture's own objects in the list: for the bootstrap and the statement that ran it,
    # their frames, the constants and names of their code (tuples are tracked until a
    # collection finds them), the function `exec` made of the code (from 3.11), and the
    # namespace unless it was `__main__`'s; and the list in which the parser of the statement
    # keeps what it made (its arena's objects, the bootstrap's source among them) while the
    # statement runs.
    own = [objects, modules]
    main = getattr(sys.modules.get("__main__"), "__dict__", None)
    codes = []
    frame = bootstrap
    while frame is not None and frame is not program:
        codes.append(frame.f_code)
        own += (frame, frame.f_code.co_consts, frame.f_code.co_names)
        if frame.f_globals is not main:
            own.append(frame.f_globals)
        frame = frame.f_back
    sources = [c for code in codes for c in code.co_consts if type(c) is str and len(c) > 256]
    own += (o for o in gc.get_referrers(*codes, *sources)
            if type(o) is _FunctionType or type(o) is list)
    frame = bootstrap = codes = sources = None
    try:
        return _dump(path, 5_000_000, False, objects, (modules, program, [id(o) for o in own]))
    finally:
        own = objects = modules = program = None
        namespace.clear()
        if collector:
            enable()


# How `heapgraph record` finds a process that can dump itself, and asks it for a dump: the
# marker says which signal to send; the request (written by the recorder, read and removed by
# the handler) says where to write. Both live in /tmp, where every process on Linux finds them.
MARKER = "/tmp/heapgraph-dumper-%d"
REQUEST = "/tmp/heapgraph-request-%d"


def _cuda_ready():
    torch = sys.modules.get("torch")
    return torch is not None and torch.cuda.is_initialized()


def _take_request():
    """The recorder's request for this process, if one is waiting: a JSON object with `path`
    and `cuda_snapshot`. Only a regular file of this process's user (or root) counts, so that
    nobody else on the machine can make the process write where they choose."""
    import json
    import stat
    name = REQUEST % os.getpid()
    try:
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (not stat.S_ISREG(info.st_mode) or info.st_uid not in (os.getuid(), 0)
                or info.st_size > 65536):
            return None
        data = os.read(fd, 65536)
    finally:
        os.close(fd)
    try:
        os.unlink(name)
    except OSError:
        pass
    try:
        request = json.loads(data.decode("utf-8"))
    except ValueError:
        return None
    return request if isinstance(request, dict) else None


def _remove_marker(name):
    try:
        os.unlink(name)
    except OSError:
        pass


def install(signal=_signal.SIGUSR2, path=None):
    """Dumps on `signal` (SIGUSR2 by default) to `path`, or to
    `<program>-<pid>-<time>.hgd` in the working directory; with a CUDA snapshot beside it when
    torch has initialised CUDA. Also writes the marker that tells `heapgraph record --act` this
    process can be dumped so (removed at exit)."""

    def handler(signum, frame):
        target = path or "%s-%d-%d.hgd" % (
            os.path.splitext(os.path.basename(sys.argv[0] or "python"))[0] or "python",
            os.getpid(), int(time.time()))
        cuda = _cuda_ready()
        request = _take_request()
        if request is not None:
            target = str(request.get("path") or target)
            cuda = bool(request.get("cuda_snapshot", cuda)) and _cuda_ready()
        try:
            count = dump(target, cuda_snapshot=cuda)
            sys.stderr.write("heapgraph_dump: wrote %s (%d objects)\n" % (target, count))
        except Exception as error:
            # A MemoryError has no message: its name is the message.
            detail = str(error)
            sys.stderr.write("heapgraph_dump: could not write %s: %s%s\n"
                             % (target, type(error).__name__, ": " + detail if detail else ""))

    # The program's own import, made when it installs the dumper (not at every capture: the
    # first import of `signal` leaves garbage cycles, through `enum`).
    import signal as signals
    previous = signals.signal(signal, handler)
    marker = MARKER % os.getpid()
    try:
        text = b'{"signal": %d, "format_version": %d}\n' % (int(signal), FORMAT_VERSION)
        _write_new(marker, lambda out: out.write(text))
        import atexit
        atexit.register(_remove_marker, marker)
    except OSError as error:
        sys.stderr.write("heapgraph_dump: %s not written (%s); heapgraph record will dump this "
                         "process by injection (gdb, or sys.remote_exec from Python 3.14) "
                         "instead of the signal\n" % (marker, error))
    return previous


# Run by `heapgraph capture python --pid`: this source executed with `__capture__` set to
# `_capture`'s arguments.
if "__capture__" in globals():
    _capture(*globals().pop("__capture__"))
