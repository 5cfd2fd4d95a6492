//! The runtime value model: the subset of Go's dynamic types that templates can see.
//!
//! JSON data is borrowed, not converted: objects and arrays stay references into the caller's
//! `serde_json::Value` until a function builds a new collection. Every JSON number is a Go
//! `float64`, exactly as `encoding/json` decodes into `interface{}`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::rc::Rc;

use serde_json::{Map as JsonMap, Value as Json};

use super::gotime::GoTime;

/// A Go string: borrowed from the data or template, or owned and shared.
#[derive(Clone)]
pub(crate) enum Str<'a> {
    /// Borrowed from the input data or the template source.
    Borrowed(&'a str),
    /// Produced while rendering.
    Shared(Rc<str>),
}

impl Deref for Str<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Str::Borrowed(s) => s,
            Str::Shared(s) => s,
        }
    }
}

impl fmt::Debug for Str<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Str(..)")
    }
}

/// The element type of a Go slice or map built by a function.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Elem {
    /// `interface{}`
    Any,
    /// `string`
    Str,
    /// `int`
    Int,
    /// `[]interface{}`
    AnyList,
}

impl Elem {
    fn name(self) -> &'static str {
        match self {
            Elem::Any => "interface {}",
            Elem::Str => "string",
            Elem::Int => "int",
            Elem::AnyList => "[]interface {}",
        }
    }
}

/// A Go slice built while rendering.
#[derive(Debug)]
pub(crate) struct List<'a> {
    /// Element type.
    pub(crate) elem: Elem,
    /// The elements.
    pub(crate) items: Vec<Value<'a>>,
    /// A nil slice (prints `[]`, encodes as JSON `null`).
    pub(crate) nil: bool,
}

/// A Go map with string keys built while rendering (mutable in place, like Go maps).
#[derive(Debug)]
pub(crate) struct Dict<'a> {
    /// Element type (`Any` or `Str`).
    pub(crate) elem: Elem,
    /// The entries, in Go's sorted printing order.
    pub(crate) entries: RefCell<BTreeMap<String, Value<'a>>>,
    /// A nil map.
    pub(crate) nil: bool,
}

