//! How client commands print: aligned tables, JSON or YAML.

use std::io::Write as _;

use anyhow::Context as _;
use serde_json::Value;

use crate::cli::Output;

/// A table: a header line and aligned rows, like `kubectl get`.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these column names.
    pub(crate) fn new(headers: &[&'static str]) -> Self {
        Self {
            headers: headers.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; empty cells print as `-`.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        let cells = cells
            .into_iter()
            .map(|c| if c.is_empty() { "-".to_owned() } else { c })
            .collect();
        self.rows.push(cells);
    }

    /// Whether the table has no rows.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text, every line ending in a newline.
    pub(crate) fn render(&self, headers: bool) -> String {
        let header: Vec<String> = self.headers.iter().map(|h| (*h).to_owned()).collect();
        let lines: Vec<&Vec<String>> = if headers {
            std::iter::once(&header).chain(&self.rows).collect()
        } else {
            self.rows.iter().collect()
        };
        let columns = self.headers.len();
        let mut widths = vec![0; columns];
        for line in &lines {
            for (width, cell) in widths.iter_mut().zip(line.iter()) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for line in lines {
            let mut text = String::new();
            for (i, cell) in line.iter().enumerate().take(columns) {
                if i + 1 == columns {
                    text.push_str(cell);
                } else {
                    let pad = widths[i].saturating_sub(cell.chars().count());
                    text.push_str(cell);
                    text.push_str(&" ".repeat(pad + 2));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Prints `value` as JSON or YAML; `false` for table formats, which the caller renders.
pub(crate) fn print_structured(value: &Value, format: Output) -> anyhow::Result<bool> {
    let text = match format {
        Output::Json => serde_json::to_string_pretty(value).context("cannot encode JSON")? + "\n",
        Output::Yaml => serde_norway::to_string(value).context("cannot encode YAML")?,
        Output::Table | Output::Wide => return Ok(false),
    };
    print(&text);
    Ok(true)
}

/// Prints a table, or a note on stderr when it has no rows.
pub(crate) fn print_table(table: &Table, headers: bool, empty: &str) {
    if table.is_empty() {
        eprintln!("{empty}");
    } else {
        print(&table.render(headers));
    }
}

/// Writes `text` to stdout. When the reader has gone (`muster … | head -1`), the process ends
/// quietly with status 0, as Unix tools do; stdout never panics.
pub(crate) fn print(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    if let Err(e) = written {
        exit_if_closed(&e);
        tracing::warn!(error = %e, "cannot write to stdout");
    }
}

/// Ends the process quietly when `error` says the reader of stdout has gone.
pub(crate) fn exit_if_closed(error: &std::io::Error) {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        // Nothing useful can be printed any more and every caller's next write would fail the
        // same way: stop here, like a tool killed by SIGPIPE, but with a clean status.
        #[allow(clippy::exit)]
        std::process::exit(0);
    }
}

/// Whether an error (of any command) comes from a reader of stdout that has gone.
pub(crate) fn is_closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// A JSON scalar as a table cell: strings without quotes, `null` as empty.
pub(crate) fn cell(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| cell(Some(v)))
            .collect::<Vec<_>>()
            .join(","),
        Some(other) => other.to_string(),
    }
}

/// `text` cut to `max` characters with an ellipsis.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() <= max && line.len() == text.len() {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut table = Table::new(&["NAME", "STATE"]);
        table.row(vec!["everything".to_owned(), "Running".to_owned()]);
        table.row(vec!["x".to_owned(), String::new()]);
        assert_eq!(
            table.render(true),
            "NAME        STATE\neverything  Running\nx           -\n"
        );
        assert_eq!(table.render(false), "everything  Running\nx           -\n");
    }

    #[test]
    fn truncates() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("ab\ncd", 10), "ab…");
    }
}
