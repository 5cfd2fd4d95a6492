//! The shapes every meta-tool answers with, and the JSON text conventions of the original.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::Value;

/// A successful answer: one text content.
pub(super) fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// A failed answer: one text content with `isError: true`.
pub(super) fn error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A successful answer carrying `value` as pretty-printed JSON (two-space indent).
pub(super) fn json(value: &impl Serialize) -> CallToolResult {
    match serde_json::to_string_pretty(value) {
        Ok(text) => self::text(text),
        Err(e) => error(format!("Failed to format result: {e}")),
    }
}

/// `value` as the original's `%v` prints a JSON-decoded value: strings bare, whole numbers
/// without a fraction, `null` as `<nil>`.
pub(super) fn go_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_owned(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// A JSON number for a float, written without a fraction when it is whole (as the original
/// prints `2` where serde would print `2.0`).
pub(super) fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        // Whole and small enough to be exact as an integer.
        #[allow(clippy::cast_possible_truncation)]
        Value::from(f as i64)
    } else {
        Value::from(f)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn go_text_matches_percent_v() {
        let table = [
            (json!("a"), "a"),
            (json!(1), "1"),
            (json!(1.0), "1"),
            (json!(1.5), "1.5"),
            (json!(true), "true"),
            (json!(null), "<nil>"),
        ];
        for (value, expected) in table {
            assert_eq!(go_text(&value), expected);
        }
    }

    #[test]
    fn whole_numbers_have_no_fraction() {
        assert_eq!(number(2.0).to_string(), "2");
        assert_eq!(number(1.2346).to_string(), "1.2346");
    }
}
