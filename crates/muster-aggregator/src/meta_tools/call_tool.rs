//! `call_tool`: runs any reachable tool and wraps its result in the JSON envelope clients
//! unwrap (reference §1.5).
//!
//! The outer result's only content is the compact envelope
//! `{"isError":bool,"content":[...],"structuredContent":...}`; its own `isError` and
//! `structuredContent` mirror the inner result. Failures inside resolution or execution
//! become an inner `isError` result `Tool execution failed: <error>`, never a JSON-RPC error.

use muster_core::tool::{CallContext, ToolCall, ToolService};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::{Map, Value};
use tower::ServiceExt;

use super::reply;
use super::schema::{self, Arg};

/// The definition in `tools/list`.
pub(super) fn definition() -> Tool {
    schema::tool(
        "call_tool",
        "Execute a tool with the given arguments",
        vec![
            Arg::required("name", "string", "Name of the tool to call"),
            Arg::optional(
                "arguments",
                "object",
                "Arguments to pass to the tool (as JSON object)",
            ),
        ],
    )
}

/// Calls the tool `args.name` with `args.arguments` through `service`.
pub(super) async fn run(
    service: ToolService,
    args: &JsonObject,
    context: CallContext,
) -> CallToolResult {
    let Some(name) = args
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    else {
        return reply::error("name argument is required");
    };
    let arguments = match args.get("arguments") {
        None | Some(Value::Null) => None,
        Some(Value::Object(arguments)) => Some(arguments.clone()),
        Some(_) => return reply::error("arguments must be a JSON object"),
    };
    let call = ToolCall::new(name, arguments).with_context(context);
    let inner = match service.oneshot(call).await {
        Ok(result) => result,
        Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
            "Tool execution failed: {e}"
        ))]),
    };
    wrap(&inner)
}

/// The outer result carrying `inner`'s envelope.
fn wrap(inner: &CallToolResult) -> CallToolResult {
    let text = envelope(inner).to_string();
    let mut outer = if inner.is_error.unwrap_or(false) {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    outer.structured_content = inner.structured_content.clone().filter(|v| !v.is_null());
    outer
}

/// The envelope of a tool result: `isError` (always), `content` with text items as
/// `{"text","type"}` and images/audio as `{"dataSize","mimeType","type"}` (the base64 data
/// dropped, its length kept), other items as they are, and `structuredContent` when present.
pub fn envelope(result: &CallToolResult) -> Value {
    let mut envelope = Map::new();
    envelope.insert(
        "isError".into(),
        Value::Bool(result.is_error.unwrap_or(false)),
    );
    envelope.insert(
        "content".into(),
        Value::Array(result.content.iter().map(content_item).collect()),
    );
    if let Some(structured) = result.structured_content.as_ref().filter(|v| !v.is_null()) {
        envelope.insert("structuredContent".into(), structured.clone());
    }
    Value::Object(envelope)
}

/// One content item; keys in alphabetical order as the original prints its maps.
fn content_item(item: &ContentBlock) -> Value {
    let mut map = Map::new();
    match item {
        ContentBlock::Text(text) => {
            map.insert("text".into(), Value::from(text.text.as_str()));
            map.insert("type".into(), Value::from("text"));
        }
        ContentBlock::Image(image) => {
            map.insert("dataSize".into(), Value::from(image.data.len()));
            map.insert("mimeType".into(), Value::from(image.mime_type.as_str()));
            map.insert("type".into(), Value::from("image"));
        }
        ContentBlock::Audio(audio) => {
            map.insert("dataSize".into(), Value::from(audio.data.len()));
            map.insert("mimeType".into(), Value::from(audio.mime_type.as_str()));
            map.insert("type".into(), Value::from("audio"));
        }
        other => return serde_json::to_value(other).unwrap_or(Value::Null),
    }
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use rmcp::model::ResourceContents;
    use serde_json::json;

    use super::*;

    #[test]
    fn envelopes() {
        let mut structured = CallToolResult::success(vec![ContentBlock::text("{\"a\":1}")]);
        structured.structured_content = Some(json!({"a": 1}));
        let table = [
            (
                CallToolResult::success(vec![ContentBlock::text("hi")]),
                r#"{"isError":false,"content":[{"text":"hi","type":"text"}]}"#,
            ),
            (
                CallToolResult::error(vec![ContentBlock::text("bad")]),
                r#"{"isError":true,"content":[{"text":"bad","type":"text"}]}"#,
            ),
            (
                structured,
                r#"{"isError":false,"content":[{"text":"{\"a\":1}","type":"text"}],"structuredContent":{"a":1}}"#,
            ),
            (
                CallToolResult::success(vec![
                    ContentBlock::image("aGVsbG8=", "image/png"),
                    ContentBlock::audio("AAAA", "audio/wav"),
                ]),
                r#"{"isError":false,"content":[{"dataSize":8,"mimeType":"image/png","type":"image"},{"dataSize":4,"mimeType":"audio/wav","type":"audio"}]}"#,
            ),
            (
                CallToolResult::success(vec![]),
                r#"{"isError":false,"content":[]}"#,
            ),
        ];
        for (result, expected) in table {
            assert_eq!(envelope(&result).to_string(), expected);
        }
    }

    #[test]
    fn other_content_passes_through() {
        let result = CallToolResult::success(vec![ContentBlock::resource(ResourceContents::text(
            "body",
            "file:///a",
        ))]);
        let env = envelope(&result);
        assert_eq!(env["content"][0]["type"], "resource");
        assert_eq!(env["content"][0]["resource"]["text"], "body");
    }

    #[test]
    fn the_outer_result_mirrors_the_inner_one() {
        let mut inner = CallToolResult::error(vec![ContentBlock::text("x")]);
        inner.structured_content = Some(json!({"k": "v"}));
        let outer = wrap(&inner);
        assert_eq!(outer.is_error, Some(true));
        assert_eq!(outer.structured_content, Some(json!({"k": "v"})));
        assert_eq!(outer.content.len(), 1);
        let mut missing = CallToolResult::success(vec![]);
        missing.is_error = None;
        assert_eq!(wrap(&missing).is_error, Some(false));
    }
}
