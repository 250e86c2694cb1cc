//! A pickle reader that never executes anything: a stack machine over the opcodes that
//! tracemalloc dumps and PyTorch CUDA snapshots use (protocols 2 to 5), building plain values
//! in one arena.
//!
//! Containers are arena objects referred to by index, so a memo hit shares the container, as
//! Python's loader does, instead of copying it. A global is accepted only if the caller's
//! `allow` says so, and is never imported: it stays a pair of names, and `NEWOBJ`/`REDUCE`
//! and `BUILD` only record their arguments.
//!
//! Every count and length is checked against the bytes that remain, so a hostile file ends in
//! an error at its offset, never in an allocation larger than the input.

use crate::{Format, ImportError};
use rustc_hash::FxHashMap;

const FORMAT: Format = Format::Pickle;

/// Where the stack machine's values stop: deeper `MARK`s than this are refused.
const MAX_MARKS: usize = 1 << 16;

/// Arena ids stay below the memo's markers.
const MAX_OBJECTS: usize = SCALAR_MEMO as usize;

/// The memo's mark for a folded tuple, which may never be fetched.
const FOLDED_MEMO: u32 = u32::MAX;

/// The memo's mark for a memoized scalar, kept in `Machine::memo_scalars`.
const SCALAR_MEMO: u32 = u32::MAX - 1;

/// A value on the stack or in a container.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// An arena object: string, bytes, container, global or instance.
    Obj(u32),
    /// A tuple that a [`Fold`] consumed as it was built; it may only be appended to a list.
    Folded,
}

/// An arena object.
#[derive(Debug)]
pub(crate) enum Obj {
    Str(Box<str>),
    Bytes(Box<[u8]>),
    /// A list; `folded` counts the folded tuples appended to it (which are not kept).
    List {
        items: Vec<Value>,
        folded: u64,
    },
    Tuple(Box<[Value]>),
    Dict(Vec<(Value, Value)>),
    Set(Vec<Value>),
    Global {
        module: Box<str>,
        name: Box<str>,
    },
    /// `cls.__new__(cls, *args)` or `cls(*args)`, recorded (without its arguments, which no
    /// format heapgraph reads uses), with the state a `BUILD` gave it.
    Instance {
        class: Value,
        state: Value,
    },
}

/// Consumes tuples as they are built, so that millions of small records need not be kept:
/// tracemalloc's traces are aggregated this way.
pub(crate) trait Fold {
    /// Whether `items` (the new tuple's items) were consumed. The arena is there to look at the
    /// objects the items refer to. A fold that returns `false` has changed nothing: the same
    /// items may be offered again.
    fn fold(&mut self, items: &[Value], arena: &Arena) -> bool;
}

/// A fold that keeps everything.
pub(crate) struct KeepAll;

impl Fold for KeepAll {
    fn fold(&mut self, _items: &[Value], _arena: &Arena) -> bool {
        false
    }
}

/// The objects of one pickle.
#[derive(Debug, Default)]
pub(crate) struct Arena {
    objects: Vec<Obj>,
}

impl Arena {
    pub(crate) fn get(&self, id: u32) -> &Obj {
        &self.objects[id as usize]
    }

    /// The object a value refers to, if it is one.
    pub(crate) fn obj(&self, value: Value) -> Option<&Obj> {
        match value {
            Value::Obj(id) => Some(self.get(id)),
            _ => None,
        }
    }

    pub(crate) fn str_of(&self, value: Value) -> Option<&str> {
        match self.obj(value)? {
            Obj::Str(text) => Some(text),
            _ => None,
        }
    }

    pub(crate) fn tuple_of(&self, value: Value) -> Option<&[Value]> {
        match self.obj(value)? {
            Obj::Tuple(items) => Some(items),
            _ => None,
        }
    }

    pub(crate) fn list_of(&self, value: Value) -> Option<&[Value]> {
        match self.obj(value)? {
            Obj::List { items, .. } => Some(items),
            _ => None,
        }
    }

    pub(crate) fn dict_of(&self, value: Value) -> Option<&[(Value, Value)]> {
        match self.obj(value)? {
            Obj::Dict(items) => Some(items),
            _ => None,
        }
    }

