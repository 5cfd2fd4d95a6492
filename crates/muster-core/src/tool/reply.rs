//! Small helpers every tool provider needs: reading arguments the way the original's strict
//! tools do, and building the single-text-content results they answer with.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::Value;

/// Refuses unknown top-level arguments with the original's message:
/// `unknown args: [a b]. Allowed args: [x y]`.
pub fn reject_unknown(args: &JsonObject, allowed: &[&str]) -> Result<(), CallToolResult> {
    let unknown: Vec<&str> = args
        .keys()
        .map(String::as_str)
        .filter(|k| !allowed.contains(k))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(error(format!(
            "unknown args: [{}]. Allowed args: [{}]",
            unknown.join(" "),
            allowed.join(" ")
        )))
    }
}

/// A non-empty string argument.
pub fn string_arg(args: &JsonObject, key: &str) -> Option<String> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// A successful result with one text content.
pub fn text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(message.into())])
}

/// A failed result (`isError: true`) with one text content.
pub fn error(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// A successful result with the compact JSON of `value` as its text.
pub fn json(value: &Value) -> CallToolResult {
    text(value.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unknown_arguments_are_named() {
        let args = json!({"name": "a", "bogus": 1})
            .as_object()
            .cloned()
            .unwrap();
        let err = reject_unknown(&args, &["name"]).unwrap_err();
        let text = err.content[0].as_text().unwrap().text.clone();
        assert_eq!(text, "unknown args: [bogus]. Allowed args: [name]");
        assert_eq!(err.is_error, Some(true));
        assert!(reject_unknown(&args, &["name", "bogus"]).is_ok());
        assert_eq!(string_arg(&args, "name").as_deref(), Some("a"));
        assert_eq!(string_arg(&args, "bogus"), None);
    }
}
