//! sprig's string functions.

use std::collections::{BTreeMap, HashMap};

use super::cast::to_string;
use super::collections::strslice;
use super::{FResult, Func, Param, fixed, variadic};
use crate::strconv::quote;
use crate::unicode::{
    is_letter, is_lower, is_punct, is_space, is_title, is_upper, str_to_lower, str_to_upper,
    to_lower, to_title, to_upper,
};
use crate::value::Value;

use Param::{Any, Int, Str};

/// The longest string `repeat` builds (Go has no bound; one here keeps a template from
/// exhausting memory).
const MAX_REPEAT_BYTES: usize = 16 * 1024 * 1024;

fn s<'v>(v: &'v Value<'_>) -> &'v str {
    v.as_str().unwrap_or("")
}

fn i(v: &Value<'_>) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        _ => 0,
    }
}

fn out<'a>(x: impl Into<std::rc::Rc<str>>) -> FResult<'a> {
    Ok(Value::string(x))
}

pub(super) fn register(m: &mut HashMap<&'static str, Func>) {
    m.insert(
        "trim",
        fixed(&[Str], |a| out(s(&a[0]).trim_matches(is_space))),
    );
    m.insert("upper", fixed(&[Str], |a| out(str_to_upper(s(&a[0])))));
    m.insert("lower", fixed(&[Str], |a| out(str_to_lower(s(&a[0])))));
    m.insert("title", fixed(&[Str], |a| out(title(s(&a[0])))));
    m.insert("untitle", fixed(&[Str], |a| out(untitle(s(&a[0])))));
    m.insert("substr", fixed(&[Int, Int, Str], substr));
    m.insert(
        "repeat",
        fixed(&[Int, Str], |a| {
            let n = i(&a[0]);
            if n < 0 {
                return Err("strings: negative Repeat count".to_owned());
            }
            let text = s(&a[1]);
            let len = (n as u128).saturating_mul(text.len() as u128);
            if len > MAX_REPEAT_BYTES as u128 {
                return Err(format!(
                    "repeat: a string of {len} bytes exceeds the limit of {MAX_REPEAT_BYTES} bytes"
                ));
            }
            out(text.repeat(n as usize))
        }),
    );
    for name in ["trimall", "trimAll"] {
        m.insert(
            name,
            fixed(&[Str, Str], |a| {
                let cut = s(&a[0]);
                out(s(&a[1]).trim_matches(|c| cut.contains(c)))
            }),
        );
    }
    m.insert(
        "trimSuffix",
        fixed(&[Str, Str], |a| {
            let (suf, x) = (s(&a[0]), s(&a[1]));
            out(x.strip_suffix(suf).unwrap_or(x))
        }),
    );
    m.insert(
        "trimPrefix",
        fixed(&[Str, Str], |a| {
            let (pre, x) = (s(&a[0]), s(&a[1]));
            out(x.strip_prefix(pre).unwrap_or(x))
        }),
    );
    m.insert("nospace", fixed(&[Str], |a| out(nospace(s(&a[0])))));
    m.insert("initials", fixed(&[Str], |a| out(initials(s(&a[0])))));
    m.insert("swapcase", fixed(&[Str], |a| out(swapcase(s(&a[0])))));
    m.insert(
        "snakecase",
        fixed(&[Str], |a| out(camel_to_lower(s(&a[0]), '_'))),
    );
    m.insert(
        "kebabcase",
        fixed(&[Str], |a| out(camel_to_lower(s(&a[0]), '-'))),
    );
    m.insert("camelcase", fixed(&[Str], |a| out(to_camel_case(s(&a[0])))));
    m.insert(
        "wrap",
        fixed(&[Int, Str], |a| {
            out(wrap_custom(s(&a[1]), i(&a[0]), "", false))
        }),
    );
    m.insert(
        "wrapWith",
        fixed(&[Int, Str, Str], |a| {
            out(wrap_custom(s(&a[2]), i(&a[0]), s(&a[1]), true))
        }),
    );
    m.insert(
        "contains",
        fixed(&[Str, Str], |a| {
            Ok(Value::Bool(s(&a[1]).contains(s(&a[0]))))
        }),
    );
    m.insert(
        "hasPrefix",
        fixed(&[Str, Str], |a| {
            Ok(Value::Bool(s(&a[1]).starts_with(s(&a[0]))))
        }),
    );
    m.insert(
        "hasSuffix",
        fixed(&[Str, Str], |a| {
            Ok(Value::Bool(s(&a[1]).ends_with(s(&a[0]))))
        }),
    );
    m.insert(
        "quote",
        variadic(&[], Any, |a| {
            let parts: Vec<String> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| quote(&to_string(v)))
                .collect();
            out(parts.join(" "))
        }),
    );
    m.insert(
        "squote",
        variadic(&[], Any, |a| {
            let parts: Vec<String> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| format!("'{}'", to_string(v)))
                .collect();
            out(parts.join(" "))
        }),
    );
    m.insert(
        "cat",
        variadic(&[], Any, |a| {
            let parts: Vec<String> = a.iter().filter(|v| !v.is_nil()).map(to_string).collect();
            out(parts.join(" "))
        }),
    );
    m.insert(
        "indent",
        fixed(&[Int, Str], |a| out(indent(i(&a[0]), s(&a[1])))),
    );
    m.insert(
        "nindent",
        fixed(&[Int, Str], |a| {
            out(format!("\n{}", indent(i(&a[0]), s(&a[1]))))
        }),
    );
    m.insert(
        "replace",
        fixed(&[Str, Str, Str], |a| {
            out(go_replace(s(&a[2]), s(&a[0]), s(&a[1])))
        }),
    );
    m.insert(
        "plural",
        fixed(&[Str, Str, Int], |a| {
            out(if i(&a[2]) == 1 { s(&a[0]) } else { s(&a[1]) })
        }),
    );
    m.insert("toString", fixed(&[Any], |a| out(to_string(&a[0]))));
    m.insert(
        "split",
        fixed(&[Str, Str], |a| {
            Ok(split_map(go_split(s(&a[1]), s(&a[0]), -1)))
        }),
    );
    m.insert(
        "splitn",
        fixed(&[Str, Int, Str], |a| {
            Ok(split_map(go_split(s(&a[2]), s(&a[0]), i(&a[1]))))
        }),
    );
    m.insert(
        "splitList",
        fixed(&[Str, Str], |a| {
            Ok(Value::str_list(go_split(s(&a[1]), s(&a[0]), -1)))
        }),
    );
    m.insert(
        "join",
        fixed(&[Str, Any], |a| out(strslice(&a[1]).join(s(&a[0])))),
    );
    m.insert(
        "abbrev",
        fixed(&[Int, Str], |a| {
            let (w, x) = (i(&a[0]), s(&a[1]));
            if w < 4 {
                return out(x);
            }
            out(abbreviate_full(x, 0, w).unwrap_or_default())
        }),
    );
    m.insert(
        "abbrevboth",
        fixed(&[Int, Int, Str], |a| {
            let (left, right, x) = (i(&a[0]), i(&a[1]), s(&a[2]));
            if right < 4 || left > 0 && right < 7 {
                return out(x);
            }
            out(abbreviate_full(x, left, right).unwrap_or_default())
        }),
    );
    m.insert(
        "trunc",
        fixed(&[Int, Str], |a| {
            let (c, x) = (i(&a[0]), s(&a[1]));
            let n = x.len() as i64;
            if c < 0 && n + c > 0 {
                return out(byte_slice(x, (n + c) as usize, x.len()));
            }
            if c >= 0 && n > c {
                return out(byte_slice(x, 0, c as usize));
            }
            out(x)
        }),
    );
}