    /// The value of the string key `key` in a dict, if the dict has it.
    pub(crate) fn dict_get(&self, dict: &[(Value, Value)], key: &str) -> Option<Value> {
        dict.iter()
            .find(|(k, _)| self.str_of(*k) == Some(key))
            .map(|&(_, v)| v)
    }

    fn push(&mut self, obj: Obj) -> Value {
        // `run` stops before the count reaches MAX_OBJECTS: at most one object per opcode.
        let id = self.objects.len() as u32;
        self.objects.push(obj);
        Value::Obj(id)
    }
}

/// A parsed pickle: its top value and the objects it refers to.
#[derive(Debug)]
pub(crate) struct Pickle {
    pub(crate) top: Value,
    pub(crate) arena: Arena,
}

/// Whether `prefix` starts a pickle of protocol 2 or later.
pub(crate) fn sniff(prefix: &[u8]) -> bool {
    matches!(prefix, [0x80, 2..=5, ..])
}

struct Machine<'a, F> {
    input: &'a [u8],
    pos: usize,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: Vec<u32>,
    /// Memo entries stored at an index past the end (never by CPython, but allowed).
    sparse_memo: FxHashMap<u32, u32>,
    /// Memoized scalars, by memo index.
    memo_scalars: FxHashMap<u32, Value>,
    arena: Arena,
    fold: F,
    allow: &'a dyn Fn(&str, &str) -> bool,
    /// Where the current opcode started.
    at: usize,
}

/// Reads one pickle from `input`. `allow(module, name)` says which globals may appear;
/// `fold` may consume tuples as they are built.
pub(crate) fn parse<F: Fold>(
    input: &[u8],
    allow: &dyn Fn(&str, &str) -> bool,
    fold: F,
) -> Result<(Pickle, F), ImportError> {
    let mut machine = Machine {
        input,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Vec::new(),
        sparse_memo: FxHashMap::default(),
        memo_scalars: FxHashMap::default(),
        arena: Arena::default(),
        fold,
        allow,
        at: 0,
    };
    let top = machine.run()?;
    Ok((
        Pickle {
            top,
            arena: machine.arena,
        },
        machine.fold,
    ))
}

