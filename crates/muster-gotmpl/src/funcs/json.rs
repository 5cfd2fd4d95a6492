//! Go's `encoding/json` for template values (`toJson`, `toPrettyJson`, `toRawJson`) and
//! `fromJson`.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value as Json;

use super::{FResult, Func, Param, fixed};
use crate::gofmt::format_float;
use crate::value::Value;

use Param::{Any, Str};

/// How to encode.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JsonStyle {
    /// Escape `<`, `>` and `&` (Go's default).
    pub(crate) escape_html: bool,
    /// Indent with two spaces (`MarshalIndent`).
    pub(crate) indent: bool,
}

pub(super) fn register(m: &mut HashMap<&'static str, Func>) {
    const COMPACT: JsonStyle = JsonStyle {
        escape_html: true,
        indent: false,
    };
    const PRETTY: JsonStyle = JsonStyle {
        escape_html: true,
        indent: true,
    };
    const RAW: JsonStyle = JsonStyle {
        escape_html: false,
        indent: false,
    };
    m.insert(
        "toJson",
        fixed(&[Any], |a| {
            Ok(Value::string(
                encode_json(&a[0], COMPACT).unwrap_or_default(),
            ))
        }),
    );
    m.insert(
        "toPrettyJson",
        fixed(&[Any], |a| {
            Ok(Value::string(
                encode_json(&a[0], PRETTY).unwrap_or_default(),
            ))
        }),
    );
    for name in ["toRawJson", "mustToRawJson"] {
        m.insert(
            name,
            fixed(&[Any], |a| encode_json(&a[0], RAW).map(Value::string)),
        );
    }
    m.insert(
        "mustToJson",
        fixed(&[Any], |a| encode_json(&a[0], COMPACT).map(Value::string)),
    );
    m.insert(
        "mustToPrettyJson",
        fixed(&[Any], |a| encode_json(&a[0], PRETTY).map(Value::string)),
    );
    m.insert(
        "fromJson",
        fixed(&[Str], |a| {
            Ok(from_json(a[0].as_str().unwrap_or("")).unwrap_or(Value::Nil))
        }),
    );
    m.insert(
        "mustFromJson",
        fixed(&[Str], |a| from_json(a[0].as_str().unwrap_or(""))),
    );
}

/// `json.Unmarshal` into `interface{}`.
fn from_json<'a>(s: &str) -> FResult<'a> {
    let j: Json = serde_json::from_str(s).map_err(|_| "invalid JSON document".to_owned())?;
    Ok(owned_from_json(&j))
}

/// An owned template value for a JSON document.
pub(crate) fn owned_from_json<'a>(j: &Json) -> Value<'a> {
    match j {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        Json::String(s) => Value::string(s.as_str()),
        Json::Array(a) => Value::list(a.iter().map(owned_from_json).collect()),
        Json::Object(o) => {
            let m: BTreeMap<String, Value<'a>> = o
                .iter()
                .map(|(k, v)| (k.clone(), owned_from_json(v)))
                .collect();
            Value::dict(m)
        }
    }
}

/// Go's JSON encoding of a value.
pub(crate) fn encode_json(v: &Value<'_>, style: JsonStyle) -> Result<String, String> {
    let mut out = String::new();
    encode(&mut out, v, style, 0)?;
    Ok(out)
}

fn newline(out: &mut String, style: JsonStyle, depth: usize) {
    if style.indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
}

fn encode(out: &mut String, v: &Value<'_>, style: JsonStyle, depth: usize) -> Result<(), String> {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => out.push_str(&i.to_string()),
        Value::Uint8(u) => out.push_str(&u.to_string()),
        Value::Float(f) => out.push_str(&json_float(*f)?),
        Value::Str(s) => encode_string(out, s, style.escape_html),
        Value::Time(t) => {
            let y = t.year();
            if !(0..=9999).contains(&y) {
                return Err("Time.MarshalJSON: year outside of range [0,9999]".to_owned());
            }
            encode_string(out, &t.to_rfc3339_nano(), style.escape_html);
        }
        v if v.is_seq() => {
            if v.is_nil_collection() {
                out.push_str("null");
                return Ok(());
            }
            let items = v.seq_items().unwrap_or_default();
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, style, depth + 1);
                encode(out, x, style, depth + 1)?;
            }
            if !items.is_empty() {
                newline(out, style, depth);
            }
            out.push(']');
        }
        v if v.is_map() => {
            if v.is_nil_collection() {
                out.push_str("null");
                return Ok(());
            }
            let entries = v.map_entries().unwrap_or_default();
            out.push('{');
            for (i, (k, x)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, style, depth + 1);
                encode_string(out, k, style.escape_html);
                out.push(':');
                if style.indent {
                    out.push(' ');
                }
                encode(out, x, style, depth + 1)?;
            }
            if !entries.is_empty() {
                newline(out, style, depth);
            }
            out.push('}');
        }
        _ => out.push_str("null"),
    }
    Ok(())
}

/// Go's JSON number form of a float64.
pub(crate) fn json_float(f: f64) -> Result<String, String> {
    if !f.is_finite() {
        return Err(format!(
            "json: unsupported value: {}",
            format_float(f, 'g', None)
        ));
    }
    let a = f.abs();
    let use_e = a != 0.0 && !(1e-6..1e21).contains(&a);
    let mut s = format_float(f, if use_e { 'e' } else { 'f' }, None);
    if use_e {
        // e-09 -> e-9
        let b = s.as_bytes();
        let n = b.len();
        if n >= 4 && b[n - 4] == b'e' && b[n - 3] == b'-' && b[n - 2] == b'0' {
            let last = s.pop().unwrap_or('0');
            s.pop();
            s.push(last);
        }
    }
    Ok(s)
}

fn encode_string(out: &mut String, s: &str, escape_html: bool) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' if escape_html => {
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 0xF] as char);
            }
            c if (c as u32) < 0x20 => {
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 0xF] as char);
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('"');
}