/// A byte-range slice of a Go string (invalid UTF-8 at the cut becomes U+FFFD).
fn byte_slice(x: &str, start: usize, end: usize) -> String {
    String::from_utf8_lossy(&x.as_bytes()[start..end]).into_owned()
}

fn substr(a: Vec<Value<'_>>) -> FResult<'_> {
    let (start, end, x) = (i(&a[0]), i(&a[1]), s(&a[2]));
    let n = x.len() as i64;
    let oob = || Err("runtime error: slice bounds out of range".to_owned());
    if start < 0 {
        if end < 0 || end > n {
            return oob();
        }
        return out(byte_slice(x, 0, end as usize));
    }
    if end < 0 || end > n {
        if start > n {
            return oob();
        }
        return out(byte_slice(x, start as usize, x.len()));
    }
    if start > end {
        return oob();
    }
    out(byte_slice(x, start as usize, end as usize))
}

/// Go's `strings.Replace(s, old, new, -1)` (an empty `old` inserts between runes).
fn go_replace(x: &str, old: &str, new: &str) -> String {
    if old.is_empty() {
        let mut r = String::new();
        r.push_str(new);
        for c in x.chars() {
            r.push(c);
            r.push_str(new);
        }
        return r;
    }
    x.replace(old, new)
}

/// Go's `strings.SplitN` (`n < 0`: all).
pub(super) fn go_split(x: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = x.chars().map(String::from).collect();
        if n > 0 && chars.len() as i64 > n {
            let k = (n - 1) as usize;
            let mut v: Vec<String> = chars[..k].to_vec();
            v.push(chars[k..].concat());
            return v;
        }
        return chars;
    }
    if n < 0 {
        return x.split(sep).map(str::to_owned).collect();
    }
    x.splitn(n as usize, sep).map(str::to_owned).collect()
}

