//! sprig's defaults, flow control, reflection, paths, regular expressions and random values,
//! plus Helm's `required`.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use regex::Regex;

use super::collections::empty;
use super::{FResult, Func, Param, fixed, variadic};
use crate::value::Value;

use Param::{Any, Bool, Int, Str};

fn s<'v>(v: &'v Value<'_>) -> &'v str {
    v.as_str().unwrap_or("")
}

fn int(v: &Value<'_>) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        _ => 0,
    }
}

pub(super) fn register(m: &mut HashMap<&'static str, Func>) {
    m.insert("hello", fixed(&[], |_| Ok(Value::string("Hello!"))));
    m.insert(
        "default",
        variadic(&[Any], Any, |a| {
            let mut it = a.into_iter();
            let d = it.next().unwrap_or(Value::Nil);
            match it.next() {
                Some(g) if !empty(&g) => Ok(g),
                _ => Ok(d),
            }
        }),
    );
    m.insert("empty", fixed(&[Any], |a| Ok(Value::Bool(empty(&a[0])))));
    m.insert(
        "coalesce",
        variadic(&[], Any, |a| {
            Ok(a.into_iter().find(|v| !empty(v)).unwrap_or(Value::Nil))
        }),
    );
    m.insert(
        "all",
        variadic(&[], Any, |a| Ok(Value::Bool(a.iter().all(|v| !empty(v))))),
    );
    m.insert(
        "any",
        variadic(&[], Any, |a| Ok(Value::Bool(a.iter().any(|v| !empty(v))))),
    );
    m.insert(
        "ternary",
        fixed(&[Any, Any, Bool], |a| {
            let mut it = a.into_iter();
            let (t, f, c) = (it.next(), it.next(), it.next());
            Ok(if matches!(c, Some(Value::Bool(true))) {
                t
            } else {
                f
            }
            .unwrap_or(Value::Nil))
        }),
    );
    m.insert("fail", fixed(&[Str], |a| Err(s(&a[0]).to_owned())));
    m.insert(
        "required",
        fixed(&[Str, Any], |a| {
            let mut it = a.into_iter();
            let warn = it.next().unwrap_or(Value::Nil);
            let v = it.next().unwrap_or(Value::Nil);
            match &v {
                Value::Nil => Err(s(&warn).to_owned()),
                Value::Str(x) if x.is_empty() => Err(s(&warn).to_owned()),
                _ => Ok(v),
            }
        }),
    );
    m.insert(
        "typeOf",
        fixed(&[Any], |a| Ok(Value::string(a[0].type_name()))),
    );
    m.insert(
        "typeIs",
        fixed(&[Str, Any], |a| {
            Ok(Value::Bool(s(&a[0]) == a[1].type_name()))
        }),
    );
    m.insert(
        "typeIsLike",
        fixed(&[Str, Any], |a| {
            let t = a[1].type_name();
            Ok(Value::Bool(s(&a[0]) == t || format!("*{}", s(&a[0])) == t))
        }),
    );
    m.insert(
        "kindOf",
        fixed(&[Any], |a| Ok(Value::string(a[0].kind_name()))),
    );
    m.insert(
        "kindIs",
        fixed(&[Str, Any], |a| {
            Ok(Value::Bool(s(&a[0]) == a[1].kind_name()))
        }),
    );
    m.insert(
        "deepEqual",
        fixed(&[Any, Any], |a| Ok(Value::Bool(a[0].deep_equal(&a[1])))),
    );
    for (name, f) in [
        ("base", path_base as super::Impl),
        ("osBase", path_base),
        ("dir", path_dir),
        ("osDir", path_dir),
        ("clean", |a| Ok(Value::string(path_clean(s(&a[0]))))),
        ("osClean", |a| Ok(Value::string(path_clean(s(&a[0]))))),
        ("ext", path_ext),
        ("osExt", path_ext),
        ("isAbs", |a| Ok(Value::Bool(s(&a[0]).starts_with('/')))),
        ("osIsAbs", |a| Ok(Value::Bool(s(&a[0]).starts_with('/')))),
    ] {
        m.insert(name, fixed(&[Str], f));
    }
    m.insert(
        "regexMatch",
        fixed(&[Str, Str], |a| {
            Ok(Value::Bool(
                compile(s(&a[0])).is_ok_and(|r| r.is_match(s(&a[1]))),
            ))
        }),
    );
    m.insert(
        "mustRegexMatch",
        fixed(&[Str, Str], |a| {
            Ok(Value::Bool(compile(s(&a[0]))?.is_match(s(&a[1]))))
        }),
    );
    for name in ["regexFindAll", "mustRegexFindAll"] {
        m.insert(
            name,
            fixed(&[Str, Str, Int], |a| {
                let r = compile(s(&a[0]))?;
                let n = int(&a[2]);
                Ok(Value::str_list(
                    find_all(&r, s(&a[1]), n)
                        .into_iter()
                        .map(|(x, y)| s(&a[1])[x..y].to_owned())
                        .collect(),
                ))
            }),
        );
    }
    for name in ["regexFind", "mustRegexFind"] {
        m.insert(
            name,
            fixed(&[Str, Str], |a| {
                let r = compile(s(&a[0]))?;
                Ok(Value::string(r.find(s(&a[1])).map_or("", |x| x.as_str())))
            }),
        );
    }
    for name in ["regexReplaceAll", "mustRegexReplaceAll"] {
        m.insert(
            name,
            fixed(&[Str, Str, Str], |a| {
                let r = compile(s(&a[0]))?;
                Ok(Value::string(
                    r.replace_all(s(&a[1]), s(&a[2])).into_owned(),
                ))
            }),
        );
    }
    for name in ["regexReplaceAllLiteral", "mustRegexReplaceAllLiteral"] {
        m.insert(
            name,
            fixed(&[Str, Str, Str], |a| {
                let r = compile(s(&a[0]))?;
                Ok(Value::string(
                    r.replace_all(s(&a[1]), regex::NoExpand(s(&a[2])))
                        .into_owned(),
                ))
            }),
        );
    }
    for name in ["regexSplit", "mustRegexSplit"] {
        m.insert(
            name,
            fixed(&[Str, Str, Int], |a| {
                let r = compile(s(&a[0]))?;
                Ok(regex_split(&r, s(&a[0]), s(&a[1]), int(&a[2])))
            }),
        );
    }
    m.insert(
        "regexQuoteMeta",
        fixed(&[Str], |a| Ok(Value::string(quote_meta(s(&a[0]))))),
    );
    m.insert("uuidv4", fixed(&[], |_| Ok(Value::string(uuid_v4()))));
    m.insert(
        "randAlphaNum",
        fixed(&[Int], |a| {
            rand_string(
                int(&a[0]),
                b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
            )
        }),
    );
    m.insert(
        "randAlpha",
        fixed(&[Int], |a| {
            rand_string(
                int(&a[0]),
                b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
            )
        }),
    );
    m.insert(
        "randNumeric",
        fixed(&[Int], |a| rand_string(int(&a[0]), b"0123456789")),
    );
    m.insert(
        "randAscii",
        fixed(&[Int], |a| {
            let chars: Vec<u8> = (32u8..=126).collect();
            rand_string(int(&a[0]), &chars)
        }),
    );
    m.insert(
        "shuffle",
        fixed(&[Str], |a| {
            let mut chars: Vec<char> = s(&a[0]).chars().collect();
            for i in (1..chars.len()).rev() {
                let j = (random_u64() % (i as u64 + 1)) as usize;
                chars.swap(i, j);
            }
            Ok(Value::string(chars.into_iter().collect::<String>()))
        }),
    );
}

