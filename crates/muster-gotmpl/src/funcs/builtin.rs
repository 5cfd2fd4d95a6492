//! Go's predefined template functions (`text/template/funcs.go`).

use std::collections::HashMap;

use super::{FResult, Func, Param, arg, arg_str, fixed, variadic};
use crate::gofmt::{sprint, sprintf, sprintln, too_large};
use crate::value::Value;

use Param::{Any, Str};

pub(super) fn register(m: &mut HashMap<&'static str, Func>) {
    // `and` and `or` are evaluated lazily by the executor.
    m.insert(
        "and",
        variadic(&[Any], Any, |a| {
            Ok(a.into_iter().next().unwrap_or(Value::Nil))
        }),
    );
    m.insert(
        "or",
        variadic(&[Any], Any, |a| {
            Ok(a.into_iter().next().unwrap_or(Value::Nil))
        }),
    );
    m.insert("call", variadic(&[Any], Any, call));
    m.insert(
        "html",
        variadic(&[], Any, |a| Ok(Value::string(html_escape(&eval_args(&a))))),
    );
    m.insert(
        "js",
        variadic(&[], Any, |a| Ok(Value::string(js_escape(&eval_args(&a))))),
    );
    m.insert(
        "urlquery",
        variadic(&[], Any, |a| {
            Ok(Value::string(query_escape(&eval_args(&a))))
        }),
    );
    m.insert("index", variadic(&[Any], Any, index));
    m.insert("len", fixed(&[Any], length));
    m.insert("not", fixed(&[Any], |a| Ok(Value::Bool(!a[0].truth()))));
    m.insert(
        "print",
        variadic(&[], Any, |a| printed("print", sprint(&a))),
    );
    m.insert(
        "println",
        variadic(&[], Any, |a| printed("println", sprintln(&a))),
    );
    m.insert(
        "printf",
        variadic(&[Str], Any, |a| {
            let mut it = a.into_iter();
            let f = arg_str(&mut it);
            let rest: Vec<Value<'_>> = it.collect();
            printed("printf", sprintf(&f, &rest))
        }),
    );
    m.insert("eq", variadic(&[Any], Any, eq_fn));
    m.insert(
        "ne",
        fixed(&[Any, Any], |a| Ok(Value::Bool(!eq(&a[0], &a[1..])?))),
    );
    m.insert(
        "lt",
        fixed(&[Any, Any], |a| Ok(Value::Bool(lt(&a[0], &a[1])?))),
    );
    m.insert(
        "le",
        fixed(&[Any, Any], |a| Ok(Value::Bool(le(&a[0], &a[1])?))),
    );
    m.insert(
        "gt",
        fixed(&[Any, Any], |a| Ok(Value::Bool(!le(&a[0], &a[1])?))),
    );
    m.insert(
        "ge",
        fixed(&[Any, Any], |a| Ok(Value::Bool(!lt(&a[0], &a[1])?))),
    );
}

fn call(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let f = arg(&mut it);
    if f.is_nil() {
        return Err("call of nil".to_owned());
    }
    Err(format!("non-function of type {}", f.type_name()))
}

/// Go's `evalArgs` for `html`, `js` and `urlquery`.
fn eval_args(args: &[Value<'_>]) -> String {
    if let [Value::Str(s)] = args {
        return s.to_string();
    }
    let printable: Vec<Value<'_>> = args
        .iter()
        .map(|a| {
            if a.is_nil() {
                Value::string("<no value>")
            } else {
                a.clone()
            }
        })
        .collect();
    sprint(&printable)
}

/// What a print function returns: `text`, or an error once it reached the printer's limit.
fn printed<'a>(function: &str, text: String) -> FResult<'a> {
    match too_large(function, &text) {
        Some(error) => Err(error),
        None => Ok(Value::string(text)),
    }
}

fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\0' => out.push('\u{FFFD}'),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u00{:02X}", c as u32)),
            c if c.is_ascii() => out.push(c),
            c => {
                if crate::unicode::is_print(c) {
                    out.push(c);
                } else {
                    out.push_str(&format!("\\u{:04X}", c as u32));
                }
            }
        }
    }
    out
}

