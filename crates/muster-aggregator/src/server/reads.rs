//! `prompts/get` and `resources/read` at the top level: the same downstream prompts and
//! resources the meta-tools reach, by their exposed names and URIs, answered in the
//! protocol's own result shapes.

use muster_core::tool::{SessionId, ToolError};
use rmcp::model::{
    ErrorData, GetPromptRequestParams, GetPromptResult, ReadResourceRequestParams,
    ReadResourceResult,
};
use serde_json::json;

use crate::registry::Registry;

/// Renders the exposed prompt `params.name`; an unknown name is `-32602`.
pub(super) async fn get_prompt(
    registry: &Registry,
    session: &SessionId,
    params: GetPromptRequestParams,
) -> Result<GetPromptResult, ErrorData> {
    let catalog = registry.snapshot_for(session);
    let Some(render) = catalog
        .prompt(&params.name)
        .map(|p| p.get(params.arguments))
    else {
        return Err(ErrorData::invalid_params(
            format!("Prompt not found: {}", params.name),
            Some(json!({ "name": params.name })),
        ));
    };
    render.await.map_err(|e| upstream_error(&e))
}

/// Reads the exposed resource `params.uri`; an unknown URI is "resource not found" with
/// the URI in `data` (rmcp answers `-32602` to 2026-07-28 clients and `-32002` to older
/// ones, as each specification asks).
pub(super) async fn read_resource(
    registry: &Registry,
    session: &SessionId,
    params: ReadResourceRequestParams,
) -> Result<ReadResourceResult, ErrorData> {
    let catalog = registry.snapshot_for(session);
    let Some(read) = catalog.resource(&params.uri).map(|r| r.read()) else {
        return Err(ErrorData::resource_not_found(
            format!("Resource not found: {}", params.uri),
            Some(json!({ "uri": params.uri })),
        ));
    };
    read.await.map_err(|e| upstream_error(&e))
}

/// A provider's failure as a JSON-RPC error: bad arguments stay `-32602`, the rest is an
/// internal error carrying the message.
fn upstream_error(error: &ToolError) -> ErrorData {
    match error {
        ToolError::InvalidArguments { message } => ErrorData::invalid_params(message.clone(), None),
        other => ErrorData::internal_error(other.to_string(), None),
    }
}
