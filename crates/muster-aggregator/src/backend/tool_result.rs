//! What the answer to a `tools/call` means for the caller.

use muster_core::tool::ToolError;
use rmcp::model::{CallToolResult, ContentBlock, ResultType, ServerResult};

/// The result of a `tools/call` the server answered with `result`.
pub(crate) fn tool_result(
    provider: &str,
    result: ServerResult,
) -> Result<CallToolResult, ToolError> {
    match result {
        ServerResult::CallToolResult(mut result) => {
            result.result_type.get_or_insert(ResultType::COMPLETE);
            Ok(result)
        }
        ServerResult::EmptyResult(_) => {
            let mut result = CallToolResult::success(Vec::new());
            result.result_type = Some(ResultType::COMPLETE);
            Ok(result)
        }
        ServerResult::InputRequiredResult(_) => Err(ToolError::failed(
            "the server asked for more input, which muster does not relay yet",
        )),
        ServerResult::CreateTaskResult(_) => Err(ToolError::failed(
            "the server answered with a task, which muster does not relay yet",
        )),
        _ => Err(ToolError::Backend {
            provider: provider.to_owned(),
            retryable: false,
            source: "unexpected response to tools/call".into(),
        }),
    }
}

/// A result of plain text blocks and nothing else — what most tools answer — read without
/// rmcp's deserializer, which buffers every internally tagged content block before reading
/// it again. Any other field, block type or key makes it not apply.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TextResult<'a> {
    #[serde(rename = "resultType", borrow)]
    result_type: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    content: Vec<TextBlock<'a>>,
    #[serde(rename = "isError")]
    is_error: Option<bool>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TextBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    text: std::borrow::Cow<'a, str>,
}

/// The `tools/call` result `json` when it holds text blocks only (no `structuredContent`,
/// `_meta`, annotations or other block; `resultType`, if any, `complete`), as rmcp would
/// read it; `None` for anything else, which rmcp's types then read.
pub(crate) fn text_only(json: &str) -> Option<CallToolResult> {
    serde_json::from_str::<TextResult<'_>>(json)
        .ok()?
        .into_result()
}

/// A JSON-RPC response (`jsonrpc`, `id` and `result`, nothing else) whose result holds text
/// blocks only, read in one pass: a response that is anything else does not read as one.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TextResponse<'a> {
    #[serde(rename = "jsonrpc")]
    _jsonrpc: serde::de::IgnoredAny,
    /// The id, as written.
    #[serde(borrow)]
    pub(crate) id: &'a serde_json::value::RawValue,
    #[serde(borrow)]
    result: TextResult<'a>,
}

impl TextResponse<'_> {
    /// The result, as [`text_only`] reads it; `None` when it does not apply.
    pub(crate) fn into_result(self) -> Option<CallToolResult> {
        self.result.into_result()
    }
}

impl TextResult<'_> {
    fn into_result(self) -> Option<CallToolResult> {
        if self.result_type.is_some_and(|t| t != "complete") {
            return None;
        }
        let mut content = Vec::with_capacity(self.content.len());
        for block in self.content {
            if block.kind != "text" {
                return None;
            }
            content.push(ContentBlock::text(block.text.into_owned()));
        }
        let mut result = CallToolResult::default();
        result.content = content;
        result.is_error = self.is_error;
        result.result_type = Some(ResultType::COMPLETE);
        Some(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What rmcp's own reading of `json` gives, as `Exchange::finish` completes it.
    fn by_rmcp(json: &str) -> CallToolResult {
        let mut result: CallToolResult = serde_json::from_str(json).unwrap();
        result.result_type.get_or_insert(ResultType::COMPLETE);
        result
    }

    #[test]
    fn text_results_read_as_rmcp_reads_them() {
        for json in [
            r#"{"content":[{"type":"text","text":"x"}],"isError":false}"#,
            r#"{"content":[{"type":"text","text":"a \"quoted\" \u00e9 line\n"},{"text":"b","type":"text"}]}"#,
            r#"{"isError":true,"content":[]}"#,
            r#"{"content":[{"type":"text","text":"x"}],"isError":null}"#,
            r#"{"resultType":"complete","content":[{"type":"text","text":"x"}],"isError":false}"#,
        ] {
            assert_eq!(text_only(json), Some(by_rmcp(json)), "{json}");
        }
    }

    #[test]
    fn a_text_response_reads_in_one_pass_as_by_levels() {
        for result in [
            r#"{"content":[{"type":"text","text":"x"}],"isError":false}"#,
            r#"{"isError":true,"content":[{"text":"a \"b\" \u00e9","type":"text"}]}"#,
            r#"{"resultType":"complete","content":[]}"#,
        ] {
            let message = format!(r#"{{"jsonrpc":"2.0","id":"muster-7","result":{result}}}"#);
            let read: TextResponse<'_> = serde_json::from_str(&message).unwrap();
            assert_eq!(read.id.get(), r#""muster-7""#);
            assert_eq!(read.into_result(), Some(by_rmcp(result)), "{message}");
        }
        for other in [
            // Anything but a plain response of text blocks is read by levels.
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"_meta":{}}"#,
            r#"{"id":1,"result":{"content":[]}}"#,
        ] {
            assert!(
                serde_json::from_str::<TextResponse<'_>>(other).is_err(),
                "{other}"
            );
        }
        let not_text =
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"link","text":"x"}]}}"#;
        let read: TextResponse<'_> = serde_json::from_str(not_text).unwrap();
        assert_eq!(read.into_result(), None);
    }

    #[test]
    fn anything_beyond_text_blocks_is_left_to_rmcp() {
        for json in [
            r#"{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}"#,
            r#"{"content":[{"type":"text","text":"x","_meta":{"k":1}}]}"#,
            r#"{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}"#,
            r#"{"content":[{"type":"text","text":"x"}],"_meta":{"k":1}}"#,
            r#"{"resultType":"input_required","content":[]}"#,
            r#"{"isError":false}"#,
            r#"{"content":[{"type":"text","text":"x"}],"content":[]}"#,
            r#"{"content":[{"type":"text"}]}"#,
        ] {
            assert_eq!(text_only(json), None, "{json}");
        }
    }
}
