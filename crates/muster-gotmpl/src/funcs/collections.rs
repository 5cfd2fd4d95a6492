//! sprig's list and dict functions.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use super::cast::to_string;
use super::{FResult, Func, Param, arg, arg_int, arg_str, fixed, variadic};
use crate::value::{Dict, Elem, List, Value};

use Param::{Any, Int, MapAny, Str};

pub(super) fn register(m: &mut HashMap<&'static str, Func>) {
    m.insert("list", variadic(&[], Any, list));
    m.insert("tuple", variadic(&[], Any, list));
    m.insert("dict", variadic(&[], Any, dict));
    m.insert("get", fixed(&[MapAny, Str], get));
    m.insert("set", fixed(&[MapAny, Str, Any], set));
    m.insert("unset", fixed(&[MapAny, Str], unset));
    m.insert("hasKey", fixed(&[MapAny, Str], has_key));
    m.insert("pluck", variadic(&[Str], MapAny, pluck));
    m.insert("keys", variadic(&[], MapAny, keys));
    m.insert("pick", variadic(&[MapAny], Str, |a| pick_omit(a, true)));
    m.insert("omit", variadic(&[MapAny], Str, |a| pick_omit(a, false)));
    m.insert("merge", variadic(&[MapAny], MapAny, |a| merge(a, false)));
    m.insert(
        "mustMerge",
        variadic(&[MapAny], MapAny, |a| merge(a, false)),
    );
    m.insert(
        "mergeOverwrite",
        variadic(&[MapAny], MapAny, |a| merge(a, true)),
    );
    m.insert(
        "mustMergeOverwrite",
        variadic(&[MapAny], MapAny, |a| merge(a, true)),
    );
    m.insert("values", fixed(&[MapAny], values));
    m.insert("deepCopy", fixed(&[Any], |a| Ok(deep_copy(&a[0]))));
    m.insert("mustDeepCopy", fixed(&[Any], |a| Ok(deep_copy(&a[0]))));
    m.insert("dig", variadic(&[], Any, dig));
    for (name, f) in [
        ("append", push as super::Impl),
        ("push", push),
        ("mustAppend", push),
        ("mustPush", push),
        ("prepend", prepend),
        ("mustPrepend", prepend),
    ] {
        m.insert(name, fixed(&[Any, Any], f));
    }
    for (name, f) in [
        ("first", first as super::Impl),
        ("mustFirst", first),
        ("last", last),
        ("mustLast", last),
        ("rest", rest),
        ("mustRest", rest),
        ("initial", initial),
        ("mustInitial", initial),
        ("reverse", reverse),
        ("mustReverse", reverse),
        ("uniq", uniq),
        ("mustUniq", uniq),
        ("compact", compact),
        ("mustCompact", compact),
        ("sortAlpha", sort_alpha),
        ("toStrings", |a| Ok(Value::str_list(strslice(&a[0])))),
    ] {
        m.insert(name, fixed(&[Any], f));
    }
    m.insert("without", variadic(&[Any], Any, without));
    m.insert("mustWithout", variadic(&[Any], Any, without));
    m.insert("has", fixed(&[Any, Any], has));
    m.insert("mustHas", fixed(&[Any, Any], has));
    m.insert("slice", variadic(&[Any], Any, slice));
    m.insert("mustSlice", variadic(&[Any], Any, slice));
    m.insert("concat", variadic(&[], Any, concat));
    m.insert("chunk", fixed(&[Int, Any], chunk));
    m.insert("mustChunk", fixed(&[Int, Any], chunk));
}