// ---- randomness ----------------------------------------------------------------------------

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A random 64-bit value (std's per-process random hasher keys mixed with a counter and clock).
pub(crate) fn random_u64() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    h.finish()
}

fn rand_string<'a>(n: i64, alphabet: &[u8]) -> FResult<'a> {
    if n < 0 {
        return Err("count must be non-negative".to_owned());
    }
    let s: String = (0..n)
        .map(|_| alphabet[(random_u64() % alphabet.len() as u64) as usize] as char)
        .collect();
    Ok(Value::string(s))
}

fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&random_u64().to_le_bytes());
    b[8..].copy_from_slice(&random_u64().to_le_bytes());
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

// ---- paths (Go's `path` package) -----------------------------------------------------------

/// Go's `path.Clean`.
pub(crate) fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_owned();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if matches!(out.last(), Some(&x) if x != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            x => out.push(x),
        }
    }
    let joined = out.join("/");
    if rooted {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    }
}

fn path_base(a: Vec<Value<'_>>) -> FResult<'_> {
    let p = s(&a[0]);
    if p.is_empty() {
        return Ok(Value::string("."));
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return Ok(Value::string("/"));
    }
    Ok(Value::string(t.rsplit('/').next().unwrap_or(t)))
}

fn path_dir(a: Vec<Value<'_>>) -> FResult<'_> {
    let p = s(&a[0]);
    let dir = match p.rfind('/') {
        Some(i) => &p[..=i],
        None => "",
    };
    Ok(Value::string(path_clean(dir)))
}

fn path_ext(a: Vec<Value<'_>>) -> FResult<'_> {
    let p = s(&a[0]);
    for (i, c) in p.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return Ok(Value::string(&p[i..]));
        }
    }
    Ok(Value::string(""))
}

// ---- regular expressions (Go's RE2 syntax) -------------------------------------------------

/// Translates Go regexp syntax where Rust's differs: Go's Perl classes are ASCII-only.
fn translate(re: &str) -> String {
    let mut out = String::with_capacity(re.len() + 8);
    let mut chars = re.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let rep = match (in_class, n) {
                    (false, 'd') => Some("[0-9]"),
                    (false, 'D') => Some("[^0-9]"),
                    (false, 'w') => Some("[0-9A-Za-z_]"),
                    (false, 'W') => Some("[^0-9A-Za-z_]"),
                    (false, 's') => Some("[\\t\\n\\f\\r ]"),
                    (false, 'S') => Some("[^\\t\\n\\f\\r ]"),
                    (false, 'b') => Some("(?-u:\\b)"),
                    (false, 'B') => Some("(?-u:\\B)"),
                    (true, 'd') => Some("0-9"),
                    (true, 'w') => Some("0-9A-Za-z_"),
                    (true, 's') => Some("\\t\\n\\f\\r "),
                    (true, 'D') => Some("[:^digit:]"),
                    (true, 'W') => Some("[:^word:]"),
                    (true, 'S') => Some("[:^space:]"),
                    _ => None,
                };
                match rep {
                    Some(r) => out.push_str(r),
                    None => {
                        out.push('\\');
                        out.push(n);
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push_str("\\]");
                    chars.next();
                }
            }
            '[' if in_class && chars.peek() == Some(&':') => {
                // POSIX class [:alpha:]
                out.push('[');
                for d in chars.by_ref() {
                    out.push(d);
                    if d == ']' {
                        break;
                    }
                }
            }
            '[' if in_class => out.push_str("\\["),
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

fn compile(re: &str) -> Result<Regex, String> {
    Regex::new(&translate(re)).map_err(|_| "error parsing regexp: invalid syntax".to_owned())
}

/// Go's `FindAllStringIndex(s, n)`.
fn find_all(r: &Regex, s: &str, n: i64) -> Vec<(usize, usize)> {
    let it = r.find_iter(s).map(|m| (m.start(), m.end()));
    if n < 0 {
        it.collect()
    } else {
        it.take(n as usize).collect()
    }
}

/// Go's `Regexp.Split`.
fn regex_split<'a>(r: &Regex, expr: &str, s: &str, n: i64) -> Value<'a> {
    if n == 0 {
        return Value::List(std::rc::Rc::new(crate::value::List {
            elem: crate::value::Elem::Str,
            items: Vec::new(),
            nil: true,
        }));
    }
    if !expr.is_empty() && s.is_empty() {
        return Value::str_list(vec![String::new()]);
    }
    let matches = find_all(r, s, n);
    let mut parts: Vec<String> = Vec::new();
    let (mut beg, mut end) = (0usize, 0usize);
    for (m0, m1) in matches {
        if n > 0 && parts.len() as i64 == n - 1 {
            break;
        }
        end = m0;
        if m1 != 0 {
            parts.push(s[beg..end].to_owned());
        }
        beg = m1;
    }
    if end != s.len() {
        parts.push(s[beg..].to_owned());
    }
    Value::str_list(parts)
}

/// Go's `regexp.QuoteMeta`.
fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
