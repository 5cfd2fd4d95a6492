//! Shell-style globs with the exact semantics of the original's `filepath.Match` on Unix:
//! `*` (any run of characters but `/`), `?` (one character but `/`), `[...]` classes with
//! ranges and `^` negation, and `\` escapes. The whole name must match.

use std::fmt;

/// The pattern is malformed (an unclosed class, a bad range, a trailing `\`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::meta_tools) struct BadPattern;

impl fmt::Display for BadPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("syntax error in pattern")
    }
}

const SEPARATOR: char = '/';

/// A validated glob, ready to match many names.
#[derive(Debug, Clone)]
pub(in crate::meta_tools) struct Pattern {
    chars: Vec<char>,
    /// The literal text every match starts with (up to the first special character): a
    /// cheap first check before the full match.
    prefix: String,
}

impl Pattern {
    /// Compiles `pattern`, checking that it is well-formed.
    pub(in crate::meta_tools) fn new(pattern: &str) -> Result<Self, BadPattern> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut rest = &chars[..];
        while !rest.is_empty() {
            let (_, chunk, after) = scan_chunk(rest);
            rest = after;
            match_chunk(chunk, &[])?;
        }
        let prefix = chars
            .iter()
            .take_while(|c| !matches!(c, '*' | '?' | '[' | '\\'))
            .collect();
        Ok(Self { chars, prefix })
    }

    /// Whether `name` matches entirely. `buffer` is scratch space reused across calls.
    pub(in crate::meta_tools) fn matches(&self, name: &str, buffer: &mut Vec<char>) -> bool {
        if !name.starts_with(&self.prefix) {
            return false;
        }
        buffer.clear();
        buffer.extend(name.chars());
        matches_chars(&self.chars, buffer).unwrap_or(false)
    }
}

fn matches_chars(mut pattern: &[char], mut name: &[char]) -> Result<bool, BadPattern> {
    'pattern: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            // A trailing `*` matches the rest of the name unless it holds a separator.
            return Ok(!name.contains(&SEPARATOR));
        }
        // The chunk at the current position; as the last chunk it must use up the name.
        if let Some(after) = match_chunk(chunk, name)?
            && (after.is_empty() || !pattern.is_empty())
        {
            name = after;
            continue;
        }
        if star {
            // Try the chunk after skipping 1, 2, ... characters, never skipping a separator.
            let mut i = 0;
            while i < name.len() && name[i] != SEPARATOR {
                if let Some(after) = match_chunk(chunk, &name[i + 1..])? {
                    if pattern.is_empty() && !after.is_empty() {
                        i += 1;
                        continue;
                    }
                    name = after;
                    continue 'pattern;
                }
                i += 1;
            }
        }
        // No match; report a malformed remainder all the same.
        while !pattern.is_empty() {
            let (_, chunk, rest) = scan_chunk(pattern);
            pattern = rest;
            match_chunk(chunk, &[])?;
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

/// Splits off leading stars and the chunk up to the next unescaped `*` outside a class.
fn scan_chunk(pattern: &[char]) -> (bool, &[char], &[char]) {
    let mut pattern = pattern;
    let mut star = false;
    while pattern.first() == Some(&'*') {
        pattern = &pattern[1..];
        star = true;
    }
    let mut in_range = false;
    let mut i = 0;
    while i < pattern.len() {
        match pattern[i] {
            '\\' if i + 1 < pattern.len() => i += 1,
            '[' => in_range = true,
            ']' => in_range = false,
            '*' if !in_range => break,
            _ => {}
        }
        i += 1;
    }
    (star, &pattern[..i], &pattern[i..])
}

/// Matches `chunk` at the start of `s`; returns the rest of `s` on a match. The whole chunk
/// is always checked for syntax, even after the match has failed.
fn match_chunk<'s>(
    mut chunk: &[char],
    mut s: &'s [char],
) -> Result<Option<&'s [char]>, BadPattern> {
    let mut failed = false;
    while let Some(&c) = chunk.first() {
        if !failed && s.is_empty() {
            failed = true;
        }
        match c {
            '[' => {
                let r = if failed {
                    None
                } else {
                    let r = s[0];
                    s = &s[1..];
                    Some(r)
                };
                chunk = &chunk[1..];
                let negated = chunk.first() == Some(&'^');
                if negated {
                    chunk = &chunk[1..];
                }
                let mut matched = false;
                let mut ranges = 0;
                loop {
                    if chunk.first() == Some(&']') && ranges > 0 {
                        chunk = &chunk[1..];
                        break;
                    }
                    let (lo, rest) = class_char(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if chunk.first() == Some(&'-') {
                        let (h, rest) = class_char(&chunk[1..])?;
                        hi = h;
                        chunk = rest;
                    }
                    if r.is_some_and(|r| lo <= r && r <= hi) {
                        matched = true;
                    }
                    ranges += 1;
                }
                if matched == negated {
                    failed = true;
                }
            }
            '?' => {
                if !failed {
                    if s[0] == SEPARATOR {
                        failed = true;
                    }
                    s = &s[1..];
                }
                chunk = &chunk[1..];
            }
            _ => {
                if c == '\\' {
                    chunk = &chunk[1..];
                    if chunk.is_empty() {
                        return Err(BadPattern);
                    }
                }
                if !failed {
                    if chunk[0] != s[0] {
                        failed = true;
                    }
                    s = &s[1..];
                }
                chunk = &chunk[1..];
            }
        }
    }
    Ok(if failed { None } else { Some(s) })
}

