//! Tool results, and the `call_tool` envelope around them.

use anyhow::Context as _;
use serde_json::Value;

/// The result of one tool: the inner result for tools called through `call_tool`.
#[derive(Debug, Clone)]
pub(crate) struct ToolResult {
    /// Whether the tool failed.
    pub(crate) is_error: bool,
    /// The content items.
    pub(crate) content: Vec<Value>,
    /// `structuredContent`, when the tool gave one.
    pub(crate) structured: Option<Value>,
}

impl ToolResult {
    /// Reads a `tools/call` result as it is.
    pub(crate) fn from_result(result: &Value) -> Self {
        Self {
            is_error: result
                .get("isError")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            content: result
                .get("content")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            structured: result.get("structuredContent").cloned(),
        }
    }

    /// Unwraps the envelope `call_tool` puts into its first text content.
    pub(crate) fn from_call_tool(result: &Value) -> anyhow::Result<Self> {
        let outer = Self::from_result(result);
        let text = outer.text();
        match serde_json::from_str::<Value>(&text) {
            Ok(envelope) if envelope.get("isError").is_some() => Ok(Self::from_result(&envelope)),
            _ if outer.is_error => Ok(outer),
            _ => Err(anyhow::anyhow!(
                "call_tool answered without an envelope: {text}"
            )),
        }
    }

    /// The text contents joined by newlines.
    pub(crate) fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .collect();
        texts.join("\n")
    }

    /// The payload as JSON: the text parsed as JSON, the structured content, or the text as a
    /// JSON string.
    pub(crate) fn value(&self) -> Value {
        let text = self.text();
        match serde_json::from_str(&text) {
            Ok(value) => value,
            Err(_) => match &self.structured {
                Some(structured) if text.is_empty() => structured.clone(),
                _ => Value::String(text),
            },
        }
    }

    /// The payload as JSON; an error naming `tool` when it is not JSON.
    pub(crate) fn json(&self, tool: &str) -> anyhow::Result<Value> {
        serde_json::from_str(&self.text()).with_context(|| {
            format!(
                "{tool} answered something that is not JSON: {}",
                self.text()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unwraps_the_envelope() {
        let inner = json!({"isError": true, "content": [{"type": "text", "text": "nope"}]});
        let outer =
            json!({"content": [{"type": "text", "text": inner.to_string()}], "isError": true});
        let result = ToolResult::from_call_tool(&outer).unwrap_or_else(|e| panic!("{e}"));
        assert!(result.is_error);
        assert_eq!(result.text(), "nope");
    }
}
