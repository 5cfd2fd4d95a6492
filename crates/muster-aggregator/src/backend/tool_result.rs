//! What the answer to a `tools/call` means for the caller.

use muster_core::tool::ToolError;
use rmcp::model::{CallToolResult, ResultType, ServerResult};

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