fn list(a: Vec<Value<'_>>) -> FResult<'_> {
    Ok(Value::list(a))
}

fn dict(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut m = BTreeMap::new();
    let mut it = a.into_iter();
    while let Some(k) = it.next() {
        let key = to_string(&k);
        m.insert(key, it.next().unwrap_or_else(|| Value::string("")));
    }
    Ok(Value::dict(m))
}

fn get(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let d = arg(&mut it);
    let k = arg_str(&mut it);
    Ok(d.map_get(&k).unwrap_or_else(|| Value::string("")))
}

fn set(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let d = arg(&mut it);
    let k = arg_str(&mut it);
    let v = arg(&mut it);
    if d.is_nil_collection() {
        return Err("assignment to entry in nil map".to_owned());
    }
    let owned = d.to_owned_dict().ok_or("not a map")?;
    owned.entries.borrow_mut().insert(k, v);
    Ok(Value::Dict(owned))
}

fn unset(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let d = arg(&mut it);
    let k = arg_str(&mut it);
    let owned = d.to_owned_dict().ok_or("not a map")?;
    owned.entries.borrow_mut().remove(&k);
    Ok(Value::Dict(owned))
}

fn has_key(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let d = arg(&mut it);
    let k = arg_str(&mut it);
    Ok(Value::Bool(d.map_get(&k).is_some()))
}

fn pluck(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let k = arg_str(&mut it);
    let out: Vec<Value<'_>> = it.filter_map(|d| d.map_get(&k)).collect();
    Ok(Value::list(out))
}

fn keys(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut out = Vec::new();
    for d in a {
        for (k, _) in d.map_entries().unwrap_or_default() {
            out.push(k);
        }
    }
    Ok(Value::str_list(out))
}

fn pick_omit(a: Vec<Value<'_>>, pick: bool) -> FResult<'_> {
    let mut it = a.into_iter();
    let d = arg(&mut it);
    let names: Vec<String> = it
        .map(|k| k.as_str().unwrap_or_default().to_owned())
        .collect();
    let mut out = BTreeMap::new();
    if pick {
        for k in names {
            if let Some(v) = d.map_get(&k) {
                out.insert(k, v);
            }
        }
    } else {
        for (k, v) in d.map_entries().unwrap_or_default() {
            if !names.contains(&k) {
                out.insert(k, v);
            }
        }
    }
    Ok(Value::dict(out))
}

fn values(a: Vec<Value<'_>>) -> FResult<'_> {
    let out: Vec<Value<'_>> = a[0]
        .map_entries()
        .unwrap_or_default()
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    Ok(Value::list(out))
}

/// mergo's `isEmptyValue`.
fn mergo_empty(v: &Value<'_>) -> bool {
    match v {
        Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(i) | Value::Int64(i) => *i == 0,
        Value::Uint8(u) => *u == 0,
        Value::Float(f) => *f == 0.0,
        Value::Time(_) => false,
        other => other.len() == Some(0),
    }
}

/// mergo's map merge of `src` into `dst` (sprig's `merge` / `mergeOverwrite`).
fn merge_into<'a>(dst: &Dict<'a>, src: &Value<'a>, overwrite: bool) {
    for (key, s) in src.map_entries().unwrap_or_default() {
        let d = dst.entries.borrow().get(&key).cloned();
        if s.is_nil() || s.is_nil_collection() {
            if overwrite {
                dst.entries.borrow_mut().insert(key, s);
            }
            continue;
        }
        if s.is_seq() && overwrite {
            // mergo replaces slices wholesale when overwriting.
            dst.entries.borrow_mut().insert(key, s);
            continue;
        }
        if s.is_any_map()
            && let Some(dv) = &d
            && dv.is_any_map()
            && let Some(owned) = dv.to_owned_dict()
        {
            merge_into(&owned, &s, overwrite);
            dst.entries
                .borrow_mut()
                .insert(key.clone(), Value::Dict(owned));
        }
        let d = dst.entries.borrow().get(&key).cloned();
        if let Some(dv) = &d
            && !mergo_empty(dv)
            && (s.is_map() || s.is_seq())
        {
            continue;
        }
        if overwrite || d.as_ref().is_none_or(mergo_empty) {
            dst.entries.borrow_mut().insert(key, s);
        }
    }
}

fn merge(a: Vec<Value<'_>>, overwrite: bool) -> FResult<'_> {
    let mut it = a.into_iter();
    let d = arg(&mut it);
    let dst = if d.is_nil_collection() {
        Rc::new(Dict {
            elem: Elem::Any,
            entries: Default::default(),
            nil: false,
        })
    } else {
        d.to_owned_dict().ok_or("not a map")?
    };
    for s in it {
        merge_into(&dst, &s, overwrite);
    }
    Ok(Value::Dict(dst))
}

fn deep_copy<'a>(v: &Value<'a>) -> Value<'a> {
    match v {
        Value::List(l) => Value::List(Rc::new(List {
            elem: l.elem,
            items: l.items.iter().map(deep_copy).collect(),
            nil: l.nil,
        })),
        Value::Dict(d) => Value::Dict(Rc::new(Dict {
            elem: d.elem,
            entries: std::cell::RefCell::new(
                d.entries
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), deep_copy(v)))
                    .collect(),
            ),
            nil: d.nil,
        })),
        other => other.clone(),
    }
}