fn split_map<'a>(parts: Vec<String>) -> Value<'a> {
    let m: BTreeMap<String, Value<'a>> = parts
        .into_iter()
        .enumerate()
        .map(|(k, v)| (format!("_{k}"), Value::string(v)))
        .collect();
    Value::str_dict(m)
}

fn indent(n: i64, v: &str) -> String {
    let pad = " ".repeat(n.max(0) as usize);
    format!("{pad}{}", v.replace('\n', &format!("\n{pad}")))
}

/// Go's deprecated `strings.Title`.
fn title(x: &str) -> String {
    fn is_separator(r: char) -> bool {
        if r.is_ascii() {
            return !(r.is_ascii_alphanumeric() || r == '_');
        }
        if is_letter(r) || crate::unicode::is_digit(r) {
            return false;
        }
        is_space(r)
    }
    let mut prev = ' ';
    x.chars()
        .map(|r| {
            let o = if is_separator(prev) { to_title(r) } else { r };
            prev = r;
            o
        })
        .collect()
}

/// goutils `Uncapitalize`.
fn untitle(x: &str) -> String {
    let mut next = true;
    x.chars()
        .map(|c| {
            if is_space(c) {
                next = true;
                c
            } else if next {
                next = false;
                to_lower(c)
            } else {
                c
            }
        })
        .collect()
}

/// goutils `DeleteWhiteSpace` (works on bytes, as the original does).
fn nospace(x: &str) -> String {
    let b = x.as_bytes();
    let kept: Vec<char> = b
        .iter()
        .map(|&c| char::from(c))
        .filter(|c| !is_space(*c))
        .collect();
    if kept.len() == b.len() {
        return x.to_owned();
    }
    kept.into_iter().collect()
}

/// goutils `Initials` (works on bytes, as the original does).
fn initials(x: &str) -> String {
    let mut r = String::new();
    let mut gap = true;
    for &c in x.as_bytes() {
        let ch = char::from(c);
        if is_space(ch) {
            gap = true;
        } else if gap {
            r.push(ch);
            gap = false;
        }
    }
    r
}

/// goutils `SwapCase`.
fn swapcase(x: &str) -> String {
    let mut ws = true;
    x.chars()
        .map(|c| {
            if is_upper(c) || is_title(c) {
                ws = false;
                to_lower(c)
            } else if is_lower(c) {
                if ws {
                    ws = false;
                    to_title(c)
                } else {
                    to_upper(c)
                }
            } else {
                ws = is_space(c);
                c
            }
        })
        .collect()
}