/// A template value.
#[derive(Clone, Debug)]
pub(crate) enum Value<'a> {
    /// No value (Go's invalid `reflect.Value` / nil interface).
    Nil,
    /// `bool`
    Bool(bool),
    /// `int`
    Int(i64),
    /// `int64`
    Int64(i64),
    /// `uint8` (a byte of a string, from `index`)
    Uint8(u8),
    /// `float64`
    Float(f64),
    /// `string`
    Str(Str<'a>),
    /// A JSON array of the data (`[]interface{}`).
    JArr(&'a [Json]),
    /// A JSON object of the data (`map[string]interface{}`).
    JObj(&'a JsonMap<String, Json>),
    /// A slice built while rendering.
    List(Rc<List<'a>>),
    /// A map built while rendering.
    Dict(Rc<Dict<'a>>),
    /// `time.Time`
    Time(GoTime),
}

impl<'a> Value<'a> {
    /// An owned string value.
    pub(crate) fn string(s: impl Into<Rc<str>>) -> Self {
        Value::Str(Str::Shared(s.into()))
    }

    /// A `[]interface{}` value.
    pub(crate) fn list(items: Vec<Value<'a>>) -> Self {
        Value::List(Rc::new(List {
            elem: Elem::Any,
            items,
            nil: false,
        }))
    }

    /// A slice with the given element type.
    pub(crate) fn typed_list(elem: Elem, items: Vec<Value<'a>>) -> Self {
        Value::List(Rc::new(List {
            elem,
            items,
            nil: false,
        }))
    }

    /// A nil `[]interface{}`.
    pub(crate) fn nil_list() -> Self {
        Value::List(Rc::new(List {
            elem: Elem::Any,
            items: Vec::new(),
            nil: true,
        }))
    }

    /// A `[]string` value.
    pub(crate) fn str_list(items: Vec<String>) -> Self {
        Value::typed_list(Elem::Str, items.into_iter().map(Value::string).collect())
    }

    /// A `map[string]interface{}` value.
    pub(crate) fn dict(entries: BTreeMap<String, Value<'a>>) -> Self {
        Value::Dict(Rc::new(Dict {
            elem: Elem::Any,
            entries: RefCell::new(entries),
            nil: false,
        }))
    }

    /// A `map[string]string` value.
    pub(crate) fn str_dict(entries: BTreeMap<String, Value<'a>>) -> Self {
        Value::Dict(Rc::new(Dict {
            elem: Elem::Str,
            entries: RefCell::new(entries),
            nil: false,
        }))
    }

    /// A nil `map[string]interface{}`.
    pub(crate) fn nil_dict() -> Self {
        Value::Dict(Rc::new(Dict {
            elem: Elem::Any,
            entries: RefCell::new(BTreeMap::new()),
            nil: true,
        }))
    }

    /// The value of a JSON document, as `encoding/json` decodes it into `interface{}`.
    pub(crate) fn from_json(v: &'a Json) -> Self {
        match v {
            Json::Null => Value::Nil,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            Json::String(s) => Value::Str(Str::Borrowed(s)),
            Json::Array(a) => Value::JArr(a),
            Json::Object(o) => Value::JObj(o),
        }
    }

    /// Whether this is Go's invalid value.
    pub(crate) fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// The string, if this is a Go string.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Go's `%T`.
    pub(crate) fn type_name(&self) -> String {
        match self {
            Value::Nil => "<nil>".to_owned(),
            Value::Bool(_) => "bool".to_owned(),
            Value::Int(_) => "int".to_owned(),
            Value::Int64(_) => "int64".to_owned(),
            Value::Uint8(_) => "uint8".to_owned(),
            Value::Float(_) => "float64".to_owned(),
            Value::Str(_) => "string".to_owned(),
            Value::JArr(_) => "[]interface {}".to_owned(),
            Value::JObj(_) => "map[string]interface {}".to_owned(),
            Value::List(l) => format!("[]{}", l.elem.name()),
            Value::Dict(d) => format!("map[string]{}", d.elem.name()),
            Value::Time(_) => "time.Time".to_owned(),
        }
    }

    /// Go's `reflect.Kind` name.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Int64(_) => "int64",
            Value::Uint8(_) => "uint8",
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::JArr(_) | Value::List(_) => "slice",
            Value::JObj(_) | Value::Dict(_) => "map",
            Value::Time(_) => "struct",
        }
    }

    /// Go's `template.IsTrue`.
    pub(crate) fn truth(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Uint8(u) => *u != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::JArr(a) => !a.is_empty(),
            Value::JObj(o) => !o.is_empty(),
            Value::List(l) => !l.items.is_empty(),
            Value::Dict(d) => !d.entries.borrow().is_empty(),
            Value::Time(_) => true,
        }
    }

    /// Whether this is a slice.
    pub(crate) fn is_seq(&self) -> bool {
        matches!(self, Value::JArr(_) | Value::List(_))
    }

    /// Whether this is a map.
    pub(crate) fn is_map(&self) -> bool {
        matches!(self, Value::JObj(_) | Value::Dict(_))
    }

    /// Whether this is a `map[string]interface{}`.
    pub(crate) fn is_any_map(&self) -> bool {
        match self {
            Value::JObj(_) => true,
            Value::Dict(d) => d.elem == Elem::Any,
            _ => false,
        }
    }

    /// The number of elements of a slice or map, or bytes of a string.
    pub(crate) fn len(&self) -> Option<usize> {
        match self {
            Value::Str(s) => Some(s.len()),
            Value::JArr(a) => Some(a.len()),
            Value::JObj(o) => Some(o.len()),
            Value::List(l) => Some(l.items.len()),
            Value::Dict(d) => Some(d.entries.borrow().len()),
            _ => None,
        }
    }

    /// The elements of a slice.
    pub(crate) fn seq_items(&self) -> Option<Vec<Value<'a>>> {
        match self {
            Value::JArr(a) => Some(a.iter().map(Value::from_json).collect()),
            Value::List(l) => Some(l.items.clone()),
            _ => None,
        }
    }

    /// Element `i` of a slice.
    pub(crate) fn seq_get(&self, i: usize) -> Option<Value<'a>> {
        match self {
            Value::JArr(a) => a.get(i).map(Value::from_json),
            Value::List(l) => l.items.get(i).cloned(),
            _ => None,
        }
    }

    /// The entry `key` of a map (`None` when absent).
    pub(crate) fn map_get(&self, key: &str) -> Option<Value<'a>> {
        match self {
            Value::JObj(o) => o.get(key).map(Value::from_json),
            Value::Dict(d) => d.entries.borrow().get(key).cloned(),
            _ => None,
        }
    }

    /// The entries of a map in Go's sorted key order.
    pub(crate) fn map_entries(&self) -> Option<Vec<(String, Value<'a>)>> {
        match self {
            Value::JObj(o) => {
                let mut v: Vec<(String, Value<'a>)> = o
                    .iter()
                    .map(|(k, x)| (k.clone(), Value::from_json(x)))
                    .collect();
                v.sort_by(|a, b| a.0.cmp(&b.0));
                Some(v)
            }
            Value::Dict(d) => Some(
                d.entries
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            _ => None,
        }
    }

    /// The zero value of a map's element type (what `index` yields for a missing key).
    pub(crate) fn map_zero(&self) -> Value<'a> {
        match self {
            Value::Dict(d) if d.elem == Elem::Str => Value::string(""),
            _ => Value::Nil,
        }
    }

    /// Whether this is a nil slice or map.
    pub(crate) fn is_nil_collection(&self) -> bool {
        match self {
            Value::List(l) => l.nil,
            Value::Dict(d) => d.nil,
            _ => false,
        }
    }

    /// A copy of a map as an owned `map[string]interface{}` (for functions that mutate).
    pub(crate) fn to_owned_dict(&self) -> Option<Rc<Dict<'a>>> {
        match self {
            Value::Dict(d) => Some(Rc::clone(d)),
            Value::JObj(o) => Some(Rc::new(Dict {
                elem: Elem::Any,
                entries: RefCell::new(
                    o.iter()
                        .map(|(k, v)| (k.clone(), Value::from_json(v)))
                        .collect(),
                ),
                nil: false,
            })),
            _ => None,
        }
    }

    /// Go's `reflect.DeepEqual`.
    pub(crate) fn deep_equal(&self, other: &Value<'_>) -> bool {
        if self.type_name() != other.type_name() {
            return false;
        }
        match (self, other) {
            (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) | (Value::Int64(a), Value::Int64(b)) => a == b,
            (Value::Uint8(a), Value::Uint8(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => **a == **b,
            (Value::Time(a), Value::Time(b)) => a.same(b),
            _ if self.is_seq() => {
                if self.is_nil_collection() != other.is_nil_collection() {
                    return false;
                }
                match (self.seq_items(), other.seq_items()) {
                    (Some(a), Some(b)) => {
                        a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.deep_equal(y))
                    }
                    _ => false,
                }
            }
            _ if self.is_map() => {
                if self.is_nil_collection() != other.is_nil_collection() {
                    return false;
                }
                match (self.map_entries(), other.map_entries()) {
                    (Some(a), Some(b)) => {
                        a.len() == b.len()
                            && a.iter()
                                .zip(b.iter())
                                .all(|(x, y)| x.0 == y.0 && x.1.deep_equal(&y.1))
                    }
                    _ => false,
                }
            }
            _ => false,
        }
    }
}
