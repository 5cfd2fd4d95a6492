//! Reading the user documentation under `docs/` the way the documentation tests need it:
//! fenced code blocks with their info strings, and the first column of tables.
//!
//! The documentation marks what a test runs or checks in the info string of a fence, after
//! the language, which renderers ignore: ```` ```sh test ````, ```` ```yaml file=PATH ````,
//! ```` ```text expected ````.

use std::path::Path;

use anyhow::Context as _;

use crate::workspace_root;

/// One fenced code block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The language, the first word of the info string (`sh`, `yaml`, …), maybe empty.
    pub lang: String,
    /// The words after the language.
    pub tags: Vec<String>,
    /// The contents, every line ending in `\n`.
    pub body: String,
    /// The 1-based line of the opening fence.
    pub line: usize,
}

impl Block {
    /// Whether the info string carries `tag`.
    pub fn has(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    /// The value of a `key=value` tag.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find_map(|t| t.strip_prefix(key)?.strip_prefix('='))
    }
}

/// A documentation file, relative to the workspace root.
///
/// # Errors
///
/// When it cannot be read.
pub fn read_doc(relative: &str) -> anyhow::Result<String> {
    let path = workspace_root().join(relative);
    std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
}

/// Every fenced block (```` ``` ```` or `~~~`) of `markdown`, in order.
pub fn blocks(markdown: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(String, Block)> = None;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            None => {
                let fence: String = trimmed
                    .chars()
                    .take_while(|c| *c == '`' || *c == '~')
                    .collect();
                if fence.len() >= 3 {
                    let mut words = trimmed[fence.len()..].split_whitespace();
                    let lang = words.next().unwrap_or_default().to_owned();
                    let tags = words.map(str::to_owned).collect();
                    open = Some((
                        fence,
                        Block {
                            lang,
                            tags,
                            body: String::new(),
                            line: i + 1,
                        },
                    ));
                }
            }
            Some((fence, block)) => {
                if trimmed.starts_with(fence.as_str()) && trimmed.trim_end() == fence.as_str() {
                    if let Some((_, block)) = open.take() {
                        out.push(block);
                    }
                } else {
                    block.body.push_str(line);
                    block.body.push('\n');
                }
            }
        }
    }
    out
}

/// The text of the section under the heading `heading` (exact text, any level), up to the
/// next heading of the same or a higher level.
pub fn section<'a>(markdown: &'a str, heading: &str) -> Option<&'a str> {
    let mut start = None;
    let mut level = 0;
    let mut offset = 0;
    let mut in_fence = false;
    for line in markdown.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if trimmed.starts_with("```") {
            in_fence = !in_fence;
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if !in_fence && hashes > 0 && trimmed[hashes..].starts_with(' ') {
            match start {
                None if trimmed[hashes..].trim() == heading => {
                    start = Some(offset + line.len());
                    level = hashes;
                }
                Some(s) if hashes <= level => return Some(&markdown[s..offset]),
                _ => {}
            }
        }
        offset += line.len();
    }
    start.map(|s| &markdown[s..])
}

/// The cells of every table row of `text`, header and separator rows excluded, in order.
/// Cells are trimmed; an escaped `\|` stays inside its cell as `|`.
pub fn rows(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut header_seen = false;
    for line in text.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            header_seen = false;
            continue;
        }
        let cells = split_row(line);
        if cells
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| ch == '-' || ch == ':'))
        {
            header_seen = true;
            continue;
        }
        if header_seen {
            out.push(cells);
        }
    }
    out
}

fn split_row(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                cell.push('|');
            }
            '|' => cells.push(std::mem::take(&mut cell)),
            c => cell.push(c),
        }
    }
    cells.push(cell);
    cells.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// The code spans (`` `x` ``) of the first cell of every table row of `text` (see
/// [`rows`]). A cell such as `` `a` / `b` `` yields both.
pub fn first_column_codes(text: &str) -> Vec<String> {
    rows(text)
        .iter()
        .filter_map(|r| r.first())
        .flat_map(|c| code_spans(c))
        .collect()
}

/// The contents of every `` `code span` `` in `text`.
pub fn code_spans(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Whether `path` exists, relative to the workspace root.
pub fn exists(relative: impl AsRef<Path>) -> bool {
    workspace_root().join(relative).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_tags() {
        let md =
            "# A\n\n```sh test\nmuster version\n```\n\ntext\n\n```yaml file=a/b.yaml\nx: 1\n```\n";
        let b = blocks(md);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].lang, "sh");
        assert!(b[0].has("test"));
        assert_eq!(b[0].body, "muster version\n");
        assert_eq!(b[0].line, 3);
        assert_eq!(b[1].value("file"), Some("a/b.yaml"));
    }

    #[test]
    fn sections_and_tables() {
        let md = "# T\n## Keys\n| key | x |\n| --- | --- |\n| `a.b` | 1 |\n| `c` / `d` | 2 |\n## Other\n| key |\n| --- |\n| `e` |\n";
        let keys = section(md, "Keys").unwrap();
        assert_eq!(first_column_codes(keys), ["a.b", "c", "d"]);
        assert_eq!(first_column_codes(section(md, "Other").unwrap()), ["e"]);
        assert!(section(md, "Missing").is_none());
        let escaped = "| a | b |\n| --- | --- |\n| `x` \\| `y` | z |\n";
        assert_eq!(
            rows(escaped),
            [vec!["`x` | `y`".to_owned(), "z".to_owned()]]
        );
    }
}