/// goutils `WrapCustom`.
fn wrap_custom(x: &str, wrap_length: i64, new_line: &str, wrap_long: bool) -> String {
    if x.is_empty() {
        return String::new();
    }
    let nl = if new_line.is_empty() { "\n" } else { new_line };
    let wl = wrap_length.max(1) as usize;
    let b = x.as_bytes();
    let len = b.len();
    let mut offset = 0usize;
    let mut outb: Vec<u8> = Vec::new();
    while len - offset > wl {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = (wl + offset + 1).min(len);
        let space = b[offset..end]
            .iter()
            .rposition(|&c| c == b' ')
            .map(|p| p + offset);
        if let Some(sp) = space.filter(|sp| *sp >= offset) {
            outb.extend_from_slice(&b[offset..sp]);
            outb.extend_from_slice(nl.as_bytes());
            offset = sp + 1;
        } else if wrap_long {
            let end = wl + offset;
            outb.extend_from_slice(&b[offset..end]);
            outb.extend_from_slice(nl.as_bytes());
            offset += wl;
        } else {
            let end = wl + offset;
            match b[end..].iter().position(|&c| c == b' ') {
                None => {
                    outb.extend_from_slice(&b[offset..]);
                    offset = len;
                }
                Some(idx) => {
                    let sp = idx + end;
                    outb.extend_from_slice(&b[offset..sp]);
                    outb.extend_from_slice(nl.as_bytes());
                    offset = sp + 1;
                }
            }
        }
    }
    outb.extend_from_slice(&b[offset..]);
    String::from_utf8_lossy(&outb).into_owned()
}

/// goutils `AbbreviateFull` (byte based).
fn abbreviate_full(x: &str, offset: i64, max_width: i64) -> Option<String> {
    if x.is_empty() {
        return Some(String::new());
    }
    if max_width < 4 {
        return None;
    }
    let n = x.len() as i64;
    if n <= max_width {
        return Some(x.to_owned());
    }
    let mut offset = offset.min(n);
    if n - offset < max_width - 3 {
        offset = n - (max_width - 3);
    }
    if offset <= 4 {
        return Some(format!("{}...", byte_slice(x, 0, (max_width - 3) as usize)));
    }
    if max_width < 7 {
        return None;
    }
    if offset + max_width - 3 < n {
        let rest = byte_slice(x, offset as usize, x.len());
        let ab = abbreviate_full(&rest, 0, max_width - 3)?;
        return Some(format!("...{ab}"));
    }
    Some(format!(
        "...{}",
        byte_slice(x, (n - (max_width - 3)) as usize, x.len())
    ))
}

// ---- xstrings case conversion --------------------------------------------------------------

fn is_connector(r: char) -> bool {
    r == '-' || r == '_' || is_space(r)
}

fn is_alphabet(r: char) -> bool {
    if !is_letter(r) {
        return false;
    }
    let c = r as u32;
    if c < 0x3400 {
        return true;
    }
    !((0x4E00..=0x9FCC).contains(&c)
        || (0x3400..=0x4D85).contains(&c)
        || (0x20000..=0x2B81D).contains(&c))
}

fn is_number(r: char) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    matches!(
        get_general_category(r),
        G::DecimalNumber | G::LetterNumber | G::OtherNumber
    )
}

/// xstrings `ToCamelCase`.
fn to_camel_case(x: &str) -> String {
    if x.is_empty() {
        return String::new();
    }
    let mut buf = String::new();
    let mut chars = x.chars();
    let mut r0 = '\0';
    let mut got = false;
    for c in chars.by_ref() {
        got = true;
        if !is_connector(c) {
            r0 = to_upper(c);
            break;
        }
        buf.push(c);
        r0 = c;
    }
    let rest: Vec<char> = chars.collect();
    if rest.is_empty() {
        if got {
            buf.push(r0);
        }
        return buf;
    }
    for c in rest {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            buf.push(r1);
            continue;
        }
        if is_connector(r1) {
            r0 = to_upper(r0);
        } else {
            r0 = to_lower(r0);
            buf.push(r1);
        }
    }
    buf.push(r0);
    buf
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum WordType {
    Invalid,
    Number,
    UpperCase,
    Alphabet,
    Connector,
    Punct,
    Other,
}

