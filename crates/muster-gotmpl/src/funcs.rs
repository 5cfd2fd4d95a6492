//! The function table: Go's template builtins plus the sprig functions, each with its Go
//! signature (the executor checks arity and argument types exactly as Go's reflection does).

mod builtin;
mod cast;
mod collections;
mod encoding;
mod json;
mod math;
mod misc;
mod strings;
mod time;

use std::collections::HashMap;
use std::sync::LazyLock;

use super::value::Value;

/// A Go parameter type.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Param {
    /// `interface{}` (and `reflect.Value`).
    Any,
    /// `string`
    Str,
    /// `int`
    Int,
    /// `float64`
    Float,
    /// `bool`
    Bool,
    /// `map[string]interface{}`
    MapAny,
    /// `time.Time`
    Time,
}

impl Param {
    /// The Go type name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Param::Any => "interface {}",
            Param::Str => "string",
            Param::Int => "int",
            Param::Float => "float64",
            Param::Bool => "bool",
            Param::MapAny => "map[string]interface {}",
            Param::Time => "time.Time",
        }
    }

    /// Whether a Go nil can be assigned.
    pub(crate) fn can_be_nil(self) -> bool {
        matches!(self, Param::Any | Param::MapAny)
    }

    /// The zero value for a nil argument.
    pub(crate) fn nil_value<'a>(self) -> Value<'a> {
        match self {
            Param::MapAny => Value::nil_dict(),
            _ => Value::Nil,
        }
    }

    /// Whether a (non-nil) value is assignable to this parameter.
    pub(crate) fn accepts(self, v: &Value<'_>) -> bool {
        match self {
            Param::Any => true,
            Param::Str => matches!(v, Value::Str(_)),
            Param::Int => matches!(v, Value::Int(_)),
            Param::Float => matches!(v, Value::Float(_)),
            Param::Bool => matches!(v, Value::Bool(_)),
            Param::MapAny => v.is_any_map(),
            Param::Time => matches!(v, Value::Time(_)),
        }
    }
}

/// The result of a function.
pub(crate) type FResult<'a> = Result<Value<'a>, String>;

/// A function implementation.
pub(crate) type Impl = for<'a> fn(Vec<Value<'a>>) -> FResult<'a>;

/// A function with its Go signature.
#[derive(Clone, Copy)]
pub(crate) struct Func {
    /// Fixed parameters.
    pub(crate) params: &'static [Param],
    /// Element type of the variadic parameter, if any.
    pub(crate) variadic: Option<Param>,
    /// The implementation.
    pub(crate) f: Impl,
}

impl std::fmt::Debug for Func {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Func")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// Shorthand for a function with fixed parameters.
pub(crate) const fn fixed(params: &'static [Param], f: Impl) -> Func {
    Func {
        params,
        variadic: None,
        f,
    }
}

/// Shorthand for a variadic function.
pub(crate) const fn variadic(params: &'static [Param], rest: Param, f: Impl) -> Func {
    Func {
        params,
        variadic: Some(rest),
        f,
    }
}

static TABLE: LazyLock<HashMap<&'static str, Func>> = LazyLock::new(|| {
    let mut m = HashMap::new();
    builtin::register(&mut m);
    strings::register(&mut m);
    collections::register(&mut m);
    math::register(&mut m);
    json::register(&mut m);
    time::register(&mut m);
    encoding::register(&mut m);
    misc::register(&mut m);
    m
});

/// Looks a function up by name.
pub(crate) fn lookup(name: &str) -> Option<Func> {
    TABLE.get(name).copied()
}

/// Whether `name` is a defined function (for the parser).
pub(crate) fn exists(name: &str) -> bool {
    TABLE.contains_key(name)
}

/// The methods of `time.Time` that templates can call.
pub(crate) fn time_method(name: &str) -> Option<Func> {
    time::method(name)
}

/// Argument access helpers for implementations (the executor has already checked types).
pub(crate) fn arg<'a>(args: &mut std::vec::IntoIter<Value<'a>>) -> Value<'a> {
    args.next().unwrap_or(Value::Nil)
}

/// A `string` argument.
pub(crate) fn arg_str(args: &mut std::vec::IntoIter<Value<'_>>) -> String {
    match args.next() {
        Some(Value::Str(s)) => s.to_string(),
        _ => String::new(),
    }
}

/// An `int` argument.
pub(crate) fn arg_int(args: &mut std::vec::IntoIter<Value<'_>>) -> i64 {
    match args.next() {
        Some(Value::Int(i) | Value::Int64(i)) => i,
        _ => 0,
    }
}