/// Go's `url.QueryEscape`.
pub(super) fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn length(a: Vec<Value<'_>>) -> FResult<'_> {
    let v = &a[0];
    if v.is_nil() {
        return Err("len of nil pointer".to_owned());
    }
    match v.len() {
        Some(n) => Ok(Value::Int(n as i64)),
        None => Err(format!("len of type {}", v.type_name())),
    }
}

fn index_arg(index: &Value<'_>, cap: usize) -> Result<usize, String> {
    let x = match index {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Uint8(u) => i64::from(*u),
        Value::Nil => return Err("cannot index slice/array with nil".to_owned()),
        other => {
            return Err(format!(
                "cannot index slice/array with type {}",
                other.type_name()
            ));
        }
    };
    if x < 0 || x as u64 > cap as u64 {
        return Err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

fn index(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let mut item = arg(&mut it);
    if item.is_nil() {
        return Err("index of untyped nil".to_owned());
    }
    for idx in it {
        if item.is_nil() {
            return Err("index of nil pointer".to_owned());
        }
        item = match &item {
            Value::Str(s) => {
                let x = index_arg(&idx, s.len())?;
                match s.as_bytes().get(x) {
                    Some(b) => Value::Uint8(*b),
                    None => return Err("reflect: string index out of range".to_owned()),
                }
            }
            v if v.is_seq() => {
                let n = v.len().unwrap_or(0);
                let x = index_arg(&idx, n)?;
                match v.seq_get(x) {
                    Some(e) => e,
                    None => return Err("reflect: slice index out of range".to_owned()),
                }
            }
            v if v.is_map() => {
                let key = match &idx {
                    Value::Str(k) => k.to_string(),
                    Value::Nil => return Err("value is nil; should be of type string".to_owned()),
                    other => {
                        return Err(format!(
                            "value has type {}; should be string",
                            other.type_name()
                        ));
                    }
                };
                match v.map_get(&key) {
                    Some(e) => e,
                    None => v.map_zero(),
                }
            }
            other => return Err(format!("can't index item of type {}", other.type_name())),
        };
    }
    Ok(item)
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Float,
    Str,
    Uint,
}

fn basic_kind(v: &Value<'_>) -> Kind {
    match v {
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) | Value::Int64(_) => Kind::Int,
        Value::Uint8(_) => Kind::Uint,
        Value::Float(_) => Kind::Float,
        Value::Str(_) => Kind::Str,
        _ => Kind::Invalid,
    }
}

fn int_of(v: &Value<'_>) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Uint8(u) => i64::from(*u),
        _ => 0,
    }
}

fn eq_fn(a: Vec<Value<'_>>) -> FResult<'_> {
    Ok(Value::Bool(eq(&a[0], &a[1..])?))
}

const ERR_BAD_COMPARISON_TYPE: &str = "invalid type for comparison";
const ERR_BAD_COMPARISON: &str = "incompatible types for comparison";

/// Go's `eq`.
pub(crate) fn eq(arg1: &Value<'_>, rest: &[Value<'_>]) -> Result<bool, String> {
    if rest.is_empty() {
        return Err("missing argument for comparison".to_owned());
    }
    let k1 = basic_kind(arg1);
    for arg in rest {
        let k2 = basic_kind(arg);
        let truth = if k1 != k2 {
            match (k1, k2) {
                (Kind::Int, Kind::Uint) | (Kind::Uint, Kind::Int) => int_of(arg1) == int_of(arg),
                _ => {
                    if !arg1.is_nil() && !arg.is_nil() {
                        return Err(ERR_BAD_COMPARISON.to_owned());
                    }
                    false
                }
            }
        } else {
            match (arg1, arg) {
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::Float(x), Value::Float(y)) => x == y,
                (Value::Str(x), Value::Str(y)) => **x == **y,
                _ if k1 == Kind::Int || k1 == Kind::Uint => int_of(arg1) == int_of(arg),
                _ => {
                    // Non-basic kinds: nil, collections, times.
                    let same_kind = arg1.kind_name() == arg.kind_name();
                    if !same_kind && !arg1.is_nil() && !arg.is_nil() {
                        return Err(format!(
                            "non-comparable types {}, {}",
                            arg1.type_name(),
                            arg.type_name()
                        ));
                    }
                    let n1 = arg1.is_nil() || arg1.is_nil_collection();
                    let n2 = arg.is_nil() || arg.is_nil_collection();
                    if n1 || n2 {
                        n1 == n2
                    } else if let (Value::Time(x), Value::Time(y)) = (arg1, arg) {
                        x.same(y)
                    } else {
                        return Err(format!("non-comparable type {}", arg.type_name()));
                    }
                }
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Go's `lt`.
pub(crate) fn lt(arg1: &Value<'_>, arg2: &Value<'_>) -> Result<bool, String> {
    let k1 = basic_kind(arg1);
    if k1 == Kind::Invalid {
        return Err(ERR_BAD_COMPARISON_TYPE.to_owned());
    }
    let k2 = basic_kind(arg2);
    if k2 == Kind::Invalid {
        return Err(ERR_BAD_COMPARISON_TYPE.to_owned());
    }
    if k1 != k2 {
        return match (k1, k2) {
            (Kind::Int, Kind::Uint) | (Kind::Uint, Kind::Int) => Ok(int_of(arg1) < int_of(arg2)),
            _ => Err(ERR_BAD_COMPARISON.to_owned()),
        };
    }
    Ok(match (arg1, arg2) {
        (Value::Bool(_), _) => return Err(ERR_BAD_COMPARISON_TYPE.to_owned()),
        (Value::Float(x), Value::Float(y)) => x < y,
        (Value::Str(x), Value::Str(y)) => **x < **y,
        _ => int_of(arg1) < int_of(arg2),
    })
}

fn le(arg1: &Value<'_>, arg2: &Value<'_>) -> Result<bool, String> {
    if lt(arg1, arg2)? {
        return Ok(true);
    }
    eq(arg1, std::slice::from_ref(arg2))
}