impl<F: Fold> Machine<'_, F> {
    fn malformed(&self, message: impl Into<String>) -> ImportError {
        ImportError::malformed(FORMAT, self.at as u64, message)
    }

    fn truncated(&self, expected: &str) -> ImportError {
        ImportError::truncated(FORMAT, self.input.len() as u64, expected)
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], ImportError> {
        if self.input.len() - self.pos < n {
            return Err(self.truncated(what));
        }
        let bytes = &self.input[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn u8(&mut self) -> Result<u8, ImportError> {
        Ok(self.take(1, "an opcode argument")?[0])
    }

    fn le<const N: usize>(&mut self) -> Result<[u8; N], ImportError> {
        let bytes = self.take(N, "an opcode argument")?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// A length argument, checked against the bytes left so that nothing larger than the input
    /// is ever allocated.
    fn length(&mut self, raw: u64, what: &str) -> Result<usize, ImportError> {
        let left = (self.input.len() - self.pos) as u64;
        if raw > left {
            return Err(self.truncated(&format!("{what} of {raw} bytes")));
        }
        Ok(raw as usize)
    }

    fn pop(&mut self) -> Result<Value, ImportError> {
        let value = self
            .stack
            .pop()
            .ok_or_else(|| self.malformed("the stack is empty"))?;
        if self
            .marks
            .last()
            .is_some_and(|&mark| mark > self.stack.len())
        {
            return Err(self.malformed("a value was taken from below a MARK"));
        }
        Ok(value)
    }

    fn top(&self) -> Result<Value, ImportError> {
        self.stack
            .last()
            .copied()
            .ok_or_else(|| self.malformed("the stack is empty"))
    }

    /// Pops everything above the last MARK, and the mark.
    fn pop_mark(&mut self) -> Result<Vec<Value>, ImportError> {
        let mark = self
            .marks
            .pop()
            .ok_or_else(|| self.malformed("no MARK to pop to"))?;
        Ok(self.stack.split_off(mark))
    }

    fn push_obj(&mut self, obj: Obj) -> Value {
        self.arena.push(obj)
    }

    fn unfolded(&self, value: Value) -> Result<Value, ImportError> {
        if value == Value::Folded {
            return Err(self.malformed(
                "a record of a list of records is used elsewhere; this is not a file heapgraph knows",
            ));
        }
        Ok(value)
    }

    /// Replaces the stack's values from `start` up by a tuple of them (or by `Folded`).
    /// Tuples are built in place: ten million folded traces allocate nothing.
    fn tuple_from(&mut self, start: usize) -> Result<(), ImportError> {
        for &item in &self.stack[start..] {
            self.unfolded(item)?;
        }
        let value = if self.fold.fold(&self.stack[start..], &self.arena) {
            Value::Folded
        } else {
            let items = self.stack[start..].into();
            self.push_obj(Obj::Tuple(items))
        };
        self.stack.truncate(start);
        self.stack.push(value);
        Ok(())
    }

    /// A memo entry as 4 bytes: an arena id, or a marker for a folded tuple (which may never be
    /// fetched) or for a scalar (which no Python pickler memoizes, but a file may: kept aside).
    fn memo_put(&mut self, index: u32, value: Value) {
        let slot_value = match value {
            Value::Obj(id) => id,
            Value::Folded => FOLDED_MEMO,
            scalar => {
                self.memo_scalars.insert(index, scalar);
                SCALAR_MEMO
            }
        };
        let slot = index as usize;
        if slot < self.memo.len() {
            self.memo[slot] = slot_value;
        } else if slot == self.memo.len() {
            self.memo.push(slot_value);
        } else {
            self.sparse_memo.insert(index, slot_value);
        }
    }

    fn memo_get(&mut self, index: u32) -> Result<(), ImportError> {
        let slot = match self.memo.get(index as usize) {
            Some(&slot) => slot,
            None => *self
                .sparse_memo
                .get(&index)
                .ok_or_else(|| self.malformed(format!("memo entry {index} was never stored")))?,
        };
        let value = match slot {
            FOLDED_MEMO => self.unfolded(Value::Folded)?,
            SCALAR_MEMO => self.memo_scalars[&index],
            id => Value::Obj(id),
        };
        self.stack.push(value);
        Ok(())
    }

    fn text(&mut self, n: usize) -> Result<(), ImportError> {
        let start = self.pos;
        let bytes = self.take(n, "a string")?;
        let text = std::str::from_utf8(bytes)
            .map_err(|_| {
                ImportError::malformed(FORMAT, start as u64, "a string is not valid UTF-8")
            })?
            .into();
        let value = self.push_obj(Obj::Str(text));
        self.stack.push(value);
        Ok(())
    }

    fn bytes(&mut self, n: usize) -> Result<(), ImportError> {
        let bytes = self.take(n, "a bytes object")?.into();
        let value = self.push_obj(Obj::Bytes(bytes));
        self.stack.push(value);
        Ok(())
    }

    fn long(&mut self, n: usize) -> Result<(), ImportError> {
        let bytes = self.take(n, "a long integer")?;
        // Little-endian two's complement: sign-extend short ones; longer ones must be the sign
        // extension of their first 8 bytes, or the value does not fit.
        let body = &bytes[..n.min(8)];
        let mut raw = [0u8; 8];
        raw[..body.len()].copy_from_slice(body);
        if body.last().is_some_and(|&b| b & 0x80 != 0) {
            raw[body.len()..].fill(0xff);
        }
        let value = i64::from_le_bytes(raw);
        let extension = if value < 0 { 0xff } else { 0 };
        if bytes.iter().skip(8).any(|&b| b != extension) {
            return Err(self.malformed("an integer wider than 64 bits"));
        }
        self.stack.push(Value::Int(value));
        Ok(())
    }

    fn list_obj(&mut self, value: Value) -> Result<u32, ImportError> {
        match value {
            Value::Obj(id) if matches!(self.arena.get(id), Obj::List { .. }) => Ok(id),
            _ => Err(self.malformed("APPEND to something that is not a list")),
        }
    }

    fn append(&mut self, list: Value, items: Vec<Value>) -> Result<(), ImportError> {
        let id = self.list_obj(list)?;
        let Obj::List {
            items: list_items,
            folded,
        } = &mut self.arena.objects[id as usize]
        else {
            unreachable!("checked by list_obj");
        };
        for item in items {
            if item == Value::Folded {
                *folded += 1;
            } else {
                list_items.push(item);
            }
        }
        Ok(())
    }

    fn set_items(&mut self, dict: Value, items: Vec<Value>) -> Result<(), ImportError> {
        if !items.len().is_multiple_of(2) {
            return Err(self.malformed("SETITEMS with an odd number of values"));
        }
        for &item in &items {
            self.unfolded(item)?;
        }
        let Value::Obj(id) = dict else {
            return Err(self.malformed("SETITEM on something that is not a dict"));
        };
        let Obj::Dict(entries) = &mut self.arena.objects[id as usize] else {
            return Err(self.malformed("SETITEM on something that is not a dict"));
        };
        entries.extend(items.chunks_exact(2).map(|pair| (pair[0], pair[1])));
        Ok(())
    }

    fn add_items(&mut self, set: Value, items: Vec<Value>) -> Result<(), ImportError> {
        for &item in &items {
            self.unfolded(item)?;
        }
        let Value::Obj(id) = set else {
            return Err(self.malformed("ADDITEMS on something that is not a set"));
        };
        let Obj::Set(entries) = &mut self.arena.objects[id as usize] else {
            return Err(self.malformed("ADDITEMS on something that is not a set"));
        };
        entries.extend(items);
        Ok(())
    }

    fn global(&mut self, module: &str, name: &str) -> Result<(), ImportError> {
        if !(self.allow)(module, name) {
            return Err(self.malformed(format!(
                "the pickle refers to {module}.{name}; this is a pickle but not a tracemalloc snapshot \
                 or a CUDA memory snapshot (heapgraph never loads other objects)"
            )));
        }
        let value = self.push_obj(Obj::Global {
            module: module.into(),
            name: name.into(),
        });
        self.stack.push(value);
        Ok(())
    }

    fn text_line(&mut self) -> Result<String, ImportError> {
        let rest = &self.input[self.pos..];
        let end = memchr::memchr(b'\n', rest).ok_or_else(|| self.truncated("a text line"))?;
        let line = std::str::from_utf8(&rest[..end])
            .map_err(|_| self.malformed("a global's name is not UTF-8"))?
            .to_owned();
        self.pos += end + 1;
        Ok(line)
    }

    fn instance(&mut self, class: Value) -> Result<(), ImportError> {
        match self.arena.obj(class) {
            Some(Obj::Global { .. }) => {}
            _ => return Err(self.malformed("an object is built from something not a class")),
        }
        let value = self.push_obj(Obj::Instance {
            class,
            state: Value::None,
        });
        self.stack.push(value);
        Ok(())
    }

    /// A record the fold consumes, read whole from just after its `MARK`: tracemalloc writes
    /// each of its millions of traces as `MARK int int memo-get int TUPLE MEMOIZE`, and one
    /// step for the record instead of seven is most of the reader's speed. Returns where the
    /// record ends, with the stack and memo as the opcodes one by one would leave them (a
    /// `Folded` value pushed, and memoized if `MEMOIZE` follows); `None`, having changed
    /// nothing, for anything else (other opcodes, a memo entry that is not a plain object, a
    /// record the fold does not take, bytes past the end), which the opcodes then read as
    /// usual, errors included.
    #[inline]
    fn folded_record(&mut self) -> Option<usize> {
        const MOST_ITEMS: usize = 4;
        if self.marks.len() >= MAX_MARKS {
            return None;
        }
        let input = self.input;
        let mut at = self.pos;
        let mut items = [Value::None; MOST_ITEMS];
        let mut n = 0;
        loop {
            let opcode = *input.get(at)?;
            let value = match opcode {
                b't' => break,
                b'K' => Value::Int(i64::from(*input.get(at + 1)?)),
                b'M' => Value::Int(i64::from(u16::from_le_bytes(
                    input.get(at + 1..at + 3)?.try_into().ok()?,
                ))),
                b'J' => Value::Int(i64::from(i32::from_le_bytes(
                    input.get(at + 1..at + 5)?.try_into().ok()?,
                ))),
                b'h' => self.memo_object(u32::from(*input.get(at + 1)?))?,
                b'j' => self.memo_object(u32::from_le_bytes(
                    input.get(at + 1..at + 5)?.try_into().ok()?,
                ))?,
                _ => return None,
            };
            if n == MOST_ITEMS {
                return None;
            }
            items[n] = value;
            n += 1;
            at += match opcode {
                b'K' | b'h' => 2,
                b'M' => 3,
                _ => 5,
            };
        }
        if !self.fold.fold(&items[..n], &self.arena) {
            return None;
        }
        at += 1;
        self.stack.push(Value::Folded);
        if input.get(at) == Some(&0x94)
            && let Ok(index) = u32::try_from(self.memo.len())
        {
            self.memo_put(index, Value::Folded);
            at += 1;
        }
        Some(at)
    }

    /// The arena object memo entry `index` holds, if it is one (not a folded record, a scalar
    /// or an entry stored out of order).
    #[inline]
    fn memo_object(&self, index: u32) -> Option<Value> {
        match self.memo.get(index as usize) {
            Some(&id) if id < SCALAR_MEMO => Some(Value::Obj(id)),
            _ => None,
        }
    }

    fn run(&mut self) -> Result<Value, ImportError> {
        loop {
            self.at = self.pos;
            if self.arena.objects.len() >= MAX_OBJECTS {
                return Err(self.malformed("more than 4 billion objects"));
            }
            let Some(&opcode) = self.input.get(self.pos) else {
                return Err(self.truncated("the next opcode (no STOP)"));
            };
            self.pos += 1;
            match opcode {
                b'.' => {
                    let top = self.pop()?;
                    return self.unfolded(top);
                }
                0x80 => {
                    let protocol = self.u8()?;
                    if protocol > 5 {
                        return Err(
                            self.malformed(format!("pickle protocol {protocol} is not known"))
                        );
                    }
                }
                0x95 => {
                    self.le::<8>()?;
                }
                b'(' => {
                    if let Some(end) = self.folded_record() {
                        self.pos = end;
                        continue;
                    }
                    if self.marks.len() >= MAX_MARKS {
                        return Err(self.malformed("MARKs nest too deep"));
                    }
                    self.marks.push(self.stack.len());
                }
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let top = self.top()?;
                    let top = self.unfolded(top)?;
                    self.stack.push(top);
                }
                0x94 => {
                    let top = self.top()?;
                    let index = u32::try_from(self.memo.len())
                        .map_err(|_| self.malformed("more than 4 billion memo entries"))?;
                    self.memo_put(index, top);
                }
                b'q' => {
                    let index = self.u8()?;
                    let top = self.top()?;
                    self.memo_put(u32::from(index), top);
                }
                b'r' => {
                    let index = u32::from_le_bytes(self.le()?);
                    let top = self.top()?;
                    self.memo_put(index, top);
                }
                b'h' => {
                    let index = self.u8()?;
                    self.memo_get(u32::from(index))?;
                }
                b'j' => {
                    let index = u32::from_le_bytes(self.le()?);
                    self.memo_get(index)?;
                }
                b'N' => self.stack.push(Value::None),
                0x88 => self.stack.push(Value::Bool(true)),
                0x89 => self.stack.push(Value::Bool(false)),
                b'J' => {
                    let value = i32::from_le_bytes(self.le()?);
                    self.stack.push(Value::Int(i64::from(value)));
                }
                b'K' => {
                    let value = self.u8()?;
                    self.stack.push(Value::Int(i64::from(value)));
                }
                b'M' => {
                    let value = u16::from_le_bytes(self.le()?);
                    self.stack.push(Value::Int(i64::from(value)));
                }
                0x8a => {
                    let n = usize::from(self.u8()?);
                    self.long(n)?;
                }
                0x8b => {
                    let raw = u32::from_le_bytes(self.le()?);
                    let n = self.length(u64::from(raw), "a long integer")?;
                    self.long(n)?;
                }
                b'G' => {
                    let value = f64::from_be_bytes(self.le()?);
                    self.stack.push(Value::Float(value));
                }
                0x8c => {
                    let n = usize::from(self.u8()?);
                    self.text(n)?;
                }
                b'X' => {
                    let raw = u32::from_le_bytes(self.le()?);
                    let n = self.length(u64::from(raw), "a string")?;
                    self.text(n)?;
                }
                0x8d => {
                    let raw = u64::from_le_bytes(self.le()?);
                    let n = self.length(raw, "a string")?;
                    self.text(n)?;
                }
                b'C' => {
                    let n = usize::from(self.u8()?);
                    self.bytes(n)?;
                }
                b'B' => {
                    let raw = u32::from_le_bytes(self.le()?);
                    let n = self.length(u64::from(raw), "a bytes object")?;
                    self.bytes(n)?;
                }
                0x8e | 0x96 => {
                    let raw = u64::from_le_bytes(self.le()?);
                    let n = self.length(raw, "a bytes object")?;
                    self.bytes(n)?;
                }
                b'}' => {
                    let value = self.push_obj(Obj::Dict(Vec::new()));
                    self.stack.push(value);
                }
                b']' => {
                    let value = self.push_obj(Obj::List {
                        items: Vec::new(),
                        folded: 0,
                    });
                    self.stack.push(value);
                }
                b')' => self.tuple_from(self.stack.len())?,
                0x8f => {
                    let value = self.push_obj(Obj::Set(Vec::new()));
                    self.stack.push(value);
                }
                b't' => {
                    let mark = self
                        .marks
                        .pop()
                        .ok_or_else(|| self.malformed("no MARK to pop to"))?;
                    self.tuple_from(mark)?;
                }
                0x85..=0x87 => {
                    let n = usize::from(opcode - 0x84);
                    if self.stack.len() < n
                        || self
                            .marks
                            .last()
                            .is_some_and(|&mark| mark > self.stack.len() - n)
                    {
                        return Err(self.malformed("a tuple takes more values than the stack has"));
                    }
                    self.tuple_from(self.stack.len() - n)?;
                }
                b'l' => {
                    let items = self.pop_mark()?;
                    let value = self.push_obj(Obj::List {
                        items: Vec::new(),
                        folded: 0,
                    });
                    self.append(value, items)?;
                    self.stack.push(value);
                }
                b'd' => {
                    let items = self.pop_mark()?;
                    let value = self.push_obj(Obj::Dict(Vec::new()));
                    self.set_items(value, items)?;
                    self.stack.push(value);
                }
                0x91 => {
                    let items = self.pop_mark()?;
                    let value = self.push_obj(Obj::Set(Vec::new()));
                    self.add_items(value, items)?;
                    self.stack.push(value);
                }
                b'a' => {
                    let item = self.pop()?;
                    let list = self.top()?;
                    self.append(list, vec![item])?;
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    let list = self.top()?;
                    self.append(list, items)?;
                }
                b's' => {
                    let value = self.pop()?;
                    let key = self.pop()?;
                    let dict = self.top()?;
                    self.set_items(dict, vec![key, value])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    let dict = self.top()?;
                    self.set_items(dict, items)?;
                }
                0x90 => {
                    let items = self.pop_mark()?;
                    let set = self.top()?;
                    self.add_items(set, items)?;
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (Some(module), Some(name)) =
                        (self.arena.str_of(module), self.arena.str_of(name))
                    else {
                        return Err(self.malformed("STACK_GLOBAL without two strings"));
                    };
                    let (module, name) = (module.to_owned(), name.to_owned());
                    self.global(&module, &name)?;
                }
                b'c' => {
                    let module = self.text_line()?;
                    let name = self.text_line()?;
                    self.global(&module, &name)?;
                }
                0x81 | b'R' => {
                    let _args = self.pop()?;
                    let class = self.pop()?;
                    self.instance(class)?;
                }
                0x92 => {
                    let _kwargs = self.pop()?;
                    let _args = self.pop()?;
                    let class = self.pop()?;
                    self.instance(class)?;
                }
                b'b' => {
                    let state = self.pop()?;
                    let state = self.unfolded(state)?;
                    let target = self.top()?;
                    let Value::Obj(id) = target else {
                        return Err(self.malformed("BUILD on something that is not an object"));
                    };
                    let Obj::Instance { state: slot, .. } = &mut self.arena.objects[id as usize]
                    else {
                        return Err(self.malformed("BUILD on something that is not an object"));
                    };
                    *slot = state;
                }
                other => {
                    return Err(self.malformed(format!(
                        "pickle opcode 0x{other:02x} is not one heapgraph reads"
                    )));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(bytes: &[u8]) -> Result<Pickle, ImportError> {
        parse(bytes, &|_, _| false, KeepAll).map(|(pickle, _)| pickle)
    }

    #[test]
    fn memo_hits_share_the_container() {
        // [[], <memo 0>] : EMPTY_LIST MEMOIZE ... built by hand from Python's protocol 4 output of
        // `x = []; [x, x]`.
        let bytes = b"\x80\x04\x95\x0b\x00\x00\x00\x00\x00\x00\x00]\x94(]\x94h\x01e.";
        let pickle = parse_all(bytes).unwrap();
        let items = pickle.arena.list_of(pickle.top).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0], items[1]);
    }

    #[test]
    fn longs_are_twos_complement() {
        for (bytes, expected) in [
            (&b"\x80\x04\x8a\x00."[..], 0i64),
            (b"\x80\x04\x8a\x01\xff.", -1),
            (b"\x80\x04\x8a\x02\x00\x80.", -32768),
            (b"\x80\x04\x8a\x03\x00\x80\x00.", 32768),
            (
                b"\x80\x04\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00.",
                i64::MIN,
            ),
        ] {
            let result = parse_all(bytes);
            if expected == i64::MIN {
                assert!(result.is_err(), "2**63 does not fit");
            } else {
                assert_eq!(result.unwrap().top, Value::Int(expected));
            }
        }
    }

    #[test]
    fn globals_are_refused_unless_allowed() {
        let bytes = b"\x80\x04\x8c\x0bcollections\x8c\x0bOrderedDict\x93).";
        let error = parse_all(bytes).unwrap_err().to_string();
        assert!(error.contains("collections.OrderedDict"), "{error}");
        assert!(error.contains("at byte 28"), "{error}");
    }

    #[test]
    fn lengths_past_the_end_are_truncation_not_allocation() {
        let bytes = b"\x80\x04X\xff\xff\xff\x7f";
        let error = parse_all(bytes).unwrap_err();
        assert!(matches!(error, ImportError::Truncated { .. }), "{error}");
    }
    /// Takes every tuple that starts with an integer, and remembers it.
    #[derive(Debug, Default)]
    struct Records(Vec<Vec<Value>>);

    impl Fold for Records {
        fn fold(&mut self, items: &[Value], _arena: &Arena) -> bool {
            if !matches!(items.first(), Some(Value::Int(_))) {
                return false;
            }
            self.0.push(items.to_vec());
            true
        }
    }

    fn records(bytes: &[u8]) -> Result<(Pickle, Records), ImportError> {
        parse(bytes, &|_, _| false, Records::default())
    }

    #[test]
    fn records_read_whole_are_the_records_read_opcode_by_opcode() {
        // A list of two traces as tracemalloc writes them (`MARK int int memo-get int TUPLE
        // MEMOIZE`, read whole), and the same two with their integers as LONG1, which only the
        // opcode-by-opcode reader reads. Memo 1 is the traceback, an empty tuple, popped from
        // the stack after it is memoized.
        let whole: &[u8] = b"\x80\x04]\x94)\x940(\
            (K\x00K\x10h\x01K\x05t\x94\
            (M\x00\x01J\xfe\xff\xff\xffj\x01\x00\x00\x00t\x94e.";
        let by_opcode: &[u8] = b"\x80\x04]\x94)\x940(\
            (\x8a\x00\x8a\x01\x10h\x01\x8a\x01\x05t\x94\
            (\x8a\x02\x00\x01\x8a\x01\xfeh\x01t\x94e.";
        let (whole_pickle, whole_records) = records(whole).unwrap();
        let (by_opcode_pickle, by_opcode_records) = records(by_opcode).unwrap();
        assert_eq!(whole_records.0.len(), 2);
        assert_eq!(whole_records.0, by_opcode_records.0);
        for pickle in [&whole_pickle, &by_opcode_pickle] {
            let Value::Obj(list) = pickle.top else {
                panic!("the top is a list");
            };
            assert!(matches!(
                pickle.arena.get(list),
                Obj::List { items, folded: 2 } if items.is_empty()
            ));
        }
        // A record memoized whole may not be fetched, as when memoized opcode by opcode.
        let fetched: &[u8] = b"\x80\x04]\x94)\x940(\
            (K\x00K\x10h\x01K\x05t\x94\
            (K\x00K\x10h\x02K\x05t\x94e.";
        let error = records(fetched).unwrap_err().to_string();
        assert!(error.contains("used elsewhere"), "{error}");
    }
}
