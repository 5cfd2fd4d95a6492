//! The parts of Go's `strconv` that template semantics depend on: number literals with base
//! prefixes and underscores, string and rune unquoting, and quoting.

use super::unicode::is_print;

fn lower(b: u8) -> u8 {
    b.to_ascii_lowercase()
}

/// Go's `underscoreOK`: underscores only between digits or after a base prefix.
fn underscore_ok(s: &str) -> bool {
    let mut b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    if !b.is_empty() && (b[0] == b'-' || b[0] == b'+') {
        b = &b[1..];
    }
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(lower(b[1]), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = lower(b[1]) == b'x';
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || hex && (b'a'..=b'f').contains(&lower(c)) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// Go's `strconv.ParseUint(s, 0, 64)`.
pub(crate) fn parse_uint0(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let b = s.as_bytes();
    let (base, digits) = if b[0] == b'0' {
        if b.len() >= 3 && lower(b[1]) == b'x' {
            (16, &s[2..])
        } else if b.len() >= 3 && lower(b[1]) == b'o' {
            (8, &s[2..])
        } else if b.len() >= 3 && lower(b[1]) == b'b' {
            (2, &s[2..])
        } else {
            (8, &s[1..])
        }
    } else {
        (10, s)
    };
    let mut n: u64 = 0;
    let mut underscores = false;
    let mut any = false;
    for c in digits.bytes() {
        if c == b'_' {
            underscores = true;
            continue;
        }
        let d = match c {
            b'0'..=b'9' => u64::from(c - b'0'),
            b'a'..=b'z' => u64::from(c - b'a' + 10),
            b'A'..=b'Z' => u64::from(c - b'A' + 10),
            _ => return None,
        };
        if d >= base {
            return None;
        }
        n = n.checked_mul(base)?.checked_add(d)?;
        any = true;
    }
    if !(any || base == 8 && digits.is_empty()) {
        return None;
    }
    if underscores && !underscore_ok(s) {
        return None;
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
pub(crate) fn parse_int0(s: &str) -> Option<i64> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = parse_uint0(rest)?;
    if neg {
        if u <= 1u64 << 63 {
            Some((u as i128).wrapping_neg() as i64)
        } else {
            None
        }
    } else if u < 1u64 << 63 {
        Some(u as i64)
    } else {
        None
    }
}

/// Go's `strconv.ParseInt(s, base, 64)` for an explicit base (no prefixes, no underscores).
pub(crate) fn parse_int_base(s: &str, base: u32) -> Option<i64> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest.is_empty() || !rest.bytes().all(|c| (c as char).is_digit(base)) {
        return None;
    }
    let u = u64::from_str_radix(rest, base).ok()?;
    if neg {
        if u <= 1u64 << 63 {
            Some((u as i128).wrapping_neg() as i64)
        } else {
            None
        }
    } else if u < 1u64 << 63 {
        Some(u as i64)
    } else {
        None
    }
}

/// Go's `strconv.Atoi`.
pub(crate) fn atoi(s: &str) -> Option<i64> {
    parse_int_base(s, 10)
}

/// Go's `strconv.ParseFloat(s, 64)`; `None` on syntax errors and on overflow.
pub(crate) fn parse_float(s: &str) -> Option<f64> {
    if s.contains('_') {
        if !underscore_ok(s) {
            return None;
        }
        return parse_float(&s.replace('_', ""));
    }
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower_rest = rest.to_ascii_lowercase();
    let v = match lower_rest.as_str() {
        "inf" | "infinity" => f64::INFINITY,
        "nan" => f64::NAN,
        r if r.starts_with("0x") => parse_hex_float(&r[2..])?,
        r => {
            if r.is_empty()
                || !r
                    .bytes()
                    .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-'))
            {
                return None;
            }
            let v: f64 = r.parse().ok()?;
            if v.is_infinite() {
                return None;
            }
            v
        }
    };
    Some(if neg { -v } else { v })
}

fn parse_hex_float(s: &str) -> Option<f64> {
    let (mant, exp) = match s.find('p') {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int_part, frac_part) = match mant.find('.') {
        Some(i) => (&mant[..i], &mant[i + 1..]),
        None => (mant, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int_part.chars() {
        v = v.mul_add(16.0, f64::from(c.to_digit(16)?));
    }
    let mut scale = 1.0 / 16.0;
    for c in frac_part.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    let r = v * 2f64.powi(exp);
    if r.is_infinite() { None } else { Some(r) }
}

/// Go's `strconv.UnquoteChar`: decodes one (possibly escaped) character at the start of `s`.
/// Returns the character (or raw byte when `is_byte`), and the remainder.
pub(crate) fn unquote_char(s: &str, quote: char) -> Option<(u32, bool, &str)> {
    let mut chars = s.chars();
    let c = chars.next()?;
    if c == quote && (quote == '\'' || quote == '"') {
        return None;
    }
    if c != '\\' {
        return Some((c as u32, false, chars.as_str()));
    }
    let c = chars.next()?;
    let rest = chars.as_str();
    let simple = |v: char| Some((v as u32, false, rest));
    match c {
        'a' => simple('\u{07}'),
        'b' => simple('\u{08}'),
        'f' => simple('\u{0C}'),
        'n' => simple('\n'),
        'r' => simple('\r'),
        't' => simple('\t'),
        'v' => simple('\u{0B}'),
        'x' | 'u' | 'U' => {
            let n = match c {
                'x' => 2,
                'u' => 4,
                _ => 8,
            };
            if rest.len() < n || !rest.is_char_boundary(n) {
                return None;
            }
            let v = u32::from_str_radix(&rest[..n], 16).ok()?;
            if !rest[..n].bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            if c == 'x' {
                return Some((v, true, &rest[n..]));
            }
            char::from_u32(v)?;
            Some((v, false, &rest[n..]))
        }
        '0'..='7' => {
            if rest.len() < 2 || !rest.is_char_boundary(2) {
                return None;
            }
            let digits = format!("{c}{}", &rest[..2]);
            if !digits.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
                return None;
            }
            let v = u32::from_str_radix(&digits, 8).ok()?;
            if v > 255 {
                return None;
            }
            Some((v, true, &rest[2..]))
        }
        '\\' => simple('\\'),
        '\'' | '"' => {
            if c != quote {
                return None;
            }
            simple(c)
        }
        _ => None,
    }
}

/// Go's `strconv.Unquote` for `"…"` and `` `…` `` literals. Invalid UTF-8 produced by byte
/// escapes is replaced with U+FFFD.
pub(crate) fn unquote(s: &str) -> Option<String> {
    if s.len() < 2 {
        return None;
    }
    let quote = s.chars().next()?;
    if !s.ends_with(quote) {
        return None;
    }
    let body = &s[1..s.len() - 1];
    if quote == '`' {
        if body.contains('`') {
            return None;
        }
        return Some(body.replace('\r', ""));
    }
    if quote != '"' {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(body.len());
    let mut rest = body;
    while !rest.is_empty() {
        if rest.starts_with('\n') {
            return None;
        }
        let (v, is_byte, tail) = unquote_char(rest, '"')?;
        if is_byte {
            out.push(v as u8);
        } else {
            let c = char::from_u32(v)?;
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
        rest = tail;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `strconv.Quote` (`ascii_only`: `QuoteToASCII`).
pub(crate) fn quote_with(s: &str, quote: char, ascii_only: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        append_escaped_rune(&mut out, c, quote, ascii_only);
    }
    out.push(quote);
    out
}

/// Go's `strconv.Quote`: `s` in double quotes, with Go's escapes for quotes, backslashes and
/// every character that is not printable (`\n`, `\t`, `\x01`, `\u0085`, …).
///
/// ```
/// assert_eq!(muster_gotmpl::strconv::quote("a\"b\n"), r#""a\"b\n""#);
/// ```
pub fn quote(s: &str) -> String {
    quote_with(s, '"', false)
}

/// Go's `strconv.QuoteRune` for a code point (invalid ones quote as U+FFFD).
pub(crate) fn quote_rune(r: u32, ascii_only: bool) -> String {
    let c = char::from_u32(r).unwrap_or('\u{FFFD}');
    let mut out = String::from("'");
    append_escaped_rune(&mut out, c, '\'', ascii_only);
    out.push('\'');
    out
}

fn append_escaped_rune(out: &mut String, c: char, quote: char, ascii_only: bool) {
    if c == quote || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if ascii_only {
        if c.is_ascii() && is_print(c) {
            out.push(c);
            return;
        }
    } else if is_print(c) {
        out.push(c);
        return;
    }
    match c {
        '\u{07}' => out.push_str("\\a"),
        '\u{08}' => out.push_str("\\b"),
        '\u{0C}' => out.push_str("\\f"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\u{0B}' => out.push_str("\\v"),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => {
            out.push_str(&format!("\\x{:02x}", c as u32));
        }
        c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
        c => out.push_str(&format!("\\U{:08x}", c as u32)),
    }
}

/// Go's `strconv.CanBackquote`.
pub(crate) fn can_backquote(s: &str) -> bool {
    s.chars()
        .all(|c| c != '`' && c != '\u{FEFF}' && (c == '\t' || !(c < ' ' || c == '\u{7F}')))
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quotes_like_go() {
        let table = [
            ("k8s-a", "\"k8s-a\""),
            ("", "\"\""),
            ("a\"b", "\"a\\\"b\""),
            ("a\\b", "\"a\\\\b\""),
            ("a\nb\t", "\"a\\nb\\t\""),
            ("\u{7}\u{7f}", "\"\\a\\x7f\""),
            ("\u{1}", "\"\\x01\""),
            ("\u{85}", "\"\\u0085\""),
            ("\u{200b}", "\"\\u200b\""),
            ("héllo", "\"héllo\""),
        ];
        for (input, expected) in table {
            assert_eq!(quote(input), expected, "{input:?}");
        }
    }
}
