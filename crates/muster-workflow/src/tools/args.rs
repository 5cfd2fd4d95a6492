//! Argument helpers of the workflow tools, on top of `muster_core::tool::reply`.

use muster_core::tool::reply;
use rmcp::model::{CallToolResult, JsonObject};

pub(super) use reply::{error, json, reject_unknown as only, string_arg as string, text};

/// The `name` argument, or the error result the original gives without it.
pub(super) fn name(args: &JsonObject, missing: &str) -> Result<String, CallToolResult> {
    string(args, "name").ok_or_else(|| error(missing))
}
