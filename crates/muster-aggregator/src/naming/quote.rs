//! Quoting of names inside messages, the way the original's `%q` does it, so error texts
//! match byte for byte.

use std::fmt::Write;

/// `s` in double quotes with Go's escapes (`\"`, `\\`, `\n`, `\t`, `\xNN`, `\uNNNN`).
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::go_quote;

    #[test]
    fn quotes_like_go() {
        let table = [
            ("k8s-a", "\"k8s-a\""),
            ("", "\"\""),
            ("a\"b", "\"a\\\"b\""),
            ("a\\b", "\"a\\\\b\""),
            ("a\nb\t", "\"a\\nb\\t\""),
            ("\u{1}", "\"\\x01\""),
            ("\u{85}", "\"\\u0085\""),
            ("héllo", "\"héllo\""),
        ];
        for (input, expected) in table {
            assert_eq!(go_quote(input), expected);
        }
    }
}