/// xstrings `nextWord`.
fn next_word(x: &str) -> (WordType, &str, &str) {
    if x.is_empty() {
        return (WordType::Invalid, "", "");
    }
    let chars: Vec<(usize, char)> = x.char_indices().collect();
    let r = chars[0].1;
    let mut k = 1usize; // number of chars in the word
    let wt;
    let count_while = |from: usize, pred: &dyn Fn(char) -> bool| -> usize {
        let mut j = from;
        while j < chars.len() && pred(chars[j].1) {
            j += 1;
        }
        j
    };
    if is_connector(r) {
        wt = WordType::Connector;
        k = count_while(1, &is_connector);
    } else if is_punct(r) {
        wt = WordType::Punct;
        k = count_while(1, &is_punct);
    } else if is_upper(r) {
        wt = WordType::UpperCase;
        if chars.len() > 1 {
            let r2 = chars[1].1;
            if is_upper(r2) {
                let j = count_while(1, &is_upper);
                k = j;
                if j < chars.len() && is_alphabet(chars[j].1) {
                    k = j - 1;
                }
            } else if is_alphabet(r2) {
                k = count_while(1, &|c| is_alphabet(c) && !is_upper(c));
            }
        }
    } else if is_alphabet(r) {
        wt = WordType::Alphabet;
        k = count_while(1, &|c| is_alphabet(c) && !is_upper(c));
    } else if is_number(r) {
        wt = WordType::Number;
        k = count_while(1, &is_number);
    } else {
        wt = WordType::Other;
        k = count_while(1, &|c| {
            !(is_connector(c) || is_alphabet(c) || is_number(c) || is_punct(c))
        });
    }
    let cut = chars.get(k).map_or(x.len(), |c| c.0);
    (wt, &x[..cut], &x[cut..])
}

fn to_lower_word(buf: &mut String, wt: WordType, word: &str, connector: char) {
    if wt != WordType::UpperCase && wt != WordType::Connector {
        buf.push_str(word);
        return;
    }
    for r in word.chars() {
        if is_connector(r) {
            buf.push(connector);
        } else if is_upper(r) {
            buf.push(to_lower(r));
        } else {
            buf.push(r);
        }
    }
}

/// xstrings `camelCaseToLowerCase` (`snakecase`, `kebabcase`).
fn camel_to_lower(x: &str, connector: char) -> String {
    use WordType as W;
    if x.is_empty() {
        return String::new();
    }
    let mut buf = String::new();
    let (mut wt, mut word, mut remaining) = next_word(x);
    while !remaining.is_empty() {
        if wt != W::Connector {
            to_lower_word(&mut buf, wt, word, connector);
        }
        let prev = wt;
        let last = word;
        (wt, word, remaining) = next_word(remaining);
        match prev {
            W::Number => {
                while wt == W::Alphabet || wt == W::Number {
                    to_lower_word(&mut buf, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != W::Invalid && wt != W::Punct && wt != W::Connector {
                    buf.push(connector);
                }
            }
            W::Connector => to_lower_word(&mut buf, prev, last, connector),
            W::Punct => {}
            _ => {
                if wt != W::Number {
                    if wt != W::Connector && wt != W::Punct {
                        buf.push(connector);
                    }
                    continue;
                }
                if remaining.is_empty() {
                    continue;
                }
                let last = word;
                (wt, word, remaining) = next_word(remaining);
                if wt != W::Alphabet {
                    to_lower_word(&mut buf, W::Number, last, connector);
                    if wt != W::Connector && wt != W::Punct {
                        buf.push(connector);
                    }
                    continue;
                }
                buf.push(connector);
                to_lower_word(&mut buf, W::Number, last, connector);
                while wt == W::Alphabet || wt == W::Number {
                    to_lower_word(&mut buf, wt, word, connector);
                    (wt, word, remaining) = next_word(remaining);
                }
                if wt != W::Invalid && wt != W::Connector && wt != W::Punct {
                    buf.push(connector);
                }
            }
        }
    }
    to_lower_word(&mut buf, wt, word, connector);
    buf
}