/// One (possibly escaped) character of a class; the class must go on after it.
fn class_char(chunk: &[char]) -> Result<(char, &[char]), BadPattern> {
    let mut chunk = chunk;
    match chunk.first() {
        None | Some('-' | ']') => return Err(BadPattern),
        Some('\\') => {
            chunk = &chunk[1..];
            if chunk.is_empty() {
                return Err(BadPattern);
            }
        }
        Some(_) => {}
    }
    let c = chunk[0];
    let rest = &chunk[1..];
    if rest.is_empty() {
        return Err(BadPattern);
    }
    Ok((c, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_like_filepath_match() {
        // Cases from the original's standard library test table, plus muster names.
        let table = [
            ("abc", "abc", true),
            ("*", "abc", true),
            ("*c", "abc", true),
            ("a*", "a", true),
            ("a*", "abc", true),
            ("a*", "ab/c", false),
            ("a*/b", "abc/b", true),
            ("a*/b", "a/c/b", false),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", true),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/f", true),
            ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", false),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", false),
            ("a*b?c*x", "abxbbxdbxebxczzx", true),
            ("a*b?c*x", "abxbbxdbxebxczzy", false),
            ("ab[c]", "abc", true),
            ("ab[b-d]", "abc", true),
            ("ab[e-g]", "abc", false),
            ("ab[^c]", "abc", false),
            ("ab[^b-d]", "abc", false),
            ("ab[^e-g]", "abc", true),
            ("a\\*b", "a*b", true),
            ("a\\*b", "ab", false),
            ("a?b", "a☺b", true),
            ("a[^a]b", "a☺b", true),
            ("a???b", "a☺b", false),
            ("a[^a][^a][^a]b", "a☺b", false),
            ("[a-ζ]*", "α", true),
            ("*[a-ζ]", "A", false),
            ("a?b", "a/b", false),
            ("a*b", "a/b", false),
            ("[\\]a]", "]", true),
            ("[\\-]", "-", true),
            ("[x\\-]", "x", true),
            ("[x\\-]", "-", true),
            ("[x\\-]", "z", false),
            ("[\\-x]", "x", true),
            ("[\\-x]", "-", true),
            ("[\\-x]", "a", false),
            ("*x", "xxx", true),
            ("x_pageserver_*", "x_pageserver_page_a", true),
            ("x_pageserver_*", "x_rank_page_a", false),
            ("core*", "core_service_list", true),
            ("core*", "workflow_core", false),
            ("x_*_list_*", "x_k8s_list_pods", true),
        ];
        let mut buffer = Vec::new();
        for (pattern, name, expected) in table {
            let compiled = Pattern::new(pattern).unwrap_or_else(|_| panic!("{pattern}"));
            assert_eq!(
                compiled.matches(name, &mut buffer),
                expected,
                "{pattern} {name}"
            );
        }
    }

    #[test]
    fn malformed_patterns() {
        let table = [
            "[]a]", "[-]", "[x-]", "[-x]", "\\", "[a-b-c]", "[", "[^", "[^bc", "a[", "a\\", "*x[",
        ];
        for pattern in table {
            assert_eq!(Pattern::new(pattern).err(), Some(BadPattern), "{pattern}");
        }
        assert_eq!(BadPattern.to_string(), "syntax error in pattern");
        assert!(Pattern::new("").is_ok());
    }
}