fn dig(a: Vec<Value<'_>>) -> FResult<'_> {
    if a.len() < 3 {
        return Err("dig needs at least three arguments".to_owned());
    }
    let n = a.len();
    let d = a[n - 1].clone();
    if !d.is_any_map() {
        return Err(format!(
            "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
            d.type_name()
        ));
    }
    let def = a[n - 2].clone();
    let mut keys = Vec::new();
    for k in &a[..n - 2] {
        match k.as_str() {
            Some(s) => keys.push(s.to_owned()),
            None => {
                return Err(format!(
                    "interface conversion: interface {{}} is {}, not string",
                    k.type_name()
                ));
            }
        }
    }
    let mut cur = d;
    for (i, k) in keys.iter().enumerate() {
        let Some(step) = cur.map_get(k) else {
            return Ok(def);
        };
        if i == keys.len() - 1 {
            return Ok(step);
        }
        if !step.is_any_map() {
            return Err(format!(
                "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                step.type_name()
            ));
        }
        cur = step;
    }
    Ok(def)
}

/// The elements of a slice argument, or sprig's error for other kinds.
fn items_of<'a>(v: &Value<'a>, what: &str) -> Result<Vec<Value<'a>>, String> {
    if v.is_nil() {
        return Err("runtime error: invalid memory address or nil pointer dereference".to_owned());
    }
    v.seq_items()
        .ok_or_else(|| format!("Cannot {what} on type {}", v.kind_name()))
}

fn push(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let l = arg(&mut it);
    let v = arg(&mut it);
    let mut items = items_of(&l, "push")?;
    items.push(v);
    Ok(Value::list(items))
}

fn prepend(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let l = arg(&mut it);
    let v = arg(&mut it);
    let mut items = items_of(&l, "prepend")?;
    items.insert(0, v);
    Ok(Value::list(items))
}

