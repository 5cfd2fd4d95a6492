//! The documents a workflow run answers with.

use muster_core::resource::execution::ExecutionId;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value, json};

/// The answer of a run: one JSON document, and whether it reports a failure.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowResponse {
    /// The execution record's id.
    pub execution_id: ExecutionId,
    /// The document; for a JSON object it carries `execution_id` too.
    pub document: Value,
    /// Whether the run failed.
    pub is_error: bool,
}

impl WorkflowResponse {
    pub(crate) fn new(execution_id: ExecutionId, document: Value, is_error: bool) -> Self {
        let mut document = sort_keys(document);
        if let Value::Object(m) = &mut document {
            m.insert(
                "execution_id".to_owned(),
                Value::String(execution_id.to_string()),
            );
            document = sort_keys(document);
        }
        Self {
            execution_id,
            document,
            is_error,
        }
    }

    /// The MCP tool result: one text content of compact JSON with sorted keys; a document
    /// that is not an object gets a second text content naming the execution id.
    pub fn into_call_tool_result(self) -> CallToolResult {
        let mut content = vec![ContentBlock::text(self.document.to_string())];
        if !self.document.is_object() {
            content.push(ContentBlock::text(
                json!({ "execution_id": self.execution_id.to_string() }).to_string(),
            ));
        }
        let mut result = CallToolResult::success(content);
        result.is_error = Some(self.is_error);
        result
    }
}

/// Sorts object keys at every level, as the original's JSON encoding does.
pub(crate) fn sort_keys(value: Value) -> Value {
    match value {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sort_keys(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
    }
}