fn first(a: Vec<Value<'_>>) -> FResult<'_> {
    let items = items_of(&a[0], "find first")?;
    Ok(items.into_iter().next().unwrap_or(Value::Nil))
}

fn last(a: Vec<Value<'_>>) -> FResult<'_> {
    let items = items_of(&a[0], "find last")?;
    Ok(items.into_iter().next_back().unwrap_or(Value::Nil))
}

fn rest(a: Vec<Value<'_>>) -> FResult<'_> {
    let items = items_of(&a[0], "find rest")?;
    if items.is_empty() {
        return Ok(Value::nil_list());
    }
    Ok(Value::list(items.into_iter().skip(1).collect()))
}

fn initial(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut items = items_of(&a[0], "find initial")?;
    if items.is_empty() {
        return Ok(Value::nil_list());
    }
    items.pop();
    Ok(Value::list(items))
}

fn reverse(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut items = items_of(&a[0], "find reverse")?;
    items.reverse();
    Ok(Value::list(items))
}

fn uniq(a: Vec<Value<'_>>) -> FResult<'_> {
    let items = items_of(&a[0], "find uniq")?;
    let mut out: Vec<Value<'_>> = Vec::new();
    for i in items {
        if !out.iter().any(|o| o.deep_equal(&i)) {
            out.push(i);
        }
    }
    Ok(Value::list(out))
}

/// sprig's `empty`.
pub(super) fn empty(v: &Value<'_>) -> bool {
    match v {
        Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(i) | Value::Int64(i) => *i == 0,
        Value::Uint8(u) => *u == 0,
        Value::Float(f) => *f == 0.0,
        Value::Time(_) => false,
        other => other.len() == Some(0),
    }
}

fn compact(a: Vec<Value<'_>>) -> FResult<'_> {
    let items = items_of(&a[0], "compact")?;
    Ok(Value::list(
        items.into_iter().filter(|i| !empty(i)).collect(),
    ))
}

/// sprig's `strslice`.
pub(super) fn strslice(v: &Value<'_>) -> Vec<String> {
    match v {
        Value::Nil => Vec::new(),
        v if v.is_seq() => v
            .seq_items()
            .unwrap_or_default()
            .iter()
            .filter(|x| !x.is_nil())
            .map(to_string)
            .collect(),
        other => vec![to_string(other)],
    }
}

fn sort_alpha(a: Vec<Value<'_>>) -> FResult<'_> {
    let v = &a[0];
    if v.is_seq() {
        let mut s = strslice(v);
        s.sort();
        return Ok(Value::str_list(s));
    }
    Ok(Value::str_list(vec![to_string(v)]))
}

fn without(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let l = arg(&mut it);
    let omit: Vec<Value<'_>> = it.collect();
    let items = items_of(&l, "find without")?;
    Ok(Value::list(
        items
            .into_iter()
            .filter(|i| !omit.iter().any(|o| o.deep_equal(i)))
            .collect(),
    ))
}

fn has(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let needle = arg(&mut it);
    let hay = arg(&mut it);
    if hay.is_nil() {
        return Ok(Value::Bool(false));
    }
    let items = hay
        .seq_items()
        .ok_or_else(|| format!("Cannot find has on type {}", hay.kind_name()))?;
    Ok(Value::Bool(items.iter().any(|i| needle.deep_equal(i))))
}

fn slice(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let l = arg(&mut it);
    if l.is_nil() {
        return Err("runtime error: invalid memory address or nil pointer dereference".to_owned());
    }
    let n = l.len().filter(|_| l.is_seq()).ok_or_else(|| {
        format!(
            "list should be type of slice or array but {}",
            l.kind_name()
        )
    })?;
    if n == 0 {
        return Ok(Value::Nil);
    }
    let idx: Vec<Value<'_>> = it.collect();
    let start = idx.first().map_or(0, |v| super::cast::to_int64(v));
    let end = if idx.len() < 2 {
        n as i64
    } else {
        super::cast::to_int64(&idx[1])
    };
    if start < 0 || end < start || end as usize > n {
        return Err("reflect: slice index out of range".to_owned());
    }
    let (s, e) = (start as usize, end as usize);
    Ok(match &l {
        Value::JArr(arr) => Value::JArr(&arr[s..e]),
        Value::List(list) => Value::List(Rc::new(List {
            elem: list.elem,
            items: list.items[s..e].to_vec(),
            nil: false,
        })),
        _ => Value::Nil,
    })
}

fn concat(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut out: Vec<Value<'_>> = Vec::new();
    for l in &a {
        if l.is_nil() {
            return Err(
                "runtime error: invalid memory address or nil pointer dereference".to_owned(),
            );
        }
        match l.seq_items() {
            Some(items) => out.extend(items),
            None => return Err(format!("Cannot concat type {} as list", l.kind_name())),
        }
    }
    if out.is_empty() {
        return Ok(Value::nil_list());
    }
    Ok(Value::list(out))
}

fn chunk(a: Vec<Value<'_>>) -> FResult<'_> {
    let mut it = a.into_iter();
    let size = arg_int(&mut it);
    let l = arg(&mut it);
    let items = items_of(&l, "chunk")?;
    if size <= 0 {
        return Err("runtime error: makeslice: len out of range".to_owned());
    }
    let chunks: Vec<Value<'_>> = items
        .chunks(size as usize)
        .map(|c| Value::list(c.to_vec()))
        .collect();
    Ok(Value::typed_list(Elem::AnyList, chunks))
}
